// Code shown as text: a small local highlighter (C and wasm text) that returns spans and
// text nodes only, shared by the studio and the dashboard's function panel.
import { el } from "./dom.js";

const C_WORDS = new Set(("auto break case char const continue default do double else enum extern float for " +
  "goto if inline int long register return short signed sizeof static struct switch typedef union " +
  "unsigned void volatile while").split(" "));
const C_TYPES = /^(u?int(8|16|32|64)_t|v128|wasm_ref|size_t)$/;
const TOKEN = /(\/\*[\s\S]*?\*\/|\/\/[^\n]*|;;[^\n]*|"(?:[^"\\\n]|\\.)*"|\b0x[0-9a-fA-F]+\b|\b\d+\b|\$?[A-Za-z_][A-Za-z0-9_.$]*)/g;

/**
 * `text` as highlighted nodes (spans and strings, never HTML). Identifiers found in `byName`
 * (a Map name -> function index) become `fnref` spans calling `onRef(index)` when clicked.
 */
export function highlight(text, byName, onRef) {
  const out = [];
  const src = String(text ?? "");
  let last = 0;
  for (const m of src.matchAll(TOKEN)) {
    if (m.index > last) out.push(src.slice(last, m.index));
    const t = m[0];
    let cls = null;
    if (t.startsWith("/*") || t.startsWith("//") || t.startsWith(";;")) cls = "cm";
    else if (t.startsWith('"')) cls = "str";
    else if (/^(0x|\d)/.test(t)) cls = "num";
    else if (C_WORDS.has(t)) cls = "kw";
    else if (C_TYPES.test(t)) cls = "ty";
    const target = byName && onRef && cls === null ? byName.get(t.replace(/^\$/, "")) : undefined;
    if (target !== undefined) {
      out.push(el("span", { class: "fnref", text: t, title: "#" + target, onclick: () => onRef(target) }));
    } else out.push(cls ? el("span", { class: cls, text: t }) : t);
    last = m.index + t.length;
  }
  if (last < src.length) out.push(src.slice(last));
  return out;
}

/** A Map name -> index over a function list (`{index, name}` rows). */
export function nameIndex(functions) {
  const m = new Map();
  for (const f of functions || []) if (f.name) m.set(f.name, f.index);
  return m;
}
