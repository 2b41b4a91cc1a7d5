"""The data model of one module: globals with roles, data items, references from code.

Pure (no DB): what IDA or Ghidra show beside the functions of a binary.

- **Globals**: index (imports first, as wasm numbers them), type, mutability, constant
  initial value, import/export names, an inferred ``role`` and a ``name`` when the role or
  the binary says one (``__stack_pointer``, ``__heap_base``, Go's ``SP``/``g``...).
- **Data items**: the active data segments cut at every address the code or a pointer
  table refers to, each piece classified: ``cstring``, ``utf16``, ``pointer_table``,
  ``funcptr_table``, ``numeric``, ``zero``; strings get a label from their text
  (``s_create_table``), tables a label from their address (``ptrs_1234``).
- **References**: per function, every instruction that touches a data address or a global:
  ``(func_index, offset, kind, target_kind, target)``; ``offset`` is the file offset of the
  instruction, ``kind`` one of ``load``, ``store``, ``addr`` (an address computed or passed
  on), ``read``/``write`` (globals), ``call_indirect`` (a table).

The operand tracking is a small symbolic stack over straight-line code: a constant that a
load or store consumes as its address is a ``load``/``store`` of ``const + memarg offset``
(clang's ``i32.const 0; i32.load offset=G`` for a global variable), any other constant
inside the data range is ``addr``. Control flow and calls reset the stack (no guessing).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field

from kbtool.wasm import ModuleAnalysis
from kbtool.wasm.instr import decode_one, skip_local_decls
from kbtool.wasm.leb import read_sleb, read_uleb
from kbtool.wasm.opcodes import (
    K_CALL,
    K_CALL_INDIRECT,
    K_GLOBAL,
    K_I32,
    K_I64,
    K_MEM,
    K_NONE,
    K_PREFIX,
    K_REF_FUNC,
    K_TABLE,
    K_TYPE,
    K_U32,
    KIND,
    MNEMONICS,
    WIDTH,
)

MIN_STRING = 4  # printable bytes for a C string item (shorter runs stay numeric data)
MIN_ZERO = 16  # a run of zero bytes at least this long is a zero block
MAX_LABEL = 32  # characters of a string label taken from its text
MAX_ITEMS = 500_000  # items kept per module (a crafted module cannot grow the model unbounded)
MAX_REFS = 4_000_000  # references kept per module
MAX_IMAGE = 256 << 20  # bytes of initial memory scanned as one image (Go string headers)
MAX_BSS = 64 << 20  # .bss assumed at most this long after the data (stack start bound)
MAX_BSS_ITEM = 1 << 20  # a .bss item's size is capped (its end is only the next reference)
MAX_TEXT = 256  # characters of an item's text kept in the model
GO_PAIR_WINDOW = 12  # instructions between the stores of a Go string's pointer and length
MAX_GO_STRING = 1 << 16  # longest Go string literal taken from a (pointer, length) pair

# names toolchains give their globals when they export or import them
KNOWN_GLOBAL_NAMES = frozenset({
    "__stack_pointer", "__heap_base", "__heap_end", "__data_end", "__tls_base", "__tls_size",
    "__tls_align", "__memory_base", "__table_base", "__dso_handle", "__global_base",
    "__stack_low", "__stack_high", "__stack_base", "__stack_end", "__indirect_function_table",
})
# Emscripten's stack helpers read one global each
GETTER_GLOBALS = {
    "emscripten_stack_get_base": "__stack_base",
    "emscripten_stack_get_end": "__stack_end",
    "emscripten_stack_get_current": "__stack_pointer",
    "__get_tls_base": "__tls_base",
    "_emscripten_stack_restore": "__stack_pointer",
}
# Go's wasm backend (cmd/link/internal/wasm): the globals it defines, in order
GO_GLOBALS = ("SP", "CTXT", "g", "RET0", "RET1", "RET2", "RET3", "PAUSE")


@dataclass(slots=True)
class GlobalInfo:
    index: int
    type: str
    mutable: bool
    initial: int | float | None
    imported: bool
    import_name: str | None
    exports: list[str]
    role: str | None
    name: str | None  # what the toolchain calls it, when the role or the binary says
    confidence: float  # of ``name``
    reads: int = 0  # functions reading it
    writes: int = 0  # functions writing it


@dataclass(slots=True)
class DataItem:
    address: int
    size: int
    kind: str  # cstring, utf16, gostring, pointer_table, funcptr_table, numeric, zero, bss
    segment: int  # index of the data segment it sits in
    text: str | None = None  # strings: the text (cut at MAX_TEXT)
    label: str | None = None
    targets: list[int] = field(default_factory=list)  # tables: addresses or function indices
    refs: int = 0  # references from code


@dataclass(slots=True)
class DataRef:
    func_index: int
    offset: int  # file offset of the instruction
    kind: str  # load, store, addr, read, write, call_indirect
    target_kind: str  # data, global, table
    target: int  # address, global index or table index
    width: int = 0  # bytes loaded or stored


@dataclass(slots=True)
class DataModel:
    globals: list[GlobalInfo]
    items: list[DataItem]
    refs: list[DataRef]
    data_start: int
    data_end: int
    truncated: bool = False
    _starts: list[int] = field(default_factory=list, repr=False)

    def item_at(self, address: int) -> DataItem | None:
        """The item holding ``address`` (None outside every segment)."""
        if not self._starts:
            self._starts = [it.address for it in self.items]
        k = bisect_right(self._starts, address) - 1
        if k < 0:
            return None
        it = self.items[k]
        return it if it.address <= address < it.address + max(it.size, 1) else None

    def to_dict(self) -> dict:
        return {
            "globals": [asdict(g) for g in self.globals],
            "items": [asdict(i) for i in self.items],
            "refs": [asdict(r) for r in self.refs],
            "data_start": self.data_start,
            "data_end": self.data_end,
            "truncated": self.truncated,
        }


# ----------------------------------------------------------------------------- memory image


def segments(analysis: ModuleAnalysis) -> list[tuple[int, bytes, int]]:
    """``(address, bytes, segment index)`` of the active segments with a constant offset,
    by address (memory 0 only)."""
    out = []
    for k, s in enumerate(analysis.module.data_segments):
        if s.passive or s.offset is None or s.memory_index != 0 or not s.data:
            continue
        out.append((int(s.offset), bytes(s.data), k))
    out.sort()
    return out


def read_memory(analysis: ModuleAnalysis, address: int, length: int) -> bytes | None:
    """The initial memory image at ``[address, address + length)`` (bytes no segment sets read
    as zero); None when the range touches no segment at all."""
    if address < 0 or length < 0:
        return None
    out = bytearray(length)
    hit = False
    for base, data, _k in segments(analysis):
        lo, hi = max(base, address), min(base + len(data), address + length)
        if lo < hi:
            out[lo - address : hi - address] = data[lo - base : hi - base]
            hit = True
    return bytes(out) if hit else None


# ----------------------------------------------------------------------------- globals


def global_infos(analysis: ModuleAnalysis, stack_pointer: int | None,
                 go: bool = False, getters: dict[int, str] | None = None) -> list[GlobalInfo]:
    """Every global with its role and name."""
    m = analysis.module
    imports = [i for i in m.imports if i.kind == "global"]
    exports: dict[int, list[str]] = {}
    for e in m.exports:
        if e.kind == "global":
            exports.setdefault(e.index, []).append(e.name)
    out = []
    for gi, g in enumerate(m.globals):
        imp = imports[gi] if g.imported and gi < len(imports) else None
        ex = exports.get(gi, [])
        name, role, conf = None, None, 0.0
        known = [n for n in ([imp.field] if imp else []) + ex if n in KNOWN_GLOBAL_NAMES]
        if known:
            name, role, conf = known[0], known[0].strip("_"), 1.0
        elif imp is not None and imp.field.startswith(("GOT.mem.", "GOT.func.")):
            name, role, conf = imp.field, "got", 1.0
        elif gi == stack_pointer:
            name, role, conf = "__stack_pointer", "stack_pointer", 0.95
        elif go and not g.imported and gi < len(GO_GLOBALS):
            name, role, conf = GO_GLOBALS[gi], "go_" + GO_GLOBALS[gi].lower(), 0.9
        elif getters and gi in getters:
            name, role, conf = getters[gi], getters[gi].strip("_"), 0.9
        elif ex:
            name, role, conf = ex[0], "exported", 1.0
        elif imp is not None:
            name, role, conf = f"{imp.module}.{imp.field}", "imported", 1.0
        out.append(GlobalInfo(
            index=gi, type=g.valtype, mutable=g.mutable,
            initial=g.init if isinstance(g.init, int | float) else None,
            imported=g.imported, import_name=f"{imp.module}.{imp.field}" if imp else None,
            exports=ex, role=role, name=name, confidence=conf,
        ))
    return out


def _getter_globals(analysis: ModuleAnalysis, data: bytes) -> dict[int, str]:
    """Globals read by Emscripten's stack getters (``global.get G; end`` bodies)."""
    named: dict[int, str] = {}
    for f in analysis.functions:
        if f.imported or f.instr_count > 3:
            continue
        for n in list(f.export_names) + ([f.raw_name] if f.raw_name else []):
            want = GETTER_GLOBALS.get(n)
            if want and len(f.globals_used) == 1:
                named.setdefault(f.globals_used[0], want)
    return named


