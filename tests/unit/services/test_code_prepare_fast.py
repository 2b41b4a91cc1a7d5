"""The cold preparation of a version for the code views (issue 30: the studio's first screen
on ffmpeg waits for it): lean reads that give what the general reads give, the module's
bytes and digest read beside them, and no full collection while it builds, the collector's
thresholds restored after (an error included)."""

from __future__ import annotations

import gc
import hashlib
import sqlite3
import threading
import time

import pytest

from kbtool.kb import queries
from kbtool.kb.db import open_ro
from kbtool.kb.errors import UnknownVersionError
from kbtool.kb.queries.code_labels import code_key, identity_rows, label_rows, shown_label_rows
from kbtool.services import code as code_service
from kbtool.services import code_prepared
from kbtool.services.code_prepared import FunctionIdentity


@pytest.fixture
def ro(demo_kb_master):
    conn = open_ro(demo_kb_master)
    code_service.clear_cache()
    yield conn
    conn.close()
    code_service.clear_cache()


def test_shown_label_rows_are_the_filtered_first_items(ro):
    """The items shown unnamed: the first ``limit`` by address, zero-filled ones only when
    referenced, as plain tuples; a cut at every kind of limit."""
    total = ro.execute("SELECT count(*) FROM data_items WHERE version_id = 1").fetchone()[0]
    assert total > 100
    zero = ro.execute(
        "SELECT count(*) FROM data_items WHERE version_id = 1 AND kind = 'zero' AND refs = 0"
    ).fetchone()[0]
    for limit in (1_000_000, total + 1, total, total - 1, 50, 2, 1, 0, -1):
        want = [tuple(r[:4]) for r in label_rows(ro, 1, limit) if r["kind"] != "zero" or r["refs"]]
        got = shown_label_rows(ro, 1, limit)
        assert got == want, limit
        assert all(type(r) is tuple for r in got)
    assert len(shown_label_rows(ro, 1, -1)) == total - zero


def test_identities_are_the_kb_rows(ro):
    cm = code_service.code_module(ro, 1)
    want = {
        r.index: FunctionIdentity(
            r.stable_id, r.imported, r.import_module, r.import_field, r.name, r.provenance
        )
        for r in queries.function_identities(ro, 1)
    }
    assert cm.rows == want
    assert all(type(r.imported) is bool for r in cm.rows.values())
    assert any(r.imported for r in cm.rows.values())
    named = {i for i, r in want.items() if r.name}
    assert named and all(cm.lm.names.functions[i] == want[i].name for i in named)
    assert identity_rows(ro, 999) == []


def test_digest_beside_the_reads_is_the_modules(ro, monkeypatch):
    """Digested on a thread (any size here), the parsed module is keyed by the same digest:
    a second preparation of the version (another KB state) reuses it."""
    monkeypatch.setattr(code_prepared, "_DIGEST_ASIDE", 0)
    data = queries.module_bytes(ro, 1)
    cm = code_service.code_module(ro, 1)
    assert cm.parsed.digest == hashlib.blake2b(data, digest_size=16).hexdigest()
    with code_prepared._LOCK:
        code_prepared._PREPARED.clear()
    again = code_service.code_module(ro, 1)
    assert again is not cm and again.parsed is cm.parsed


def test_no_full_collection_while_preparing_and_thresholds_restored(ro, monkeypatch):
    """Young collections go on (another thread's garbage is freed), full ones wait; the
    thresholds are back after, an error included."""
    seen: list[tuple] = []
    real = code_prepared.prepare

    def watching(*args, **kwargs):
        seen.append(gc.get_threshold())
        return real(*args, **kwargs)

    monkeypatch.setattr(code_prepared, "prepare", watching)
    before = gc.get_threshold()
    gc.set_threshold(500, 7, 9)
    try:
        code_service.code_module(ro, 1)
        assert seen == [(500, 7, code_prepared._NO_FULL)]
        assert gc.get_threshold() == (500, 7, 9)
        with pytest.raises(UnknownVersionError):
            code_service.code_module(ro, 999)
        assert gc.get_threshold() == (500, 7, 9)
        assert gc.isenabled()
    finally:
        gc.set_threshold(*before)


