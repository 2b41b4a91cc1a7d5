"""Instruction walk and per-function facts (the hot path).

One table-driven loop over every body: the opcode byte indexes ``BYTE_KIND`` (immediate
kind), immediates are skipped without building ints where the value is not needed, and
the only per-instruction work is appending the op id to an ``array('H')``. Facts that
need values (calls, constants, globals, memory offsets) decode just those LEBs.

Shape hash (DESIGN "Identity"): the hash of the type signature text and the body bytes in
which the build-dependent immediates are replaced: call/return_call/ref.func targets by
``import module.field`` (imports) or a placeholder (defined functions); type indices
(call_indirect, call_ref, block types) by the signature text; i32/i64 constants that point
into a data segment by the bytes they point at (the string, or the first 16 bytes);
table/element indices by a placeholder; in a Go module, function values and return PCs
``(PC_F << 16) | PC_B`` (``PC_F = 0x1000 + i``: every function carries its own number and
its callees' in ``i64.const``/``i32.const``) by a placeholder plus ``PC_B`` (the resume
block, which is structure). Everything else (local indices, branch depths, memory offsets,
other constants, local declarations) is kept verbatim.

A body the fast loop cannot walk cleanly is re-decoded by the careful decoder
(:func:`kbtool.wasm.instr.check_body`), which raises the precise WasmFormatError.
"""

from __future__ import annotations

import os
import re
import struct
from array import array
from bisect import bisect_right
from dataclasses import dataclass, field
from hashlib import blake2b

from .errors import WasmFormatError
from .instr import HEAP_TYPES, MAX_LOCALS, NUM_TYPES, REF_SHORT, check_body
from .opcodes import BYTE_KIND, KIND, MNEMONICS, PREFIX_BASE, PREFIX_SLOTS, WIDTH
from .reader import DataSegment, Module, parse_module
from .toolchain import detect_toolchain

# ----------------------------------------------------------------------------- results


@dataclass(slots=True)
class FuncFacts:
    index: int
    imported: bool
    import_module: str | None
    import_field: str | None
    type_sig: str
    export_names: list[str]
    raw_name: str | None
    body_offset: int
    body_size: int
    instr_count: int
    ops: bytes
    calls: list[int]
    call_indirect: int
    ref_funcs: list[int]
    consts: list[int]
    strings: list[str]
    globals_used: list[int]
    mem_ops: list[tuple[int, int, int]]
    atomic_sites: int
    loops: int
    body_hash: str
    shape_hash: str

    @property
    def import_name(self) -> str | None:
        if not self.imported:
            return None
        return f"{self.import_module}.{self.import_field}"

    def mnemonics(self) -> list[str]:

        a = array("H")
        a.frombytes(self.ops)
        return [MNEMONICS[i] for i in a]


@dataclass
class ModuleAnalysis:
    module: Module
    functions: list[FuncFacts] = field(default_factory=list)
    toolchain_version: str | None = None

    @property
    def instr_count(self) -> int:
        return sum(f.instr_count for f in self.functions)


class _Bad(Exception):
    """Internal: the fast loop met something it does not accept; diagnose carefully."""


# ----------------------------------------------------------------------------- LEB helpers

def _uleb_cont(data, p, x, maxshift=28):
    """Continue an unsigned LEB whose first byte ``x`` (>= 0x80) was consumed
    (``maxshift`` 28: u32, at most 5 bytes; 63: u64, at most 10 bytes). The unused high
    bits of a last byte at ``maxshift`` must be zero, as in :func:`kbtool.wasm.leb.read_uleb`."""
    x &= 0x7F
    shift = 7
    while True:
        c = data[p]
        p += 1
        if c < 0x80:
            if shift == maxshift and c >> (4 if maxshift == 28 else 1):
                raise _Bad
            return x | (c << shift), p
        x |= (c & 0x7F) << shift
        shift += 7
        if shift > maxshift:
            raise _Bad


def _sleb_cont(data, p, x, bits=32):
    """Continue a signed LEB (``bits`` 32, 33 or 64) whose first byte ``x`` (>= 0x80) was
    consumed; the unused bits of a full-length last byte must extend the sign."""
    maxshift = 63 if bits > 35 else 28
    x &= 0x7F
    shift = 7
    while True:
        c = data[p]
        p += 1
        x |= (c & 0x7F) << shift
        if c < 0x80:
            if shift == maxshift:
                used = bits - maxshift
                top = c >> (used - 1)
                if top and top != (1 << (8 - used)) - 1:
                    raise _Bad
            shift += 7
            if c & 0x40:
                x -= 1 << shift
            return x, p
        shift += 7
        if shift > maxshift:
            raise _Bad


def _skip(data, p):
    """Skip a u32 LEB whose first byte at ``p`` has the continuation bit set."""
    q = p + 1
    while data[q] & 0x80:
        q += 1
        if q - p > 4:
            raise _Bad
    if q - p == 4 and data[q] > 0x0F:  # 5th byte: only 4 value bits
        raise _Bad
    return q + 1


# value type bytes: 1 = one-byte type, 2 = 0x63/0x64 + heap type, 3 = 0x65 shared shorthand
_VT = bytearray(256)
for _b in (*NUM_TYPES, *REF_SHORT):
    _VT[_b] = 1
_VT[0x63] = _VT[0x64] = 2
_VT[0x65] = 3
_ABS_HEAP = bytearray(256)
for _b in HEAP_TYPES:
    _ABS_HEAP[_b] = 1


