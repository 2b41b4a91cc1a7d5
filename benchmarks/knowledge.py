"""Knowledge beyond names across releases (issue 27): how much of what was written on release N
(comments, prototypes, local names, line comments) reaches the right function, the right local
and the right line of release N+1, how much lands wrong, and whether the lifted C with the
prototypes applied still compiles.

    python benchmarks/knowledge.py [--smoke] [--max-functions N]

Per release pair of /work/shared/corpus/gt (zstd 1.5.2 -> 1.5.5 -> 1.5.6 -> 1.5.7, -O2; the
stripped build is ingested, the named build of the same compile is the ground truth: same
function indices, a name section):

1. Release N stripped is ingested into a fresh KB and annotated as a reverse engineer would,
   through the gate (human): for every defined function with a unique name in N's name section,
   a function comment ``fn <name>``, a prototype from its wasm signature with named parameters,
   a local name for parameter 0, and a line comment ``calls <callee>`` on up to 3 of its direct
   calls to uniquely named callees. (The corpus has no DWARF and no local-name subsections, so
   the name section is what identifies the annotated functions and lines.)
2. Release N+1 stripped is ingested into the same KB (identity carry-over, name and knowledge
   carry-over of the matched pairs); the knowledge the KB then shows for N+1
   (``services.knowledge.code_knowledge``: what the C and the disassembly show) is scored:
   - function kinds (comment, prototype, local): right when the N+1 function's name (its named
     build) is the name the annotation was written for; wrong otherwise; "carried" = shown
     anywhere / annotated functions whose name exists in N+1;
   - line comments: right when the instruction it is shown on in N+1 is a call to the function
     named as in the text (N+1's name section), wrong otherwise.
3. Compile: the lifted C of every annotated function of N+1 (prototype comment, parameter names,
   comments) concatenated, ``gcc -fsyntax-only -include prelude.h``.

The gate's concurrency figure for the new kinds is tests/unit/kb/test_knowledge_concurrency.py
(8 processes x 120 proposals over every kind; it asserts 0 violations).

``--smoke``: the bundled demo pair (zstd 1.5.5 -> 1.5.6, names from the demo's hand names are
not used: its own stripped modules have no name section, so the smoke run annotates by index
and scores only what it can: carried shares and the compile).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kbtool.kb import queries  # noqa: E402
from kbtool.kb.db import open_rw  # noqa: E402
from kbtool.lift import prelude_path  # noqa: E402
from kbtool.services import code as code_svc  # noqa: E402
from kbtool.services import knowledge as ks  # noqa: E402
from kbtool.services.ingest import ingest_file  # noqa: E402
from kbtool.wasm.instr import decode_one, read_local_decls  # noqa: E402
from kbtool.wasm.opcodes import MNEMONICS  # noqa: E402
from kbtool.wasm.reader import parse_module  # noqa: E402

CORPUS = Path(os.environ.get("KBTOOL_CORPUS", "/work/shared/corpus"))
PAIRS = [("1.5.2", "1.5.5"), ("1.5.5", "1.5.6"), ("1.5.6", "1.5.7")]
C_OF = {"i32": "int", "i64": "long long", "f32": "float", "f64": "double"}
MAX_LINES_PER_FUNCTION = 3


def _gt(path: Path) -> tuple[dict[int, str], object]:
    m = parse_module(path.read_bytes())
    names = dict(m.func_names)
    counts = Counter(names.values())
    return {i: n for i, n in names.items() if counts[n] == 1}, m


def _calls(data: bytes, module, index: int) -> list[tuple[int, int]]:
    """(file offset, callee index) of each direct call in a body."""
    start, end = module.code[index - module.num_func_imports]
    _decls, p = read_local_decls(data, start, end)
    out = []
    while p < end:
        op, p2, imms = decode_one(data, p, end)
        if MNEMONICS[op] == "call":
            out.append((p, imms[0]))
        p = p2
    return out


def _prototype(sig: str, tag: str) -> str:
    from kbtool.kb.knowledge import parse_type_sig

    params, results = parse_type_sig(sig)
    if (
        len(results) > 1
        or any(p not in C_OF for p in params)
        or any(r not in C_OF for r in results)
    ):
        return ""
    ret = C_OF[results[0]] if results else "void"
    args = ", ".join(f"{C_OF[p]} {tag}_a{k}" for k, p in enumerate(params)) or "void"
    return f"{ret} {tag}({args})"


def run_pair(
    old: Path,
    new: Path,
    old_named: Path | None,
    new_named: Path | None,
    max_functions: int,
    workdir: Path,
) -> dict:
    db = workdir / f"kb-{old.stem}-{new.stem}.db"
    conn = open_rw(db, create=True)
    t0 = time.perf_counter()
    ingest_file(conn, old, program="bench")
    old_vid = queries.latest_version_id(conn)
    data = queries.module_bytes(conn, old_vid)
    module = parse_module(data)
    gt_old, _m = _gt(old_named) if old_named else ({}, None)
    by_name_new: dict[str, int] = {}
    gt_new: dict[int, str] = {}
    if new_named:
        gt_new, _m2 = _gt(new_named)
        by_name_new = {n: i for i, n in gt_new.items()}
    annotated: dict[int, str] = {}
    lines = lines_can = locals_can = 0
    for f in queries.list_functions(conn, old_vid):
        idx = f["index"]
        if len(annotated) >= max_functions:
            break
        if idx < module.num_func_imports:
            continue
        name = gt_old.get(idx) if gt_old else f"f{idx}"
        if not name:
            continue
        tag = "k" + str(len(annotated))
        target = f"{old_vid}:{idx}"
        ks.set_comment(conn, target, f"fn {name}")
        proto = _prototype(f["type"], tag)
        if proto:
            ks.set_prototype(conn, target, proto)
        if f["type"].startswith("(") and not f["type"].startswith("()"):
            ks.rename_local(conn, target, "0", f"{tag}_first")
            locals_can += int(not gt_new or name in by_name_new)
        n = 0
        for off, callee in _calls(data, module, idx):
            cname = gt_old.get(callee) if gt_old else None
            if n >= MAX_LINES_PER_FUNCTION or (gt_old and not cname):
                continue
            ks.set_comment(conn, target, f"calls {cname or callee}", line=off)
            n += 1
            lines += 1
            # it can reach N+1 when the function and the callee are both still there
            lines_can += int(not gt_new or (name in by_name_new and cname in by_name_new))
        annotated[idx] = name
    t_annotate = time.perf_counter() - t0
    t1 = time.perf_counter()
    res = ingest_file(conn, new, program="bench")
    new_vid = queries.latest_version_id(conn)
    t_ingest = time.perf_counter() - t1
    known = ks.code_knowledge(conn, new_vid)
    ndata = queries.module_bytes(conn, new_vid)
    nmodule = parse_module(ndata)
    score = {k: Counter() for k in ("comment", "prototype", "local", "line")}
    can_carry = sum(1 for n in annotated.values() if not gt_new or n in by_name_new)
    want_lines = lines_can
    for idx, k in known.items():
        shown_for = (k["comment"] or "").removeprefix("fn ")
        right_fn = (gt_new.get(idx) == shown_for) if gt_new else True
        for kind, present in (
            ("comment", bool(k["comment"])),
            ("prototype", bool(k["prototype"])),
            ("local", 0 in k["locals"]),
        ):
            if present:
                score[kind]["right" if right_fn else "wrong"] += 1
        calls = dict(_calls(ndata, nmodule, idx)) if k["lines"] else {}
        for off, text in k["lines"].items():
            callee = calls.get(off)
            want = text.removeprefix("calls ")
            ok = callee is not None and ((gt_new.get(callee) == want) if gt_new else True)
            score["line"]["right" if ok else "wrong"] += 1
    # compile the C of the annotated functions of N+1
    chunks = [code_svc.disassembly(conn, new_vid, idx)["lifted_c"] for idx in sorted(known)]
    compiled, failed = _compile(chunks, workdir)
    dropped = conn.execute(
        "SELECT COUNT(*) FROM annotation_events WHERE kind = 'carry-dropped'"
    ).fetchone()[0]
    conn.close()
    return {
        "pair": f"{old.name} -> {new.name}",
        "annotated": len(annotated),
        "can_carry": can_carry,
        "lines": lines,
        "want_lines": want_lines,
        "want_locals": locals_can,
        "score": score,
        "compiled": compiled,
        "failed": failed,
        "dropped": dropped,
        "carried_pairs": (res.diff_carry or {}).get("knowledge_carried", 0),
        "t_annotate": t_annotate,
        "t_ingest": t_ingest,
    }


def _compile(chunks: list[str], workdir: Path) -> tuple[int, int]:
    gcc = shutil.which("gcc") or shutil.which("clang")
    if gcc is None or not chunks:
        return 0, 0
    src = workdir / "all.c"
    src.write_text("\n".join(chunks))
    cmd = [gcc, "-fsyntax-only", "-w", "-include", str(prelude_path())]
    if subprocess.run([*cmd, str(src)], capture_output=True).returncode == 0:
        return len(chunks), 0
    bad = 0
    for c in chunks:
        src.write_text(c)
        bad += subprocess.run([*cmd, str(src)], capture_output=True).returncode != 0
    return len(chunks) - bad, bad


def _pct(a: int, b: int) -> str:
    return f"{100.0 * a / b:.1f}%" if b else "n/a"


def report(r: dict) -> None:
    print(
        f"\n{r['pair']}: {r['annotated']} functions annotated ({r['can_carry']} still in N+1),"
        f" {r['lines']} line comments; ingest of N+1 {r['t_ingest']:.1f} s"
    )
    print(
        f"  {'kind':10} {'shown':>6} {'right':>6} {'wrong':>6} {'carried':>8} {'right of shown':>15}"
    )
    for kind in ("comment", "prototype", "local", "line"):
        s = r["score"][kind]
        shown = s["right"] + s["wrong"]
        base = {"line": r["want_lines"], "local": r["want_locals"]}.get(kind, r["can_carry"])
        print(
            f"  {kind:10} {shown:>6} {s['right']:>6} {s['wrong']:>6} {_pct(shown, base):>8}"
            f" {_pct(s['right'], shown):>15}"
        )
    print(f"  line comments dropped with an event: {r['dropped']}")
    print(f"  knowledge written by carry-over of re-identified pairs: {r['carried_pairs']}")
    print(
        f"  lifted C with prototypes applied compiles: {r['compiled']}/{r['compiled'] + r['failed']}"
        f" ({_pct(r['compiled'], r['compiled'] + r['failed'])})"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true", help="the demo pair, 20 functions")
    ap.add_argument("--max-functions", type=int, default=100_000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        if args.smoke:
            demo = ROOT / "kbtool" / "demo"
            report(
                run_pair(demo / "zstd-1.5.5.wasm", demo / "zstd-1.5.6.wasm", None, None, 20, work)
            )
            return
        totals = {k: Counter() for k in ("comment", "prototype", "local", "line")}
        compiled = failed = 0
        for a, b in PAIRS:
            g = CORPUS / "gt"
            r = run_pair(
                g / f"zstd-{a}.O2.stripped.wasm",
                g / f"zstd-{b}.O2.stripped.wasm",
                g / f"zstd-{a}.O2.named.wasm",
                g / f"zstd-{b}.O2.named.wasm",
                args.max_functions,
                work,
            )
            report(r)
            for k in totals:
                totals[k].update(r["score"][k])
            compiled += r["compiled"]
            failed += r["failed"]
        print("\nall pairs:")
        for k, s in totals.items():
            print(
                f"  {k:10} right {s['right']} wrong {s['wrong']}: {_pct(s['right'], s['right'] + s['wrong'])} right of what carries"
            )
        print(f"  compiles: {compiled}/{compiled + failed}")


if __name__ == "__main__":
    main()
