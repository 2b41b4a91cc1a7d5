"""Compile kbtool's compiled twins with mypyc: a pure module or package next to a C-extension
copy of itself (the lifter: ``kbtool/lift/lifter/`` → ``kbtool.lift._clifter``).

**The table of twins** (:data:`TWINS`) is the one place a compiled unit is declared. One line
per twin::

    Twin(name, source, compiled)
    Twin("lifter", "kbtool/lift/lifter", "kbtool.lift._clifter")

- ``name``: a short word for messages and ``python -m kbtool.lift.accel build NAME``.
- ``source``: the pure code, a path relative to the project root without ``.py``: a module
  (``kbtool/wasm/_hot`` = ``kbtool/wasm/_hot.py``) or a package directory (``kbtool/lift/lifter``
  = ``kbtool/lift/lifter/*.py``). The parts of a package import each other relatively
  (``from .core import X``) and the rest of kbtool by ``..`` imports, so that the copy
  compiled as ``compiled`` calls its own compiled parts, never the pure ones.
- ``compiled``: the dotted name of the twin; it sits in the same directory as ``source``
  (``kbtool.lift._clifter`` for ``kbtool/lift/lifter``).

A build compiles every file of the twin as one mypyc group (one shared library,
``<compiled>__mypyc``, so calls between its parts are native calls) and records the SHA-256
over every source file it compiled (:func:`source_digest`) in ``<compiled>.sha256`` next to
it. The loader (for the lifter, :mod:`.active`) uses the compiled twin only when
:func:`ready_files` says the stamp matches today's source and the files are this
interpreter's. Adding a twin is one line here plus its loader; ``setup.py`` and
``python -m kbtool.lift.accel build`` then compile it too.

Standard library only and no package imports: ``setup.py`` loads this file by path while
building kbtool (``pip install``), before any of kbtool's dependencies exist, and
``python -m kbtool.lift.accel build`` calls it on an installed tree.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import os
import shutil
import sys
from pathlib import Path
from typing import NamedTuple


class Twin(NamedTuple):
    """One compiled unit: see the module docstring for the fields."""

    name: str
    source: str  # "kbtool/lift/lifter": module (.py) or package directory, from the root
    compiled: str  # "kbtool.lift._clifter": dotted name, same directory as the source

    @property
    def package_dir(self) -> str:
        """The directory holding source and twin, relative to the root (``kbtool/lift``)."""
        return self.source.rpartition("/")[0]

    @property
    def source_leaf(self) -> str:
        return self.source.rpartition("/")[2]

    @property
    def leaf(self) -> str:
        """The twin's own name in its directory (``_clifter``)."""
        return self.compiled.rpartition(".")[2]

    @property
    def stamp_name(self) -> str:
        return f"{self.leaf}.sha256"


# name, source (module or package, from the project root), compiled name
TWINS: tuple[Twin, ...] = (
    Twin("lifter", "kbtool/lift/lifter", "kbtool.lift._clifter"),
    Twin("decoder", "kbtool/wasm/decoder", "kbtool.wasm._cdecoder"),
    Twin("datawalk", "kbtool/analysis/datawalk", "kbtool.analysis._cdatawalk"),
    Twin("matcher", "kbtool/identity/matcher", "kbtool.identity._cmatcher"),
)

LIFTER = TWINS[0]
COMPILED_NAME = LIFTER.leaf
STAMP_NAME = LIFTER.stamp_name
_EXT = (".so", ".pyd")


def twin(name: str) -> Twin:
    for t in TWINS:
        if t.name == name:
            return t
    raise KeyError(f"no compiled twin named {name!r} (known: {', '.join(t.name for t in TWINS)})")


def source_files(pkg_dir: Path, tw: Twin = LIFTER) -> list[Path]:
    """The pure source files of ``tw`` in ``pkg_dir`` (its directory): the module, or every
    ``.py`` file of the package, in a stable order."""
    pkg = pkg_dir / tw.source_leaf
    if pkg.is_dir():
        return sorted(p for p in pkg.rglob("*.py") if "__pycache__" not in p.parts)
    return [pkg_dir / f"{tw.source_leaf}.py"]


