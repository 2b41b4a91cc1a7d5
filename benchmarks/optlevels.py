"""Names carried across optimisation levels, on programs the matcher was not tuned on.

For every program x toolchain of the programs corpus (``benchmarks/programs.py``, default
~/.cache/kbtool-programs) and every opt-level pair (FROM -> TO): a fresh KB, ingest the
FROM build's NAMED module as version 1 with ``--program X`` (its name section gives every
function its true name, as ``export`` annotations), then the TO build's STRIPPED module as
version 2 of the same program (ingest carries identities and ``diff-carry`` names, as a user
gets from ``kbtool ingest --program X``). Every name that reached a defined function of
version 2 is checked against the TO build's named twin (same function indices).

Pairs (``PAIRS``): O2 -> Os, O2 -> O3, Os -> O3 and the reverse Os -> O2. Programs are
split in two sets, and only TUNE may be looked at while changing the matcher:

    TUNE      zstd, lua
    HELD-OUT  sqlite, brotli, lz4, libyaml

Toolchains: clang and emcc. zig is left out: its -O2 and -O3 builds are the same bytes and
its -Os build has no name section (no truth), so it has no scorable opt-level pair.

Counting (one name per reached function):

    right     carried name == the twin's name, or equal after dropping toolchain suffixes
              (``foo.llvm.1234``, ``foo.1``, ``foo.constprop.0``...: the same function,
              named differently by the compiler; counted right, shown as ``alias``)
    renamed   wrong, but the carried name does not exist in the TO build and the true name
              does not exist in the FROM build: the compiler merged, cloned or dropped the
              function, so no name-based carry can be right (shown, not counted in prec*)
    wrong     every other mismatch
    flagged   a wrong name whose pair is flagged ``review`` in the stored diff report (such
              a carry is written at confidence <= 0.49, so agents look at it again)
    sugg      weak pairs (score < 0.55) carry no name but an open suggestion; ``sugg`` counts
              them as ``right/stored`` (not in precision or recall)

    precision = right / reached;  prec* = right / (reached - renamed)
    recall    = right / TO-side defined functions whose true name exists in the FROM build
    unflag    = wrong (not renamed) names whose pair is not flagged review (goal 0)
    unflagged renames = renamed names whose pair is not flagged review (per set): a carry on
              a function whose counterpart does not exist is acceptable only flagged; most
              left are bodies the compiler merged (equal code under one name) or a wrapper
              and its body each inlined into the other in one build (the same code: nothing
              in the binaries tells which name it bears)
    flagged right (per set) = right names whose pair is flagged review: the review load the
              flags cost (a flagged name is still carried, at confidence <= 0.49)
    unflagged precision (per set) = right / reached names not flagged review: what a reader
              who takes every unflagged name as it is gets (prec*: renames left out)

Goal (issue 23 point 10): precision >= 98 % on the held-out pairs, every remaining wrong
name flagged (unflag 0).

``--renames N`` lists up to N renamed names per pair (as ``--errors`` lists wrong ones).

Run:  python benchmarks/optlevels.py [--set tune|heldout|all] [--program P ...]
                                     [--toolchain T ...] [--pairs O2:Os ...] [--all-versions]
                                     [--errors N] [--json] [--smoke]

By default one version per program (the newest); ``--all-versions`` scores every version.
``--smoke``: a tiny C program built here with clang at -O2/-Os/-O3 (skips without clang and
wasi-libc), one pair, no targets.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.name_scoring import NameRates, true_names  # noqa: E402
from benchmarks.programs import DEFAULT_OUT, load_manifest  # noqa: E402
from kbtool.kb.db import open_rw  # noqa: E402
from kbtool.services.diff.report import get_diff  # noqa: E402
from kbtool.services.ingest import ingest_file  # noqa: E402

TUNE = ("zstd", "lua")
HELD_OUT = ("sqlite", "brotli", "lz4", "libyaml")
TOOLCHAINS = ("clang", "emcc")
PAIRS = (("O2", "Os"), ("O2", "O3"), ("Os", "O3"), ("Os", "O2"))

# suffixes compilers add to one function's name: LLVM's ThinLTO/internalize `.llvm.N`, clones
# `.constprop.N` / `.isra.N` / `.part.N` / `.cold`, and a plain `.N` for a second static of the
# same name (emcc / wasm-ld)
_SUFFIX = re.compile(
    r"(?:\.(?:llvm|constprop|isra|part|cold|specialized|lto_priv)(?:\.\d+)?|\.\d+)+$"
)


def base_name(name: str) -> str:
    """``name`` without toolchain suffixes (see the module docstring)."""
    return _SUFFIX.sub("", name) or name


@dataclass
class Score(NameRates):
    program: str
    toolchain: str
    pair: str
    heldout: bool
    defined: int = 0
    relevant: int = 0
    reached: int = 0
    right: int = 0
    alias: int = 0
    renamed: int = 0
    wrong: int = 0
    flagged_wrong: int = 0
    flagged_right: int = 0
    flagged_renamed: int = 0
    carried: int = 0
    review: int = 0
    suggested: int = 0
    suggested_right: int = 0
    seconds: float = 0.0
    errors: list = field(default_factory=list)
    renames: list = field(default_factory=list)
    flagged_scores: list = field(default_factory=list)  # (score, method, right) of flagged names

    HITS = "right"

    @property
    def unflagged(self) -> int:
        return self.wrong - self.flagged_wrong

    def row(self) -> dict:
        d = {
            k: v
            for k, v in self.__dict__.items()
            if k not in ("errors", "renames", "flagged_scores")
        }
        d.update(
            precision=round(self.precision, 4),
            precision_star=round(self.precision_star, 4),
            recall=round(self.recall, 4),
            unflagged=self.unflagged,
            seconds=round(self.seconds, 2),
        )
        return d


def evaluate(
    src_named: Path,
    dst_stripped: Path,
    dst_named: Path,
    *,
    program: str,
    toolchain: str,
    pair: str,
    heldout: bool,
) -> Score:
    """Ingest ``src_named`` then ``dst_stripped`` into one program; score the names."""
    truth_old = true_names(src_named)
    truth_new = true_names(dst_named)
    old_set = {v for v in truth_old.values() if v}
    new_set = {v for v in truth_new.values() if v}
    old_base = {base_name(v) for v in old_set}
    s = Score(program, toolchain, pair, heldout)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        conn = open_rw(Path(tmp) / "kb.db")
        a = ingest_file(conn, src_named, label="v1", program=program).version_id
        b = ingest_file(conn, dst_stripped, label="v2", program=program).version_id
        report = get_diff(conn, a, b)
        old_sids = {
            r[0] for r in conn.execute("SELECT stable_id FROM functions WHERE version_id = ?", (a,))
        }
        rows = conn.execute(
            "SELECT f.idx, f.stable_id, s.name, s.provenance FROM functions f"
            " LEFT JOIN symbols s ON s.stable_id = f.stable_id"
            " WHERE f.version_id = ? AND f.imported = 0 ORDER BY f.idx",
            (b,),
        ).fetchall()
        sugg = conn.execute(
            "SELECT func_index, name FROM suggestions WHERE version_id = ?"
            " AND backend = 'diff-carry'",
            (b,),
        ).fetchall()
        conn.close()
    s.seconds = time.perf_counter() - t0
    s.suggested = len(sugg)
    s.suggested_right = sum(1 for i, n in sugg if base_name(n) == base_name(truth_new.get(i) or ""))
    change = {c["to_index"]: c for c in report["changes"] if c["to_index"] is not None}
    s.defined = len(rows)
    s.relevant = sum(
        1 for i, *_ in rows if truth_new.get(i) and base_name(truth_new[i]) in old_base
    )
    for idx, sid, name, prov in rows:
        if name is None:
            continue
        if sid not in old_sids and prov != "diff-carry":
            continue  # the stripped module's own exports: not carried
        s.reached += 1
        s.carried += prov == "diff-carry"
        c = change.get(idx)
        flagged = bool(c and c["review"])
        s.review += flagged
        truth = truth_new.get(idx) or ""
        if flagged:
            s.flagged_scores.append((c["score"], prov, base_name(name) == base_name(truth)))
        if name == truth:
            s.right += 1
            s.flagged_right += flagged
        elif truth and base_name(name) == base_name(truth):
            s.right += 1
            s.alias += 1
            s.flagged_right += flagged
        elif name not in new_set and base_name(truth) not in old_base:
            s.renamed += 1
            s.flagged_renamed += flagged
            s.renames.append(
                (
                    idx,
                    name,
                    truth,
                    prov,
                    c["score"] if c else None,
                    c["classification"] if c else None,
                    flagged,
                )
            )
        else:
            s.wrong += 1
            s.flagged_wrong += flagged
            s.errors.append(
                (
                    idx,
                    name,
                    truth,
                    prov,
                    c["score"] if c else None,
                    c["classification"] if c else None,
                    flagged,
                )
            )
    return s


def cases(corpus: Path, args: argparse.Namespace) -> list[tuple]:
    """(program, toolchain, from, to, version) for the selection, from the manifest."""
    mods = {
        (m["program"], m["version"], m["toolchain"], m["opt"], m["role"]): m
        for m in load_manifest(corpus)
    }
    versions: dict[str, list[str]] = {}
    for prog, ver, *_ in mods:
        versions.setdefault(prog, [])
        if ver not in versions[prog]:
            versions[prog].append(ver)
    progs = args.program or {"tune": TUNE, "heldout": HELD_OUT}.get(args.set, TUNE + HELD_OUT)
    pairs = [tuple(p.split(":")) for p in args.pairs] if args.pairs else PAIRS
    out = []
    for prog in progs:
        vers = sorted(versions.get(prog, []), key=lambda v: [int(x) for x in re.findall(r"\d+", v)])
        for ver in vers if args.all_versions else vers[-1:]:
            for tc in args.toolchain or TOOLCHAINS:
                for fa, fb in pairs:
                    need = [
                        (prog, ver, tc, fa, "named"),
                        (prog, ver, tc, fb, "stripped"),
                        (prog, ver, tc, fb, "named"),
                    ]
                    if all(k in mods for k in need):
                        out.append(
                            (prog, ver, tc, fa, fb, *(corpus / mods[k]["file"] for k in need))
                        )
    return out


def report(scores: list[Score], args: argparse.Namespace) -> None:
    if args.json:
        print(json.dumps([s.row() for s in scores], indent=1))
        return
    for label, group in (
        ("TUNE", [s for s in scores if not s.heldout]),
        ("HELD-OUT", [s for s in scores if s.heldout]),
    ):
        if not group:
            continue
        print(
            f"{label}: {'pair':28} {'prec':>7} {'prec*':>7} {'recall':>7} {'reach':>5} "
            f"{'carry':>5} {'right':>5} {'alias':>5} {'ren':>4} {'wrong':>5} {'flag':>4} "
            f"{'unflag':>6} {'review':>6} {'sugg':>7} {'secs':>5}"
        )
        for s in group:
            name = f"{s.program} {s.toolchain} {s.pair}"
            print(
                f"  {name:36} {100 * s.precision:6.2f}% {100 * s.precision_star:6.2f}% "
                f"{100 * s.recall:6.2f}% {s.reached:5d} {s.carried:5d} {s.right:5d} "
                f"{s.alias:5d} {s.renamed:4d} {s.wrong:5d} {s.flagged_wrong:4d} "
                f"{s.unflagged:6d} {s.review:6d} "
                f"{f'{s.suggested_right}/{s.suggested}':>7} {s.seconds:5.1f}"
            )
            listed = [("", e) for e in s.errors[: args.errors]]
            listed += [("ren ", e) for e in s.renames[: args.renames]]
            for tag, (idx, name_, truth, prov, score, cls, flagged) in listed:
                print(
                    f"    {tag:4}new {idx:5d} got {name_!s:34} true {truth!s:34} {prov:10} "
                    f"{cls or '':9} {'' if score is None else f'{score:.3f}'}"
                    f"{' review' if flagged else ''}"
                )
        tot = {
            k: sum(getattr(s, k) for s in group)
            for k in (
                "reached",
                "right",
                "renamed",
                "wrong",
                "flagged_wrong",
                "relevant",
                "suggested",
                "suggested_right",
                "review",
                "flagged_right",
                "flagged_renamed",
            )
        }
        n = tot["reached"] - tot["renamed"]
        print(
            f"{label} all: {tot['reached']} names reached, precision "
            f"{100 * tot['right'] / max(1, tot['reached']):.2f}%, prec* "
            f"{100 * tot['right'] / max(1, n):.2f}%, recall "
            f"{100 * tot['right'] / max(1, tot['relevant']):.2f}%; {tot['wrong']} wrong, "
            f"{tot['flagged_wrong']} flagged, {tot['wrong'] - tot['flagged_wrong']} unflagged; "
            f"{tot['renamed']} renamed ({tot['renamed'] - tot['flagged_renamed']} unflagged); "
            f"suggestions {tot['suggested_right']}/"
            f"{tot['suggested']} right"
        )
        # the names a reader may take as they are: those not flagged for review
        u_right = tot["right"] - tot["flagged_right"]
        u_wrong = tot["wrong"] - tot["flagged_wrong"]
        u_all = tot["reached"] - tot["review"]
        print(
            f"{label} unflagged: {u_all} names ({tot['review']} flagged review, "
            f"{tot['flagged_right']} of them right), precision "
            f"{100 * u_right / max(1, u_all):.2f}%, prec* "
            f"{100 * u_right / max(1, u_right + u_wrong):.2f}%\n"
        )


SMOKE_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
typedef struct { int kind; int value; const char *label; } item_t;
__attribute__((noinline)) static int get_a(item_t *it) { return it->value + 3; }
__attribute__((noinline)) static int get_b(item_t *it) { return it->value + 3; }
__attribute__((noinline)) int sum_items(item_t *v, int n) {
  int s = 0; for (int i = 0; i < n; i++) s += v[i].kind ? get_a(&v[i]) : get_b(&v[i]); return s;
}
__attribute__((noinline)) int count_label(item_t *v, int n, const char *l) {
  int c = 0; for (int i = 0; i < n; i++) c += strcmp(v[i].label, l) == 0; return c;
}
__attribute__((noinline)) void show(item_t *v, int n) {
  for (int i = 0; i < n; i++) printf("item %d: %s=%d\n", i, v[i].label, v[i].value);
}
int main(int argc, char **argv) {
  item_t v[3] = {{0, argc, "a"}, {1, 2, "b"}, {0, 7, argv[0]}};
  show(v, 3);
  printf("%d %d\n", sum_items(v, 3), count_label(v, 3, "a"));
  return 0;
}
"""


