"""``same_bodies`` (issue #30, session 30 T) answers what ``compare_bodies(...,
first_difference=True).same`` answers: on every pair of the demo releases' bodies with the
same instruction stream, and on local declarations that differ, that are cut short by the
body's end, that are malformed, and on functions without a body."""

from __future__ import annotations

from kbtool.services.diff.relocation import ModuleView, compare_bodies, same_bodies
from kbtool.wasm import analyze_module
from tests.support.codefixtures import _body, _name, _sec, _vec, i32_const, uleb
from tests.support.paths import DEMO_DIR


def _reference(va, ia, vb, ib, callee) -> bool:
    return compare_bodies(va, ia, vb, ib, callee, first_difference=True).same


def test_the_demo_releases_pairs_by_opcodes() -> None:
    a, b = (DEMO_DIR / "zstd-1.5.5.wasm").read_bytes(), (DEMO_DIR / "zstd-1.5.6.wasm").read_bytes()
    fa, fb = analyze_module(a).functions, analyze_module(b).functions
    va, vb = ModuleView(a), ModuleView(b)
    by_ops: dict[bytes, list[int]] = {}
    for f in fb:
        if not f.imported:
            by_ops.setdefault(bytes(f.ops), []).append(f.index)
    callee_maps = (lambda i: i, lambda i: None, lambda i: i + 1)
    asked = answered_same = 0
    for f in fa:
        if f.imported:
            continue
        for j in by_ops.get(bytes(f.ops), [])[:3]:
            for callee in callee_maps:
                got = same_bodies(va, f.index, vb, j, callee)
                assert got == _reference(va, f.index, vb, j, callee), (f.index, j)
                asked += 1
                answered_same += got
    assert asked > 300 and 0 < answered_same < asked
    # an index without a body on one side or both
    n = len(fa) + 5
    for ia, ib in ((n, fb[-1].index), (fa[-1].index, n), (n, n + 1)):
        assert same_bodies(va, ia, vb, ib, callee_maps[0]) == _reference(
            va, ia, vb, ib, callee_maps[0]
        )


def _module(bodies: list[bytes]) -> bytes:
    """A module of ``len(bodies)`` functions ``(i32) -> i32`` with these raw bodies (each
    its size-prefixed bytes), one memory and a data segment at 1024."""
    types = _sec(1, _vec([b"\x60\x01\x7f\x01\x7f"]))
    funcs = _sec(3, _vec([b"\x00"] * len(bodies)))
    memory = _sec(5, _vec([b"\x00\x01"]))
    code = _sec(10, uleb(len(bodies)) + b"".join(bodies))
    data = _sec(11, _vec([b"\x00" + i32_const(1024) + b"\x0b" + uleb(4) + b"abc\x00"]))
    return b"\x00asm\x01\x00\x00\x00" + types + funcs + memory + code + data


def test_local_declarations_equal_differing_cut_short_or_malformed() -> None:
    code = b"\x20\x00" + i32_const(1024) + b"\x6a"
    two_i32 = b"\x01\x02\x7f"  # one declaration: 2 x i32
    bodies_a = [
        _body(code, two_i32),
        _body(code, two_i32),
        _body(code, b"\x02\x01\x7f\x01\x7e"),  # i32, i64
        _body(code, two_i32),
        _body(code, b"\x01\x02\x7f"),
    ]
    bodies_b = [
        _body(code, two_i32),  # the same declarations
        _body(code, b"\x01\x03\x7f"),  # 3 x i32
        _body(code, b"\x02\x01\x7f\x01\x7f"),  # i32, i32
        # a's declaration bytes, but the body ends inside them
        uleb(2) + b"\x01\x02",
        # a malformed declaration count (larger than the body)
        uleb(4) + b"\x7f\x00\x00\x0b",
    ]
    va, vb = ModuleView(_module(bodies_a)), ModuleView(_module(bodies_b))
    answers = []
    for i in range(len(bodies_a)):
        got = same_bodies(va, i, vb, i, lambda c: c)
        assert got == _reference(va, i, vb, i, lambda c: c), i
        answers.append(got)
    assert answers == [True, False, False, False, False]
    # the other way round: b's declarations first
    for i in range(len(bodies_a)):
        assert same_bodies(vb, i, va, i, lambda c: c) == _reference(vb, i, va, i, lambda c: c)


def test_a_name_section_does_not_matter() -> None:
    """(A module with a custom section after the code: the bodies' ranges are the code's.)"""
    code = b"\x20\x00" + i32_const(7) + b"\x6a"
    plain = _module([_body(code)])
    named = plain + _sec(0, _name("name") + b"\x01" + uleb(4) + b"\x01\x00" + _name("f"))
    va, vb = ModuleView(plain), ModuleView(named)
    assert same_bodies(va, 0, vb, 0, lambda c: c) is True
    assert _reference(va, 0, vb, 0, lambda c: c) is True
