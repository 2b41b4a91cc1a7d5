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
- a new computed argument (a multiplication, division or shift) passed to a new call; one
  new call as all the new code (``+ new call: f (the only code added)``, :func:`finish`);
- the rules of :mod:`kbtool.services.diff.triage_rules` also read overflow checks (the sign
  of a sum tested, a bound near INT_MAX), NULL checks of a call's result or before a
  dereference, branches to or over a bail-out block, and new switch cases;
- pure refactors (many calls in and out, large size change), inlining churn and struct
  offset shifts rank last (``kind``: ``fix`` > ``change`` > ``churn`` > ``layout``).

Noise that does not count: inserted code matching an old callee's body (inlining), a
comparison the new body has no more of than the old one (it moved), the same comparison
with another constant (a changed bound, read off the constants), and a constant change
``a -> b`` seen in three or more functions (a renumbered enum or limit, :func:`finish`),
and deleted code that the diff inserted into another function (moved by a change of
inlining, :func:`finish`). The same new bounds check in twelve or more functions (a macro or
an inlined helper changed) weighs less in each, so distinct fixes come before its copies.

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
from collections.abc import Callable, Sequence
from typing import Any

from kbtool.services.diff.align import EXACT_CELLS, align  # noqa: F401 (align: re-exported)
from kbtool.services.diff.ordering import KINDS, layout_groups, order_changes  # noqa: F401 (re-exported)
from kbtool.services.diff.triage_rules import (
    _K_CALL,
    _K_I32,
    _K_I64,
    _K_MEM,
    _Add,
    _constant_reasons,
    _hex,
    _inserted_reasons,
    _new_comparisons,
    _op_change,
    _plain,
    _summary_reasons,
    _switch_cases,
    _width_change,
    is_error_callee,
    is_error_text,
)
from kbtool.wasm.opcodes import KIND

__all__ = [
    "triage_pair",
    "finish",
    "finish_kept",
    "key_counts",
    "moved_counts",
    "PRIVATE",
    "align",
    "body_grams",
    "TRIAGE_RULES",
    "is_error_text",
    "is_error_callee",
    "layout_groups",
    "KINDS",
]

TRIAGE_RULES = (
    4  # bumped when the rules change: answers cached on disk by older rules are not served
)
GRAM = 4  # n-gram length for recognising an inlined callee's body
MIN_INLINED_RUN = 20  # shorter inserted runs are never taken for inlined code
KEY_CONST = 1 << 12  # constants below this are part of the alignment key
FOCUS_WEIGHT = 1.5  # bonus of a change that is a small part of its body
MAX_REASONS = 6
MOVED_GRAM = 8  # n-gram length for code moved between functions (longer: any function's)
SOLO_MAX = 24  # longest run of new code taken for "one new call, the only change"
SOLO_DELETED = 8  # deleted instructions (not moved) that still leave a call "the only change"
SYSTEMATIC = 12  # functions with the same new check from which it is one change copied
SYSTEMATIC_WEIGHT = 0.6
CHURN_AMOUNT = 400  # instructions changed from which a change is a rewrite
PRIVATE = (
    "_signals",
    "_amount",
    "_body",
    "_churn",
    "_del_keys",
    "_ins_grams",
    "_deleted",
    "_solo",
    "_moved",
)


def _key(tok: tuple[int, tuple]) -> tuple:
    """Alignment key: the opcode, with a small constant's value (locals are renumbered and
    addresses relocated by any rebuild, small constants are not; a changed bound stays paired
    by position, see the replace handling)."""
    op = tok[0]
    if _IS_CONST[op]:
        c = int(tok[1][0])
        if -KEY_CONST < c < KEY_CONST:
            return (op, c)
    return _OP_KEY[op]


_IS_CONST = [k in (_K_I32, _K_I64) for k in KIND]
_OP_KEY = [(op,) for op in range(len(KIND))]  # one tuple per opcode, shared


