"""Lifter benchmark: kbtool.lift next to ``wasm-decompile`` (wabt) on the same modules.

    python benchmarks/lift.py [FILE ...] [--workers N] [--no-gcc] [--latency FILE] [--buckets]
    python benchmarks/lift.py --smoke
    python benchmarks/lift.py --no-gcc --compiled-only FILE   # the compiled lift alone

Default FILEs: every ``.wasm`` of ../shared/corpus (gt/ and release/). Per module, in one
run, side by side: share of functions whose lifted C passes ``gcc -fsyntax-only -include
prelude.h``; for kbtool (whole-module lift, ``--workers`` processes, default every usable
core) and wasm-decompile: wall time, CPU time (user + system of the tool and its worker
processes: the steadier figure on a shared machine; the measured process lifts and writes
the C only, the metrics below are computed afterwards from its output, as wasm-decompile's
are), peak RSS (the largest process), total
lines, body lines, gotos, labels, max brace nesting and the median body lines per function.
Then single-function on-demand latency (median / p95 / worst of ``lift_function`` after one
``prepare``, wall and CPU) on ``--latency`` (default: lightningcss).
``--buckets`` adds, per module and function size bucket (< 50, 50-500, > 500 instructions),
gotos, labels, body lines, maximum brace nesting, casts per 100 body lines and infinite
loops (C ``while (1)`` / wasm-decompile ``loop L {``) for both tools over the same functions
(casts: C ``(type)``/``(type *)``; wasm-decompile ``]:type`` accesses, conversion calls and
``as``; ``mem/100``: those of raw memory accesses alone, C ``*(int32_t *)(M + ...)``,
wasm-decompile ``p[2]:int``), and the share of shadow-stack frame accesses (constant offset from the frame
base inside its region) the C shows as named slots (``frame->local_0c``). ``--listing`` adds the whole-module disassembly (``kbtool code --all --wasm``) next to
``wasm-objdump -d`` (wall, CPU, peak RSS, lines). ``--smoke`` runs everything on the small
.wat fixture (needs wat2wasm).
Lifter path: rows read ``kbtool.lift/compiled`` (the mypyc build, ``python -m
kbtool.lift.accel build``) and then ``kbtool.lift/pure`` when the compiled lifter is built
(and ``KBTOOL_LIFT`` is not ``pure``), else ``kbtool.lift/pure`` alone; latency likewise.

How lines are counted (the same rule for both tools): ``lines`` is every line of the
whole-module output; ``body ln`` counts, per function, the lines strictly between the line
that opens the definition (``int32_t f(...) {`` / ``function f(...) {``) and its closing
``}`` at column 0, so local declarations (``int32_t l1 = 0, ...;`` / ``var a:int;``) count
and headers, prototypes and ``extern`` declarations outside the body do not. No line is
joined or split for the count: it is the text the tool prints.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kbtool.lift import (  # noqa: E402
    active,
    disassemble_module,
    lift_module,
    prelude_path,
    prepare,
)
from kbtool.render.disasm import render_listing  # noqa: E402

DECOMPILE = shutil.which("wasm-decompile") or "/usr/bin/wasm-decompile"
_COMMENT = re.compile(r"/\*.*?\*/")
_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')


def _corpus() -> list[Path]:
    for p in (ROOT.parent / "shared" / "corpus", Path("/work/shared/corpus")):
        if p.is_dir():
            return sorted(p.rglob("*.wasm"), key=lambda q: q.stat().st_size)
    raise SystemExit("corpus not found; pass FILE")


# Runs the measured command as its grandchild and reports that process's own rusage. A
# child forked straight from this (by now large) benchmark process would inherit its RSS
# high-water mark through fork + exec (Linux keeps it in signal->maxrss), so every peak
# after the first module would read at least this process's size. The launcher is small
# and its fresh child starts from the launcher's mark, not ours.
_LAUNCHER = """
import os, sys, time
t = time.perf_counter()
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[2], sys.argv[2:])
_, status, ru = os.wait4(pid, 0)
wall = time.perf_counter() - t
os.write(int(sys.argv[1]), f"{wall} {ru.ru_utime + ru.ru_stime} {ru.ru_maxrss}".encode())
sys.exit(os.waitstatus_to_exitcode(status))
"""


def _run_measured(
    cmd: list[str], stdout, env: dict | None = None
) -> tuple[float, float, float, int]:
    """Wall seconds (fork to exit), CPU seconds (user + system), peak RSS (MB) and exit
    status, for the command and its waited-for children (kbtool's worker processes). On a shared machine the
    CPU time is the steadier figure: wall time depends on what else runs."""
    rfd, wfd = os.pipe()
    proc = subprocess.Popen(
        [sys.executable, "-c", _LAUNCHER, str(wfd), *cmd],
        stdout=stdout,
        stderr=subprocess.DEVNULL,
        env=env,
        pass_fds=(wfd,),
    )
    os.close(wfd)
    proc.wait()
    with os.fdopen(rfd, "rb") as fh:
        report = fh.read().split()
    if len(report) != 3:
        raise RuntimeError(f"measuring {cmd[0]} failed (exit {proc.returncode})")
    wall, cpu, maxrss = (float(x) for x in report)
    return wall, cpu, maxrss / 1024, proc.returncode


def _brace_depth(lines: list[str]) -> int:
    depth = best = 0
    for line in lines:
        s = _STRING.sub('""', _COMMENT.sub("", line))
        for ch in s:
            if ch == "{":
                depth += 1
                best = max(best, depth)
            elif ch == "}":
                depth -= 1
    return best


BUCKETS: tuple[tuple[str, int, int], ...] = (
    ("< 50", 0, 50),
    ("50-500", 50, 501),
    ("> 500", 501, 1 << 62),
)
_C_CAST = re.compile(
    r"\((?:const )?(?:u?int(?:8|16|32|64)_t|float|double|bool|_Bool|char|void|uintptr_t)"
    r"(?: \*+)?\)"
)
#: the cast of a raw memory access, `*(int32_t *)(M + p + 8)`; wasm-decompile's `p[2]:int`
_C_MEMCAST = re.compile(r"\((?:const )?(?:u?int(?:8|16|32|64)_t|float|double|v128) \*\)\(M\b")
_D_MEMCAST = re.compile(r"\]:\w+")
_C_LABEL = re.compile(r"^\s*(?!default\b)[A-Za-z_]\w*:;?\s*$")
_D_LABEL = re.compile(r"^\s*label \w+:")
_D_CAST = re.compile(
    r"\]:\w+|\b[if](?:32|64)_(?:convert|trunc|extend|wrap|demote|promote|reinterpret)\w*\("
    r"|\bas\b"
)


def _body_metrics(
    body: list[str], cast: re.Pattern, label: re.Pattern, inf: re.Pattern, mem: re.Pattern
) -> dict:
    """gotos, labels, body lines, max brace nesting, casts (all, and those of memory
    accesses) and infinite loops of one body."""
    return {
        "gotos": sum(len(re.findall(r"\bgoto\b", ln)) for ln in body),
        "labels": sum(1 for ln in body if label.match(ln)),
        "lines": len(body),
        "depth": _brace_depth(body),
        "casts": sum(len(cast.findall(_STRING.sub('""', ln))) for ln in body),
        "mcasts": sum(len(mem.findall(_STRING.sub('""', ln))) for ln in body),
        "inf": sum(len(inf.findall(ln)) for ln in body),
    }


def _c_function_metrics(text: str) -> dict:
    """Metrics of one lifted function's body (the lines between its definition's braces)."""
    lines = text.splitlines()
    start = next((k for k, ln in enumerate(lines) if ln.endswith(") {") and ln[:1] != " "), None)
    # up to the closing `}` at column 0 (the `#undef` lines of its macros follow it)
    end = max((k for k, ln in enumerate(lines) if ln == "}"), default=len(lines) - 1)
    body = lines[start + 1 : end] if start is not None else []
    m = _body_metrics(
        body, _C_CAST, _C_LABEL, re.compile(r"\bwhile \(1\)|\bfor \(;;\)"), _C_MEMCAST
    )
    m["tramp"] = sum(1 for ln in body if _TRAMPOLINE.match(ln))
    return m


#: a switch case that only jumps elsewhere: `case 3: case 4: goto L7;` (issue 28 point 2)
_TRAMPOLINE = re.compile(r"^\s*(?:(?:case -?\d+|default): )+goto L\d+;\s*$")


def _decompile_functions(text: str) -> list[dict]:
    """Per-function metrics of wasm-decompile's output, in function order."""
    out, cur = [], None
    for ln in text.splitlines():
        if re.match(r"^(export )?function ", ln):
            cur = []
        elif cur is not None:
            if ln == "}":
                loop = re.compile(r"^\s*loop \w+ \{")
                out.append(_body_metrics(cur, _D_CAST, _D_LABEL, loop, _D_MEMCAST))
                cur = None
            else:
                cur.append(ln)
    return out


