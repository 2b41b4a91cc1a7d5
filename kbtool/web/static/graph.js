// The studio's neighbourhood graph: the selected function, its callers and callees two levels
// out, drawn locally as SVG built with DOM APIs (names are text nodes, never markup).
// Columns left to right: callers of callers, callers, the function, callees, their callees.
// Each column is capped (a "+N more" node counts the rest) and sorted (direct before
// indirect, then by index), so the layout is deterministic and bounded on hubs with
// thousands of callers. Indirect (call_indirect candidate) edges are dashed.
import { visible } from "./dom.js";

export const CAP = 12;
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
function column(from, next, kindOf, seen) {
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
  return { shown: all.slice(0, CAP), more: Math.max(0, all.length - CAP) };
}

/** The columns of the neighbourhood of `center` (pure: no DOM). */
export function neighbourhood(graph, center) {
  const a = adjacencyOf(graph);
  const callerKind = (f, n) => a.kind.get(n + ">" + f);
  const calleeKind = (f, n) => a.kind.get(f + ">" + n);
  const c1 = column([center], a.callers, callerKind, new Set([center]));
  const c2 = column(c1.shown, a.callers, callerKind, new Set([center, ...(a.callers.get(center) || [])]));
  const d1 = column([center], a.callees, calleeKind, new Set([center]));
  const d2 = column(d1.shown, a.callees, calleeKind, new Set([center, ...(a.callees.get(center) || [])]));
  return { cols: [c2, c1, { shown: [center], more: 0 }, d1, d2], kind: a.kind,
           callers: (a.callers.get(center) || []).length, callees: (a.callees.get(center) || []).length };
}

/**
 * Draw the neighbourhood of `center` into `root`, an <svg> element of the page (its children
 * are replaced).
 * `info(index)` -> {name, provenance}; `onOpen(index)` when a node is clicked.
 */
export function drawNeighbourhood(root, graph, center, info, onOpen) {
  NS = root.namespaceURI;
  const nb = neighbourhood(graph, center);
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
    const top = PAD + 14 + (rows - n) * ROW_H / 2;
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
      nodes.append(svg("g", { class: "node more" }, svg("rect", { x, y, width: NODE_W, height: NODE_H, rx: 3 }),
        svg("text", { x: x + 6, y: y + 13 }, document.createTextNode("+" + col.more + " more"))));
    }
    pos.push(at);
  });
  // edges between neighbouring columns, caller on the left
  for (let ci = 0; ci < 4; ci++) {
    for (const [a, [ax, ay]] of pos[ci]) {
      for (const [b, [bx, by]] of pos[ci + 1]) {
        const k = nb.kind.get(a + ">" + b);
        if (k === undefined) continue;
        const x1 = ax + NODE_W, y1 = ay + NODE_H / 2, x2 = bx, y2 = by + NODE_H / 2, mx = (x1 + x2) / 2;
        edges.append(svg("path", { d: `M${x1},${y1} C${mx},${y1} ${mx},${y2} ${x2},${y2}`,
          class: "edge " + (k === "indirect" ? "indirect" : "direct"), "data-kind": k }));
      }
    }
  }
  return nb;
}
