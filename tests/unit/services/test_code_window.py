"""Windows of a huge function's disassembly past its first screen (issue 30 point 2): each
is decoded from the resume point before it (kbtool.services.code_window), never from the
whole listing, and every window (every offset, a few limits, the last partial one, past the
end) is exactly the whole listing's lines paged, on the demo KB (zstd), the code fixture and
the largest function of a real corpus module (sql.js, analysed: data labels and strings)."""

from __future__ import annotations

import pytest

from kbtool.kb.db import open_ro, open_rw
from kbtool.services import code, code_function, code_window
from kbtool.services.analyze import analyze_version
from kbtool.services.ingest import ingest_bytes
from tests.support.codefixtures import code_kb_fixture  # noqa: F401  (fixture)
from tests.support.paths import corpus_file


def _largest(conn, n: int = 1) -> list[int]:
    rows = conn.execute(
        "SELECT idx FROM functions WHERE version_id = 1 AND imported = 0"
        " ORDER BY instr_count DESC LIMIT ?",
        (n,),
    ).fetchall()
    return [r[0] for r in rows]


def _check_every_window(conn, idx: int, step: int) -> None:
    """Every window of ``idx`` against its whole listing, without the whole listing kept
    or built while the windows are read."""
    whole = code.disassembly(conn, 1, idx)["mnemonics"].splitlines()
    code.clear_cache()
    total = len(whole)
    offsets = [*range(0, total + 600, step), 1990, 1999, 2000, 2001, total - 1, total, 10**7]
    for limit in (300, 1000, 7):
        for off in offsets:
            w = code.code_window(conn, 1, idx, kind="wasm", offset=max(0, off), limit=limit)
            off = max(0, off)
            want = whole[off : off + limit]
            assert w["lines"] == want, (idx, off, limit)
            assert w["total"] == total and w["offset"] == off and w["limit"] == limit
            end = off + len(want)
            assert w["next_offset"] == (end if end < total else None)
    cm = code.code_module(conn, 1)
    if total > code.FIRST_SCREEN:  # paged past the first screen: no whole listing kept
        assert code_function._kept_lines(cm, idx, "wasm") is None
        assert code_window.skim(cm.lm, idx) is not None


@pytest.fixture
def fresh(monkeypatch):
    # no kept preparation, so no huge function's whole disassembly kept on disk either
    # (its windows are slices of it: tests/surface/web/test_code_whole_kept.py): these are
    # the windows decoded from their resume points
    monkeypatch.setenv("KBTOOL_CODE_CACHE_DIR", "off")
    code.clear_cache()
    yield
    code.clear_cache()


def test_every_window_of_the_code_fixture(code_kb, fresh):
    conn = open_ro(code_kb)
    try:
        _check_every_window(conn, 5, 37)  # 10,000 instructions (tests/support/codefixtures.py)
    finally:
        conn.close()


def test_every_window_of_the_demo_kb(demo_kb, fresh):
    conn = open_ro(demo_kb)
    try:
        for idx in _largest(conn, 3):
            _check_every_window(conn, idx, 53)
    finally:
        conn.close()


def test_every_window_of_a_corpus_function(tmp_path, fresh):
    data = corpus_file("release/sql.js-1.12.0.sql-wasm.wasm").read_bytes()
    db = tmp_path / "kb.db"
    conn = open_rw(db)
    vid = ingest_bytes(conn, data, label="v1").version_id
    analyze_version(conn, vid)
    conn.close()
    ro = open_ro(db)
    try:
        (idx,) = _largest(ro)
        _check_every_window(ro, idx, 101)
    finally:
        ro.close()


def test_a_far_window_decodes_only_its_own_instructions(code_kb, fresh, monkeypatch):
    """The window at the end of a huge body decodes at most ``EVERY`` instructions more than
    it shows (the decode-only pass aside), and no whole listing is disassembled."""
    conn = open_ro(code_kb)
    try:
        cm = code.code_module(conn, 1)
        code_window.skim(cm.lm, 5)
        made: list[int] = []
        real = code_window.RecordMaker.record

        def counted(self, *a):
            made.append(1)
            return real(self, *a)

        def whole(*_a, **_k):
            raise AssertionError("a window disassembled the whole body")

        monkeypatch.setattr(code_window.RecordMaker, "record", counted)
        monkeypatch.setattr(code_function, "_records", whole)
        w = code.code_window(conn, 1, 5, kind="wasm", offset=9_000, limit=300)
        assert len(w["lines"]) == 300 and len(made) == 300
    finally:
        conn.close()
