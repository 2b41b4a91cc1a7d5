"""The interactive benchmark's API and MCP sections: a real ``kbtool serve`` (and datasette
on the same KB file as its peer) over HTTP, and the MCP SDK's real stdio client against
``kbtool mcp`` (``benchmarks/interactive.py`` is the entry point)."""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Callable
from pathlib import Path

from benchmarks.interactive_common import CPU, GC, GC_LONGEST, WARM, merge, start_serve
from benchmarks.web_api import free_port, stop

# ---------------------------------------------------------------- API (real servers)


def get(port: int, path: str) -> tuple[int, bytes, float]:
    t = time.perf_counter()
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    try:
        c.request("GET", path)
        r = c.getresponse()
        body = r.read()
        return r.status, body, (time.perf_counter() - t) * 1000
    finally:
        c.close()


def wait(port: int, path: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if get(port, path)[0] == 200:
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"no answer on :{port}{path}")


def api_paths(p: dict) -> list[tuple[str, list[str]]]:
    v = p["version"]
    out = [
        ("versions", ["/api/versions"]),
        ("functions", [f"/api/versions/{v}/functions"]),
        ("coverage", [f"/api/versions/{v}/coverage"]),
    ]
    if "pair_stored" in p:
        a, b = p["pair_stored"]
        out.append(("diff (stored)", [f"/api/diff?from={a}&to={b}"]))
        a, b = p["pair_unstored"]
        out.append(("diff (not stored)", [f"/api/diff?from={a}&to={b}"]))
    for cls in ("small", "median", "largest"):
        if cls == "largest":  # what the studio asks first (one 300-line window), then more
            big = p["largest"][0]
            for kind in ("c", "wasm"):
                out.append(
                    (
                        f"{kind} pages (largest)",
                        [
                            f"/api/disasm/{v}/{big}?kind={kind}&offset={300 * k}&limit=300"
                            for k in range(WARM + 1)
                        ],
                    )
                )
        out.append((f"disasm ({cls})", [f"/api/disasm/{v}/{i}" for i in p[cls][: WARM + 1]]))
    out.append(("callgraph", [f"/api/callgraph/{v}"]))
    out.append(
        (
            "xrefs",
            [
                f"/api/xrefs/{v}?" + urllib.parse.urlencode({"target": f"#{i}"})
                for i in p["median"][: WARM + 1]
            ],
        )
    )
    return out


def rss_mib(pid: int) -> float:
    """Resident memory of a process now (MiB; 0 when unknown)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


MEANWHILE_MS = 150  # the studio shows the disassembly when the C takes longer (code.js)


def studio(port: int, vid: int, idx: int, res: dict, cold: bool) -> None:
    """What the studio asks when a huge function is opened in the C view. On a version the
    page has read no code of yet (``cold``, studio.js ``codeWindows``): the first window of its
    disassembly, the first C window once that one is here, the window shown when the C has
    not come ``MEANWHILE_MS`` after the click, and the call graph once the C is on screen.
    Otherwise: the C window and the call graph at once, then (after ``MEANWHILE_MS``, while
    the C is lifted) the disassembly's first window. "studio first screen" is the time to the
    first lines on screen (the C, or the disassembly meanwhile); "studio C on screen" to the C."""
    from concurrent.futures import ThreadPoolExecutor

    base = f"/api/disasm/{vid}/{idx}?offset=0&limit=300&kind="
    with ThreadPoolExecutor(3) as pool:
        t = time.perf_counter()
        if cold:
            if get(port, base + "wasm")[0] != 200:
                raise SystemExit("studio meanwhile window: HTTP error")
            here = time.perf_counter() - t
            c = pool.submit(get, port, base + "c")
            try:  # the C before MEANWHILE_MS: the disassembly is never shown
                c.result(timeout=max(0.0, MEANWHILE_MS / 1000 - here))
                first = (time.perf_counter() - t) * 1000
            except TimeoutError:
                time.sleep(max(0.0, MEANWHILE_MS / 1000 - (time.perf_counter() - t)))
                first = (time.perf_counter() - t) * 1000
            graph = None  # asked for once the C is on screen (studio.js codeOnScreen)
        else:
            c = pool.submit(get, port, base + "c")
            graph = pool.submit(get, port, f"/api/callgraph/{vid}")
            try:
                c.result(timeout=MEANWHILE_MS / 1000)
                first = (time.perf_counter() - t) * 1000
            except TimeoutError:
                status, _b, _ms = get(port, base + "wasm")
                if status != 200:
                    raise SystemExit(f"studio meanwhile window: HTTP {status}") from None
                first = (time.perf_counter() - t) * 1000
        status, _b, _ms = c.result()
        c_ms = (time.perf_counter() - t) * 1000
        if graph is None:
            graph = pool.submit(get, port, f"/api/callgraph/{vid}")
        if status != 200 or graph.result()[0] != 200:
            raise SystemExit(f"studio C window / call graph: HTTP {status}")
    kind = "cold" if cold else "warm"
    res.setdefault("studio first screen (huge)", {}).setdefault(kind, []).append(first)
    res.setdefault("studio C on screen (huge)", {}).setdefault(kind, []).append(c_ms)


def gc_trace_start() -> str:
    """``KBTOOL_GC_TRACE`` for the next server started (``kbtool.services.heap``): the file
    where it keeps its collections' pauses."""
    fd, path = tempfile.mkstemp(prefix="kbtool-gc-", suffix=".json")
    os.close(fd)
    os.unlink(path)
    os.environ["KBTOOL_GC_TRACE"] = path
    return path


