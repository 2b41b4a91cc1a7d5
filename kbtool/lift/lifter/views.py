"""Typed views of the locals a function dereferences (issue 28 point 4).

A raw access ``*(int32_t *)(M + p0 + 8)`` whose base is a plain local is emitted marked
(:func:`mark`); when the whole function is lifted, :func:`view_decls` collects every marked
access per local, gives the local a packed struct of the fields it uses (one C type per
offset and width; fields whose bytes overlap share a union) and
rewrites the accesses as ``P0->field_8`` through a macro declared before the function:
``#define P0 ((struct f41_p0_view *)(M + p0))``. The local keeps holding the wasm address; the
macro is re-evaluated at each use, so it follows the local's current value and ``M``
wherever they are. A local whose accesses all read one element type at offset 0, or bytes
at any offset, reads through an element pointer instead: ``*P3``, ``P3[1]``.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Final

from ..names import c_ident

if TYPE_CHECKING:
    from .memory import _Memory

#: the markers around a raw access of a plain local (after its leading ``*``; the notes'
#: position marks are ``\x01N\x02``, core._NOTE)
OPEN: Final = "\x03"
CLOSE: Final = "\x04"

_ACCESS: Final = re.compile("\\*\x03\\(([\\w ]+) \\*\\)\\(M \\+ (\\w+)(?: \\+ (\\d+))?\\)\x04")
#: what follows an access that is written: `X = v;`, `X += v;`, `X++`
_ASSIGN: Final = re.compile(r" (?:[-+*/%&|^]|<<|>>)?= (?!=)|\+\+|--")
_COMPOUND: Final = re.compile(r" (?:[-+*/%&|^]|<<|>>)= |\+\+|--")
_SIZE: Final = {
    "int8_t": 1,
    "uint8_t": 1,
    "int16_t": 2,
    "uint16_t": 2,
    "int32_t": 4,
    "uint32_t": 4,
    "float": 4,
    "int64_t": 8,
    "double": 8,
}
_FLOAT: Final = frozenset(("float", "double"))
_TAG: Final = {
    "int8_t": "i8",
    "uint8_t": "i8",
    "int16_t": "i16",
    "uint16_t": "i16",
    "int32_t": "i32",
    "uint32_t": "i32",
    "float": "f32",
    "int64_t": "i64",
    "double": "f64",
}
#: macros of the prelude and of <stdint.h>/<stdbool.h> a view's name must not redefine
_RESERVED: Final = frozenset(
    ("M", "ADDR", "HT_SHARED", "REF_FUNC", "REF_NULL", "NULL", "EOF", "true", "false", "bool")
)
_RESERVED_PREFIX: Final = ("KB_", "KBTOOL_", "INT", "UINT", "SIZE_", "PTRDIFF_", "WCHAR_", "__")
#: fields of one view at most, and the largest offset a field may have
MAX_FIELDS: Final = 256
MAX_OFFSET: Final = 1 << 16


def mark(ct: str, base: str, offset: int) -> str:
    """The raw access text of ``ct`` at ``M + base + offset``, marked for :func:`view_decls`."""
    if offset:
        return f"*{OPEN}({ct} *)(M + {base} + {offset}){CLOSE}"
    return f"*{OPEN}({ct} *)(M + {base}){CLOSE}"


def _kind(lines: list[str | None]) -> dict[str, dict[int, list[tuple[str, int]]]]:
    """Per base local, per offset: the accesses ``(C type, 0 load / 1 store / 2 both)``."""
    acc: dict[str, dict[int, list[tuple[str, int]]]] = {}
    for ln in lines:
        if ln is None or OPEN not in ln:
            continue
        for m in _ACCESS.finditer(ln):
            ct, base, off = m.group(1), m.group(2), int(m.group(3) or 0)
            rest = ln[m.end() : m.end() + 5]
            w = 0
            if _ASSIGN.match(rest):
                w = 2 if _COMPOUND.match(rest) else 1
            acc.setdefault(base, {}).setdefault(off, []).append((ct, w))
    return acc


#: a field's key: offset, width, float or integer
_Key = tuple[int, int, bool]


def _fields(offs: dict[int, list[tuple[str, int]]]) -> dict[_Key, tuple[str, str]]:
    """The fields of a view, ``(offset, width, float) -> (C type, name)``: per offset, the
    width and kind most accesses use is ``field_8``, another one ``field_8_i16``; its type
    is the one loads use most (a store converts implicitly, a load of the other signedness
    reads through a cast). Overlapping fields share a union (:func:`_layout`)."""
    out: dict[_Key, tuple[str, str]] = {}
    for off in sorted(offs):
        if off + 8 > MAX_OFFSET:
            continue
        kinds: dict[_Key, dict[str, int]] = {}
        count: dict[_Key, int] = {}
        for ct, w in offs[off]:
            if ct not in _SIZE:
                continue
            key = (off, _SIZE[ct], ct in _FLOAT)
            votes = kinds.setdefault(key, {})
            votes[ct] = votes.get(ct, 0) + (1 if w != 1 else 0)
            count[key] = count.get(key, 0) + 1
        for k, key in enumerate(sorted(kinds, key=lambda q: -count[q])):  # stable: first seen
            votes = kinds[key]
            ct = max(votes, key=lambda c: votes[c])
            out[key] = (ct, f"field_{off}" if k == 0 else f"field_{off}_{_TAG[ct]}")
        if len(out) >= MAX_FIELDS:
            break
    return out


def overlap_groups(
    items: list[tuple[int, int, str, str]],
) -> list[tuple[int, int, list[tuple[int, int, str, str]]]]:
    """Members ``(offset, size, C type, name)`` sorted by offset, grouped where their bytes
    overlap: ``(start, end, members)`` per group, in offset order (a group of several is
    declared as a union; the frame struct and the views share this)."""
    out: list[tuple[int, int, list[tuple[int, int, str, str]]]] = []
    k = 0
    while k < len(items):
        o = items[k][0]
        end = o + items[k][1]
        j = k + 1
        while j < len(items) and items[j][0] < end:
            end = max(end, items[j][0] + items[j][1])
            j += 1
        out.append((o, end, items[k:j]))
        k = j
    return out


def _layout(fields: dict[_Key, tuple[str, str]]) -> list[str]:
    """The members of a packed view struct in offset order, the bytes between them as
    padding; fields whose bytes overlap (an int32_t also read as its bytes) share an
    anonymous union, a member that starts later wrapped with leading padding."""
    items = sorted(((o, sz, ct, name) for (o, sz, _f), (ct, name) in fields.items()))
    parts: list[str] = []
    pos = 0
    for o, end, group in overlap_groups(items):
        if o > pos:
            parts.append(f"uint8_t _pad{pos}[{o - pos}];")
        if len(group) == 1:
            parts.append(f"{group[0][2]} {group[0][3]};")
        else:
            members: list[str] = []
            for fo, _sz, ct, name in group:
                if fo == o:
                    members.append(f"{ct} {name};")
                else:
                    members.append(
                        f"struct __attribute__((packed)) {{ uint8_t _pad_{name}[{fo - o}]; "
                        f"{ct} {name}; }};"
                    )
            parts.append(f"union __attribute__((packed)) {{ {' '.join(members)} }};")
        pos = max(pos, end)
    return parts


def _struct_lines(tag: str, members: list[str]) -> list[str]:
    """The declaration of a view struct: one line when short, else several members per
    line (up to ~96 characters), as the frame struct is declared."""
    head = f"struct __attribute__((packed)) {tag} {{"
    one = f"{head} {' '.join(members)} }};"
    if len(one) <= 100:
        return [one]
    out = [head]
    cur = ""
    for m in members:
        if cur and len(cur) + 1 + len(m) > 94:
            out.append(f"  {cur}")
            cur = m
        else:
            cur = f"{cur} {m}" if cur else m
    if cur:
        out.append(f"  {cur}")
    out.append("};")
    return out


def _name(base: str, taken: set[str], known: frozenset[str] | set[str], body: str) -> str:
    """The macro naming the view of local ``base``: ``P0`` for ``p0``, else ``V_base``;
    never one of ``taken`` or ``known`` nor a word of ``body`` (``taken`` then holds
    them)."""

    def used(n: str) -> bool:
        if n in taken or n in known or n in _RESERVED or n.startswith(_RESERVED_PREFIX):
            return True
        if "\x00" in taken or n not in body:  # the body's words are in taken already
            return False
        taken.update(re.findall(r"[A-Za-z_]\w*", body))  # once per function
        taken.add("\x00")
        return n in taken

    name = base.upper()
    if name == base or used(name):
        name = f"V_{base}"
    while used(name):
        name += "_"
    taken.add(name)
    return name


def view_decls(
    lines: list[str | None],
    func: str,
    taken: set[str],
    tags: set[str],
    body: str = "",
    known: frozenset[str] | set[str] = frozenset(),
    acc: dict[str, dict[int, list[tuple[str, int]]]] | None = None,
) -> tuple[list[str], list[str]]:
    """Rewrite the marked accesses in ``lines`` (in place) through typed views; return the
    declarations to put before the function (struct and macro per view) and the ``#undef``
    lines after it. ``taken``, ``known`` and the words of ``body``: identifiers the macro
    names must avoid; ``tags``: struct tags already used (the frame's, the data items');
    ``acc``: the accesses as the lifter marked them (else read back from ``lines``)."""
    if acc is None:
        acc = _kind(lines)
    if not acc:
        return [], []
    before: list[str] = []
    after: list[str] = []
    # per base local: (macro, fields, element type or "")
    views: dict[str, tuple[str, dict[_Key, tuple[str, str]], str]] = {}
    for base, offs in acc.items():
        fields = _fields(offs)
        if not fields:
            continue
        name = _name(base, taken, known, body)
        types = {ct for ct, _n in fields.values()}
        elem = ""
        if len(types) == 1 and all(key[0] in offs for key in fields):
            ct = next(iter(types))
            size = _SIZE[ct]
            offsets = {key[0] for key in fields}
            if offsets == {0} or (size == 1 and len(fields) == len(offs)):
                elem = ct
        if elem:
            before.append(f"#define {name} (({elem} *)(M + {base}))")
        else:
            tag = c_ident(f"{func}_{base}_view")  # `f41_p0` is the struct analysis' name
            while tag in tags:
                tag += "_"
            tags.add(tag)
            before += _struct_lines(tag, _layout(fields))
            before.append(f"#define {name} ((struct {tag} *)(M + {base}))")
        after.append(f"#undef {name}")
        views[base] = (name, fields, elem)
    if not views:
        for k, ln in enumerate(lines):
            if ln is not None and OPEN in ln:
                lines[k] = ln.replace(OPEN, "").replace(CLOSE, "")
        return [], []

    def sub(m: re.Match[str], ln: str) -> str:
        ct, base, off = m.group(1), m.group(2), int(m.group(3) or 0)
        raw = m.group(0).replace(OPEN, "").replace(CLOSE, "")
        v = views.get(base)
        hit = v[1].get((off, _SIZE[ct], ct in _FLOAT)) if v is not None and ct in _SIZE else None
        if v is None or hit is None:
            return raw
        name, _f, elem = v
        have, member = hit
        if elem:
            text = f"*{name}" if off == 0 else f"{name}[{off // _SIZE[elem]}]"
        else:
            text = f"{name}->{member}"
        if have == ct:
            return text
        rest = ln[m.end() : m.end() + 5]
        if _COMPOUND.match(rest):
            return raw  # `x >>= 3` must shift with the access's own signedness
        if _ASSIGN.match(rest):
            return text  # a store converts the value implicitly
        return f"({ct}){text}"

    for k, ln in enumerate(lines):
        if ln is None or OPEN not in ln:
            continue
        parts: list[str] = []
        pos = 0
        for m in _ACCESS.finditer(ln):
            parts.append(ln[pos : m.start()])
            parts.append(sub(m, ln))
            pos = m.end()
        parts.append(ln[pos:])
        ln = "".join(parts)
        if OPEN in ln:  # a marked text another pass changed: raw memory as it reads
            ln = ln.replace(OPEN, "").replace(CLOSE, "")
        lines[k] = ln
    return before, after


def lift_views(lf: _Memory) -> tuple[list[str], list[str]]:
    """:func:`view_decls` for a lifted function: its lines, name, identifiers and tags."""
    lines = lf.out
    if not lf.vacc:
        return [], []
    func = lf.lm.func_c[lf.fi]
    body = "\n".join([ln for ln in lines if ln is not None])
    taken = set(lf.locals_c) | {"M", "ADDR", func}
    tags = {lf.fstruct} | {c_ident(f"{func}_{ident}") for ident in lf.dobj}
    for decl in lf.decl_types.values():  # the knowledge's and the analysis' struct types
        tags.update(re.findall(r"\b(?:struct|union) (?:__attribute__\(\(\w+\)\) )?(\w+)", decl))
    return view_decls(lines, func, taken, tags, body, lf.lm.module_idents, lf.vacc)
