"""The C declaration parser (kbtool.analysis.cdecl): layouts against clang's wasm32 ones,
print/parse round trips (hypothesis), prototypes against wasm signatures, bounded bad input."""

from __future__ import annotations

import random
import shutil
import subprocess

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kbtool.analysis import cdecl as cd

PRIMS = [
    "char",
    "signed char",
    "unsigned char",
    "short",
    "unsigned short",
    "int",
    "unsigned int",
    "long",
    "unsigned long",
    "long long",
    "unsigned long long",
    "float",
    "double",
    "long double",
    "_Bool",
    "int8_t",
    "uint16_t",
    "uint32_t",
    "int64_t",
    "size_t",
    "u8",
]


def _layout_of(text: str) -> list:
    env = cd.Env()
    out = []
    for d in cd.parse_decls(text, env):
        if d.kind in ("struct", "union") and d.body is not None:
            rl = cd.record_layout(("rec", d.kind, d.name), env)
            out.append(
                (
                    d.key,
                    rl["size"],
                    rl["align"],
                    [(f["name"], f["offset"], f["size"]) for f in rl["fields"]],
                )
            )
    return out


def _random_header(rng: random.Random, n: int) -> tuple[str, list[str]]:
    """``n`` random structs/unions (arrays, pointers, nested earlier ones, anonymous members,
    packed, aligned), each using only the ones before it."""
    names: list[str] = []
    parts = []
    for k in range(n):
        kind = rng.choice(["struct", "struct", "struct", "union"])
        fields = []
        for j in range(rng.randint(1, 7)):
            roll = rng.random()
            if roll < 0.5 or not names:
                ty = rng.choice(PRIMS)
            elif roll < 0.75:
                ty = names[rng.randrange(len(names))]
            else:
                ty = rng.choice(PRIMS + names) + " *"
            decl = f"{ty} f{j}"
            if rng.random() < 0.2:
                decl += f"[{rng.randint(1, 5)}]"
            if rng.random() < 0.1:
                decl += f" __attribute__((aligned({rng.choice([1, 2, 4, 8, 16])})))"
            fields.append(decl + ";")
        if rng.random() < 0.15:
            fields.append(f"union {{ int a{k}; double b{k}; }};")
        attr = ""
        r = rng.random()
        if r < 0.2:
            attr = "__attribute__((packed)) "
        elif r < 0.3:
            attr = f"__attribute__((aligned({rng.choice([2, 8, 16, 32])}))) "
        name = f"{kind} {attr}T{k}"
        parts.append(f"{name} {{ {' '.join(fields)} }};")
        names.append(f"{kind} T{k}")
    return "typedef unsigned char u8;\n" + "\n".join(parts), names


CLANG = shutil.which("clang")


