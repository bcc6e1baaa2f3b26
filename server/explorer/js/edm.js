// Entities and their eight Edm types, as the explorer reads, shows, edits and exports them —
// faithfully: nothing goes through a lossy JavaScript number.
//
// * Reading: responses are requested with full metadata, so every non-string property
//   carries `Name@odata.type`. Int64 arrives as a JSON string ("9223372036854775807") and
//   stays one; DateTime stays its text (7 fraction digits kept: a JS Date would cut them to
//   milliseconds); a Double keeps the exact text the server wrote ("5.0", "1e300") where the
//   browser can give it (JSON.parse source text access), else its shortest round-trip form.
// * Writing: a body is built as text — numbers are written as the digits the user typed,
//   every typed value carries its `@odata.type` — so the server judges every value itself.
// * Export: one JSON line per entity in the form `tableq validate`/`eval`/`import` read
//   (no metadata, plus `@odata.type` where JSON cannot show the type).

export const TYPES = [
  "Edm.String",
  "Edm.Int32",
  "Edm.Int64",
  "Edm.Double",
  "Edm.Boolean",
  "Edm.DateTime",
  "Edm.Guid",
  "Edm.Binary",
];

/** Types that JSON cannot show without an annotation (the export form annotates them). */
const ANNOTATED = new Set(["Edm.Int64", "Edm.DateTime", "Edm.Guid", "Edm.Binary"]);
const SYSTEM = new Set(["PartitionKey", "RowKey", "Timestamp"]);

/** A JSON number with the exact text it was written with. */
export class JsonNumber {
  constructor(value, text) {
    this.value = value;
    this.text = text;
  }
  valueOf() {
    return this.value;
  }
  toString() {
    return this.text;
  }
}

const SOURCE_TEXT = (() => {
  let supported = false;
  try {
    JSON.parse("1.0", (key, value, context) => {
      supported = context?.source === "1.0";
      return value;
    });
  } catch {
    supported = false;
  }
  return supported;
})();

/** JSON.parse, with numbers as JsonNumber (their exact text) where the browser allows it. */
export function parseJson(text) {
  if (!SOURCE_TEXT) return JSON.parse(text);
  return JSON.parse(text, (key, value, context) =>
    typeof value === "number" && typeof context?.source === "string" ? new JsonNumber(value, context.source) : value,
  );
}

/** The text of a Double: its wire text, or a form that still reads back as a Double ("2.0"). */
export function doubleText(value) {
  if (value instanceof JsonNumber) return value.text;
  if (typeof value === "string") return value; // NaN, Infinity, -Infinity
  if (Object.is(value, -0)) return "-0.0";
  const text = String(value);
  return /[.eE]/.test(text) || !Number.isFinite(value) ? text : `${text}.0`;
}

function inferType(value) {
  if (typeof value === "string") return "Edm.String";
  if (typeof value === "boolean") return "Edm.Boolean";
  if (value instanceof JsonNumber) return /[.eE]/.test(value.text) ? "Edm.Double" : "Edm.Int32";
  if (typeof value === "number") return Number.isInteger(value) ? "Edm.Int32" : "Edm.Double";
  return null; // null: a $select-ed property the entity lacks
}

function valueText(type, value) {
  if (value === null || value === undefined) return null;
  if (type === "Edm.Double") return doubleText(value);
  if (type === "Edm.Boolean") return value ? "true" : "false";
  return String(value);
}

/**
 * A wire entity (full metadata) → { partitionKey, rowKey, timestamp, etag, props }, where
 * props is [{ name, type, text }] in the server's order (text null for a missing selected
 * property) — system properties included when present.
 */
export function fromWire(object) {
  const props = [];
  for (const [name, value] of Object.entries(object)) {
    if (name.startsWith("odata.") || name.includes("@")) continue;
    const annotated = object[`${name}@odata.type`];
    const type = typeof annotated === "string" ? annotated : inferType(value);
    props.push({ name, type, text: valueText(type, value) });
  }
  const text = (name) => props.find((p) => p.name === name)?.text ?? null;
  return {
    partitionKey: text("PartitionKey"),
    rowKey: text("RowKey"),
    timestamp: text("Timestamp"),
    etag: object["odata.etag"] ?? null,
    props,
  };
}

