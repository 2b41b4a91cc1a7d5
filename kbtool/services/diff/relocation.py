"""Relocation-aware equivalence of two function bodies (diff triage, issue 29.1).

A rebuild moves data: every constant that is a linear-memory address (a string, a table, a
``.bss`` variable) may change although the code did not. Two bodies with the same
instruction stream are compared immediate by immediate, and an address is compared through
what it points at, in its own module:

- inside a data segment: the same bytes there (a C string up to its NUL; a Go/Rust sized
  string ``(ptr, len)`` over ``len`` bytes; otherwise a 16-byte window in which
  pointer-sized words that are themselves addresses on their side are masked, so a table of
  pointers compares by its layout);
- in ``.bss`` (no bytes): the same relative layout, i.e. one consistent, order-preserving
  mapping old address -> new address within the function;
- call / ``ref.func`` targets through the pairing (``callee_map``); type indices by their
  signature text; Go function values ``(PC_F << 16) | PC_B`` (``PC_F = 0x1000 + i``, the
  Go linker's ``funcValueOffset``) as the function they name, through the pairing.

Everything else (opcodes, locals, branch depths, field offsets, small constants) must be
equal. The answer says whether the bodies are the same code up to relocation, whether any
address differed (``relocated``) and which data really differs (``data_changes``: old
text -> new text, only when the two strings are not the same).

Pure: bytes in, answer out (the service layer supplies the module bytes).
"""

from __future__ import annotations

import importlib
import re
import struct
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from hashlib import sha256
from typing import Any

from kbtool.plainclass import NEW, Plain
from kbtool.wasm.active import IMPL as _decoder_impl
from kbtool.wasm.errors import WasmFormatError
from kbtool.wasm.facts import build_data_map, static_region
from kbtool.wasm.instr import skip_local_decls
from kbtool.wasm.opcodes import MNEMONICS
from kbtool.wasm.reader import Module, parse_module
from kbtool.wasm.toolchain import detect_toolchain

__all__ = [
    "module_view",
    "cached_view",
    "mem_offsets_differ",
    "ModuleView",
    "BodyCompare",
    "compare_bodies",
    "same_bodies",
    "body_tokens",
    "tokens_of",
    "GO_FUNC_VALUE_OFFSET",
    "field_offsets_differ",
]

GO_FUNC_VALUE_OFFSET = 0x1000  # cmd/link/internal/wasm: PC_F of the first defined function
MAX_CSTR = 256
WINDOW = 16
MAX_SIZED = 4096
PREFIX_MIN = 8  # an unsized Go/Rust string pointer: this many equal bytes there

_REF_NULL = 0xD0  # a K_U32 opcode whose immediate is a heap type (decode_one reads it)
_CONTROL = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f]")