@pytest.mark.skipif(CLANG is None, reason="clang is not installed")
def test_layouts_agree_with_clang_wasm32(tmp_path):
    rng = random.Random(27)
    header, _names = _random_header(rng, 120)
    layouts = _layout_of(header)
    assert len(layouts) == 120
    asserts = []
    for key, size, align, fields in layouts:
        asserts.append(f'_Static_assert(sizeof({key}) == {size}, "{key} size");')
        asserts.append(f'_Static_assert(_Alignof({key}) == {align}, "{key} align");')
        for name, off, _fs in fields:
            if name:
                asserts.append(
                    f'_Static_assert(__builtin_offsetof({key}, {name}) == {off}, "{key}.{name}");'
                )
    src = tmp_path / "check.c"
    src.write_text(
        "typedef signed char int8_t; typedef unsigned short uint16_t; typedef unsigned int uint32_t;\n"
        "typedef long long int64_t; typedef unsigned long size_t;\n"
        + header
        + "\n"
        + "\n".join(asserts)
        + "\n"
    )
    r = subprocess.run(
        [CLANG, "--target=wasm32-wasi", "-std=c11", "-fsyntax-only", "-nostdinc", str(src)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr[:3000]
    assert len(asserts) > 500


@st.composite
def headers(draw):
    seed = draw(st.integers(0, 1 << 30))
    n = draw(st.integers(1, 8))
    return _random_header(random.Random(seed), n)[0]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(headers())
def test_print_parse_round_trip(header):
    """declaration -> layout -> printed declaration -> the same layout (and the same text)."""
    env = cd.Env()
    decls = cd.parse_decls(header, env)
    printed = "\n".join(cd.print_decl(d) for d in decls)
    assert _layout_of(printed) == _layout_of(header)
    env2 = cd.Env()
    again = "\n".join(cd.print_decl(d) for d in cd.parse_decls(printed, env2))
    assert again == printed


def test_nested_types_offsets_and_summary():
    env = cd.Env()
    decls = cd.parse_decls(
        """
        // a comment, and a preprocessor line are skipped
        #include <stdint.h>
        typedef struct sqlite3 sqlite3;
        enum state { OPEN, BUSY = 4, CLOSED };
        struct Db { char *zName; void *pBt; };
        struct sqlite3 {
            sqlite3 *next; int flags; u8 mallocFailed; struct Db aDb[2]; long long lastRowid;
            int (*xBusy)(void *, int); union { int i; float f; } u; enum state eOpenState;
            struct { short a, b; } pair;
        };
    """,
        env,
    )
    s = cd.summary([d for d in decls if d.key == "struct sqlite3" and d.body][0], env)
    offs = {f["name"]: (f["offset"], f["size"], f["type"]) for f in s["fields"]}
    assert offs["mallocFailed"] == (8, 1, "u8")
    assert offs["aDb"] == (12, 16, "struct Db [2]")
    assert offs["lastRowid"] == (32, 8, "long long")
    assert offs["xBusy"] == (40, 4, "int (*)(void *, int)")
    assert (
        offs["u"][:2] == (44, 4)
        and offs["eOpenState"][:2] == (48, 4)
        and offs["pair"][:2] == (52, 4)
    )
    assert s["size"] == 56 and s["align"] == 8
    leaves = {p: (o, sz) for o, sz, _t, p in cd.leaves(("rec", "struct", "sqlite3"), env)}
    assert leaves[".aDb[1].pBt"] == (24, 4)
    assert leaves[".u.f"] == (44, 4) and leaves[".pair.b"] == (54, 2)


@pytest.mark.parametrize(
    "text, where",
    [
        ("struct a { int x : 3; };", "bit-fields are not supported"),
        ("struct a { int x; ", "line 1"),
        ("struct a { foo x; };", "unknown type name 'foo'"),
        ("struct a { int x; }; /* open", "unterminated comment"),
        ("struct a { struct a self; };", "contains itself"),
        ("int x;", "only types can be declared"),
        ("struct b { int a[-1]; };", "array size -1"),
        ("struct c { int x; int x; };", "duplicate member 'x'"),
        ("struct d { int a[]; int b; };", "flexible array member"),
        ("struct e { long long long x; };", "invalid type"),
        ("struct f { int x; } \x07", "unexpected character"),
        ("struct g { " + "struct { " * 40 + "int x;" + " } y;" * 40 + " };", "nested deeper"),
    ],
)
def test_bad_declarations_one_line_errors(text, where):
    with pytest.raises(cd.CDeclError) as exc:
        cd.parse_decls(text)
    msg = str(exc.value)
    assert where in msg and "\n" not in msg


def test_bounded_input():
    with pytest.raises(cd.CDeclError, match="longer than"):
        cd.parse_decls("struct a { int x; };" * 20000)


def test_prototypes_against_wasm_signatures():
    env = cd.Env()
    cd.parse_decls(
        "struct sqlite3 { int a; }; struct one { double d; }; struct two { int a, b; };"
        " typedef struct sqlite3 sqlite3;",
        env,
    )
    p = cd.parse_prototype("int f(sqlite3 *db, const char *zSql)", env)
    assert p["name"] == "f" and [n for n, _t in p["params"]] == ["db", "zSql"]
    assert cd.check_signature(p, ["i32", "i32"], ["i32"], env) is None
    assert "lower to (i32, i32)" in cd.check_signature(p, ["i32"], ["i32"], env)
    p = cd.parse_prototype("long long g(double x, float y, unsigned long long z, ...)", env)
    assert cd.check_signature(p, ["f64", "f32", "i64", "i32"], ["i64"], env) is None
    p = cd.parse_prototype("struct two h(struct one a, struct two b)", env)  # sret; single scalar
    assert cd.check_signature(p, ["i32", "f64", "i32"], [], env) is None
    p = cd.parse_prototype("void cb(int (*fn)(void *, int), enum e k)", env)
    assert cd.check_signature(p, ["i32", "i32"], [], env) is None
    with pytest.raises(cd.CDeclError, match="unknown type name"):
        cd.parse_prototype("int f(mystery *m)", env)
    with pytest.raises(cd.CDeclError, match="not a prototype"):
        cd.parse_prototype("int x", env)
