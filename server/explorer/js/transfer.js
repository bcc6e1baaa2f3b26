// JSON-lines import and export — the format of `tableq validate`, `eval`, `gen` and `import`.
//
// Import reads the file as a stream, line by line (LF or CRLF, a leading BOM skipped, blank
// lines skipped but counted), and sends each line's own text as the body of a write: runs
// of lines with the same PartitionKey go together as `$batch` changesets of up to 100
// writes. Every line is judged by the server, as an insert (or, with "replace existing", an
// insert-or-replace); a refused line is reported with its number, code and message, and
// the rest of its changeset is sent again without it. A line whose keys cannot be read is
// sent alone, so the server's own message says what is wrong with it.
//
// Export pages through the current query (1,000 entities per request) and saves the
// entities as JSON lines: no metadata, `@odata.type` where JSON cannot show the type.

import { ApiError, entityPath } from "./api.js";
import { batchBody, readBatchReply } from "./batch.js";
import { count, errorBox, h, replace } from "./dom.js";
import { fromWire, toJsonLine } from "./edm.js";

const MAX_OPS = 100;
const MAX_BATCH_BYTES = 3.5 * 1024 * 1024;
const SHOWN_REJECTIONS = 20;

/** Yields [lineNumber, text] for every line of a File, streamed. */
async function* lines(file) {
  const reader = file.stream().pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let number = 0;
  for (;;) {
    const { value, done } = await reader.read();
    if (value) buffer += value;
    let at;
    while ((at = buffer.indexOf("\n")) >= 0) {
      number += 1;
      yield [number, buffer.slice(0, at)];
      buffer = buffer.slice(at + 1);
    }
    if (done) break;
  }
  if (buffer.length) yield [number + 1, buffer];
}

/** The keys of a line, or null when they cannot be read (the server will say why). */
function keysOf(text) {
  try {
    const o = JSON.parse(text);
    if (o && typeof o.PartitionKey === "string" && typeof o.RowKey === "string") return { partitionKey: o.PartitionKey, rowKey: o.RowKey };
  } catch {
    // Not JSON: sent alone, the server reports it.
  }
  return null;
}

/**
 * Imports `file` into `table`. `upsert`: replace existing entities instead of rejecting
 * them. `progress({ read, loaded, rejected })` is called as it goes; `cancelled()` stops it.
 * Returns { read, loaded, rejected: [{ line, code, message }], stopped }.
 */
export async function importLines(api, table, file, { upsert, progress, cancelled }) {
  const result = { read: 0, loaded: 0, rejected: [], stopped: null };
  const base = `${location.origin}/${api.account}`;
  let batch = [];
  let batchBytes = 0;

  const reject = (line, code, message) => result.rejected.push({ line, code, message });

  const sendAlone = async (op) => {
    try {
      if (op.method === "PUT") await api.updateEntity(table, op.keys.partitionKey, op.keys.rowKey, op.body, { merge: false, etag: undefined });
      else await api.insertEntity(table, op.body);
      result.loaded += 1;
    } catch (e) {
      if (!(e instanceof ApiError) || e.status >= 500 || e.status === 403) throw e;
      reject(op.line, e.code, [e.sentence, e.detail].filter(Boolean).join(" — "));
    }
  };

  const flush = async () => {
    let ops = batch;
    batch = [];
    batchBytes = 0;
    while (ops.length) {
      if (ops.length === 1) {
        await sendAlone(ops[0]);
        return;
      }
      const { boundary, body } = batchBody(base, ops);
      const reply = readBatchReply(await api.batch(boundary, body));
      if (reply.ok) {
        result.loaded += ops.length;
        return;
      }
      const failed = ops[reply.index] ?? ops[0];
      reject(failed.line, reply.code, reply.message);
      ops = ops.filter((op) => op !== failed);
    }
  };

  for await (const [number, raw] of lines(file)) {
    if (cancelled()) {
      result.stopped = "cancelled";
      break;
    }
    let text = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
    if (number === 1 && text.startsWith("\uFEFF")) text = text.slice(1);
    if (!text.trim()) continue;
    result.read += 1;
    const keys = keysOf(text);
    const op = {
      line: number,
      keys,
      method: upsert && keys ? "PUT" : "POST",
      path: upsert && keys ? entityPath(table, keys.partitionKey, keys.rowKey) : table,
      body: text,
    };
    const bytes = text.length * 3 + 400;
    const fits =
      keys &&
      batch.length < MAX_OPS &&
      batchBytes + bytes < MAX_BATCH_BYTES &&
      (batch.length === 0 || (batch[0].keys.partitionKey === keys.partitionKey && !batch.some((b) => b.keys.rowKey === keys.rowKey)));
    if (!fits) await flush();
    if (keys && bytes < MAX_BATCH_BYTES) {
      batch.push(op);
      batchBytes += bytes;
    } else {
      await sendAlone(op);
    }
    if (result.read % 200 === 0) progress(result);
  }
  await flush();
  progress(result);
  return result;
}