def _heaptype_end(data, p):
    """End of the heap type at ``p``; accepts exactly what :func:`instr.read_heaptype` does."""
    b = data[p]
    if _ABS_HEAP[b]:
        return p + 1
    if b == 0x65:
        if _ABS_HEAP[data[p + 1]]:
            return p + 2
        raise _Bad
    if b == 0x62:  # exact type index (u32)
        return p + 2 if data[p + 1] < 0x80 else _skip(data, p + 1)
    if b < 0x40:  # one-byte type index
        return p + 1
    if b < 0x80:  # negative one-byte s33: not a heap type
        raise _Bad
    x, q = _sleb_cont(data, p + 1, b, 33)
    if x < 0:
        raise _Bad
    return q


def _valtype_end(data, p):
    """End of the value type at ``p``; accepts exactly what :func:`instr.read_valtype` does."""
    c = _VT[data[p]]
    if c == 1:
        return p + 1
    if c == 2:
        return _heaptype_end(data, p + 1)
    if c == 3:
        return _heaptype_end(data, p)
    raise _Bad


def _blocktype_end(data, p, x):
    """End of a block type whose first byte ``x`` is in 0x40..0x7F (empty or a value type)."""
    if x == 0x40 or _VT[x] == 1:
        return p + 1
    return _valtype_end(data, p)


# ----------------------------------------------------------------------------- strings

_RUN = re.compile(
    rb"(?:[\t\n\r\x20-\x7e]|[\xc2-\xdf][\x80-\xbf]|[\xe0-\xef][\x80-\xbf]{2}"
    rb"|[\xf0-\xf4][\x80-\xbf]{3})*"
)
MIN_STRING = 4
MAX_CSTRING = 4096  # bytes scanned for a NUL-terminated string
MAX_RUN = 200  # characters kept of an unterminated run (Rust-style str data)
MAX_STR_LEN = 4096  # largest length accepted from a (ptr, len) pair


def _printable_text(b: bytes) -> str | None:
    """``b`` decoded if it is entirely printable UTF-8 text (\\t \\n \\r allowed)."""
    m = _RUN.fullmatch(b)
    if m is None:
        return None
    try:
        s = b.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if not s.replace("\n", "").replace("\t", "").replace("\r", "").isprintable():
        return None
    return s


def _plausible(s: str) -> bool:
    """Conservative test for text that is not NUL-terminated (Rust str data)."""
    if len(s) < MIN_STRING:
        return False
    letters = sum(map(str.isalpha, s))
    return letters >= 3 and letters * 2 >= len(s)




_PRINTABLE_ASCII = frozenset(range(0x20, 0x7F)) | {0x09, 0x0A, 0x0D}
_RUNS = re.compile(_RUN.pattern[:-1] + b"+")  # maximal non-empty runs of printable text
_CONT = range(0x80, 0xC0)  # UTF-8 continuation bytes


