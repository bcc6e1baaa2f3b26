// The query bar and the explain panel of a table page.
//
// As the user types, the bar asks the server for the plan of the query
// (`x-tableq-explain: plan`): the server's own parser and planner answer — the explorer
// never parses a filter itself. An invalid option shows the parser's diagnostic (the caret
// rendering of the CLI, the expected tokens, the hint) and marks its span in the input; a
// valid one shows the plan: what is read (point / partition / ranges / OR of points /
// empty / full scan), the residual, whether the ranges are exact, and — once the query
// runs — the executor's statistics of every page fetched.

import { count, debounce, errorBox, h, ms, replace } from "./dom.js";

const SHAPES = {
  empty: "empty — the filter cannot match: nothing is read",
  point: "point lookup — one (PartitionKey, RowKey)",
  points: "OR of point lookups",
  partition: "partition scan — one whole PartitionKey",
  ranges: "key-range scan",
  full: "full scan — every entity is read",
};

/**
 * Builds the query bar. `initial`: { filter, select, top }; `onRun(query)` runs a query;
 * `columns()` lists the property names seen so far (for the column chooser).
 */
export function createQueryBar(app, table, initial, { onRun, columns }) {
  const filter = h("input", {
    id: "filter",
    class: "code",
    value: initial.filter,
    placeholder: "$filter, e.g. PartitionKey eq 'p1' and Age ge 30 (empty: every entity)",
    spellcheck: "false",
    autocomplete: "off",
    "aria-label": "$filter",
  });
  const select = h("input", {
    id: "select",
    class: "code",
    value: initial.select,
    placeholder: "$select: Name,Age (empty: all)",
    spellcheck: "false",
    autocomplete: "off",
    "aria-label": "$select",
  });
  const top = h("input", {
    id: "top",
    class: "code",
    type: "number",
    min: 1,
    max: 1000,
    value: initial.top,
    "aria-label": "$top",
    title: "$top: entities per page (1–1000)",
  });
  const runButton = h("button", { class: "primary", id: "run", text: "Run" });
  const chooserButton = h("button", { id: "columns", text: "Columns ▾", title: "Choose the columns ($select)" });
  const chooser = h("div", { class: "chooser", hidden: true });
  const diagnostic = h("div", { id: "diagnostic", class: "diagnostic-area", "aria-live": "polite" });
  const planArea = h("div", { id: "plan" });
  const statsArea = h("div", { id: "stats" });
  const panel = h(
    "aside",
    { class: "card explain", id: "explain" },
    h("h2", { text: "How this query runs" }),
    planArea,
    h("h3", { text: "Run statistics" }),
    statsArea,
  );
  replace(statsArea, h("p", { class: "muted", text: "Run the query to see what the executor did." }));

  const current = () => ({ filter: filter.value, select: select.value.trim(), top: top.value.trim() });
  let lastValid = true;
  let pending = null;

  const inputs = { $filter: filter, $select: select, $top: top };
  const markInvalid = (option) => {
    for (const [name, input] of Object.entries(inputs)) input.setAttribute("aria-invalid", String(name === option));
  };

  const showDiagnostic = (d) => {
    lastValid = false;
    markInvalid(d.option);
    replace(planArea, h("p", { class: "muted", id: "plan-none", text: `No plan: ${d.option} is not valid (see the diagnostic).` }));
    const input = inputs[d.option];
    const jump = () => {
      input.focus();
      input.setSelectionRange(d.utf16_start, Math.max(d.utf16_end, d.utf16_start + 1));
    };
    replace(
      diagnostic,
      h(
        "div",
        { class: "diagnostic", role: "alert" },
        h("div", { class: "headline" }, h("strong", { text: `${d.option}: ${d.message}` }), " ", h("span", { class: "muted", text: `at byte ${d.start}, column ${d.column}` })),
        h("pre", { class: "carets", text: d.rendered.split("\n").slice(1).join("\n") }),
        d.expected.length ? h("div", { class: "expected" }, "expected: ", d.expected.map((e, i) => [i ? ", " : "", h("code", { text: e })])) : null,
        d.hint ? h("div", { class: "hint", text: `hint: ${d.hint}` }) : null,
        h("button", { class: "link", onclick: jump, text: "select the error in the input" }),
      ),
    );
  };

  const showPlan = (doc) => {
    lastValid = true;
    markInvalid(null);
    replace(diagnostic);
    replace(planArea, planView(doc));
  };

  const validate = async () => {
    pending?.abort();
    const controller = new AbortController();
    pending = controller;
    try {
      const doc = await app.api.explain(table, current(), controller.signal);
      if (controller.signal.aborted) return;
      if (doc.valid) showPlan(doc);
      else showDiagnostic(doc.diagnostic);
    } catch (e) {
      if (e.name === "AbortError") return;
      replace(diagnostic, errorBox(e));
    }
  };
  const validateSoon = debounce(validate, 150);

  const run = () => {
    validateSoon.cancel();
    validate();
    chooser.hidden = true;
    onRun(current());
  };

  for (const input of [filter, select, top]) {
    input.addEventListener("input", validateSoon);
    input.addEventListener("keydown", (e) => {
      if (e.key === "Enter") run();
    });
  }
  runButton.addEventListener("click", run);
  chooserButton.addEventListener("click", () => {
    if (!chooser.hidden) {
      chooser.hidden = true;
      return;
    }
    const chosen = new Set(select.value.split(",").map((s) => s.trim()).filter(Boolean));
    const all = chosen.size === 0 || chosen.has("*");
    const boxes = columns().map((name) =>
      h("label", {}, h("input", { type: "checkbox", value: name, checked: all || chosen.has(name) }), ` ${name}`),
    );
    const apply = () => {
      const picked = boxes.map((l) => l.firstChild).filter((b) => b.checked).map((b) => b.value);
      select.value = picked.length === boxes.length ? "" : picked.join(",");
      run();
    };
    replace(
      chooser,
      h("div", { class: "boxes" }, boxes),
      h("div", { class: "actions" }, h("button", { class: "primary", onclick: apply, text: "Apply" }), h("button", { onclick: () => (chooser.hidden = true), text: "Cancel" })),
    );
    chooser.hidden = false;
  });

  const bar = h(
    "div",
    { class: "card querybar" },
    h(
      "div",
      { class: "fields" },
      h("label", { class: "field grow" }, h("span", { text: "$filter" }), filter),
      h("div", { class: "field" }, h("label", { for: "select", text: "$select" }), h("div", { class: "with-chooser" }, select, chooserButton, chooser)),
      h("label", { class: "field narrow" }, h("span", { text: "$top" }), top),
      runButton,
    ),
    diagnostic,
  );

  validate();
  return {
    bar,
    panel,
    current,
    isValid: () => lastValid,
    /** Shows the statistics of the pages fetched so far ([{ examined, matched, ranges, chunks, ms, rows }]). */
    setStats(pages) {
      replace(statsArea, statsView(pages));
    },
    /** Shows a refused run (a 400 with the same diagnostic, a 403, …). */
    showError(error) {
      replace(diagnostic, errorBox(error));
    },
    dispose() {
      validateSoon.cancel();
      pending?.abort();
    },
  };
}

