"""A whole diff's answer kept encoded beside the kept report (issue 30): the preparation
keeps it, a new cache answers from it without reading the report, an old cache without it
(or one of another form) still answers and keeps it, a disk cache turned off writes
nothing."""

from __future__ import annotations

import subprocess
import sys

from kbtool.kb.db import open_ro
from kbtool.services import json_answer
from kbtool.services.diff import answer, warm
from kbtool.services.diff.cache import DiffCache, DiskAnswers, _modules, disk_dir
from tests.support.diff_kb import two_versions_kb
from tests.support.paths import ROOT

PAIRS = ((1, 2), (2, 1))  # the stored pair and its reverse (computed)


def _reference(db, a: int, b: int) -> str:
    """The answer as the MCP server encoded it before: the report, with no disk cache."""
    conn = open_ro(db)
    try:
        return json_answer.as_json(DiffCache(disk=DiskAnswers(None)).report(conn, a, b))
    finally:
        conn.close()


def _text_file(cache: DiffCache, conn, a: int, b: int):
    key = cache._key(conn, a, b, "report")
    return cache.disk._path(answer.text_key(key, json_answer.form()), _modules(conn, a, b))


def test_the_preparation_keeps_the_answer_and_a_new_cache_reads_only_it(tmp_path):
    db = two_versions_kb(tmp_path)
    subprocess.run(
        [sys.executable, "-m", "kbtool.services.diff.warm", "--db", str(db)], check=True, cwd=ROOT
    )
    conn = open_ro(db)
    try:
        cache = DiffCache(disk=DiskAnswers(disk_dir()))
        assert warm.pairs_to_prepare(conn, cache=cache) == []
        for a, b in PAIRS:
            assert _text_file(cache, conn, a, b).is_file()
            assert cache.answer_text(conn, a, b) == _reference(db, a, b)
        # no report was read, loaded, computed or joined: the kept text only
        assert (cache.texts_read, cache.loaded, cache.computed, cache.disk_hits) == (2, 0, 0, 0)
        assert cache.answer_text(conn, 2, 1) == _reference(db, 2, 1)
        assert cache.texts_read == 2 and cache.hits == 1  # then from memory
    finally:
        conn.close()


def test_an_old_cache_without_the_kept_answer_still_answers_and_keeps_it(tmp_path):
    db = two_versions_kb(tmp_path)
    conn = open_ro(db)
    try:
        first = DiffCache(disk=DiskAnswers(disk_dir()))
        for a, b in PAIRS:
            first.report(conn, a, b)
            first.changelog(conn, a, b)
        assert all(not _text_file(first, conn, a, b).exists() for a, b in PAIRS)
        # kept as an older kbtool kept it (no answer text): the preparation lists it again
        assert set(warm.pairs_to_prepare(conn, cache=first)) == set(PAIRS)
        again = DiffCache(disk=DiskAnswers(disk_dir()))
        for a, b in PAIRS:
            assert again.answer_text(conn, a, b) == _reference(db, a, b)
            assert _text_file(again, conn, a, b).is_file()
        assert again.texts_read == 0
        assert warm.pairs_to_prepare(conn, cache=again) == []
        third = DiffCache(disk=DiskAnswers(disk_dir()))
        assert third.answer_text(conn, 2, 1) == _reference(db, 2, 1)
        assert third.texts_read == 1
    finally:
        conn.close()


def test_a_kept_answer_of_another_form_is_not_served(tmp_path):
    db = two_versions_kb(tmp_path)
    conn = open_ro(db)
    try:
        cache = DiffCache(disk=DiskAnswers(disk_dir()))
        path = _text_file(cache, conn, 2, 1)
        cache.answer_text(conn, 2, 1)
        header, _, text = path.read_bytes().partition(b"\n")
        path.write_bytes(header.replace(b'"form":"', b'"form":"older-') + b"\n" + b'"forged"')
        other = DiffCache(disk=DiskAnswers(disk_dir()))
        assert other.answer_text(conn, 2, 1) == _reference(db, 2, 1)
        assert other.texts_read == 0
        assert path.read_bytes().partition(b"\n")[2] == text  # kept again, right
    finally:
        conn.close()


def test_no_disk_cache_writes_nothing(tmp_path, monkeypatch):
    db = two_versions_kb(tmp_path)
    cache_dir = tmp_path / "diffs"
    monkeypatch.setenv("KBTOOL_DIFF_CACHE_DIR", "off")
    conn = open_ro(db)
    try:
        cache = DiffCache(disk=DiskAnswers(disk_dir()))
        assert cache.answer_text(conn, 2, 1) == _reference(db, 2, 1)
        assert cache.answer_text(conn, 2, 1) == _reference(db, 2, 1)
        assert cache.hits == 1 and not cache_dir.exists()
    finally:
        conn.close()
