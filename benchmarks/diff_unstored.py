"""The diff of a pair nobody stored (issue 30, point 3): what its first computation costs, step
by step, and what the next process pays once the answer is kept.

    python benchmarks/diff_unstored.py [--db KB] [--pair A B] [--smoke]

The KB (default: the interactive benchmark's ffmpeg KB, two ffmpeg-core releases, 22.5k
functions) is copied to a temporary directory first (never written). The pair defaults to
the reverse of the KB's first stored pair (ingest stores (parent, new); the other direction
is computed). Figures, CPU s (this process) and wall s:

- ``pairing``         identities + the matcher + the review checks (``pair_versions``);
- ``classification``  unchanged / moved / modified, relocation and layout checks;
- ``changelog``       explanations and triage of every modified function;
- ``kept: compute``   a new process, ``DiffCache`` report + changelog (computes, keeps on disk);
- ``kept: read back`` another new process asking the same (read from disk; the goal 250 ms).
- ``prepared: background``  ``python -m kbtool.services.diff.warm --pair A B`` (what
  ``kbtool analyze`` starts, detached and niced, after its writes; nobody waits for it);
- ``prepared: first ask``   then a new process asking that pair for the first time (read from
  disk; the goal 250 ms).
- ``rename: joined in``  a function the changelog does not read is renamed, a new process
  asks (the name is joined into the kept answer; the goal 250 ms);
- ``rename: modified fn``  a modified function is renamed, a new process asks (only the
  changelog entries that read its name are built again: :mod:`kbtool.services.diff.relabel`;
  the goal 250 ms); then ``a callee`` (a function modified ones call), ``most-read fn`` (the
  function the most changelog entries show: a helper every function calls), ``runtime name`` /
  ``runtime gone`` (a runtime-looking name given, then taken away: the function's code
  decides), ``20 in a row`` (20 modified functions renamed, then one request) and
  ``stored pair, renamed`` (the ingest-stored pair's kept changelog after all that).

``--smoke``: the demo KB (two zstd releases), pair 2 -> 1.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from kbtool.kb.db import open_ro  # noqa: E402
from kbtool.services.diff import report as diff_report  # noqa: E402

DEFAULT_KB = Path.home() / ".cache" / "kbtool-interactive" / "ffmpeg.db"
GOAL_MS = 250.0

_CHILD = """
import json, sys, time
c0, w0 = time.process_time(), time.perf_counter()
from kbtool.kb.db import open_ro
from kbtool.services.diff.cache import DiffCache
conn = open_ro(sys.argv[1])
cache = DiffCache()
cache.report(conn, int(sys.argv[2]), int(sys.argv[3]))
cache.changelog(conn, int(sys.argv[2]), int(sys.argv[3]))
print(json.dumps([time.process_time() - c0, time.perf_counter() - w0,
                  cache.computed, cache.disk_hits, cache.relabelled, cache.partial]))
