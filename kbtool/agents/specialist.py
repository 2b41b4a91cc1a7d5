"""The specialist proposer: known function families, tried before any general proposer.

Families (rule ids in brackets; confidences come from :mod:`.calibration`, never from here):

* string-tagged functions: a string that is exactly a code symbol (``__func__`` of an assert
  or log call) [``string_tag.exact``], or a message prefixed by one, such as
  ``"foo_bar: invalid argument"`` or ``"fooBar(): failed"`` [``string_tag.prefix``];
* import-call wrappers forwarding to one import: WASI libc wraps ``wasi_*.<f>`` as
  ``__wasi_<f>`` [``import_wrapper.wasi``]; other hosts [``import_wrapper.other``];
* thin wrappers and thunks of a named callee: ``foo`` calling ``foo_internal`` or
  ``foo_generic`` [``thunk.strip_suffix``]; and the callee of a thin named caller, which is
  named after it [``thunk.caller_internal``].
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .tokens import is_c_identifier, looks_like_symbol

THIN_MAX_INSTR = 24
IMPL_SUFFIXES = ("_internal", "_generic", "_impl", "_body", "_inner", "_real", "_worker", "_core")
_PREFIX_TAG = re.compile(r"\s*\[?([A-Za-z_][A-Za-z0-9_]*)\]?\s*(?:\(\s*\))?\s*:\s+\S")
_CALL_TAG = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\(\)\s+\S")


@dataclass(slots=True)
class Candidate:
    """A name a rule derived from a context, before calibration gives it a confidence."""

    rule: str
    name: str
    reasons: list[str] = field(default_factory=list)
    summary: str = ""


def known_names(ctx: Mapping[str, Any]) -> set[str]:
    """Names of the callees (and import fields) of ``ctx``: a string naming one of them
    names the callee, not this function."""
    out: set[str] = set()
    for c in ctx.get("callees") or ():
        if c.get("name"):
            out.add(c["name"])
        if c.get("import"):
            out.add(str(c["import"]).rsplit(".", 1)[-1])
    return out


def is_thin(ctx: Mapping[str, Any]) -> bool:
    """Short, one distinct direct callee, no loop, no string, no store, no indirect call."""
    mem = ctx.get("mem_ops") or {}
    return (
        int(ctx.get("instr_count") or 0) <= THIN_MAX_INSTR
        and len(ctx.get("callees") or ()) == 1
        and not int(ctx.get("call_indirect") or 0)
        and not int(ctx.get("loops") or 0)
        and not ctx.get("strings")
        and not int(mem.get("stores") or 0)
    )


def string_tags(ctx: Mapping[str, Any]) -> list[Candidate]:
    """Symbols that strings of ``ctx`` name, specific strings first."""
    callees = known_names(ctx)
    sharing = ctx.get("string_sharing") or {}
    exact: list[Candidate] = []
    prefix: list[Candidate] = []
    for s in ctx.get("strings") or ():
        if not isinstance(s, str):
            continue
        shared = int(sharing.get(s, 1))
        word = s.strip()
        if word.endswith("()"):
            word = word[:-2]
        if looks_like_symbol(word) and word not in callees and shared <= 1:
            exact.append(Candidate("string_tag.exact", word, [f"string {s!r} names a symbol"]))
            continue
        m = _PREFIX_TAG.match(s) or _CALL_TAG.match(s)
        if m and looks_like_symbol(m.group(1)) and m.group(1) not in callees:
            prefix.append(
                Candidate("string_tag.prefix", m.group(1), [f"message {s[:80]!r} is tagged"])
            )
    return _dedupe(exact) + _dedupe(prefix)


def import_wrapper(ctx: Mapping[str, Any]) -> Candidate | None:
    """A thin function whose one callee is an import."""
    if not is_thin(ctx):
        return None
    (callee,) = ctx["callees"]
    imp = callee.get("import")
    if not imp or "." not in str(imp):
        return None
    module, fieldname = str(imp).rsplit(".", 1)
    if not is_c_identifier(fieldname):
        return None
    why = [f"forwards to import {imp}"]
    if module.startswith("wasi"):
        return Candidate(
            "import_wrapper.wasi", f"__wasi_{fieldname}", why, f"WASI libc wrapper of {imp}"
        )
    return Candidate(
        "import_wrapper.other",
        f"{fieldname.lstrip('_')}_wrapper",
        why,
        f"wrapper of host import {imp}",
    )


def thunks(ctx: Mapping[str, Any]) -> list[Candidate]:
    """Names from a thin function's named callee, or from a thin named caller."""
    out: list[Candidate] = []
    if is_thin(ctx):
        (callee,) = ctx["callees"]
        cname = callee.get("name")
        if cname and not callee.get("import"):
            for suf in IMPL_SUFFIXES:
                if cname.endswith(suf) and len(cname) > len(suf) + 2:
                    out.append(
                        Candidate(
                            "thunk.strip_suffix",
                            cname[: -len(suf)],
                            [f"thin wrapper of {cname}"],
                            f"entry point of {cname}",
                        )
                    )
                    break
    for caller in ctx.get("callers") or ():
        cn = caller.get("name")
        thin = int(caller.get("instr_count") or 10**9) <= THIN_MAX_INSTR
        if cn and thin and int(caller.get("calls") or 0) == 1 and not cn.endswith(IMPL_SUFFIXES):
            out.append(
                Candidate(
                    "thunk.caller_internal",
                    f"{cn}_internal",
                    [f"the one callee of thin wrapper {cn}"],
                    f"implementation behind {cn}",
                )
            )
            break
    return out


def specialist_candidates(ctx: Mapping[str, Any]) -> list[Candidate]:
    """All specialist candidates for ``ctx``, most specific family first."""
    out = string_tags(ctx)
    w = import_wrapper(ctx)
    if w:
        out.append(w)
    out.extend(thunks(ctx))
    return out


def _dedupe(cands: list[Candidate]) -> list[Candidate]:
    seen: dict[str, Candidate] = {}
    for c in cands:
        seen.setdefault(c.name, c)
    return list(seen.values())
