"""The search for ``memory.init`` sequences (passive segment addresses, issue 30: ffmpeg has
7,320 of them in 32 MB of code) finds exactly what the regex over the whole code finds: the
literal search for the opcode, then the regex on merged windows around each hit."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from kbtool.wasm import active
from kbtool.wasm.datamap import (
    _INIT_AFTER,
    _INIT_BEFORE,
    _INIT_GAP,
    _INIT_OP,
    _INIT_RE,
    _init_matches,
    _leb_bytes,
    passive_addresses,
)
from kbtool.wasm.decoder import dmap as pure_dmap
from kbtool.wasm.reader import parse_module
from tests.support.paths import corpus_file


def _seq(addr: bytes, size: bytes, seg: bytes) -> bytes:
    """``i32.const addr; i32.const 0; i32.const size; memory.init seg 0``."""
    return b"\x41" + addr + b"\x41\x00\x41" + size + b"\xfc\x08" + seg + b"\x00"


LEB = st.sampled_from([b"\x00", b"\x05", b"\x80\x01", b"\xff\xff\x03", b"\x80\x80\x80\x80\x01"])
BAD_LEB = st.sampled_from([b"\x80\x80\x80\x80\x80\x01", b"\x80"])  # too long; unterminated
CHUNK = st.one_of(
    st.builds(_seq, LEB, LEB, LEB),
    st.builds(_seq, BAD_LEB, LEB, LEB),
    st.sampled_from(
        [b"\xfc\x08", b"\xfc", b"\x08", b"\x41", b"\x41\x00\x41", b"\x00", b"\xfc\x08\x00"]
    ),
    st.binary(max_size=8),
    st.integers(0, 3 * _INIT_GAP).map(lambda n: b"\x01" * n),  # gaps about the merge distance
)


def _spans(found) -> list[tuple[int, int]]:
    return [m.span() for m in found]


@settings(max_examples=300, deadline=None)
@given(chunks=st.lists(CHUNK, max_size=24), cut=st.tuples(st.integers(0, 30), st.integers(0, 30)))
@example(chunks=[_seq(b"\x05", b"\x05", b"\x01")] * 3, cut=(0, 0))  # back to back
@example(
    chunks=[_seq(b"\x05", b"\x05", b"\x01"), b"\x01" * _INIT_GAP, _seq(b"\x06", b"\x05", b"\x02")],
    cut=(0, 0),
)
@example(chunks=[_seq(b"\x05", b"\x05", b"\x01")], cut=(3, 2))  # cut through a sequence
def test_init_matches_are_the_whole_code_regex(chunks, cut):
    data = b"".join(chunks)
    lo, hi = min(cut[0], len(data)), max(min(cut[0], len(data)), len(data) - cut[1])
    assert _spans(_init_matches(data, lo, hi)) == _spans(_INIT_RE.finditer(data, lo, hi))


def _regex_windows(data: bytes, lo: int, hi: int) -> list[int]:
    """The windows as the regex's literal search makes them (the pure path), flat."""
    windows: list[list[int]] = []
    for found in _INIT_OP.finditer(data, lo, hi):
        q = found.start()
        a, b = max(lo, q - _INIT_BEFORE), min(hi, q + _INIT_AFTER)
        if windows and a <= windows[-1][1] + _INIT_GAP:
            windows[-1][1] = b
        else:
            windows.append([a, b])
    return [x for w in windows for x in w]


@settings(max_examples=300, deadline=None)
@given(chunks=st.lists(CHUNK, max_size=24), cut=st.tuples(st.integers(0, 30), st.integers(-4, 30)))
@example(chunks=[b"\xfc"], cut=(0, -4))  # an opcode byte last, the range past the end
def test_init_windows_are_the_regex_windows(chunks, cut):
    """``init_windows`` (compiled: the opcode found by ``memchr``) gives the windows of the
    regex's literal search, pure and compiled, also for a range past the data's end."""
    data = b"".join(chunks)
    lo, hi = min(cut[0], len(data)), max(min(cut[0], len(data)), len(data) - cut[1])
    want = _regex_windows(data, lo, hi)
    args = (_INIT_BEFORE, _INIT_AFTER, _INIT_GAP)
    assert pure_dmap.init_windows(data, lo, hi, *args) == want
    assert active.DMAP.init_windows(data, lo, hi, *args) == want


def test_init_matches_on_a_real_threaded_module():
    """onnxruntime's threaded build inits its passive segments with such sequences."""
    data = corpus_file("release/onnxruntime-web-1.20.1.ort-wasm-simd-threaded.wasm").read_bytes()
    m = parse_module(data)
    lo, hi = m.code[0][0], m.code[-1][1]
    found = _spans(_init_matches(data, lo, hi))
    assert found and found == _spans(_INIT_RE.finditer(data, lo, hi))
    want = _regex_windows(data, lo, hi)
    args = (_INIT_BEFORE, _INIT_AFTER, _INIT_GAP)
    assert want and active.DMAP.init_windows(data, lo, hi, *args) == want
    assert pure_dmap.init_windows(data, lo, hi, *args) == want
    assert passive_addresses(data, m)


def _leb_loop(b: bytes, signed: bool) -> int:
    x = shift = 0
    for c in b:
        x |= (c & 0x7F) << shift
        shift += 7
    return x - (1 << shift) if signed and b[-1] & 0x40 else x


def test_short_leb_paths_are_the_loop():
    """The one- and two-byte shortcuts of the LEB decode give what the loop gives, for every
    byte pair (well-formed or not), signed and unsigned."""
    for c in range(256):
        for signed in (False, True):
            assert _leb_bytes(bytes([c]), signed) == _leb_loop(bytes([c]), signed)
            for d in range(256):
                pair = bytes([c, d])
                assert _leb_bytes(pair, signed) == _leb_loop(pair, signed), (pair, signed)
    assert _leb_bytes(b"\x80\x80\x01", False) == _leb_loop(b"\x80\x80\x01", False)
