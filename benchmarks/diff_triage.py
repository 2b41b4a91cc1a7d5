"""Diff triage on real release pairs (issue 29): where the fixed functions land, relocation
noise, the length of the default `kbtool ui diff`, per-function diff lines before and after
local alignment, and no loss (every modified function reachable from the short view).

Pairs (sources from registries with their ordinary clients, built like benchmarks/programs.py):
- lua 5.4.4 (lupa==2.0 sdist) -> 5.4.6 (lupa==2.2), clang --target=wasm32-wasi -O2. Fixed
  functions: the lua.org bug list of 5.4.4, each mapped to the function its fix changed
  (checked against the two source trees): lua_settop ("'lua_settop' may use an invalid
  pointer to stack"), iter_aux and iter_codes ("'utf8.codes' does not raise an error on
  spurious continuation bytes"), luaD_growstack ("Lua-stack overflow when C stack overflows
  while handling an error", CVE-2022-33099), lua_resetthread ("C-stack overflow with deep
  nesting of coroutine.close"), entergen ("GC not setting a proper target for next cycle
  after a full collection in generational mode": 5.4.6 adds setminordebt() to entergen;
  luaC_fullgc and fullgen have the same source in both releases, the wasm luaC_fullgc only
  changed by inlining fullgen, so it is listed apart as a control, not as a fix).
- sqlite 3.45.3 -> 3.46.1 (better-sqlite3 9.6.0 / 11.3.0 npm tarballs): noise figures only.
- libexpat 2.1.0 -> 2.2.0 and 2.2.0 -> 2.2.1 (node-expat 2.3.13 / 2.3.15 / 2.3.17 npm
  tarballs): a project not used for tuning the rules (docs/DECISIONS.md). In 2.2.0 the
  tokenizer's end-of-input tests were rewritten across xmltok_impl.c (HAS_CHARS and
  REQUIRE_CHARS, with the malformed-input fix of CVE-2016-0718), so about 50 tokenizer functions
  carry new bounds checks; the table says how many of the top 20 they are.
- esbuild-wasm 0.24.0 -> 0.24.2 (`npm pack`, Go): relocation-only functions flagged modified.

The old side is ingested with its name section, the new side stripped (as an analyst gets
it); the fixed functions' new indices come from the new side's named build.

Run:  python benchmarks/diff_triage.py [--pairs lua lz4 sqlite-cve expat esbuild] [--out DIR]
      python benchmarks/diff_triage.py --smoke     # lua only
"""

from __future__ import annotations

import argparse
import io
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import programs as P  # noqa: E402

OUT = Path(os.environ.get("KBTOOL_DIFF_TRIAGE", Path.home() / ".cache" / "kbtool-diff-triage"))

