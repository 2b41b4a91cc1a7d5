// Data symbols and cross-references (issue 26): the dashboard's Data tab (strings with their
// xref counts, globals with roles and names, the xrefs of what is picked), the "data and
// globals it uses" section of the function panel and the studio. Everything from the KB
// (labels, string text, names) is text through dom.js, never HTML.
import { $, clear, el, fill, fmtInt, setText } from "./dom.js";
import { api } from "./api.js";

const PAGE = 100;
const hex = (n) => "0x" + Number(n).toString(16);

/** A string's text for a cell: JSON-quoted (shows \n, \t), cut at `max` characters. */
function quoted(text, max = 120) {
  const q = JSON.stringify(text ?? "");
  return q.length > max ? q.slice(0, max - 1) + "…" : q;
}

/** What a global is called: its name, else g<index>. */
const globalName = (g) => g.name || "g" + g.index;

/** A one-line description of an xrefs target. */
function targetLine(t) {
  if (t.kind === "function") return "function #" + t.index + (t.name ? " " + t.name : "");
  if (t.kind === "global") return "global " + globalName(t) + " (" + t.type + (t.mutable ? " mut" : "") + (t.role ? ", " + t.role : "") + ")";
  return t.kind + " " + t.label + " at " + hex(t.address) + " · " + fmtInt(t.size) + " bytes" + (t.text !== null && t.text !== undefined ? " · " + quoted(t.text, 80) : "");
}

/**
 * The references of `target` in version `vid` rendered into `box`: a table (function,
 * offset, kind); a function cell calls `onFunc(index)`.
 */
export async function showXrefs(box, vid, target, onFunc) {
  fill(box, el("div", { class: "faint", text: "loading xrefs of " + target + "…" }));
  let res;
  try { res = await api("/api/xrefs/" + vid + "?target=" + encodeURIComponent(target) + "&limit=" + 500); }
  catch (e) { fill(box, el("div", { class: "err", text: e.message })); return null; }
  const rows = (res.refs || []).map((r) => el("tr", { class: "xr", dataset: { func: String(r.func_index) } },
    el("td", {}, r.func_index < 0 ? el("span", { class: "faint", text: "(data)" })
      : el("a", { class: "tag", text: (r.name || "#" + r.func_index), title: "#" + r.func_index, onclick: () => onFunc(r.func_index) })),
    el("td", { class: "num", text: r.offset === null || r.offset === undefined ? "" : hex(r.offset) }),
    el("td", { class: "mono", text: r.kind })));
  fill(box,
    el("div", { class: "xhead", id: "xrefs-target", text: targetLine(res.target) }),
    el("div", { class: "faint", text: fmtInt(res.total) + " reference" + (res.total === 1 ? "" : "s") + (res.total > rows.length ? " · first " + rows.length + " shown" : "") }),
    rows.length ? el("table", { class: "xrefs" }, el("thead", {}, el("tr", {}, ["function", "offset", "kind"].map((t) => el("th", { text: t })))), el("tbody", {}, rows)) : null);
  return res;
}

/**
 * What a function uses (data items, strings, globals), loaded into a new section element;
 * clicking one lists its own xrefs under it. `onFunc(index)` opens a function.
 */
export function usesSection(vid, index, onFunc, after) {
  const list = el("div", { class: "list" }, el("span", { class: "faint", text: "loading…" }));
  const xbox = el("div", { class: "xbox" });
  const sect = el("div", { class: "sect", id: "fn-data" }, el("h4", { text: "Data and globals it uses" }), list, xbox);
  (async () => {
    if (after) await after;  // e.g. the function's first lines: what the reader waits for
    let res;
    try { res = await api("/api/xrefs/" + vid + "?target=" + encodeURIComponent("#" + index) + "&limit=500"); }
    catch (e) {
      fill(list, el("span", { class: "faint", text: e.status === 404 && /analyze/.test(e.message) ? "no data model yet: run `kbtool analyze " + vid + "`" : e.message }));
      return;
    }
    const seen = new Map();
    for (const u of (res.uses && res.uses.data) || []) {
      const key = u.target_kind === "global" ? "g:" + u.target : (u.label || hex(u.target));
      const prev = seen.get(key);
      if (prev) { prev.kinds.add(u.kind); continue; }
      seen.set(key, { u, kinds: new Set([u.kind]) });
    }
    if (!seen.size) { fill(list, el("span", { class: "faint", text: "none" })); return; }
    fill(list, [...seen.entries()].slice(0, 200).map(([key, { u, kinds }]) => {
      const text = u.target_kind === "global" ? "g" + u.target + (u.label ? " " + u.label : "") : (u.label || hex(u.target)) + (u.text !== null && u.text !== undefined ? " " + quoted(u.text, 40) : "");
      return el("a", { class: "tag dataref", title: [...kinds].join(", "), text,
        onclick: () => showXrefs(xbox, vid, u.target_kind === "global" ? "g:" + u.target : hex(u.target), onFunc) });
    }));
  })();
  return sect;
}

