"""Lines printed by `kbtool ui diff` on every corpus pair, everything (`--all`) vs the default
(what changed: modified + new + deleted), and how many modified functions are explained.

    python benchmarks/ui_diff_lines.py [--corpus DIR] [--width 100] [--smoke]

Pairs: the corpus's `nearby`, `hardest` and `opt-level` pairs (benchmarks/corpus_pairs.py;
the old build named, the new one stripped, as a reverse engineer meets a new release), sql.js
1.10.3 -> 1.12.0 (two real Emscripten releases) and the demo KB (`kbtool demo`). Each pair is
ingested into a fresh temporary KB (ingest stores the pair's report), then the real command
runs in a subprocess at a fixed terminal width (`COLUMNS`), once with `--all` and once without.

`explained` = modified functions whose report entry carries a non-empty explanation
(`explain`; goal 100 %); `specific` = those whose explanation names something (a call, a
string, a constant, an offset, the signature, loops, callers, size or opcodes) rather than
only "same instructions; ... differ" (address constants relocated, call targets moved).
`--smoke` runs the tiny generated corpus only.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.corpus_pairs import DEFAULT_CORPUS, corpus_pairs  # noqa: E402
from benchmarks.smoke_corpus import temporary_corpus  # noqa: E402
from kbtool.kb.db import open_rw  # noqa: E402
from kbtool.services.diff.report import get_diff  # noqa: E402
from kbtool.services.ingest import ingest_file  # noqa: E402

KINDS = ("nearby", "hardest", "opt-level")


def _ui_diff_lines(db: Path, a: int, b: int, width: int, *extra: str) -> tuple[int, float]:
    env = dict(os.environ, COLUMNS=str(width), PYTHONPATH=str(ROOT))
    t0 = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-m", "kbtool.cli", "ui", "diff", str(a), str(b), *extra, "--db", str(db)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return len(out.stdout.splitlines()), time.perf_counter() - t0


def measure(label: str, db: Path, a: int, b: int, width: int) -> dict:
    conn = open_rw(db)
    report = get_diff(conn, a, b)
    conn.close()
    mods = [c for c in report["changes"] if c["classification"] == "modified"]
    explained = [c for c in mods if c.get("explain")]
    specific = [
        c for c in explained if not all(x.startswith("same instructions;") for x in c["explain"])
    ]
    every, t_all = _ui_diff_lines(db, a, b, width, "--all")
    default, t_default = _ui_diff_lines(db, a, b, width)
    return {
        "pair": label,
        "rows": len(report["changes"]),
        "modified": len(mods),
        "unnamed": sum(1 for c in mods if not c["name"]),
        "lines_all": every,
        "lines_default": default,
        "explained": len(explained),
        "specific": len(specific),
        "secs_all": t_all,
        "secs_default": t_default,
    }


def _ingest_pair(tmp: Path, old: Path, new: Path) -> tuple[Path, int, int]:
    db = tmp / f"kb-{time.monotonic_ns()}.db"
    conn = open_rw(db)
    # one program by decision (a pair is two builds of one program, whatever the overlap says)
    a = ingest_file(conn, old, label=old.stem.replace(".named", ""), program="bench").version_id
    b = ingest_file(conn, new, label=new.stem.replace(".stripped", ""), program="bench").version_id
    conn.close()
    return db, a, b


def cases(corpus: Path, tmp: Path, *, extras: bool):
    gt = corpus / "gt"
    for kind, old, new in corpus_pairs(corpus):
        if kind in KINDS:
            db, a, b = _ingest_pair(tmp, gt / f"{old}.named.wasm", gt / f"{new}.stripped.wasm")
            yield f"{kind:9} {old} -> {new}", db, a, b
    if not extras:
        return
    rel = corpus / "release"
    fa, fb = rel / "sql.js-1.10.3.sql-wasm.wasm", rel / "sql.js-1.12.0.sql-wasm.wasm"
    if fa.exists() and fb.exists():
        db, a, b = _ingest_pair(tmp, fa, fb)
        yield "release   sql.js 1.10.3 -> 1.12.0", db, a, b
    from kbtool.services.demo import build_demo

    db = tmp / "demo.db"
    build_demo(db, echo=lambda _m: None)
    yield "demo      zstd 1.5.5 -> 1.5.6 (kbtool demo)", db, 1, 2


def _pct(n: int, d: int) -> str:
    return f"{100.0 * n / d:.1f}%" if d else "-"


def run(corpus: Path, width: int, *, extras: bool) -> int:
    head = (
        f"{'pair':60} {'rows':>6} {'modified':>8} {'unnamed':>7} {'--all':>7} "
        f"{'default':>7} {'saved':>6} {'explained':>9} {'specific':>8}"
    )
    print(f"`kbtool ui diff A B` at {width} columns: lines with --all vs the default")
    print(head)
    print("-" * len(head))
    tot = {"lines_all": 0, "lines_default": 0, "modified": 0, "explained": 0, "specific": 0}
    with tempfile.TemporaryDirectory() as tmp:
        for label, db, a, b in cases(corpus, Path(tmp), extras=extras):
            r = measure(label, db, a, b, width)
            for k in tot:
                tot[k] += r[k]
            saved = 1 - r["lines_default"] / r["lines_all"] if r["lines_all"] else 0.0
            print(
                f"{r['pair']:60} {r['rows']:>6,} {r['modified']:>8,} {r['unnamed']:>7,} "
                f"{r['lines_all']:>7,} {r['lines_default']:>7,} {saved:>6.0%} "
                f"{_pct(r['explained'], r['modified']):>9} {_pct(r['specific'], r['modified']):>8}",
                flush=True,
            )
    print(
        f"\nall pairs: {tot['lines_all']:,} lines with --all, {tot['lines_default']:,} by default;"
        f" modified functions explained {tot['explained']:,}/{tot['modified']:,}"
        f" ({_pct(tot['explained'], tot['modified'])}), specific {tot['specific']:,}"
        f" ({_pct(tot['specific'], tot['modified'])})"
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--width", type=int, default=100, help="terminal width (COLUMNS)")
    ap.add_argument("--smoke", action="store_true", help="the tiny generated corpus only")
    args = ap.parse_args(argv)
    if args.smoke:
        with temporary_corpus() as tmp:
            return run(Path(tmp), args.width, extras=False)
    if not (args.corpus / "gt").is_dir():
        print(f"corpus not found: {args.corpus}", file=sys.stderr)
        return 2
    return run(args.corpus, args.width, extras=True)


if __name__ == "__main__":
    sys.exit(main())
