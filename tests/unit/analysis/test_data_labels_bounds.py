"""Data labels on the right bytes (issue 26, precision against builds with symbols): a
string table indexed with a bias (``azType[i - 1]`` reads 4 bytes before the array,
``typenames[t + 1]`` 4 bytes into it) starts at its 16-byte boundary; ``errno`` is the
address ``__errno_location`` returns even inside a wider .bss item; a table of round
numbers that happen to fall in strings is no string table."""

from __future__ import annotations

import subprocess

import pytest

from kbtool.analysis.datalabels import role_labels
from kbtool.analysis.datamodel import build_data_model
from kbtool.analysis.recognize import stack_pointer_global
from kbtool.wasm import analyze_module
from testkit.wasmbuild import have_wabt

pytestmark = pytest.mark.skipif(not have_wabt(), reason="wat2wasm not installed")


def _le(*words: int) -> str:
    return "".join(f"\\{b:02x}" for w in words for b in w.to_bytes(4, "little"))


# strings at 1024 alpha, 1030 beta, 1035 gamma, 1041 delta; azType at 1072 (read at 1068),
# a number at 1084, typenames at 1088 (read at 1092), sizes at 1104: two round numbers
# inside the long string at 1152
WAT = f"""
(module
  (memory 1)
  (global $sp (mut i32) (i32.const 66560))
  (data (i32.const 1024) "alpha\\00beta\\00gamma\\00delta\\00")
  (data (i32.const 1072) "{_le(1024, 1030)}")
  (data (i32.const 1084) "{_le(7, 1024, 1030, 1035, 1041)}")
  (data (i32.const 1104) "{_le(1216, 1280)}")
  (data (i32.const 1152) "{"x" * 200}\\00")
  (func $errno_location (result i32) (i32.const 1504))
  (func (export "f") (param i32) (result i32)
    (global.set $sp (i32.sub (global.get $sp) (i32.const 16)))
    (i32.store offset=1488 (i32.const 0) (local.get 0))
    (i32.add
      (i32.add (i32.load offset=1068 (i32.shl (local.get 0) (i32.const 2)))
               (i32.load offset=1092 (i32.shl (local.get 0) (i32.const 2))))
      (i32.add (i32.load offset=1080 (i32.const 0))
               (i32.add (i32.load offset=1104 (i32.shl (local.get 0) (i32.const 2)))
                        (i32.load8_u offset=1152 (local.get 0))))))
)
"""


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    d = tmp_path_factory.mktemp("labels")
    (d / "l.wat").write_text(WAT)
    subprocess.run(["wat2wasm", str(d / "l.wat"), "-o", str(d / "l.wasm")], check=True)
    data = (d / "l.wasm").read_bytes()
    a = analyze_module(data)
    m = build_data_model(a, data, stack_pointer=stack_pointer_global(a, data))
    role_labels(m, a, {0: "__errno_location"})
    return {it.address: it for it in m.items}


def test_biased_table_reads_start_at_the_array(model):
    # azType[i - 1]: the null word before the array is padding, the table starts at 1072
    assert model[1072].kind == "pointer_table" and model[1072].label.startswith("strtab_alpha")
    assert model[1072].targets[:2] == [1024, 1030]
    assert model[1068].kind == "zero" and model[1068].size == 4
    # typenames[t + 1]: the table takes its first pointer back from the item before it
    assert model[1088].label.startswith("strtab_alpha")
    assert model[1088].targets == [1024, 1030, 1035, 1041] and model[1088].size == 16
    assert 1092 not in model and model[1084].size == 4 and model[1084].kind == "numeric"


def test_errno_is_the_address_errno_location_returns(model):
    assert model[1504].label == "errno"
    assert model[1488].size == 16 and model[1488].label != "errno"


def test_round_numbers_are_not_a_string_table(model):
    assert not (model[1104].label or "").startswith("strtab_")
