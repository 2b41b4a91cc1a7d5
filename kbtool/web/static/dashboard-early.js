// The dashboard's first requests, asked for as the page starts, before its modules are loaded:
// the provenance vocabulary, the versions, the heatmap cells and coverage of the version in
// the address (else the newest), then that version's whole function list; with `fn=` in the
// address, that function's history, then its first window of disassembly and its analysis.
// main.js and the panel take these responses through `api` (api.js: the same path, once;
// anything else is asked for as before). A classic script with no imports, first in the
// page's head (before the stylesheets, which would hold it back): it runs as soon as it is
// here, before the page's 15 modules have all loaded (a module, as it was, ran only then:
// 20-170 ms later in traces at load 1.4-8), so a deep link's history, and the server's
// preparation of its version that the history starts, begin that much sooner (issue 30).
(function () {
  if (window.__dashEarly !== undefined) return;  // asked already
  const got = new Map();
  window.__dashEarly = got;
  // no `accept` header: the request the page's `preload` links made (dashboard.html) is
  // taken only by one asked for the same way (those three are asked for as the HTML comes)
  const opts = { credentials: "same-origin" };
  // a body read as soon as it comes: what api.js reads of a response (ok, status, json())
  const load = (path) => {
    const p = fetch(path, opts).then((r) => r.text().then((text) => {
      let value;  // parsed once, here or by api()
      const parsed = () => (value === undefined ? (value = JSON.parse(text)) : value);
      return { ok: r.ok, status: r.status, json: async () => parsed(), parsed };
    }));
    p.catch(() => {});  // api() reports its error, or asks again
    return p;
  };
  const ask = (path) => {
    const p = load(path);
    got.set(path, p);
    return p;
  };
  const hash = new URLSearchParams(location.hash.slice(1));
  const want = Number(hash.get("v"));
  const given = hash.has("v") && Number.isInteger(want) && want > 0;
  const fn = hash.get("fn");
  ask("/api/provenance");
  const versions = ask("/api/versions");
  // the version's cells (with its coverage), then its whole list; with `fn=`, its history,
  // then the function's first window of disassembly and its analysis
  const list = (cells) => cells.then((r) => {
    const c = r.ok ? r.parsed() : null;
    if (c && Number.isInteger(c.version_id)) ask("/api/versions/" + c.version_id + "/functions");
    return r;
  });
  const fnFirst = (vid) => {
    ask("/api/history/" + encodeURIComponent(fn) + "?version=" + vid).then((r) => {
      const f = r.ok ? (r.parsed().function || null) : null;
      if (f && Number.isInteger(f.version_id) && Number.isInteger(f.index)) {  // code.js WINDOW
        ask("/api/disasm/" + f.version_id + "/" + f.index + "?kind=wasm&offset=0&limit=300");
      }
      ask("/api/analysis/" + encodeURIComponent(fn));
    }, () => {});
  };
  if (given) {
    load("/api/versions/latest/functions?form=cells");  // the page's preload, taken (unused)
    list(ask("/api/versions/" + want + "/functions?form=cells"));
    if (fn) fnFirst(want);
    return;
  }
  // the newest version's cells before the versions are known (`latest`), taken as that
  // version's (main.js asks for `/api/versions/N/...`) once the versions say it is N
  const latest = list(load("/api/versions/latest/functions?form=cells"));
  versions.then((r) => {
    const vs = r.ok ? r.parsed() : [];
    if (!Array.isArray(vs) || !vs.length) return;
    const vid = vs[vs.length - 1].id;
    const path = "/api/versions/" + vid + "/functions?form=cells";
    got.set(path, latest.then((c) => (c.ok && c.parsed().version_id === vid) ? c : load(path),
      () => load(path)));
    if (fn) fnFirst(vid);
  }, () => {});
})();
