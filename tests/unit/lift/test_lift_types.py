"""Types of lifted locals and values (issue 28.4): a local read unsigned more often than
signed is ``uint32_t`` (its ``(uint32_t)`` casts go, a signed read casts back), a local
that only ever holds comparison results is ``bool``, and an unsigned operation's result
keeps its unsigned C type instead of a cast back to ``int32_t``. The C stays exact: gcc
against wasmtime on clang output at -O0/-O1/-O2 and on hand-written wat."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from kbtool.lift import prelude_path
from tests.support import lift_sem
from tests.support.paths import FIXTURES

pytest.importorskip("wasmtime")
FIX = FIXTURES / "lift"
needs_clang = pytest.mark.skipif(
    not (shutil.which("clang") and shutil.which("wasm-ld") and shutil.which("gcc")),
    reason="needs clang, wasm-ld and gcc",
)
needs_wat = pytest.mark.skipif(
    not (shutil.which("wat2wasm") and shutil.which("gcc")), reason="needs wat2wasm and gcc"
)
_CAST = re.compile(r"\((?:u?int(?:32|64)_t)\)")


@needs_clang
@pytest.mark.parametrize("opt", ["-O0", "-O1", "-O2"])
def test_typed_locals_keep_semantics(tmp_path, opt):
    r = lift_sem.check(tmp_path, (FIX / "types.c").read_text(), opt=opt, calls=24)
    assert not r.mismatches, r.mismatches[:5]
    assert r.memory_same
    assert r.agree == 24 * 11  # the 11 exported functions, every call
    text = "".join(r.c.values())
    if opt != "-O0":  # -O0 keeps values in the frame, not in locals
        assert re.search(r"\buint32_t l\d+ = 0", text), text
        assert re.search(r"\bbool l\d+ = false", text), text


@needs_clang
def test_unsigned_local_reads_without_casts(tmp_path):
    r = lift_sem.check(tmp_path, (FIX / "types.c").read_text(), opt="-O2", calls=8)
    h = r.c["hash_str"]
    # the FNV hash is unsigned all through: no cast on its final expression
    m = re.search(r"return (l\d+) % 1000003 \+ \((l\d+) >> 29\);", h)
    assert m and m.group(1) == m.group(2), h
    assert f"uint32_t {m.group(1)} = 0" in h or re.search(rf"uint32_t .*\b{m.group(1)} = 0", h), h
    d = r.c["digits_u"]  # the loop's exit test kept in a local is a bool
    assert re.search(r"bool l\d+ = false;", d) and re.search(r"l\d+ = \(uint32_t\)p0 > 99;", d), d


@needs_wat
def test_sign_shapes_from_wat(tmp_path):
    data = lift_sem.wat(tmp_path, (FIX / "types.wat").read_text())
    r = lift_sem.check_wasm(tmp_path, data, calls=24)
    assert not r.mismatches, r.mismatches[:5]
    assert r.agree == 6 * 24
    no = r.c["neg_offset"]
    assert "uint32_t l2 = 0;" in no and "M + (l2 + 80)" in no, no  # the sum wraps like wasm
    mu = r.c["mostly_u"]
    assert "uint32_t l2 = 0;" in mu, mu
    # unsigned reads need no cast; the signed ones cast back to int32_t
    for part in (
        "l2 < p1",  # C converts p1 to l2's unsigned type itself
        "l2 / 3",
        "l2 >> 4",
        "l2 + 1 > 9",
        "(int32_t)l2 < p1",
        "(int32_t)l2 / 7",
        "(uint64_t)(int32_t)l2 >> 33",  # extend_s then read unsigned: one extension
    ):
        assert part in mu, (part, mu)
    us = r.c["u_results_signed"]
    # an unsigned result read by a signed operation is cast back at that use only
    assert "(int32_t)((uint32_t)p0 >> 1) < p1" in us, us
    assert "(int32_t)((uint32_t)p0 / (p1 | 1)) >> 2" in us, us  # one cast makes it unsigned
    uf = r.c["u_to_float"]
    assert "(double)(l1 / 3)" in uf and "(double)(int32_t)(l1 << 1)" in uf and "(double)l1" in uf, (
        uf
    )
    sm = r.c["select_mix"]
    # unsigned select: extend_u needs no (uint32_t); the other side, widened next to it,
    # keeps only its signed reading (int32_t)
    assert "return (int64_t)(l2 < 50 ? l2 : p1) + (int32_t)(l2 >= p1 ? l2 : p1);" in sm, sm
    b = r.c["bool_local"]
    assert "bool l2 = false;" in b and "if (!l2) l2 = true;" in b and "if (l2) " in b, b
    assert "int32_t l3 = 0;" in b, b  # a counter is not a bool
    assert len(_CAST.findall(b)) == 0, b


@needs_wat
def test_bool_only_when_every_value_is_0_or_1(tmp_path):
    wat = """(module
      (func (export "f") (param $a i32) (param $b i32) (result i32)
        (local $f i32) (local $g i32)
        (local.set $f (i32.lt_s (local.get $a) (local.get $b)))
        (local.set $g (i32.lt_s (local.get $b) (local.get $a)))
        (if (i32.gt_s (local.get $a) (i32.const 100)) (then (local.set $g (local.get $a))))
        (local.set $f (i32.or (local.get $f) (local.get $g)))
        (i32.add (i32.mul (local.get $f) (i32.const 3)) (local.get $g))))"""
    r = lift_sem.check_wasm(tmp_path, lift_sem.wat(tmp_path, wat), calls=24)
    assert not r.mismatches, r.mismatches[:5]
    f = r.c["f"]
    # $g also holds $a, and $f holds $f | $g: neither is a bool
    assert "bool" not in f, f


def test_prelude_has_bool():
    assert "#include <stdbool.h>" in Path(prelude_path()).read_text()
