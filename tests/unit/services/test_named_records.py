"""Records read by position became named tuples (issue #25 point 5): function addresses parsed
from ``2:1031``/``#1031`` and the prepared code module's per-function KB identities."""

from __future__ import annotations

import pytest

from kbtool.kb import queries
from kbtool.kb.db import open_ro
from kbtool.kb.errors import ImportedFunctionError
from kbtool.services import nav
from kbtool.services.code_prepared import FunctionIdentity, code_module
from tests.support.codefixtures import code_kb_fixture  # noqa: F401  (fixture)


@pytest.mark.parametrize(
    ("text", "version_id", "index"),
    [("2:1031", 2, 1031), ("v2#1031", 2, 1031), ("#7", None, 7), (" 7 ", None, 7)],
)
def test_parse_ref_names_version_and_index(text, version_id, index):
    ref = nav.parse_ref(text)
    assert isinstance(ref, nav.FunctionAddress)
    assert (ref.version_id, ref.index) == (version_id, index)
    assert tuple(ref) == (version_id, index)  # still a plain pair when unpacked


def test_parse_ref_rejects_other_text():
    assert nav.parse_ref("frame_header") is None


def test_code_module_rows_are_function_identities(code_kb):
    conn = open_ro(code_kb)
    try:
        cm = code_module(conn, 1)
        main = cm.check(4)
        assert isinstance(main, FunctionIdentity)
        fn = queries.get_function(conn, 1, 4)
        assert (main.stable_id, main.imported, main.name, main.provenance) == (
            fn["stable_id"],
            False,
            fn["name"],
            fn["provenance"],
        )
        assert all(isinstance(r, FunctionIdentity) for r in cm.rows.values())
        assert cm.rows[0].imported and cm.rows[0].import_field
        with pytest.raises(ImportedFunctionError, match=r"is an import \(.+\..+\)"):
            cm.check(0)
    finally:
        conn.close()


def test_ingest_counts_changed_bodies_from_the_named_carried_ids(tmp_path):
    from kbtool.kb.db import open_rw
    from kbtool.services.ingest import ingest_file
    from tests.support.paths import DEMO_DIR

    conn = open_rw(tmp_path / "kb.db")
    try:
        ingest_file(conn, DEMO_DIR / "zstd-1.5.5.wasm", label="a", carry=False)
        res = ingest_file(conn, DEMO_DIR / "zstd-1.5.6.wasm", label="b", carry=False)
        stored = conn.execute(
            "SELECT count(*) FROM functions WHERE version_id = 2 AND body_changed = 1"
        ).fetchone()[0]
    finally:
        conn.close()
    assert 0 < res.body_changed < res.carried
    assert res.body_changed == stored
