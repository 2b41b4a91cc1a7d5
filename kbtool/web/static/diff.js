// The diff tab: run /api/diff for two versions, summary cards, the changelog panel
// (/api/changelog, changelog.js) and a filterable, sortable table, both in the order picked
// (triage by default: modified functions patch-like first, as `kbtool ui diff`; or index).
import { $, clear, el, fmtConf, fmtInt, setText, show } from "./dom.js";
import { api } from "./api.js";
import { chip } from "./provenance.js";
import { S } from "./state.js";
import { showFunctionDiff } from "./fndiff.js";
import { renderChangelog } from "./changelog.js";

const DIFF_PAGE = 400;
const CHANGED = new Set(["modified", "new", "deleted"]);

// The filter words of docs/diff.md, one meaning on every surface (CLI --only, TUI tabs, MCP):
// "changed" = modified + new + deleted (the default: a moved function kept its code),
// "review" = flagged for review, "runtime" = marked runtime, "all" = everything.
export const FILTERS = {
  changed: (c) => CHANGED.has(c.classification),
  modified: (c) => c.classification === "modified",
  new: (c) => c.classification === "new",
  deleted: (c) => c.classification === "deleted",
  runtime: (c) => !!c.runtime,
  review: (c) => !!c.review,
  all: () => true,
  moved: (c) => c.classification === "moved",
  unchanged: (c) => c.classification === "unchanged",
};

/**
 * The pair the diff tab opens for version `selected` (else the latest), as [from, to] ids, or
 * null: the version and its parent; else the previous version of its program; for the first
 * of its program, it and the next one. Never two programs (kbtool.services.diff.programs).
 */
export function defaultPair(versions, selected) {
  const rows = versions.slice().sort((a, b) => a.id - b.id);
  if (!rows.length) return null;
  const byId = new Map(rows.map((v) => [v.id, v]));
  const cur = byId.get(selected) || rows[rows.length - 1];
  const parent = byId.get(cur.parent_version_id);
  if (parent && parent.program === cur.program && parent.id !== cur.id) return [parent.id, cur.id];
  const same = rows.filter((v) => v.program === cur.program).map((v) => v.id);
  const pos = same.indexOf(cur.id);
  if (pos > 0) return [same[pos - 1], cur.id];
  if (same.length > 1) return [cur.id, same[1]];
  return null;
}

/** Put the default pair of version `selected` in the pickers (see defaultPair). */
export function setDiffDefaults(versions, selected) {
  const pair = defaultPair(versions, selected);
  if (pair) {
    $("diff-from").value = String(pair[0]);
    $("diff-to").value = String(pair[1]);
  }
  pickHint(versions);
}

/** Under the pickers: a cross-program pair picked by hand is said before it is run. */
function pickHint(versions) {
  const byId = new Map(versions.map((v) => [String(v.id), v]));
  const a = byId.get($("diff-from").value), b = byId.get($("diff-to").value);
  const cross = !!(a && b && a.program !== b.program);
  setText($("diff-pick-warning"), cross ? "versions " + a.id + " (" + a.program + ") and " + b.id + " (" +
    b.program + ") belong to different programs: names are not carried between programs; this diff compares unrelated code" : "");
  show($("diff-pick-warning"), cross);
}

