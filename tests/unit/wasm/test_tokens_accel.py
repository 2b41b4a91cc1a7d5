"""The token reader of the diff's body comparison (``decoder/tokens.py``, issue 30) in the
decoder twin: the compiled reader gives exactly the pure one's tokens -- and both exactly
``decode_one``'s -- on every function of corpus modules, on random instruction streams and
on malformed bodies (the same tokens before the same error), read whole or in chunks; the
memory-access scan likewise; and the body comparison's loop (``decoder/compare.py``) answers
as its pure part, with the same callbacks in the same order. Tests comparing the two skip when no twin is built
(``python -m kbtool.lift.accel build decoder``)."""

from __future__ import annotations

import importlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kbtool.services.diff import relocation
from kbtool.wasm import WasmFormatError, active
from kbtool.wasm.decoder import compare as pure_compare
from kbtool.wasm.decoder import tokens as pure
from kbtool.wasm.instr import decode_one, skip_local_decls
from kbtool.wasm.opcodes import BYTE_KIND, K_BAD, KIND
from kbtool.wasm.reader import parse_module
from testkit.wasmbuild import CORPUS
from tests.support.paths import DEMO_DIR

COMPILED = active.load_compiled()
TWIN = None if COMPILED is None else importlib.import_module(f"{COMPILED.__name__}.tokens")
needs_twin = pytest.mark.skipif(TWIN is None, reason=f"compiled decoder {active.compiled_state()}")

MODULES = [
    CORPUS / "release" / "sql.js-1.12.0.sql-wasm.wasm",
    CORPUS / "gt" / "zstd-1.5.6.Os.named.wasm",
    DEMO_DIR / "zstd-1.5.5.wasm",
]


def _read(mod, data: bytes, p: int, end: int, limit: int = -1) -> tuple[str, object, list]:
    """``("ok", position after, tokens)`` or ``("err", message, tokens before it)``; chunks
    of ``limit`` tokens read one after the other (the comparison's way) when ``limit`` > 0."""
    out: list = []
    try:
        while True:
            p = mod.decode_tokens(data, p, end, out, limit)
            if limit < 0 or p >= end:
                return "ok", p, out
    except WasmFormatError as e:
        return "err", str(e), out


def _careful(data: bytes, p: int, end: int) -> tuple[str, object, list]:
    out: list = []
    try:
        while p < end:
            op, p, imms = decode_one(data, p, end)
            out.append((op, imms))
        return "ok", p, out
    except WasmFormatError as e:
        return "err", str(e), out


def _key(r: tuple[str, object, list]) -> str:
    """Exact comparison by repr (two NaN constants are equal there, not by ``==``), with
    the immediates' types (an int is not a float)."""
    return repr(r) + repr([tuple(type(x).__name__ for x in im) for _, im in r[2]])


def _sites(mod, data: bytes, p: int, end: int) -> tuple[str, object]:
    try:
        return "ok", mod.mem_sites(data, p, end)
    except WasmFormatError as e:
        return "err", str(e)


def _bodies(path):
    if not path.is_file():
        pytest.skip("corpus not present")
    data = path.read_bytes()
    m = parse_module(data)
    return data, [(skip_local_decls(data, s, e), e) for s, e in m.code]


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_pure_tokens_are_decode_ones(path) -> None:
    data, bodies = _bodies(path)
    assert len(bodies) > 100
    for p, end in bodies:
        assert _key(_read(pure, data, p, end)) == _key(_careful(data, p, end)), p


@needs_twin
def test_twin_reader_is_compiled_and_used() -> None:
    assert not TWIN.__file__.endswith(".py")
    assert relocation._TOKENS is TWIN


@needs_twin
@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_compiled_tokens_are_the_pure_ones(path) -> None:
    data, bodies = _bodies(path)
    for p, end in bodies:
        want = _key(_read(pure, data, p, end))
        assert _key(_read(TWIN, data, p, end)) == want, p
        assert _key(_read(TWIN, data, p, end, 16)) == want, p
        assert _sites(TWIN, data, p, end) == _sites(pure, data, p, end), p


# instruction streams: real opcodes (one-byte and prefixed) followed by arbitrary bytes, so
# the fast paths meet LEBs of every length, cut LEBs, odd memargs and block types
_OPS = [b for b in range(256) if BYTE_KIND[b] != K_BAD]
_chunk = st.tuples(st.sampled_from(_OPS), st.binary(max_size=6)).map(lambda t: bytes([t[0]]) + t[1])
_stream = st.lists(_chunk, max_size=40).map(b"".join)


@needs_twin
@settings(max_examples=400, deadline=None)
@given(body=_stream, limit=st.sampled_from([-1, 1, 3, 16]))
def test_random_streams_read_alike(body: bytes, limit: int) -> None:
    data = b"\x00\x01" + body  # a prefix: positions inside a larger buffer
    p, end = 2, len(data)
    want = _read(pure, data, p, end, limit)
    assert _key(_read(TWIN, data, p, end, limit)) == _key(want)
    assert _key(_read(pure, data, p, end)) == _key(_careful(data, p, end))
    assert _sites(TWIN, data, p, end) == _sites(pure, data, p, end)


