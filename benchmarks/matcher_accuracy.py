"""Accuracy and speed of kbtool.identity.matcher against ground truth.

For each pair of zstd builds in ../shared/corpus/gt: records from the OLD NAMED module and
the NEW STRIPPED module (names only from exports there), match them, and score every
matched defined new function: correct when the old function's true name equals the new
function's true name (from the new NAMED file, same indices).

    precision = correct / matched            (defined functions)
    recall    = correct / new defined functions whose true name exists on the old side
    renamed   = wrong matches where the old name exists only in the old version and the new
                name only in the new one (a rename: the name metric cannot score it right)
    prec*     = precision not counting those
    review    = matches flagged review (and how many of those are wrong)
    unflag    = wrong matches NOT flagged review
    secs      = CPU seconds of match_functions alone (records built beforehand)

With --perf, also times the matcher on the large release modules (no ground truth there):
each against itself, and sql.js 1.10.3 -> 1.12.0.

Run:  python benchmarks/matcher_accuracy.py [--corpus DIR] [--json] [--errors N] [--perf] [--smoke]

``--smoke``: the tiny generated corpus of benchmarks/smoke_corpus.py (the test suite runs it).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.corpus_pairs import DEFAULT_CORPUS, corpus_pairs  # noqa: E402
from benchmarks.smoke_corpus import temporary_corpus  # noqa: E402
from kbtool.identity.matcher import match_functions  # noqa: E402
from kbtool.identity.records import records_from_analysis  # noqa: E402
from kbtool.wasm import analyze_module  # noqa: E402

_ANALYSES: dict[Path, object] = {}


def analyze(path: Path):
    a = _ANALYSES.get(path)
    if a is None:
        a = analyze_module(path.read_bytes())
        _ANALYSES[path] = a
    return a


def true_names(analysis) -> dict[int, str | None]:
    return {f.index: f.raw_name for f in analysis.functions if not f.imported}


@dataclass
class Score:
    matched: int
    correct: int
    relevant: int
    review: int
    review_wrong: int
    renamed: int
    seconds: float
    errors: list

    @property
    def precision(self) -> float:
        return self.correct / self.matched if self.matched else 1.0

    @property
    def precision_excl_renamed(self) -> float:
        n = self.matched - self.renamed
        return self.correct / n if n else 1.0

    @property
    def recall(self) -> float:
        return self.correct / self.relevant if self.relevant else 1.0

    @property
    def wrong(self) -> int:
        return self.matched - self.correct

    @property
    def unflagged_wrong(self) -> int:
        return self.wrong - self.review_wrong


def evaluate(corpus: Path, old: str, new: str, *, fuzzy: bool = True) -> Score:
    gt = corpus / "gt"
    a_old = analyze(gt / f"{old}.named.wasm")
    a_new = analyze(gt / f"{new}.stripped.wasm")
    a_truth = analyze(gt / f"{new}.named.wasm")
    rec_old = records_from_analysis(a_old)
    rec_new = records_from_analysis(a_new)
    t0 = time.process_time()  # CPU seconds: stable on a busy machine
    matches = match_functions(rec_old, rec_new, fuzzy=fuzzy)
    secs = time.process_time() - t0
    old_names = true_names(a_old)
    new_names = true_names(a_truth)
    old_set = {v for v in old_names.values() if v}
    new_set = {v for v in new_names.values() if v}
    relevant = sum(1 for v in new_names.values() if v and v in old_set)
    matched = correct = review = review_wrong = renamed = 0
    errors = []
    for m in matches:
        if m.new_index not in new_names:
            continue  # imports
        matched += 1
        ok = old_names.get(m.old_index) == new_names[m.new_index] and new_names[m.new_index]
        correct += bool(ok)
        review += m.review
        if not ok:
            review_wrong += m.review
            # both names exist only in their own version: a rename, which the name metric
            # cannot score as right whatever is matched
            renamed += new_names[m.new_index] not in old_set and (
                old_names.get(m.old_index) not in new_set
            )
            errors.append((m, old_names.get(m.old_index), new_names[m.new_index]))
    return Score(matched, correct, relevant, review, review_wrong, renamed, secs, errors)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--json", action="store_true", help="print JSON rows instead of a table")
    ap.add_argument("--errors", type=int, default=0, help="list up to N wrong matches per row")
    ap.add_argument("--perf", action="store_true", help="also time the large release modules")
    ap.add_argument("--smoke", action="store_true", help="tiny generated corpus, a few seconds")
    args = ap.parse_args(argv)
    if args.smoke:
        with temporary_corpus() as tmp:
            return report(args, Path(tmp), perf_cases=False)
    if not (args.corpus / "gt").is_dir():
        print(f"corpus not found: {args.corpus}", file=sys.stderr)
        return 2
    return report(args, args.corpus, perf_cases=args.perf)


def report(args: argparse.Namespace, corpus: Path, *, perf_cases: bool) -> int:
    """Score every pair of ``corpus`` (and time the large modules); print a table or JSON."""
    rows = []
    hdr = (
        f"{'kind':9} {'old -> new':38} {'mode':5} {'prec':>7} {'prec*':>7} {'recall':>7} "
        f"{'match':>5} {'wrong':>5} {'renam':>5} {'review':>6} {'rev.wr':>6} {'unflag':>6} "
        f"{'secs':>6}"
    )
    if not args.json:
        print(hdr)
        print("-" * len(hdr))
    for kind, old, new in corpus_pairs(corpus):
        for fuzzy in (True, False):
            s = evaluate(corpus, old, new, fuzzy=fuzzy)
            row = {
                "kind": kind,
                "old": old,
                "new": new,
                "fuzzy": fuzzy,
                "precision": round(s.precision, 4),
                "precision_excl_renamed": round(s.precision_excl_renamed, 4),
                "recall": round(s.recall, 4),
                "matched": s.matched,
                "wrong": s.wrong,
                "renamed": s.renamed,
                "relevant": s.relevant,
                "review": s.review,
                "review_wrong": s.review_wrong,
                "unflagged_wrong": s.unflagged_wrong,
                "seconds": round(s.seconds, 3),
            }
            rows.append(row)
            if args.json:
                continue
            print(
                f"{kind:9} {old[5:] + ' -> ' + new[5:]:38} {'fuzzy' if fuzzy else 'exact':5} "
                f"{100 * s.precision:6.2f}% {100 * s.precision_excl_renamed:6.2f}% "
                f"{100 * s.recall:6.2f}% {s.matched:5d} {s.wrong:5d} {s.renamed:5d} "
                f"{s.review:6d} {s.review_wrong:6d} {s.unflagged_wrong:6d} {s.seconds:6.3f}"
            )
            for m, on, nn in s.errors[: args.errors]:
                print(
                    f"      old {m.old_index:4d} {on!s:34} new {m.new_index:4d} {nn!s:34} "
                    f"{m.method:10} {m.score:.3f}{' review' if m.review else ''}"
                )
    if perf_cases:
        perf_rows = perf(corpus)
        if not args.json:
            print()
            print(
                f"{'perf':9} {'old -> new':62} {'funcs':>11} {'mode':5} {'match':>6} "
                f"{'review':>6} {'secs':>6}"
            )
            for r in perf_rows:
                print(
                    f"{'':9} {r['old'] + ' -> ' + r['new']:62} "
                    f"{r['n_old']:5d}x{r['n_new']:<5d} {r['mode']:5} {r['matched']:6d} "
                    f"{r['review']:6d} {r['seconds']:6.3f}"
                )
        rows.extend(perf_rows)
    if args.json:
        print(json.dumps(rows, indent=1))
    return 0


def perf(corpus: Path) -> list[dict]:
    rel = corpus / "release"
    cases = [
        ("sql.js-1.10.3.sql-wasm.wasm", "sql.js-1.12.0.sql-wasm.wasm"),
        ("lightningcss-wasm-1.29.1.wasm", "lightningcss-wasm-1.29.1.wasm"),
        (
            "onnxruntime-web-1.20.1.ort-wasm-simd-threaded.wasm",
            "onnxruntime-web-1.20.1.ort-wasm-simd-threaded.wasm",
        ),
    ]
    out = []
    for a, b in cases:
        if not ((rel / a).is_file() and (rel / b).is_file()):
            continue
        ra = records_from_analysis(analyze(rel / a))
        rb = records_from_analysis(analyze(rel / b))
        for fuzzy in (True, False):
            t0 = time.process_time()
            ms = match_functions(ra, rb, fuzzy=fuzzy)
            secs = time.process_time() - t0
            out.append(
                {
                    "kind": "perf",
                    "old": a,
                    "new": b,
                    "n_old": len(ra),
                    "n_new": len(rb),
                    "mode": "fuzzy" if fuzzy else "exact",
                    "matched": len(ms),
                    "review": sum(m.review for m in ms),
                    "seconds": round(secs, 3),
                }
            )
    return out


if __name__ == "__main__":
    raise SystemExit(main())
