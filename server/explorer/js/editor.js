// The entity editor: one entity with its keys, Timestamp and ETag, and its properties as
// (name, Edm type, value) rows. Insert (POST), Replace (PUT) and Merge (PATCH) and Delete
// send `If-Match` with the ETag the entity was loaded with, so a write over someone else's
// change is refused by the server (412 UpdateConditionNotSatisfied) and shown as an ETag
// conflict: reload the current version, or overwrite it on purpose (`If-Match: *`).

import { ApiError } from "./api.js";
import { errorBox, h, replace } from "./dom.js";
import { TYPES, ValueError, cellText, customProps, fromWire, requestBody, shortType } from "./edm.js";

/**
 * Shows the editor in `host`: the entity with `keys` ({ partitionKey, rowKey }) of `table`,
 * or a new one when `keys` is null. `onChanged()` runs after every successful write;
 * `onClose()` when the editor closes.
 */
export function openEditor(app, table, keys, { host, onChanged, onClose }) {
  const { api } = app;
  const status = h("div", { class: "status", id: "editor-status" });
  const propRows = h("div", { class: "props", id: "editor-props" });
  const pk = h("input", { id: "editor-pk", class: "code", spellcheck: "false", autocomplete: "off", "aria-label": "PartitionKey" });
  const rk = h("input", { id: "editor-rk", class: "code", spellcheck: "false", autocomplete: "off", "aria-label": "RowKey" });
  const meta = h("dl", { class: "meta" });
  const actions = h("div", { class: "actions" });
  // Said only beside the buttons it is about (an entity that exists: Replace and Merge).
  const etagNote = h("p", {
    class: "muted small",
    id: "editor-etag-note",
    hidden: true,
    text: "Replace and Merge send If-Match with the ETag above: a change made meanwhile by anyone else is reported as a conflict, never overwritten silently.",
  });
  let loaded = null; // { entity, etag }

  const close = () => {
    host.replaceChildren();
    host.hidden = true;
    onClose?.();
  };

  const addRow = (prop = { name: "", type: "Edm.String", text: "" }) => {
    const name = h("input", { class: "code prop-name", value: prop.name, placeholder: "Name", spellcheck: "false", "aria-label": "property name" });
    const type = h("select", { class: "prop-type", "aria-label": "type" }, TYPES.map((t) => h("option", { value: t, text: shortType(t), selected: t === prop.type })));
    const slot = h("span", { class: "prop-value-slot" });
    const preview = h("div", { class: "preview muted" });
    let value = null;
    const control = (text) => {
      if (type.value === "Edm.Boolean") {
        value = h("select", { class: "prop-value", "aria-label": "value" }, ["true", "false"].map((v) => h("option", { value: v, text: v, selected: v === text })));
      } else {
        value = h("input", { class: "code prop-value", value: text ?? "", spellcheck: "false", "aria-label": "value", placeholder: placeholder(type.value) });
        value.addEventListener("input", () => showPreview());
      }
      replace(slot, value);
      showPreview();
    };
    const showPreview = () => {
      preview.textContent = type.value === "Edm.Binary" && value.value ? cellText({ type: "Edm.Binary", text: value.value }) : "";
    };
    type.addEventListener("change", () => control(value?.value ?? ""));
    control(prop.text ?? "");
    const row = h(
      "div",
      { class: "prop" },
      name,
      type,
      slot,
      h("button", { class: "link danger", title: "Remove this property", text: "×", onclick: () => row.remove() }),
      preview,
    );
    row.read = () => ({ name: name.value.trim(), type: type.value, text: value.value });
    propRows.append(row);
    return row;
  };

  const readProps = () => [...propRows.children].map((r) => r.read()).filter((p) => p.name);

  const fail = (e, retry) => {
    if (e instanceof ApiError && e.isConflict) {
      replace(
        status,
        h(
          "div",
          { class: "conflict", id: "conflict", role: "alert" },
          h("strong", { text: "ETag conflict — 412 UpdateConditionNotSatisfied" }),
          h("p", { text: "This entity was changed after you loaded it, so the server refused the write. Your version was not saved." }),
          h("p", { class: "muted code", text: `ETag you loaded: ${loaded?.etag ?? "?"}` }),
          h(
            "div",
            { class: "actions" },
            h("button", { id: "conflict-reload", text: "Reload the current version", onclick: () => load() }),
            retry ? h("button", { class: "danger", id: "conflict-overwrite", text: "Overwrite anyway (If-Match: *)", onclick: () => retry("*") }) : null,
          ),
        ),
      );
    } else if (e instanceof ValueError) {
      replace(status, errorBox({ message: e.message }));
    } else {
      replace(status, e instanceof ApiError ? errorBox(e) : errorBox({ message: e.message }));
    }
  };

  const done = async (message, keysAfter) => {
    onChanged?.();
    await load(keysAfter);
    replace(status, h("div", { class: "ok", role: "status", text: message }));
  };

  const write = async (merge, etag = loaded?.etag) => {
    try {
      const body = requestBody(null, readProps());
      await api.updateEntity(table, loaded.keys.partitionKey, loaded.keys.rowKey, body, { merge, etag });
      await done(merge ? "Merged." : "Replaced.", loaded.keys);
    } catch (e) {
      fail(e, (any) => write(merge, any));
    }
  };

  const remove = async (etag = loaded?.etag) => {
    try {
      await api.deleteEntity(table, loaded.keys.partitionKey, loaded.keys.rowKey, etag);
      onChanged?.();
      close();
    } catch (e) {
      fail(e, (any) => remove(any));
    }
  };

  const insert = async () => {
    const newKeys = { partitionKey: pk.value, rowKey: rk.value };
    try {
      const body = requestBody(newKeys, readProps());
      await api.insertEntity(table, body);
      await done("Inserted.", newKeys);
    } catch (e) {
      fail(e, null);
    }
  };

  const render = () => {
    const existing = Boolean(loaded);
    pk.readOnly = existing;
    rk.readOnly = existing;
    etagNote.hidden = !existing;
    if (existing) {
      pk.value = loaded.keys.partitionKey;
      rk.value = loaded.keys.rowKey;
      replace(meta, h("dt", { text: "Timestamp" }), h("dd", { class: "code", id: "editor-timestamp", text: loaded.entity.timestamp ?? "" }), h("dt", { text: "ETag" }), h("dd", { class: "code", id: "editor-etag", text: loaded.etag ?? "" }));
    } else {
      replace(meta);
    }
    propRows.replaceChildren();
    const props = existing ? customProps(loaded.entity) : [];
    if (props.length) props.forEach(addRow);
    else addRow();
    replace(
      actions,
      existing
        ? [
            h("button", { class: "primary", id: "editor-replace", title: "PUT: the entity becomes exactly these properties", text: "Replace", onclick: () => write(false) }),
            h("button", { id: "editor-merge", title: "PATCH: write these properties, keep the others", text: "Merge", onclick: () => write(true) }),
            h("button", { class: "danger", id: "editor-delete", text: "Delete", onclick: () => remove() }),
            h("button", { id: "editor-reload", text: "Reload", onclick: () => load() }),
          ]
        : [h("button", { class: "primary", id: "editor-insert", text: "Insert", onclick: insert })],
      h("button", { id: "editor-close", text: "Close", onclick: close }),
    );
  };

  const load = async (which = loaded?.keys ?? keys) => {
    if (!which) {
      loaded = null;
      render();
      return;
    }
    try {
      const { entity, etag } = await api.getEntity(table, which.partitionKey, which.rowKey);
      loaded = { keys: which, entity: fromWire(entity), etag };
      replace(status);
      render();
    } catch (e) {
      fail(e, null);
    }
  };

  host.hidden = false;
  replace(
    host,
    h(
      "section",
      { class: "card editor", id: "editor" },
      h("h2", { text: keys ? "Entity" : "New entity" }),
      h("div", { class: "keys" }, h("label", {}, h("span", { text: "PartitionKey" }), pk), h("label", {}, h("span", { text: "RowKey" }), rk)),
      meta,
      h("h3", { text: "Properties" }),
      propRows,
      h("button", { class: "link", id: "editor-add", text: "+ property", onclick: () => addRow().querySelector("input").focus() }),
      actions,
      status,
      etagNote,
    ),
  );
  load(keys);
  return { close, reload: () => load() };
}

function placeholder(type) {
  switch (type) {
    case "Edm.Int32":
      return "42";
    case "Edm.Int64":
      return "9007199254740993";
    case "Edm.Double":
      return "1.5, 1e10, NaN";
    case "Edm.DateTime":
      return "2024-01-02T03:04:05.1234567Z";
    case "Edm.Guid":
      return "c9da6455-213d-42c9-9a79-3e9149a57833";
    case "Edm.Binary":
      return "base64, e.g. AQID";
    default:
      return "text";
  }
}
