// The studio's Types panel (read-only): the KB's struct/union/enum/typedef declarations from
// /api/types, and for the one clicked, /api/types/{name}: its declaration, members with
// offsets and sizes (or enumerators), and where it is applied. Everything from the KB is text.
import { el, fill } from "./dom.js";
import { api } from "./api.js";

const SHOWN = 200;  // types listed (the API pages the rest)

function detail(t, openFunction) {
  const rows = [el("pre", { class: "ty-decl", text: t.text || t.name }),
    el("div", { class: "faint" }, t.kind + ", " + (t.size === null || t.size === undefined ? "?" : t.size) +
      " bytes, align " + t.align + " · ", el("span", { class: "p-" + t.provenance, text: t.provenance }),
      t.locked ? " · locked" : "")];
  if ((t.fields || []).length) {
    rows.push(el("table", { class: "ty-members" },
      el("tr", {}, el("th", { text: "offset" }), el("th", { text: "size" }), el("th", { text: "name" }), el("th", { text: "type" })),
      t.fields.map((f) => el("tr", {}, el("td", { text: String(f.offset) }), el("td", { text: String(f.size) }),
        el("td", { text: f.name || "(anonymous)" }), el("td", {}, el("code", { text: f.type }))))));
  }
  for (const [n, v] of t.enumerators || []) rows.push(el("div", { class: "ty-enum" }, el("code", { text: n }), " = " + v));
  const applied = t.applied || [];
  rows.push(el("div", { class: "faint", text: applied.length ? "applied to" : "not applied yet" }));
  for (const a of applied.slice(0, 50)) {
    const fn = a.function;
    const where = fn
      ? el("span", { class: "xref", text: "local " + a.key + " of " + (fn.name || "unnamed " + fn.stable_id) +
          (fn.index === null ? "" : " (v" + fn.version_id + " #" + fn.index + ")"),
        onclick: () => { if (openFunction && fn.index !== null) openFunction(fn.index, fn.version_id); } })
      : el("span", { text: "data " + a.target + (a.key ? " " + a.key : "") });
    rows.push(el("div", { class: "ty-applied" }, where, ": ", el("code", { text: a.type })));
  }
  return rows;
}

/** Fill `node` with the KB's types; clicking one shows its layout under it. */
export async function typesPanel(node, openFunction) {
  let page;
  try { page = await api("/api/types?limit=" + SHOWN); } catch (e) {
    fill(node, el("span", { class: "hint", text: "types unavailable: " + e.message }));
    return;
  }
  if (!page.types.length) {
    fill(node, el("span", { class: "hint", text: "No types yet (kbtool types add FILE.h)." }));
    return;
  }
  const box = el("div", { id: "type-detail" });
  const rows = page.types.map((t) => el("div", { class: "tyrow", dataset: { name: t.name },
    onclick: async (ev) => {
      for (const r of node.querySelectorAll(".tyrow.sel")) r.classList.remove("sel");
      ev.currentTarget.classList.add("sel");
      try { fill(box, detail(await api("/api/types/" + encodeURIComponent(t.name)), openFunction)); } catch (e) {
        fill(box, el("span", { class: "hint", text: e.message }));
      }
    } },
  el("code", { text: t.name }), el("span", { class: "faint", text: " " + t.kind + " · " +
    (t.size === null ? "?" : t.size) + " B · " + t.fields + " members · " + t.uses + " uses" })));
  fill(node, el("div", { class: "faint", text: page.total + " type(s)" + (page.total > page.types.length ? ", first " + page.types.length : "") }),
    rows, box);
}