def test_a_module_that_cannot_be_decoded_says_so_after_the_reads(tmp_path, demo_kb):
    """The reads now come before the parse: a corrupt module still gets the one-line error
    (and the collector back)."""
    rw = sqlite3.connect(demo_kb)
    rw.execute(
        "UPDATE modules SET data = ? WHERE version_id = 1", (b"\x00asm\x01\x00\x00\x00\x05",)
    )
    rw.commit()
    rw.close()
    conn = open_ro(demo_kb)
    code_service.clear_cache()
    try:
        threshold = gc.get_threshold()
        with pytest.raises(code_service.CodeUnavailableError, match="cannot be decoded"):
            code_service.code_module(conn, 1)
        assert gc.get_threshold() == threshold
    finally:
        conn.close()
        code_service.clear_cache()


def test_module_read_beside_the_reads_falls_back_to_the_callers_connection(ro, tmp_path):
    """The bytes read on a second connection are the module's; when that connection cannot
    be opened (the file gone, say) the caller's connection reads them, with its errors."""
    data = queries.module_bytes(ro, 1)
    beside = code_prepared._ModuleRead(queries.database_file(ro), 1)
    assert beside.result(ro)[0] == data
    gone = code_prepared._ModuleRead(str(tmp_path / "missing.db"), 1)
    assert gone.result(ro) == (data, None)
    with pytest.raises(UnknownVersionError):
        code_prepared._ModuleRead(str(tmp_path / "missing.db"), 999).result(ro)


def test_code_key_is_the_file_and_the_change_token(ro, demo_kb):
    """One statement gives what database_file and change_token give, on a KB from before
    analysis runs were recorded too, and in memory."""
    assert code_key(ro) == (queries.database_file(ro), queries.change_token(ro))
    rw = sqlite3.connect(demo_kb)
    rw.execute("DROP TABLE analysis_runs")
    rw.commit()
    try:
        assert code_key(rw) == (queries.database_file(rw), queries.change_token(rw))
        assert code_key(rw)[1][2] == 0
    finally:
        rw.close()
    mem = sqlite3.connect(":memory:")
    mem.executescript(
        "CREATE TABLE versions(id INTEGER PRIMARY KEY);"
        "CREATE TABLE annotation_events(id INTEGER PRIMARY KEY);"
        "INSERT INTO versions VALUES (4);"
    )
    assert code_key(mem) == ("", (4, 0, 0)) == ("", queries.change_token(mem))


def test_threads_that_waited_for_a_preparation_go_newest_first(ro, monkeypatch):
    """Three threads wait for one preparation (the studio's C, call graph, then its first
    disassembly window): all get the one prepared module, the last to ask first."""
    monkeypatch.setattr(code_prepared, "WAITER_STAGGER", 0.2)
    release = threading.Event()
    real = code_prepared._prepare

    def slow(*args, **kwargs):
        release.wait(30)
        return real(*args, **kwargs)

    monkeypatch.setattr(code_prepared, "_prepare", slow)
    done: list[tuple[str, object]] = []

    def ask(name: str) -> None:
        conn = open_ro(queries.database_file(ro))
        try:
            done.append((name, code_service.code_module(conn, 1)))
        finally:
            conn.close()

    def build():
        with code_prepared._LOCK:
            return next(iter(code_prepared._BUILDING.values()), None)

    threads = []
    for n, name in enumerate(("preparer", "first", "second", "last"), start=1):
        t = threading.Thread(target=ask, args=(name,))
        t.start()
        threads.append(t)
        deadline = time.monotonic() + 60  # (each has arrived before the next starts)
        while (build() is None or build().arrivals < n) and time.monotonic() < deadline:
            time.sleep(0.005)
    release.set()
    for t in threads:
        t.join(30)
    waiters = [name for name, _cm in done if name != "preparer"]
    assert waiters == ["last", "second", "first"] and len(done) == 4
    assert len({id(cm) for _name, cm in done}) == 1
