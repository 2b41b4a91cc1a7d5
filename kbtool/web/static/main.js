// The dashboard: versions, coverage, heatmap, diff, search and the function panel.
import { early } from "./early.js";  // what dashboard-early.js asked for as the page started
import { $, clear, el, fmtInt, setText, show, toolchainWord } from "./dom.js";
import { api, status } from "./api.js";
import { Heatmap } from "./heatmap.js";
import { initDiff, setDiffDefaults } from "./diff.js";
import { initSearch } from "./search.js";
import { createFnPanel } from "./fnpanel.js";
import { initDataPane } from "./data.js";
import { V, loadVocabulary } from "./provenance.js";
import { S } from "./state.js";

let HM = null, panel = null, dataPane = null;

async function loadVersions() {
  const vs = await api("/api/versions");
  S.versions = vs;
  S.byId = new Map(vs.map((v) => [v.id, v]));
  const tb = clear($("versions").tBodies[0]);
  for (const v of vs) {
    tb.append(el("tr", { tabindex: 0, dataset: { vid: String(v.id) }, title: (v.label || "") + "\ntoolchain " + toolchainWord(v.toolchain_version),
      onclick: () => selectVersion(v.id), onkeydown: (e) => versionKey(e, v.id) },
      el("td", { class: "num", text: v.id }),
      el("td", {}, el("div", { class: "vlabel", text: v.label })),
      el("td", { class: "num", text: fmtInt(v.functions) }),
      el("td", { class: "num" }, (v.coverage_pct ?? 0).toFixed(1) + "%",
        el("div", { class: "mini" }, el("i", { style: { width: Math.min(100, v.coverage_pct || 0) + "%" } })))));
  }
  setText($("vcount"), vs.length ? String(vs.length) : "");
  show($("versions-empty"), vs.length === 0);
  setText($("kbinfo"), vs.length ? (vs.length + " version" + (vs.length > 1 ? "s" : "") + " · latest " + vs[vs.length - 1].label) : "empty KB");
  for (const id of ["diff-from", "diff-to"]) {
    const sel = clear($(id));
    for (const v of vs) sel.append(el("option", { value: String(v.id), text: v.id + " · " + v.label + " · " + (v.program || "") }));
  }
  // the latest version and its parent until a version is selected (never two programs)
  setDiffDefaults(vs, null);
  $("diff-run").disabled = vs.length < 1;
}

function versionKey(e, id) {
  const i = S.versions.findIndex((v) => v.id === id);
  if (e.key === "Enter" || e.key === " ") { e.preventDefault(); selectVersion(id); }
  else if (e.key === "ArrowDown" && i + 1 < S.versions.length) { e.preventDefault(); focusVersion(S.versions[i + 1].id, true); }
  else if (e.key === "ArrowUp" && i > 0) { e.preventDefault(); focusVersion(S.versions[i - 1].id, true); }
}

function focusVersion(id, select) {
  const tr = $("versions").querySelector('tr[data-vid="' + Number(id) + '"]');
  if (tr) tr.focus();
  if (select) selectVersion(id);
}

async function selectVersion(id) {
  const t0 = performance.now();
  const seq = ++S.loadSeq;
  S.vid = id;
  setDiffDefaults(S.versions, id);  // the diff tab follows: this version and its parent
  if (dataPane) dataPane.refresh();  // the Data tab follows too
  for (const tr of $("versions").tBodies[0].rows) tr.classList.toggle("sel", Number(tr.dataset.vid) === id);
  setHash();
  setText($("hm-info"), "loading…");
  try {
    // the heatmap's cells first (indices, provenances, confidences), then the whole list
    // (names, stable ids): the map is on screen before the 3 MB list has come and been read
    const base = "/api/versions/" + id;
    const cells = await api(base + "/functions?form=cells");  // with the coverage
    const cov = cells.coverage || await api(base + "/coverage");
    if (seq !== S.loadSeq) return;
    S.cov = cov; S.fns = null;
    renderCoverage();
    HM.setCells(cells);
    keepOutlined(id);
    document.body.dataset.painted = String(id);
    const fns = await api(base + "/functions");
    if (seq !== S.loadSeq) return;
    S.fns = fns;
    HM.setList(fns);
    keepOutlined(id);
    panel.namesArrived();
    const drawn = performance.now();
    window.kbMetrics = { version: id, cells: fns.length, selectToDrawMs: drawn - t0, drawMs: HM.lastDrawMs };
    setText($("perf"), fmtInt(fns.length) + " cells · draw " + HM.lastDrawMs.toFixed(1) + " ms · select→drawn " + Math.round(drawn - t0) + " ms");
    document.body.dataset.version = String(id);
  } catch (e) {
    if (seq !== S.loadSeq) return;
    setText($("hm-info"), "");
    status(e.message, true);
  }
}