BAD = [
    b"\x41",  # i32.const without its immediate
    b"\x41\x80\x80\x80\x80\x80\x00",  # over-long LEB
    b"\x10\xff\xff\xff",  # a call index cut short
    b"\xfc\x7f\x0b",  # unknown prefixed opcode
    b"\x02\x7a\x0b",  # bad block type
    b"\x28\x80\x01\x00\x0b",  # memarg alignment out of range
    b"\x28\x02",  # memarg without its offset
]


@needs_twin
@pytest.mark.parametrize("body", BAD)
def test_malformed_bodies_fail_alike(body: bytes) -> None:
    want = _read(pure, body, 0, len(body))
    assert want[0] == "err"
    assert _key(_read(TWIN, body, 0, len(body))) == _key(want)
    assert _key(want) == _key(_careful(body, 0, len(body)))
    assert _sites(TWIN, body, 0, len(body)) == _sites(pure, body, 0, len(body))


def test_memory_sites_are_the_tokens_accesses() -> None:
    data, bodies = _bodies(DEMO_DIR / "zstd-1.5.6.wasm")
    seen = 0
    for p, end in bodies:
        toks = _read(pure, data, p, end)[2]
        want = [(k, op, im[1]) for k, (op, im) in enumerate(toks) if KIND[op] in (2, 20)]
        n, sites = pure.mem_sites(data, p, end)
        assert (n, sites) == (len(toks), want)
        seen += len(sites)
    assert seen > 1000


# --------------------------------------------------------------- the comparison loop
# (decoder/compare.py: compare_bodies' instruction loop, in the twin with the token reader)

CMP_TWIN = None if COMPILED is None else importlib.import_module(f"{COMPILED.__name__}.compare")


@needs_twin
def test_twin_comparison_is_compiled_and_used() -> None:
    assert not CMP_TWIN.__file__.endswith(".py")
    assert relocation._CMP is CMP_TWIN


def _answers(monkeypatch, mod, va, vb, pairs, callee_map) -> list[str]:
    monkeypatch.setattr(relocation, "_CMP", mod)
    return [
        repr(relocation.compare_bodies(va, i, vb, j, callee_map, first_difference=fd).as_dict())
        for i, j in pairs
        for fd in (False, True)
    ]


@needs_twin
def test_compiled_comparison_answers_as_the_pure_one(monkeypatch) -> None:
    """sql.js 1.10.3 against 1.12.0: each function against the same index and two of the
    other release's bodies with as many instructions, both modes, to the letter."""
    paths = [CORPUS / "release" / f"sql.js-{v}.sql-wasm.wasm" for v in ("1.10.3", "1.12.0")]
    if not all(p.is_file() for p in paths):
        pytest.skip("corpus not present")
    va, vb = (relocation.ModuleView(p.read_bytes()) for p in paths)
    by_len: dict[int, list[int]] = {}
    for j in range(vb.nimp, vb.nimp + vb.ndef):
        by_len.setdefault(len(relocation.body_tokens(vb, j)), []).append(j)
    pairs = []
    for i in range(va.nimp, va.nimp + va.ndef):
        pairs.append((i, i - va.nimp + vb.nimp))
        pairs += [(i, j) for j in by_len.get(len(relocation.body_tokens(va, i)), [])[:2]]
    shift = vb.nimp - va.nimp

    def callee_map(x: int) -> int | None:  # a pairing that leaves some callees unpaired
        return None if x % 7 == 0 else x + shift

    want = _answers(monkeypatch, pure_compare, va, vb, pairs, callee_map)
    assert _answers(monkeypatch, CMP_TWIN, va, vb, pairs, callee_map) == want
    reasons = {eval(a)["reason"].split(" ")[0] for a in want}  # noqa: S307 (our own repr)
    assert sum("'same': True" in a for a in want) > 100
    assert len(reasons) > 10  # many kinds of difference met


def _loop(mod, a: bytes, b: bytes, fd: bool, static: tuple[int, int]) -> tuple:
    """compare_tokens on two instruction streams with deterministic callbacks; its answer
    (or the error) and every callback call in order."""
    calls: list[tuple] = []

    def locate(u: int) -> object:
        calls.append(("locate", u))
        return None if u % 3 else (b"", 0)

    def callee_map(x: int) -> int | None:
        calls.append(("callee", x))
        return None if x % 5 == 0 else x + 1

    def addr_same(x: int, y: int, size: object) -> bool:
        calls.append(("addr", x, y, size))
        return (x ^ y) % 4 != 1

    side = (*static, 1, 0, ["(i32)->i32", "()->()"])
    try:
        got: tuple = mod.compare_tokens(
            a, 1, len(a), b, 1, len(b), fd, side, side, locate, callee_map, addr_same
        )
    except WasmFormatError as e:
        got = ("err", str(e))
    return repr(got), calls


@needs_twin
@settings(max_examples=400, deadline=None)
@given(
    head=_stream,
    tail_a=_stream,
    tail_b=_stream,
    fd=st.booleans(),
    static=st.sampled_from([(0, 0), (0, 1 << 12), (64, 1 << 20)]),
)
def test_random_streams_compare_alike(head, tail_a, tail_b, fd, static) -> None:
    a, b = b"\x00" + head + tail_a, b"\x00" + head + tail_b
    assert _loop(CMP_TWIN, a, b, fd, static) == _loop(pure_compare, a, b, fd, static)
