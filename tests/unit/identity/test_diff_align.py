"""Per-function diff aligns locals by use before diffing (issue 29.2)."""

from __future__ import annotations

from kbtool.services.code import diff_lines

A = """func[3] (i32, i32) -> i32
 0001a: local.get 0
 0001a: local.get 1
 0001a: i32.add
 0001a: local.set 2
 0001a: local.get 2
 0001a: local.get 0
 0001a: i32.mul
 0001a: local.set 3
 0001a: local.get 3
 0001a: i32.const 16
 0001a: i32.gt_u
 0001a: return
"""
# the same body with locals 2 and 3 renumbered, plus one real change (16 -> 32)
B = (
    A.replace("local.set 2", "local.set 9")
    .replace("local.get 2", "local.get 9")
    .replace("local.set 3", "local.set 2")
    .replace("local.get 3", "local.get 2")
    .replace("16", "32")
)


def _changed(s: dict) -> int:
    return s["changed"] + s["deleted"] + s["inserted"]


def test_renumbered_locals_are_not_changes():
    before = diff_lines(A, B, align=False)["summary"]
    after = diff_lines(A, B)["summary"]
    assert _changed(before) == 5  # 4 renumbered locals + the constant
    assert _changed(after) == 1 and after["const"] == 1
    assert after["aligned"] == 4
    assert after["local_map"] == {"2": "9", "3": "2"}


def test_a_real_local_change_still_shows():
    # local 0 -> local 1 at one use only: the votes keep 0 -> 0, that use stays a change
    b = A.replace(" 0001a: local.get 0\n 0001a: i32.mul", " 0001a: local.get 1\n 0001a: i32.mul")
    s = diff_lines(A, b)["summary"]
    assert _changed(s) == 1
