// The diff tab: run /api/diff for two versions, summary cards, a filterable, sortable table.
import { $, clear, el, fmtConf, fmtInt, setText, show } from "./dom.js";
import { api } from "./api.js";
import { chip } from "./provenance.js";
import { S } from "./state.js";
import { showFunctionDiff } from "./fndiff.js";

const DIFF_PAGE = 400;

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
      const rep = await api("/api/diff?from=" + encodeURIComponent(a) + "&to=" + encodeURIComponent(b), abort.signal);
      S.diff = rep;
      shown = DIFF_PAGE;
      setText($("diff-state"), (rep.stored ? "stored report" : "computed on the fly (not stored, no carry-over)") + " · " + Math.round(performance.now() - t0) + " ms");
      render();
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

  function rows() {
    const rep = S.diff;
    const q = $("diff-filter").value.trim().toLowerCase();
    const cls = $("diff-class").value, review = $("diff-review").checked, noRt = $("diff-noruntime").checked;
    let out = (rep.changes || []).filter((c) => {
      if (cls === "changed" ? c.classification === "unchanged" : (cls && c.classification !== cls)) return false;
      if (review && !c.review) return false;
      if (noRt && c.runtime) return false;
      if (q) {
        const hay = [c.name, c.from_stable_id, c.to_stable_id, c.from_index, c.to_index].map((x) => x === null || x === undefined ? "" : String(x).toLowerCase());
        if (!hay.some((h) => h.includes(q))) return false;
      }
      return true;
    });
    if (sort) {
      const k = sort;
      out = out.slice().sort((x, y) => {
        const a = x[k], b = y[k];
        if (a === b) return 0;
        if (a === null || a === undefined) return 1;
        if (b === null || b === undefined) return -1;
        return typeof a === "number" ? (k === "confidence" || k === "score" ? b - a : a - b) : String(a).localeCompare(String(b));
      });
    }
    return out;
  }

  function render() {
    const rep = S.diff;
    show($("diff-out"), true);
    $("diff-head").replaceChildren("from ", el("b", { text: rep.from }), " (", String(rep.from_version_id ?? ""), ") → to ",
      el("b", { text: rep.to }), " (", String(rep.to_version_id ?? ""), ")");
    const sg = clear($("diff-summary"));
    for (const [k, v] of Object.entries(rep.summary || {})) {
      sg.append(el("div", { class: "sum", dataset: { k } }, el("div", { class: "k", text: k.replace(/_/g, " ") }), el("div", { class: "v", text: fmtInt(v) })));
    }
    renderTable();
  }

  function renderTable() {
    const list = rows();
    const tb = clear($("diff-table").tBodies[0]);
    const frag = document.createDocumentFragment();
    for (const c of list.slice(0, shown)) {
      const sid = c.to_stable_id || c.from_stable_id;
      const vid = c.to_stable_id ? S.diff.to_version_id : S.diff.from_version_id;
      const open = () => {
        opts.openFunction(sid, vid);
        if (c.classification === "modified" && c.from_index !== null && c.from_index !== undefined && c.to_index !== null && c.to_index !== undefined) {
          show($("diff-fn"), true);
          showFunctionDiff($("diff-fn"), c, S.diff.from_version_id, S.diff.to_version_id, () => show($("diff-fn"), false));
        }
      };
      frag.append(el("tr", { onclick: open, class: c.classification === "modified" ? "mod" : null, title: (c.from_stable_id || "–") + " → " + (c.to_stable_id || "–") },
        el("td", {}, el("span", { class: "chip c-" + c.classification, text: c.classification })),
        el("td", { class: "num", text: c.from_index ?? "–" }),
        el("td", { class: "num", text: c.to_index ?? "–" }),
        el("td", { class: c.name ? "nm" : "nm faint", text: c.name ?? "unnamed" }),
        el("td", {}, c.name ? chip(c.provenance) : null),
        el("td", { class: "num", text: c.name ? fmtConf(c.confidence) : "" }),
        el("td", { class: "num", text: c.score === null || c.score === undefined ? "" : Number(c.score).toFixed(2) }),
        el("td", {}, c.review ? el("span", { class: "flag review", text: "REVIEW" }) : null, c.runtime ? el("span", { class: "flag runtime", text: "RUNTIME" }) : null)));
    }
    tb.append(frag);
    setText($("diff-count"), fmtInt(list.length) + " of " + fmtInt((S.diff.changes || []).length) + " changes");
    show($("diff-more"), list.length > shown);
    setText($("diff-more").lastElementChild, "showing " + fmtInt(Math.min(list.length, shown)) + " of " + fmtInt(list.length));
  }

  $("diff-run").addEventListener("click", run);
  $("diff-more-btn").addEventListener("click", () => { shown += DIFF_PAGE; renderTable(); });
  let filterTimer = 0;
  $("diff-filter").addEventListener("input", () => {
    clearTimeout(filterTimer);
    filterTimer = setTimeout(() => { shown = DIFF_PAGE; renderTable(); }, 80);
  });
  for (const id of ["diff-class", "diff-review", "diff-noruntime"]) {
    $(id).addEventListener("change", () => { shown = DIFF_PAGE; renderTable(); });
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
