"""Names given to the lifter, and the sanitising of untrusted text for C and listings.

Every name may come from the binary (name section, exports, imports) or from a user: it is
untrusted. :func:`c_ident` turns any text into a C identifier; :func:`comment_text` makes any
text safe inside a ``/* ... */`` comment (one line, no ``*/``, no control characters, no
trigraphs); :func:`display_name` makes a name safe for a one-instruction-per-line listing.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from kbtool.wasm.errors import WasmFormatError
from kbtool.wasm.leb import read_uleb

#: ``field_hook(func_index, base_text, offset, c_type) -> text, (text, guard, decl) or None``:
#: a later struct analysis may render ``*(int32_t *)(M + p + 8)`` as ``p->field_8``
#: (``base_text`` is the C name of the base local, ``c_type`` the accessed C type, e.g.
#: ``"int32_t"``). A plain text is sanitised as an identifier path; a tuple is used as is
#: and its ``decl`` (a struct typedef behind the include guard ``guard``) is declared once
#: before the function, so the text stays valid C.
FieldHook = Callable[[int, str, int, str], "str | tuple[str, str, str] | None"]


class DataTypes:
    """C types applied to data items and globals (``kbtool types apply``), as the lifter
    asks for them; the base answers "untyped" everywhere. A declaration is
    ``(guard, text)``: text declared once before the function behind ``#ifndef KB_<guard>``."""

    def item_type(self, address: int) -> tuple[str, str, str] | None:
        """``(pointer C type, guard, declaration)`` of the typed data item starting at
        ``address`` (``struct cfg *``, ``struct op (*)[3]``; an empty guard declares nothing)."""
        return None

    def item_field(self, address: int, offset: int, ctype: str) -> tuple[str, str] | None:
        """``(member path, member C type)`` of an access of C type ``ctype`` at ``offset``
        into the typed item at ``address`` (``.len``, ``[2].name``, ``""`` for the whole
        item; the lifter casts a member of the other signedness)."""
        return None

    def item_stride(self, address: int) -> int:
        """The element size of the typed item at ``address`` when it is an array, else 0."""
        return 0

    def global_type(self, index: int) -> str | None:
        """The C type text applied to global ``index`` (shown beside its declaration)."""
        return None

    def global_field(
        self, index: int, base: str, offset: int, ctype: str
    ) -> tuple[str, str, str] | None:
        """``(expression, guard, declaration)`` of a load/store at ``offset`` from the value
        of global ``index`` (C name ``base``) when it holds a pointer to a typed record."""
        return None


@dataclass
class Names:
    """Names the caller knows (all optional; all untrusted).

    ``functions``: function index -> name; ``globals``: global index -> name;
    ``locals``: function index -> {local index -> name} (parameters are locals 0..n-1);
    ``field_hook``: see :data:`FieldHook`; ``data``: labelled data items as
    ``(address, size, label, text or None)`` (strings, tables: the data model of
    :mod:`kbtool.analysis.datamodel`), used for constant addresses; ``comments``,
    ``prototypes``, ``line_comments``: what :func:`annotate_c` and the disassembly show.
    """

    functions: Mapping[int, str] = field(default_factory=dict)
    globals: Mapping[int, str] = field(default_factory=dict)
    locals: Mapping[int, Mapping[int, str]] = field(default_factory=dict)
    field_hook: FieldHook | None = None
    data: list[tuple[int, int, str, str | None]] = field(default_factory=list)
    #: knowledge beyond names (issue 27), all untrusted text: function index -> comment,
    #: -> declared prototype text, -> {file offset of an instruction -> line comment}
    comments: Mapping[int, str] = field(default_factory=dict)
    prototypes: Mapping[int, str] = field(default_factory=dict)
    line_comments: Mapping[int, Mapping[int, str]] = field(default_factory=dict)
    #: C types applied to data items and globals (see :class:`DataTypes`), or None
    data_hook: DataTypes | None = None

    @classmethod
    def from_module(cls, module) -> Names:
        """Names the module itself carries: name section, else export, else import field."""
        funcs: dict[int, str] = {}
        for imp in module.func_imports:
            funcs[imp.index] = imp.field
        for e in module.exports:
            if e.kind == "func":
                funcs.setdefault(e.index, e.name)
        for i, n in module.func_names.items():
            if n:
                funcs[i] = n
        gl: dict[int, str] = _name_subsection(module, 7)
        for imp in module.imports:
            if imp.kind == "global":
                gl[imp.index] = imp.field
        for e in module.exports:
            if e.kind == "global":
                gl.setdefault(e.index, e.name)
        return cls(functions=funcs, globals=gl, locals=dict(module.local_names))


def _name_subsection(module, wanted: int) -> dict[int, str]:
    """A name map subsection of the ``name`` custom section (7: globals); {} if absent or
    malformed (names are optional, so a bad subsection is ignored)."""

    c = module.custom("name")
    if c is None:
        return {}
    data = c.data
    out: dict[int, str] = {}
    try:
        p = 0
        while p < len(data):
            sid = data[p]
            size, p = read_uleb(data, p + 1, len(data), 32, "name subsection size")
            end = p + size
            if end > len(data):
                return {}
            if sid == wanted:
                n, p = read_uleb(data, p, end, 32, "name count")
                for _ in range(min(n, end - p)):
                    idx, p = read_uleb(data, p, end, 32, "index")
                    ln, p = read_uleb(data, p, end, 32, "name length")
                    if p + ln > end:
                        return out
                    out[idx] = bytes(data[p : p + ln]).decode("utf-8", "replace")
                    p += ln
                return out
            p = end
    except (WasmFormatError, IndexError):
        return out
    return out


