// The studio's neighbourhood graph: the selected function, its callers and callees two levels
// out, drawn locally as SVG built with DOM APIs (names are text nodes, never markup).
// Columns left to right: callers of callers, callers, the function, callees, their callees.
// Each column is capped (a "+N more" node counts the rest) and sorted (direct before
// indirect, then by index), so the layout is deterministic and bounded on hubs with
// thousands of callers. Clicking "+N more" (or Enter on it) shows the next PAGE nodes of that
// column, shift-click all of them; the graph's box scrolls. Indirect (call_indirect candidate) edges are dashed.
import { visible } from "./dom.js";

export const CAP = 12;
export const PAGE = 100;
const COL_W = 168, NODE_W = 140, ROW_H = 24, NODE_H = 18, PAD = 8, LABEL = 20;

const adjacency = new WeakMap();

/** Callers/callees lists and edge kinds of a call graph, built once per graph object. */
function adjacencyOf(graph) {
  let a = adjacency.get(graph);
  if (a) return a;
  a = { callers: new Map(), callees: new Map(), kind: new Map() };
  for (const e of graph.edges || []) {
    if (!a.callers.has(e.callee)) a.callers.set(e.callee, []);
    if (!a.callees.has(e.caller)) a.callees.set(e.caller, []);
    a.callers.get(e.callee).push(e.caller);
    a.callees.get(e.caller).push(e.callee);
    const k = e.caller + ">" + e.callee, was = a.kind.get(k);
    if (was === undefined || was === "indirect") a.kind.set(k, e.kind);
  }
  adjacency.set(graph, a);
  return a;
}

// The SVG namespace, read from the page's own <svg> root (no URL spelled in the scripts).
let NS = null;
const svg = (tag, attrs, ...kids) => {
  const n = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) if (v !== null && v !== undefined) n.setAttribute(k, String(v));
  for (const c of kids) if (c) n.append(c);
  return n;
};
const label = (s) => { const t = visible(s); return t.length > LABEL ? t.slice(0, LABEL - 1) + "…" : t; };

/**
 * One column: the distinct neighbours of `from` (through `next`) not in `seen`, sorted with
 * direct edges first, then by index; returns {shown, more}.
 */
function column(from, next, kindOf, seen, cap = CAP) {
  const found = new Map();
  for (const f of from) {
    for (const n of next.get(f) || []) {
      if (seen.has(n)) continue;
      const ind = kindOf(f, n) === "indirect" ? 1 : 0;
      const was = found.get(n);
      if (was === undefined || ind < was) found.set(n, ind);
    }
  }
  const all = [...found.entries()].sort((x, y) => x[1] - y[1] || x[0] - y[0]).map((x) => x[0]);
  return { shown: all.slice(0, cap), more: Math.max(0, all.length - cap) };
}

/**
 * The columns of the neighbourhood of `center` (pure: no DOM). `caps[i]` is how many nodes
 * column i shows (default CAP each; the "+N more" node counts the rest).
 */
export function neighbourhood(graph, center, caps = [CAP, CAP, 1, CAP, CAP]) {
  const a = adjacencyOf(graph);
  const callerKind = (f, n) => a.kind.get(n + ">" + f);
  const calleeKind = (f, n) => a.kind.get(f + ">" + n);
  const c1 = column([center], a.callers, callerKind, new Set([center]), caps[1]);
  const c2 = column(c1.shown, a.callers, callerKind, new Set([center, ...(a.callers.get(center) || [])]), caps[0]);
  const d1 = column([center], a.callees, calleeKind, new Set([center]), caps[3]);
  const d2 = column(d1.shown, a.callees, calleeKind, new Set([center, ...(a.callees.get(center) || [])]), caps[4]);
  return { cols: [c2, c1, { shown: [center], more: 0 }, d1, d2], kind: a.kind, adjacency: a,
           callers: (a.callers.get(center) || []).length, callees: (a.callees.get(center) || []).length };
}

// per <svg> root: the graph and function drawn, and how far each column was expanded
const expansion = new WeakMap();

function capsFor(root, graph, center) {
  const was = expansion.get(root);
  if (was && was.graph === graph && was.center === center) return was.caps;
  const caps = [CAP, CAP, 1, CAP, CAP];
  expansion.set(root, { graph, center, caps });
  return caps;
}

/**
 * Draw the neighbourhood of `center` into `root`, an <svg> element of the page (its children
 * are replaced). Columns expanded with "+N more" stay expanded while the same graph and
 * function are drawn again.
 * `info(index)` -> {name, provenance}; `onOpen(index)` when a node is clicked.
 */
