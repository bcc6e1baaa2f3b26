// Every validation code of data-model.md through @azure/data-tables. This SDK sends
// annotated values unconverted, so it reaches conversions the Python SDK refuses
// client-side. DuplicatePropertiesSpecified cannot be sent through its entity API (a JS
// object holds a name once, and `PartitionKey`/`partitionKey` collapse into one key during
// serialisation): the Python suite sends it through that SDK's signed pipeline.

import assert from "node:assert/strict";
import { test } from "node:test";
import { all, expectRestError, freshTable } from "./helpers.mjs";

async function rejected(table, entity, code, write = (e) => table.createEntity(e)) {
  await expectRestError(write(entity), 400, code);
  assert.deepEqual(await all(table.listEntities()), [], "nothing was stored");
}

test("a missing key is 400 PropertiesNeedValue", async (t) => {
  const table = await freshTable(t);
  await rejected(table, { rowKey: "r", a: 1 }, "PropertiesNeedValue");
  await rejected(table, { partitionKey: "p", a: 1 }, "PropertiesNeedValue");
  await rejected(table, { a: 1 }, "PropertiesNeedValue");
});

test("a key over 1,024 UTF-16 units is 400 KeyValueTooLarge", async (t) => {
  const table = await freshTable(t);
  for (const key of ["partitionKey", "rowKey"]) {
    const atLimit = { partitionKey: "p", rowKey: "r", [key]: "k".repeat(1024) };
    await table.createEntity(atLimit);
    await table.deleteEntity(atLimit.partitionKey, atLimit.rowKey);
    await rejected(table, { partitionKey: "p", rowKey: "r", [key]: "k".repeat(1025) }, "KeyValueTooLarge");
  }
  await rejected(table, { partitionKey: "p", rowKey: "\u{1f600}".repeat(513) }, "KeyValueTooLarge");
});

const FORBIDDEN = ["/", "\\", "#", "?", "\t", "\n", "\u0000", "\u001f", "\u007f", "\u0080", "\u009f"];

test("forbidden characters in keys are 400 InvalidInput", async (t) => {
  const table = await freshTable(t);
  for (const char of FORBIDDEN) {
    for (const key of ["partitionKey", "rowKey"]) {
      await rejected(table, { partitionKey: "p", rowKey: "r", [key]: `a${char}b` }, "InvalidInput");
    }
  }
});

test("a key that is not a JSON string is 400 InvalidInput", async (t) => {
  const table = await freshTable(t);
  await rejected(table, { partitionKey: 5, rowKey: "r" }, "InvalidInput");
  await rejected(table, { partitionKey: "p", rowKey: true }, "InvalidInput");
  await rejected(table, { partitionKey: "p", rowKey: { value: 1.5, type: "Double" } }, "InvalidInput");
});

test("invalid property names are 400 PropertyNameInvalid", async (t) => {
  const table = await freshTable(t);
  for (const name of ["first-name", "9lives", "has space", "dot.ted", "\u0301x", "a\u0007b", "plus+"]) {
    await rejected(table, { partitionKey: "p", rowKey: "r", [name]: 1 }, "PropertyNameInvalid");
    await rejected(table, { partitionKey: "p", rowKey: "r", [name]: 1 }, "PropertyNameInvalid", (e) =>
      table.upsertEntity(e, "Merge"),
    );
  }
});

test("a property name over 255 UTF-16 units is 400 PropertyNameTooLong", async (t) => {
  const table = await freshTable(t);
  await table.createEntity({ partitionKey: "p", rowKey: "r", ["x".repeat(255)]: 1 });
  await table.deleteEntity("p", "r");
  await rejected(table, { partitionKey: "p", rowKey: "r", ["x".repeat(256)]: 1 }, "PropertyNameTooLong");
});

test("more than 252 custom properties is 400 TooManyProperties", async (t) => {
  const table = await freshTable(t);
  const props = (n) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`p${i}`, i]));
  await table.createEntity({ partitionKey: "p", rowKey: "r", ...props(252) });
  await table.deleteEntity("p", "r");
  await rejected(table, { partitionKey: "p", rowKey: "r", ...props(253) }, "TooManyProperties");
});

test("a String over 32 K units or a Binary over 64 KiB is 400 PropertyValueTooLarge", async (t) => {
  const table = await freshTable(t);
  await table.createEntity({ partitionKey: "p", rowKey: "r", s: "s".repeat(32 * 1024), b: new Uint8Array(64 * 1024) });
  await table.deleteEntity("p", "r");
  await rejected(table, { partitionKey: "p", rowKey: "r", s: "s".repeat(32 * 1024 + 1) }, "PropertyValueTooLarge");
  await rejected(table, { partitionKey: "p", rowKey: "r", b: new Uint8Array(64 * 1024 + 1) }, "PropertyValueTooLarge");
});

