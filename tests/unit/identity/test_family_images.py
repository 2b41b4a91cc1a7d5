"""The family review's images (a function's context under sure matches) are cached and
dropped only for the functions a changed match touches: every answer the cache gives equals
the images computed afresh at that moment, and the pairing is the one the matcher gave."""

from __future__ import annotations

import pytest

from tests.support.matcher import pure_matcher, pure_part
from tests.support.records import random_releases, with_lookalikes

_Matcher = pure_part()._Matcher
family = pure_part("family")
FamilyStage = family.FamilyStage


@pytest.fixture(autouse=True)
def _pure_matcher():
    with pure_matcher():
        yield


@pytest.mark.parametrize("drop_all", [16, 0])
@pytest.mark.parametrize("seed", range(24))
def test_cached_images_equal_fresh_ones(seed: int, drop_all: int, monkeypatch) -> None:
    old, new = random_releases(seed)
    old, new = with_lookalikes(old, seed, 5), with_lookalikes(new, seed + 500, 5)
    real = FamilyStage._images
    calls = [0]

    def checked(self, o):
        got = real(self, o)
        saved = dict(self._img_cache)
        self._img_cache.clear()
        fresh = real(self, o)
        self._img_cache.clear()
        self._img_cache.update(saved)
        assert got == fresh, (o, got, fresh)
        calls[0] += 1
        return got

    want = _Matcher(old, new).run_staged(True)
    monkeypatch.setattr(family, "DROP_ALL", drop_all)  # 0: never cleared, always dropped
    monkeypatch.setattr(FamilyStage, "_images", checked)
    assert _Matcher(old, new).run_staged(True) == want
    assert calls[0], "the family review computed no images: nothing was compared"


def test_a_changed_match_drops_the_images_that_read_it(monkeypatch) -> None:
    """Over the seeds above, some cached images outlive a change elsewhere (the cache is
    not simply cleared on every match) while those reading the changed function go."""
    monkeypatch.setattr(family, "DROP_ALL", 0)
    survived = 0
    for seed in range(24):
        old, new = random_releases(seed)
        old, new = with_lookalikes(old, seed, 5), with_lookalikes(new, seed + 500, 5)
        m = _Matcher(old, new)
        m.run_staged(True)
        cached = [o for o in m._img_cache if m.OLD.callers[o] or m.OLD.callees[o]]
        if not cached:
            continue
        o = cached[0]
        x = (m.OLD.callers[o] or m.OLD.callees[o])[0]
        others = [y for y in m._img_cache if y != o and x not in m.OLD.callers[y]]
        others = [y for y in others if x not in m.OLD.callees[y]]
        others = [y for y in others if y not in m._img_nb_rev.get(x, ())]
        m._img_touched.append(x)
        m._drop_images()
        assert o not in m._img_cache
        survived += sum(y in m._img_cache for y in others)
    assert survived
