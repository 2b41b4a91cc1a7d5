"""Types as knowledge: ``kbtool types add/list/show/apply/rename/field/export`` as a user runs
them, the gate's rules (revisions, refusals with nothing written, human over agent), the lifted
C showing ``((struct T *)(M + p0))->field`` and still compiling with the prelude, a recovered
struct renamed, the header export compiling, and the MCP tools over the SDK's stdio client."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from kbtool.kb import knowledge as kn
from kbtool.kb import queries
from kbtool.kb.db import open_ro, open_rw
from kbtool.services import code
from kbtool.services import types as ts

HEADER = """
typedef struct ctx ctx;
struct inner { int a; unsigned char flag; };
struct ctx { int size; ctx *next; struct inner in; long long big; char name[8];
             union { int i; float f; } u; };
enum mode { READ = 1, WRITE = 2 };
"""
GCC = shutil.which("gcc") or shutil.which("clang")


def _kb(db: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "kbtool", "--db", db, *args],
        capture_output=True,
        text=True,
        input=stdin,
        timeout=120,
    )


def _fn(conn, version: int, sig: str = "(i32) -> i32") -> int:
    for f in queries.list_functions(conn, version):
        row = queries.get_function(conn, version, f["index"])
        if f["type"] == sig and not row["imported"] and row["instr_count"] > 10:
            text = code.disassembly(conn, version, f["index"])["lifted_c"]
            if "(M + p0)" in text:
                return f["index"]
    raise AssertionError("no function reading memory through p0")


def _compiles(tmp_path, text: str) -> None:
    import kbtool.lift as lift

    src = tmp_path / "m.c"
    src.write_text(text)
    r = subprocess.run(
        [GCC, "-fsyntax-only", "-w", "-include", lift.prelude_path(), str(src)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[:3000]


def test_cli_add_list_show_apply_and_the_c(demo_kb, tmp_path):
    db = str(demo_kb)
    h = tmp_path / "t.h"
    h.write_text(HEADER)
    r = _kb(db, "types", "add", str(h))
    assert r.returncode == 0, r.stderr
    assert "struct ctx (40 bytes): written" in r.stdout and "4 written" in r.stdout
    assert "unchanged" in _kb(db, "types", "add", str(h)).stdout  # the same again: nothing new
    listed = json.loads(_kb(db, "types", "list", "--json").stdout)
    assert {t["name"] for t in listed["types"]} == {
        "ctx",
        "struct ctx",
        "struct inner",
        "enum mode",
    }
    shown = json.loads(_kb(db, "types", "show", "ctx", "--json").stdout)
    assert shown["kind"] == "typedef" and shown["size"] == 40
    shown = json.loads(_kb(db, "types", "show", "struct ctx", "--json").stdout)
    assert [(f["name"], f["offset"]) for f in shown["fields"]] == [
        ("size", 0),
        ("next", 4),
        ("in", 8),
        ("big", 16),
        ("name", 24),
        ("u", 32),
    ]

    conn = open_ro(db)
    idx = _fn(conn, 2)
    sid = queries.function_at_index(conn, 2, idx)["stable_id"]
    conn.close()
    # bad input: a clear one-line error, nothing written
    for args, why in [
        ([f"2:{idx}", "param", "0", "struct ctx"], "not 'struct ctx'"),
        ([f"2:{idx}", "param", "0", "double"], "is f64"),
        ([f"2:{idx}", "param", "7", "ctx *"], "parameter(s)"),
        ([f"2:{idx}", "param", "0", "struct nope *x y"], "cannot parse the type"),
    ]:
        r = _kb(db, "types", "apply", *args)
        assert r.returncode == 1 and why in r.stderr and r.stderr.count("\n") == 1, (args, r.stderr)
    conn = open_ro(db)
    assert kn.get(conn, "local_type", sid, "0") is None
    conn.close()
    bad = tmp_path / "bad.h"
    bad.write_text("struct ctx { int x : 3; };")
    r = _kb(db, "types", "add", str(bad))
    assert (
        r.returncode == 1
        and "bit-fields are not supported" in r.stderr
        and "line 1, column" in r.stderr
    )

    r = _kb(db, "types", "apply", f"2:{idx}", "param", "0", "ctx *")
    assert r.returncode == 0, r.stderr
    conn = open_ro(db)
    rec = kn.get(conn, "local_type", sid, "0")
    assert rec["value"]["text"] == "ctx *" and rec["provenance"] == "human" and rec["locked"]
    code.clear_cache()
    c = code.disassembly(conn, 2, idx)["lifted_c"]
    assert "((struct ctx *)(M + p0))->" in c
    assert "struct __attribute__((packed)) ctx {" in c and "#ifndef KB_T_ctx" in c
    _compiles(tmp_path, c)
    _compiles(tmp_path, "".join(code.module_c(conn, 2, workers=1)))
    conn.close()

    # a redeclaration is a new revision; a revert restores the first one exactly
    h.write_text("struct inner { int a; unsigned char ready; };")
    assert _kb(db, "types", "add", str(h)).returncode == 0
    conn = open_ro(db)
    assert kn.get(conn, "type", "struct inner")["value"]["fields"][1]["name"] == "ready"
    conn.close()
    assert _kb(db, "types", "revert", "struct inner").returncode == 0
    assert _kb(db, "types", "field", "ctx", "0", "length").returncode == 0  # through the typedef
    conn = open_ro(db)
    assert kn.get(conn, "type", "struct inner")["value"]["fields"][1]["name"] == "flag"
    assert kn.get(conn, "type", "struct ctx")["value"]["fields"][0]["name"] == "length"
    code.clear_cache()
    assert "((struct ctx *)(M + p0))->length" in code.disassembly(conn, 2, idx)["lifted_c"]
    conn.close()

    out = _kb(db, "types", "export").stdout
    hdr = tmp_path / "kb.h"
    hdr.write_text(out + "\nint main(void) { struct ctx c; return (int)sizeof c; }\n")
    r = subprocess.run(
        [GCC, "-fsyntax-only", "-x", "c", str(hdr)], capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 0, r.stderr


def test_agent_never_over_human_and_prototype_struct_params(demo_kb, tmp_path):
    conn = open_rw(demo_kb)
    ts.add_types(conn, HEADER)
    d = ts.add_types(
        conn, "struct ctx { int other; };", provenance="agent", confidence=0.99, actor="agent:x"
    )
    assert (
        d["refused"] == 1
        and kn.get(conn, "type", "struct ctx")["value"]["fields"][0]["name"] == "size"
    )
    idx = _fn(conn, 2)
    from kbtool.services import knowledge as ks

    d = ks.set_prototype(conn, f"2:{idx}", "int f(struct ctx *c)")
    assert d["written"], d
    code.clear_cache()
    c = code.disassembly(conn, 2, idx)["lifted_c"]
    assert "((struct ctx *)(M + c))->" in c and "/* prototype: int f(struct ctx *c) */" in c
    _compiles(tmp_path, c)
    conn.close()


def test_recovered_struct_renamed_and_its_field(demo_kb, tmp_path):
    from kbtool.services.analyze import analyze_version

    conn = open_rw(demo_kb)
    analyze_version(conn, 2)
    st = next(
        s
        for s in queries.structs(conn, 2)
        if len(s["members"]) >= 2 and all(m["base"].startswith("p") for m in s["members"])
    )
    tag = st["name"].removeprefix("struct_")
    fi = st["members"][0]["func_index"]
    code.clear_cache()
    assert f"((struct {tag} *)(M + " in code.disassembly(conn, 2, fi)["lifted_c"]
    conn.close()
    r = _kb(str(demo_kb), "types", "rename", tag, "stream")
    assert r.returncode == 0 and "-> struct stream" in r.stdout, r.stderr
    off = st["fields"][0]["offset"]
    r = _kb(str(demo_kb), "types", "field", "stream", str(off), "flags")
    assert r.returncode == 0, r.stderr
    conn = open_ro(demo_kb)
    t = kn.get(conn, "type", "struct stream")
    assert t["provenance"] == "human" and t["value"]["fields"][0]["name"] == "flags"
    uses = kn.of_kind(conn, "local_type")
    assert uses and all(
        u["provenance"] == "agent" and u["value"]["text"] == "struct stream *" for u in uses
    )
    code.clear_cache()
    c = code.disassembly(conn, 2, fi)["lifted_c"]
    assert "((struct stream *)(M + " in c and f"struct {tag} *" not in c
    _compiles(tmp_path, "".join(code.module_c(conn, 2, workers=1)))
    conn.close()


def test_types_mcp_tools_over_stdio(demo_kb):
    pytest.importorskip("mcp.client.stdio")
    from tests.support.mcp import call, mcp_session, run

    conn = open_ro(demo_kb)
    idx = _fn(conn, 2)
    sid = queries.function_at_index(conn, 2, idx)["stable_id"]
    conn.close()

    async def scenario():
        async with mcp_session(demo_kb) as s:
            names = {t.name for t in (await s.list_tools()).tools}
            assert {"declare_type", "apply_type", "list_types"} <= names
            out = {
                "decl": await call(s, "declare_type", c_declaration=HEADER, confidence=0.7),
                "bad": await call(s, "declare_type", c_declaration="struct x { int a : 1; };"),
                "apply": await call(
                    s, "apply_type", version_id=2, target=f"{idx}:p0", type_name="struct ctx *"
                ),
                "misfit": await call(
                    s, "apply_type", version_id=2, target=f"{idx}:p0", type_name="double"
                ),
                "list": await call(s, "list_types", offset=0, limit=2),
            }
            return out

    out = run(scenario())
    assert out["decl"]["written"] == 4
    assert out["bad"]["written"] == 0 and "bit-fields" in out["bad"]["reason"]
    assert (
        out["apply"]["written"]
        and not out["misfit"]["written"]
        and "f64" in out["misfit"]["reason"]
    )
    assert out["list"]["total"] == 4 and len(out["list"]["types"]) == 2
    conn = open_ro(demo_kb)
    rec = kn.get(conn, "type", "struct ctx")
    assert rec["provenance"] == "agent" and rec["evidence"][0]["actor"] == "agent:mcp"
    assert kn.get(conn, "local_type", sid, "0")["provenance"] == "agent"
    conn.close()


def test_types_travel_in_the_export_and_carry_with_the_function(demo_kb, tmp_path):
    from kbtool.services import names_io

    conn = open_rw(demo_kb)
    ts.add_types(conn, HEADER)
    idx = _fn(conn, 1)
    sid1 = queries.function_at_index(conn, 1, idx)["stable_id"]
    assert ts.apply_local(conn, f"1:{idx}", 0, "struct ctx *", param=True)["written"]
    text = names_io.export_text(conn, 1)
    assert "# knowledge\ttype\t-\tstruct ctx\thuman" in text and "# knowledge\tlocal_type\t" in text
    conn.close()
    # a KB without them imports them through the gate (types in dependency order)
    other = tmp_path / "other.db"
    shutil.copy(demo_kb, other)
    conn = open_rw(other)
    from kbtool.kb.gate import upsert_knowledge

    for r in kn.of_kind(conn, "type") + kn.of_kind(conn, "local_type"):
        assert upsert_knowledge(
            conn,
            r["kind"],
            r["target"],
            r["key"],
            None,
            provenance="human",
            confidence=1.0,
            actor="test",
        )["written"]
    assert kn.get(conn, "type", "struct ctx") is None
    rep = names_io.import_names(conn, text, source="kb.txt", version_id=1)
    assert rep.knowledge["written"] >= 5 and rep.knowledge["refused"] == 0, rep.knowledge
    assert kn.get(conn, "type", "struct ctx")["value"]["size"] == 40
    assert kn.get(conn, "local_type", sid1, "0")["value"]["text"] == "struct ctx *"
    code.clear_cache()
    assert "((struct ctx *)(M + p0))->" in code.disassembly(conn, 1, idx)["lifted_c"]
    # the applied type is the function's: the next release's same function shows it too
    later = [f for f in queries.functions_by_stable_id(conn, sid1) if f["version_id"] == 2]
    if later:
        assert (
            "((struct ctx *)(M + p0))->"
            in code.disassembly(conn, 2, int(later[0]["index"]))["lifted_c"]
        )
    conn.close()