LUA = [
    P.Program(
        "lua",
        v,
        P.Source("pypi", spec, root),
        ("third-party/lua54/*.c",),
        exclude=P._LUA_SKIP,
        includes=("third-party/lua54",),
        defines=P._LUA_DEFS,
        driver=P.LUA_MAIN,
        shim_setjmp=True,
    )
    for v, spec, root in (("5.4.4", "lupa==2.0", "lupa-2.0"), ("5.4.6", "lupa==2.2", "lupa-2.2"))
]
LUA_FIXES = {
    "lua_settop": "'lua_settop' may use an invalid pointer to stack",
    "iter_aux": "'utf8.codes' does not raise an error on spurious continuation bytes",
    "iter_codes": "'utf8.codes' does not raise an error on spurious continuation bytes",
    "luaD_growstack": "Lua-stack overflow when C stack overflows while handling an error",
    "lua_resetthread": "C-stack overflow with deep nesting of coroutine.close",
    "entergen": "GC target after a full collection in generational mode (setminordebt)",
}
# functions whose change is not a fix (inlining only); their rank is printed as a control
CONTROLS = {"lua-5.4.4-5.4.6": {"luaC_fullgc": "same source; changed by inlining fullgen"}}
SQLITE = [p for p in P.PROGRAMS if p.name == "sqlite"]
# a fixed function renamed by the release (the fix is in the function under its new name):
# 5.4.6 keeps lua_resetthread as a wrapper of the new lua_closethread, which the driver
# does not call (so the linker drops the wrapper)
RENAMED = {"lua_resetthread": "lua_closethread"}
# lz4 1.9.3 (lz4==3.1.3 sdist) -> 1.9.4 (lz4==4.3.3): CVE-2021-3520, "memmove() on a negative
# size" in LZ4_decompress_generic (always inlined: the exported decoders carry the fix)
LZ4 = [
    P.Program(
        "lz4",
        v,
        P.Source("pypi", spec, root),
        ("lz4libs/lz4.c", "lz4libs/lz4hc.c", "lz4libs/lz4frame.c", "lz4libs/xxhash.c"),
        includes=("lz4libs",),
        driver=P.LZ4_MAIN,
        extra=("-Wl,--export-all",),
    )
    for v, spec, root in (
        ("1.9.3", "lz4==3.1.3", "lz4-3.1.3"),
        ("1.9.4", "lz4==4.3.3", "lz4-4.3.3"),
    )
]
LZ4_FIXES = {
    "LZ4_decompress_safe": "CVE-2021-3520: negative outputSize reaches memmove (decompress_generic)",
    "LZ4_decompress_safe_partial": "CVE-2021-3520 (same fix, inlined decoder)",
    "LZ4_decompress_safe_forceExtDict": "CVE-2021-3520 (same fix, inlined decoder)",
}
# SQLite with the session extension and every API function kept and exported (--export-all;
# the amalgamation's internals are static), as a library build ships it; sources from better-sqlite3 npm tarballs
_SQLITE_DEFS = (
    "SQLITE_OS_OTHER=1",
    "SQLITE_THREADSAFE=0",
    "SQLITE_TEMP_STORE=3",
    "SQLITE_OMIT_LOAD_EXTENSION=1",
    "SQLITE_OMIT_WAL=1",
    "SQLITE_ENABLE_SESSION=1",
    "SQLITE_ENABLE_PREUPDATE_HOOK=1",
)
SQLITE_PAIRS = {
    "sqlite-3.43.0-3.43.2": (
        ("3.43.0", "8.6.0"),
        ("3.43.2", "9.0.0"),
        {
            "sessionReadRecord": "CVE-2023-7104: sessionReadRecord reads 8 bytes past a "
            "corrupt changeset record"
        },
    ),
    "sqlite-3.39.1-3.40.0": (
        ("3.39.1", "7.6.2"),
        ("3.40.0", "8.0.0"),
        {
            "sqlite3_str_vappendf": "CVE-2022-35737: %q/%Q/%w of a string over 2 GB overflows "
            "an int in sqlite3_str_vappendf"
        },
    ),
}

# libexpat, a project not used for tuning the rules (measured untuned first, see
# docs/DECISIONS.md): sources from the node-expat npm tarballs (deps/libexpat), built with
# the same toolchain as the other pairs. Fixed functions from the release notes (Changes) and
# checked against the two source trees.
EXPAT_MAIN = r"""
#include <stdio.h>
#include <string.h>
#include "expat.h"
int getpid(void) { return 1; } /* wasi-libc has no process id: expat mixes it into its salt */
static int depth, elements;
static void XMLCALL start(void *ud, const XML_Char *name, const XML_Char **atts) {
  (void)ud; (void)name; (void)atts; depth++; elements++;
}
static void XMLCALL end(void *ud, const XML_Char *name) { (void)ud; (void)name; depth--; }
int main(int argc, char **argv) {
  static const char doc[] =
      "<?xml version='1.0'?><!DOCTYPE r [<!ENTITY e 'entity'><!ATTLIST r a CDATA 'x'>]>"
      "<r xmlns:p='urn:p' p:b='1'><p:c>&e;</p:c><d/></r>";
  const char *text = argc > 1 ? argv[1] : doc;
  XML_Parser p = XML_ParserCreateNS(NULL, '|');
  XML_SetElementHandler(p, start, end);
  XML_SetParamEntityParsing(p, XML_PARAM_ENTITY_PARSING_UNLESS_STANDALONE);
  int ok = XML_Parse(p, text, (int)strlen(text), 1);
  printf("%s: %s, %d elements (%s)\n", XML_ExpatVersion(), ok ? "ok" : "error", elements,
         XML_ErrorString(XML_GetErrorCode(p)));
  XML_ParserFree(p);
  return 0;
}
"""
_EXPAT_DEFS = (
    "XML_NS=1",
    "XML_DTD=1",
    "XML_CONTEXT_BYTES=1024",
    "BYTEORDER=1234",
    "HAVE_MEMMOVE=1",
    "_WASI_EMULATED_GETPID=1",
)
# functions of a fix spread over many functions: how many of the top 20 they are
FAMILIES = {
    "expat-2.1.0-2.2.0": (
        "tokenizer (xmltok*.c) functions with 2.2.0's rewritten end-of-input checks",
        r"^(normal|little2|big2|latin1|ascii|utf8|unknown|internal_utf8|internal_utf16)_"
        r"|^(initScan|initUpdatePosition|streqci|findEncoding)$",
    ),
}
EXPAT_PAIRS = {
    "expat-2.1.0-2.2.0": (
        ("2.1.0", "2.3.13"),
        ("2.2.0", "2.3.15"),
        {
            "XML_GetBuffer": "CVE-2015-1283 / CVE-2016-4472: integer overflows in XML_GetBuffer",
            "storeAtts": "CVE-2016-0718: crash on malformed input (NULL attribute id/prefix)",
            "getAttributeId": "CVE-2016-0718: crash on malformed input (NULL prefix)",
        },
    ),
    "expat-2.2.0-2.2.1": (
        ("2.2.0", "2.3.15"),
        ("2.2.1", "2.3.17"),
        {
            # CVE-2016-9063's len * 2 check is under #ifndef XML_CONTEXT_BYTES (not in this
            # build, as not in expat's default one): what changed here is the negative-length
            # and NULL validation of the same release's security fixes (MOX-002, MOX-006)
            "XML_Parse": "negative len / NULL argument checks (2.2.1 security fixes, MOX-002)",
            "entityValueInitProcessor": "CVE-2017-9233: external entity infinite loop DoS",
            "poolGrow": "integer overflow detection in poolGrow (2.2.1 security fixes, #25)",
        },
    ),
}


