"""``upsert_symbols``' "no change" path skips the evidence excerpt it made only for its errors
when the evidence is text only (``gate._text_only``: a later named module's carried names,
``{"source": "name-section"}``), and still makes it, with the same error as
``upsert_symbol``, for any other evidence."""

from __future__ import annotations

import pytest

from kbtool.kb import gate
from kbtool.kb.gate import upsert_symbol, upsert_symbols
from testkit.kb import bare_kb, frozen_time

SIDS = [f"dddd{i:012x}" for i in range(4)]


class _BadKey:
    def __str__(self) -> str:
        raise ValueError("no text for this key")


def test_text_only() -> None:
    assert gate._text_only(None)
    assert gate._text_only({})
    assert gate._text_only({"source": "name-section", "module": "env"})
    assert not gate._text_only({"source": "name-section", "aliases": ["a"]})
    assert not gate._text_only({"n": 1})
    assert not gate._text_only({1: "x"})
    assert not gate._text_only([("source", "x")])
    assert not gate._text_only("")
    assert not gate._text_only(type("D", (dict,), {})(source="x"))  # a subclass: excerpt runs


def test_no_change_skips_the_excerpt_only_for_text(tmp_path, monkeypatch) -> None:
    with frozen_time():
        conn = bare_kb(tmp_path / "kb.db", SIDS)
        try:
            for sid in SIDS:
                upsert_symbol(conn, sid, "same", provenance="export", confidence=0.9, actor="t")
            made: list[object] = []
            real = gate.excerpt
            monkeypatch.setattr(gate, "excerpt", lambda v, *a: made.append(v) or real(v, *a))
            proposals = [
                (SIDS[0], "same", 0.9, {"source": "export"}),  # text: no excerpt
                (SIDS[1], "same", 0.5, None),  # none: no excerpt
                (SIDS[2], "same", 0.9, {"source": "export", "n": 3}),  # an int: excerpt
                (SIDS[3], "same", 0.9, {"source": "export", "aliases": ["x"]}),  # a list
            ]
            got = upsert_symbols(conn, proposals, provenance="export", actor="i", version_id=1)
            assert got == [{"written": False, "reason": "no change"}] * 4
            assert made == [{"source": "export", "n": 3}, {"source": "export", "aliases": ["x"]}]
        finally:
            conn.close()


def test_no_change_raises_as_upsert_symbol_for_bad_evidence(tmp_path) -> None:
    with frozen_time():
        conn = bare_kb(tmp_path / "kb.db", SIDS)
        try:
            upsert_symbol(conn, SIDS[0], "same", provenance="export", confidence=0.9, actor="t")
            bad = {_BadKey(): "x"}
            with pytest.raises(ValueError, match="no text for this key"):
                upsert_symbol(
                    conn,
                    SIDS[0],
                    "same",
                    provenance="export",
                    confidence=0.9,
                    actor="t",
                    evidence=bad,
                )
            with pytest.raises(ValueError, match="no text for this key"):
                upsert_symbols(
                    conn,
                    [(SIDS[0], "same", 0.9, bad)],
                    provenance="export",
                    actor="t",
                    version_id=1,
                )
        finally:
            conn.close()
