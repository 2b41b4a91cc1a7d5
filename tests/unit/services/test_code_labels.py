"""The data labels the code views put in the C (issue 30: read as plain rows, not as the data
screen's item dicts): the same labels as the data model's item pages give, given names first,
zero-filled items only when referenced or named."""

from __future__ import annotations

from kbtool.kb import datamodel
from kbtool.kb.db import open_ro, open_rw
from kbtool.kb.gate import upsert_knowledge
from kbtool.services import code as code_service
from kbtool.services import knowledge
from kbtool.services.analyze import analyze_version
from kbtool.services.code_prepared import MAX_DATA_LABELS, _data_names
from kbtool.services.ingest import ingest_bytes
from tests.support.paths import corpus_file


def _from_pages(conn, vid: int) -> list[tuple]:
    given = knowledge.data_names(conn)
    items, _total = datamodel.list_items(conn, vid, offset=0, limit=MAX_DATA_LABELS)
    return [
        (i["address"], i["size"], given.get(i["data_id"]) or i["label"], i["text"])
        for i in items
        if i["kind"] != "zero" or i["refs"] or i["data_id"] in given
    ]


def test_code_labels_are_the_data_models_items(tmp_path):
    data = corpus_file("release/sql.js-1.12.0.sql-wasm.wasm").read_bytes()
    db = tmp_path / "kb.db"
    conn = open_rw(db)
    vid = ingest_bytes(conn, data, label="v1").version_id
    analyze_version(conn, vid)
    items, _total = datamodel.list_items(conn, vid, offset=0, limit=MAX_DATA_LABELS)
    zero = next(i for i in items if i["kind"] == "zero" and not i["refs"])
    text = next(i for i in items if i["kind"] != "zero" and i["refs"])
    for item, name in ((zero, "named_zero_area"), (text, "named_text")):
        decision = upsert_knowledge(
            conn,
            "data_name",
            item["data_id"],
            "",
            {"name": name},
            provenance="human",
            confidence=1.0,
            actor="human:test",
        )
        assert decision["written"], decision
    conn.close()
    ro = open_ro(db)
    try:
        _globals, labels = _data_names(ro, vid)
        assert labels == _from_pages(ro, vid)
        by_address = {a: label for a, _s, label, _t in labels}
        assert by_address[zero["address"]] == "named_zero_area"  # named: labelled though unused
        assert by_address[text["address"]] == "named_text"
        assert code_service.code_module(ro, vid).lm.names.data == labels
    finally:
        ro.close()
        code_service.clear_cache()
