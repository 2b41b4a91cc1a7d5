"""Latency of the MCP server over stdio, measured from the SDK's own client.

Two generated KBs (one version each, 40% of the functions named through the gate):
5,000 functions for the per-call medians of get_symbol, list_functions and
propose_symbol, and 50,000 functions for the target "list_functions returns in under 1 s".
Every call is a full round trip through a real `kbtool mcp --db ...` subprocess: JSON-RPC
over the pipes, a fresh KB connection in the server, the query, and the client's JSON parse.

Also measured, in the same run:

- start-up: spawn to the first ``list_versions`` answer (median of ``--starts`` runs) of
  ``kbtool mcp`` (the MCP SDK's server), with the load average (the machine is shared;
  ``benchmarks/mcp_startup.py`` puts it beside ``python -c "import mcp.server"``);
- concurrency: rounds of 32 parallel calls (``asyncio.gather`` of ``get_function_facts`` and
  paged ``list_functions`` through one client session) with the read connection reused
  (default) and not (``KBTOOL_MCP_REUSE=0``), for both servers: latency p50/p95 and calls/s.

Run:  python benchmarks/mcp.py [--calls N] [--big N] [--starts N] [--rounds N] [--json] [--smoke]
      python benchmarks/mcp.py --sizes KB   (answer sizes, contract calls vs paged, on a KB)

``--smoke``: one KB of 500 functions, 5 calls per tool, one start-up and one round per
configuration, the target not enforced (the test suite runs it).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# this file is named mcp.py: keep its directory off the path so `import mcp` finds the SDK
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from importlib.metadata import version  # noqa: E402

from mcp import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, get_default_environment, stdio_client  # noqa: E402

from kbtool.kb.db import transaction  # noqa: E402
from kbtool.kb.gate import upsert_symbol  # noqa: E402
from testkit.kb import bare_kb  # noqa: E402

TARGET_BIG_LIST_S = 1.0


def build_kb(path: Path, functions: int, named_share: float = 0.4) -> list[str]:
    """A one-version KB of ``functions`` defined functions; names written through the gate."""
    sids = [f"{i:016x}" for i in range(functions)]
    conn = bare_kb(path, sids, label=f"gen-{functions}")
    with transaction(conn):
        for i, sid in enumerate(sids):
            if i % 10 < named_share * 10:
                upsert_symbol(
                    conn,
                    sid,
                    f"func_{i}",
                    provenance="export",
                    confidence=0.9,
                    actor="bench",
                    summary=None,
                )
    conn.close()
    return sids


SIZES: dict[str, int] = {}  # label -> bytes of the last answer


async def _timed(session, tool: str, args: dict, label: str | None = None) -> float:
    t0 = time.perf_counter()
    result = await session.call_tool(tool, args)
    d = result.model_dump(by_alias=True)
    if d.get("isError"):
        raise RuntimeError(f"{tool}: {d['content']}")
    text = d["content"][0]["text"]
    json.loads(text)  # the client's parse is part of the latency
    elapsed = time.perf_counter() - t0
    SIZES[label or tool] = len(text.encode("utf-8"))
    return elapsed


def _server(db: Path, **env: str) -> StdioServerParameters:
    # -P: never import from the working directory (which may be this one, holding mcp.py)
    return StdioServerParameters(
        command=sys.executable,
        args=["-P", "-m", "kbtool.cli", "mcp", "--db", str(db)],
        env={**get_default_environment(), "PYTHONPATH": str(ROOT), **env},
    )


async def _measure(db: Path, plan) -> tuple[float, dict[str, list[float]]]:
    params = _server(db)
    t0 = time.perf_counter()
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            initialized = time.perf_counter() - t0
            await session.call_tool("list_versions", {})
            startup = (initialized, time.perf_counter() - t0)
            out: dict[str, list[float]] = {}
            for label, tool, args_list in plan:
                await _timed(session, tool, args_list[0], label)  # warm-up
                out[label] = [await _timed(session, tool, a, label) for a in args_list]
    return startup, out


async def _sizes(db: Path, version_id: int, func_index: int) -> list[tuple[str, int, float]]:
    """(call, answer bytes, ms) of the big reads, as the contract calls them and paged."""
    plan = [
        ("list_functions", {"version_id": version_id}),
        ("list_functions", {"version_id": version_id, "unnamed_only": True, "limit": 500}),
        ("get_function_facts", {"version_id": version_id, "func_index": func_index}),
        (
            "get_function_facts",
            {
                "version_id": version_id,
                "func_index": func_index,
                "max_items": 200,
                "aggregate_calls": True,
            },
        ),
        ("get_diff", {"from_version_id": version_id, "to_version_id": version_id}),
        (
            "get_diff",
            {
                "from_version_id": version_id,
                "to_version_id": version_id,
                "only": ["changed"],
                "limit": 500,
            },
        ),
        ("get_diff", {"from_version_id": version_id, "to_version_id": version_id, "limit": 500}),
        ("export_kb_text", {"version_id": version_id}),
        ("export_kb_text", {"version_id": version_id, "limit": 500}),
        ("list_strings", {"version_id": version_id}),
        ("list_globals", {"version_id": version_id}),
        ("list_memory_regions", {"version_id": version_id}),
        ("get_callers", {"version_id": version_id, "func_index": func_index}),
    ]
    params = _server(db)
    out = []
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            for tool, args in plan:
                t0 = time.perf_counter()
                d = (await session.call_tool(tool, args)).model_dump(by_alias=True)
                ms = (time.perf_counter() - t0) * 1000
                text = d["content"][0]["text"] if d["content"] else ""
                extra = ", ".join(f"{k}={v}" for k, v in args.items() if "version_id" not in k)
                label = f"{tool}({extra})" + (" ERROR" if d.get("isError") else "")
                out.append((label, len(text.encode("utf-8")), ms))
    return out


def sizes_report(db: Path, vid: int | None = None) -> int:
    """Answer sizes on an existing KB: version ``vid`` (default the largest), its largest
    function."""
    from kbtool.kb.db import open_ro

    conn = open_ro(db)
    if vid is None:
        vid = conn.execute(
            "SELECT version_id FROM functions GROUP BY version_id ORDER BY COUNT(*) DESC LIMIT 1"
        ).fetchone()[0]
    fn = conn.execute(
        "SELECT idx FROM functions WHERE version_id = ? AND imported = 0"
        " ORDER BY instr_count DESC LIMIT 1",
        (vid,),
    ).fetchone()[0]
    n = conn.execute("SELECT COUNT(*) FROM functions WHERE version_id = ?", (vid,)).fetchone()[0]
    conn.close()
    print(f"{db}: version {vid} ({n:,} functions), largest function {fn}")
    print(f"{'call':<70}{'bytes':>12}{'ms':>9}")
    for label, size, ms in asyncio.run(_sizes(db, vid, fn)):
        print(f"{label[:69]:<70}{size:>12,}{ms:>9.0f}")
    return 0


SERVERS = {"kbtool": {}}  # `kbtool mcp`: the SDK's server (start-up beside the SDK's import:
# benchmarks/mcp_startup.py)


async def _first_answer(db: Path, env: dict[str, str]) -> float:
    """Seconds from spawning the server to the first list_versions answer."""
    t0 = time.perf_counter()
    async with stdio_client(_server(db, **env)) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            await session.call_tool("list_versions", {})
            return time.perf_counter() - t0


def startup_figures(db: Path, runs: int) -> dict[str, dict[str, float]]:
    """Median (and min/max) start-up to the first answer, per server, runs interleaved."""
    times: dict[str, list[float]] = {name: [] for name in SERVERS}
    for _ in range(runs):
        for name, env in SERVERS.items():
            times[name].append(asyncio.run(_first_answer(db, env)))
    return {
        name: {
            "runs": len(xs),
            "median_ms": round(statistics.median(xs) * 1000, 1),
            "min_ms": round(min(xs) * 1000, 1),
            "max_ms": round(max(xs) * 1000, 1),
        }
        for name, xs in times.items()
    }


MIXES = {
    # the brief's mix: facts of one function and a 100-row page of the function list
    "facts+pages": lambda i, n: (
        ("get_function_facts", {"version_id": 1, "func_index": (i * 7919) % n})
        if i % 2
        else ("list_functions", {"version_id": 1, "limit": 100, "offset": (i * 100) % n})
    ),
    # cheap reads, where opening a connection is most of a call's work
    "get_symbol": lambda i, n: ("get_symbol", {"stable_id": f"{(i * 7919) % n:016x}"}),
}


async def _parallel(
    db: Path, env: dict[str, str], rounds: int, functions: int, mix: str, width: int = 32
) -> tuple[list[float], float]:
    """``rounds`` rounds of ``width`` parallel calls of ``mix`` through one session:
    (per-call latencies, wall seconds)."""
    async with stdio_client(_server(db, **env)) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()

            async def one(i: int) -> float:
                tool, args = MIXES[mix](i, functions)
                return await _timed(session, tool, args, label=f"parallel {tool}")

            await asyncio.gather(*(one(i) for i in range(width)))  # warm-up
            lat: list[float] = []
            t0 = time.perf_counter()
            for r in range(rounds):
                lat += await asyncio.gather(*(one(r * width + i) for i in range(width)))
            return lat, time.perf_counter() - t0


def concurrency_figures(db: Path, rounds: int, functions: int) -> dict[str, dict[str, float]]:
    """Per mix and server, reuse on and off; the rounds are split into two halves run in
    alternating order (on, off, off, on), so a change of machine load hits both alike."""
    out = {}
    for mix in MIXES:
        for name, env in SERVERS.items():
            runs: dict[str, tuple[list[float], float]] = {"1": ([], 0.0), "0": ([], 0.0)}
            halves = [(rounds + 1) // 2, rounds // 2]
            for order, half in zip((("1", "0"), ("0", "1")), halves, strict=True):
                for reuse in order:
                    if not half:
                        continue
                    lat, wall = asyncio.run(
                        _parallel(db, {**env, "KBTOOL_MCP_REUSE": reuse}, half, functions, mix)
                    )
                    runs[reuse] = (runs[reuse][0] + lat, runs[reuse][1] + wall)
            for reuse, (lat, wall) in runs.items():
                lat.sort()
                out[f"{mix}: {name}, reuse {'on' if reuse == '1' else 'off'}"] = {
                    "calls": len(lat),
                    "p50_ms": round(statistics.median(lat) * 1000, 2),
                    "p95_ms": round(lat[min(len(lat) - 1, int(len(lat) * 0.95))] * 1000, 2),
                    "calls_per_s": round(len(lat) / wall, 1),
                }
    return out


def _stats(xs: list[float]) -> dict[str, float]:
    xs = sorted(xs)
    return {
        "n": len(xs),
        "median_ms": round(statistics.median(xs) * 1000, 2),
        "p95_ms": round(xs[min(len(xs) - 1, int(len(xs) * 0.95))] * 1000, 2),
        "max_ms": round(xs[-1] * 1000, 2),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=200, help="calls per measured tool (default 200)")
    ap.add_argument("--small", type=int, default=5_000, help="functions in the small KB")
    ap.add_argument("--big", type=int, default=50_000, help="functions in the big KB")
    ap.add_argument("--starts", type=int, default=7, help="start-ups per server (default 7)")
    ap.add_argument(
        "--rounds",
        type=int,
        default=20,
        help="rounds of 32 parallel calls per configuration (default 20)",
    )
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    ap.add_argument("--smoke", action="store_true", help="tiny KBs, a few calls, no target")
    ap.add_argument(
        "--sizes",
        type=Path,
        metavar="KB",
        help="only print answer sizes (contract vs paged) on an existing KB",
    )
    ap.add_argument("--version", type=int, help="with --sizes: the version id (default largest)")
    args = ap.parse_args(argv)
    if args.sizes:
        return sizes_report(args.sizes, args.version)
    if args.smoke:
        args.calls, args.small, args.big = 5, 500, 500  # one KB, one server process
        args.starts, args.rounds = 1, 1

    with tempfile.TemporaryDirectory() as tmp:
        small, big = Path(tmp, "small.db"), Path(tmp, "big.db")
        t0 = time.perf_counter()
        sids = build_kb(small, args.small)
        if args.big != args.small:
            build_kb(big, args.big)
        build_s = time.perf_counter() - t0

        n = args.calls
        small_plan = [
            (
                "get_symbol",
                "get_symbol",
                [{"stable_id": sids[(i * 7919) % len(sids)]} for i in range(n)],
            ),
            (
                f"list_functions ({args.small:,})",
                "list_functions",
                [{"version_id": 1}] * max(10, n // 10),
            ),
            (
                "propose_symbol",
                "propose_symbol",
                [
                    {
                        "stable_id": sids[(i * 104729) % len(sids)],
                        "name": f"agent_name_{i}",
                        "confidence": 0.5 + (i % 50) / 100,
                    }
                    for i in range(n)
                ],
            ),
        ]
        big_plan = [
            (f"list_functions ({args.big:,})", "list_functions", [{"version_id": 1}] * 10),
            (
                f"list_functions page ({args.big:,})",
                "list_functions",
                [
                    {"version_id": 1, "unnamed_only": True, "limit": 500, "offset": 500 * i}
                    for i in range(10)
                ],
            ),
        ]
        if args.big == args.small:  # one KB: both plans on it
            startup, small_res = asyncio.run(_measure(small, small_plan + big_plan[1:]))
            big_res = {}
        else:
            startup, small_res = asyncio.run(_measure(small, small_plan))
            _, big_res = asyncio.run(_measure(big, big_plan))
        starts = startup_figures(small, args.starts)
        parallel = concurrency_figures(small, args.rounds, args.small)

    figures = {
        "mcp_sdk": version("mcp"),
        "kb_build_seconds": round(build_s, 2),
        "server_startup_ms": round(startup[0] * 1000, 1),
        "server_startup_to_first_list_versions_ms": round(startup[1] * 1000, 1),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "startup_to_first_answer": starts,
        "parallel_32": parallel,
        "tools": {k: _stats(v) for k, v in {**small_res, **big_res}.items()},
        "answer_bytes": dict(SIZES),
    }
    big_key = f"list_functions ({args.big:,})"
    big_max = figures["tools"][big_key]["max_ms"] / 1000
    figures["target_list_functions_big_under_1s"] = big_max < TARGET_BIG_LIST_S

    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        print(
            f"mcp SDK {figures['mcp_sdk']}; KBs built in {build_s:.1f}s; "
            f"server start to initialized {figures['server_startup_ms']:.0f} ms, "
            "to the first list_versions answer "
            f"{figures['server_startup_to_first_list_versions_ms']:.0f} ms"
        )
        print(f"{'tool':<34}{'n':>5}{'median ms':>12}{'p95 ms':>10}{'max ms':>10}{'bytes':>11}")
        for name, st in figures["tools"].items():
            print(
                f"{name:<34}{st['n']:>5}{st['median_ms']:>12.2f}{st['p95_ms']:>10.2f}"
                f"{st['max_ms']:>10.2f}{SIZES.get(name, 0):>11,}"
            )
        print(
            f"start-up to the first list_versions answer, median of {args.starts} "
            f"(load average {' '.join(f'{x:.2f}' for x in figures['load_average'])}):"
        )
        for _name, st in starts.items():
            what = "kbtool mcp (the SDK's server)"
            print(
                f"  {what:<42}{st['median_ms']:>8.0f} ms  (min {st['min_ms']:.0f},"
                f" max {st['max_ms']:.0f})"
            )
        print(
            f"32 parallel calls x {args.rounds} rounds, one session, {args.small:,} functions"
            " (facts+pages: get_function_facts + 100-row list_functions pages):"
        )
        print(
            f"  {'mix: server, read connection':<40}{'calls':>7}{'p50 ms':>10}{'p95 ms':>10}"
            f"{'calls/s':>10}"
        )
        for label, st in parallel.items():
            print(
                f"  {label:<40}{st['calls']:>7}{st['p50_ms']:>10.2f}{st['p95_ms']:>10.2f}"
                f"{st['calls_per_s']:>10.1f}"
            )
        verdict = "PASS" if figures["target_list_functions_big_under_1s"] else "FAIL"
        print(
            f"target: list_functions on {args.big:,} functions < 1 s (worst of 10): "
            f"{big_max * 1000:.0f} ms  {verdict}"
        )
    return 0 if args.smoke or figures["target_list_functions_big_under_1s"] else 1


if __name__ == "__main__":
    sys.exit(main())
