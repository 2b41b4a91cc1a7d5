"""Typed views of the locals a function dereferences (issue 28 point 4,
kbtool/lift/lifter/views.py): ``P0->field_8`` through ``#define P0 ((struct f_p0_view *)(M + p0))``
instead of ``*(int32_t *)(M + p0 + 8)``, raw memory where one offset has two widths, and the
same behaviour as the wasm under gcc and wasmtime."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from kbtool.lift import Names, lift_function, prelude_path, prepare
from tests.support import lift_sem

pytestmark = pytest.mark.skipif(
    not (shutil.which("wat2wasm") and shutil.which("gcc")), reason="needs wat2wasm and gcc"
)

VIEWS_WAT = """(module
  (memory (export "memory") 1)
  ;; a record read with several widths: P0->field_N, a signed read of an unsigned field
  (func $rec (export "rec") (param $p i32) (result i32)
    local.get $p
    local.get $p
    i32.load offset=4
    i32.store offset=8
    local.get $p
    i32.load8_u offset=12
    local.get $p
    i32.load8_u offset=12
    i32.add
    local.get $p
    i32.load8_s offset=12
    i32.add
    local.get $p
    i64.load offset=16
    i32.wrap_i64
    i32.add)
  ;; a byte walk: the local is reassigned, the view follows it
  (func $len (export "len") (param $p i32) (result i32)
    (local $q i32)
    local.get $p
    local.set $q
    block $done
      loop $next
        local.get $q
        i32.load8_u
        i32.eqz
        br_if $done
        local.get $q
        i32.const 1
        i32.add
        local.set $q
        br $next
      end
    end
    local.get $q
    local.get $p
    i32.sub)
  ;; one offset read with two widths: raw memory at that offset, the others a view
  (func $mixed (export "mixed") (param $p i32) (result i32)
    local.get $p
    i32.load16_s offset=2
    local.get $p
    i32.load offset=2
    i32.add
    local.get $p
    i32.load offset=8
    i32.add
    local.get $p
    i32.load offset=12
    i32.add)
  ;; an unsigned shift of a field the function reads signed elsewhere
  (func $shr (export "shr") (param $p i32) (result i32)
    local.get $p
    local.get $p
    i32.load offset=4
    i32.const 3
    i32.shr_u
    i32.store offset=4
    local.get $p
    i32.load offset=4
    i32.const 1
    i32.shr_s)
)
"""

#: records, a linked walk, a byte buffer and a union: every width, both signednesses, the
#: read-modify-write forms (`r->u >>= 1`), pointers reassigned in loops
VIEWS_C = r"""
struct rec { int a; unsigned char tag; signed char s; short h; long long q; struct rec *next;
             unsigned u; };
static struct rec recs[8];
static char buf[64];

__attribute__((noinline)) static int touch(struct rec *r, int v) {
  r->a += v; r->tag = (unsigned char)(r->tag + v); r->s = (signed char)(r->s - v);
  r->h ^= (short)(v * 77); r->q = r->q * 3 + v; r->u >>= 1; r->u += (unsigned)v * 2654435761u;
  return r->a + r->tag + r->s + r->h + (int)(r->q >> 7) + (int)(r->u >> 2) + (signed char)r->tag;
}

int link(int n) {
  for (int i = 0; i < 8; i++) recs[i].next = (i * n) & 1 ? 0 : &recs[(i * n + 1) & 7];
  return n;
}

int walk(int start, int steps) {
  struct rec *r = &recs[start & 7];
  int s = 0;
  for (int i = 0; i < (steps & 31); i++) {
    s += touch(r, i + start);
    r = r->next ? r->next : recs;
  }
  return s;
}

int fill(int n, int c) {
  int i;
  for (i = 0; i < (n & 63); i++) buf[i] = (char)(c + i * 13);
  buf[n & 63] = 0;
  buf[63] = 0;
  return i;
}

int slen(int off) {
  const char *s = buf + (off & 31), *q = s;
  while (*q) q++;
  return (int)(q - s);
}

