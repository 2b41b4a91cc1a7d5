"""The matcher's compiled twin (``kbtool.identity._cmatcher``, mypyc, built by ``pip install``
or ``python -m kbtool.lift.accel build matcher``) pairs exactly as the pure package: the
same final pairing, identities, flags, scores, work per stage and notes, on corpus release
pairs both ways and on random releases (Hypothesis); the pairing's review checks flag the
same pairs. The twin runs by default when it is built from today's sources;
``KBTOOL_MATCHER=pure`` (or ``KBTOOL_LIFT=pure``) keeps the pure package; a stale build is
never used.
Tests that need the twin skip cleanly when it is not built."""

from __future__ import annotations

import bisect
import math
import os
import random
import subprocess
import sys
from array import array
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kbtool.identity import matcher_active
from kbtool.identity.records import records_from_analysis
from kbtool.wasm import analyze_module
from testkit.wasmbuild import CORPUS as _CORPUS
from tests.support.paths import ROOT
from tests.support.records import random_releases

CORPUS = Path(os.environ.get("KBTOOL_CORPUS", _CORPUS))
COMPILED = matcher_active.load_compiled()
PURE = matcher_active.load_pure()
needs_twin = pytest.mark.skipif(
    COMPILED is None, reason=f"compiled matcher {matcher_active.compiled_state()}"
)

PAIRS = [
    ("release/sql.js-1.10.3.sql-wasm.wasm", "release/sql.js-1.12.0.sql-wasm.wasm"),
    ("gt/zstd-1.5.2.O2.named.wasm", "gt/zstd-1.5.5.O2.named.wasm"),
    ("gt/zstd-1.5.6.Os.stripped.wasm", "gt/zstd-1.5.7.O2.named.wasm"),
]


def _run(pkg, old, new) -> tuple:
    """Everything a run gives: both pairings (every field), the work and the notes."""
    stats: list = []
    exact, full = pkg.match_functions_staged(old, new, stats=stats)
    st_ = stats[0]
    return exact, full, st_.work, st_.notes, st_.left_unmatched, st_.functions


def _review(pkg, old, new, matches) -> list[tuple]:
    view = pkg.driver._View(
        {r.index: r for r in old}, {r.index: r for r in new}, [m for m in matches]
    )
    pkg.review.review_pairing(view)
    return sorted((p.old_index, p.new_index, p.score, p.review) for p in view.by_new.values())


def _records(path: str) -> list:
    return records_from_analysis(analyze_module((CORPUS / path).read_bytes()))


@needs_twin
def test_twin_is_the_compiled_extension_with_every_part():
    assert not str(COMPILED.__file__).endswith(".py")
    for part in matcher_active.PARTS:
        mod = sys.modules[f"{COMPILED.__name__}.{part}"]
        assert not str(mod.__file__).endswith(".py"), part
    assert str(PURE.__file__).endswith(".py")


@needs_twin
@pytest.mark.parametrize("a,b", PAIRS, ids=["sqljs", "zstd-O2", "zstd-Os-O2"])
def test_corpus_pairs_pair_alike_both_ways(a, b):
    if not (CORPUS / a).is_file() or not (CORPUS / b).is_file():
        pytest.skip("corpus module missing")
    ra, rb = _records(a), _records(b)
    for old, new in ((ra, rb), (rb, ra)):
        want = _run(PURE, old, new)
        got = _run(COMPILED, old, new)
        assert repr(got) == repr(want)  # repr: an int score and a float one differ too
        assert _review(COMPILED, old, new, got[1]) == _review(PURE, old, new, want[1])


@needs_twin
@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**20), swap=st.booleans(), fuzzy=st.booleans())
def test_random_releases_pair_alike(seed, swap, fuzzy):
    old, new = random_releases(seed)
    if swap:
        old, new = new, old
    assert repr(_run(COMPILED, old, new)) == repr(_run(PURE, old, new))
    want = PURE.match_functions(old, new, fuzzy=fuzzy)
    assert repr(COMPILED.match_functions(old, new, fuzzy=fuzzy)) == repr(want)


