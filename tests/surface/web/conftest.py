"""Fixtures of the web tests: one KB per session, built through the real code.

The demo KB (two real zstd releases through ``kbtool.services.demo`` / ingest, which also
stores the (parent, new) diff report), then, through the gate, hostile names (``<script>`` /
``<img onerror>`` as oracle and export names, HTML in evidence and summaries), bidi and
zero-width characters, and a short annotation history (agent guess, oracle overwrite, refused
agent write) so the dashboard's escaping and history panel have something to show. Test
modules use the fixtures below and the helpers of ``tests.support.web``; none imports another.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from kbtool.kb import queries
from kbtool.kb.db import open_ro, open_rw
from kbtool.kb.gate import upsert_symbol
from tests.support.web import (
    BIDI_NAME,
    BIDI_SUMMARY,
    XSS_IMG,
    XSS_SCRIPT,
    XSS_SUMMARY,
    copy_kb,
    launch_chromium,
)


@dataclass
class WebKB:
    path: Path
    version_ids: list[int]
    script_sid: str  # named XSS_SCRIPT (oracle)
    img_sid: str  # named XSS_IMG (export)
    bidi_sid: str  # named BIDI_NAME (oracle), summary BIDI_SUMMARY
    history_sid: str  # agent guess -> oracle -> refused agent write
    unnamed_sid: str  # has no annotation
    human_name: str  # a searchable human name


def _name(conn, sid: str, name: str, provenance: str, *, written: bool = True, **kw) -> None:
    decision = upsert_symbol(conn, sid, name, provenance=provenance, **kw)
    if decision["written"] is not written:
        raise AssertionError(f"fixture write of {name!r}: {decision}")


def build_web_kb(path: Path) -> WebKB:
    """The demo KB plus the hostile names and the history story (see the module docstring)."""
    from kbtool.services.demo import build_demo

    build_demo(path, echo=lambda _msg: None)
    conn = open_rw(path)
    try:
        vids = [v["id"] for v in queries.list_versions(conn)]
        assert len(vids) >= 2, "the demo KB has fewer than two versions"
        last = vids[-1]
        fns = queries.list_functions(conn, last)
        unnamed = [f for f in fns if f["name"] is None]
        # unnamed functions present in every version, so history has more than one row
        pool = [
            f["stable_id"]
            for f in unnamed
            if len(queries.functions_by_stable_id(conn, f["stable_id"])) == len(vids)
        ]
        script_sid, img_sid, hist_sid, bidi_sid = pool[:4]
        _name(
            conn,
            script_sid,
            XSS_SCRIPT,
            "oracle",
            confidence=0.9,
            actor="oracle:test",
            summary=XSS_SUMMARY,
            evidence={"note": XSS_IMG, "source": "<script>alert(1)</script>"},
        )
        _name(
            conn,
            img_sid,
            XSS_IMG,
            "export",
            confidence=0.7,
            actor="ingest:export",
            evidence={"export": XSS_SCRIPT},
        )
        _name(
            conn,
            bidi_sid,
            "bidi_placeholder",
            "oracle",
            confidence=0.8,
            actor="oracle:test",
            evidence={"note": BIDI_NAME},
        )
        # The gate now refuses bidi controls in names and summaries; a KB written by an older
        # kbtool may still hold them, and the page must show them visibly. Simulate that KB.
        conn.execute(
            "UPDATE symbols SET name = ?, summary = ? WHERE stable_id = ?",
            (BIDI_NAME, BIDI_SUMMARY, bidi_sid),
        )
        conn.execute(
            "UPDATE annotation_events SET new_name = ? WHERE stable_id = ?"
            " AND new_name = 'bidi_placeholder'",
            (BIDI_NAME, bidi_sid),
        )
        _name(
            conn,
            hist_sid,
            "maybe_memcpy",
            "agent",
            confidence=0.35,
            actor="agent:offline",
            evidence={"why": "loop copying bytes"},
            version_id=vids[0],
        )
        _name(
            conn,
            hist_sid,
            "ZSTD_copy16",
            "oracle",
            confidence=0.9,
            actor="oracle:test",
            evidence={"match": "symbolised build"},
            version_id=last,
        )
        _name(
            conn,
            hist_sid,
            "copy_bytes",
            "agent",
            confidence=0.5,
            actor="agent:mcp",
            version_id=last,
            written=False,
        )  # refused: oracle is higher
        human = [f["name"] for f in fns if f["provenance"] == "human"]
        assert human, "the demo KB has no human names"
        taken = {script_sid, img_sid, hist_sid, bidi_sid}
        left = [f["stable_id"] for f in unnamed if f["stable_id"] not in taken]
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # one stable file for read-only servers
    finally:
        conn.close()
    return WebKB(
        path=path,
        version_ids=vids,
        script_sid=script_sid,
        img_sid=img_sid,
        bidi_sid=bidi_sid,
        history_sid=hist_sid,
        unnamed_sid=left[0],
        human_name=human[0],
    )


@pytest.fixture(scope="session")
def web_kb(tmp_path_factory) -> WebKB:
    """The session's web-test KB (tests that write use ``kb_copy``)."""
    return build_web_kb(tmp_path_factory.mktemp("webkb") / "web.db")


@pytest.fixture(scope="session")
def kb(web_kb) -> WebKB:
    return web_kb


@pytest.fixture()
def kb_copy(web_kb, tmp_path) -> tuple[WebKB, Path]:
    """The KB and a private copy of its file."""
    return web_kb, copy_kb(web_kb, tmp_path / "kb.db")


@pytest.fixture()
def read_only(web_kb):
    """A read-only connection to the session KB, closed after the test."""
    conn = open_ro(web_kb.path)
    yield conn
    conn.close()


@pytest.fixture(scope="module")
def browser():
    """A headless Chromium (Debian's, through Playwright; no browser download) per test module."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = launch_chromium(pw)
        yield b
        b.close()
