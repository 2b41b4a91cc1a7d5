"""A view's name is checked against the function's body by searching the name itself
(kbtool/lift/lifter/views.py ``_word_in``): it must answer as the tokenizer that reads every
word starting with the name's first character (``_words_from``) does, on any text."""

from __future__ import annotations

import random

from kbtool.lift.lifter import views

_ALPHABET = ["L", "P", "V", "_", "0", "1", "5", "x", "é", "١", " ", ";", "(", "\n", "L5", "P0"]
_NAMES = ["L", "L5", "L55", "P0", "P", "V_p0", "V_p0_", "x", "_", "é1", "5"]


def test_the_name_search_agrees_with_the_word_reader_on_random_text():
    rng = random.Random(28)
    for _ in range(3000):
        body = "".join(rng.choice(_ALPHABET) for _ in range(rng.randint(0, 24)))
        for n in _NAMES:
            assert views._word_in(body, n) == (n in views._words_from(body, n[0])), (body, n)


def test_a_name_inside_a_word_or_after_a_letter_is_not_a_word_but_after_digits_it_is():
    assert views._word_in("goto L5;", "L5")
    assert not views._word_in("xL5 L55 L5x", "L5")
    assert views._word_in("12L5", "L5")  # the digits 12, then the word L5
    assert not views._word_in("a1L5", "L5")  # inside the word a1L5
    assert not views._word_in("é1", "é1")  # a word starts with [A-Za-z_]