class DataMap:
    """Constant addresses -> the data they point at (active segments with a constant
    offset, plus passive segments whose address is inferred from ``memory.init``).

    ``sized_first`` (Rust, Go: strings are ``(ptr, len)`` pairs, not NUL-terminated)
    changes which evidence wins, see :meth:`entry`.

    Cost is linear in the data size: the printable runs of a segment are found once (on
    the first address inside it), each address then costs a bisection, and the text
    decoded for strings is bounded by ``text_budget`` (a multiple of the data size), so a
    crafted module cannot make string recovery quadratic.
    """

    TEXT_BUDGET_FACTOR = 16
    TEXT_BUDGET_MIN = 1 << 22

    def __init__(self, segs: list[tuple[int, bytes]], wasm32: bool = True,
                 sized_first: bool = False) -> None:
        segs = sorted((o, d) for o, d in segs if d)
        self.starts = [o for o, _ in segs]
        self.ends = [o + len(d) for o, d in segs]
        self.datas = [d for _, d in segs]
        self.lo = self.starts[0] if segs else 1
        self.hi = max(self.ends) if segs else 0
        self.wasm32 = wasm32
        self.sized_first = sized_first
        self.cache: dict[int, tuple | None] = {}
        self.runs: dict[int, tuple[list[int], list[int]]] = {}
        self.sized_cache: dict[tuple[int, int, int], str | None] = {}
        total = sum(len(d) for d in self.datas)
        self.text_budget = max(self.TEXT_BUDGET_MIN, self.TEXT_BUDGET_FACTOR * total)
        #: Go: ``(lo, hi, glo, ghi)``: 8-byte words of a data window that are static
        #: addresses (``lo <= v < hi``) or function values (``glo <= v < ghi``) are masked
        #: in the shape replacement (they relocate with every build)
        self.ptr_mask: tuple[int, int, int, int] | None = None

    def locate(self, addr: int):
        i = bisect_right(self.starts, addr) - 1
        if i < 0 or addr >= self.ends[i]:
            return None
        return self.datas[i], addr - self.starts[i]

    def _runs_of(self, i: int) -> tuple[list[int], list[int]]:
        r = self.runs.get(i)
        if r is None:
            starts: list[int] = []
            ends: list[int] = []
            for mt in _RUNS.finditer(self.datas[i]):
                starts.append(mt.start())
                ends.append(mt.end())
            r = self.runs[i] = (starts, ends)
        return r

    def _match_end(self, i: int, seg: bytes, rel: int) -> int:
        """Where ``_RUN.match(seg, rel, rel + MAX_CSTRING)`` ends, from the precomputed
        runs: a run's characters start at its non-continuation bytes, so a match from
        one of them ends at the run's end (or at the last whole character in the limit)."""
        rs, rend = self._runs_of(i)
        j = bisect_right(rs, rel) - 1
        if j < 0 or rel >= rend[j] or seg[rel] in _CONT:
            return rel
        e_ = rend[j]
        if e_ - rel > MAX_CSTRING:
            e_ = rel + MAX_CSTRING
            while seg[e_] in _CONT:
                e_ -= 1
        return e_

    def _text(self, b: bytes) -> str | None:
        """:func:`_printable_text` within the text budget."""
        if self.text_budget < len(b):
            return None
        self.text_budget -= len(b)
        return _printable_text(b)

    def entry(self, addr: int):
        """Cached ``(shape_repl, immediate, fallback, seg, rel)`` for an address inside
        data, or None outside every segment.

        ``immediate``: a C string (NUL-terminated, printable, >= 4 chars, starting at the
        address: the byte before it is not printable text); reported as soon as it is
        seen, except in ``sized_first`` modules. ``fallback``: what is reported when no
        length follows the pointer: the C string (C-style modules), else the string an
        in-data ``(ptr, len)`` pair at the address refers to (Rust ``&str`` in a
        ``Location`` or a format-pieces array), else a conservative unterminated printable
        run (<= 200 chars). The decoder first tries a length given by the next
        instruction (``i32.const ptr; i32.const len``).
        """
        e = self.cache.get(addr, 0)
        if e != 0:
            return e
        i = bisect_right(self.starts, addr) - 1
        if i < 0 or addr >= self.ends[i]:
            self.cache[addr] = None
            return None
        seg = self.datas[i]
        rel = addr - self.starts[i]
        cstr = indirect = run = None
        e_ = self._match_end(i, seg, rel)
        at_start = rel == 0 or seg[rel - 1] not in _PRINTABLE_ASCII
        n = e_ - rel
        if n >= MIN_STRING and (at_start or self.sized_first):
            if at_start and e_ < len(seg) and seg[e_] == 0:
                cstr = self._text(seg[rel:e_])
            if self.text_budget >= MAX_RUN:
                r = seg[rel:min(e_, rel + MAX_RUN)].decode("utf-8", "ignore")
                self.text_budget -= len(r)
                if _plausible(r) and r.replace("\n", "").replace("\t", "").replace(
                        "\r", "").isprintable():
                    run = r
        if self.wasm32 and rel + 8 <= len(seg) and (cstr is None or self.sized_first):
            p2, l2 = struct.unpack_from("<II", seg, rel)
            if MIN_STRING <= l2 <= MAX_STR_LEN:
                loc2 = self.locate(p2)
                if loc2 is not None and loc2[1] + l2 <= len(loc2[0]):
                    t2 = self._text(loc2[0][loc2[1]:loc2[1] + l2])
                    if t2 is not None and any(c.isalpha() for c in t2):
                        indirect = t2
        if cstr is not None:
            repl = b"\xffS" + seg[rel:e_] + b"\x00"
        else:
            w = seg[rel:rel + 16]
            if self.ptr_mask is not None:
                w = _mask_words(w, self.ptr_mask)
            repl = b"\xffD" + bytes((len(w),)) + w
        if self.sized_first:
            e = (repl, None, indirect or run, seg, rel)
        else:
            e = (repl, cstr, cstr or indirect or run, seg, rel)
        self.cache[addr] = e
        return e

    def sized_text(self, e, length: int) -> str | None:
        """Text of ``length`` bytes at an entry's address (Rust ``(ptr, len)`` args);
        cached per (address, length)."""
        seg, rel = e[3], e[4]
        key = (id(seg), rel, length)
        t = self.sized_cache.get(key, 0)
        if t != 0:
            return t
        t = None if rel + length > len(seg) else self._text(seg[rel:rel + length])
        self.sized_cache[key] = t
        return t


def _mask_words(w: bytes, mask: tuple[int, int, int, int]) -> bytes:
    """``w`` with its little-endian 8-byte words that are addresses or Go function values
    replaced by ``0xfe`` bytes."""
    lo, hi, glo, ghi = mask
    out = bytearray(w)
    for i in range(0, len(w) - 7, 8):
        (v,) = struct.unpack_from("<Q", w, i)
        if lo <= v < hi or glo <= v < ghi:
            out[i:i + 8] = b"\xfe" * 8
    return bytes(out)


_INIT_RE = re.compile(
    rb"\x41([\x80-\xff]{0,4}[\x00-\x7f])\x41\x00\x41([\x80-\xff]{0,4}[\x00-\x7f])"
    rb"\xfc\x08([\x80-\xff]{0,4}[\x00-\x7f])\x00",
    re.DOTALL,
)


def _leb_bytes(b: bytes, signed: bool) -> int:
    x = 0
    shift = 0
    for c in b:
        x |= (c & 0x7F) << shift
        shift += 7
    if signed and b[-1] & 0x40:
        x -= 1 << shift
    return x


_INIT_BEFORE = 14  # most bytes of the pattern before its memory.init opcode (0xfc 0x08)
_INIT_AFTER = 8  # and from that opcode to the pattern's end


def _init_matches(data: bytes, lo: int, hi: int) -> list[re.Match[bytes]]:
    """``_INIT_RE.finditer(data, lo, hi)``, searched only around the ``memory.init`` opcodes:
    every match holds one, so the regex runs on the merged windows around them (a C-speed
    ``bytes.find`` over the code instead of the regex trying every ``i32.const`` byte)."""
    windows: list[list[int]] = []
    q = data.find(b"\xfc\x08", lo, hi)
    while q >= 0:
        a, b = max(lo, q - _INIT_BEFORE), min(hi, q + _INIT_AFTER)
        if windows and a <= windows[-1][1]:
            windows[-1][1] = b
        else:
            windows.append([a, b])
        q = data.find(b"\xfc\x08", q + 1, hi)
    return [mt for a, b in windows for mt in _INIT_RE.finditer(data, a, b)]


