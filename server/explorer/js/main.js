// The explorer's entry point: reads the server's config.json, signs in (or not, when the
// server runs with --no-auth), and shows the page the URL's hash names:
//
//   #/                          the account's tables
//   #/tables/NAME?filter=…&select=…&top=…   a table: query bar, explain panel, entity grid
//
// Every request goes to this server's REST API (see api.js); nothing is loaded from
// anywhere else.

import { Api, ApiError } from "./api.js";
import {
  CredentialError,
  DEV_ACCOUNT,
  DEV_KEY,
  clearCredential,
  describeSas,
  loadCredential,
  parseCredential,
  saveCredential,
  signingUnavailable,
} from "./credentials.js";
import { errorBox, h, replace } from "./dom.js";
import { renderTables } from "./tables.js";
import { renderTable } from "./table.js";

const main = document.getElementById("main");
const crumbs = document.getElementById("crumbs");
const who = document.getElementById("who");

const app = {
  config: null,
  api: null,
  credential: null,
  view: null,
  main,
  /** Sets the location shown in the top bar: [{ text, href }]. */
  setCrumbs(items) {
    replace(
      crumbs,
      items.map((item, i) => [
        i ? h("span", { class: "sep", text: "›" }) : null,
        item.href ? h("a", { href: item.href, text: item.text }) : h("span", { text: item.text }),
      ]),
    );
  },
  navigate(hash) {
    if (location.hash === hash) route();
    else location.hash = hash;
  },
  signOut() {
    clearCredential();
    app.api = null;
    app.credential = null;
    location.hash = "#/";
    route();
  },
};

/** The route of the current hash: { page: "tables" } or { page: "table", name, params }. */
function currentRoute() {
  const hash = location.hash.replace(/^#/, "") || "/";
  const [path, search = ""] = hash.split("?");
  const match = /^\/tables\/([^/]+)$/.exec(path);
  if (match) return { page: "table", name: decodeURIComponent(match[1]), params: new URLSearchParams(search) };
  return { page: "tables" };
}

function showWho() {
  const c = app.credential;
  if (!c) return replace(who);
  let what = "account key (SharedKeyLite)";
  if (c.kind === "sas") {
    const sas = describeSas(c.sas);
    what = `SAS ${sas.permissions ? `sp=${sas.permissions}` : ""}${sas.table ? ` tn=${sas.table}` : ""}`;
  }
  if (c.kind === "none") what = "authorization off (--no-auth)";
  replace(
    who,
    h("span", { class: "account", text: app.api.account }),
    h("span", { class: "muted", text: ` · ${what}` }),
    c.kind === "none" ? null : h("button", { class: "link", onclick: () => app.signOut(), text: "Sign out" }),
  );
}

async function route() {
  app.view?.dispose?.();
  app.view = null;
  if (!app.api) {
    renderLogin();
    return;
  }
  showWho();
  const r = currentRoute();
  if (r.page === "table") {
    app.view = renderTable(app, r.name, r.params);
  } else {
    const table = app.credential.kind === "sas" ? describeSas(app.credential.sas).table : null;
    if (table) {
      app.navigate(`#/tables/${encodeURIComponent(table)}`);
      return;
    }
    app.view = renderTables(app);
  }
}

/** Checks a credential against the server: lists tables, or reads the SAS token's table. */
async function verify(api, credential) {
  const table = credential.kind === "sas" ? describeSas(credential.sas).table : null;
  if (table) await api.countEntities(table, 1);
  else await api.listTables();
}

async function signIn(account, credential, status) {
  replace(status, h("span", { class: "muted", text: "Checking…" }));
  try {
    const api = await Api.connect(account, credential);
    await verify(api, credential);
    saveCredential({ ...credential, account });
    app.api = api;
    app.credential = credential;
    await route();
  } catch (e) {
    if (e instanceof ApiError) {
      replace(status, errorBox(e, h("p", { class: "muted", text: "The server refused this credential for this account." })));
    } else {
      replace(status, errorBox({ message: e.message }));
    }
  }
}

function renderLogin() {
  app.setCrumbs([{ text: "sign in" }]);
  replace(who);
  const account = h("input", {
    id: "login-account",
    value: app.config.account,
    autocomplete: "off",
    spellcheck: "false",
    "aria-label": "account",
  });
  const secret = h("textarea", {
    id: "login-secret",
    rows: 3,
    spellcheck: "false",
    autocomplete: "off",
    placeholder: "Account key, connection string (AccountName=…;AccountKey=…) or SAS token (sv=…&sig=…)",
    "aria-label": "credential",
  });
  const status = h("div", { class: "status" });
  const submit = (event) => {
    event?.preventDefault();
    let credential;
    try {
      credential = parseCredential(secret.value, account.value);
    } catch (e) {
      if (e instanceof CredentialError) return replace(status, errorBox({ message: e.message }));
      throw e;
    }
    account.value = credential.account;
    signIn(credential.account, credential, status);
  };
  const useDev = () => {
    account.value = DEV_ACCOUNT;
    secret.value = "";
    signIn(DEV_ACCOUNT, { kind: "key", account: DEV_ACCOUNT, key: DEV_KEY }, status);
  };
  const insecure = signingUnavailable();
  replace(
    main,
    h(
      "section",
      { class: "card login" },
      h("h1", { text: "Sign in" }),
      h("p", {
        text: `This tableq server checks every request (authorization is on). The explorer signs its requests in this browser tab, like any other client of ${location.origin}.`,
      }),
      h(
        "div",
        { class: "form", onkeydown: (e) => e.key === "Enter" && (e.ctrlKey || e.target === account) && submit(e) },
        h("label", { for: "login-account", text: "Account" }),
        account,
        h("label", { for: "login-secret", text: "Credential" }),
        secret,
        h(
          "div",
          { class: "actions" },
          h("button", { class: "primary", id: "login-submit", onclick: submit, text: "Sign in" }),
          h("button", {
            id: "login-dev",
            onclick: useDev,
            disabled: Boolean(insecure),
            text: `Use ${DEV_ACCOUNT} (the well-known development key)`,
          }),
        ),
      ),
      status,
      insecure ? h("p", { class: "warning", text: insecure }) : null,
      h(
        "details",
        { class: "muted" },
        h("summary", { text: "Where does the key go?" }),
        h("p", {
          text:
            "An account key or SAS token is kept in this tab's sessionStorage only: it is gone when the tab closes. " +
            "A key never leaves the browser: it is imported into WebCrypto (not extractable) and signs each request " +
            "(SharedKeyLite, HMAC-SHA256). A SAS token is sent with each request, as SAS clients do, and limits the " +
            "explorer to what the token allows. Connection strings are printed by `tableq serve` at start-up.",
        }),
      ),
    ),
  );
  (account.value ? secret : account).focus();
}

async function boot() {
  try {
    const response = await fetch("config.json", { cache: "no-store" });
    app.config = await response.json();
  } catch (e) {
    replace(main, errorBox({ message: `Cannot read the explorer's configuration: ${e.message}` }));
    return;
  }
  if (app.config.auth === "off") {
    app.credential = { kind: "none" };
    app.api = await Api.connect(app.config.account, app.credential);
  } else {
    const kept = loadCredential();
    if (kept && kept.kind !== "none") {
      try {
        app.api = await Api.connect(kept.account, kept);
        app.credential = kept;
      } catch {
        clearCredential();
      }
    }
  }
  window.addEventListener("hashchange", route);
  await route();
}

boot();
