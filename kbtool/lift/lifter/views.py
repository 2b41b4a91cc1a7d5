"""Typed views of the locals a function dereferences (issue 28 point 4).

A raw access ``*(int32_t *)(M + p0 + 8)`` whose base is a plain local is emitted marked
(:func:`mark`) and counted per local, offset and C type (:func:`record`); when the whole
function is lifted (a field's type is the one most loads use, known only then),
:func:`view_decls` gives each local a packed struct of the fields it uses (one C type per
offset and width; fields whose bytes overlap share a union) and rewrites the accesses as
``P0->field_8`` through a macro declared before the function, one dict lookup per marked
access (:func:`_rewrite`): ``#define P0 ((struct f41_p0_view *)(M + p0))``. The local keeps holding the wasm address; the
macro is re-evaluated at each use, so it follows the local's current value and ``M``
wherever they are. A local whose accesses all read one element type at offset 0, or bytes
at any offset, reads through an element pointer instead: ``*P3``, ``P3[1]``.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Final

from .base import _c_ident

if TYPE_CHECKING:
    from .memory import _Memory

#: the markers around a raw access of a plain local (after its leading ``*``; the notes'
#: position marks are ``\x01N\x02``, core._NOTE)
OPEN: Final = "\x03"
CLOSE: Final = "\x04"
_MARK: Final = "*\x03"  # where a marked access starts

_ACCESS: Final = re.compile("\\*\x03\\(([\\w ]+) \\*\\)\\(M \\+ (\\w+)(?: \\+ (\\d+))?\\)\x04")
#: what follows an access that is written: `X = v;`, `X += v;`, `X++`
_ASSIGN: Final = re.compile(r" (?:[-+*/%&|^]|<<|>>)?= (?!=)|\+\+|--")
_COMPOUND: Final = re.compile(r" (?:[-+*/%&|^]|<<|>>)= |\+\+|--")
#: a C type's width in bytes, whether it is floating point, its short tag (`field_8_f64`);
#: shared with memory.py's frame struct
CT_SIZE: Final = {
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
CT_FLOAT: Final = frozenset(("float", "double"))
CT_TAG: Final = {
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


#: the names of the fields at the first offsets (``field_8``), made once
_FIELD: Final = [f"field_{off}" for off in range(512)]


def mark(ct: str, base: str, offset: int) -> str:
    """The raw access text of ``ct`` at ``M + base + offset``, marked for :func:`view_decls`."""
    if offset:
        return f"*{OPEN}({ct} *)(M + {base} + {offset}){CLOSE}"
    return f"*{OPEN}({ct} *)(M + {base}){CLOSE}"


class Use:
    """One kind of access (a local, an offset, a C type): how many accesses, how many of
    them load (a compound assignment ``x += v`` counts as a load too), and its marked
    text (:func:`mark`), made once for all of them (:func:`use`)."""

    def __init__(self, text: str, load: bool) -> None:
        self.count = 1
        self.loads = 1 if load else 0
        self.text = text
        self.have = ""  # the C type and name of the field it reads (_fields), if any
        self.member = ""


#: per base local, per offset, per C type (first seen first): its :class:`Use`; what
#: :func:`use` and :func:`record` keep
Acc = dict[str, dict[int, dict[str, Use]]]


def use(acc: Acc, ct: str, base: str, offset: int, load: bool) -> str:
    """Count an access of ``ct`` at ``M + base + offset`` in ``acc``; its marked text
    (:func:`mark`), the same string object for every access of that kind."""
    offs = acc.get(base)
    if offs is None:
        offs = acc[base] = {}
    cts = offs.get(offset)
    if cts is None:
        cts = offs[offset] = {}
    u = cts.get(ct)
    if u is None:
        text = mark(ct, base, offset)
        cts[ct] = Use(text, load)
        return text
    u.count += 1
    if load:
        u.loads += 1
    return u.text


def record(acc: Acc, ct: str, base: str, offset: int, load: bool) -> None:
    """Count an access of ``ct`` at ``M + base + offset`` in ``acc`` (:func:`use`)."""
    use(acc, ct, base, offset, load)


def _kind(lines: list[str | None]) -> Acc:
    """The accesses marked in ``lines``, read back from the text (:func:`record`)."""
    acc: Acc = {}
    for ln in lines:
        if ln is None or OPEN not in ln:
            continue
        for m in _ACCESS.finditer(ln):
            rest = ln[m.end() : m.end() + 5]
            store = bool(_ASSIGN.match(rest)) and not _COMPOUND.match(rest)
            record(acc, m.group(1), m.group(2), int(m.group(3) or 0), not store)
    return acc


#: a field's key: offset, width, float or integer
_Key = tuple[int, int, bool]
#: a field as the struct lays it out: offset, width, C type, name
_Item = tuple[int, int, str, str]


def _fields(offs: dict[int, dict[str, Use]]) -> list[_Item]:
    """The fields of a view as :data:`_Item` in their sorted order (offsets come in
    order): per offset, the width and kind (float or integer) most accesses use is
    ``field_8``, another one ``field_8_i16``; its type is the one loads use most (a store
    converts implicitly, a load of the other signedness reads through a cast).
    Overlapping fields share a union (:func:`_layout`). Each :class:`Use` a field serves
    gets the field's type and name (``have``, ``member``)."""
    items: list[_Item] = []
    for off in sorted(offs):  # ints sort without comparing tuples
        if off + 8 > MAX_OFFSET:
            continue
        cts = offs[off]
        if len(cts) == 1:  # the common case: one C type at this offset
            for ct, u in cts.items():  # noqa: B007 - its one item (mypyc: no generic next())
                break
            size = CT_SIZE.get(ct, 0)
            if size:
                name = _FIELD[off] if off < len(_FIELD) else f"field_{off}"
                u.have = ct
                u.member = name
                items.append((off, size, ct, name))
        else:
            kinds: dict[_Key, dict[str, int]] = {}
            count: dict[_Key, int] = {}
            for ct, n in cts.items():
                if ct not in CT_SIZE:
                    continue
                key = (off, CT_SIZE[ct], ct in CT_FLOAT)
                votes = kinds.get(key)
                if votes is None:
                    votes = kinds[key] = {}
                votes[ct] = n.loads
                count[key] = count.get(key, 0) + n.count
            group: list[_Item] = []
            # most accesses first, first seen first among equals (``sorted`` by ``-count``,
            # which is stable); the type most loads use, the first seen among equals
            # (``max``): native loops, no builtin calling a lambda per item
            order: list[_Key] = []
            for key in kinds:
                j = len(order)
                while j > 0 and count[order[j - 1]] < count[key]:
                    j -= 1
                order.insert(j, key)
            for k, key in enumerate(order):
                votes = kinds[key]
                ct = ""
                best = -1
                for c, v in votes.items():
                    if v > best:
                        ct = c
                        best = v
                name = f"field_{off}" if k == 0 else f"field_{off}_{CT_TAG[ct]}"
                for c in votes:  # the accesses of this width and kind
                    n = cts[c]
                    n.have = ct
                    n.member = name
                group.append((off, key[1], ct, name))
            group.sort()
            items += group
        if len(items) >= MAX_FIELDS:
            break
    return items


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