def passive_addresses(data: bytes, m: Module) -> dict[int, int]:
    """Addresses of passive data segments inferred from ``i32.const addr; i32.const 0;
    i32.const size; memory.init seg`` sequences (Emscripten/LLVM ``__wasm_init_memory``
    in threaded builds). Only segments with one consistent address are returned."""
    passive = {i for i, s in enumerate(m.data_segments) if s.passive}
    if not passive or not m.code:
        return {}
    lo = m.code[0][0]
    hi = m.code[-1][1]
    found: dict[int, set[int]] = {}
    for mt in _init_matches(data, lo, hi):
        seg = _leb_bytes(mt.group(3), False)
        if seg not in passive:
            continue
        size = _leb_bytes(mt.group(2), True) & 0xFFFFFFFF
        if size != len(m.data_segments[seg].data):
            continue
        found.setdefault(seg, set()).add(_leb_bytes(mt.group(1), True) & 0xFFFFFFFF)
    return {s: next(iter(a)) for s, a in found.items() if len(a) == 1}


def build_data_map(data: bytes, m: Module, sized_first: bool = False) -> DataMap:
    segs = [(s.offset, s.data) for s in m.data_segments if not s.passive and s.offset is not None]
    for i, addr in passive_addresses(data, m).items():
        seg: DataSegment = m.data_segments[i]
        segs.append((addr, seg.data))
    wasm32 = not (m.memories and m.memories[0].memory64)
    return DataMap(segs, wasm32, sized_first)


# ----------------------------------------------------------------------------- context

def _digest(b: bytes) -> str:
    return blake2b(b, digest_size=16).hexdigest()


def static_region(m: Module, dmap: DataMap) -> tuple[int, int]:
    """The address range of static data (``.data`` + ``.bss``) as far as the module shows it.

    Linkers lay out ``[data][bss]`` from the lowest data segment on; its end is not written
    down, so: when the stack pointer (the first mutable i32 global with a constant
    initialiser) starts above the data, the stack follows ``.bss`` (wasm-ld's default,
    Emscripten) and its initial value bounds the region; otherwise (``--stack-first``) the
    initial memory size does. Addresses in this range are build-dependent: the shape hash
    replaces them by a placeholder (or, inside a data segment, by the bytes there).
    """
    if dmap.hi <= dmap.lo:
        return 1, 0
    sp = next((g.init for g in m.globals if g.mutable and g.valtype == "i32"
               and not g.imported and isinstance(g.init, int)), None)
    if sp is not None and sp > dmap.hi:
        return dmap.lo, sp
    mem = m.memories[0] if m.memories else None
    # the reader bounds min and page size (at most 2**64 bytes): a plain shift is safe
    mem_bytes = (mem.min << mem.page_size_log2) if mem is not None else 0
    return dmap.lo, max(dmap.hi, mem_bytes)


def is_go_module(m: Module, toolchain: str | None = None) -> bool:
    """A Go-built module: the toolchain says so, or the function table at ``0x1000`` lists
    most defined functions (the Go linker's function-value table)."""
    if not m.code:
        return False
    tc = (toolchain if toolchain is not None else detect_toolchain(m, ()) or "").lower()
    return tc.startswith("go") or any(
        el.offset == GO_FUNC_VALUE_OFFSET and len(el.func_indices) >= len(m.code) // 2
        for el in m.elements if isinstance(el.offset, int))


class _Ctx:
    def __init__(self, data: bytes, m: Module) -> None:

        self.data = data
        self.m = m
        self.toolchain = detect_toolchain(m, ())
        tc = (self.toolchain or "").lower()
        sized_first = tc.startswith(("rustc", "go"))
        self.nimp = m.num_func_imports
        self.type_text = [t.text() for t in m.types]
        self.type_repl = [b"\xffT" + t.encode() + b"\x00" for t in self.type_text]
        self.imp_repl = [
            b"\xffI" + f"{i.module}.{i.field}".encode() + b"\x00" for i in m.func_imports
        ]
        self.dmap = build_data_map(data, m, sized_first)
        self.static_lo, self.static_hi = static_region(m, self.dmap)
        # Go: function values (PC_F << 16) | PC_B with PC_F = 0x1000 + code index
        self.go = is_go_module(m, self.toolchain)
        self.gov_lo = GO_FUNC_VALUE_OFFSET << 16 if self.go else 1
        self.gov_hi = (GO_FUNC_VALUE_OFFSET + len(m.code)) << 16 if self.go else 0
        # Go addresses are i64 constants: static ones outside every data segment (zero-filled
        # gaps, .bss/.noptrbss) get a placeholder
        self.go_bss_lo = self.static_lo if self.go else 1
        self.go_bss_hi = self.static_hi if self.go else 0
        if self.go:
            self.dmap.ptr_mask = (self.static_lo, self.static_hi, self.gov_lo, self.gov_hi)
        self.exports: dict[int, list[str]] = {}
        for e in m.exports:
            if e.kind == "func":
                self.exports.setdefault(e.index, []).append(e.name)

    def sig(self, func_index: int) -> str:
        ti = self.m.func_type_index(func_index)
        return self.type_text[ti] if ti < len(self.type_text) else f"type[{ti}]"


