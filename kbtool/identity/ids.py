"""Stable ids for functions that carry no identity from an earlier version (pure)."""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Callable

from kbtool.wasm import ModuleAnalysis


def _digest(*parts: str) -> str:
    return hashlib.blake2b("|".join(parts).encode(), digest_size=8).hexdigest()


def assign_new_ids(
    analysis: ModuleAnalysis, unmatched: list[int], taken: Callable[[str], bool]
) -> dict[int, str]:
    """Deterministic ids for functions with no carried identity.

    Derived from the shape hash (imports: module.field and type), tie-broken among equal
    shapes by a digest of the callers' shapes and then position in index order; a salt is
    bumped past any id the KB already uses, so an id never names two logical functions.
    """
    funcs = analysis.functions
    callers: dict[int, list[str]] = defaultdict(list)
    for f in funcs:
        if f.calls:
            shape = f.shape_hash or ""
            for c in set(f.calls):
                callers[c].append(shape)
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
    for key, cd in sorted(groups):
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
