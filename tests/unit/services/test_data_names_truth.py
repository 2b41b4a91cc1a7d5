"""The precision check of data names against builds with symbols (issue 26,
``testkit/symtruth.py``, section 2 of ``benchmarks/data_symbols.py``): wasm-ld link maps are
read into data symbols, and on a C program built here every global, string, role and table
name kbtool writes on the stripped build is judged right; a truth that disagrees makes the
judge say which name is wrong."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from testkit.symtruth import Symbols, judge, kb_of, map_symbols, references

MAP = """\
    Addr      Off     Size Out     In      Symbol
       -      31c        a GLOBAL
     400    5c1a6      200 .rodata
     400    5c1ae       ff         <internal>:(.rodata)
     500    5c2ae       68         /tmp/c.o:(.rodata.kRanges)
     500    5c2ae       68                 kRanges
     570    5c31e       10         /tmp/c.o:(.rodata.azType)
     570    5c31e       10                 azType
"""


def test_link_map_data_symbols():
    s = map_symbols(MAP)
    assert [(a, n) for a, _s, n in s.syms] == [(0x500, "kRanges"), (0x570, "azType")]
    assert s.merged == [(0x400, 0xFF)]
    assert s.enclosing(0x574) == (0x570, 0x10, "azType")
    assert s.enclosing(0x56C) is None  # padding between two symbols


@pytest.mark.skipif(
    shutil.which("clang") is None or not Path("/usr/include/wasm32-wasi").is_dir(),
    reason="needs clang and wasi-libc",
)
def test_names_on_a_program_built_here_are_judged_right(tmp_path):
    refs = references(tmp_path, True, [])
    assert refs, "the program did not build"
    _name, named, stripped, syms = refs[0]
    assert syms is not None and "_gm_" in syms.by_name and "colours" in syms.by_name
    db, _ = kb_of(stripped, tmp_path)
    t = judge(db, named.read_bytes(), syms)
    for kind in ("global", "string", "role", "table"):
        assert t.judged[kind] >= 1 and t.right[kind] == t.judged[kind], (kind, t.wrong)
    # the same names against a truth that has the malloc state and the table elsewhere
    moved = Symbols(
        [(a + (16 if n in ("_gm_", "colours") else 0), s, n) for a, s, n in syms.syms],
        syms.merged,
    )
    bad = judge(db, named.read_bytes(), moved)
    assert bad.right["role"] < bad.judged["role"] and bad.right["table"] < bad.judged["table"]
    assert any(w.startswith(("role: malloc_state", "role: dlmalloc_state")) for w in bad.wrong)
    assert any(w.startswith("table: strtab_crimson") for w in bad.wrong)
