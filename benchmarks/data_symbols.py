"""Data symbols and cross-references (issue 26): how much of the lifted C names its data, how
right the names and boundaries are, Go literal recovery, and `kbtool xrefs` latency.

    python benchmarks/data_symbols.py [--smoke] [--sample N] [--big lightningcss|onnxruntime]

1. **Named share per corpus module**: each module of /work/shared/corpus (MANIFEST.json) is
   ingested and analysed into a fresh KB; in the lifted C of ``--sample`` functions (evenly
   spaced), every data reference is either a name (a data label, a string note) or a bare
   integer that falls in a data item. Share = named / (named + bare); "before" is the same
   count on the KB before ``kbtool analyze`` (the string notes only). Below each module, how
   its loads and stores of (non-string) data items read: as objects (``tbl[i]``,
   ``state.field_8``, a whole item as a variable) or as raw ``*(T *)(M + .. label ..)``.
2. **Precision against builds with symbols** (:mod:`testkit.symtruth`): every global
   and data name kbtool writes on a stripped build (globals, string labels, errno and the
   malloc state, string and function-pointer tables), per module and kind, against the
   truth of the same build with its symbols (name section, wasm-ld link map, DWARF): a C
   program built here with clang and emcc, benchmarks/programs.py's cache of zstd, lua,
   sqlite, lz4, brotli and libyaml builds (clang, emcc, zig) and the corpus gt pairs.
3. **Go**: a generated program of 120 literals, each printed by its own function
   (GOOS=js GOARCH=wasm); recovered = an item whose text is exactly the literal, with an
   xref from the function that uses it (pclntab names).
4. **Latency** of ``services.data.xrefs`` (what ``kbtool xrefs`` runs) after ingest and
   analyze of the biggest module: p50/p95 over functions, globals, strings and addresses;
   and one ``kbtool xrefs`` process, start to exit.

5. **Ingest with the data model** (``--ingest FILE ...``, e.g. ffmpeg-core.wasm): each file
   ingested into a fresh KB in a child process (no ``kbtool analyze``): ingest seconds and
   CPU seconds, the data model's share (its build and writes, timed inside ingest), then
   the xrefs latency on that KB as in 4 (the model as the first ingest left it);
   ``--compare``: first the same ingests with the model's build replaced by a no-op,
   alternating (what the model costs: CPU, wall, peak memory).

``--smoke``: one small gt module, 20 functions, the C program (clang only), no Go, the same module for
the latency (run by tests/unit/services/test_benchmarks_smoke.py).
"""

from __future__ import annotations

import argparse
import json
import os
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

from kbtool.kb import datamodel as dm_store  # noqa: E402
from kbtool.kb.db import open_ro, open_rw  # noqa: E402
from kbtool.services import code as code_svc  # noqa: E402
from kbtool.services import data as data_svc  # noqa: E402
from kbtool.services.analyze import analyze_version  # noqa: E402
from kbtool.services.ingest import ingest_file  # noqa: E402
from testkit.symtruth import precision  # noqa: E402

CORPUS = Path(os.environ.get("KBTOOL_CORPUS", "/work/shared/corpus"))
SMOKE_MODULE = "gt/zstd-1.5.6.Os.stripped.wasm"
BIG = {
    "lightningcss": "release/lightningcss-wasm-1.29.1.wasm",
    "onnxruntime": "release/onnxruntime-web-1.20.1.ort-wasm-simd-threaded.wasm",
}
_INT = re.compile(r"(?<![\w.])(0x[0-9a-fA-F]+|\d+)(?![\w.])")
_IDENT = re.compile(r"[A-Za-z_]\w*")
_COMMENT = re.compile(r"/\*.*?\*/")
#: data accesses by form in the last :func:`named_share` run (see :func:`access_forms`)
FORMS: dict[str, int] = {"index": 0, "field": 0, "whole": 0, "raw": 0}
NUMBERS: list[int] = [0]  # bare integers used as factors, masks or shift counts (count_refs)


def kb_of(wasm: Path, d: Path, *, analyze: bool = True) -> tuple[Path, float]:
    db = d / (wasm.stem + (".a" if analyze else ".b") + ".db")
    t0 = time.perf_counter()
    conn = open_rw(str(db), create=True)
    try:
        ingest_file(conn, str(wasm), label="1")
        if analyze:
            analyze_version(conn, 1)
    finally:
        conn.close()
    return db, time.perf_counter() - t0


# ------------------------------------------------------------------ 1. named share


