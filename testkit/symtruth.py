"""Precision of the global and data names kbtool writes, against builds with symbols (issue
26): section 2 of ``benchmarks/data_symbols.py``, or alone:

    python -m testkit.symtruth [--smoke] [--only SUBSTRING ...]

Each reference is a build that keeps its symbols and the same build stripped (the layout
is the same): the stripped build is ingested and analysed (``kbtool analyze``) into a fresh
KB, and every name the data model wrote is checked against the truth of the named build:

- **global**: a global's name against the name section's global names (subsection 7);
- **string** (``s_...``): the item's text against the string really at that address in the
  named build (to its NUL), starting at a string start (not right after three printable
  bytes, or at a symbol start), and not a run of printable bytes inside a data symbol that is not text;
- **role** (``errno``, ``malloc_state`` / ``dlmalloc_state``): the item starts at the
  symbol (``errno``; dlmalloc's ``_gm_``), judged where the symbol is known;
- **table** (``strtab_...``, ``ftable_...``): the item starts at a data symbol (a table of
  its own, not the middle of another object), judged where the symbols are known.

Symbols come from wasm-ld's link map (``-Wl,--Map``: clang builds, here and in
``benchmarks/programs.py``'s cache) or from DWARF (``emcc -g``, ``llvm-dwarfdump``: the
program's own variables; Emscripten's prebuilt libc has none). Address labels (``data_..``,
``bss_..``, ``ptrs_..``) state an address, not a name, and are not counted.

Modules: a C program built here (clang with a map; emcc with DWARF), every pair of
``benchmarks/programs.py``'s cache (~/.cache/kbtool-programs; clang pairs with their
maps) and the corpus gt pairs (global names and strings). ``--smoke``: the program built
with clang only.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from bisect import bisect_right
from dataclasses import dataclass, field
from pathlib import Path

from kbtool.kb import datamodel as dm_store
from kbtool.kb.db import open_ro, open_rw
from kbtool.services.analyze import analyze_version
from kbtool.services.ingest import ingest_file
from kbtool.wasm import parse_module
from kbtool.wasm.leb import read_uleb

CORPUS = Path(os.environ.get("KBTOOL_CORPUS", "/work/shared/corpus"))
PROGRAMS = Path(os.environ.get("KBTOOL_PROGRAMS", Path.home() / ".cache" / "kbtool-programs"))
KINDS = ("global", "string", "role", "table")
ROLE_SYMBOLS = {
    "errno": ("errno", "__errno_storage"),
    "malloc_state": ("_gm_",),
    "dlmalloc_state": ("_gm_",),
}
MAX_TEXT = 256

C_PROGRAM = r"""
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
struct op { const char *name; int code; int (*fn)(int); };
static int twice(int x) { return 2 * x; }
static int negate(int x) { return -x; }
static int square(int x) { return x * x; }
struct op ops[] = { {"twice", 1, twice}, {"negate", 2, negate}, {"square", 3, square} };
const char *colours[] = { "crimson", "teal", "amber", "violet", "olive" };
int counters[16];
long long big_total = 1234567890123LL;
static const unsigned char table[64] = { 1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233 };
char scratch[256];
int run(const char *what, int x) {
  for (unsigned i = 0; i < sizeof ops / sizeof ops[0]; i++)
    if (strcmp(ops[i].name, what) == 0) { counters[i]++; return ops[i].fn(x); }
  fprintf(stderr, "unknown operation: %s\n", what);
  return -1;
}
int main(int argc, char **argv) {
  errno = 0;
  long n = argc > 2 ? strtol(argv[2], 0, 10) : 7;
  if (errno == ERANGE) { puts("number out of range"); return 3; }
  int x = (int)n;
  const char *what = argc > 1 ? argv[1] : "twice";
  char *copy = malloc(strlen(what) + 1);
  strcpy(copy, what);
  int r = run(copy, x);
  free(copy);
  snprintf(scratch, sizeof scratch, "result of %s(%d) is %d", what, x, r);
  puts(scratch);
  printf("colour of the day: %s\n", colours[r & 3]);
  printf("table entry %d, total %lld\n", table[x & 63], big_total + counters[0]);
  if (r < 0) { puts("giving up after a bad operation"); return 2; }
  puts("all operations finished without error");
  return 0;
}
"""
C_LITERALS = [
    "twice",
    "negate",
    "square",
    "crimson",
    "teal",
    "amber",
    "violet",
    "olive",
    "unknown operation: %s\n",
    "number out of range",
    "result of %s(%d) is %d",
    "colour of the day: %s\n",
    "table entry %d, total %lld\n",
    "giving up after a bad operation",
    "all operations finished without error",
]
C_SYMBOLS = ("ops", "colours", "counters", "big_total", "table", "scratch")


# ------------------------------------------------------------------ truth


def name_subsection(data: bytes, want: int) -> dict[int, str]:
    """One subsection of the name section: index -> name (7 globals, 9 data segments)."""
    out: dict[int, str] = {}
    for c in parse_module(data).customs:
        if c.name != "name":
            continue
        b, p = c.data, 0
        while p < len(b):
            sub = b[p]
            size, p = read_uleb(b, p + 1, len(b))
            end = p + size
            if sub == want:
                n, q = read_uleb(b, p, end)
                for _ in range(n):
                    idx, q = read_uleb(b, q, end)
                    ln, q = read_uleb(b, q, end)
                    out[idx] = b[q : q + ln].decode("utf-8", "replace")
                    q += ln
            p = end
    return out


def name_section_globals(data: bytes) -> dict[int, str]:
    """wasm-ld's global names (name section, subsection 7)."""
    return name_subsection(data, 7)


