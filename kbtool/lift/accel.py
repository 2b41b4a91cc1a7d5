"""The mypyc-compiled lifter: the same ``lifter.py`` source as a C extension (~2.5x less CPU).

``pip install`` builds it when it can (``setup.py`` needs mypy in the build environment, which
``pyproject.toml`` requests, a C compiler and the Python headers); without them the install
still succeeds and the pure lifter runs. By hand:

    python -m kbtool.lift.accel status    # which path kbtool.lift uses, and why
    python -m kbtool.lift.accel build     # compile again (after editing lifter.py)
    python -m kbtool.lift.accel clean     # remove the compiled files

``build`` compiles a copy of :mod:`kbtool.lift.lifter` as ``kbtool.lift._clifter`` and records
the SHA-256 of the source it compiled in ``_clifter.sha256``; :mod:`kbtool.lift.active` then
picks it for ``kbtool.lift`` (``KBTOOL_LIFT=pure`` forces the pure module, the reference).
Both give byte-identical output (``tests/test_lift_accel.py``). The compiled files are build
products: never committed (``.gitignore``); a build from another ``lifter.py`` is ignored.
"""

from __future__ import annotations

import sys
from pathlib import Path

from . import _build
from .active import HERE, PATH, compiled_state


def build(verbose: bool = False) -> list[Path]:
    """Compile ``lifter.py`` with mypyc into ``_clifter`` next to this file; return its files."""
    return _build.compile_lifter(HERE.parent.parent, HERE, verbose)


def clean() -> None:
    _build.clean(HERE)


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