/** The plan part of the explain panel. */
function planView(doc) {
  const exactness = doc.shape === "empty"
    ? null
    : doc.exact
      ? h("p", { class: "exact" }, h("strong", { text: "exact" }), " — the key ranges capture the filter; the residual is not evaluated")
      : h("p", { class: "inexact" }, h("strong", { text: "inexact" }), " — entities read from the ranges are filtered by the residual");
  const ranges = doc.ranges.length
    ? h(
        "table",
        { class: "ranges" },
        h("thead", {}, h("tr", {}, h("th", { text: "#" }), h("th", { text: "strategy" }), h("th", { text: "PartitionKey" }), h("th", { text: "RowKey" }))),
        h(
          "tbody",
          {},
          doc.ranges.map((r, i) =>
            h("tr", {}, h("td", { text: String(i + 1) }), h("td", { text: r.description }), h("td", { class: "code", text: r.partition_key }), h("td", { class: "code", text: r.row_key })),
          ),
        ),
      )
    : null;
  const shape = doc.shape === "points" ? `${SHAPES.points} (${doc.ranges.length})` : doc.shape === "ranges" ? `${SHAPES.ranges} (${doc.ranges.length} range${doc.ranges.length === 1 ? "" : "s"})` : SHAPES[doc.shape];
  return [
    h("p", { class: "shape" }, h("span", { class: `badge shape-${doc.shape}`, id: "plan-shape", text: doc.shape }), " ", shape),
    exactness,
    ranges,
    h("dl", {},
      h("dt", { text: "residual" }),
      h("dd", { class: "code", id: "plan-residual", text: doc.residual }),
      doc.canonical ? [h("dt", { text: "filter (canonical)" }), h("dd", { class: "code", text: doc.canonical })] : null,
      doc.rewritten !== doc.lowered ? [h("dt", { text: "rewritten" }), h("dd", { class: "code", text: doc.rewritten })] : null,
      h("dt", { text: "select" }),
      h("dd", { class: "code", text: doc.select ? doc.select.join(", ") : "*" }),
      h("dt", { text: "top" }),
      h("dd", { class: "code", text: doc.top === null ? "none (1000 per page)" : String(doc.top) }),
    ),
    doc.restricted ? h("p", { class: "note", text: "Your SAS token's key range is joined to the filter: the plan reads only what the token allows." }) : null,
    doc.coarsened ? h("p", { class: "note", text: `The key ranges were coarsened (at most ${doc.max_ranges}, or a multi-partition range with gaps in RowKey); the residual keeps the precision.` }) : null,
    doc.steps.length
      ? h("details", {}, h("summary", { text: `rewrite steps (${doc.steps.length})` }), h("ol", { class: "steps" }, doc.steps.map((s) => h("li", {}, h("strong", { text: s.rule }), h("div", { class: "code", text: s.before }), h("div", { class: "code" }, "⇒ ", s.after)))))
      : null,
    doc.engine
      ? h("details", {}, h("summary", { text: `storage engine: ${doc.engine.name}` }), h("pre", { class: "engine", text: doc.engine.details.join("\n") || "(no detail)" }))
      : null,
  ];
}