def _keys(toks: Sequence[tuple[int, tuple]]) -> list[tuple]:
    """``[_key(t) for t in toks]`` in one comprehension (no call per instruction)."""
    isc, opk, lim = _IS_CONST, _OP_KEY, KEY_CONST
    return [(op, c) if isc[op] and -lim < (c := int(im[0])) < lim else opk[op] for op, im in toks]


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


def _runs(idx: list[int]) -> list[list[int]]:
    """Consecutive runs of sorted indices."""
    out: list[list[int]] = []
    for j in idx:
        if out and out[-1][-1] == j - 1:
            out[-1].append(j)
        else:
            out.append([j])
    return out


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
    for tag, i1, i2, j1, j2 in align(_keys(ta), _keys(tb), exact_cells):
        if tag == "equal":
            if ta[i1:i2] == tb[j1:j2]:
                continue  # the same opcodes (equal keys) with the same immediates
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
    churn = n_calls >= 6 or amount >= CHURN_AMOUNT
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
    _switch_cases(ta, tb, add)
    ins_set = set(inserted)
    if ta and tb:
        _new_comparisons(ta, tb, inl, ins_set, add, err_call, callee_label)
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
        **_moves(ex, ta, tb, inserted, deleted, inl, callee_label),
    }
    _score(out)
    if not private:
        finish([out])
    return out


def _moves(
    ex: dict[str, Any],
    ta: list[tuple[int, tuple]],
    tb: list[tuple[int, tuple]],
    inserted: list[int],
    deleted: list[int],
    inl: set[int],
    callee_label: Callable[[int], str],
) -> dict[str, Any]:
    """What :func:`finish` reads across functions: the deleted runs (``_del_keys``: their
    n-gram keys, for code that moved into another function), the n-grams of the inserted
    code (``_ins_grams``), how many instructions were deleted (``_deleted``), and the one new
    call inserted when it is all the new code (``_solo``: its label and run length)."""
    if not (ta and tb):
        return {}
    del_keys = [[_gram_key(ta[i]) for i in run] for run in _runs(deleted) if len(run) >= MOVED_GRAM]
    ins_grams: set[tuple] = set()
    for run in _runs(inserted):
        keys = [_gram_key(tb[j]) for j in run]
        ins_grams.update(tuple(keys[q : q + MOVED_GRAM]) for q in range(len(keys) - MOVED_GRAM + 1))
    return {
        "_del_keys": del_keys,
        "_ins_grams": frozenset(ins_grams),
        "_deleted": len(deleted),
        "_solo": _solo_call(ex, tb, [j for j in inserted if j not in inl], callee_label),
    }


def _solo_call(
    ex: dict[str, Any], tb: list[tuple[int, tuple]], ins: list[int], label: Callable[[int], str]
) -> tuple[str, int] | None:
    """All the new code is one short run holding one call to a function the old body did not
    call (``setminordebt(g)``, a missing ``free``, a lock): its callee's label and length."""
    runs = _runs(ins)
    if len(runs) != 1 or len(runs[0]) > SOLO_MAX:
        return None
    calls = [tb[j][1][0] for j in runs[0] if KIND[tb[j][0]] == _K_CALL]
    if len(calls) != 1 or label(calls[0]) not in ex.get("calls_added", []):
        return None
    return label(calls[0]), len(runs[0])


def moved_counts(entries: list[dict[str, Any]]) -> None:
    """Code deleted from one function and inserted into another (inlining or outlining
    moved it between them) is neither's change: each entry's deleted runs that the diff's
    inserted code covers (by :data:`MOVED_GRAM`-grams) are counted into ``_moved`` (read by
    :func:`finish_kept`), and the n-grams are dropped. Bodies only: no label enters."""
    grams: set[tuple] = set()
    for e in entries:
        grams |= e.get("_ins_grams", frozenset())
    for e in entries:
        e.pop("_ins_grams", None)
        keys_list = e.pop("_del_keys", None)
        if "_deleted" not in e:
            continue
        moved = 0
        for keys in keys_list or ():
            cov: set[int] = set()
            for q in range(len(keys) - MOVED_GRAM + 1):
                if tuple(keys[q : q + MOVED_GRAM]) in grams:
                    cov.update(range(q, q + MOVED_GRAM))
            if len(cov) >= 0.7 * len(keys):
                moved += len(cov)
        e["_moved"] = moved


