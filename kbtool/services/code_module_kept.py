"""A parsed module's sections kept beside a version's code preparation (issue 30 point 1):
a fresh process rebuilds the :class:`~kbtool.wasm.model.Module` from plain values
(marshal-able, no code runs on load) instead of parsing ffmpeg's 32 MB again (~30 ms of a
cold preparation's CPU; the rebuild ~8 ms).

Segment and custom-section payloads are not kept: they are slices of the module's bytes,
taken again at their file offsets. What is kept is only used when the parser that made it
is the one installed (:func:`parser_stamp`, a digest of its sources) and the class fields
are the same; :func:`freeze` checks that :func:`thaw` gives back a module equal to the
parsed one (else nothing is kept and the module is parsed as before).
"""

from __future__ import annotations

import hashlib
from array import array
from pathlib import Path
from typing import Any

from kbtool.plainclass import field_names as plain_field_names
from kbtool.wasm import model

#: the sources whose code makes a parsed module (the reader and what it imports)
_PARSER = ("reader", "sections", "custom_sections", "model", "leb", "errors", "instr", "opcodes")
_SMALL = {
    c.__name__: c
    for c in (model.FuncType, model.Import, model.Table, model.Memory, model.Global)
    + (model.Export, model.Element, model.Tag, model.Section)
}
_STAMP: list[str] = []
ENCODING = 2  # bump when what freeze() writes changes
_FIELDS: dict[type, tuple[str, ...]] = {}


def field_names(cls: type) -> tuple[str, ...]:
    """A model class's fields in its constructor's order (:func:`kbtool.plainclass.
    field_names`: a dataclass or a plain class alike), kept per class."""
    names = _FIELDS.get(cls)
    if names is None:
        names = _FIELDS[cls] = plain_field_names(cls)
    return names


def parser_stamp() -> str:
    """A digest of the parser's sources and the model's fields ('' when a source is not
    there: nothing is kept then)."""
    if not _STAMP:
        h = hashlib.sha256(b"kept module encoding %d" % ENCODING)
        base = Path(model.__file__).parent
        try:
            for name in _PARSER:
                h.update((base / f"{name}.py").read_bytes())
        except OSError:
            _STAMP.append("")
            return ""
        for c in (*_SMALL.values(), model.DataSegment, model.CustomSection, model.Module):
            h.update(repr(list(field_names(c))).encode())
        _STAMP.append(h.hexdigest())
    return _STAMP[0]


_MARKS = ("@", "[", "(")  # an object; a list or a tuple holding objects


def _small(obj: Any) -> Any:
    """A small model object (or a value holding them) as plain values: an object as
    ``("@", class name, [fields])``, a list or tuple holding one as ``("[", items)`` or
    ``("(", items)``; a plain list (an element's function indices) as itself, so
    :func:`_unsmall` does not walk it."""
    name = type(obj).__name__
    if _SMALL.get(name) is type(obj):
        return ("@", name, [_small(getattr(obj, f)) for f in field_names(type(obj))])
    if type(obj) in (list, tuple):
        items = [_small(v) for v in obj]
        marked = type(obj) is tuple and len(obj) > 0 and obj[0] in _MARKS
        if marked or any(e is not v for e, v in zip(items, obj, strict=True)):
            return ("[" if type(obj) is list else "(", items)
        return obj
    if isinstance(obj, (int, float, str, bytes, type(None))):
        return obj
    raise TypeError(f"not kept: {type(obj).__name__}")


def _unsmall(value: Any) -> Any:
    if type(value) is not tuple or not value or value[0] not in _MARKS:
        return value
    if value[0] == "@":
        return _SMALL[value[1]](*[_unsmall(v) for v in value[2]])
    items = [_unsmall(v) for v in value[1]]
    return items if value[0] == "[" else tuple(items)


def _ints(values: list[int]) -> bytes:
    return array("q", values).tobytes()


def _unints(raw: bytes) -> list[int]:
    a = array("q")
    a.frombytes(raw)
    return a.tolist()


