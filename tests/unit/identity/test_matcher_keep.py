"""``match_functions_staged(keep=...)``: the matcher handed to the caller (a forked match
child keeps its heap instead of freeing it before it answers), the answer unchanged."""

from __future__ import annotations

import pytest

import kbtool.identity.matcher as active
from tests.support.matcher import pure_package
from tests.support.records import random_releases


@pytest.mark.parametrize("package", [active, pure_package()], ids=["active", "pure"])
@pytest.mark.parametrize("seed", [3, 11])
def test_keep_gets_the_matcher_and_the_answer_is_the_same(package, seed: int) -> None:
    old, new = random_releases(seed)
    plain = package.match_functions_staged(old, new)
    kept: list = []
    got = package.match_functions_staged(old, new, keep=kept)
    assert got == plain
    assert len(kept) == 1
    assert type(kept[0]).__name__ == "_Matcher"
    assert kept[0].OLD.recs and kept[0].NEW.recs  # its heap, still alive
