"""The committed reference fingerprints made lazily (issue 30.4: ~3 ms of a small module's
ingest went to making all ~1,300 entries): every lookup answers what the eager table does, in
the same order, each entry made once and only when a lookup returns it; same recognitions."""

from __future__ import annotations

import importlib
from importlib import resources

import orjson
import pytest

from kbtool.analysis import fingerprints as fp
from kbtool.analysis.fingerprints import FingerprintDB, default_db
from kbtool.wasm import analyze_module
from tests.support.paths import corpus_file

rec = importlib.import_module("kbtool.analysis.recognize")


def _obj() -> dict:
    raw = resources.files("kbtool.analysis").joinpath("data", fp.DATA_FILE).read_bytes()
    return orjson.loads(raw)


def test_lazy_lookups_equal_the_eager_table() -> None:
    eager = FingerprintDB.from_json(_obj())
    lazy = FingerprintDB.from_json_lazy(_obj())
    assert lazy.full_keys == eager.full_keys and lazy.builds == eager.builds
    for name in ("by_shape", "by_full", "by_loose"):
        e, z = getattr(eager, name), getattr(lazy, name)
        assert set(z) == set(e) and len(z) == len(e)
        for key in e:
            assert key in z
            assert z.get(key) == e[key] == z[key]
        assert z.get("no such hash") is None and z.get("no such hash", ()) == ()
        assert "no such hash" not in z
    assert lazy.entries == eager.entries


def test_entries_are_made_once_and_only_when_returned() -> None:
    lazy = FingerprintDB.from_json_lazy(_obj())
    assert not any(lazy._made)  # the index alone makes no entry
    key = next(iter(lazy.by_shape))
    first = lazy.by_shape.get(key)
    assert first and sum(m is not None for m in lazy._made) == len(first)
    again = lazy.by_shape[key]
    assert again is first and all(a is b for a, b in zip(again, first, strict=True))
    # the same entry object whichever index returns it
    e = first[0]
    assert any(x is e for x in lazy.by_full[e.full])
    assert any(x is e for x in lazy.entries)


@pytest.mark.parametrize(
    "rel", ["gt/zstd-1.5.6.Os.stripped.wasm", "release/sql.js-1.12.0.sql-wasm.wasm"]
)
def test_same_recognitions_as_the_eager_table(rel: str) -> None:
    data = corpus_file(rel).read_bytes()
    a = analyze_module(data)
    assert isinstance(default_db(), fp._LazyFingerprintDB)
    eager = FingerprintDB.from_json(_obj())
    assert rec.recognize(a, data, default_db()) == rec.recognize(a, data, eager)