class ModuleView:
    """One module's bytes with what relocation-aware comparison needs (parsed once)."""

    def __init__(self, data: bytes, m: Module | None = None) -> None:
        """``m``: ``parse_module(data)`` when the caller parsed it already (ingest)."""
        self.data = data
        self.m: Module = parse_module(data) if m is None else m
        m = self.m
        tc = (detect_toolchain(m, ()) or "").lower()
        self.go = (
            tc.startswith("go")
            or any(
                el.offset == GO_FUNC_VALUE_OFFSET and len(el.func_indices) >= len(m.code) // 2
                for el in m.elements
                if isinstance(el.offset, int)
            )
            if m.code
            else False
        )
        self.sized = self.go or tc.startswith("rustc")
        self.dmap = build_data_map(data, m, self.sized)
        self.slo, self.shi = static_region(m, self.dmap)
        # the decoder (kbtool.wasm.facts) maps the data the same way, so the shape hashes
        # it stored replaced exactly the offsets ``is_static`` calls static
        self.shapes_agree = self.sized == tc.startswith(("rustc", "go"))
        self.nimp = m.num_func_imports
        self.ndef = len(m.code)
        self.type_text = [t.text() for t in m.types]
        # what the compiled comparison loop reads of this side (compare_tokens' ``side_*``)
        self.side = (self.slo, self.shi, self.nimp, self.ndef if self.go else 0, self.type_text)
        # address -> :meth:`cstring`'s answer (the bytes never change; a report asks about
        # the same string from many functions: on ffmpeg 9,142 asks of 4,897 addresses)
        self._cstrings: dict[int, bytes | None] = {}

    def body(self, index: int) -> tuple[int, int] | None:
        ci = index - self.nimp
        if not 0 <= ci < self.ndef:
            return None
        return self.m.code[ci]

    def is_static(self, u: int) -> bool:
        return self.slo <= u < self.shi

    def go_func(self, c: int) -> int | None:
        """The function index a Go function value ``(PC_F << 16) | PC_B`` names, or None."""
        if not self.go or c < 0:
            return None
        f = (c >> 16) - GO_FUNC_VALUE_OFFSET
        if 0 <= f < self.ndef:
            return self.nimp + f
        return None

    def cstring(self, u: int) -> bytes | None:
        """The C string at address ``u`` (up to its NUL, at most ``MAX_CSTR`` bytes, no
        control byte but tab, LF, CR), or None."""
        try:
            return self._cstrings[u]
        except KeyError:
            s = self._cstrings[u] = self._cstring(u)
            return s

    def _cstring(self, u: int) -> bytes | None:
        loc = self.dmap.locate(u)
        if loc is None:
            return None
        seg, rel = loc
        end = seg.find(b"\x00", rel, rel + MAX_CSTR)
        if end < 0 or end - rel < 1:
            return None
        s = seg[rel:end]
        if _CONTROL.search(s) is not None:  # a control byte other than tab, LF, CR
            return None
        return bytes(s)

    def sized_bytes(self, u: int, n: int) -> bytes | None:
        loc = self.dmap.locate(u)
        if loc is None or n <= 0 or n > MAX_SIZED:
            return None
        seg, rel = loc
        return bytes(seg[rel : rel + n]) if rel + n <= len(seg) else None

    def window(self, u: int) -> bytes | None:
        """16 bytes at ``u`` with the words that are addresses on this side masked."""
        loc = self.dmap.locate(u)
        if loc is None:
            return None
        seg, rel = loc
        w = bytearray(seg[rel : rel + WINDOW])
        step = 8 if self.go else 4
        fmt = "<Q" if step == 8 else "<I"
        for i in range(0, len(w) - step + 1, step):
            (v,) = struct.unpack_from(fmt, w, i)
            if v and (self.is_static(v) or self.dmap.locate(v) is not None or self.go_func(v)):
                w[i : i + step] = b"\xfe" * step
        return bytes(w)


_VIEWS: OrderedDict[bytes, ModuleView] = OrderedDict()
_VIEWS_LOCK = threading.Lock()
MAX_VIEWS = 4


def module_view(
    data: bytes | None, m: Module | None = None, *, sha: str | None = None
) -> ModuleView | None:
    """The parsed view of a module's bytes (a small LRU keyed by content; None for None).

    ``m``: ``parse_module(data)`` when the caller has it: a later release's ingest gives the
    module its decoder parsed, so the report's view of it parses nothing again. ``sha``: the
    bytes' SHA-256 as hex when the caller knows it (ingest hashed them; the KB stores it with
    each version): the key without hashing them again (~50 ms of CPU per 32 MB)."""
    if not data:
        return None
    # (a fraction of blake2b's CPU where the CPU has SHA instructions)
    key = bytes.fromhex(sha) if sha else sha256(data).digest()
    v = cached_view(key)
    if v is not None:
        return v
    v = ModuleView(data, m)
    with _VIEWS_LOCK:
        _VIEWS[key] = v
        while len(_VIEWS) > MAX_VIEWS:
            _VIEWS.popitem(last=False)
    return v


def cached_view(key: bytes) -> ModuleView | None:
    """The view kept for the module whose SHA-256 digest is ``key``, or None (a caller that
    knows the hash asks before it reads the bytes)."""
    with _VIEWS_LOCK:
        v = _VIEWS.get(key)
        if v is not None:
            _VIEWS.move_to_end(key)
        return v


