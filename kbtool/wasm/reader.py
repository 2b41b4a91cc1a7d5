"""Binary reader: sections into a :class:`Module` model (no per-instruction work)."""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass, field

from .errors import WasmFormatError
from .instr import decode_one, read_valtype
from .leb import read_uleb
from .opcodes import PREFIX_BASE

KIND_NAMES = {0: "func", 1: "table", 2: "memory", 3: "global", 4: "tag"}
SECTION_NAMES = {
    0: "custom", 1: "type", 2: "import", 3: "function", 4: "table", 5: "memory",
    6: "global", 7: "export", 8: "start", 9: "element", 10: "code", 11: "data",
    12: "datacount", 13: "tag",
}
# canonical order of the non-custom sections (the tag section sits between memory and global)
_ORDER = {1: 1, 2: 2, 3: 3, 4: 4, 5: 5, 13: 6, 6: 7, 7: 8, 8: 9, 9: 10, 12: 11, 10: 12, 11: 13}


# ----------------------------------------------------------------------------- model

@dataclass(slots=True)
class FuncType:
    params: tuple[str, ...] = ()
    results: tuple[str, ...] = ()
    kind: str = "func"  # "func", or "struct"/"array" for GC types (params/results empty)

    def text(self) -> str:
        if self.kind != "func":
            return f"({self.kind})"
        ps = "(" + ", ".join(self.params) + ")"
        if not self.results:
            rs = "()"
        elif len(self.results) == 1:
            rs = self.results[0]
        else:
            rs = "(" + ", ".join(self.results) + ")"
        return f"{ps} -> {rs}"

    def __str__(self) -> str:
        return self.text()


@dataclass(slots=True)
class Import:
    module: str
    field: str
    kind: str  # "func", "table", "memory", "global", "tag"
    index: int  # index in its own index space (function index for a func import)
    type_index: int | None = None  # func and tag imports
    desc: object = None  # Table / Memory / Global for those kinds


@dataclass(slots=True)
class Table:
    reftype: str
    min: int
    max: int | None
    imported: bool = False
    table64: bool = False
    shared: bool = False  # shared-everything-threads


@dataclass(slots=True)
class Memory:
    min: int
    max: int | None
    shared: bool = False
    memory64: bool = False
    imported: bool = False
    page_size_log2: int = 16


@dataclass(slots=True)
class Global:
    valtype: str
    mutable: bool
    imported: bool = False
    init: int | float | None = None  # value of a constant initialiser, None otherwise
    shared: bool = False  # shared-everything-threads


@dataclass(slots=True)
class Export:
    name: str
    kind: str
    index: int


@dataclass(slots=True)
class Element:
    mode: str  # "active", "passive", "declarative"
    table_index: int
    offset: int | None  # constant offset of an active segment, None if not constant
    reftype: str
    func_indices: list[int | None]  # ref.func targets; None for ref.null / other exprs


@dataclass(slots=True)
class DataSegment:
    memory_index: int
    offset: int | None  # constant offset of an active segment, None if not constant
    data: bytes
    passive: bool
    file_offset: int = 0  # file offset of ``data``


@dataclass(slots=True)
class CustomSection:
    name: str
    offset: int  # file offset of ``data`` (the payload after the name)
    data: bytes


@dataclass(slots=True)
class Tag:
    attribute: int
    type_index: int


@dataclass(slots=True)
class Section:
    id: int
    name: str
    offset: int  # file offset of the payload
    size: int


