"""The session KB of the web tests holds what they rely on (built through the real code)."""

from __future__ import annotations

from kbtool.kb import queries
from tests.support.web import BIDI_NAME, BIDI_SUMMARY, XSS_IMG, XSS_SCRIPT


def test_web_kb_holds_what_the_web_tests_need(kb, read_only) -> None:
    assert len(kb.version_ids) >= 2
    assert queries.get_symbol(read_only, kb.script_sid)["name"] == XSS_SCRIPT
    assert queries.get_symbol(read_only, kb.img_sid)["name"] == XSS_IMG
    bidi = queries.get_symbol(read_only, kb.bidi_sid)
    assert bidi["name"] == BIDI_NAME and bidi["summary"] == BIDI_SUMMARY
    assert queries.get_symbol(read_only, kb.unnamed_sid) is None
    events = queries.annotation_events(read_only, kb.history_sid)
    assert [e["written"] for e in events][-3:] == [True, True, False]
    # ingest stored the diff report of each (parent, new) pair
    a, b = kb.version_ids[-2], kb.version_ids[-1]
    assert queries.stored_diff_report(read_only, a, b) is not None
