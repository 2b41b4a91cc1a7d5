"""Regressions found by ``benchmarks.fuzz --layers lift``: each case is a minimal module whose
lifted C did not compile, or whose lifting / disassembly misbehaved."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from kbtool.lift import disassemble_function, lift_function, prelude_path, prepare

needs_tools = pytest.mark.skipif(
    not (shutil.which("wat2wasm") and shutil.which("gcc")), reason="needs wat2wasm and gcc"
)


def _wasm(wat: str, tmp_path: Path) -> bytes:
    src = tmp_path / "m.wat"
    src.write_text(wat)
    out = tmp_path / "m.wasm"
    subprocess.run(["wat2wasm", "--enable-all", str(src), "-o", str(out)], check=True)
    return out.read_bytes()


def _lift_all(data: bytes) -> list[str]:
    lm = prepare(data)
    m = lm.module
    texts = []
    for fi in range(m.num_functions):
        res = lift_function(lm, fi)
        assert "internal error" not in res.text, res.text
        disassemble_function(lm, fi)
        texts.append(res.text)
    return texts


def _gcc(texts: list[str], tmp_path: Path) -> subprocess.CompletedProcess:
    src = tmp_path / "all.c"
    src.write_text("".join(texts))
    return subprocess.run(
        ["gcc", "-fsyntax-only", "-fwrapv", "-w", "-include", prelude_path(), str(src)],
        capture_output=True,
        text=True,
    )


@needs_tools
def test_multi_value_function_that_never_returns_declares_its_result_struct(tmp_path):
    # the result struct was declared only when a return was lifted: an endless loop left
    # the signature naming an undeclared `struct R_ij`
    data = _wasm("(module (func (result i32 i64) (loop (br 0)) unreachable))", tmp_path)
    texts = _lift_all(data)
    assert "struct R_ij {" in texts[0]
    r = _gcc(texts, tmp_path)
    assert r.returncode == 0, r.stderr


def _module(body: bytes, result_i32: bool = False) -> bytes:
    """One function ``() -> ()`` (or ``-> i32``) with ``body`` (no locals, ends included)."""

    def sec(sid: int, content: bytes) -> bytes:
        return bytes([sid, len(content)]) + content

    ftype = b"\x60\x00" + (b"\x01\x7f" if result_i32 else b"\x00")
    fbody = b"\x00" + body
    return (
        b"\0asm\1\0\0\0"
        + sec(1, b"\x01" + ftype)
        + sec(3, b"\x01\x00")
        + sec(10, b"\x01" + bytes([len(fbody)]) + fbody)
    )


def test_else_outside_an_if_is_a_stub_not_an_internal_error():
    # an `else` with no open `if`: the decoder checks nesting only, and the lifter's else
    # handler assumed an if frame (ValueError from a strict zip: "internal error")
    lm = prepare(_module(bytes.fromhex("4100050b"), result_i32=True))  # i32.const 0; else; end
    res = lift_function(lm, 0)
    assert res.truncated
    assert "else outside an if" in res.reason
    assert "internal error" not in res.text
    assert "else" in disassemble_function(lm, 0)


@pytest.mark.parametrize(
    "body",
    [
        "0240190b0b",  # block; catch_all; end; end
        "024018000b",  # block; delegate 0; end
        "044005050b",  # if; else; else; end
    ],
)
def test_misplaced_catch_delegate_else_are_stubs(body):
    res = lift_function(
        prepare(
            _module(bytes.fromhex("4100" + body) if body.startswith("04") else bytes.fromhex(body))
        ),
        0,
    )
    assert res.truncated and "internal error" not in res.text, res.text


def test_if_without_else_with_results_unlike_its_params_is_a_stub(tmp_path):
    # (i32) -> (i32, i32) on an `if` with no `else` is ill-typed (the implicit else passes
    # the params on): the lifter zipped 1 param onto 2 results ("internal error")
    sec = bytes.fromhex(
        "010c02" + "6001 7f02 7f7f".replace(" ", "") + "6001 7f01 7f".replace(" ", "")
    )
    body = bytes.fromhex("00" + "2000" + "4100" + "0400" + "4102" + "0b" + "6a" + "0b")
    # locals; local.get 0; i32.const 0; if type 0; i32.const 2; end; i32.add; end
    data = (
        b"\0asm\1\0\0\0"
        + sec
        + bytes.fromhex("03020101")  # function 0: type 1 (i32) -> i32
        + bytes([10, len(body) + 2, 1, len(body)])
        + body
    )
    res = lift_function(prepare(data), 0)
    assert res.truncated
    assert "if without else" in res.reason


def test_br_table_targets_of_different_arities_is_a_stub():
    # block; block (result i32); block; i32.const 0; br_table 2 1 0; end; unreachable; end;
    # drop; end: label 1 carries an i32, the default none (ill-typed); the switch lowering
    # zipped no values onto the block's result ("internal error")
    body = bytes.fromhex("0240027f024041000e020201000b000b1a0b0b")
    res = lift_function(prepare(_module(body)), 0)
    assert res.truncated
    assert "br_table targets of different arities" in res.reason
