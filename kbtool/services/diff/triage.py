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
- a new computed argument (a multiplication, division or shift) passed to a new call;
- pure refactors (many calls in and out, large size change), inlining churn and struct
  offset shifts rank last (``kind``: ``fix`` > ``change`` > ``churn`` > ``layout``).

Noise that does not count: inserted code matching an old callee's body (inlining), a
comparison the new body has no more of than the old one (it moved), the same comparison
with another constant (a changed bound, read off the constants), and a constant change
``a -> b`` seen in three or more functions (a renumbered enum or limit, :func:`finish`).

Score: the strongest reason, plus a quarter of the second, a sixteenth of the third... (many
new comparisons in a rewrite do not outrank one targeted check), minus a size term (a small
change ranks above a large one with the same reason: a security fix is usually a few
instructions), plus a focus term (the change is a small part of its body: a targeted edit).

Alignment is bounded (:func:`align`): whole-body difflib for small pairs, else common prefix
and suffix, statements, and difflib in the changed windows within a budget of cells, so a
huge module's diff costs seconds, not minutes. Pure functions over decoded bodies.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from typing import Any

from kbtool.services.diff.align import _STMT_END, EXACT_CELLS, align  # noqa: F401 (align: re-exported)
from kbtool.services.diff.ordering import KINDS, layout_groups, order_changes  # noqa: F401 (re-exported)
from kbtool.wasm.opcodes import KIND, MNEMONICS

__all__ = [
    "triage_pair",
    "finish",
    "align",
    "body_grams",
    "TRIAGE_RULES",
    "is_error_text",
    "is_error_callee",
    "layout_groups",
    "KINDS",
]

TRIAGE_RULES = (
    3  # bumped when the rules change: answers cached on disk by older rules are not served
)
GRAM = 4  # n-gram length for recognising an inlined callee's body
MIN_INLINED_RUN = 20  # shorter inserted runs are never taken for inlined code
KEY_CONST = 1 << 12  # constants below this are part of the alignment key
FOCUS_WEIGHT = 1.5  # bonus of a change that is a small part of its body
MAX_REASONS = 6

_ERR_TEXT = re.compile(
    r"error|invalid|too (?:many|large|long|big|deep|small)|overflow|underflow|corrupt|out of"
    r"|exceed|illegal|cannot|can't|fail|malformed|limit|unexpected|bad |not enough|abort"
    r"|assert|panic|denied|violation|mismatch|truncat|oversize|negative",
    re.I,
)
_ERR_CALLEE = re.compile(
    r"abort|panic|error|fatal|fail|assert|throw|trap|proc_exit|\bexit\b|_exit|corrupt"
    r"|runerror|overflow|oom|unreachable|raise|die\b|bug\b",
    re.I,
)
_ALLOC = re.compile(r"alloc|new\b|_new|create|grow|resize|reserve", re.I)

_OPS = {m: i for i, m in enumerate(MNEMONICS) if m}
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
    """Alignment key: the opcode, with a small constant's value (locals are renumbered and
    addresses relocated by any rebuild, small constants are not; a changed bound stays paired
    by position, see the replace handling)."""
    op = tok[0]
    if KIND[op] in (_K_I32, _K_I64):
        c = int(tok[1][0])
        if -KEY_CONST < c < KEY_CONST:
            return (op, c)
    return (op,)


def _gram_key(tok: tuple[int, tuple]) -> tuple:
    """n-gram key for inlining: the opcode with its small constant or field offset (locals
    are renumbered by inlining, constants and offsets are not)."""
    op, imms = tok
    k = KIND[op]
    if k in (_K_I32, _K_I64):
        c = int(imms[0])
        return (op, c if -(1 << 16) < c < (1 << 16) else None)
    if k == _K_MEM and len(imms) > 1:
        return (op, imms[1])
    return (op,)


def body_grams(body: Sequence[tuple[int, tuple]], n: int = GRAM) -> frozenset[tuple]:
    """The n-grams of a callee's body that :func:`triage_pair` (``inlined``) recognises."""
    keys = [_gram_key(t) for t in body]
    return frozenset(tuple(keys[q : q + n]) for q in range(len(keys) - n + 1))