def source_digest(pkg_dir: Path, tw: Twin = LIFTER) -> str:
    """SHA-256 over every source file of ``tw``: a module's bytes; for a package each part's
    path (relative to the package) and bytes, so renaming, adding or editing a part counts."""
    files = source_files(pkg_dir, tw)
    pkg = pkg_dir / tw.source_leaf
    if not pkg.is_dir():
        return hashlib.sha256(files[0].read_bytes()).hexdigest()
    h = hashlib.sha256()
    for f in files:
        data = f.read_bytes()
        h.update(f.relative_to(pkg).as_posix().encode() + b"\0")
        h.update(len(data).to_bytes(8, "little") + data)
    return h.hexdigest()


def compiled_files(pkg_dir: Path, tw: Twin = LIFTER) -> list[Path]:
    """Extension modules a build of ``tw`` left in ``pkg_dir``: the module (or the package's
    part modules in ``<leaf>/``) and mypyc's shared library ``<leaf>__mypyc``."""
    top = [f for f in sorted(pkg_dir.glob(f"{tw.leaf}*")) if f.is_file() and f.suffix in _EXT]
    sub = pkg_dir / tw.leaf
    inner = (
        sorted(f for f in sub.rglob("*") if f.is_file() and f.suffix in _EXT)
        if sub.is_dir()
        else []
    )
    return top + inner


def ready_files(pkg_dir: Path, tw: Twin = LIFTER) -> list[Path]:
    """This interpreter's compiled files of ``tw`` in ``pkg_dir`` when they were built from
    the source next to them; else an empty list."""
    stamp = pkg_dir / tw.stamp_name
    suffix = importlib.machinery.EXTENSION_SUFFIXES[
        0
    ]  # this interpreter's, e.g. .cpython-311-...so
    files = [f for f in compiled_files(pkg_dir, tw) if f.name.endswith(suffix)]
    if not files or not stamp.is_file() or not all(f.is_file() for f in source_files(pkg_dir, tw)):
        return []
    if stamp.read_text().strip() != source_digest(pkg_dir, tw):
        return []
    entry = {pkg_dir / (tw.leaf + suffix), pkg_dir / tw.leaf / ("__init__" + suffix)}
    if not entry.intersection(files):
        return []
    return files


def wheel_is_pure(build_lib: Path) -> bool:
    """Whether a wheel of the package built in ``build_lib`` is pure Python: no compiled twin
    in it (a wheel with one holds a CPython extension and is tagged for its interpreter and
    platform)."""
    return not any(compiled_files(build_lib / t.package_dir, t) for t in TWINS)


def clean(pkg_dir: Path, tw: Twin = LIFTER) -> None:
    for f in compiled_files(pkg_dir, tw):
        f.unlink()
    sub = pkg_dir / tw.leaf
    if sub.is_dir():  # the twin package's directory holds build products only
        shutil.rmtree(sub)
    (pkg_dir / tw.stamp_name).unlink(missing_ok=True)


def _install(files: list[Path], base: Path, digest: str, dest: Path, tw: Twin) -> list[Path]:
    """Copy ``files`` (under ``base``) to ``dest`` keeping their relative paths; stamp it."""
    dest.mkdir(parents=True, exist_ok=True)
    clean(dest, tw)
    out = []
    for f in files:
        to = dest / f.relative_to(base)
        to.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(f, to)
        out.append(to)
    (dest / tw.stamp_name).write_text(digest + "\n")
    return out


_SETUP = """\
import sys
from setuptools import setup
from mypyc.build import mypycify

paths = sys.argv[sys.argv.index("--") + 1:]
del sys.argv[sys.argv.index("--"):]
setup(name="kbtool-twin", ext_modules=mypycify(
    ["--disable-error-code=annotation-unchecked", "--follow-imports=silent", *paths],
    opt_level="3", group_name={group!r}))
"""