"""


def _now() -> tuple[float, float]:
    return time.process_time(), time.perf_counter()


def steps(db: Path, a: int, b: int) -> dict[str, tuple[float, float]]:
    """CPU and wall seconds of each step of one fresh computation, in this process."""
    conn = open_ro(db)
    out: dict[str, tuple[float, float]] = {}
    c0, w0 = _now()
    va, vb = diff_report._label(conn, a), diff_report._label(conn, b)
    pg = diff_report.pair_versions(conn, a, b)
    c1, w1 = _now()
    out["pairing"] = (c1 - c0, w1 - w0)
    real = diff_report.changelog
    began: list[tuple[float, float]] = []

    def timed(*args, **kw):
        began.append(_now())
        return real(*args, **kw)

    diff_report.changelog = timed  # the changelog is the last step of build_report
    try:
        diff_report.build_report(conn, pg, va, vb)
    finally:
        diff_report.changelog = real
    c2, w2 = _now()
    out["classification"] = (began[0][0] - c1, began[0][1] - w1)
    out["changelog"] = (c2 - began[0][0], w2 - began[0][1])
    conn.close()
    return out


def kept(db: Path, a: int, b: int, disk: Path) -> dict[str, tuple[float, float]]:
    """A new process computes and keeps the answer; another reads it back."""
    env = dict(os.environ, KBTOOL_DIFF_CACHE_DIR=str(disk))
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    out: dict[str, tuple[float, float]] = {}
    for step, expect in (("kept: compute", (1, 0)), ("kept: read back", (0, 1))):
        out[step] = _ask(env, db, a, b, step, expect)
    return out


def _ask(
    env: dict, db: Path, a: int, b: int, step: str, expect: tuple[int, int]
) -> tuple[float, float]:
    """A new process asks for the pair: its (CPU s, wall s); ``expect`` is (computed, disk
    hits[, changelogs rebuilt, of which in part])."""
    run = subprocess.run(
        [sys.executable, "-P", "-c", _CHILD, str(db), str(a), str(b)],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    cpu, wall, computed, hits, relabelled, partial = json.loads(run.stdout)
    got = (computed, hits, relabelled, partial)[: len(expect)]
    if got != expect:
        raise SystemExit(
            f"{step}: (computed, disk hits, relabelled, partial) {got}, expected {expect}"
        )
    return cpu, wall


def renamed(db: Path, a: int, b: int, disk: Path) -> dict[str, tuple[float, float]]:
    """After the pair was prepared, annotation writes as a person or an agent makes them,
    each followed by a new process asking (every answer is checked against a fresh
    computation by tests/unit/services/test_diff_relabel.py): a function the changelog does
    not read (joined in), a modified function (its entry and those naming it rebuilt), a
    callee of modified functions, a runtime-looking name given then taken away (the code
    decides: one function's facts), 20 modified functions renamed in a row, and the stored
    pair (b -> a) asked after them."""
    from kbtool.kb.db import open_rw
    from kbtool.kb.gate import upsert_symbol
    from kbtool.services.diff.cache import DiffCache, DiskAnswers

    env = dict(os.environ, KBTOOL_DIFF_CACHE_DIR=str(disk))
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    conn = open_rw(db)
    try:
        cache = DiffCache(disk=DiskAnswers(disk))
        meta = cache.kept_meta(conn, a, b)
        report = cache.report(conn, a, b)
        if meta is None:
            raise SystemExit("the prepared pair has no kept annotations")
        read = set(meta["touched"]["new"])
        quiet = [c for c in report["changes"] if c["to_index"] is not None]
        quiet = [c for c in quiet if c["to_index"] not in read and c["to_stable_id"]]
        loud = [c for c in report["changes"] if c["classification"] == "modified"]
        loud_idx = {c["to_index"] for c in loud}
        callees = [
            c
            for c in report["changes"]
            if c["to_index"] in read and c["to_index"] not in loud_idx and c["to_stable_id"]
        ]
        out: dict[str, tuple[float, float]] = {}

        def name(c: dict, new_name: str) -> None:
            upsert_symbol(
                conn, c["to_stable_id"], new_name, provenance="human", confidence=1.0, actor="b"
            )

        mid = loud[len(loud) // 2] if loud else None
        readers: dict[int, int] = {}  # how many changelog entries show a function's name
        for entry in (cache.kept_state(conn, a, b) or {}).get("modified", {}).values():
            for i in set(entry["new"]) | set(entry["hint"]):
                readers[i] = readers.get(i, 0) + 1
        by_to = {c["to_index"]: c for c in report["changes"] if c["to_stable_id"]}
        most = max((i for i in readers if i in by_to), key=readers.__getitem__, default=None)
        steps_ = (
            ("rename: joined in", quiet[len(quiet) // 2] if quiet else None, "bench_q", (0, 1, 0)),
            ("rename: modified fn", mid, "bench_m", (0, 0, 1, 1)),
            (
                "rename: a callee",
                callees[len(callees) // 2] if callees else None,
                "bench_c",
                (0, 0, 1, 1),
            ),
            ("rename: most-read fn", by_to.get(most), "bench_most", (0, 0, 1, 1)),
            ("rename: runtime name", mid, "memmove", (0, 0, 1, 1)),
            ("rename: runtime gone", mid, "bench_rt", (0, 0, 1, 1)),
        )
        for step, c, new_name, expect in steps_:
            if c is None:
                continue
            name(c, new_name)
            out[step] = _ask(env, db, a, b, step, expect)
        if loud:
            for k in range(20):
                name(loud[(len(loud) * k) // 20], f"bench_row_{k}")
            out["rename: 20 in a row"] = _ask(env, db, a, b, "20", (0, 0, 1, 1))
            out["stored pair, renamed"] = _ask(env, db, b, a, "stored", (0, 0, 0, 1))
        print(
            f"  changelog reads {len(read)} of {len(report['changes'])} new-side functions;"
            f" {len(loud)} modified; the most-read one is shown by {readers.get(most, 0)} entries"
        )
    finally:
        conn.close()
    return out


def prepared(db: Path, a: int, b: int, disk: Path) -> dict[str, tuple[float, float]]:
    """The background preparation of the pair, then a new process's first request."""
    env = dict(os.environ, KBTOOL_DIFF_CACHE_DIR=str(disk))
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    w0 = time.perf_counter()
    warm = [sys.executable, "-P", "-m", "kbtool.services.diff.warm", "--db", str(db)]
    subprocess.run([*warm, "--pair", str(a), str(b)], env=env, check=True, capture_output=True)
    wall = time.perf_counter() - w0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    out = {"prepared: background": (cpu, wall)}
    out["prepared: first ask"] = _ask(env, db, a, b, "prepared", (0, 1))
    # the stored pair's changelog (what renames rebuild in part below)
    subprocess.run([*warm, "--pair", str(b), str(a)], env=env, check=True, capture_output=True)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", type=Path, default=DEFAULT_KB)
    ap.add_argument("--pair", type=int, nargs=2, metavar=("A", "B"))
    ap.add_argument("--smoke", action="store_true")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="kbtool-diff-unstored-") as tmp:
        db = Path(tmp) / "kb.db"
        if args.smoke:
            from testkit.kb import build_demo_kb

            build_demo_kb(db)
        else:
            if not args.db.exists():
                raise SystemExit(f"no KB at {args.db} (benchmarks/interactive.py builds it)")
            shutil.copyfile(args.db, db)
        conn = open_ro(db)
        stored = conn.execute(
            "SELECT from_version_id, to_version_id FROM diffs ORDER BY 1, 2"
        ).fetchall()
        conn.close()
        if args.pair:
            a, b = args.pair
        elif stored:
            b, a = stored[0]
        else:
            raise SystemExit("the KB stores no pair: give --pair A B")
        figures = {**steps(db, a, b), **kept(db, a, b, Path(tmp) / "diffs")}
        figures.update(prepared(db, a, b, Path(tmp) / "prepared"))
        figures.update(renamed(db, a, b, Path(tmp) / "prepared"))
    print(f"diff {a} -> {b} (not stored), {args.db if not args.smoke else 'demo KB'}")
    print(f"  {'step':<22} {'cpu s':>8} {'wall s':>8}")
    for step, (cpu, wall) in figures.items():
        print(f"  {step:<22} {cpu:>8.3f} {wall:>8.3f}")
    fresh = sum(figures[s][0] for s in ("pairing", "classification", "changelog"))
    back = figures["kept: read back"][1] * 1000
    first = figures["prepared: first ask"][1] * 1000
    joined = figures.get("rename: joined in", (0.0, float("nan")))[1] * 1000
    loud = figures.get("rename: modified fn", (0.0, float("nan")))[1] * 1000
    print(
        f"  fresh computation {fresh:.2f} CPU s; read back {back:.0f} ms; first ask of a"
        f" prepared pair {first:.0f} ms; after a rename {joined:.0f} ms, of a modified"
        f" function {loud:.0f} ms (goal < {GOAL_MS:.0f} ms)"
    )
    a1, a5, a15 = os.getloadavg()
    print(f"  machine: load average {a1:.2f} {a5:.2f} {a15:.2f} on {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
