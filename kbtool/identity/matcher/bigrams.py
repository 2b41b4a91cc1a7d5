"""Op-bigram histograms and their cosine for the diff matcher's content similarity (pure,
stdlib only; :mod:`librt`, mypyc's runtime library, where present).

Pure Python counts with ``Counter.update`` and keeps a histogram as a dict, bigram key ->
count. The compiled twin (``_TYPED``) counts by a native loop (:func:`_pair_counts`: 16-bit
reads, native arrays) and keeps a histogram as a native array (``vec[i64]``) of sorted
words ``key << _CBITS | count``, which :func:`_cosine_words` merges natively. Same keys,
same counts, same norms, same cosines (``tests/unit/identity/test_matcher_twin.py``).
"""

from __future__ import annotations

import math
import sys
from array import array
from collections import Counter
from itertools import repeat
from operator import mul
from typing import Any, Final

try:  # mypyc: native ints in the typed count (no tag checks, no boxing)
    from mypy_extensions import i64
except ImportError:  # the pure path without it (not a dependency): plain ints
    i64 = int  # type: ignore[misc,assignment]


def _list(items: Any = (), capacity: int = 0) -> list:
    """``vec[T](items, capacity=...)`` without :mod:`librt.vecs`: a plain list."""
    return list(items)


class _ListVec:
    """``vec[T]`` without :mod:`librt.vecs`: ``vec[T](...)`` makes a plain list."""

    def __getitem__(self, item: object) -> Any:
        return _list


def _list_append(v: list, x: object) -> list:
    """:func:`librt.vecs.append` on a list: appended in place, returned."""
    v.append(x)
    return v


try:  # mypyc's runtime library (installed with mypy): native arrays and 16-bit reads
    from librt.strings import read_i16_be, read_i16_le
    from librt.vecs import append, vec
except ImportError:  # the pure path without it: lists and int.from_bytes, the same values
    vec = _ListVec()  # type: ignore[misc,assignment]
    append = _list_append  # type: ignore[assignment]

    def read_i16_le(b: bytes, index: int) -> int:  # type: ignore[misc]
        if index < 0 or index + 2 > len(b):
            raise IndexError(index)
        return int.from_bytes(b[index : index + 2], "little", signed=True)

    def read_i16_be(b: bytes, index: int) -> int:  # type: ignore[misc]
        if index < 0 or index + 2 > len(b):
            raise IndexError(index)
        return int.from_bytes(b[index : index + 2], "big", signed=True)


_MAX_OPS = 16384  # instructions sampled per function for the op-bigram histogram


