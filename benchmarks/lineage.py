"""Lineages, names that travel, Go names: the figures of issues 12 and 23.

1. Lineage detection: for every pair of corpus modules (zstd releases and builds, sql.js
   releases, lightningcss, onnxruntime, plus the bundled demo zstd releases), the own-code
   overlap of :mod:`kbtool.services.lineage` and its decision (related = overlap >=
   RELATED_THRESHOLD) against the truth (same project, from the file name). A wrong merge is
   an unrelated pair decided related. Next to it, the time of the overlap (library
   recognition + profile + compare) and of the full matcher (the peer step it runs before).
1b. Cross-program matrix (issue 23) on the corpus of ``benchmarks/programs.py`` (different
   C programs sharing one runtime: zstd, lua, sqlite, brotli, lz4, libyaml with clang +
   wasi-libc, zig cc, emcc at O2/Os/O3; ``--programs DIR``, default ~/.cache/kbtool-programs;
   skipped when absent): every pair of stripped builds decided; per program x toolchain the
   highest overlap with another program and the lowest with its own other builds (releases,
   opt levels); wrong merges and missed merges (same toolchain). Pairs across toolchains of
   one program are listed apart: different compilers give different bodies, so they are
   not expected to be related. Opt-level rows: each pair of builds of one release at two
   optimisation levels (same toolchain), its overlap next to the highest with another program:
   whether a threshold could join them (it cannot: see docs/DECISIONS.md). Then names carried
   across programs: per toolchain one KB,
   each program's stripped build ingested into a KB that holds the named builds of the
   programs before it (the order that used to merge: sqlite, then lua, ...), counting names
   that reached it from another program's version (carried identities and ``diff-carry``).
2. Import round trip (kbtool.services.names_io):
   a. the README chain: demo KB (zstd 1.5.5 + hand names -> 1.5.6) + 1.5.7, export the last
      version, import into a fresh KB holding only 1.5.7: right / wrong / unplaced by index;
   b. across releases with ground truth: export a KB of a named zstd build (names from its
      name section), import into a fresh KB of the stripped build of another release; the
      stripped build's named twin gives the truth by index.
3. Go names: share of defined functions named ``go-pclntab`` at ingest, on the Go fixture
   (tests/fixtures/go/hello, built with the ``go`` on PATH) and on ``--go-module`` files.

Run:  python benchmarks/lineage.py [--smoke] [--programs DIR] [--go-module FILE.wasm ...]
"""

from __future__ import annotations

import argparse
import itertools
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT / "benchmarks"]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from kbtool.identity.matcher import match_functions_staged  # noqa: E402
from kbtool.identity.records import records_from_analysis  # noqa: E402
from kbtool.kb import queries  # noqa: E402
from kbtool.kb.db import open_rw  # noqa: E402
from kbtool.services import names_io  # noqa: E402
from kbtool.services.demo import build_demo  # noqa: E402
from kbtool.services.ingest import ingest_file  # noqa: E402
from kbtool.services.lineage import (  # noqa: E402
    RELATED_THRESHOLD,
    module_rows,
    pair_overlap,
    program_name_for,
)
from kbtool.wasm import analyze_module, parse_module  # noqa: E402

DEMO = ROOT / "kbtool" / "demo"
CORPUS = ROOT.parent / "shared" / "corpus"
if not CORPUS.is_dir():
    CORPUS = Path("/work/shared/corpus")
GT, REL = CORPUS / "gt", CORPUS / "release"
HELLO = ROOT / "tests" / "fixtures" / "go" / "hello"


def _modules(smoke: bool) -> list[Path]:
    mods = [DEMO / "zstd-1.5.5.wasm", DEMO / "zstd-1.5.6.wasm"]
    if smoke:
        return mods + [p for p in (REL / "sql.js-1.10.3.sql-wasm.wasm",) if p.exists()]
    mods += sorted(GT.glob("*.stripped.wasm")) + sorted(REL.glob("*.wasm"))
    return [p for p in mods if p.exists()]


