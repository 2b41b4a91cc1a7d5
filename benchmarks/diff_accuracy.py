"""Accuracy and speed of the diff service end to end: ingest, identities, carry-over, report.

For every named/stripped version pair of ../shared/corpus/gt: a fresh KB, ingest the OLD
NAMED module (its name section gives every function its true name, as ``export``
annotations), then the NEW STRIPPED module (identities carried by ingest's exact matcher),
then carry names over by the fuzzy diff (``carry_names``, timed) and compute the report
(``compute_diff``, timed). Every name that reached a defined function of the new version is
compared with that function's true name (the NEW NAMED module, same indices).

Names reach the new version two ways, scored together and apart:

    identity  the new function kept the old stable_id, so it shares the old annotation
    carry     a ``diff-carry`` annotation written by carry-over (matched, new identity)

Names the stripped binary itself carries (its own exports) did not *reach* it: they are
counted (``own``) but not scored.

    precision = correct / reached
    recall    = correct / new defined functions whose true name exists on the old side
    coverage  = reached / new defined functions
    review    = reached names whose pair is flagged ``review`` in the report (rev.wr: of
                those, wrong); flag% = share of wrong names that are flagged
    renamed   = wrong names where the old name exists only in the old version and the new
                one only in the new (a rename: no name-based metric can score it right);
                prec* = precision without them
    unflag    = wrong names whose pair is NOT flagged review (goal 0)
    conf.wr   = wrong pairs of the report (true old name != true new name) classified
                ``unchanged``/``moved`` with a score at or above the review threshold (goal 0);
                in brackets, how many of those are renames

Also: the same pairs swapped (newer named -> older stripped), O2 vs Os builds of one
release, and the speed of a ~5,000-function diff (lightningcss-wasm ingested twice, and a
real Emscripten release pair sql.js 1.10.3 -> 1.12.0).

Run:  python benchmarks/diff_accuracy.py [--corpus DIR] [--json] [--errors N] [--no-speed] [--smoke]

``--smoke``: the tiny generated corpus of benchmarks/smoke_corpus.py, no large-module timing (the
test suite runs it).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.corpus_pairs import DEFAULT_CORPUS, corpus_pairs  # noqa: E402
from benchmarks.name_scoring import NameRates, true_names  # noqa: E402
from benchmarks.smoke_corpus import temporary_corpus  # noqa: E402
from kbtool.identity.matcher import REVIEW_SCORE  # noqa: E402
from kbtool.kb.db import open_rw  # noqa: E402
from kbtool.services.diff.carry import carry_names  # noqa: E402
from kbtool.services.diff.report import compute_diff  # noqa: E402
from kbtool.services.ingest import ingest_file  # noqa: E402


@dataclass
class Route:
    reached: int = 0
    correct: int = 0

    @property
    def precision(self) -> float:
        return self.correct / self.reached if self.reached else 1.0


@dataclass
class Score(NameRates):
    kind: str
    old: str
    new: str
    defined: int = 0
    relevant: int = 0
    reached: int = 0
    correct: int = 0
    renamed: int = 0
    renamed_review: int = 0
    review: int = 0
    review_wrong: int = 0
    own: int = 0
    confident_wrong: int = 0
    confident_wrong_renamed: int = 0
    identity: Route = field(default_factory=Route)
    carry: Route = field(default_factory=Route)
    carry_counts: dict = field(default_factory=dict)
    carry_seconds: float = 0.0
    diff_seconds: float = 0.0
    errors: list = field(default_factory=list)

    @property
    def wrong(self) -> int:
        return self.reached - self.correct

    @property
    def precision_excl_renamed(self) -> float:
        return self.precision_star

    @property
    def coverage(self) -> float:
        return self.reached / self.defined if self.defined else 0.0

    @property
    def unflagged_wrong(self) -> int:
        return self.wrong - self.review_wrong

    @property
    def flagged_share(self) -> float:
        return self.review_wrong / self.wrong if self.wrong else 1.0


def evaluate(corpus: Path, kind: str, old: str, new: str) -> Score:
    gt = corpus / "gt"
    truth_old = true_names(gt / f"{old}.named.wasm")
    truth_new = true_names(gt / f"{new}.named.wasm")
    old_set = {v for v in truth_old.values() if v}
    new_set = {v for v in truth_new.values() if v}
    s = Score(kind, old, new)
    with tempfile.TemporaryDirectory() as tmp:
        conn = open_rw(Path(tmp) / "kb.db")
        a = ingest_file(conn, gt / f"{old}.named.wasm", label="old", carry=False).version_id
        b = ingest_file(conn, gt / f"{new}.stripped.wasm", label="new", carry=False).version_id
        t0 = time.perf_counter()
        s.carry_counts = carry_names(conn, a, b)
        s.carry_seconds = time.perf_counter() - t0
        t0 = time.perf_counter()
        report = compute_diff(conn, a, b)
        s.diff_seconds = time.perf_counter() - t0
        old_sids = {
            r[0] for r in conn.execute("SELECT stable_id FROM functions WHERE version_id = ?", (a,))
        }
        rows = conn.execute(
            "SELECT f.idx, f.stable_id, s.name, s.provenance FROM functions f"
            " LEFT JOIN symbols s ON s.stable_id = f.stable_id"
            " WHERE f.version_id = ? AND f.imported = 0 ORDER BY f.idx",
            (b,),
        ).fetchall()
        conn.close()
    change = {c["to_index"]: c for c in report["changes"] if c["to_index"] is not None}
    for c in report["changes"]:
        if c["classification"] not in ("unchanged", "moved") or (c["score"] or 0) < REVIEW_SCORE:
            continue
        was, now = truth_old.get(c["from_index"]), truth_new.get(c["to_index"])
        if was != now:
            s.confident_wrong += 1
            s.confident_wrong_renamed += was not in new_set and now not in old_set
            s.errors.append((c["to_index"], was, now, c["classification"], c["score"], c["review"]))
    s.defined = len(rows)
    s.relevant = sum(1 for i, _sid, _n, _p in rows if truth_new.get(i) and truth_new[i] in old_set)
    for idx, sid, name, prov in rows:
        if name is None:
            continue
        if sid in old_sids:
            route = s.identity
        elif prov == "diff-carry":
            route = s.carry
        else:
            s.own += 1
            continue
        truth = truth_new.get(idx)
        ok = bool(truth) and name == truth
        s.reached += 1
        route.reached += 1
        s.correct += ok
        route.correct += ok
        c = change.get(idx)
        flagged = bool(c and c["review"])
        s.review += flagged
        if not ok:
            s.review_wrong += flagged
            renamed = truth not in old_set and name not in new_set
            s.renamed += renamed
            s.renamed_review += renamed and flagged
            s.errors.append(
                (
                    idx,
                    name,
                    truth,
                    "identity" if route is s.identity else "carry",
                    c["score"] if c else None,
                    flagged,
                )
            )
    return s


def speed(corpus: Path) -> list[dict]:
    """Wall time of compute_diff (and carry-over) on large real modules."""
    out = []
    rel = corpus / "release"
    cases = [
        (
            "lightningcss 1.29.1 x2",
            rel / "lightningcss-wasm-1.29.1.wasm",
            rel / "lightningcss-wasm-1.29.1.wasm",
        ),
        (
            "sql.js 1.10.3 -> 1.12.0",
            rel / "sql.js-1.10.3.sql-wasm.wasm",
            rel / "sql.js-1.12.0.sql-wasm.wasm",
        ),
    ]
    for label, fa, fb in cases:
        if not (fa.exists() and fb.exists()):
            continue
        with tempfile.TemporaryDirectory() as tmp:
            conn = open_rw(Path(tmp) / "kb.db")
            a = ingest_file(conn, fa, label="a", carry=False)
            b = ingest_file(conn, fb, label="b", carry=False, force=True)  # x2: same bytes
            t0 = time.perf_counter()
            report = compute_diff(conn, a.version_id, b.version_id)
            diff_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            carried = carry_names(conn, a.version_id, b.version_id)
            carry_s = time.perf_counter() - t0
            conn.close()
        out.append(
            {
                "case": label,
                "functions": [a.imported + a.defined, b.imported + b.defined],
                "diff_seconds": round(diff_s, 3),
                "carry_seconds": round(carry_s, 3),
                "summary": report["summary"],
                "carry": carried,
            }
        )
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--json", action="store_true", help="print JSON instead of tables")
    ap.add_argument("--errors", type=int, default=0, help="list up to N wrong names per pair")
    ap.add_argument("--no-speed", action="store_true", help="skip the large-module timing")
    ap.add_argument("--only", default="", help="only pairs whose kind or names contain this")
    ap.add_argument("--smoke", action="store_true", help="tiny generated corpus, a few seconds")
    args = ap.parse_args(argv)
    if args.smoke:
        with temporary_corpus() as tmp:
            return report(args, Path(tmp), speed_cases=False)
    if not (args.corpus / "gt").is_dir():
        print(f"corpus not found: {args.corpus}", file=sys.stderr)
        return 2
    return report(args, args.corpus, speed_cases=not args.no_speed)


def report(args: argparse.Namespace, corpus: Path, *, speed_cases: bool) -> int:
    """Score every pair of ``corpus`` (and time the large modules); print tables or JSON."""
    rows = []
    hdr = (
        f"{'kind':9} {'old named -> new stripped':30} {'prec':>7} {'prec*':>7} {'recall':>7} "
        f"{'cover':>6} {'reach':>5} {'wrong':>5} {'ren':>3} {'ident':>11} {'carry':>11} "
        f"{'review':>6} {'rev.wr':>6} {'flag%':>6} {'unflag':>6} {'conf.wr':>8} {'secs':>5}"
    )
    if not args.json:
        print(hdr)
        print("-" * len(hdr))
    for kind, old, new in corpus_pairs(corpus):
        if args.only and args.only not in f"{kind} {old} {new}":
            continue
        s = evaluate(corpus, kind, old, new)
        row = {k: v for k, v in asdict(s).items() if k not in ("errors", "identity", "carry")}
        row.update(
            precision=round(s.precision, 4),
            precision_excl_renamed=round(s.precision_excl_renamed, 4),
            recall=round(s.recall, 4),
            coverage=round(s.coverage, 4),
            wrong=s.wrong,
            identity={"reached": s.identity.reached, "correct": s.identity.correct},
            carry={"reached": s.carry.reached, "correct": s.carry.correct},
            flagged_share=round(s.flagged_share, 4),
            unflagged_wrong=s.unflagged_wrong,
            carry_seconds=round(s.carry_seconds, 3),
            diff_seconds=round(s.diff_seconds, 3),
        )
        rows.append(row)
        if args.json:
            continue
        ident = f"{s.identity.correct}/{s.identity.reached}"
        carry = f"{s.carry.correct}/{s.carry.reached}"
        print(
            f"{kind:9} {old[5:] + ' -> ' + new[5:]:30} {100 * s.precision:6.2f}% "
            f"{100 * s.precision_excl_renamed:6.2f}% {100 * s.recall:6.2f}% {100 * s.coverage:5.1f}% "
            f"{s.reached:5d} {s.wrong:5d} {s.renamed:3d} {ident:>11} {carry:>11} {s.review:6d} "
            f"{s.review_wrong:6d} {100 * s.flagged_share:5.1f}% {s.unflagged_wrong:6d} "
            f"{s.confident_wrong:3d} ({s.confident_wrong_renamed:2d}) "
            f"{s.carry_seconds + s.diff_seconds:5.2f}"
        )
        for idx, name, truth, route, score, flagged in s.errors[: args.errors]:
            print(
                f"      new {idx:4d} got {name!s:36} true {truth!s:36} {route:8} "
                f"{'' if score is None else f'{score:.3f}'}{' review' if flagged else ''}"
            )
    if not args.json and rows:
        tot = {
            k: sum(r[k] for r in rows)
            for k in (
                "reached",
                "wrong",
                "review_wrong",
                "renamed",
                "renamed_review",
                "review",
                "confident_wrong",
                "confident_wrong_renamed",
            )
        }
        share = tot["review_wrong"] / tot["wrong"] if tot["wrong"] else 1.0
        real = tot["wrong"] - tot["renamed"]
        real_flagged = tot["review_wrong"] - tot["renamed_review"]
        print(
            f"\nall pairs: {tot['reached']} names reached, {tot['review']} flagged review; "
            f"{tot['wrong']} wrong, {tot['review_wrong']} of them flagged ({100 * share:.1f}%); "
            f"not counting renames: {real} wrong, {real_flagged} flagged "
            f"({100 * real_flagged / real if real else 100:.1f}%); wrong pairs unchanged/moved "
            f"at or above the review threshold: {tot['confident_wrong']} "
            f"({tot['confident_wrong_renamed']} renames)"
        )
    sp = speed(corpus) if speed_cases else []
    if args.json:
        print(json.dumps({"pairs": rows, "speed": sp}, indent=1))
        return 0
    if sp:
        print()
        for r in sp:
            sm = r["summary"]
            print(
                f"speed: {r['case']:26} functions {r['functions'][0]:>6,} / {r['functions'][1]:>6,}: "
                f"compute_diff {r['diff_seconds']:.2f}s, carry_names {r['carry_seconds']:.2f}s "
                f"(unchanged {sm['unchanged']}, moved {sm['moved']}, modified {sm['modified']}, "
                f"added {sm['added']}, removed {sm['removed']}, review {sm['review']})"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