def _chosen(env: dict) -> subprocess.CompletedProcess:
    code = (
        "import kbtool.identity.matcher as m, kbtool.identity.features as f\n"
        "import kbtool.identity.matcher.review as r\n"
        "print(m.__name__, f.__name__, r.__name__)\n"
    )
    clean = {k: v for k, v in os.environ.items() if k not in ("KBTOOL_MATCHER", "KBTOOL_LIFT")}
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_pure_when_asked():
    for env in ({"KBTOOL_MATCHER": "pure"}, {"KBTOOL_MATCHER": "compiled", "KBTOOL_LIFT": "pure"}):
        p = _chosen(env)
        assert p.returncode == 0, p.stderr
        assert p.stdout.split() == [
            "kbtool.identity.matcher",
            "kbtool.identity.matcher.features",
            "kbtool.identity.matcher.review",
        ], env


@needs_twin
def test_compiled_by_default_for_every_part():
    for env in ({}, {"KBTOOL_MATCHER": "auto"}, {"KBTOOL_MATCHER": "compiled"}):
        p = _chosen(env)
        assert p.returncode == 0, p.stderr
        assert p.stdout.split() == [
            "kbtool.identity._cmatcher",
            "kbtool.identity._cmatcher.features",
            "kbtool.identity._cmatcher.review",
        ], env


def test_status_says_the_twin_is_the_default():
    p = subprocess.run(
        [sys.executable, "-m", "kbtool.lift.accel", "status"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    (line,) = [ln for ln in p.stdout.splitlines() if ln.startswith("compiled matcher ")]
    assert line.startswith(
        f"compiled matcher (kbtool.identity._cmatcher): {matcher_active.compiled_state()}"
    )
    assert "used by default" in line and "KBTOOL_MATCHER=pure" in line


def test_a_stale_or_missing_build_is_never_used(tmp_path, monkeypatch):
    """A stamp over other sources (or none at all): the state is not ready, the loader
    gives None and asking for the compiled matcher is a clear error."""
    monkeypatch.setattr(matcher_active, "STAMP", tmp_path / "_cmatcher.sha256")
    assert matcher_active.compiled_state() in ("absent", "stale")
    assert matcher_active.load_compiled() is None
    (tmp_path / "_cmatcher.sha256").write_text("0" * 64 + "\n")
    assert matcher_active.compiled_state() in ("absent", "stale")
    assert matcher_active.load_compiled() is None
    monkeypatch.setenv("KBTOOL_MATCHER", "compiled")
    with pytest.raises(ImportError, match="accel build matcher"):
        matcher_active.swap(matcher_active.PURE_NAME)
    monkeypatch.setenv("KBTOOL_MATCHER", "auto")  # a stale build leaves the pure package
    assert matcher_active.swap(matcher_active.PURE_NAME) is None
    monkeypatch.delenv("KBTOOL_MATCHER")  # so does the default
    monkeypatch.delenv("KBTOOL_LIFT", raising=False)
    assert matcher_active.swap(matcher_active.PURE_NAME) is None


def _part(pkg, part: str):
    return sys.modules[f"{pkg.__name__}.{part}"]


@needs_twin
@settings(max_examples=200, deadline=None)
@given(a=st.integers(-(2**40), 2**40), b=st.integers(-(2**40), 2**40))
def test_size_ratio_is_the_same_float(a, b):
    """The typed ``size_ratio`` (no tuple, no ``max``) gives the reference's float."""
    lo, hi = (a, b) if a < b else (b, a)
    want = 1.0 if a == b or hi <= 0 else max(lo, 0) / hi
    for pkg in (COMPILED, PURE):
        got = _part(pkg, "features").size_ratio(a, b)
        assert repr(got) == repr(want)


@needs_twin
@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**20))
def test_pair_sums_and_bounds_are_the_same_floats(seed):
    """The features' typed paths (the record's counts kept on the feature as native ints)
    give every pair's content sum, its bounds and the weight bound, compiled as pure, to
    the last bit: the weight bound's ratio of two exact weights (ints past 2**53) divided
    as two rounded doubles when compiled until session 20 (seed 0 showed it)."""
    old, new = random_releases(seed)
    got = []
    for pkg in (COMPILED, PURE):
        fc = _part(pkg, "features").FeatureCache(old, new)
        out = []
        for o in old:
            for n in new:
                if o.imported or n.imported:
                    continue
                wb = fc.weight_bound(o, n)
                cb = fc.content_bound(o, n)
                cs = fc.content_similarity(o, n)
                assert wb >= cb >= cs[0] / cs[1]
                out.append((o.index, n.index, wb, cb, cs))
        got.append(repr(out))
    assert got[0] == got[1]


