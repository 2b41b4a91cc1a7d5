"""The first whole-module lift after an ingest (a cold preparation, written to the code store
a second later by a timer thread) still forks its workers: the pool forks only from a
single-threaded process, so the pending write is made before the fork, not left to a thread."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork")

# run in a fresh process: a pytest-xdist worker has threads of its own (no fork there)
_SCRIPT = """
import json, sys, threading
import kbtool.wasm.workers as w
from kbtool.kb.db import open_ro
from kbtool.services import code
real, seen = w.pool_context, []
def spy():
    ctx = real()
    seen.append([ctx is not None, sorted(t.name for t in threading.enumerate())])
    return ctx
w.pool_context = spy
conn = open_ro(sys.argv[1])
n = sum(1 for _ in code.module_c(conn, 1, workers=2))
print(json.dumps({"seen": seen, "chunks": n}))
"""


def test_a_cold_whole_module_lift_forks_its_workers(demo_kb_master, tmp_path):
    store = tmp_path / "store"
    env = dict(os.environ, KBTOOL_CODE_CACHE_DIR=str(store))
    out = subprocess.run(
        [sys.executable, "-c", _SCRIPT, str(demo_kb_master)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    got = json.loads(out.stdout.splitlines()[-1])
    assert got["seen"], got  # the demo module is big enough for a pool
    assert got["seen"][0] == [True, ["MainThread"]], got  # forked, no store thread alive
    assert got["chunks"] > 100
    assert list(store.iterdir()), "the cold preparation is kept in the store before the fork"