def _layout(items: list[_Item]) -> list[str]:
    """The members of a packed view struct (``items``, sorted: :func:`_fields`) in offset
    order, the bytes between them as padding; fields whose bytes overlap (an int32_t also
    read as its bytes) share an anonymous union, a member that starts later wrapped with
    leading padding."""
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


def _wordch(c: str) -> bool:
    """Whether ``c`` is a ``\\w`` character (a letter, a digit or ``_``)."""
    return c.isalnum() or c == "_"


def _starts(c: str) -> bool:
    """Whether ``c`` may start a word ``[A-Za-z_]\\w*``."""
    return c == "_" or "A" <= c <= "Z" or "a" <= c <= "z"


def _word_end(body: str, e: int) -> int:
    """Where the run of word characters (``\\w*``) from ``body[e]`` ends: a loop of
    code point compares (a label's digits are a few), no regex call per word."""
    n = len(body)
    while e < n:
        ch = body[e]
        o = ord(ch)  # ints compare natively (mypyc), strings through a call
        if not (
            48 <= o <= 57  # 0-9
            or 97 <= o <= 122  # a-z
            or 65 <= o <= 90  # A-Z
            or o == 95  # _
            or (o >= 128 and ch.isalnum())
        ):
            break
        e += 1
    return e


def _words_from(body: str, c: str) -> set[str]:
    """The words ``[A-Za-z_]\\w*`` of ``body``, read left to right, that start with the
    character ``c``: ``L3`` of ``goto L3;``, not of ``xL3`` (inside the word ``xL3``); the
    ``L3`` of ``12L3`` is one (the digits before it start no word). One pass over the
    occurrences of ``c``."""
    out: set[str] = set()
    if not _starts(c):
        return out
    i = body.find(c)
    while i >= 0:
        e = _word_end(body, i + 1)
        if i == 0 or not _wordch(body[i - 1]):
            out.add(body[i:e])
        else:  # the word starts earlier in the run unless only digits precede c there
            s = i - 1
            while s > 0 and _wordch(body[s - 1]):
                s -= 1
            if not any(_starts(x) for x in body[s:i]):
                out.add(body[i:e])
        i = body.find(c, e)
    return out


