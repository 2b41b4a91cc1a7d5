"""The token reader of the diff's body comparison (``decoder/tokens.py``, issue 30) in the
decoder twin: the compiled reader gives exactly the pure one's tokens -- and both exactly
``decode_one``'s -- on every function of corpus modules, on random instruction streams and
on malformed bodies (the same tokens before the same error), read whole or in chunks; the
memory-access scan likewise. Tests comparing the two skip when no twin is built
(``python -m kbtool.lift.accel build decoder``)."""

from __future__ import annotations

import importlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kbtool.services.diff import relocation
from kbtool.wasm import WasmFormatError, active
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
