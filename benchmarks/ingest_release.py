"""Ingest of a LATER release of a program into a KB that holds an earlier one, beside
`wasm-objdump -d` of the later release (issue 30: ingest near the native floor).

`benchmarks/ingest.py` times a fresh ingest (no parent). A user ingests each release of a
program: the second one is paired with the first (the matcher), its names are carried and
the pair's diff report and changelog are built and stored, all inside `kbtool ingest`. This
benchmark builds a KB holding only the first release once (with the measured checkout), then
for each run copies it and times the whole `kbtool --db COPY ingest LATER` process (wall and
CPU from its own rusage; no background warm job), and `wasm-objdump -d LATER` right after.

    python benchmarks/ingest_release.py [--pair ffmpeg|sqljs|zstd|all] [--repeat N]
        [--baseline WORKTREE] [--stages] [--smoke]

``--baseline``: the same runs with another checkout (alternating, each with a KB its own
kbtool built), printed as before/after; with ``--same-as``, the two KBs after the last
later ingest are then compared table by table, row by row (times left out; the stored
diff report's JSON text is a column of ``diffs``: byte for byte), exit status 1 when they
differ. ``--stages``: one more in-process run per checkout
split into the matcher (``match_functions_staged``), the pairing's review checks
(``pair_rows``), the name carry, the report (``build_report`` minus
the changelog) and the changelog; the rest is the ingest proper (decode, facts, store).
The machine's load (``os.getloadavg``) is printed with each row. ``objdump`` is timed as
the shell runs it (pyenv's shim and the wheel's Python wrapper first: ~30-80 ms that
flatter kbtool on small modules) and as the wheel's native binary alone (``native
objdump``): the fair ratio on small modules.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.ingest import NO_WARM, _run, _x, objdump  # noqa: E402
from testkit.kbcompare import compare  # noqa: E402

BIG = Path.home() / ".cache" / "kbtool-big"
FFMPEG_NEW = BIG / "package" / "dist" / "esm" / "ffmpeg-core.wasm"  # 0.12.10
FFMPEG_OLD = BIG / "v0126" / "package" / "dist" / "esm" / "ffmpeg-core.wasm"  # 0.12.6
CORPUS = Path(os.environ.get("KBTOOL_CORPUS", "/work/shared/corpus"))

#: (name, first release ingested, later release timed)
PAIRS = {
    "ffmpeg": [("ffmpeg 0.12.10 -> 0.12.6", FFMPEG_NEW, FFMPEG_OLD)],
    "sqljs": [
        (
            "sql.js 1.10.3 -> 1.12.0",
            CORPUS / "release" / "sql.js-1.10.3.sql-wasm.wasm",
            CORPUS / "release" / "sql.js-1.12.0.sql-wasm.wasm",
        )
    ],
    "zstd": [
        (
            f"zstd {a} -> {b} (O2 named)",
            CORPUS / "gt" / f"zstd-{a}.O2.named.wasm",
            CORPUS / "gt" / f"zstd-{b}.O2.named.wasm",
        )
        for a, b in (("1.5.2", "1.5.5"), ("1.5.5", "1.5.6"))
    ],
    # --smoke: the two bundled demo releases (no corpus needed)
    "demo": [
        (
            "demo zstd 1.5.5 -> 1.5.6",
            ROOT / "kbtool" / "demo" / "zstd-1.5.5.wasm",
            ROOT / "kbtool" / "demo" / "zstd-1.5.6.wasm",
        )
    ],
}

#: the in-process stage split (``--stages``): a driver run by the measured checkout
_STAGES_DRIVER = r"""
import json, sys, time
from kbtool.identity import matcher, pairing
from kbtool.services import lineage
from kbtool.services.diff import carry, report
spent = {}
def timed(mod, attr, label):
    f = getattr(mod, attr)
    def g(*a, **k):
        t = time.process_time()
        try:
            return f(*a, **k)
        finally:
            spent[label] = spent.get(label, 0.0) + time.process_time() - t
    setattr(mod, attr, g)
timed(matcher, "match_functions_staged", "matcher")
timed(pairing, "pair_rows", "pairing")
timed(carry, "carry_names", "carry")
timed(report, "build_report", "report")
timed(report, "changelog", "changelog")
from kbtool.cli import main
t = time.process_time()
rc = main(["--db", sys.argv[1], "ingest", *sys.argv[2:]])
spent["total"] = time.process_time() - t
spent["report"] = spent.get("report", 0.0) - spent.get("changelog", 0.0)
print(json.dumps({"rc": rc, **spent}), file=sys.stderr)
"""


_PARTS = ("matcher", "pairing", "carry", "report", "changelog")


def _env(root: Path) -> dict[str, str]:
    return {
        **os.environ,
        **NO_WARM,
        "COLUMNS": "1000",
        "PYTHONPATH": os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH")) if p),
    }


def first_kb(root: Path, first: Path, tmp: Path) -> Path:
    """A KB holding only ``first``, ingested by the checkout at ``root``."""
    db = tmp / f"first-{abs(hash((str(root), str(first))))}.db"
    if not db.exists():
        cmd = [sys.executable, "-m", "kbtool", "--db", str(db), "ingest", str(first.resolve())]
        _run(cmd, _env(root), root)
    return db


def _label(later: Path) -> list[str]:
    """The later release's ingest arguments: its own label (releases share a file name)."""
    return ["--label", f"later-{later.stem}", str(later.resolve())]


