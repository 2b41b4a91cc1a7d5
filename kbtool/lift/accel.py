"""The mypyc-compiled lifter: the same ``lifter/`` package as a C extension (~2.5x less CPU).

``pip install`` builds it when it can (``setup.py`` needs mypy in the build environment, which
``pyproject.toml`` requests, a C compiler and the Python headers); without them the install
still succeeds and the pure lifter runs. By hand:

    python -m kbtool.lift.accel status    # which path kbtool.lift uses, and why
    python -m kbtool.lift.accel build     # compile again (after editing the lifter)
    python -m kbtool.lift.accel build lifter   # only the twins named (kbtool/lift/_build.py)
    python -m kbtool.lift.accel clean     # remove the compiled files

``build`` compiles every twin of ``_build.TWINS``: a copy of the package :mod:`kbtool.lift.lifter`
as ``kbtool.lift._clifter`` (all its parts in one mypyc group), recording the SHA-256 over
every part it compiled in ``_clifter.sha256``; :mod:`kbtool.lift.active` then
picks it for ``kbtool.lift`` (``KBTOOL_LIFT=pure`` forces the pure module, the reference).
Both give byte-identical output (``tests/unit/lift/test_lift_accel.py``). The compiled files are build
products: never committed (``.gitignore``); a build from other lifter sources is ignored.
"""

from __future__ import annotations

import sys
from pathlib import Path

from . import _build
from .active import HERE, PATH, compiled_state


def build(verbose: bool = False, names: list[str] | None = None) -> list[Path]:
    """Compile the compiled twins (all of ``_build.TWINS``, or those named) with mypyc next
    to their sources; return their files. The lifter's is ``_clifter`` next to this file."""
    root = HERE.parent.parent
    out: list[Path] = []
    for tw in _build.TWINS:
        if names and tw.name not in names:
            continue
        out += _build.compile_twin(root, root / tw.package_dir, verbose, tw)
    return out


def clean() -> None:
    root = HERE.parent.parent
    for tw in _build.TWINS:
        _build.clean(root / tw.package_dir, tw)


def _status() -> str:
    root = HERE.parent.parent
    lines = [f"compiled lifter: {compiled_state()}; this process uses: {PATH}"]
    for tw in _build.TWINS[1:]:
        d = root / tw.package_dir
        state = (
            "absent"
            if not _build.compiled_files(d, tw)
            else "ready"
            if _build.ready_files(d, tw)
            else "stale"
        )
        used = (
            " (used by default when ready; KBTOOL_MATCHER=pure for the pure one)"
            if tw.name == "matcher"
            else ""
        )
        lines.append(f"compiled {tw.name} ({tw.compiled}): {state}{used}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    cmd = args[0] if args else "status"
    if cmd == "build":
        names = [a for a in args[1:] if not a.startswith("-")]
        known = {tw.name for tw in _build.TWINS}
        if set(names) - known:
            print(
                f"error: unknown twin(s) {', '.join(sorted(set(names) - known))}; "
                f"known: {', '.join(sorted(known))}",
                file=sys.stderr,
            )
            return 2
        try:
            files = build(verbose="-v" in args, names=names or None)
        except RuntimeError as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
        print("built: " + ", ".join(f.name for f in files))
        print("kbtool.lift now uses the compiled lifter (KBTOOL_LIFT=pure for the pure one)")
        return 0
    if cmd == "clean":
        clean()
        print("removed the compiled twins; kbtool.lift uses the pure lifter")
        return 0
    if cmd == "status":
        print(_status())
        return 0
    print(
        "usage: python -m kbtool.lift.accel [build [-v] [NAME...] | status | clean]",
        file=sys.stderr,
    )
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