def gc_trace_read(path: str, res: dict) -> None:
    """The stopped server's collections, as the TUI's: full ones each (wall, CPU ms) and the
    longest pause of any generation (CPU ms)."""
    os.environ.pop("KBTOOL_GC_TRACE", None)
    try:
        with open(path, encoding="utf-8") as f:
            t = json.load(f)
        os.unlink(path)
    except (OSError, ValueError):  # no full collection, or a checkout without the trace
        t = {"full_wall_ms": [], "full_cpu_ms": []}
    res[GC] = {"cold": t["full_wall_ms"] or [0.0]}
    res[CPU + GC] = {"cold": t["full_cpu_ms"] or [0.0]}
    if "max_cpu_ms" in t:
        res[GC_LONGEST] = {"cold": [t["max_cpu_ms"]]}


def api_runs(kb: Path, p: dict, runs: int, root: Path) -> dict:
    out = []
    for _ in range(runs):
        port = free_port()
        res: dict[str, dict[str, list[float]]] = {}
        trace = gc_trace_start()
        proc = start_serve(kb, root, port)
        try:
            wait(port, "/api/provenance")
            huge = p.get("huge") or p["largest"]
            # the studio's first page: the version's function list, then a huge function
            # opened from it at once (the server prepares the version meanwhile)
            get(port, f"/api/versions/{p['version']}/functions")
            studio(port, p["version"], huge[0], res, cold=True)
            for step, paths in api_paths(p):
                seq = paths if len(paths) > 1 else paths * (WARM + 1)
                for i, path in enumerate(seq):
                    before = rss_mib(proc.pid)
                    status, _body, ms = get(port, path)
                    if status != 200:
                        raise SystemExit(f"{path}: HTTP {status}")
                    res.setdefault(step, {}).setdefault("cold" if i == 0 else "warm", []).append(ms)
                    if i == 0 and step.endswith("pages (largest)"):
                        grew = rss_mib(proc.pid) - before  # the server's memory for that page
                        res.setdefault(f"{step}: server +MiB", {})["cold"] = [round(grew, 1)]
            for idx in huge[1:]:  # the next largest: their C not lifted yet
                studio(port, p["version"], idx, res, cold=False)
        finally:
            stop(proc)
        gc_trace_read(trace, res)  # after the server stopped
        out.append(res)
    return merge(out)


