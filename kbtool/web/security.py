"""Security of the web surface (pure): the Host-header check and the response headers.

* DNS rebinding: a page on ``evil.example`` whose name later resolves to 127.0.0.1 can make
  the victim's browser talk to the dashboard, but the browser still sends
  ``Host: evil.example``. Only the names and addresses of the bound host (plus loopback
  names when bound to loopback or to every interface) and those named with
  ``--allow-host`` are answered; anything else gets 403.
* Cross-origin requests: any page the user visits can make the browser send GETs to
  127.0.0.1:8787 (``<img src>``, ``fetch(..., {mode: "no-cors"})``); the browser hides the
  answer but the server would still do the work (a diff costs seconds and memory). Requests
  whose ``Sec-Fetch-Site`` is ``cross-site`` or ``same-site`` (another port of the same host is
  same-site but another origin), and requests with an ``Origin`` that is not the dashboard's
  own, are refused before any work (:func:`cross_origin_refusal`).
* Content-Security-Policy: the page has no inline script or style at all; scripts and styles
  come from ``'self'`` only (``/static/``), and Trusted Types make every HTML sink
  (``innerHTML``...) refuse strings. JSON answers get ``default-src 'none'``.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
WILDCARD = ("0.0.0.0", "::", "")


def is_loopback(host: str) -> bool:
    """True for loopback names and addresses (``localhost``, 127.0.0.0/8, ``::1``)."""
    h = host.strip("[]").lower()
    if h == "localhost" or h.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(h).is_loopback
    except ValueError:
        return False


def _ip(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


def host_name(header: str) -> str:
    """The host part of a Host header value, lower case, without port or IPv6 brackets."""
    h = header.strip().lower()
    if h.startswith("["):
        end = h.find("]")
        return h[1:end] if end > 0 else h
    if h.count(":") == 1:
        h = h.split(":", 1)[0]
    return h.rstrip(".")


class HostCheck:
    """Which Host headers to answer for a server bound to ``bound_host``."""

    def __init__(self, bound_host: str = "127.0.0.1", allow_hosts: Iterable[str] = ()) -> None:
        self.bound_host = bound_host
        names: set[str] = {host_name(h) for h in allow_hosts if h and h.strip()}
        bound = host_name(bound_host) if bound_host not in WILDCARD else ""
        if bound:
            names.add(bound)
        if not bound or is_loopback(bound):
            names.update(LOOPBACK_NAMES)
        self.wildcard = not bound
        self.allowed = frozenset(names)

    def __call__(self, host_header: str | None) -> bool:
        if not host_header:
            return False
        name = host_name(host_header)
        if name in self.allowed:
            return True
        if self.wildcard and _ip(name) is not None:
            # bound to every interface: an address literal cannot be a rebinding attack
            return True
        return is_loopback(name) and any(is_loopback(a) for a in self.allowed)


PAGE_CSP = "; ".join(
    (
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "connect-src 'self'",
        "img-src 'self' data:",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
        # no DOM XSS sink (innerHTML, document.write, ...) accepts a plain string at all
        "require-trusted-types-for 'script'",
        "trusted-types 'none'",
    )
)

#: Sec-Fetch-Site values a browser sends for the dashboard's own requests (``none``: the
#: user typed the address or followed a bookmark)
ALLOWED_FETCH_SITES = frozenset({"same-origin", "none"})


def _origin_key(origin: str) -> tuple[str, str, int] | None:
    """(scheme, host, port) of an origin or of ``scheme://host-header``; None when malformed."""
    scheme, sep, rest = origin.strip().lower().partition("://")
    if not sep or scheme not in ("http", "https") or not rest or "/" in rest:
        return None
    default = 443 if scheme == "https" else 80
    if rest.startswith("["):
        end = rest.find("]")
        if end < 0:
            return None
        host, tail = rest[1:end], rest[end + 1 :]
    else:
        host, _, port_text = rest.partition(":")
        tail = ":" + port_text if port_text else ""
    if tail and not (tail.startswith(":") and tail[1:].isdigit()):
        return None
    return scheme, host.rstrip("."), int(tail[1:]) if tail else default


def cross_origin_refusal(
    headers: Mapping[str, str], scheme: str, host_header: str | None, path: str = ""
) -> str | None:
    """Why a request must be refused as cross-origin, or None when it may be answered.

    ``headers`` are the request's (lower-case names); the dashboard's own origin is
    ``scheme://Host``. Clients that send neither header (curl, scripts) are answered. A
    top-level navigation to the page itself (a link from elsewhere) is answered: it costs
    nothing, and the page's own requests are then same-origin.
    """
    site = (headers.get("sec-fetch-site") or "").strip().lower()
    navigation = (
        path == "/"
        and headers.get("sec-fetch-mode") == "navigate"
        and headers.get("sec-fetch-dest") == "document"
    )
    if site and site not in ALLOWED_FETCH_SITES and not navigation:
        return (
            f"cross-origin request refused (Sec-Fetch-Site: {site[:20]}): open the dashboard itself"
        )
    origin = headers.get("origin")
    if origin is not None:
        own = _origin_key(f"{scheme}://{host_header or ''}")
        if own is None or _origin_key(origin) != own:
            return "cross-origin request refused (Origin is not this dashboard): open the dashboard itself"
    return None


API_CSP = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

COMMON_HEADERS = {
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
    "cross-origin-opener-policy": "same-origin",
    "cross-origin-resource-policy": "same-origin",
    "cache-control": "no-store",
}