def bucket_table(per: list, theirs: list[dict] | None) -> list[str]:
    """Rows per function size bucket (instructions): kbtool next to wasm-decompile, over
    the functions both rendered (kbtool's placeholders are left out of both sides)."""
    keys = ("gotos", "labels", "lines", "depth", "casts", "mcasts", "inf")
    rows = [
        f"  {'bucket':<8} {'tool':<15} {'funcs':>6} {'gotos':>7} {'labels':>7} {'body ln':>9} "
        f"{'depth':>6} {'casts/100':>9} {'mem/100':>8} {'while(1)':>9}"
    ]
    paired = theirs is not None and len(theirs) == len(per)
    for name, lo, hi in BUCKETS:
        idx = [k for k, (n, trunc, _m) in enumerate(per) if not trunc and lo <= n < hi]
        sides = [("kbtool", [per[k][2] for k in idx])]
        if paired:
            assert theirs is not None
            sides.append(("wasm-decompile", [theirs[k] for k in idx]))
        for tool, ms in sides:
            tot = {k: sum(m[k] for m in ms) for k in keys}
            depth = max((m["depth"] for m in ms), default=0)
            per100 = 100.0 * tot["casts"] / tot["lines"] if tot["lines"] else 0.0
            mem100 = 100.0 * tot["mcasts"] / tot["lines"] if tot["lines"] else 0.0
            rows.append(
                f"  {name:<8} {tool:<15} {len(ms):6d} {tot['gotos']:7d} {tot['labels']:7d} "
                f"{tot['lines']:9d} {depth:6d} {per100:9.1f} {mem100:8.1f} {tot['inf']:9d}"
            )
    if not paired and theirs is not None:
        rows.append(f"  (wasm-decompile printed {len(theirs)} functions, kbtool {len(per)})")
    return rows