/** Wire the diff tab; `opts.openFunction(stableId, versionId)` opens a row. */
export function initDiff(opts) {
  let shown = DIFF_PAGE, sort = null, abort = null;

  async function run() {
    const a = $("diff-from").value, b = $("diff-to").value;
    if (abort) abort.abort();
    abort = new AbortController();
    show($("diff-error"), false);
    setText($("diff-state"), "computing…");
    $("diff-run").disabled = true;
    const t0 = performance.now();
    try {
      const pair = "?from=" + encodeURIComponent(a) + "&to=" + encodeURIComponent(b) +
        "&order=" + encodeURIComponent($("diff-order").value || "triage");
      const rep = await api("/api/diff" + pair, abort.signal);
      S.diff = rep;
      S.changelog = null;
      shown = DIFF_PAGE;
      setText($("diff-state"), (rep.stored ? "stored report" : "computed on the fly (not stored, no carry-over)") + " · " + Math.round(performance.now() - t0) + " ms");
      render();
      loadChangelog(pair, abort.signal);
    } catch (e) {
      if (e.name === "AbortError") return;
      setText($("diff-state"), "");
      setText($("diff-error"), "diff failed: " + e.message);
      show($("diff-error"), true);
      show($("diff-out"), false);
    } finally {
      $("diff-run").disabled = false;
    }
  }

  async function loadChangelog(pair, signal) {
    const box = $("cl-box");
    setText($("cl-state"), "loading…");
    clear(box);
    try {
      S.changelog = await api("/api/changelog" + pair, signal);
      setText($("cl-state"), "");
      renderPanel();
    } catch (e) {
      if (e.name === "AbortError") return;
      setText($("cl-state"), "changelog unavailable: " + e.message);
    }
  }

  /** The filter of the table as a predicate over a change (or a changelog entry). */
  function keeper() {
    const q = $("diff-filter").value.trim().toLowerCase();
    const pred = FILTERS[$("diff-class").value] || FILTERS.changed;
    const noRt = $("diff-noruntime").checked;
    return (c) => {
      if (!pred(c)) return false;
      if (noRt && c.runtime) return false;
      if (q) {
        const hay = [c.name, c.from_stable_id, c.to_stable_id, c.stable_id, c.from_index, c.to_index].map((x) => x === null || x === undefined ? "" : String(x).toLowerCase());
        if (!hay.some((h) => h.includes(q))) return false;
      }
      return true;
    };
  }

  function renderPanel() {
    if (!S.changelog || !S.diff) return;
    const keep = keeper();
    const n = renderChangelog($("cl-box"), S.changelog, (e, kind) => keep({ ...e, classification: kind }), openEntry);
    setText($("cl-count"), "· " + fmtInt(n) + " function" + (n === 1 ? "" : "s"));
  }

  function openEntry(e, kind) {
    const c = (S.diff.changes || []).find((x) => x.classification === kind &&
      (kind === "deleted" ? x.from_index === e.from_index : x.to_index === e.to_index));
    if (c) openChange(c);
  }

  function openChange(c) {
    const sid = c.to_stable_id || c.from_stable_id;
    const vid = c.to_stable_id ? S.diff.to_version_id : S.diff.from_version_id;
    opts.openFunction(sid, vid);
    if (c.classification === "modified" && c.from_index !== null && c.from_index !== undefined && c.to_index !== null && c.to_index !== undefined) {
      show($("diff-fn"), true);
      showFunctionDiff($("diff-fn"), c, S.diff.from_version_id, S.diff.to_version_id, () => show($("diff-fn"), false));
    }
  }

  function rows() {
    let out = (S.diff.changes || []).filter(keeper());
    if (sort) {
      const k = sort;
      out = out.slice().sort((x, y) => {
        const a = x[k], b = y[k];
        if (a === b) return 0;
        if (a === null || a === undefined) return 1;
        if (b === null || b === undefined) return -1;
        return typeof a === "number" ? (k === "confidence" || k === "score" || k === "triage" ? b - a : a - b) : String(a).localeCompare(String(b));
      });
    }
    return out;
  }

  function render() {
    const rep = S.diff;
    show($("diff-out"), true);
    // across programs: the report's own warning, above everything else
    setText($("diff-warning"), rep.warning || "");
    show($("diff-warning"), !!rep.warning);
    $("diff-head").replaceChildren("from ", el("b", { text: rep.from }), " (", String(rep.from_version_id ?? ""), ") → to ",
      el("b", { text: rep.to }), " (", String(rep.to_version_id ?? ""), ")");
    const sg = clear($("diff-summary"));
    for (const [k, v] of Object.entries(rep.summary || {})) {
      sg.append(el("div", { class: "sum", dataset: { k } }, el("div", { class: "k", text: k.replace(/_/g, " ") }), el("div", { class: "v", text: fmtInt(v) })));
    }
    // each filter word with its count, as the TUI's tabs
    for (const o of $("diff-class").options) {
      const pred = FILTERS[o.value];
      if (pred) setText(o, o.dataset.label + " · " + fmtInt((rep.changes || []).filter(pred).length));
    }
    renderTable();
  }

  function renderTable() {
    const list = rows();
    const tb = clear($("diff-table").tBodies[0]);
    const frag = document.createDocumentFragment();
    for (const c of list.slice(0, shown)) {
      const open = () => openChange(c);
      frag.append(el("tr", { onclick: open, class: c.classification === "modified" ? "mod" : null, title: (c.from_stable_id || "–") + " → " + (c.to_stable_id || "–") },
        el("td", {}, el("span", { class: "chip c-" + c.classification, text: c.classification })),
        el("td", { class: "num", text: c.from_index ?? "–" }),
        el("td", { class: "num", text: c.to_index ?? "–" }),
        el("td", { class: c.name ? "nm" : "nm faint", text: c.name ?? "unnamed" }),
        el("td", {}, c.name ? chip(c.provenance) : null),
        el("td", { class: "num", text: c.name ? fmtConf(c.confidence) : "" }),
        el("td", { class: "num", text: c.score === null || c.score === undefined ? "" : Number(c.score).toFixed(2) }),
        el("td", { class: "num", title: (c.reasons || []).join("\n"), text: c.triage === null || c.triage === undefined ? "" : Number(c.triage).toFixed(1) }),
        el("td", {}, c.review ? el("span", { class: "flag review", text: "REVIEW" }) : null, c.runtime ? el("span", { class: "flag runtime", text: "RUNTIME" }) : null)));
    }
    tb.append(frag);
    setText($("diff-count"), fmtInt(list.length) + " of " + fmtInt((S.diff.changes || []).length) + " changes");
    show($("diff-more"), list.length > shown);
    setText($("diff-more").lastElementChild, "showing " + fmtInt(Math.min(list.length, shown)) + " of " + fmtInt(list.length));
  }

  /** The table and the changelog panel after a filter change. */
  function refilter() {
    shown = DIFF_PAGE;
    renderTable();
    renderPanel();
  }

  $("diff-run").addEventListener("click", run);
  // the order of the table and the changelog (the report is cached server-side: a re-run is cheap)
  $("diff-order").addEventListener("change", () => { if (S.diff) run(); });
  for (const id of ["diff-from", "diff-to"]) {
    $(id).addEventListener("change", () => pickHint(S.versions || []));
  }
  $("diff-more-btn").addEventListener("click", () => { shown += DIFF_PAGE; renderTable(); });
  let filterTimer = 0;
  $("diff-filter").addEventListener("input", () => {
    clearTimeout(filterTimer);
    filterTimer = setTimeout(refilter, 80);
  });
  for (const id of ["diff-class", "diff-noruntime"]) {
    $(id).addEventListener("change", refilter);
  }
  for (const th of $("diff-table").tHead.rows[0].cells) {
    if (!th.dataset.k) continue;
    th.addEventListener("click", () => {
      sort = sort === th.dataset.k ? null : th.dataset.k;
      for (const o of $("diff-table").tHead.rows[0].cells) o.classList.toggle("sorted", o.dataset.k === sort);
      if (S.diff) renderTable();
    });
  }
}