_ARGS_ARITH = frozenset(
    i
    for i, m in enumerate(MNEMONICS)
    if m
    and m.split(".")[-1] in ("mul", "div_u", "div_s", "rem_u", "rem_s", "shl", "shr_u", "shr_s")
)


def _new_arith_args(tb: Sequence[tuple[int, tuple]], j: int, ins: set[int]) -> list[str]:
    """Multiplications, divisions and shifts inserted right before an inserted call (within
    its statement): a new value computed and passed (a limit, a size, a debt)."""
    out: list[str] = []
    for q in range(j - 1, max(-1, j - 16), -1):
        if q not in ins or tb[q][0] in _STMT_END:
            break
        if tb[q][0] in _ARGS_ARITH:
            out.append(MNEMONICS[tb[q][0]])
    return sorted(set(out))


def _runs(idx: list[int]) -> list[list[int]]:
    """Consecutive runs of sorted indices."""
    out: list[list[int]] = []
    for j in idx:
        if out and out[-1][-1] == j - 1:
            out[-1].append(j)
        else:
            out.append([j])
    return out


def _cmp_sig(toks: Sequence[tuple[int, tuple]], j: int) -> tuple:
    """What a comparison compares, without local numbers: its opcode and constant operands."""
    ops = []
    for q in (j - 2, j - 1):
        if q >= 0 and KIND[toks[q][0]] in (_K_I32, _K_I64):
            ops.append(int(toks[q][1][0]))
        elif q >= 0:
            ops.append(MNEMONICS[toks[q][0]].split(".")[-1])
    return (toks[j][0], *ops)


def _rebound(g: tuple, h: tuple) -> bool:
    """Two comparison signatures that differ only in their constants."""
    return (
        len(g) == len(h)
        and g[0] == h[0]
        and g != h
        and all(
            x == y or (isinstance(x, int) and isinstance(y, int)) for x, y in zip(g, h, strict=True)
        )
    )


def _cmp_sites(toks: Sequence[tuple[int, tuple]]) -> dict[tuple, list[int]]:
    out: dict[tuple, list[int]] = {}
    for j, (op, _) in enumerate(toks):
        if _cmp(op) is not None:
            out.setdefault(_cmp_sig(toks, j), []).append(j)
    return out


def _new_check(
    tb: Sequence[tuple[int, tuple]],
    j: int,
    add: Callable[..., None],
    err_call: Callable[[int], bool],
) -> None:
    """The reason of a new comparison at ``tb[j]``: weighed higher when it feeds a branch,
    higher still when that branch bails out (an error call, a trap, a return)."""
    sym, sign = _cmp(tb[j][0]) or ("?", "")
    follows = any(
        MNEMONICS[tb[q][0]] in ("br_if", "if", "select", "br_table")
        for q in range(j + 1, min(j + 4, len(tb)))
    )
    if sym == "== 0":
        text = f"{_operand(tb[j - 1] if j else None)} == 0"
    else:
        a = _operand(tb[j - 2] if j >= 2 else None)
        b = _operand(tb[j - 1] if j >= 1 else None)
        text = f"{a} {sym}{sign} {b}"
    if follows and _guards_error(tb, j, err_call):
        add(5.5, f"+ bounds check: {text} (guards an error/return path)")
    else:
        add(5.0 if follows else 3.0, f"+ bounds check: {text}")


def _guards_error(tb: Sequence[tuple[int, tuple]], j: int, err_call: Callable[[int], bool]) -> bool:
    """A comparison whose ``if`` (within 3 instructions) opens a short block ending in an
    error call, a trap, or a return: a check that bails out."""
    q = next((q for q in range(j + 1, min(j + 4, len(tb))) if MNEMONICS[tb[q][0]] == "if"), None)
    if q is None:
        return False
    depth = 0
    for r in range(q + 1, min(q + 40, len(tb))):
        m = MNEMONICS[tb[r][0]]
        if m in ("block", "loop", "if"):
            depth += 1
        elif m == "end":
            if depth == 0:
                return False
            depth -= 1
        elif m in ("unreachable", "return") or (
            KIND[tb[r][0]] == _K_CALL and err_call(tb[r][1][0])
        ):
            return True
        elif m == "else" and depth == 0:
            return False
    return False


_Add = Callable[..., None]  # add(weight, text, key=None)


