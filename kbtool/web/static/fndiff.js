// The per-function diff of the dashboard: old and new disassembly side by side, lines aligned
// by a longest common subsequence over lines with operands normalised (numbers, function
// indices), so a changed constant or callee shows as a changed line rather than a delete + add.
// Bounded: common prefix and suffix are stripped, and the quadratic LCS runs only when the rest
// is at most MAX_CELLS; beyond that the middle is aligned by position.
import { el, fill } from "./dom.js";
import { api } from "./api.js";
import { highlight } from "./code.js";

const MAX_CELLS = 4_000_000;
const MAX_ROWS = 5000;

// the byte offset objdump-like listings start each instruction line with ("00920d: ")
const OFFSET = /^\s*[0-9a-fA-F]+:\s?/;
/** A line without its byte offset (offsets move whenever anything before them changes). */
export const body = (line) => line.replace(OFFSET, "");
/** A line with its operands normalised: offset dropped, numbers and hex become placeholders. */
export const normalise = (line) => body(line).replace(/\b0x[0-9a-fA-F]+\b/g, "N").replace(/-?\b\d+\b/g, "N").replace(/\s+/g, " ").trim();

/**
 * Aligned rows [oldLine|null, newLine|null, tag] with tag "same" (identical), "changed"
 * (same shape, different operands), "del" or "add".
 */
export function alignLines(a, b) {
  const rows = [];
  const na = a.map(normalise), nb = b.map(normalise);
  let lo = 0;
  while (lo < a.length && lo < b.length && na[lo] === nb[lo]) lo++;
  let ea = a.length, eb = b.length;
  while (ea > lo && eb > lo && na[ea - 1] === nb[eb - 1]) { ea--; eb--; }
  const pair = (i, j) => rows.push([a[i], b[j], body(a[i]) === body(b[j]) ? "same" : "changed"]);
  for (let i = 0; i < lo; i++) pair(i, i);
  const n = ea - lo, m = eb - lo;
  if (n * m <= MAX_CELLS && n > 0 && m > 0) {
    const w = m + 1, L = new Uint32Array((n + 1) * w);
    for (let i = n - 1; i >= 0; i--) {
      for (let j = m - 1; j >= 0; j--) {
        L[i * w + j] = na[lo + i] === nb[lo + j] ? L[(i + 1) * w + j + 1] + 1 : Math.max(L[(i + 1) * w + j], L[i * w + j + 1]);
      }
    }
    let i = 0, j = 0;
    while (i < n && j < m) {
      if (na[lo + i] === nb[lo + j]) { pair(lo + i, lo + j); i++; j++; }
      else if (L[(i + 1) * w + j] >= L[i * w + j + 1]) rows.push([a[lo + i++], null, "del"]);
      else rows.push([null, b[lo + j++], "add"]);
    }
    while (i < n) rows.push([a[lo + i++], null, "del"]);
    while (j < m) rows.push([null, b[lo + j++], "add"]);
  } else {
    for (let k = 0; k < Math.max(n, m); k++) {
      const x = k < n ? a[lo + k] : null, y = k < m ? b[lo + k] : null;
      rows.push([x, y, x === null ? "add" : y === null ? "del" : body(x) === body(y) ? "same" : "changed"]);
    }
  }
  for (let k = 0; k < a.length - ea; k++) pair(ea + k, eb + k);
  return rows;
}

/** Fetch both disassemblies of a diff change and show them side by side in `host`. */
export async function showFunctionDiff(host, change, fromVid, toVid, onClose) {
  fill(host, el("div", { class: "faint", text: "loading the two disassemblies…" }));
  let da, db;
  try {
    [da, db] = await Promise.all([api("/api/disasm/" + fromVid + "/" + change.from_index), api("/api/disasm/" + toVid + "/" + change.to_index)]);
  } catch (e) {
    fill(host, el("div", { class: "err", text: "per-function diff unavailable: " + e.message }));
    return;
  }
  const rows = alignLines(da.mnemonics.split("\n"), db.mnemonics.split("\n"));
  const counts = { same: 0, changed: 0, del: 0, add: 0 };
  for (const r of rows) counts[r[2]]++;
  const body = el("tbody");
  for (const [x, y, tag] of rows.slice(0, MAX_ROWS)) {
    body.append(el("tr", { class: "dl " + tag },
      el("td", { class: "code" }, x === null ? "" : highlight(x)),
      el("td", { class: "code" }, y === null ? "" : highlight(y))));
  }
  fill(host,
    el("div", { class: "sbs-head" },
      el("b", { text: change.name ?? "unnamed" }), " · #" + change.from_index + " → #" + change.to_index + " · ",
      el("span", { text: counts.changed + " changed, " + counts.del + " removed, " + counts.add + " added, " + counts.same + " same lines" }),
      rows.length > MAX_ROWS ? el("span", { class: "faint", text: " · first " + MAX_ROWS + " of " + rows.length + " rows" }) : null,
      el("button", { class: "btn ghost", id: "sbs-close", text: "close", onclick: onClose })),
    el("div", { class: "sbs-wrap" }, el("table", { class: "sbs-table" },
      el("thead", {}, el("tr", {}, el("th", { text: "old (version " + fromVid + ")" }), el("th", { text: "new (version " + toVid + ")" }))), body)));
}
