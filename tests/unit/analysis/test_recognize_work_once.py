"""The recognizers ingest runs for the lineage do each body's work once (issue 30.4): a body's
loose digests are decoded once however many passes ask, and a full hash is computed only for
a body that some reference entry could match (same signature and instruction count). Same
names either way."""

from __future__ import annotations

import importlib
from collections import Counter

import pytest

from kbtool.analysis import fingerprints as fp
from kbtool.analysis.dataitems import _cstring_at, _cstring_len
from kbtool.analysis.fingerprints import FingerprintDB, default_db
from kbtool.wasm import analyze_module
from tests.support.paths import corpus_file

# (the module: the package re-exports its function under the same name)
rec = importlib.import_module("kbtool.analysis.recognize")

ZSTD = "gt/zstd-1.5.6.Os.stripped.wasm"  # forwarders and libc helpers: several passes ask


class _Everything:
    """A ``full_keys`` that rules nothing out (the recognizers as they were)."""

    def __contains__(self, key: object) -> bool:
        return True


@pytest.fixture(scope="module")
def zstd():
    data = corpus_file(ZSTD).read_bytes()
    return analyze_module(data), data


def test_each_body_is_decoded_once_for_its_loose_digests(zstd, monkeypatch):
    a, data = zstd
    decoded: Counter[int] = Counter()
    real = fp._body_tokens

    def counting(data_, f):
        decoded[f.index] += 1
        return real(data_, f)

    monkeypatch.setattr(fp, "_body_tokens", counting)
    rec.recognize(a, data, default_db())
    assert decoded, "no body needed its loose digests: the module no longer tests this"
    assert max(decoded.values()) == 1, decoded.most_common(3)


@pytest.mark.parametrize("compiled", [True, False])
def test_body_tokens_are_decode_body_s(zstd, monkeypatch, compiled):
    """The loose digests' tokens: the compiled decoder's reader gives the pure walk's tokens
    (and the pure path is the pure walk); NaN constants compare by their text."""
    a, data = zstd
    if not compiled:
        monkeypatch.setattr(fp, "_TOKENS", False)
    elif fp._token_reader() is False:
        pytest.skip("the compiled decoder is not in use")
    for f in a.functions:
        if f.body_size:
            assert repr(fp._body_tokens(data, f)) == repr(fp.decode_body(data, f)), f.index


def test_full_hashes_only_where_an_entry_can_match_and_same_names(zstd, monkeypatch):
    a, data = zstd
    db = default_db()
    unfiltered = FingerprintDB(db.entries, db.builds)
    unfiltered.full_keys = _Everything()  # type: ignore[assignment]
    hashed: list[int] = []
    real = rec.full_hash

    def counting(f):
        hashed.append(f.index)
        return real(f)

    monkeypatch.setattr(rec, "full_hash", counting)
    names, review = rec.recognize(a, data, db)
    filtered_calls = len(hashed)
    hashed.clear()
    names_all, review_all = rec.recognize(a, data, unfiltered)
    assert (names, review) == (names_all, review_all)
    assert filtered_calls < len(hashed) / 4, (filtered_calls, len(hashed))


def test_full_keys_hold_every_entrys_signature_and_length():
    db = default_db()
    assert db.full_keys == {(e.type_sig, e.instr_count) for e in db.entries}
    # a body's instruction count is its op count: the full hash's input fixes both keys
    for f in analyze_module(corpus_file(ZSTD).read_bytes()).functions:
        if not f.imported:
            assert f.instr_count == len(f.ops) // 2


def test_cstring_len_is_the_strings_utf8_length(zstd):
    a, _data = zstd
    mem = b"".join(bytes(s.data) for s in a.module.data_segments)
    mem += "caf\u00e9 \u00fcber\0\x1b[1mred\0\xff\xfe\0ab\0".encode("latin-1", "ignore")
    mem += "na\u00efve\0".encode()
    for k in range(len(mem)):
        s = _cstring_at(mem, k)
        assert _cstring_len(mem, k) == (-1 if s is None else len(s.encode())), k