def _align_bodies(
    ta: list[tuple[int, tuple]], tb: list[tuple[int, tuple]], exact_cells: int, add: _Add
) -> tuple[list[int], list[int], list[tuple[int, int]], list[tuple[int, int, int, int]]]:
    """Inserted (``tb`` indices), deleted (``ta`` indices), constant-changed pairs and
    unequal-length replaced runs of two aligned bodies; opcode swaps go to ``add``."""
    inserted: list[int] = []
    deleted: list[int] = []
    changed_pairs: list[tuple[int, int]] = []
    replaces: list[tuple[int, int, int, int]] = []
    if not (ta and tb):
        return inserted, deleted, changed_pairs, replaces
    for tag, i1, i2, j1, j2 in align([_key(t) for t in ta], [_key(t) for t in tb], exact_cells):
        if tag == "equal":
            for i, j in zip(range(i1, i2), range(j1, j2), strict=True):
                if ta[i][1] != tb[j][1]:
                    changed_pairs.append((i, j))
            continue
        if tag == "replace" and i2 - i1 == j2 - j1:
            if all(ta[i][0] == tb[j][0] for i, j in zip(range(i1, i2), range(j1, j2), strict=True)):
                # the same instructions with other constants: changed, not inserted
                changed_pairs.extend(zip(range(i1, i2), range(j1, j2), strict=True))
                continue
            for i, j in zip(range(i1, i2), range(j1, j2), strict=True):
                _op_change(ta[i][0], tb[j][0], add)
        elif tag == "replace":
            replaces.append((i1, i2, j1, j2))
        inserted.extend(range(j1, j2))
        deleted.extend(range(i1, i2))
    return inserted, deleted, changed_pairs, replaces


def _inlined_sites(
    tb: list[tuple[int, tuple]], inserted: list[int], inlined: Sequence[frozenset[tuple]]
) -> set[int]:
    """Inserted code that matches the body of a callee now called less often: inlining."""
    inl: set[int] = set()
    if not (inlined and inserted):
        return inl
    grams: set[tuple] = set().union(*inlined)
    for run in _runs(inserted):
        if len(run) < MIN_INLINED_RUN:
            continue  # a few new instructions are the change itself
        keys = [_gram_key(tb[j]) for j in run]
        cov: set[int] = set()
        for q in range(len(run) - GRAM + 1):
            if tuple(keys[q : q + GRAM]) in grams:
                cov.update(run[q : q + GRAM])
        if len(cov) >= 0.7 * len(run):
            inl |= cov
    return inl


def _new_comparisons(
    ta: list[tuple[int, tuple]],
    tb: list[tuple[int, tuple]],
    inl: set[int],
    ins_set: set[int],
    add: _Add,
    err_call: Callable[[int], bool],
) -> None:
    """New comparisons: those the new body has more of than the old one (by opcode and
    constant operands, wherever the alignment put them: a comparison that moved is not new),
    apart from inlined code; each reported at an inserted site when there is one."""
    sa, sb = _cmp_sites(ta), _cmp_sites(tb)
    deficit = {
        g: len(js) - len(sb.get(g, ())) for g, js in sa.items() if len(js) > len(sb.get(g, ()))
    }
    for sig, js in sb.items():
        js = [j for j in js if j not in inl]
        surplus = len(js) - len(sa.get(sig, ()))
        if surplus <= 0:
            continue
        js = [j for j in js if j in ins_set] + [j for j in js if j not in ins_set]
        m = MNEMONICS[sig[0]]
        narrow = _OPS.get("i32." + m[4:]) if m.startswith("i64.") else None
        for j in js[:surplus]:
            # the same comparison with another constant: a changed bound (read off the
            # constants), or the same comparison made 64-bit: widened
            alt = next(
                (
                    g
                    for g, k in deficit.items()
                    if k > 0 and (_rebound(g, sig) or (narrow is not None and g[0] == narrow))
                ),
                None,
            )
            if alt is not None:
                deficit[alt] -= 1
                if alt[0] != sig[0]:
                    add(6.0, f"arith widened: {MNEMONICS[alt[0]]} -> {m}")
                continue
            _new_check(tb, j, add, err_call)


