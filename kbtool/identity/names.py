"""Minified-name tests for the matcher (pure, stdlib only): which export and import names a
minifier handed out and so identify nothing across builds."""

from __future__ import annotations

import re
from collections.abc import Iterable

from kbtool.textutil import LazyPattern

__all__ = ["is_minified_name", "module_is_minified"]

# Emscripten (and other minifiers) rename exports/imports to the shortest identifiers:
# "a", "b", ..., "Ab", "$a", "a$", "_a". Anything of length <= 2 is never a name that
# identifies a function across builds; a leading "$" plus one or two characters neither.
_MINIFIED_RE = re.compile(r"^\$?[A-Za-z_$][A-Za-z0-9_$]?$")
_SHORT3_RE = LazyPattern(r"^[A-Za-z_$][A-Za-z0-9_$]{2}$")


def is_minified_name(name: str | None, *, module_minified: bool = False) -> bool:
    """True when ``name`` looks like a minifier's output rather than a real symbol.

    ``module_minified``: the module's export names are mostly minified, so three-character
    identifiers (the next size a minifier hands out) are treated as minified too.
    """
    if not name:
        return True
    if len(name) <= 2 or _MINIFIED_RE.match(name):
        return True
    if module_minified and _SHORT3_RE.match(name):
        return True
    return False


def module_is_minified(export_names: Iterable[str]) -> bool:
    """Most function export names have <= 2 characters (an Emscripten -O2+ release build)."""
    names = [n for n in export_names if n]
    if len(names) < 8:
        return False
    short = sum(1 for n in names if len(n) <= 2 or _MINIFIED_RE.match(n))
    return short * 2 >= len(names)
