"""One parser per standard section (type, import, function, table, memory, global, export,
start, element, code, data, datacount, tag) over a bounded byte cursor, and the constant
expressions they hold (:mod:`kbtool.wasm.reader` dispatches to them by section id).
"""

from __future__ import annotations

from kbtool.wasm.model import (
    KIND_NAMES,
    DataSegment,
    Element,
    Export,
    FuncType,
    Global,
    Import,
    Memory,
    Module,
    Table,
    Tag,
)

from .errors import WasmFormatError
from .instr import decode_one, read_valtype
from .leb import read_uleb
from .opcodes import PREFIX_BASE

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
        pos = self.pos
        if pos < self.end and (b := self.data[pos]) < 0x80:  # (one byte: no call)
            self.pos = pos + 1
            return b
        v, self.pos = read_uleb(self.data, pos, self.end, 32, what)
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
        b = self.data[self.pos : self.pos + n]
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
            raise WasmFormatError(self.pos, f"end of {what}", f"{self.end - self.pos} unread bytes")


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
            raise WasmFormatError(
                p_at, "page size log2 0 or 16", f"invalid custom page size (log2 {page_log2})"
            )
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
                raise WasmFormatError(
                    at,
                    f"memory size of at most {max_pages} pages",
                    f"got {v} pages of 2**{page_log2} bytes",
                )
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
            raise WasmFormatError(r.pos, "'end' of constant expression", "unexpected end of data")
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
        raise WasmFormatError(
            at_count, f"{n} imports", f"section holds {entries} entries with {imports} imports"
        )


def _undo_import(m: Module, imp: Import) -> None:
    space = {
        "func": m.func_imports,
        "table": m.tables,
        "memory": m.memories,
        "global": m.globals,
        "tag": m.tags,
    }[imp.kind]
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
            funcs.extend(_u32s(r, k, "function index"))
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
        elif pos + 1 < end and (b1 := data[pos + 1]) < 0x80:  # two bytes (no bound to check)
            size = (b & 0x7F) | b1 << 7
            pos += 2
        else:
            size, pos = read_uleb(data, pos, end, 32, "function body size")
        if size > end - pos:
            raise WasmFormatError(pos, "function body", f"size {size} past the end of the section")
        if size == 0:
            raise WasmFormatError(pos, "function body", "empty body")
        code.append((pos, pos + size))
        pos += size
    r.pos = pos


def _u32s(r: _R, k: int, what: str) -> list[int]:
    """``k`` u32 LEBs read on (``r.u32(what)`` each: the same values and errors), a one- or
    two-byte value inline and the others by one :func:`read_uleb` call (no method call per
    value: ffmpeg's 22k type indices and its table's 17k function indices)."""
    data = r.data
    end = r.end
    pos = r.pos
    out: list[int] = []
    app = out.append
    for _ in range(k):
        if pos < end and (b := data[pos]) < 0x80:
            app(b)
            pos += 1
        elif pos + 1 < end and (b1 := data[pos + 1]) < 0x80:  # two bytes (no bound to check)
            app((b & 0x7F) | b1 << 7)
            pos += 2
        else:
            v, pos = read_uleb(data, pos, end, 32, what)
            app(v)
    r.pos = pos
    return out


def _function_section(r: _R, m: Module) -> None:
    n = r.count("function count")
    m.func_type_indices = _u32s(r, n, "type index")


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
                iat,
                "an existing function",
                f"export {name!r} names function {idx}; the module has {m.num_functions}",
            )
        m.exports.append(Export(name, KIND_NAMES[k], idx))


def _start_section(r: _R, m: Module) -> None:
    sat = r.pos
    m.start = r.u32("start function index")
    if m.start >= m.num_functions:
        raise WasmFormatError(
            sat,
            "an existing function",
            f"start names function {m.start}; the module has {m.num_functions}",
        )


def _code_section_checked(r: _R, m: Module) -> None:
    at = r.pos
    _code_section(r, m)
    if m.code and not any(s.id == 3 for s in m.sections):
        raise WasmFormatError(
            at,
            "function section before the code section",
            f"{len(m.code)} bodies without declarations",
        )


def _data_count_section(r: _R, m: Module) -> None:
    m.data_count = r.u32("data count")


def _tag_section(r: _R, m: Module) -> None:
    for _ in range(r.count("tag count", 2)):
        attr = r.u8("tag attribute")
        m.tags.append(Tag(attr, r.u32("tag type index")))