def _import_facts(ctx: _Ctx) -> list[FuncFacts]:
    out = []
    m = ctx.m
    for i, imp in enumerate(m.func_imports):
        sig = ctx.sig(i)
        h = _digest(f"import {imp.module}.{imp.field} {sig}".encode())
        out.append(FuncFacts(
            i, True, imp.module, imp.field, sig, ctx.exports.get(i, []),
            m.func_names.get(i), 0, 0, 0, b"", [], 0, [], [], [], [], [], 0, 0, h, h,
        ))
    return out


# ----------------------------------------------------------------------------- hot loop

PROGRESS_STEP = 1 << 20  # bytes of code between two progress callbacks

_BAD_T = b"\xffT?\x00"
_DEF = b"\xffF"
_STATIC = b"\xffB"
_TAB = b"\xffX"
_GOV = [b"\xffG" + (i).to_bytes(2, "little") for i in range(1 << 16)]  # Go PC_B placeholders
GO_FUNC_VALUE_OFFSET = 0x1000  # cmd/link/internal/wasm funcValueOffset: PC_F of code index 0
_MISS = object()
_TABLE_ATOMIC = PREFIX_BASE[0xFE] + 0x58  # shared-everything: global.atomic.* are below
_STRUCT_ATOMIC = PREFIX_BASE[0xFE] + 0x5C

# The fast loop's kinds: the opcode table's, plus three of its own: 40 heap type (ref.null,
# ref.test, ref.cast), 41 end, 42 delegate (they track block depth).
_FAST_KIND = bytearray(BYTE_KIND)
_FAST_KIND[0xD0] = 40
_FAST_KIND[0x0B] = 41
_FAST_KIND[0x18] = 42
# per first byte: (base, kinds) of the prefix tables, else None
_PFX = [None] * 256
for _p in PREFIX_BASE:
    _kinds = bytearray(KIND[PREFIX_BASE[_p]:PREFIX_BASE[_p] + PREFIX_SLOTS[_p]])
    if _p == 0xFB:
        for _i in (0x14, 0x15, 0x16, 0x17):
            _kinds[_i] = 40
    _PFX[_p] = (PREFIX_BASE[_p], bytes(_kinds))


