"""Where knowledge stands in a function's code (issue 27): the decoded body of a function,
the instruction context (anchor) that keys a line comment, and where a stored line comment stands
in a (possibly changed) body. Split from :mod:`kbtool.services.knowledge`, which re-exports it."""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from typing import Any

from kbtool.kb import knowledge as kn
from kbtool.kb import queries
from kbtool.kb.errors import KBError
from kbtool.wasm import WasmFormatError
from kbtool.wasm.instr import decode_one, read_local_decls
from kbtool.wasm.opcodes import MNEMONICS
from kbtool.wasm.reader import parse_module

ANCHOR = 3  # instructions each side of a line that make its context


class KnowledgeError(KBError):
    """A knowledge request that cannot be served: unknown function, line or local."""


def body_instructions(
    data: bytes, module: Any, index: int
) -> tuple[int, list[tuple[int, str]], list[str]]:
    """``(body start, [(file offset, mnemonic)], local types)`` of a defined function."""
    k = index - module.num_func_imports
    if k < 0 or k >= len(module.code):
        raise KnowledgeError(f"function {index} has no body")
    start, end = module.code[k]
    decls, p = read_local_decls(data, start, end)
    ft = module.func_type(index)
    types = [str(t) for t in ft.params]
    for count, ty in decls:
        types.extend([str(ty)] * min(count, kn.MAX_LOCAL_INDEX + 1 - len(types)))
        if len(types) > kn.MAX_LOCAL_INDEX:
            break
    out: list[tuple[int, str]] = []
    while p < end:
        op, p2, _imms = decode_one(data, p, end)
        out.append((p, MNEMONICS[op]))
        p = p2
    return start, out, types


_PARSED: dict[bytes, Any] = {}  # parsed modules by content digest (the last two)
_PARSED_LOCK = threading.Lock()


class _Code:
    """A version's module, parsed once for a batch of requests."""

    def __init__(self, conn: sqlite3.Connection, version_id: int) -> None:
        data = queries.module_bytes(conn, version_id)
        if not data:
            raise KnowledgeError(f"the module bytes of version {version_id} are not in the KB")
        self.data = data
        digest = hashlib.blake2b(data, digest_size=16).digest()
        with _PARSED_LOCK:
            module = _PARSED.get(digest)
        if module is None:
            try:
                module = parse_module(data)
            except WasmFormatError as exc:
                raise KnowledgeError(
                    f"the module of version {version_id} cannot be decoded: {exc}"
                ) from None
            with _PARSED_LOCK:
                _PARSED[digest] = module
                while len(_PARSED) > 2:
                    _PARSED.pop(next(iter(_PARSED)))
        self.module = module
        self._cache: dict[int, tuple[int, list[tuple[int, str]], list[str]]] = {}

    def body(self, index: int) -> tuple[int, list[tuple[int, str]], list[str]]:
        hit = self._cache.get(index)
        if hit is None:
            try:
                hit = body_instructions(self.data, self.module, index)
            except WasmFormatError as exc:
                raise KnowledgeError(f"function {index} cannot be decoded: {exc}") from None
            self._cache[index] = hit
        return hit


def _anchor(instrs: list[tuple[int, str]], pos: int) -> list[str]:
    lo, hi = max(0, pos - ANCHOR), min(len(instrs), pos + ANCHOR + 1)
    return (
        ["^"] * (ANCHOR - (pos - lo))
        + [m for _o, m in instrs[lo:hi]]
        + ["$"] * (ANCHOR + 1 - (hi - pos))
    )


def _line_key(code: _Code, index: int, offset: int) -> tuple[str, list[str], int]:
    """The stored key of the line at ``offset`` (a file offset as the disassembly shows it, or
    an offset relative to the body start): ``(key, anchor, ordinal)``."""
    start, instrs, _t = code.body(index)
    for pos, (off, _m) in enumerate(instrs):
        if off == offset or off - start == offset:
            return str(off - start), _anchor(instrs, pos), pos
    raise KnowledgeError(
        f"no instruction at offset 0x{offset:x} in function {index}"
        " (give an offset from its disassembly)"
    )


# --------------------------------------------------------------------------- writes


def _match_line(old: dict[str, Any], instrs: list[tuple[int, str]]) -> int | None:
    """The position in ``instrs`` whose context equals the line's stored anchor (closest to
    its old ordinal when several do; None when none does)."""
    anchor = old.get("anchor") or []
    if not anchor:
        return None
    hits = [pos for pos in range(len(instrs)) if _anchor(instrs, pos) == anchor]
    if not hits:
        # a looser context: the instruction itself and one neighbour each side
        core = anchor[ANCHOR - 1 : ANCHOR + 2]
        hits = [
            pos
            for pos in range(len(instrs))
            if _anchor(instrs, pos)[ANCHOR - 1 : ANCHOR + 2] == core
        ]
        if len(hits) != 1:
            return None
    want = int(old.get("ordinal") or 0)
    hits.sort(key=lambda pos: (abs(pos - want), pos))
    if len(hits) > 1 and abs(hits[0] - want) == abs(hits[1] - want):
        return None
    return hits[0]


def locate_line(
    value: dict[str, Any], offset: int, start: int, instrs: list[tuple[int, str]]
) -> int | None:
    """Where a line comment stands in a body: at its offset when the instruction context there
    is the stored one, else re-anchored by that context (a function that kept its identity
    across a changed body), else None (not shown)."""
    pos = next((k for k, (o, _m) in enumerate(instrs) if o - start == offset), None)
    anchor = value.get("anchor")
    if pos is not None and (not anchor or _anchor(instrs, pos) == anchor):
        return pos
    return _match_line(value, instrs)
