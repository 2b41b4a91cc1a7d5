"""Go bodies keep their shape across a release (issue 29.5): a Go function carries its own
function number and its callees' (return PCs and function values ``(PC_F << 16) | PC_B``)
and static addresses as i64 constants; the shape hash normalises them, and the KB
migration to schema 8 recomputes stored shape hashes from the stored module bytes.

Two real Go builds (``go build``, GOOS=js): v1 and v2 differ by one extra package linked in
(unicode/utf8 code and strings used in main), which shifts function numbers and data."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from kbtool.kb import schema
from kbtool.kb.db import open_ro, open_rw
from kbtool.services.diff.relocation import compare_bodies, module_view
from kbtool.services.ingest import ingest_file
from kbtool.wasm.facts import analyze_module, is_go_module
from kbtool.wasm.reader import parse_module

V1 = """package main

import (
	"fmt"
	"os"
	"strings"
)

type greeter struct{ name string }

func (g *greeter) Greet(w *strings.Builder) { fmt.Fprintf(w, "hello, %s\\n", g.name) }

func main() {
	who := "wasm"
	if len(os.Args) > 1 {
		who = os.Args[1]
	}
	var b strings.Builder
	(&greeter{name: who}).Greet(&b)
	fmt.Print(strings.ToUpper(b.String()))
}
"""

# v2: one more package in the link (sort, before main in link order) and a new string
V2 = V1.replace('"strings"\n)', '"sort"\n\t"strings"\n)').replace(
    "\tfmt.Print(strings.ToUpper(b.String()))",
    '\tw := strings.Fields(b.String() + " zz aa")\n\tsort.Strings(w)\n'
    '\tfmt.Print(strings.ToUpper(strings.Join(w, " ")))',
)


@pytest.fixture(scope="module")
def go_pair(tmp_path_factory) -> tuple[Path, Path]:
    if shutil.which("go") is None:
        pytest.skip("go toolchain not on PATH (apt-get install golang-go)")
    out = tmp_path_factory.mktemp("go-pair")
    env = {
        **os.environ,
        "CGO_ENABLED": "0",
        "GOOS": "js",
        "GOARCH": "wasm",
        "GOFLAGS": "-trimpath",
        "GO111MODULE": "off",
        "GOCACHE": os.environ.get("GOCACHE", "/tmp/kbtool-go-cache"),
    }
    files = []
    for name, src in (("v1", V1), ("v2", V2)):
        d = out / name
        d.mkdir()
        (d / "main.go").write_text(src)
        subprocess.run(
            ["go", "build", "-o", str(out / f"{name}.wasm"), "main.go"],
            cwd=d,
            env=env,
            check=True,
            capture_output=True,
        )
        files.append(out / f"{name}.wasm")
    return files[0], files[1]


def _named_pairs(a: bytes, b: bytes) -> list[tuple[int, int]]:
    na = {n: i for i, n in parse_module(a).func_names.items()}
    nb = {n: i for i, n in parse_module(b).func_names.items()}
    return [(i, nb[n]) for n, i in na.items() if n in nb]


def test_go_release_pair_keeps_shapes(go_pair):
    a, b = (p.read_bytes() for p in go_pair)
    assert is_go_module(parse_module(a))
    fa = {f.index: f for f in analyze_module(a).functions}
    fb = {f.index: f for f in analyze_module(b).functions}
    pairs = _named_pairs(a, b)
    by_old = dict(pairs)
    shifted = sum(1 for i, j in pairs if i != j)
    assert shifted > 100, "v2 must shift function numbers for the test to mean something"
    va, vb = module_view(a), module_view(b)
    same_code = [
        (i, j)
        for i, j in pairs
        if not fa[i].imported and compare_bodies(va, i, vb, j, by_old.get).same
    ]
    equal = sum(1 for i, j in same_code if fa[i].shape_hash == fb[j].shape_hash)
    # relocation alone (function numbers, return PCs, static addresses) keeps the shape
    assert len(same_code) > 500
    assert equal >= 0.88 * len(same_code), (equal, len(same_code))  # before: 46 %
    # a function that calls something else still has another shape
    main_a = next(i for i, j in pairs if parse_module(a).func_names[i] == "main.main")
    assert fa[main_a].shape_hash != fb[by_old[main_a]].shape_hash


def test_schema_8_recomputes_go_shape_hashes(go_pair, tmp_path):
    db = tmp_path / "kb.db"
    conn = open_rw(db)
    r1 = ingest_file(conn, go_pair[0], label="v1")
    r2 = ingest_file(conn, go_pair[1], label="v2")
    truth = {f.index: f.shape_hash for f in analyze_module(go_pair[1].read_bytes()).functions}
    carried_same = conn.execute(
        "SELECT count(*) FROM functions WHERE version_id = ? AND prev_index IS NOT NULL"
        " AND body_changed = 0 AND imported = 0",
        (r2.version_id,),
    ).fetchone()[0]
    # an old KB: schema 7, shape hashes as the old code stored them (here: garbage), every
    # carried function marked changed
    conn.execute("UPDATE functions SET shape_hash = 'old-' || idx WHERE imported = 0")
    conn.execute("UPDATE functions SET body_changed = 1 WHERE prev_index IS NOT NULL")
    conn.execute("UPDATE meta SET value = '7' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    with pytest.raises(Exception, match="schema 7"):
        open_ro(db)
    conn = open_rw(db)  # migrates
    assert schema.read_schema_version(conn) == schema.SCHEMA_VERSION >= 8
    got = dict(
        conn.execute(
            "SELECT idx, shape_hash FROM functions WHERE version_id = ? AND imported = 0",
            (r2.version_id,),
        ).fetchall()
    )
    assert got == {i: h for i, h in truth.items() if i in got}
    assert not any(h.startswith("old-") for h in got.values())
    again = conn.execute(
        "SELECT count(*) FROM functions WHERE version_id = ? AND prev_index IS NOT NULL"
        " AND body_changed = 0 AND imported = 0",
        (r2.version_id,),
    ).fetchone()[0]
    assert again == carried_same > 0
    assert r1.version_id != r2.version_id
    conn.close()
