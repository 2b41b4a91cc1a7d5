"""`/api/diff` (and `/api/changelog`) stored vs cached vs computed, on a real `kbtool serve`.

    python benchmarks/diff_api.py [--big] [--smoke]

A KB with two releases is built (sql.js 1.10.3 -> 1.12.0 from the corpus; `--big` adds
onnxruntime-web 1.20.1 ingested twice, 13,645 defined functions; `--smoke`: the demo's two
zstd releases). Ingest stores the report of the (old, new) pair; the reversed pair is not
stored, so it is computed. Each figure is one full HTTP round trip to the last byte:

- `stored`   first request of the ingest pair (the saved report read and names refreshed);
- `computed` first request of the reversed pair (the matcher runs) -- what every request of a
  pair that is not stored cost before the in-process cache (the peer in the same run);
- `cached`   the same request again (kbtool.services.diff.cache), median of 5;
- `after write` the request after an annotation write (the cache is invalidated: computed again).

For `/api/changelog` the first request of the stored pair builds the changelog from the facts
(`from facts`); the computed pair's changelog was built with its report (`with report`).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.corpus_pairs import DEFAULT_CORPUS  # noqa: E402
from benchmarks.web_api import get, start_kbtool, stop  # noqa: E402
from kbtool.kb import queries  # noqa: E402
from kbtool.kb.db import open_rw  # noqa: E402
from kbtool.kb.gate import upsert_symbol  # noqa: E402
from kbtool.services.ingest import ingest_file  # noqa: E402

DEMO = ROOT / "kbtool" / "demo"


def _timed(port: int, path: str) -> tuple[float, int]:
    t0 = time.perf_counter()
    status, body = get(port, path)
    ms = (time.perf_counter() - t0) * 1000
    if status != 200:
        raise RuntimeError(f"{path}: HTTP {status} {body[:200]!r}")
    return ms, len(body)


def _rename_one(db: Path, version_id: int) -> None:
    conn = open_rw(db)
    try:
        sid = queries.list_functions(conn, version_id)[0]["stable_id"]
        upsert_symbol(
            conn,
            sid,
            f"bench_renamed_{time.monotonic_ns()}",
            provenance="human",
            confidence=1.0,
            actor="bench",
        )
    finally:
        conn.close()


def measure(label: str, db: Path, a: int, b: int) -> list[dict]:
    proc, port = start_kbtool(db)
    rows = []
    try:
        for route in ("/api/diff", "/api/changelog"):
            kinds = (
                ("stored", "computed") if route == "/api/diff" else ("from facts", "with report")
            )
            for kind, (x, y) in zip(kinds, ((a, b), (b, a)), strict=True):
                path = f"{route}?from={x}&to={y}"
                first, size = _timed(port, path)
                cached = statistics.median(_timed(port, path)[0] for _ in range(5))
                rows.append(
                    {
                        "case": label,
                        "route": route,
                        "pair": f"{x}->{y}",
                        "first": kind,
                        "first_ms": first,
                        "cached_ms": cached,
                        "bytes": size,
                    }
                )
        _rename_one(db, b)
        after, size = _timed(port, f"/api/diff?from={b}&to={a}")
        rows.append(
            {
                "case": label,
                "route": "/api/diff",
                "pair": f"{b}->{a}",
                "first": "after write",
                "first_ms": after,
                "cached_ms": None,
                "bytes": size,
            }
        )
    finally:
        stop(proc)
    return rows


def kbs(tmp: Path, args) -> list[tuple[str, Path, int, int]]:
    out = []
    pairs = []
    if args.smoke:
        pairs.append(
            ("zstd 1.5.5 -> 1.5.6 (demo)", DEMO / "zstd-1.5.5.wasm", DEMO / "zstd-1.5.6.wasm")
        )
    else:
        rel = args.corpus / "release"
        pairs.append(
            (
                "sql.js 1.10.3 -> 1.12.0",
                rel / "sql.js-1.10.3.sql-wasm.wasm",
                rel / "sql.js-1.12.0.sql-wasm.wasm",
            )
        )
        if args.big:
            ort = rel / "onnxruntime-web-1.20.1.ort-wasm-simd-threaded.wasm"
            pairs.append(("onnxruntime-web 1.20.1 x2", ort, ort))
    for label, fa, fb in pairs:
        if not (fa.exists() and fb.exists()):
            print(f"skipped {label}: {fa.name} or {fb.name} not found", file=sys.stderr)
            continue
        db = tmp / f"kb{len(out)}.db"
        conn = open_rw(db)
        va = ingest_file(conn, fa, label="old").version_id
        vb = ingest_file(conn, fb, label="new", force=fa == fb).version_id
        conn.close()
        out.append((label, db, va, vb))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--big", action="store_true", help="add onnxruntime-web (13,645 functions) x2")
    ap.add_argument("--smoke", action="store_true", help="the demo's zstd releases only")
    args = ap.parse_args(argv)
    head = (
        f"{'case':28} {'route':15} {'pair':6} {'first request':13} {'first ms':>9} "
        f"{'cached ms':>9} {'speed-up':>8} {'bytes':>10}"
    )
    print(head)
    print("-" * len(head))
    with tempfile.TemporaryDirectory() as tmp:
        for label, db, a, b in kbs(Path(tmp), args):
            for r in measure(label, db, a, b):
                cached = "" if r["cached_ms"] is None else f"{r['cached_ms']:9.1f}"
                ratio = "" if r["cached_ms"] is None else f"{r['first_ms'] / r['cached_ms']:7.0f}x"
                print(
                    f"{r['case']:28} {r['route']:15} {r['pair']:6} {r['first']:13} "
                    f"{r['first_ms']:9.1f} {cached:>9} {ratio:>8} {r['bytes']:>10,}",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
