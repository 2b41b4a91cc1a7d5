"""The passive-segment scan finds exactly what the whole-code regex finds (issue 30: the scan
runs only around ``memory.init`` opcodes, found by ``bytes.find``)."""

from __future__ import annotations

import json

import pytest

from kbtool.wasm import facts
from kbtool.wasm.reader import parse_module
from tests.support.paths import CORPUS


def _reference(data: bytes, lo: int, hi: int) -> list[tuple]:
    return [(m.start(), m.end(), m.groups()) for m in facts._INIT_RE.finditer(data, lo, hi)]


def _windowed(data: bytes, lo: int, hi: int) -> list[tuple]:
    return [(m.start(), m.end(), m.groups()) for m in facts._init_matches(data, lo, hi)]


def _init(addr: bytes, size: bytes, seg: bytes) -> bytes:
    return b"\x41" + addr + b"\x41\x00\x41" + size + b"\xfc\x08" + seg + b"\x00"


@pytest.mark.parametrize(
    "data",
    [
        b"",
        _init(b"\x80\x08", b"\x10", b"\x00"),
        b"\x41\x41" + _init(b"\x80\x08", b"\x10", b"\x01") + _init(b"\x90\x08", b"\x04", b"\x02"),
        # a memory.init opcode inside another pattern's LEB, adjacent and overlapping candidates
        _init(b"\xfc\x08", b"\x7f", b"\x03")
        + b"\xfc\x08"
        + _init(b"\xff\xff\xff\xff\x0f", b"\x01", b"\x04"),
        b"\xfc\x08" * 5 + _init(b"\x00", b"\x00", b"\x00") + b"\xfc\x08",
        bytes(range(256)) * 4 + _init(b"\x01", b"\x02", b"\x03") + bytes(range(256)),
    ],
)
def test_windows_find_what_the_whole_scan_finds(data: bytes) -> None:
    for lo, hi in ((0, len(data)), (1, max(1, len(data) - 1)), (3, len(data))):
        assert _windowed(data, lo, hi) == _reference(data, lo, hi)


def test_corpus_modules_same_passive_addresses() -> None:
    manifest = CORPUS / "MANIFEST.json"
    if not manifest.exists():
        pytest.skip("no corpus")
    paths = sorted(
        (p for p in CORPUS.rglob("*.wasm") if p.stat().st_size < 3_000_000),
        key=lambda p: p.stat().st_size,
    )[-12:]
    assert json.loads(manifest.read_text()) is not None
    checked = 0
    for p in paths:
        data = p.read_bytes()
        try:
            m = parse_module(data)
        except ValueError:
            continue
        if not m.code:
            continue
        lo, hi = m.code[0][0], m.code[-1][1]
        assert _windowed(data, lo, hi) == _reference(data, lo, hi), p.name
        checked += 1
    assert checked
