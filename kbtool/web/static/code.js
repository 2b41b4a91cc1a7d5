// Code shown as text: a small local highlighter (C and wasm text) that returns spans and
// text nodes only, shared by the studio and the dashboard's function panel; and the paged code
// view both use (see `pageCode`).
import { el, fill, fmtInt, setText } from "./dom.js";
import { api } from "./api.js";

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

// A code view that loads by pages: the first window of lines at once, the next ones as the
// reader scrolls near the end (an IntersectionObserver on a sentinel after the last line),
// with a "lines N–M of T" status. Shared by the studio and the dashboard's function panel;
// a small function fits one window and shows as before. Lines are rendered through
// `highlight` (spans and text nodes only, never HTML).
//
// The DOM stays bounded however far one scrolls: each window is a block of its lines, and at
// most `KEEP` windows (those nearest the visible part of the pane) keep their lines; a farther
// one becomes an empty block of the same height (nothing on screen moves) and its lines are
// fetched again when it comes back near the visible part.

/** Lines per request: a few screens of the largest pane. */
export const WINDOW = 300;
/** Windows that keep their lines in the DOM at once; the others are empty blocks. */
export const KEEP = 4;

/** `fetchWindow(offset, limit)` for `/api/disasm/{vid}/{index}?kind=wasm|c` windows;
 *  `onFirst(body)` sees the first window (it carries `knowledge`). */
export function disasmWindows(vid, index, kind, onFirst) {
  return async (offset, limit) => {
    const body = await api("/api/disasm/" + encodeURIComponent(vid) + "/" + encodeURIComponent(index) +
      "?kind=" + kind + "&offset=" + offset + "&limit=" + limit);
    if (offset === 0 && onFirst) onFirst(body);
    return body;
  };
}

/** `pageCode` options for a view of `kind`: the C view shows the disassembly's first window
 *  while a huge function's C is being lifted (labelled), then the C replaces it. */
export function codeOptions(vid, index, kind) {
  return kind === "c"
    ? { meanwhile: disasmWindows(vid, index, "wasm"), label: "lifting C… showing the disassembly meanwhile" }
    : {};
}

/** `fetchWindow` over text already in the page (the cleaned C): pages of its lines, so a
 *  long text is rendered as the reader scrolls too. */
export function textWindows(text) {
  const lines = String(text ?? "").split("\n");
  if (lines.length > 1 && lines[lines.length - 1] === "") lines.pop();
  return async (offset, limit) => {
    const end = Math.min(lines.length, offset + limit);
    return { lines: lines.slice(offset, end), offset, total: lines.length, next_offset: end < lines.length ? end : null };
  };
}

/** How long the first window may take before `meanwhile` is shown in its place (ms). */
export const MEANWHILE_MS = 150;

/**
 * Show a function's code in `pre` (the scrolling element) by windows. `info` gets the status
 * line; `byName`/`onRef` make function names links (see `highlight`). Returns `{stop()}`;
 * starting another pager on the same `pre` stops this one (late answers are dropped).
 * `opts.meanwhile` (a `fetchWindow`, e.g. the disassembly's) and `opts.label`: when the
 * first window takes longer than `MEANWHILE_MS` (a huge function's C being lifted), the
 * first window of `meanwhile` is shown with `label` as the status until the code arrives.
 */