_NUMERIC_BEFORE = re.compile(r"(?:[*/%&|^]|<<|>>) \(*$")
_NUMERIC_AFTER = re.compile(r"^\)* (?:[*/%&|^]|<<|>>) ")


def count_refs(
    c: str, labels: set[str], spans: list[tuple[int, int]], numbers: list[int] | None = None
) -> tuple[int, int]:
    """(named, bare) data references in one function's C: a data label, or a bare integer
    inside a data item (a string note after it makes it named). ``numbers``, when given,
    gets the count of bare integers that are an operand of ``* / % & | ^ << >>`` (a factor,
    mask or shift count: a number, not an address) in its first slot."""
    import bisect

    starts = [a for a, _ in spans]
    named = bare = 0
    for line in c.splitlines():
        s = line.strip()
        if (
            s.startswith(("#", "enum {", "/*", "extern", "int32_t ", "int64_t "))
            and "(" not in s[:3]
        ):
            if s.startswith(("#", "enum {", "/*", "extern")):
                continue
        notes = _COMMENT.findall(line)
        code = _COMMENT.sub(" ", line)
        named += sum(1 for w in _IDENT.findall(code) if w in labels)
        for m in _INT.finditer(code):
            t = m.group(1)
            v = int(t, 16) if t[:2].lower() == "0x" else int(t)
            k = bisect.bisect_right(starts, v) - 1
            if v >= 1024 and k >= 0 and v < spans[k][1]:
                rest = code[m.end() : m.end() + 3]
                if notes and rest.strip().startswith("") and any('"' in n for n in notes):
                    named += 1  # `1024 /* "text" */`: a string note
                else:
                    bare += 1
                    if numbers is not None and (
                        _NUMERIC_BEFORE.search(code[max(0, m.start() - 6) : m.start()])
                        or _NUMERIC_AFTER.match(code[m.end() : m.end() + 6])
                    ):
                        numbers[0] += 1
    return named, bare


_DEREF = re.compile(r"\*\((?:u?int\d+_t|float|double) \*\)\(M \+ ")
_MACRO = re.compile(r"^#define (\w+) \(\*")


def access_forms(c: str, labels: set[str]) -> dict[str, int]:
    """How one function's C accesses its (non-string) data items: as objects (``tbl[i]``,
    ``state.field_8``, a whole item read as a variable) or as raw memory whose address holds
    the label (``*(int32_t *)(M + l3 + tbl)``, ``*(int32_t *)(M + ADDR(tbl) + 3)``)."""
    out = {"index": 0, "field": 0, "whole": 0, "raw": 0}
    objects = {m.group(1) for ln in c.splitlines() if (m := _MACRO.match(ln))}
    for line in c.splitlines():
        if line.startswith(("#", "struct ", "enum ", "/*", "extern")):
            continue
        code = _COMMENT.sub(" ", line)
        for m in _DEREF.finditer(code):
            depth, k = 1, m.end()
            while k < len(code) and depth:
                depth += {"(": 1, ")": -1}.get(code[k], 0)
                k += 1
            span = code[m.end() : k]
            # the item's address in the sum (`ADDR(tbl)`, a bare label); `*(M + tbl[i])`
            # reads where a pointer from the table points: an object access, counted below
            if any(
                w.group(0) in labels and span[w.end() : w.end() + 1] not in ("[", ".")
                for w in _IDENT.finditer(span)
            ):
                out["raw"] += 1
        for m in _IDENT.finditer(code):
            w = m.group(0)
            if w not in labels or code[max(0, m.start() - 5) : m.start()] == "ADDR(":
                continue
            nxt = code[m.end() : m.end() + 1]
            if nxt == "[":
                out["index"] += 1
            elif nxt == "." and code[m.end() + 1 : m.end() + 2].isalpha():
                out["field"] += 1
            elif w in objects:
                out["whole"] += 1
    return out


