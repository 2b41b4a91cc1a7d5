"""``get_disassembly`` and ``get_lifted_c`` through a real ``kbtool mcp`` process and the SDK's
stdio client: the text, paging with a truncation note, and errors for bad input."""

from __future__ import annotations

import pytest

pytest.importorskip("mcp.client.stdio")

from kbtool.kb.db import open_ro  # noqa: E402
from kbtool.mcp.tools_code import MAX_CHARS, page  # noqa: E402
from kbtool.services import code  # noqa: E402
from tests.support.codefixtures import BIG_REPEAT, code_kb_fixture  # noqa: E402,F401
from tests.support.mcp import call_error, dump, mcp_session, run, text_of  # noqa: E402


def expected(db, vid: int, idx: int) -> dict:
    conn = open_ro(db)
    try:
        return code.disassembly(conn, vid, idx)
    finally:
        conn.close()


def test_code_tools_over_stdio(code_kb):
    main_ = expected(code_kb, 1, 4)
    big = expected(code_kb, 2, 5)

    async def scenario():
        async with mcp_session(code_kb) as s:
            tools = {t.name: dump(t) for t in (await s.list_tools()).tools}
            out = {"tools": tools}
            out["wasm"] = text_of(
                await s.call_tool("get_disassembly", {"version_id": 1, "func_index": 4})
            )
            out["c"] = text_of(
                await s.call_tool("get_lifted_c", {"version_id": 1, "func_index": 4})
            )
            out["greet"] = text_of(
                await s.call_tool("get_disassembly", {"version_id": 1, "func_index": 1})
            )
            out["p1"] = text_of(
                await s.call_tool(
                    "get_disassembly", {"version_id": 2, "func_index": 5, "limit": 100}
                )
            )
            out["p2"] = text_of(
                await s.call_tool(
                    "get_disassembly",
                    {"version_id": 2, "func_index": 5, "offset": 100, "limit": 100},
                )
            )
            out["full"] = text_of(
                await s.call_tool("get_disassembly", {"version_id": 2, "func_index": 5})
            )
            out["errors"] = [
                await call_error(s, "get_disassembly", version_id=1, func_index=0),
                await call_error(s, "get_lifted_c", version_id=1, func_index=6),
                await call_error(s, "get_lifted_c", version_id=9, func_index=1),
            ]
            return out

    out = run(scenario())
    for name in ("get_disassembly", "get_lifted_c"):
        schema = out["tools"][name]["inputSchema"]
        assert schema["required"] == ["version_id", "func_index"]
        assert schema["properties"]["offset"]["default"] == 0
        assert out["tools"][name]["description"]
    assert out["wasm"] == main_["mnemonics"]
    assert out["c"] == main_["lifted_c"]
    assert (
        '"</script><b>x</b>[bold red]markup[/] \\x1b[31mRED' in out["greet"]
        and "\x1b" not in out["greet"]
    )

    lines = big["mnemonics"].splitlines()
    total = len(lines)
    p1 = out["p1"].splitlines()
    assert p1[:100] == lines[:100] and len(p1) == 101
    assert p1[100] == (
        f";; kbtool: truncated: lines 1-100 of {total} shown; for the rest call"
        " get_disassembly(version_id=2, func_index=5, offset=100)"
    )
    assert out["p2"].splitlines()[:100] == lines[100:200]
    full = out["full"].splitlines()  # the default page: 2,000 lines
    assert full[:2000] == lines[:2000] and "offset=2000" in full[2000] and total > 4 * BIG_REPEAT

    imp, rng, ver = out["errors"]
    assert "function 0 of version 1 is an import (env.log)" in imp
    assert "version 1 has no function 6" in rng
    assert "unknown version id 9" in ver and "list_versions" in ver


def test_page_is_bounded_by_size():
    text = "\n".join("x" * 1000 for _ in range(500))  # 500 KB
    out = page(
        text, 0, 20_000, tool="get_lifted_c", version_id=1, func_index=2, comment=("/*", " */")
    )
    assert len(out) <= MAX_CHARS + 200
    last = out.splitlines()[-1]
    assert last.startswith("/* kbtool: truncated: lines 1-99 of 500 shown") and last.endswith(
        "offset=99) */"
    )
    tail = page(text, 499, 10, tool="t", version_id=1, func_index=2, comment=(";;", ""))
    assert tail.splitlines() == ["x" * 1000, ";; kbtool: lines 500-500 of 500"]
    past = page(text, 900, 10, tool="t", version_id=1, func_index=2, comment=(";;", ""))
    assert "past the end" in past
