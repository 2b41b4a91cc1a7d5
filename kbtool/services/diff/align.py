"""Bounded alignment of two decoded instruction streams for the triage
(:mod:`kbtool.services.diff.triage`): whole-body difflib for small pairs, else the common
prefix and suffix, statements, and difflib in the changed windows within a budget of cells,
so a huge module's diff costs seconds, not minutes. Pure."""

from __future__ import annotations

import difflib
from collections.abc import Sequence

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
        return difflib.SequenceMatcher(None, ka, kb, autojunk=False).get_opcodes()
    p = 0
    while p < n and p < m and ka[p] == kb[p]:
        p += 1
    while p and ka[p - 1][0] not in _STMT_END:  # the window starts at a statement
        p -= 1
    s = 0
    while s < n - p and s < m - p and ka[n - 1 - s] == kb[m - 1 - s]:
        s += 1
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
        sm = difflib.SequenceMatcher(None, ka[i1:i2], kb[j1:j2], autojunk=False)
        out.extend(
            (t, a1 + i1, a2 + i1, b1 + j1, b2 + j1) for t, a1, a2, b1, b2 in sm.get_opcodes()
        )
        return
    if chunked or left[0] <= 0:
        out.append(("replace", i1, i2, j1, j2))
        return
    ca, cb = _chunks(ka, i1, i2), _chunks(kb, j1, j2)
    left[0] -= len(ca) + len(cb)
    sm = difflib.SequenceMatcher(
        None, [tuple(ka[a:b]) for a, b in ca], [tuple(kb[a:b]) for a, b in cb], autojunk=False
    )
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