def _analyze_range(ctx: _Ctx, first: int, last: int, progress=None, total_done=0,
                   total=0) -> list[FuncFacts]:
    """Facts of the defined functions with code indices ``first <= i < last``."""
    data = ctx.data
    m = ctx.m
    code = m.code
    nimp = ctx.nimp
    KINDB = _FAST_KIND
    PFX = _PFX
    W = WIDTH
    imp_repl = ctx.imp_repl
    type_repl = ctx.type_repl
    ntypes = len(type_repl)
    dmap = ctx.dmap
    dlo = dmap.lo
    dhi = dmap.hi
    slo = ctx.static_lo
    shi = ctx.static_hi
    glo = ctx.gov_lo
    ghi = ctx.gov_hi
    blo = ctx.go_bss_lo
    bhi = ctx.go_bss_hi
    dcache = dmap.cache
    dentry = dmap.entry
    sized_text = dmap.sized_text
    func_names = m.func_names
    exports = ctx.exports
    ftypes = m.func_type_indices
    type_text = ctx.type_text
    mcache: dict = {}
    msd = mcache.setdefault
    out = []
    step = PROGRESS_STEP
    next_progress = (code[first][0] if first < last else 0) + step
    code_start = code[0][0] if code else 0

    for ci_ in range(first, last):
        start, end = code[ci_]
        fidx = nimp + ci_
        if progress is not None and start >= next_progress:
            progress(total_done + start - code_start, total)
            next_progress = start + step
        ops = array("H")
        app = ops.append
        calls = []
        capp = calls.append
        consts = {}
        strs = {}
        globs = set()
        gadd = globs.add
        memops = []
        mapp = memops.append
        ti = ftypes[ci_]
        sig = type_text[ti] if ti < ntypes else f"type[{ti}]"
        # the shape hash is fed as the normalised body is produced (never held in memory)
        sh = blake2b(sig.encode(), digest_size=16)
        sh.update(b"\x00")
        papp = sh.update
        refs = []
        loops = 0
        cind = 0
        atomics = 0
        pend = None
        pend_at = -1
        last_cut = start
        try:
            # local declarations
            p = start
            n = data[p]
            p += 1
            if n >= 0x80:
                n, p = _uleb_cont(data, p, n)
            if n > end - p:
                raise _Bad
            nloc = 0
            for _ in range(n):
                c = data[p]
                p += 1
                if c >= 0x80:
                    c, p = _uleb_cont(data, p, c)
                nloc += c
                if _VT[data[p]] == 1:
                    p += 1
                else:
                    p = _valtype_end(data, p)
            if nloc > MAX_LOCALS:
                raise _Bad
            depth = 1
            while p < end:
                b = data[p]
                p += 1
                k = KINDB[b]
                if k == 1:  # one LEB kept verbatim
                    app(b)
                    if data[p] < 0x80:
                        p += 1
                    else:
                        p = _skip(data, p)
                    continue
                if k == 0:
                    app(b)
                    continue
                if k == 41:  # end
                    app(b)
                    depth -= 1
                    if depth == 0 and p != end:
                        raise _Bad  # instructions after the function's final end
                    continue
                if k == 2:  # memarg
                    app(b)
                    a = data[p]
                    p += 1
                    if a >= 0x40:
                        if a >= 0x80:
                            a, p = _uleb_cont(data, p, a)
                            if a >= 0x80:  # malformed (spec: below 2**7)
                                raise _Bad
                        if a & 0x40:
                            if data[p] < 0x80:
                                p += 1
                            else:
                                p = _skip(data, p)
                    s = p
                    x = data[p]
                    p += 1
                    if x >= 0x80:
                        x, p = _uleb_cont(data, p, x, 63)
                    if slo <= x < shi:  # an absolute static address in the offset
                        papp(data[last_cut:s])
                        papp(_STATIC)
                        last_cut = p
                    t = (b, x, W[b])
                    mapp(msd(t, t))
                    continue
                if k == 3:  # i32.const
                    app(b)
                    s = p
                    x = data[p]
                    if x < 0x80:
                        p += 1
                        if x & 0x40:
                            x -= 0x80
                    else:  # 2- and 3-byte values inline (addresses), longer ones in a call
                        c = data[p + 1]
                        if c < 0x80:
                            x = (x & 0x7F) | (c << 7)
                            p += 2
                            if c & 0x40:
                                x -= 0x4000
                        else:
                            c2 = data[p + 2]
                            if c2 < 0x80:
                                x = (x & 0x7F) | ((c & 0x7F) << 7) | (c2 << 14)
                                p += 3
                                if c2 & 0x40:
                                    x -= 0x200000
                            else:
                                x, p = _sleb_cont(data, p + 1, x, 32)
                    if pend is not None:
                        tx = None
                        if s - 1 == pend_at and MIN_STRING <= x <= MAX_STR_LEN:
                            tx = sized_text(pend, x)
                        if tx is None:
                            tx = pend[2]
                        if tx:
                            strs[tx] = None
                        pend = None
                    consts[x] = None
                    u = x if x >= 0 else x + 0x100000000
                    if glo <= u < ghi:  # Go function value / return PC
                        papp(data[last_cut:s])
                        papp(_GOV[u & 0xFFFF])
                        last_cut = p
                        continue
                    if dlo <= u < dhi:
                        e = dcache.get(u, _MISS)
                        if e is _MISS:
                            e = dentry(u)
                        if e is not None:
                            papp(data[last_cut:s])
                            papp(e[0])
                            last_cut = p
                            if e[1] is not None:  # C string
                                strs[e[1]] = None
                            else:
                                pend = e
                                pend_at = p
                    if slo <= u < shi and last_cut != p:  # .bss: no bytes to stand for it
                        papp(data[last_cut:s])
                        papp(_STATIC)
                        last_cut = p
                    continue
                if k == 4:  # global.get / global.set
                    app(b)
                    x = data[p]
                    p += 1
                    if x >= 0x80:
                        x, p = _uleb_cont(data, p, x)
                    gadd(x)
                    continue
                if k == 5:  # call / return_call
                    app(b)
                    s = p
                    x = data[p]
                    p += 1
                    if x >= 0x80:
                        x, p = _uleb_cont(data, p, x)
                    capp(x)
                    papp(data[last_cut:s])
                    papp(imp_repl[x] if x < nimp else _DEF)
                    last_cut = p
                    continue
                if k == 6:  # block / loop / if / try
                    app(b)
                    depth += 1
                    if b == 3:
                        loops += 1
                    x = data[p]
                    if x < 0x40:  # type index
                        papp(data[last_cut:p])
                        papp(type_repl[x] if x < ntypes else _BAD_T)
                        p += 1
                        last_cut = p
                    elif x < 0x80:
                        p = _blocktype_end(data, p, x)
                    else:
                        s = p
                        x, p = _sleb_cont(data, p + 1, x, 33)
                        if x < 0:
                            raise _Bad
                        papp(data[last_cut:s])
                        papp(type_repl[x] if 0 <= x < ntypes else _BAD_T)
                        last_cut = p
                    continue
                if k == 30:  # prefix
                    x = data[p]
                    p += 1
                    if x >= 0x80:
                        x, p = _uleb_cont(data, p, x)
                    base, skinds = PFX[b]
                    if x >= len(skinds):
                        raise _Bad
                    op = base + x
                    k = skinds[x]
                    if b == 0xFE:
                        atomics += 1
                    app(op)
                    if k == 0:
                        continue
                    if k == 2 or k == 20:  # memarg (+ lane)
                        a = data[p]
                        p += 1
                        if a >= 0x40:
                            if a >= 0x80:
                                a, p = _uleb_cont(data, p, a)
                            if a >= 0x80:  # malformed (spec: below 2**7)
                                raise _Bad
                            if a & 0x40:
                                if data[p] < 0x80:
                                    p += 1
                                else:
                                    p = _skip(data, p)
                        s = p
                        x = data[p]
                        p += 1
                        if x >= 0x80:
                            x, p = _uleb_cont(data, p, x, 63)
                        if slo <= x < shi:
                            papp(data[last_cut:s])
                            papp(_STATIC)
                            last_cut = p
                        t = (op, x, W[op])
                        mapp(msd(t, t))
                        if k == 20:
                            p += 1
                        continue
                    if k == 1:
                        if data[p] < 0x80:
                            p += 1
                        else:
                            p = _skip(data, p)
                        continue
                    if k == 40:  # ref.test / ref.cast: heap type
                        p = _heaptype_end(data, p)
                        continue
                    if k == 21:  # v128.const, i8x16.shuffle
                        p += 16
                        continue
                    if k == 19 or k == 22:  # lane / reserved byte
                        p += 1
                        continue
                    if k == 17:  # two LEBs
                        p = p + 1 if data[p] < 0x80 else _skip(data, p)
                        p = p + 1 if data[p] < 0x80 else _skip(data, p)
                        continue
                    if k == 14 or k == 15:  # table / elem indices -> placeholder
                        s = p
                        p = p + 1 if data[p] < 0x80 else _skip(data, p)
                        if k == 15:
                            p = p + 1 if data[p] < 0x80 else _skip(data, p)
                        papp(data[last_cut:s])
                        papp(_TAB)
                        last_cut = p
                        continue
                    if k == 24 or k == 25:  # shared-everything atomics: ordering, index(es)
                        if data[p] > 1:
                            raise _Bad
                        p += 1
                        s = p
                        x = data[p]
                        p += 1
                        if x >= 0x80:
                            x, p = _uleb_cont(data, p, x)
                        if op < _TABLE_ATOMIC:  # global.atomic.*
                            gadd(x)
                        elif op < _STRUCT_ATOMIC:  # table.atomic.*: placeholder
                            papp(data[last_cut:s])
                            papp(_TAB)
                            last_cut = p
                        if k == 25:
                            p = p + 1 if data[p] < 0x80 else _skip(data, p)
                        continue
                    if k == 23:  # br_on_cast: flags, label, heap type, heap type
                        p += 1
                        p = p + 1 if data[p] < 0x80 else _skip(data, p)
                        p = _heaptype_end(data, p)
                        p = _heaptype_end(data, p)
                        continue
                    raise _Bad
                # ---- single-byte opcodes with rarer immediates
                app(b)
                if k == 7:  # i64.const
                    s = p
                    x = data[p]
                    p += 1
                    if x < 0x80:
                        if x & 0x40:
                            x -= 0x80
                    else:
                        x, p = _sleb_cont(data, p, x, 64)
                    consts[x] = None
                    u = x if x >= 0 else x + 0x10000000000000000
                    if glo <= u < ghi:  # Go function value / return PC
                        papp(data[last_cut:s])
                        papp(_GOV[u & 0xFFFF])
                        last_cut = p
                        continue
                    if dlo <= u < dhi:
                        e = dcache.get(u, _MISS)
                        if e is _MISS:
                            e = dentry(u)
                        if e is not None:
                            papp(data[last_cut:s])
                            papp(e[0])
                            last_cut = p
                            if e[2]:
                                strs[e[2]] = None
                            continue
                    if blo <= u < bhi:  # Go: zero-filled data and .bss, no bytes to compare
                        papp(data[last_cut:s])
                        papp(_STATIC)
                        last_cut = p
                    continue
                if k == 8:
                    p += 4
                    continue
                if k == 9:
                    p += 8
                    continue
                if k == 10:  # br_table
                    x = data[p]
                    p += 1
                    if x >= 0x80:
                        x, p = _uleb_cont(data, p, x)
                    if x > end - p:
                        raise _Bad
                    for _ in range(x + 1):
                        if data[p] < 0x80:
                            p += 1
                        else:
                            p = _skip(data, p)
                    continue
                if k == 11:  # call_indirect / return_call_indirect
                    cind += 1
                    s = p
                    x = data[p]
                    p += 1
                    if x >= 0x80:
                        x, p = _uleb_cont(data, p, x)
                    p = p + 1 if data[p] < 0x80 else _skip(data, p)
                    papp(data[last_cut:s])
                    papp(type_repl[x] if x < ntypes else _BAD_T)
                    papp(_TAB)
                    last_cut = p
                    continue
                if k == 12:  # ref.func
                    s = p
                    x = data[p]
                    p += 1
                    if x >= 0x80:
                        x, p = _uleb_cont(data, p, x)
                    refs.append(x)
                    papp(data[last_cut:s])
                    papp(imp_repl[x] if x < nimp else _DEF)
                    last_cut = p
                    continue
                if k == 14:  # table.get / table.set
                    s = p
                    p = p + 1 if data[p] < 0x80 else _skip(data, p)
                    papp(data[last_cut:s])
                    papp(_TAB)
                    last_cut = p
                    continue
                if k == 16:  # call_ref / return_call_ref
                    cind += 1
                    s = p
                    x = data[p]
                    p += 1
                    if x >= 0x80:
                        x, p = _uleb_cont(data, p, x)
                    papp(data[last_cut:s])
                    papp(type_repl[x] if x < ntypes else _BAD_T)
                    last_cut = p
                    continue
                if k == 13:  # select t*
                    x = data[p]
                    p += 1
                    if x >= 0x80:
                        x, p = _uleb_cont(data, p, x)
                    if x > end - p:
                        raise _Bad
                    for _ in range(x):
                        p = _valtype_end(data, p)
                    continue
                if k == 18:  # try_table
                    depth += 1
                    x = data[p]
                    if x < 0x40:
                        papp(data[last_cut:p])
                        papp(type_repl[x] if x < ntypes else _BAD_T)
                        p += 1
                        last_cut = p
                    elif x < 0x80:
                        p = _blocktype_end(data, p, x)
                    else:
                        s = p
                        x, p = _sleb_cont(data, p + 1, x, 33)
                        if x < 0:
                            raise _Bad
                        papp(data[last_cut:s])
                        papp(type_repl[x] if 0 <= x < ntypes else _BAD_T)
                        last_cut = p
                    x = data[p]
                    p += 1
                    if x >= 0x80:
                        x, p = _uleb_cont(data, p, x)
                    if x > end - p:
                        raise _Bad
                    for _ in range(x):
                        c = data[p]
                        p += 1
                        if c > 3:
                            raise _Bad
                        if c < 2:
                            p = p + 1 if data[p] < 0x80 else _skip(data, p)
                        p = p + 1 if data[p] < 0x80 else _skip(data, p)
                    continue
                if k == 40:  # ref.null: heap type
                    p = _heaptype_end(data, p)
                    continue
                if k == 42:  # delegate: label, closes a try
                    p = p + 1 if data[p] < 0x80 else _skip(data, p)
                    depth -= 1
                    if depth <= 0:
                        raise _Bad
                    continue
                raise _Bad  # K_BAD or a kind that no single-byte opcode has
            if p != end or depth != 0:
                raise _Bad
        except (_Bad, IndexError):
            check_body(data, start, end)
            raise WasmFormatError(start, "valid function body",
                                  f"function {fidx} could not be decoded") from None
        if pend is not None:
            tx = pend[2]
            if tx:
                strs[tx] = None
        body = data[start:end]
        papp(data[last_cut:end])
        out.append(FuncFacts(
            fidx, False, None, None, sig, exports.get(fidx, []), func_names.get(fidx),
            start, end - start, len(ops), ops.tobytes(), calls, cind, refs, list(consts),
            list(strs), sorted(globs), memops, atomics, loops,
            blake2b(body, digest_size=16).hexdigest(), sh.hexdigest(),
        ))
    return out