/** The import panel of a table page, shown in `host`; `onDone()` after a run. */
export function openImport(app, table, { host, onDone }) {
  const file = h("input", { type: "file", id: "import-file", accept: ".jsonl,.json,.ndjson,.txt,application/x-ndjson" });
  const upsert = h("input", { type: "checkbox", id: "import-upsert" });
  const status = h("div", { class: "status", id: "import-status", "aria-live": "polite" });
  let cancel = false;
  const start = h("button", { class: "primary", id: "import-start", text: "Import" });
  const stop = h("button", { text: "Stop", hidden: true, onclick: () => (cancel = true) });
  const close = () => {
    cancel = true;
    host.hidden = true;
    host.replaceChildren();
  };
  start.addEventListener("click", async () => {
    const chosen = file.files?.[0];
    if (!chosen) return replace(status, errorBox({ message: "Choose a JSON-lines file first." }));
    cancel = false;
    start.disabled = true;
    stop.hidden = false;
    const started = performance.now();
    const show = (r, final = false) =>
      replace(
        status,
        h(
          "div",
          { class: final ? (r.rejected.length ? "warning" : "ok") : "muted", id: final ? "import-summary" : null, role: "status" },
          `${final ? (r.stopped ? "Stopped" : "Done") : "Importing"}: ${count(r.loaded)} loaded, ${count(r.rejected.length)} rejected, ${count(r.read)} lines read` +
            (final ? ` in ${((performance.now() - started) / 1000).toFixed(1)} s.` : "…"),
        ),
        final && r.rejected.length
          ? h(
              "ul",
              { class: "rejections", id: "import-rejections" },
              r.rejected.slice(0, SHOWN_REJECTIONS).map((x) => h("li", {}, h("strong", { text: `line ${x.line}: ${x.code}` }), ` ${x.message}`)),
              r.rejected.length > SHOWN_REJECTIONS ? h("li", { class: "muted", text: `${count(r.rejected.length - SHOWN_REJECTIONS)} more` }) : null,
            )
          : null,
        final && r.rejected.some((x) => x.code === "EntityAlreadyExists") && !upsert.checked
          ? h("p", { class: "muted", text: "Some keys exist already: tick “replace existing entities” to overwrite them." })
          : null,
      );
    try {
      const result = await importLines(app.api, table, chosen, {
        upsert: upsert.checked,
        progress: (r) => show(r),
        cancelled: () => cancel,
      });
      show(result, true);
    } catch (e) {
      replace(status, e instanceof ApiError ? errorBox(e, h("p", { text: "The import stopped; what was acknowledged before stays loaded. Run it again with “replace existing entities” to load the rest." })) : errorBox({ message: e.message }));
    } finally {
      start.disabled = false;
      stop.hidden = true;
      onDone?.();
    }
  });
  host.hidden = false;
  replace(
    host,
    h(
      "section",
      { class: "card transfer", id: "import" },
      h("h2", { text: `Import JSON lines into ${table}` }),
      h("p", { class: "muted", text: "One entity per line, as `tableq gen`, `tableq eval` and exports write them:" }),
      h("p", { class: "muted example", id: "import-example", text: '{"PartitionKey":"p","RowKey":"r","Age":42,"Big@odata.type":"Edm.Int64","Big":"12"}' }),
      h("div", { class: "inline-form" }, file, h("label", {}, upsert, " replace existing entities (insert-or-replace)")),
      h("div", { class: "actions" }, start, stop, h("button", { id: "import-close", text: "Close", onclick: close })),
      status,
    ),
  );
}

/**
 * Exports every entity the query matches (all pages) as a JSON-lines file download.
 * `progress(n)` is called after each page; `cancelled()` stops it. Returns the count.
 */
export async function exportLines(api, table, query, { progress, cancelled }) {
  const parts = [];
  let next = null;
  let total = 0;
  do {
    const page = await api.query(table, { filter: query.filter, select: query.select, top: "1000", next });
    for (const e of page.entities) parts.push(`${toJsonLine(fromWire(e))}\n`);
    total += page.entities.length;
    next = page.next;
    progress(total);
  } while (next && !cancelled());
  const url = URL.createObjectURL(new Blob(parts, { type: "application/x-ndjson" }));
  const link = h("a", { href: url, download: `${table}.jsonl`, hidden: true });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
  return total;
}
