// DOM helpers. Everything the explorer shows is built with these: text always goes in as
// text nodes (never as HTML), so entity values, table names and error messages can never
// inject markup or script.

/**
 * Creates an element: h("button", { class: "primary", onclick: fn, disabled: true }, "Run").
 * Attributes: `class`, `text` (text content), `on<event>` (listeners), `dataset` (object),
 * booleans set or drop the attribute, anything else is set as an attribute. Children:
 * strings (text), nodes, arrays of those; null, undefined and false are skipped.
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "class") el.className = value;
    else if (name === "text") el.textContent = value;
    else if (name === "dataset") Object.assign(el.dataset, value);
    else if (name.startsWith("on") && typeof value === "function") el.addEventListener(name.slice(2), value);
    else if (value === true) el.setAttribute(name, "");
    else if (name === "value" && "value" in el) el.value = value;
    else el.setAttribute(name, String(value));
  }
  append(el, children);
  return el;
}

/** Appends children (see `h`) to `el`. */
export function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** Replaces every child of `el`. */
export function replace(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

/** 1234567 → "1,234,567". */
export function count(n) {
  return Number(n).toLocaleString("en-US");
}

/** Milliseconds with a sensible precision: 0.042 ms, 3.1 ms, 250 ms. */
export function ms(value) {
  if (value < 1) return `${value.toFixed(3)} ms`;
  if (value < 10) return `${value.toFixed(1)} ms`;
  return `${Math.round(value)} ms`;
}

/** Runs `fn` `wait` ms after the last call (for validate-as-you-type). */
export function debounce(fn, wait) {
  let timer = null;
  const debounced = (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => fn(...args), wait);
  };
  debounced.cancel = () => clearTimeout(timer);
  return debounced;
}

/** An error box: a headline and optional detail lines (preformatted). */
export function errorBox(error, extra = null) {
  const title = error.code ? `${error.status ?? ""} ${error.code}`.trim() : "Error";
  return h(
    "div",
    { class: "error-box", role: "alert" },
    h("strong", { text: title }),
    error.sentence ? h("div", { text: error.sentence }) : null,
    error.detail ? h("pre", { class: "detail", text: error.detail }) : null,
    !error.code && error.message ? h("div", { text: error.message }) : null,
    extra,
  );
}