@dataclass
class Module:
    types: list[FuncType] = field(default_factory=list)
    imports: list[Import] = field(default_factory=list)
    func_imports: list[Import] = field(default_factory=list)
    func_type_indices: list[int] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    memories: list[Memory] = field(default_factory=list)
    globals: list[Global] = field(default_factory=list)
    exports: list[Export] = field(default_factory=list)
    start: int | None = None
    elements: list[Element] = field(default_factory=list)
    data_segments: list[DataSegment] = field(default_factory=list)
    customs: list[CustomSection] = field(default_factory=list)
    func_names: dict[int, str] = field(default_factory=dict)
    local_names: dict[int, dict[int, str]] = field(default_factory=dict)
    module_name: str | None = None
    producers: dict[str, list[str]] = field(default_factory=dict)
    target_features: list[str] = field(default_factory=list)
    code: list[tuple[int, int]] = field(default_factory=list)
    # extras beyond the INTERNALS contract
    tags: list[Tag] = field(default_factory=list)
    data_count: int | None = None
    sections: list[Section] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # tolerated problems in custom sections
    size: int = 0

    @property
    def num_func_imports(self) -> int:
        return len(self.func_imports)

    @property
    def num_functions(self) -> int:
        return len(self.func_imports) + len(self.func_type_indices)

    @property
    def shared_memory(self) -> bool:
        return any(m.shared for m in self.memories)

    def func_type_index(self, func_index: int) -> int:
        n = len(self.func_imports)
        if func_index < n:
            return self.func_imports[func_index].type_index
        return self.func_type_indices[func_index - n]

    def func_type(self, func_index: int) -> FuncType:
        return self.types[self.func_type_index(func_index)]

    def custom(self, name: str) -> CustomSection | None:
        for c in self.customs:
            if c.name == name:
                return c
        return None


# ----------------------------------------------------------------------------- cursor

class _R:
    __slots__ = ("data", "pos", "end")

    def __init__(self, data, pos: int, end: int) -> None:
        self.data = data
        self.pos = pos
        self.end = end

    def u8(self, what: str = "byte") -> int:
        if self.pos >= self.end:
            raise WasmFormatError(self.pos, what, "unexpected end of data")
        b = self.data[self.pos]
        self.pos += 1
        return b

    def u32(self, what: str = "u32") -> int:
        v, self.pos = read_uleb(self.data, self.pos, self.end, 32, what)
        return v

    def u64(self, what: str = "u64") -> int:
        v, self.pos = read_uleb(self.data, self.pos, self.end, 64, what)
        return v

    def count(self, what: str, min_item_size: int = 1) -> int:
        at = self.pos
        n = self.u32(what)
        if n * min_item_size > self.end - self.pos:
            raise WasmFormatError(at, what, f"count {n} larger than the remaining section")
        return n

    def raw(self, n: int, what: str) -> bytes:
        if n > self.end - self.pos:
            raise WasmFormatError(self.pos, what, f"{n} bytes, past the end")
        b = self.data[self.pos:self.pos + n]
        self.pos += n
        return bytes(b)

    def name(self, what: str = "name") -> str:
        at = self.pos
        n = self.u32(f"{what} length")
        b = self.raw(n, what)
        try:
            return b.decode("utf-8")
        except UnicodeDecodeError:
            raise WasmFormatError(at, f"UTF-8 {what}", "invalid UTF-8") from None

    def valtype(self, what: str = "value type") -> str:
        t, self.pos = read_valtype(self.data, self.pos, self.end, what)
        return t

    def done(self, what: str) -> None:
        if self.pos != self.end:
            raise WasmFormatError(self.pos, f"end of {what}",
                                  f"{self.end - self.pos} unread bytes")


# ----------------------------------------------------------------------------- parts

def _limits(r: _R, is_memory: bool):
    """Limits of a memory or table, checked against the spec's bounds before any use:
    page size log2 0 or 16 (custom-page-sizes), min <= max, sizes within the index type
    (memory: at most 2**32 / 2**64 bytes worth of pages)."""
    at = r.pos
    flags = r.u8("limits flags")
    if flags & ~0x0F:
        raise WasmFormatError(at, "limits flags 0..15", f"got 0x{flags:02x}")
    is64 = bool(flags & 4)
    rd = r.u64 if is64 else r.u32
    mn = rd("limits minimum")
    mx = rd("limits maximum") if flags & 1 else None
    page_log2 = 16
    if flags & 8:
        if not is_memory:
            raise WasmFormatError(at, "table limits", "tables have no page size")
        p_at = r.pos
        page_log2 = r.u32("page size")
        if page_log2 not in (0, 16):
            raise WasmFormatError(p_at, "page size log2 0 or 16",
                                  f"invalid custom page size (log2 {page_log2})")
    shared = bool(flags & 2)
    if mx is not None and mn > mx:
        raise WasmFormatError(at, "limits minimum <= maximum", f"{mn} > {mx}")
    if is_memory:
        addr_bits = 64 if is64 else 32
        max_pages = min((1 << addr_bits) - 1, 1 << (addr_bits - page_log2))
        if addr_bits == 64 and page_log2 == 16:
            max_pages = 1 << 48
        for v in (mn, mx):
            if v is not None and v > max_pages:
                raise WasmFormatError(at, f"memory size of at most {max_pages} pages",
                                      f"got {v} pages of 2**{page_log2} bytes")
    return mn, mx, shared, is64, page_log2


