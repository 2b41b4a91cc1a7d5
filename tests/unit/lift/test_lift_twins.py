"""The table of compiled twins (``kbtool/lift/_build.py``): a twin whose source is a package
is stamped over every part, is ready only with its package's entry module, and is copied
into an install target with its parts' directory (no mypyc run: a compile takes ~1 min)."""

from __future__ import annotations

import sysconfig
from pathlib import Path

import pytest

from kbtool.lift import _build
from tests.support.paths import ROOT

SUFFIX = sysconfig.get_config_var("EXT_SUFFIX")


def _pkg_tree(tmp: Path) -> Path:
    pkg = tmp / "src" / "kbtool" / "lift" / "lifter"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("from .a import f\n")
    (pkg / "a.py").write_text("def f() -> int:\n    return 1\n")
    return tmp / "src"


def _fake_pkg_build(lift: Path) -> None:
    (lift / "_clifter").mkdir(parents=True, exist_ok=True)
    (lift / "_clifter" / f"__init__{SUFFIX}").write_bytes(b"\x7fELF init")
    (lift / "_clifter" / f"a{SUFFIX}").write_bytes(b"\x7fELF a")
    (lift / f"_clifter__mypyc{SUFFIX}").write_bytes(b"\x7fELF runtime")
    (lift / "_clifter.sha256").write_text(_build.source_digest(lift) + "\n")


def test_the_lifter_is_a_package_twin_in_the_table():
    tw = _build.twin("lifter")
    assert tw.compiled == "kbtool.lift._clifter" and tw.package_dir == "kbtool/lift"
    assert (ROOT / tw.source).is_dir()  # the package, compiled part by part
    parts = _build.source_files(ROOT / tw.package_dir, tw)
    assert len(parts) > 3 and all(p.suffix == ".py" for p in parts)
    with pytest.raises(KeyError, match="no compiled twin named 'nope'"):
        _build.twin("nope")


def test_stamp_covers_every_part(tmp_path):
    lift = _pkg_tree(tmp_path) / "kbtool" / "lift"
    d0 = _build.source_digest(lift)
    (lift / "lifter" / "a.py").write_text("def f() -> int:\n    return 2\n")
    d1 = _build.source_digest(lift)
    (lift / "lifter" / "b.py").write_text("")  # a new, empty part counts too
    d2 = _build.source_digest(lift)
    (lift / "lifter" / "b.py").rename(lift / "lifter" / "c.py")  # and a renamed one
    d3 = _build.source_digest(lift)
    assert len({d0, d1, d2, d3}) == 4


def test_package_build_ready_install_clean(tmp_path):
    root = _pkg_tree(tmp_path)
    lift = root / "kbtool" / "lift"
    _fake_pkg_build(lift)
    names = {f.relative_to(lift).as_posix() for f in _build.ready_files(lift)}
    assert names == {
        f"_clifter/__init__{SUFFIX}",
        f"_clifter/a{SUFFIX}",
        f"_clifter__mypyc{SUFFIX}",
    }
    (lift / "lifter" / "a.py").write_text("def f() -> int:\n    return 3\n")  # a part edited
    assert _build.ready_files(lift) == []
    _build.clean(lift)
    assert not (lift / "_clifter").exists() and _build.compiled_files(lift) == []
    assert (lift / "lifter" / "a.py").is_file()  # the source stays
    _fake_pkg_build(lift)
    (lift / "_clifter" / f"__init__{SUFFIX}").unlink()  # no entry module: not a build
    assert _build.ready_files(lift) == []
    _fake_pkg_build(lift)
    dest = tmp_path / "build" / "kbtool" / "lift"
    files = _build.ensure_compiled(root, dest)
    assert (dest / "_clifter" / f"a{SUFFIX}").read_bytes() == b"\x7fELF a"
    assert sorted(f.relative_to(dest) for f in files) == sorted(
        f.relative_to(lift) for f in _build.ready_files(lift)
    )
    assert _build.ready_files(dest) == []  # the target has no sources: nothing to stamp against
    assert not _build.wheel_is_pure(tmp_path / "build")


def test_the_matcher_is_a_package_twin_in_the_table():
    """The fourth twin: the matcher's package (its features included) as
    ``kbtool.identity._cmatcher``, ignored by git like the others."""
    tw = _build.twin("matcher")
    assert tw.compiled == "kbtool.identity._cmatcher" and tw.package_dir == "kbtool/identity"
    parts = {p.name for p in _build.source_files(ROOT / tw.package_dir, tw)}
    assert {"__init__.py", "features.py", "review.py", "driver.py"} <= parts
    assert f"{tw.package_dir}/{tw.leaf}*" in (ROOT / ".gitignore").read_text().splitlines()
