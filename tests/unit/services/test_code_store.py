"""A version's preparation for the code views kept on disk (issue 30 point 1): read back by a
fresh process in a few tens of ms, the same C and disassembly as one built from the KB; a
rename or other knowledge written after it was kept is shown (never the kept names); a
damaged, truncated or foreign file is a miss (built again), never an error."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import time

import pytest

from kbtool.kb import gate, queries
from kbtool.kb.db import open_ro, open_rw
from kbtool.kb.gate_knowledge import upsert_knowledge
from kbtool.services import code as code_service
from kbtool.services import code_prepared, code_store
from tests.support.paths import ROOT


@pytest.fixture
def store(tmp_path, monkeypatch):
    d = tmp_path / "store"
    monkeypatch.setenv("KBTOOL_CODE_CACHE_DIR", str(d))
    code_service.clear_cache()
    yield d
    code_prepared.flush_store()
    code_service.clear_cache()


def _defined(conn, v: int) -> list[int]:
    return [f["index"] for f in queries.list_functions(conn, v)]  # defined ones


def _views(db, v: int, sample: int = 60) -> tuple[str, str]:
    """A fresh process's view (caches cleared): the digest of the C and of the disassembly
    of the first ``sample`` defined functions of version ``v``, and how the store was used."""
    code_service.clear_cache()
    conn = open_ro(db)
    try:
        how = code_prepared.code_module(conn, v).store
        h = hashlib.sha256()
        for i in _defined(conn, v)[:sample]:
            h.update(repr(code_service.lifted_c(conn, v, i)).encode())
            h.update(repr(code_service.disassembly(conn, v, i)).encode())
        return h.hexdigest(), how
    finally:
        conn.close()
        code_prepared.flush_store()


def _truth(db, v: int, monkeypatch) -> str:
    """The same digest with the store off (built from the KB)."""
    with monkeypatch.context() as m:
        m.setenv("KBTOOL_CODE_CACHE_DIR", "off")
        digest, how = _views(db, v)
    assert how == ""
    return digest


def test_kept_preparation_reads_back_the_same_code(demo_kb, store, monkeypatch):
    truth = _truth(demo_kb, 1, monkeypatch)
    built, how = _views(demo_kb, 1)
    assert (built, how) == (truth, "built")
    assert len(list(store.glob("*.code"))) == 1
    again, how = _views(demo_kb, 1)
    assert (again, how) == (truth, "use")


def test_rename_after_keeping_shows_the_new_name(demo_kb, store, monkeypatch):
    _views(demo_kb, 1)  # kept
    conn = open_rw(demo_kb)
    try:
        fn = queries.list_functions(conn, 1)[0]
        gate.human_rename(conn, fn["stable_id"], "renamed_after_store", actor="test")
        conn.commit()
    finally:
        conn.close()
    truth = _truth(demo_kb, 1, monkeypatch)
    digest, how = _views(demo_kb, 1)
    assert (digest, how) == (truth, "renamed")
    code_service.clear_cache()
    ro = open_ro(demo_kb)
    try:
        cm = code_prepared.code_module(ro, 1)
        assert cm.store == "use"  # kept again with the new name
        assert cm.lm.func_c[fn["index"]] == "renamed_after_store"
        assert "renamed_after_store" in repr(code_service.lifted_c(ro, 1, fn["index"]))
    finally:
        ro.close()


def test_rename_elsewhere_keeps_the_kept_one(demo_kb, store, monkeypatch):
    """A rename of a function the version does not hold leaves its kept preparation as is."""
    _views(demo_kb, 1)
    conn = open_rw(demo_kb)
    try:
        mine = {f["stable_id"] for f in queries.list_functions(conn, 1)}
        other = next(f for f in queries.list_functions(conn, 2) if f["stable_id"] not in mine)
        gate.human_rename(conn, other["stable_id"], "only_in_v2", actor="test")
        conn.commit()
    finally:
        conn.close()
    truth = _truth(demo_kb, 1, monkeypatch)
    assert _views(demo_kb, 1) == (truth, "use")


def test_other_knowledge_after_keeping_is_built_again(demo_kb, store, monkeypatch):
    _views(demo_kb, 1)
    conn = open_rw(demo_kb)
    try:
        fn = queries.list_functions(conn, 1)[0]
        d = upsert_knowledge(
            conn,
            "comment",
            fn["stable_id"],
            "",
            {"text": "kept after the store"},
            provenance="human",
            confidence=1.0,
            actor="test",
        )
        assert d["written"]
        conn.commit()
    finally:
        conn.close()
    truth = _truth(demo_kb, 1, monkeypatch)
    assert _views(demo_kb, 1) == (truth, "rebuild")


@pytest.mark.parametrize("damage", ["flip", "truncate", "empty", "garbage", "foreign"])
def test_damaged_or_foreign_file_is_built_again(demo_kb, store, monkeypatch, damage):
    truth = _truth(demo_kb, 1, monkeypatch)
    _views(demo_kb, 1)
    _views(demo_kb, 2)
    conn = open_ro(demo_kb)
    try:
        key1 = code_store.file_key(conn, str(demo_kb), 1)
        key2 = code_store.file_key(conn, str(demo_kb), 2)
    finally:
        conn.close()
    path = code_store._file(key1)
    blob = path.read_bytes()
    if damage == "flip":
        mid = len(blob) // 2
        path.write_bytes(blob[:mid] + bytes([blob[mid] ^ 0x55]) + blob[mid + 1 :])
    elif damage == "truncate":
        path.write_bytes(blob[: len(blob) - 100])
    elif damage == "empty":
        path.write_bytes(b"")
    elif damage == "garbage":
        path.write_bytes(code_store.MAGIC + os.urandom(64))
    else:  # version 2's file where version 1's should be: its key says whose it is
        shutil.copyfile(code_store._file(key2), path)
    assert code_store.load(key1) is None
    assert _views(demo_kb, 1) == (truth, "built")
    assert _views(demo_kb, 1) == (truth, "use")  # written again, whole


def test_store_off_writes_nothing(demo_kb, tmp_path, monkeypatch):
    monkeypatch.setenv("KBTOOL_CODE_CACHE_DIR", "off")
    assert code_store.store_dir() is None
    assert _views(demo_kb, 1)[1] == ""
    assert not code_store.warm_enabled()


def test_pack_rows_round_trip_and_fallbacks():
    rows = [(1, "a", None, 2), (5, "", None, 3), (1 << 40, "x\ny", "t", -1)]
    assert code_store.pack_rows(rows)[0] == "cols"
    assert code_store.unpack_rows(code_store.pack_rows(rows)) == rows
    for odd in ([(1, "a\x00b")], [(1, "\x01")], [(1 << 70, "a")], [(True, "a")], [(1.5, "a")]):
        packed = code_store.pack_rows(odd)
        assert packed[0] == "rows"
        assert code_store.unpack_rows(packed) == odd
    assert code_store.unpack_rows(code_store.pack_rows([])) == []


def test_background_command_keeps_every_version(demo_kb, store):
    env = dict(os.environ, KBTOOL_CODE_CACHE_DIR=str(store))
    cmd = [sys.executable, "-m", "kbtool.services.code_store", "--db", str(demo_kb)]
    first = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    assert [line.split(":")[1].split()[0] for line in first.stdout.splitlines()] == [
        "built",
        "built",
    ]
    assert len(list(store.glob("*.code"))) == 2
    again = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    assert [line.split(":")[1].split()[0] for line in again.stdout.splitlines()] == ["use", "use"]
    bad = subprocess.run(
        cmd[:-1] + [str(store / "missing.db")], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert bad.returncode == 1
    assert bad.stderr.startswith("error: ") and "Traceback" not in bad.stderr


def test_start_background_keeps_a_big_version(demo_kb, store, monkeypatch):
    """What ``kbtool analyze``/``ingest`` start: a detached process that keeps the version
    (a module under the size floor, or the warming off, starts nothing)."""
    conn = open_ro(demo_kb)
    try:
        assert code_store.start_background(conn, 1) is None  # KBTOOL_CODE_WARM=off in tests
        monkeypatch.setenv("KBTOOL_CODE_WARM", "on")
        assert code_store.start_background(conn, 1) is None  # the demo module is small
        pid = code_store.start_background(conn, 1, min_bytes=0)
        assert pid is not None
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:  # reaped already by subprocess' own bookkeeping
            pass
        key = code_store.file_key(conn, str(demo_kb), 1)
        for _ in range(300):  # the process is gone or about to be: its file is there
            if code_store.load(key) is not None:
                break
            time.sleep(0.1)
        assert code_store.load(key) is not None
    finally:
        conn.close()
    assert _views(demo_kb, 1)[1] == "use"


def test_another_history_in_the_same_file_is_built_again(demo_kb, store, monkeypatch):
    """A copy of the KB put back over the file (same path, same inode), then as many
    decisions as the kept preparation saw, but other ones: not taken for the kept one."""
    backup = demo_kb.read_bytes()
    fns = _defined_rows(demo_kb)

    def rename(stable_id: str, name: str) -> None:
        conn = open_rw(demo_kb)
        try:
            gate.human_rename(conn, stable_id, name, actor="test")
            conn.commit()
        finally:
            conn.close()

    rename(fns[0], "first_history")
    _views(demo_kb, 1)  # kept after the first history's decision
    with open(demo_kb, "r+b") as f:  # the copy put back in place
        f.write(backup)
        f.truncate()
    rename(fns[1], "second_history")  # the same number of decisions, another one
    truth = _truth(demo_kb, 1, monkeypatch)
    assert _views(demo_kb, 1) == (truth, "rebuild")


def _defined_rows(db) -> list[str]:
    conn = open_ro(db)
    try:
        return [f["stable_id"] for f in queries.list_functions(conn, 1)]
    finally:
        conn.close()


def test_flush_waits_for_the_delayed_write_under_way(monkeypatch):
    """The delayed write takes a preparation and is still writing it when a flush looks: the
    flush returns only once it is on disk (CI once read a file the timer had not renamed
    into place yet)."""
    import threading

    started, release, written = threading.Event(), threading.Event(), []

    def slow_save(key, kept, create=True):
        started.set()
        release.wait(5)
        written.append(key)
        return True

    monkeypatch.setattr(code_prepared.code_store, "save", slow_save)
    monkeypatch.setitem(code_prepared._TO_KEEP, ("k",), object())
    timer = threading.Thread(target=code_prepared.flush_store)  # what the timer runs
    timer.start()
    assert started.wait(5)
    threading.Timer(0.2, release.set).start()
    code_prepared.flush_store()
    assert written == [("k",)]
    timer.join(5)