def freeze(m: model.Module, data: bytes) -> dict | None:
    """``m`` (parsed from ``data``) as plain values, or None when it cannot be kept exactly
    (a payload that is not the module's bytes at its offset, an unexpected value)."""
    stamp = parser_stamp()
    if not stamp:
        return None
    try:
        segs = m.data_segments
        for s in segs:
            if data[s.file_offset : s.file_offset + len(s.data)] != s.data:
                return None
        for c in m.customs:
            if data[c.offset : c.offset + len(c.data)] != c.data:
                return None
        imports = m.imports
        at = {id(imp): k for k, imp in enumerate(imports)}
        if any(id(f) not in at for f in m.func_imports):
            return None
        offsets = [s.offset for s in segs]
        none_at = [k for k, o in enumerate(offsets) if o is None]
        out = {
            "stamp": stamp,
            "small": _small(
                [m.types, imports, m.tables, m.memories, m.globals, m.exports]
                + [m.elements, m.tags, m.sections, m.warnings, m.target_features]
            ),
            "func_imports": [at[id(f)] for f in m.func_imports],
            "func_type_indices": _ints(m.func_type_indices),
            "code": _ints([v for pair in m.code for v in pair]),
            "segs": [
                _ints([s.memory_index for s in segs]),
                _ints([0 if o is None else o for o in offsets]),
                none_at,
                _ints([s.file_offset for s in segs]),
                _ints([len(s.data) for s in segs]),
                _ints([int(s.passive) for s in segs]),
            ],
            "customs": [(c.name, c.offset, len(c.data)) for c in m.customs],
            "plain": [m.start, m.func_names, m.local_names, m.module_name, m.producers]
            + [m.data_count, m.size],
        }
        if any(type(p) is not tuple or len(p) != 2 for p in m.code):
            return None
        if thaw(out, data) != m:
            return None
    except (TypeError, ValueError, OverflowError, AttributeError):
        return None
    return out


def thaw(value: Any, data: bytes) -> model.Module | None:
    """The module :func:`freeze` kept (None: kept by another parser, or not readable)."""
    try:
        if not isinstance(value, dict) or value.get("stamp") != parser_stamp():
            return None
        if value["plain"][6] != len(data):
            return None
        customs = [
            model.CustomSection(name, at, data[at : at + n]) for name, at, n in value["customs"]
        ]
        return module_of(value, len(data), _segments(value["segs"], data), customs)
    except (KeyError, TypeError, ValueError, IndexError):
        return None


def module_of(
    value: dict[str, Any],
    size: int,
    data_segments: list[Any],
    customs: list[model.CustomSection],
) -> model.Module:
    """The module :func:`freeze` kept in ``value`` (its stamp and size checked by the caller),
    with the data segments and custom sections the caller read."""
    small = _unsmall(value["small"])
    types, imports, tables, memories, globals_, exports = small[:6]
    elements, tags, sections, warnings, features = small[6:]
    start, func_names, local_names, module_name, producers, data_count, _size = value["plain"]
    code = _unints(value["code"])
    return model.Module(
        types=types,
        imports=imports,
        func_imports=[imports[k] for k in value["func_imports"]],
        func_type_indices=_unints(value["func_type_indices"]),
        tables=tables,
        memories=memories,
        globals=globals_,
        exports=exports,
        start=start,
        elements=elements,
        data_segments=data_segments,
        customs=customs,
        func_names=func_names,
        local_names=local_names,
        module_name=module_name,
        producers=producers,
        target_features=features,
        code=list(zip(code[::2], code[1::2], strict=True)),
        tags=tags,
        data_count=data_count,
        sections=sections,
        warnings=warnings,
        size=size,
    )


def _segments(cols: list, data: bytes) -> list[model.DataSegment]:
    mem, offs = _unints(cols[0]), _unints(cols[1])
    fos, lens, passive = _unints(cols[3]), _unints(cols[4]), _unints(cols[5])
    offsets: list = offs
    for k in cols[2]:
        offsets[k] = None
    seg = model.DataSegment
    return [
        seg(mi, o, data[fo : fo + n], bool(p), fo)
        for mi, o, fo, n, p in zip(mem, offsets, fos, lens, passive, strict=True)
    ]
