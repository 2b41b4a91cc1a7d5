// The dashboard's shared state (one object, read and written by the page's modules).
export const S = {
  versions: [], byId: new Map(), vid: null, fns: null, cov: null, fn: null, hist: null,
  hidden: new Set(), diff: null, loadSeq: 0,
};
