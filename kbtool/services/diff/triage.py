"""Triage of modified functions for a patch analyst (issue 29.3).

Each modified pair gets a ``triage`` score and ``reasons`` (short lines saying why it ranks
where it does) from what changed, read off an alignment of the two instruction streams:

- new comparisons (``+ bounds check: l7 > l6``, ``+ bounds check: l3 >=u 0x400``) and new
  traps or calls to error/abort paths (``+ error path: call abort``), new error strings;
- a call's result now kept (``+ call result kept: call f -> l3``: a pointer refreshed after
  a call that may move what it pointed at) and a value loaded again right after a call
  (``+ value reloaded after call f``);
- widened or changed arithmetic (``arith widened: i32.mul -> i64.mul``, ``signedness:
  i32.lt_s -> i32.lt_u``), changed constants next to a comparison (``bound changed: 0x100 ->
  0x200``) or feeding an allocator (``alloc size changed``), new early returns;
- pure refactors (many calls in and out, large size change), inlining churn and struct
  offset shifts rank last (``kind``: ``fix`` > ``change`` > ``churn`` > ``layout``).

Score: the strongest reason, plus half the second, a quarter of the third... (many new
comparisons in a rewrite do not outrank one targeted check), minus a size term: a small
change with a fix-like reason ranks above a large one with the same reason (a security fix
is usually a few instructions). Pure functions over decoded bodies.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Callable, Sequence
from typing import Any

from kbtool.wasm.opcodes import KIND, MNEMONICS

__all__ = ["triage_pair", "is_error_text", "is_error_callee", "layout_groups", "KINDS"]

KINDS = ("fix", "change", "churn", "layout")
MAX_ALIGN = 6000  # instructions per side aligned one by one (larger bodies: by histogram)
MAX_REASONS = 6

_ERR_TEXT = re.compile(
    r"error|invalid|too (?:many|large|long|big|deep|small)|overflow|underflow|corrupt|out of"
    r"|exceed|illegal|cannot|can't|fail|malformed|limit|unexpected|bad |not enough|abort"
    r"|assert|panic|denied|violation|mismatch|truncat|oversize|negative", re.I)
_ERR_CALLEE = re.compile(
    r"abort|panic|error|fatal|fail|assert|throw|trap|proc_exit|\bexit\b|_exit|corrupt"
    r"|runerror|overflow|oom|unreachable|raise|die\b|bug\b", re.I)
_ALLOC = re.compile(r"alloc|new\b|_new|create|grow|resize|reserve", re.I)

_CMP = {"eq": "==", "ne": "!=", "lt": "<", "gt": ">", "le": "<=", "ge": ">="}
_K_I32, _K_I64, _K_MEM, _K_CALL = 3, 7, 2, 5


def is_error_text(s: str) -> bool:
    """Does a string read like an error message?"""
    return bool(_ERR_TEXT.search(s))


def is_error_callee(label: str, strings: Sequence[str] = ()) -> bool:
    """A callee on an error/abort path: by its name, else by its strings."""
    return bool(_ERR_CALLEE.search(label)) or any(is_error_text(s) for s in strings[:8])


def _cmp(op: int) -> tuple[str, str] | None:
    """``i32.lt_u`` -> (``<``, ``u``); None when not a comparison."""
    m = MNEMONICS[op]
    if not m.startswith(("i32.", "i64.")):
        return None
    base = m[4:]
    if base == "eqz":
        return ("== 0", "")
    name, _, sign = base.partition("_")
    if name in _CMP and sign in ("", "s", "u"):
        return (_CMP[name], "u" if sign == "u" else "")
    return None


def _hex(c: int) -> str:
    return str(c) if -10 < c < 10 else (f"-0x{-c:x}" if c < 0 else f"0x{c:x}")


def _operand(tok: tuple[int, tuple] | None) -> str:
    if tok is None:
        return "…"
    op, imms = tok
    m = MNEMONICS[op]
    if m in ("local.get", "local.tee"):
        return f"l{imms[0]}"
    if m == "global.get":
        return f"g{imms[0]}"
    if KIND[op] in (_K_I32, _K_I64):
        return _hex(int(imms[0]))
    if KIND[op] == _K_MEM and ".load" in m:
        return f"[…+{imms[1]}]"
    if m.endswith(("add", "sub", "mul", "shl", "and")):
        return f"(… {m.split('.')[1]})"
    return "…"


def _key(tok: tuple[int, tuple]) -> tuple:
    """Alignment key: the opcode, plus small constants (a changed bound stays paired by
    position, see the replace handling)."""
    return (tok[0],)


def triage_pair(
    ex: dict[str, Any],
    ta: list[tuple[int, tuple]],
    tb: list[tuple[int, tuple]],
    callee_label: Callable[[int], str],
    callee_strings: Callable[[int], Sequence[str]],
) -> dict[str, Any]:
    """``{triage, reasons, kind}`` of one modified pair.

    ``ex``: the explanation (:func:`kbtool.services.diff.explain.explain_pair`); ``ta``/``tb``:
    the decoded bodies (``[(op, imms)]``, empty when unavailable); ``callee_label`` /
    ``callee_strings``: name and strings of a new-side function index."""
    reasons: list[tuple[float, str]] = []
    seen: set[str] = set()

    def add(w: float, text: str) -> None:
        if text not in seen:
            seen.add(text)
            reasons.append((w, text))

    inserted: list[int] = []  # indices into tb
    deleted = 0
    changed_pairs: list[tuple[int, int]] = []
    if ta and tb and len(ta) <= MAX_ALIGN and len(tb) <= MAX_ALIGN:
        sm = difflib.SequenceMatcher(None, [_key(t) for t in ta], [_key(t) for t in tb],
                                     autojunk=False)
        for tag, i1, i2, j1, j2 in sm.get_opcodes():
            if tag == "equal":
                for i, j in zip(range(i1, i2), range(j1, j2), strict=True):
                    if ta[i][1] != tb[j][1]:
                        changed_pairs.append((i, j))
                continue
            if tag == "replace" and i2 - i1 == j2 - j1:
                for i, j in zip(range(i1, i2), range(j1, j2), strict=True):
                    _op_change(ta[i][0], tb[j][0], add)
            inserted.extend(range(j1, j2))
            deleted += i2 - i1
    # what was inserted
    ins_set = set(inserted)
    for j in inserted:
        op, imms = tb[j]
        m = MNEMONICS[op]
        c = _cmp(op)
        if c is not None:
            sym, sign = c
            follows = any(MNEMONICS[tb[q][0]] in ("br_if", "if", "select", "br_table")
                          for q in range(j + 1, min(j + 4, len(tb))))
            if sym == "== 0":
                text = f"{_operand(tb[j - 1] if j else None)} == 0"
            else:
                a = _operand(tb[j - 2] if j >= 2 else None)
                b = _operand(tb[j - 1] if j >= 1 else None)
                text = f"{a} {sym}{sign} {b}"
            add(5.0 if follows else 3.0, f"+ bounds check: {text}")
        elif m == "unreachable":
            add(4.0, "+ trap (unreachable)")
        elif m == "return":
            add(3.0, "+ early return")
        elif m in ("local.set", "local.tee") and j and j - 1 not in ins_set \
                and KIND[tb[j - 1][0]] == _K_CALL:
            add(4.0, f"+ call result kept: call {callee_label(tb[j - 1][1][0])} -> "
                     f"l{imms[0]} (refreshed after the call)")
        elif KIND[op] == _K_MEM and ".load" in m:
            c_at = next((q for q in range(j - 1, max(-1, j - 4), -1)
                         if KIND[tb[q][0]] == _K_CALL), None)
            if c_at is not None and any(tb[q] == tb[j] for q in range(max(0, c_at - 40), c_at)):
                add(3.5, f"+ value reloaded after call {callee_label(tb[c_at][1][0])}")
        elif KIND[op] == _K_CALL:
            label = callee_label(imms[0])
            if is_error_callee(label, callee_strings(imms[0])):
                add(5.0, f"+ error path: call {label}")
        elif m in ("i64.extend_i32_u", "i64.extend_i32_s") and any(
                MNEMONICS[tb[q][0]] in ("i64.mul", "i64.add", "i64.shl")
                for q in range(j + 1, min(j + 5, len(tb)))):
            add(5.0, f"arith widened: {m} before {_next_arith(tb, j)}")
    # same instruction, other immediates: a changed bound or allocation size
    allocs = any(_ALLOC.search(s) for s in ex.get("calls_added", []) + _calls(tb, callee_label))
    for i, j in changed_pairs:
        op = ta[i][0]
        if KIND[op] not in (_K_I32, _K_I64):
            continue
        a, b = int(ta[i][1][0]), int(tb[j][1][0])
        if not (-(1 << 20) < a < (1 << 20) and -(1 << 20) < b < (1 << 20)):
            continue  # addresses
        near_cmp = any(_cmp(tb[q][0]) for q in range(j + 1, min(j + 3, len(tb))))
        if near_cmp:
            add(4.0, f"bound changed: {_hex(a)} -> {_hex(b)}")
        elif allocs and abs(a) < 1024 and abs(b) < 1024:
            add(2.5, f"size constant changed: {_hex(a)} -> {_hex(b)}")
    for s in ex.get("strings_added", []):
        if is_error_text(s):
            add(6.0, f"+ error string: {s[:60]!r}")
    for name in ex.get("calls_added", []):
        if _ERR_CALLEE.search(name):
            add(5.0, f"+ error path: call {name}")
    if ex.get("type_from"):
        add(1.5, f"signature {ex['type_from']} -> {ex['type_to']}")
    # churn and layout
    n_calls = len(ex.get("calls_added", [])) + len(ex.get("calls_removed", []))
    size = abs(ex.get("instr_to", 0) - ex.get("instr_from", 0))
    amount = len(inserted) + deleted + len(changed_pairs) if (ta and tb) else size
    only_offsets = bool(ex.get("offsets_changed")) and not any(
        ex.get(k) for k in ("calls_added", "calls_removed", "strings_added", "strings_removed",
                            "consts_changed", "consts_added", "consts_removed", "type_from")
    ) and ex.get("instr_to") == ex.get("instr_from")
    # the strongest reason counts fully, each next one half as much
    signal = sum(w / (1 << k) for k, (w, _) in enumerate(sorted(reasons, reverse=True)[:4]))
    if only_offsets and not reasons:
        kind = "layout"
        shifts = ", ".join(f"{m} {a} -> {b}" for m, a, b in ex["offsets_changed"][:2])
        reasons.append((0.0, f"offset shift only: {shifts}"))
        score = 0.0
    else:
        churn = n_calls >= 6 or amount >= 400
        if signal <= 0:
            kind = "churn" if churn else "change"
            if churn:
                reasons.append((0.0, f"refactor/inlining churn: {n_calls} call change(s), "
                                     f"{amount:,} instruction(s) differ"))
            else:
                reasons.append((0.0, _plain(ex)))
        else:
            kind = "fix"
        # a small, targeted change ranks above a large one with the same signal
        score = signal + 1.0 - math.log2(1 + amount) / 3.0 - (1.0 if churn else 0.0)
    reasons.sort(key=lambda r: -r[0])
    return {"triage": round(score, 2), "reasons": [t for _, t in reasons[:MAX_REASONS]],
            "triage_kind": kind}


def _plain(ex: dict[str, Any]) -> str:
    items = [i for i in ex.get("items", []) if not i.endswith(" instructions")]
    return items[0] if items else "code changed"


def _next_arith(tb: list, j: int) -> str:
    for q in range(j + 1, min(j + 5, len(tb))):
        m = MNEMONICS[tb[q][0]]
        if m in ("i64.mul", "i64.add", "i64.shl"):
            return m
    return "i64 arithmetic"


def _calls(tb: list, label: Callable[[int], str]) -> list[str]:
    out = []
    for op, imms in tb:
        if KIND[op] == _K_CALL and len(out) < 16:
            out.append(label(imms[0]))
    return out


def _op_change(a: int, b: int, add: Callable[[float, str], None]) -> None:
    ma, mb = MNEMONICS[a], MNEMONICS[b]
    if ma == mb:
        return
    ta, _, ra = ma.partition(".")
    tb_, _, rb = mb.partition(".")
    if ta == "i32" and tb_ == "i64" and ra == rb and ra in ("mul", "add", "sub", "shl", "div_u",
                                                             "div_s"):
        add(6.0, f"arith widened: {ma} -> {mb}")
    elif ta == tb_ and ra[:-2] == rb[:-2] and {ra[-2:], rb[-2:]} == {"_s", "_u"}:
        add(5.0, f"signedness: {ma} -> {mb}")
    elif _cmp(a) and _cmp(b):
        add(4.5, f"comparison changed: {ma} -> {mb}")


def layout_groups(entries: list[dict[str, Any]], min_functions: int = 3) -> list[dict[str, Any]]:
    """Struct offset shifts shared by many functions: ``[{delta, offsets, functions}]``.

    A delta (new - old field offset) that at least ``min_functions`` modified functions show
    is one layout change (a field inserted into or removed from a struct), reported once."""
    by_delta: dict[int, dict[str, Any]] = {}
    for e in entries:
        deltas = {int(b) - int(a) for _m, a, b in e.get("offsets_changed", [])}
        for d in deltas:
            g = by_delta.setdefault(d, {"delta": d, "offsets": set(), "functions": []})
            g["functions"].append(e)
            g["offsets"].update(f"{a} -> {b}" for _m, a, b in e["offsets_changed"]
                                if int(b) - int(a) == d)
    out = []
    for d, g in sorted(by_delta.items(), key=lambda kv: -len(kv[1]["functions"])):
        if len(g["functions"]) >= min_functions:
            out.append({"delta": d, "offsets": sorted(g["offsets"], key=lambda s: int(s.split()[0]))[:12],
                        "functions": g["functions"]})
    return out


_KIND_RANK = {k: i for i, k in enumerate(KINDS)}
_CLASS_RANK = {"modified": 0, "new": 1, "deleted": 2, "moved": 3, "unchanged": 4}


def order_changes(changes: list[dict[str, Any]], order: str = "triage") -> list[dict[str, Any]]:
    """Diff report entries in ``order``: ``index`` (as the report lists them: by new-side
    index) or ``triage`` (modified functions patch-like first, by ``triage_kind`` then
    ``triage``; then new, deleted, moved, unchanged, each by index)."""
    if order == "index":
        return list(changes)
    if order != "triage":
        raise ValueError(f"unknown order {order!r}: use triage or index")
    return sorted(changes, key=lambda c: (
        _CLASS_RANK.get(c["classification"], 9),
        _KIND_RANK.get(c.get("triage_kind", "change"), 9) if c["classification"] == "modified" else 0,
        -(c.get("triage") or 0.0) if c["classification"] == "modified" else 0.0))
