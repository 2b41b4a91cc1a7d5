"""Build hook: compile the lifter with mypyc while installing, when this machine can.

Everything else about the package is in ``pyproject.toml``. ``build_py`` runs as usual and
then puts the compiled twins (the lifter ``kbtool/lift/_clifter*``; the table is in
``kbtool/lift/_build.py``) in the built package, or in the source tree for an editable install. Without mypy, a C compiler
or the Python headers the install still succeeds and says so: kbtool then runs the pure
lifter, which gives the same output more slowly. ``KBTOOL_ACCEL=0`` skips the compile.

A wheel that carries the compiled lifter is tagged for this interpreter and platform
(``cp311-cp311-linux_x86_64``): it holds a CPython extension. A wheel built without it
(``KBTOOL_ACCEL=0``, no compiler) stays pure (``py3-none-any``). The decision is
``_build.wheel_is_pure``: whatever the built package holds is what the tag says.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.bdist_wheel import bdist_wheel
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

ROOT = Path(__file__).resolve().parent


def _builder():
    spec = importlib.util.spec_from_file_location(
        "_kbtool_lift_build", ROOT / "kbtool" / "lift" / "_build.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class KbtoolDistribution(Distribution):
    """Has extension modules once the built package holds the compiled lifter (set by
    :class:`bdist_wheel_tagged` after the build): ``install`` then puts it in platlib."""

    compiled_lifter = False

    def has_ext_modules(self) -> bool:
        return self.compiled_lifter or super().has_ext_modules()


class build_py_and_lifter(build_py):
    """``build_py``, then every compiled twin of ``kbtool/lift/_build.py``'s table (the
    lifter, ...) into the built package, each on its own: one that fails leaves its pure
    code in place and the others still build."""

    def run(self) -> None:
        super().run()
        editable = getattr(self, "editable_mode", False)
        b = _builder()
        for tw in b.TWINS:
            src = ROOT / tw.package_dir
            dest = src if editable else Path(self.build_lib) / tw.package_dir
            if os.environ.get("KBTOOL_ACCEL", "").strip() == "0":
                if not editable:  # a build left by an earlier run must not ride along in the wheel
                    b.clean(dest, tw)
                continue
            try:
                files = b.ensure_compiled(ROOT, dest, tw=tw)
            except Exception as e:  # noqa: BLE001 - any failure leaves the pure code in place
                sys.stderr.write(
                    f"kbtool: compiled {tw.name} not built ({e}); the pure {tw.name} runs\n"
                )
                continue
            names = ", ".join(f.relative_to(dest).as_posix() for f in files)
            sys.stderr.write(f"kbtool: compiled {tw.name}: {names}\n")


class bdist_wheel_tagged(bdist_wheel):
    """Build first, then tag the wheel by what the built package holds: platform-specific
    with the compiled lifter, ``py3-none-any`` without it."""

    def run(self) -> None:
        if not self.skip_build:
            self.run_command("build")
        build_lib = Path(self.get_finalized_command("build_py").build_lib)
        pure = _builder().wheel_is_pure(build_lib)
        self.distribution.compiled_lifter = not pure
        self.root_is_pure = pure
        super().run()


setup(
    distclass=KbtoolDistribution,
    cmdclass={"build_py": build_py_and_lifter, "bdist_wheel": bdist_wheel_tagged},
)
