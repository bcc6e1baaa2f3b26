// The eight Edm types round-tripping through @azure/data-tables (Edm<"Int64"> etc.), read
// back by get *and* by list/query, converted and raw (disableTypeConversion); and the
// lenient conversions of annotated values that only this SDK sends unconverted
// (data-model.md "Types (Edm)").

import assert from "node:assert/strict";
import { test } from "node:test";
import { odata } from "@azure/data-tables";
import { all, customProps, freshTable } from "./helpers.mjs";

const GUID = "a455c695-df98-5678-aaaa-81d3367e5a34";
const BYTES = Uint8Array.from({ length: 256 }, (_, i) => i);

function written() {
  return {
    partitionKey: "types",
    rowKey: "all",
    str: "héllo, wörld ✓ 😀",
    strEmpty: "",
    i32: 42,
    i32Min: -2147483648,
    i64Big: 9007199254740993n, // bigint -> Edm.Int64
    i64Min: { value: "-9223372036854775808", type: "Int64" },
    i64Small: { value: "7", type: "Int64" },
    dbl: 3.25,
    dblWhole: { value: 5, type: "Double" },
    dblNaN: { value: "NaN", type: "Double" },
    dblInf: { value: "Infinity", type: "Double" },
    dblNegInf: { value: "-Infinity", type: "Double" },
    boolT: true,
    boolF: false,
    date: new Date("2024-02-29T23:59:58.123Z"), // JS Dates have ms precision
    date7: { value: "2013-08-02T17:37:43.9004348Z", type: "DateTime" },
    guid: { value: GUID, type: "Guid" }, // (upper case input: see CONVERSIONS)
    bin: BYTES,
    binEmpty: new Uint8Array(0),
  };
}

function checkConverted(entity) {
  assert.deepEqual(Object.keys(customProps(entity)).sort(), Object.keys(customProps(written())).sort());
  assert.equal(entity.str, "héllo, wörld ✓ 😀");
  assert.equal(entity.strEmpty, "");
  assert.equal(entity.i32, 42);
  assert.equal(entity.i32Min, -2147483648);
  assert.equal(entity.i64Big, 9007199254740993n);
  assert.equal(entity.i64Min, -9223372036854775808n);
  assert.equal(entity.i64Small, 7n);
  assert.equal(entity.dbl, 3.25);
  assert.equal(entity.dblWhole, 5);
  // Annotated Doubles come back as the SDK gets them: non-finite ones as their names.
  assert.deepEqual([entity.dblNaN, entity.dblInf, entity.dblNegInf], ["NaN", "Infinity", "-Infinity"]);
  assert.equal(entity.boolT, true);
  assert.equal(entity.boolF, false);
  assert.ok(entity.date instanceof Date);
  assert.equal(entity.date.toISOString(), "2024-02-29T23:59:58.123Z");
  assert.ok(entity.date7 instanceof Date);
  assert.deepEqual(entity.guid, { value: GUID, type: "Guid" });
  // (the SDK returns a Buffer, a Uint8Array subclass: compare the bytes)
  assert.ok(entity.bin instanceof Uint8Array && entity.binEmpty instanceof Uint8Array);
  assert.deepEqual(new Uint8Array(entity.bin), BYTES);
  assert.deepEqual(new Uint8Array(entity.binEmpty), new Uint8Array(0));
}

function checkRaw(entity) {
  // disableTypeConversion: the wire values, typed by annotation (or by the SDK's guess for
  // numbers without one).
  assert.deepEqual(entity.i64Big, { value: "9007199254740993", type: "Int64" });
  assert.deepEqual(entity.i64Min, { value: "-9223372036854775808", type: "Int64" });
  assert.deepEqual(entity.i64Small, { value: "7", type: "Int64" });
  assert.deepEqual(entity.dblNaN, { value: "NaN", type: "Double" });
  assert.deepEqual(entity.dblInf, { value: "Infinity", type: "Double" });
  assert.deepEqual(entity.dblNegInf, { value: "-Infinity", type: "Double" });
  assert.deepEqual(entity.date, { value: "2024-02-29T23:59:58.123Z", type: "DateTime" });
  assert.deepEqual(entity.date7, { value: "2013-08-02T17:37:43.9004348Z", type: "DateTime" });
  assert.deepEqual(entity.guid, { value: GUID, type: "Guid" });
  assert.deepEqual(entity.bin, { value: Buffer.from(BYTES).toString("base64"), type: "Binary" });
  assert.deepEqual(entity.binEmpty, { value: "", type: "Binary" });
  assert.deepEqual(entity.str, { value: "héllo, wörld ✓ 😀", type: "String" });
  assert.deepEqual(entity.boolT, { value: "true", type: "Boolean" });
}

test("every type round-trips through getEntity and listEntities", async (t) => {
  const table = await freshTable(t);
  await table.createEntity(written());
  checkConverted(await table.getEntity("types", "all"));
  checkRaw(await table.getEntity("types", "all", { disableTypeConversion: true }));

  const filter = odata`PartitionKey eq ${"types"} and RowKey eq ${"all"}`;
  const [queried] = await all(table.listEntities({ queryOptions: { filter } }));
  checkConverted(queried);
  const [queriedRaw] = await all(table.listEntities({ queryOptions: { filter }, disableTypeConversion: true }));
  checkRaw(queriedRaw);
});

test("every type round-trips through merge and replace", async (t) => {
  const table = await freshTable(t);
  await table.createEntity({ partitionKey: "types", rowKey: "all" });
  await table.updateEntity(written(), "Merge");
  checkConverted(await table.getEntity("types", "all"));
  await table.upsertEntity(written(), "Replace");
  checkRaw(await table.getEntity("types", "all", { disableTypeConversion: true }));
});