def _used(
    n: str, taken: set[str], known: frozenset[str] | set[str], body: str, words: dict[str, set[str]]
) -> bool:
    """Whether a view may not be named ``n``: a name ``taken`` or ``known``, a macro of the
    prelude or of <stdint.h>, or a word of ``body`` (``words``: the body's words by their
    first character, filled as names are checked)."""
    if n in taken or n in known or n in _RESERVED or n.startswith(_RESERVED_PREFIX):
        return True
    first = n[:1]
    got = words.get(first)
    if got is None:
        got = words[first] = _words_from(body, first)
    return n in got


def _name(
    base: str,
    taken: set[str],
    known: frozenset[str] | set[str],
    body: str,
    words: dict[str, set[str]],
) -> str:
    """The macro naming the view of local ``base``: ``P0`` for ``p0``, else ``V_base``;
    never one of ``taken`` or ``known`` nor a word of ``body`` (``taken`` then holds
    it)."""
    name = base.upper()
    if name == base or _used(name, taken, known, body, words):
        name = f"V_{base}"
        while _used(name, taken, known, body, words):
            name += "_"
    taken.add(name)  # (a free `P0` is checked once)
    return name


#: a view's access as the function's text reads it: the text that replaces the marked
#: access when its C type is the field's (else ""), the field's text (``P0->field_8``),
#: the access's C type and the raw access (``*(int8_t *)(M + p0 + 8)``)
_Sub = tuple[str, str, str, str]


def _subs(acc: Acc, views: dict[str, tuple[str, str]]) -> dict[str, _Sub]:
    """Per marked access text with its markers (:func:`mark`: ``*\\x03(int32_t *)(M + p0 +
    8)\\x04``), what replaces it (:data:`_Sub`); the accesses of a local without a view, or
    of no field (:func:`_fields`), stay raw."""
    out: dict[str, _Sub] = {}
    for base, offs in acc.items():
        v = views.get(base)
        for off, cts in offs.items():
            for ct, u in cts.items():
                raw = "*" + u.text[2:-1]  # `*\x03(int32_t *)(M + p0 + 8)\x04` unmarked
                if v is None or not u.member:
                    out[u.text] = (raw, raw, ct, raw)
                    continue
                name, elem = v
                if elem:
                    text = f"*{name}" if off == 0 else f"{name}[{off // CT_SIZE[elem]}]"
                else:
                    text = f"{name}->{u.member}"
                out[u.text] = (text if u.have == ct else "", text, ct, raw)
    return out