C_KEYWORDS = frozenset(
    """
auto break case char const continue default do double else enum extern float for goto if
inline int long register restrict return short signed sizeof static struct switch typedef
union unsigned void volatile while _Alignas _Alignof _Atomic _Bool _Complex _Generic
_Imaginary _Noreturn _Static_assert _Thread_local alignas alignof bool constexpr false
nullptr static_assert thread_local true typeof typeof_unqual asm fortran
int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t intptr_t uintptr_t
size_t ptrdiff_t NULL main
""".split()
)

_NOT_IDENT = re.compile(r"[^A-Za-z0-9_]+")
MAX_IDENT = 96


def c_ident(name: str) -> str:
    """A C identifier made from ``name`` (letters, digits, ``_``; never empty; bounded)."""
    s = _NOT_IDENT.sub("_", name)
    if not s:
        return "_"
    if s[0].isdigit():
        s = "_" + s
    if len(s) > MAX_IDENT:
        s = s[:MAX_IDENT]
    return s


_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}


class _Escapes(dict):
    """Code point -> its text inside a C string literal (:func:`escape_text`), filled on
    first sight: an escape, the character itself when printable, else ``\\xNN``,
    ``\\uNNNN`` or ``\\UNNNNNNNN``."""

    def __missing__(self, o: int) -> str:
        ch = chr(o)
        e = _ESCAPES.get(ch)
        if e is None:
            if ch.isprintable():
                e = ch
            elif o < 0x100:
                e = f"\\x{o:02x}"
            else:
                e = f"\\u{o:04x}" if o < 0x10000 else f"\\U{o:08x}"
        if len(self) < 1 << 16:
            self[o] = e
        return e


_ESCAPE_TABLE = _Escapes()


def escape_text(s: str, limit: int = 80) -> str:
    """``s`` as the inside of a C string literal: escapes, no control or invisible characters,
    no ``*/`` and no ``??`` (trigraphs); at most ``limit`` characters then ``...``."""
    head = s[:limit] if limit >= 0 else ""
    if head.isprintable():  # the common case: only `\\` and `"` to escape, no loop
        t = head.replace("\\", "\\\\").replace('"', '\\"')
        if len(s) > len(head):
            t += "..."
        return t.replace("*/", "*\\/").replace("/*", "/\\*").replace("??", "?\\?")
    # each character of the head through one table (``str.translate``: no Python loop per
    # character; a character met for the first time is looked up once, _Escapes.__missing__)
    t = head.translate(_ESCAPE_TABLE)
    if len(s) > len(head):
        t += "..."
    # neutralise comment terminators/openers and trigraphs (backslashes are doubled above)
    return t.replace("*/", "*\\/").replace("/*", "/\\*").replace("??", "?\\?")


def comment_text(s: str, limit: int = 120) -> str:
    """Any text made safe inside a one-line ``/* ... */`` comment."""
    return escape_text(s, limit)


def display_name(name: str, limit: int = 200) -> str:
    """A name for a listing line: printable, one line, bounded."""
    out = []
    for ch in name[:limit]:
        if ch.isprintable() and ch not in "\r\n":
            out.append(ch)
        else:
            out.append(f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}")
    return "".join(out) + ("..." if len(name) > limit else "")


MAX_COMMENT_LINES = 40


def comment_block(text: str, indent: str = "", limit: int = 200) -> list[str]:
    """A multi-line ``/* ... */`` block of untrusted ``text``: one escaped line per line of it
    (at most :data:`MAX_COMMENT_LINES`), never closing early, valid C."""
    rows = text.splitlines() or [""]
    out = [f"{indent}/*"]
    for row in rows[:MAX_COMMENT_LINES]:
        out.append(f"{indent} * {comment_text(row, limit)}".rstrip())
    if len(rows) > MAX_COMMENT_LINES:
        out.append(f"{indent} * ... ({len(rows) - MAX_COMMENT_LINES} more lines)")
    out.append(f"{indent} */")
    return out


def annotate_c(text: str, func_index: int, names: Names) -> str:
    """The lifted C of one function with the KB's knowledge shown: the function comment and
    the declared prototype above the definition. Comments only, so the C compiles exactly
    as before. (The line comments are the lifter's own: each above the statement of its
    instruction, see :mod:`kbtool.lift.lifter.notes`.)"""
    comment = names.comments.get(func_index)
    proto = names.prototypes.get(func_index)
    if not (comment or proto):
        return text
    rows = text.split("\n")
    sig = next(
        (k for k, r in enumerate(rows) if r.endswith(") {") and r[:1] not in (" ", "#", "/", "\t")),
        None,
    )
    if sig is None:  # an import's prototype: the comment above it
        sig = next(
            (k for k, r in enumerate(rows) if r.endswith(");") and r[:1] not in (" ", "#", "/")),
            None,
        )
        if sig is None:
            return text
    head: list[str] = []
    if comment:
        head += comment_block(comment)
    if proto:
        head.append(f"/* prototype: {comment_text(proto, 400)} */")
    return "\n".join(rows[:sig] + head + rows[sig:])
