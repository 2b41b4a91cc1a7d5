// Text-only DOM helpers shared by the kbtool pages.
//
// Everything that comes from the KB is inserted as text (textContent / text nodes), never as
// HTML, and always through `visible()`: bidi controls (U+202E would turn "\u202Eexe.txt" into
// "txt.exe" on screen), zero-width characters and other control characters are shown as
// visible escapes such as "⟨U+202E⟩". Use `el(tag, {text})`, string children of `el`/`fill`,
// or `setText` — never assign `textContent` with KB data directly.

// C0/C1 controls (but tab and newline), bidi embeddings/overrides/isolates/marks,
// zero-width characters, line/paragraph separators, the BOM, interlinear annotations, and
// the tag characters U+E0000-U+E007F (invisible text; the same set as kbtool/textutil.py).
const INVISIBLE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u00ad\u061c\u115f\u1160\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb\u{e0000}-\u{e007f}]/gu;

/** `value` as a string with every invisible or reordering character made visible. */
export function visible(value) {
  if (value === null || value === undefined) return "";
  return String(value).replace(INVISIBLE, (ch) =>
    "⟨U+" + ch.codePointAt(0).toString(16).toUpperCase().padStart(4, "0") + "⟩");
}

export const $ = (id) => document.getElementById(id);

/** Set a node's text (through `visible`). */
export function setText(node, value) {
  node.textContent = visible(value);
  return node;
}

const kid = (c) => (c instanceof Node ? c : document.createTextNode(visible(c)));
const present = (c) => c !== null && c !== undefined && c !== false;

/**
 * A new element. `props`: class, text, title, dataset, style (an object), on<event>
 * handlers, other attributes. Children: nodes or values (shown as text).
 */
export function el(tag, props, ...kids) {
  const e = document.createElement(tag);
  if (props) {
    for (const [k, v] of Object.entries(props)) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "class") e.className = v;
      else if (k === "text") e.textContent = visible(v);
      else if (k === "title") e.title = visible(v);
      else if (k === "dataset") Object.assign(e.dataset, v);
      else if (k === "style") Object.assign(e.style, v);
      else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? "" : String(v));
    }
  }
  for (const c of kids.flat(2)) if (present(c)) e.append(kid(c));
  return e;
}

/** Remove every child of `node`. */
export const clear = (node) => { node.replaceChildren(); return node; };

/** replaceChildren that skips null/undefined/false like `el()` and shows values as text. */
export function fill(node, ...kids) {
  node.replaceChildren();
  for (const c of kids.flat(2)) if (present(c)) node.append(kid(c));
  return node;
}

export const show = (node, on) => node.classList.toggle("hidden", !on);
export const fmtInt = (n) => (n === null || n === undefined) ? "–" : Number(n).toLocaleString("en-US");
export const fmtConf = (c) => (c === null || c === undefined) ? "–" : Number(c).toFixed(2);

/** A version's toolchain for a human: the API's null reads "unknown", as in the CLI and TUI
 *  (kbtool.render.text.UNKNOWN_TOOLCHAIN). */
export const toolchainWord = (t) => (t === null || t === undefined || t === "") ? "unknown" : String(t);