def lineage_pairs(smoke: bool) -> dict[str, int]:
    mods = _modules(smoke)
    analyses, profs = {}, {}
    for p in mods:
        data = p.read_bytes()
        a = analyze_module(data)
        analyses[p.name] = a
        profs[p.name] = module_rows(a, data)
    print(
        f"== lineage detection: {len(mods)} modules, {len(mods) * (len(mods) - 1) // 2} pairs,"
        f" threshold {RELATED_THRESHOLD}"
    )
    print(f"{'overlap':>8}  {'decision':<9} {'truth':<9} verdict  pair")
    counts = {"right": 0, "wrong_merge": 0, "missed": 0}
    lo_rel, hi_unrel = 1.0, 0.0
    for a, b in itertools.combinations(mods, 2):
        ov, _ = pair_overlap(profs[b.name], profs[a.name])
        related = ov >= RELATED_THRESHOLD
        truth = program_name_for(a.name) == program_name_for(b.name)
        if related == truth:
            counts["right"] += 1
            verdict = "ok"
        elif related:
            counts["wrong_merge"] += 1
            verdict = "WRONG MERGE"
        else:
            counts["missed"] += 1
            verdict = "missed"
        if truth:
            lo_rel = min(lo_rel, ov)
        else:
            hi_unrel = max(hi_unrel, ov)
        print(
            f"{ov:8.3f}  {'related' if related else 'new':<9} {'same' if truth else 'other':<9}"
            f" {verdict:<7}  {a.name} ~ {b.name}"
        )
    print(
        f"pairs right {counts['right']}, wrong merges {counts['wrong_merge']}, missed "
        f"{counts['missed']}; related pairs overlap >= {lo_rel:.3f}, unrelated <= {hi_unrel:.3f}"
    )
    # cost next to the peer step (the matcher it runs before), on the demo pair
    a, b = analyses["zstd-1.5.5.wasm"], analyses["zstd-1.5.6.wasm"]
    da, db_ = (DEMO / "zstd-1.5.5.wasm").read_bytes(), (DEMO / "zstd-1.5.6.wasm").read_bytes()
    t0 = time.perf_counter()
    for _ in range(10):
        pair_overlap(module_rows(b, db_), module_rows(a, da))
    t_ov = (time.perf_counter() - t0) / 10
    t0 = time.perf_counter()
    match_functions_staged(records_from_analysis(a), records_from_analysis(b))
    t_match = time.perf_counter() - t0
    print(
        f"time on zstd 1.5.5 ~ 1.5.6: overlap {t_ov * 1000:.2f} ms, matcher (peer) "
        f"{t_match * 1000:.0f} ms"
    )
    return counts


PROGRAMS_DIR = Path.home() / ".cache" / "kbtool-programs"
CARRY_ORDER = ("sqlite", "lua", "zstd", "brotli", "lz4", "libyaml")  # sqlite then lua: issue 23


def _program_modules(pdir: Path, smoke: bool) -> list[dict]:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from programs import load_manifest

    mods = [m for m in load_manifest(pdir) if m["role"] == "stripped"]
    if smoke:  # what `programs.py --smoke` builds
        mods = [
            m
            for m in mods
            if m["program"] in ("lz4", "libyaml") and m["toolchain"] == "clang" and m["opt"] == "O2"
        ]
    return mods


