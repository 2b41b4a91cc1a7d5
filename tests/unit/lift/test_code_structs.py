"""Struct fields in the lifted C once ``kbtool analyze`` knows a struct (issue 13, point 2).

On the demo KB (two real zstd releases): before ``analyze`` the C reads memory as
``*(int32_t *)(M + p0 + 24)``; after it, the same access through a recovered struct parameter
reads ``((struct f34_p0 *)(M + p0))->field_24``, with the struct declared (packed, padded to
the recorded offsets) before the function. The whole version still compiles with the
prelude; every declared field sits at its recorded offset (``_Static_assert(offsetof)``);
hostile struct and field names stay identifiers; overlapping, narrow and far fields keep
the plain access.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from kbtool.cli import main
from kbtool.kb import queries
from kbtool.kb.db import open_ro
from kbtool.lift import prelude_path
from kbtool.services import code

needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
STDIO_WRITE = 34  # __stdio_write in the demo's zstd 1.5.6: a FILE * in p0


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory) -> Path:
    db = tmp_path_factory.mktemp("structs") / "kb.db"
    assert main(["--db", str(db), "demo"]) == 0
    return db


def _gcc(text: str, tmp_path: Path, name: str) -> subprocess.CompletedProcess:
    src = tmp_path / name
    src.write_text(text)
    return subprocess.run(
        ["gcc", "-fsyntax-only", "-w", "-include", str(prelude_path()), str(src)],
        capture_output=True,
        text=True,
    )


@needs_gcc
def test_analyze_turns_struct_accesses_into_fields(demo_db, tmp_path):
    conn = open_ro(demo_db)
    try:
        before = code.disassembly(conn, 2, STDIO_WRITE)["lifted_c"]
        # before the analysis: the function's own view of p0 (kbtool.lift.lifter.views)
        assert "))->" not in before and "P0->field_24" in before
        token = queries.change_token(conn)
        assert main(["--db", str(demo_db), "analyze", "2"]) == 0
        assert queries.change_token(conn) != token  # the analysis run is a change
        after = code.disassembly(conn, 2, STDIO_WRITE)["lifted_c"]
        assert "((struct f34_p0 *)(M + p0))->field_24" in after
        assert "struct __attribute__((packed)) f34_p0 {" in after
        # overlapping with field_16 (8 bytes at 16): field_20 reads through the function's view
        assert "P0->field_20" in after and "(M + p0 + 20)" not in after
        whole = "".join(code.module_c(conn, 2, workers=1))
    finally:
        conn.close()
    assert whole.count("))->") > 100
    p = _gcc(whole, tmp_path, "v2.c")
    assert p.returncode == 0, p.stderr[:2000]


@needs_gcc
def test_every_declared_field_is_at_its_offset(demo_db, tmp_path):
    conn = open_ro(demo_db)
    try:
        if not queries.structs(conn, 2):
            assert main(["--db", str(demo_db), "analyze", "2"]) == 0
        fields = code.StructFields(queries.structs(conn, 2))
    finally:
        conn.close()
    assert fields and len(fields.layouts) > 20
    lines = ["#include <stddef.h>"]
    for tag, members, decl in fields.layouts:
        lines.append(decl)
        for off, (_ct, name) in members.items():
            lines.append(
                f'_Static_assert(offsetof(struct {tag}, {name}) == {off}, "{tag}.{name}");'
            )
    p = _gcc("\n".join(lines) + "\n", tmp_path, "layouts.c")
    assert p.returncode == 0, p.stderr[:2000]


@needs_gcc
def test_hostile_struct_and_field_names_stay_identifiers(tmp_path):
    hostile = "int */ } ; #define x"
    fields = code.StructFields(
        [
            {
                "name": hostile,
                "fields": [
                    {"offset": 0, "size": 4, "type": "i32", "name": hostile},
                    {"offset": 2, "size": 4, "type": "i32", "name": "overlaps"},  # dropped
                    {"offset": 8, "size": 1, "type": "i32", "name": "narrow"},  # dropped
                    {"offset": 12, "size": 8, "type": "f64", "name": "int"},  # a keyword
                    {"offset": 1 << 20, "size": 4, "type": "i32", "name": "far"},  # dropped
                ],
                "members": [{"func_index": 1, "base": "p0"}, {"func_index": 1, "base": "p0@8"}],
            },
            {"name": "struct_empty", "fields": [], "members": [{"func_index": 2, "base": "p0"}]},
        ]
    )
    ((tag, members, decl),) = fields.layouts
    assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", tag)
    assert sorted(members) == [0, 12]
    assert all(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", n) for _c, n in members.values())
    assert members[12] == ("double", "int_12")
    assert fields.members == {(1, 0): 0}
    src = decl + f"\nstruct {tag} *p; double f(void) {{ return p->int_12 + p->{members[0][1]}; }}\n"
    p = _gcc(src, tmp_path, "hostile.c")
    assert p.returncode == 0, p.stderr[:2000]
    assert "*/" not in decl.split("\n", 2)[2] and "#define x" not in decl