def _bigrams(ops: bytes) -> tuple[Any, float]:
    """The op-bigram histogram of an op stream and its Euclidean norm.

    Pure Python: a dict, bigram key -> count. The compiled twin (``_TYPED``): the same
    counts as a native array of sorted words ``key << _CBITS | count``
    (:func:`_pair_counts`), what :func:`_cosine_words` merges; :func:`hist_dict` reads
    either as the dict."""
    if len(ops) > 2 * _MAX_OPS:
        # very large bodies: the head and the tail are a fair sample of the mix, and
        # counting millions of instructions per candidate would dominate the run
        half = _MAX_OPS  # in bytes (2 per op): _MAX_OPS / 2 ops from each end
        ops = ops[:half] + ops[len(ops) - half :]
    n = len(ops) - (len(ops) % 2)
    # op bigrams discriminate control-flow/arith patterns much better than unigrams.
    # Every pair of neighbouring 16-bit op ids is one 32-bit word read at an even or
    # an odd op position: two C-level passes, no Python per instruction (pure), or one
    # native pass in the compiled twin (:func:`_pair_counts`: the same counts)
    if _TYPED:
        words = _pair_counts(bytes(ops), n // 2)
        if words is None:
            words = _as_words(_counter(ops, n))
        return words, math.sqrt(_words_square(words)) or 1.0
    big = _counter(ops, n)
    return big, math.sqrt(sum(v * v for v in big.values())) or 1.0


def _counter(ops: bytes, n: int) -> Counter:
    big: Counter = Counter()
    if n >= 4:
        big.update(array("I", ops[: n - (n % 4)]))
        if n >= 6:
            big.update(array("I", ops[2 : 2 + (n - 2) - ((n - 2) % 4)]))
    return big


def _probe() -> None:  # (only its kind is read: see ``_TYPED``)
    pass


#: True in the compiled twin (mypyc makes the module's functions native, without a code
#: object): there the op bigrams are counted by a native loop (:func:`_pair_counts`) into
#: a native array of sorted words and the cosine merges two such arrays
#: (:func:`_cosine_words`); pure Python keeps ``Counter.update`` and dicts (a Python loop
#: would be slower there)
_TYPED: Final = not hasattr(_probe, "__code__")

_OP_IDS: Final = 65536  # op ids are 16-bit
_LOCAL_IDS: Final = 256  # distinct ops a body may have for the typed count (else Counter's)
# a typed histogram's word: the bigram key (``a | b << 16``, 32 bits) above the count's
# _CBITS bits (a count is below 2 * _MAX_OPS, far below 2**24: the sample caps the ops)
_CBITS: Final = 24
_CMASK: Final = 0xFFFFFF
# (every constant above a ``Final`` literal: the twin reads it inline, no module lookup)


def hist_dict(h: Any) -> dict[int, int]:
    """A histogram of :func:`_bigrams` (either form) as the dict bigram key -> count."""
    if isinstance(h, dict):
        return h
    return {w >> _CBITS: w & _CMASK for w in h}


def _as_words(big: Counter) -> vec[i64]:
    """A Counter's histogram as the sorted words of :func:`_pair_counts` (keys distinct:
    sorting the words sorts the keys)."""
    return vec[i64](sorted((k << _CBITS) | v for k, v in big.items()))


def _words_square(words: vec[i64]) -> int:
    """The sum of the squared counts (the very int the dict form's sum gives: each count
    is below 2**15, so the sum of at most 2**15 squares is far below 2**63)."""
    sq: i64 = 0
    for w in words:
        c: i64 = w & _CMASK
        sq += c * c
    return int(sq)


class _Scratch:
    """The typed count's reusable native tables: op id -> its local id in the body (-1: not
    seen), a count per pair of local ids (both all -1 / 0 between calls), the local pair
    indices touched (first seen first, then in key order), the same sorted by the first
    op's rank (a radix pass), a bucket count per rank and the body's distinct ops (by
    local id)."""

    def __init__(self) -> None:
        self.local: vec[i64] = vec[i64]([-1] * _OP_IDS)
        self.counts: vec[i64] = vec[i64]([0] * (_LOCAL_IDS * _LOCAL_IDS))
        self.touched: vec[i64] = vec[i64]([0] * (_LOCAL_IDS * _LOCAL_IDS))
        self.tmp: vec[i64] = vec[i64]([0] * (_LOCAL_IDS * _LOCAL_IDS))
        self.seen: vec[i64] = vec[i64]([0] * _LOCAL_IDS)
        self.rank: vec[i64] = vec[i64]([0] * _LOCAL_IDS)
        self.start: vec[i64] = vec[i64]([0] * (_LOCAL_IDS + 1))


# free scratch tables (a caller pops one or makes one, and puts it back: list.pop and
# list.append are atomic, so threads matching at once never share one)
_SCRATCH: list[_Scratch] = []
# the op ids are stored in native byte order (``array("H")``): read as such
_LITTLE: Final = sys.byteorder == "little"


def _pair_counts(ops: bytes, n: int) -> vec[i64] | None:
    """The histogram of :func:`_bigrams` over the first ``n`` 16-bit op ids of ``ops``
    (native byte order, as ``array("H")`` stores them) as words ``key << _CBITS | count``
    in increasing order, each pair of neighbouring ops (a, b) under the key ``a | b << 16``
    (the 32-bit word ``Counter.update`` reads). None when the body has more than
    ``_LOCAL_IDS`` distinct ops (the caller counts then). In the twin every step is
    native: 16-bit reads, native arrays, native ints, the keys ordered by two radix
    passes."""
    try:
        s = _SCRATCH.pop()
    except IndexError:
        s = _Scratch()
    local = s.local
    counts = s.counts
    touched = s.touched
    seen = s.seen
    nseen: i64 = 0
    nt: i64 = 0  # local pair indices (a's local id * 256 + b's) touched
    prev: i64 = -1  # (256 * the previous op's local id, -1 before the first op)
    full = False
    end: i64 = 2 * n
    j: i64 = 0
    while j < end:
        # (a signed 16-bit read, masked: the op id, 0 to 65535)
        op: i64 = (i64(read_i16_le(ops, j)) if _LITTLE else i64(read_i16_be(ops, j))) & 0xFFFF
        j += 2
        k: i64 = local[op]
        if k < 0:
            k = nseen
            if k >= _LOCAL_IDS:
                full = True
                break
            local[op] = k
            seen[k] = op
            nseen += 1
        if prev >= 0:
            idx: i64 = prev + k
            c: i64 = counts[idx]
            if c == 0:
                touched[nt] = idx
                nt += 1
            counts[idx] = c + 1
        prev = k * _LOCAL_IDS
    out: vec[i64] | None = None
    if not full:
        out = _ordered_words(s, nseen, nt)
    for t in range(nt):
        counts[touched[t]] = 0
    for x in range(nseen):
        local[seen[x]] = -1
    _SCRATCH.append(s)
    return out


def _ordered_words(s: _Scratch, nseen: i64, nt: i64) -> vec[i64]:
    """The words of the ``nt`` touched pairs in key order. ``a | b << 16`` orders by b,
    then a: by (rank of b, rank of a) among the body's sorted ops, so two stable counting
    passes over the ranks (by a's, then by b's) order them, no 32-bit key sorted."""
    local, counts, touched, tmp = s.local, s.counts, s.touched, s.tmp
    seen, rank, start = s.seen, s.rank, s.start
    r: i64 = 0
    for op in sorted([int(seen[x]) for x in range(nseen)]):
        rank[local[op]] = r
        r += 1
    # pass 1: touched -> tmp by the rank of a (idx // 256: a's local id)
    _by_rank(touched, tmp, nt, rank, start, nseen, True)
    # pass 2: tmp -> touched by the rank of b (idx % 256), stable
    _by_rank(tmp, touched, nt, rank, start, nseen, False)
    out = vec[i64](capacity=nt)
    for t in range(nt):
        idx: i64 = touched[t]
        a: i64 = seen[idx // _LOCAL_IDS]
        b: i64 = seen[idx % _LOCAL_IDS]
        out = append(out, ((a | (b << 16)) << _CBITS) | counts[idx])
    return out


def _by_rank(
    src: vec[i64],
    dst: vec[i64],
    nt: i64,
    rank: vec[i64],
    start: vec[i64],
    nseen: i64,
    first: bool,
) -> None:
    """A stable counting sort of the ``nt`` pair indices of ``src`` into ``dst`` by the
    rank of the pair's first op (``first``) or its second."""
    for x in range(nseen + 1):
        start[x] = 0
    for t in range(nt):
        idx: i64 = src[t]
        start[rank[idx // _LOCAL_IDS if first else idx % _LOCAL_IDS] + 1] += 1
    for x in range(nseen):
        start[x + 1] += start[x]
    for t in range(nt):
        idx2: i64 = src[t]
        q: i64 = rank[idx2 // _LOCAL_IDS if first else idx2 % _LOCAL_IDS]
        dst[start[q]] = idx2
        start[q] += 1


def _cosine(a: dict[int, int], na: float, b: dict[int, int], nb: float) -> float:
    if not a or not b:
        return 1.0 if not a and not b else 0.0
    if len(a) > len(b):
        a, b = b, a
    # the integer dot product over the smaller histogram's bigrams (0 where the other has
    # none), every step in C, no set of the common keys built (exact: any order); typed
    # in the compiled twin (native int products, no int object per bigram: the same int)
    if _TYPED:
        dot = 0
        for k, v in a.items():
            w = b.get(k)
            if w is not None:
                dot += v * w
    else:
        dot = sum(map(mul, a.values(), map(b.get, a, repeat(0))))
    return dot / (na * nb)


def _cosine_words(a: vec[i64], na: float, b: vec[i64], nb: float) -> float:
    """:func:`_cosine` of two histograms in the typed form (sorted words, see
    :func:`_pair_counts`): the integer dot product by one merge of the two sorted arrays,
    no dict lookup (the same int, so the same float: a product of two counts is below
    2**30, the sum of at most 2**15 of them far below 2**63)."""
    la: i64 = len(a)
    lb: i64 = len(b)
    if not la or not lb:
        return 1.0 if not la and not lb else 0.0
    dot: i64 = 0
    i: i64 = 0
    j: i64 = 0
    x: i64 = a[0]
    y: i64 = b[0]
    kx: i64 = x >> _CBITS
    ky: i64 = y >> _CBITS
    while True:
        if kx == ky:
            dot += (x & _CMASK) * (y & _CMASK)
            i += 1
            j += 1
            if i >= la or j >= lb:
                break
            x = a[i]
            kx = x >> _CBITS
            y = b[j]
            ky = y >> _CBITS
        elif kx < ky:
            i += 1
            if i >= la:
                break
            x = a[i]
            kx = x >> _CBITS
        else:
            j += 1
            if j >= lb:
                break
            y = b[j]
            ky = y >> _CBITS
    return int(dot) / (na * nb)