# ----------------------------------------------------------------------------- references

_BINARY = re.compile(
    r"^[if](32|64)\.(add|sub|mul|div(_[su])?|rem_[su]|and|or|xor|shl|shr_[su]|rotl|rotr|eq|ne|"
    r"[lg][te](_[su])?|min|max|copysign)$"
)
_UNARY = re.compile(r"^[if](32|64)\.(eqz|clz|ctz|popcnt|neg|abs|sqrt|ceil|floor|trunc|nearest|"
                    r"wrap_\w+|extend\w*|convert_\w+|demote_\w+|promote_\w+|reinterpret_\w+|"
                    r"trunc_\w+)$")
# per op id: 1 const (i32/i64), 2 load, 3 store, 4 binary, 5 unary, 6 local.get/global.get,
# 7 local.set/drop, 8 local.tee, 9 global.get, 10 global.set, 11 call_indirect, 0 other (reset)
_CLASS = bytearray(len(MNEMONICS))
for _op, _mn in enumerate(MNEMONICS):
    if _mn in ("i32.const", "i64.const"):
        _CLASS[_op] = 1
    elif WIDTH[_op] and ".load" in _mn and "atomic" not in _mn and "lane" not in _mn:
        _CLASS[_op] = 2
    elif WIDTH[_op] and ".store" in _mn and "atomic" not in _mn and "lane" not in _mn:
        _CLASS[_op] = 3
    elif _BINARY.match(_mn):
        _CLASS[_op] = 4
    elif _UNARY.match(_mn):
        _CLASS[_op] = 5
    elif _mn == "local.get":
        _CLASS[_op] = 6
    elif _mn in ("local.set", "drop"):
        _CLASS[_op] = 7
    elif _mn == "local.tee":
        _CLASS[_op] = 8
    elif _mn == "global.get":
        _CLASS[_op] = 9
    elif _mn == "global.set":
        _CLASS[_op] = 10
    elif _mn in ("call_indirect", "return_call_indirect"):
        _CLASS[_op] = 11
    elif _mn in ("nop",):
        _CLASS[_op] = 12


