"""Why a function counts as modified, in the words a reverse engineer uses.

For one paired (old, new) function: calls added/removed (by name), strings added/removed,
constants changed (``0x10 -> 0x18``) or added/removed, memory offsets changed
(``i32.load offset 348 -> 356``: a struct layout change), type signature, size and loop
changes, callers added/removed. ``weight`` ranks changes (how much changed); ``items`` is the
same explanation as short lines for every surface (terminal, TUI, web, MCP).

Constants that look like linear-memory addresses (``|c| >= ADDRESS_MIN``, relocated by any
rebuild) are only reported when the non-address constants do not already explain the change
and the address count changed. Pure functions over stored rows.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable, Sequence
from typing import TypedDict

from kbtool.kb.queries.shapes import MatchingRow, MemOp
from kbtool.wasm.opcodes import MNEMONICS

ADDRESS_MIN = 1024
# memarg offsets at least this large are static (.data/.bss) addresses folded into the access,
# which every rebuild relocates; smaller ones are field offsets of a struct
FIELD_OFFSET_MAX = 4096
MAX_ITEMS = 12  # per list in one explanation


class Explanation(TypedDict):
    """Why one pair counts as modified (:func:`explain_pair`); ``items`` says it in lines."""

    calls_added: list[str]  # callee labels (name, import ``module.field`` or ``func[N]``)
    calls_removed: list[str]
    callers_added: list[str]
    callers_removed: list[str]
    strings_added: list[str]
    strings_removed: list[str]
    consts_changed: list[list[int]]  # [old, new]
    consts_added: list[int]
    consts_removed: list[int]
    offsets_changed: list[list[str | int]]  # [mnemonic, old offset, new offset]
    type_from: str | None  # both None when the signature is the same
    type_to: str | None
    instr_from: int
    instr_to: int
    loops_from: int
    loops_to: int
    ops_differ: int | None  # differing instructions of same-length streams, else None
    op_changes: list[list[str]]  # [old mnemonic, new mnemonic], the first few
    address_consts: int  # address-like constants on one side only
    items: list[str]
    weight: float


class ConstChanges(TypedDict):
    """:func:`const_changes`: small constants changed in place, else added and removed."""

    changed: list[tuple[int, int]]  # (old, new)
    added: list[int]
    removed: list[int]


class _OpChanges(TypedDict):
    ops_differ: int | None
    op_changes: list[list[str]]


def _small(consts: list[int]) -> list[int]:
    return [c for c in dict.fromkeys(consts) if -ADDRESS_MIN < c < ADDRESS_MIN]


def _hex(c: int) -> str:
    return str(c) if -10 < c < 10 else (f"-0x{-c:x}" if c < 0 else f"0x{c:x}")


def const_changes(old: list[int], new: list[int]) -> ConstChanges:
    """Changed (same position among the small constants), added and removed constants."""
    so, sn = _small(old), _small(new)
    changed: list[tuple[int, int]] = []
    if len(so) == len(sn):
        changed = [(a, b) for a, b in zip(so, sn, strict=True) if a != b]
        if changed and len(changed) <= max(1, len(so) // 2):
            return {"changed": changed[:MAX_ITEMS], "added": [], "removed": []}
    setn, seto = set(sn), set(so)
    return {
        "changed": [],
        "added": [c for c in sn if c not in seto][:MAX_ITEMS],
        "removed": [c for c in so if c not in setn][:MAX_ITEMS],
    }


def _mem_ops(ops: Iterable[Sequence[int]]) -> list[MemOp]:
    """Memory accesses as records (stored rows are ``[op, offset, width]`` lists)."""
    return [m if isinstance(m, MemOp) else MemOp(*map(int, m)) for m in ops]


def offset_changes(
    old: Iterable[Sequence[int]], new: Iterable[Sequence[int]]
) -> list[tuple[str, int, int]]:
    """``(mnemonic, old offset, new offset)`` of field offsets (below ``FIELD_OFFSET_MAX``)
    that moved: aligned by position when the access sequences (op, width) are equal, else per
    op where exactly one offset left and one came. ``old``/``new``: :class:`MemOp` records
    (:func:`kbtool.kb.queries.mem_ops_for`) or ``(op, offset, width)`` triples."""
    old = [m for m in _mem_ops(old) if m.offset < FIELD_OFFSET_MAX]
    new = [m for m in _mem_ops(new) if m.offset < FIELD_OFFSET_MAX]
    if not old or not new:
        return []
    ko = [(m.op, m.width) for m in old]
    kn = [(m.op, m.width) for m in new]
    out: list[tuple[str, int, int]] = []
    seen: set[tuple[int, int, int]] = set()
    if ko == kn:
        for a, b in zip(old, new, strict=True):
            if a.offset != b.offset:
                key = (a.op, a.offset, b.offset)
                if key not in seen:
                    seen.add(key)
                    out.append((_mnemonic(a.op), a.offset, b.offset))
        return out[:MAX_ITEMS]
    # different access sequences: offsets present on one side only, per op
    by_op_old: dict[int, set[int]] = {}
    by_op_new: dict[int, set[int]] = {}
    for m in old:
        by_op_old.setdefault(m.op, set()).add(m.offset)
    for m in new:
        by_op_new.setdefault(m.op, set()).add(m.offset)
    for op in sorted(set(by_op_old) & set(by_op_new)):
        gone = sorted(by_op_old[op] - by_op_new[op])
        came = sorted(by_op_new[op] - by_op_old[op])
        if len(gone) == len(came) == 1:
            out.append((_mnemonic(op), gone[0], came[0]))
    return out[:MAX_ITEMS]


def _mnemonic(op: int) -> str:
    return MNEMONICS[op] if 0 <= op < len(MNEMONICS) else f"op{op}"


def explain_pair(
    o: MatchingRow,
    n: MatchingRow,
    *,
    calls_added: list[str],
    calls_removed: list[str],
    callers_added: list[str] = (),  # type: ignore[assignment]
    callers_removed: list[str] = (),  # type: ignore[assignment]
    mem_old: Sequence[MemOp] | None = None,
    mem_new: Sequence[MemOp] | None = None,
) -> Explanation:
    """The explanation of one modified pair (rows as :func:`kbtool.kb.queries.matching_rows`)."""
    so, sn = set(o["strings"]), set(n["strings"])
    strings_added = [s for s in dict.fromkeys(n["strings"]) if s not in so][:MAX_ITEMS]
    strings_removed = [s for s in dict.fromkeys(o["strings"]) if s not in sn][:MAX_ITEMS]
    consts = const_changes(o["consts"], n["consts"])
    offsets = offset_changes(mem_old or [], mem_new or [])
    ops = _op_changes(o.get("ops") or b"", n.get("ops") or b"")
    ex: Explanation = {
        "calls_added": calls_added[:MAX_ITEMS],
        "calls_removed": calls_removed[:MAX_ITEMS],
        "callers_added": list(callers_added)[:MAX_ITEMS],
        "callers_removed": list(callers_removed)[:MAX_ITEMS],
        "strings_added": strings_added,
        "strings_removed": strings_removed,
        "consts_changed": [[a, b] for a, b in consts["changed"]],
        "consts_added": consts["added"],
        "consts_removed": consts["removed"],
        "offsets_changed": [[m, a, b] for m, a, b in offsets],
        "type_from": o["type_sig"] if o["type_sig"] != n["type_sig"] else None,
        "type_to": n["type_sig"] if o["type_sig"] != n["type_sig"] else None,
        "instr_from": o["instr_count"],
        "instr_to": n["instr_count"],
        "loops_from": o.get("loops", 0),
        "loops_to": n.get("loops", 0),
        "ops_differ": ops["ops_differ"],
        "op_changes": ops["op_changes"],
        "address_consts": _address_delta(o["consts"], n["consts"]),
        "items": [],  # below: the lines and the weight read the fields above
        "weight": 0.0,
    }
    ex["items"] = explanation_lines(ex)
    ex["weight"] = _weight(ex)
    return ex


def _op_changes(a: bytes, b: bytes) -> _OpChanges:
    """Same-length instruction streams: how many instructions differ and the first few."""
    if not a or not b or len(a) != len(b):
        return {"ops_differ": None, "op_changes": []}
    oa, ob = array("H"), array("H")
    oa.frombytes(a)
    ob.frombytes(b)
    diffs = [(x, y) for x, y in zip(oa, ob, strict=True) if x != y]
    seen: list[list[str]] = []
    for x, y in diffs:
        pair = [_mnemonic(x), _mnemonic(y)]
        if pair not in seen:
            seen.append(pair)
        if len(seen) >= 4:
            break
    return {"ops_differ": len(diffs), "op_changes": seen}


def _address_delta(old: list[int], new: list[int]) -> int:
    """How many address-like constants exist on one side only (relocation noise included)."""
    ao = {c for c in old if not -ADDRESS_MIN < c < ADDRESS_MIN}
    an = {c for c in new if not -ADDRESS_MIN < c < ADDRESS_MIN}
    return len(ao ^ an)


def _weight(ex: Explanation) -> float:
    lists = (
        "calls_added",
        "calls_removed",
        "strings_added",
        "strings_removed",
        "consts_changed",
        "consts_added",
        "consts_removed",
        "offsets_changed",
    )
    w = 2.0 * sum(len(ex[k]) for k in lists[:4]) + sum(len(ex[k]) for k in lists[4:])
    w += 3.0 if ex["type_from"] else 0.0
    w += abs(ex["instr_to"] - ex["instr_from"]) / 10.0
    w += abs(ex["loops_to"] - ex["loops_from"])
    return round(w, 2)


def explanation_lines(ex: Explanation, clip: Callable[[str], str] = lambda s: s) -> list[str]:
    """Short lines, most telling first (every modified function gets at least one)."""
    out: list[str] = []
    if ex["type_from"]:
        out.append(f"signature {ex['type_from']} -> {ex['type_to']}")
    if ex["calls_added"]:
        out.append("calls added: " + ", ".join(ex["calls_added"]))
    if ex["calls_removed"]:
        out.append("calls removed: " + ", ".join(ex["calls_removed"]))
    for m, a, b in ex["offsets_changed"]:
        out.append(f"{m} offset {a} -> {b}")
    if ex["consts_changed"]:
        out.append(
            "constants " + ", ".join(f"{_hex(a)} -> {_hex(b)}" for a, b in ex["consts_changed"])
        )
    if ex["consts_added"]:
        out.append("constants added: " + ", ".join(_hex(c) for c in ex["consts_added"]))
    if ex["consts_removed"]:
        out.append("constants removed: " + ", ".join(_hex(c) for c in ex["consts_removed"]))
    if ex["strings_added"]:
        out.append("strings added: " + ", ".join(repr(clip(s)) for s in ex["strings_added"]))
    if ex["strings_removed"]:
        out.append("strings removed: " + ", ".join(repr(clip(s)) for s in ex["strings_removed"]))
    if ex["callers_added"]:
        out.append("new callers: " + ", ".join(ex["callers_added"]))
    if ex["callers_removed"]:
        out.append("callers gone: " + ", ".join(ex["callers_removed"]))
    if ex["loops_to"] != ex["loops_from"]:
        out.append(f"loops {ex['loops_from']} -> {ex['loops_to']}")
    if ex.get("op_changes"):
        out.append(
            f"{ex['ops_differ']} instruction(s) differ: "
            + ", ".join(f"{a} -> {b}" for a, b in ex["op_changes"])
        )
    d = ex["instr_to"] - ex["instr_from"]
    if d:
        out.append(f"{d:+,} instructions")
    if not out:
        out.append(
            f"same instructions; {ex.get('address_consts', 0)} address constant(s) differ"
            if ex.get("address_consts")
            else "same instructions; call targets moved"
        )
    return out
