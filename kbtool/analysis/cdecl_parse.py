"""The C declaration parser: struct, union, enum and typedef declarations and type names, bounded
in depth and count, every error one line with its position (:mod:`kbtool.analysis.cdecl`).
"""

from __future__ import annotations

import re
from typing import Any

from kbtool.analysis.cdecl_layout import _resolve, layout
from kbtool.analysis.cdecl_tokens import (
    _PRIM_WORDS,
    _QUALS,
    _STORAGE,
    KEYWORDS,
    MAX_DEPTH,
    MAX_ENUMERATORS,
    MAX_FIELDS,
    MAX_NAME,
    MAX_SIZE,
    MAX_TYPES,
    CDeclError,
    Decl,
    Env,
    Tok,
    tokenize,
)


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
            while (
                self.tok.kind == "op"
                and self.tok.text in self._BIN
                and self._BIN[self.tok.text] > prec
            ):
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
        r = {
            "|": lambda: a | b,
            "^": lambda: a ^ b,
            "&": lambda: a & b,
            "<<": lambda: a << b,
            ">>": lambda: a >> b,
            "+": lambda: a + b,
            "-": lambda: a - b,
            "*": lambda: a * b,
            "/": lambda: int(a / b),
            "%": lambda: a - int(a / b) * b,
        }[op]()
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
            return (
                int(t.text.rstrip("uUlL"), 0)
                if not re.fullmatch(r"0[0-7]+[uUlL]*", t.text)
                else int(t.text.rstrip("uUlL"), 8)
            )
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
        return (
            t.text in _PRIM_WORDS
            or t.text in _QUALS
            or t.text in ("struct", "union", "enum", "__attribute__")
            or self.env.typedef(t.text) is not None
        )

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
                    raise self.err(
                        "bit-fields are not supported: declare the integer that holds them"
                    )
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
            while (
                self.tok.text == "*" or self.tok.text in _QUALS or self.tok.text == "__attribute__"
            ):
                if self.tok.text == "__attribute__":
                    self.attributes({})
                    continue
                if self.take().text == "*":
                    ptrs += 1
            inner = None
            name = None
            if self.tok.text == "(" and (
                self.peek().text in ("*", "(")
                or (self.peek().kind == "id" and not self._is_type_word(self.peek().text))
            ):
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
        return (
            w in _PRIM_WORDS
            or w in _QUALS
            or w in ("struct", "union", "enum")
            or self.env.typedef(w) is not None
        )

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
                    raise self.err(
                        "an anonymous struct or union declares nothing (give it a tag or a typedef)"
                    )
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
                    raise self.err(
                        "only types can be declared here (struct, union, enum, typedef)"
                        " — a variable or a function belongs elsewhere"
                    )
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
