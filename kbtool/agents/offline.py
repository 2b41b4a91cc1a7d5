"""The offline proposer: specialist families first, then general heuristics. Deterministic,
no key, no network. Confidences are looked up per rule in the calibration table.

Heuristic rules (after the specialist ones in :mod:`.specialist`):

* ``bulk.memcpy`` / ``bulk.memset``: a short leaf whose work is one ``memory.copy`` or
  ``memory.fill`` with a ``(i32, i32, i32) -> i32`` signature;
* ``global.getter`` / ``global.setter``: body reads or writes one global whose name is known
  (``ctx["global_names"]``, index -> name, optional);
* ``strings.error_table``: a leaf ``(i32) -> i32`` selecting among many message strings;
* ``compose.free``: a function whose callees are all known release functions (``free``,
  ``*_free``, ``destroy_*``...) and that reads its argument's fields: ``free_<noun>`` with the
  noun taken from the released callees.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .calibration import rule_confidence
from .proposal import Proposal
from .specialist import Candidate, specialist_candidates
from .tokens import split_tokens

MIN_CONFIDENCE = 0.15
_FREE = re.compile(
    r"(?:^|_)(?:free|destroy|release|delete|dispose)(?:_|$)|Free|Destroy|Release", re.IGNORECASE
)


def bulk_memory(ctx: Mapping[str, Any]) -> Candidate | None:
    body = ctx.get("mnemonics") or []
    if ctx.get("callees") or ctx.get("type") != "(i32, i32, i32) -> i32" or len(body) > 16:
        return None
    if "memory.copy" in body:
        return Candidate("bulk.memcpy", "memcpy", ["leaf around memory.copy"], "copies n bytes")
    if "memory.fill" in body:
        return Candidate("bulk.memset", "memset", ["leaf around memory.fill"], "fills n bytes")
    return None


def global_accessor(ctx: Mapping[str, Any]) -> Candidate | None:
    names = ctx.get("global_names") or {}
    body = [m for m in (ctx.get("mnemonics") or []) if m != "end"]
    gl = ctx.get("globals") or []
    if len(gl) != 1 or not body or ctx.get("callees"):
        return None
    g = names.get(gl[0]) or names.get(str(gl[0]))
    if not g:
        return None
    g = g.strip("_")
    if body == ["global.get"]:
        return Candidate("global.getter", f"get_{g}", [f"returns global {g}"], f"reads {g}")
    if body == ["local.get", "global.set"]:
        return Candidate(
            "global.setter", f"set_{g}", [f"stores its argument in {g}"], f"writes {g}"
        )
    return None


def error_table(ctx: Mapping[str, Any]) -> Candidate | None:
    strings = ctx.get("strings") or []
    if ctx.get("callees") or ctx.get("type") != "(i32) -> i32" or len(strings) < 5:
        return None
    msgs = [s for s in strings if " " in s.strip() or s[:1].isupper()]
    if len(msgs) * 2 < len(strings):
        return None
    return Candidate(
        "strings.error_table",
        "get_error_string",
        [f"selects among {len(strings)} message strings"],
        "maps a code to its message",
    )


def compose_free(ctx: Mapping[str, Any]) -> Candidate | None:
    callees = ctx.get("callees") or ()
    named = [c["name"] for c in callees if c.get("name")]
    mem = ctx.get("mem_ops") or {}
    if not named or len(named) < len(callees) or not all(_FREE.search(n) for n in named):
        return None
    if not int(mem.get("loads") or 0):
        return None
    nouns: dict[str, None] = {}
    for n in named:
        for t in split_tokens(n):
            if (
                t not in {"free", "destroy", "release", "delete", "dispose", "custom"}
                and len(t) > 1
            ):
                nouns.setdefault(t, None)
    if not nouns:
        return None
    noun = "_".join(list(nouns)[:2])
    return Candidate(
        "compose.free",
        f"free_{noun}",
        [f"releases through {', '.join(named[:3])}"],
        "releases an object",
    )


HEURISTICS = (bulk_memory, global_accessor, error_table, compose_free)


def offline_candidates(ctx: Mapping[str, Any]) -> list[tuple[str, Candidate]]:
    """(source, candidate) pairs: specialist families first, then heuristics."""
    out: list[tuple[str, Candidate]] = [("specialist", c) for c in specialist_candidates(ctx)]
    for h in HEURISTICS:
        c = h(ctx)
        if c:
            out.append(("heuristic", c))
    return out


def propose_offline(
    ctx: Mapping[str, Any],
    taken: set[str] | frozenset[str] = frozenset(),
    *,
    table: dict[str, Any] | None = None,
    min_confidence: float = MIN_CONFIDENCE,
    backend: str = "offline",
) -> Proposal | None:
    """Best calibrated candidate for ``ctx`` not already taken, or None.

    Candidates are ranked by calibrated confidence (ties keep family order), so the result is
    deterministic for a given context and table.
    """
    best: tuple[float, int, str, Candidate] | None = None
    for order, (source, cand) in enumerate(offline_candidates(ctx)):
        if cand.name in taken:
            continue
        conf = rule_confidence(cand.rule, table)
        if conf < min_confidence:
            continue
        if best is None or conf > best[0]:
            best = (conf, order, source, cand)
    if best is None:
        return None
    conf, _, source, cand = best
    return Proposal(
        index=int(ctx["index"]),
        stable_id=ctx.get("stable_id"),
        name=cand.name,
        confidence=conf,
        summary=cand.summary,
        reasons=list(cand.reasons),
        backend=backend,
        model=None,
        source=source,
        rule=cand.rule,
    )
