// The Table service REST API as the explorer uses it: the same requests every client sends,
// to this origin, signed in the browser (SharedKeyLite) or carrying a SAS token — so the
// explorer can never reach more than REST allows. Plus tableq's `x-tableq-explain` header
// on entity queries (the plan, or the executor's statistics of a page).

import { SharedKeyLite } from "./credentials.js";
import { parseJson } from "./edm.js";

const VERSION = "2019-02-02";
export const FULL_METADATA = "application/json;odata=fullmetadata";
export const NO_METADATA = "application/json;odata=nometadata";

/** A refused request: HTTP status, the service's error code, its sentence and tableq's detail. */
export class ApiError extends Error {
  constructor(status, code, sentence, detail, requestId) {
    super(detail ? `${code}: ${detail}` : `${code}: ${sentence}`);
    this.status = status;
    this.code = code;
    this.sentence = sentence;
    this.detail = detail;
    this.requestId = requestId;
  }

  /** 412 UpdateConditionNotSatisfied: the entity changed since its ETag was read. */
  get isConflict() {
    return this.status === 412;
  }
}

/** Percent-encodes everything but unreserved characters (RFC 3986), as the SDKs encode keys. */
export function encode(text) {
  return encodeURIComponent(text).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/** The path of one entity: `t(PartitionKey='…',RowKey='…')`, quotes doubled, encoded. */
export function entityPath(table, partitionKey, rowKey) {
  const key = (k) => encode(k.replace(/'/g, "''"));
  return `${table}(PartitionKey='${key(partitionKey)}',RowKey='${key(rowKey)}')`;
}

/** An error response → ApiError (the `odata.error` body, or the status alone). */
async function apiError(response) {
  const text = await response.text();
  let code = response.headers.get("x-ms-error-code") ?? `HTTP${response.status}`;
  let message = text || response.statusText;
  try {
    const body = JSON.parse(text)["odata.error"];
    code = body.code ?? code;
    message = body.message?.value ?? message;
  } catch {
    // Not JSON (a proxy, a 414 from the HTTP layer): keep the text.
  }
  const lines = message.split("\n").filter((l) => !/^(RequestId|Time):/.test(l));
  const [sentence, ...rest] = lines;
  return new ApiError(response.status, code, sentence ?? "", rest.join("\n").trim(), response.headers.get("x-ms-request-id"));
}

export class Api {
  /**
   * `account`: the account of every path; `credential`: { kind: "key", key } |
   * { kind: "sas", sas } | { kind: "none" } (authorization off).
   */
  static async connect(account, credential) {
    const signer = credential.kind === "key" ? await SharedKeyLite.create(account, credential.key) : null;
    return new Api(account, credential, signer);
  }

  constructor(account, credential, signer) {
    this.account = account;
    this.credential = credential;
    this.signer = signer;
  }

  /** The URL of `path` (under the account) with query parameters (and the SAS token). */
  url(path, params = {}) {
    const query = Object.entries(params)
      .filter(([, v]) => v !== undefined && v !== null && v !== "")
      .map(([k, v]) => `${k}=${encode(String(v))}`);
    if (this.credential.kind === "sas") query.push(this.credential.sas);
    const search = query.length ? `?${query.join("&")}` : "";
    return new URL(`/${this.account}/${path}${search}`, location.origin);
  }

  /** Sends a request; returns the Response (any status). */
  async send(method, path, { params, headers = {}, body } = {}) {
    const url = this.url(path, params);
    const all = {
      "x-ms-version": VERSION,
      DataServiceVersion: "3.0",
      MaxDataServiceVersion: "3.0;NetFx",
      accept: FULL_METADATA,
      ...headers,
    };
    if (this.signer) Object.assign(all, await this.signer.headers(url));
    return fetch(url, { method, headers: all, body, cache: "no-store", credentials: "omit" });
  }

  /** Sends a request; throws ApiError unless it succeeds. */
  async ok(method, path, options) {
    const response = await this.send(method, path, options);
    if (!response.ok) throw await apiError(response);
    return response;
  }

  // --- tables -------------------------------------------------------------------------

  /** One page of tables: { names, next }. */
  async listTables(next) {
    const r = await this.ok("GET", "Tables", { params: { NextTableName: next }, headers: { accept: NO_METADATA } });
    const body = await r.json();
    return { names: body.value.map((t) => t.TableName), next: r.headers.get("x-ms-continuation-NextTableName") };
  }

  async createTable(name) {
    await this.ok("POST", "Tables", {
      headers: { "content-type": "application/json", accept: NO_METADATA, prefer: "return-no-content" },
      body: JSON.stringify({ TableName: name }),
    });
  }

  async deleteTable(name) {
    await this.ok("DELETE", `Tables('${encode(name)}')`);
  }

  /**
   * How many entities a table holds, reading at most `limit` keys: { count, more }. `more`
   * is true when the table holds more (counting them all means paging through them).
   */
  async countEntities(table, limit = 1000, next = null) {
    const r = await this.ok("GET", `${table}()`, {
      params: { $select: "RowKey", $top: String(limit), ...(next ?? {}) },
      headers: { accept: NO_METADATA },
    });
    const body = await r.json();
    return { count: body.value.length, next: continuation(r) };
  }

  // --- entities -----------------------------------------------------------------------

  /**
   * One page of a query: { entities (raw JSON objects, numbers keeping their text), next,
   * stats } — `stats` from `x-tableq-stats` (examined, matched, ranges, chunks, ms).
   */
  async query(table, { filter, select, top, next } = {}) {
    const r = await this.ok("GET", `${table}()`, {
      params: { $filter: filter, $select: select, $top: top, ...(next ?? {}) },
      headers: { "x-tableq-explain": "analyze" },
    });
    const body = parseJson(await r.text());
    let stats = null;
    try {
      stats = JSON.parse(r.headers.get("x-tableq-stats") ?? "null");
    } catch {
      stats = null;
    }
    return { entities: body.value, next: continuation(r), stats };
  }

  /** The plan of a query, or the diagnostic of an invalid option (see tableq's explain module). */
  async explain(table, { filter, select, top } = {}, signal) {
    const url = this.url(`${table}()`, { $filter: filter, $select: select, $top: top });
    const headers = {
      "x-ms-version": VERSION,
      accept: "application/json",
      "x-tableq-explain": "plan",
    };
    if (this.signer) Object.assign(headers, await this.signer.headers(url));
    const r = await fetch(url, { headers, signal, cache: "no-store", credentials: "omit" });
    if (!r.ok) throw await apiError(r);
    return r.json();
  }

  /** One entity (raw JSON) and its ETag. */
  async getEntity(table, partitionKey, rowKey) {
    const r = await this.ok("GET", entityPath(table, partitionKey, rowKey));
    return { entity: parseJson(await r.text()), etag: r.headers.get("etag") };
  }

  /** Inserts an entity (`body`: JSON text); returns its ETag. */
  async insertEntity(table, body) {
    const r = await this.ok("POST", table, {
      headers: { "content-type": "application/json", prefer: "return-no-content" },
      body,
    });
    return r.headers.get("etag");
  }

  /**
   * Replaces (`merge` false) or merges an entity under `If-Match: etag` (`*`: whatever its
   * version; no etag: insert-or-replace / insert-or-merge); returns the new ETag. A stale
   * ETag throws ApiError with isConflict.
   */
  async updateEntity(table, partitionKey, rowKey, body, { merge, etag }) {
    const headers = { "content-type": "application/json" };
    if (etag) headers["if-match"] = etag; // without: insert-or-replace / insert-or-merge
    const r = await this.ok(merge ? "PATCH" : "PUT", entityPath(table, partitionKey, rowKey), { headers, body });
    return r.headers.get("etag");
  }

  async deleteEntity(table, partitionKey, rowKey, etag) {
    await this.ok("DELETE", entityPath(table, partitionKey, rowKey), { headers: { "if-match": etag } });
  }

  /** Posts a `$batch` body (see batch.js); returns the response text. */
  async batch(boundary, body) {
    const r = await this.ok("POST", "$batch", {
      headers: { "content-type": `multipart/mixed; boundary=${boundary}`, accept: NO_METADATA },
      body,
    });
    return r.text();
  }
}

/** The continuation of a query response, as the parameters of the next request, or null. */
function continuation(response) {
  const pk = response.headers.get("x-ms-continuation-NextPartitionKey");
  if (!pk) return null;
  const rk = response.headers.get("x-ms-continuation-NextRowKey");
  return rk ? { NextPartitionKey: pk, NextRowKey: rk } : { NextPartitionKey: pk };
}
