// Credentials: what the user pastes (an account key, a connection string, a SAS token),
// how it is kept (this tab's sessionStorage only: gone when the tab closes, never sent to
// the server — only signatures and SAS tokens are), and the SharedKeyLite signature the
// Table service checks, computed with WebCrypto's HMAC-SHA256.
//
//   SharedKeyLite string to sign:  x-ms-date + "\n" + "/" + account + <request path as sent>
//                                  (+ "?comp=" + value when the query has `comp`)

/** The development account and its well-known key (public: every SDK and emulator has it). */
export const DEV_ACCOUNT = "devstoreaccount1";
export const DEV_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

const STORAGE_KEY = "tableq.explorer.credential";
const ACCOUNT_NAME = /^[a-z0-9]{3,24}$/;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/** A credential the user cannot use, with a message saying why. */
export class CredentialError extends Error {}

/**
 * Reads what the user pasted. `account` is the account field of the form (used unless the
 * text names one). Returns { kind: "key", account, key } or { kind: "sas", account, sas }.
 *
 * Accepted: a base64 account key; a connection string (`UseDevelopmentStorage=true`,
 * `AccountName=…;AccountKey=…`, `SharedAccessSignature=…`, `TableEndpoint=…/account`); a
 * SAS token (`sv=…&sig=…`, with or without a leading `?`, or a whole URL carrying one).
 */
export function parseCredential(text, account) {
  const input = (text ?? "").trim();
  if (!input) throw new CredentialError("Paste an account key, a connection string or a SAS token.");
  if (/^UseDevelopmentStorage=true;?$/i.test(input)) {
    return { kind: "key", account: DEV_ACCOUNT, key: DEV_KEY };
  }
  if (/(^|;)\s*(AccountName|AccountKey|SharedAccessSignature|TableEndpoint|DefaultEndpointsProtocol)\s*=/i.test(input) && !input.includes("&")) {
    return fromConnectionString(input, account);
  }
  if (input.includes("sig=")) {
    const sas = input.includes("?") ? input.slice(input.indexOf("?") + 1) : input;
    return { kind: "sas", account: checkedAccount(account), sas: checkedSas(sas) };
  }
  if (BASE64.test(input)) {
    return { kind: "key", account: checkedAccount(account), key: checkedKey(input) };
  }
  throw new CredentialError(
    "This is neither an account key (base64), a connection string (AccountName=…;AccountKey=…) nor a SAS token (…&sig=…).",
  );
}

function fromConnectionString(text, account) {
  const fields = {};
  for (const part of text.split(";")) {
    const at = part.indexOf("=");
    if (at > 0) fields[part.slice(0, at).trim().toLowerCase()] = part.slice(at + 1).trim();
  }
  let name = fields.accountname;
  if (!name && fields.tableendpoint) {
    name = fields.tableendpoint.replace(/\/+$/, "").split("/").pop();
  }
  name = checkedAccount(name || account);
  if (fields.accountkey) return { kind: "key", account: name, key: checkedKey(fields.accountkey) };
  if (fields.sharedaccesssignature) {
    return { kind: "sas", account: name, sas: checkedSas(fields.sharedaccesssignature.replace(/^\?/, "")) };
  }
  throw new CredentialError("The connection string has neither AccountKey nor SharedAccessSignature.");
}

function checkedAccount(name) {
  const value = (name ?? "").trim();
  if (!ACCOUNT_NAME.test(value)) {
    throw new CredentialError(`Account name "${value}": want 3 to 24 lower-case letters and digits.`);
  }
  return value;
}

function checkedKey(key) {
  if (!BASE64.test(key) || key.length % 4 !== 0) {
    throw new CredentialError("The account key is not base64 (an account key looks like Eby8vdM0…==).");
  }
  return key;
}

function checkedSas(sas) {
  const params = new URLSearchParams(sas);
  if (!params.get("sig")) throw new CredentialError("The SAS token has no signature (sig=…).");
  return sas;
}

/** What a SAS token allows, for display: { permissions, table, expiry, resourceTypes, services }. */
export function describeSas(sas) {
  const p = new URLSearchParams(sas);
  return {
    permissions: p.get("sp") ?? "",
    table: p.get("tn"),
    expiry: p.get("se"),
    resourceTypes: p.get("srt"),
    services: p.get("ss"),
  };
}

/** The credential kept for this tab, or null. */
export function loadCredential() {
  try {
    const text = sessionStorage.getItem(STORAGE_KEY);
    const value = text ? JSON.parse(text) : null;
    return value && (value.kind === "key" || value.kind === "sas" || value.kind === "none") ? value : null;
  } catch {
    return null;
  }
}

/** Keeps the credential for this tab only (sessionStorage). */
export function saveCredential(credential) {
  sessionStorage.setItem(STORAGE_KEY, JSON.stringify(credential));
}

/** Forgets the credential. */
export function clearCredential() {
  sessionStorage.removeItem(STORAGE_KEY);
}

function base64Bytes(text) {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

function bytesBase64(bytes) {
  let binary = "";
  for (const b of new Uint8Array(bytes)) binary += String.fromCharCode(b);
  return btoa(binary);
}

/** Why this page cannot sign with a key, or null when it can. */
export function signingUnavailable() {
  if (globalThis.crypto?.subtle) return null;
  return (
    "This page is not a secure context (plain HTTP to an address other than 127.0.0.1 or localhost), " +
    "so the browser withholds WebCrypto and the page cannot sign with an account key. " +
    "Use a SAS token instead, or open the explorer through http://127.0.0.1 (an SSH tunnel works) or HTTPS."
  );
}

/** Signs requests with SharedKeyLite. The key is imported as a non-extractable CryptoKey. */
export class SharedKeyLite {
  static async create(account, key) {
    const reason = signingUnavailable();
    if (reason) throw new CredentialError(reason);
    const cryptoKey = await crypto.subtle.importKey(
      "raw",
      base64Bytes(key),
      { name: "HMAC", hash: "SHA-256" },
      false,
      ["sign"],
    );
    return new SharedKeyLite(account, cryptoKey);
  }

  constructor(account, cryptoKey) {
    this.account = account;
    this.cryptoKey = cryptoKey;
  }

  /** The SharedKeyLite string to sign for a request (see the module comment). */
  static stringToSign(account, date, path, query) {
    let resource = `/${account}${path}`;
    const comp = new URLSearchParams(query ?? "").get("comp");
    if (comp !== null) resource += `?comp=${comp}`;
    return `${date}\n${resource}`;
  }

  /** Base64 HMAC-SHA256 of `text`. */
  async sign(text) {
    const mac = await crypto.subtle.sign("HMAC", this.cryptoKey, new TextEncoder().encode(text));
    return bytesBase64(mac);
  }

  /** The headers that sign a request for `url` (a URL object): x-ms-date and Authorization. */
  async headers(url, date = new Date().toUTCString()) {
    const text = SharedKeyLite.stringToSign(this.account, date, url.pathname, url.search.slice(1));
    return {
      "x-ms-date": date,
      authorization: `SharedKeyLite ${this.account}:${await this.sign(text)}`,
    };
  }
}
