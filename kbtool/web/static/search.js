// Search as you type (/api/search), keyboard navigation, "/" to focus, Esc to close.
import { $, clear, el, fmtConf, show } from "./dom.js";
import { api } from "./api.js";
import { chip } from "./provenance.js";
import { S } from "./state.js";

/** Wire the search box; `opts.openFunction(stableId, versionId)`, `opts.closeFunction()`. */
export function initSearch(opts) {
  const SR = { abort: null, timer: 0, items: [], active: -1 };
  const box = $("search-results"), input = $("search");

  function onInput() {
    clearTimeout(SR.timer);
    const q = input.value;
    if (!q.trim()) { close(); return; }
    if (byIndex(q)) return;
    SR.timer = setTimeout(() => search(q), 90);
  }
  /** `#1031` / `1031`: the function at that index of the selected version (client side). */
  function byIndex(q) {
    const m = /^\s*#?(\d{1,9})\s*$/.exec(q);
    if (!m || !S.fns) return false;
    const f = S.fns.find((x) => x.index === Number(m[1]));
    if (!f) { render([], "no function #" + m[1] + " in this version", q); return true; }
    render([{ name: (f.name || "unnamed") + "  #" + f.index, provenance: f.provenance, confidence: f.confidence,
      stable_id: f.stable_id, vid: S.vid }], null, q);
    return true;
  }
  async function search(q) {
    if (byIndex(q)) return;
    if (SR.abort) SR.abort.abort();
    SR.abort = new AbortController();
    let res;
    try { res = await api("/api/search?q=" + encodeURIComponent(q), SR.abort.signal); }
    catch (e) { if (e.name !== "AbortError") render([], e.message); return; }
    if (q !== input.value) return;
    render(res, null, q);
  }
  function render(items, errMsg, q) {
    SR.items = items; SR.active = items.length ? 0 : -1;
    clear(box);
    box.dataset.q = q ?? "";
    box.append(el("div", { class: "head", text: errMsg ? ("error: " + errMsg) : (items.length ? items.length + (items.length >= 100 ? "+ results (capped; refine)" : " result" + (items.length > 1 ? "s" : "")) : "no named symbol matches") }));
    items.forEach((r, i) => {
      box.append(el("div", { class: "sr" + (i === 0 ? " active" : ""), role: "option", dataset: { i: String(i) },
        onmousedown: (e) => { e.preventDefault(); pick(i); } },
        el("span", { class: "nm", text: r.name }), chip(r.provenance),
        el("span", { class: "num", text: fmtConf(r.confidence) }), el("span", { class: "sid", text: r.stable_id })));
    });
    show(box, true);
  }
  function pick(i) {
    const r = SR.items[i];
    if (!r) return;
    close();
    input.blur();
    opts.openFunction(r.stable_id, r.vid ?? null);
  }
  function close() { show(box, false); SR.active = -1; }
  function move(d) {
    const rows = box.querySelectorAll(".sr");
    if (!rows.length) return;
    SR.active = (SR.active + d + rows.length) % rows.length;
    rows.forEach((r, i) => r.classList.toggle("active", i === SR.active));
    rows[SR.active].scrollIntoView({ block: "nearest" });
  }

  input.addEventListener("input", onInput);
  input.addEventListener("keydown", (e) => {
    if (e.key === "ArrowDown") { e.preventDefault(); move(1); }
    else if (e.key === "ArrowUp") { e.preventDefault(); move(-1); }
    else if (e.key === "Enter") { e.preventDefault(); if (SR.active >= 0) pick(SR.active); }
    else if (e.key === "Escape") { close(); input.blur(); }
  });
  input.addEventListener("focus", () => { if (input.value.trim() && SR.items.length) show(box, true); });
  input.addEventListener("blur", () => setTimeout(close, 120));
  document.addEventListener("keydown", (e) => {
    const t = e.target;
    const typing = t && (t.tagName === "INPUT" || t.tagName === "SELECT" || t.tagName === "TEXTAREA");
    if (e.key === "/" && !typing) { e.preventDefault(); input.focus(); input.select(); }
    else if (e.key === "Escape" && !typing) opts.closeFunction();
  });
}
