// A table's page: the query bar and explain panel (query.js), the entity grid (grid.js)
// with paging by continuation tokens, the entity editor (editor.js) and JSON-lines
// import/export (transfer.js). The query lives in the URL (#/tables/T?filter=…&select=…&top=…)
// so a reload or a shared link shows the same query.

import { describeSas } from "./credentials.js";
import { count, errorBox, h, ms, replace } from "./dom.js";
import { fromWire } from "./edm.js";
import { openEditor } from "./editor.js";
import { renderGrid } from "./grid.js";
import { createQueryBar } from "./query.js";
import { exportLines, openImport } from "./transfer.js";

const DEFAULT_TOP = "100";

/**
 * Why this credential cannot add entities (New entity, Import), or null when it can or
 * the page cannot tell: a SAS token whose `sp` lacks `a` (add) is refused every insert by
 * the server, so the page does not offer one. A SAS without `sp` takes its permissions from
 * a stored access policy the page cannot read: the buttons stay, the server judges.
 */
export function cannotAdd(credential) {
  if (credential?.kind !== "sas") return null;
  const { permissions } = describeSas(credential.sas);
  if (!permissions || permissions.includes("a")) return null;
  return `Your SAS token (sp=${permissions}) does not permit adding entities (a).`;
}
const SYSTEM = ["PartitionKey", "RowKey", "Timestamp"];

export function renderTable(app, table, params) {
  const { api } = app;
  let disposed = false;
  app.setCrumbs([{ text: api.account, href: "#/" }, { text: table }]);

  const initial = {
    filter: params.get("filter") ?? "",
    select: params.get("select") ?? "",
    top: params.get("top") ?? DEFAULT_TOP,
  };
  let query = initial;
  let tokens = [null]; // tokens[i]: the continuation that starts page i
  let pageIndex = 0;
  let hasNext = false;
  let pageStats = [];
  const seen = new Set(SYSTEM);

  const results = h("div", { class: "results", id: "results" });
  const pagerTop = h("div", { class: "pager" });
  const pagerBottom = h("div", { class: "pager" });
  const side = h("div", { class: "side", id: "side", hidden: true });
  const toolStatus = h("span", { class: "muted", id: "tool-status" });
  const readOnly = cannotAdd(app.credential);

  /** The `$select` sent: the user's, plus the keys (rows must be openable). */
  const effectiveSelect = (select) => {
    const names = select.split(",").map((s) => s.trim()).filter(Boolean);
    if (!names.length || names.includes("*")) return select;
    const extra = ["PartitionKey", "RowKey"].filter((k) => !names.includes(k));
    return extra.length ? `${select},${extra.join(",")}` : select;
  };

  const bar = createQueryBar(app, table, initial, {
    onRun: (q) => run(q),
    columns: () => [...seen],
  });

  const pager = () => {
    const info = `page ${pageIndex + 1}${hasNext ? " · more entities follow" : pageIndex ? " · last page" : ""}`;
    return [
      h("button", { class: "prev-page", disabled: pageIndex === 0, onclick: () => fetchPage(pageIndex - 1), text: "◀ Previous" }),
      h("span", { class: "page-info", text: info }),
      h("button", { class: "next-page", disabled: !hasNext, onclick: () => fetchPage(pageIndex + 1), text: "Next ▶" }),
    ];
  };

  const fetchPage = async (index) => {
    const started = performance.now();
    results.setAttribute("aria-busy", "true");
    try {
      const page = await api.query(table, {
        filter: query.filter,
        select: effectiveSelect(query.select),
        top: query.top,
        next: tokens[index],
      });
      if (disposed) return;
      const entities = page.entities.map(fromWire);
      tokens = tokens.slice(0, index + 1);
      if (page.next) tokens.push(page.next);
      hasNext = Boolean(page.next);
      pageIndex = index;
      for (const e of entities) for (const p of e.props) seen.add(p.name);
      // The statistics of the pages that led here (a page fetched again replaces its own).
      pageStats = pageStats.slice(0, index);
      if (page.stats) pageStats[index] = page.stats;
      pageStats = pageStats.filter(Boolean);
      bar.setStats(pageStats);
      const grid = renderGrid(entities, { select: query.select, onOpen: (e) => edit({ partitionKey: e.partitionKey, rowKey: e.rowKey }) });
      replace(pagerTop, pager());
      replace(pagerBottom, pager());
      replace(results, grid);
      const took = performance.now() - started;
      results.dataset.pageMs = took.toFixed(1);
      results.dataset.rows = String(entities.length);
      if (page.stats) results.dataset.serverMs = String(page.stats.ms);
      replace(toolStatus, `${count(entities.length)} entit${entities.length === 1 ? "y" : "ies"} in ${ms(took)}${page.stats ? ` (server ${ms(page.stats.ms)})` : ""}`);
    } catch (e) {
      if (disposed) return;
      bar.showError(e);
      replace(results, errorBox(e));
    } finally {
      results.removeAttribute("aria-busy");
    }
  };

  const run = (q) => {
    query = { filter: q.filter, select: q.select, top: q.top || DEFAULT_TOP };
    const search = new URLSearchParams();
    if (query.filter) search.set("filter", query.filter);
    if (query.select) search.set("select", query.select);
    if (query.top !== DEFAULT_TOP) search.set("top", query.top);
    const text = search.toString();
    const hash = `#/tables/${encodeURIComponent(table)}${text ? `?${text}` : ""}`;
    if (location.hash !== hash) history.replaceState(null, "", hash);
    tokens = [null];
    pageStats = [];
    fetchPage(0);
  };

  const refresh = () => fetchPage(pageIndex);
  const edit = (keys) => openEditor(app, table, keys, { host: side, onChanged: refresh });

  let exporting = null;
  const exportAll = async () => {
    if (exporting) {
      exporting.cancel = true;
      return;
    }
    exporting = { cancel: false };
    const job = exporting;
    try {
      const n = await exportLines(api, table, { filter: query.filter, select: effectiveSelect(query.select) }, {
        progress: (n) => replace(toolStatus, `exporting: ${count(n)} entities… (click Export again to stop)`),
        cancelled: () => job.cancel,
      });
      replace(toolStatus, `exported ${count(n)} entities${job.cancel ? " (stopped)" : ""} to ${table}.jsonl`);
    } catch (e) {
      replace(toolStatus, `export failed: ${e.message}`);
    } finally {
      exporting = null;
    }
  };

  replace(
    app.main,
    h(
      "div",
      { class: "table-page" },
      h(
        "div",
        { class: "toolbar" },
        h("h1", { text: table }),
        h("button", { id: "new-entity", text: "New entity", disabled: Boolean(readOnly), title: readOnly, onclick: () => edit(null) }),
        h("button", { id: "open-import", text: "Import JSON lines", disabled: Boolean(readOnly), title: readOnly, onclick: () => openImport(app, table, { host: side, onDone: refresh }) }),
        h("button", { id: "export", text: "Export JSON lines", title: "Every entity the query matches, all pages", onclick: exportAll }),
        toolStatus,
      ),
      bar.bar,
      h("div", { class: "workspace" }, h("div", { class: "card data" }, pagerTop, results, pagerBottom), bar.panel),
      side,
    ),
  );
  run(initial);
  return {
    dispose() {
      disposed = true;
      bar.dispose();
      if (exporting) exporting.cancel = true;
    },
  };
}
