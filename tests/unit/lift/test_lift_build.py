"""Installing builds the compiled lifter when it can (``setup.py`` + ``kbtool/lift/_build.py``).

What is checked without running mypyc (a compile takes about 40 s): which builds count as
ready (stamp of today's ``lifter.py``, this interpreter's extension suffix), that a second
install reuses a ready build instead of compiling again, that a read-only source tree still
gets a build in the install target, and that the real ``setup.py build_py`` hook puts a ready
build into the built package, skips it on ``KBTOOL_ACCEL=0`` and, when the compile fails,
still builds the package and says the pure lifter runs.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from kbtool.lift import _build, active
from tests.support.paths import ROOT

SUFFIX = sysconfig.get_config_var("EXT_SUFFIX")


def _tree(tmp: Path, source: bytes = b"x = 1\n") -> Path:
    lift = tmp / "src" / "kbtool" / "lift"
    lift.mkdir(parents=True)
    (lift / "lifter.py").write_bytes(source)
    return tmp / "src"


def _fake_build(lift: Path, source: bytes, suffix: str = SUFFIX) -> None:
    lift.mkdir(parents=True, exist_ok=True)
    (lift / f"_clifter{suffix}").write_bytes(b"\x7fELF module")
    (lift / f"_clifter__mypyc{suffix}").write_bytes(b"\x7fELF runtime")
    (lift / "_clifter.sha256").write_text(hashlib.sha256(source).hexdigest() + "\n")


def test_ready_needs_todays_source_and_this_interpreter(tmp_path):
    root = _tree(tmp_path)
    lift = root / "kbtool" / "lift"
    assert _build.ready_files(lift) == []
    _fake_build(lift, b"x = 1\n")
    assert {f.name for f in _build.ready_files(lift)} == {
        f"_clifter{SUFFIX}",
        f"_clifter__mypyc{SUFFIX}",
    }
    (lift / "lifter.py").write_bytes(b"x = 2\n")  # lifter.py edited since the build
    assert _build.ready_files(lift) == []
    _build.clean(lift)
    _fake_build(lift, b"x = 2\n", suffix=".cpython-39-x86_64-linux-gnu.so")  # another Python
    assert _build.ready_files(lift) == []


def test_second_install_reuses_the_ready_build(tmp_path, monkeypatch):
    root = _tree(tmp_path)
    lift = root / "kbtool" / "lift"
    _fake_build(lift, b"x = 1\n")

    def no_compile(*a, **k):
        raise AssertionError("compiled again although a ready build was there")

    monkeypatch.setattr(_build, "compile_lifter", no_compile)
    dest = tmp_path / "build" / "kbtool" / "lift"
    files = _build.ensure_compiled(root, dest)
    assert {f.parent for f in files} == {dest}
    assert (dest / f"_clifter{SUFFIX}").read_bytes() == b"\x7fELF module"
    assert (dest / "_clifter.sha256").read_text() == (lift / "_clifter.sha256").read_text()
    # editable install: the source tree is the target, nothing is copied or compiled
    assert _build.ensure_compiled(root, lift) == _build.ready_files(lift)


def test_compiles_into_the_source_tree_then_copies(tmp_path, monkeypatch):
    root = _tree(tmp_path)
    lift = root / "kbtool" / "lift"
    calls = []

    def fake_compile(pkg_root, dest, verbose=False):
        calls.append(dest)
        _fake_build(dest, (pkg_root / "kbtool" / "lift" / "lifter.py").read_bytes())
        return _build.compiled_files(dest)

    monkeypatch.setattr(_build, "compile_lifter", fake_compile)
    dest = tmp_path / "build" / "kbtool" / "lift"
    files = _build.ensure_compiled(root, dest)
    assert calls == [lift]  # kept in the source tree for the next install
    assert _build.ready_files(lift)
    assert sorted(f.name for f in files) == sorted(f.name for f in _build.ready_files(lift))
    assert all(f.parent == dest for f in files)


def test_read_only_source_tree_compiles_straight_into_the_target(tmp_path, monkeypatch):
    root = _tree(tmp_path)
    lift = root / "kbtool" / "lift"
    calls = []

    def fake_compile(pkg_root, dest, verbose=False):
        calls.append(dest)
        if dest == lift:
            raise PermissionError(13, "Permission denied", str(lift))
        _fake_build(dest, (lift / "lifter.py").read_bytes())
        return _build.compiled_files(dest)

    monkeypatch.setattr(_build, "compile_lifter", fake_compile)
    dest = tmp_path / "build" / "kbtool" / "lift"
    files = _build.ensure_compiled(root, dest)
    assert calls == [lift, dest]
    assert files and all(f.parent == dest for f in files)


def test_compile_without_mypyc_is_a_clear_error(tmp_path, monkeypatch):
    root = _tree(tmp_path)
    monkeypatch.setattr(_build.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(RuntimeError, match="mypyc not found"):
        _build.compile_lifter(root, root / "kbtool" / "lift")


def _setup_build_py(out: Path, env: dict, root: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "setup.py", "-q", "build_py", "--build-lib", str(out)],
        cwd=root,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.skipif(active.compiled_state() != "ready", reason="no compiled lifter in this tree")
def test_setup_hook_puts_the_ready_build_in_the_package(tmp_path):
    p = _setup_build_py(tmp_path / "lib", {})
    assert p.returncode == 0, p.stderr
    lift = tmp_path / "lib" / "kbtool" / "lift"
    assert (lift / "lifter" / "__init__.py").is_file()
    assert _build.ready_files(lift), sorted(x.name for x in lift.iterdir())
    assert "compiled lifter: _clifter" in p.stderr


def test_setup_hook_skips_on_request(tmp_path):
    p = _setup_build_py(tmp_path / "lib", {"KBTOOL_ACCEL": "0"})
    assert p.returncode == 0, p.stderr
    lift = tmp_path / "lib" / "kbtool" / "lift"
    assert (lift / "lifter" / "__init__.py").is_file() and (lift / "prelude.h").is_file()
    assert _build.compiled_files(lift) == []


def test_setup_hook_survives_a_failed_compile(tmp_path):
    """A source tree without a build, where mypyc fails (a stand-in ``mypyc`` module that
    exits 1, as a missing compiler makes it): the package still builds, without the compiled
    lifter, and the log says the pure lifter runs."""
    src = tmp_path / "src"
    shutil.copytree(
        ROOT / "kbtool",
        src / "kbtool",
        # no build of any twin rides along: each one compiles (and fails) on its own
        ignore=shutil.ignore_patterns("__pycache__", *(f"{t.leaf}*" for t in _build.TWINS)),
    )
    for name in ("setup.py", "pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    fake = tmp_path / "fake" / "mypyc"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    (fake / "__main__.py").write_text("import sys\nsys.exit('mypyc: no C compiler')\n")
    pypath = os.pathsep.join(filter(None, [str(fake.parent), os.environ.get("PYTHONPATH")]))
    p = _setup_build_py(tmp_path / "lib", {"PYTHONPATH": pypath}, root=src)
    assert p.returncode == 0, p.stderr
    for tw in _build.TWINS:  # the lifter, ..., the matcher: each fails alone, pure code kept
        assert f"compiled {tw.name} not built (mypyc failed (exit 1)" in p.stderr
        assert f"the pure {tw.name} runs" in p.stderr
        assert _build.compiled_files(tmp_path / "lib" / tw.package_dir, tw) == []
        assert (tmp_path / "lib" / f"{tw.source}" / "__init__.py").is_file()
    lift = tmp_path / "lib" / "kbtool" / "lift"
    assert (lift / "lifter" / "__init__.py").is_file()
    assert (
        _build.compiled_files(lift) == [] and _build.compiled_files(src / "kbtool" / "lift") == []
    )
