"""``kbtool analyze`` (kbtool.services.analyze.analyze_version) end to end, on a KB.

    python -m benchmarks.analyze_service [--smoke] [--corpus DIR] [--top N]

1. Time: for the largest corpus modules, ``ingest_file`` and then ``analyze_version`` of the
   same module in the same process and KB, plus the re-run (idempotent: no new events).
2. Names written through the gate on the corpus ground truth: every gt/<pair>.stripped.wasm
   is ingested into a fresh KB and analysed; the recognizers' names (outcome ``written``, or
   ``unchanged`` when the KB already held that name, e.g. ``_start`` from its export) are
   compared with gt/<pair>.named.wasm's name section (same indices; canonical spelling, so
   Zig's ``c.string.strlen`` is ``strlen``), per family, with benchmarks.analysis's table.

``--smoke``: the bundled demo module for 1 and one gt pair for 2 (run by the tests).
Nothing here is tuned on the corpus; it is only measured.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from benchmarks.analysis import print_table, score
from kbtool.kb.db import open_rw
from kbtool.services.analyze import analyze_version
from kbtool.services.ingest import ingest_file
from kbtool.wasm import analyze_module

CORPUS = Path(os.environ.get("KBTOOL_CORPUS", "/work/shared/corpus"))
DEMO = Path(__file__).resolve().parents[1] / "kbtool" / "demo" / "zstd-1.5.5.wasm"


def _events(conn) -> int:
    return conn.execute("SELECT COUNT(*) FROM annotation_events").fetchone()[0]


def bench_time(files: list[Path]) -> None:
    print("1. time, same process and KB: ingest_file vs analyze_version (then the re-run)")
    print(
        f"  {'module':<52} {'MB':>5} {'ingest':>8} {'analyze':>8} {'re-run':>8} "
        f"{'ratio':>6}  written/refused/unchanged/skipped  facts  structs  new events"
    )
    for path in files:
        with tempfile.TemporaryDirectory() as tmp:
            conn = open_rw(Path(tmp) / "kb.db")
            t0 = time.perf_counter()
            vid = ingest_file(conn, path).version_id
            t1 = time.perf_counter()
            res = analyze_version(conn, vid)
            t2 = time.perf_counter()
            ev = _events(conn)
            again = analyze_version(conn, vid)
            t3 = time.perf_counter()
            new_events = _events(conn) - ev
            conn.close()
        n = res["summary"]["names"]
        assert again["summary"]["names"]["written"] == 0
        print(
            f"  {path.name[:52]:<52} {path.stat().st_size / 1e6:5.1f} {t1 - t0:7.2f}s "
            f"{t2 - t1:7.2f}s {t3 - t2:7.2f}s {(t2 - t1) / (t1 - t0):6.2f}  "
            f"{n['written']:>4}/{n['refused']}/{n['unchanged']}/{n['skipped']:<18} "
            f"{len(res['thread_facts']):>6} {len(res['structs']):>8} {new_events:>6}"
        )


def bench_gt(pairs: list[str]) -> None:
    table: dict[str, list[int]] = defaultdict(lambda: [0] * 5)
    wrong: list[str] = []
    outcomes: dict[str, int] = defaultdict(int)
    for pair in pairs:
        truth = analyze_module(
            (CORPUS / "gt" / f"{pair}.named.wasm").read_bytes()
        ).module.func_names
        with tempfile.TemporaryDirectory() as tmp:
            conn = open_rw(Path(tmp) / "kb.db")
            vid = ingest_file(conn, CORPUS / "gt" / f"{pair}.stripped.wasm").version_id
            res = analyze_version(conn, vid)
            conn.close()
        for n in res["names"]:
            outcomes[n["outcome"]] += 1
        # a Zig path the KB spells with "::" (the gate's identifiers) is compared as dotted
        written = [
            {
                "func_index": n["func_index"],
                "name": n["name"].replace("::", "."),
                "evidence": {"recognizer": n["recognizer"]},
            }
            for n in res["names"]
            # "unchanged": the KB already had this very name (``_start`` from its export);
            # the recognizer agreed, nothing was written, it is scored like a written name
            if n["outcome"] in ("written", "unchanged")
        ]
        wrong += score(written, res["review"], truth, table)
    print_table(
        f"2. recognizer names through the gate (written or already there) on {len(pairs)} "
        "corpus gt stripped builds "
        f"(outcomes over all: {dict(sorted(outcomes.items()))})",
        table,
    )
    for line in wrong[:20]:
        print(line)


def main(argv: list[str] | None = None) -> int:
    global CORPUS
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--corpus", type=Path, default=CORPUS)
    ap.add_argument("--top", type=int, default=2, help="largest release modules to time")
    args = ap.parse_args(argv)
    CORPUS = args.corpus
    if args.smoke:
        files = [DEMO]
    else:
        files = sorted((CORPUS / "release").glob("*.wasm"), key=lambda p: -p.stat().st_size)
        files = files[: args.top]
    bench_time(files)
    pairs = sorted(
        {p.name.removesuffix(".stripped.wasm") for p in (CORPUS / "gt").glob("*.stripped.wasm")}
    )
    if pairs:
        bench_gt(pairs[:1] if args.smoke else pairs)
    else:
        print("2. skipped: no corpus gt/ directory")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
