"""A version's function list prepares it for the code tools in the background (issue 30):
``list_functions`` is how an agent opens a version, and its code is what it reads next.
The tool's answer and signature are those of the tool it wraps; the real stdio client
still lists and calls it (tests/surface/mcp/test_code_mcp.py)."""

from __future__ import annotations

import inspect

from kbtool.kb.db import open_ro
from kbtool.mcp import server
from kbtool.services import code, code_prepared
from tests.support.codefixtures import code_kb_fixture  # noqa: F401  (fixture)


def test_list_functions_prepares_its_version(code_kb):
    code.clear_cache()
    spec = next(s for s in server.tool_specs(code_kb, RuntimeError) if s.name == "list_functions")
    tool = server._prepares_ahead(spec.fn, code_kb)
    assert inspect.signature(tool) == inspect.signature(spec.fn)
    conn = open_ro(code_kb)
    try:
        assert not code.is_cached(conn, 2)
        assert tool(version_id=2) == spec.fn(version_id=2)
        code_prepared._SOON.submit(lambda: None).result(timeout=60)  # one thread, in order
        assert code.is_cached(conn, 2)
    finally:
        conn.close()
        code.clear_cache()
