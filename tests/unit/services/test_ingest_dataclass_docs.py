"""Every dataclass an ingest's imports make has a docstring of its own (issue 30.4, session
29 S): without one, ``dataclass`` computes ``inspect.signature`` of the class to write one,
at each start-up."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys

from tests.support.paths import ROOT

LEFT: set[str] = set()  # (none left)


def test_the_ingest_path_dataclasses_have_docstrings() -> None:
    code = (
        "import dataclasses, sys\n"
        "import kbtool.cli, kbtool.commands.ingest_cmd, kbtool.services.ingest\n"
        "for name, m in list(sys.modules.items()):\n"
        "    if not name.startswith('kbtool'): continue\n"
        "    for k, v in list(vars(m).items()):\n"
        "        if isinstance(v, type) and dataclasses.is_dataclass(v) and v.__module__ == name:\n"
        "            auto = (v.__doc__ or '').startswith(v.__name__ + '(')\n"
        "            print(f'{name}.{k}', int(auto))\n"
        "print('kbtool.wasm.model' in sys.modules, 'loaded')\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120
    )
    assert r.returncode == 0, r.stderr[-2000:]
    rows = dict(line.rsplit(" ", 1) for line in r.stdout.splitlines())
    # (the ingest's modules were loaded; the dataclasses left among them may be few or none:
    # plain classes replace them, kbtool.plainclass)
    assert rows.pop("True") == "loaded"
    assert {k for k, auto in rows.items() if auto == "1"} <= LEFT


def test_a_class_without_one_is_caught() -> None:
    @dataclasses.dataclass
    class NoDoc:
        x: int

    assert (NoDoc.__doc__ or "").startswith("NoDoc(")