def datasette_runs(kb: Path, p: dict, runs: int) -> dict | None:
    exe = shutil.which("datasette")
    if not exe:
        return None
    v = p["version"]
    sql = {
        "versions": "SELECT * FROM versions ORDER BY id",
        "functions": "SELECT f.idx, f.stable_id, f.type_sig, s.name, s.provenance, s.confidence"
        " FROM functions f LEFT JOIN symbols s ON s.stable_id = f.stable_id"
        f" WHERE f.version_id = {v} AND f.imported = 0 ORDER BY f.idx",
        "coverage": "SELECT s.provenance, COUNT(*) FROM functions f LEFT JOIN symbols s"
        f" ON s.stable_id = f.stable_id WHERE f.version_id = {v} AND f.imported = 0"
        " GROUP BY s.provenance",
    }
    out = []
    for _ in range(runs):
        port = free_port()
        proc = subprocess.Popen(
            [
                exe,
                "serve",
                "-i",
                str(kb),
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--setting",
                "max_returned_rows",
                "100000",
                "--setting",
                "sql_time_limit_ms",
                "60000",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            wait(port, "/-/versions.json")
            res: dict[str, dict[str, list[float]]] = {}
            for step, q in sql.items():
                path = f"/{kb.stem}.json?" + urllib.parse.urlencode({"sql": q, "_shape": "array"})
                for i in range(WARM + 1):
                    status, _b, ms = get(port, path)
                    res.setdefault(step, {}).setdefault("cold" if i == 0 else "warm", []).append(ms)
            out.append(res)
        finally:
            stop(proc)
    return merge(out)


# ---------------------------------------------------------------- MCP (the SDK's stdio client)


async def _mcp(kb: Path, p: dict, root: Path, warm_up: bool = False) -> dict:
    """The MCP steps on a fresh ``kbtool mcp``; ``warm_up``: only one whole stored
    ``get_diff``, the harness's own warm-up (:func:`mcp_runs`)."""
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, get_default_environment, stdio_client

    v = p["version"]
    plan_: list[tuple[str, str, list[dict]]] = [
        ("list_versions", "list_versions", [{}]),
        ("list_functions", "list_functions", [{"version_id": v, "limit": 200}]),
        ("coverage", "coverage", [{"version_id": v}]),
    ]
    if "pair_stored" in p:
        a, b = p["pair_stored"]
        plan_.append(
            ("get_diff (stored)", "get_diff", [{"from_version_id": a, "to_version_id": b}])
        )
        plan_.append(  # what the server's instructions tell an agent to do on a big module
            (
                "get_diff (stored, a page)",
                "get_diff",
                [{"from_version_id": a, "to_version_id": b, "limit": 200}],
            )
        )
        a, b = p["pair_unstored"]
        plan_.append(
            ("get_diff (not stored)", "get_diff", [{"from_version_id": a, "to_version_id": b}])
        )
    for cls in ("small", "median", "largest"):
        idx = p[cls][: WARM + 1]
        plan_.append(
            (
                f"get_disassembly ({cls})",
                "get_disassembly",
                [{"version_id": v, "func_index": i, "limit": 200} for i in idx],
            )
        )
        plan_.append(
            (
                f"get_lifted_c ({cls})",
                "get_lifted_c",
                [{"version_id": v, "func_index": i, "limit": 200} for i in idx],
            )
        )
    plan_.append(
        ("get_callers", "get_callers", [{"version_id": v, "func_index": i} for i in p["median"]])
    )
    plan_.append(
        (
            "get_xrefs_to",
            "get_xrefs_to",
            [{"version_id": v, "target": f"#{i}"} for i in p["median"]],
        )
    )
    params = StdioServerParameters(
        command=sys.executable,
        args=["-P", "-m", "kbtool.cli", "mcp", "--db", str(kb)],
        env={
            **get_default_environment(),
            "PYTHONPATH": str(root),
            # the caches' settings too: without XDG_CACHE_HOME the server kept its answers
            # under ~/.cache, not where `diff.warm` prepared them for this KB (a first round
            # then computed the unstored pair: 22-27 s)
            **{k: v for k, v in os.environ.items() if k.startswith(("KBTOOL_", "XDG_"))},
        },
    )
    res: dict[str, dict[str, list[float]]] = {}
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            server = _server_pid()
            for step, tool, args in plan_:
                if warm_up and step != "get_diff (stored)":
                    continue
                seq = args if len(args) > 1 or warm_up else args * (WARM + 1)
                step = WARM_UP if warm_up else step
                for i, a in enumerate(seq):
                    s0, c0 = _cpu_ms(server), time.process_time()
                    t = time.perf_counter()
                    r = await session.call_tool(tool, a)
                    ms = (time.perf_counter() - t) * 1000
                    c1, s1 = time.process_time(), _cpu_ms(server)
                    if getattr(r, "is_error", None) or getattr(r, "isError", None):
                        raise SystemExit(
                            f"{tool}{a}: {r.content[0].text if r.content else 'error'}"
                        )
                    kind = "cold" if i == 0 else "warm"
                    res.setdefault(step, {}).setdefault(kind, []).append(ms)
                    # where the wall time went: the SDK client (this process does nothing
                    # else meanwhile) and the server (every thread), CPU ms
                    res.setdefault(f"{CPU}client: {step}", {}).setdefault(kind, []).append(
                        round((c1 - c0) * 1000, 2)
                    )
                    if server:
                        res.setdefault(f"{CPU}server: {step}", {}).setdefault(kind, []).append(
                            round(s1 - s0, 2)
                        )
    return res


def mcp_cpu_table(figures: dict, table: Callable[..., list[str]]) -> list[str]:
    """The MCP steps' CPU figures as rows of ``table`` (``interactive.table``)."""
    cpu = {k[len(CPU) :]: v for k, v in figures.items() if k.startswith(CPU)}
    return table(
        "MCP CPU ms per call (client: the SDK's stdio client, this process, which does"
        " nothing else meanwhile; server: kbtool mcp's live threads)",
        cpu,
    )


def _server_pid() -> int | None:
    """The ``kbtool mcp`` process the SDK's client started (a child of this process)."""
    me = str(os.getpid())
    for pid in os.listdir("/proc") if os.path.isdir("/proc") else []:
        try:
            with open(f"/proc/{pid}/stat") as f:
                ppid = f.read().rsplit(")", 1)[1].split()[1]
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read()
        except (OSError, IndexError):
            continue
        if ppid == me and b"kbtool.cli" in cmd and b"mcp" in cmd:
            return int(pid)
    return None


def _cpu_ms(pid: int | None) -> float:
    """CPU ms of ``pid``'s live threads (``schedstat``: ns, not the 10 ms ticks of ``stat``)."""
    if pid is None:
        return 0.0
    total = 0
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0.0
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            continue
    return total / 1e6


#: the MCP harness's warm-up call (its CPU rows only: not a step)
WARM_UP = "harness warm-up (first whole get_diff of this client process; not a step)"


def mcp_runs(kb: Path, p: dict, runs: int, root: Path) -> dict | None:
    try:
        import mcp  # noqa: F401
    except ImportError:
        print("  (the MCP SDK is not installed: no MCP figures)", file=sys.stderr)
        return None
    out = []
    if "pair_stored" in p:
        # this process's first 6 MB answer line: its heap grows (~87,000 page faults, 150-250
        # ms of the SDK client's CPU at load 5-8, nothing of the server's), so only the first
        # run's "cold" whole get_diff counted it; every measured run now meets a client that
        # has read one (shown in the CPU table, never a step)
        warm = asyncio.run(_mcp(kb, p, root, warm_up=True))
        wall = warm.pop(WARM_UP, {}).get("cold", [])
        print(f"  MCP harness warm-up (a whole get_diff, not a step): {wall} ms", file=sys.stderr)
        out.append(warm)
    for _ in range(runs):
        trace = gc_trace_start()  # KBTOOL_* is passed to the server
        res = asyncio.run(_mcp(kb, p, root))
        gc_trace_read(trace, res)
        out.append(res)
    return merge(out)