# ----------------------------------------------------------------------------- workers

_WORKER_STATE: dict = {}
#: modules with more code bytes than this decode on two processes (``decode_workers``);
#: ``KBTOOL_PARALLEL_DECODE_BYTES`` overrides it (tests lower it to exercise the pool)
PARALLEL_DECODE_BYTES = 4_000_000


def decode_workers(nbytes: int) -> int:
    """Processes for decoding a module of ``nbytes``: 2 for big modules on a multi-core
    machine (bodies decode independently; measured ~15-40% faster), else 1."""
    try:
        limit = int(os.environ.get("KBTOOL_PARALLEL_DECODE_BYTES", PARALLEL_DECODE_BYTES))
    except ValueError:
        limit = PARALLEL_DECODE_BYTES
    return 2 if nbytes > limit and (os.cpu_count() or 1) > 1 else 1


def _worker_run(rng: tuple[int, int]) -> list[tuple]:
    ctx = _WORKER_STATE["ctx"]
    res = _analyze_range(ctx, rng[0], rng[1])
    return [tuple(getattr(f, s) for s in FuncFacts.__slots__) for f in res]


def _split(code: list[tuple[int, int]], parts: int) -> list[tuple[int, int]]:
    """Split body indices into ``parts`` ranges of about equal byte size."""
    if not code:
        return []
    total = code[-1][1] - code[0][0]
    bounds = [0]
    target = total / parts
    acc_start = code[0][0]
    for i, (s, _e) in enumerate(code):
        if len(bounds) < parts and s - acc_start >= target * len(bounds):
            bounds.append(i)
    bounds.append(len(code))
    return [(bounds[i], bounds[i + 1]) for i in range(len(bounds) - 1)
            if bounds[i] < bounds[i + 1]]


