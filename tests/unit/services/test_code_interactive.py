"""What keeps the code views interactive on big modules (issue 30): the function diff pairs
callees from the prepared versions (no whole-version read per diff), threads asking for the
same version at once prepare it once, and the collector's long-lived policy
(:mod:`kbtool.services.heap`) freezes what a cache keeps and still frees cyclic garbage
once the frozen set has grown."""

from __future__ import annotations

import gc
import threading
import weakref

import pytest

from kbtool.kb import queries
from kbtool.kb.db import open_ro
from kbtool.services import code, code_prepared, heap
from tests.support.codefixtures import (  # noqa: F401  (fixtures)
    code_conn_fixture,
    code_kb_fixture,
)

MAIN = 4


@pytest.fixture
def conn(code_conn):
    return code_conn


def test_function_diff_reads_no_whole_version(conn, monkeypatch):
    """The callee pairing uses the prepared versions' identities: the same marks as before,
    without listing every function of both versions for each diff."""

    def whole_version(*_a, **_k):
        raise AssertionError("a function diff listed a whole version")

    code.code_module(conn, 1)
    code.code_module(conn, 2)
    monkeypatch.setattr(queries, "list_functions", whole_version)
    d = code.function_diff_at(conn, 1, MAIN, 2, MAIN)
    changed = [r for r in d["rows"] if r["op"] == "changed"]
    assert [r["kinds"] for r in changed] == [["callee"], ["const"]]
    same = code.callee_pairing(conn, 1, 2)
    assert same(MAIN, MAIN) and not same(MAIN, MAIN - 1)


def test_one_preparation_for_threads_asking_at_once(code_kb, monkeypatch):
    """A second thread asking for a version being prepared waits for it: one preparation."""
    code.clear_cache()
    real = code_prepared.prepare
    calls: list[int] = []
    entered, second_in = threading.Event(), threading.Event()

    def counted(*args, **kwargs):
        calls.append(1)
        entered.set()
        if len(calls) == 1:  # the first holds on until the second preparing (old) or not
            second_in.wait(1.0)
        else:
            second_in.set()
        return real(*args, **kwargs)

    monkeypatch.setattr(code_prepared, "prepare", counted)
    got: list = []

    def ask() -> None:
        c = open_ro(code_kb)
        try:
            got.append(code.code_module(c, 1))
        finally:
            c.close()

    first = threading.Thread(target=ask)
    first.start()
    assert entered.wait(30)
    second = threading.Thread(target=ask)
    second.start()
    first.join(30)
    second.join(30)
    assert len(calls) == 1 and len(got) == 2 and got[0] is got[1]
    code.clear_cache()


class _Node:
    def __init__(self) -> None:
        self.me = self  # a cycle: only the collector frees it


def test_heap_policy_freezes_and_frees_cycles_after_growth(monkeypatch):
    monkeypatch.setattr(heap, "MIN_OBJECTS", 20_000)
    heap.disable()
    try:
        heap.settle()  # before enable: Python's policy untouched
        assert gc.get_freeze_count() == 0 and not heap.enabled()
        heap.enable()
        kept = [_Node() for _ in range(1000)]  # noqa: F841  (a cache)
        heap.settle()
        base = heap.stats()["frozen"]
        assert base > 0 and gc.get_freeze_count() > 0
        assert heap.stats()["collections"] == 0
        gone = _Node()
        ref = weakref.ref(gone)
        heap.settle()  # frozen now: no collection frees it
        del gone
        gc.collect()
        assert ref() is not None
        grown = [[_Node()] for _ in range(max(heap.MIN_OBJECTS, base))]  # noqa: F841
        heap.settle()  # more than doubled: one full collection, then frozen again
        assert heap.stats()["collections"] == 1 and ref() is None
        assert gc.get_freeze_count() >= base
    finally:
        heap.disable()
    assert gc.get_freeze_count() == 0


def test_scrolling_a_huge_function_renders_only_its_windows(conn):
    """Windows within a huge function's first screen answer from the instructions up to
    them; a window past it from the resume point before it: the whole listing is never
    rendered nor kept, and every window has the lines of a fresh whole render."""
    from kbtool.services import code_function

    big = 5  # 10,000 instructions (tests/support/codefixtures.py)
    first = code.code_window(conn, 1, big, kind="wasm", offset=0, limit=300)
    assert first["total"] > code.FIRST_SCREEN and first["next_offset"] == 300
    cm = code.code_module(conn, 1)
    second = code.code_window(conn, 1, big, kind="wasm", offset=300, limit=300)
    far = code.code_window(conn, 1, big, kind="wasm", offset=5000, limit=300)
    assert code_function._kept_lines(cm, big, "wasm") is None
    whole = code.disassembly(conn, 1, big)["mnemonics"].splitlines()
    assert whole[300:600] == second["lines"] and whole[5000:5300] == far["lines"]
    assert len(whole) == first["total"] == far["total"]
    code.clear_cache()
    assert code.code_window(conn, 1, big, kind="wasm", offset=5000, limit=300) == far