def build_smoke(out: Path) -> Path | None:
    """Build SMOKE_C with clang at O2/Os/O3 into ``out`` (programs-corpus layout); None
    without clang and wasi-libc."""
    if not (shutil.which("clang") and Path("/usr/lib/wasm32-wasi/libc.a").exists()):
        return None
    from benchmarks.programs import _name_from_map

    (out / "tiny.c").write_text(SMOKE_C)
    bindir = out / "bin"
    bindir.mkdir()
    for t in ("clang", "wasm-ld", "wasm-ld-14"):
        if shutil.which(t):
            (bindir / t).symlink_to(shutil.which(t))
    rows = []
    for opt in ("O2", "Os", "O3"):
        raw = out / f"tiny-{opt}.wasm"
        r = subprocess.run(
            [
                str(bindir / "clang"),
                "--target=wasm32-wasi",
                "--sysroot=/usr",
                f"-{opt}",
                "-w",
                str(out / "tiny.c"),
                "-o",
                str(raw),
                f"-Wl,--Map={out / f'{opt}.map'}",
            ],
            capture_output=True,
            text=True,
            env={"PATH": str(bindir)},
        )
        if r.returncode:
            return None
        _name_from_map(raw, out / f"{opt}.map")
        for role, extra in (("named", []), ("stripped", ["--all"])):
            f = out / f"tiny-1.0.clang.{opt}.{role}.wasm"
            subprocess.run(
                [
                    shutil.which("wasm-tools") or "wasm-tools",
                    "strip",
                    *extra,
                    str(raw),
                    "-o",
                    str(f),
                ],
                check=True,
            )
            rows.append(
                {
                    "file": f.name,
                    "program": "tiny",
                    "version": "1.0",
                    "toolchain": "clang",
                    "opt": opt,
                    "role": role,
                }
            )
    (out / "MANIFEST.json").write_text(json.dumps({"modules": rows}))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--set", choices=("tune", "heldout", "all"), default="all")
    ap.add_argument("--program", nargs="*", help="programs (overrides --set)")
    ap.add_argument("--toolchain", nargs="*", choices=TOOLCHAINS)
    ap.add_argument("--pairs", nargs="*", help="FROM:TO opt pairs, e.g. O2:Os (default: all four)")
    ap.add_argument("--all-versions", action="store_true", help="every version, not the newest")
    ap.add_argument("--errors", type=int, default=0, help="list up to N wrong names per pair")
    ap.add_argument("--renames", type=int, default=0, help="list up to N renames per pair")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--smoke", action="store_true", help="a tiny clang-built program, one pair")
    args = ap.parse_args(argv)
    tmp = None
    corpus = args.corpus.expanduser()
    if args.smoke:
        tmp = tempfile.TemporaryDirectory()
        built = build_smoke(Path(tmp.name))
        if built is None:
            print("smoke: clang with wasi-libc not available: skipped")
            return 0
        corpus, args.program, args.toolchain, args.pairs = built, ["tiny"], ["clang"], ["O2:Os"]
    elif not (corpus / "MANIFEST.json").exists():
        print(
            f"programs corpus not found: {corpus} (build it: python benchmarks/programs.py)",
            file=sys.stderr,
        )
        return 2
    scores = []
    for prog, _ver, tc, fa, fb, src, dst, dst_named in cases(corpus, args):
        scores.append(
            evaluate(
                src,
                dst,
                dst_named,
                program=prog,
                toolchain=tc,
                pair=f"{fa} -> {fb}",
                heldout=prog in HELD_OUT,
            )
        )
        if not args.json and not args.smoke:
            s = scores[-1]
            print(
                f"  .. {prog} {tc} {fa} -> {fb}: prec* {100 * s.precision_star:.2f}% "
                f"recall {100 * s.recall:.2f}% unflag {s.unflagged}",
                file=sys.stderr,
                flush=True,
            )
    report(scores, args)
    if tmp is not None:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