def named_share(
    db: Path, sample: int, spans: list[tuple[int, int]] | None = None
) -> tuple[int, int, list]:
    conn = open_ro(str(db))
    try:
        info = dm_store.model_info(conn, 1)
        labels: set[str] = set()
        if info is not None:
            items, _ = dm_store.list_items(conn, 1, limit=10_000_000)
            labels = {i["label"] for i in items}
            spans = [(i["address"], i["address"] + max(1, i["size"])) for i in items]
        funcs = [
            r[0]
            for r in conn.execute(
                "SELECT idx FROM functions WHERE version_id = 1 AND imported = 0 ORDER BY idx"
            )
        ]
        step = max(1, len(funcs) // sample)
        named = bare = 0
        objs = {i["label"] for i in items if not i.get("text")} if info is not None else set()
        for k in FORMS:
            FORMS[k] = 0
        NUMBERS[0] = 0
        for idx in funcs[::step][:sample]:
            try:
                c = code_svc.disassembly(conn, 1, idx)["lifted_c"]
            except Exception:  # noqa: BLE001 - a function the lifter refuses is skipped
                continue
            n, b = count_refs(c, labels, spans or [], NUMBERS)
            named += n
            bare += b
            for k, v in access_forms(c, objs).items():
                FORMS[k] += v
        return named, bare, spans or []
    finally:
        conn.close()


def corpus_share(modules: list[str], sample: int, tmp: Path) -> None:
    print(
        "1. data references in the lifted C shown as a name or a string"
        f" ({sample} functions per module)"
    )
    print(
        f"   {'module':58} {'before':>8} {'after':>8} {'named':>7} {'bare':>6} {'ingest+analyze s':>16}"
    )
    for rel in modules:
        wasm = CORPUS / rel
        after_db, secs = kb_of(wasm, tmp)
        n, b, spans = named_share(after_db, sample)
        forms = dict(FORMS)
        nums = NUMBERS[0]
        before_db, _ = kb_of(wasm, tmp, analyze=False)
        n0, b0, _ = named_share(before_db, sample, spans)
        share = 100.0 * n / max(1, n + b)
        share0 = 100.0 * n0 / max(1, n0 + b0)
        print(f"   {rel:58} {share0:7.1f}% {share:7.1f}% {n:7d} {b:6d} {secs:16.1f}")
        print(
            f"   {'':58} without the {nums} bare integers that are factors, masks or shift counts:"
            f" {100.0 * n / max(1, n + b - nums):.1f}%"
        )
        obj = forms["index"] + forms["field"] + forms["whole"]
        print(
            f"   {'':58} data accesses as objects {obj} of {obj + forms['raw']}: label[i] {forms['index']},"
            f" label.field {forms['field']}, whole item {forms['whole']}; raw *(T *)(M + ..label..)"
            f" {forms['raw']}"
        )
        for p in (after_db, before_db):
            p.unlink(missing_ok=True)


# ------------------------------------------------------------------ 2. precision
# (testkit/symtruth.py: every name written, against builds with symbols)


# ------------------------------------------------------------------ 3. Go

GO_WORDS = [
    "alpha",
    "bravo",
    "charlie",
    "delta",
    "echo",
    "foxtrot",
    "golf",
    "hotel",
    "india",
    "juliet",
    "kilo",
    "lima",
    "mike",
    "november",
    "oscar",
    "papa",
]


def go_program(n: int) -> tuple[str, dict[str, str]]:
    lits: dict[str, str] = {}
    funcs = []
    for k in range(n):
        words = " ".join(GO_WORDS[(k * 7 + j) % len(GO_WORDS)] for j in range(1 + k % 6))
        lit = f"literal {k:03d}: {words}"
        lits[f"main.say{k:03d}"] = lit
        funcs.append(
            f'//go:noinline\nfunc say{k:03d}(w io.Writer) {{ fmt.Fprintln(w, "{lit}") }}\n'
        )
    calls = "\n".join(f"\tsay{k:03d}(os.Stdout)" for k in range(n))
    src = (
        'package main\n\nimport (\n\t"fmt"\n\t"io"\n\t"os"\n)\n\n'
        + "".join(funcs)
        + f"\nfunc main() {{\n{calls}\n}}\n"
    )
    return src, lits


def go_recovery(tmp: Path, n: int = 120) -> None:
    from kbtool.analysis.datamodel import build_data_model
    from kbtool.wasm import analyze_module
    from kbtool.wasm.gosyms import recover_go_names

    print(f"3. Go string literals recovered as separate items ({n} literals, GOOS=js GOARCH=wasm)")
    if shutil.which("go") is None:
        print("   skipped: go not installed")
        return
    d = tmp / "golits"
    d.mkdir(exist_ok=True)
    src, lits = go_program(n)
    (d / "main.go").write_text(src)
    (d / "go.mod").write_text("module golits\n\ngo 1.21\n")
    env = dict(
        os.environ,
        GOOS="js",
        GOARCH="wasm",
        CGO_ENABLED="0",
        GOCACHE=os.environ.get("GOCACHE", "/tmp/kbtool-go-cache"),
    )
    r = subprocess.run(
        ["go", "build", "-o", "golits.wasm", "."], cwd=d, env=env, capture_output=True, text=True
    )
    if r.returncode != 0:
        print("   go build failed:", r.stderr.strip()[:200])
        return
    data = (d / "golits.wasm").read_bytes()
    a = analyze_module(data)
    model = build_data_model(a, data, go=True)
    names = recover_go_names(a.module).names
    by_text: dict[str, list] = {}
    for it in model.items:
        if it.text:
            by_text.setdefault(it.text, []).append(it)
    separate = with_xref = 0
    for fn, lit in lits.items():
        items = by_text.get(lit, [])
        if len(items) != 1:
            continue
        separate += 1
        it = items[0]
        users = {
            names.get(rf.func_index)
            for rf in model.refs
            if rf.target_kind == "data" and it.address <= rf.target < it.address + max(1, it.size)
        }
        if fn in users:
            with_xref += 1
    print(
        f"   separate items: {separate}/{n} ({100.0 * separate / n:.1f}%);"
        f" with an xref from the function using it: {with_xref}/{n} ({100.0 * with_xref / n:.1f}%)"
    )


# ------------------------------------------------------------------ 4. latency


INGEST_CHILD = r"""
import json, resource, sys, time
from kbtool.kb.db import open_rw
import kbtool.services.data as data_svc
if sys.argv[3:] == ["off"]:  # the same ingest without the data model (the A/B baseline)
    data_svc.build = lambda *a, **k: {}
from kbtool.services.ingest import ingest_file
conn = open_rw(sys.argv[2], create=True)
t0 = time.perf_counter()
res = ingest_file(conn, sys.argv[1], label="1", carry=False)
conn.close()  # (its WAL checkpoint counts: the model's rows are written there too)
secs = time.perf_counter() - t0
ru, rc = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"seconds": secs, "cpu": ru.ru_utime + ru.ru_stime,
                  "cpu_all": ru.ru_utime + ru.ru_stime + rc.ru_utime + rc.ru_stime,
                  "peak_mib": ru.ru_maxrss / 1024, "data": res.data,
                  "functions": res.imported + res.defined, "instructions": res.instructions}))
"""


def ingest_ab(files: list[Path], tmp: Path, rounds: int) -> None:
    """Each module ingested ``rounds`` times with the data model and without it (the build
    replaced by a no-op), alternating: what the model costs at ingest."""
    print(
        "6. ingest without / with the data model (child processes, alternating; CPU user+sys"
        " with workers)"
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p),
    }
    for f in files:
        got: dict[str, list[dict]] = {"off": [], "on": []}
        for k in range(2 * rounds):
            mode = "off" if k % 2 == 0 else "on"
            db = tmp / f"{f.stem}.ab{k}.db"
            out = subprocess.run(
                [sys.executable, "-c", INGEST_CHILD, str(f), str(db), mode],
                capture_output=True,
                text=True,
                check=True,
                env=env,
            )
            got[mode].append(json.loads(out.stdout.strip().splitlines()[-1]))
            db.unlink(missing_ok=True)
        med = {
            m: {x: statistics.median(r[x] for r in rs) for x in ("seconds", "cpu_all", "peak_mib")}
            for m, rs in got.items()
        }
        off, on = med["off"], med["on"]
        print(
            f"   {f.name}: CPU {off['cpu_all']:.2f} -> {on['cpu_all']:.2f} s"
            f" (x{on['cpu_all'] / off['cpu_all']:.2f}), wall {off['seconds']:.2f} ->"
            f" {on['seconds']:.2f} s, peak {off['peak_mib']:.0f} -> {on['peak_mib']:.0f} MiB"
            f" (median of {rounds})"
        )


