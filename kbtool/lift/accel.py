"""Optional mypyc-compiled lifter: the same ``lifter.py`` source as a C extension (~2.5x less CPU).

    pip install mypy setuptools           # mypyc ships with mypy; needs a C compiler (gcc)
    python -m kbtool.lift.accel build     # compile; writes kbtool/lift/_clifter*.so
    python -m kbtool.lift.accel status    # which path kbtool.lift uses, and why
    python -m kbtool.lift.accel clean     # remove the compiled files

``build`` compiles a copy of :mod:`kbtool.lift.lifter` as ``kbtool.lift._clifter`` and records
the SHA-256 of the source it compiled in ``_clifter.sha256``; :mod:`kbtool.lift.active` then
picks it for ``kbtool.lift`` (``KBTOOL_LIFT=pure`` forces the pure module, the reference and
the default on a plain install). Both give byte-identical output
(``tests/test_lift_accel.py``). The compiled files are build products: never committed
(``.gitignore``); rebuild after any change to ``lifter.py`` (a stale build is ignored).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from .active import (
    COMPILED_NAME,
    HERE,
    PATH,
    SOURCE,
    STAMP,
    compiled_files,
    compiled_state,
    source_digest,
)


def build(verbose: bool = False) -> list[Path]:
    """Compile ``lifter.py`` with mypyc into ``_clifter`` next to this file; return its files."""
    if importlib.util.find_spec("mypyc") is None:
        raise RuntimeError("mypyc not found: pip install mypy setuptools (mypy ships mypyc)")
    pkg_root = HERE.parent.parent  # the directory holding the kbtool package
    digest = source_digest()
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
        target.write_bytes(SOURCE.read_bytes())
        cmd = [
            sys.executable,
            "-m",
            "mypyc",
            "--disable-error-code=annotation-unchecked",
            "--follow-imports=silent",
            f"kbtool/lift/{COMPILED_NAME}.py",
        ]
        env = {**os.environ, "MYPY_CACHE_DIR": str(Path(tmp) / "cache")}
        p = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True)
        if verbose or p.returncode:
            sys.stderr.write(p.stdout[-4000:] + p.stderr[-4000:])
        built = sorted((tree / "kbtool" / "lift").glob(f"{COMPILED_NAME}*.so")) + sorted(
            (tree / "kbtool" / "lift").glob(f"{COMPILED_NAME}*.pyd")
        )
        if p.returncode or not built:
            raise RuntimeError(f"mypyc failed (exit {p.returncode}); output above")
        clean()
        out = []
        for f in built:
            shutil.copy2(f, HERE / f.name)
            out.append(HERE / f.name)
        STAMP.write_text(digest + "\n")
    return out


def clean() -> None:
    for f in compiled_files():
        f.unlink()
    STAMP.unlink(missing_ok=True)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    cmd = args[0] if args else "status"
    if cmd == "build":
        try:
            files = build(verbose="-v" in args)
        except RuntimeError as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
        print("built: " + ", ".join(f.name for f in files))
        print("kbtool.lift now uses the compiled lifter (KBTOOL_LIFT=pure for the pure one)")
        return 0
    if cmd == "clean":
        clean()
        print("removed the compiled lifter; kbtool.lift uses the pure one")
        return 0
    if cmd == "status":
        print(f"compiled lifter: {compiled_state()}; this process uses: {PATH}")
        return 0
    print("usage: python -m kbtool.lift.accel [build [-v] | status | clean]", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