def _rewrite(ln: str, subs: dict[str, _Sub]) -> str:
    """Line ``ln`` with its marked accesses replaced (:func:`_subs`); a load of the other
    signedness than its field's reads through a cast, a store converts implicitly, a
    compound assignment (``x >>= 3`` must shift with the access's own signedness) and a
    marked text another pass changed stay raw memory."""
    i = ln.find(_MARK)
    j = ln.find(CLOSE, i) if i >= 0 else -1
    if j >= 0:  # one access of its field's type: most lines
        key = ln[i : j + 1]
        hit = subs.get(key)
        if hit is not None and hit[0]:
            out = f"{ln[:i]}{hit[0]}{ln[j + 1 :]}"  # one build (`replace(key, t, 1)`: 2x)
            if OPEN not in out and CLOSE not in out:  # (so no other access either)
                return out
            if ln.find(_MARK, j + 1) < 0:  # a marked text another pass changed
                return out.replace(OPEN, "").replace(CLOSE, "")
    parts: list[str] = []
    pos = 0
    while i >= 0:
        j = ln.find(CLOSE, i)
        if j < 0:
            break
        parts.append(ln[pos:i])
        hit = subs.get(ln[i : j + 1])
        if hit is None:
            parts.append("*" + ln[i + 2 : j])
        elif hit[0]:
            parts.append(hit[0])
        else:
            rest = ln[j + 1 : j + 6]
            if _COMPOUND.match(rest):
                parts.append(hit[3])
            elif _ASSIGN.match(rest):
                parts.append(hit[1])
            else:
                parts.append(f"({hit[2]}){hit[1]}")
        pos = j + 1
        i = ln.find(_MARK, pos)
    parts.append(ln[pos:])
    out = "".join(parts)
    if OPEN in out or CLOSE in out:  # a marked text another pass changed
        out = out.replace(OPEN, "").replace(CLOSE, "")
    return out


def view_decls(
    lines: list[str | None],
    func: str,
    taken: set[str],
    tags: set[str],
    body: str = "",
    known: frozenset[str] | set[str] = frozenset(),
    acc: Acc | None = None,
) -> tuple[list[str], list[str]]:
    """Rewrite the marked accesses in ``lines`` (in place) through typed views; return the
    declarations to put before the function (struct and macro per view) and the ``#undef``
    lines after it. ``taken``, ``known`` and the words of ``body``: identifiers the macro
    names must avoid; ``tags``: struct tags already used (the frame's, the data items');
    ``acc``: the accesses as the lifter counted them (:func:`record`; else read back from
    ``lines``)."""
    if acc is None:
        acc = _kind(lines)
    if not acc:
        return [], []
    before: list[str] = []
    after: list[str] = []
    # per base local: (macro, element type or "")
    views: dict[str, tuple[str, str]] = {}
    words: dict[str, set[str]] = {}
    for base, offs in acc.items():
        items = _fields(offs)
        if not items:
            continue
        name = _name(base, taken, known, body, words)
        types = {it[2] for it in items}
        elem = ""
        if len(types) == 1:  # (every field's offset is one of offs)
            ct = next(iter(types))
            size = CT_SIZE[ct]
            offsets = {it[0] for it in items}
            if offsets == {0} or (size == 1 and len(items) == len(offs)):
                elem = ct
        if elem:
            before.append(f"#define {name} (({elem} *)(M + {base}))")
        else:
            tag = _c_ident(f"{func}_{base}_view")  # `f41_p0` is the struct analysis' name
            while tag in tags:
                tag += "_"
            tags.add(tag)
            before += _struct_lines(tag, _layout(items))
            before.append(f"#define {name} ((struct {tag} *)(M + {base}))")
        after.append(f"#undef {name}")
        views[base] = (name, elem)
    if not views:
        for k, ln in enumerate(lines):
            if ln is not None and OPEN in ln:
                lines[k] = ln.replace(OPEN, "").replace(CLOSE, "")
        return [], []
    subs = _subs(acc, views)
    for k, ln in enumerate(lines):
        if ln is not None and OPEN in ln:
            lines[k] = _rewrite(ln, subs)
    return before, after


def lift_views(lf: _Memory) -> tuple[list[str], list[str]]:
    """:func:`view_decls` for a lifted function: its lines, name, identifiers and tags."""
    lines = lf.out
    if not lf.vacc:
        return [], []
    func = lf.lm.func_c[lf.fi]
    body = "\n".join([ln for ln in lines if ln is not None])  # (a filter's join: 1.5x)
    taken = set(lf.locals_c) | {"M", "ADDR", func}
    tags = {lf.fstruct} | {_c_ident(f"{func}_{ident}") for ident in lf.dobj}
    for decl in lf.decl_types.values():  # the knowledge's and the analysis' struct types
        tags.update(re.findall(r"\b(?:struct|union) (?:__attribute__\(\(\w+\)\) )?(\w+)", decl))
    return view_decls(lines, func, taken, tags, body, lf.lm.module_idents, lf.vacc)
