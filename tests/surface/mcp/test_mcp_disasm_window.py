"""``get_disassembly`` / ``get_lifted_c`` windows of a huge function (issue 30) on the real
demo KB (zstd): a window within the first screen decodes only up to it (the whole listing is
neither rendered nor kept), a later window renders it once and the next ones reuse it, and
every window's text is the one the whole listing paged gives (through the SDK's stdio client
against a real ``kbtool mcp`` process)."""

from __future__ import annotations

import pytest

pytest.importorskip("mcp.client.stdio")

from kbtool.kb.db import open_ro  # noqa: E402
from kbtool.mcp import registry  # noqa: E402
from kbtool.mcp.tools_code import MAX_CHARS, get_disassembly, get_lifted_c, page  # noqa: E402
from kbtool.services import code  # noqa: E402
from kbtool.services import code_prepared as prepared  # noqa: E402
from tests.support.mcp import mcp_session, run, text_of  # noqa: E402

WASM = ("get_disassembly", "mnemonics", (";;", ""))
C = ("get_lifted_c", "lifted_c", ("/*", " */"))


def largest(db) -> tuple[int, int]:
    """(func_index, instructions) of version 1's longest body."""
    conn = open_ro(db)
    try:
        row = conn.execute(
            "SELECT idx, instr_count FROM functions WHERE version_id = 1 AND imported = 0"
            " ORDER BY instr_count DESC LIMIT 1"
        ).fetchone()
    finally:
        conn.close()
    return row[0], row[1]


def paged_whole(db, idx: int, windows, which) -> list[str]:
    """Each window as the whole Disassembly object paged (the answer before issue 30)."""
    conn = open_ro(db)
    try:
        d = code.disassembly(conn, 1, idx)
    finally:
        conn.close()
    tool, field, comment = which
    return [
        page(d[field], o, n, tool=tool, version_id=1, func_index=idx, comment=comment)
        for o, n in windows
    ]


def windows_for(total_lines: int) -> list[tuple[int, int]]:
    return [
        (0, 200),
        (200, 200),
        (1_990, 20),  # across the first screen's end
        (2_100, 300),  # past it
        (total_lines - 150, 200),  # the last window
        (total_lines, 10),  # just past the end
        (total_lines + 500, 5),
        (0, 20_000),  # as much as one answer holds (cut at MAX_CHARS)
    ]


def test_windows_over_stdio_match_the_whole_listing(demo_kb):
    idx, n_instr = largest(demo_kb)
    assert n_instr > code.FIRST_SCREEN * 2  # a huge function for this test
    conn = open_ro(demo_kb)
    try:
        total = len(code.disassembly(conn, 1, idx)["mnemonics"].splitlines())
    finally:
        conn.close()
    wins = windows_for(total)

    async def scenario():
        async with mcp_session(demo_kb) as s:
            out = {}
            for tool in ("get_disassembly", "get_lifted_c"):
                out[tool] = [
                    text_of(
                        await s.call_tool(
                            tool, {"version_id": 1, "func_index": idx, "offset": o, "limit": n}
                        )
                    )
                    for o, n in wins
                ]
            return out

    out = run(scenario())
    assert out["get_disassembly"] == paged_whole(demo_kb, idx, wins, WASM)
    assert out["get_lifted_c"] == paged_whole(demo_kb, idx, wins, C)
    first, _, _, _, last, past, _, whole = out["get_disassembly"]
    assert f"of {total} shown" in first and "offset=200)" in first
    assert last.rstrip().endswith(f";; kbtool: lines {total - 149}-{total} of {total}")
    assert past == f";; kbtool: offset {total} is past the end: the text has {total} lines\n"
    assert len(whole) <= MAX_CHARS + 200 and "truncated: lines 1-" in whole  # the size cap


def _kept(db, idx: int):
    """(whole Disassembly object kept, listing lines kept) for version 1's ``idx``."""
    conn = open_ro(db)
    try:
        cm = prepared.code_module(conn, 1)
    finally:
        conn.close()
    with prepared._LOCK:
        whole = prepared._RESULTS.get((id(cm), idx))
        lines = prepared._LINES.get((id(cm), idx, "wasm"))
    return whole, None if lines is None else lines[1]


def test_first_screen_window_decodes_only_up_to_it(demo_kb):
    idx, _ = largest(demo_kb)
    prepared.clear_cache()
    with registry.bound(str(demo_kb)):
        first = get_disassembly(1, idx, 0, 200)
        assert _kept(demo_kb, idx) == (None, None)  # nothing whole rendered or kept
        assert len(first.splitlines()) == 201 and "offset=200)" in first
        later = get_disassembly(1, idx, 2_100, 200)  # past the first screen: its own lines
        assert _kept(demo_kb, idx) == (None, None)  # still nothing whole (issue 30 point 2)
        again = get_disassembly(1, idx, 4_000, 100)
        assert _kept(demo_kb, idx) == (None, None)
        conn = open_ro(demo_kb)
        try:
            lines = code.disassembly(conn, 1, idx)["mnemonics"].splitlines()
        finally:
            conn.close()
        assert later.splitlines()[:200] == lines[2_100:2_300]
        assert again.splitlines()[:100] == lines[4_000:4_100]
        prepared.clear_cache()
        get_lifted_c(1, idx, 0, 50)  # the C alone: no disassembly object either
        assert _kept(demo_kb, idx)[0] is None