int mixed(int k) {
  union u { int i; short h[2]; unsigned char b[4]; } *u = (union u *)&recs[k & 7];
  u->h[1] += (short)k;
  return u->i + u->h[1] + u->b[3] + (signed char)u->b[0];
}
"""


def _lift(tmp_path) -> dict[str, str]:
    lm = prepare(lift_sem.wat(tmp_path, VIEWS_WAT))
    return {lm.func_c[f]: lift_function(lm, f).text for f in range(lm.module.num_functions)}


def test_a_record_reads_as_fields_of_its_view(tmp_path):
    rec = _lift(tmp_path)["rec"]
    assert "#define P0 ((struct rec_p0_view *)(M + p0))\n" in rec
    # fields at their offsets, the bytes between them as padding; several per line
    assert (
        "struct __attribute__((packed)) rec_p0_view {\n"
        "  uint8_t _pad0[4]; int32_t field_4; int32_t field_8; uint8_t field_12; "
        "uint8_t _pad13[3];\n  int64_t field_16;\n};\n"
    ) in rec
    assert "P0->field_8 = P0->field_4;" in rec
    # the loads decide the type (two unsigned reads, one signed): the signed one is cast
    assert "P0->field_12 + P0->field_12 + (int8_t)P0->field_12" in rec
    assert "(M + p0" not in rec.split("{", 2)[2]  # no raw access left in the body
    assert rec.rstrip().endswith("}\n#undef P0")


def test_a_byte_walk_reads_through_an_element_pointer(tmp_path):
    ln = _lift(tmp_path)["len"]
    # the local is reassigned in the loop: the macro reads its current value at each use
    assert "#define L1 ((uint8_t *)(M + l1))\n" in ln
    assert re.search(r"for \(l1 = p0; \*L1; l1\+\+\)", ln), ln


def test_two_widths_at_one_offset_share_a_union(tmp_path):
    mixed = _lift(tmp_path)["mixed"]
    assert "return P0->field_2 + P0->field_2_i32 + P0->field_8 + P0->field_12;" in mixed
    assert (
        "union __attribute__((packed)) { int16_t field_2; int32_t field_2_i32; };\n"
        "  uint8_t _pad6[2]; int32_t field_8;"
    ) in mixed
    assert "(M + p0 +" not in mixed


def test_an_unsigned_shift_of_a_signed_field_keeps_its_cast(tmp_path):
    shr = _lift(tmp_path)["shr"]
    assert "P0->field_4 = (uint32_t)P0->field_4 >> 3;" in shr
    assert "return P0->field_4 >> 1;" in shr


def test_views_compile_and_do_not_leak_between_functions(tmp_path):
    texts = _lift(tmp_path)
    src = tmp_path / "views.c"
    # every field at the offset it was read at, a later member of a union too
    offsets = [
        ("rec_p0_view", "field_4", 4),
        ("rec_p0_view", "field_12", 12),
        ("rec_p0_view", "field_16", 16),
        ("mixed_p0_view", "field_2", 2),
        ("mixed_p0_view", "field_2_i32", 2),
        ("mixed_p0_view", "field_12", 12),
    ]
    checks = "".join(
        f'_Static_assert(__builtin_offsetof(struct {t}, {f}) == {o}, "{t}.{f}");\n'
        for t, f, o in offsets
    )
    src.write_text("".join(texts.values()) + checks)
    p = subprocess.run(
        ["gcc", "-fsyntax-only", "-Werror", "-Wno-unused", "-include", prelude_path(), str(src)],
        capture_output=True,
        text=True,
    )
    assert p.returncode == 0, p.stderr[:2000]  # `#define P0` twice would be redefined


@pytest.mark.skipif(
    not (shutil.which("clang") and shutil.which("wasm-ld")), reason="needs clang and wasm-ld"
)
def test_views_behave_like_the_wasm(tmp_path):
    pytest.importorskip("wasmtime")
    r = lift_sem.check(tmp_path, VIEWS_C, "-O2", calls=24)
    assert not r.mismatches, r.mismatches[:5]
    assert r.memory_same and r.agree >= 100
    whole = "".join(r.c.values())
    assert "->field_" in whole and re.search(r"#define \w+ \(\(struct \w+ \*\)\(M \+ ", whole)


def test_a_view_never_redefines_a_prelude_macro(tmp_path):
    data = lift_sem.wat(tmp_path, VIEWS_WAT)
    lm = prepare(data, Names(locals={0: {0: "ref_null"}, 2: {0: "kb_sat"}, 1: {0: "s"}}))
    rec = lift_function(lm, 0).text
    assert "#define V_ref_null ((struct f0_ref_null_view *)(M + ref_null))" in rec
    assert "V_ref_null->field_8 = V_ref_null->field_4;" in rec and "REF_NULL" not in rec
    assert "#define V_kb_sat " in lift_function(lm, 2).text
    # a local without a reserved name keeps its upper-cased one
    assert "#define L1 ((uint8_t *)(M + l1))\n" in lift_function(lm, 1).text