def _reference_bigrams(ops: bytes) -> tuple[dict, float]:
    """Every pair of neighbouring 16-bit op ids (little-endian) counted under the key
    ``a | b << 16``, a plain loop (after the head-and-tail sample of very large bodies)."""
    feats = _part(PURE, "features")
    if len(ops) > 2 * feats._MAX_OPS:
        ops = ops[: feats._MAX_OPS] + ops[len(ops) - feats._MAX_OPS :]
    ids = [ops[i] | ops[i + 1] << 8 for i in range(0, len(ops) - 1, 2)]
    want: dict[int, int] = {}
    for a, b in zip(ids, ids[1:], strict=False):
        want[a | b << 16] = want.get(a | b << 16, 0) + 1
    return want, math.sqrt(sum(v * v for v in want.values())) or 1.0


_OPS = st.one_of(
    st.lists(st.integers(0, 7), max_size=300),  # few distinct ops, many repeated pairs
    st.lists(st.integers(0, 2**16 - 1), max_size=600),  # past 256 distinct: Counter's count
    st.lists(st.sampled_from([0, 1, 0x20, 0xFC01, 0xFD0C, 0xFFFF]), max_size=200),
).map(lambda xs: array("H", xs).tobytes())


@needs_twin
@settings(max_examples=300, deadline=None)
@given(ops=_OPS, odd=st.booleans())
def test_bigram_histograms_are_the_same(ops, odd):
    """The compiled twin counts op bigrams by a typed loop over reused tables
    (``features._pair_counts``), pure Python by ``Counter.update`` of 32-bit words: the same
    counts under the same keys and the same norm, whatever the body (an odd trailing byte,
    more than 256 distinct ops, where the typed count hands over to ``Counter``)."""
    if odd:
        ops += b"\x07"
    want = _reference_bigrams(ops)
    assert _part(COMPILED, "features")._TYPED and not _part(PURE, "features")._TYPED
    for pkg in (COMPILED, PURE):
        feats = _part(pkg, "features")
        hist, norm = feats._bigrams(ops)
        assert feats.hist_dict(hist) == want[0] and repr(norm) == repr(want[1])
        # the typed count itself, on both sides (pure Python runs it too, slowly): the
        # words in increasing order, so in the order of their keys
        n = (len(ops) - len(ops) % 2) // 2
        got = feats._pair_counts(ops, n)
        distinct = len(set(array("H", ops[: 2 * n])))
        if distinct > feats._LOCAL_IDS:
            assert got is None
        else:
            assert list(got) == sorted(got) and feats.hist_dict(got) == want[0]
    # the tables are left clean for the next body (a second count gives the same)
    feats = _part(COMPILED, "features")
    assert feats.hist_dict(feats._bigrams(ops)[0]) == want[0]


@needs_twin
def test_bigram_histograms_of_very_large_bodies_are_the_same():
    """Past ``2 * _MAX_OPS`` bytes only the head and the tail are counted, alike."""
    rnd = random.Random(7)
    for alphabet in (40, 300):
        ops = array("H", (rnd.randrange(alphabet) for _ in range(40_000))).tobytes()
        want = _reference_bigrams(ops)
        for pkg in (COMPILED, PURE):
            feats = _part(pkg, "features")
            hist, norm = feats._bigrams(ops)
            assert feats.hist_dict(hist) == want[0] and repr(norm) == repr(want[1])


@needs_twin
@settings(max_examples=200, deadline=None)
@given(
    a=st.dictionaries(st.integers(0, 50), st.integers(1, 2**20), max_size=40),
    b=st.dictionaries(st.integers(0, 50), st.integers(1, 2**20), max_size=40),
)
def test_cosine_is_the_same_float(a, b):
    """The typed dot product of the compiled twin gives the pure one's cosine, to the bit."""
    na = math.sqrt(sum(v * v for v in a.values())) or 1.0
    nb = math.sqrt(sum(v * v for v in b.values())) or 1.0
    got = [repr(_part(pkg, "features")._cosine(a, na, b, nb)) for pkg in (COMPILED, PURE)]
    assert got[0] == got[1]


