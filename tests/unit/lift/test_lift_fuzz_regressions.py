"""Regressions found by ``benchmarks.fuzz --layers lift``: each case is a minimal module whose
lifted C did not compile, or whose lifting / disassembly misbehaved."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from kbtool.lift import disassemble_function, lift_function, prelude_path, prepare
from kbtool.render.disasm import render_listing
from tests.support.paths import ROOT

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
    assert "else" in render_listing(disassemble_function(lm, 0))


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


# ---------------------------------------------------------------- call targets out of range
# The decoder accepts a body whose `call` names a function the module does not have (only
# validation would reject it); the fuzz harness met one in a zstd build, where the
# recognizer's downward anchoring indexed the function list with it and raised IndexError.

DEMO = ROOT / "kbtool" / "demo" / "zstd-1.5.5.wasm"
SHARED_OS = Path("/work/shared/corpus/gt/zstd-1.5.6.Os.stripped.wasm")


def _calls_out_of_range(data: bytes, every: int) -> bytes:
    """Every ``every``-th call whose index takes 2 to 5 LEB bytes (linkers pad them to 5)
    now calls the largest index of that width, past the module's functions; sizes kept."""
    from kbtool.wasm import parse_module
    from kbtool.wasm.instr import decode_one, skip_local_decls

    m = parse_module(data)
    out = bytearray(data)
    k = 0
    for s, e in m.code:
        p = skip_local_decls(data, s, e)
        while p < e:
            op, p2, _imms = decode_one(data, p, e)
            width = p2 - p - 1
            if op == 0x10 and 2 <= width <= 5:
                k += 1
                if k % every == 0:
                    out[p + 1 : p2] = b"\xff" * (width - 1) + (b"\x0f" if width == 5 else b"\x7f")
            p = p2
    return bytes(out)


@pytest.mark.parametrize("every", [1, 2, 3])
def test_calls_past_the_last_function_are_harmless(every):
    from kbtool.analysis import analyze_module_static
    from kbtool.lift import build_callgraph
    from kbtool.wasm import analyze_module

    data = _calls_out_of_range(DEMO.read_bytes(), every)
    assert data != DEMO.read_bytes()
    a = analyze_module(data)
    analyze_module_static(a, data)
    g = build_callgraph(a, data)
    assert g["nodes"]
    lm = prepare(data)
    for fi in range(lm.module.num_func_imports, lm.module.num_functions, 7):
        assert "internal error" not in lift_function(lm, fi).text


@pytest.mark.skipif(not SHARED_OS.is_file(), reason="corpus not present")
def test_fuzz_case_zstd_os_one_byte():
    """The harness's case itself: one byte of zstd 1.5.6 -Os (a call's LEB) changed."""
    from kbtool.analysis import analyze_module_static
    from kbtool.wasm import analyze_module

    data = bytearray(SHARED_OS.read_bytes())
    assert data[2386] == 0x80
    data[2386] = 0x8F
    a = analyze_module(bytes(data))
    analyze_module_static(a, bytes(data))


def test_export_or_start_past_the_last_function_is_a_clear_error():
    """An export or start naming a function the module lacks is rejected when the module
    is read (the recognizer once indexed the function list with it)."""
    from kbtool.wasm import WasmFormatError, parse_module

    def module(tail: bytes) -> bytes:
        # one type () -> i32, one function, then `tail`, then the code section
        return (
            b"\0asm\1\0\0\0"
            + b"\x01\x05\x01\x60\x00\x01\x7f"
            + b"\x03\x02\x01\x00"
            + tail
            + b"\x0a\x06\x01\x04\x00\x41\x01\x0b"
        )

    assert parse_module(module(b"\x07\x0a\x01\x06_start\x00\x00")).exports[0].index == 0
    with pytest.raises(
        WasmFormatError, match=r"export '_start' names function 7; the module has 1"
    ):
        parse_module(module(b"\x07\x0a\x01\x06_start\x00\x07"))
    with pytest.raises(WasmFormatError, match=r"start names function 3; the module has 1"):
        parse_module(module(b"\x08\x01\x03"))
