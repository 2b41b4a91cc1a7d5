"""The twins' staleness check reads a package's digest from its stat record while the sources
stat the same, and still sees every edit made after the twin was built: one that keeps the
size and the mtime, and one made within a coarse clock's tick of the record."""

from __future__ import annotations

import importlib.machinery
import os
import shutil
from pathlib import Path

import pytest

from kbtool import twinstate
from kbtool.lift import _build

SOURCE = Path(twinstate.__file__).resolve().parent / "analysis" / "datawalk"


@pytest.fixture
def twin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, list[Path]]:
    """A temp copy of the data walk's package with a stamp of its digest (as the build writes
    it) and a stand-in for the compiled package; the hashes made are counted."""
    monkeypatch.setenv(twinstate.CACHE_ENV, str(tmp_path / "cache"))
    here = tmp_path / "analysis"
    shutil.copytree(SOURCE, here / "datawalk", ignore=shutil.ignore_patterns("__pycache__"))
    tw = _build.twin("datawalk")
    (here / "_cdatawalk.sha256").write_text(_build.source_digest(here, tw) + "\n")
    (here / "_cdatawalk").mkdir()
    (here / "_cdatawalk" / ("__init__" + importlib.machinery.EXTENSION_SUFFIXES[0])).touch()
    hashed: list[Path] = []
    real = twinstate._hash

    def counting(pkg: Path, parts: list[Path]) -> str:
        hashed.append(pkg)
        return real(pkg, parts)

    monkeypatch.setattr(twinstate, "_hash", counting)
    return here, here / "datawalk", hashed


def _state(here: Path) -> str:
    return twinstate.package_state(
        here, "_cdatawalk", here / "_cdatawalk.sha256", here / "datawalk"
    )


def _age(pkg: Path, seconds: float) -> None:
    """Move the record's time ``seconds`` later: the parts look that much older than it."""
    (record,) = (Path(os.environ[twinstate.CACHE_ENV])).iterdir()
    head, at, *rest = record.read_text().split("\n")
    record.write_text("\n".join([head, str(int(at) + int(seconds * 1e9)), *rest]))


def test_ready_from_the_record_then_stale_after_an_edit_of_the_same_size_and_mtime(twin) -> None:
    here, pkg, hashed = twin
    assert _state(here) == "ready" and len(hashed) == 1  # no record yet: hashed, recorded
    _age(pkg, 10)
    assert _state(here) == "ready" and len(hashed) == 1  # every part stats the same: no hash
    part = pkg / "leb.py"
    st = os.stat(part)
    data = bytearray(part.read_bytes())
    data[-2] = ord("#") if data[-2] != ord("#") else ord(" ")  # same size
    part.write_bytes(bytes(data))
    os.utime(part, ns=(st.st_atime_ns, st.st_mtime_ns))  # and the same mtime
    assert os.stat(part).st_size == st.st_size and os.stat(part).st_mtime_ns == st.st_mtime_ns
    assert _state(here) == "stale" and len(hashed) == 2
    assert twinstate.package_digest(pkg) == _build.source_digest(here, _build.twin("datawalk"))


def test_a_part_as_young_as_its_record_is_hashed_again(twin) -> None:
    """A coarse clock can give an edit made just after the record the same times: parts
    within RACY_NS of the record are never read from it."""
    here, _pkg, hashed = twin
    assert _state(here) == "ready"
    _age(_pkg, -1)  # the record is younger than RACY_NS after the parts' times
    assert _state(here) == "ready" and len(hashed) == 2
    _age(_pkg, 10)
    assert _state(here) == "ready" and len(hashed) == 2  # rewritten, then aged: trusted


def test_added_removed_and_renamed_parts_and_no_cache(twin, monkeypatch) -> None:
    here, pkg, hashed = twin
    assert _state(here) == "ready"
    _age(pkg, 10)
    (pkg / "extra.py").write_text("")
    assert _state(here) == "stale"
    (pkg / "extra.py").unlink()
    assert _state(here) == "ready"
    (pkg / "leb.py").rename(pkg / "leb2.py")
    assert _state(here) == "stale"
    (pkg / "leb2.py").rename(pkg / "leb.py")
    monkeypatch.setenv(twinstate.CACHE_ENV, "off")
    n = len(hashed)
    assert _state(here) == "ready" and _state(here) == "ready" and len(hashed) == n + 2


def test_a_broken_or_foreign_record_is_not_read(twin) -> None:
    here, pkg, hashed = twin
    assert _state(here) == "ready"
    (record,) = Path(os.environ[twinstate.CACHE_ENV]).iterdir()
    head, at, digest, *rest = record.read_text().split("\n")
    record.write_text("\n".join([head, str(int(at) + 10**10), "0" * 64, *rest]))
    assert _state(here) == "stale"  # the recorded digest stands for the stats it was kept with
    record.write_text("garbage")
    assert _state(here) == "ready"
    record.write_text("\n".join([head + "x", str(int(at) + 10**10), digest, *rest]))
    assert _state(here) == "ready"
