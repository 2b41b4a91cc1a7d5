// The function panel: annotation, evidence, facts and callees of one function, and its
// history (time travel across versions, annotation events newest first).
import { $, clear, el, fill, fmtConf, fmtInt, setText, show } from "./dom.js";
import { api } from "./api.js";
import { chip, confbar, provOf, tint } from "./provenance.js";
import { S } from "./state.js";
import { codeOptions, disasmWindows, nameIndex, pageCode, showHint, textWindows } from "./code.js";
import { usesSection } from "./data.js";

/** How long the panel's data uses wait for the code's first lines before asking (ms). */
const SHOWN_WAIT = 1500;

/** The panel; `opts.heatmap` outlines the open function, `opts.onChange()` after open/close. */
export function createFnPanel(opts) {
  let fnSeq = 0;
  let codeView = "wasm";
  let relink = null;  // the open code view's lines drawn again with the version's names

  async function open(sid, vid) {
    const seq = ++fnSeq;
    show($("fn-empty"), false);
    show($("fn-view"), true);
    show($("fn-close"), true);
    setText($("fn-name"), "loading…");
    const q = vid === null || vid === undefined ? "" : "?version=" + encodeURIComponent(vid);
    let sym = null, hist = null;
    try {
      // the history carries the annotation record (same as /api/symbol/{id}, null when unnamed)
      hist = await api("/api/history/" + encodeURIComponent(sid) + q);
      sym = hist.symbol || null;
    } catch (e) {
      if (seq !== fnSeq) return;
      setText($("fn-name"), "error");
      clear($("fn-detail")).append(el("div", { class: "err", text: e.message }));
      clear($("fn-history"));
      return;
    }
    if (seq !== fnSeq) return;
    S.fn = sym; S.hist = hist;
    renderHeader(sid, sym, hist);
    renderDetail(sid, sym, hist);
    renderHistory(hist);
    const f = hist.function;
    if (f && f.version_id === S.vid) opts.heatmap.select(f.index);
    document.body.dataset.fn = sid;
    opts.onChange();
  }

  function close() {
    show($("fn-empty"), true); show($("fn-view"), false); show($("fn-close"), false);
    S.fn = null; S.hist = null; delete document.body.dataset.fn; opts.onChange();
  }

  function copyBtn(text) {
    return el("button", { class: "copy", text: "copy", title: "copy to clipboard",
      onclick: () => { if (navigator.clipboard) navigator.clipboard.writeText(text).catch(() => {}); } });
  }

  function renderHeader(sid, sym, hist) {
    const name = $("fn-name");
    setText(name, sym && sym.name ? sym.name : "unnamed");
    name.classList.toggle("unnamed", !(sym && sym.name));
    const f = hist.function || {};
    const v = S.byId.get(f.version_id);
    fill($("fn-sub"),
      el("span", { class: "mono", text: sid }), copyBtn(sid),
      sym ? chip(sym.provenance) : chip(null),
      sym ? el("span", { class: "mono", text: "conf " + fmtConf(sym.confidence) }) : null,
      sym ? confbar(sym.confidence, sym.provenance) : null,
      sym && sym.locked ? el("span", { class: "chip", text: "locked" }) : null,
      el("span", { text: "· #" + (f.index ?? "?") + " in " }), el("span", { class: "mono", text: v ? v.label : String(f.version_id ?? "") }));
  }

  function kv(pairs) {
    const box = el("div", { class: "kv" });
    for (const [k, v] of pairs) {
      if (v === undefined) continue;
      box.append(el("div", { class: "k", text: k }), v instanceof Node ? el("div", { class: "v" }, v)
        : el("div", { class: v === null || v === "" ? "v faint" : "v", text: v === null || v === "" ? "–" : (typeof v === "object" ? JSON.stringify(v) : String(v)) }));
    }
    return box;
  }
  const sect = (title, ...body) => el("div", { class: "sect" }, el("h4", { text: title }), ...body);
  function fnLink(x, vid) {
    const label = x.name || (x.import ? x.import : "#" + x.index);
    return el("a", { class: "tag", title: x.stable_id, text: label, onclick: () => open(x.stable_id, vid) });
  }

  function renderDetail(sid, sym, hist) {
    const box = clear($("fn-detail"));
    if (sym) {
      box.append(sect("Annotation", kv([
        ["name", sym.name], ["summary", sym.summary], ["type_signature", sym.type_signature],
        ["provenance", chip(sym.provenance)], ["confidence", fmtConf(sym.confidence)], ["locked", sym.locked ? "yes (only a human may overwrite)" : "no"],
        ["set at version", sym.version_id === null || sym.version_id === undefined ? null : String(sym.version_id) + (S.byId.get(sym.version_id) ? " · " + S.byId.get(sym.version_id).label : "")],
        ["updated", sym.updated_at]])));
      const evs = Array.isArray(sym.evidence) ? sym.evidence : [];
      const evBox = sect("Evidence (" + evs.length + ")");
      if (!evs.length) evBox.append(el("div", { class: "kv" }, el("div", { class: "v faint", text: "none recorded" })));
      for (const ev of evs) {
        const card = el("div", { class: "ev" });
        if (ev && typeof ev === "object" && !Array.isArray(ev)) {
          card.style.borderLeftColor = tint(provOf(ev.provenance || (ev.actor && String(ev.actor).split(":")[0])));
          card.append(kv(Object.entries(ev).map(([k, v]) => [k, v])));
        } else {
          card.append(el("div", { class: "mono", text: JSON.stringify(ev) }));
        }
        evBox.append(card);
      }
      box.append(evBox);
    } else {
      box.append(sect("Annotation", el("div", { class: "kv" }, el("div", { class: "k", text: "status" }),
        el("div", { class: "v faint", text: "unnamed: no annotation yet (kbtool set-name " + sid + " NAME)" }))));
    }
    const f = hist.function;
    if (f) {
      const v = S.byId.get(f.version_id);
      box.append(sect("Function in " + (v ? v.label : "version " + f.version_id), kv([
        ["index", String(f.index)], ["type", f.type], ["raw name", f.raw_name],
        ["exports", (f.export_names || []).length ? f.export_names.join(", ") : null],
        ["body", fmtInt(f.body_size) + " bytes · " + fmtInt(f.instr_count) + " instructions"],
        ["identity", f.match_method ? f.match_method + (f.match_score !== null && f.match_score !== undefined ? " · score " + Number(f.match_score).toFixed(2) : "") + (f.prev_index !== null && f.prev_index !== undefined ? " · was #" + f.prev_index : "") : null],
        ["body changed", f.body_changed ? "yes" : "no"],
        ["body hash", f.body_hash], ["shape hash", f.shape_hash]])));
      const code = codeSection(sid, f);
      box.append(code);
      box.append(usesSection(f.version_id, f.index, (i) => {  // data xrefs (issue 26)
        const g = (S.vid === f.version_id ? S.fns || [] : []).find((x) => x.index === i);
        if (g) open(g.stable_id, f.version_id);
      }, code._shown));  // asked for once the code's first lines have come
      box.append(el("a", { class: "tag", id: "open-in-studio", href: "/studio#v=" + f.version_id + "&f=" + f.index,
        text: "open in the studio (code, cleaned C, agents)" }));
    }
    const x = hist.facts;
    if (x) {
      const vid = f ? f.version_id : null;
      const callees = x.callees || [];
      box.append(sect("Callees (" + callees.length + ")", callees.length ? el("div", { class: "list" }, callees.slice(0, 200).map((c) => fnLink(c, vid))) : el("div", { class: "list faint", text: "none" })));
      const targets = x.call_targets || [];
      box.append(sect("Import calls and indirect sites (" + targets.length + ")", targets.length ? el("div", { class: "list" }, targets.slice(0, 200).map((t) => el("span", { class: "tag", text: t, title: t }))) : el("div", { class: "list faint", text: "none" })));
      const strs = x.referenced_strings || [];
      if (strs.length) box.append(sect("Referenced strings (" + strs.length + ")", el("div", { class: "list" }, strs.map((s) => el("span", { class: "tag", text: JSON.stringify(s), title: s })))));
      box.append(sect("Facts", kv([
        ["loops", String(x.loops ?? 0)], ["atomic sites", String(x.atomic_sites ?? 0)],
        ["memory accesses", String(x.memory_access_count ?? 0)], ["indirect calls", String(x.indirect_call_sites ?? 0)],
        ["globals", (x.globals_used || []).length ? x.globals_used.join(", ") : null],
        ["constants", (x.constants || []).length ? x.constants.slice(0, 24).join(", ") + ((x.constants.length > 24) ? " …" : "") : null]])));
      const threads = hist.threads || [];
      if (threads.length) {
        box.append(sect("Threads (" + threads.length + ")", el("div", { class: "list" }, threads.map((t) =>
          el("span", { class: "tag", text: [t.kind, t.op, t.width ? t.width + "B" : null, t.offset !== undefined ? "offset " + t.offset : null, t.pattern]
            .filter((v) => v !== null && v !== undefined).join(" ") })))));
      }
      const structs = hist.structs || [];
      if (structs.length) {
        box.append(sect("Structs (" + structs.length + ")", el("div", {}, structs.map((st) => el("div", { class: "mono",
          text: st.name + " { " + (st.fields || []).map((fl) => "+" + fl.offset + " " + fl.type + " " + fl.name).join("; ") + " }" })))));
      }
      const top = x.top_mnemonics || [];
      if (top.length) {
        const max = top[0][1] || 1;
        const bars = el("div", { class: "bars" });
        for (const [m, n] of top) bars.append(el("span", { class: "mono", text: m }), el("div", {}, el("div", { class: "b", style: { width: (n / max * 100) + "%" } })), el("span", { class: "num", text: fmtInt(n) }));
        box.append(sect("Top opcodes", bars));
      }
    }
  }

  /** The code of the function: Raw WASM / Inferred C / Cleaned C, highlighted locally and
   *  loaded by windows of lines as the reader scrolls (a huge function's first screen at once). */
  function codeSection(sid, f) {
    const views = [["wasm", "Raw WASM"], ["c", "C"], ["clean", "Cleaned C"]];
    const pre = el("pre", { class: "code", id: "fn-code-text" });
    const info = el("div", { class: "faint code-info" });
    const lines = el("div", { class: "faint code-info code-status", id: "fn-code-lines", "aria-live": "polite" });
    const data = { analysis: undefined };
    const seq = fnSeq;
    const buttons = views.map(([k, t]) => el("button", { class: "cv" + (codeView === k ? " on" : ""), id: "code-" + k,
      dataset: { view: k }, text: t, onclick: () => { codeView = k; draw(); } }));
    const names = () => (S.vid === f.version_id && S.fns ? nameIndex(S.fns) : new Map());
    const onRef = (index) => {
      const g = (S.fns || []).find((x) => x.index === index);
      if (g) open(g.stable_id, f.version_id);
    };
    // settled when the first window of code has come (or failed), at most SHOWN_WAIT ms later
    let shown;
    const firstLines = new Promise((resolve) => { shown = resolve; setTimeout(resolve, SHOWN_WAIT); });
    const onFirst = () => shown();
    function draw() {
      for (const b of buttons) b.classList.toggle("on", b.dataset.view === codeView);
      const a = data.analysis;
      fill(info);
      if (codeView === "clean" && a && a.understanding) {
        fill(info, el("span", { text: a.understanding }), " · " + (a.status || "") + " · confidence " + fmtConf(a.confidence));
      }
      if (codeView === "clean") {
        if (a === undefined) showHint(pre, lines, el("span", { class: "faint", text: "loading…" }));
        else if (a && a.clean_c) keep(pageCode(pre, lines, textWindows(a.clean_c), names(), onRef));
        else showHint(pre, lines, el("span", { class: "faint", text: "No cleaned C yet: run `kbtool deep " + f.version_id + " --function " + f.index + "`" }));
        shown();
        return;
      }
      const windows = disasmWindows(f.version_id, f.index, codeView, onFirst);
      keep(pageCode(pre, lines, async (o, l) => {
        try { return await windows(o, l); } catch (e) { shown(); throw e; }
      }, names(), onRef, codeOptions(f.version_id, f.index, codeView)));
    }
    // the version's names may come after the first lines (the dashboard opened on a function)
    function keep(pager) {
      relink = () => { if (seq === fnSeq && pre._pager === pager) pager.relink(names()); };
    }
    (async () => {
      try { data.analysis = await api("/api/analysis/" + encodeURIComponent(sid)); } catch (_) { data.analysis = null; }
      if (seq === fnSeq && codeView === "clean") draw();
    })();
    draw();
    const box = el("div", { class: "sect", id: "fn-code" }, el("h4", {}, "Code ", el("span", { class: "cvs" }, buttons)), info, pre, lines);
    box._shown = firstLines;
    return box;
  }

  function renderHistory(h) {
    const box = clear($("fn-history"));
    const fs = h.first_seen || {};
    box.append(sect("First seen", kv([["version", (fs.label ?? "") + " (" + (fs.version_id ?? "") + ")"], ["index", String(fs.index ?? "")], ["ingested", fs.ingested_at ?? null]])));
    const vers = h.versions || [], names = h.names_by_version || [];
    const nameAt = new Map(names.map((n) => [n.version_id, n.name]));
    if (vers.length) {
      const tt = el("div", { class: "tt" });
      const out = el("div");
      const slider = el("input", { type: "range", min: 0, max: vers.length - 1, value: vers.length - 1, id: "tt-slider", "aria-label": "time travel across versions" });
      const tbody = el("tbody");
      const upd = () => {
        const v = vers[Number(slider.value)];
        const nm = nameAt.get(v.version_id);
        out.replaceChildren(el("div", { class: "dim" }, "at version ", el("b", { class: "mono", text: v.label }), " (#" + v.index + (v.body_changed ? ", body changed" : "") + ") the name was"),
          el("div", { class: nm ? "ttname" : "ttname unnamed", id: "tt-name", text: nm ?? "unnamed" }));
        for (const tr of tbody.rows) tr.classList.toggle("sel", Number(tr.dataset.vid) === v.version_id);
      };
      for (const [i, v] of vers.entries()) {
        const nm = nameAt.get(v.version_id);
        tbody.append(el("tr", { dataset: { vid: String(v.version_id) }, onclick: () => { slider.value = String(i); upd(); } },
          el("td", { class: "mono", text: v.label }), el("td", { class: "num", text: "#" + v.index }),
          el("td", {}, v.body_changed ? el("span", { class: "changed", text: "● changed" }) : el("span", { class: "faint", text: "same" })),
          el("td", { class: "mono dim", text: (v.match_method || "") + (v.match_score !== null && v.match_score !== undefined && v.match_method !== "new" ? " " + Number(v.match_score).toFixed(2) : "") }),
          el("td", { class: nm ? "mono" : "faint", text: nm ?? "unnamed" })));
      }
      slider.addEventListener("input", upd);
      tt.append(slider, out);
      box.append(sect("Time travel (" + vers.length + " version" + (vers.length > 1 ? "s" : "") + ")", tt,
        el("table", { id: "hist-versions" }, el("thead", {}, el("tr", {}, ["version", "index", "body", "identity", "name"].map((t) => el("th", { text: t })))), tbody)));
      upd();
    }
    const evs = h.events || [];
    const tl = el("div", { class: "timeline", id: "timeline" });
    if (!evs.length) tl.append(el("div", { class: "faint", text: "no annotation events" }));
    for (const e of evs.slice().reverse()) {
      const p = provOf(e.provenance);
      tl.append(el("div", { class: "evt p-" + p + (e.written ? "" : " refused") },
        el("div", { class: "when" }, (e.created_at || "") + " · v" + (e.version_label ?? e.version_id ?? "?") + " · ", el("span", { text: e.kind })),
        el("div", { class: "what" }, e.old_name ?? "∅", el("span", { class: "arrow", text: "→" }), e.new_name ?? "∅"),
        el("div", { class: "why" }, chip(e.provenance), " ", e.confidence === null || e.confidence === undefined ? "" : "conf " + fmtConf(e.confidence) + " · ",
          "by ", el("span", { class: "mono", text: e.actor || "?" }), e.written ? "" : el("span", {}, " · ", el("span", { class: "refuse", text: "refused" }), ": ", e.reason || ""))));
    }
    box.append(sect("Annotation events (" + evs.length + ", newest first)", tl));
  }

  /** The version's function list has come (S.fns): the code on screen gets its name links. */
  function namesArrived() {
    if (relink) relink();
  }

  $("fn-close").addEventListener("click", close);
  return { open, close, namesArrived };
}
