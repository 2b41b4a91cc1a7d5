"""Read-only views of the KB's types (issue #27): the TUI's types screen (``T`` from the
heatmap or versions screen: the list, then the type under the cursor with its members,
offsets, sizes and where it is applied; untrusted names literal) and the web's
``/api/types`` + ``/api/types/{name}`` on a real ``kbtool serve`` (uvicorn)."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import quote

import pytest

from kbtool.kb.db import open_rw
from kbtool.kb.gate import upsert_symbol
from kbtool.services import knowledge as ks
from kbtool.services import types as ts
from kbtool.tui.screens.types import TypesScreen
from tests.support.tui import make_app, screen_text, settle
from tests.support.web import ServerProcess, request

HEADER = """
struct hist { int n; unsigned char *bytes; int bins[4]; };
union val { int i; float f; };
enum mode { M_FAST = 1, M_SLOW = 4 };
typedef struct hist hist_t;
"""
MARKUP = "[bold red]pwned[/bold red]"
INDEX = 100  # demo version 2: (i32 x6) -> i32


def with_types(db: Path) -> Path:
    conn = open_rw(db)
    try:
        sid = ks.resolve_function(conn, f"2:{INDEX}")["stable_id"]
        # an export name (any text a binary carries): shown literally, never as markup
        assert upsert_symbol(
            conn, sid, MARKUP, provenance="export", confidence=0.9, actor="export", version_id=2
        )["written"]
        assert ts.add_types(conn, HEADER)["written"] == 4
        assert ts.apply_local(conn, f"2:{INDEX}", 1, "struct hist *", param=True)["written"]
        assert ts.apply_local(conn, f"2:{INDEX}", 6, "hist_t *")["written"]
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    return db


@pytest.fixture
def types_kb(demo_kb: Path) -> Path:
    return with_types(demo_kb)


# ---------------------------------------------------------------- TUI


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_types_screen_lists_and_shows_layout(types_kb):
    app = make_app(types_kb)
    async with app.run_test(size=(100, 34)) as pilot:
        await settle(pilot)
        await pilot.press("T")  # from the heatmap
        await settle(pilot)
        assert isinstance(app.screen, TypesScreen)
        text = screen_text(app)
        for needle in ("4 type(s)", "struct hist", "union val", "enum mode", "hist_t", "typedef"):
            assert needle in text, needle
        rows = [
            ln for ln in text.splitlines() if "struct hist " in ln and "struct" in ln.split()[2:3]
        ]
        assert rows and " 24 " in rows[0] and " 3 " in rows[0]  # size, members
        await pilot.press("down", "down")  # enum mode, hist_t, struct hist (sorted)
        await settle(pilot)
        text = screen_text(app)
        assert "struct hist { int n; unsigned char *bytes; int bins[4]; };" in text
        assert "struct, 24 bytes, align 4" in text
        lines = text.splitlines()
        member = {
            ln.split()[2]: ln.split()[:2]
            for ln in lines
            if len(ln.split()) >= 4 and ln.split()[0].isdigit() and ln.split()[1].isdigit()
        }
        assert member == {"n": ["0", "4"], "bytes": ["4", "4"], "bins": ["8", "16"]}
        assert f"local 1 of {MARKUP} (v2 #{INDEX}): struct hist *" in text  # literal, not markup
        await pilot.press("escape")
        await settle(pilot)
        assert not isinstance(app.screen, TypesScreen)
        await pilot.press("v", "T")  # from the versions screen too
        await settle(pilot)
        assert isinstance(app.screen, TypesScreen)


@pytest.mark.anyio
async def test_types_screen_empty_kb_says_how_to_add(demo_kb):
    app = make_app(demo_kb)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("T")
        await settle(pilot)
        assert "no types yet: kbtool types add FILE.h" in screen_text(app)


def test_types_screen_snapshot(snap_compare, types_kb):
    async def run(pilot) -> None:
        await settle(pilot)
        await pilot.press("T", "down", "down")
        await settle(pilot)

    assert snap_compare(make_app(types_kb), terminal_size=(100, 30), run_before=run)


# ---------------------------------------------------------------- web


@pytest.fixture(scope="module")
def server(tmp_path_factory, demo_kb_master):
    import shutil

    db = tmp_path_factory.mktemp("typesweb") / "kb.db"
    shutil.copyfile(demo_kb_master, db)
    with ServerProcess(with_types(db)) as srv:
        yield srv


def get(srv, path: str) -> tuple[int, dict]:
    status, headers, body = request(srv.port, path)
    assert headers["content-type"].startswith("application/json"), headers
    return status, json.loads(body)


def test_api_types_list_and_detail(server):
    st, page = get(server, "/api/types")
    assert st == 200 and page["total"] == 4
    by = {t["name"]: t for t in page["types"]}
    assert by["struct hist"]["size"] == 24 and by["struct hist"]["fields"] == 3
    assert by["struct hist"]["uses"] == 1 and by["hist_t"]["kind"] == "typedef"
    st, one = get(server, "/api/types/" + quote("struct hist"))
    assert st == 200
    assert [(f["name"], f["offset"], f["size"]) for f in one["fields"]] == [
        ("n", 0, 4),
        ("bytes", 4, 4),
        ("bins", 8, 16),
    ]
    assert "history" not in one
    (applied,) = [a for a in one["applied"] if a["kind"] == "local_type"]
    assert applied["key"] == "1" and applied["type"] == "struct hist *"
    assert applied["function"]["name"] == MARKUP and applied["function"]["index"] == INDEX
    st, enum = get(server, "/api/types/mode")  # a bare tag finds enum mode
    assert st == 200 and enum["enumerators"] == [["M_FAST", 1], ["M_SLOW", 4]]
    st, hist = get(server, "/api/types/hist_t?history=1")
    assert st == 200 and hist["history"] and hist["history"][0]["written"]
    st, paged = get(server, "/api/types?offset=1&limit=2")
    assert st == 200 and len(paged["types"]) == 2 and paged["offset"] == 1


def test_api_types_errors(server):
    st, body = get(server, "/api/types/" + quote("struct nosuch"))
    assert st == 404 and "no type" in body["error"]
    st, body = get(server, "/api/types/" + "x" * 400)
    assert st == 400 and "\n" not in body["error"]
    st, body = get(server, "/api/types?limit=abc")
    assert st == 400
    st, body = get(server, "/api/types?limit=5000")
    assert st == 400
    st, _h, _b = request(server.port, "/api/types", method="POST")
    assert st == 405
    st, _h, js = request(server.port, "/static/types.js")
    assert st == 200 and b"typesPanel" in js


def test_types_routes_survive_hostile_input_and_write_nothing(types_kb):
    """The read-only proof of tests/surface/web/test_readonly.py, on the types routes: every injection
    in every parameter is a JSON answer below 500, other methods 405, the KB unchanged."""
    import hashlib

    from kbtool.web.router import route
    from tests.support.web import INJECTIONS, METHODS

    def fingerprint() -> str:
        return hashlib.sha256(
            types_kb.read_bytes()
            + (
                Path(str(types_kb) + "-wal").read_bytes()
                if Path(str(types_kb) + "-wal").exists()
                else b""
            )
        ).hexdigest()

    before = fingerprint()
    for p in INJECTIONS:
        for path, query in (
            ("/api/types/" + p, {}),
            ("/api/types", {"offset": [p]}),
            ("/api/types", {"limit": [p]}),
            ("/api/types/hist_t", {"history": [p]}),
        ):
            for method in METHODS:
                status, ctype, body = route(str(types_kb), path, query, method)
                assert status < 500 and b"Traceback" not in body, (path, query, body[:200])
                if status != 200:
                    assert list(json.loads(body)) == ["error"]
                if method not in ("GET", "HEAD"):
                    assert status == 405
    assert fingerprint() == before
