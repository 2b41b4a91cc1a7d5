"""Compile ``lifter.py`` with mypyc into ``_clifter`` (the compiled twin of the pure lifter).

Standard library only and no package imports: ``setup.py`` loads this file by path while
building kbtool (``pip install``), before any of kbtool's dependencies exist, and
``python -m kbtool.lift.accel build`` calls it on an installed tree. A build is recorded by
the SHA-256 of the ``lifter.py`` it compiled (``_clifter.sha256``); :mod:`.active` uses the
compiled module only when that matches today's source.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import os
import shutil
import sys
from pathlib import Path

COMPILED_NAME = "_clifter"
STAMP_NAME = f"{COMPILED_NAME}.sha256"


def source_digest(lift_dir: Path) -> str:
    return hashlib.sha256((lift_dir / "lifter.py").read_bytes()).hexdigest()


def compiled_files(lift_dir: Path) -> list[Path]:
    """Extension modules a build left in ``lift_dir`` (the module and mypyc's runtime)."""
    return sorted(lift_dir.glob(f"{COMPILED_NAME}*.so")) + sorted(
        lift_dir.glob(f"{COMPILED_NAME}*.pyd")
    )


def ready_files(lift_dir: Path) -> list[Path]:
    """This interpreter's compiled files in ``lift_dir`` when they were built from the
    ``lifter.py`` next to them; else an empty list."""
    stamp = lift_dir / STAMP_NAME
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]  # this interpreter's, e.g. .cpython-311-...so
    files = [f for f in compiled_files(lift_dir) if f.name.endswith(suffix)]
    if not files or not stamp.is_file():
        return []
    if stamp.read_text().strip() != source_digest(lift_dir):
        return []
    if not any(f.name == COMPILED_NAME + suffix for f in files):
        return []
    return files


def wheel_is_pure(build_lib: Path) -> bool:
    """Whether a wheel of the package built in ``build_lib`` is pure Python: no compiled
    lifter in ``build_lib/kbtool/lift`` (a wheel with one holds a CPython extension and is
    tagged for its interpreter and platform)."""
    return not compiled_files(build_lib / "kbtool" / "lift")


def clean(lift_dir: Path) -> None:
    for f in compiled_files(lift_dir):
        f.unlink()
    (lift_dir / STAMP_NAME).unlink(missing_ok=True)


def _install(files: list[Path], digest: str, dest: Path) -> list[Path]:
    dest.mkdir(parents=True, exist_ok=True)
    clean(dest)
    out = []
    for f in files:
        shutil.copy2(f, dest / f.name)
        out.append(dest / f.name)
    (dest / STAMP_NAME).write_text(digest + "\n")
    return out


def compile_lifter(pkg_root: Path, dest: Path, verbose: bool = False) -> list[Path]:
    """Compile ``pkg_root/kbtool/lift/lifter.py`` as ``kbtool.lift._clifter`` into ``dest``.

    Raises RuntimeError when mypyc is missing or the compile fails (no C compiler, no
    Python headers); ``dest`` is left as it was then.
    """
    import subprocess  # the compile path only: kbtool.lift imports this module on every start
    import tempfile

    if importlib.util.find_spec("mypyc") is None:
        raise RuntimeError("mypyc not found: pip install mypy setuptools (mypy ships mypyc)")
    lift_dir = pkg_root / "kbtool" / "lift"
    digest = source_digest(lift_dir)
    with tempfile.TemporaryDirectory(prefix="kbtool-accel-") as tmp:
        tree = Path(tmp) / "src"
        # mypyc reads the types of what lifter.py imports: copy the package's sources only
        shutil.copytree(
            pkg_root / "kbtool",
            tree / "kbtool",
            ignore=lambda d, names: (
                [n for n in names if not (n.endswith(".py") or (Path(d) / n).is_dir())]
                + [n for n in names if n == "__pycache__"]
            ),
        )
        target = tree / "kbtool" / "lift" / f"{COMPILED_NAME}.py"
        target.write_bytes((lift_dir / "lifter.py").read_bytes())
        cmd = [
            sys.executable,
            "-m",
            "mypyc",
            "--disable-error-code=annotation-unchecked",
            "--follow-imports=silent",
            f"kbtool/lift/{COMPILED_NAME}.py",
        ]
        env = {**os.environ, "MYPY_CACHE_DIR": str(Path(tmp) / "cache")}
        try:
            p = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True)
        except OSError as e:
            raise RuntimeError(f"cannot run mypyc: {e}") from e
        if verbose or p.returncode:
            sys.stderr.write(p.stdout[-4000:] + p.stderr[-4000:])
        built = compiled_files(tree / "kbtool" / "lift")
        if p.returncode or not built:
            raise RuntimeError(f"mypyc failed (exit {p.returncode}); output above")
        return _install(built, digest, dest)


def ensure_compiled(pkg_root: Path, dest: Path, verbose: bool = False) -> list[Path]:
    """The compiled lifter in ``dest``: reuses a ready build from the source tree (a second
    install of the same source compiles nothing), else compiles and keeps a copy there."""
    lift_dir = pkg_root / "kbtool" / "lift"
    have = ready_files(lift_dir)
    if not have:
        try:
            have = compile_lifter(pkg_root, lift_dir, verbose)
        except OSError:  # a read-only source tree: compile straight into dest
            return compile_lifter(pkg_root, dest, verbose)
    if dest.resolve() == lift_dir.resolve():
        return have
    return _install(have, source_digest(lift_dir), dest)