def _tabletype(r: _R, imported: bool) -> Table:
    if r.pos < r.end and r.data[r.pos] == 0x40:  # table with an init expression
        r.pos += 1
        r.u8("reserved byte")
        t = r.valtype("table element type")
        mn, mx, sh, is64, _ = _limits(r, False)
        _const_expr(r, None)
        return Table(t, mn, mx, imported, is64, sh)
    t = r.valtype("table element type")
    mn, mx, sh, is64, _ = _limits(r, False)
    return Table(t, mn, mx, imported, is64, sh)


def _memtype(r: _R, imported: bool) -> Memory:
    mn, mx, shared, is64, page_log2 = _limits(r, True)
    return Memory(mn, mx, shared, is64, imported, page_log2)


def _globaltype(r: _R, imported: bool) -> Global:
    t = r.valtype("global type")
    at = r.pos
    m = r.u8("global mutability")
    if m > 3:  # bit 0 mutable, bit 1 shared (shared-everything-threads)
        raise WasmFormatError(at, "global mutability flags 0..3", f"got {m}")
    return Global(t, bool(m & 1), imported, shared=bool(m & 2))


_I32_ARITH = {0x6A: lambda a, b: a + b, 0x6B: lambda a, b: a - b, 0x6C: lambda a, b: a * b}
_I64_ARITH = {0x7C: lambda a, b: a + b, 0x7D: lambda a, b: a - b, 0x7E: lambda a, b: a * b}
_V128_CONST = PREFIX_BASE[0xFD] + 0x0C


def _const_expr(r: _R, globals_: list[Global] | None):
    """Parse a constant expression up to its ``end``.

    Returns ``(value, ref_func)``: the integer value if it folds to a constant (i32/i64
    consts, extended-const arithmetic, global.get of a constant global), else None; and the
    function index of a ``ref.func`` expression (else None).
    """
    stack: list = []
    ref_func = None
    start = r.pos
    while True:
        if r.pos >= r.end:
            raise WasmFormatError(r.pos, "'end' of constant expression",
                                  "unexpected end of data")
        op, p2, imms = decode_one(r.data, r.pos, r.end)
        r.pos = p2
        if op == 0x0B:
            break
        if op in (0x41, 0x42):
            stack.append(imms[0])
        elif op in (0x43, 0x44):
            stack.append(imms[0])
        elif op == 0x23:
            g = imms[0]
            val = None
            if globals_ is not None and g < len(globals_):
                gl = globals_[g]
                if not gl.imported and not gl.mutable:
                    val = gl.init
            stack.append(val)
        elif op in _I32_ARITH or op in _I64_ARITH:
            if len(stack) < 2:
                raise WasmFormatError(start, "valid constant expression", "stack underflow")
            b = stack.pop()
            a = stack.pop()
            if a is None or b is None or isinstance(a, float) or isinstance(b, float):
                stack.append(None)
            elif op in _I32_ARITH:
                v = _I32_ARITH[op](a, b) & 0xFFFFFFFF
                stack.append(v - (1 << 32) if v >= 1 << 31 else v)
            else:
                v = _I64_ARITH[op](a, b) & 0xFFFFFFFFFFFFFFFF
                stack.append(v - (1 << 64) if v >= 1 << 63 else v)
        elif op == 0xD2:
            ref_func = imms[0]
            stack.append(None)
        else:  # ref.null, v128.const, GC constructors ...: not an integer
            stack.append(None)
    val = stack[-1] if len(stack) == 1 else None
    return val, ref_func


# ----------------------------------------------------------------------------- sections

def _type_section(r: _R, m: Module) -> None:
    n = r.count("type count")
    for _ in range(n):
        at = r.pos
        form = r.u8("type form")
        if form == 0x4E:  # rec group
            k = r.count("rec group size")
            for _ in range(k):
                m.types.append(_subtype(r, r.u8("sub type form"), r.pos - 1))
        else:
            m.types.append(_subtype(r, form, at))


