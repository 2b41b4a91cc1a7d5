"""The end of an ingest (kbtool.services.ingest_end): the collector's survivors aged, the
working data freed a piece at a time beside the COMMIT, nothing shared touched."""

from __future__ import annotations

import gc

from kbtool.services import ingest_end
from kbtool.wasm import kept as kept_mod


class _Obj:
    pass


class _Finalized:
    def __init__(self, seen: list) -> None:
        self.parts = list(range(100))
        self.seen = seen

    def __del__(self) -> None:  # reads its attributes: they must still be there
        self.seen.append(len(self.parts))


def test_empty_frees_only_what_no_one_else_holds() -> None:
    shared_list = list(range(500))
    shared_dict = {i: str(i) for i in range(300)}
    holder = _Obj()
    holder.rows = [{"a": i} for i in range(5000)]
    holder.keep = shared_list
    kept_obj = _Obj()
    kept_obj.values = list(range(50))
    seen: list[int] = []
    frame = {
        "rows": [[i] * 3 for i in range(10_000)],
        "shared": shared_list,
        "table": shared_dict,
        "holder": holder,
        "kept": kept_obj,
        "finalized": _Finalized(seen),
        "small": [1, 2],
    }
    trash = [frame, [dict(frame)], (shared_list, [shared_dict])]
    del holder, frame
    ingest_end.empty(trash)
    assert trash == []
    assert shared_list == list(range(500))
    assert shared_dict == {i: str(i) for i in range(300)}
    assert kept_obj.values == list(range(50))  # (held here: not emptied)
    assert seen == [100]  # (a finalizer's object freed whole)


def test_free_meanwhile_empties_in_a_thread() -> None:
    trash = [{"x": list(range(3000)), "y": [[i] for i in range(5000)]}]
    assert ingest_end.free_meanwhile(trash, ingest_end.THREAD_BYTES - 1) is None
    assert len(trash) == 1  # (a small module's: freed by its frames as before)
    t = ingest_end.free_meanwhile(trash, ingest_end.THREAD_BYTES)
    t.join(timeout=10)
    assert not t.is_alive()
    assert trash == []


def test_gc_paused_aged_leaves_no_young_survivors_and_thaws_only_its_own() -> None:
    was = gc.isenabled()
    gc.enable()
    try:
        with ingest_end.gc_paused_aged():
            assert not gc.isenabled()
            made = [[i] for i in range(20_000)]
        assert gc.isenabled()
        assert gc.get_count()[0] < 1000  # (the survivors joined the oldest generation)
        assert len(made) == 20_000
        # something frozen on purpose (services.heap's policy): left frozen
        gc.freeze()
        frozen = gc.get_freeze_count()
        with ingest_end.gc_paused_aged():
            more = [[i] for i in range(1000)]
        assert gc.isenabled()
        assert gc.get_freeze_count() == frozen
        assert len(more) == 1000
    finally:
        gc.unfreeze()
        if not was:
            gc.disable()


def test_gc_paused_aged_inside_a_paused_block_changes_nothing() -> None:
    was = gc.isenabled()
    gc.disable()
    try:
        with ingest_end.gc_paused_aged():
            pass
        assert not gc.isenabled()
    finally:
        if was:
            gc.enable()


def test_gc_paused_aged_leaves_the_heap_policy_alone(monkeypatch) -> None:
    from kbtool.services import heap

    monkeypatch.setattr(heap, "enabled", lambda: True)
    monkeypatch.setattr(gc, "get_freeze_count", lambda: 0)  # (not even counted)
    frozen: list[int] = []
    monkeypatch.setattr(gc, "freeze", lambda: frozen.append(1))
    was = gc.isenabled()
    gc.enable()
    try:
        with ingest_end.gc_paused_aged():
            pass
        assert gc.isenabled() and frozen == []
    finally:
        if not was:
            gc.disable()


def test_nothing_is_kept_unless_the_process_ends_after(monkeypatch) -> None:
    monkeypatch.setattr(kept_mod, "_KEPT", None)
    trash = [[1, 2, 3]]
    assert ingest_end.kept(trash) is False
    assert not kept_mod.keeping()
    ingest_end.keep_also(trash)
    assert kept_mod._KEPT is None
    ingest_end.keep_until_exit()
    ingest_end.keep_until_exit()  # (twice: the same list)
    assert kept_mod._KEPT == []
    assert kept_mod.keeping()
    assert ingest_end.kept(trash) is True
    ingest_end.keep_also(trash[0], "x")
    assert kept_mod._KEPT == [trash, ([1, 2, 3], "x")]


def test_an_ingest_that_keeps_its_data_stores_the_same_rows(tmp_path, monkeypatch) -> None:
    """With :func:`keep_until_exit` (the command line's own ingest), the ingest's working
    data goes to the kept list, the facts and call-edge rows, data rows and the version are
    the ones an ingest that frees it stores."""
    from kbtool.kb.db import open_rw
    from kbtool.services.ingest import ingest_file
    from tests.support.paths import ROOT

    demo = ROOT / "kbtool" / "demo" / "zstd-1.5.5.wasm"
    tables = (
        "SELECT idx, body_hash, shape_hash, instr_count FROM functions",
        "SELECT * FROM facts",
        "SELECT * FROM call_edges",
        "SELECT * FROM data_items",
    )
    dumps = []
    for keep in (False, True):
        monkeypatch.setattr(kept_mod, "_KEPT", None)
        if keep:
            ingest_end.keep_until_exit()
        conn = open_rw(tmp_path / f"kb{int(keep)}.db")
        ingest_file(conn, demo)
        dumps.append([sorted(repr(tuple(r)) for r in conn.execute(q).fetchall()) for q in tables])
        conn.close()
        if keep:
            # the data walk, item rows, references' rows, trash (what is dropped before a
            # first version's peak, at the references' write, is freed: it would raise it)
            assert len(kept_mod._KEPT) >= 4
    assert dumps[0] == dumps[1]
    assert all(dumps[0])


def test_a_later_ingest_stops_keeping(tmp_path, monkeypatch) -> None:
    """A later version's peak memory is at its end: once its parent is known, the ingest
    frees as a long-lived process does (:func:`kbtool.wasm.kept.stop_keeping`)."""
    from kbtool.kb.db import open_rw
    from kbtool.services.ingest import ingest_file
    from tests.support.paths import ROOT

    monkeypatch.setattr(kept_mod, "_KEPT", None)
    conn = open_rw(tmp_path / "kb.db")
    ingest_end.keep_until_exit()
    ingest_file(conn, ROOT / "kbtool" / "demo" / "zstd-1.5.5.wasm")
    assert kept_mod.keeping()
    ingest_file(conn, ROOT / "kbtool" / "demo" / "zstd-1.5.6.wasm")
    assert not kept_mod.keeping()
    conn.close()