def program_matrix(pdir: Path, smoke: bool) -> dict[str, int]:
    """Every pair of the programs corpus decided; the programs x toolchains matrix."""
    mods = _program_modules(pdir, smoke)
    counts = {
        "pairs": 0,
        "wrong_merge": 0,
        "missed": 0,
        "cross_toolchain_related": 0,
        "cross_toolchain": 0,
    }
    if len(mods) < 2:
        print(
            f"== cross-program matrix: no programs corpus in {pdir}"
            " (build it: python benchmarks/programs.py)"
        )
        return counts
    rows = {}
    for m in mods:
        data = (pdir / m["file"]).read_bytes()
        rows[m["file"]] = module_rows(analyze_module(data), data)
    key = {m["file"]: m for m in mods}
    other_max: dict[tuple[str, str], tuple[float, str]] = {}
    own_min: dict[tuple[str, str], tuple[float, str]] = {}
    wrong: list[str] = []
    opt_pairs: list[tuple[float, dict, dict]] = []
    for a, b in itertools.combinations(sorted(rows), 2):
        ma, mb = key[a], key[b]
        ov, prof = pair_overlap(rows[b], rows[a])
        related = ov >= RELATED_THRESHOLD
        same = ma["program"] == mb["program"]
        counts["pairs"] += 1
        if same and ma["toolchain"] == mb["toolchain"] and ma["version"] == mb["version"]:
            opt_pairs.append((ov, ma, mb))
        if ma["toolchain"] != mb["toolchain"] and same:
            counts["cross_toolchain"] += 1
            counts["cross_toolchain_related"] += related
            continue
        if related and not same:
            counts["wrong_merge"] += 1
            wrong.append(f"  WRONG MERGE {ov:.3f} {a} ~ {b} (basis {prof.basis})")
        elif same and not related:
            counts["missed"] += 1
            wrong.append(f"  missed {ov:.3f} {a} ~ {b} (basis {prof.basis})")
        for m, o in ((ma, b), (mb, a)):
            k = (m["program"], m["toolchain"])
            if same:
                own_min[k] = min(own_min.get(k, (2.0, "")), (ov, o))
            else:
                other_max[k] = max(other_max.get(k, (-1.0, "")), (ov, o))
    progs = sorted({m["program"] for m in mods})
    tcs = sorted({m["toolchain"] for m in mods})
    opts = sorted({m["opt"] for m in mods})
    print(
        f"== cross-program matrix: {len(mods)} stripped builds ({len(progs)} programs x "
        f"{len(tcs)} toolchains x opt {'/'.join(opts)}), {counts['pairs']} pairs, "
        f"threshold {RELATED_THRESHOLD}"
    )
    print(
        "cell: highest overlap with another program / lowest with its own other builds"
        " (same toolchain; - = none)"
    )
    print(f"{'program':<10}" + "".join(f"{t:>18}" for t in tcs))
    for p in progs:
        cells = []
        for t in tcs:
            hi = other_max.get((p, t))
            lo = own_min.get((p, t))
            cells.append(f"{hi[0]:.3f}/" if hi else "-/")
            cells[-1] += f"{lo[0]:.3f}" if lo else "-"
        print(f"{p:<10}" + "".join(f"{c:>18}" for c in cells))
    for w in wrong:
        print(w)
    print(
        f"program pairs: wrong merges {counts['wrong_merge']}, missed merges {counts['missed']}"
        f" (same toolchain); same program across toolchains: {counts['cross_toolchain']} pairs,"
        f" {counts['cross_toolchain_related']} decided related"
    )
    counts.update(opt_level_rows(opt_pairs, other_max))
    return counts


def opt_level_rows(
    opt_pairs: list[tuple[float, dict, dict]], other_max: dict[tuple[str, str], tuple[float, str]]
) -> dict[str, int]:
    """Builds of one release at two optimisation levels (same toolchain): their own-code
    overlap against the highest overlap of either with another program of that toolchain,
    and whether a threshold between the two could join them automatically."""
    print(
        "== opt levels: one release, one toolchain, two optimisation levels (own-code overlap;"
        " 'other' = highest with another program of that toolchain)"
    )
    print(f"{'program':<18}{'toolchain':<10}{'pair':<8}{'overlap':>8}{'other':>8}  decision")
    joined = 0
    for ov, ma, mb in sorted(
        opt_pairs, key=lambda t: (t[1]["program"], t[1]["toolchain"], t[1]["version"], -t[0])
    ):
        other = other_max.get((ma["program"], ma["toolchain"]), (0.0, ""))[0]
        related = ov >= RELATED_THRESHOLD
        joined += related
        print(
            f"{ma['program'] + ' ' + ma['version']:<18}{ma['toolchain']:<10}"
            f"{ma['opt'] + '~' + mb['opt']:<8}{ov:8.3f}{other:8.3f}  "
            + ("joined" if related else "new program (hint: --program)")
        )
    if not opt_pairs:
        return {"opt_pairs": 0, "opt_joined": 0}
    lo = min(ov for ov, *_ in opt_pairs)
    hi = max((v[0] for v in other_max.values()), default=0.0)
    print(
        f"opt-level pairs {len(opt_pairs)}: joined automatically {joined}, kept apart (with a"
        f" hint) {len(opt_pairs) - joined}; lowest opt-level overlap {lo:.3f}, highest between"
        f" different programs {hi:.3f}: "
        + (
            f"a gap ({lo:.3f} > {hi:.3f})"
            if lo > hi
            else "no gap, no threshold joins every opt level without a wrong merge"
        )
    )
    return {"opt_pairs": len(opt_pairs), "opt_joined": joined}