def _subtype(r: _R, form: int, at: int) -> FuncType:
    if form in (0x50, 0x4F):  # sub / sub final
        k = r.count("supertype count")
        for _ in range(k):
            r.u32("supertype index")
        at = r.pos
        form = r.u8("composite type form")
    seen: set[int] = set()
    # prefixes, each at most once: 0x4C describes / 0x4D descriptor (custom-descriptors),
    # 0x65 shared (shared-everything-threads)
    while form in (0x4C, 0x4D, 0x65) and form not in seen:
        seen.add(form)
        if form != 0x65:
            r.u32("descriptor type index")
        at = r.pos
        form = r.u8("composite type form")
    if form == 0x60:
        np = r.count("parameter count")
        params = tuple(r.valtype("parameter type") for _ in range(np))
        nr = r.count("result count")
        results = tuple(r.valtype("result type") for _ in range(nr))
        return FuncType(params, results)
    if form == 0x5F:  # struct
        k = r.count("field count")
        for _ in range(k):
            _storagetype(r)
        return FuncType(kind="struct")
    if form == 0x5E:  # array
        _storagetype(r)
        return FuncType(kind="array")
    hint = ""
    if form in (0x5D, 0x5C):
        hint = " (stack-switching proposal types are not supported)"
    raise WasmFormatError(at, "type form 0x60 (func)", f"got 0x{form:02x}{hint}")


def _storagetype(r: _R) -> None:
    b = r.data[r.pos] if r.pos < r.end else None
    if b is not None and b in (0x78, 0x77):
        r.pos += 1
    else:
        r.valtype("field type")
    at = r.pos
    if r.u8("field mutability") > 1:
        raise WasmFormatError(at, "field mutability 0 or 1")


def _import_desc(r: _R, m: Module, mod: str, fld: str, at: int, kind: int) -> None:
    if kind == 0:
        ti = r.u32("type index")
        imp = Import(mod, fld, "func", len(m.func_imports), ti)
        m.func_imports.append(imp)
    elif kind == 1:
        t = _tabletype(r, True)
        imp = Import(mod, fld, "table", len(m.tables), None, t)
        m.tables.append(t)
    elif kind == 2:
        mem = _memtype(r, True)
        imp = Import(mod, fld, "memory", len(m.memories), None, mem)
        m.memories.append(mem)
    elif kind == 3:
        g = _globaltype(r, True)
        imp = Import(mod, fld, "global", len(m.globals), None, g)
        m.globals.append(g)
    elif kind == 4:
        attr = r.u8("tag attribute")
        ti = r.u32("tag type index")
        tag = Tag(attr, ti)
        imp = Import(mod, fld, "tag", len(m.tags), ti, tag)
        m.tags.append(tag)
    else:
        raise WasmFormatError(at, "import kind 0..4", f"got {kind}")
    m.imports.append(imp)


def _import_section(r: _R, m: Module) -> None:
    """Imports, including the compact encodings of the compact-import-section proposal
    (``module "" 0x7F vec(name desc)`` and ``module "" 0x7E desc vec(name)``). The section's
    count is the number of entries (a group counts once: wasm-tools) or the number of
    imports (wabt 1.0.x): entries are read to the end of the section and either must match.
    """
    at_count = r.pos
    n = r.count("import count", 3)
    entries = imports = 0
    while r.pos < r.end and entries < n + 1:
        mod = r.name("import module name")
        fld = r.name("import field name")
        at = r.pos
        kind = r.u8("import kind")
        if fld == "" and kind == 0x7F:
            k = r.count("compact import count", 2)
            for _ in range(k):
                name = r.name("import field name")
                at = r.pos
                _import_desc(r, m, mod, name, at, r.u8("import kind"))
            imports += max(k, 1)
        elif fld == "" and kind == 0x7E:
            at = r.pos
            kind = r.u8("import kind")
            desc_start = r.pos
            _import_desc(r, m, mod, "", at, kind)  # parsed once to find its end ...
            _undo_import(m, m.imports.pop())  # ... and re-read below for each name
            k = r.count("compact import count", 1)
            for _ in range(k):
                name = r.name("import field name")
                resume = r.pos
                r.pos = desc_start
                _import_desc(r, m, mod, name, at, kind)
                r.pos = resume
            imports += max(k, 1)
        else:
            _import_desc(r, m, mod, fld, at, kind)
            imports += 1
        entries += 1
        if entries == n and imports == n:
            break
    if n not in (entries, imports):
        raise WasmFormatError(at_count, f"{n} imports",
                              f"section holds {entries} entries with {imports} imports")


