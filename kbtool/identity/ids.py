"""Stable ids for functions that carry no identity from an earlier version (pure)."""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Callable, Sequence

from kbtool.wasm import ModuleAnalysis


def _digest(*parts: str) -> str:
    return hashlib.blake2b("|".join(parts).encode(), digest_size=8).hexdigest()


def _callers(
    funcs: list, distinct_calls: Sequence[Sequence[int]] | None
) -> defaultdict[int, list[str]]:
    """Each callee's callers' shapes (one per calling function, in no particular order:
    the caller sorts them). ``distinct_calls``: the decoder's distinct callees per defined
    function (:attr:`kbtool.wasm.facts.ModuleAnalysis.side`'s third list, in any order), or
    None (then ``set(f.calls)``); ignored unless it fits ``funcs`` (every function in index
    order, the imports first)."""
    callers: defaultdict[int, list[str]] = defaultdict(list)
    n = len(funcs)
    nimp = n - len(distinct_calls) if distinct_calls is not None else -1
    if (
        distinct_calls is None
        or nimp < 0
        or (n and funcs[-1].index != n - 1)
        or any(f.calls for f in funcs[:nimp])
    ):
        for f in funcs:
            if f.calls:
                shape = f.shape_hash or ""
                for c in set(f.calls):
                    callers[c].append(shape)
        return callers
    for f, cs in zip(funcs[nimp:], distinct_calls, strict=True):
        if cs:
            shape = f.shape_hash or ""
            for c in cs:
                callers[c].append(shape)
    return callers


def assign_new_ids(
    analysis: ModuleAnalysis,
    unmatched: list[int],
    taken: Callable[[str], bool],
    distinct_calls: Sequence[Sequence[int]] | None = None,
) -> dict[int, str]:
    """Deterministic ids for functions with no carried identity.

    Derived from the shape hash (imports: module.field and type), tie-broken among equal
    shapes by a digest of the callers' shapes and then position in index order; a salt is
    bumped past any id the KB already uses, so an id never names two logical functions.
    ``distinct_calls``: each defined function's distinct callees (:func:`_callers`), or None.
    """
    funcs = analysis.functions
    callers = _callers(funcs, distinct_calls)
    blake = hashlib.blake2b
    no_callers = _digest()
    groups: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i in unmatched:
        f = funcs[i]
        key = (
            f"import:{f.import_module}.{f.import_field}:{f.type_sig}"
            if f.imported
            else f"shape:{f.shape_hash}"
        )
        shapes = callers.get(i)
        # (= _digest(*sorted(shapes)), the call inlined: one per function)
        cd = (
            blake("|".join(sorted(shapes)).encode(), digest_size=8).hexdigest()
            if shapes
            else no_callers
        )
        groups[(key, cd)].append(i)
    out: dict[int, str] = {}
    used: set[str] = set()
    for key, cd in sorted(groups):  # (not .items(): a key tuple first is a slower sort)
        prefix = f"{key}|{cd}|"  # (= _digest(key, cd, str(pos), str(salt)))
        for pos, i in enumerate(sorted(groups[(key, cd)])):
            salt = 0
            while True:
                sid = blake(f"{prefix}{pos}|{salt}".encode(), digest_size=8).hexdigest()
                if sid not in used and not taken(sid):
                    break
                salt += 1
            used.add(sid)
            out[i] = sid
    return out