def _ours_child(path: str, workers: int, out: str) -> None:
    """Child process: lift the whole module, write the C and print stats as JSON (the
    per-function metrics are the parent's work, outside the measured process, as for
    wasm-decompile: :func:`_per_function`)."""
    t0 = time.perf_counter()
    data = Path(path).read_bytes()
    lm = prepare(data)
    bodies, starts, stats = [], [], []
    per: list = []  # defined functions in index order: (instructions, truncated, metrics)
    line = 1
    with open(out, "w") as fh:
        for r in lift_module(lm, workers=workers or None):
            starts.append((line, r.func_index))
            fh.write(r.text)
            line += r.text.count("\n")
            st = r.stats
            stats.append((st.gotos, st.labels, r.truncated, st.frame_slots, st.frame_named))
            bodies.append(st.body_lines)
            if st.instructions or r.truncated:
                per.append((st.instructions, r.truncated, len(starts) - 1))
    lift_s = time.perf_counter() - t0
    print(
        json.dumps(
            {"starts": starts, "bodies": bodies, "stats": stats, "lift_s": lift_s, "per": per}
        )
    )


def _per_function(text: str, starts: list, per: list) -> list:
    """``per`` of :func:`_ours_child` with each function's metrics (its lines of ``text``,
    the whole-module C, from its start line to the next function's)."""
    lines = text.split("\n")
    bounds = [s[0] - 1 for s in starts] + [len(lines)]
    out = []
    for n, trunc, k in per:
        body = "\n".join(lines[bounds[k] : bounds[k + 1]]) + "\n"
        out.append((n, trunc, _c_function_metrics(body)))
    return out


def _listing_child(path: str, workers: int, out: str) -> None:
    """Child process: write the whole module's disassembly (``kbtool code --all --wasm``)."""
    lm = prepare(Path(path).read_bytes())
    with open(out, "w") as fh:
        for text in disassemble_module(lm, workers=workers or None, render=render_listing):
            fh.write(text)


