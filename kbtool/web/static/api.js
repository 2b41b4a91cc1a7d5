// The JSON API client: same-origin GETs, `{"error": ...}` bodies turned into Error messages,
// and a one-line status in the footer (`#status`, when the page has one).
import { $, setText } from "./dom.js";

/** Show `msg` in the status line (red when `bad`). */
export function status(msg, bad) {
  const s = $("status");
  if (!s) return;
  setText(s, msg);
  s.classList.toggle("err", !!bad);
}

/** The request options of every API call (what `api` and `studio-early.js` send). */
export const FETCH_OPTIONS = { headers: { accept: "application/json" }, credentials: "same-origin" };

/** The response of `path` the dashboard asked for as it started (early.js), once;
 *  undefined when there is none. */
function takeEarly(path) {
  const early = window.__dashEarly;
  const got = early ? early.get(path) : undefined;
  if (got) early.delete(path);
  return got;
}

/** GET `path` as JSON; throws an Error (with `.status`) carrying the API's error message.
 *  `pending`: the `fetch` of `path` already made (studio-early.js: a response whose body is
 *  read already), used instead of a new one. */
export async function api(path, signal, pending) {
  const t0 = performance.now();
  pending = pending || takeEarly(path);
  let r;
  try {
    r = await (pending || fetch(path, { signal, ...FETCH_OPTIONS }));
  } catch (e) {
    if (e.name === "AbortError") throw e;
    status("network error: " + e.message, true);
    throw e;
  }
  let body = null;
  try { body = await r.json(); } catch (_) { body = null; }
  const ms = Math.round(performance.now() - t0);
  if (!r.ok) {
    const err = new Error((body && typeof body.error === "string") ? body.error : ("HTTP " + r.status));
    err.status = r.status;
    if (r.status !== 404) status("GET " + path + " → " + r.status + ": " + err.message, true);
    throw err;
  }
  status("GET " + path + " · " + r.status + " · " + ms + " ms");
  return body;
}
