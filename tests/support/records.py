"""Hand-made :class:`FuncRecord` s for the matcher tests: instruction streams, defined and
imported functions with hashes nobody else has unless a test gives them, and the readings
of a match list (old -> new pairs, matches by new index)."""

from __future__ import annotations

import itertools
import random
from array import array

from kbtool.identity.matcher import FuncRecord, Match

_UNIQUE = itertools.count()


def ops(*ids: int) -> bytes:
    return array("H", ids).tobytes()


def body(seed: int, n: int = 40) -> list[int]:
    """A deterministic pseudo-random instruction stream (op ids < 200)."""
    rng = random.Random(seed)
    return [rng.randrange(200) for _ in range(n)]


def rec(index: int, **kw) -> FuncRecord:
    code = kw.pop("code", None)
    if code is not None:
        kw.setdefault("ops", ops(*code))
        kw.setdefault("instr_count", len(code))
        kw.setdefault("body_size", 2 * len(code))
    kw.setdefault("type_sig", "(i32) -> i32")
    uniq = next(_UNIQUE)  # hashes nobody else has unless a test says otherwise
    kw.setdefault("body_hash", f"body-{uniq}")
    kw.setdefault("shape_hash", f"shape-{uniq}")
    return FuncRecord(index=index, **kw)


def imp(index: int, name: str, sig: str = "(i32) -> i32") -> FuncRecord:
    return FuncRecord(index=index, imported=True, import_name=name, type_sig=sig)


def pairs(matches: list[Match]) -> dict[int, int]:
    return {m.old_index: m.new_index for m in matches}


def by_new(matches: list[Match]) -> dict[int, Match]:
    return {m.new_index: m for m in matches}
