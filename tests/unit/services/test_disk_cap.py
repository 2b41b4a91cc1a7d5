"""The on-disk caches stay bounded across KBs: per KB, by age and by total size, least
recently used first; a read marks a file used; temporary files of dead writers go."""

from __future__ import annotations

import os
import time
from pathlib import Path

from kbtool.services import disk_cap
from kbtool.services.diff.disk import DiskAnswers


def put(directory: Path, name: str, size: int, age_s: float) -> Path:
    p = directory / name
    p.write_bytes(b"x" * size)
    t = time.time() - age_s
    os.utime(p, (t, t))
    return p


def bounds(directory: Path, **kw) -> None:
    args = dict(kb_pattern="aaa-*.json", all_pattern="*.json", tmp_pattern=".d-*.tmp")
    disk_cap.prune(directory, **{**args, **kw})


def names(directory: Path) -> set[str]:
    return {p.name for p in directory.iterdir()}


def test_per_kb_keeps_the_most_recently_used_and_spares_other_kbs(tmp_path):
    for i in range(5):
        put(tmp_path, f"aaa-{i}.json", 10, age_s=100 - i)  # aaa-4 the newest
    put(tmp_path, "bbb-0.json", 10, age_s=500)
    bounds(tmp_path, per_kb=2, total_bytes=10**6)
    assert names(tmp_path) == {"aaa-3.json", "aaa-4.json", "bbb-0.json"}


def test_files_unused_for_a_month_go_whatever_their_kb(tmp_path):
    put(tmp_path, "aaa-0.json", 10, age_s=1)
    put(tmp_path, "ccc-0.json", 10, age_s=disk_cap.MAX_AGE + 60)  # a KB not opened since
    put(tmp_path, "ccc-1.json", 10, age_s=disk_cap.MAX_AGE - 60)
    bounds(tmp_path, per_kb=8, total_bytes=10**6)
    assert names(tmp_path) == {"aaa-0.json", "ccc-1.json"}


def test_the_total_size_drops_the_least_recently_used_first(tmp_path):
    put(tmp_path, "bbb-old.json", 400, age_s=300)
    put(tmp_path, "ccc-mid.json", 400, age_s=200)
    put(tmp_path, "aaa-new.json", 400, age_s=1)
    bounds(tmp_path, per_kb=8, total_bytes=900)
    assert names(tmp_path) == {"ccc-mid.json", "aaa-new.json"}


def test_dead_writers_temporary_files_go_live_ones_stay(tmp_path):
    put(tmp_path, ".d-dead.tmp", 5, age_s=disk_cap.STALE_TMP + 5)
    put(tmp_path, ".d-live.tmp", 5, age_s=1)
    bounds(tmp_path, per_kb=8, total_bytes=10**6)
    assert names(tmp_path) == {".d-live.tmp"}


def test_a_read_marks_the_answer_used_so_a_month_old_answer_in_use_stays(tmp_path):
    disk = DiskAnswers(tmp_path)
    key, modules = (("/kb/a.db", 1, 2), 1, 2, "report"), ("m1", "m2")
    disk.put(key, modules, {"answer": 1})
    (path,) = tmp_path.glob("*.json")
    old = time.time() - disk_cap.MAX_AGE - 3600
    os.utime(path, (old, old))
    assert disk.get(key, modules) == {"answer": 1}  # read: used now
    disk.put(("/kb/b.db", 1, 2), modules, {"answer": 2})  # another KB's write prunes
    assert disk.get(key, modules) == {"answer": 1}
    os.utime(path, (old, old))  # not read since: the next write's bounds drop it
    disk.put(("/kb/b.db", 3, 4), modules, {"answer": 3})
    assert disk.get(key, modules) is None
