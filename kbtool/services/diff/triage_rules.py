"""The rules of the diff triage (:mod:`kbtool.services.diff.triage`): each reads one kind of
change off two aligned bodies and says it with a weight (``add(weight, text, key)``).

- new comparisons (bounds checks), weighed higher when they feed a branch and higher still
  when that branch bails out (an error call, a trap, a return); overflow checks (the sign of a
  sum or product tested, a bound near INT_MAX);
- new cases of a switch (a ``br_table`` with more targets: a new token or state handled);
- inserted traps, early returns, error calls, a call's result now kept, a value reloaded
  after a call, a new call with a computed argument, one new call as the whole change;
- widened arithmetic, signedness changes, changed bounds and allocation sizes;
- error strings and calls named in the explanation, a changed signature.

Pure functions over decoded bodies (``[(op, imms)]``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from kbtool.services.diff.align import _STMT_END
from kbtool.wasm.opcodes import KIND, MNEMONICS


class _Pattern:
    """A module-level pattern compiled on its first ``search``, which then puts the compiled
    pattern in its place (a process that imports the report but triages nothing, such as a
    server's cached answer, compiles none: ~1 ms of start-up each)."""

    __slots__ = ("name", "args")

    def __init__(self, name: str, *args: Any) -> None:
        self.name, self.args = name, args

    def search(self, s: str) -> re.Match[str] | None:
        pat = globals()[self.name] = re.compile(*self.args)
        return pat.search(s)


_ERR_TEXT: Any = _Pattern(
    "_ERR_TEXT",
    r"error|invalid|too (?:many|large|long|big|deep|small)|overflow|underflow|corrupt|out of"
    r"|exceed|illegal|cannot|can't|fail|malformed|limit|unexpected|bad |not enough|abort"
    r"|assert|panic|denied|violation|mismatch|truncat|oversize|negative",
    re.I,
)


_ERR_CALLEE: Any = _Pattern(
    "_ERR_CALLEE",
    r"abort|panic|error|fatal|fail|assert|throw|trap|proc_exit|\bexit\b|_exit|corrupt"
    r"|runerror|overflow|oom|unreachable|raise|die\b|bug\b",
    re.I,
)


_ALLOC: Any = _Pattern("_ALLOC", r"alloc|new\b|_new|create|grow|resize|reserve", re.I)


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
    """``i32.lt_u`` -> (``<``, ``u``); None when not a comparison (a table lookup)."""
    return _CMP_OF[op]


def _cmp_of(op: int) -> tuple[str, str] | None:
    m = MNEMONICS[op]
    if not m or not m.startswith(("i32.", "i64.")):
        return None
    base = m[4:]
    if base == "eqz":
        return ("== 0", "")
    name, _, sign = base.partition("_")
    if name in _CMP and sign in ("", "s", "u"):
        return (_CMP[name], "u" if sign == "u" else "")
    return None


_CMP_OF = [_cmp_of(op) for op in range(len(MNEMONICS))]


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
    cmp = _CMP_OF
    for j in [j for j, t in enumerate(toks) if cmp[t[0]] is not None]:
        out.setdefault(_cmp_sig(toks, j), []).append(j)
    return out


_BR_TABLE = frozenset(i for i, m in enumerate(MNEMONICS) if m == "br_table")


def _new_check(
    tb: Sequence[tuple[int, tuple]],
    j: int,
    add: Callable[..., None],
    err_call: Callable[[int], bool],
    label: Callable[[int], str] = str,
) -> None:
    """The reason of a new comparison at ``tb[j]``: weighed higher when it feeds a branch,
    higher still when that branch bails out (an error call, a trap, a return), or when it
    tests a call's result for NULL (``p = lookup(...); if (!p) ...``) or for an overflow."""
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
    callee = _call_result(tb, j) if sym == "== 0" and follows else None
    if _overflow_check(tb, j, sym, sign):
        add(6.0, f"+ overflow check: {text}")
    elif callee is not None:
        add(5.5, f"+ NULL check of a call's result: call {label(callee)}")
    elif sym == "== 0" and follows and _guards_deref(tb, j):
        add(5.5, f"+ NULL check: {text} (guards a dereference)")
    elif follows and _guards_error(tb, j, err_call):
        add(5.5, f"+ bounds check: {text} (guards an error/return path)", _shape(tb, j))
    else:
        add(5.0 if follows else 3.0, f"+ bounds check: {text}", _shape(tb, j))


def _shape(tb: Sequence[tuple[int, tuple]], j: int) -> tuple | None:
    """A bounds check's shape across functions (its comparison and constant), read by
    :func:`kbtool.services.diff.triage.finish`: the same new check in many functions is one
    macro or inlined helper changed."""
    if j < 1 or KIND[tb[j - 1][0]] not in (_K_I32, _K_I64) or MNEMONICS[tb[j][0]].endswith("eqz"):
        return None
    return ("check", tb[j][0], int(tb[j - 1][1][0]))


def _guards_deref(tb: Sequence[tuple[int, tuple]], j: int) -> bool:
    """``p == 0`` whose branch skips a load through ``p`` (``if (p) v = p->f``: the
    dereference now guarded), the ``br_if``/``if`` within 2 instructions."""
    if j < 1 or MNEMONICS[tb[j - 1][0]] not in ("local.get", "local.tee"):
        return False
    var = tb[j - 1][1][0]
    q = next(
        (q for q in range(j + 1, min(j + 3, len(tb))) if MNEMONICS[tb[q][0]] in ("if", "br_if")),
        None,
    )
    if q is None or (MNEMONICS[tb[q][0]] == "br_if" and int(tb[q][1][0]) != 0):
        return False
    for r in range(q + 1, min(q + 1 + FALLTHROUGH_SPAN, len(tb) - 1)):
        m = MNEMONICS[tb[r][0]]
        if m in ("end", "else", "block", "loop", "if", "br", "br_if", "br_table", "return"):
            return False
        if m == "local.get" and tb[r][1][0] == var and ".load" in MNEMONICS[tb[r + 1][0]]:
            return True
    return False


def _call_result(tb: Sequence[tuple[int, tuple]], j: int) -> int | None:
    """The callee whose result the ``eqz`` at ``j`` tests (``call f; [local.tee]; eqz``)."""
    q = j - 1
    if q > 0 and MNEMONICS[tb[q][0]] == "local.tee":
        q -= 1
    if q >= 0 and MNEMONICS[tb[q][0]] == "call":
        return int(tb[q][1][0])
    return None


_GROWS = ("add", "mul", "shl")
NEAR_MAX = 0x7FFF0000  # unsigned bounds from here up are INT_MAX/UINT_MAX-like limits


def _overflow_check(tb: Sequence[tuple[int, tuple]], j: int, sym: str, sign: str) -> bool:
    """An integer overflow check: the sign of a sum, product or shift tested (``n + m < 0``,
    ``n * 2 > -1``: a wrapped int), or an unsigned bound near INT_MAX/UINT_MAX."""
    if j < 2 or KIND[tb[j - 1][0]] not in (_K_I32, _K_I64):
        return False
    c = int(tb[j - 1][1][0])
    if sym not in ("<", "<=", ">", ">="):
        return False
    if sign == "u":
        return c >= NEAR_MAX or -(1 << 16) < c < -1
    if not (c == 0 or (sym in (">", "<=") and c == -1) or (sym in ("<", ">=") and c == 1)):
        return False  # not a sign test (``< 0``, ``> -1``, ``> 0``, ``< 1``...)
    q = j - 2
    if MNEMONICS[tb[q][0]] == "local.tee" and q:
        q -= 1
    return MNEMONICS[tb[q][0]].split(".")[-1] in _GROWS


FALLTHROUGH_SPAN = 16  # a br_if's fall-through up to its block's end, when this short


def _guards_error(tb: Sequence[tuple[int, tuple]], j: int, err_call: Callable[[int], bool]) -> bool:
    """A comparison whose ``if`` (within 3 instructions) opens a short block ending in an
    error call, a trap, or a return, or whose ``br_if`` skips one (the fall-through up to the
    enclosing block's end bails out: ``if (x < 0) { err = E; return 0; }`` as compiled): a
    check that bails out."""
    q = next(
        (q for q in range(j + 1, min(j + 4, len(tb))) if MNEMONICS[tb[q][0]] in ("if", "br_if")),
        None,
    )
    if q is None:
        return False
    if MNEMONICS[tb[q][0]] == "br_if":
        return _bails_out(tb, q, err_call)
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


def _bails_out(tb: Sequence[tuple[int, tuple]], q: int, err_call: Callable[[int], bool]) -> bool:
    """The ``br_if`` at ``q`` leaves the function (its target block ends the body: an early
    exit, compiled as a branch to the shared epilogue), or the code after it up to the end of
    its block, when short and without nested blocks, ends in a return, a trap or an error
    call."""
    end = _target_end(tb, q)
    if end is not None and (
        end < 0
        or all(MNEMONICS[op] in ("end", "return") for op, _ in tb[end + 1 :])
        or _straight_to_exit(tb, end + 1, err_call)
    ):
        return True  # the branch leaves the function, or lands on a bail-out block
    return _straight_to_exit(tb, q + 1, err_call)


def _straight_to_exit(
    tb: Sequence[tuple[int, tuple]], start: int, err_call: Callable[[int], bool]
) -> bool:
    """The straight code from ``start`` (short, no branch or block) ends in a return, a trap
    or an error call."""
    for r in range(start, min(start + FALLTHROUGH_SPAN, len(tb))):
        m = MNEMONICS[tb[r][0]]
        if m in ("end", "block", "loop", "if", "else", "br", "br_if", "br_table"):
            return False
        if m in ("unreachable", "return") or (KIND[tb[r][0]] == _K_CALL and err_call(tb[r][1][0])):
            return True
    return False


_OPENERS = ("block", "loop", "if")


def _target_end(tb: Sequence[tuple[int, tuple]], q: int) -> int | None:
    """Where the branch at ``q`` (``br_if N``) lands: the index of its target block's ``end``,
    -1 for the function's own label (a return), None for a loop (a branch back)."""
    depth = int(tb[q][1][0])
    d = depth  # find the opener of the target construct
    for r in range(q - 1, -1, -1):
        m = MNEMONICS[tb[r][0]]
        if m == "end":
            d += 1
        elif m in _OPENERS:
            if d == 0:
                if m == "loop":
                    return None
                break
            d -= 1
    else:
        return -1
    d = depth
    for r in range(q + 1, len(tb)):
        m = MNEMONICS[tb[r][0]]
        if m in _OPENERS:
            d += 1
        elif m == "end":
            if d == 0:
                return r
            d -= 1
    return None


_Add = Callable[..., None]  # add(weight, text, key=None)


def _new_comparisons(
    ta: list[tuple[int, tuple]],
    tb: list[tuple[int, tuple]],
    inl: set[int],
    ins_set: set[int],
    add: _Add,
    err_call: Callable[[int], bool],
    label: Callable[[int], str] = str,
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
            _new_check(tb, j, add, err_call, label)


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
                5.0,  # a stale pointer refreshed after a call that may move it: a use-after-free fix
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
    allocs: list[bool] = []  # read on first need: the labels of every call in the body

    def near_alloc() -> bool:
        if not allocs:
            labels = ex.get("calls_added", []) + _calls(tb, callee_label)
            allocs.append(any(_ALLOC.search(s) for s in labels))
        return allocs[0]

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
        elif abs(a) < 1024 and abs(b) < 1024 and near_alloc():
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


def _switch_cases(
    ta: Sequence[tuple[int, tuple]], tb: Sequence[tuple[int, tuple]], add: _Add
) -> None:
    """A switch that dispatches to more places than before (a ``br_table`` with more distinct
    targets, the old and new tables paired in order when both bodies have as many): a new
    case, a token or state now handled apart (as a new ``x == K`` branch would be)."""
    brt = _BR_TABLE
    old = [imms for op, imms in ta if op in brt]
    new = [imms for op, imms in tb if op in brt]
    if len(old) != len(new):
        return
    for a, b in zip(old, new, strict=True):
        na, nb = len({*a[0], a[1]}), len({*b[0], b[1]})
        if nb > na:
            add(
                5.0,
                f"+ switch case: br_table {na} -> {nb} targets ({len(a[0])} -> {len(b[0])} entries)",
            )