def expat_programs(pair: str) -> list[P.Program]:
    """The two builds of one libexpat release pair."""
    return [
        P.Program(
            "expat",
            v,
            P.Source("npm", f"node-expat@{b}", "package"),
            tuple(f"deps/libexpat/lib/{m}.c" for m in ("xmlparse", "xmlrole", "xmltok")),
            includes=("deps/libexpat/lib",),
            defines=_EXPAT_DEFS,
            driver=EXPAT_MAIN,
            extra=("-Wl,--export-all",),
        )
        for v, b in EXPAT_PAIRS[pair][:2]
    ]


def sqlite_programs(pair: str) -> list[P.Program]:
    """The two builds of one SQLite release pair."""
    return [
        P.Program(
            "sqlite",
            v,
            P.Source("npm", f"better-sqlite3@{b}", "package"),
            ("deps/sqlite3/sqlite3.c",),
            includes=("deps/sqlite3",),
            defines=_SQLITE_DEFS,
            driver=P.SQLITE_MAIN,
            extra=("-Wl,--export-all",),
        )
        for v, b in SQLITE_PAIRS[pair][:2]
    ]


def kb(args: list[str], db: Path) -> str:
    r = subprocess.run(
        [sys.executable, "-m", "kbtool.cli", "--db", str(db), *args],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "100"},
    )
    if r.returncode:
        raise RuntimeError(f"kbtool {' '.join(args)}: {r.stderr.strip()[-400:]}")
    return r.stdout


def names_of(path: Path) -> dict[str, int]:
    from kbtool.wasm.reader import parse_module

    m = parse_module(path.read_bytes())
    return {n: i for i, n in m.func_names.items()}


def esbuild(out: Path) -> tuple[Path, Path]:
    files = []
    for v in ("0.24.0", "0.24.2"):
        dst = out / f"esbuild-wasm-{v}.wasm"
        if not dst.exists():
            d = out / "dl" / v
            d.mkdir(parents=True, exist_ok=True)
            subprocess.run(
                ["npm", "pack", "--silent", "--pack-destination", str(d), f"esbuild-wasm@{v}"],
                check=True,
                capture_output=True,
            )
            tgz = next(d.glob("*.tgz"))
            with tarfile.open(tgz) as t:
                dst.write_bytes(t.extractfile("package/esbuild.wasm").read())  # type: ignore[union-attr]
        files.append(dst)
    return files[0], files[1]


