// The entity grid: one row per entity of the page, one column per property seen on it
// (PartitionKey, RowKey and Timestamp first, then the others by name, or in `$select`
// order), each header naming the column's Edm type — or "mixed" when entities disagree, in
// which case the odd cells carry their own type. Values are shown as the wire carries them:
// Int64 digits, 7-digit DateTimes, lower-case Guids; Binary as hex with its length. An
// empty string (an empty PartitionKey or RowKey, say) shows as a muted "(empty)", so such a
// row is never blank; a property the entity lacks is a hatched cell.

import { h } from "./dom.js";
import { cellText, shortType } from "./edm.js";

const SYSTEM = ["PartitionKey", "RowKey", "Timestamp"];
const NUMERIC = new Set(["Edm.Int32", "Edm.Int64", "Edm.Double"]);

/** The columns of a page: [{ name, type }] (type null when mixed or never present). */
export function columnsOf(entities, select) {
  const types = new Map();
  for (const e of entities) {
    for (const p of e.props) {
      if (!types.has(p.name)) types.set(p.name, new Set());
      if (p.type) types.get(p.name).add(p.type);
    }
  }
  let names = [...types.keys()];
  const order = select ? select.split(",").map((s) => s.trim()) : null;
  const rank = (n) => {
    const system = SYSTEM.indexOf(n);
    if (system >= 0) return system;
    if (order && order.includes(n)) return 10 + order.indexOf(n);
    return 10_000;
  };
  names.sort((a, b) => rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0));
  return names.map((name) => {
    const seen = types.get(name);
    return { name, type: seen.size === 1 ? [...seen][0] : null, mixed: seen.size > 1 };
  });
}

/** The grid of `entities` (from edm.fromWire); `onOpen(entity)` opens one. */
export function renderGrid(entities, { select, onOpen }) {
  const columns = columnsOf(entities, select);
  const head = h(
    "tr",
    {},
    columns.map((c) =>
      h(
        "th",
        { class: c.type && NUMERIC.has(c.type) ? "num" : null, dataset: { column: c.name } },
        h("div", { class: "name", text: c.name }),
        h("div", { class: "type", text: c.mixed ? "mixed" : shortType(c.type) }),
      ),
    ),
  );
  const rows = entities.map((entity) => {
    const byName = new Map(entity.props.map((p) => [p.name, p]));
    const open = () => onOpen(entity);
    return h(
      "tr",
      {
        tabindex: 0,
        dataset: { pk: entity.partitionKey ?? "", rk: entity.rowKey ?? "" },
        onclick: open,
        onkeydown: (e) => e.key === "Enter" && open(),
      },
      columns.map((c) => {
        const p = byName.get(c.name);
        if (!p || p.text === null) return h("td", { class: "absent", title: `${c.name}: not present` });
        const text = cellText(p);
        const shown = text === "" ? h("span", { class: "muted empty", text: "(empty)" }) : text.length > 120 ? `${text.slice(0, 120)}…` : text;
        return h(
          "td",
          {
            class: `${NUMERIC.has(p.type) ? "num " : ""}t-${shortType(p.type).toLowerCase()}`,
            title: `${p.name} (${p.type}): ${p.text}`,
          },
          c.mixed ? h("span", { class: "badge", text: shortType(p.type) }) : null,
          shown,
        );
      }),
    );
  });
  return h(
    "div",
    { class: "grid-wrap" },
    h(
      "table",
      { class: "grid", id: "grid" },
      h("thead", {}, head),
      h("tbody", {}, rows.length ? rows : h("tr", {}, h("td", { class: "muted", colspan: Math.max(columns.length, 1), text: "No entities on this page." }))),
    ),
  );
}