def _inserted_reasons(
    tb: list[tuple[int, tuple]],
    inserted: list[int],
    inl: set[int],
    ins_set: set[int],
    add: _Add,
    err_call: Callable[[int], bool],
    callee_label: Callable[[int], str],
) -> None:
    """Reasons read off what was inserted (comparisons apart: :func:`_new_comparisons`)."""
    for j in inserted:
        if j in inl:
            continue
        op, imms = tb[j]
        m = MNEMONICS[op]
        if _cmp(op) is not None:
            continue
        elif m == "unreachable":
            add(4.0, "+ trap (unreachable)")
        elif m == "return":
            add(3.0, "+ early return")
        elif (
            m in ("local.set", "local.tee")
            and j
            and j - 1 not in ins_set
            and KIND[tb[j - 1][0]] == _K_CALL
        ):
            add(
                4.0,
                f"+ call result kept: call {callee_label(tb[j - 1][1][0])} -> "
                f"l{imms[0]} (refreshed after the call)",
            )
        elif KIND[op] == _K_MEM and ".load" in m:
            c_at = next(
                (q for q in range(j - 1, max(-1, j - 4), -1) if KIND[tb[q][0]] == _K_CALL), None
            )
            if c_at is not None and any(tb[q] == tb[j] for q in range(max(0, c_at - 40), c_at)):
                add(3.5, f"+ value reloaded after call {callee_label(tb[c_at][1][0])}")
        elif KIND[op] == _K_CALL:
            if err_call(imms[0]):
                add(5.0, f"+ error path: call {callee_label(imms[0])}")
            else:
                arith = _new_arith_args(tb, j, ins_set)
                if arith:
                    add(
                        3.5,
                        f"+ new computed argument ({', '.join(arith)}) to call "
                        f"{callee_label(imms[0])}",
                    )
        elif m in ("i64.extend_i32_u", "i64.extend_i32_s") and any(
            MNEMONICS[tb[q][0]] in _WIDE for q in range(j + 1, min(j + 5, len(tb)))
        ):
            add(5.0, f"arith widened: {m} before {_next_arith(tb, j)}")


def _constant_reasons(
    ex: dict[str, Any],
    ta: list[tuple[int, tuple]],
    tb: list[tuple[int, tuple]],
    changed_pairs: list[tuple[int, int]],
    add: _Add,
    callee_label: Callable[[int], str],
) -> int:
    """Same instruction, other immediates: a changed bound or allocation size; returns how
    many small constants changed."""
    allocs = any(_ALLOC.search(s) for s in ex.get("calls_added", []) + _calls(tb, callee_label))
    consts = 0
    for i, j in changed_pairs:
        op = ta[i][0]
        if KIND[op] not in (_K_I32, _K_I64):
            continue
        a, b = int(ta[i][1][0]), int(tb[j][1][0])
        if not (-(1 << 20) < a < (1 << 20) and -(1 << 20) < b < (1 << 20)):
            continue  # addresses
        consts += 1
        near_cmp = any(_cmp(tb[q][0]) for q in range(j + 1, min(j + 3, len(tb))))
        if near_cmp:
            add(4.0, f"bound changed: {_hex(a)} -> {_hex(b)}", ("const", a, b))
        elif allocs and abs(a) < 1024 and abs(b) < 1024:
            add(2.5, f"size constant changed: {_hex(a)} -> {_hex(b)}", ("const", a, b))
    return consts


def _summary_reasons(ex: dict[str, Any], add: _Add) -> None:
    """Reasons from the explanation: new error strings and calls, a changed signature."""
    for s in ex.get("strings_added", []):
        if is_error_text(s):
            add(6.0, f"+ error string: {s[:60]!r}")
    for name in ex.get("calls_added", []):
        if _ERR_CALLEE.search(name):
            add(5.0, f"+ error path: call {name}")
    if ex.get("type_from"):
        add(1.5, f"signature {ex['type_from']} -> {ex['type_to']}")