test("an entity over 1 MiB is 400 EntityTooLarge", async (t) => {
  const table = await freshTable(t);
  // Size by the data-model formula: 4 + 2 + 2 for the keys "p"/"r", then per String
  // property 8 + 2·len(name) + (2·len(value) + 4). Properties s00, s01, … of 32,000
  // characters are 64,018 bytes each: 17 of them make 1,088,314 bytes, over the limit.
  const entity = { partitionKey: "p", rowKey: "r" };
  for (let i = 0; i < 17; i++) entity[`s${String(i).padStart(2, "0")}`] = "x".repeat(32000);
  await rejected(table, entity, "EntityTooLarge");
  // 16 of them (1,024,296 bytes) fit.
  delete entity.s16;
  await table.createEntity(entity);
  assert.equal((await table.getEntity("p", "r")).s15.length, 32000);
  // A merge that grows it past 1 MiB is refused: z00 of 15,000 characters adds 30,018.
  const grow = (n) => table.updateEntity({ partitionKey: "p", rowKey: "r", z00: "z".repeat(n) }, "Merge");
  await expectRestError(grow(15000), 400, "EntityTooLarge");
  assert.equal((await table.getEntity("p", "r")).z00, undefined);
  // 12,000 characters add 24,018: 1,048,314 bytes, within 1 MiB (1,048,576).
  await grow(12000);
  assert.equal((await table.getEntity("p", "r")).z00.length, 12000);
});

test("a DateTime outside 1601..9999 is 400 OutOfRangeInput", async (t) => {
  const table = await freshTable(t);
  for (const value of ["1600-12-31T23:59:59.9999999Z", "0001-01-01T00:00:00Z", "1601-01-01T00:30:00+01:00"]) {
    await rejected(table, { partitionKey: "p", rowKey: "r", d: { value, type: "DateTime" } }, "OutOfRangeInput");
  }
  await table.createEntity({ partitionKey: "p", rowKey: "min", d: { value: "1601-01-01T00:00:00Z", type: "DateTime" } });
  await table.createEntity({ partitionKey: "p", rowKey: "max", d: { value: "9999-12-31T23:59:59.9999999Z", type: "DateTime" } });
});

const NOT_CONVERTIBLE = [
  { value: "abc", type: "Int32" },
  { value: "2147483648", type: "Int32" }, // out of i32
  { value: "1.5", type: "Int32" },
  { value: 1.5, type: "Int32" },
  { value: "9223372036854775808", type: "Int64" }, // out of i64
  { value: "12abc", type: "Int64" },
  { value: "maybe", type: "Boolean" },
  { value: "1", type: "Boolean" },
  { value: "1e400", type: "Double" }, // overflow
  { value: "NaNa", type: "Double" },
  { value: "2013-08-02", type: "DateTime" },
  { value: "2013-08-02T17:37Z", type: "DateTime" },
  { value: "2013-08-02T17:37:43.12345678Z", type: "DateTime" },
  { value: "not-a-date", type: "DateTime" },
  { value: "a455c695df985678aaaa81d3367e5a34", type: "Guid" },
  { value: "a455c695-df98-5678-aaaa-81d3367e5a3", type: "Guid" },
  { value: "AQ", type: "Binary" }, // unpadded base64
  { value: "not base64!", type: "Binary" },
  { value: { nested: 1 }, type: "String" }, // a JSON object as a value
  { value: [1, 2], type: "Int32" }, // a JSON array as a value
  { value: "\ud800", type: "String" }, // a lone surrogate
];

for (const value of NOT_CONVERTIBLE) {
  test(`${JSON.stringify(value)} is 400 InvalidInput`, async (t) => {
    const table = await freshTable(t);
    await rejected(table, { partitionKey: "p", rowKey: "r", v: value }, "InvalidInput");
  });
}

test("validation applies to Merge and Replace updates too", async (t) => {
  const table = await freshTable(t);
  await table.createEntity({ partitionKey: "p", rowKey: "r", a: 1 });
  const cases = [
    [{ "bad-name": 1 }, "PropertyNameInvalid"],
    [{ ["x".repeat(256)]: 1 }, "PropertyNameTooLong"],
    [{ s: "s".repeat(32 * 1024 + 1) }, "PropertyValueTooLarge"],
    [{ d: { value: "1600-01-01T00:00:00Z", type: "DateTime" } }, "OutOfRangeInput"],
    [{ i: { value: "x", type: "Int64" } }, "InvalidInput"],
  ];
  for (const [props, code] of cases) {
    for (const mode of ["Merge", "Replace"]) {
      await expectRestError(table.updateEntity({ partitionKey: "p", rowKey: "r", ...props }, mode), 400, code);
      await expectRestError(table.upsertEntity({ partitionKey: "p", rowKey: "r", ...props }, mode), 400, code);
    }
  }
  const entity = await table.getEntity("p", "r");
  assert.equal(entity.a, 1);
});
