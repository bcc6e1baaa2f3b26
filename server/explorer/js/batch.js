// Entity group transactions (`$batch`) for the JSON-lines import: one changeset of up to
// 100 writes on one PartitionKey, each write's body the line's own text (never re-encoded,
// so every value reaches the server exactly as the file wrote it).

/** A boundary no JSON line can contain by accident. */
function boundary(prefix) {
  const bytes = new Uint8Array(12);
  crypto.getRandomValues(bytes);
  return `${prefix}_${Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")}`;
}

/**
 * The body of a batch of writes to `table`: `ops` is [{ method: "POST" | "PUT", path, body }]
 * (`path` relative to the account, e.g. `t` or `t(PartitionKey='p',RowKey='r')`), `base`
 * the account's URL (`http://127.0.0.1:10002/devstoreaccount1`). Returns { boundary, body }.
 */
export function batchBody(base, ops) {
  const batch = boundary("batch");
  const changeset = boundary("changeset");
  const lines = [`--${batch}`, `Content-Type: multipart/mixed; boundary=${changeset}`, ""];
  ops.forEach((op, i) => {
    lines.push(
      `--${changeset}`,
      "Content-Type: application/http",
      "Content-Transfer-Encoding: binary",
      `Content-ID: ${i + 1}`,
      "",
      `${op.method} ${base}/${op.path} HTTP/1.1`,
      "Content-Type: application/json",
      "Accept: application/json;odata=nometadata",
      "Prefer: return-no-content",
      "DataServiceVersion: 3.0;",
      "",
      op.body,
    );
  });
  lines.push(`--${changeset}--`, `--${batch}--`, "");
  return { boundary: batch, body: lines.join("\r\n") };
}

/**
 * Reads a `$batch` reply: { ok: true, count } when every operation succeeded, or
 * { ok: false, index, status, code, message } for the operation that failed (the service
 * answers a failed changeset with that one operation's status and error, its message
 * starting with the 0-based index).
 */
export function readBatchReply(text) {
  const statuses = [...text.matchAll(/^HTTP\/1\.1 (\d{3})/gm)];
  const failed = statuses.find((m) => Number(m[1]) >= 300);
  if (!failed) return { ok: true, count: statuses.length };
  const status = Number(failed[1]);
  const rest = text.slice(failed.index);
  const json = rest.slice(rest.indexOf("{"), rest.lastIndexOf("}") + 1);
  let code = `HTTP${status}`;
  let message = "";
  try {
    const error = JSON.parse(json)["odata.error"];
    code = error.code ?? code;
    message = error.message?.value ?? "";
  } catch {
    message = rest.slice(0, 400);
  }
  const indexed = /^(\d+):/.exec(message);
  const lines = message
    .replace(/^\d+:/, "")
    .split("\n")
    .filter((l) => l && !/^(RequestId|Time):/.test(l));
  return { ok: false, index: indexed ? Number(indexed[1]) : 0, status, code, message: lines.join(" — ") };
}