def compile_twin(
    pkg_root: Path, dest: Path, verbose: bool = False, tw: Twin = LIFTER
) -> list[Path]:
    """Compile ``tw`` (its source under ``pkg_root``) as one mypyc group into ``dest``.

    Raises RuntimeError when mypyc is missing or the compile fails (no C compiler, no
    Python headers); ``dest`` is left as it was then.
    """
    import subprocess  # the compile path only: kbtool.lift imports this module on every start
    import tempfile

    if importlib.util.find_spec("mypyc") is None:
        raise RuntimeError("mypyc not found: pip install mypy setuptools (mypy ships mypyc)")
    src_dir = pkg_root / tw.package_dir
    digest = source_digest(src_dir, tw)
    with tempfile.TemporaryDirectory(prefix="kbtool-accel-") as tmp:
        tree = Path(tmp) / "src"
        # mypyc reads the types of what the twin imports: copy the package's sources only
        top = tw.source.split("/")[0]
        shutil.copytree(
            pkg_root / top,
            tree / top,
            ignore=lambda d, names: (
                [n for n in names if not (n.endswith(".py") or (Path(d) / n).is_dir())]
                + [n for n in names if n == "__pycache__"]
            ),
        )
        out_dir = tree / tw.package_dir
        twin_pkg = out_dir / tw.leaf
        if twin_pkg.exists():
            shutil.rmtree(twin_pkg)
        if (src_dir / tw.source_leaf).is_dir():
            shutil.copytree(out_dir / tw.source_leaf, twin_pkg)
            targets = [p.relative_to(tree).as_posix() for p in sorted(twin_pkg.rglob("*.py"))]
        else:
            (out_dir / f"{tw.leaf}.py").write_bytes((src_dir / f"{tw.source_leaf}.py").read_bytes())
            targets = [f"{tw.package_dir}/{tw.leaf}.py"]
        (Path(tmp) / "setup_twin.py").write_text(_SETUP.format(group=tw.compiled))
        cmd = [
            sys.executable,
            str(Path(tmp) / "setup_twin.py"),
            "build_ext",
            "--inplace",
            "--",
            *targets,
        ]
        env = {**os.environ, "MYPY_CACHE_DIR": str(Path(tmp) / "cache")}
        try:
            p = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True)
        except OSError as e:
            raise RuntimeError(f"cannot run mypyc: {e}") from e
        if verbose or p.returncode:
            sys.stderr.write(p.stdout[-4000:] + p.stderr[-4000:])
        built = compiled_files(out_dir, tw)
        if p.returncode or not built:
            raise RuntimeError(f"mypyc failed (exit {p.returncode}); output above")
        return _install(built, out_dir, digest, dest, tw)


def compile_lifter(pkg_root: Path, dest: Path, verbose: bool = False) -> list[Path]:
    """Compile the lifter's twin into ``dest`` (see :func:`compile_twin`)."""
    return compile_twin(pkg_root, dest, verbose, LIFTER)


def ensure_compiled(
    pkg_root: Path, dest: Path, verbose: bool = False, tw: Twin = LIFTER
) -> list[Path]:
    """The compiled twin in ``dest``: reuses a ready build from the source tree (a second
    install of the same source compiles nothing), else compiles and keeps a copy there."""
    src_dir = pkg_root / tw.package_dir
    have = ready_files(src_dir, tw)
    if not have:
        try:
            have = _compile(pkg_root, src_dir, verbose, tw)
        except OSError:  # a read-only source tree: compile straight into dest
            return _compile(pkg_root, dest, verbose, tw)
    if dest.resolve() == src_dir.resolve():
        return have
    return _install(have, src_dir, source_digest(src_dir, tw), dest, tw)


def _compile(pkg_root: Path, dest: Path, verbose: bool, tw: Twin) -> list[Path]:
    # the lifter through compile_lifter, so that tests can stand in for the compile
    if tw == LIFTER:
        return compile_lifter(pkg_root, dest, verbose)
    return compile_twin(pkg_root, dest, verbose, tw)
