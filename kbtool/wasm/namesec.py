"""Write function names back into a module: a ``name`` custom section built from a mapping.

Pure: bytes in, bytes out. The new section replaces an existing ``name`` section (keeping
its module-name and local/label/... subsections, only the function-names subsection is
rebuilt, and the local-names subsection when local names are given) and goes where the old one was, else right after the last standard section (the
place the spec's appendix gives it), before trailing custom sections such as ``producers``.
Every other section is copied byte for byte. Names are written as UTF-8 with LEB128 lengths.
"""

from __future__ import annotations

from collections.abc import Mapping

from .errors import WasmFormatError
from .leb import encode_uleb, read_uleb

MAGIC = b"\x00asm\x01\x00\x00\x00"
FUNCTION_NAMES = 1
LOCAL_NAMES = 2


def _name_bytes(s: str) -> bytes:
    b = s.encode("utf-8", "surrogatepass")
    return encode_uleb(len(b)) + b


def _sections(data: bytes) -> list[tuple[int, int, int, int]]:
    """``(id, start, payload_start, end)`` of every section, bounds-checked."""
    if data[:8] != MAGIC:
        raise WasmFormatError(0, "header", "not a WebAssembly 1.0 module")
    out = []
    pos, end = 8, len(data)
    while pos < end:
        start = pos
        sid = data[pos]
        size, pos = read_uleb(data, pos + 1, end, what="section size")
        if size > end - pos:
            raise WasmFormatError(start, "section", f"size {size} runs past the end of the module")
        out.append((sid, start, pos, pos + size))
        pos += size
    return out


def _custom_name(data: bytes, payload: int, end: int) -> tuple[str, int]:
    n, pos = read_uleb(data, payload, end, what="custom section name")
    if n > end - pos:
        raise WasmFormatError(payload, "custom section", "name runs past the section")
    return bytes(data[pos : pos + n]).decode("utf-8", "replace"), pos + n


def _subsections(data: bytes, pos: int, end: int) -> dict[int, bytes] | None:
    """Raw subsections of an existing name section (None when it is malformed)."""
    subs: dict[int, bytes] = {}
    try:
        while pos < end:
            sub_id = data[pos]
            size, p = read_uleb(data, pos + 1, end, what="name subsection size")
            if size > end - p:
                return None
            subs.setdefault(sub_id, bytes(data[p : p + size]))
            pos = p + size
    except WasmFormatError:
        return None
    return subs


def function_names_payload(names: Mapping[int, str]) -> bytes:
    """The function-names subsection payload: a name map sorted by index."""
    items = sorted((int(i), n) for i, n in names.items() if n)
    body = bytearray(encode_uleb(len(items)))
    for idx, name in items:
        if idx < 0:
            raise ValueError(f"negative function index {idx}")
        body += encode_uleb(idx) + _name_bytes(name)
    return bytes(body)


def local_names_payload(names: Mapping[int, Mapping[int, str]]) -> bytes:
    """The local-names subsection payload: an indirect name map (function -> local -> name),
    both levels sorted by index."""
    funcs = sorted((int(f), m) for f, m in names.items() if m and any(m.values()))
    body = bytearray(encode_uleb(len(funcs)))
    for fi, m in funcs:
        items = sorted((int(i), n) for i, n in m.items() if n)
        if fi < 0 or any(i < 0 for i, _n in items):
            raise ValueError(f"negative index in the local names of function {fi}")
        body += encode_uleb(fi) + encode_uleb(len(items))
        for idx, name in items:
            body += encode_uleb(idx) + _name_bytes(name)
    return bytes(body)


def with_function_names(
    data: bytes,
    names: Mapping[int, str],
    local_names: Mapping[int, Mapping[int, str]] | None = None,
) -> bytes:
    """A copy of the module ``data`` whose ``name`` section holds ``names`` (index -> name)
    and, when given, ``local_names`` (function index -> local index -> name) in place of
    the local-names subsection."""
    secs = _sections(data)
    keep: dict[int, bytes] = {}
    insert_at = None
    pieces: list[bytes] = []
    for sid, start, payload, end in secs:
        if sid == 0:
            cname, body = _custom_name(data, payload, end)
            if cname == "name":
                if insert_at is None:
                    insert_at = len(pieces)
                    keep = _subsections(data, body, end) or {}
                continue
        pieces.append(bytes(data[start:end]))
    if insert_at is None:
        last_std = max((n for n, (sid, *_rest) in enumerate(secs) if sid != 0), default=-1)
        insert_at = last_std + 1
    keep[FUNCTION_NAMES] = function_names_payload(names)
    if local_names:
        keep[LOCAL_NAMES] = local_names_payload(local_names)
    content = bytearray(_name_bytes("name"))
    for sub_id in sorted(keep):
        content += bytes([sub_id]) + encode_uleb(len(keep[sub_id])) + keep[sub_id]
    section = b"\x00" + encode_uleb(len(content)) + bytes(content)
    pieces.insert(insert_at, section)
    return MAGIC + b"".join(pieces)
