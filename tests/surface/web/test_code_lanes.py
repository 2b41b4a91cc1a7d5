"""A cheap code request never waits behind an expensive one (issue 30): while the studio's
C window (a huge function's lift) and its call graph hold both expensive slots, the first
screen of the disassembly it shows meanwhile is still answered at once; another C window
still waits for a slot (then 503), as before."""

from __future__ import annotations

import threading

from kbtool.kb.db import open_ro
from kbtool.services import code as code_service
from kbtool.web import router
from tests.support.web import held_client


def _defined(kb) -> tuple[int, int]:
    """(version id, index) of a defined function of the demo KB."""
    vid = kb.version_ids[-1]
    conn = open_ro(kb.path)
    try:
        row = conn.execute(
            "SELECT idx FROM functions WHERE version_id = ? AND imported = 0 AND instr_count > 20"
            " ORDER BY idx LIMIT 1",
            (vid,),
        ).fetchone()
    finally:
        conn.close()
    return vid, row[0]


def test_classification():
    assert router.is_expensive("/api/disasm/1/5")  # the whole Disassembly object
    assert router.is_expensive("/api/disasm/1/5", {"kind": ["c"], "limit": ["300"]})
    assert router.is_expensive("/api/callgraph/1")
    far = str(code_service.FIRST_SCREEN * 10)  # a screen anywhere: its own lines (issue 30)
    assert not router.is_expensive("/api/disasm/1/5", {"kind": ["wasm"], "offset": [far]})
    more = str(code_service.FIRST_SCREEN + 1)  # more than a screen at once
    assert router.is_expensive("/api/disasm/1/5", {"kind": ["wasm"], "limit": [more]})
    assert not router.is_expensive("/api/disasm/1/5", {"kind": ["wasm"], "limit": ["300"]})
    assert not router.is_expensive("/api/disasm/1/5", {"offset": ["300"], "limit": ["300"]})
    # a malformed window is answered 400 at once by the handler, never held for a slot
    assert not router.is_expensive("/api/disasm/1/5", {"kind": ["wasm"], "offset": ["x"]})


def test_first_screen_does_not_wait_behind_lift_and_callgraph(kb, monkeypatch):
    vid, idx = _defined(kb)
    client, release, entered = held_client(
        monkeypatch,
        kb.path,
        lambda p, q: p.startswith("/api/callgraph/") or q.get("kind") == ["c"],
    )
    c_window = f"/api/disasm/{vid}/{idx}?kind=c&offset=0&limit=300"
    results: dict[str, tuple[int, dict]] = {}

    def get(name: str, url: str) -> None:
        r = client.get(url)
        results[name] = (r.status_code, r.json())

    studio = [
        threading.Thread(target=get, args=("c", c_window)),
        threading.Thread(target=get, args=("graph", f"/api/callgraph/{vid}")),
    ]
    for t in studio:
        t.start()
    try:
        for _ in studio:
            assert entered.acquire(timeout=30)  # both expensive slots are taken
        meanwhile = client.get(f"/api/disasm/{vid}/{idx}?kind=wasm&offset=0&limit=300")
        assert meanwhile.status_code == 200
        body = meanwhile.json()
        whole = client.get(f"/api/disasm/{vid}/{idx}?kind=wasm&offset=0&limit=20000")
        assert whole.status_code == 503  # more than a screen: an expensive request
        deep = client.get(f"/api/disasm/{vid}/{idx}?kind=wasm&offset=5&limit=300")
        assert deep.status_code == 200 and deep.json()["offset"] == 5  # any screen: at once
        assert body["lines"] and body["offset"] == 0 and body["kind"] == "wasm"
        another_c = client.get(f"/api/disasm/{vid}/{idx + 1}?kind=c&offset=0&limit=300")
        assert another_c.status_code == 503 and "busy" in another_c.json()["error"]
    finally:
        release.set()
        for t in studio:
            t.join(30)
    assert results["c"][0] == 200 and results["graph"][0] == 200
    assert results["c"][1]["kind"] == "c" and results["c"][1]["lines"]
