"""What a fresh interpreter imports: the names in ``sys.modules`` once some code has run."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.support.paths import ROOT


def modules_after(code: str) -> set[str]:
    """The names in ``sys.modules`` of a fresh interpreter (this checkout first on its path,
    the background warm-ups off) once ``code`` has run."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "KBTOOL_DIFF_WARM": "0", "KBTOOL_CODE_WARM": "0"}
    r = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport sys\nprint('\\n'.join(sys.modules))"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    return set(r.stdout.splitlines())