def ingest_figures(files: list[Path], tmp: Path, rounds: int) -> None:
    print("5. ingest with the data model (fresh KB, child process; no kbtool analyze)")
    for f in files:
        db = tmp / (f.stem + ".ingest.db")
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(
                p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p
            ),
        }
        out = subprocess.run(
            [sys.executable, "-c", INGEST_CHILD, str(f), str(db)],
            capture_output=True,
            text=True,
            check=True,
            env=env,
        )
        r = json.loads(out.stdout.strip().splitlines()[-1])
        d = r["data"]
        print(
            f"   {f.name}: {r['functions']:,} functions, {r['instructions']:,} instructions;"
            f" ingest {r['seconds']:.2f} s (CPU of the ingesting process {r['cpu']:.2f} s,"
            f" decode workers apart), of which the data model {d['seconds']:.2f} s"
            f" ({100 * d['seconds'] / r['seconds']:.0f} %; CPU {d['cpu_seconds']:.2f} s):"
            f" {d['items']:,} items, {d['refs']:,} refs, {d['globals']} globals"
        )
        latency(str(f), tmp, rounds, db=db, secs=r["seconds"])


def latency(
    rel: str, tmp: Path, rounds: int, *, db: Path | None = None, secs: float | None = None
) -> None:
    if db is None:
        db, secs = kb_of(CORPUS / rel, tmp)
    conn = open_ro(str(db))
    try:
        funcs = conn.execute("SELECT count(*) FROM functions WHERE version_id = 1").fetchone()[0]
        gl = dm_store.globals_of(conn, 1)
        strings, _ = dm_store.list_items(conn, 1, kinds=("cstring",), limit=200)
        items, _ = dm_store.list_items(conn, 1, limit=400)
        names = list(
            dm_store.function_names_for(conn, 1, range(0, funcs, max(1, funcs // 50))).values()
        )
        targets = (
            [f"g:{g['index']}" for g in gl[:20]]
            + [hex(i["address"]) for i in items[::8]]
            + ['"' + s["text"][:20] for s in strings[::4] if s["text"]]
            + [f"#{k}" for k in range(0, funcs, max(1, funcs // 40))]
            + names[:40]
        )
        times = []
        for _ in range(rounds):
            for t in targets:
                t0 = time.perf_counter()
                try:
                    data_svc.xrefs(conn, 1, t)
                except data_svc.DataError:
                    pass
                times.append((time.perf_counter() - t0) * 1000)
    finally:
        conn.close()
    times.sort()
    p95 = times[min(len(times) - 1, int(len(times) * 0.95))]
    print(
        f"4. xrefs latency on {Path(rel).name} ({funcs:,} functions;"
        f" {'ingest' if db.name.endswith('.ingest.db') else 'ingest+analyze'} {secs:.1f} s)"
    )
    print(
        f"   services.data.xrefs: {len(times)} calls, p50 {statistics.median(times):.2f} ms,"
        f" p95 {p95:.2f} ms, max {times[-1]:.2f} ms"
    )
    cli = []
    for t in (targets[0], targets[-1]):
        t0 = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "kbtool", "--db", str(db), "xrefs", "1", t, "--json"],
            capture_output=True,
            text=True,
            check=False,
        )
        cli.append((time.perf_counter() - t0) * 1000)
    print(f"   kbtool xrefs process (start to exit): {', '.join(f'{x:.0f} ms' for x in cli)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--sample", type=int, default=300, help="functions lifted per module")
    ap.add_argument("--big", choices=sorted(BIG), default="lightningcss")
    ap.add_argument(
        "--modules", nargs="*", help="corpus paths (default: every stripped/release module)"
    )
    ap.add_argument(
        "--skip", nargs="*", default=[], choices=["share", "precision", "go", "latency"]
    )
    ap.add_argument(
        "--ingest",
        nargs="*",
        type=Path,
        default=[],
        help="modules to ingest (no analyze): ingest time, the data model's share, xrefs latency",
    )
    ap.add_argument(
        "--compare",
        action="store_true",
        help="with --ingest: each module also ingested without the data model (A/B)",
    )
    args = ap.parse_args()
    manifest = json.loads((CORPUS / "MANIFEST.json").read_text())
    modules = args.modules or [m["file"] for m in manifest["modules"] if m["role"] != "named"]
    sample = args.sample
    if args.smoke:
        modules, sample = [SMOKE_MODULE], 20
    with tempfile.TemporaryDirectory(prefix="kbtool-data-") as t:
        tmp = Path(t)
        if args.ingest:
            if args.compare:
                ingest_ab(args.ingest, tmp, 1 if args.smoke else 2)
            ingest_figures(args.ingest, tmp, 1 if args.smoke else 3)
            return
        if "share" not in args.skip:
            corpus_share(modules, sample, tmp)
        if "precision" not in args.skip:
            precision(tmp, args.smoke)
        if not args.smoke and "go" not in args.skip:
            go_recovery(tmp)
        if "latency" not in args.skip:
            latency(SMOKE_MODULE if args.smoke else BIG[args.big], tmp, 1 if args.smoke else 3)


if __name__ == "__main__":
    main()
