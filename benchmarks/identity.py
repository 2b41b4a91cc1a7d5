"""Identity carry-over accuracy on the corpus's named/stripped pairs.

For each pair of releases: ingest OLD (named build) into a fresh KB, then NEW (stripped build),
and check every new-version function that kept an old stable_id: does the old function's
true name equal the new function's true name (read from NEW's named twin, same indices)?

    python benchmarks/identity.py [--corpus ../shared/corpus] [--json] [--smoke]

``--smoke`` runs on a tiny generated corpus (benchmarks/smoke_corpus.py; the test suite runs it).
"""

from __future__ import annotations

import argparse
import json
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
from kbtool.services.ingest import ingest_file  # noqa: E402
from kbtool.wasm import parse_module  # noqa: E402


def true_names(path: Path) -> dict[int, str]:
    return parse_module(path.read_bytes()).func_names


def run(corpus: Path) -> list[dict]:
    gt = corpus / "gt"
    rows = []
    for _kind, old, new in corpus_pairs(corpus):
        old_named, new_stripped = gt / f"{old}.named.wasm", gt / f"{new}.stripped.wasm"
        if not old_named.exists() or not new_stripped.exists():
            continue
        old_names, new_names = true_names(old_named), true_names(gt / f"{new}.named.wasm")
        with tempfile.TemporaryDirectory() as tmp:
            conn = open_rw(Path(tmp) / "kb.db")
            ingest_file(conn, old_named, label=old, carry=False)
            t0 = time.perf_counter()
            ingest_file(conn, new_stripped, label=new, carry=False)
            secs = time.perf_counter() - t0
            ids_old = dict(conn.execute("SELECT stable_id, idx FROM functions WHERE version_id=1"))
            kept = conn.execute(
                "SELECT idx, stable_id, match_method FROM functions WHERE version_id=2 AND match_method != 'new'"
            ).fetchall()
            total_new = conn.execute(
                "SELECT COUNT(*) FROM functions WHERE version_id=2"
            ).fetchone()[0]
            conn.close()
        right = wrong = renamed = 0
        wrong_by_method: dict[str, int] = {}
        old_set, new_set = set(old_names.values()), set(new_names.values())
        for idx, sid, method in kept:
            was, now_ = old_names.get(ids_old[sid]), new_names.get(idx)
            if was == now_:
                right += 1
            else:
                wrong += 1
                wrong_by_method[method] = wrong_by_method.get(method, 0) + 1
                # a function renamed between releases: the old name is gone, the new one is new
                if was not in new_set and now_ not in old_set:
                    renamed += 1
        reachable = sum(1 for i, n in new_names.items() if n in set(old_names.values()))
        rows.append(
            {
                "pair": f"{old} -> {new}",
                "new_functions": total_new,
                "kept_identity": len(kept),
                "precision": right / len(kept) if kept else 0.0,
                "precision_without_renames": right / (len(kept) - renamed)
                if len(kept) > renamed
                else 0.0,
                "recall": right / reachable if reachable else 0.0,
                "wrong": wrong,
                "wrong_by_method": wrong_by_method,
                "ingest_seconds": round(secs, 2),
            }
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--smoke", action="store_true", help="tiny generated corpus, a few seconds")
    args = ap.parse_args(argv)
    if args.smoke:
        with temporary_corpus() as tmp:
            rows = run(Path(tmp))
    elif not (args.corpus / "MANIFEST.json").is_file():
        print(f"corpus not found: {args.corpus}", file=sys.stderr)
        return 2
    else:
        rows = run(args.corpus)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(
        f"{'pair':48} {'new':>5} {'kept':>5} {'precision':>9} {'w/o renames':>11} {'recall':>7}"
        f" {'wrong':>5}  secs"
    )
    for r in rows:
        print(
            f"{r['pair']:48} {r['new_functions']:5} {r['kept_identity']:5} {r['precision']:9.2%}"
            f" {r['precision_without_renames']:11.2%}"
            f" {r['recall']:7.2%} {r['wrong']:5}  {r['ingest_seconds']}  {r['wrong_by_method'] or ''}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