/**
 * The dashboard's Data tab. `opts.version()` gives the selected version id, `opts.openIndex(i)`
 * opens function `i` of it. Returns `{ refresh }` (call it when the version changes).
 */
export function initDataPane(opts) {
  const state = { vid: null, q: "", offset: 0, seq: 0 };
  const onFunc = (i) => opts.openIndex(i);

  async function loadStrings(append) {
    const seq = ++state.seq, vid = state.vid;
    const q = state.q ? "&q=" + encodeURIComponent(state.q) : "";
    let page;
    try { page = await api("/api/strings/" + vid + "?offset=" + state.offset + "&limit=" + PAGE + q); }
    catch (e) {
      if (seq !== state.seq) return;
      clear($("data-strings").tBodies[0]);
      setText($("data-state"), e.message);
      return;
    }
    if (seq !== state.seq) return;
    const tb = $("data-strings").tBodies[0];
    if (!append) clear(tb);
    for (const it of page.items) {
      tb.append(el("tr", { class: "ds", tabindex: 0, dataset: { address: String(it.address) },
        onclick: () => pick(hex(it.address)), onkeydown: (e) => { if (e.key === "Enter") pick(hex(it.address)); } },
        el("td", { class: "num", text: hex(it.address) }),
        el("td", { class: "mono", text: it.label }),
        el("td", { class: "num", text: fmtInt(it.refs) }),
        el("td", { class: "mono dtext", text: quoted(it.text) })));
    }
    state.offset = page.next_offset ?? state.offset;
    $("data-more").classList.toggle("hidden", page.next_offset === null);
    setText($("data-state"), fmtInt(page.total) + " string" + (page.total === 1 ? "" : "s"));
  }

  async function loadGlobals() {
    const vid = state.vid;
    const tb = clear($("data-globals").tBodies[0]);
    let rows;
    try { rows = await api("/api/globals/" + vid); } catch (_) { return; }
    if (vid !== state.vid) return;
    for (const g of rows) {
      tb.append(el("tr", { class: "dg", tabindex: 0, dataset: { index: String(g.index) },
        onclick: () => pick("g:" + g.index), onkeydown: (e) => { if (e.key === "Enter") pick("g:" + g.index); } },
        el("td", { class: "num", text: "g" + g.index }),
        el("td", { class: g.name ? "mono" : "mono faint", text: g.name || "–" }),
        el("td", { class: "mono", text: g.type + (g.mutable ? " mut" : "") }),
        el("td", { class: "dim", text: g.role || "" }),
        el("td", { class: "num", text: fmtInt(g.reads) + " / " + fmtInt(g.writes) })));
    }
  }

  function pick(target) { showXrefs($("data-xrefs"), state.vid, target, onFunc); }

  function refresh() {
    const vid = opts.version();
    if (vid === null || vid === undefined || $("pane-data").classList.contains("hidden")) return;
    if (vid === state.vid) return;
    state.vid = vid; state.offset = 0;
    clear($("data-xrefs"));
    loadStrings(false); loadGlobals();
  }

  let timer = null;
  $("data-q").addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(() => { state.q = $("data-q").value.trim(); state.offset = 0; loadStrings(false); }, 200);
  });
  $("data-more-btn").addEventListener("click", () => loadStrings(true));
  $("data-target").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && state.vid !== null && $("data-target").value.trim()) pick($("data-target").value.trim());
  });
  $("tab-data").addEventListener("click", () => setTimeout(refresh, 0));
  return { refresh };
}