def _undo_import(m: Module, imp: Import) -> None:
    space = {"func": m.func_imports, "table": m.tables, "memory": m.memories,
             "global": m.globals, "tag": m.tags}[imp.kind]
    space.pop()


def _element_section(r: _R, m: Module) -> None:
    n = r.count("element segment count")
    for _ in range(n):
        at = r.pos
        flags = r.u32("element segment flags")
        if flags > 7:
            raise WasmFormatError(at, "element segment flags 0..7", f"got {flags}")
        table = 0
        offset = None
        reftype = "funcref"
        if flags & 1:
            mode = "declarative" if flags & 2 else "passive"
        else:
            mode = "active"
            if flags & 2:
                table = r.u32("table index")
            offset, _ = _const_expr(r, m.globals)
            if not isinstance(offset, int):
                offset = None
        uses_exprs = bool(flags & 4)
        if flags & 3:  # an explicit element kind / reference type
            if uses_exprs:
                reftype = r.valtype("element reference type")
            else:
                k_at = r.pos
                if r.u8("element kind") != 0:
                    raise WasmFormatError(k_at, "element kind 0x00 (funcref)")
        k = r.count("element count")
        funcs: list[int | None] = []
        if uses_exprs:
            for _ in range(k):
                _v, rf = _const_expr(r, m.globals)
                funcs.append(rf)
        else:
            for _ in range(k):
                funcs.append(r.u32("function index"))
        m.elements.append(Element(mode, table, offset, reftype, funcs))


def _data_section(r: _R, m: Module) -> None:
    n = r.count("data segment count")
    for _ in range(n):
        at = r.pos
        flags = r.u32("data segment flags")
        if flags > 2:
            raise WasmFormatError(at, "data segment flags 0..2", f"got {flags}")
        mem = 0
        offset = None
        passive = flags == 1
        if flags == 2:
            mem = r.u32("memory index")
        if not passive:
            offset, _ = _const_expr(r, m.globals)
            if not isinstance(offset, int):
                offset = None
            if offset is not None and mem < len(m.memories) and not m.memories[mem].memory64:
                offset &= 0xFFFFFFFF
            elif offset is not None and offset < 0:
                offset &= 0xFFFFFFFFFFFFFFFF
        size = r.u32("data segment size")
        fo = r.pos
        data = r.raw(size, "data segment bytes")
        m.data_segments.append(DataSegment(mem, offset, data, passive, fo))


def _code_section(r: _R, m: Module) -> None:
    n = r.count("function body count")
    code = m.code
    data = r.data
    end = r.end
    pos = r.pos
    for _ in range(n):
        # body size, inline fast path
        if pos >= end:
            raise WasmFormatError(pos, "function body size", "unexpected end of data")
        b = data[pos]
        if b < 0x80:
            size = b
            pos += 1
        else:
            size, pos = read_uleb(data, pos, end, 32, "function body size")
        if size > end - pos:
            raise WasmFormatError(pos, "function body", f"size {size} past the end of the section")
        if size == 0:
            raise WasmFormatError(pos, "function body", "empty body")
        code.append((pos, pos + size))
        pos += size
    r.pos = pos


# ----------------------------------------------------------------------------- customs

def _name_map(r: _R, what: str) -> dict[int, str]:
    out = {}
    n = r.count(f"{what} count", 2)
    for _ in range(n):
        i = r.u32(f"{what} index")
        out[i] = _lenient_name(r, what)
    return out


def _lenient_name(r: _R, what: str) -> str:
    n = r.u32(f"{what} length")
    b = r.raw(n, what)
    return b.decode("utf-8", "replace")