/** Keep the open function outlined on the heatmap of version `id` (when it is there). */
function keepOutlined(id) {
  const here = S.hist && (S.hist.versions || []).find((v) => v.version_id === id);
  if (here) HM.select(here.index);
}

/** Named count of provenance `p` in a Coverage answer (unnamed: defined - named). */
function countOf(c, p) {
  if (p === "unnamed") return Math.max(0, (c.defined || 0) - (c.named || 0));
  return c[p.replace(/-/g, "_") + "_named"] || 0;
}

function renderCoverage() {
  const c = S.cov, v = S.byId.get(S.vid) || {};
  $("cov-pct").replaceChildren(c.coverage_pct.toFixed(1), el("small", { text: " % named" }));
  setText($("cov-counts"), fmtInt(c.named) + " / " + fmtInt(c.defined) + " defined functions");
  $("cov-meta").replaceChildren(
    "version ", el("b", { text: String(v.id) }), " ", el("b", { text: v.label || "" }),
    " · toolchain ", el("b", { text: toolchainWord(v.toolchain_version) }),
    " · ", el("b", { text: fmtInt(v.functions) }), " functions incl. imports",
    " · shared memory ", el("b", { text: v.shared_memory ? "yes" : "no" }));
  const stack = clear($("cov-stack")), legend = clear($("legend"));
  for (const p of V.order) {
    const n = countOf(c, p), name = V.labels[p] ?? p;
    if (c.defined) stack.append(el("i", { title: name + ": " + n, style: { width: (n / c.defined * 100) + "%", background: V.colours[p] } }));
    legend.append(el("button", { class: "lg" + (S.hidden.has(p) ? " off" : ""), dataset: { prov: p }, title: "show/hide " + name + " cells",
      onclick: () => { if (S.hidden.has(p)) S.hidden.delete(p); else S.hidden.add(p); renderCoverage(); HM.draw(); } },
      el("span", { class: "sw", style: { background: V.colours[p] } }), name, el("span", { class: "num", text: fmtInt(n) })));
  }
}

function tabs(ids) {
  for (const id of ids) {
    $(id).addEventListener("click", () => {
      for (const other of ids) {
        $(other).classList.toggle("on", other === id);
        show($($(other).dataset.pane), other === id);
      }
      if (id === "tab-heatmap" && HM.n) HM.layout();
    });
  }
}

function setHash() {
  const p = new URLSearchParams();
  if (S.vid !== null) p.set("v", String(S.vid));
  if (document.body.dataset.fn) p.set("fn", document.body.dataset.fn);
  const h = "#" + p.toString();
  if (location.hash !== h) history.replaceState(null, "", h === "#" ? location.pathname : h);
}

async function boot() {
  try { await loadVocabulary(); } catch (e) { status("cannot load the provenance vocabulary: " + e.message, true); return; }
  HM = new Heatmap(
    { canvas: "heatmap", overlay: "hm-over", wrap: "hm-wrap", stage: "hm-stage", empty: "hm-empty",
      info: "hm-info", order: "hm-order", tooltip: "tooltip" },
    { hidden: S.hidden, onPick: (f) => panel.open(f.stable_id, S.vid),
      emptyText: () => (S.vid === null ? "Pick a version." : "This version has no defined functions.") });
  panel = createFnPanel({ heatmap: HM, onChange: setHash });
  initDiff({ openFunction: panel.open });
  initSearch({ openFunction: panel.open, closeFunction: panel.close });
  tabs(["tab-heatmap", "tab-diff", "tab-data"]);
  dataPane = initDataPane({ version: () => S.vid,
    openIndex: (i) => { const f = (S.fns || []).find((x) => x.index === i); if (f) panel.open(f.stable_id, S.vid); } });
  tabs(["tab-detail", "tab-history"]);

  try { await loadVersions(); } catch (e) { status("cannot load versions: " + e.message, true); return; }
  const p = new URLSearchParams(location.hash.slice(1));
  const want = Number(p.get("v"));
  const vid = S.byId.has(want) ? want : (S.versions.length ? S.versions[S.versions.length - 1].id : null);
  const loaded = vid !== null ? selectVersion(vid) : (HM.layout(), null);
  const fn = p.get("fn");
  if (fn) panel.open(fn, vid);  // beside the heatmap: its lines need not wait for the list
  await loaded;
  document.body.dataset.ready = "1";
  setTimeout(() => { if (early()) window.__dashEarly = null; }, 10000);  // asked early, never used
}

boot();