def carried_across(pdir: Path, tmp: Path, smoke: bool) -> int:
    """Names that reach a program from another program's version at ingest (should be 0)."""
    mods = [m for m in _program_modules(pdir, smoke) if m["opt"] == "O2"]
    total = 0
    for tc in sorted({m["toolchain"] for m in mods}):
        latest: dict[str, dict] = {}
        for m in mods:
            if m["toolchain"] == tc and m["program"] in CARRY_ORDER:
                if m["program"] not in latest or m["version"] > latest[m["program"]]["version"]:
                    latest[m["program"]] = m
        order = [latest[p] for p in CARRY_ORDER if p in latest]
        conn = open_rw(tmp / f"carry-{tc}.db")
        truth: dict[int, str] = {}
        crossed, merged = 0, 0
        for m in order:
            stripped = pdir / m["file"]
            res = ingest_file(conn, stripped, label=f"{m['program']}-stripped")
            truth[res.version_id] = m["program"]
            parent = res.parent_version_id
            if parent is not None and truth.get(parent) != m["program"]:
                merged += 1
                theirs = {r["stable_id"] for r in queries.matching_rows(conn, parent)}
                mine = {
                    r["idx"]: r["stable_id"] for r in queries.matching_rows(conn, res.version_id)
                }
                names = queries.annotations_by_index(conn, res.version_id, defined_only=True)
                crossed += sum(
                    1
                    for i, a in names.items()
                    if a["provenance"] == "diff-carry" or mine.get(i) in theirs
                )
            named = pdir / m["file"].replace(".stripped.wasm", ".named.wasm")
            res = ingest_file(conn, named, label=f"{m['program']}-named")
            truth[res.version_id] = m["program"]
        print(
            f"{tc}: {len(order)} programs ({', '.join(m['program'] for m in order)}):"
            f" merged into another program {merged}, names carried across programs {crossed}"
        )
        total += crossed
    print(f"names carried by diff across programs: {total}")
    return total


def _score(placed: dict[int, str], truth: dict[int, str], exported: int) -> str:
    right = sum(1 for i, n in placed.items() if truth.get(i) == n)
    wrong = len(placed) - right
    return (
        f"rows with names {exported}: landed right {right}, wrong {wrong},"
        f" unplaced/ambiguous {exported - len(placed)}"
    )


