"""A kept code preparation read back in a long-lived process (``kbtool serve``, the TUI, MCP)
is frozen as soon as it is read (issue 30 point 1): its ~10^5 tuples and lists (a big
module's data items) are out of the young collections' reach during the rest of the
preparation (the module's parse, the struct layouts), which walked them again for ~10 ms
of a ~100 ms cold preparation on ffmpeg. The code is the same as with the store off."""

from __future__ import annotations

import gc

import pytest

from kbtool.kb.db import open_ro
from kbtool.services import code as code_service
from kbtool.services import code_prepared, code_store, heap


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("KBTOOL_CODE_CACHE_DIR", str(tmp_path / "store"))
    code_service.clear_cache()
    heap.disable()
    yield
    heap.disable()
    code_prepared.flush_store()
    code_service.clear_cache()


def _tracked(objs: list) -> bool:
    """Whether any of ``objs`` is in a collector generation (not frozen)."""
    ids = {id(o) for o in objs}
    return any(id(o) in ids for g in range(3) for o in gc.get_objects(generation=g))


def test_kept_preparation_is_frozen_before_the_parse(demo_kb, store, monkeypatch):
    conn = open_ro(demo_kb)
    try:
        code_prepared.code_module(conn, 1)
        assert code_prepared.flush_store() >= 1  # kept on disk now
        built = code_service.code_window(conn, 1, _defined(conn), kind="wasm", limit=50)
        code_service.clear_cache()

        seen: dict = {}
        load, parsed = code_store.load, code_prepared._parsed

        def loading(key):
            seen["kept"] = kept = load(key)
            return kept

        def parsing(data, digest=None, module=None):
            kept = seen["kept"]
            seen["young"] = _tracked([kept.data_items, kept.ids, *kept.ids, kept.func_c])
            return parsed(data, digest, module)

        monkeypatch.setattr(code_store, "load", loading)
        monkeypatch.setattr(code_prepared, "_parsed", parsing)
        heap.enable()  # a long-lived front-end
        cm = code_prepared.code_module(conn, 1)
        assert cm.store == "use" and seen["kept"] is not None
        assert seen["young"] is False  # frozen before the parse ran
        read_back = code_service.code_window(conn, 1, _defined(conn), kind="wasm", limit=50)
        assert read_back == built
    finally:
        conn.close()


def _defined(conn) -> int:
    row = conn.execute(
        "SELECT idx FROM functions WHERE version_id = 1 AND imported = 0"
        " ORDER BY body_size DESC LIMIT 1"
    ).fetchone()
    return int(row[0])
