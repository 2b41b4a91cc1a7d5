// The canvas heatmap: one cell per defined function, tint = provenance (from the server's
// vocabulary), opacity = confidence; hover tooltip, click / arrow keys + Enter to pick.
import { $, el, fill, fmtConf, fmtInt, show, setText } from "./dom.js";
import { V, UNNAMED, chip } from "./provenance.js";

const BG = [0x0f, 0x13, 0x1a];   // the page background behind the cells (--bg2)
const LEVELS = 21;               // confidence steps of each tint

const rgbOf = (hex) => [1, 3, 5].map((o) => parseInt(hex.slice(o, o + 2), 16));
const pack = (r, g, b) => ((255 << 24) | (b << 16) | (g << 8) | r) >>> 0;

export class Heatmap {
  /**
   * `ids`: element ids of canvas, overlay, wrap, stage, empty, info, order (a <select>) and
   * tooltip. `opts.hidden`: a Set of provenances drawn as hidden cells; `opts.onPick(fn)`:
   * called when a cell is clicked or Enter is pressed; `opts.emptyText()`: the text shown
   * when there is nothing to draw.
   */
  constructor(ids, opts) {
    this.ids = ids;
    this.opts = opts;
    this.fns = [];
    this.n = 0;
    this.index = new Uint32Array(0);
    this.picked = -1;
    this.at = new Map();
    this.prov = new Uint8Array(0);
    this.conf = new Float32Array(0);
    this.order = new Uint32Array(0);
    this.pos = new Uint32Array(0);
    Object.assign(this, { cell: 8, gap: 1, cols: 1, rows: 0, dpr: 1, hover: -1, sel: -1, lastDrawMs: 0 });
    this.buildPalette();
    this.bind();
  }

  el(name) { return $(this.ids[name]); }

  buildPalette() {
    const order = V.order;
    this.unnamed = order.indexOf(UNNAMED);
    const pal = new Uint32Array(order.length * LEVELS + 2);
    order.forEach((p, pi) => {
      const rgb = rgbOf(V.colours[p]);
      for (let l = 0; l < LEVELS; l++) {
        const a = p === UNNAMED ? 0.42 : 0.22 + 0.78 * (l / (LEVELS - 1));   // opacity rises with confidence
        const c = rgb.map((x, k) => Math.round(BG[k] + (x - BG[k]) * a));
        pal[pi * LEVELS + l] = pack(c[0], c[1], c[2]);
      }
    });
    this.bgColour = pack(BG[0], BG[1], BG[2]);
    this.hiddenColour = pack(BG[0] + 9, BG[1] + 10, BG[2] + 12);
    this.palette = pal;
  }

  /** Draw the cells of a `/api/versions/{id}/functions?form=cells` answer (indices,
   *  provenances, confidences: no names) while the whole list is on its way; `setList`
   *  then gives the cells their functions (tooltip names, picks). */
  setCells(c) {
    const n = c.count, code = c.provenances.map((p) => V.order.indexOf(p));
    this.fns = null;
    this.n = n;
    this.index = Uint32Array.from(c.index);
    this.prov = new Uint8Array(n);
    this.conf = new Float32Array(n);
    for (let i = 0; i < n; i++) {
      const pi = code[c.provenance[i]];
      this.prov[i] = pi === undefined || pi < 0 ? this.unnamed : pi;
      this.conf[i] = c.confidence[i] || 0;
    }
    this.indexAll();
    this.hover = -1;
    this.sel = -1;
    this.picked = -1;
    this.reorder();
  }

  /** The version's whole function list (rows in index order). When it holds the cells
   *  already drawn (`setCells`), they only get their functions (nothing is drawn again);
   *  otherwise it is drawn as `setData`. A cell picked meanwhile is opened now. */
  setList(fns) {
    const n = fns.length, prov = new Uint8Array(n), conf = new Float32Array(n);
    let same = n === this.n && this.fns === null;
    for (let i = 0; i < n; i++) {
      const f = fns[i];
      const pi = f.name === null || f.name === undefined ? this.unnamed : V.order.indexOf(f.provenance);
      prov[i] = pi < 0 ? this.unnamed : pi;
      conf[i] = f.confidence || 0;
      if (same && (this.index[i] !== f.index || this.prov[i] !== prov[i] || this.conf[i] !== conf[i])) same = false;
    }
    const picked = this.picked >= 0 && this.picked < this.n ? this.index[this.picked] : null;
    this.picked = -1;
    if (same) this.fns = fns;
    else {
      const sel = this.sel >= 0 && this.sel < this.n ? this.index[this.sel] : null;
      this.setData(fns);
      if (sel !== null) this.select(sel);
    }
    if (this.hover >= 0 && this.tipEv) this.tooltip(this.hover, this.tipEv);  // its name now
    if (picked !== null && this.at.has(picked)) this.opts.onPick(this.fns[this.at.get(picked)]);
  }

