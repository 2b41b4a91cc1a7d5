// The studio: read what per-function analysis recovered. Raw WASM / Inferred C (lifter) /
// Cleaned C (`kbtool deep`), the understanding, callers and callees as links, the rename
// trail, and an Agents panel that polls the event feed. Everything from the KB is text.
import { $, el, fill, setText } from "./dom.js";
import { FETCH_OPTIONS, api, status } from "./api.js";
import { WINDOW, codeOptions, disasmWindows, nameIndex, pageCode, showHint, textWindows } from "./code.js";
import { drawNeighbourhood } from "./graph.js";
import { usesSection } from "./data.js";
import { typesPanel } from "./types.js";

const POLL_MS = 1000;
const MAX_LIST = 600;
/** The longest the side panels' own requests wait for the first code on screen (ms). */
const SIDE_WAIT_MS = 1500;
const state = { version: null, functions: [], current: null, view: "wasm", graph: null,
                lastEvent: null, disasm: null, analysis: undefined, byIndex: new Map(),
                read: new Set(),  // versions this page has been sent code of (the server prepared them)
                early: null,  // the first window of the function in the address, asked for at load
                paged: null };  // {vid, index, view, pager} of the pager on #code (renderCode)

function byName() {
  return nameIndex(state.functions);
}

function renderList() {
  const q = $("filter").value.trim().toLowerCase();
  let rows = state.functions;
  const idx = q.replace(/^#/, "");
  if (/^\d+$/.test(idx)) rows = rows.filter((f) => String(f.index).startsWith(idx));
  else if (q) rows = rows.filter((f) => (f.name || "").toLowerCase().includes(q));
  setText($("fcount"), rows.length + " of " + state.functions.length);
  fill($("flist"), rows.slice(0, MAX_LIST).map((f) => el("div", {
    class: "fn" + (state.current && state.current.index === f.index ? " sel" : ""),
    onclick: () => openFunction(f.index), dataset: { index: String(f.index) },
  }, el("span", { class: "idx", text: "#" + f.index }),
     el("span", { class: "nm p-" + (f.provenance || "unnamed"), text: f.name || "unnamed" }))));
}

// The code view loads by windows of lines (pager.js): the first screen of a huge function at
// once, the rest as the reader scrolls; the first wasm/C window also brings the knowledge.
function renderCode() {
  for (const b of document.querySelectorAll(".views button")) b.classList.toggle("on", b.dataset.view === state.view);
  const f = state.current, a = state.analysis;
  if (!f) return;
  if (state.view === "clean") {
    if (a && a.clean_c) pageCode($("code"), $("code-lines"), textWindows(a.clean_c), byName(), openFunction);
    else showHint($("code"), $("code-lines"), el("span", { class: "hint",
      text: a === undefined ? "loading…" : "No cleaned C yet: run `kbtool deep " + state.version + " --function " + f.index + "`" }));
    return;
  }
  const vid = state.version, index = f.index;
  const w = codeWindows(vid, index, state.view, (first) => {
    // the same function still (the one opened before the list came is another object)
    if (!state.current || state.current.index !== index || state.version !== vid) return;
    state.disasm = first; renderKnowledge();
  });
  const pager = pageCode($("code"), $("code-lines"), w.fetchWindow, byName(), openFunction, w.opts);
  state.paged = { vid: state.version, index: f.index, view: state.view, pager };
}

/** The pager on #code still shows `index` of `vid` in the current view (opened before the
 *  version's function list came: see `openEarly`). */
function stillPaged(vid, index) {
  const p = state.paged;
  return Boolean(p) && p.vid === vid && p.index === index && p.view === state.view &&
    state.view !== "clean" && $("code")._pager === p.pager;
}

// A version's first code request waits on the server for the version's preparation (names,
// data labels, parse: ~200 ms on the largest modules) and so does every code request made
// meanwhile; then a huge function's C lift and the call graph's load hold the server for
// ~150 ms, and a window asked for then waits behind them. So on a version this page has not
// been sent code of yet, the C view asks for the disassembly's first window (what it shows
// meanwhile, as before: only once the C has taken longer than MEANWHILE_MS) first and for
// the C once that window is here (or failed); the call graph and the data uses wait for the
// code asked for on screen (openFunction). Same lines, same final page; the first screen sooner.
function codeWindows(vid, index, view, onFirst) {
  const seen = (p) => p.then((body) => { state.read.add(vid); return body; });
  const asked = disasmWindows(vid, index, view, onFirst);
  const main = (o, l) => {
    const e = state.early;  // asked for at load (main), before the version's function list
    if (o !== 0 || !e || e.vid !== vid || e.index !== index || e.view !== view || e.limit !== l) return asked(o, l);
    state.early = null;
    return e.got.then((body) => { if (onFirst) onFirst(body); return body; });
  };
  const opts = codeOptions(vid, index, view);
  if (!opts.meanwhile || state.read.has(vid)) return { fetchWindow: (o, l) => seen(main(o, l)), opts };
  const wasm = opts.meanwhile;
  let early = null;  // the disassembly's first window, asked for before the C
  const meanwhile = (o, l) => (o === 0 && early && early.limit === l ? early.got : wasm(o, l));
  const fetchWindow = async (o, l) => {
    if (o === 0 && !early) {
      early = { limit: l, got: seen(wasm(0, l)) };
      try { await early.got; } catch (_) { /* the C is asked for all the same */ }
      if (state.version !== vid || !state.current || state.current.index !== index || state.view !== view) {
        throw new Error("another function or view is open");  // the pager drops it (stopped)
      }
    }
    return seen(main(o, l));
  };
  return { fetchWindow, opts: { ...opts, meanwhile } };
}

/** Resolves once `pre` shows the code asked for (its first window: not the disassembly shown
 *  while the C is lifted, which would have the side panels' loads slow the lift), a hint or an
 *  error, or after SIDE_WAIT_MS: the side panels' requests wait for it (codeWindows). */
function codeOnScreen(pre) {
  const shown = () => pre.dataset.shown !== undefined || pre.querySelector(".win:not(.meanwhile), .faint, .hint");
  return new Promise((resolve) => {
    if (shown()) { resolve(); return; }
    const done = () => { obs.disconnect(); clearTimeout(timer); resolve(); };
    const obs = new MutationObserver(() => { if (shown()) done(); });
    const timer = setTimeout(done, SIDE_WAIT_MS);
    obs.observe(pre, { childList: true, subtree: true, attributes: true, attributeFilter: ["data-shown"] });
  });
}

function renderSide() {
  const a = state.analysis;
  if (a) {
    // written by a provider model (`kbtool deep --backend provider_a|provider_b`): provenance
    // agent; otherwise the offline reading of the facts
    const byAgent = Boolean(a.backend) && a.backend !== "offline";
    fill($("understanding"),
      el("div", { id: "understanding-text", text: a.understanding || "" }),
      el("div", { class: "faint" },
        el("span", { id: "understanding-by", class: byAgent ? "p-agent" : "", text: byAgent ? "agent" : "offline" }),
        (byAgent ? " · " + a.backend + (a.model ? " / " + a.model : "") : "") + " · status " + a.status +
        " · confidence " + a.confidence),
      Object.keys(a.rename_map || {}).length
        ? el("div", { class: "faint", text: "renamed: " + Object.entries(a.rename_map).map(([o, n]) => o + "→" + n).join(", ") })
        : null);
  } else fill($("understanding"), el("span", { class: "hint", text: "No understanding yet (kbtool deep)." }));
}

// What people and agents wrote beyond the name (kbtool comment / set-type / rename-local,
// the MCP knowledge tools, kbtool deep), each tinted by its provenance; text only.
function renderKnowledge() {
  const k = state.disasm && state.disasm.knowledge;
  const tint = (r) => el("span", { class: "p-" + r.provenance, text: " " + r.provenance +
    (r.carried ? " from v" + r.carried.from_version_id + " (" + r.carried.how + ")" : "") + (r.locked ? " · locked" : "") });
  const rows = [];
  if (k && k.comment) rows.push(el("div", { id: "kn-comment" }, el("div", { class: "kn-text", text: k.comment.text }), tint(k.comment)));
  if (k && k.prototype) rows.push(el("div", { id: "kn-prototype" }, el("code", { text: k.prototype.text }), tint(k.prototype)));
  for (const l of (k && k.locals) || []) rows.push(el("div", { class: "kn-local" }, "local " + l.index + " → ", el("code", { text: l.name }), tint(l)));
  for (const c of (k && k.line_comments) || []) {
    const at = c.address === null || c.address === undefined ? "+" + c.offset : c.address.toString(16).padStart(6, "0");
    rows.push(el("div", { class: "kn-line" }, el("code", { text: at }), " ", el("span", { text: c.text }), tint(c)));
  }
  fill($("knowledge"), rows.length ? rows : el("span", { class: "hint", text: "No comments, prototype or local names yet." }));
}

/** The version's call graph: one request however many functions are opened while it comes. */
function callGraph() {
  const vid = state.version;
  if (!state.graphAsked || state.graphAsked.vid !== vid) {
    state.graphAsked = { vid, graph: api("/api/callgraph/" + vid).catch(() => ({ nodes: [], edges: [] })) };
  }
  return state.graphAsked.graph;
}

async function renderXrefs(f) {
  if (!state.graph) {
    const asked = state.version, graph = await callGraph();
    if (state.version !== asked) return;  // another version picked meanwhile
    state.graph = graph;
  }
  if (state.current !== f) return;  // another function opened meanwhile: its panel, not this one's
  const nodes = new Map((state.graph.nodes || []).map((x) => [x.index, x]));
  const names = new Map((state.graph.nodes || []).map((x) => [x.index, x.name]));
  for (const x of state.functions) if (x.name) names.set(x.index, x.name);
  const callers = [], callees = [];
  for (const e of state.graph.edges || []) {
    if (e.callee === f.index) callers.push(e);
    if (e.caller === f.index) callees.push(e);
  }
  const link = (i, kind) => el("span", { class: "xref", text: (names.get(i) || "#" + i) + (kind === "indirect" ? " (indirect)" : ""),
    onclick: () => openFunction(i) });
  const info = (i) => {
    const f = state.byIndex.get(i);
    if (f) return f;
    const n = nodes.get(i);
    return n ? { name: n.name, provenance: n.provenance } : null;
  };
  drawNeighbourhood($("nbgraph"), state.graph, f.index, info, openFunction);
  fill($("xrefs"),
    el("div", { class: "faint", text: callers.length + " callers" }), callers.slice(0, 200).map((e) => link(e.caller, e.kind)),
    el("div", { class: "faint", text: callees.length + " callees" }), callees.slice(0, 200).map((e) => link(e.callee, e.kind)));
}

async function renderTrail(f) {
  let trail = [];
  try { trail = await api("/api/renames/" + encodeURIComponent(f.stable_id)); } catch (_) { trail = []; }
  if (state.current !== f) return;
  fill($("trail"), trail.length ? trail.map((t) => el("div", {
    text: (t.at || "").slice(0, 16).replace("T", " ") + "  " + (t.from || "∅") + " → " + (t.to || "∅") +
      "  (" + t.provenance + ", " + t.actor + ")" })) : el("span", { class: "hint", text: "never renamed" }));
}

async function openFunction(index) {
  const f = state.functions.find((x) => x.index === index);
  if (!f) return;
  // the function in the address, shown before the list came (openEarly): its lines stay
  const kept = Boolean(state.current && state.current.early) && stillPaged(state.version, index);
  state.current = f;
  history.replaceState(null, "", "#v=" + state.version + "&f=" + index);
  setText($("fname"), (f.name || "unnamed") + "  #" + index);
  fill($("fmeta"), el("span", { class: "p-" + (f.provenance || "unnamed"), text: f.provenance || "unnamed" }),
    " · confidence " + (f.confidence === null ? "—" : f.confidence) + " · " + (f.type || "") + " · " + f.stable_id + " · ",
    el("a", { id: "open-in-dashboard", href: "/#v=" + state.version + "&fn=" + encodeURIComponent(f.stable_id), text: "open in the dashboard" }));
  renderList();
  const row = document.querySelector(".fn.sel");
  if (row) row.scrollIntoView({ block: "nearest" });
  state.analysis = undefined;
  if (kept) state.paged.pager.relink(byName());  // the same lines, now with the names' links
  else { state.disasm = null; renderCode(); }  // the first window of lines at once (wasm or C)
  const onScreen = codeOnScreen($("code"));
  if (state.view === "clean") {  // no code window asked for: the knowledge from a one-line one
    api("/api/disasm/" + state.version + "/" + index + "?kind=wasm&offset=0&limit=1")
      .then((first) => { if (state.current === f) { state.disasm = first; renderKnowledge(); } }, () => {});
  }
  try { state.analysis = await api("/api/analysis/" + encodeURIComponent(f.stable_id)); } catch (_) { state.analysis = null; }
  if (state.current !== f) return;
  if (state.view === "clean") renderCode();
  renderSide(); renderKnowledge();
  const trail = renderTrail(f);
  const graphHere = Boolean(state.graph);
  let xrefs = graphHere ? renderXrefs(f) : null;
  if (!graphHere) fill($("xrefs"), el("span", { class: "hint", text: "loading…" }));
  fill($("dataxrefs"), el("span", { class: "faint", text: "loading…" }));
  await onScreen;  // the call graph's and the data uses' requests after the first code (codeWindows)
  if (state.current !== f) return;
  if (!graphHere) xrefs = renderXrefs(f);
  fill($("dataxrefs"), usesSection(state.version, index, openFunction));  // data and globals it uses
  // its panes are this function's now (tests wait for it; the previous one's meet their waits)
  Promise.all([trail, xrefs]).then(() => { if (state.current === f) document.body.dataset.opened = String(index); });
}

/** Show version `vid`'s function list; false when another version was picked meanwhile
 *  (its answer is dropped: the list and the code stay the latest pick's). */
async function loadVersion(vid) {
  state.version = vid; state.graph = null; state.graphAsked = null;
  const functions = await api("/api/versions/" + vid + "/functions");
  if (state.version !== vid) return false;
  state.functions = functions;
  state.byIndex = new Map(functions.map((f) => [f.index, f]));
  renderList();
  return true;
}

async function poll() {
  try {
    // the first answer is the feed's history (what the page already shows): only news re-opens
    const news = state.lastEvent !== null;
    const q = news ? "?since=" + state.lastEvent : "";
    const feed = await api("/api/events" + q);
    state.lastEvent = feed.last_id;
    const box = $("feed");
    for (const e of feed.events) {
      const p = e.payload || {};
      box.prepend(el("div", { class: "ev", dataset: { kind: e.kind },
        text: "#" + e.id + " " + e.kind + (p.func_index !== undefined ? " f" + p.func_index : "") +
          (p.status ? " " + p.status : "") + (p.name ? " " + p.name : "") }));
      const cur = state.current;
      if (news && cur && e.stable_id === cur.stable_id && (e.kind === "deep-done" || e.kind === "named")) openFunction(cur.index);
    }
    while (box.childNodes.length > 200) box.lastChild.remove();
    setText($("feed-state"), "live");
  } catch (_) { setText($("feed-state"), "offline"); }
  setTimeout(poll, POLL_MS);
}

/** The first window of the function in the address (the disassembly view): the request
 *  studio-early.js made as the page started (before these modules loaded), or a new one. */
function earlyWindow(at) {
  const path = "/api/disasm/" + encodeURIComponent(at.vid) + "/" + encodeURIComponent(at.index) +
    "?kind=wasm&offset=0&limit=" + WINDOW;
  const pre = window.__studioEarly;
  window.__studioEarly = null;  // taken (studio-early.js, if it runs later, asks nothing)
  const got = pre && pre.path === path ? api(path, undefined, pre.got) : api(path);
  got.catch(() => {});  // its error is shown by the pager that takes it
  return got;
}

// The studio opened on a function (`#v=V&f=N`, what a link or a reload gives) shows its first
// lines before anything else: the version's function list (2.9 MB on ffmpeg, ~100 ms for the
// server to answer and the page to read, all the while beside the version's preparation) and
// the versions are asked for once those lines are on screen (or after SIDE_WAIT_MS), then the
// function is opened as usual and the lines on screen are kept (drawn again with the names'
// links): the page ends as before.
function openEarly(at) {
  state.version = at.vid;
  state.current = { index: at.index, name: null, early: true };
  setText($("fname"), "#" + at.index);
  setText($("fcount"), "loading…");
  renderCode();
  return codeOnScreen($("code"));
}

async function main() {
  const hash = new URLSearchParams(location.hash.slice(1));
  const at = { vid: Number(hash.get("v")), index: Number(hash.get("f")) };
  const early = hash.has("v") && hash.has("f") && Number.isInteger(at.vid) && Number.isInteger(at.index) &&
    at.vid > 0 && at.index >= 0;
  const sel = $("version");
  sel.addEventListener("change", async () => { await loadVersion(Number(sel.value)); });
  $("filter").addEventListener("input", renderList);
  for (const b of document.querySelectorAll(".views button")) {
    b.addEventListener("click", () => { state.view = b.dataset.view; renderCode(); });
  }
  if (early) {
    state.early = { ...at, view: "wasm", limit: WINDOW, got: earlyWindow(at) };
    await openEarly(at);
  }
  const versions = await api("/api/versions");
  fill(sel, versions.map((v) => el("option", { value: String(v.id), text: "#" + v.id + " " + v.label })));
  const vid = Number(hash.get("v")) || (versions.length ? versions[versions.length - 1].id : null);
  if (vid === null) { status("empty KB: ingest a module first"); return; }
  sel.value = String(vid);
  // another version picked while this one's list came: that pick is the reader's, so the
  // function in the address is not opened (in the version the reader left)
  const here = await loadVersion(vid);
  typesPanel($("types"), (index) => openFunction(index));  // the KB's types (issue 27)
  const f = Number(hash.get("f"));
  const opened = !here ? null : hash.has("f") && Number.isInteger(f) ? openFunction(f)
    : state.functions.length ? openFunction(state.functions[0].index) : null;
  state.early = null;  // taken by that function's pager, or never (no such function)
  await opened;
  document.body.dataset.started = "1";  // the start's own requests are made (tests wait for it)
  poll();
}

main();
