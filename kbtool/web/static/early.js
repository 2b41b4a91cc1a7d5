// The responses the dashboard asked for as it started (dashboard-early.js, a classic script
// first in the page's head: it runs before any module; api.js takes them by path).

/** The responses asked for early, by path (api.js takes each once), or null once dropped. */
export const early = () => window.__dashEarly || null;
