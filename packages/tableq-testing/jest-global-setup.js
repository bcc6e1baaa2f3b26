// jest `globalSetup: "tableq-testing/jest-global-setup"` (see global.js).
import { globalSetup } from "./global.js";

export default async function setup() {
  await globalSetup();
}
