"""Binary reader: sections into a :class:`Module` model (no per-instruction work).

:func:`parse_module` checks the header and the section order and dispatches each section to
its parser: :mod:`kbtool.wasm.sections` (standard sections), :mod:`kbtool.wasm.custom_sections`
(name, producers, target_features); the model is :mod:`kbtool.wasm.model`, re-exported here.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

from kbtool.wasm.custom_sections import (  # noqa: F401  (re-exported: the names stay importable here)
    _custom_section,
)
from kbtool.wasm.model import (  # noqa: F401  (re-exported: the names stay importable here)
    KIND_NAMES,
    SECTION_NAMES,
    CustomSection,
    DataSegment,
    Element,
    Export,
    FuncType,
    Global,
    Import,
    Memory,
    Module,
    Section,
    Table,
    Tag,
)
from kbtool.wasm.sections import (  # noqa: F401  (re-exported: the names stay importable here)
    _R,
    _code_section_checked,
    _data_count_section,
    _data_section,
    _element_section,
    _export_section,
    _function_section,
    _global_section,
    _import_section,
    _memory_section,
    _start_section,
    _table_section,
    _tag_section,
    _type_section,
)

from .errors import WasmFormatError
from .leb import read_uleb

# canonical order of the non-custom sections (the tag section sits between memory and global)
_ORDER = {1: 1, 2: 2, 3: 3, 4: 4, 5: 5, 13: 6, 6: 7, 7: 8, 8: 9, 9: 10, 12: 11, 10: 12, 11: 13}


# one parser per section id (the order rule is checked before a parser runs)
_SECTION_PARSERS: dict[int, Callable[[_R, Module], None]] = {
    0: _custom_section,
    1: _type_section,
    2: _import_section,
    3: _function_section,
    4: _table_section,
    5: _memory_section,
    6: _global_section,
    7: _export_section,
    8: _start_section,
    9: _element_section,
    10: _code_section_checked,
    11: _data_section,
    12: _data_count_section,
    13: _tag_section,
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
            raise WasmFormatError(
                pos,
                f"{SECTION_NAMES[sid]} section of {ssize} bytes",
                "section extends past the end of the file",
            )
        end = pos + ssize
        m.sections.append(Section(sid, SECTION_NAMES[sid], pos, ssize))
        r = _R(data, pos, end)
        if sid != 0:
            rank = _ORDER[sid]
            if rank <= last_rank:
                raise WasmFormatError(
                    sec_at,
                    "sections in order, each at most once",
                    f"unexpected {SECTION_NAMES[sid]} section",
                )
            last_rank = rank
        _SECTION_PARSERS[sid](r, m)
        r.done(f"{SECTION_NAMES[sid]} section")
        pos = end

    if len(m.func_type_indices) != len(m.code):
        code_sec = next((s for s in m.sections if s.id == 10), None)
        raise WasmFormatError(
            code_sec.offset if code_sec else size,
            f"{len(m.func_type_indices)} function bodies",
            f"code section has {len(m.code)}",
        )
    if m.data_count is not None and m.data_count != len(m.data_segments):
        sec = next((s for s in m.sections if s.id == 11), None)
        raise WasmFormatError(
            sec.offset if sec else size,
            f"{m.data_count} data segments",
            f"data section has {len(m.data_segments)}",
        )
    ntypes = len(m.types)
    for i, ti in enumerate(m.func_type_indices):
        if ti >= ntypes:
            func_sec = next(s for s in m.sections if s.id == 3)
            raise WasmFormatError(
                func_sec.offset,
                "valid type index",
                f"function {len(m.func_imports) + i} uses type {ti}",
            )
    for imp in m.func_imports:
        if imp.type_index >= ntypes:
            raise WasmFormatError(
                8, "valid type index", f"import {imp.module}.{imp.field} uses type {imp.type_index}"
            )
    return m


__all__ = [
    "CustomSection",
    "DataSegment",
    "Element",
    "Export",
    "FuncType",
    "Global",
    "Import",
    "Memory",
    "Module",
    "Section",
    "Table",
    "Tag",
    "parse_module",
]