const EQUALITY_FILTERS = [
  ["i64Big eq 9007199254740993L"],
  ["i64Small eq 7L"],
  ["i64Small eq 7"], // an Int32 literal widens to Int64
  ["dblWhole eq 5.0"],
  ["dblWhole eq 5"], // ... and to Double
  ["dblInf eq INF"],
  ["date eq datetime'2024-02-29T23:59:58.123Z'"],
  ["date7 eq datetime'2013-08-02T17:37:43.9004348Z'"],
  ["date7 gt datetime'2013-08-02T17:37:43.9004347Z' and date7 lt datetime'2013-08-02T17:37:43.9004349Z'"],
  [`guid eq guid'${GUID}'`],
  [`guid eq guid'${GUID.toUpperCase()}'`],
  ["binEmpty eq X''"],
  [`bin eq X'${Buffer.from(BYTES).toString("hex")}'`],
  ["boolF eq false"],
  ["str eq 'héllo, wörld ✓ 😀'"],
];

for (const [filter] of EQUALITY_FILTERS) {
  test(`the typed value is found by: ${filter.length > 80 ? filter.slice(0, 80) + "…" : filter}`, async (t) => {
    const table = await freshTable(t);
    await table.createEntity(written());
    await table.createEntity({ partitionKey: "types", rowKey: "other", unrelated: 1 });
    const found = await all(table.listEntities({ queryOptions: { filter } }));
    assert.deepEqual(found.map((e) => e.rowKey), ["all"]);
  });
}

// Annotated values the service converts (lenient input), and what JSON numbers without an
// annotation become. Each row: [sent value, raw value read back, a filter that must match].
const CONVERSIONS = [
  [{ value: "12345", type: "Int32" }, { value: "12345", type: "Int32" }, "v eq 12345"],
  [{ value: "+12", type: "Int32" }, { value: "12", type: "Int32" }, "v eq 12"],
  [{ value: "-12", type: "Int64" }, { value: "-12", type: "Int64" }, "v eq -12L"],
  [{ value: 7, type: "Int64" }, { value: "7", type: "Int64" }, "v eq 7L"],
  [{ value: "False", type: "Boolean" }, { value: "false", type: "Boolean" }, "v eq false"],
  [{ value: "TRUE", type: "Boolean" }, { value: "true", type: "Boolean" }, "v eq true"],
  [{ value: "3.14", type: "Double" }, { value: "3.14", type: "Double" }, "v eq 3.14"],
  [{ value: 42, type: "String" }, { value: "42", type: "String" }, "v eq '42'"],
  [{ value: "2013-08-02T19:37:43.9004348+02:00", type: "DateTime" },
    { value: "2013-08-02T17:37:43.9004348Z", type: "DateTime" }, "v eq datetime'2013-08-02T17:37:43.9004348Z'"],
  [{ value: "2013-08-02T17:37:43.5000000Z", type: "DateTime" },
    { value: "2013-08-02T17:37:43.5Z", type: "DateTime" }, "v eq datetime'2013-08-02T17:37:43.5Z'"],
  [{ value: "2013-08-02T17:37:43", type: "DateTime" },
    { value: "2013-08-02T17:37:43Z", type: "DateTime" }, "v eq datetime'2013-08-02T17:37:43Z'"],
  [{ value: GUID.toUpperCase(), type: "Guid" }, { value: GUID, type: "Guid" }, `v eq guid'${GUID}'`],
  [{ value: "AQID", type: "Binary" }, { value: "AQID", type: "Binary" }, "v eq X'010203'"],
  [{ value: "x", type: "String" }, { value: "x", type: "String" }, "v eq 'x'"],
  // Without an annotation: an integer in i32 range is Int32, outside it Double (decided).
  [2147483647, null, "v eq 2147483647"],
  [2147483648, null, "v eq 2147483648.0"],
  [2 ** 40, null, "v eq 1099511627776.0"],
  [-2147483649, null, "v lt -2147483648.0"],
  [1.5e300, null, "v eq 1.5e300"],
];

for (const [sent, raw, filter] of CONVERSIONS) {
  test(`${JSON.stringify(sent)} is stored as ${raw ? JSON.stringify(raw) : "the type"} matching ${filter}`, async (t) => {
    const table = await freshTable(t);
    await table.createEntity({ partitionKey: "p", rowKey: "r", v: sent });
    if (raw) {
      const entity = await table.getEntity("p", "r", { disableTypeConversion: true });
      assert.deepEqual(entity.v, raw);
    }
    const found = await all(table.listEntities({ queryOptions: { filter } }));
    assert.deepEqual(found.map((e) => e.rowKey), ["r"], `filter ${filter}`);
  });
}

test("an Int32 is not a Double and an untyped large integer is not an Int64", async (t) => {
  const table = await freshTable(t);
  await table.createEntity({ partitionKey: "p", rowKey: "i32", v: 2147483647 });
  await table.createEntity({ partitionKey: "p", rowKey: "dbl", v: 2147483648 });
  // A Double literal compares with Double properties only; an Int64 literal with Int64 and
  // Double properties.
  const byFilter = async (filter) =>
    (await all(table.listEntities({ queryOptions: { filter } }))).map((e) => e.rowKey);
  assert.deepEqual(await byFilter("v eq 2147483647.0"), []);
  assert.deepEqual(await byFilter("v eq 2147483648L"), ["dbl"]);
  assert.deepEqual(await byFilter("v ge 2147483647"), ["dbl", "i32"]);
  assert.deepEqual(customProps(await table.getEntity("p", "dbl")), { v: 2147483648 });
});
