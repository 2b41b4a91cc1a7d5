"""Line comments (issue 27: knowledge at an instruction offset) stand in the lifted C above
the statement of their instruction, indented like it, not at the top of the body; an
offset that starts no instruction is still shown (at the top); the text is escaped and the
C still compiles with the prelude."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from kbtool.lift import Names, lift_function, prelude_path, prepare
from kbtool.wasm.instr import decode_one, read_local_decls
from kbtool.wasm.opcodes import MNEMONICS
from tests.support import lift_sem

needs_wat = pytest.mark.skipif(not shutil.which("wat2wasm"), reason="needs wat2wasm")

WAT = """
(module
  (memory (export "memory") 1)
  (func (export "fill") (param $p i32) (param $n i32) (result i32) (local $i i32)
    (i32.store (local.get $p) (i32.const 7))
    (loop $L
      (if (i32.lt_s (local.get $i) (local.get $n))
        (then
          (i32.store8 (i32.add (local.get $p) (local.get $i)) (i32.const 0))
          (local.set $i (i32.add (local.get $i) (i32.const 1)))
          (br $L))))
    (call $g (local.get $i)))
  (func $g (param i32) (result i32) (i32.mul (local.get 0) (i32.const 3))))
"""


SWITCH_WAT = """
(module
  (func (export "sw") (param $x i32) (result i32) (local $r i32)
    (block $d
      (block $c2
        (block $c1
          (block $c0
            (br_table $c0 $c1 $c2 $d (i32.and (local.get $x) (i32.const 3))))
          (local.set $r (i32.const 10))
          (br $d))
        (local.set $r (i32.add (local.get $x) (i32.const 7))))
      (local.set $r (i32.mul (local.get $r) (i32.const 3))))
    (select (local.get $r) (i32.const 1) (local.get $x)))
  (func (export "tern") (param $c i32) (param $a i32) (result i32)
    (if (result i32) (local.get $c)
      (then (i32.add (local.get $a) (i32.const 1)))
      (else (i32.const 5))))
  (func (export "dw") (param $x i32) (result i32) (local $k i32)
    (loop $L
      (local.set $k (i32.add (local.get $k) (i32.const 1)))
      (local.set $x (i32.div_u (local.get $x) (i32.const 10)))
      (br_if $L (local.get $x)))
    (local.get $k)))
"""


def _instrs(lm, fi: int) -> list[tuple[int, str]]:
    start, end = lm.module.code[fi - lm.module.num_func_imports]
    _d, p = read_local_decls(lm.data, start, end)
    out = []
    while p < end:
        op, q, _imms = decode_one(lm.data, p, end)
        out.append((p, MNEMONICS[op]))
        p = q
    return out


def _lift_with(data: bytes, fi: int, notes: dict[int, str]) -> str:
    lm = prepare(data, Names(line_comments={fi: notes}))
    return lift_function(lm, fi).text


@needs_wat
def test_line_comments_stand_above_their_statements(tmp_path):
    data = lift_sem.wat(tmp_path, WAT)
    plain = lift_function(prepare(data, Names()), 0).text
    ins = _instrs(prepare(data), 0)
    const7 = next(p for p, m in ins if m == "i32.const")  # the value the first store writes
    store8 = next(p for p, m in ins if m == "i32.store8")  # inside the loop
    call = next(p for p, m in ins if m == "call")
    text = _lift_with(
        data,
        0,
        {
            const7: "the magic */ value",
            store8: "clear one byte",
            call: "scale the count",
            const7 + 1: "not an instruction start",
        },
    )
    rows = text.splitlines()

    def above(note: str) -> tuple[str, str]:
        k = next(k for k, r in enumerate(rows) if note in r)
        return rows[k], rows[k + 1]

    c, stmt = above("the magic")
    assert c.strip() == f"/* @{const7:06x}: the magic *\\/ value */"
    assert stmt.strip() == "*P0 = 7;"
    c, stmt = above("clear one byte")
    assert "= 0;" in stmt and "(uint8_t *)" in stmt or "(int8_t *)" in stmt
    ind = len(stmt) - len(stmt.lstrip())
    assert ind >= 4 and len(c) - len(c.lstrip()) == ind  # indented like its statement
    c, stmt = above("scale the count")
    assert stmt.strip().startswith("return ") and "(l2)" in stmt
    # not an instruction start: still shown, at the top of the body
    sig = next(k for k, r in enumerate(rows) if r.endswith(") {") and not r.startswith(" "))
    loose = next(k for k, r in enumerate(rows) if "not an instruction start" in r)
    assert loose > sig and all(
        not r.strip().startswith(("*(", "while", "for")) for r in rows[sig + 1 : loose]
    )
    # comments only: without them the text is the plain lift
    assert "\n".join(r for r in rows if "/* @" not in r) + "\n" == plain
    gcc = shutil.which("gcc") or shutil.which("clang")
    if gcc:
        src = tmp_path / "f.c"
        src.write_text(text + lift_function(prepare(data), 1).text)
        p = subprocess.run(
            [gcc, "-fsyntax-only", "-w", "-include", str(prelude_path()), str(src)],
            capture_output=True,
            text=True,
        )
        assert p.returncode == 0, p.stderr


@needs_wat
def test_a_comment_on_a_folded_value_moves_with_a_rewritten_line(tmp_path):
    """A note on a loop's exit test stays in the output when the loop is rewritten
    (``while (c)``), and the note on a ternary's arm survives the ternary."""
    src = """
    (module
      (func (export "pick") (param $c i32) (param $a i32) (result i32)
        (if (result i32) (local.get $c)
          (then (i32.add (local.get $a) (i32.const 1)))
          (else (i32.const 5)))))
    """
    data = lift_sem.wat(tmp_path, src)
    ins = _instrs(prepare(data), 0)
    five = next(
        p for p, m in ins if m == "i32.const" and p > next(q for q, n in ins if n == "else")
    )
    text = _lift_with(data, 0, {five: "the default"})
    assert text.count("the default") == 1
    rows = text.splitlines()
    k = next(k for k, r in enumerate(rows) if "the default" in r)
    assert "return" in rows[k + 1] or "5" in rows[k + 1]


@needs_wat
def test_comments_never_change_the_code(tmp_path):
    """A note on every instruction of loop and switch shapes (for, while (c), do-while,
    switch chains, ternaries): without its comment lines the C is the plain lift, and
    every note is shown exactly once."""
    from tests.support.wat import LOOPS_WAT

    for src in (LOOPS_WAT, WAT, SWITCH_WAT):
        data = lift_sem.wat(tmp_path, src)
        lm0 = prepare(data, Names())
        for fi in range(lm0.module.num_func_imports, lm0.module.num_functions):
            plain = lift_function(lm0, fi).text
            notes = {p: f"n{k}" for k, (p, _m) in enumerate(_instrs(lm0, fi))}
            text = _lift_with(data, fi, notes)
            rows = text.splitlines()
            bare = [r for r in rows if not r.strip().startswith("/* @")]
            assert "\n".join(bare) + "\n" == plain, (fi, text)
            shown = [r.strip() for r in rows if r.strip().startswith("/* @")]
            assert sorted(shown) == sorted(f"/* @{p:06x}: {t} */" for p, t in notes.items())