def _moved_out(entries: list[dict[str, Any]]) -> None:
    """Moved code (``_moved``, :func:`moved_counts`) no longer counts in ``_amount``; then a
    function whose only new code is one new call (:func:`_solo_call`) and little else gets
    its reason."""
    for e in entries:
        if "_deleted" not in e:
            continue
        moved = e["_moved"]
        changed = False
        if moved:
            e["_amount"] = max(0, e["_amount"] - moved // 2)
            e["_churn"] = e["_churn"] and e["_amount"] >= CHURN_AMOUNT
            e["_signals"].append(
                (0.0, f"moved: {moved:,} deleted instruction(s) now in another function", None)
            )
            changed = True
        solo = e["_solo"]
        if (
            solo is not None
            and e["_deleted"] - moved <= max(solo[1], SOLO_DELETED)
            and e["triage_kind"] != "layout"
        ):
            e["_signals"].append((5.0, f"+ new call: {solo[0]} (the only code added)", None))
            if e["triage_kind"] != "fix":
                e["triage_kind"] = "fix"
            changed = True
        if changed:
            _score(e)


def _systematic(entries: list[dict[str, Any]], seen: dict[tuple, int]) -> None:
    """The same new bounds check (comparison and constant) in :data:`SYSTEMATIC` or more
    functions is one macro or inlined helper changed: each copy weighs
    :data:`SYSTEMATIC_WEIGHT` as much and says so, so that distinct fixes come before the
    copies of one (the copies stay listed, in order)."""
    for e in entries:
        sig = e.get("_signals")
        if not sig:
            continue
        many = [
            r for r in sig if r[2] is not None and r[2][0] == "check" and seen[r[2]] >= SYSTEMATIC
        ]
        if not many:
            continue
        e["_signals"] = [
            (w * SYSTEMATIC_WEIGHT, f"{t} (new in {seen[k]} functions)", None) if r in many else r
            for r in sig
            for w, t, k in [r]
        ]
        _score(e)


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
    weighed as a bound of its own. :func:`moved_counts` then :func:`finish_kept`."""
    moved_counts(entries)
    finish_kept(entries, min_functions)


def key_counts(entries: list[dict[str, Any]]) -> dict[tuple, int]:
    """In how many entries each cross-function key (a bounds check's shape, a constant
    change) is among the weighed reasons."""
    seen: dict[tuple, int] = {}
    for e in entries:
        for k in {k for _w, _t, k in e.get("_signals", ()) if k is not None}:
            seen[k] = seen.get(k, 0) + 1
    return seen


def finish_kept(
    entries: list[dict[str, Any]], min_functions: int = 3, seen: dict[tuple, int] | None = None
) -> None:
    """:func:`finish` of entries whose moved code is counted already (:func:`moved_counts`):
    what a kept changelog re-runs over its functions' weighed reasons after a few of them
    were built again (a rename they read). ``seen``: :func:`key_counts` of every entry of
    the diff (then ``entries`` may be a few of them)."""
    _moved_out(entries)
    if seen is None:
        seen = key_counts(entries)
    _systematic(entries, seen)
    for e in entries:
        sig = e.get("_signals")
        if sig is None:
            continue
        shared = [
            r
            for r in sig
            if r[2] is not None and r[2][0] == "const" and seen[r[2]] >= min_functions
        ]
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
        for k in PRIVATE:
            e.pop(k, None)