/** The statistics part of the explain panel. */
function statsView(pages) {
  if (!pages.length) return h("p", { class: "muted", text: "Run the query to see what the executor did." });
  const sum = (key) => pages.reduce((a, p) => a + (p[key] ?? 0), 0);
  return [
    h(
      "dl",
      { class: "stats" },
      h("dt", { text: "pages fetched" }),
      h("dd", { id: "stat-pages", text: count(pages.length) }),
      h("dt", { text: "entities examined" }),
      h("dd", { id: "stat-examined", text: count(sum("examined")) }),
      h("dt", { text: "entities returned" }),
      h("dd", { id: "stat-matched", text: count(sum("matched")) }),
      h("dt", { text: "server time" }),
      h("dd", { id: "stat-ms", text: ms(sum("ms")) }),
    ),
    h(
      "div",
      { class: "table-scroll" },
      h(
        "table",
        { class: "ranges stats-pages", id: "stats-pages" },
        h("thead", {}, h("tr", {}, ["page", "examined", "returned", "ranges", "chunks", "time"].map((t, i) => h("th", { class: i ? "num" : null, text: t })))),
        h(
          "tbody",
          {},
          pages.map((p, i) =>
            h("tr", {}, h("td", { text: String(i + 1) }), h("td", { class: "num", text: count(p.examined) }), h("td", { class: "num", text: count(p.matched) }), h("td", { class: "num", text: count(p.ranges) }), h("td", { class: "num", text: count(p.chunks) }), h("td", { class: "num", text: ms(p.ms) })),
          ),
        ),
      ),
    ),
    h("p", { class: "muted", text: "examined: entities read from the store (a parallel scan may read a little past the page's end); returned: entities in the page." }),
  ];
}
