// The diff's changelog panel: what changed in each function, the same lines as `kbtool ui diff`
// and the TUI (GET /api/changelog: kbtool.services.diff.changelog). Modified functions come in
// triage order (patch-like first: new bounds checks, error paths, widened arithmetic; the
// `triage` score and its `reasons`, "why" lines), the first TOP of them, then one line per
// group (layout changes, relocations, churn) and "show more" for the rest; each with its
// explanation lines; an unnamed one carries a
// `refs` line (its strings and callees) so it can be told apart; then new and deleted functions
// and the imports added/removed. Every value from the KB is inserted as text (dom.js).
import { el, fill, fmtInt, setText } from "./dom.js";

const PAGE = 100;
const TOP = 20; // modified functions shown before "show more" (the short view, as `ui diff`)

const delta = (a, b, unit) => {
  const d = (b ?? 0) - (a ?? 0);
  return (d > 0 ? "+" : d < 0 ? "−" : "±") + fmtInt(Math.abs(d)) + " " + unit;
};

/** The kind of one explanation line (colours it): added, removed or changed. */
function lineKind(item) {
  if (/^(calls added|strings added|constants added|new callers)/.test(item)) return "add";
  if (/^(calls removed|strings removed|constants removed|callers gone)/.test(item)) return "del";
  return "chg";
}

function flags(e) {
  return [
    e.runtime ? el("span", { class: "flag runtime", text: "RUNTIME" }) : null,
    e.review ? el("span", { class: "flag review", text: "REVIEW" }) : null,
  ];
}

function nameNode(e, index) {
  return e.name
    ? el("span", { class: "cl-name", text: e.name })
    : el("span", { class: "cl-name faint", text: "func[" + index + "]" });
}

function modifiedEntry(m, open) {
  const head = el("div", { class: "cl-head", onclick: () => open(m, "modified"), title: "open this function and its side-by-side diff" },
    nameNode(m, m.to_index),
    el("span", { class: "faint", text: " #" + m.from_index + "→#" + m.to_index + " " }),
    el("span", { class: "dim", text: delta(m.instr_from, m.instr_to, "instr") + ", " + delta(m.size_from, m.size_to, "B") }),
    " ", m.triage !== undefined
      ? el("span", { class: "cl-weight", title: "triage score (" + (m.triage_kind || "") + "): patch-like changes rank first", text: "triage " + Number(m.triage).toFixed(1) })
      : el("span", { class: "cl-weight", title: "change weight", text: "w " + m.weight }),
    " ", ...flags(m));
  const lines = [];
  for (const r of (m.reasons || []).slice(0, 3)) lines.push(el("li", { class: "cl-why", text: "why: " + r }));
  if (m.hint) lines.push(el("li", { class: "cl-refs" }, el("span", { class: "faint", text: "refs " }), m.hint));
  for (const item of m.items || []) {
    if (/^[+-][\d,]+ instructions$/.test(item)) continue; // the head says it (as the CLI)
    lines.push(el("li", { class: "cl-" + lineKind(item), text: item }));
  }
  return el("div", { class: "cl-entry", dataset: { k: "modified", index: String(m.to_index) } }, head, el("ul", { class: "cl-lines" }, lines));
}

function functionEntry(f, kind, open) {
  const index = kind === "new" ? f.to_index : f.from_index;
  const lines = [];
  if (f.strings && f.strings.length) {
    const more = f.string_count > f.strings.length ? " (+" + (f.string_count - f.strings.length) + " more)" : "";
    lines.push(el("li", {}, el("span", { class: "faint", text: "strings " }), f.strings.map((s) => JSON.stringify(s)).join("  "), more));
  }
  if (f.calls && f.calls.length) lines.push(el("li", {}, el("span", { class: "faint", text: "calls " }), f.calls.join(", ")));
  return el("div", { class: "cl-entry", dataset: { k: kind, index: String(index) } },
    el("div", { class: "cl-head", onclick: () => open(f, kind) },
      el("span", { class: "faint", text: "#" + index + " " }),
      f.name ? el("span", { class: "cl-name", text: f.name }) : el("span", { class: "cl-name faint", text: "unnamed" }),
      el("span", { class: "dim", text: "  " + fmtInt(f.instr) + " instr, " + fmtInt(f.size) + " B " }), ...flags(f)),
    lines.length ? el("ul", { class: "cl-lines" }, lines) : null);
}