def _name_section(c: CustomSection, m: Module) -> None:
    r = _R(c.data, 0, len(c.data))
    base = c.offset
    try:
        while r.pos < r.end:
            sid = r.u8("name subsection id")
            size = r.u32("name subsection size")
            if size > r.end - r.pos:
                raise WasmFormatError(r.pos, "name subsection", "size past the end")
            sub = _R(c.data, r.pos, r.pos + size)
            r.pos += size
            if sid == 0:
                m.module_name = _lenient_name(sub, "module name")
            elif sid == 1:
                m.func_names = _name_map(sub, "function name")
            elif sid == 2:
                n = sub.count("local name group count", 2)
                for _ in range(n):
                    fi = sub.u32("function index")
                    m.local_names[fi] = _name_map(sub, "local name")
            # other subsections (labels, types, tables, memories, globals, ...) tolerated
    except WasmFormatError as e:
        m.warnings.append(
            f"name section: malformed at offset 0x{base + e.offset:x}: expected {e.expected}")


def _producers_section(c: CustomSection, m: Module) -> None:
    r = _R(c.data, 0, len(c.data))
    out: dict[str, list[str]] = {}
    try:
        n = r.count("producers field count")
        for _ in range(n):
            fname = _lenient_name(r, "producers field name")
            k = r.count("producers value count")
            vals = out.setdefault(fname, [])
            for _ in range(k):
                name = _lenient_name(r, "producer name")
                ver = _lenient_name(r, "producer version")
                vals.append(f"{name} {ver}" if ver else name)
    except WasmFormatError as e:
        m.warnings.append(
            f"producers section: malformed at offset 0x{c.offset + e.offset:x}: "
            f"expected {e.expected}")
    m.producers = out


def _target_features_section(c: CustomSection, m: Module) -> None:
    r = _R(c.data, 0, len(c.data))
    out = []
    try:
        n = r.count("feature count", 2)
        for _ in range(n):
            prefix = r.u8("feature prefix")
            name = _lenient_name(r, "feature name")
            out.append(chr(prefix) + name)
    except WasmFormatError as e:
        m.warnings.append(
            f"target_features section: malformed at offset 0x{c.offset + e.offset:x}: "
            f"expected {e.expected}")
    m.target_features = out


# ----------------------------------------------------------------------------- entry

# --------------------------------------------------------------------------- sections


def _custom_section(r: _R, m: Module) -> None:
    name = r.name("custom section name")
    c = CustomSection(name, r.pos, r.data[r.pos : r.end])
    m.customs.append(c)
    parse = _CUSTOM_PARSERS.get(name)
    if parse is not None:
        parse(c, m)
    r.pos = r.end


def _function_section(r: _R, m: Module) -> None:
    n = r.count("function count")
    m.func_type_indices = [r.u32("type index") for _ in range(n)]


def _table_section(r: _R, m: Module) -> None:
    for _ in range(r.count("table count")):
        m.tables.append(_tabletype(r, False))


def _memory_section(r: _R, m: Module) -> None:
    for _ in range(r.count("memory count", 2)):
        m.memories.append(_memtype(r, False))


def _global_section(r: _R, m: Module) -> None:
    for _ in range(r.count("global count", 3)):
        g = _globaltype(r, False)
        g.init, _ = _const_expr(r, m.globals)
        m.globals.append(g)


def _export_section(r: _R, m: Module) -> None:
    seen = set()
    for _ in range(r.count("export count", 3)):
        at = r.pos
        name = r.name("export name")
        kat = r.pos
        k = r.u8("export kind")
        if k not in KIND_NAMES:
            raise WasmFormatError(kat, "export kind 0..4", f"got {k}")
        if name in seen:
            raise WasmFormatError(at, "unique export name", f"duplicate {name!r}")
        seen.add(name)
        iat = r.pos
        idx = r.u32("export index")
        if k == 0 and idx >= m.num_functions:  # every function is declared by now
            raise WasmFormatError(
                iat, "an existing function",
                f"export {name!r} names function {idx}; the module has {m.num_functions}",
            )
        m.exports.append(Export(name, KIND_NAMES[k], idx))


def _start_section(r: _R, m: Module) -> None:
    sat = r.pos
    m.start = r.u32("start function index")
    if m.start >= m.num_functions:
        raise WasmFormatError(
            sat, "an existing function",
            f"start names function {m.start}; the module has {m.num_functions}",
        )


def _code_section_checked(r: _R, m: Module) -> None:
    at = r.pos
    _code_section(r, m)
    if m.code and not any(s.id == 3 for s in m.sections):
        raise WasmFormatError(at, "function section before the code section",
                              f"{len(m.code)} bodies without declarations")


