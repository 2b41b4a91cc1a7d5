"""Per-module state shared by the disassembler and the lifter (built once, reused per call).

:func:`prepare` parses the module (or takes a parsed one), builds the data map used for
string annotations and assigns every function and global a unique, sanitised C identifier.
Building it costs about one parse; a front end keeps one per version for on-demand views.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass, field
from operator import itemgetter

from kbtool.wasm.facts import build_data_map, passive_addresses
from kbtool.wasm.reader import Module, parse_module
from kbtool.wasm.toolchain import detect_toolchain

from .gctypes import gc_types
from .names import C_KEYWORDS, MAX_IDENT, Names, c_ident, display_name
from .prelude import PRELUDE_NAMES

#: identifiers the lifter generates itself (params, locals, temps, unnamed funcs/globals)
_GENERATED = re.compile(r"^(?:[pltrgfL]\d+|M)$")
VALTYPE_C = {"i32": "int32_t", "i64": "int64_t", "f32": "float", "f64": "double", "v128": "v128"}
VALTYPE_CODE = {"i32": "i", "i64": "j", "f32": "f", "f64": "d", "v128": "v"}


def c_type(valtype: str) -> str:
    """C type of a wasm value type (references are ``wasm_ref``)."""
    return VALTYPE_C.get(valtype, "wasm_ref")


def type_code(valtypes) -> str:
    return "".join(VALTYPE_CODE.get(t, "r") for t in valtypes)


@dataclass
class LiftModule:
    """A module prepared for disassembly and lifting. Treat as read-only."""

    data: bytes
    module: Module
    names: Names
    func_c: list[str] = field(default_factory=list)  # C identifier per function index
    global_c: list[str] = field(default_factory=list)
    module_idents: set[str] = field(default_factory=set)
    dmap: object = None
    type_texts: list[str] = field(default_factory=list)
    #: the type of every function index (None where the type index is not a func type)
    func_types: list = field(default_factory=list)
    #: per type index: None (func), ("struct", [field types]) or ("array", elem type)
    gc: list = field(default_factory=list)
    #: i32 constant -> its C text with the string it points at (filled while lifting)
    const_text: dict = field(default_factory=dict)
    #: function index -> its C prototype line (filled while lifting)
    protos: dict = field(default_factory=dict)
    #: labelled data items by address: starts, (start, size, C identifier, text or None)
    data_starts: list = field(default_factory=list)
    data_items: list = field(default_factory=list)
    #: the module's toolchain (lower case, '' unknown) and its passive data segments'
    #: addresses: what the module alone gives, kept with a stored preparation
    toolchain: str = ""
    passive: dict | None = None  # None: not found (no data map)

    def data_label(self, addr: int) -> tuple[str, int, int, str | None] | None:
        """``(C identifier, item address, offset into it, text)`` of the labelled data item
        holding ``addr``, or None."""
        k = bisect_right(self.data_starts, addr) - 1
        if k < 0:
            return None
        start, size, ident, text = self.data_items[k]
        if addr >= start + max(size, 1):
            return None
        return ident, start, addr - start, text

    def data_size(self, start: int) -> int:
        """The size of the labelled data item starting at ``start`` (0 if none)."""
        k = bisect_right(self.data_starts, start) - 1
        if k < 0 or self.data_items[k][0] != start:
            return 0
        return int(self.data_items[k][1])

    def func_display(self, index: int) -> str | None:
        """The (untrusted) name of a function made safe for a listing, or None."""
        n = self.names.functions.get(index)
        return display_name(n) if n else None

    def global_display(self, index: int) -> str | None:
        n = self.names.globals.get(index)
        return display_name(n) if n else None

    def string_at(self, addr: int) -> str | None:
        """The text a constant address points at (C string, ``(ptr, len)`` pair or run)."""
        if self.dmap is None or addr < self.dmap.lo or addr >= self.dmap.hi:
            return None
        e = self.dmap.entry(addr)
        return None if e is None else e[2]

    def ret_struct(self, results) -> str:
        return "R_" + type_code(results)

    def fn_typedef(self, params, results) -> str:
        return "fn_" + type_code(params) + "_" + type_code(results)


def _unique(raw: str | None, fallback: str, index: int, used: set[str]) -> str:
    if not raw:
        name = fallback
    else:
        name = c_ident(raw)
        if name in C_KEYWORDS or name in PRELUDE_NAMES or _GENERATED.match(name):
            name = f"{name}_{index}"
    while name in used:
        name = f"{name}_{index}"
    used.add(name)
    return name


_RESERVED = C_KEYWORDS | PRELUDE_NAMES


def _idents(raws: list[str | None], prefix: str, used: set[str]) -> list[str]:
    """``[_unique(raws[i], f"{prefix}{i}", i, used) for i in ...]``, with a fast path for
    what most names are: a valid, unreserved C identifier not taken yet, kept as is."""
    out: list[str] = []
    append, add = out.append, used.add
    for i, raw in enumerate(raws):
        name = raw if raw else f"{prefix}{i}"
        if name not in used and (not raw or _plain(raw)):
            add(name)
            append(name)
        else:
            append(_unique(raw, f"{prefix}{i}", i, used))
    return out


def _plain(raw: str) -> bool:
    """``c_ident(raw) == raw`` and :func:`_unique` keeps it (not reserved, not generated)."""
    return (
        len(raw) <= MAX_IDENT
        and raw.isascii()
        and raw.isidentifier()
        and raw not in _RESERVED
        and _GENERATED.match(raw) is None
    )


def _data_idents(items: list, used: set[str]) -> list[tuple[int, int, str, str | None]]:
    """The labelled data items (sorted ``(address, size, label, text)``) in memory's 32-bit
    range, each with its unique C identifier (as :func:`_unique` with ``d_<hex address>``)."""
    if items and not (0 <= items[0][0] and items[-1][0] < 1 << 31):
        items = [it for it in items if 0 <= it[0] < 1 << 31]  # enum constants: int
    labels = list(map(itemgetter(2), items))
    if _all_plain(labels):
        distinct = set(labels)
        if len(distinct) == len(labels) and used.isdisjoint(distinct):
            used |= distinct  # each label is its own identifier: _unique keeps every one
            return list(map(tuple, items))
    out = []
    append, add = out.append, used.add
    for a, sz, label, text in items:
        if label and label not in used and _plain(label):
            add(label)
            append((a, sz, label, text))
        else:
            append((a, sz, _unique(label, f"d_{a:x}", a, used), text))
    return out


def _all_plain(labels: list) -> bool:
    """Every label :func:`_plain` (text, a valid unreserved C identifier)."""
    return all(isinstance(label, str) and _plain(label) for label in labels)


@dataclass
class Given:
    """What an earlier preparation of the same module built (kept on disk,
    :mod:`kbtool.services.code_store`): its toolchain and passive segments' addresses (the
    module's alone) and, when the names are the same too, the C identifiers
    ``(func_c, global_c, data_items, used)``."""

    toolchain: str
    passive: dict | None  # None: searched again
    idents: tuple | None = None


def prepare(module, names: Names | None = None, given: Given | None = None) -> LiftModule:
    """Prepare ``module`` (wasm bytes, or a parsed :class:`Module` together with bytes via
    ``(data, module)``) for :func:`disassemble_function` / :func:`lift_function`.

    ``names`` defaults to :meth:`Names.from_module` (name section, exports, imports).
    ``given``: what an earlier preparation of the same module (and, for its ``idents``, the
    same ``names``) built, taken instead of building it again.
    Raises :class:`kbtool.wasm.WasmFormatError` on a malformed module.
    """
    if isinstance(module, LiftModule):
        return module
    if isinstance(module, tuple):
        data, m = module
        data = bytes(data)
    else:
        data = bytes(module)
        m = parse_module(data)
    if names is None:
        names = Names.from_module(m)
    if given is not None and given.idents is not None:
        func_c, global_c, data_items, used = given.idents
    else:
        used = set()
        fget, gget = names.functions.get, names.globals.get
        func_c = _idents([fget(i) for i in range(m.num_functions)], "f", used)
        global_c = _idents([gget(i) for i in range(len(m.globals))], "g", used)
        data_items = _data_idents(sorted(names.data), used)
    if given is not None:
        tc, passive = given.toolchain, given.passive
    else:
        tc, passive = (detect_toolchain(m, ()) or "").lower(), None
    try:
        if passive is None:
            passive = passive_addresses(data, m)
        dmap = build_data_map(data, m, tc.startswith(("rustc", "go")), passive)
    except Exception:  # noqa: BLE001 - annotations are optional
        dmap, passive = None, None
    return LiftModule(
        data=data,
        module=m,
        names=names,
        func_c=func_c,
        global_c=global_c,
        module_idents=used,
        dmap=dmap,
        type_texts=[t.text() for t in m.types],
        func_types=_func_types(m),
        gc=_gc(data, m),
        data_starts=getattr(data_items, "starts", None) or [d[0] for d in data_items],
        data_items=data_items,
        toolchain=tc,
        passive=passive,
    )


def _gc(data: bytes, m: Module) -> list:
    try:
        return gc_types(data, m)
    except Exception:  # noqa: BLE001 - a GC op then fails to lift with a clear reason
        return []


def _func_types(m: Module) -> list:
    """The func type of every function index (None where its type index is out of range or
    not a func type)."""
    types = m.types
    by_type = [t if t.kind == "func" else None for t in types]
    n = len(by_type)
    indices = [imp.type_index for imp in m.func_imports]
    indices += m.func_type_indices
    return [by_type[ti] if 0 <= ti < n else None for ti in indices]
