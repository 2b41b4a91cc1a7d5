"""The decoder's lookup tables, built once from the one opcode table (:mod:`.opcodes`) and the
value-type bytes (:mod:`.instr`); :mod:`.decoder`'s hot loop indexes them by byte."""

from __future__ import annotations

from .instr import HEAP_TYPES, NUM_TYPES, REF_SHORT
from .opcodes import BYTE_KIND, KIND, PREFIX_BASE, PREFIX_SLOTS


# value type bytes: 1 = one-byte type, 2 = 0x63/0x64 + heap type, 3 = 0x65 shared shorthand
def vt_table() -> bytes:
    t = bytearray(256)
    for b in (*NUM_TYPES, *REF_SHORT):
        t[b] = 1
    t[0x63] = t[0x64] = 2
    t[0x65] = 3
    return bytes(t)


def abs_heap_table() -> bytes:
    t = bytearray(256)
    for b in HEAP_TYPES:
        t[b] = 1
    return bytes(t)


# The fast loop's kinds: the opcode table's, plus three of its own: 40 heap type (ref.null,
# ref.test, ref.cast), 41 end, 42 delegate (they track block depth).
def fast_kinds() -> bytes:
    t = bytearray(BYTE_KIND)
    t[0xD0] = 40
    t[0x0B] = 41
    t[0x18] = 42
    return bytes(t)


def prefix_tables() -> list[tuple[int, bytes]]:
    """Per first byte: (base, kinds) of its prefix table; ``(0, b"")`` for other bytes."""
    out: list[tuple[int, bytes]] = [(0, b"")] * 256
    for p in PREFIX_BASE:
        kinds = bytearray(KIND[PREFIX_BASE[p] : PREFIX_BASE[p] + PREFIX_SLOTS[p]])
        if p == 0xFB:
            for i in (0x14, 0x15, 0x16, 0x17):
                kinds[i] = 40
        out[p] = (PREFIX_BASE[p], bytes(kinds))
    return out