export function drawNeighbourhood(root, graph, center, info, onOpen) {
  NS = root.namespaceURI;
  const caps = capsFor(root, graph, center);
  const nb = neighbourhood(graph, center, caps);
  const rows = Math.max(...nb.cols.map((c) => c.shown.length + (c.more ? 1 : 0)), 1);
  const W = COL_W * 5, H = rows * ROW_H + 2 * PAD + 14;
  for (const [k, v] of Object.entries({ viewBox: "0 0 " + W + " " + H, width: W, height: H })) root.setAttribute(k, String(v));
  root.replaceChildren();
  const pos = [];  // per column: Map index -> [x, y]
  const edges = svg("g", { class: "edges" }), nodes = svg("g", { class: "nodes" });
  root.append(edges, nodes);
  const heads = ["callers²", "callers (" + nb.callers + ")", "function", "callees (" + nb.callees + ")", "callees²"];
  nb.cols.forEach((col, ci) => {
    const x = ci * COL_W + (COL_W - NODE_W) / 2;
    const n = col.shown.length + (col.more ? 1 : 0);
    // short columns are centred on the first screenful, expanded ones run down the box
    const top = PAD + 14 + Math.max(0, Math.min(rows, CAP + 1) - n) * ROW_H / 2;
    const at = new Map();
    root.append(svg("text", { x: x + NODE_W / 2, y: PAD + 4, class: "head", "text-anchor": "middle" }, document.createTextNode(heads[ci])));
    col.shown.forEach((idx, r) => {
      const y = top + r * ROW_H;
      at.set(idx, [x, y]);
      const f = info(idx) || {};
      const prov = f.provenance || "unnamed";
      const g = svg("g", { class: "node p-" + prov.replace(/[^a-z-]/g, "") + (idx === center ? " center" : ""),
        "data-index": idx, tabindex: 0, role: "link" },
        svg("title", {}, document.createTextNode(visible((f.name || "unnamed") + "  #" + idx))),
        svg("rect", { x, y, width: NODE_W, height: NODE_H, rx: 3 }),
        svg("text", { x: x + 6, y: y + 13 }, document.createTextNode(label(f.name || "#" + idx))));
      if (idx !== center) {
        g.addEventListener("click", () => onOpen(idx));
        g.addEventListener("keydown", (e) => { if (e.key === "Enter") onOpen(idx); });
      }
      nodes.append(g);
    });
    if (col.more) {
      const y = top + col.shown.length * ROW_H;
      const next = Math.min(PAGE, col.more);
      const tip = "show the next " + next + " of " + col.more + " (shift: all of them)";
      const more = svg("g", { class: "node more", "data-col": ci, tabindex: 0, role: "button",
        "aria-label": tip }, svg("title", {}, document.createTextNode(tip)),
        svg("rect", { x, y, width: NODE_W, height: NODE_H, rx: 3 }),
        svg("text", { x: x + 6, y: y + 13 }, document.createTextNode("+" + col.more + " more")));
      const expand = (all) => {
        caps[ci] = col.shown.length + (all ? col.more : next);
        drawNeighbourhood(root, graph, center, info, onOpen);
        const again = root.querySelector(".node.more[data-col='" + ci + "']");
        if (again) again.focus({ preventScroll: true });
      };
      more.addEventListener("click", (e) => expand(e.shiftKey));
      more.addEventListener("keydown", (e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); expand(e.shiftKey); } });
      nodes.append(more);
    }
    pos.push(at);
  });
  // edges between neighbouring columns, caller on the left (walks the adjacency, so a column
  // expanded to thousands of nodes costs its edges, not the product of two columns)
  for (let ci = 0; ci < 4; ci++) {
    for (const [a, [ax, ay]] of pos[ci]) {
      for (const b of new Set(nb.adjacency.callees.get(a) || [])) {
        const at = pos[ci + 1].get(b);
        if (at === undefined) continue;
        const [bx, by] = at;
        const k = nb.kind.get(a + ">" + b);
        const x1 = ax + NODE_W, y1 = ay + NODE_H / 2, x2 = bx, y2 = by + NODE_H / 2, mx = (x1 + x2) / 2;
        edges.append(svg("path", { d: `M${x1},${y1} C${mx},${y1} ${mx},${y2} ${x2},${y2}`,
          class: "edge " + (k === "indirect" ? "indirect" : "direct"), "data-kind": k }));
      }
    }
  }
  return nb;
}
