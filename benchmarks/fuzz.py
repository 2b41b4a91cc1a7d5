"""Fuzz harness for the wasm, lift and analysis layers (issue 11).

Inputs: mutations of seed modules (byte flips, bit flips, truncation, insertion, deletion,
LEB growth) where the seeds are the wat fixtures, the crafted cases of
:mod:`benchmarks.crafted` and corpus modules; ``wasm-tools smith`` modules with every
feature it offers; and the crafted cases themselves.

Each input is decoded in a worker subprocess under ``RLIMIT_AS`` (``--mem-mb``) with a
per-input timeout. A failure is: any exception other than WasmFormatError, a multi-line
error message, a hang, the memory bound, the fast and the careful decoder disagreeing
(one accepts a body the other rejects, or they count different instructions), or, for
modules ``wasm-tools dump`` parses, a per-function instruction count different from its.
Valid modules (``wasm-tools validate --features all``) that kbtool rejects are counted and
listed by error (acceptable only when the error names an unsupported proposal).

``--layers wasm,lift,analysis`` (default all): every input the decoder accepts is also
lifted (``kbtool.lift.prepare``, ``lift_function`` with the default budgets on up to
``--max-funcs`` defined functions, ``disassemble_function``, and the IndexError contract
for out-of-range indices) and analysed (``analyze_module_static`` and ``build_callgraph``).
A failure there is an exception escaping, a hang, the memory bound, or a stub whose reason
is ``internal error`` (a lifter defect the lifter caught). For valid modules the C of the
sampled functions is compiled with ``gcc -fsyntax-only -fwrapv -w -include prelude.h``
(``--gcc-modules`` of them) and, when the compiled lifter is built, its text must equal the
pure lifter's. Besides the whole-module mutations, ``--body-mutations`` overwrite bytes
inside function bodies (sizes kept), which the decoder mostly accepts: ill-typed code.

``--cli-cases`` (:mod:`benchmarks.fuzz_cli`: output paths, signals, huge inputs) and
``--provider-cases`` (:mod:`benchmarks.fuzz_provider`: hostile provider endpoints) run the
CLI in real subprocesses after the decoder cases.

    nice python -m benchmarks.fuzz --mutations 20000 --smith 1000       # the full run
    python -m benchmarks.fuzz --smoke                                   # seconds
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import select
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # `python benchmarks/fuzz.py` as well as `python -m benchmarks.fuzz`
    sys.path.insert(0, str(ROOT))
FIXTURES = ROOT / "tests" / "fixtures"
CORPUS = Path("/work/shared/corpus")
SMITH_FLAGS = [
    f"--{f}-enabled"
    for f in (
        "bulk-memory",
        "compact-imports",
        "custom-page-sizes",
        "exceptions",
        "extended-const",
        "gc",
        "memory64",
        "multi-value",
        "reference-types",
        "relaxed-simd",
        "saturating-float-to-int",
        "shared-everything-threads",
        "sign-extension-ops",
        "simd",
        "tail-call",
        "threads",
        "wide-arithmetic",
        "custom-descriptors",
    )
]
REFERENCE_MAX_BYTES = 256 * 1024  # larger inputs are not dumped by the reference tool
LAYERS = ("wasm", "lift", "analysis")
C_SAMPLE_CHARS = 60_000  # C per module handed to the compile check
UNSUPPORTED = re.compile(r"not supported")


# ----------------------------------------------------------------------------- worker


def _sample(first: int, end: int, limit: int) -> list[int]:
    """Up to ``limit`` function indices of ``range(first, end)``, evenly spread."""
    n = end - first
    if n <= limit:
        return list(range(first, end))
    return [first + (k * n) // limit for k in range(limit)]


def _lift_layer(data: bytes, a, max_funcs: int) -> dict:
    """Lift (pure, and compiled when built) and disassemble a sample of defined functions.

    Returns ``{"lifted", "internal"?, "mismatch"?, "c"}``: ``internal`` is the first stub
    whose reason is a caught lifter defect (``internal error ...``), ``mismatch`` the first
    function whose compiled text differs from the pure one, ``c`` the concatenated C of the
    first functions (bounded) for the compile check. Exceptions escape to the caller."""
    from kbtool.lift import disassemble_function, prepare
    from kbtool.lift.active import load_compiled, load_pure
    from kbtool.wasm import WasmFormatError

    pure = load_pure()
    comp = load_compiled()
    lm = prepare(data)
    m = lm.module
    out: dict = {"lifted": 0, "disasm_rejects": 0}
    parts: list[str] = []
    size = 0
    for fi in _sample(m.num_func_imports, m.num_functions, max_funcs):
        r = pure.lift_function(lm, fi)
        out["lifted"] += 1
        if r.truncated and "internal" not in out and "not lifted: internal error" in r.text:
            out["internal"] = f"function {fi}: {r.reason}"
        if comp is not None:
            try:
                r2 = comp.lift_function(lm, fi)
            except Exception as e:  # noqa: BLE001 - reported as a difference
                r2 = None
                diff = f"compiled raised {type(e).__name__}: {e}"
            else:
                diff = "" if r2.text == r.text else "texts differ"
            if diff and "mismatch" not in out:
                out["mismatch"] = f"function {fi}: {diff}"
        if size < C_SAMPLE_CHARS:
            parts.append(r.text)
            size += len(r.text)
        try:
            disassemble_function(lm, fi)
        except WasmFormatError:
            out["disasm_rejects"] += 1  # allowed by contract, but the decoder accepted it
    for bad in (-1, m.num_functions):
        try:
            pure.lift_function(lm, bad)
        except IndexError:
            pass
        else:
            raise AssertionError(f"lift_function({bad}) did not raise IndexError")
    out["c"] = "\n".join(parts)
    return out


def _analysis_layer(data: bytes, a) -> dict:
    """Static analysis and the call graph; exceptions escape to the caller."""
    from kbtool.analysis import analyze_module_static
    from kbtool.lift import build_callgraph

    sa = analyze_module_static(a, data)
    g = build_callgraph(a, data)
    return {"names": len(sa.names), "structs": len(sa.structs), "edges": len(g["edges"])}


def _worker(mem_mb: int, layers: tuple[str, ...] = LAYERS, max_funcs: int = 200) -> int:
    """Decode framed inputs from stdin (and lift / analyse the accepted ones, per
    ``layers``), one JSON line per input on stdout."""
    import resource
    import traceback

    resource.setrlimit(resource.RLIMIT_AS, (mem_mb << 20, mem_mb << 20))
    from kbtool.wasm import WasmFormatError, analyze_module
    from kbtool.wasm.instr import check_body, iter_instructions

    inp = sys.stdin.buffer
    out = sys.stdout
    while True:
        head = inp.read(4)
        if len(head) < 4:
            return 0
        (n,) = struct.unpack("<I", head)
        data = inp.read(n)
        res: dict = {}
        try:
            a = analyze_module(data)
        except WasmFormatError as e:
            res = {"status": "reject", "error": str(e)}
            if "could not be decoded" in str(e):
                res["disagree"] = "fast decoder rejected a body the careful one accepts"
        except MemoryError:
            res = {"status": "memory"}
        except RecursionError:
            res = {"status": "crash", "tb": traceback.format_exc(limit=5)[-3000:]}
        except Exception:  # noqa: BLE001 - the harness reports every other exception
            res = {"status": "crash", "tb": traceback.format_exc()[-3000:]}
        else:
            counts = [f.instr_count for f in a.functions if not f.imported]
            res = {"status": "ok", "counts": counts}
            for (s, e), c in zip(a.module.code, counts, strict=True):
                try:
                    check_body(data, s, e)
                    c2 = sum(1 for _ in iter_instructions(data, s, e))
                except WasmFormatError as err:
                    res["disagree"] = f"careful decoder rejects a body the fast one accepts: {err}"
                    break
                except Exception:  # noqa: BLE001
                    res = {"status": "crash", "tb": traceback.format_exc()[-3000:]}
                    break
                if c2 != c:
                    res["disagree"] = f"fast {c} vs careful {c2} instructions at 0x{s:x}"
                    break
        if res.get("status") == "reject" and "\n" in res["error"]:
            res["status"] = "crash"
            res["tb"] = "multi-line error: " + res["error"]
        if res.get("status") == "ok":
            for layer in layers:
                if layer == "wasm":
                    continue
                try:
                    if layer == "lift":
                        res["lift"] = _lift_layer(data, a, max_funcs)
                    else:
                        res["analysis"] = _analysis_layer(data, a)
                except MemoryError:
                    res = {"status": "memory", "layer": layer}
                except Exception:  # noqa: BLE001 - the harness reports every exception
                    res = {"status": "crash", "layer": layer, "tb": traceback.format_exc()[-3000:]}
                if res["status"] != "ok":
                    break
        out.write(json.dumps(res) + "\n")
        out.flush()


class Runner:
    """A worker subprocess with a per-input timeout; restarted after a hang or a death."""

    def __init__(
        self, timeout: float, mem_mb: int, layers: tuple[str, ...] = LAYERS, max_funcs: int = 200
    ) -> None:
        self.timeout = timeout
        self.mem_mb = mem_mb
        self.layers = layers
        self.max_funcs = max_funcs
        self.proc: subprocess.Popen | None = None

    def _start(self) -> subprocess.Popen:
        env = dict(os.environ)
        env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
        return subprocess.Popen(
            [
                sys.executable,
                *("-m", "benchmarks.fuzz", "--worker", "--mem-mb", str(self.mem_mb)),
                *("--layers", ",".join(self.layers), "--max-funcs", str(self.max_funcs)),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=ROOT,
            env=env,
        )

    def run(self, data: bytes) -> dict:
        if self.proc is None or self.proc.poll() is not None:
            self.proc = self._start()
        p = self.proc
        try:
            p.stdin.write(struct.pack("<I", len(data)) + data)
            p.stdin.flush()
        except BrokenPipeError:
            self.close()
            return {"status": "died"}
        r, _, _ = select.select([p.stdout], [], [], self.timeout)
        if not r:
            self.close()
            return {"status": "hang"}
        line = p.stdout.readline()
        if not line:
            rc = p.wait()
            self.proc = None
            return {"status": "died", "rc": rc}
        return json.loads(line)

    def close(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None


# ----------------------------------------------------------------------------- inputs


def seed_modules(include_corpus: bool = True) -> list[tuple[str, bytes]]:
    """Seeds: the wat fixtures (built with wat2wasm/wasm-tools), the crafted cases and,
    when present, small corpus modules."""
    from benchmarks.crafted import crafted_cases

    seeds: list[tuple[str, bytes]] = []
    tool = shutil.which("wasm-tools")
    with tempfile.TemporaryDirectory() as td:
        for wat in sorted(FIXTURES.glob("*.wat")):
            out = Path(td) / (wat.stem + ".wasm")
            if (
                tool
                and subprocess.run(
                    [tool, "parse", str(wat), "-o", str(out)], capture_output=True
                ).returncode
                == 0
            ):
                seeds.append((wat.name, out.read_bytes()))
    seeds.extend(crafted_cases().items())
    if include_corpus:
        for name in (
            "gt/zstd-1.5.6.Os.stripped.wasm",
            "gt/zstd-1.5.7.O2.stripped.wasm",
            "gt/zstd-1.5.6.Os.named.wasm",  # a name section for the lifter's names
            "release/sql.js-1.12.0.sql-wasm.wasm",  # emscripten runtime, setjmp/longjmp
        ):
            p = CORPUS / name
            if p.exists():
                seeds.append((name, p.read_bytes()))
    return seeds


def _leb_grow(b: bytearray, rng: random.Random) -> None:
    """Re-encode one byte < 0x80 as an over-long LEB (2..6 bytes, sometimes over the limit)."""
    cands = [i for i in range(8, len(b)) if b[i] < 0x80][:4096]
    if not cands:
        return
    i = rng.choice(cands)
    k = rng.randint(1, 5)
    b[i : i + 1] = bytes([b[i] | 0x80] + [0x80] * (k - 1) + [0x00])


def mutate(data: bytes, rng: random.Random) -> bytes:
    b = bytearray(data)
    for _ in range(rng.choice((1, 1, 1, 2, 3, 8))):
        op = rng.randrange(7)
        n = len(b)
        if n <= 8:
            b += bytes(rng.randrange(256) for _ in range(4))
            continue
        i = rng.randrange(8, n)
        if op == 0:
            b[i] = rng.randrange(256)
        elif op == 1:
            b[i] ^= 1 << rng.randrange(8)
        elif op == 2:
            del b[rng.randrange(8, n) :]
        elif op == 3:
            b[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        elif op == 4:
            del b[i : i + rng.randint(1, 8)]
        elif op == 5:
            _leb_grow(b, rng)
        else:  # an interesting byte: prefixes, 0x65 shared, ends, big LEB heads
            b[i] = rng.choice(
                (0x00, 0x0B, 0x40, 0x63, 0x64, 0x65, 0x7F, 0x80, 0xFF, 0xFB, 0xFC, 0xFD, 0xFE)
            )
    return bytes(b)


def body_ranges(data: bytes) -> list[tuple[int, int]]:
    """The function body byte ranges of a seed (empty when it does not parse)."""
    from kbtool.wasm import WasmFormatError, parse_module

    try:
        return [(s, e) for s, e in parse_module(data).code if e > s]
    except WasmFormatError:
        return []


_OPCODE_BYTES = bytes(range(0x00, 0xC5)) + bytes((0xFB, 0xFC, 0xFD, 0xFE))


def mutate_body(data: bytes, ranges: list[tuple[int, int]], rng: random.Random) -> bytes:
    """Overwrite 1-4 bytes inside function bodies (sizes unchanged, so the module stays
    framed and the decoder often accepts it: ill-typed code for the lifter and analyses)."""
    b = bytearray(data)
    for _ in range(rng.choice((1, 1, 2, 4))):
        s, e = rng.choice(ranges)
        i = rng.randrange(s, e)
        b[i] = rng.choice(_OPCODE_BYTES) if rng.random() < 0.7 else rng.randrange(256)
    return bytes(b)


def smith_module(rng: random.Random) -> bytes | None:
    seed = rng.randbytes(rng.randint(64, 4096))
    args = ["wasm-tools", "smith"]
    for f in SMITH_FLAGS:
        args += [f, "true"]
    r = rng.random()
    if r < 0.3:  # more functions: call graphs, prototypes, names
        args += ["--min-funcs", "8"]
    elif r < 0.5:  # ill-typed bodies in a well-framed module: the lifter's error paths
        args += ["--allow-invalid-funcs", "true"]
    r = subprocess.run(args, input=seed, capture_output=True)
    return r.stdout if r.returncode == 0 and r.stdout.startswith(b"\0asm") else None


# ----------------------------------------------------------------------------- reference


def _reference(data: bytes) -> tuple[bool, list[int] | None]:
    """``(valid, counts)``: wasm-tools validate --features all, and per-function
    instruction counts from ``wasm-tools dump`` (None when it cannot parse the input)."""
    with tempfile.NamedTemporaryFile(suffix=".wasm") as f:
        f.write(data)
        f.flush()
        valid = (
            subprocess.run(
                ["wasm-tools", "validate", "--features", "all", f.name], capture_output=True
            ).returncode
            == 0
        )
        r = subprocess.run(["wasm-tools", "dump", f.name], capture_output=True)
    if r.returncode != 0:
        return valid, None
    return valid, dump_counts(r.stdout.decode("utf-8", "replace"))


_SKIP = re.compile(r"size of function$|local blocks$|locals of type ")


def dump_counts(text: str) -> list[int]:
    """Instruction count per function body from ``wasm-tools dump`` text; -1 for a body
    the dump could not decode (it prints ``??`` and resynchronises)."""
    counts: list[int] = []
    inside = False
    for line in text.splitlines():
        if line.startswith("============== func "):
            counts.append(0)
            inside = True
            continue
        if not inside or not line.lstrip().startswith("0x"):
            continue
        parts = line.split("|", 2)
        if len(parts) < 3:
            continue
        desc = parts[2].strip()
        if desc.endswith(" section") or desc.startswith("===="):
            inside = False
        elif desc == "??":
            counts[-1] = -(1 << 30)  # stays negative: not comparable
        elif not _SKIP.search(desc):
            counts[-1] += 1
    return [c if c >= 0 else -1 for c in counts]


def counts_agree(reference: list[int], ours: list[int]) -> int | None:
    """Index of the first function whose counts differ (-1: different function counts),
    None when they agree; bodies the reference could not decode are not compared."""
    if len(reference) != len(ours):
        return -1
    for i, (a, b) in enumerate(zip(reference, ours, strict=True)):
        if a >= 0 and a != b:
            return i
    return None


def parse_layers(text: str) -> tuple[str, ...]:
    """``"wasm,lift"`` -> ``("wasm", "lift")`` (the decoder always runs: it feeds the rest)."""
    got = [x.strip() for x in text.split(",") if x.strip()]
    bad = [x for x in got if x not in LAYERS]
    if bad:
        raise SystemExit(f"unknown layer(s) {', '.join(bad)}; choose from {', '.join(LAYERS)}")
    return tuple(x for x in LAYERS if x in got or x == "wasm")


def compile_c(text: str, timeout: float = 60.0) -> str | None:
    """None when ``gcc -fsyntax-only`` accepts ``text`` with the prelude, else its first error."""
    from kbtool.lift import prelude_path

    with tempfile.NamedTemporaryFile("w", suffix=".c") as f:
        f.write(text)
        f.flush()
        args = ["gcc", "-fsyntax-only", "-fwrapv", "-w", "-include", prelude_path(), f.name]
        try:
            r = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return "gcc timed out"
    if r.returncode == 0:
        return None
    errs = [ln for ln in r.stderr.splitlines() if "error" in ln]
    return (errs[0] if errs else r.stderr.strip()[:300]).replace(f.name, "<module>.c")


# ----------------------------------------------------------------------------- driver


def run(
    mutations: int,
    smith: int,
    seed: int,
    timeout: float,
    mem_mb: int,
    include_corpus: bool = True,
    reference: bool = True,
    log=print,
    layers: tuple[str, ...] = LAYERS,
    max_funcs: int = 200,
    gcc_modules: int = 300,
    body_mutations: int | None = None,
) -> dict:
    rng = random.Random(seed)
    seeds = seed_modules(include_corpus)
    small = [s for s in seeds if len(s[1]) <= REFERENCE_MAX_BYTES]
    big = [s for s in seeds if len(s[1]) > REFERENCE_MAX_BYTES]
    have_tools = reference and shutil.which("wasm-tools") is not None
    runner = Runner(timeout, mem_mb, layers, max_funcs)
    have_gcc = "lift" in layers and shutil.which("gcc") is not None
    stats: Counter = Counter()
    failures: list[dict] = []
    rejected_valid: Counter = Counter()
    t0 = time.time()

    def check(name: str, data: bytes, kind: str) -> None:
        res = runner.run(data)
        st = res["status"]
        stats[f"{kind}:{st}"] += 1
        fail = None
        lift = res.get("lift")
        if lift is not None:
            stats["lift:modules"] += 1
            stats["lift:functions"] += lift["lifted"]
            stats["lift:disasm_rejects"] += lift["disasm_rejects"]
        if "analysis" in res:
            stats["analysis:modules"] += 1
        if st in ("crash", "hang", "memory", "died"):
            fail = (f"[{res['layer']}] " if "layer" in res else "") + (res.get("tb") or st)
        elif res.get("disagree"):
            fail = res["disagree"]
        elif lift is not None and lift.get("internal"):
            fail = f"[lift] caught lifter defect: {lift['internal']}"
        elif (
            have_tools
            and len(data) <= REFERENCE_MAX_BYTES
            and (st == "ok" or kind not in ("mutation", "body_mutation"))
        ):
            # mutations that kbtool rejects are not sent to the reference (they are almost
            # all invalid; smith modules and seeds are, to count valid-but-rejected ones)
            valid, counts = _reference(data)
            if valid and lift is not None:
                stats["lift:valid_modules"] += 1
                if lift.get("mismatch"):
                    fail = f"[lift] compiled and pure lifters differ: {lift['mismatch']}"
                elif have_gcc and stats["lift:c_checked"] < gcc_modules and lift["c"]:
                    stats["lift:c_checked"] += 1
                    err = compile_c(lift["c"])
                    if err is not None:
                        stats["lift:c_failed"] += 1
                        fail = f"[lift] C does not compile: {err}"
            if fail:
                pass
            elif st == "ok" and counts is not None:
                stats[f"{kind}:compared"] += 1
                if -1 in counts:
                    stats[f"{kind}:reference_undecoded_bodies"] += counts.count(-1)
                bad = counts_agree(counts, res["counts"])
                if bad is not None:
                    fail = f"instruction counts differ from wasm-tools dump (function {bad})"
            elif st == "ok":
                stats[f"{kind}:ok_but_dump_fails"] += 1
            elif st == "reject" and valid:
                msg = re.sub(r"offset 0x[0-9a-f]+", "offset ?", res["error"])
                rejected_valid[msg] += 1
                stats[f"{kind}:rejected_valid"] += 1
                if not UNSUPPORTED.search(msg):
                    stats[f"{kind}:rejected_valid_unexplained"] += 1
        if fail:
            path = Path(tempfile.gettempdir()) / f"kbtool-fuzz-{os.getpid()}-{len(failures)}.wasm"
            path.write_bytes(data)
            failures.append({"input": name, "kind": kind, "failure": fail, "saved": str(path)})
            log(f"FAIL {kind} {name}: {fail.splitlines()[-1] if fail else ''} -> {path}")

    try:
        for name, data in seeds:
            if len(data) <= REFERENCE_MAX_BYTES:
                check(name, data, "seed")
        for i in range(mutations):
            pool = big if big and rng.random() < 0.005 else small
            name, base = rng.choice(pool)
            check(f"{name}#m{i}", mutate(base, rng), "mutation")
            if (i + 1) % 1000 == 0:
                log(f"{i + 1} mutations, {time.time() - t0:.0f} s, {len(failures)} failures")
        bodies = [(n, d, r) for n, d in small if (r := body_ranges(d))]
        big_bodies = [(n, d, r) for n, d in big if (r := body_ranges(d))]
        n_body = mutations if body_mutations is None else body_mutations
        for i in range(n_body if bodies else 0):
            # real code now and then: what the recognisers and struct recovery are made for
            pool_b = big_bodies if big_bodies and rng.random() < 0.05 else bodies
            name, base, ranges = rng.choice(pool_b)
            check(f"{name}#b{i}", mutate_body(base, ranges, rng), "body_mutation")
            if (i + 1) % 1000 == 0:
                log(f"{i + 1} body mutations, {time.time() - t0:.0f} s, {len(failures)} failures")
        made = 0
        for i in range(smith * 2):
            if made >= smith:
                break
            m = smith_module(rng)
            if m is None:
                continue
            made += 1
            check(f"smith#{i}", m, "smith")
            if made % 200 == 0:
                log(f"{made} smith modules, {time.time() - t0:.0f} s, {len(failures)} failures")
    finally:
        runner.close()
    return {
        "stats": dict(stats),
        "failures": failures,
        "seconds": round(time.time() - t0, 1),
        "rejected_valid": dict(rejected_valid.most_common(20)),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--mutations", type=int, default=2000)
    ap.add_argument("--smith", type=int, default=100)
    ap.add_argument(
        "--body-mutations",
        type=int,
        default=None,
        help="in-body byte overwrites (default: --mutations)",
    )
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--timeout", type=float, default=20.0, help="seconds per input")
    ap.add_argument("--mem-mb", type=int, default=768, help="address-space bound per worker")
    ap.add_argument("--layers", default=",".join(LAYERS), help="wasm,lift,analysis (default all)")
    ap.add_argument("--max-funcs", type=int, default=200, help="functions lifted per module")
    ap.add_argument(
        "--gcc-modules", type=int, default=300, help="valid modules whose C is compiled"
    )
    ap.add_argument("--no-corpus", action="store_true")
    ap.add_argument("--no-reference", action="store_true")
    ap.add_argument("--smoke", action="store_true", help="tiny budget (tests)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument(
        "--cli-cases",
        type=int,
        default=40,
        help="CLI hardening cases (benchmarks.fuzz_cli: output paths, signals, full"
        " disk, huge inputs); 0 skips them",
    )
    ap.add_argument(
        "--provider-cases",
        type=int,
        default=14,
        help="provider cases (benchmarks.fuzz_provider: `kbtool agent --backend"
        " provider_b` against trickling, oversized, malformed, 429/500-storm and"
        " resetting endpoints); 0 skips them",
    )
    a = ap.parse_args(argv)
    layers = parse_layers(a.layers)
    if a.worker:
        return _worker(a.mem_mb, layers, a.max_funcs)
    if a.smoke:
        a.mutations, a.smith, a.no_corpus = min(a.mutations, 60), min(a.smith, 5), True
        a.gcc_modules = min(a.gcc_modules, 5)
        a.cli_cases = min(a.cli_cases, 5)
        a.provider_cases = min(a.provider_cases, 7)  # one of each endpoint
    res = run(
        a.mutations,
        a.smith,
        a.seed,
        a.timeout,
        a.mem_mb,
        not a.no_corpus,
        not a.no_reference,
        layers=layers,
        max_funcs=a.max_funcs,
        gcc_modules=a.gcc_modules,
        body_mutations=a.body_mutations,
    )
    if a.cli_cases:
        from benchmarks.fuzz_cli import run as run_cli

        cli = run_cli(a.cli_cases, a.seed)
        res["failures"] += [{"cli": f} for f in cli["failures"]]
        res["stats"].update({f"cli {k}": v for k, v in cli["stats"].items()})
    if a.provider_cases:
        from benchmarks.fuzz_provider import run as run_provider

        prov = run_provider(a.provider_cases, a.seed)
        res["failures"] += [{"provider": f} for f in prov["failures"]]
        res["stats"].update(prov["stats"])
    if a.json:
        print(json.dumps(res, indent=1))
    else:
        print(
            f"{res['seconds']} s; " + ", ".join(f"{k} {v}" for k, v in sorted(res["stats"].items()))
        )
        for msg, n in res["rejected_valid"].items():
            print(f"  valid but rejected x{n}: {msg}")
        print(f"{len(res['failures'])} failures")
    return 1 if res["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
