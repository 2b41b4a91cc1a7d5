"""The walk's value stack keeps placeholders below the function's frame (so that popping
it to empty does not free its storage each statement): no op reaches them, an underflow is
still an underflow at the function's and at a block's frame, and deep stacks lift."""

from __future__ import annotations

import importlib

import pytest

from kbtool.lift import active, prepare
from kbtool.lift.lifter import driver
from testkit.wasmbuild import section, uleb

COMPILED = active.load_compiled()
LIFTS = [driver.lift_function]
if COMPILED is not None:
    LIFTS.append(importlib.import_module(COMPILED.__name__ + ".driver").lift_function)


def _module(code: bytes, locals_: bytes = b"\x00") -> bytes:
    """One function ``() -> i32`` with the body ``code`` (``end`` added)."""
    types = section(1, b"\x01\x60\x00\x01\x7f")
    funcs = section(3, b"\x01\x00")
    body = locals_ + code + b"\x0b"
    return (
        b"\x00asm\x01\x00\x00\x00" + types + funcs + section(10, b"\x01" + uleb(len(body)) + body)
    )


C1 = b"\x41\x01"  # i32.const 1
UNDERFLOWS = {
    "add of one value": C1 + b"\x6a",
    "drop of nothing": b"\x1a" + C1,
    "below a block's frame": C1 + b"\x02\x40\x1a\x0b",  # block; drop; end
    "select of two": C1 + C1 + b"\x1b",
    "local.set of nothing": b"\x21\x00" + C1,
    "br_if without its condition": b"\x02\x40\x0d\x00\x0b" + C1,
    "a load without its address": b"\x28\x02\x00",
    "eqz of nothing": b"\x45",
}


@pytest.mark.parametrize("lift", range(len(LIFTS)))
@pytest.mark.parametrize("name", sorted(UNDERFLOWS))
def test_an_underflow_is_reported_not_read_from_the_floor(lift, name):
    code = UNDERFLOWS[name]
    locals_ = b"\x01\x01\x7f" if b"\x21" in code else b"\x00"
    r = LIFTS[lift](prepare(_module(code, locals_)), 0, max_seconds=None)
    assert r.truncated and r.reason == "value stack underflow", (name, r.text)
    assert "not lifted: value stack underflow" in r.text


@pytest.mark.parametrize("lift", range(len(LIFTS)))
def test_deep_stacks_lift_whole(lift):
    """Values far above the floor (the list grows past its first storage and back)."""
    for depth in (1, 2, 3, 4, 5, 8, 9, 17, 40):
        code = C1 * depth + b"\x6a" * (depth - 1)
        r = LIFTS[lift](prepare(_module(code)), 0, max_seconds=None)
        assert not r.truncated, r.text
        assert r.text.count("1") == depth and "return" in r.text
