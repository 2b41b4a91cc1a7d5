"""Bounded alignment of two decoded instruction streams for the triage
(:mod:`kbtool.services.diff.triage`): whole-body difflib for small pairs, else the common
prefix and suffix, statements, and difflib in the changed windows within a budget of cells,
so a huge module's diff costs seconds, not minutes. Pure."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from itertools import repeat

from kbtool.wasm.opcodes import KIND, MNEMONICS

__all__ = ["align", "EXACT_CELLS", "ALIGN_BUDGET", "WHOLE_CELLS"]

EXACT_CELLS = 4_000_000
ALIGN_BUDGET = 8_000_000
WHOLE_CELLS = 40_000  # above this, the common prefix and suffix are trimmed first

_K_MEM = 2  # the opcode table's kind of loads and stores (as in triage)

# statement ends: the chunks the bounded alignment pairs first, like lines of source
_STMT_END = frozenset(
    i
    for i, m in enumerate(MNEMONICS)
    if m
    and (
        m
        in (
            "local.set",
            "global.set",
            "br",
            "br_if",
            "br_table",
            "call",
            "call_indirect",
            "return",
            "drop",
            "end",
            "else",
            "if",
            "loop",
            "block",
            "unreachable",
        )
        or (KIND[i] == _K_MEM and ".store" in m)
    )
)


def align(
    ka: Sequence, kb: Sequence, exact_cells: int = EXACT_CELLS, budget: int = ALIGN_BUDGET
) -> list[tuple[str, int, int, int, int]]:
    """difflib opcodes aligning ``ka`` to ``kb``, bounded.

    Bodies with ``len(ka) * len(kb) <= exact_cells`` are aligned by difflib as a whole. Larger
    ones: the common prefix and suffix (whole statements) are equal; the window between them
    is aligned by difflib when small, else by statements first (chunks ending at a store, a
    set, a call or a branch, as a line diff) and by difflib inside each changed run of
    statements; a window over the remaining ``budget`` of cells is one replace (its reasons
    still read)."""
    n, m = len(ka), len(kb)
    if n * m <= min(exact_cells, WHOLE_CELLS):
        return _Matcher(ka, kb).get_opcodes()
    p = _prefix(ka, kb, 0, 0, min(n, m))
    while p and ka[p - 1][0] not in _STMT_END:  # the window starts at a statement
        p -= 1
    s = _suffix(ka, kb, n, m, min(n, m) - p)
    while s and ka[n - s - 1][0] not in _STMT_END:  # ... and ends at one
        s -= 1
    out: list[tuple[str, int, int, int, int]] = []
    if p:
        out.append(("equal", 0, p, 0, p))
    left = [budget]
    _window(ka, kb, p, n - s, p, m - s, exact_cells, left, out, chunked=False)
    if s:
        out.append(("equal", n - s, n, m - s, m))
    return out


def _prefix(ka: Sequence, kb: Sequence, i: int, j: int, most: int) -> int:
    """How many keys from ``ka[i]`` and ``kb[j]`` on are equal (at most ``most``): slices
    compared in C, halving the step at the first unequal one."""
    p = 0
    step = 64
    while p < most:
        k = min(step, most - p)
        if ka[i + p : i + p + k] == kb[j + p : j + p + k]:
            p += k
            step *= 2
        elif k == 1:
            break
        else:
            step = k // 2
    return p


def _suffix(ka: Sequence, kb: Sequence, n: int, m: int, most: int) -> int:
    """How many keys are equal at the ends of ``ka[:n]`` and ``kb[:m]`` (at most ``most``)."""
    s = 0
    step = 64
    while s < most:
        k = min(step, most - s)
        if ka[n - s - k : n - s] == kb[m - s - k : m - s]:
            s += k
            step *= 2
        elif k == 1:
            break
        else:
            step = k // 2
    return s


def _window(
    ka: Sequence,
    kb: Sequence,
    i1: int,
    i2: int,
    j1: int,
    j2: int,
    exact: int,
    left: list[int],
    out: list,
    *,
    chunked: bool,
) -> None:
    na, nb = i2 - i1, j2 - j1
    if na == 0 and nb == 0:
        return
    if na == 0 or nb == 0:
        out.append(("insert" if na == 0 else "delete", i1, i2, j1, j2))
        return
    cells = na * nb
    if cells <= exact and cells <= left[0]:
        left[0] -= cells
        sm = _Matcher(ka[i1:i2], kb[j1:j2])
        out.extend(
            (t, a1 + i1, a2 + i1, b1 + j1, b2 + j1) for t, a1, a2, b1, b2 in sm.get_opcodes()
        )
        return
    if chunked or left[0] <= 0:
        out.append(("replace", i1, i2, j1, j2))
        return
    ca, cb = _chunks(ka, i1, i2), _chunks(kb, j1, j2)
    left[0] -= len(ca) + len(cb)
    sm = _Matcher([tuple(ka[a:b]) for a, b in ca], [tuple(kb[a:b]) for a, b in cb])
    for tag, a1, a2, b1, b2 in sm.get_opcodes():
        x1 = ca[a1][0] if a1 < len(ca) else i2
        x2 = ca[a2 - 1][1] if a2 > a1 else x1
        y1 = cb[b1][0] if b1 < len(cb) else j2
        y2 = cb[b2 - 1][1] if b2 > b1 else y1
        if tag == "equal":
            out.append(("equal", x1, x2, y1, y2))
        else:
            _window(ka, kb, x1, x2, y1, y2, exact, left, out, chunked=True)


def _chunks(k: Sequence, lo: int, hi: int) -> list[tuple[int, int]]:
    out = []
    a = lo
    for q in range(lo, hi):
        if k[q][0] in _STMT_END:
            out.append((a, q + 1))
            a = q + 1
    if a < hi:
        out.append((a, hi))
    return out


_MOD = (1 << 61) - 1  # rolling hashes modulo a Mersenne prime
_BASE = 1_000_003
_HASH_COST = 4  # one rolling-hash step against one step of difflib's walk


class _Matcher(difflib.SequenceMatcher):
    """``difflib.SequenceMatcher(None, a, b, autojunk=False)`` with the same answers, whose
    longest-match search on a range where difflib would walk many occurrences (an opcode
    that is a third of a body: every ``local.get`` of ``a`` against every one of ``b``) finds
    the same block another way: a binary search over its length, each step hashing every
    window of that length of both sides (rolling hashes, a match confirmed by comparing the
    elements), so O((n + m) log) instead of O(occurrences). The block is the one difflib
    returns: the longest, the earliest in ``a``, then in ``b`` (no junk: nothing extends it)."""

    def __init__(self, a: Sequence, b: Sequence) -> None:
        super().__init__(None, a, b, autojunk=False)
        ids: dict = {}
        self._ia = [ids.setdefault(x, len(ids) + 1) for x in a]
        self._ib = [ids.setdefault(x, len(ids) + 1) for x in b]
        self._ha: list[int] | None = None
        self._hb: list[int] = []
        self._pw = [1]

    def find_longest_match(self, alo=0, ahi=None, blo=0, bhi=None):  # type: ignore[override]
        if ahi is None:
            ahi = len(self.a)
        if bhi is None:
            bhi = len(self.b)
        na, nb = ahi - alo, bhi - blo
        if na <= 0 or nb <= 0:
            return super().find_longest_match(alo, ahi, blo, bhi)
        # difflib's walk: every occurrence in b (up to bhi) of every element of a's range
        walk = sum(map(len, map(self.b2j.get, self.a[alo:ahi], repeat(()))))
        if walk <= _HASH_COST * (na + nb) * min(na, nb).bit_length():
            return super().find_longest_match(alo, ahi, blo, bhi)
        if self._ha is None:
            self._ha, self._hb = _prefix_hashes(self._ia), _prefix_hashes(self._ib)
        best = self._first(alo, ahi, blo, bhi, 1)
        if best is None:
            return difflib.Match(alo, blo, 0)
        lo, hi = 1, min(na, nb)  # a block of length lo exists, none is longer than hi
        while lo < hi:
            mid = (lo + hi + 1) // 2
            got = self._first(alo, ahi, blo, bhi, mid)
            if got is None:
                hi = mid - 1
            else:
                lo, best = mid, got
        return difflib.Match(best[0], best[1], lo)

    def _power(self, n: int) -> int:
        pw = self._pw
        while len(pw) <= n:
            pw.append(pw[-1] * _BASE % _MOD)
        return pw[n]

    def _first(self, alo: int, ahi: int, blo: int, bhi: int, n: int) -> tuple[int, int] | None:
        """``(i, j)`` of the first block of length ``n`` (smallest ``i``, then ``j``), or None."""
        ia, ib, ha, hb = self._ia, self._ib, self._ha, self._hb
        assert ha is not None
        p, mod = self._power(n), _MOD
        # the hash of every window of length n (a list comprehension and C-level scans)
        wb = [
            (x - y * p) % mod
            for x, y in zip(hb[blo + n : bhi + 1], hb[blo : bhi - n + 1], strict=True)
        ]
        sb = set(wb)
        wa = [
            (x - y * p) % mod
            for x, y in zip(ha[alo + n : ahi + 1], ha[alo : ahi - n + 1], strict=True)
        ]
        k = 0
        while True:
            h = next(filter(sb.__contains__, wa[k:] if k else wa), None)
            if h is None:
                return None
            k = wa.index(h, k)  # the first window of a with that hash
            w = ia[alo + k : alo + k + n]
            q = wb.index(h)
            while True:  # the windows of b with that hash, in order: confirm the elements
                if ib[blo + q : blo + q + n] == w:
                    return alo + k, blo + q
                try:
                    q = wb.index(h, q + 1)
                except ValueError:
                    break
            k += 1  # a hash collision only: look further


def _prefix_hashes(ids: list[int]) -> list[int]:
    h = [0] * (len(ids) + 1)
    acc = 0
    for k, x in enumerate(ids, 1):
        acc = (acc * _BASE + x) % _MOD
        h[k] = acc
    return h
