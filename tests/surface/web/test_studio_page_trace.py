"""``benchmarks/studio_page.py --smoke --trace``: each fresh page's requests, in the order its
scripts made them, with when each was asked and when its answer came (what waits on what):
the studio opened on a function asks for its first window first; a dashboard deep link asks
for the function's history, then its first window, and both come."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from tests.support.paths import ROOT
from tests.support.web import BROWSER_MARKS

pytestmark = BROWSER_MARKS

ROW = re.compile(r"^ +(\d+) -> +(\d+|\.\.\.)  (\S+)$")


def traces(stdout: str) -> dict[str, list[tuple[int, str, str]]]:
    """step -> [(asked, came, path)] as printed."""
    out: dict[str, list[tuple[int, str, str]]] = {}
    step = None
    for line in stdout.splitlines():
        head = re.match(r"^  trace, (.+) \(load [\d.]+\): asked -> came", line)
        if head:
            step = head.group(1)
            out[step] = []
            continue
        row = ROW.match(line)
        if row and step is not None:
            out[step].append((int(row.group(1)), row.group(2), row.group(3)))
        elif not row:
            step = None
    return out


def test_trace(tmp_path) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "studio_page.py"), "--smoke", "--trace"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    got = traces(out.stdout)
    studio = [p for _a, _c, p in got["open on the largest"]]
    assert re.match(r"/api/disasm/\d+/\d+\?kind=wasm&offset=0&limit=300$", studio[0]), studio
    deep = got["dashboard function (largest, first code)"]
    paths = [p for _a, _c, p in deep]
    history = next(i for i, p in enumerate(paths) if p.startswith("/api/history/"))
    window = next(i for i, p in enumerate(paths) if p.startswith("/api/disasm/"))
    assert history < window, paths
    assert deep[history][1] != "..." and deep[window][1] != "..."  # both came
    assert deep[window][0] >= int(deep[history][1])  # the window once the history said where
    assert all(a >= 0 for a, _c, _p in deep)