def bench_listing(path: Path, workers: int) -> list[str]:
    """Rows: the whole-module listing, kbtool next to ``wasm-objdump -d`` (wall, CPU, peak,
    lines), each written to a file."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.dis"
        cmds = [
            (
                "kbtool listing",
                [
                    sys.executable,
                    __file__,
                    "--_listing",
                    str(path),
                    "--workers",
                    str(workers),
                    "--out",
                    str(out),
                ],
                None,
            ),
        ]
        objdump = shutil.which("wasm-objdump")
        if objdump:
            cmds.append(("wasm-objdump -d", [objdump, "-d", str(path)], out))
        for name, cmd, stdout_to in cmds:
            if stdout_to is not None:
                with open(stdout_to, "w") as fh:
                    wall, cpu, rss, rc = _run_measured(cmd, fh)
            else:
                with open(os.devnull, "w") as fh:
                    wall, cpu, rss, rc = _run_measured(cmd, fh)
            if rc != 0:
                rows.append(f"  {name:<20} failed (exit {rc})")
                continue
            with open(out, "rb") as fh:
                lines = sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 20), b""))
            rows.append(f"  {name:<20} {wall:8.2f} {cpu:8.2f} {rss:8.0f} {lines:11d}")
        if not objdump:
            rows.append(f"  {'wasm-objdump -d':<20} (not available)")
    return rows


def _decompile_metrics(text: str) -> dict:
    lines = text.splitlines()
    bodies, cur = [], None
    for ln in lines:
        if re.match(r"^(export )?function ", ln):
            cur = 0
        elif cur is not None:
            if ln == "}":
                bodies.append(cur)
                cur = None
            else:
                cur += 1
    return {
        "lines": len(lines),
        "body_lines": sum(bodies),
        "funcs": len(bodies),
        "gotos": sum(len(re.findall(r"\bgoto\b", ln)) for ln in lines),
        "labels": sum(1 for ln in lines if re.match(r"^\s*label \w+:", ln)),
        "depth": _brace_depth(lines),
        "median": statistics.median(bodies) if bodies else 0,
    }


def _gcc_share(c_path: Path, starts: list[tuple[int, int]], n_lines: int) -> tuple[int, int]:
    """(functions passing, total): one gcc per chunk, errors mapped to functions by line."""
    text = c_path.read_text().splitlines(keepends=True)
    failing: set[int] = set()
    bounds = [s for s, _ in starts] + [n_lines + 1]
    chunk = 3000
    for a in range(0, len(starts), chunk):
        lo, hi = bounds[a], bounds[min(a + chunk, len(starts))]
        with tempfile.NamedTemporaryFile("w", suffix=".c", delete=False) as fh:
            fh.write("".join(text[lo - 1 : hi - 1]))
            name = fh.name
        p = subprocess.run(
            ["nice", "gcc", "-fsyntax-only", "-fwrapv", "-w", "-include", prelude_path(), name],
            capture_output=True,
            text=True,
        )
        os.unlink(name)
        for m in re.finditer(r":(\d+):\d+: error:", p.stderr):
            ln = int(m.group(1)) + lo - 1
            k = max(j for j in range(a, min(a + chunk, len(starts))) if starts[j][0] <= ln)
            failing.add(starts[k][1])
    return len(starts) - len(failing), len(starts)


def lifter_paths() -> list[str]:
    """The lifter paths to measure: the one ``kbtool.lift`` uses first, then the pure one
    too when the mypyc-compiled lifter is built (``python -m kbtool.lift.accel build``)."""
    if active.PATH == "compiled":
        return ["compiled", "pure"]
    return ["pure"]


def bench_module(
    path: Path, workers: int, gcc: bool, decompile: bool, lifter: str = "pure"
) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        c_path = Path(tmp) / "out.c"
        env = {**os.environ, active.ENV: lifter}
        with open(Path(tmp) / "stats.json", "w") as fh:
            wall, cpu, rss, rc = _run_measured(
                [
                    sys.executable,
                    __file__,
                    "--_ours",
                    str(path),
                    "--workers",
                    str(workers),
                    "--out",
                    str(c_path),
                ],
                fh,
                env,
            )
        if rc != 0:
            raise SystemExit(f"lift failed on {path}")
        info = json.loads((Path(tmp) / "stats.json").read_text())
        c_text = c_path.read_text()
        lines = c_text.splitlines()
        ours = {
            "time": wall,
            "cpu": cpu,
            "rss": rss,
            "lines": len(lines),
            "body_lines": sum(info["bodies"]),
            "gotos": sum(s[0] for s in info["stats"]),
            "labels": sum(s[1] for s in info["stats"]),
            "truncated": sum(1 for s in info["stats"] if s[2]),
            "frame_slots": sum(s[3] for s in info["stats"]),
            "frame_named": sum(s[4] for s in info["stats"]),
            "frame_funcs": sum(1 for s in info["stats"] if s[3]),
            "depth": _brace_depth(lines),
            "funcs": len(info["bodies"]),
            "median": statistics.median(info["bodies"]) if info["bodies"] else 0,
            "lift_s": info["lift_s"],
            "per": _per_function(c_text, info["starts"], info["per"]),
        }
        if gcc:
            ok, n = _gcc_share(c_path, [tuple(s) for s in info["starts"]], len(lines))
            ours["valid"] = 100.0 * ok / n if n else 100.0
        theirs = None
        if decompile and Path(DECOMPILE).exists():
            d_path = Path(tmp) / "out.dcmp"
            with open(d_path, "w") as fh:
                wall, cpu, rss, rc = _run_measured([DECOMPILE, "--enable-all", str(path)], fh)
            if rc == 0:
                dtext = d_path.read_text()
                theirs = {
                    "time": wall,
                    "cpu": cpu,
                    "rss": rss,
                    **_decompile_metrics(dtext),
                    "per": _decompile_functions(dtext),
                }
    return {"module": path.name, "ours": ours, "theirs": theirs}


def python_start() -> float:
    """Wall seconds of ``python -c pass`` through the same launcher (best of 5): the fixed
    cost every kbtool process pays before its first import, which wasm-decompile does not."""
    best = float("inf")
    for _ in range(5):
        with open(os.devnull, "w") as fh:
            wall, _cpu, _rss, _rc = _run_measured([sys.executable, "-c", "pass"], fh)
        best = min(best, wall)
    return best


def _row(name: str, d: dict | None, valid: str) -> str:
    if d is None:
        return f"  {name:<20} (not available)"
    return (
        f"  {name:<20} {valid:>6} {d['time']:8.2f} {d['cpu']:8.2f} {d['rss']:8.0f} {d['lines']:9d} "
        f"{d['body_lines']:9d} {d['gotos']:7d} {d['labels']:7d} {d['depth']:6d} "
        f"{d['median']:7.1f}"
    )


def latency(path: Path, samples: int, lifter: str = "pure") -> str:
    mod = active.load_compiled() if lifter == "compiled" else active.load_pure()
    assert mod is not None
    lift_function = mod.lift_function
    data = path.read_bytes()
    t = time.perf_counter()
    lm = prepare(data)
    prep = time.perf_counter() - t
    m = lm.module
    defined = list(range(m.num_func_imports, m.num_functions))
    rng = random.Random(7)
    by_size = sorted(
        defined, key=lambda i: m.code[i - m.num_func_imports][1] - m.code[i - m.num_func_imports][0]
    )
    pick = rng.sample(defined, min(samples, len(defined))) + by_size[-5:]
    times, cpus, trunc = [], [], 0
    for fi in pick:
        t = time.perf_counter()
        c = time.process_time()
        r = lift_function(lm, fi)
        times.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
        trunc += r.truncated
    cpus.sort()
    times.sort()
    p95 = times[int(0.95 * (len(times) - 1))]
    return (
        f"on-demand lift_function ({lifter}) on {path.name}: prepare {prep * 1000:.0f} ms once; "
        f"{len(pick)} functions ({samples} random + 5 largest): median "
        f"{statistics.median(times) * 1000:.1f} ms, p95 {p95 * 1000:.1f} ms, worst "
        f"{times[-1] * 1000:.0f} ms (CPU: median {statistics.median(cpus) * 1000:.1f} ms, worst "
        f"{cpus[-1] * 1000:.0f} ms), truncated {trunc}"
    )


def _smoke_module(tmp: Path) -> Path:
    out = tmp / "features.wasm"
    subprocess.run(
        [
            "wat2wasm",
            "--enable-all",
            "--debug-names",
            str(ROOT / "tests" / "fixtures" / "lift" / "features.wat"),
            "-o",
            str(out),
        ],
        check=True,
    )
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*", type=Path)
    ap.add_argument(
        "--workers", type=int, default=0, help="lift processes (default 0: every usable core)"
    )
    ap.add_argument("--no-gcc", action="store_true")
    ap.add_argument("--no-decompile", action="store_true")
    ap.add_argument("--latency", type=Path, default=None)
    ap.add_argument("--samples", type=int, default=300)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument(
        "--compiled-only",
        action="store_true",
        help="measure the compiled lifter alone (no pure rows, no latency)",
    )
    ap.add_argument(
        "--listing",
        action="store_true",
        help="also the whole-module disassembly next to wasm-objdump -d",
    )
    ap.add_argument(
        "--buckets",
        action="store_true",
        help="per function size bucket (< 50, 50-500, > 500 instructions): gotos, labels, body "
        "lines, max nesting, casts per 100 lines, while (1) loops, next to wasm-decompile",
    )
    ap.add_argument("--_listing", help=argparse.SUPPRESS)
    ap.add_argument("--_ours", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a._ours:
        _ours_child(a._ours, a.workers, a.out)
        return
    if a._listing:
        _listing_child(a._listing, a.workers, a.out)
        return
    # byte-compile kbtool as an installed package is, so that no child pays for compiling a
    # source changed since (PYTHONDONTWRITEBYTECODE=1 would otherwise make it pay every time)
    import compileall

    compileall.compile_dir(str(ROOT / "kbtool"), quiet=1)
    with tempfile.TemporaryDirectory() as tmp:
        if a.smoke:
            files = [_smoke_module(Path(tmp))]
            lat = files[0]
        else:
            files = a.files or _corpus()
            lat = a.latency or next((f for f in files if "lightningcss" in f.name), files[-1])
        paths = lifter_paths()[:1] if a.compiled_only else lifter_paths()
        note = (
            "pure also measured"
            if len(paths) > 1
            else "--compiled-only"
            if a.compiled_only
            else "the compiled one is not built: python -m kbtool.lift.accel build"
        )
        print(f"lifter path: {paths[0]} ({note})")
        print(
            f"python start (python -c pass, nothing imported or lifted): {python_start():.3f} s;"
            " 'lift s' below: read + prepare + lift + write inside the kbtool process"
        )
        print(
            f"{'':2}{'tool':<20} {'gcc%':>6} {'wall s':>8} {'cpu s':>8} {'peak MB':>8} {'lines':>9} "
            f"{'body ln':>9} {'gotos':>7} {'labels':>7} {'depth':>6} {'med/fn':>7}"
        )
        for f in files:
            r = bench_module(f, a.workers, not a.no_gcc, not a.no_decompile, paths[0])
            o = r["ours"]
            print(f"{r['module']}  ({o['funcs']} functions, {o['truncated']} placeholders)")
            valid = f"{o['valid']:.1f}" if "valid" in o else "-"
            print(_row(f"kbtool.lift/{paths[0]}", o, valid) + f"   lift s {o['lift_s']:.2f}")
            for other in paths[1:]:
                o2 = bench_module(f, a.workers, False, False, other)["ours"]
                print(_row(f"kbtool.lift/{other}", o2, "-") + f"   lift s {o2['lift_s']:.2f}")
            print(_row("wasm-decompile", r["theirs"], "-"))
            if a.buckets or a.smoke:
                th = r["theirs"]
                for row in bucket_table(o["per"], th["per"] if th else None):
                    print(row)
                tramp = sum(m.get("tramp", 0) for _n, _t, m in o["per"])
                print(f"  switch trampolines (`case N: goto L;` lines): {tramp}")
                fs, fn = o["frame_slots"], o["frame_named"]
                print(
                    f"  frame slots: {fn} of {fs} shadow-stack frame accesses named "
                    f"({100.0 * fn / fs if fs else 100.0:.1f} %) in {o['frame_funcs']} functions"
                )
            sys.stdout.flush()
        if a.listing or a.smoke:
            print("whole-module disassembly (kbtool code --all --wasm) next to wasm-objdump -d")
            print(f"{'':2}{'tool':<20} {'wall s':>8} {'cpu s':>8} {'peak MB':>8} {'lines':>11}")
            for f in files:
                print(f.name)
                for row in bench_listing(f, a.workers):
                    print(row)
                sys.stdout.flush()
        for p in [] if a.compiled_only else paths:
            print(latency(lat, 20 if a.smoke else a.samples, p))


if __name__ == "__main__":
    main()