/** The custom (non-system) properties of an entity from `fromWire`. */
export function customProps(entity) {
  return entity.props.filter((p) => !SYSTEM.has(p.name));
}

/** The short name of a type: "Edm.Int64" → "Int64". */
export function shortType(type) {
  return type ? type.replace(/^Edm\./, "") : "null";
}

/** Base64 → bytes. */
export function base64Bytes(text) {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

/** What a grid cell shows for a value: Binary as hex (the first 16 bytes) and its length. */
export function cellText(prop) {
  if (prop.text === null) return "";
  if (prop.type === "Edm.Binary") {
    try {
      const bytes = base64Bytes(prop.text);
      const hex = Array.from(bytes.slice(0, 16), (b) => b.toString(16).padStart(2, "0")).join(" ");
      return `${hex}${bytes.length > 16 ? " …" : ""} (${bytes.length} B)`;
    } catch {
      return prop.text;
    }
  }
  return prop.text;
}

/** One entity as a JSON line in the form `tableq validate`, `eval` and `import` read. */
export function toJsonLine(entity) {
  const members = [];
  for (const p of entity.props) {
    if (p.text === null) continue; // a selected property the entity lacks
    const name = JSON.stringify(p.name);
    const nonFinite = p.type === "Edm.Double" && /^(NaN|-?Infinity)$/.test(p.text);
    if (ANNOTATED.has(p.type) || nonFinite) members.push(`${JSON.stringify(`${p.name}@odata.type`)}:"${p.type}"`);
    members.push(`${name}:${jsonValue(p)}`);
  }
  return `{${members.join(",")}}`;
}

function jsonValue(p) {
  switch (p.type) {
    case "Edm.Int32":
      return p.text;
    case "Edm.Double":
      return /^(NaN|-?Infinity)$/.test(p.text) ? JSON.stringify(p.text) : p.text;
    case "Edm.Boolean":
      return p.text === "true" ? "true" : "false";
    default:
      return JSON.stringify(p.text);
  }
}

/** A value the user typed that cannot be sent as its type. */
export class ValueError extends Error {
  constructor(name, message) {
    super(`${name}: ${message}`);
    this.property = name;
  }
}

const JSON_NUMBER = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/;
const INTEGER = /^-?(0|[1-9]\d*)$/;

/**
 * The JSON body of a write: the keys (when given) and the properties [{ name, type, text }],
 * each typed value annotated. Only what JSON itself needs is checked here (a number must be
 * a JSON number, a Boolean true or false); every rule of the data model is the server's.
 */
export function requestBody(keys, props) {
  const members = [];
  if (keys) {
    members.push(`"PartitionKey":${JSON.stringify(keys.partitionKey)}`);
    members.push(`"RowKey":${JSON.stringify(keys.rowKey)}`);
  }
  for (const p of props) {
    const name = p.name;
    const text = p.text ?? "";
    let value;
    switch (p.type) {
      case "Edm.String":
        value = JSON.stringify(text);
        break;
      case "Edm.Boolean":
        if (text !== "true" && text !== "false") throw new ValueError(name, "a Boolean is true or false");
        value = text;
        break;
      case "Edm.Int32":
        if (!INTEGER.test(text.trim())) throw new ValueError(name, `an Int32 is an integer, not "${text}"`);
        value = text.trim();
        break;
      case "Edm.Int64":
        if (!INTEGER.test(text.trim())) throw new ValueError(name, `an Int64 is an integer, not "${text}"`);
        value = JSON.stringify(text.trim());
        break;
      case "Edm.Double":
        if (/^(NaN|-?Infinity)$/.test(text.trim())) value = JSON.stringify(text.trim());
        else if (JSON_NUMBER.test(text.trim())) value = text.trim();
        else throw new ValueError(name, `a Double is a number (1.5, -2e10), NaN, Infinity or -Infinity, not "${text}"`);
        break;
      case "Edm.DateTime":
      case "Edm.Guid":
      case "Edm.Binary":
        value = JSON.stringify(text.trim());
        break;
      default:
        throw new ValueError(name, `unknown type ${p.type}`);
    }
    if (p.type !== "Edm.String") members.push(`${JSON.stringify(`${name}@odata.type`)}:"${p.type}"`);
    members.push(`${JSON.stringify(name)}:${value}`);
  }
  return `{${members.join(",")}}`;
}
