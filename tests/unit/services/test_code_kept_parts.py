"""A version's kept preparation read back cheaply (issue 30 point 1): the module's sections
rebuilt from the kept file instead of parsing the module again, the recovered structs laid
out only when the C asks, mostly-None columns kept sparse; the code shown is the same as a
preparation built from the KB, and a kept module from another parser is parsed again."""

from __future__ import annotations

import hashlib

import pytest

from kbtool.cli import main
from kbtool.kb import queries
from kbtool.kb.db import open_ro
from kbtool.services import code as code_service
from kbtool.services import code_module_kept, code_prepared, code_store
from kbtool.services.code_pages import listing_page
from kbtool.services.code_structs import StructFields
from kbtool.wasm.reader import parse_module


@pytest.fixture
def store(tmp_path, monkeypatch):
    d = tmp_path / "store"
    monkeypatch.setenv("KBTOOL_CODE_CACHE_DIR", str(d))
    code_service.clear_cache()
    yield d
    code_prepared.flush_store()
    code_service.clear_cache()


def _views(db, v: int) -> tuple[str, str]:
    """A fresh process's views (caches cleared): a digest of every defined function's C and
    disassembly, and how the store was used."""
    code_service.clear_cache()
    conn = open_ro(db)
    try:
        how = code_prepared.code_module(conn, v).store
        h = hashlib.sha256()
        for f in queries.list_functions(conn, v):
            h.update(repr(code_service.lifted_c(conn, v, f["index"])).encode())
            h.update(repr(code_service.disassembly(conn, v, f["index"])).encode())
        return h.hexdigest(), how
    finally:
        conn.close()
        code_prepared.flush_store()


def _truth(db, v: int, monkeypatch) -> str:
    with monkeypatch.context() as m:
        m.setenv("KBTOOL_CODE_CACHE_DIR", "off")
        digest, how = _views(db, v)
    assert how == ""
    return digest


def _parses(monkeypatch) -> list[int]:
    calls: list[int] = []

    def counted(data):
        calls.append(len(data))
        return parse_module(data)

    monkeypatch.setattr(code_prepared, "parse_module", counted)
    return calls


def test_kept_module_is_rebuilt_not_parsed(demo_kb, store, monkeypatch):
    truth = _truth(demo_kb, 1, monkeypatch)
    calls = _parses(monkeypatch)
    assert _views(demo_kb, 1) == (truth, "built")
    assert len(calls) == 1
    assert _views(demo_kb, 1) == (truth, "use")
    assert len(calls) == 1  # read back: the sections come from the kept file


def test_kept_module_of_another_parser_is_parsed_again(demo_kb, store, monkeypatch):
    truth = _truth(demo_kb, 1, monkeypatch)
    _views(demo_kb, 1)  # kept
    monkeypatch.setattr(code_module_kept, "_STAMP", ["another parser"])
    calls = _parses(monkeypatch)
    assert _views(demo_kb, 1) == (truth, "use")
    assert len(calls) == 1


def test_struct_layouts_wait_for_the_c(demo_kb, store, monkeypatch):
    conn = open_ro(demo_kb)
    try:
        if not queries.structs(conn, 2):
            assert main(["--db", str(demo_kb), "analyze", "2"]) == 0
        structs = queries.structs(conn, 2)
    finally:
        conn.close()
    func = next(m["func_index"] for s in structs for m in s.get("members") or [])
    truth = _truth(demo_kb, 2, monkeypatch)
    assert _views(demo_kb, 2) == (truth, "built")
    laid: list[str] = []
    layout = StructFields._layout

    def counted(st, tags):
        laid.append(st.get("name"))
        return layout(st, tags)

    monkeypatch.setattr(StructFields, "_layout", staticmethod(counted))
    code_service.clear_cache()
    conn = open_ro(demo_kb)
    try:
        assert code_prepared.code_module(conn, 2).store == "use"
        for f in queries.list_functions(conn, 2):
            assert listing_page(conn, 2, f["index"], 0, 40).lines
        assert laid == []  # the listing's pages never need a struct's layout
        c = code_service.lifted_c(conn, 2, func)
        assert laid and "))->" in c[0]
    finally:
        conn.close()
    assert _views(demo_kb, 2) == (truth, "use")


def test_freeze_gives_back_the_parsed_module(demo_kb):
    conn = open_ro(demo_kb)
    try:
        data = queries.module_bytes(conn, 1)
    finally:
        conn.close()
    m = parse_module(data)
    kept = code_module_kept.freeze(m, data)
    assert kept is not None
    assert code_module_kept.thaw(kept, data) == m
    assert code_module_kept.thaw(kept, data + b"\0") is None  # another module's bytes
    seg = next(s for s in m.data_segments if s.data)
    other = bytearray(data)
    other[seg.file_offset] ^= 0xFF  # the payload is no longer the module's bytes there
    assert code_module_kept.freeze(m, bytes(other)) is None


@pytest.mark.parametrize(
    "col",
    [
        [None, None, "a", None, None],
        [None, "", None, None, None],
        [None] * 5,
        ["x", "", None, "é\u2028", "y"],
    ],
)
def test_mostly_none_columns_kept_sparse(col):
    rows = [(k, v) for k, v in enumerate(col)]
    packed = code_store.pack_rows(rows)
    assert packed[0] == "cols"
    sparse = sum(v is None for v in col) * 2 > len(col)
    assert (packed[3][0] == "z") is sparse
    assert code_store.unpack_rows(packed) == rows
