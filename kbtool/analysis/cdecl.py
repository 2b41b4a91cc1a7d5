"""A small C declaration parser with wasm32 layouts (pure; issue 27, types).

``parse_decls(text, env)`` reads struct, union, enum and typedef declarations (nested types,
arrays, pointers, function pointers, anonymous members, ``__attribute__((packed))`` and
``aligned(N)``; bit-fields are refused) and returns the named types it declares;
``layout(t, env)`` computes sizes, alignments and field offsets as clang does for
``--target=wasm32`` (pointers 4 bytes, ``long`` 4, ``long long`` 8 aligned 8, ``long double``
16 aligned 16). ``print_decl`` prints a named type back as one canonical declaration that
parses to the same layout. ``parse_prototype`` reads ``int f(struct sqlite3 *db, const char
*zSql)`` and ``check_signature`` checks it against a wasm signature with the wasm32 C ABI.

Types are plain tuples so they can be compared and stored as JSON:

* ``("prim", name)``: ``int``, ``unsigned char``, ``double``, ``void`` ...
* ``("ptr", T)``, ``("arr", T, n)`` (``n`` None: a flexible array member),
  ``("fn", RET, (params...), variadic)``
* ``("rec", "struct"|"union", tag)``: a reference to a named record (complete or not);
  ``("anon", "struct"|"union", fields, attrs)``: an anonymous record defined in place
* ``("enum", tag)``, ``("name", typedef)``

Input is bounded (:data:`MAX_TEXT` characters, :data:`MAX_DEPTH` nesting, :data:`MAX_TYPES`
declarations, :data:`MAX_FIELDS` members); every error is one line with its position.
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
    "int8_t": "signed char", "uint8_t": "unsigned char",
    "int16_t": "short", "uint16_t": "unsigned short",
    "int32_t": "int", "uint32_t": "unsigned int",
    "int64_t": "long long", "uint64_t": "unsigned long long",
    "intptr_t": "long", "uintptr_t": "unsigned long",
    "size_t": "unsigned long", "ssize_t": "long", "ptrdiff_t": "long",
    "wchar_t": "int", "char16_t": "unsigned short", "char32_t": "unsigned int",
    "off_t": "long long", "time_t": "long long",
    "intmax_t": "long long", "uintmax_t": "unsigned long long",
    "u8": "unsigned char", "u16": "unsigned short", "u32": "unsigned int", "u64": "unsigned long long",
    "i8": "signed char", "i16": "short", "i32": "int", "i64": "long long",
    "s8": "signed char", "s16": "short", "s32": "int", "s64": "long long",
    "sqlite3_int64": "long long", "sqlite3_uint64": "unsigned long long",
    "sqlite_int64": "long long", "sqlite_uint64": "unsigned long long",
}
#: the builtin typedefs a C file gets from the standard headers (the others a header defines)
STD_TYPEDEFS = frozenset({
    "bool", "int8_t", "uint8_t", "int16_t", "uint16_t", "int32_t", "uint32_t", "int64_t",
    "uint64_t", "intptr_t", "uintptr_t", "size_t", "ptrdiff_t", "wchar_t", "intmax_t", "uintmax_t",
})

KEYWORDS = frozenset({
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else", "enum",
    "extern", "float", "for", "goto", "if", "inline", "int", "long", "register", "restrict",
    "return", "short", "signed", "sizeof", "static", "struct", "switch", "typedef", "union",
    "unsigned", "void", "volatile", "while", "_Bool", "_Alignas", "_Atomic", "_Noreturn",
    "_Static_assert", "_Thread_local", "__attribute__", "__restrict", "__restrict__",
    "__inline", "__inline__", "__extension__", "__const", "__volatile__", "__signed__",
})
_QUALS = frozenset({"const", "volatile", "restrict", "__restrict", "__restrict__", "__const",
                    "__volatile__", "_Atomic", "__extension__", "inline", "__inline", "__inline__",
                    "_Noreturn", "register", "auto", "_Thread_local"})
_STORAGE = frozenset({"typedef", "extern", "static"})
_PRIM_WORDS = frozenset({"void", "char", "short", "int", "long", "float", "double", "signed",
                         "unsigned", "_Bool", "__signed__"})
IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class CDeclError(ValueError):
    """A declaration or prototype that cannot be read or laid out (one line, with position)."""


# ------------------------------------------------------------------------------ tokens

_TOKEN = re.compile(r"""
    (?P<ws>[ \t\r\f\v]+|\n)
  | (?P<lc>//[^\n]*)
  | (?P<bc>/\*.*?\*/)
  | (?P<pp>\#[^\n]*(?:\\\n[^\n]*)*)
  | (?P<num>0[xX][0-9a-fA-F]+[uUlL]*|[0-9]+[uUlL]*)
  | (?P<id>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<ell>\.\.\.)
  | (?P<op><<|>>|[{}()\[\];,*=:+\-~|&^/%<>?!.])
""", re.S | re.X)


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
            raise CDeclError(f"line {line}, column {pos - line_start + 1}: unexpected character {shown}")
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


class _Parser:
    def __init__(self, text: str, env: Env) -> None:
        self.toks = tokenize(text)
        self.i = 0
        self.env = env
        self.depth = 0
        self.decls: list[Decl] = []
        self.anon = 0

    # -- helpers
    @property
    def tok(self) -> Tok:
        return self.toks[self.i]

    def peek(self, k: int = 1) -> Tok:
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def err(self, msg: str, tok: Tok | None = None) -> CDeclError:
        t = tok or self.tok
        got = "end of input" if t.kind == "eof" else repr(t.text[:40])
        return CDeclError(f"line {t.line}, column {t.col}: {msg} (at {got})")

    def take(self, text: str | None = None) -> Tok:
        t = self.tok
        if text is not None and t.text != text:
            raise self.err(f"expected {text!r}")
        if t.kind == "eof":
            raise self.err("unexpected end of input")
        self.i += 1
        return t

    def accept(self, text: str) -> bool:
        if self.tok.text == text and self.tok.kind != "eof":
            self.i += 1
            return True
        return False

    def enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.err(f"nested deeper than {MAX_DEPTH} levels")

    def leave(self) -> None:
        self.depth -= 1

    # -- attributes
    def attributes(self, attrs: dict[str, Any]) -> None:
        while self.tok.text in ("__attribute__", "__attribute", "_Alignas", "__packed"):
            t = self.take()
            if t.text == "__packed":
                attrs["packed"] = True
                continue
            if t.text == "_Alignas":
                self.take("(")
                attrs["aligned"] = self._align_value(self.const_expr())
                self.take(")")
                continue
            self.take("(")
            self.take("(")
            while not self.accept(")"):
                name = self.take()
                word = name.text.strip("_")
                if word == "packed":
                    attrs["packed"] = True
                elif word == "aligned":
                    if self.accept("("):
                        attrs["aligned"] = self._align_value(self.const_expr())
                        self.take(")")
                    else:
                        attrs["aligned"] = 16
                elif self.accept("("):  # another attribute: skip its arguments
                    level = 1
                    while level:
                        t2 = self.take()
                        level += {"(": 1, ")": -1}.get(t2.text, 0)
                self.accept(",")
            self.take(")")

    def _align_value(self, v: int) -> int:
        if v <= 0 or v & (v - 1) or v > 1 << 16:
            raise self.err(f"alignment {v} is not a power of two up to 65536")
        return v

    # -- constant expressions (enumerators, array sizes)
    _BIN = {"|": 1, "^": 2, "&": 3, "<<": 5, ">>": 5, "+": 6, "-": 6, "*": 7, "/": 7, "%": 7}

    def const_expr(self, prec: int = 0) -> int:
        self.enter()
        try:
            left = self.unary()
            while self.tok.kind == "op" and self.tok.text in self._BIN and self._BIN[self.tok.text] > prec:
                op = self.take().text
                right = self.const_expr(self._BIN[op])
                left = self._apply(op, left, right)
            return left
        finally:
            self.leave()

    def _apply(self, op: str, a: int, b: int) -> int:
        if op in "/%" and b == 0:
            raise self.err("division by zero in a constant")
        if op in ("<<", ">>") and not 0 <= b < 64:
            raise self.err(f"shift by {b} in a constant")
        r = {"|": lambda: a | b, "^": lambda: a ^ b, "&": lambda: a & b, "<<": lambda: a << b,
             ">>": lambda: a >> b, "+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b,
             "/": lambda: int(a / b), "%": lambda: a - int(a / b) * b}[op]()
        if abs(r) > 1 << 64:
            raise self.err("constant out of range")
        return r

    def unary(self) -> int:
        t = self.tok
        if t.text in ("-", "+", "~", "!"):
            self.take()
            self.enter()
            try:
                v = self.unary()
            finally:
                self.leave()
            return {"-": -v, "+": v, "~": ~v, "!": int(not v)}[t.text]
        if t.text == "(":
            self.take()
            if self._type_start():  # a cast: (int)5
                self.type_name()
                self.take(")")
                return self.unary()
            v = self.const_expr()
            self.take(")")
            return v
        if t.kind == "num":
            self.take()
            return int(t.text.rstrip("uUlL"), 0) if not re.fullmatch(r"0[0-7]+[uUlL]*", t.text) \
                else int(t.text.rstrip("uUlL"), 8)
        if t.text == "sizeof":
            self.take()
            self.take("(")
            ty = self.type_name()
            self.take(")")
            return layout(ty, self.env)[0]
        if t.kind == "id" and t.text in self.env.consts:
            self.take()
            return self.env.consts[t.text]
        raise self.err("expected an integer constant")

    # -- specifiers
    def _type_start(self) -> bool:
        t = self.tok
        if t.kind != "id":
            return False
        return (t.text in _PRIM_WORDS or t.text in _QUALS or t.text in ("struct", "union", "enum",
                "__attribute__") or self.env.typedef(t.text) is not None)

    def specifiers(self, attrs: dict[str, Any]) -> tuple[Any, set[str]]:
        """``(base type, storage classes)``."""
        words: list[str] = []
        storage: set[str] = set()
        base = None
        start = self.tok
        while True:
            t = self.tok
            if t.kind != "id":
                break
            w = t.text
            if w in _STORAGE:
                storage.add(w)
                self.take()
            elif w in _QUALS:
                self.take()
            elif w in ("__attribute__", "__attribute", "_Alignas", "__packed"):
                self.attributes(attrs)
            elif w in _PRIM_WORDS:
                if base is not None:
                    raise self.err("two types in one declaration")
                words.append("signed" if w == "__signed__" else w)
                self.take()
            elif w in ("struct", "union"):
                if base is not None or words:
                    raise self.err("two types in one declaration")
                base = self.record()
            elif w == "enum":
                if base is not None or words:
                    raise self.err("two types in one declaration")
                base = self.enum()
            elif base is None and not words and self.env.typedef(w) is not None:
                self.take()
                base = ("name", w)
            else:
                break
        if words:
            base = ("prim", _prim_name(words, self, start))
        if base is None:
            if self.tok.kind == "id" and self.tok.text not in KEYWORDS:
                raise self.err(f"unknown type name {self.tok.text!r} (declare it first)")
            raise self.err("expected a type")
        return base, storage

    def record(self) -> Any:
        kw = self.take().text
        attrs: dict[str, Any] = {}
        self.attributes(attrs)
        tag = None
        if self.tok.kind == "id" and self.tok.text not in KEYWORDS:
            tag = self._name(self.take())
        self.attributes(attrs)
        if not self.accept("{"):
            if tag is None:
                raise self.err(f"expected a {kw} tag or '{{'")
            if f"{kw} {tag}" not in self.env.types:
                self._declare(Decl(kw, tag, None, self.tok.line))
            return ("rec", kw, tag)
        self.enter()
        line = self.tok.line
        fields: list[tuple] = []
        names: set[str] = set()
        while not self.accept("}"):
            if self.tok.text == ";":
                self.take()
                continue
            fattrs: dict[str, Any] = {}
            base, storage = self.specifiers(fattrs)
            if storage:
                raise self.err(f"{sorted(storage)[0]} inside a {kw}")
            if self.tok.text == ";" and base[0] == "anon":  # an anonymous member (C11)
                self.take()
                fields.append((None, base, fattrs))
                continue
            while True:
                name, ty = self.declarator(base)
                self.attributes(fattrs)
                if self.tok.text == ":":
                    raise self.err("bit-fields are not supported: declare the integer that holds them")
                if name is None:
                    raise self.err("a member needs a name")
                if name in names:
                    raise self.err(f"duplicate member {name!r}")
                names.add(name)
                fields.append((name, ty, dict(fattrs)))
                if len(fields) > MAX_FIELDS:
                    raise self.err(f"more than {MAX_FIELDS} members")
                if not self.accept(","):
                    break
            self.take(";")
        self.leave()
        self.attributes(attrs)
        body = (tuple(fields), tuple(sorted(attrs.items())))
        if tag is None:
            return ("anon", kw, *body)
        self._declare(Decl(kw, tag, body, line))
        return ("rec", kw, tag)

    def enum(self) -> Any:
        self.take()
        attrs: dict[str, Any] = {}
        self.attributes(attrs)
        tag = None
        if self.tok.kind == "id" and self.tok.text not in KEYWORDS:
            tag = self._name(self.take())
        if not self.accept("{"):
            if tag is None:
                raise self.err("expected an enum tag or '{'")
            if f"enum {tag}" not in self.env.types:
                self._declare(Decl("enum", tag, None, self.tok.line))
            return ("enum", tag)
        line = self.tok.line
        items: list[tuple[str, int]] = []
        value = 0
        while not self.accept("}"):
            name = self._name(self.take())
            if self.accept("="):
                value = self.const_expr()
            if not -(1 << 31) <= value < 1 << 32:
                raise self.err(f"enumerator {name} = {value} does not fit in 32 bits")
            if name in self.env.consts and name not in dict(items):
                pass  # redeclared across headers: the later one counts
            items.append((name, value))
            self.env.consts[name] = value
            if len(items) > MAX_ENUMERATORS:
                raise self.err(f"more than {MAX_ENUMERATORS} enumerators")
            value += 1
            if not self.accept(","):
                self.take("}")
                break
        if tag is None:
            self.anon += 1
            tag = f"__anon_enum_{line}_{self.anon}"
        self._declare(Decl("enum", tag, tuple(items), line))
        return ("enum", tag)

    def _name(self, t: Tok) -> str:
        if t.kind != "id" or t.text in KEYWORDS:
            raise self.err("expected a name", t)
        if len(t.text) > MAX_NAME:
            raise self.err(f"name longer than {MAX_NAME} characters", t)
        return t.text

    def _declare(self, d: Decl) -> None:
        if len(self.decls) >= MAX_TYPES:
            raise self.err(f"more than {MAX_TYPES} types")
        self.decls.append(d)
        self.env.add(d)

    # -- declarators
    def declarator(self, base: Any, abstract: bool = False) -> tuple[str | None, Any]:
        self.enter()
        try:
            ptrs = 0
            while self.tok.text == "*" or self.tok.text in _QUALS or self.tok.text == "__attribute__":
                if self.tok.text == "__attribute__":
                    self.attributes({})
                    continue
                if self.take().text == "*":
                    ptrs += 1
            inner = None
            name = None
            if self.tok.text == "(" and (self.peek().text in ("*", "(") or (
                    self.peek().kind == "id" and not self._is_type_word(self.peek().text))):
                self.take()
                inner = self._declarator_later()
                self.take(")")
            elif self.tok.kind == "id" and self.tok.text not in KEYWORDS:
                if self.env.typedef(self.tok.text) is not None and abstract:
                    pass  # a parameter type, not a name
                else:
                    name = self._name(self.take())
            suffixes: list[tuple] = []
            while self.tok.text in ("[", "("):
                if self.accept("["):
                    while self.tok.text in _QUALS or self.tok.text == "static":
                        self.take()
                    if self.accept("]"):
                        suffixes.append(("arr", None))
                        continue
                    n = self.const_expr()
                    if n < 0 or n > MAX_SIZE:
                        raise self.err(f"array size {n} out of range")
                    self.take("]")
                    suffixes.append(("arr", n))
                else:
                    self.take("(")
                    suffixes.append(("fn", *self.params()))
            t = base
            for _ in range(ptrs):
                t = ("ptr", t)
            for s in reversed(suffixes):
                if s[0] == "arr":
                    if t[0] == "fn":
                        raise self.err("an array of functions")
                    t = ("arr", t, s[1])
                else:
                    if t[0] in ("arr", "fn"):
                        raise self.err("a function cannot return an array or a function")
                    t = ("fn", t, s[1], s[2])
            if inner is not None:
                name, t = inner(t)
            return name, t
        finally:
            self.leave()

    def _is_type_word(self, w: str) -> bool:
        return w in _PRIM_WORDS or w in _QUALS or w in ("struct", "union", "enum") \
            or self.env.typedef(w) is not None

    def _declarator_later(self):
        """A parenthesised declarator, parsed now and applied to the outer type later."""
        start = self.i
        # parse with a placeholder to find its extent, then re-parse with the real base
        self.declarator(("prim", "int"), abstract=True)
        end = self.i

        def apply(t: Any) -> tuple[str | None, Any]:
            here = self.i
            self.i = start
            name, ty = self.declarator(t, abstract=True)
            assert self.i == end
            self.i = here
            return name, ty
        return apply

    def params(self) -> tuple[tuple, bool]:
        out: list[tuple[str | None, Any]] = []
        variadic = False
        if self.accept(")"):
            return (), False
        if self.tok.text == "void" and self.peek().text == ")":
            self.take()
            self.take(")")
            return (), False
        while True:
            if self.accept("..."):
                variadic = True
                self.take(")")
                break
            attrs: dict[str, Any] = {}
            base, _storage = self.specifiers(attrs)
            name, ty = self.declarator(base, abstract=True)
            if ty[0] == "arr":  # decays to a pointer
                ty = ("ptr", ty[1])
            elif ty[0] == "fn":
                ty = ("ptr", ty)
            out.append((name, ty))
            if len(out) > 1000:
                raise self.err("more than 1000 parameters")
            if self.accept(")"):
                break
            self.take(",")
        return tuple(out), variadic

    def type_name(self) -> Any:
        base, _s = self.specifiers({})
        name, ty = self.declarator(base, abstract=True)
        if name is not None:
            raise self.err("a type name has no declarator name")
        return ty

    # -- top level
    def unit(self) -> list[Decl]:
        while self.tok.kind != "eof":
            if self.accept(";"):
                continue
            if self.tok.text == "_Static_assert":
                raise self.err("_Static_assert is not supported in a types header")
            attrs: dict[str, Any] = {}
            base, storage = self.specifiers(attrs)
            if self.accept(";"):
                if base[0] == "anon":
                    raise self.err("an anonymous struct or union declares nothing (give it a tag or a typedef)")
                continue
            while True:
                name, ty = self.declarator(base)
                self.attributes(attrs)
                if name is None:
                    raise self.err("expected a name")
                if "typedef" in storage:
                    if attrs.get("packed") and base[0] == "anon":
                        ty = _with_attrs(ty, attrs)
                    self._declare(Decl("typedef", name, ty, self.tok.line))
                elif ty[0] != "fn":
                    raise self.err("only types can be declared here (struct, union, enum, typedef)"
                                   " — a variable or a function belongs elsewhere")
                if self.accept("="):
                    raise self.err("an initializer in a types header")
                if not self.accept(","):
                    break
            self.take(";")
        return self.decls


def _with_attrs(ty: Any, attrs: dict[str, Any]) -> Any:
    if ty[0] == "anon":
        merged = dict(ty[3])
        merged.update(attrs)
        return ("anon", ty[1], ty[2], tuple(sorted(merged.items())))
    return ty


def _prim_name(words: list[str], p: _Parser, start: Tok) -> str:
    signed = words.count("signed")
    unsigned = words.count("unsigned")
    rest = [w for w in words if w not in ("signed", "unsigned")]
    longs = rest.count("long")
    others = [w for w in rest if w != "long"]
    if signed + unsigned > 1 or len(others) > 1 or longs > 2:
        raise p.err(f"invalid type {' '.join(words)!r}", start)
    o = others[0] if others else None
    if o in ("void", "_Bool", "float") and (longs or signed or unsigned):
        raise p.err(f"invalid type {' '.join(words)!r}", start)
    if o == "double":
        if signed or unsigned or longs > 1:
            raise p.err(f"invalid type {' '.join(words)!r}", start)
        return "long double" if longs else "double"
    if o in ("void", "_Bool", "float"):
        return o
    if o == "char":
        if longs:
            raise p.err(f"invalid type {' '.join(words)!r}", start)
        return "unsigned char" if unsigned else ("signed char" if signed else "char")
    if o == "short":
        if longs:
            raise p.err(f"invalid type {' '.join(words)!r}", start)
        return "unsigned short" if unsigned else "short"
    core = {0: "int", 1: "long", 2: "long long"}[longs]
    return f"unsigned {core}" if unsigned else core


def parse_decls(text: str, env: Env | None = None) -> list[Decl]:
    """The named types ``text`` declares, in order (``env``: types already known; it is
    updated). Each struct/union/enum definition and each typedef is one :class:`Decl`; a
    forward declaration (``struct foo;``) is one too, with ``body`` None. Every definition is
    laid out once here so a bad one is refused at once."""
    env = env if env is not None else Env()
    p = _Parser(text, env)
    decls = p.unit()
    for d in decls:
        if d.kind in ("struct", "union") and d.body is not None:
            try:
                layout(("rec", d.kind, d.name), env)
            except CDeclError as exc:
                raise CDeclError(f"line {d.line}: {d.key}: {exc}") from None
        elif d.kind == "typedef":
            try:
                _resolve(d.body, env)
            except CDeclError as exc:
                raise CDeclError(f"line {d.line}: typedef {d.name}: {exc}") from None
    return decls


def parse_type(text: str, env: Env | None = None) -> Any:
    """One type name (``struct sqlite3 *``, ``char[16]``, ``u8``)."""
    if not isinstance(text, str) or not text.strip():
        raise CDeclError("empty type")
    if len(text) > 1024:
        raise CDeclError("type longer than 1024 characters")
    p = _Parser(text, (env or Env()).copy())
    ty = p.type_name()
    if p.tok.kind != "eof":
        raise p.err("unexpected text after the type")
    return ty


# ------------------------------------------------------------------------------ layout


def _resolve(t: Any, env: Env, depth: int = 0) -> Any:
    """``t`` with typedef names replaced by what they stand for (the outermost level only)."""
    while t[0] == "name":
        depth += 1
        if depth > 64:
            raise CDeclError("typedef chain too long (a cycle?)")
        d = env.types.get(t[1])
        if d is not None and d.kind == "typedef":
            t = d.body
        elif t[1] in BUILTIN_TYPEDEFS:
            return _builtin(t[1])
        else:
            raise CDeclError(f"unknown type {t[1]!r}")
    return t


def layout(t: Any, env: Env, _depth: int = 0, _seen: tuple = ()) -> tuple[int, int]:
    """``(size, align)`` of a type on wasm32; incomplete types are an error."""
    if _depth > MAX_DEPTH * 2:
        raise CDeclError("types nested too deeply")
    t = _resolve(t, env)
    if t[0] == "rec":
        if (t[1], t[2]) in _seen:
            raise CDeclError(f"{t[1]} {t[2]} contains itself (use a pointer)")
        _seen = (*_seen, (t[1], t[2]))
    k = t[0]
    if k == "prim":
        size, align, cls = PRIMS[t[1]]
        if cls == "void":
            raise CDeclError("void has no size")
        return size, align
    if k == "ptr":
        return 4, 4
    if k == "enum":
        return 4, 4
    if k == "fn":
        raise CDeclError("a function has no size (use a pointer to it)")
    if k == "arr":
        if t[2] is None:
            return 0, layout(t[1], env, _depth + 1, _seen)[1]
        size, align = layout(t[1], env, _depth + 1, _seen)
        total = size * t[2]
        if total > MAX_SIZE:
            raise CDeclError(f"array of {t[2]} elements larger than {MAX_SIZE} bytes")
        return total, align
    if k in ("rec", "anon"):
        rl = record_layout(t, env, _depth + 1, _seen)
        return rl["size"], rl["align"]
    raise CDeclError(f"unknown type form {k!r}")


def record_body(t: Any, env: Env) -> tuple[str, str | None, tuple, dict[str, Any]]:
    """``(struct|union, tag or None, fields, attrs)`` of a record type; error if incomplete."""
    t = _resolve(t, env)
    if t[0] == "anon":
        return t[1], None, t[2], dict(t[3])
    if t[0] != "rec":
        raise CDeclError("not a struct or union")
    d = env.types.get(f"{t[1]} {t[2]}")
    if d is None or d.body is None:
        raise CDeclError(f"{t[1]} {t[2]} is incomplete (declare its members)")
    fields, attrs = d.body
    return t[1], t[2], fields, dict(attrs)


def record_layout(t: Any, env: Env, _depth: int = 0, _seen: tuple = ()) -> dict[str, Any]:
    """``{kind, size, align, fields: [{name, type, offset, size, align}]}`` of a record
    (anonymous members keep ``name`` None and their own ``type``)."""
    kind, _tag, fields, attrs = record_body(t, env)
    packed = bool(attrs.get("packed"))
    off = 0
    size = 0
    align = 1
    out = []
    for k, (name, ft, fattrs) in enumerate(fields):
        fs, fa = layout(ft, env, _depth + 1, _seen)
        rt = _resolve(ft, env)
        if rt[0] == "arr" and rt[2] is None and (kind != "struct" or k != len(fields) - 1):
            raise CDeclError(f"flexible array member {name!r} must be the last member of a struct")
        if packed or fattrs.get("packed"):
            fa = 1
        if fattrs.get("aligned"):
            fa = max(fa, int(fattrs["aligned"]))
        align = max(align, fa)
        if kind == "struct":
            off = (off + fa - 1) // fa * fa
            out.append({"name": name, "type": ft, "offset": off, "size": fs, "align": fa})
            off += fs
            size = off
        else:
            out.append({"name": name, "type": ft, "offset": 0, "size": fs, "align": fa})
            size = max(size, fs)
        if size > MAX_SIZE:
            raise CDeclError(f"larger than {MAX_SIZE} bytes")
    if attrs.get("aligned"):
        align = max(align, int(attrs["aligned"]))
    size = (size + align - 1) // align * align
    return {"kind": kind, "size": size, "align": align, "fields": out}


def leaves(t: Any, env: Env, base: int = 0, path: str = "", limit: int = 100_000
           ) -> list[tuple[int, int, Any, str]]:
    """Scalar members of a type, flattened: ``[(offset, size, scalar type, C access path)]``
    (paths like ``.a``, ``.in.x``, ``.arr[3]``, ``.u.f``), arrays of up to 64 elements
    expanded, at most ``limit`` leaves."""
    out: list[tuple[int, int, Any, str]] = []

    def walk(t: Any, off: int, p: str, depth: int) -> None:
        if len(out) >= limit or depth > MAX_DEPTH * 2:
            return
        r = _resolve(t, env)
        if r[0] in ("rec", "anon"):
            rl = record_layout(r, env)
            for f in rl["fields"]:
                walk(f["type"], off + f["offset"], p + (f".{f['name']}" if f["name"] else ""), depth + 1)
        elif r[0] == "arr":
            if r[2] is None:
                return
            es = layout(r[1], env)[0]
            for k in range(min(r[2], 64)):
                walk(r[1], off + k * es, f"{p}[{k}]", depth + 1)
        else:
            out.append((off, layout(r, env)[0], r, p))

    walk(t, base, path, 0)
    return out


def scalar_class(t: Any, env: Env) -> str:
    """``int``/``uint``/``float``/``ptr``/``enum``/``bool``/``void``/``record``/``array``/``fn``."""
    r = _resolve(t, env)
    if r[0] == "prim":
        return PRIMS[r[1]][2]
    return {"ptr": "ptr", "enum": "enum", "rec": "record", "anon": "record", "arr": "array",
            "fn": "fn"}[r[0]]


def repr_ctype(t: Any, env: Env) -> str | None:
    """The fixed-width C type of a scalar as the lifter's memory accesses see it
    (``int32_t`` for pointers, enums and ints, ``uint8_t`` for unsigned char ...)."""
    r = _resolve(t, env)
    cls = scalar_class(r, env)
    if cls in ("ptr", "enum"):
        return "int32_t"
    if cls == "float":
        return {4: "float", 8: "double"}.get(layout(r, env)[0])
    if cls in ("int", "uint", "bool"):
        size = layout(r, env)[0]
        if size >= 4:
            return {4: "int32_t", 8: "int64_t"}.get(size)
        return ("uint" if cls in ("uint", "bool") else "int") + f"{size * 8}_t"
    return None


# ------------------------------------------------------------------------------ printing


def type_text(t: Any) -> str:
    """A type as a C type name: ``struct sqlite3 *``, ``char [16]``, ``int (*)(int)``."""
    return decl_text(t, None)


def _spec(t: Any) -> str:
    k = t[0]
    if k == "prim":
        return t[1]
    if k == "name":
        return t[1]
    if k == "rec":
        return f"{t[1]} {t[2]}"
    if k == "enum":
        return f"enum {t[1]}"
    if k == "anon":
        return _record_def(t[1], None, t[2], dict(t[3]))
    raise CDeclError(f"no specifier for {k}")


def decl_text(t: Any, name: str | None) -> str:
    """``t`` declaring ``name`` (``char *s``, ``int a[4]``, ``int (*cb)(int)``)."""
    inner = name or ""
    while True:
        k = t[0]
        if k == "ptr":
            inner = "*" + inner
            t = t[1]
        elif k == "arr":
            if inner.startswith("*"):
                inner = f"({inner})"
            inner = f"{inner}[{'' if t[2] is None else t[2]}]"
            t = t[1]
        elif k == "fn":
            if inner.startswith("*"):
                inner = f"({inner})"
            ps = ", ".join(decl_text(pt, pn) for pn, pt in t[2])
            if t[3]:
                ps = f"{ps}, ..." if ps else "..."
            inner = f"{inner}({ps or 'void'})"
            t = t[1]
        else:
            spec = _spec(t)
            return f"{spec} {inner}".rstrip() if inner else spec


def _attr_text(attrs: dict[str, Any]) -> str:
    out = []
    if attrs.get("packed"):
        out.append("packed")
    if attrs.get("aligned"):
        out.append(f"aligned({int(attrs['aligned'])})")
    return f"__attribute__(({', '.join(out)})) " if out else ""


def _record_def(kind: str, tag: str | None, fields: tuple, attrs: dict[str, Any]) -> str:
    members = []
    for name, ft, fattrs in fields:
        fa = _attr_text(dict(fattrs)).strip()
        members.append(decl_text(ft, name) + (f" {fa}" if fa else "") + ";")
    head = f"{kind} {_attr_text(attrs)}{tag + ' ' if tag else ''}"
    return f"{head}{{ {' '.join(members)} }}" if members else f"{head}{{ }}"


def print_decl(d: Decl) -> str:
    """One canonical declaration of ``d`` (one line, ends with ``;``)."""
    if d.kind in ("struct", "union"):
        if d.body is None:
            return f"{d.kind} {d.name};"
        fields, attrs = d.body
        return _record_def(d.kind, d.name, fields, dict(attrs)) + ";"
    if d.kind == "enum":
        if d.body is None:
            return f"enum {d.name};"
        items = ", ".join(f"{n} = {v}" for n, v in d.body)
        return f"enum {d.name} {{ {items} }};"
    return f"typedef {decl_text(d.body, d.name)};"


def references(d: Decl) -> set[str]:
    """Keys of the named types ``d``'s definition mentions (``struct foo``, ``u8``...)."""
    out: set[str] = set()

    def walk(t: Any, depth: int = 0) -> None:
        if depth > 200:
            return
        k = t[0]
        if k == "name":
            out.add(t[1])
        elif k == "rec":
            out.add(f"{t[1]} {t[2]}")
        elif k == "enum":
            out.add(f"enum {t[1]}")
        elif k in ("ptr", "arr"):
            walk(t[1], depth + 1)
        elif k == "fn":
            walk(t[1], depth + 1)
            for _n, pt in t[2]:
                walk(pt, depth + 1)
        elif k == "anon":
            for _n, ft, _a in t[2]:
                walk(ft, depth + 1)

    if d.kind in ("struct", "union") and d.body:
        for _n, ft, _a in d.body[0]:
            walk(ft)
    elif d.kind == "typedef":
        walk(d.body)
    out.discard(d.key)
    return out


def summary(d: Decl, env: Env) -> dict[str, Any]:
    """A JSON-able description: ``{kind, name, text, size, align, fields, enumerators}``."""
    out: dict[str, Any] = {"kind": d.kind, "name": d.name, "text": print_decl(d)}
    if d.kind in ("struct", "union") and d.body is not None:
        rl = record_layout(("rec", d.kind, d.name), env)
        out.update(size=rl["size"], align=rl["align"], fields=[
            {"name": f["name"], "type": type_text(f["type"]), "offset": f["offset"], "size": f["size"]}
            for f in rl["fields"]])
    elif d.kind == "enum":
        out.update(size=4, align=4, enumerators=[[n, v] for n, v in (d.body or ())])
    elif d.kind == "typedef":
        out["type"] = type_text(d.body)
        try:
            s, a = layout(d.body, env)
            out.update(size=s, align=a)
        except CDeclError:
            out.update(size=None, align=None)
    return out


# ------------------------------------------------------------------------------ prototypes


def parse_prototype(text: str, env: Env | None = None) -> dict[str, Any]:
    """``int f(struct sqlite3 *db, const char *zSql)`` -> ``{name, ret, params: [(name,
    type)], variadic}`` (types as tuples)."""
    if not isinstance(text, str) or not text.strip():
        raise CDeclError("empty prototype")
    if len(text) > 4096:
        raise CDeclError("prototype longer than 4096 characters")
    p = _Parser(text.strip().rstrip(";"), (env or Env()).copy())
    base, _storage = p.specifiers({})
    name, ty = p.declarator(base, abstract=True)
    if p.tok.kind != "eof":
        raise p.err("unexpected text after the prototype")
    if ty[0] != "fn":
        raise CDeclError("not a prototype: expected RET NAME(PARAMS)")
    return {"name": name, "ret": ty[1], "params": list(ty[2]), "variadic": ty[3]}


def wasm_lowering(t: Any, env: Env, *, ret: bool = False) -> list[str]:
    """The wasm value types a C type becomes under the wasm32 C ABI (``[]`` for void; a
    struct by value: its single scalar, else a pointer, or for a result a hidden first
    parameter written ``["sret"]``)."""
    r = _resolve(t, env)
    cls = scalar_class(r, env)
    if cls == "void":
        return []
    if cls in ("ptr", "enum", "array", "fn"):
        return ["i32"]
    if cls == "float":
        size = layout(r, env)[0]
        return {4: ["f32"], 8: ["f64"]}.get(size, ["sret"] if ret else ["i64", "i64"])
    if cls in ("int", "uint", "bool"):
        return ["i64"] if layout(r, env)[0] == 8 else ["i32"]
    # a record by value
    ls = leaves(r, env, limit=3)
    if len(ls) == 1 and layout(r, env)[0] == ls[0][1]:
        return wasm_lowering(ls[0][2], env, ret=ret)
    return ["sret"] if ret else ["i32"]


def check_signature(proto: dict[str, Any], params: list[str], results: list[str], env: Env) -> str | None:
    """Why ``proto`` disagrees with the wasm signature ``(params) -> results`` (None: fits)."""
    want_p: list[str] = []
    ret = wasm_lowering(proto["ret"], env, ret=True)
    want_r = ret
    if ret == ["sret"]:
        want_p.append("i32")
        want_r = []
    for _n, pt in proto["params"]:
        want_p += wasm_lowering(pt, env)
    if proto["variadic"]:
        want_p.append("i32")
    sig = f"({', '.join(params)}) -> {', '.join(results) or '()'}"
    if want_p != list(params):
        return f"the C parameters lower to ({', '.join(want_p)}), the wasm signature is {sig}"
    if want_r != list(results):
        return f"the C result lowers to ({', '.join(want_r)}), the wasm signature is {sig}"
    return None