def function_refs_careful(data: bytes, func_index: int, body_offset: int, body_size: int,
                          lo: int, hi: int, go: bool = False,
                          mem_hi: int | None = None) -> Iterable[DataRef]:
    """The data and global references of one body; data addresses are those in ``[lo, hi)``.
    (The reference implementation, on the careful decoder; :func:`function_refs` is the fast
    one and gives the same references.)

    Stack entries: ``("c", value, offset)`` a constant, ``("a", base, offset)`` an address
    computed from a data constant, ``("l", base, offset)`` a value loaded through such an
    address, ``None`` unknown. A ``call_indirect`` whose index was loaded through
    ``base + i * 4`` marks ``base`` as a function-pointer table (kind ``funcptr``).
    Loads and stores count up to ``mem_hi`` (default ``hi``): static variables without
    initial bytes (.bss) are only ever addressed by memory accesses; a constant merely
    passed on counts only inside the initialised data.

    Go (``go=True``) builds a string value by storing its pointer and then, a few
    instructions later, its length: such a pair is a ``gostring`` reference whose ``width``
    is the length.
    """
    end = body_offset + body_size
    mem_hi = hi if mem_hi is None else mem_hi
    p = skip_local_decls(data, body_offset, end)
    stack: list[tuple[str, int, int] | None] = []
    cls = _CLASS
    pending: tuple[int, int, int] | None = None  # Go: (pointer stored, its offset, instrs ago)
    n = 0

    def pop() -> tuple[str, int, int] | None:
        return stack.pop() if stack else None

    def spill(n: int) -> Iterable[DataRef]:
        # operands consumed by something that is not a memory access: constants in the data
        # range among them are addresses passed on (to a call, a local, a global)
        for _ in range(min(n, len(stack))):
            v = stack.pop()
            if v is not None and v[0] == "c" and lo <= v[1] < hi:
                yield DataRef(func_index, v[2], "addr", "data", v[1])

    while p < end:
        at = p
        op, p, imms = decode_one(data, p, end)
        n += 1
        c = cls[op] if op < len(cls) else 0
        if go and c == 3 and stack and stack[-1] is not None and stack[-1][0] == "c":
            v = stack[-1][1]
            if pending is not None and n - pending[2] <= GO_PAIR_WINDOW and 0 < v <= MAX_GO_STRING \
                    and pending[0] + v <= hi:
                yield DataRef(func_index, pending[1], "gostring", "data", pending[0], v)
                pending = None
            elif lo <= v < hi:
                pending = (v, stack[-1][2], n)
        if c == 1:
            stack.append(("c", int(imms[0]), at))
        elif c == 2:  # load: address on top
            a = pop()
            off = int(imms[1])
            if a is not None and a[0] == "c" and lo <= a[1] + off < mem_hi:
                yield DataRef(func_index, a[2], "load", "data", a[1] + off, WIDTH[op])
                stack.append(None)
            elif a is not None and a[0] == "a":
                stack.append(("l", a[1], a[2]))
            else:
                if lo <= off < mem_hi:  # a static array indexed by a computed value
                    yield DataRef(func_index, at, "load", "data", off, WIDTH[op])
                stack.append(None)
        elif c == 3:  # store: value on top, address below
            yield from spill(1)
            a = pop()
            off = int(imms[1])
            if a is not None and a[0] == "c" and lo <= a[1] + off < mem_hi:
                yield DataRef(func_index, a[2], "store", "data", a[1] + off, WIDTH[op])
            elif (a is None or a[0] != "a") and lo <= off < mem_hi:
                yield DataRef(func_index, at, "store", "data", off, WIDTH[op])
        elif c == 4:
            b, a = pop(), pop()
            derived = None
            for v in (a, b):
                if v is not None and v[0] == "c" and lo <= v[1] < hi:
                    # base + index: the base is the address of a table or an array
                    yield DataRef(func_index, v[2], "addr", "data", v[1])
                    derived = ("a", v[1], v[2])
                elif v is not None and v[0] == "a":
                    derived = v
            stack.append(derived)
        elif c == 5:
            yield from spill(1)
            stack.append(None)
        elif c == 6:
            stack.append(None)
        elif c == 7:
            yield from spill(1)
        elif c == 8:
            yield from spill(1)
            stack.append(None)
        elif c == 9:
            yield DataRef(func_index, at, "read", "global", int(imms[0]))
            stack.append(None)
        elif c == 10:
            yield DataRef(func_index, at, "write", "global", int(imms[0]))
            yield from spill(1)
        elif c == 11:
            idx = pop()
            if idx is not None and idx[0] == "l":
                yield DataRef(func_index, idx[2], "funcptr", "data", idx[1])
            yield DataRef(func_index, at, "call_indirect", "table", int(imms[1]) if len(imms) > 1 else 0)
            yield from spill(len(stack))
        elif c == 12:
            pass
        else:  # calls, control flow, anything else: operands leave, what stays is unknown
            yield from spill(len(stack))


