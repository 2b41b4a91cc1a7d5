"""Look-alike families: matcher accuracy on a Go pair (names from the Go pclntab).

Builds benchmarks/fixtures/go_lookalike (v1 and v2 of a small Go program: methods of one
type with near-identical bodies, closures differing in one constant, a rotation of the
method order and insertions that shift indices) with the ``go`` on PATH
(``GOOS=js GOARCH=wasm``; ``wasip1`` needs Go >= 1.21), then matches OLD NAMED -> NEW
STRIPPED (and the reverse) with :func:`kbtool.identity.matcher.match_functions` and scores
every matched defined function against the names kbtool's own Go symbol recovery
(:func:`kbtool.wasm.gosyms.recover_go_names`) reads from the named builds.

    precision = correct / matched, recall = correct / new functions whose name exists on the old side
    unflag    = wrong matches not flagged review (goal 0)
    conf.wr   = wrong matches of the same code (equal body or shape hash: what the diff calls
                unchanged/moved) with a score at or above the review threshold (goal 0)
    family    = matched functions with a look-alike (same signature and instruction stream)
                on either side; fam.wr = of those, wrong

Peer figure: the same pair matched by position alone (old index i -> new index i), the
baseline a tool without a matcher would give.

Run:  python benchmarks/lookalike.py [--json] [--errors N] [--smoke]

``--smoke``: a tiny hand-made .wat pair (needs wat2wasm) instead of the Go build.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from kbtool.identity.matcher import REVIEW_SCORE, match_functions  # noqa: E402
from kbtool.identity.records import records_from_analysis  # noqa: E402
from kbtool.wasm import analyze_module, parse_module  # noqa: E402
from kbtool.wasm.gosyms import recover_go_names  # noqa: E402

FIXTURE = ROOT / "benchmarks" / "fixtures" / "go_lookalike"

SMOKE_V1 = """(module (memory 1)
  (func $m0 (param i32) (result i32) local.get 0 i32.load offset=8 i32.const 5 i32.add)
  (func $m1 (param i32) (result i32) local.get 0 i32.load offset=8 i32.const 5 i32.add)
  (func $m2 (param i32) (result i32) local.get 0 i32.load offset=8 i32.const 5 i32.add)
  (func $c0 (param i32) (result i32) local.get 0 i32.const 100 i32.mul call $m0)
  (func $c1 (param i32) (result i32) local.get 0 i32.const 200 i32.xor call $m1 i32.const 1 i32.add)
  (func $c2 (param i32) (result i32) local.get 0 call $m2 i32.const 300 i32.sub))"""
# v2: the three look-alike methods rotate (m1 m2 m0); their callers tell them apart
SMOKE_V2 = """(module (memory 1)
  (func $m1 (param i32) (result i32) local.get 0 i32.load offset=8 i32.const 5 i32.add)
  (func $m2 (param i32) (result i32) local.get 0 i32.load offset=8 i32.const 5 i32.add)
  (func $m0 (param i32) (result i32) local.get 0 i32.load offset=8 i32.const 5 i32.add)
  (func $c0 (param i32) (result i32) local.get 0 i32.const 100 i32.mul call $m0)
  (func $c1 (param i32) (result i32) local.get 0 i32.const 200 i32.xor call $m1 i32.const 1 i32.add)
  (func $c2 (param i32) (result i32) local.get 0 call $m2 i32.const 300 i32.sub))"""


def build_go(out: Path) -> bool:
    """Build the Go pair into ``out``; False when no Go toolchain is available."""
    if shutil.which("go") is None:
        return False
    subprocess.run(
        ["sh", str(FIXTURE / "build.sh"), str(out)], check=True, stdout=subprocess.DEVNULL
    )
    return True


def go_names(path: Path) -> dict[int, str]:
    syms = recover_go_names(parse_module(path.read_bytes()))
    return dict(syms.names) if syms else {}


def wat_names(path: Path) -> dict[int, str]:
    a = analyze_module(path.read_bytes())
    return {f.index: f.raw_name for f in a.functions if f.raw_name and not f.imported}


def _family_keys(recs) -> Counter:
    return Counter((r.type_sig, r.ops) for r in recs if not r.imported and r.ops)


def evaluate(old_named: Path, new_stripped: Path, new_named: Path, names) -> dict:
    ro = records_from_analysis(analyze_module(old_named.read_bytes()))
    rn = records_from_analysis(analyze_module(new_stripped.read_bytes()))
    t0 = time.process_time()
    matches = match_functions(ro, rn)
    secs = time.process_time() - t0
    old_names, new_names = names(old_named), names(new_named)
    old_set, new_set = set(old_names.values()), set(new_names.values())
    RO, RN = {r.index: r for r in ro}, {r.index: r for r in rn}
    fo, fn = _family_keys(ro), _family_keys(rn)
    defined = [r.index for r in rn if not r.imported and r.index in new_names]
    relevant = sum(1 for i in defined if new_names[i] in old_set)
    row = dict(
        matched=0,
        correct=0,
        relevant=relevant,
        review=0,
        unflagged_wrong=0,
        confident_wrong=0,
        family=0,
        family_wrong=0,
        renamed=0,
        seconds=round(secs, 3),
    )
    errors = []
    for m in matches:
        n, o = m.new_index, m.old_index
        if RN[n].imported or n not in new_names:
            continue
        row["matched"] += 1
        ok = old_names.get(o) == new_names[n]
        row["correct"] += ok
        row["review"] += m.review
        key_o, key_n = (RO[o].type_sig, RO[o].ops), (RN[n].type_sig, RN[n].ops)
        fam = fo[key_o] + fn[key_o] > 2 or fo[key_n] + fn[key_n] > 2
        row["family"] += fam
        if ok:
            continue
        row["family_wrong"] += fam
        row["unflagged_wrong"] += not m.review
        renamed = new_names[n] not in old_set and old_names.get(o) not in new_set
        row["renamed"] += renamed
        same = (RO[o].body_hash and RO[o].body_hash == RN[n].body_hash) or (
            RO[o].shape_hash and RO[o].shape_hash == RN[n].shape_hash
        )
        row["confident_wrong"] += bool(same) and m.score >= REVIEW_SCORE
        errors.append((o, old_names.get(o), n, new_names[n], m.method, m.score, m.review))
    # the peer: pairing by position alone
    by_pos = [i for i in defined if i in old_names]
    row["position_precision"] = (
        round(sum(old_names[i] == new_names[i] for i in by_pos) / len(by_pos), 4) if by_pos else 1.0
    )
    row["precision"] = round(row["correct"] / row["matched"], 4) if row["matched"] else 1.0
    row["recall"] = round(row["correct"] / relevant, 4) if relevant else 1.0
    row["errors"] = errors
    return row


def run(pairs: list[tuple[str, Path, Path, Path]], names, args) -> int:
    rows = []
    hdr = (
        f"{'pair':24} {'prec':>7} {'recall':>7} {'match':>5} {'wrong':>5} {'ren':>3} "
        f"{'review':>6} {'unflag':>6} {'conf.wr':>7} {'family':>6} {'fam.wr':>6} "
        f"{'by-pos':>7} {'secs':>6}"
    )
    if not args.json:
        print(hdr)
        print("-" * len(hdr))
    for label, old_named, new_stripped, new_named in pairs:
        r = evaluate(old_named, new_stripped, new_named, names)
        r["pair"] = label
        rows.append(r)
        if args.json:
            continue
        print(
            f"{label:24} {100 * r['precision']:6.2f}% {100 * r['recall']:6.2f}% "
            f"{r['matched']:5d} {r['matched'] - r['correct']:5d} {r['renamed']:3d} "
            f"{r['review']:6d} {r['unflagged_wrong']:6d} {r['confident_wrong']:7d} "
            f"{r['family']:6d} {r['family_wrong']:6d} {100 * r['position_precision']:6.2f}% "
            f"{r['seconds']:6.3f}"
        )
        for o, on, n, nn, method, score, review in r["errors"][: args.errors]:
            print(
                f"      old {o:5d} {on!s:40} new {n:5d} {nn!s:40} {method:10} {score:.3f}"
                f"{' review' if review else ''}"
            )
    if args.json:
        print(json.dumps([{k: v for k, v in r.items() if k != "errors"} for r in rows], indent=1))
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--errors", type=int, default=0, help="list up to N wrong matches per pair")
    ap.add_argument("--smoke", action="store_true", help="a tiny .wat pair instead of the Go build")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        if args.smoke:
            if shutil.which("wat2wasm") is None:
                print("wat2wasm not installed", file=sys.stderr)
                return 2
            for v, text in (("v1", SMOKE_V1), ("v2", SMOKE_V2)):
                (out / f"{v}.wat").write_text(text)
                subprocess.run(
                    [
                        "wat2wasm",
                        "--debug-names",
                        str(out / f"{v}.wat"),
                        "-o",
                        str(out / f"{v}.named.wasm"),
                    ],
                    check=True,
                )
                subprocess.run(
                    ["wat2wasm", str(out / f"{v}.wat"), "-o", str(out / f"{v}.stripped.wasm")],
                    check=True,
                )
            names = wat_names
            prefix = "wat"
        else:
            if not build_go(out):
                print("go not installed: nothing to measure", file=sys.stderr)
                return 2
            names = go_names
            prefix = "go"
        pairs = [
            (
                f"{prefix} v1 -> v2",
                out / "v1.named.wasm",
                out / "v2.stripped.wasm",
                out / "v2.named.wasm",
            ),
            (
                f"{prefix} v2 -> v1",
                out / "v2.named.wasm",
                out / "v1.stripped.wasm",
                out / "v1.named.wasm",
            ),
        ]
        return run(pairs, names, args)


if __name__ == "__main__":
    raise SystemExit(main())
