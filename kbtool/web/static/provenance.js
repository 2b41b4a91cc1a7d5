// The provenance vocabulary of the server (/api/provenance, from kbtool.kb.provenance):
// order, labels and colours. Nothing in the page spells a provenance colour itself.
import { api } from "./api.js";
import { el, fmtConf } from "./dom.js";

export const UNNAMED = "unnamed";

/** Filled by `loadVocabulary()`: order (highest authority first, unnamed last), labels, colours. */
export const V = { order: [], labels: {}, colours: {}, classification: {} };

export async function loadVocabulary() {
  const v = await api("/api/provenance");
  V.order = v.order;
  V.labels = v.labels;
  V.colours = v.colours;
  V.classification = v.classification_colours;
  return V;
}

/** A known provenance, or "unnamed". */
export const provOf = (p) => (p && Object.hasOwn(V.colours, p) && p !== UNNAMED) ? p : UNNAMED;
export const tint = (p) => V.colours[provOf(p)];
export const label = (p) => V.labels[provOf(p)] ?? provOf(p);

/** A coloured provenance chip (class p-<provenance> from /static/provenance.css). */
export const chip = (p) => el("span", { class: "chip p-" + provOf(p), text: p ? (V.labels[p] ?? p) : label(UNNAMED) });

/** A small bar whose length is the confidence, in the provenance's tint. */
export const confbar = (c, p) => el("span", { class: "confbar", title: fmtConf(c) },
  el("i", { style: { width: Math.round((c || 0) * 100) + "%", background: tint(p) } }));
