"""Two different programs linked against the same libc (clang + wasi-libc) stay apart (issue 23):
the lineage overlap is measured on each program's own code, so the shared printf/malloc/qsort
does not merge them and no name crosses from one program to the other."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from kbtool.kb import queries
from kbtool.kb.db import open_rw
from kbtool.services.ingest import ingest_file
from kbtool.services.lineage import module_rows, own_profile, pair_overlap, parse_ranges, ranges
from kbtool.wasm import analyze_module

# two different programs, both using a good chunk of libc (stdio, malloc, qsort, strings)
INVENTORY = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
struct item { char name[24]; int qty; double price; };
static int by_name(const void *a, const void *b) {
  return strcmp(((const struct item *)a)->name, ((const struct item *)b)->name);
}
static struct item *load(int n) {
  struct item *v = calloc(n, sizeof *v);
  for (int i = 0; i < n; i++) {
    snprintf(v[i].name, sizeof v[i].name, "part-%04d", (i * 7919) % 1000);
    v[i].qty = (i * 31) % 17; v[i].price = 1.25 * (i % 13);
  }
  return v;
}
static double total(const struct item *v, int n) {
  double t = 0; for (int i = 0; i < n; i++) t += v[i].qty * v[i].price; return t;
}
int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 64;
  struct item *v = load(n);
  qsort(v, n, sizeof *v, by_name);
  char *first = strdup(v[0].name);
  printf("%d items, first %s, total %.2f, %s\n", n, first, total(v, n), strchr(first, '-'));
  free(first); free(v); return 0;
}
"""

WORDS = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ctype.h>
static int cmp_len(const void *a, const void *b) {
  size_t x = strlen(*(char *const *)a), y = strlen(*(char *const *)b);
  return x < y ? 1 : x > y ? -1 : strcmp(*(char *const *)a, *(char *const *)b);
}
static char *lower(const char *s) {
  char *o = malloc(strlen(s) + 1), *p = o;
  while (*s) *p++ = (char)tolower((unsigned char)*s++);
  *p = 0; return o;
}
static unsigned hash(const char *s) { unsigned h = 5381; while (*s) h = h * 33 ^ (unsigned char)*s++; return h; }
int main(int argc, char **argv) {
  const char *text = argc > 1 ? argv[1] : "The Quick brown Fox jumps over the lazy DOG again";
  char *copy = strdup(text), *save = NULL, *words[64]; int n = 0;
  for (char *w = strtok_r(copy, " ", &save); w && n < 64; w = strtok_r(NULL, " ", &save))
    words[n++] = lower(w);
  qsort(words, n, sizeof *words, cmp_len);
  for (int i = 0; i < n; i++) { fprintf(stdout, "%-8s %08x %zu\n", words[i], hash(words[i]), strlen(words[i])); free(words[i]); }
  fputs(n > 3 ? "many\n" : "few\n", stderr);
  free(copy); return 0;
}
"""


def _build(tmp: Path, name: str, src: str) -> Path:
    clang = shutil.which("clang")
    if clang is None or not Path("/usr/lib/wasm32-wasi/libc.a").exists():
        pytest.skip("clang or Debian wasi-libc not installed")
    c = tmp / f"{name}.c"
    c.write_text(src)
    out = tmp / f"{name}.wasm"
    bindir = tmp / "bin"
    bindir.mkdir(exist_ok=True)
    for tool in ("clang", "wasm-ld", "wasm-ld-14"):  # no wasm-opt: the plain link
        if shutil.which(tool) and not (bindir / tool).exists():
            (bindir / tool).symlink_to(shutil.which(tool))
    r = subprocess.run(
        [
            str(bindir / "clang"),
            "--target=wasm32-wasi",
            "--sysroot=/usr",
            "-O2",
            str(c),
            "-o",
            str(out),
        ],
        capture_output=True,
        text=True,
        env={"PATH": str(bindir)},
    )
    if r.returncode:
        pytest.skip(f"wasi-libc link failed (compiler-rt for wasm32 missing?): {r.stderr[:200]}")
    return out


def test_two_programs_sharing_wasi_libc_stay_apart_and_carry_no_names(tmp_path):
    inv, words = _build(tmp_path, "inventory", INVENTORY), _build(tmp_path, "words", WORDS)
    conn = open_rw(tmp_path / "kb.db")
    first = ingest_file(conn, inv, label="inventory-1.0")
    second = ingest_file(conn, words, label="words-1.0")
    assert first.program == "inventory" and second.program == "words"
    assert second.new_program and second.parent_version_id is None, second.lineage_text
    rec = second.lineage
    assert rec["basis"] in ("own", "own-small") and rec["library_functions"] > 0
    # nothing of inventory's reached words: no shared identity, no carried name
    theirs = {r["stable_id"] for r in queries.matching_rows(conn, first.version_id)}
    mine = {r["stable_id"] for r in queries.matching_rows(conn, second.version_id)}
    assert not theirs & mine
    names = queries.annotations_by_index(conn, second.version_id, defined_only=True)
    assert not [a for a in names.values() if a["provenance"] == "diff-carry"]


def test_shared_libc_is_what_the_old_measure_counted(tmp_path):
    """The runtime the two programs share is recognised as library code, and without it
    the own code of the two has nothing in common; the same program rebuilt is related."""
    inv, words = _build(tmp_path, "inventory", INVENTORY), _build(tmp_path, "words", WORDS)
    d1, d2 = inv.read_bytes(), words.read_bytes()
    r1, r2 = module_rows(analyze_module(d1), d1), module_rows(analyze_module(d2), d2)
    everything = [(b, s, n, False) for b, s, n, _ in r1.rows]
    shared = {(b, s) for b, s, n, _ in r2.rows}
    common = [row for row in everything if (row[0], row[1]) in shared and row[2] >= 8]
    assert common, "the two programs should share libc bodies"
    lib1 = {(b, s) for b, s, _, lib in r1.rows if lib}
    assert sum(1 for b, s, *_ in common if (b, s) in lib1) >= len(common) // 2
    ov, prof = pair_overlap(r2, r1)
    assert ov == 0.0 and prof.size > 0
    assert pair_overlap(r1, r1)[0] == 1.0
    assert own_profile(everything).size > own_profile(r1.rows).size


def test_library_ranges_round_trip():
    assert ranges([7, 1, 2, 3, 9, 10]) == "1-3,7,9-10"
    assert parse_ranges("1-3,7,9-10") == {1, 2, 3, 7, 9, 10}
    assert parse_ranges("") == set() and parse_ranges("x,2") == {2}