def _classify(
    ex: dict[str, Any],
    reasons: list[tuple[float, str, Any]],
    add: _Add,
    amount: int,
    inl: set[int],
    inserted: list[int],
) -> tuple[str, bool]:
    """The entry's kind (``fix``, ``layout``, ``churn``, ``change``) and whether it is churn;
    a kind without signals gets its one explaining reason."""
    n_calls = len(ex.get("calls_added", [])) + len(ex.get("calls_removed", []))
    only_offsets = (
        bool(ex.get("offsets_changed"))
        and not any(
            ex.get(k)
            for k in (
                "calls_added",
                "calls_removed",
                "strings_added",
                "strings_removed",
                "consts_changed",
                "consts_added",
                "consts_removed",
                "type_from",
            )
        )
        and ex.get("instr_to") == ex.get("instr_from")
    )
    churn = n_calls >= 6 or amount >= 400
    if inl and len(inl) * 2 >= len(inserted):
        add(
            0.0,
            f"inlining: {len(inl):,} of {len(inserted):,} inserted instruction(s) are "
            "a callee's body",
        )
    signals = [(w, t, k) for w, t, k in reasons if w > 0]
    if only_offsets and not signals:
        shifts = ", ".join(f"{m} {a} -> {b}" for m, a, b in ex["offsets_changed"][:2])
        reasons.append((0.0, f"offset shift only: {shifts}", None))
        return "layout", churn
    if not signals:
        if churn:
            reasons.append(
                (
                    0.0,
                    f"refactor/inlining churn: {n_calls} call change(s), "
                    f"{amount:,} instruction(s) differ",
                    None,
                )
            )
            return "churn", churn
        reasons.append((0.0, _plain(ex), None))
        return "change", churn
    return "fix", churn


def triage_pair(
    ex: dict[str, Any],
    ta: list[tuple[int, tuple]],
    tb: list[tuple[int, tuple]],
    callee_label: Callable[[int], str],
    callee_strings: Callable[[int], Sequence[str]],
    inlined: Sequence[frozenset[tuple]] = (),
    *,
    exact_cells: int = EXACT_CELLS,
    private: bool = False,
) -> dict[str, Any]:
    """``{triage, reasons, triage_kind}`` of one modified pair (with ``private``: also the
    weighed reasons :func:`finish` reads across functions, then drops).

    ``ex``: the explanation (:func:`kbtool.services.diff.explain.explain_pair`); ``ta``/``tb``:
    the decoded bodies (``[(op, imms)]``, empty when unavailable); ``callee_label`` /
    ``callee_strings``: name and strings of a new-side function index; ``inlined``: n-grams
    (:func:`body_grams`) of old-side callee bodies (inserted code matching them is inlining,
    not a change of its own)."""
    reasons: list[tuple[float, str, Any]] = []
    seen: set[str] = set()

    def add(w: float, text: str, key: Any = None) -> None:
        if text not in seen:
            seen.add(text)
            reasons.append((w, text, key))

    err_memo: dict[int, bool] = {}

    def err_call(i: int) -> bool:
        if i not in err_memo:
            err_memo[i] = is_error_callee(callee_label(i), callee_strings(i))
        return err_memo[i]

    inserted, deleted, changed_pairs, replaces = _align_bodies(ta, tb, exact_cells, add)
    inl = _inlined_sites(tb, inserted, inlined)
    for i1, i2, j1, j2 in replaces:
        _width_change(ta[i1:i2], tb[j1:j2], add)
    ins_set = set(inserted)
    if ta and tb:
        _new_comparisons(ta, tb, inl, ins_set, add, err_call)
    _inserted_reasons(tb, inserted, inl, ins_set, add, err_call, callee_label)
    consts = _constant_reasons(ex, ta, tb, changed_pairs, add, callee_label)
    _summary_reasons(ex, add)
    size = abs(ex.get("instr_to", 0) - ex.get("instr_from", 0))
    # what changed: inserted and deleted instructions (inlined code apart) and changed
    # small constants (field offsets and relocated addresses are the layout's, not its own)
    # (deleted code weighs half: a fix adds; what left may live on in a caller or callee)
    amount = len(inserted) - len(inl) + len(deleted) // 2 + consts if (ta and tb) else size
    body = max(len(ta), len(tb), 1)
    kind, churn = _classify(ex, reasons, add, amount, inl, inserted)
    out = {
        "_signals": reasons,
        "_amount": amount,
        "_body": body,
        "_churn": churn,
        "triage_kind": kind,
    }
    _score(out)
    if not private:
        finish([out])
    return out