# the token reader: the decoder twin's part (compiled with mypyc when built, else the same
# pure code; kbtool/wasm/decoder/tokens.py); the comparison calls it through ``_decode``
_TOKENS = importlib.import_module(f"{_decoder_impl.__name__}.tokens")
# the comparison loop likewise (kbtool/wasm/decoder/compare.py): its answer codes as reasons
_CMP = importlib.import_module(f"{_decoder_impl.__name__}.compare")
_SAME, _CONST = _CMP.SAME, _CMP.CONST
_REASONS = {
    _CMP.COUNT: "instruction count differs",
    _CMP.OP: "{a} -> {b}",
    _CMP.TARGET: "{a} target differs",
    _CMP.GO_VALUE: "Go function value differs",
    _CMP.MEMARG: "memarg differs",
    _CMP.OFFSET: "{a} offset {x} -> {y}",
    _CMP.INDIRECT: "call_indirect type differs",
    _CMP.TYPE: "{a} type differs",
    _CMP.OPERAND: "{a} operand differs",
}


def _pure(name: str) -> Any:
    """The pure decoder's ``tokens`` or ``compare`` (they read any buffer), imported on first
    need: only module bytes that are not ``bytes`` go there, and the pure ``tokens`` builds
    its one-byte token table at import (~3 ms of every later ingest, which never needs it)."""
    return importlib.import_module(f"kbtool.wasm.decoder.{name}")


def _decode(data: bytes, p: int, end: int, out: list[tuple[int, tuple]], limit: int) -> int:
    """Append the tokens from ``p`` to ``out`` (at most ``limit``; -1: all); the position
    after (:func:`kbtool.wasm.decoder.tokens.decode_tokens`; module bytes that are not
    ``bytes``, e.g. a memoryview, go to the pure reader, which reads any buffer)."""
    if type(data) is bytes:
        return _TOKENS.decode_tokens(data, p, end, out, limit)
    return _pure("tokens").decode_tokens(data, p, end, out, limit)


def body_tokens(view: ModuleView, index: int) -> list[tuple[int, tuple]]:
    """``[(op, immediates)]`` of one defined function's body (empty when it has none).

    The tokens of :func:`kbtool.wasm.instr.decode_one`, instruction by instruction; the
    common one-byte forms (no immediate, an index, a small constant, a memarg of one-byte
    alignment and offset) are read here without a call, the rest by ``decode_one``."""
    rng = view.body(index)
    if rng is None:
        return []
    data = view.data
    start, end = rng
    out: list[tuple[int, tuple]] = []
    _decode(data, skip_local_decls(data, start, end), end, out, -1)
    return out


def tokens_of(body: bytes) -> list[tuple[int, tuple]]:
    """:func:`body_tokens` of one body's own bytes (locals and instructions, as stored at
    its ``body_offset``): the same tokens, without parsing the module."""
    out: list[tuple[int, tuple]] = []
    _decode(body, skip_local_decls(body, 0, len(body)), len(body), out, -1)
    return out


def locals_decl(view: ModuleView, index: int) -> bytes:
    return _split_body(view, index)[0]


def _split_body(view: ModuleView, index: int) -> tuple[bytes, int, int]:
    """``(the local declarations' bytes, where the instructions start, where they end)`` of
    a body (``(b"", 0, 0)`` when there is none): the declarations are read once."""
    rng = view.body(index)
    if rng is None:
        return b"", 0, 0
    data = view.data
    start, end = rng
    p = skip_local_decls(data, start, end)
    return bytes(data[start:p]), p, end


class BodyCompare(Plain):
    """The answer of :func:`compare_bodies`. A plain class with what ``@dataclass`` gave it
    (``==`` over the fields, no hash, a field-by-field ``repr``): no methods generated and
    compiled at import on a later ingest's path."""

    _FIELDS = ("same", "relocated", "reason", "data_changes")

    def __init__(
        self,
        same: bool,
        relocated: bool = False,
        reason: str = "",
        data_changes: list[tuple[str, str]] = NEW,
    ) -> None:
        self.same = same
        self.relocated = relocated
        self.reason = reason
        self.data_changes = [] if data_changes is NEW else data_changes

    def as_dict(self) -> dict[str, Any]:
        return {
            "same": self.same,
            "relocated": self.relocated,
            "reason": self.reason,
            "data_changes": [list(x) for x in self.data_changes],
        }


def _text(b: bytes | None) -> str:
    if b is None:
        return "?"
    return b.decode("utf-8", "replace")[:120]


