// The account page: its tables (paged with NextTableName), each with a row count where it
// is cheap (up to 1,000 keys read; beyond, "1,000+" and a button that counts them all by
// paging), and forms to create and delete tables.

import { ApiError } from "./api.js";
import { count, errorBox, h, replace } from "./dom.js";

const CHEAP = 1000;

export function renderTables(app) {
  const { api } = app;
  let disposed = false;
  app.setCrumbs([{ text: api.account, href: "#/" }, { text: "tables" }]);

  const status = h("div", { class: "status" });
  const rows = h("tbody");
  const more = h("div", { class: "more" });
  const name = h("input", {
    id: "new-table",
    placeholder: "NewTableName",
    autocomplete: "off",
    spellcheck: "false",
    "aria-label": "new table name",
  });
  const create = async (event) => {
    event?.preventDefault();
    const table = name.value.trim();
    if (!table) return;
    try {
      await api.createTable(table);
      name.value = "";
      replace(status, h("div", { class: "ok", role: "status", text: `Created table ${table}.` }));
      await load(true);
    } catch (e) {
      replace(status, e instanceof ApiError ? errorBox(e) : errorBox({ message: e.message }));
    }
  };

  const counts = [];
  const countTable = async (table, cell) => {
    replace(cell, h("span", { class: "muted", text: "…" }));
    try {
      const first = await api.countEntities(table, CHEAP);
      if (disposed) return;
      if (!first.next) return replace(cell, count(first.count));
      const all = h("button", {
        class: "link",
        title: "Counts every entity by paging through the table's keys",
        text: "count all",
        onclick: () => countAll(table, cell, first),
      });
      replace(cell, `${count(first.count)}+ `, all);
    } catch (e) {
      replace(cell, h("span", { class: "muted", title: e.message, text: "?" }));
    }
  };
  const countAll = async (table, cell, first) => {
    let total = first.count;
    let next = first.next;
    let stop = false;
    const progress = h("span", { class: "muted" });
    replace(cell, progress, " ", h("button", { class: "link", text: "stop", onclick: () => (stop = true) }));
    while (next && !stop && !disposed) {
      progress.textContent = `${count(total)}…`;
      const page = await api.countEntities(table, CHEAP, next);
      total += page.count;
      next = page.next;
    }
    replace(cell, next ? `${count(total)}+ (stopped)` : count(total));
  };

  const row = (table) => {
    const cell = h("td", { class: "num" });
    counts.push(() => countTable(table, cell));
    const actions = h("td", { class: "actions" });
    const askDelete = () => {
      replace(
        actions,
        h("span", { text: `Delete ${table} and all its entities? ` }),
        h("button", { class: "danger", text: "Delete", onclick: () => remove(table) }),
        h("button", { text: "Keep", onclick: () => replace(actions, deleteButton()) }),
      );
    };
    const deleteButton = () => h("button", { class: "link danger", text: "delete", onclick: askDelete, dataset: { table } });
    actions.append(deleteButton());
    return h(
      "tr",
      { dataset: { table } },
      h("td", {}, h("a", { href: `#/tables/${encodeURIComponent(table)}`, text: table })),
      cell,
      actions,
    );
  };

  const remove = async (table) => {
    try {
      await api.deleteTable(table);
      replace(status, h("div", { class: "ok", role: "status", text: `Deleted table ${table}.` }));
      await load(true);
    } catch (e) {
      replace(status, e instanceof ApiError ? errorBox(e) : errorBox({ message: e.message }));
    }
  };

  /** Counts a few tables at a time, in list order. */
  const runCounts = async () => {
    const workers = Array.from({ length: 2 }, async () => {
      while (counts.length && !disposed) await counts.shift()();
    });
    await Promise.all(workers);
  };

  const load = async (fresh, next = null) => {
    if (fresh) {
      rows.replaceChildren();
      counts.length = 0;
    }
    try {
      const page = await api.listTables(next);
      if (disposed) return;
      for (const t of page.names) rows.append(row(t));
      if (!rows.children.length) {
        rows.append(h("tr", {}, h("td", { colspan: 3, class: "muted", text: "No tables yet: create one above." })));
      }
      replace(
        more,
        page.next ? h("button", { text: "More tables", onclick: () => load(false, page.next) }) : null,
      );
      runCounts();
    } catch (e) {
      replace(status, e instanceof ApiError ? errorBox(e) : errorBox({ message: e.message }));
    }
  };

  replace(
    app.main,
    h(
      "section",
      { class: "card" },
      h("h1", { text: `Tables of ${api.account}` }),
      h(
        "div",
        { class: "inline-form", onkeydown: (e) => e.key === "Enter" && create(e) },
        name,
        h("button", { class: "primary", id: "create-table", onclick: create, text: "Create table" }),
        h("span", { class: "muted", text: "3–63 letters and digits, starting with a letter" }),
      ),
      status,
      h(
        "table",
        { class: "list", id: "tables" },
        h("thead", {}, h("tr", {}, h("th", { text: "Table" }), h("th", { class: "num", text: "Entities" }), h("th"))),
        rows,
      ),
      more,
    ),
  );
  load(true);
  return {
    dispose() {
      disposed = true;
    },
  };
}