def _data_count_section(r: _R, m: Module) -> None:
    m.data_count = r.u32("data count")


def _tag_section(r: _R, m: Module) -> None:
    for _ in range(r.count("tag count", 2)):
        attr = r.u8("tag attribute")
        m.tags.append(Tag(attr, r.u32("tag type index")))


# one parser per section id (the order rule is checked before a parser runs)
_SECTION_PARSERS: dict[int, Callable[[_R, Module], None]] = {
    0: _custom_section, 1: _type_section, 2: _import_section, 3: _function_section,
    4: _table_section, 5: _memory_section, 6: _global_section, 7: _export_section,
    8: _start_section, 9: _element_section, 10: _code_section_checked, 11: _data_section,
    12: _data_count_section, 13: _tag_section,
}
# custom sections kbtool reads (others are kept as bytes)
_CUSTOM_PARSERS: dict[str, Callable[[CustomSection, Module], None]] = {
    "name": _name_section, "producers": _producers_section,
    "target_features": _target_features_section,
}


def parse_module(data) -> Module:
    """Parse the sections of a WebAssembly module (no per-instruction work).

    Raises :class:`WasmFormatError` for truncated or malformed input.
    """
    if not isinstance(data, bytes):
        data = bytes(data)
    size = len(data)
    if size < 4 or data[:4] != b"\0asm":
        raise WasmFormatError(0, "'\\0asm' magic", "not a WebAssembly module (bad magic)")
    if size < 8:
        raise WasmFormatError(4, "version 1", "truncated header")
    version = struct.unpack_from("<I", data, 4)[0]
    if version != 1:
        detail = f"unsupported version 0x{version:08x}"
        if data[4:8] == b"\x0d\x00\x01\x00":
            detail += " (a component, not a core module)"
        raise WasmFormatError(4, "version 1", detail)

    m = Module(size=size)
    pos = 8
    last_rank = 0
    while pos < size:
        sec_at = pos
        sid = data[pos]
        pos += 1
        if sid not in SECTION_NAMES:
            raise WasmFormatError(sec_at, "section id 0..13", f"bad section id {sid}")
        ssize, pos = read_uleb(data, pos, size, 32, "section size")
        if ssize > size - pos:
            raise WasmFormatError(pos, f"{SECTION_NAMES[sid]} section of {ssize} bytes",
                                  "section extends past the end of the file")
        end = pos + ssize
        m.sections.append(Section(sid, SECTION_NAMES[sid], pos, ssize))
        r = _R(data, pos, end)
        if sid != 0:
            rank = _ORDER[sid]
            if rank <= last_rank:
                raise WasmFormatError(sec_at, "sections in order, each at most once",
                                      f"unexpected {SECTION_NAMES[sid]} section")
            last_rank = rank
        _SECTION_PARSERS[sid](r, m)
        r.done(f"{SECTION_NAMES[sid]} section")
        pos = end

    if len(m.func_type_indices) != len(m.code):
        code_sec = next((s for s in m.sections if s.id == 10), None)
        raise WasmFormatError(code_sec.offset if code_sec else size,
                              f"{len(m.func_type_indices)} function bodies",
                              f"code section has {len(m.code)}")
    if m.data_count is not None and m.data_count != len(m.data_segments):
        sec = next((s for s in m.sections if s.id == 11), None)
        raise WasmFormatError(sec.offset if sec else size, f"{m.data_count} data segments",
                              f"data section has {len(m.data_segments)}")
    ntypes = len(m.types)
    for i, ti in enumerate(m.func_type_indices):
        if ti >= ntypes:
            func_sec = next(s for s in m.sections if s.id == 3)
            raise WasmFormatError(func_sec.offset, "valid type index",
                                  f"function {len(m.func_imports) + i} uses type {ti}")
    for imp in m.func_imports:
        if imp.type_index >= ntypes:
            raise WasmFormatError(8, "valid type index",
                                  f"import {imp.module}.{imp.field} uses type {imp.type_index}")
    return m


__all__ = [
    "CustomSection", "DataSegment", "Element", "Export", "FuncType", "Global", "Import",
    "Memory", "Module", "Section", "Table", "Tag", "parse_module",
]
