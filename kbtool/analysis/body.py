"""Careful decoding of one body into ``(op_id, imms)`` pairs (for the few functions the
analysis walks; the whole-module work stays in :mod:`kbtool.wasm.facts`)."""

from __future__ import annotations

from kbtool.wasm import FuncFacts
from kbtool.wasm.instr import decode_one, skip_local_decls


def decode_body(data: bytes, f: FuncFacts, limit: int | None = None) -> list[tuple[int, tuple]]:
    """``[(op_id, imms)]`` of ``f``'s body; at most ``limit`` instructions if given."""
    end = f.body_offset + f.body_size
    p = skip_local_decls(data, f.body_offset, end)
    out: list[tuple[int, tuple]] = []
    app = out.append
    n = limit if limit is not None else f.instr_count + 1
    while p < end and n > 0:
        op, p, imms = decode_one(data, p, end)
        app((op, imms))
        n -= 1
    return out