  setData(fns) {
    const n = fns.length;
    this.fns = fns;
    this.n = n;
    this.index = new Uint32Array(n);
    this.prov = new Uint8Array(n);
    this.conf = new Float32Array(n);
    for (let i = 0; i < n; i++) {
      const f = fns[i];
      this.index[i] = f.index;
      const pi = f.name === null || f.name === undefined ? this.unnamed : V.order.indexOf(f.provenance);
      this.prov[i] = pi < 0 ? this.unnamed : pi;
      this.conf[i] = f.confidence || 0;
    }
    this.indexAll();
    this.hover = -1;
    this.sel = -1;
    this.picked = -1;
    this.reorder();
  }

  indexAll() {
    this.at = new Map();               // function index -> position in the cells
    for (let i = 0; i < this.n; i++) this.at.set(this.index[i], i);
  }

  /** Open cell `i` (`opts.onPick`); before the list has come, once it is here. */
  pick(i) {
    if (this.fns) this.opts.onPick(this.fns[i]);
    else this.picked = i;
  }

  /** Outline the function with index `index` (when drawn). */
  select(index) {
    if (this.n && this.at.has(index)) { this.sel = this.at.get(index); this.drawOverlay(); }
  }

  reorder() {
    const n = this.n, mode = this.el("order").value, u = this.unnamed;
    const order = new Uint32Array(n);
    for (let i = 0; i < n; i++) order[i] = i;
    if (mode === "prov") order.sort((a, b) => (this.prov[a] - this.prov[b]) || (this.conf[b] - this.conf[a]) || (a - b));
    else if (mode === "conf") order.sort((a, b) => ((this.prov[a] === u) - (this.prov[b] === u)) || (this.conf[b] - this.conf[a]) || (a - b));
    this.order = order;
    this.pos = new Uint32Array(n);
    for (let k = 0; k < n; k++) this.pos[order[k]] = k;
    this.layout();
  }

  layout() {
    const W = Math.max(200, this.el("wrap").clientWidth - 24);
    const n = this.n;
    show(this.el("empty"), n === 0);
    show(this.el("stage"), n > 0);
    if (n === 0) {
      setText(this.el("empty"), this.opts.emptyText());
      setText(this.el("info"), "0 cells");
      return;
    }
    const targetH = Math.max(220, window.innerHeight - 250);
    let cell = Math.floor(Math.sqrt((W * targetH) / n));
    cell = Math.max(3, Math.min(22, cell));
    let cols = Math.max(1, Math.floor(W / cell));
    while (Math.ceil(n / cols) * cell > 30000 && cell > 2) { cell -= 1; cols = Math.floor(W / cell); }
    this.cell = cell;
    this.gap = cell >= 6 ? 1 : 0;
    this.cols = cols;
    this.rows = Math.ceil(n / cols);
    this.dpr = Math.max(1, Math.round(window.devicePixelRatio || 1));
    for (const c of [this.el("canvas"), this.el("overlay")]) {
      c.width = cols * cell * this.dpr;
      c.height = this.rows * cell * this.dpr;
      c.style.width = cols * cell + "px";
      c.style.height = this.rows * cell + "px";
    }
    Object.assign(this.el("canvas").dataset, { cell: String(cell), cols: String(cols), cells: String(n) });
    setText(this.el("info"), fmtInt(n) + " defined functions · " + cols + "×" + this.rows + " grid · " + cell + " px cells");
    this.draw();
  }

  colorOf(i) {
    const p = this.prov[i];
    if (this.opts.hidden.has(V.order[p])) return this.hiddenColour;
    const l = p === this.unnamed ? 0 : Math.round(Math.min(1, Math.max(0, this.conf[i])) * (LEVELS - 1));
    return this.palette[p * LEVELS + l];
  }

  draw() {
    if (!this.n) return;
    const t0 = performance.now();
    const c = this.el("canvas"), ctx = c.getContext("2d");
    const W = c.width, H = c.height, d = this.dpr;
    const img = ctx.createImageData(W, H);
    const buf = new Uint32Array(img.data.buffer);
    buf.fill(this.bgColour);
    const cs = this.cell * d, inner = cs - this.gap * d, cols = this.cols, order = this.order;
    for (let k = 0; k < this.n; k++) {
      const color = this.colorOf(order[k]);
      const x0 = (k % cols) * cs, y0 = ((k / cols) | 0) * cs;
      for (let y = 0; y < inner; y++) {
        const off = (y0 + y) * W + x0;
        buf.fill(color, off, off + inner);
      }
    }
    ctx.putImageData(img, 0, 0);
    this.lastDrawMs = performance.now() - t0;
    this.drawOverlay();
  }

  rectOf(i) {
    const k = this.pos[i], cs = this.cell * this.dpr;
    return [(k % this.cols) * cs, ((k / this.cols) | 0) * cs, cs];
  }