def _uleb(data: bytes, p: int) -> tuple[int, int]:
    x = data[p]
    if x < 0x80:
        return x, p + 1
    return read_uleb(data, p, len(data), 64)


def _sleb(data: bytes, p: int, bits: int) -> tuple[int, int]:
    x = data[p]
    if x < 0x40:
        return x, p + 1
    if x < 0x80:
        return x - 0x80, p + 1
    return read_sleb(data, p, len(data), bits)


# immediate kinds the fast scan reads itself; every other kind goes to decode_one
_ONE_LEB = frozenset({K_U32, K_GLOBAL, K_CALL, K_REF_FUNC, K_TABLE, K_TYPE})


def function_refs(data: bytes, func_index: int, body_offset: int, body_size: int,
                  lo: int, hi: int, go: bool = False, mem_hi: int | None = None) -> list[DataRef]:
    """The data and global references of one body (see :func:`function_refs_careful`, which
    this inlines: the common immediates are read here, rare ones by the careful decoder)."""
    end = body_offset + body_size
    mem_hi = hi if mem_hi is None else mem_hi
    p = skip_local_decls(data, body_offset, end)
    out: list[DataRef] = []
    emit = out.append
    stack: list[tuple[str, int, int] | None] = []
    push = stack.append
    cls, kinds, width = _CLASS, KIND, WIDTH
    pending: tuple[int, int, int] | None = None
    n = 0

    def spill(k: int) -> None:
        for _ in range(min(k, len(stack))):
            v = stack.pop()
            if v is not None and v[0] == "c" and lo <= v[1] < hi:
                emit(DataRef(func_index, v[2], "addr", "data", v[1]))

    while p < end:
        at = p
        b = data[p]
        k = kinds[b] if b < 0xFB else K_PREFIX
        if k == K_NONE:
            op, p, x = b, p + 1, 0
        elif k in _ONE_LEB:
            op = b
            x, p = _uleb(data, p + 1)
        elif k == K_I32:
            op = b
            x, p = _sleb(data, p + 1, 32)
        elif k == K_I64:
            op = b
            x, p = _sleb(data, p + 1, 64)
        elif k == K_MEM:
            op = b
            align, p = _uleb(data, p + 1)
            if align & 0x40:
                _mi, p = _uleb(data, p)
            x, p = _uleb(data, p)
        else:
            op, p, imms = decode_one(data, p, end)
            x = int(imms[1]) if kinds[op] in (K_MEM, K_CALL_INDIRECT) else 0
        n += 1
        c = cls[op] if op < len(cls) else 0
        if c == 0:
            spill(len(stack))
            continue
        if go and c == 3 and stack and stack[-1] is not None and stack[-1][0] == "c":
            v = stack[-1][1]
            if pending is not None and n - pending[2] <= GO_PAIR_WINDOW and 0 < v <= MAX_GO_STRING \
                    and pending[0] + v <= hi:
                emit(DataRef(func_index, pending[1], "gostring", "data", pending[0], v))
                pending = None
            elif lo <= v < hi:
                pending = (v, stack[-1][2], n)
        if c == 6:
            push(None)
        elif c == 1:
            push(("c", x, at))
        elif c == 2:
            a = stack.pop() if stack else None
            if a is not None and a[0] == "c" and lo <= a[1] + x < mem_hi:
                emit(DataRef(func_index, a[2], "load", "data", a[1] + x, width[op]))
                push(None)
            elif a is not None and a[0] == "a":
                push(("l", a[1], a[2]))
            else:
                if lo <= x < mem_hi:
                    emit(DataRef(func_index, at, "load", "data", x, width[op]))
                push(None)
        elif c == 3:
            spill(1)
            a = stack.pop() if stack else None
            if a is not None and a[0] == "c" and lo <= a[1] + x < mem_hi:
                emit(DataRef(func_index, a[2], "store", "data", a[1] + x, width[op]))
            elif (a is None or a[0] != "a") and lo <= x < mem_hi:
                emit(DataRef(func_index, at, "store", "data", x, width[op]))
        elif c == 4:
            v2 = stack.pop() if stack else None
            v1 = stack.pop() if stack else None
            derived = None
            for v in (v1, v2):
                if v is not None and v[0] == "c" and lo <= v[1] < hi:
                    emit(DataRef(func_index, v[2], "addr", "data", v[1]))
                    derived = ("a", v[1], v[2])
                elif v is not None and v[0] == "a":
                    derived = v
            push(derived)
        elif c == 5:
            spill(1)
            push(None)
        elif c == 7:
            spill(1)
        elif c == 8:
            spill(1)
            push(None)
        elif c == 9:
            emit(DataRef(func_index, at, "read", "global", x))
            push(None)
        elif c == 10:
            emit(DataRef(func_index, at, "write", "global", x))
            spill(1)
        elif c == 11:
            idx = stack.pop() if stack else None
            if idx is not None and idx[0] == "l":
                emit(DataRef(func_index, idx[2], "funcptr", "data", idx[1]))
            emit(DataRef(func_index, at, "call_indirect", "table", x))
            spill(len(stack))
    return out


