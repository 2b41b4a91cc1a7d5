// The studio opened on a function (`/studio#v=V&f=N`): its first window of disassembly asked
// for as the page starts, before the studio's modules are loaded (studio.js takes this
// request: `earlyWindow`; the same URL as its own, else it is not used). A classic script
// with no imports, first in the page's head, so that it runs as soon as it is here.
(function () {
  if (window.__studioEarly !== undefined) return;  // studio.js ran first: it asked itself
  const hash = new URLSearchParams(location.hash.slice(1));
  const vid = Number(hash.get("v")), index = Number(hash.get("f"));
  if (!hash.has("v") || !hash.has("f") || !Number.isInteger(vid) || !Number.isInteger(index) ||
      vid <= 0 || index < 0) return;
  const path = "/api/disasm/" + encodeURIComponent(vid) + "/" + encodeURIComponent(index) +
    "?kind=wasm&offset=0&limit=300";  // code.js WINDOW
  // its body read as soon as it comes (not when the modules have loaded): what studio.js's
  // `api` reads of a response (ok, status, json())
  const got = fetch(path, { headers: { accept: "application/json" }, credentials: "same-origin" })
    .then((r) => r.text().then((text) => ({ ok: r.ok, status: r.status, json: async () => JSON.parse(text) })));
  got.catch(() => {});  // studio.js reads it (and reports its error), or asks again
  window.__studioEarly = { path, got };
})();