def strip_names(data: bytes) -> bytes:
    """The module without its name section (what a stripped release looks like)."""
    m = parse_module(data)
    out = bytearray(data)
    for c in sorted(m.customs, key=lambda c: -c.offset):
        if c.name == "name":
            # offset is the payload start; walk back over the name and the section header
            start = c.offset - len(c.name.encode()) - 1
            k = start - 1
            while k > 0 and out[k - 1] & 0x80:
                k -= 1
            del out[k - 1 : c.offset + len(c.data)]
    return bytes(out)


@dataclass
class Symbols:
    """Data symbols of a build: (address, size or 0 when unknown, name), by address; and
    the ranges of merged string sections (``<internal>``: literals without symbols)."""

    syms: list[tuple[int, int, str]] = field(default_factory=list)
    merged: list[tuple[int, int]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.syms.sort()
        self.starts = [s[0] for s in self.syms]
        self.by_name: dict[str, int] = {}
        for a, _s, n in self.syms:
            self.by_name.setdefault(n, a)

    def enclosing(self, addr: int) -> tuple[int, int, str] | None:
        k = bisect_right(self.starts, addr) - 1
        if k < 0:
            return None
        a, s, n = self.syms[k]
        if s == 0:  # DWARF: to the next symbol
            s = (self.starts[k + 1] if k + 1 < len(self.starts) else a + 1) - a
        return (a, s, n) if addr < a + s else None


_MAP_LINE = re.compile(r"^\s*([0-9a-f]+|-)\s+([0-9a-f]+)\s+([0-9a-f]+) (\s*)(\S.*)$")


def map_symbols(text: str) -> Symbols:
    """Data symbols from a wasm-ld link map (``-Wl,--Map``): the lines 16 columns deep
    (symbols) with an address, under the data output sections."""
    syms: list[tuple[int, int, str]] = []
    merged: list[tuple[int, int]] = []
    for line in text.splitlines():
        m = _MAP_LINE.match(line)
        if m is None or m.group(1) == "-":
            continue
        addr, size, depth, what = (
            int(m.group(1), 16),
            int(m.group(3), 16),
            len(m.group(4)),
            m.group(5),
        )
        if depth >= 16:
            syms.append((addr, size, what.strip()))
        elif depth >= 8 and what.startswith("<internal>:(.rodata"):
            merged.append((addr, size))
    return Symbols(syms, merged)


def dwarf_symbols(wasm: Path) -> Symbols:
    """Global variables with a static address from DWARF (``llvm-dwarfdump``)."""
    tool = shutil.which("llvm-dwarfdump")
    if tool is None:
        return Symbols()
    r = subprocess.run([tool, "--debug-info", str(wasm)], capture_output=True, text=True)
    syms: list[tuple[int, int, str]] = []
    name = None
    for line in r.stdout.splitlines():
        s = line.strip()
        if "DW_TAG_" in s:
            name = None
        elif s.startswith("DW_AT_name"):
            m = re.search(r'\("(.*)"\)', s)
            name = m.group(1) if m else None
        elif s.startswith("DW_AT_location") and "DW_OP_addr" in s and name:
            m = re.search(r"DW_OP_addr (0x[0-9a-f]+)", s)
            if m:
                syms.append((int(m.group(1), 16), 0, name))
    return Symbols(syms)


class Memory:
    """The initial memory image of a build (its active segments)."""

    def __init__(self, data: bytes) -> None:
        self.segs = sorted(
            (s.offset, bytes(s.data))
            for s in parse_module(data).data_segments
            if not s.passive and s.offset is not None and s.memory_index == 0
        )

    def read(self, addr: int, n: int) -> bytes:
        out = bytearray(n)
        for base, d in self.segs:
            lo, hi = max(base, addr), min(base + len(d), addr + n)
            if lo < hi:
                out[lo - addr : hi - addr] = d[lo - base : hi - base]
        return bytes(out)

    def cstring(self, addr: int) -> str | None:
        raw = self.read(addr, 4 * MAX_TEXT + 8)
        end = raw.find(b"\0")
        try:
            return raw[: end if end >= 0 else len(raw)].decode("utf-8")
        except UnicodeDecodeError:
            return None

    def utf16(self, addr: int) -> str | None:
        raw = self.read(addr, 4 * MAX_TEXT + 8)
        k = 0
        while k + 1 < len(raw) and raw[k : k + 2] != b"\0\0":
            k += 2
        try:
            return raw[:k].decode("utf-16-le")
        except UnicodeDecodeError:
            return None


def _texty(b: bytes) -> bool:
    ok = sum(1 for c in b if c == 0 or 32 <= c < 127 or c in (9, 10, 13) or c >= 0x80)
    return ok * 10 >= len(b) * 9


# ------------------------------------------------------------------ judging


@dataclass
class Tally:
    written: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    judged: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    right: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    wrong: list[str] = field(default_factory=list)

    def add(self, other: Tally) -> None:
        for k in KINDS:
            self.written[k] += other.written[k]
            self.judged[k] += other.judged[k]
            self.right[k] += other.right[k]
        self.wrong += other.wrong

    def count(self, kind: str, ok: bool | None, why: str = "") -> None:
        self.written[kind] += 1
        if ok is None:
            return
        self.judged[kind] += 1
        if ok:
            self.right[kind] += 1
        else:
            self.wrong.append(f"{kind}: {why}")


def _string_ok(it: dict, mem: Memory, syms: Symbols | None) -> tuple[bool, str]:
    a, text, kind = it["address"], it["text"] or "", it["kind"]
    label = it["label"]
    if kind == "gostring":
        real = mem.read(a, it["size"]).decode("utf-8", "replace")
    elif kind == "utf16":
        real = mem.utf16(a) or ""
    else:
        real = mem.cstring(a) or ""
    if not (real == text or (len(text) >= MAX_TEXT and real.startswith(text))):
        return False, f"{label} @0x{a:x}: text {text[:40]!r}, memory {real[:40]!r}"
    sym = syms.enclosing(a) if syms is not None and syms.syms else None
    at_start = sym is not None and sym[0] == a
    before = mem.read(a - 3, 3) if a >= 3 else b""
    if kind != "gostring" and before and all(32 <= c < 127 for c in before) and not at_start:
        return False, f"{label} @0x{a:x}: starts inside the text before it"
    if sym is not None and not at_start and not _texty(mem.read(sym[0], min(sym[1], 4096))):
        return False, f"{label} @0x{a:x}: printable bytes inside {sym[2]} (not text)"
    return True, ""


def judge(db: Path, named: bytes, syms: Symbols | None) -> Tally:
    """Every global and data name the KB of the stripped build holds, against the truth."""
    t = Tally()
    truth_g = name_section_globals(named)
    mem = Memory(named)
    conn = open_ro(str(db))
    try:
        for g in dm_store.globals_of(conn, 1):
            if not g["name"]:
                continue
            want = truth_g.get(g["index"])
            t.count(
                "global",
                None if want is None else want == g["name"],
                f"g{g['index']} named {g['name']}, truly {want}",
            )
        items, _ = dm_store.list_items(conn, 1, limit=10_000_000)
    finally:
        conn.close()
    have_syms = syms is not None and bool(syms.syms)
    for it in items:
        label, a = it["label"], it["address"]
        if label.startswith("s_") and it["kind"] in ("cstring", "utf16", "gostring"):
            ok, why = _string_ok(it, mem, syms)
            t.count("string", ok, why)
        elif label in ROLE_SYMBOLS:
            addrs = [syms.by_name[n] for n in ROLE_SYMBOLS[label] if syms and n in syms.by_name]
            t.count(
                "role",
                (a in addrs) if addrs else None,
                f"{label} @0x{a:x}, truly @{', '.join(hex(x) for x in addrs)}",
            )
        elif label.startswith(("strtab_", "ftable_")):
            sym = syms.enclosing(a) if have_syms and syms is not None else None
            t.count(
                "table",
                (sym is not None and sym[0] == a) if have_syms else None,
                f"{label} @0x{a:x} inside {sym[2] if sym else 'no symbol'}"
                + (f"+{a - sym[0]}" if sym else ""),
            )
    return t


# ------------------------------------------------------------------ builds


def kb_of(wasm: Path, d: Path, *, analyze: bool = True) -> tuple[Path, float]:
    """A fresh KB of ``wasm`` (ingest, then ``kbtool analyze``): its path and seconds."""
    db = d / (wasm.stem + (".a" if analyze else ".b") + ".db")
    db.unlink(missing_ok=True)
    t0 = time.perf_counter()
    conn = open_rw(str(db), create=True)
    try:
        ingest_file(conn, str(wasm), label="1")
        if analyze:
            analyze_version(conn, 1)
    finally:
        conn.close()
    return db, time.perf_counter() - t0


def clang_build(src: Path, out: Path, *extra: str) -> bool:
    """clang --target=wasm32-wasi -O2, linked without -O (the driver would run wasm-opt,
    which drops the name section the truth comes from)."""
    clang = shutil.which("clang")
    if clang is None or not Path("/usr/include/wasm32-wasi").is_dir():
        return False
    obj = out.with_suffix(".o")
    base = [clang, "--target=wasm32-wasi", "--sysroot=/usr"]
    r = subprocess.run(
        [*base, "-O2", "-c", "-o", str(obj), str(src)], capture_output=True, text=True
    )
    if r.returncode == 0:
        r = subprocess.run(
            [*base, "-o", str(out), str(obj), "-Wl,--no-gc-sections", *extra],
            capture_output=True,
            text=True,
        )
    if r.returncode != 0:
        print("   clang failed:", r.stderr.strip().splitlines()[-1:] or r.returncode)
        return False
    return True


def emcc_build(src: Path, out: Path) -> bool:
    """emcc -O2 -g (DWARF names the program's variables; the layout is the build's own)."""
    if shutil.which("emcc") is None:
        return False
    r = subprocess.run(
        ["emcc", "-O2", "-g", "-sSTANDALONE_WASM", str(src), "-o", str(out)],
        capture_output=True,
        text=True,
    )
    if r.returncode != 0:
        print("   emcc failed:", r.stderr.strip().splitlines()[-1:] or r.returncode)
    return r.returncode == 0


def strip_all(named: Path, out: Path) -> bytes:
    """Every custom section removed (``wasm-tools strip --all``; else the name section)."""
    tool = shutil.which("wasm-tools")
    if tool is not None:
        subprocess.run([tool, "strip", "--all", str(named), "-o", str(out)], check=True)
    else:
        out.write_bytes(strip_names(named.read_bytes()))
    return out.read_bytes()


# ------------------------------------------------------------------ the run


def references(
    tmp: Path, smoke: bool, only: list[str]
) -> list[tuple[str, Path, Path, Symbols | None]]:
    """(module, named build, stripped build, symbols) of every reference."""
    refs: list[tuple[str, Path, Path, Symbols | None]] = []
    src = tmp / "ops.c"
    src.write_text(C_PROGRAM)
    named = tmp / "ops.clang.named.wasm"
    if clang_build(src, named, f"-Wl,--Map={tmp / 'ops.clang.map'}"):
        strip_all(named, tmp / "ops.clang.stripped.wasm")
        syms = map_symbols((tmp / "ops.clang.map").read_text())
        refs.append(("own C program (clang -O2)", named, tmp / "ops.clang.stripped.wasm", syms))
    if smoke:
        return refs
    named = tmp / "ops.emcc.named.wasm"
    if emcc_build(src, named):
        strip_all(named, tmp / "ops.emcc.stripped.wasm")
        refs.append(
            (
                "own C program (emcc -O2 -g)",
                named,
                tmp / "ops.emcc.stripped.wasm",
                dwarf_symbols(named),
            )
        )
    man = PROGRAMS / "MANIFEST.json"
    if man.exists():
        for m in json.loads(man.read_text())["modules"]:
            if m["role"] != "stripped":
                continue
            pair = m["pair_id"]
            named = PROGRAMS / m["file"].replace(".stripped.", ".named.")
            mp = PROGRAMS / "build" / pair / "out.map"
            if named.exists():
                syms = map_symbols(mp.read_text()) if mp.exists() else None
                refs.append((pair, named, PROGRAMS / m["file"], syms))
    cm = CORPUS / "MANIFEST.json"
    if cm.exists():
        for m in json.loads(cm.read_text())["modules"]:
            named = CORPUS / m["file"].replace(".stripped.", ".named.")
            if m["role"] == "stripped" and named.exists():
                refs.append((m["file"], named, CORPUS / m["file"], None))
    if only:
        refs = [r for r in refs if any(o in r[0] for o in only)]
    return refs


def _pct(right: int, judged: int) -> str:
    return f"{100.0 * right / judged:5.1f}%" if judged else "    - "


def precision(tmp: Path, smoke: bool = False, only: list[str] | None = None) -> Tally:
    """Print the precision table (per module and kind) and return the totals."""
    print(
        "2. precision of the global and data names kbtool writes, against builds with symbols"
        " (right/judged per kind; written names not judged: no truth for them)"
    )
    head = "   " + f"{'module':34}" + "".join(f"{k:>18}" for k in KINDS) + f"{'all':>14}"
    print(head)
    total = Tally()
    own: list[tuple[str, str]] = []
    for name, named, stripped, syms in references(tmp, smoke, only or []):
        db, _secs = kb_of(stripped, tmp)
        t = judge(db, named.read_bytes(), syms)
        if name.startswith("own C program") and syms is not None:
            own.append((name, _program_items(db, syms)))
        db.unlink(missing_ok=True)
        total.add(t)
        r, j = sum(t.right.values()), sum(t.judged.values())
        cells = "".join(
            f"{t.right[k]:>5}/{t.judged[k]:<5}{_pct(t.right[k], t.judged[k]):>7}" for k in KINDS
        )
        print(f"   {name[:34]:34}{cells}{r:>6}/{j:<5}{_pct(r, j)}")
        for w in t.wrong[:3]:
            print(f"   {'':34}  wrong {w[:110]}")
    r, j = sum(total.right.values()), sum(total.judged.values())
    cells = "".join(
        f"{total.right[k]:>5}/{total.judged[k]:<5}{_pct(total.right[k], total.judged[k]):>7}"
        for k in KINDS
    )
    print(f"   {'all':34}{cells}{r:>6}/{j:<5}{_pct(r, j)}")
    unj = {k: total.written[k] - total.judged[k] for k in KINDS}
    print(f"   written but not judged (no truth): {', '.join(f'{k} {v}' for k, v in unj.items())}")
    g = total.right["global"], total.judged["global"]
    print(
        f"   global names: {g[0]}/{g[1]} written names right ({_pct(*g).strip()});"
        f" all names: {r}/{j} right ({_pct(r, j).strip()}, goal >= 99 %)"
    )
    for name, line in own:
        print(f"   {name}: {line}")
    return total


def _program_items(db: Path, syms: Symbols) -> str:
    """Which of the program's own data symbols start a data item, and its literals found."""
    conn = open_ro(str(db))
    try:
        items, _ = dm_store.list_items(conn, 1, limit=10_000_000)
    finally:
        conn.close()
    starts = {i["address"] for i in items}
    mine = {n: syms.by_name[n] for n in C_SYMBOLS if n in syms.by_name}
    hit = [n for n, a in mine.items() if a in starts]
    texts = {i["text"] for i in items if i["text"]}
    found = [lit for lit in C_LITERALS if lit in texts]
    return (
        f"data symbols starting an item {len(hit)}/{len(mine)}"
        f"{' (missed ' + ', '.join(sorted(set(mine) - set(hit))) + ')' if len(hit) < len(mine) else ''};"
        f" literals recovered as items {len(found)}/{len(C_LITERALS)}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--only", nargs="*", default=[], help="modules whose name has one of these")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="kbtool-names-") as t:
        precision(Path(t), args.smoke, args.only)


if __name__ == "__main__":
    main()