# ----------------------------------------------------------------------------- items


def _slug(text: str) -> str:
    s = re.sub(r"[^0-9A-Za-z]+", "_", text).strip("_").lower()
    return s[:MAX_LABEL].rstrip("_")


def _cstring_at(mem: bytes, k: int) -> str | None:
    """The C string starting at ``mem[k]`` (printable UTF-8, NUL-terminated), if any."""
    z = mem.find(b"\0", k, k + 4096)
    if z < 0 or z - k < 1:
        return None
    raw = mem[k:z]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if not all(ch.isprintable() or ch in "\t\n\r" for ch in text):
        return None
    return text


def _utf8_text(raw: bytes) -> str | None:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return text if text and all(ch.isprintable() or ch in "\t\n\r" for ch in text) else None


def memory_image(analysis: ModuleAnalysis, limit: int = MAX_IMAGE) -> tuple[int, bytes]:
    """``(lowest address, bytes)``: the initial memory from the lowest to the highest byte any
    active segment sets (gaps read as zero); empty when that span exceeds ``limit``."""
    segs = segments(analysis)
    if not segs:
        return 0, b""
    lo, hi = segs[0][0], max(b + len(d) for b, d, _ in segs)
    if hi - lo > limit:
        return lo, b""
    img = bytearray(hi - lo)
    for b, d, _k in segs:
        img[b - lo : b - lo + len(d)] = d
    return lo, bytes(img)


def go_string_headers(analysis: ModuleAnalysis, lo: int, hi: int) -> list[DataRef]:
    """Go string headers in data: 8-byte aligned (pointer, length) pairs of 64-bit words whose
    pointer lies in the data and whose bytes are text; as ``gostring`` references from the
    header's own address (function -1: data, not code). Go's linker trims the zero bytes at
    segment ends (a length's high bytes), so the scan runs over the whole memory image."""
    base, img = memory_image(analysis)
    out: list[DataRef] = []
    for q in range((-base) % 8, len(img) - 15, 8):
        ptr = int.from_bytes(img[q : q + 8], "little")
        if not lo <= ptr < hi:
            continue
        ln = int.from_bytes(img[q + 8 : q + 16], "little")
        if not 0 < ln <= 4096 or ptr + ln > hi:
            continue
        if _utf8_text(img[ptr - base : ptr - base + ln]) is not None:
            out.append(DataRef(-1, base + q, "gostring", "data", ptr, ln))
    return out


def _string_start(mem: bytes, k: int) -> int:
    """``k`` itself, or the start of the C string ``mem[k]`` lies inside (not at its start)."""
    if k == 0 or mem[k - 1] == 0 or not (0x20 <= mem[k - 1] < 0x7F):
        return k
    z = mem.rfind(b"\0", max(0, k - 4096), k)
    s0 = z + 1
    s = _cstring_at(mem, s0)
    if s is not None and len(s.encode()) >= MIN_STRING and s0 + len(s.encode()) > k:
        return s0
    return k


def _utf16_at(mem: bytes, k: int) -> str | None:
    if k % 2:
        return None
    n = 0
    while k + 2 * n + 1 < len(mem) and mem[k + 2 * n + 1] == 0 and 0x20 <= mem[k + 2 * n] < 0x7F:
        n += 1
    if n < MIN_STRING or mem[k + 2 * n : k + 2 * n + 2] != b"\0\0":
        return None
    return mem[k : k + 2 * n].decode("utf-16-le")


