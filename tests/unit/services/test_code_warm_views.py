"""``code.warm_views`` (the TUI's preparation thread): what a version's first code open built
(the neighbours' tables, the structs' layouts) is built ahead, and every answer after it is
the one a version not warmed gives."""

from __future__ import annotations

from kbtool.services import code
from tests.support.codefixtures import (  # noqa: F401  (fixtures)
    code_conn_fixture,
    code_kb_fixture,
)


def _answers(conn) -> list:
    cm = code.code_module(conn, 1)
    out = []
    for i in range(cm.lm.module.num_func_imports, cm.num_functions):
        d, _records = code.function_code(conn, 1, i)
        out.append((code.neighbours(conn, 1, i), d["lifted_c"], d["mnemonics"]))
    return out


def test_warm_views_builds_ahead_and_answers_the_same(code_conn):
    cold = _answers(code_conn)
    code.clear_cache()
    code.warm_views(code_conn, 1)
    cm = code.code_module(code_conn, 1)
    assert cm.parsed.in_table is not None
    assert cm.parsed.ref_sites is not None
    assert cm.parsed.code_starts == [s for s, _e in cm.lm.module.code]
    assert cm.fields is not None
    code.warm_views(code_conn, 1)  # again: nothing more to build
    assert _answers(code_conn) == cold
