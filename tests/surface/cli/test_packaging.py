"""Packaging (issue #23.9): the wheel's tag says what it holds, and ``python -m kbtool`` runs.

A wheel with the compiled lifter holds a CPython extension, so it is tagged for this
interpreter and platform; a wheel without it (``KBTOOL_ACCEL=0``, no compiler) is
``py3-none-any``. The real ``pip wheel`` runs on a copy of the source tree (so the shared
checkout gets no ``build/``), without build isolation, reusing the ready compiled lifter
(~2 s; a fresh mypyc compile takes ~40-60 s and is not done here: the test is skipped when
the tree has no ready build).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from packaging.tags import sys_tags
from packaging.utils import parse_wheel_filename

from kbtool.lift import _build, active
from tests.support.paths import ROOT


def _copy_tree(dest: Path, *, compiled: bool) -> Path:
    ignore = ["__pycache__"] + ([] if compiled else ["_clifter*"])
    shutil.copytree(ROOT / "kbtool", dest / "kbtool", ignore=shutil.ignore_patterns(*ignore))
    for name in ("setup.py", "pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, dest / name)
    return dest


def _pip_wheel(src: Path, out: Path, env: dict[str, str]) -> Path:
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            str(src),
            "--no-deps",
            "--no-build-isolation",
            "--no-cache-dir",
            "-q",
            "-w",
            str(out),
        ],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    wheels = list(out.glob("kbtool-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


def _wheel_meta(wheel: Path) -> tuple[set[str], str, list[str]]:
    """(tags from the file name, the WHEEL file, the names inside)."""
    _, _, _, tags = parse_wheel_filename(wheel.name)
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        meta = z.read(next(n for n in names if n.endswith(".dist-info/WHEEL"))).decode()
    return {str(t) for t in tags}, meta, names


def test_tag_decision_follows_the_built_package(tmp_path):
    lift = tmp_path / "lib" / "kbtool" / "lift"
    lift.mkdir(parents=True)
    (lift / "lifter.py").write_text("x = 1\n")
    assert _build.wheel_is_pure(tmp_path / "lib")
    (lift / "_clifter.cpython-311-x86_64-linux-gnu.so").write_bytes(b"\x7fELF")
    assert not _build.wheel_is_pure(tmp_path / "lib")


@pytest.mark.skipif(active.compiled_state() != "ready", reason="no ready compiled lifter to reuse")
def test_wheel_with_the_compiled_lifter_is_platform_tagged(tmp_path):
    src = _copy_tree(tmp_path / "src", compiled=True)
    wheel = _pip_wheel(src, tmp_path / "dist", {})
    tags, meta, names = _wheel_meta(wheel)
    assert "py3-none-any" not in tags
    interp = next(iter(sys_tags())).interpreter  # e.g. cp311
    assert all(t.startswith(f"{interp}-{interp}-") for t in tags), tags
    supported = {str(t) for t in sys_tags()}
    assert tags <= supported, (tags, "this interpreter could not install its own wheel")
    assert "Root-Is-Purelib: false" in meta
    assert any(n.startswith("kbtool/lift/_clifter") and n.endswith((".so", ".pyd")) for n in names)
    assert not any(".data/purelib/" in n for n in names)  # the package sits at the root (platlib)


def test_wheel_without_the_compiled_lifter_is_pure(tmp_path):
    src = _copy_tree(tmp_path / "src", compiled=True)  # a ready build in the tree is not shipped
    stale = src / "build" / "lib" / "kbtool" / "lift"  # nor one an earlier build left behind
    stale.mkdir(parents=True)
    (stale / "_clifter.cpython-311-x86_64-linux-gnu.so").write_bytes(b"\x7fELF")
    wheel = _pip_wheel(src, tmp_path / "dist", {"KBTOOL_ACCEL": "0"})
    tags, meta, names = _wheel_meta(wheel)
    assert tags == {"py3-none-any"}
    assert "Root-Is-Purelib: true" in meta
    assert not any("_clifter" in n for n in names)
    assert "kbtool/lift/lifter/__init__.py" in names and "kbtool/__main__.py" in names


def test_python_m_kbtool(tmp_path):
    p = subprocess.run(
        [sys.executable, "-m", "kbtool", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("Usage: kbtool ") and "ingest" in p.stdout
    p = subprocess.run(
        [sys.executable, "-m", "kbtool", "--db", str(tmp_path / "none.db"), "versions"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert p.returncode == 1 and p.stderr.startswith("error:") and "Traceback" not in p.stderr