def _classify(mem: bytes, base: int, lo: int, hi: int, table: tuple[int, int] | None,
              fptr: bool = False) -> tuple[str, str | None, list[int]]:
    """Kind, text and targets of the bytes ``mem`` at address ``base``."""
    if not mem.strip(b"\0"):
        return "zero", None, []
    s = _cstring_at(mem, 0)
    if s is not None and len(s.encode()) >= MIN_STRING and not mem[len(s.encode()) + 1 :].strip(b"\0"):
        return "cstring", s, []  # the string and the NUL padding after it
    u = _utf16_at(mem, 0)
    if u is not None:
        return "utf16", u, []
    if base % 4 == 0 and len(mem) >= 8 and len(mem) % 4 == 0:
        words = [int.from_bytes(mem[i : i + 4], "little") for i in range(0, len(mem), 4)]
        nonzero = [w for w in words if w]
        if nonzero and all(lo <= w < hi for w in nonzero) and len(nonzero) * 2 >= len(words):
            return "pointer_table", None, words
        # indexed and called through call_indirect: its words are function-table slots
        if fptr and table is not None and all(table[0] <= w < table[1] for w in nonzero):
            return "funcptr_table", None, words
    return "numeric", None, []


def build_items(analysis: ModuleAnalysis, refs: list[DataRef],
                table_range: tuple[int, int] | None = None,
                bss_hi: int = 0) -> tuple[list[DataItem], bool]:
    """Cut every segment at the referenced addresses and at string ends; classify the pieces.
    Referenced addresses in ``[end of the data, bss_hi)`` become ``bss`` items (variables
    with no initial bytes), each up to the next referenced address."""
    segs = segments(analysis)
    if not segs:
        return [], False
    lo, hi = segs[0][0], max(b + len(d) for b, d, _ in segs)
    cuts = {r.target for r in refs if r.target_kind == "data"}
    fptr = {r.target for r in refs if r.kind == "funcptr"}
    gostr = {r.target: r.width for r in refs if r.kind == "gostring"}
    for a, w in list(gostr.items()):
        cuts.add(a + w)  # a Go string ends where its length says (no NUL)
    items: list[DataItem] = []
    truncated = False
    for base, mem, k in segs:
        end = base + len(mem)
        # a reference into the middle of a C string (``"directory" + 1``) is an interior
        # reference of that string, not the start of an item
        # (Go strings have no NUL: every cut stands)
        inside = sorted({a if gostr else _string_start(mem, a - base) + base
                         for a in cuts if base <= a < end})
        # pointer tables point at more items: one level of their words as cuts
        starts = sorted(set([base] + inside))
        # strings run to their NUL: a new item starts after it when nothing else cuts there
        bounds: list[int] = []
        for i, a in enumerate(starts):
            bounds.append(a)
            nxt = starts[i + 1] if i + 1 < len(starts) else end
            q = a - base
            while q < nxt - base:
                s = _cstring_at(mem, q)
                if s is None or len(s.encode()) < MIN_STRING:
                    break
                q += len(s.encode()) + 1
                while q < nxt - base and mem[q] == 0:
                    q += 1
                if q < nxt - base:
                    bounds.append(base + q)
        bounds = sorted(set(bounds))
        for i, a in enumerate(bounds):
            b = bounds[i + 1] if i + 1 < len(bounds) else end
            piece = mem[a - base : b - base]
            if a in gostr and b - a == gostr[a] and _utf8_text(piece) is not None:
                kind, text, targets = "gostring", _utf8_text(piece), []
            else:
                kind, text, targets = _classify(piece, a, lo, hi, table_range, a in fptr)
            items.append(DataItem(address=a, size=b - a, kind=kind, segment=k,
                                  text=text[:MAX_TEXT] if text is not None else None,
                                  targets=targets[:256]))
            if len(items) >= MAX_ITEMS:
                return items, True
    bss = sorted(a for a in cuts if hi <= a < bss_hi)
    for i, a in enumerate(bss):
        b = bss[i + 1] if i + 1 < len(bss) else bss_hi
        items.append(DataItem(address=a, size=min(b - a, MAX_BSS_ITEM), kind="bss", segment=-1))
        if len(items) >= MAX_ITEMS:
            return items, True
    return items, truncated


def label_items(items: list[DataItem]) -> None:
    """Labels from content: ``s_<text>`` for strings, ``<kind>_<hex address>`` otherwise;
    a label taken twice gets the address as a suffix."""
    seen: dict[str, int] = {}
    for it in items:
        if it.kind in ("cstring", "utf16", "gostring") and it.text:
            base = "s_" + (_slug(it.text) or f"{it.address:x}")
        elif it.kind == "zero":
            base = f"zero_{it.address:x}"
        elif it.kind == "bss":
            base = f"bss_{it.address:x}"
        elif it.kind in ("pointer_table", "funcptr_table"):
            base = ("fptrs_" if it.kind == "funcptr_table" else "ptrs_") + f"{it.address:x}"
        else:
            base = f"data_{it.address:x}"
        n = seen.get(base, 0)
        seen[base] = n + 1
        it.label = base if n == 0 else f"{base}_{it.address:x}"


