"""Relocation-aware equivalence (issue 29.1): data compared through what it points at."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from kbtool.services.diff.relocation import ModuleView, compare_bodies

pytestmark = pytest.mark.skipif(shutil.which("wat2wasm") is None, reason="wat2wasm missing")

GO_MOD = """(module
  (memory 1)
  (table 0x1010 funcref)
  (elem (i32.const 0x1000) $f $g)
  (data (i32.const {addr}) "{text}")
  (func $f (result i64) (local i32)
    local.get 0
    i64.const {ptr}
    i64.store offset=8
    local.get 0
    i64.const 5
    i64.store offset=16
    i64.const {fv})
  (func $g (result i32) i32.const 0))
"""

C_MOD = """(module
  (memory 1)
  (data (i32.const {addr}) "{text}\\00")
  (func $f (result i32) i32.const {addr} call $g)
  (func $g (param i32) (result i32) local.get 0))
"""


def wasm(tmp: Path, name: str, text: str) -> bytes:
    src = tmp / f"{name}.wat"
    src.write_text(text)
    subprocess.run(["wat2wasm", str(src), "-o", str(tmp / f"{name}.wasm")], check=True)
    return (tmp / f"{name}.wasm").read_bytes()


def same_index(i: int) -> int:
    return i


def test_go_string_blob_moved_is_same_code_relocated(tmp_path):
    # the 5-byte string "hello" sits in a blob; v2 inserts text before it: another address,
    # other neighbours (the old facts invented a string change), same 5 bytes
    a = ModuleView(
        wasm(tmp_path, "a", GO_MOD.format(addr=2048, text="xxhelloAB", ptr=2050, fv=0x1000 << 16))
    )
    b = ModuleView(
        wasm(
            tmp_path, "b", GO_MOD.format(addr=2048, text="yyyyyhelloCD", ptr=2053, fv=0x1000 << 16)
        )
    )
    assert a.go and b.go
    r = compare_bodies(a, 0, b, 0, same_index)
    assert r.same and r.relocated


def test_go_string_really_changed_is_reported(tmp_path):
    a = ModuleView(
        wasm(tmp_path, "a", GO_MOD.format(addr=2048, text="xxhelloAB", ptr=2050, fv=0x1000 << 16))
    )
    b = ModuleView(
        wasm(tmp_path, "b", GO_MOD.format(addr=2048, text="xxjelloAB", ptr=2050, fv=0x1000 << 16))
    )
    r = compare_bodies(a, 0, b, 0, same_index)
    assert not r.same
    assert r.data_changes == [("hello", "jello")]


def test_go_function_value_compared_through_the_pairing(tmp_path):
    # PC_F of function 1 ($g): (0x1000 + 1) << 16; paired with itself it is the same code,
    # paired elsewhere it is a change
    src = GO_MOD.format(addr=2048, text="xxhelloAB", ptr=2050, fv=0x1001 << 16)
    a = ModuleView(wasm(tmp_path, "a", src))
    b = ModuleView(wasm(tmp_path, "b", src.replace(str(0x1001 << 16), str(0x1000 << 16))))
    assert compare_bodies(a, 0, b, 0, lambda i: {1: 0}.get(i, i)).same
    assert not compare_bodies(a, 0, b, 0, same_index).same


def test_c_string_moved_vs_changed(tmp_path):
    a = ModuleView(wasm(tmp_path, "a", C_MOD.format(addr=1024, text="too many terms")))
    moved = ModuleView(wasm(tmp_path, "b", C_MOD.format(addr=1100, text="too many terms")))
    changed = ModuleView(wasm(tmp_path, "c", C_MOD.format(addr=1100, text="too many items")))
    r = compare_bodies(a, 0, moved, 0, same_index)
    assert r.same and r.relocated
    r = compare_bodies(a, 0, changed, 0, same_index)
    assert not r.same and r.data_changes == [("too many terms", "too many items")]


@pytest.mark.parametrize("byte", range(1, 0x20))
def test_a_c_string_holds_no_control_byte_but_tab_newline_return(tmp_path, byte):
    # the string a pointer names: printable text, tab, LF and CR; any other control byte
    # means it is not a string (the comparison then looks at the bytes around it instead)
    v = ModuleView(wasm(tmp_path, "c", C_MOD.format(addr=1024, text=f"ab\\{byte:02x}cd")))
    text = b"ab" + bytes([byte]) + b"cd"
    assert v.cstring(1024) == (text if byte in (9, 10, 13) else None)
    assert v.cstring(1026) == (text[2:] if byte in (9, 10, 13) else None)
    assert v.cstring(1027) == b"cd"
