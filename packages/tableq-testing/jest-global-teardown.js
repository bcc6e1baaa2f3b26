// jest `globalTeardown: "tableq-testing/jest-global-teardown"` (see global.js).
import { globalTeardown } from "./global.js";

export default async function teardown() {
  await globalTeardown();
}