# ----------------------------------------------------------------------------- whole module


def bss_end(analysis: ModuleAnalysis, data_end: int, stack_pointer: int | None) -> int:
    """Where the zero-initialised data after the segments ends: ``__heap_base`` when the
    module exports it, else the stack pointer's start when it lies above the data (wasm-ld
    puts the stack after .bss unless --stack-first), else the data end (no .bss assumed)."""
    m = analysis.module
    for e in m.exports:
        if e.kind == "global" and e.name == "__heap_base" and 0 <= e.index < len(m.globals):
            init = m.globals[e.index].init
            if isinstance(init, int) and init > data_end:
                return init
    if stack_pointer is not None and 0 <= stack_pointer < len(m.globals):
        init = m.globals[stack_pointer].init
        if isinstance(init, int) and data_end < init <= data_end + MAX_BSS:
            return init
    if m.memories and not m.memories[0].memory64:
        # stack first (the stack below the data): .bss runs on into the heap; bounded by the
        # initial memory size
        return max(data_end, min(m.memories[0].min * 65536, data_end + MAX_BSS))
    return data_end


def build_data_model(analysis: ModuleAnalysis, data: bytes, *, stack_pointer: int | None = None,
                     go: bool = False,
                     progress: Callable[[int, int], None] | None = None) -> DataModel:
    """The data model of one module (see the module docstring)."""
    segs = segments(analysis)
    lo = segs[0][0] if segs else 0
    data_end = max((b + len(d) for b, d, _ in segs), default=0)
    mem_hi = bss_end(analysis, data_end, stack_pointer) if segs else 0
    hi = data_end
    # address 0 and tiny constants are never data (NULL, flags, small counts)
    lo = max(lo, 1024) if hi > 1024 else lo
    refs: list[DataRef] = []
    truncated = False
    defined = [f for f in analysis.functions if not f.imported and f.body_size]
    for n, f in enumerate(defined):
        if progress is not None and n % 512 == 0:
            progress(n, len(defined))
        for r in function_refs(data, f.index, f.body_offset, f.body_size, lo, hi, go, mem_hi):
            refs.append(r)
        if len(refs) >= MAX_REFS:
            truncated = True
            break
    if progress is not None:
        progress(len(defined), len(defined))
    if go:
        headers = go_string_headers(analysis, lo, hi)
        # code that takes a header's address uses its string: the string's xref too
        by_header = {h.offset: h for h in headers}
        refs.extend(DataRef(r.func_index, r.offset, "via_header", "data", by_header[r.target].target)
                    for r in list(refs) if r.target_kind == "data" and r.target in by_header)
        refs.extend(headers)
    elems = [e for e in analysis.module.elements if e.mode == "active" and e.offset is not None]
    table_range = (min(e.offset for e in elems), max(e.offset + len(e.func_indices) for e in elems)) \
        if elems else None
    items, cut = build_items(analysis, refs, table_range, mem_hi)
    label_items(items)
    starts = [it.address for it in items]
    for r in refs:
        if r.target_kind == "data":
            k = bisect_right(starts, r.target) - 1
            if k >= 0:
                items[k].refs += 1
    gl = global_infos(analysis, stack_pointer, go=go, getters=_getter_globals(analysis, data))
    readers: dict[int, set[int]] = {}
    writers: dict[int, set[int]] = {}
    for r in refs:
        if r.target_kind == "global":
            (readers if r.kind == "read" else writers).setdefault(r.target, set()).add(r.func_index)
    for g in gl:
        g.reads = len(readers.get(g.index, ()))
        g.writes = len(writers.get(g.index, ()))
    return DataModel(gl, items, refs, lo, max(hi, mem_hi), truncated or cut, starts)


# ----------------------------------------------------------------------------- role labels

MALLOC_FAMILY = frozenset({
    "malloc", "free", "realloc", "calloc", "memalign", "posix_memalign", "aligned_alloc",
    "malloc_usable_size", "internal_memalign", "dispose_chunk", "sys_alloc", "tmalloc_large",
    "tmalloc_small", "prepend_alloc", "release_unused_segments", "sys_trim", "init_top",
    "init_bins", "add_segment", "emscripten_builtin_malloc", "emscripten_builtin_free",
})
ERRNO_FUNCS = frozenset({"__errno_location", "___errno_location", "__errno"})


def _base_name(name: str) -> str:
    n = name.lstrip("_")
    return n[2:] if n.startswith("dl") and n[2:] in MALLOC_FAMILY else n


