"""The decoder's per-range tables of native ints (part of the ``_cdecoder`` twin, as
:mod:`.scan`): stamp lists that say whether a body has a value already and the large
constants' open-addressed table. mypyc-friendly: typed, tables as ``vec[i64]`` and lists,
no closures."""

from __future__ import annotations

from typing import Final, cast

try:  # mypyc: native 64-bit ints (no tag checks, no boxing)
    from mypy_extensions import i64
except ImportError:  # the pure path without it: plain ints
    i64 = int  # type: ignore[misc,assignment]

try:  # mypyc's runtime library: its writes compile to native code
    from librt.strings import BytesWriter
except ImportError:  # the pure path without it: the same writes on a bytearray
    from ..opbuf import BytesWriter  # type: ignore[assignment]
try:  # mypyc's runtime library: vec[i64] compiles to a native array
    from librt.vecs import append as _vappend
    from librt.vecs import vec
except ImportError:  # the pure path without it: lists
    from ..opbuf import vec  # type: ignore[assignment]
    from ..opbuf import vec_append as _vappend  # type: ignore[assignment]

# constants in [-_SMALL_NEG, _SMALL_POS) are deduplicated by a stamp list, not a dict
_SMALL_NEG: Final = 64
_SMALL_POS: Final = 1024
# the other constants: an open-addressed table of native ints per decoded range, a slot in
# use for a body when its stamp is the body's code index (no int boxed, no set probe per
# constant); a body with more than _BIG_MAX of them goes on in a set
_BIG_SLOTS: Final = 4096
_BIG_MASK: Final = _BIG_SLOTS - 1
_BIG_MAX: Final = _BIG_SLOTS // 2
# globals below _GLOB_FLAT: a stamp list says whether the body has one already (no set per
# body, no set insert per access); the others go in a set (merged, then sorted: the same list)
_GLOB_FLAT: Final = 1024


def stamps(n: i64, fill: i64) -> vec[i64]:
    """A native array of ``n`` values ``fill``."""
    v = vec[i64]()
    for _ in range(n):
        v = _vappend(v, fill)
    return v


def big_first(keys: vec[i64], stamps: vec[i64], x: i64, ci: i64) -> bool:
    """Whether the constant ``x`` is new to body ``ci`` in the table (then recorded)."""
    h: i64 = (x ^ (x >> 12) ^ (x >> 24) ^ (x >> 40)) & _BIG_MASK
    while True:
        if stamps[h] != ci:
            stamps[h] = ci
            keys[h] = x
            return True
        if keys[h] == x:
            return False
        h = (h + 1) & _BIG_MASK


def big_set(consts: list[object]) -> set[object]:
    """The large constants of ``consts`` (those outside the small range), as a set."""
    return {c for c in consts if not -_SMALL_NEG <= cast(int, c) < _SMALL_POS}


def add_global(seen: vec[i64], first: list[int], rest: set[int], x: int, ci: i64) -> None:
    """Global ``x`` used by body ``ci``: into ``first`` once (below ``_GLOB_FLAT``), else ``rest``."""
    if x < _GLOB_FLAT:
        if seen[x] != ci:
            seen[x] = ci
            first.append(x)
    else:
        rest.add(x)


def memop_text(op: int, offset: int, width: int) -> bytes:
    """A memory access's item in its facts row's JSON text (``orjson.dumps`` of the list of
    ``(op, offset, width)``), a comma after it: the decoder writes a body's items as it meets
    them (``ctx.side``: :attr:`kbtool.wasm.facts.ModuleAnalysis.side`)."""
    return f"[{op},{offset},{width}],".encode()


def list_writer() -> BytesWriter:
    """A writer of a list's JSON text: ``[``, then each item's text and a comma."""
    w = BytesWriter()
    w.append(91)
    return w


def list_text(w: BytesWriter) -> str:
    """The JSON text of a list from a writer of ``[`` and its items' texts, a comma after
    each (the last one made the ``]``)."""
    n = len(w)
    if n == 1:
        return "[]"
    w[n - 1] = 93  # "]"
    return w.getvalue().decode()


def new_memop(
    cache: dict[int, int], mt: list[object], mj: list[bytes], op: int, x: int, width: int
) -> i64:
    """A memory access first met in the range: its tuple and text stored, the index back."""
    mx: i64 = len(mt)
    cache[x * 1024 + op] = mx
    mt.append((op, x, width))
    mj.append(memop_text(op, x, width))
    return mx


def edge_values(callees: list[list[int]], nimp: i64) -> list[int]:
    """The call edges of ``callees`` (each defined body's distinct callees, body ``k`` being
    function ``nimp + k``: :attr:`kbtool.wasm.facts.ModuleAnalysis.side`) as one flat list
    ``[callee, caller, callee, caller, ...]`` in (callee, caller) order, the call-edge
    table's key order: a counting sort by callee, each callee's callers in body order
    (ascending: a body's callees are distinct). No tuple per edge (onnxruntime's 60k edges
    were ~20 ms of tuples, a stable sort and a flattening)."""
    top: i64 = -1
    low: i64 = 0
    n: i64 = 0
    for cs in callees:
        for c in cs:
            x: i64 = c
            if x > top:
                top = x
            if x < low:
                low = x
            n += 1
    if n == 0:
        return []
    if low < 0 or top >= n * 64 + (1 << 20):  # (no dense table for such indices)
        pairs = sorted([(c, nimp + k) for k, cs in enumerate(callees) for c in cs])
        return [v for p in pairs for v in p]
    at = stamps(top + 1, 0)  # per callee: its edges, then where its next edge goes
    for cs in callees:
        for c in cs:
            x = c
            at[x] += 1
    acc: i64 = 0
    for j in range(top + 1):
        v: i64 = at[j]
        at[j] = acc
        acc += v
    out: list[int] = [0] * (2 * n)
    caller: i64 = nimp
    for cs in callees:
        for c in cs:
            x = c
            p: i64 = at[x]
            at[x] = p + 1
            out[2 * p] = c
            out[2 * p + 1] = int(caller)
        caller += 1
    return out