def round_trip(tmp: Path, smoke: bool) -> None:
    print("== import round trip")
    src = tmp / "chain.db"
    build_demo(src, echo=lambda _m: None)
    conn = open_rw(src)
    last = 2
    z57 = GT / "zstd-1.5.7.O2.stripped.wasm"
    if not smoke and z57.exists():
        last = ingest_file(conn, z57, label="zstd-1.5.7").version_id
    text = names_io.export_text(conn, last)
    want = {i: a["name"] for i, a in queries.annotations_by_index(conn, last).items()}
    label = queries.version_info(conn, last)["label"]
    dst = open_rw(tmp / "fresh.db")
    module = z57 if last != 2 else DEMO / "zstd-1.5.6.wasm"
    ingest_file(dst, module, label="last")
    rep = names_io.import_names(dst, text, source="chain.txt")
    got = {i: a["name"] for i, a in queries.annotations_by_index(dst, 1).items()}
    right = sum(1 for i, n in want.items() if got.get(i) == n)
    print(
        f"chain -> fresh KB of {label}: names {len(want)}, landed right {right}, wrong "
        f"{sum(1 for i, n in want.items() if i in got and got[i] != n)}, unplaced "
        f"{len(want) - len(got.keys() & want.keys())}; by method {rep.by_method}"
    )
    if smoke:
        return
    for a, b in (("1.5.5", "1.5.6"), ("1.5.6", "1.5.7"), ("1.5.2", "1.5.7"), ("1.5.6", "1.5.6")):
        for build in ("O2", "O2.exports"):
            src_named = GT / f"zstd-{a}.{build}.named.wasm"
            dst_stripped = GT / f"zstd-{b}.{build}.stripped.wasm"
            dst_named = GT / f"zstd-{b}.{build}.named.wasm"
            if b == a:  # another optimisation level of the same release
                src_named = GT / f"zstd-{a}.Os.named.wasm"
                if build != "O2":
                    continue
            if not (src_named.exists() and dst_stripped.exists() and dst_named.exists()):
                continue
            s = open_rw(tmp / f"s-{a}-{b}-{build}.db")
            sv = ingest_file(s, src_named, label="src").version_id
            text = names_io.export_text(s, sv)
            d = open_rw(tmp / f"d-{a}-{b}-{build}.db")
            ingest_file(d, dst_stripped, label="dst", program="zstd")
            rep = names_io.import_names(d, text, source="x.txt", version_id=1)
            truth = parse_module(dst_named.read_bytes()).func_names
            n_rows = sum(1 for r in names_io.parse_export(text) if r["name"])
            print(
                f"{src_named.name} -> {dst_stripped.name}: "
                f"{_score(rep.placed, truth, n_rows)}; ambiguous {len(rep.ambiguous)};"
                f" by method {rep.by_method}"
            )


def go_names(tmp: Path, extra: list[Path], smoke: bool) -> None:
    print("== Go names (go-pclntab at ingest)")
    mods: list[Path] = []
    if not smoke and shutil.which("go"):
        out = tmp / "go"
        subprocess.run(["sh", str(HELLO / "build.sh"), str(out)], check=True, capture_output=True)
        mods += sorted(out.glob("*.wasm"))
    elif not smoke:
        print("go not on PATH: fixture skipped")
    mods += extra
    for p in mods:
        conn = open_rw(tmp / f"go-{p.name}.db")
        t0 = time.perf_counter()
        res = ingest_file(conn, p, label=p.name)
        secs = time.perf_counter() - t0
        go = res.go or {}
        cov = queries.coverage(conn, res.version_id)
        print(
            f"{p.name}: {go.get('named', 0)} of {res.defined} defined functions named by"
            f" go-pclntab ({go.get('named', 0) / max(res.defined, 1):.1%}), coverage"
            f" {cov['coverage_pct']:.1f}%, {go.get('go_version')}, ingest {secs:.1f}s"
            + (f"; error: {go['error']}" if "error" in go else "")
        )
    if smoke:
        print("(smoke: Go build skipped)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true", help="tiny input (the demo modules)")
    ap.add_argument(
        "--go-module",
        type=Path,
        nargs="*",
        default=[],
        help="more Go-built .wasm modules to measure",
    )
    ap.add_argument(
        "--programs",
        type=Path,
        default=PROGRAMS_DIR,
        help="programs corpus of benchmarks/programs.py (default %(default)s)",
    )
    args = ap.parse_args(argv)
    counts = lineage_pairs(args.smoke)
    pcounts = program_matrix(args.programs.expanduser(), args.smoke)
    with tempfile.TemporaryDirectory() as d:
        crossed = carried_across(args.programs.expanduser(), Path(d), args.smoke)
        round_trip(Path(d), args.smoke)
        go_names(Path(d), args.go_module, args.smoke)
    return 1 if counts["wrong_merge"] or pcounts["wrong_merge"] or crossed else 0


if __name__ == "__main__":
    sys.exit(main())