@needs_twin
@settings(max_examples=200, deadline=None)
@given(ops_a=_OPS, ops_b=_OPS)
def test_cosine_of_words_is_the_dict_cosine(ops_a, ops_b):
    """The compiled twin's cosine merges two sorted word lists (``_cosine_words``); pure
    Python's looks the smaller dict's keys up in the other: the same float, to the bit."""
    cf, pf = _part(COMPILED, "features"), _part(PURE, "features")
    (wa, na), (wb, nb) = cf._bigrams(ops_a), cf._bigrams(ops_b)
    (da, pa), (db, pb) = pf._bigrams(ops_a), pf._bigrams(ops_b)
    assert (na, nb) == (pa, pb)
    want = repr(pf._cosine(da, pa, db, pb))
    for mod in (cf, pf):
        assert repr(mod._cosine_words(wa, na, wb, nb)) == want
        assert repr(mod._cosine(mod.hist_dict(wa), na, mod.hist_dict(wb), nb)) == want


@needs_twin
@settings(max_examples=200, deadline=None)
@given(
    a=st.lists(st.integers(-5, 2**40), max_size=60).map(sorted),
    x=st.integers(-10, 2**40 + 5),
)
def test_bisect_ints_is_bisect_left(a, x):
    """The anchors' and gaps' binary search (``base.bisect_ints``, a typed loop in the
    twin) gives ``bisect.bisect_left``'s index, duplicates and ends included."""
    want = bisect.bisect_left(a, x)
    for pkg in (COMPILED, PURE):
        assert _part(pkg, "base").bisect_ints(a, x) == want
        if a:
            assert _part(pkg, "base").bisect_ints(a, a[len(a) // 2]) == bisect.bisect_left(
                a, a[len(a) // 2]
            )


@needs_twin
@pytest.mark.parametrize("seed", range(4))
def test_neighbour_lists_are_distinct_and_graph_terms_agree(seed):
    """A pair's graph term (``MatcherBase._graph_term``) counts the neighbours matched into
    the other list one by one, which is the size of the intersection only because a
    neighbour list never repeats an entry (callees deduplicated, callers one per caller):
    both hold on records whose calls repeat, and the twin's term is the pure one's."""
    old, new = random_releases(seed)
    rnd = random.Random(seed)
    for r in old:  # (calls repeated: the call sequence of a body)
        r.calls = r.calls + r.calls[: rnd.randint(0, len(r.calls))]
    for pkg in (COMPILED, PURE):
        side = _part(pkg, "base")._Side(old)
        for seqs in (side.callees, side.callers):
            assert all(len(set(v)) == len(v) for v in seqs.values())
    terms = []
    for pkg in (COMPILED, PURE):
        m = _part(pkg, "driver")._Matcher(old, new)
        m.run_staged(True)
        terms.append(
            [
                m._graph_term(m.OLD.callers[o], m.NEW.callers[n])
                for o in m.OLD.order[:25]
                for n in m.NEW.order[:25]
            ]
        )
    assert terms[0] == terms[1]


def test_side_callees_first_of_each_defined_callee_short_and_long() -> None:
    """A side's callee list is the first of each defined callee but the function itself, in
    call order, both for short call lists (scanned) and long ones (``dict.fromkeys``)."""
    from kbtool.identity.matcher.base import _SHORT_CALLS, _Side
    from kbtool.identity.records import FuncRecord

    rnd = random.Random(7)
    n = 30
    recs = []
    for i in range(n):
        k = rnd.choice((0, 1, 3, _SHORT_CALLS, _SHORT_CALLS + 1, 60))
        recs.append(FuncRecord(index=i, calls=tuple(rnd.randrange(n + 5) for _ in range(k))))
    side = _Side(recs)
    for r in recs:
        want = tuple(c for c in dict.fromkeys(r.calls) if 0 <= c < n and c != r.index)
        assert side.callees[r.index] == want