export function pageCode(pre, info, fetchWindow, byName, onRef, opts = {}) {
  let names = byName;  // `relink` replaces it (the version's names came after the first lines)
  const limit = opts.limit || WINDOW, keep = opts.keep || KEEP;
  const gen = (pre._pagerGen = (pre._pagerGen || 0) + 1);
  if (pre._pager) pre._pager.stop();
  const live = () => pre._pagerGen === gen;
  const body = el("span", { class: "code-lines" });
  const sentinel = el("span", { class: "code-more", "aria-hidden": "true" });
  const wins = [];  // every window asked for so far, in order: {offset, node, lines (the lines kept, or null), busy}
  let next = 0, total = null, shown = 0, busy = false, done = false;
  fill(pre, body, sentinel);
  pre.scrollTop = 0;  // a new function or view starts at its first line
  // nothing of the previous function or view describes this one
  delete pre.dataset.shown; delete pre.dataset.total; delete pre.dataset.complete;
  delete pre.dataset.meanwhile;
  setText(info, "loading…");
  info.classList.remove("code-err");

  const status = () => setText(info, total === 0 ? "no lines"
    : "lines " + (shown ? 1 : 0) + "–" + fmtInt(shown) + " of " + fmtInt(total) + (done ? "" : " · scroll for more"));

  /** `node` is (almost) in the visible part of the pane (the observer's 200 px margin). */
  const near = (node) => {
    const r = pre.getBoundingClientRect(), b = node.getBoundingClientRect();
    return b.top <= r.bottom + 200 && b.bottom >= r.top - 200;
  };
  const nearEnd = () => !done && sentinel.isConnected && near(sentinel);

  const render = (node, lines) => fill(node, highlight(lines.join("\n") + "\n", names, onRef));

  /** Empty the windows farthest from the visible part, so that at most `keep` hold lines. */
  function trim() {
    const full = wins.filter((w) => w.lines);
    if (full.length <= keep) return;
    const r = pre.getBoundingClientRect();
    const away = (w) => {
      const b = w.node.getBoundingClientRect();
      return b.bottom < r.top ? r.top - b.bottom : b.top > r.bottom ? b.top - r.bottom : 0;
    };
    full.sort((a, b) => away(a) - away(b));
    for (const w of full.slice(keep)) {
      w.node.style.height = w.node.getBoundingClientRect().height + "px";
      fill(w.node);
      w.lines = null;
      w.node.classList.add("gone");
      obs.observe(w.node);
    }
  }

  /** A window emptied by `trim` is near the visible part again: its lines once more. */
  async function refill(w) {
    if (w.lines || w.busy || !live()) return;
    w.busy = true;
    let got;
    try { got = await fetchWindow(w.offset, limit); } catch (e) {
      w.busy = false;
      if (live()) { setText(info, "could not load lines from " + fmtInt(w.offset + 1) + ": " + e.message); info.classList.add("code-err"); }
      return;
    }
    w.busy = false;
    if (!live() || w.lines) return;
    obs.unobserve(w.node);
    w.lines = got.lines || [];
    render(w.node, w.lines);
    w.node.style.height = "";
    w.node.classList.remove("gone");
    status();
    info.classList.remove("code-err");
    trim();
    check();  // the reader may have scrolled on while it came
  }

  /** The first window, with `opts.meanwhile`'s first window shown while it takes long. The
   *  stand-in is a `.win.meanwhile` block of this pager's body: it goes when the first window
   *  comes (or fails), and a stand-in that comes after the first window is never shown. */
  async function first() {
    const main = fetchWindow(0, limit);
    if (!opts.meanwhile) return main;
    let arrived = false, shownMeanwhile = null;
    main.then(() => { arrived = true; }, () => { arrived = true; });
    const timer = setTimeout(async () => {
      let m;
      try { m = await opts.meanwhile(0, limit); } catch (_) { return; }
      if (arrived || !live()) return;
      shownMeanwhile = el("span", { class: "win meanwhile" });
      render(shownMeanwhile, m.lines || []);
      body.append(shownMeanwhile);
      pre.dataset.meanwhile = "1";
      setText(info, opts.label || "loading…");
    }, MEANWHILE_MS);
    timers.push(timer);
    try { return await main; } finally {
      arrived = true;
      clearTimeout(timer);
      if (shownMeanwhile) shownMeanwhile.remove();
      if (live()) delete pre.dataset.meanwhile;  // never another pager's flag
    }
  }

  async function load() {
    if (busy || done || !live()) return;
    busy = true;
    const at = next;
    let w;
    try { w = await (at === 0 ? first() : fetchWindow(at, limit)); } catch (e) {
      busy = false;
      if (!live()) return;
      if (at === 0) fill(body, el("span", { class: "faint", text: "(code unavailable: " + e.message + ")" }));
      setText(info, "could not load lines from " + fmtInt(at + 1) + ": " + e.message);
      info.classList.add("code-err");
      return;
    }
    busy = false;
    if (!live()) return;
    const lines = w.lines || [];
    if (lines.length) {
      const node = el("span", { class: "win", dataset: { offset: String(at) } });
      render(node, lines);
      body.append(node);
      wins.push({ offset: at, node, lines, busy: false });
    }
    shown = at + lines.length; total = w.total;
    done = w.next_offset === null || w.next_offset === undefined || !lines.length || w.next_offset <= at;
    next = done ? next : w.next_offset;
    pre.dataset.shown = String(shown); pre.dataset.total = String(total);
    pre.dataset.complete = done ? "1" : "0";
    status();
    trim();
    if (done) { obs.unobserve(sentinel); sentinel.remove(); return; }
    // A scroll while this window was on its way asked for nothing (busy), and the observer
    // tells only of changes: the sentinel that was in view when this window was asked for
    // and is in view again at the next frame (the reader scrolled on in the same frame)
    // would never be reported. So look now, and have the observer report afresh.
    obs.unobserve(sentinel); obs.observe(sentinel);
    check();
  }

  /** Whatever is near the visible part now: the next window, or emptied windows' lines. */
  function check() {
    if (!live()) return;
    if (nearEnd()) load();
    for (const w of wins) if (!w.lines && !w.busy && near(w.node)) refill(w);
  }

  const obs = new IntersectionObserver((entries) => {
    for (const e of entries) {
      if (!e.isIntersecting) continue;
      if (e.target === sentinel) load();
      else {
        const w = wins.find((x) => x.node === e.target);
        if (w) refill(w);
      }
    }
  }, { root: pre, rootMargin: "200px 0px 200px 0px" });
  obs.observe(sentinel);
  // every scroll looks again too (scroll events come at most once a frame): the observer
  // reports crossings only, so a scroll that crossed nothing new would ask for nothing
  const onScroll = () => check();
  pre.addEventListener("scroll", onScroll, { passive: true });
  const timers = [];
  const pager = {
    /** The lines on screen drawn again with the function names of `byName` (a Map name ->
     *  index), and every later window too: the studio shows the function in its address
     *  before the version's names are here. Nothing moves: the same lines, now with links. */
    relink: (byName2) => {
      names = byName2;
      if (live()) for (const w of wins) if (w.lines) render(w.node, w.lines);
    },
    stop: () => {
      obs.disconnect();
      pre.removeEventListener("scroll", onScroll);
      for (const t of timers) clearTimeout(t);
      if (pre._pager === pager) pre._pager = null;
    },
  };
  pre._pager = pager;
  load();
  return pager;
}

/** A hint in place of code (the cleaned C before `kbtool deep`): stops any pager on `pre`. */
export function showHint(pre, info, node) {
  pre._pagerGen = (pre._pagerGen || 0) + 1;
  if (pre._pager) pre._pager.stop();
  fill(pre, node);
  delete pre.dataset.shown; delete pre.dataset.total; delete pre.dataset.complete;
  delete pre.dataset.meanwhile;
  if (info) { setText(info, ""); info.classList.remove("code-err"); }
}
