"""The data model's reference count, part of the data walk's compiled twin
(``kbtool.analysis._cdatawalk.refcount``, mypyc): each data reference's item counted, and
each global's readers and writers, in one typed pass (re-exported by the package)."""

from __future__ import annotations

from typing import Any, Final

try:  # mypyc: native 64-bit ints in the hot loop (no tag checks, no boxing)
    from mypy_extensions import i64
except ImportError:  # the pure path without it (not a dependency): plain ints
    i64 = int  # type: ignore[misc,assignment]

try:  # mypyc's runtime library (installed with mypy): vec[i64] compiles to a native array
    from librt.vecs import vec
except ImportError:  # the pure path without it: plain lists of ints
    from kbtool.wasm.opbuf import vec  # type: ignore[assignment]

from .itemtype import DataItem


def count_refs(
    refs: list[Any],
    starts: list[int],
    text_lo: list[int],
    text_hi: list[int],
    counts: list[int],
    readers: dict[int, set[int]],
    writers: dict[int, set[int]],
) -> list[Any]:
    """:func:`kbtool.analysis.datamodel._count_refs` on plain lists: ``starts`` the items'
    addresses (sorted), ``(text_lo, text_hi)`` a string literal item's bounds (``(0, 0)``
    for other items), ``counts`` each item's references (added to here)."""
    out: list[Any] = []
    n = len(starts)
    # a target's item position, bisected once per distinct target (ffmpeg: 375k data
    # references, 74k targets): ``bisect_right(starts, t) - 1``, -1 below every item
    memo: dict[Any, int] = {}
    for r0 in refs:  # (func_index, offset, kind, target_kind, target, width) tuples
        r: tuple[Any, ...] = r0  # (typed: its fields are read as a tuple's, not generically)
        tk: str = r[3]
        if tk == "data":
            t: int = r[4]
            k = memo.get(r[4], -2)
            if k == -2:
                a = 0
                b = n
                while a < b:  # bisect_right(starts, t)
                    mid = (a + b) >> 1
                    if t < starts[mid]:
                        b = mid
                    else:
                        a = mid + 1
                k = a - 1
                memo[r[4]] = k
            if k >= 0:
                if text_lo[k] < t < text_hi[k]:
                    kind: str = r[2]
                    if kind == "load" or kind == "store":
                        continue
                counts[k] += 1
        elif tk == "global":
            g: int = r[4]
            d = readers if r[2] == "read" else writers
            s = d.get(g)
            if s is None:
                s = set()
                d[g] = s
            s.add(r[0])
        out.append(r)
    return out


def count_item_refs(
    refs: list[Any],
    items: list[DataItem],
    starts: list[int],
    readers: dict[int, set[int]],
    writers: dict[int, set[int]],
) -> list[Any]:
    """:func:`kbtool.analysis.datamodel._count_refs` whole: each string literal item's
    bounds read off ``items`` (``starts``: their addresses), :func:`count_refs`, and each
    item's count added to its ``refs``, in one compiled pass (ffmpeg's 65k items: no
    interpreted loops around the count). Addresses that fit native ints (every module's
    but a crafted one's: checked) are counted by :func:`_count_refs_native`."""
    text_lo: list[int] = []
    text_hi: list[int] = []
    native = True
    for it in items:
        kind: str = it.kind
        if kind == "cstring" or kind == "utf16" or kind == "gostring":
            a: int = it.address
            size: int = it.size
            text_lo.append(a)
            text_hi.append(a + size)
            if not (_NATIVE_LO <= a and a + size <= _NATIVE_MAX):
                native = False
        else:
            text_lo.append(0)
            text_hi.append(0)
    for s in starts:
        if not _NATIVE_LO <= s <= _NATIVE_MAX:
            native = False
            break
    n = len(items)
    if native:
        counts_v = vec[i64]([0] * n)
        out = _count_refs_native(
            refs,
            starts,
            _as_vec(starts),
            _as_vec(text_lo),
            _as_vec(text_hi),
            counts_v,
            readers,
            writers,
        )
        for k in range(n):
            c64 = counts_v[k]
            if c64:
                it = items[k]
                it.refs += int(c64)
        return out
    counts = [0] * n
    out = count_refs(refs, starts, text_lo, text_hi, counts, readers, writers)
    for k in range(n):
        c = counts[k]
        if c:
            it = items[k]
            it.refs += c
    return out


