"""The C declaration reader's vocabulary (bounds, wasm32 primitive types, builtin and standard
typedefs, keywords), its tokenizer, and the declared-types environment (:mod:`kbtool.analysis.cdecl`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

MAX_TEXT = 256 * 1024


MAX_DEPTH = 24


MAX_TYPES = 4000


MAX_FIELDS = 4096


MAX_SIZE = 1 << 31


MAX_ENUMERATORS = 10_000


MAX_NAME = 256


#: base types: canonical name -> (size, align, class) with class int/uint/float/void/bool
PRIMS: dict[str, tuple[int, int, str]] = {
    "void": (0, 1, "void"),
    "_Bool": (1, 1, "bool"),
    "char": (1, 1, "int"),
    "signed char": (1, 1, "int"),
    "unsigned char": (1, 1, "uint"),
    "short": (2, 2, "int"),
    "unsigned short": (2, 2, "uint"),
    "int": (4, 4, "int"),
    "unsigned int": (4, 4, "uint"),
    "long": (4, 4, "int"),
    "unsigned long": (4, 4, "uint"),
    "long long": (8, 8, "int"),
    "unsigned long long": (8, 8, "uint"),
    "float": (4, 4, "float"),
    "double": (8, 8, "float"),
    "long double": (16, 16, "float"),
}


#: typedef names every header may use without declaring them (wasm32 / wasi-libc)
BUILTIN_TYPEDEFS: dict[str, str] = {
    "bool": "_Bool",
    "int8_t": "signed char",
    "uint8_t": "unsigned char",
    "int16_t": "short",
    "uint16_t": "unsigned short",
    "int32_t": "int",
    "uint32_t": "unsigned int",
    "int64_t": "long long",
    "uint64_t": "unsigned long long",
    "intptr_t": "long",
    "uintptr_t": "unsigned long",
    "size_t": "unsigned long",
    "ssize_t": "long",
    "ptrdiff_t": "long",
    "wchar_t": "int",
    "char16_t": "unsigned short",
    "char32_t": "unsigned int",
    "off_t": "long long",
    "time_t": "long long",
    "intmax_t": "long long",
    "uintmax_t": "unsigned long long",
    "u8": "unsigned char",
    "u16": "unsigned short",
    "u32": "unsigned int",
    "u64": "unsigned long long",
    "i8": "signed char",
    "i16": "short",
    "i32": "int",
    "i64": "long long",
    "s8": "signed char",
    "s16": "short",
    "s32": "int",
    "s64": "long long",
    "sqlite3_int64": "long long",
    "sqlite3_uint64": "unsigned long long",
    "sqlite_int64": "long long",
    "sqlite_uint64": "unsigned long long",
}


#: the builtin typedefs a C file gets from the standard headers (the others a header defines)
STD_TYPEDEFS = frozenset(
    {
        "bool",
        "int8_t",
        "uint8_t",
        "int16_t",
        "uint16_t",
        "int32_t",
        "uint32_t",
        "int64_t",
        "uint64_t",
        "intptr_t",
        "uintptr_t",
        "size_t",
        "ptrdiff_t",
        "wchar_t",
        "intmax_t",
        "uintmax_t",
    }
)


KEYWORDS = frozenset(
    {
        "auto",
        "break",
        "case",
        "char",
        "const",
        "continue",
        "default",
        "do",
        "double",
        "else",
        "enum",
        "extern",
        "float",
        "for",
        "goto",
        "if",
        "inline",
        "int",
        "long",
        "register",
        "restrict",
        "return",
        "short",
        "signed",
        "sizeof",
        "static",
        "struct",
        "switch",
        "typedef",
        "union",
        "unsigned",
        "void",
        "volatile",
        "while",
        "_Bool",
        "_Alignas",
        "_Atomic",
        "_Noreturn",
        "_Static_assert",
        "_Thread_local",
        "__attribute__",
        "__restrict",
        "__restrict__",
        "__inline",
        "__inline__",
        "__extension__",
        "__const",
        "__volatile__",
        "__signed__",
    }
)


_QUALS = frozenset(
    {
        "const",
        "volatile",
        "restrict",
        "__restrict",
        "__restrict__",
        "__const",
        "__volatile__",
        "_Atomic",
        "__extension__",
        "inline",
        "__inline",
        "__inline__",
        "_Noreturn",
        "register",
        "auto",
        "_Thread_local",
    }
)


_STORAGE = frozenset({"typedef", "extern", "static"})


_PRIM_WORDS = frozenset(
    {
        "void",
        "char",
        "short",
        "int",
        "long",
        "float",
        "double",
        "signed",
        "unsigned",
        "_Bool",
        "__signed__",
    }
)


IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class CDeclError(ValueError):
    """A declaration or prototype that cannot be read or laid out (one line, with position)."""


# ------------------------------------------------------------------------------ tokens

_TOKEN = re.compile(
    r"""
    (?P<ws>[ \t\r\f\v]+|\n)
  | (?P<lc>//[^\n]*)
  | (?P<bc>/\*.*?\*/)
  | (?P<pp>\#[^\n]*(?:\\\n[^\n]*)*)
  | (?P<num>0[xX][0-9a-fA-F]+[uUlL]*|[0-9]+[uUlL]*)
  | (?P<id>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<ell>\.\.\.)
  | (?P<op><<|>>|[{}()\[\];,*=:+\-~|&^/%<>?!.])
""",
    re.S | re.X,
)


@dataclass
class Tok:
    kind: str  # id, num, op, eof
    text: str
    line: int
    col: int


def tokenize(text: str) -> list[Tok]:
    """Tokens of ``text`` (comments and preprocessor lines skipped)."""
    if not isinstance(text, str):
        raise CDeclError("not text")
    if len(text) > MAX_TEXT:
        raise CDeclError(f"input longer than {MAX_TEXT} characters ({len(text)})")
    out: list[Tok] = []
    pos, line, line_start = 0, 1, 0
    n = len(text)
    while pos < n:
        if text.startswith("/*", pos) and text.find("*/", pos + 2) < 0:
            raise CDeclError(f"line {line}, column {pos - line_start + 1}: unterminated comment")
        m = _TOKEN.match(text, pos)
        if m is None:
            ch = text[pos]
            shown = repr(ch) if ch.isprintable() else f"U+{ord(ch):04X}"
            raise CDeclError(
                f"line {line}, column {pos - line_start + 1}: unexpected character {shown}"
            )
        kind = m.lastgroup or ""
        tok = m.group(0)
        if kind in ("id", "num", "op", "ell"):
            out.append(Tok("op" if kind == "ell" else kind, tok, line, pos - line_start + 1))
        nl = tok.count("\n")
        if nl:
            line += nl
            line_start = pos + tok.rfind("\n") + 1
        pos = m.end()
    out.append(Tok("eof", "", line, pos - line_start + 1))
    return out


# ------------------------------------------------------------------------------ declarations


@dataclass
class Decl:
    """One named type a header declares: ``kind`` struct/union/enum/typedef."""

    kind: str
    name: str
    body: Any = None  # struct/union: (fields, attrs) or None (a forward declaration);
    # enum: [(name, value)]; typedef: the aliased type
    line: int = 0

    @property
    def key(self) -> str:
        """The type's name in its namespace: ``struct sqlite3``, ``enum color``, ``sqlite3``."""
        return self.name if self.kind == "typedef" else f"{self.kind} {self.name}"


@dataclass
class Env:
    """Named types known while parsing: records and enums by ``kind tag``, typedefs by name,
    enumerator constants."""

    types: dict[str, Decl] = field(default_factory=dict)
    consts: dict[str, int] = field(default_factory=dict)

    def copy(self) -> Env:
        return Env(dict(self.types), dict(self.consts))

    def add(self, d: Decl) -> None:
        old = self.types.get(d.key)
        if d.kind in ("struct", "union") and d.body is None and old is not None:
            return  # a forward declaration after the definition
        self.types[d.key] = d
        if d.kind == "enum" and d.body:
            for n, v in d.body:
                self.consts[n] = v

    def typedef(self, name: str) -> Any | None:
        d = self.types.get(name)
        if d is not None and d.kind == "typedef":
            return d.body
        if name in BUILTIN_TYPEDEFS:
            return ("name", name)
        return None


def _builtin(name: str) -> tuple:
    return ("prim", BUILTIN_TYPEDEFS[name])
