"""Build hook: compile the lifter with mypyc while installing, when this machine can.

Everything else about the package is in ``pyproject.toml``. ``build_py`` runs as usual and
then puts the compiled lifter (``kbtool/lift/_clifter*``, see ``kbtool/lift/_build.py``) in
the built package, or in the source tree for an editable install. Without mypy, a C compiler
or the Python headers the install still succeeds and says so: kbtool then runs the pure
lifter, which gives the same output more slowly. ``KBTOOL_ACCEL=0`` skips the compile.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


def _builder():
    spec = importlib.util.spec_from_file_location(
        "_kbtool_lift_build", ROOT / "kbtool" / "lift" / "_build.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class build_py_and_lifter(build_py):
    def run(self) -> None:
        super().run()
        if os.environ.get("KBTOOL_ACCEL", "").strip() == "0":
            return
        src = ROOT / "kbtool" / "lift"
        dest = src if getattr(self, "editable_mode", False) else Path(self.build_lib) / "kbtool" / "lift"
        try:
            files = _builder().ensure_compiled(ROOT, dest)
        except Exception as e:  # noqa: BLE001 - any failure leaves the pure lifter in place
            sys.stderr.write(f"kbtool: compiled lifter not built ({e}); the pure lifter runs\n")
            return
        sys.stderr.write(f"kbtool: compiled lifter: {', '.join(f.name for f in files)}\n")


setup(cmdclass={"build_py": build_py_and_lifter})
