"""The proposal verifier: reject names that are malformed, generic, taken or contradict facts.

Runs on every proposal of every backend before anything reaches the write gate. A rejection
carries a stable ``code`` (``malformed``, ``not_identifier``, ``generic``, ``taken``,
``bad_confidence``, ``inconsistent``) so a pass can count and report them.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from typing import Any

from .proposal import Proposal, Verdict
from .tokens import is_c_identifier, is_generic_name, split_tokens

_ALLOC = {"alloc", "malloc", "calloc", "realloc", "new", "create", "dup", "strdup", "clone"}
_PREDICATE_HEAD = {"is", "has", "can", "should"}
_OUTPUT = {"print", "printf", "log", "write", "send", "emit", "puts", "dump", "fprintf"}
_MUTATE = {"init", "reset", "set", "clear", "zero", "store", "fill", "memset", "memcpy", "copy"}


def verify(
    proposal: Proposal,
    ctx: Mapping[str, Any],
    taken: Collection[str] = (),
) -> Verdict:
    """Check ``proposal`` against its context and the names already used in the version.

    ``taken`` holds names of OTHER functions of the version (the function's own current name
    may be in it; it is ignored when it is ``ctx["existing"]["name"]``).
    """
    name = proposal.name
    if proposal.error or name is None:
        return Verdict.reject("malformed", proposal.error or "no name proposed")
    if not isinstance(name, str) or not is_c_identifier(name):
        return Verdict.reject("not_identifier", f"{name!r} is not a C identifier")
    if is_generic_name(name):
        return Verdict.reject("generic", f"{name!r} is a placeholder name")
    c = proposal.confidence
    if (
        isinstance(c, bool)
        or not isinstance(c, (int, float))
        or not math.isfinite(c)
        or not (0.0 <= c <= 1.0)
    ):
        return Verdict.reject("bad_confidence", f"confidence {c!r} outside 0.0..1.0")
    own = (ctx.get("existing") or {}).get("name")
    if name in taken and name != own:
        return Verdict.reject("taken", f"{name!r} already names another function")
    problem = inconsistency(name, ctx)
    if problem:
        return Verdict.reject("inconsistent", problem)
    return Verdict.accept()


def inconsistency(name: str, ctx: Mapping[str, Any]) -> str | None:
    """A reason why ``name`` contradicts the facts of ``ctx``, or None when it fits."""
    toks = split_tokens(name)
    if not toks:
        return None
    sig = ctx.get("type") or ""
    returns = _returns_value(sig)
    calls = bool(ctx.get("callees")) or int(ctx.get("call_indirect") or 0) > 0
    mem = ctx.get("mem_ops") or {}
    stores = int(mem.get("stores") or 0)
    body = set(ctx.get("mnemonics") or ())
    writes = stores > 0 or bool(body & {"memory.fill", "memory.copy", "global.set"})
    known_body = "mnemonics" in ctx or "mem_ops" in ctx
    if sig and set(toks) & _ALLOC and not calls and returns is False:
        return f"{name!r} claims allocation but calls nothing and returns nothing"
    if sig and toks[0] in _PREDICATE_HEAD and returns is False:
        return f"{name!r} reads as a predicate but returns nothing"
    if known_body and set(toks) & _OUTPUT and not calls and not writes:
        return f"{name!r} claims output but calls nothing and writes no memory"
    if known_body and toks[0] in _MUTATE and not calls and not writes and not ctx.get("globals"):
        return f"{name!r} claims to modify state but stores nothing and calls nothing"
    return None


def _returns_value(sig: str) -> bool | None:
    if "->" not in sig:
        return None
    res = sig.split("->", 1)[1].strip()
    return res not in ("()", "")