/** One line per group the triage folds (layout changes, relocations, churn). */
function groupLines(cl) {
  const g = cl.groups;
  if (!g) return null;
  const lines = [];
  const k = g.kinds || {};
  lines.push(el("li", { class: "cl-chg", text: fmtInt(k.fix || 0) + " look like fixes · " + fmtInt(k.change || 0) + " other changes · " + fmtInt(k.churn || 0) + " churn · " + fmtInt(k.layout || 0) + " offset shifts only" }));
  for (const l of (g.layout || []).slice(0, 4)) {
    const names = l.functions.slice(0, 4).map((f) => f.name || "func[" + f.to_index + "]").join(", ");
    lines.push(el("li", { class: "cl-group", text: "layout: struct offsets " + (l.delta > 0 ? "+" : "") + l.delta + " (" + l.offsets.slice(0, 3).join(", ") + ") in " + fmtInt(l.count) + " functions (" + fmtInt(l.layout_only) + " with no other change): " + names + (l.count > 4 ? " +" + (l.count - 4) + " more" : "") }));
  }
  if (g.relocated) lines.push(el("li", { class: "cl-group", text: "relocated: " + fmtInt(g.relocated) + " functions are the same code with data addresses moved (moved/unchanged, not modified)" }));
  return el("ul", { class: "cl-lines cl-groups" }, lines);
}

/**
 * Fill `box` with the changelog `cl`, keeping the entries `keep(entry, kind)` accepts (the
 * diff table's filter), `PAGE` per section at a time. `open(entry, kind)` opens one.
 */
export function renderChangelog(box, cl, keep, open) {
  const sections = [
    ["modified", cl.modified || [], (m) => modifiedEntry(m, open)],
    ["new", cl.new || [], (f) => functionEntry(f, "new", open)],
    ["deleted", cl.deleted || [], (f) => functionEntry(f, "deleted", open)],
  ];
  const out = [];
  let total = 0;
  for (const [kind, all, make] of sections) {
    const list = all.filter((e) => keep(e, kind));
    total += list.length;
    if (!list.length) continue;
    const body = el("div", { class: "cl-body" });
    let shown = 0;
    const more = el("button", { class: "btn ghost cl-more" });
    const page = () => {
      const frag = document.createDocumentFragment();
      const step = kind === "modified" && shown === 0 && cl.order === "triage" ? TOP : PAGE;
      for (const e of list.slice(shown, shown + step)) frag.append(make(e));
      shown = Math.min(list.length, shown + step);
      body.append(frag);
      setText(more, "show more (" + fmtInt(list.length - shown) + " left)");
      more.classList.toggle("hidden", shown >= list.length);
    };
    more.addEventListener("click", page);
    page();
    let note = "";
    if (kind === "modified") {
      const named = list.filter((m) => m.name).length;
      note = " · " + fmtInt(named) + " named, " + fmtInt(list.length - named) + " unnamed · "
        + (cl.order === "triage" ? "patch-like first (triage)" : cl.order === "index" ? "by index" : "most changed first");
    }
    out.push(el("section", { class: "cl-sect", dataset: { k: kind } },
      el("h4", {}, el("span", { class: "chip c-" + kind, text: kind }), " " + fmtInt(list.length) + note),
      kind === "modified" ? groupLines(cl) : null,
      body, more));
  }
  const imports = [];
  if ((cl.imports_added || []).length) imports.push(el("li", { class: "cl-add", text: "+ " + cl.imports_added.join(", ") }));
  if ((cl.imports_removed || []).length) imports.push(el("li", { class: "cl-del", text: "− " + cl.imports_removed.join(", ") }));
  if (imports.length) out.push(el("section", { class: "cl-sect", dataset: { k: "imports" } }, el("h4", { text: "imports" }), el("ul", { class: "cl-lines" }, imports)));
  if (!total && !imports.length) {
    out.push(el("div", { class: "faint cl-none", text: "no code changes among the rows shown (a moved function kept its code)" }));
  }
  fill(box, out);
  return total;
}
