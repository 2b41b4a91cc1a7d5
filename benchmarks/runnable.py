"""Runnable C: lift WASI command programs to C, build them natively, run both builds.

For each stripped program of the corpus built by ``benchmarks/programs.py``
(~/.cache/kbtool-programs: zstd, lua, sqlite, brotli, lz4, libyaml with clang/zig/emcc):
ingest it into a temporary KB (``kbtool ingest``), write the runnable C
(``kbtool code 1 --all --runnable -o DIR``), build it (``make -C DIR``), then run a set
of inputs (arguments, stdin, files under a pre-opened directory) through the native
program and through wasmtime (the ``wasmtime`` package on PyPI, WASI preview 1, a trap
is exit status 134 as with ``wasmtime run``) and compare stdout and the exit status.

Run:
    python benchmarks/runnable.py                       # every program, clang/zig/emcc, -O2
    python benchmarks/runnable.py --opt O2 Os O3 --program lua sqlite --toolchain clang
    python benchmarks/runnable.py --smoke               # tests/fixtures/runnable/prog.c only
    python benchmarks/runnable.py --program sqlite --toolchain clang --keep /tmp/kb-keep
        # keeps each program's KB, C and build under /tmp/kb-keep/<program>-<toolchain>-<opt>/,
        # and for each differing run native.* and wasmtime.* (stdout, stderr) to diff

Reports per program: functions, lift seconds (``kbtool code --runnable``), gcc build
seconds, whether it builds, runs with identical stdout and exit status, stderr identical
too, and the summed run seconds of the native program and of wasmtime (module compiled
once, not counted). Goal: every program builds and 100 % of runs are identical.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "runnable" / "prog.c"
CORPUS = Path(os.environ.get("KBTOOL_PROGRAMS", Path.home() / ".cache" / "kbtool-programs"))
ARGV0 = "prog.wasm"
TRAP_EXIT = 134  # `wasmtime run` exits 128 + SIGABRT on a trap


@dataclass
class Case:
    """One run: arguments after argv[0], stdin, files for a pre-opened directory."""

    args: list[str]
    stdin: bytes = b""
    files: dict[str, bytes] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return " ".join(self.args)[:40] or "(no args)"


@dataclass
class Run:
    code: int
    stdout: bytes
    stderr: bytes
    seconds: float


LUA_SCRIPT = b"""
local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end
local t = {}
for i = 1, 50 do t[i] = string.format("%03d:%s", (i * 37) % 101, string.rep("x", i % 4)) end
table.sort(t)
local words = {}
for w in ("the quick brown fox jumps over the lazy dog"):gmatch("%a+") do
  words[#words + 1] = w:upper()
end
print(fib(20), t[1], t[#t], table.concat(words, "-"), 7 // 2, 7 / 2, 2 ^ 10, math.sqrt(2))
print(string.format("%5.2f|%-6s|%x|%q", math.pi, "ab", 255, "a\\nb"))
"""
LUA_ERROR = b'local x = nil\nprint("before")\nprint(x.field)\n'

INPUTS: dict[str, list[Case]] = {
    "prog": [
        Case(["numbers"], b"5 3 -1 10 7 42 -8\n"),
        Case(["numbers", "desc"], b"1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17\n"),
        Case(["numbers"], b""),
        Case(["args", "one", "two words", ""], env={"KB_GREETING": "hello"}),
        Case(
            ["file", "in.txt", "out.txt"], files={"in.txt": b"alpha beta\ngamma\n\tdelta epsilon\n"}
        ),
        Case(["file", "missing.txt"]),
        Case(["exit", "7"]),
        Case(["abort"]),
        Case(["oob"]),
        Case(["div", "x"]),
        Case(["nosuchmode"]),
    ],
    "zstd": [Case([]), Case(["1"]), Case(["9"]), Case(["19"])],
    "lua": [
        Case([]),
        Case(["main.lua"], files={"main.lua": LUA_SCRIPT}),
        Case(["err.lua"], files={"err.lua": LUA_ERROR}),
        Case(["missing.lua"]),
    ],
    "sqlite": [
        Case([]),
        Case(["SELECT 1 + 1, 'x' || 'y', 7 / 2.0, hex(zeroblob(3));"]),
        Case(
            [
                "CREATE TABLE t(a, b); INSERT INTO t VALUES (1, 'one'), (2, 'two'), (3, NULL);"
                " SELECT a, b, typeof(b) FROM t ORDER BY a DESC;"
            ]
        ),
        Case(
            [
                "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 2000)"
                " SELECT sum(x * x), avg(x), printf('%.3f', avg(x) / 7.0), count(*) FROM c;"
            ]
        ),
        Case(["SELECT * FROM nope;"]),
    ],
    "brotli": [Case([]), Case(["1"]), Case(["5"]), Case(["11"])],
    "lz4": [Case([]), Case(["1"]), Case(["12"])],
    "libyaml": [
        Case([]),
        Case(["a: [1, 2, {b: c}]\n"]),
        Case(["- x\n- y: &a 1\n- *a\n"]),
        Case(["bad: [\n"]),
    ],
}


# ---------------------------------------------------------------- the two ways to run


class WasmtimeRunner:
    """Runs a WASI command like ``wasmtime run`` with the wasmtime package (compiled once)."""

    def __init__(self, wasm: bytes) -> None:
        import wasmtime

        self.wt = wasmtime
        self.engine = wasmtime.Engine()
        t0 = time.perf_counter()
        self.module = wasmtime.Module(self.engine, wasm)
        self.compile_seconds = time.perf_counter() - t0

    def run(self, case: Case, workdir: Path | None = None, timeout: float = 120) -> Run:
        wt = self.wt
        with tempfile.TemporaryDirectory(prefix="kb-wt-") as td:
            tdp = Path(td)
            work = workdir or _files_dir(tdp / "dir", case)
            cfg = wt.WasiConfig()
            cfg.argv = [ARGV0, *case.args]
            (tdp / "in").write_bytes(case.stdin)
            cfg.stdin_file = str(tdp / "in")
            cfg.stdout_file = str(tdp / "out")
            cfg.stderr_file = str(tdp / "err")
            cfg.env = sorted(case.env.items())
            cfg.preopen_dir(str(work), ".")
            store = wt.Store(self.engine)
            store.set_wasi(cfg)
            linker = wt.Linker(self.engine)
            linker.define_wasi()
            _define_emscripten(wt, linker, store)
            t0 = time.perf_counter()
            code = 0
            err_extra = b""
            try:
                inst = linker.instantiate(store, self.module)
                inst.exports(store)["_start"](store)
            except wt.ExitTrap as exc:
                code = exc.code
            except wt.Trap as exc:
                code = TRAP_EXIT
                err_extra = f"Error: {exc}\n".encode()
            except wt.WasmtimeError as exc:
                code = TRAP_EXIT if "wasm trap" in str(exc) else 1
                err_extra = f"Error: {exc}\n".encode()
            secs = time.perf_counter() - t0
            return Run(
                code, (tdp / "out").read_bytes(), (tdp / "err").read_bytes() + err_extra, secs
            )


def _define_emscripten(wt, linker, store) -> None:
    """The two host functions Emscripten's STANDALONE_WASM builds import besides WASI, as a
    standalone host gives them (and as the runnable glue does): a no-op and -ENOSYS."""
    i32 = wt.ValType.i32()
    linker.allow_shadowing = True
    linker.define(
        store,
        "env",
        "emscripten_notify_memory_growth",
        wt.Func(store, wt.FuncType([i32], []), lambda n: None),
    )
    linker.define(
        store,
        "env",
        "__syscall_dup3",
        wt.Func(store, wt.FuncType([i32, i32, i32], [i32]), lambda a, b, c: -52),
    )


def run_native(program: Path, case: Case, workdir: Path | None = None, timeout: float = 120) -> Run:
    """Run the native build the same way (``--dir DIR::.``, ``--env``, argv[0])."""
    with tempfile.TemporaryDirectory(prefix="kb-nat-") as td:
        work = workdir or _files_dir(Path(td) / "dir", case)
        cmd = [str(program), "--argv0", ARGV0, "--dir", f"{work}::."]
        for k, v in sorted(case.env.items()):
            cmd += ["--env", f"{k}={v}"]
        cmd += ["--", *case.args]
        t0 = time.perf_counter()
        try:
            r = subprocess.run(cmd, input=case.stdin, capture_output=True, timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            return Run(-1, exc.stdout or b"", b"timeout", time.perf_counter() - t0)
        return Run(r.returncode, r.stdout, r.stderr, time.perf_counter() - t0)


def _files_dir(d: Path, case: Case) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    for name, data in case.files.items():
        (d / name).write_bytes(data)
    return d


# ---------------------------------------------------------------- one program


@dataclass
class Result:
    name: str
    toolchain: str
    opt: str
    functions: int = 0
    lift_s: float = 0.0
    build_s: float = 0.0
    built: bool = False
    runs: int = 0
    identical: int = 0
    stderr_identical: int = 0
    native_s: float = 0.0
    wasmtime_s: float = 0.0
    notes: list[str] = field(default_factory=list)


def kbtool(*args: str, timeout: float = 3600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "kbtool", *args], capture_output=True, text=True, timeout=timeout
    )


def lift_and_build(wasm: Path, work: Path, res: Result) -> Path | None:
    """Ingest ``wasm`` into a fresh KB, write the runnable C, build it; the program."""
    db = work / "kb.db"
    r = kbtool("--db", str(db), "ingest", str(wasm))
    if r.returncode:
        res.notes.append(f"ingest failed: {r.stderr.strip()[-300:]}")
        return None
    out = work / "c"
    t0 = time.perf_counter()
    r = kbtool("--db", str(db), "code", "1", "--all", "--runnable", "-o", str(out))
    res.lift_s = time.perf_counter() - t0
    if r.returncode:
        res.notes.append(f"lift failed: {r.stderr.strip()[-300:]}")
        return None
    words = r.stderr.split()
    if len(words) > 1 and words[1].isdigit():
        res.functions = int(words[1])
    t0 = time.perf_counter()
    b = subprocess.run(["make", "-s", "-C", str(out)], capture_output=True, text=True)
    res.build_s = time.perf_counter() - t0
    if b.returncode:
        lines = [ln for ln in b.stderr.splitlines() if "error" in ln or "undefined" in ln]
        res.notes.append("build failed: " + " | ".join(lines[:3])[:400])
        return None
    res.built = True
    return out / "program"


def _keep_diff(work: Path, k: int, case: Case, a: Run, b: Run) -> None:
    """Write run ``k``'s arguments and both sides' stdout and stderr under ``work/diff-k``."""
    d = work / f"diff-{k}"
    d.mkdir(exist_ok=True)
    (d / "args.json").write_text(json.dumps({"args": case.args, "env": case.env}) + "\n")
    for side, r in (("native", a), ("wasmtime", b)):
        (d / f"{side}.stdout").write_bytes(r.stdout)
        (d / f"{side}.stderr").write_bytes(r.stderr + f"\n[exit {r.code}]\n".encode())


def run_program(
    wasm: Path,
    name: str,
    toolchain: str,
    opt: str,
    cases: list[Case],
    verbose: bool = False,
    keep: Path | None = None,
) -> Result:
    res = Result(name, toolchain, opt)
    with tempfile.TemporaryDirectory(prefix="kb-runnable-") as td:
        work = Path(td)
        if keep is not None:
            work = keep / f"{name}-{toolchain}-{opt}"
            shutil.rmtree(work, ignore_errors=True)
            work.mkdir(parents=True)
        program = lift_and_build(wasm, work, res)
        if program is None:
            return res
        ref = WasmtimeRunner(wasm.read_bytes())
        for k, case in enumerate(cases):
            a = run_native(program, case)
            b = ref.run(case)
            res.runs += 1
            res.native_s += a.seconds
            res.wasmtime_s += b.seconds
            same = a.code == b.code and a.stdout == b.stdout
            res.identical += same
            res.stderr_identical += a.stderr == b.stderr
            if not same and keep is not None:
                _keep_diff(work, k, case, a, b)
            if not same:
                res.notes.append(
                    f"[{case.label}] native rc {a.code} vs wasmtime rc {b.code}"
                    + ("" if a.stdout == b.stdout else ", stdout differs")
                )
                if verbose:
                    print(
                        f"--- native stdout {a.stdout[:300]!r}\n--- native stderr {a.stderr[:300]!r}"
                        f"\n--- wasmtime stdout {b.stdout[:300]!r}\n--- wasmtime stderr "
                        f"{b.stderr[:300]!r}",
                        flush=True,
                    )
    return res


# ---------------------------------------------------------------- report


HEAD = (
    f"{'program':<34} {'funcs':>6} {'lift s':>7} {'gcc s':>7} {'build':>5} "
    f"{'identical':>10} {'stderr=':>7} {'native s':>9} {'wasmtime s':>10}"
)


def row(r: Result) -> str:
    label = f"{r.name} {r.toolchain} {r.opt}"
    runs = f"{r.identical}/{r.runs}"
    return (
        f"{label:<34} {r.functions:>6} {r.lift_s:>7.1f} {r.build_s:>7.1f} "
        f"{'ok' if r.built else 'FAIL':>5} {runs:>10} {r.stderr_identical:>7} "
        f"{r.native_s:>9.3f} {r.wasmtime_s:>10.3f}"
    )


def summary(results: list[Result]) -> str:
    built = sum(r.built for r in results)
    runs = sum(r.runs for r in results)
    same = sum(r.identical for r in results)
    pct = 100.0 * same / runs if runs else 0.0
    return (
        f"programs built: {built}/{len(results)}; runs identical (stdout + exit status): "
        f"{same}/{runs} ({pct:.1f}%)"
    )


def smoke_wasm(work: Path) -> Path | None:
    """The fixture compiled with clang for wasm32-wasi (None without a working toolchain)."""
    clang = shutil.which("clang")
    if clang is None:
        return None
    out = work / "prog.wasm"
    r = subprocess.run(
        [clang, "--target=wasm32-wasi", "--sysroot=/usr", "-O2", str(FIXTURE), "-o", str(out)],
        capture_output=True,
        text=True,
    )
    return out if r.returncode == 0 else None


def corpus_rows(programs: list[str] | None, toolchains: list[str], opts: list[str]) -> list[dict]:
    man = CORPUS / "MANIFEST.json"
    if not man.exists():
        return []
    rows = json.loads(man.read_text())["modules"]
    seen: set[str] = set()
    out = []
    for m in rows:
        if m["role"] != "stripped" or m["toolchain"] not in toolchains or m["opt"] not in opts:
            continue
        if programs and m["program"] not in programs:
            continue
        if m["sha256"] in seen:  # zig builds O2 and O3 the same
            continue
        seen.add(m["sha256"])
        out.append(m)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--smoke", action="store_true", help="the fixture program only")
    ap.add_argument("--program", nargs="*", help="programs (default: all)")
    ap.add_argument("--toolchain", nargs="*", default=["clang", "zig", "emcc"])
    ap.add_argument("--opt", nargs="*", default=["O2"])
    ap.add_argument("--verbose", action="store_true", help="show differing outputs")
    ap.add_argument("--json", type=Path, help="write the results here too")
    ap.add_argument(
        "--keep", type=Path, metavar="DIR", help="keep each program's KB, C and differing runs"
    )
    args = ap.parse_args(argv)
    try:
        import wasmtime  # noqa: F401
    except ImportError:
        print("needs the wasmtime package (pip install wasmtime)")
        return 2
    results: list[Result] = []
    print(HEAD, flush=True)
    with tempfile.TemporaryDirectory(prefix="kb-runnable-fixture-") as td:
        wasm = smoke_wasm(Path(td))
        if wasm is None:
            print("prog: skipped (no clang with wasi-libc and compiler-rt for wasm32)")
        else:
            r = run_program(wasm, "prog", "clang", "O2", INPUTS["prog"], args.verbose, args.keep)
            results.append(r)
            print(row(r), flush=True)
    if not args.smoke:
        for m in corpus_rows(args.program, args.toolchain, args.opt):
            r = run_program(
                CORPUS / m["file"],
                f"{m['program']}-{m['version']}",
                m["toolchain"],
                m["opt"],
                INPUTS.get(m["program"], [Case([])]),
                args.verbose,
                args.keep,
            )
            results.append(r)
            print(row(r), flush=True)
    print(summary(results))
    for r in results:
        for n in r.notes:
            print(f"  {r.name} {r.toolchain} {r.opt}: {n}")
    if args.json:
        args.json.write_text(json.dumps([r.__dict__ for r in results], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