def role_labels(model: DataModel, analysis: ModuleAnalysis, names: dict[int, str]) -> None:
    """Labels from what the code around an item is known to be (``names``: function index
    -> name, e.g. the recognizers' and the KB's): ``errno`` (the address ``__errno_location``
    returns or its only static access), ``dlmalloc_state`` / ``malloc_state`` (the static
    variables the malloc family reads and writes, merged into one item), function-pointer
    tables named from the functions they hold (``ftable_<common prefix>``), tables of string
    pointers from their first string (``strtab_<text>``). Mutates ``model`` in place."""
    if not model.items:
        return
    starts = [it.address for it in model.items]

    def item_of(addr: int) -> int | None:
        k = bisect_right(starts, addr) - 1
        if k < 0:
            return None
        it = model.items[k]
        return k if it.address <= addr < it.address + max(it.size, 1) else None

    # errno: what __errno_location touches
    for f in analysis.functions:
        if f.imported or not any(n in ERRNO_FUNCS for n in (names.get(f.index, ""),)):
            continue
        hits = {item_of(r.target) for r in model.refs
                if r.func_index == f.index and r.target_kind == "data"}
        hits.discard(None)
        if not hits:  # `i32.const ADDR; end`: an address into .bss is not a reference
            consts = [c for c in f.consts if model.data_start <= c < model.data_end]
            hits = {item_of(c) for c in consts} - {None}
        if len(hits) == 1:
            model.items[hits.pop()].label = "errno"
    # the malloc family's static state, merged into one item
    fam = {i for i, n in names.items() if _base_name(n) in MALLOC_FAMILY}
    # ... and the unnamed functions they call (malloc as a wrapper of the allocator proper)
    funcs = analysis.functions
    fam |= {c for i in list(fam) if 0 <= i < len(funcs) for c in funcs[i].calls
            if c not in names and 0 <= c < len(funcs) and not funcs[c].imported}
    if fam:
        total: dict[int, int] = {}
        mine: dict[int, int] = {}
        for r in model.refs:
            if r.target_kind != "data" or r.func_index < 0:
                continue
            k = item_of(r.target)
            if k is None:
                continue
            total[k] = total.get(k, 0) + 1
            if r.func_index in fam:
                mine[k] = mine.get(k, 0) + 1
        cand = {k for k, n in mine.items() if n * 10 >= total[k] * 6
                and model.items[k].kind in ("bss", "zero", "numeric")}
        # contiguous runs of candidates; the run the family touches most is its state
        runs: list[list[int]] = []
        for k in sorted(cand):
            prev = model.items[k - 1] if k > 0 else None
            if runs and runs[-1][-1] == k - 1 and prev is not None \
                    and prev.address + prev.size == model.items[k].address:
                runs[-1].append(k)
            else:
                runs.append([k])
        best = max(runs, key=lambda r: (sum(mine[k] for k in r), -r[0]), default=None)
        if best is not None and sum(mine[k] for k in best) >= 4:
            lo_k, hi_k = best[0], best[-1]
            first, last = model.items[lo_k], model.items[hi_k]
            merged = DataItem(
                address=first.address, size=last.address + last.size - first.address,
                kind=first.kind, segment=first.segment,
                label="dlmalloc_state" if any(names.get(i, "").lstrip("_").startswith("dl")
                                              for i in fam) else "malloc_state",
                refs=sum(model.items[k].refs for k in best),
            )
            model.items[lo_k : hi_k + 1] = [merged]
            model._starts = []
            starts = [it.address for it in model.items]
    # tables named from what they hold
    slot_func: dict[int, int] = {}
    for e in analysis.module.elements:
        if e.mode == "active" and e.offset is not None:
            for j, fi in enumerate(e.func_indices):
                if fi is not None:
                    slot_func[e.offset + j] = fi
    for it in model.items:
        if it.kind == "funcptr_table" and it.targets:
            fnames = [names.get(slot_func.get(t, -1)) for t in it.targets if t]
            fnames = [n for n in fnames if n]
            if fnames:
                prefix = _common_prefix(fnames).rstrip("_")
                base = prefix if len(prefix) >= 3 else fnames[0]
                it.label = "ftable_" + (_slug(base) or f"{it.address:x}")
        elif it.kind == "pointer_table" and it.targets:
            k = item_of(next((t for t in it.targets if t), -1))
            tgt = model.items[k] if k is not None else None
            if tgt is not None and tgt.kind in ("cstring", "utf16", "gostring") and tgt.text:
                it.label = "strtab_" + (_slug(tgt.text) or f"{it.address:x}")
    _unique_labels(model.items)


def _common_prefix(words: list[str]) -> str:
    a, b = min(words), max(words)
    n = 0
    while n < len(a) and n < len(b) and a[n] == b[n]:
        n += 1
    return a[:n]


def _unique_labels(items: list[DataItem]) -> None:
    seen: set[str] = set()
    for it in items:
        label = it.label or f"data_{it.address:x}"
        if label in seen:
            label = f"{label}_{it.address:x}"
        seen.add(label)
        it.label = label
