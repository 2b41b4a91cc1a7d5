"""Worker pools (wasm decode, whole-module lift): never forked from a threaded process (the
MCP server), never left behind when their parent is killed (SIGKILL, SIGTERM)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from kbtool.kb import queries
from kbtool.kb.db import open_ro

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and fork")

CLI = [sys.executable, "-m", "kbtool.cli"]
DEADLINE = 120.0  # seconds a step may take before the test fails instead of hanging


def _module_bytes(db: Path, version_id: int = 1) -> bytes:
    conn = open_ro(db)
    try:
        data = queries.module_bytes(conn, version_id)
    finally:
        conn.close()
    assert data is not None
    return data


def _children(pid: int) -> set[int]:
    """The direct children of ``pid`` (every thread's, from /proc)."""
    out: set[int] = set()
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except FileNotFoundError:
        return out
    for t in tasks:
        try:
            text = Path(f"/proc/{pid}/task/{t}/children").read_text()
        except OSError:
            continue
        out.update(int(x) for x in text.split())
    return out


def _running(pid: int) -> bool:
    """Alive and not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _wait(cond, what: str) -> None:
    end = time.monotonic() + DEADLINE
    while not cond():
        if time.monotonic() > end:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.02)


def _blocked_lift(db: Path) -> tuple[subprocess.Popen, set[int]]:
    """`kbtool code 1 --all` writing into a pipe nobody reads: it blocks on stdout once the
    pipe is full, with its lift workers started; returns the process and its workers."""
    if len(os.sched_getaffinity(0)) < 2:  # the lift then runs in its own process: no workers
        pytest.skip("one CPU for this process (and the kbtool it starts): no lift workers")
    proc = subprocess.Popen(
        CLI + ["--db", str(db), "code", "1", "--all"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    workers: set[int] = set()

    def started() -> bool:
        workers.update(_children(proc.pid))
        assert proc.poll() is None, proc.stderr.read().decode()
        return len(workers) >= 2

    _wait(started, "the lift workers to start")
    return proc, workers


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_lift_workers_die_with_their_parent(demo_kb_master, sig):
    proc, workers = _blocked_lift(demo_kb_master)
    try:
        proc.send_signal(sig)
        rc = proc.wait(timeout=DEADLINE)
        assert rc in (-sig, 128 + sig), rc
        _wait(lambda: not any(_running(w) for w in workers), "the lift workers to exit")
    finally:
        for w in workers:
            if _running(w):
                os.kill(w, signal.SIGKILL)
        proc.stdout.close()
        proc.stderr.close()


def test_sigterm_is_one_clean_exit(demo_kb_master):
    """SIGTERM: status 143, no traceback on stderr."""
    proc, workers = _blocked_lift(demo_kb_master)
    proc.terminate()
    assert proc.wait(timeout=DEADLINE) == 143
    err = proc.stderr.read().decode()
    assert "Traceback" not in err, err
    proc.stdout.close()
    proc.stderr.close()


def test_decode_pool_not_forked_from_a_threaded_process(demo_kb_master, monkeypatch):
    """With another thread running, ``analyze_module(workers=2)`` must not fork (a fork
    there copies locks held by other threads); the result is the same as in one process."""
    from kbtool.wasm import analyze_module

    data = _module_bytes(demo_kb_master)
    alone = analyze_module(data, workers=1)

    def no_fork(*a, **k):
        raise AssertionError("forked from a threaded process")

    stop = threading.Event()
    t = threading.Thread(target=stop.wait)
    t.start()
    try:
        monkeypatch.setattr(os, "fork", no_fork)
        both = analyze_module(data, workers=2)
    finally:
        stop.set()
        t.join()
    assert [f.body_hash for f in both.functions] == [f.body_hash for f in alone.functions]


def test_lift_pool_not_forked_from_a_threaded_process(demo_kb_master, monkeypatch):
    from kbtool.lift import lift_module, prepare

    lm = prepare(_module_bytes(demo_kb_master))

    def no_fork(*a, **k):
        raise AssertionError("forked from a threaded process")

    stop = threading.Event()
    t = threading.Thread(target=stop.wait)
    t.start()
    try:
        monkeypatch.setattr(os, "fork", no_fork)
        texts = [r.text for r in lift_module(lm, workers=2)]
    finally:
        stop.set()
        t.join()
    assert len(texts) == lm.module.num_functions - lm.module.num_func_imports


def test_decode_pool_used_when_single_threaded(demo_kb_master):
    """The fork pool still runs (and agrees) in a single-threaded process."""
    code = (
        "import os, sys\n"
        "from kbtool.kb.db import open_ro\n"
        "from kbtool.kb import queries\n"
        "from kbtool.wasm import analyze_module\n"
        f"c = open_ro({str(demo_kb_master)!r}); data = queries.module_bytes(c, 1); c.close()\n"
        "forks = []\n"
        "real = os.fork\n"
        "def fork():\n"
        "    forks.append(1)\n"
        "    return real()\n"
        "os.fork = fork\n"
        "a = analyze_module(data, workers=2)\n"
        "os.fork = real\n"
        "b = analyze_module(data, workers=1)\n"
        "assert [f.shape_hash for f in a.functions] == [f.shape_hash for f in b.functions]\n"
        "print(len(forks))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=DEADLINE
    )
    assert out.returncode == 0, out.stderr
    assert int(out.stdout) >= 2


def test_analyze_version_over_mcp_with_decode_workers(demo_kb):
    """The real stdio client calls analyze_version on a module big enough for the decode
    workers (threshold lowered with KBTOOL_PARALLEL_DECODE_BYTES): it answers."""
    pytest.importorskip("mcp.client.stdio")
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    from tests.support.mcp import server_env, text_of

    assert os.cpu_count() and os.cpu_count() > 1 or pytest.skip("one core: no decode workers")
    size = len(_module_bytes(demo_kb, 2))

    async def main() -> str:
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "kbtool.cli", "mcp", "--db", str(demo_kb)],
            env=server_env(KBTOOL_PARALLEL_DECODE_BYTES=str(size // 2)),
        )
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                # several calls at once: the server runs them on its worker threads
                res = await asyncio.wait_for(
                    asyncio.gather(
                        s.call_tool("analyze_version", {"version_id": 2}),
                        s.call_tool("list_versions", {}),
                    ),
                    DEADLINE,
                )
                return text_of(res[0])

    text = asyncio.run(main())
    assert '"version_id":2' in text.replace(" ", "")


HALF_MESSAGE = """
import multiprocessing as mp, os, struct, time
from concurrent.futures import ProcessPoolExecutor
from kbtool.wasm.workers import kill_workers, worker_init

EX = None

def half_message():
    # what a worker killed in the middle of sending a big result leaves in the pipe
    os.write(EX._result_queue._writer.fileno(), struct.pack("!i", 1 << 20) + b"x" * 10)
    time.sleep(600)

EX = ProcessPoolExecutor(1, mp_context=mp.get_context("fork"), initializer=worker_init,
                         initargs=(os.getpid(),))
fut = EX.submit(half_message)
time.sleep(1)  # let the manager thread start reading the half message (either order passes)
kill_workers(EX)
print("stopped", flush=True)
"""


def test_killing_workers_never_waits_for_a_half_sent_result():
    """A worker killed mid-send (SIGTERM or a full disk while it returns a big range) must
    not leave the pool's manager thread waiting forever for the rest of the message."""
    out = subprocess.run(
        [sys.executable, "-c", HALF_MESSAGE], capture_output=True, text=True, timeout=DEADLINE
    )
    assert out.returncode == 0 and "stopped" in out.stdout, out.stderr
