"""The words a view's name must avoid: read by code point, the same as ``\\w`` reads them."""

from __future__ import annotations

import re

from kbtool.lift.lifter.views import _word_end, _words_from


def test_word_end_stops_where_a_regex_word_run_stops():
    text = "L12;Lx_9(L3é2 Lñ+L٣4 L_\u00b2-L\x7f"
    for start in range(len(text) + 1):
        want = re.compile(r"\w*").match(text, start)
        assert want is not None
        assert _word_end(text, start) == want.end(), (text, start)


def test_words_from_reads_labels_not_parts_of_other_words():
    body = "goto L3; L3:; xL4 = 12L5 + NULL; Lé7 = L_8; (L9)"
    assert _words_from(body, "L") == {"L3", "L5", "Lé7", "L_8", "L9"}
    assert _words_from(body, "N") == {"NULL"}
    assert _words_from(body, "1") == set()  # a digit starts no word
