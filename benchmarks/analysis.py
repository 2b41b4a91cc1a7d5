"""Static analysis (kbtool.analysis) accuracy and speed.

    python -m benchmarks.analysis [--smoke] [--corpus DIR] [--refs DIR]

1. Recognizer precision/recall on the corpus ground truth (gt/<pair>.stripped.wasm analysed,
   gt/<pair>.named.wasm's name section is the truth, same indices), per family:
   truth functions of the family, names written, right, wrong, left for review.
2. Generality: with ``--refs DIR`` (the output of kbtool/analysis/refs/build.sh), the
   fingerprints of one toolchain are evaluated on the named builds of the other
   (wasi-libc entries on emcc-* builds and vice versa); 2b: each emcc build with every
   other build's fingerprints (leave-one-build-out), scoring the behaviour rules.
3. Thread facts on the threaded onnxruntime build: atomic sites found vs
   ``wasm-objdump -d FILE | grep -c atomic``.
4. Time of ``analyze_module_static`` next to ``kbtool.wasm.analyze_module`` on the largest
   corpus modules, same run.
5. Rust: tests/fixtures/analysis/rust_eval.rs (a different program from the fingerprint
   source refs/rust_std.rs) built with Debian's /usr/bin/rustc at opt-levels 3 and z (the
   references use 2 and s) for wasm32-unknown-unknown and wasm32-wasi, stripped here, its
   own name section the truth; then what is written on the corpus Rust module
   (lightningcss, no names: precision cannot be checked there, only counted).
6. C through Emscripten: tests/fixtures/analysis/c_eval.c (not a fingerprint source; errno,
   setjmp, stdio, strings, malloc) built with emcc -O3 and -Oz (references: -O2/-Os),
   stripped here; skipped without emcc. With ``ZIG`` set (as for refs/build.sh, e.g.
   ``ZIG="python -m ziglang"``) also zig cc -O3 with wasm-EH setjmp (``__wasm_setjmp``...).
7. Threads: tests/fixtures/analysis/c_threads_eval.c (not a fingerprint source) built with
   ``emcc -pthread -Oz`` (threaded references: -O2/-Os/-O3), stripped here; skipped without
   emcc and in ``--smoke``.

``--smoke``: one small gt pair and no objdump/large modules (run by the tests).
The corpus is only measured here; nothing is tuned on it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import time
from collections import defaultdict
from pathlib import Path

from kbtool.analysis import analyze_module_static
from kbtool.analysis.families import canonical, family_of, is_type_glue
from kbtool.analysis.fingerprints import FingerprintDB, default_db
from kbtool.wasm import analyze_module

CORPUS = Path(os.environ.get("KBTOOL_CORPUS", "/work/shared/corpus"))
THREADED = "release/onnxruntime-web-1.20.1.ort-wasm-simd-threaded.wasm"


def score(
    names: list[dict], review: list[dict], truth: dict[int, str], table: dict[str, list[int]]
) -> list[str]:
    """Accumulate [truth, written, right, wrong, review] per family; return wrong lines."""
    wrong_lines = []
    known = {canonical(e.name) for e in default_db().entries}
    for _i, t in truth.items():
        if canonical(t) in known and not is_type_glue(canonical(t)):
            table[family_of(t)][0] += 1
    for n in names:
        t = truth.get(n["func_index"])
        fam = family_of(n["name"])
        table[fam][1] += 1
        if t is not None and canonical(t) == canonical(n["name"]):
            table[fam][2] += 1
        else:
            table[fam][3] += 1
            wrong_lines.append(
                f"    wrong: f{n['func_index']} named {n['name']} (truth {t}) "
                f"via {n['evidence']['recognizer']}"
            )
    for r in review:
        t = truth.get(r["func_index"])
        table[family_of(t) if t else "libc"][4] += 1
    return wrong_lines


def print_table(title: str, table: dict[str, list[int]]) -> None:
    print(f"\n{title}")
    print(
        f"  {'family':<8} {'truth':>6} {'written':>8} {'right':>6} {'wrong':>6} "
        f"{'review':>7} {'precision':>9} {'recall':>7}"
    )
    tot = [0] * 5
    for fam in sorted(table):
        row = table[fam]
        tot = [a + b for a, b in zip(tot, row, strict=True)]
        _row(fam, row)
    _row("all", tot)


def _row(fam: str, row: list[int]) -> None:
    t, w, r, x, rv = row
    prec = f"{100 * r / w:.1f}%" if w else "-"
    rec = f"{100 * r / t:.1f}%" if t else "-"
    print(f"  {fam:<8} {t:>6} {w:>8} {r:>6} {x:>6} {rv:>7} {prec:>9} {rec:>7}")


def gt_pairs(smoke: bool) -> list[str]:
    pairs = sorted(
        {p.name.removesuffix(".stripped.wasm") for p in (CORPUS / "gt").glob("*.stripped.wasm")}
    )
    return pairs[:1] if smoke else pairs


def bench_gt(smoke: bool) -> None:
    table: dict[str, list[int]] = defaultdict(lambda: [0] * 5)
    wrong: list[str] = []
    pairs = gt_pairs(smoke)
    for pair in pairs:
        named = (CORPUS / "gt" / f"{pair}.named.wasm").read_bytes()
        stripped = (CORPUS / "gt" / f"{pair}.stripped.wasm").read_bytes()
        truth = analyze_module(named).module.func_names
        sa = analyze_module_static(analyze_module(stripped), stripped)
        wrong += score(sa.names, sa.review, truth, table)
    print_table(
        f"1. corpus gt ({len(pairs)} stripped builds, zig cc / clang 22; "
        "truth column = truth functions whose name the fingerprint DB knows; "
        "Rust type glue, never written, not counted)",
        table,
    )
    for line in wrong[:20]:
        print(line)


def bench_cross(refs: Path) -> None:
    db = default_db()
    for src, dst in (("wasi-", "emcc-"), ("emcc-", "wasi-")):
        sub = FingerprintDB(
            [e for e in db.entries if any(r.startswith(src) for r in e.refs)], db.builds
        )
        table: dict[str, list[int]] = defaultdict(lambda: [0] * 5)
        wrong: list[str] = []
        files = sorted(refs.glob(f"{dst}*.wasm"))
        for path in files:
            data = path.read_bytes()
            a = analyze_module(data)
            sa = analyze_module_static(a, data, db=sub)
            wrong += score(sa.names, sa.review, a.module.func_names, table)
        print_table(f"2. {src}* fingerprints on {len(files)} {dst}* builds", table)
        for line in wrong[:10]:
            print(line)


def bench_leave_one_out(refs: Path) -> None:
    """2b. Each emcc reference build, stripped, analysed with the fingerprints of every OTHER
    build (its own entries removed): what the behaviour rules add where no shape is left."""
    db = default_db()
    table: dict[str, list[int]] = defaultdict(lambda: [0] * 5)
    wrong: list[str] = []
    behaviour: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    files = sorted(refs.glob("emcc-*.wasm"))
    for path in files:
        sub = FingerprintDB([e for e in db.entries if set(e.refs) - {path.stem}], db.builds)
        named = path.read_bytes()
        stripped = strip_custom_sections(named)
        truth = analyze_module(named).module.func_names
        sa = analyze_module_static(analyze_module(stripped), stripped, db=sub)
        wrong += score(sa.names, sa.review, truth, table)
        for n in sa.names:
            rec = n["evidence"]["recognizer"]
            if rec.startswith("behaviour."):
                ok = canonical(truth.get(n["func_index"], "")) == canonical(n["name"])
                behaviour[f"{rec} {n['name']}"][0 if ok else 1] += 1
    print_table(f"2b. leave-one-build-out on {len(files)} emcc reference builds", table)
    for line in wrong[:10]:
        print(line)
    for k, (ok, bad) in sorted(behaviour.items()):
        print(f"  {k}: {ok} right, {bad} wrong")


def bench_threads() -> None:
    path = CORPUS / THREADED
    data = path.read_bytes()
    sa = analyze_module_static(analyze_module(data), data)
    sites = sum(1 for f in sa.thread_facts if f["kind"] == "atomic_site")
    kinds = defaultdict(int)
    for f in sa.thread_facts:
        kinds[f["kind"]] += 1
    objdump = shutil.which("wasm-objdump")
    ref = "n/a (no wasm-objdump)"
    if objdump:
        out = subprocess.run(
            [objdump, "-d", str(path)], capture_output=True, text=True, check=True
        ).stdout
        ref = str(sum(1 for line in out.splitlines() if "atomic" in line))
    print(
        f"\n3. thread facts on {path.name}: atomic sites {sites}, "
        f"wasm-objdump -d | grep -c atomic = {ref}; facts by kind {dict(sorted(kinds.items()))}"
    )
    print(
        f"   names written there (no name section, no JS glue in the corpus: precision cannot "
        f"be checked): {len(sa.names)}, reviewed {len(sa.review)}: "
        + ", ".join(f"f{n['func_index']} {n['name']}" for n in sa.names)
    )


def bench_time(smoke: bool) -> None:
    files = (
        [CORPUS / "gt" / f"{gt_pairs(True)[0]}.stripped.wasm"]
        if smoke
        else sorted((CORPUS / "release").glob("*.wasm"), key=lambda p: -p.stat().st_size)[:2]
    )
    print("\n4. time (same run)")
    for path in files:
        data = path.read_bytes()
        t0 = time.perf_counter()
        a = analyze_module(data)
        t1 = time.perf_counter()
        sa = analyze_module_static(a, data)
        t2 = time.perf_counter()
        print(
            f"  {path.name:<55} {len(data) / 1e6:6.1f} MB  analyze_module {t1 - t0:6.2f} s"
            f"  analyze_module_static {t2 - t1:6.2f} s  ({len(sa.names)} names, "
            f"{len(sa.structs)} structs, {len(sa.thread_facts)} thread facts)"
        )


RUSTC = Path("/usr/bin/rustc")
RUST_EVAL = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "analysis" / "rust_eval.rs"
LIGHTNINGCSS = "release/lightningcss-wasm-1.29.1.wasm"


def strip_custom_sections(data: bytes) -> bytes:
    """The module without its custom sections (name, producers...): a stripped build."""
    from kbtool.wasm.leb import read_uleb

    out = bytearray(data[:8])
    p = 8
    while p < len(data):
        sid = data[p]
        size, q = read_uleb(data, p + 1, len(data), 32, "section size")
        if sid != 0:
            out += data[p : q + size]
        p = q + size
    return bytes(out)


def rust_eval_builds(outdir: Path, opts: tuple[str, ...] = ("3", "z")) -> list[Path]:
    """Build rust_eval.rs with Debian's rustc for each wasm32 target whose std is installed;
    [] when rustc or the wasm32 std is absent."""
    if not RUSTC.exists():
        return []
    sysroot = subprocess.run(
        [str(RUSTC), "--print", "sysroot"], capture_output=True, text=True
    ).stdout.strip()
    built = []
    for target in ("wasm32-unknown-unknown", "wasm32-wasi"):
        if not (Path(sysroot) / "lib" / "rustlib" / target / "lib").is_dir():
            continue
        kind = "cdylib" if target == "wasm32-unknown-unknown" else "bin"
        for opt in opts:
            out = outdir / f"rust_eval-{target}-O{opt}.wasm"
            r = subprocess.run(
                [
                    str(RUSTC),
                    "--target",
                    target,
                    "-C",
                    f"opt-level={opt}",
                    "--crate-type",
                    kind,
                    "--crate-name",
                    "rust_eval",
                    "-C",
                    "strip=debuginfo",
                    str(RUST_EVAL),
                    "-o",
                    str(out),
                ],
                capture_output=True,
                text=True,
            )
            if r.returncode == 0:
                built.append(out)
    return built


def bench_rust(smoke: bool) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        files = rust_eval_builds(Path(tmp), ("z",) if smoke else ("3", "z"))
        if not files:
            print(
                "\n5. Rust: skipped (no /usr/bin/rustc with a wasm32 std; "
                "apt-get install rustc libstd-rust-dev-wasm32)"
            )
        else:
            table: dict[str, list[int]] = defaultdict(lambda: [0] * 5)
            wrong: list[str] = []
            for path in files:
                named = path.read_bytes()
                stripped = strip_custom_sections(named)
                truth = analyze_module(named).module.func_names
                sa = analyze_module_static(analyze_module(stripped), stripped)
                wrong += score(sa.names, sa.review, truth, table)
            print_table(
                f"5. Rust: rust_eval.rs (not a fingerprint source), {len(files)} stripped "
                "builds (" + ", ".join(p.stem.removeprefix("rust_eval-") for p in files) + ")",
                table,
            )
            for line in wrong[:10]:
                print(line)
    path = CORPUS / LIGHTNINGCSS
    if smoke or not path.exists():
        return
    data = path.read_bytes()
    t0 = time.perf_counter()
    a = analyze_module(data)
    t1 = time.perf_counter()
    sa = analyze_module_static(a, data)
    t2 = time.perf_counter()
    fams: dict[str, int] = defaultdict(int)
    for n in sa.names:
        fams[n["family"]] += 1
    print(
        f"\n   {path.name} (Rust 1.83, no name section: precision cannot be checked here, "
        f"only counted): {len(sa.names)} names written, {len(sa.review)} reviewed; "
        f"by family {dict(sorted(fams.items()))}; analyze_module {t1 - t0:.1f} s, "
        f"analyze_module_static {t2 - t1:.1f} s"
    )


C_EVAL = RUST_EVAL.with_name("c_eval.c")


def bench_emcc(smoke: bool) -> None:
    import tempfile

    emcc = shutil.which("emcc")
    if emcc is None:
        print("\n6. C via emcc: skipped (no emcc)")
        return
    table: dict[str, list[int]] = defaultdict(lambda: [0] * 5)
    wrong: list[str] = []
    opts = ("Oz",) if smoke else ("O3", "Oz")
    builds = [([emcc, f"-{o}", "--profiling-funcs", str(C_EVAL)], f"emcc-{o}") for o in opts]
    zig = os.environ.get("ZIG")
    if zig and not smoke:  # zig's -Oz drops the name section: -O3 only
        tag = Path(__file__).resolve().parents[1] / "kbtool/analysis/refs/c_longjmp_tag.s"
        zcmd = [
            *zig.split(),
            "cc",
            "-target",
            "wasm32-wasi",
            "-O3",
            "-mllvm",
            "-wasm-enable-sjlj",
            "-mcpu=generic+exception_handling",
            str(C_EVAL),
            str(tag),
            "-lsetjmp",
        ]
        builds.append((zcmd, "zig-O3-wasm-sjlj"))
    with tempfile.TemporaryDirectory() as tmp:
        for cmd, opt in builds:
            out = Path(tmp) / f"c_eval-{opt}.wasm"
            r = subprocess.run([*cmd, "-o", str(out)], capture_output=True, text=True)
            if r.returncode or not out.exists():
                print(f"\n6. C via emcc: build failed ({r.stderr.strip()[:120]})")
                return
            named = out.read_bytes()
            stripped = strip_custom_sections(named)
            truth = analyze_module(named).module.func_names
            sa = analyze_module_static(analyze_module(stripped), stripped)
            wrong += score(sa.names, sa.review, truth, table)
    print_table(
        "6. C: c_eval.c (not a fingerprint source), " + ", ".join(o for _, o in builds), table
    )
    for line in wrong[:10]:
        print(line)


C_THREADS_EVAL = RUST_EVAL.with_name("c_threads_eval.c")


def bench_emcc_threads(smoke: bool) -> None:
    """7. Emscripten threaded builds: c_threads_eval.c (not a fingerprint source) with
    ``emcc -pthread`` at -Oz (the threaded references use -O2/-Os/-O3), stripped here."""
    import tempfile

    emcc = shutil.which("emcc")
    if emcc is None or smoke:
        print(
            "\n7. threaded C via emcc -pthread: skipped (" + ("smoke" if smoke else "no emcc") + ")"
        )
        return
    table: dict[str, list[int]] = defaultdict(lambda: [0] * 5)
    wrong: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        js = Path(tmp) / "c_threads_eval.js"
        cmd = [emcc, "-Oz", "-pthread", "-sPTHREAD_POOL_SIZE=2", "--profiling-funcs"]
        subprocess.run([*cmd, str(C_THREADS_EVAL), "-o", str(js)], capture_output=True)
        wasm = js.with_suffix(".wasm")  # the .js step may fail on the minifier; .wasm is done
        if not wasm.exists() or not wasm.stat().st_size:
            print("\n7. threaded C via emcc -pthread: build failed")
            return
        named = wasm.read_bytes()
    stripped = strip_custom_sections(named)
    truth = analyze_module(named).module.func_names
    sa = analyze_module_static(analyze_module(stripped), stripped)
    wrong += score(sa.names, sa.review, truth, table)
    print_table(
        "7. threaded C: c_threads_eval.c (not a fingerprint source), emcc -pthread -Oz", table
    )
    for line in wrong[:10]:
        print(line)
    fams = ("thread", "lock")
    print(
        "  thread/lock names written: "
        + ", ".join(sorted(n["name"] for n in sa.names if n["family"] in fams))
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--refs", type=Path, help="output directory of refs/build.sh")
    args = ap.parse_args(argv)
    bench_gt(args.smoke)
    if args.refs is not None:
        bench_cross(args.refs)
        bench_leave_one_out(args.refs)
    if not args.smoke:
        bench_threads()
    bench_time(args.smoke)
    bench_rust(args.smoke)
    bench_emcc(args.smoke)
    bench_emcc_threads(args.smoke)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