def measure(
    name: str, old: Path, new: Path, new_named: Path | None, fixes: dict[str, str], work: Path
) -> dict:
    from kbtool.kb.db import open_ro
    from kbtool.render.terminal import triage_counts
    from kbtool.services.code import callee_pairing, diff_lines, disassembly, listing
    from kbtool.services.diff.changelog import changelog
    from kbtool.services.diff.relocation import compare_bodies, module_view
    from kbtool.services.diff.view import read_report

    def _records(conn, vid: int, idx: int):
        """The disassembly records (the listing's note when the body cannot be decoded)."""
        return listing(conn, vid, idx) or disassembly(conn, vid, idx)["mnemonics"]

    db = work / f"{name}.db"
    db.unlink(missing_ok=True)
    kb(["ingest", str(old), "-l", f"{name}-old"], db)
    kb(["ingest", str(new), "-l", f"{name}-new"], db)
    short = kb(["ui", "diff", "1", "2"], db)
    full = kb(["ui", "diff", "1", "2", "--all"], db)
    conn = open_ro(db)
    report, pairing = read_report(conn, 1, 2)
    t0 = time.process_time()
    cl = changelog(conn, report, pairing=pairing)  # the triage step: explain + triage each pair
    triage_cpu = time.process_time() - t0
    counts = triage_counts(cl)
    reach = counts["top"] + counts["more"] + counts["churn"] + counts["layout_only"]
    mods = [c for c in report["changes"] if c["classification"] == "modified"]
    # relocation-only functions still flagged modified (the comparator says same code)
    va = module_view(old.read_bytes())
    vb = module_view(new.read_bytes())
    by_old = {
        c["from_index"]: c["to_index"]
        for c in report["changes"]
        if c["from_index"] is not None and c["to_index"] is not None
    }
    reloc_only = sum(
        1 for c in mods if compare_bodies(va, c["from_index"], vb, c["to_index"], by_old.get).same
    )  # type: ignore[arg-type]
    ranked = [m for m in cl["modified"]]
    same = callee_pairing(conn, 1, 2)
    rank_of = {m["to_index"]: i + 1 for i, m in enumerate(ranked)}
    fixed = []
    if new_named is not None:
        idx = names_of(new_named)
        for fn, why in {
            **fixes,
            **{f"({k})": v for k, v in CONTROLS.get(name, {}).items()},
        }.items():
            fn_name = fn.strip("()")
            i = idx.get(fn_name, idx.get(RENAMED.get(fn_name, "")))
            m = next((m for m in ranked if m["to_index"] == i), None)
            lines = None
            if m is not None:
                a = _records(conn, 1, m["from_index"])
                b = _records(conn, 2, m["to_index"])
                s0 = diff_lines(a, b, align=False)["summary"]
                s1 = diff_lines(a, b, same_callee=same)["summary"]
                lines = (
                    s0["changed"] + s0["deleted"] + s0["inserted"],
                    s1["changed"] + s1["deleted"] + s1["inserted"],
                )
            fixed.append(
                {
                    "function": fn,
                    "bug": why,
                    "rank": rank_of.get(i) if i is not None else None,
                    "reasons": m["reasons"][:2] if m else [],
                    "diff_lines": lines,
                }
            )
    before = after = 0
    for c in mods[:300]:
        a = _records(conn, 1, c["from_index"])
        b = _records(conn, 2, c["to_index"])
        s0 = diff_lines(a, b, align=False)["summary"]
        s1 = diff_lines(a, b, same_callee=same)["summary"]
        before += s0["changed"] + s0["deleted"] + s0["inserted"]
        after += s1["changed"] + s1["deleted"] + s1["inserted"]
    family = None
    if name in FAMILIES and new_named is not None:
        inv = {i: n for n, i in names_of(new_named).items()}
        pat = re.compile(FAMILIES[name][1])
        family = (
            FAMILIES[name][0],
            sum(1 for m in ranked[:20] if pat.search(inv.get(m["to_index"], ""))),
        )
    conn.close()
    return {
        "family": family,
        "pair": name,
        "summary": report["summary"],
        "relocated": cl["groups"]["relocated"],
        "reloc_only_modified": reloc_only,
        "short_lines": short.count("\n"),
        "all_lines": full.count("\n"),
        "modified": len(mods),
        "reachable": reach,
        "fixed": fixed,
        "triage_cpu": triage_cpu,
        "fn_diff_lines": (before, after),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument(
        "--pairs",
        nargs="*",
        default=["lua", "lz4", "sqlite-cve", "esbuild"],
        help="lua lz4 sqlite-cve (both CVE pairs) sqlite-3.43.0-3.43.2 "
        "sqlite-3.39.1-3.40.0 sqlite (3.45.3 -> 3.46.1, noise only) esbuild",
    )
    ap.add_argument("--smoke", action="store_true", help="the lua pair only")
    args = ap.parse_args(argv)
    if args.smoke:
        args.pairs = ["lua"]
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        if "lua" in args.pairs:
            rows = [P.build_one(p, "clang", "O2", out) for p in LUA]
            f = [out / r[0]["file"] for r in rows]
            results.append(
                measure(
                    "lua-5.4.4-5.4.6",
                    f[0],
                    f[1].with_name(f[1].name.replace(".named.", ".stripped.")),
                    f[1],
                    LUA_FIXES,
                    work,
                )
            )
        if "lz4" in args.pairs:
            rows = [P.build_one(p, "clang", "O2", out) for p in LZ4]
            f = [out / r[0]["file"] for r in rows]
            results.append(
                measure(
                    "lz4-1.9.3-1.9.4",
                    f[0],
                    f[1].with_name(f[1].name.replace(".named.", ".stripped.")),
                    f[1],
                    LZ4_FIXES,
                    work,
                )
            )
        for pair, (_a, _b, fixes) in SQLITE_PAIRS.items():
            if pair not in args.pairs and "sqlite-cve" not in args.pairs:
                continue
            rows = [P.build_one(p, "clang", "O2", out) for p in sqlite_programs(pair)]
            f = [out / r[0]["file"] for r in rows]
            results.append(
                measure(
                    pair,
                    f[0],
                    f[1].with_name(f[1].name.replace(".named.", ".stripped.")),
                    f[1],
                    fixes,
                    work,
                )
            )
        for pair, (_a, _b, fixes) in EXPAT_PAIRS.items():
            if pair not in args.pairs and "expat" not in args.pairs:
                continue
            rows = [P.build_one(p, "clang", "O2", out) for p in expat_programs(pair)]
            f = [out / r[0]["file"] for r in rows]
            results.append(
                measure(
                    pair,
                    f[0],
                    f[1].with_name(f[1].name.replace(".named.", ".stripped.")),
                    f[1],
                    fixes,
                    work,
                )
            )
        if "sqlite" in args.pairs:
            rows = [P.build_one(p, "clang", "O2", out) for p in SQLITE]
            f = [out / r[0]["file"] for r in rows]
            results.append(
                measure(
                    "sqlite-3.45.3-3.46.1",
                    f[0],
                    f[1].with_name(f[1].name.replace(".named.", ".stripped.")),
                    f[1],
                    {},
                    work,
                )
            )
        if "esbuild" in args.pairs:
            a, b = esbuild(out)
            results.append(measure("esbuild-wasm-0.24.0-0.24.2", a, b, None, {}, work))
    buf = io.StringIO()
    print(
        f"{'pair':<28} {'modified':>8} {'reloc':>6} {'reloc-only mod':>14} {'ui diff':>8} "
        f"{'--all':>7} {'reachable':>9} {'fn diff lines (before -> after align)':>38} "
        f"{'triage CPU s':>12}",
        file=buf,
    )
    for r in results:
        b, a = r["fn_diff_lines"]
        print(
            f"{r['pair']:<28} {r['modified']:>8} {r['relocated']:>6} "
            f"{r['reloc_only_modified']:>14} {r['short_lines']:>8} {r['all_lines']:>7} "
            f"{r['reachable']:>5}/{r['modified']:<3} {b:>20} -> {a:<14} "
            f"{r['triage_cpu']:>10.2f}",
            file=buf,
        )
    print(
        "\nfixed functions: rank in the default (triage) order ((name): a control, not a fix)",
        file=buf,
    )
    for r in results:
        for f in r["fixed"]:
            dl = f"{f['diff_lines'][0]} -> {f['diff_lines'][1]} lines" if f["diff_lines"] else ""
            print(
                f"  {r['pair']:<24} {f['function']:<18} rank {f['rank'] or '-':>4}  {dl:<18} "
                f"{'; '.join(f['reasons'])[:70]}",
                file=buf,
            )
    for r in results:
        if r.get("family"):
            print(f"  {r['pair']}: {r['family'][1]} of the top 20 are {r['family'][0]}", file=buf)
    sys.stdout.write(buf.getvalue())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