class _Addr:
    """Compares address pairs of one function pair, with the .bss layout mapping."""

    def __init__(self, va: ModuleView, vb: ModuleView) -> None:
        self.va, self.vb = va, vb
        self.bss: dict[int, int] = {}
        self.bss_rev: dict[int, int] = {}
        self.relocated = False
        self.changes: list[tuple[str, str]] = []

    def same(self, a: int, b: int, size: int | None) -> bool:
        """Two constants at the same position: the same data up to relocation?"""
        va, vb = self.va, self.vb
        ua, ub = a & 0xFFFFFFFFFFFFFFFF, b & 0xFFFFFFFFFFFFFFFF
        la, lb = va.dmap.locate(ua), vb.dmap.locate(ub)
        if a == b and (la is None or lb is None):
            return True
        moved = a != b
        if la is not None and lb is not None:
            if size is not None:
                xa, xb = va.sized_bytes(ua, size), vb.sized_bytes(ub, size)
                if xa is not None and xa == xb:
                    self.relocated |= moved
                    return True
            ca, cb = va.cstring(ua), vb.cstring(ub)
            if ca is not None and cb is not None and not va.sized:
                if ca == cb:
                    self.relocated |= moved
                    return True
                self.changes.append((_text(ca), _text(cb)))
                return False
            if size is not None and size <= MAX_SIZED:
                xa, xb = va.sized_bytes(ua, size), vb.sized_bytes(ub, size)
                if xa is not None and xb is not None and _printable(xa) and _printable(xb):
                    self.changes.append((_text(xa), _text(xb)))
                    return False
            if not moved:
                return True  # the same address; what is there is no string we can compare
            wa, wb = va.window(ua), vb.window(ub)
            if wa is not None and wa == wb:
                self.relocated = True
                return True
            if size is None and va.sized and _common_prefix(va, ua, vb, ub) >= PREFIX_MIN:
                # an unsized pointer into a string blob: the same text starts there
                self.relocated = True
                return True
            return False
        if la is None and lb is None and va.is_static(ua) and vb.is_static(ub):
            # .bss: no bytes; the same relative layout (one consistent, ordered mapping)
            if self.bss.get(ua, ub) != ub or self.bss_rev.get(ub, ua) != ua:
                return False
            for xa, xb in self.bss.items():
                if (xa < ua) != (xb < ub):
                    return False
            self.bss[ua] = ub
            self.bss_rev[ub] = ua
            self.relocated = True
            return True
        return False


def _common_prefix(va: ModuleView, ua: int, vb: ModuleView, ub: int) -> int:
    xa, xb = va.sized_bytes(ua, 64) or b"", vb.sized_bytes(ub, 64) or b""
    n = 0
    for x, y in zip(xa, xb, strict=False):
        if x != y:
            break
        n += 1
    return n


def _printable(b: bytes) -> bool:
    try:
        s = b.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return s.replace("\n", "").replace("\t", "").isprintable()


def field_offsets_differ(va: ModuleView, ia: int, vb: ModuleView, ib: int) -> bool:
    """Do two bodies with the same instruction stream access memory at other field offsets
    (a struct layout change), as opposed to static addresses that moved? Undecodable
    bodies or other instruction streams: False."""
    try:
        na, sa = _mem_sites(va, ia)
        nb, sb = _mem_sites(vb, ib)
    except WasmFormatError:
        return False
    if na != nb:
        return False
    at_b = {k: (op, off) for k, op, off in sb}
    for k, op, off in sa:
        other = at_b.get(k)
        if other is None or other[0] != op or other[1] == off:
            continue
        if not (va.is_static(off) and vb.is_static(other[1])):
            return True
    return False


def mem_offsets_differ(
    va: ModuleView, mem_a: Sequence[Sequence[int]], vb: ModuleView, mem_b: Sequence[Sequence[int]]
) -> bool:
    """:func:`field_offsets_differ` of two bodies with the SAME instruction stream (op ids)
    from their memory accesses ``(op, offset, ...)`` in body order (the stored ``mem_ops``
    facts, which list exactly the accesses :func:`_mem_sites` decodes): equal streams put
    the i-th access of both at one position, so no body is decoded."""
    if len(mem_a) != len(mem_b):
        return False
    for a, b in zip(mem_a, mem_b, strict=True):
        offa, offb = a[1], b[1]
        if a[0] != b[0] or offa == offb:
            continue
        if not (va.is_static(offa) and vb.is_static(offb)):
            return True
    return False