  drawOverlay() {
    const c = this.el("overlay"), ctx = c.getContext("2d");
    ctx.clearRect(0, 0, c.width, c.height);
    const d = this.dpr;
    const mark = (i, color, w) => {
      if (i < 0 || i >= this.n) return;
      const [x, y, cs] = this.rectOf(i);
      ctx.lineWidth = w * d;
      ctx.strokeStyle = color;
      ctx.strokeRect(x - w * d / 2, y - w * d / 2, cs + w * d - this.gap * d, cs + w * d - this.gap * d);
    };
    this.el("canvas").dataset.sel = this.sel >= 0 && this.sel < this.n ? String(this.index[this.sel]) : "";
    mark(this.sel, "#ffffff", 2);
    if (this.hover !== this.sel) mark(this.hover, "rgba(255,255,255,.75)", 1);
  }

  cellAt(ev) {
    const r = this.el("canvas").getBoundingClientRect();
    const x = ev.clientX - r.left, y = ev.clientY - r.top;
    if (x < 0 || y < 0 || x >= r.width || y >= r.height) return -1;
    const col = Math.floor(x / this.cell), row = Math.floor(y / this.cell);
    if (col >= this.cols) return -1;
    const k = row * this.cols + col;
    return k < this.n ? this.order[k] : -1;
  }

  tooltip(i, ev) {
    const tip = this.el("tooltip");
    if (i < 0) { show(tip, false); return; }
    const f = this.fns ? this.fns[i] : null;
    if (!f) {  // the cells are drawn, the names are on their way
      const p = V.order[this.prov[i]], named = p !== UNNAMED;
      fill(tip,
        el("div", { class: "tn dim", text: "loading names…" }),
        el("div", { class: "row" }, el("span", { class: "mono", text: "#" + this.index[i] }), chip(named ? p : null),
          named ? el("span", { class: "mono", text: "conf " + fmtConf(this.conf[i]) }) : null));
    } else fill(tip,
      el("div", { class: f.name ? "tn" : "tn dim", text: f.name ?? "unnamed" }),
      el("div", { class: "row" }, el("span", { class: "mono", text: "#" + f.index }), chip(f.name ? f.provenance : null),
        f.name ? el("span", { class: "mono", text: "conf " + fmtConf(f.confidence) }) : null),
      el("div", { class: "row" }, el("span", { class: "mono", text: f.stable_id })),
      f.type ? el("div", { class: "row" }, el("span", { class: "mono", text: f.type })) : null);
    show(tip, true);
    const pad = 14, w = tip.offsetWidth, h = tip.offsetHeight;
    let x = ev.clientX + pad, y = ev.clientY + pad;
    if (x + w > window.innerWidth - 4) x = ev.clientX - w - pad;
    if (y + h > window.innerHeight - 4) y = ev.clientY - h - pad;
    tip.style.left = Math.max(4, x) + "px";
    tip.style.top = Math.max(4, y) + "px";
  }

  bind() {
    const canvas = this.el("canvas");
    canvas.addEventListener("mousemove", (ev) => {
      const i = this.cellAt(ev);
      this.tipEv = { clientX: ev.clientX, clientY: ev.clientY };
      if (i !== this.hover) { this.hover = i; this.drawOverlay(); }
      this.tooltip(i, ev);
    });
    canvas.addEventListener("mouseleave", () => { this.hover = -1; this.tipEv = null; this.drawOverlay(); this.tooltip(-1); });
    canvas.addEventListener("click", (ev) => {
      const i = this.cellAt(ev);
      if (i < 0) return;
      this.sel = i; this.drawOverlay();
      this.pick(i);
    });
    canvas.addEventListener("keydown", (ev) => {
      if (!this.n) return;
      const moves = { ArrowLeft: -1, ArrowRight: 1, ArrowUp: -this.cols, ArrowDown: this.cols };
      if (ev.key in moves) {
        ev.preventDefault();
        const k0 = this.sel < 0 ? 0 : this.pos[this.sel];
        const k = Math.min(this.n - 1, Math.max(0, (this.sel < 0 ? 0 : k0 + moves[ev.key])));
        this.sel = this.order[k]; this.drawOverlay();
        const [x, y] = this.rectOf(this.sel);
        const r = canvas.getBoundingClientRect();
        this.tooltip(this.sel, { clientX: r.left + x / this.dpr + this.cell, clientY: r.top + y / this.dpr + this.cell });
      } else if (ev.key === "Enter" && this.sel >= 0) {
        ev.preventDefault();
        this.tooltip(-1);
        this.pick(this.sel);
      }
    });
    canvas.addEventListener("blur", () => this.tooltip(-1));
    this.el("order").addEventListener("change", () => {
      if (this.n) { const s = this.sel; this.reorder(); this.sel = s; this.drawOverlay(); }
    });
    let resizeTimer = 0;
    new ResizeObserver(() => {
      clearTimeout(resizeTimer);
      resizeTimer = setTimeout(() => { if (this.n) this.layout(); }, 80);
    }).observe(this.el("wrap"));
  }
}