def later_ingest(
    root: Path, kb: Path, later: Path, tmp: Path, name: str = "run.db"
) -> dict[str, float]:
    """Wall, CPU and peak RSS of ``kbtool --db COPY ingest LATER`` (a copy of ``kb`` named
    ``name`` under ``tmp``, left there)."""
    copy = tmp / name
    for suffix in ("", "-wal", "-shm"):
        Path(str(copy) + suffix).unlink(missing_ok=True)
    shutil.copyfile(kb, copy)
    cmd = [sys.executable, "-m", "kbtool", "--db", str(copy), "ingest", *_label(later)]
    wall, cpu, rss, _out = _run(cmd, _env(root), root)
    return {"wall": wall, "cpu": cpu, "rss": rss}


def stage_split(root: Path, kb: Path, later: Path, tmp: Path) -> dict[str, float]:
    """CPU seconds of the ingest's stages, in process (see the module docstring)."""
    copy = tmp / "stages.db"
    for suffix in ("", "-wal", "-shm"):
        Path(str(copy) + suffix).unlink(missing_ok=True)
    shutil.copyfile(kb, copy)
    proc = subprocess.run(
        [sys.executable, "-c", _STAGES_DRIVER, str(copy), *_label(later)],
        env=_env(root),
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(proc.stderr.strip().splitlines()[-1])


def _load() -> str:
    return "load {:.1f} {:.1f} {:.1f}".format(*os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pair", choices=[*PAIRS, "all"], default="ffmpeg")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--baseline", type=Path, help="a worktree to compare with (before)")
    ap.add_argument("--stages", action="store_true", help="also the in-process stage split")
    ap.add_argument("--smoke", action="store_true", help="the bundled demo pair, one run")
    ap.add_argument(
        "--same-as",
        action="store_true",
        help="with --baseline: both KBs after the later ingest compared row by row",
    )
    args = ap.parse_args(argv)
    if args.same_as and args.baseline is None:
        ap.error("--same-as needs --baseline")
    if args.smoke:
        args.pair, args.repeat = "demo", 1
    pairs = [p for k, v in PAIRS.items() if args.pair in (k, "all") for p in v]
    missing = [str(f) for _, a, b in pairs for f in (a, b) if not f.is_file()]
    if missing:
        print(f"ingest_release: no such module: {missing[0]}", file=sys.stderr)
        return 2
    roots = [("after", ROOT)]
    if args.baseline is not None:
        if not (args.baseline / "kbtool").is_dir():
            print(f"ingest_release: not a kbtool checkout: {args.baseline}", file=sys.stderr)
            return 2
        roots.insert(0, ("before", args.baseline.resolve()))
    print(
        "ingest of a later release into a KB holding the earlier one (whole `kbtool ingest`"
        " process, no warm job); x = kbtool over `wasm-objdump -d` of the later release",
        flush=True,
    )
    same = True
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        for name, first, later in pairs:
            kbs = {label: first_kb(root, first, tmp) for label, root in roots}
            runs: dict[str, list[dict[str, float]]] = {label: [] for label, _ in roots}
            for _ in range(args.repeat):
                for label, root in roots:  # alternate: a load change hits both alike
                    runs[label].append(
                        later_ingest(root, kbs[label], later, tmp, f"run-{label}.db")
                    )
            o = objdump(later) or (float("nan"), float("nan"))
            on = objdump(later, True) or (float("nan"), float("nan"))
            for label, _root in roots:
                best = min(runs[label], key=lambda r: r["cpu"])
                print(
                    f"{name:32} {label:6} wall {best['wall']:6.2f} s  cpu {best['cpu']:6.2f} s"
                    f"  peak {best['rss']:5.0f} MiB | objdump -d wall {o[0]:5.2f} s cpu"
                    f" {o[1]:5.2f} s | x objdump cpu {best['cpu'] / o[1]:5.1f}"
                    f" | native objdump cpu {on[1]:5.2f} s x {_x(best['cpu'], on[1]):5.2f}"
                    f"  {_load()}",
                    flush=True,
                )
            if args.same_as:
                n, diff = compare(tmp / "run-before.db", tmp / "run-after.db")
                print(
                    f"{'':32} same as before: "
                    + (f"{n:,} rows identical" if diff is None else f"DIFFERENT: {diff}"),
                    flush=True,
                )
                same = same and diff is None
            if args.stages:
                for label, root in roots:
                    s = stage_split(root, kbs[label], later, tmp)
                    rest = s["total"] - sum(s.get(k, 0.0) for k in _PARTS)
                    print(
                        f"{'':32} {label:6} stages cpu: total {s['total']:.1f} s = "
                        + " + ".join(f"{k} {s.get(k, 0.0):.1f}" for k in _PARTS)
                        + f" + ingest proper {rest:.1f}",
                        flush=True,
                    )
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