def _mem_sites(view: ModuleView, index: int) -> tuple[int, list[tuple[int, int, int]]]:
    """``(instructions, [(position, op, offset)] of the memory accesses)`` of a body: what
    :func:`field_offsets_differ` reads of :func:`body_tokens`, without making the tokens."""
    rng = view.body(index)
    if rng is None:
        return 0, []
    data = view.data
    start, end = rng
    p = skip_local_decls(data, start, end)
    mod = _TOKENS if type(data) is bytes else _pure("tokens")
    return mod.mem_sites(data, p, end)


def same_bodies(
    va: ModuleView, ia: int, vb: ModuleView, ib: int, callee_map: Callable[[int], int | None]
) -> bool:
    """``compare_bodies(..., first_difference=True).same`` without the answer's reason (the
    report's flags read only ``same``): the same locals and instruction loop, no
    :class:`BodyCompare` made nor reason text. Function ``ib``'s local declarations are
    parsed only when its bytes there differ from ``ia``'s (the same bytes parse the same:
    a body that ends before them differs)."""
    try:
        ra, rb = va.body(ia), vb.body(ib)
        if ra is None or rb is None:
            if ra is not rb:  # (one body and no body: other locals)
                return False
            pa = ea = pb = eb = 0
        else:
            da, db = va.data, vb.data
            sa, ea = ra
            sb, eb = rb
            pa = skip_local_decls(da, sa, ea)
            pb = sb + (pa - sa)
            if pb > eb or da[sa:pa] != db[sb:pb]:
                pb = skip_local_decls(db, sb, eb)
                if da[sa:pa] != db[sb:pb]:
                    return False
        addr = _Addr(va, vb)
        both_bytes = type(va.data) is bytes and type(vb.data) is bytes
        code = (_CMP if both_bytes else _pure("compare")).compare_tokens(
            va.data,
            pa,
            ea,
            vb.data,
            pb,
            eb,
            True,
            va.side,
            vb.side,
            va.dmap.locate,
            callee_map,
            addr.same,
        )[0]
    except WasmFormatError:
        return False
    return code == _SAME


def compare_bodies(
    va: ModuleView,
    ia: int,
    vb: ModuleView,
    ib: int,
    callee_map: Callable[[int], int | None],
    *,
    first_difference: bool = False,
) -> BodyCompare:
    """Are function ``ia`` of ``va`` and ``ib`` of ``vb`` the same code up to relocation?

    ``callee_map``: old function index -> the new index it is paired with (None: unpaired).
    ``first_difference``: decode both bodies only as far as their first difference (the
    same ``same``; ``reason`` then names that difference even when a body would turn out
    undecodable or longer further on).

    The instruction loop is :func:`kbtool.wasm.decoder.compare.compare_tokens` (the
    decoder twin's part when built; module bytes that are not ``bytes`` go to the pure
    part); the address checks (``_Addr``) stay here.
    """
    try:
        la, pa, ea = _split_body(va, ia)
        lb, pb, eb = _split_body(vb, ib)
        if la != lb:
            return BodyCompare(False, reason="locals differ")
        addr = _Addr(va, vb)
        both_bytes = type(va.data) is bytes and type(vb.data) is bytes
        code, go_relocated, oa, ob, a, b = (
            _CMP if both_bytes else _pure("compare")
        ).compare_tokens(
            va.data,
            pa,
            ea,
            vb.data,
            pb,
            eb,
            first_difference,
            va.side,
            vb.side,
            va.dmap.locate,
            callee_map,
            addr.same,
        )
    except WasmFormatError as exc:
        return BodyCompare(False, reason=f"undecodable: {exc}")
    if code == _SAME:
        return BodyCompare(True, relocated=addr.relocated or go_relocated)
    if code == _CONST:
        return BodyCompare(False, data_changes=addr.changes, reason=f"{MNEMONICS[oa]} {a} -> {b}")
    return BodyCompare(
        False, reason=_REASONS[code].format(a=MNEMONICS[oa], b=MNEMONICS[ob], x=a, y=b)
    )