# the native ints :func:`count_item_refs` keeps addresses in (a wasm64 address past them,
# only a crafted module's, takes the plain path). Both bounds are inside ``[-2**62,
# 2**62)``, mypyc's unboxed ints: compared inline (``< 1 << 62`` itself is a boxed
# int's comparison, ~260 instructions, once per reference)
_NATIVE_LO: Final = -(1 << 62)
_NATIVE_MAX: Final = (1 << 62) - 1
# a direct-mapped cache of targets' items in front of the bisection (references repeat
# their targets: ffmpeg's 375k data references have ~60k); a slot's key outside the native
# range: empty
_SLOTS: Final = 8192
_SLOT_MASK: Final = _SLOTS - 1
_EMPTY: Final = _NATIVE_LO - 1


def _as_vec(xs: list[int]) -> vec[i64]:
    n: i64 = len(xs)
    out = vec[i64]([0] * n)  # (made at its length: no append call, no growth copy)
    i: i64 = 0
    while i < n:
        out[i] = xs[i]
        i += 1
    return out


def _count_refs_native(
    refs: list[Any],
    starts: list[int],
    starts_v: vec[i64],
    text_lo: vec[i64],
    text_hi: vec[i64],
    counts: vec[i64],
    readers: dict[int, set[int]],
    writers: dict[int, set[int]],
) -> list[Any]:
    """:func:`count_refs` with the items' starts, string bounds and counts as native
    arrays (every one inside ``[_NATIVE_LO, _NATIVE_MAX]``): a target's item is bisected
    on them directly, no memo and no boxed int per reference (ffmpeg: 375k data
    references); a target outside that range is bisected on ``starts`` (the same item)."""
    out: list[Any] = []
    n: i64 = len(starts_v)
    ckeys = vec[i64]([_EMPTY] * _SLOTS)
    citem = vec[i64]([0] * _SLOTS)
    for r0 in refs:  # (func_index, offset, kind, target_kind, target, width) tuples
        r: tuple[Any, ...] = r0
        tk: str = r[3]
        if tk == "data":
            t: int = r[4]
            k: i64 = 0
            if _NATIVE_LO <= t <= _NATIVE_MAX:
                ti: i64 = t
                h: i64 = (ti ^ (ti >> 13) ^ (ti >> 26)) & _SLOT_MASK
                if ckeys[h] == ti:
                    k = citem[h]
                else:
                    a: i64 = 0
                    b: i64 = n
                    while a < b:  # bisect_right(starts, t)
                        mid: i64 = (a + b) >> 1
                        if ti < starts_v[mid]:
                            b = mid
                        else:
                            a = mid + 1
                    k = a - 1
                    ckeys[h] = ti
                    citem[h] = k
                if k >= 0 and text_lo[k] < ti < text_hi[k]:
                    kind: str = r[2]
                    if kind == "load" or kind == "store":
                        continue
            else:  # (past every start, or before them all: no string holds it)
                a2 = 0
                b2 = len(starts)
                while a2 < b2:
                    mid2 = (a2 + b2) >> 1
                    if t < starts[mid2]:
                        b2 = mid2
                    else:
                        a2 = mid2 + 1
                k = a2 - 1
            if k >= 0:
                counts[k] += 1
        elif tk == "global":
            g: int = r[4]
            d = readers if r[2] == "read" else writers
            s = d.get(g)
            if s is None:
                s = set()
                d[g] = s
            s.add(r[0])
        out.append(r)
    return out


def ref_marks(refs: list[Any]) -> tuple[set[int], set[int], dict[int, int]]:
    """:func:`kbtool.analysis.dataitems.build_items`'s three reads of the references in one
    typed pass: the data targets (cuts), the ``funcptr`` targets, and each ``gostring``
    target's length (the last one seen, as a dict comprehension keeps it)."""
    cuts: set[int] = set()
    fptr: set[int] = set()
    gostr: dict[int, int] = {}
    for r0 in refs:  # (func_index, offset, kind, target_kind, target, width) tuples
        r: tuple[Any, ...] = r0
        # the target as the tuple holds it: an ``int`` local would be unboxed here and
        # boxed again (a new int object) for each set it goes into (ffmpeg: 377k)
        t: Any = r[4]
        tk: str = r[3]
        if tk == "data":
            cuts.add(t)
        kind: str = r[2]
        if kind == "funcptr":
            fptr.add(t)
        elif kind == "gostring":
            gostr[t] = r[5]
    return cuts, fptr, gostr