# ----------------------------------------------------------------------------- API

def analyze_module(data, *, progress=None, workers: int = 1) -> ModuleAnalysis:
    """Parse ``data`` and compute :class:`FuncFacts` for every function (imports first).

    ``progress(done_bytes, total_bytes)`` is called about every MB of code.
    ``workers > 1`` splits the bodies over a process pool (fork); the default decodes in
    this process.
    """
    if not isinstance(data, bytes):
        data = bytes(data)
    m = parse_module(data)
    ctx = _Ctx(data, m)
    funcs = _import_facts(ctx)
    code = m.code
    total = (code[-1][1] - code[0][0]) if code else 0
    if workers > 1 and len(code) > 64:
        funcs.extend(_analyze_parallel(data, ctx, workers, progress, total))
    else:
        funcs.extend(_analyze_range(ctx, 0, len(code), progress, 0, total))
    if progress is not None:
        progress(total, total)

    sample: dict[str, None] = {}
    for f in funcs:
        for s in f.strings:
            sample[s] = None
        if len(sample) > 5000:
            break
    tc = ctx.toolchain or detect_toolchain(m, list(sample))
    return ModuleAnalysis(m, funcs, tc)


def _analyze_parallel(data, ctx, workers, progress, total):
    """Decode the bodies on a pool of ``workers`` forked processes that inherit the context
    and die with this process; in this process instead when it runs several threads (a
    fork from the threaded MCP server can deadlock): see :mod:`kbtool.wasm.workers`."""
    # imported here: a plain import of kbtool.wasm (the lifter, the web server) needs no pool
    from concurrent.futures import ProcessPoolExecutor

    from .workers import kill_workers, pool_context, signals_deferred, worker_init

    mpctx = pool_context()
    if mpctx is None:
        return _analyze_range(ctx, 0, len(ctx.m.code), progress, 0, total)
    ranges = _split(ctx.m.code, workers * 4)
    out: list[FuncFacts] = []
    _WORKER_STATE["ctx"] = ctx  # inherited by the forked workers
    ex = ProcessPoolExecutor(max_workers=workers, mp_context=mpctx, initializer=worker_init,
                             initargs=(os.getpid(),))
    try:
        done = 0
        with signals_deferred():  # map submits every range: the workers fork here
            results = ex.map(_worker_run, ranges)
        for (a, b), res in zip(ranges, results, strict=True):
            out.extend(FuncFacts(*t) for t in res)
            done += ctx.m.code[b - 1][1] - ctx.m.code[a][0]
            if progress is not None:
                progress(done, total)
    except BaseException:
        kill_workers(ex)
        raise
    else:
        ex.shutdown(wait=True)
    finally:
        _WORKER_STATE.pop("ctx", None)
    return out


def function_body(data, m: Module, func_index: int) -> tuple[int, int]:
    """File offsets ``(start, end)`` of a defined function's body."""
    i = func_index - m.num_func_imports
    if i < 0 or i >= len(m.code):
        raise IndexError(f"function {func_index} has no body")
    return m.code[i]