def _score(t: dict[str, Any]) -> None:
    """``triage`` and ``reasons`` from the weighed reasons: the strongest counts fully, each
    next one a quarter as much (many checks in a rewrite do not outrank one targeted check);
    a small change ranks above a large one with the same reasons, and a change that is a
    small part of its body (a targeted edit) above one that rewrote it."""
    reasons = sorted(t["_signals"], key=lambda r: -r[0])
    amount, body = t["_amount"], t["_body"]
    if t["triage_kind"] == "layout":
        score = 0.0
    else:
        signal = sum(
            w / (4**k) for k, (w, _, _) in enumerate(r for r in reasons if r[0] > 0) if k < 4
        )
        focus = 1.0 - min(1.0, 4.0 * amount / body)  # 1: a few instructions of a big body
        score = (
            signal
            + 1.0
            - math.log2(1 + amount) / 3.0
            - (1.0 if t["_churn"] else 0.0)
            + (FOCUS_WEIGHT * focus if signal > 0 else 0.0)
        )
    t["triage"] = round(score, 2)
    t["reasons"] = [text for _, text, _ in reasons[:MAX_REASONS]]


def finish(entries: list[dict[str, Any]], min_functions: int = 3) -> None:
    """Cross-function rules, in place, then drops the private fields: the same constant
    change (``a -> b``) in ``min_functions`` or more functions is a renumbering (an enum, an
    error code, a limit moved by a rebuild), reported once per function as such and not
    weighed as a bound of its own."""
    seen: dict[tuple, int] = {}
    for e in entries:
        for k in {k for _w, _t, k in e.get("_signals", ()) if k is not None}:
            seen[k] = seen.get(k, 0) + 1
    for e in entries:
        sig = e.get("_signals")
        if sig is None:
            continue
        shared = [r for r in sig if r[2] is not None and seen[r[2]] >= min_functions]
        if shared:
            keep = [r for r in sig if r not in shared]
            a, b = shared[0][2][1], shared[0][2][2]
            keep.append(
                (
                    0.0,
                    f"constant renumbered in {seen[shared[0][2]]} functions: "
                    f"{_hex(a)} -> {_hex(b)}",
                    None,
                )
            )
            e["_signals"] = keep
            if e["triage_kind"] == "fix" and not any(w > 0 for w, _, _ in keep):
                e["triage_kind"] = "change"
            _score(e)
        for k in ("_signals", "_amount", "_body", "_churn"):
            e.pop(k, None)


_WIDE = ("i64.mul", "i64.add", "i64.shl", "i64.sub")


def _width_change(wa: Sequence, wb: Sequence, add: Callable[..., None]) -> None:
    """A replaced run of other length: 32-bit arithmetic gone and 64-bit arithmetic come
    (size_t arithmetic widened)."""
    ca = sum(1 for op, _ in wa if MNEMONICS[op] in _WIDE)
    cb = sum(1 for op, _ in wb if MNEMONICS[op] in _WIDE)
    ext = any(MNEMONICS[op].startswith("i64.extend_i32") for op, _ in wb)
    na = sum(1 for op, _ in wa if MNEMONICS[op] in ("i32.mul", "i32.add", "i32.shl", "i32.sub"))
    if cb > ca and ext and na:
        add(4.5, f"arith widened: {cb - ca} more 64-bit op(s) over extended 32-bit values")


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


def _op_change(a: int, b: int, add: Callable[..., None]) -> None:
    ma, mb = MNEMONICS[a], MNEMONICS[b]
    if ma == mb:
        return
    ta, _, ra = ma.partition(".")
    tb_, _, rb = mb.partition(".")
    if (
        ta == "i32"
        and tb_ == "i64"
        and ra == rb
        and (ra in ("mul", "add", "sub", "shl", "div_u", "div_s") or _cmp(a))
    ):
        add(6.0, f"arith widened: {ma} -> {mb}")
    elif ta == tb_ and ra[:-2] == rb[:-2] and {ra[-2:], rb[-2:]} == {"_s", "_u"}:
        add(5.0, f"signedness: {ma} -> {mb}")
    elif _cmp(a) and _cmp(b):
        add(4.5, f"comparison changed: {ma} -> {mb}")
