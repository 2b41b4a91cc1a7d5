"""Security of the web surface (pure): the Host-header check and the response headers.

* DNS rebinding: a page on ``evil.example`` whose name later resolves to 127.0.0.1 can make
  the victim's browser talk to the dashboard, but the browser still sends
  ``Host: evil.example``. Only the names and addresses of the bound host (plus loopback
  names when bound to loopback or to every interface) and those named with
  ``--allow-host`` are answered; anything else gets 403.
* Content-Security-Policy: the page's inline ``<script>`` and ``<style>`` are allowed by
  their SHA-256 hashes, computed once from the page bytes, so no ``'unsafe-inline'`` is
  needed and an injected script could never run. JSON answers get ``default-src 'none'``.
"""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import re
from collections.abc import Iterable

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
WILDCARD = ("0.0.0.0", "::", "")

_BLOCK = re.compile(rb"<(script|style)(?:\s[^>]*)?>(.*?)</\1\s*>", re.S | re.I)


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


def inline_hashes(page: bytes) -> tuple[list[str], list[str]]:
    """CSP source expressions (``'sha256-...'``) of the page's inline scripts and styles."""
    scripts: list[str] = []
    styles: list[str] = []
    for m in _BLOCK.finditer(page):
        digest = base64.b64encode(hashlib.sha256(m.group(2)).digest()).decode("ascii")
        (scripts if m.group(1).lower() == b"script" else styles).append(f"'sha256-{digest}'")
    return scripts, styles


def page_csp(page: bytes) -> str:
    scripts, styles = inline_hashes(page)
    return "; ".join((
        "default-src 'none'",
        "script-src " + (" ".join(scripts) or "'none'"),
        "style-src " + (" ".join(styles) or "'none'"),
        "connect-src 'self'",
        "img-src 'self' data:",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
        # no DOM XSS sink (innerHTML, document.write, ...) accepts a plain string at all
        "require-trusted-types-for 'script'",
        "trusted-types 'none'",
    ))


API_CSP = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

COMMON_HEADERS = {
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
    "cross-origin-opener-policy": "same-origin",
    "cross-origin-resource-policy": "same-origin",
    "cache-control": "no-store",
}
