"""The code service (kbtool.services.code) and its CLI: ``kbtool code``, ``kbtool ui diff --function``.

On a two-release module built byte by byte (tests/support/codefixtures.py): disassembly and C with the
KB's names, bad input on every path, untrusted text shown literally, the call graph, and the
per-function diff marking changed constants, offsets and callees.
"""

from __future__ import annotations

import json
import shutil

import pytest

from kbtool.cli import main
from kbtool.kb import queries
from kbtool.kb.db import open_ro, open_rw
from kbtool.kb.errors import (
    ImportedFunctionError,
    ModuleBytesMissingError,
    UnknownFunctionError,
    UnknownVersionError,
)
from kbtool.kb.gate import upsert_symbol
from kbtool.services import code
from tests.support.codefixtures import (  # noqa: F401  (fixtures)
    BIG_REPEAT,
    HOSTILE_NAME,
    code_kb_fixture,
    code_kb_no_bytes_fixture,
)

GREET, HELPER_A, HELPER_B, MAIN, BIG = 1, 2, 3, 4, 5
ESCAPED_NAME = HOSTILE_NAME.replace("\x1b", "\\x1b")


@pytest.fixture
def conn(code_kb):
    c = open_ro(code_kb)
    yield c
    c.close()


def test_disassembly_has_names_strings_and_c(conn):
    d = code.disassembly(conn, 1, MAIN)
    assert {
        "mnemonics",
        "lifted_c",
        "func_index",
        "stable_id",
        "name",
        "truncated",
        "reason",
    } <= set(d)
    assert d["func_index"] == MAIN and d["name"] == "main" and d["provenance"] == "export"
    assert d["stable_id"] == queries.get_function(conn, 1, MAIN)["stable_id"]
    assert "call $greet" in d["mnemonics"] and "i32.const 100" in d["mnemonics"]
    assert "int32_t main_4(int32_t p0)" in d["lifted_c"] and "+ 100" in d["lifted_c"]
    assert d["truncated"] is False and d["reason"] is None
    lines = d["mnemonics"].splitlines()
    assert [lines[n - 1].split()[-1] for n, _ in d["call_lines"]] == [
        ESCAPED_NAME[ESCAPED_NAME.rfind(" ") + 1 :],
        "$greet",
    ]
    assert [i for _, i in d["call_lines"]] == [HELPER_A, GREET]


def test_untrusted_strings_are_literal(conn):
    greet = code.disassembly(conn, 1, GREET)
    assert "</script><b>x</b>[bold red]markup[/] " in greet["mnemonics"]  # the data note
    assert "</script>" in greet["lifted_c"]
    main_ = code.disassembly(conn, 1, MAIN)
    assert ESCAPED_NAME in main_["mnemonics"]  # the export name
    for text in (greet["mnemonics"], greet["lifted_c"], main_["mnemonics"], main_["lifted_c"]):
        assert "\x1b" not in text and "\x07" not in text


def test_big_function_is_whole(conn):
    d = code.disassembly(conn, 1, BIG)
    assert d["mnemonics"].count("\n") == 4 * BIG_REPEAT + 3  # header, instructions, end
    # every one of the 2,500 `p0 = p0 + k` statements is there (`p0 += k`, `p0++` for k = 1)
    statements = [ln for ln in d["lifted_c"].splitlines() if ln.startswith(("  p0 +=", "  p0++"))]
    assert not d["truncated"] and len(statements) == BIG_REPEAT


def test_bad_input_errors(conn, code_kb_no_bytes):
    with pytest.raises(UnknownFunctionError, match="has no function 6 .*0..5"):
        code.disassembly(conn, 1, 6)
    with pytest.raises(UnknownFunctionError, match="no function -1"):
        code.disassembly(conn, 1, -1)
    with pytest.raises(ImportedFunctionError, match=r"is an import \(env.log\)"):
        code.disassembly(conn, 1, 0)
    with pytest.raises(UnknownVersionError, match="unknown version id 9; known version ids: 1, 2"):
        code.disassembly(conn, 9, 1)
    with pytest.raises(UnknownVersionError):
        code.callgraph(conn, 9)
    nb = open_ro(code_kb_no_bytes)
    try:
        with pytest.raises(ModuleBytesMissingError, match="bytes of version 2 are not in the KB"):
            code.disassembly(nb, 2, 1)
        with pytest.raises(ModuleBytesMissingError):
            code.callgraph(nb, 2)
        assert code.disassembly(nb, 1, MAIN)["name"] == "main"
    finally:
        nb.close()


def test_rename_is_seen_on_the_next_call(code_kb, tmp_path):
    db = tmp_path / "kb.db"
    shutil.copy(code_kb, db)
    ro = open_ro(db)
    try:
        assert "call $greet" in code.disassembly(ro, 1, MAIN)["mnemonics"]
        assert code.callgraph(ro, 1)["nodes"][GREET]["provenance"] == "export"
        rw = open_rw(db)
        sid = queries.get_function(rw, 1, GREET)["stable_id"]
        upsert_symbol(rw, sid, "say_hello", provenance="human", confidence=1.0, actor="human:test")
        rw.close()
        d = code.disassembly(ro, 1, MAIN)
        assert "call $say_hello" in d["mnemonics"] and "say_hello(" in d["lifted_c"]
        assert code.disassembly(ro, 1, GREET)["name"] == "say_hello"
        node = code.callgraph(ro, 1)["nodes"][GREET]
        assert node["name"] == "say_hello" and node["provenance"] == "human"
        assert node["status"] == "named"
    finally:
        ro.close()


def test_callgraph(conn):
    g = code.callgraph(conn, 1)
    nodes = {n["index"]: n for n in g["nodes"]}
    assert sorted(nodes) == [0, 1, 2, 3, 4, 5]
    assert nodes[0]["status"] == "import" and nodes[0]["imported"]
    assert nodes[MAIN]["status"] == "named" and nodes[MAIN]["provenance"] == "export"
    assert nodes[HELPER_B]["status"] == "unnamed" and nodes[HELPER_B]["provenance"] is None
    assert all(
        n["stable_id"] == queries.get_function(conn, 1, i)["stable_id"] for i, n in nodes.items()
    )
    edges = {(e["caller"], e["callee"], e["kind"]) for e in g["edges"]}
    assert edges == {(MAIN, HELPER_A, "direct"), (MAIN, GREET, "direct"), (GREET, 0, "direct")}
    two = {(e["caller"], e["callee"]) for e in code.callgraph(conn, 2)["edges"]}
    assert (MAIN, HELPER_B) in two and (MAIN, HELPER_A) not in two
    nb = code.neighbours(conn, 1, MAIN)
    assert [c["index"] for c in nb["callees"]] == [GREET, HELPER_A] and nb["callers"] == []


def test_function_diff_marks_constants_offsets_callees(conn):
    sid = queries.get_function(conn, 1, MAIN)["stable_id"]
    d = code.function_diff(conn, sid, 1, 2)
    changed = [r for r in d["rows"] if r["op"] == "changed"]
    assert [r["kinds"] for r in changed] == [["callee"], ["const"]]
    const = changed[1]
    assert [const["a"][s:e] for s, e in const["a_spans"]] == ["100"]
    assert [const["b"][s:e] for s, e in const["b_spans"]] == ["200"]
    callee = changed[0]
    assert [callee["b"][s:e] for s, e in callee["b_spans"]] == ["func[3] <unnamed>"]
    assert d["summary"]["const"] == 1 and d["summary"]["callee"] == 1
    assert d["summary"]["deleted"] == d["summary"]["inserted"] == 0
    assert (
        "\n-  return greet(_bold_red_pwn_2Jname(p0) + 100);\n+  return greet(f3(p0) + 200);\n"
        in d["c_diff"]
    )
    greet = code.function_diff(conn, queries.get_function(conn, 1, GREET)["stable_id"], 1, 2)
    assert [r["kinds"] for r in greet["rows"] if r["op"] == "changed"] == [["offset"]]
    with pytest.raises(UnknownVersionError):
        code.function_diff(conn, sid, 1, 7)


def test_diff_lines_aligns_inserted_code():
    a = "func[1] <f>: () -> ()\n 000010:   i32.const 1\n 000012:   drop\n 000013: end\n"
    b = (
        "func[1] <f>: () -> ()\n 000020:   nop\n 000021:   i32.const 2\n 000023:   drop\n"
        " 000024:   i32.load 2 16\n 000027: end\n"
    )
    d = code.diff_lines(a, b)
    assert [r["op"] for r in d["rows"]] == [
        "equal",
        "insert",
        "changed",
        "equal",
        "insert",
        "equal",
    ]
    assert d["rows"][2]["kinds"] == ["const"] and d["summary"]["inserted"] == 2


# ---------------------------------------------------------------- CLI


def run(capsys, *args) -> tuple[int, str, str]:
    rc = main(list(args))
    out, err = capsys.readouterr()
    return rc, out, err


def test_cli_code_text_json_and_targets(code_kb, capsys):
    db = str(code_kb)
    rc, out, _ = run(capsys, "--db", db, "code", "1", "1")
    assert rc == 0 and "raw wasm" in out and "lifted C" in out
    assert "</script><b>x</b>[bold red]markup[/]" in out and "\x1b" not in out
    rc, out, _ = run(capsys, "--db", db, "code", "1:4", "--wasm")
    assert rc == 0 and ESCAPED_NAME in out and "lifted C" not in out and "\x1b" not in out
    rc, out, _ = run(capsys, "--db", db, "code", "1", "4", "--json")
    d = json.loads(out)
    assert d["func_index"] == MAIN and "call $greet" in d["mnemonics"] and "lifted_c" in d
    sid = d["stable_id"]
    rc, out, _ = run(capsys, "--db", db, "code", sid, "--c", "--json")  # latest version
    d2 = json.loads(out)
    assert d2["version_id"] == 2 and "mnemonics" not in d2 and "200" in d2["lifted_c"]
    rc, out, _ = run(capsys, "--db", db, "code", sid, "--c", "--version", "1")
    assert rc == 0 and "100" in out and "raw wasm" not in out


@pytest.mark.parametrize(
    "args, message",
    [
        (("1", "0"), "function 0 of version 1 is an import (env.log): it has no code"),
        (("1", "6"), "version 1 has no function 6"),
        (("9", "1"), "unknown version id 9"),
        (("1:99",), "version 1 has no function 99"),
        (("nosuchid",), "nosuchid"),
    ],
)
def test_cli_code_bad_input(code_kb, capsys, args, message):
    rc, out, err = run(capsys, "--db", str(code_kb), "code", *args)
    assert rc == 1 and message in err and out == ""


def test_cli_code_bytes_missing(code_kb_no_bytes, capsys):
    rc, _, err = run(capsys, "--db", str(code_kb_no_bytes), "code", "2", "1")
    assert rc == 1 and "module bytes of version 2 are not in the KB" in err


def test_cli_ui_diff_function(code_kb, capsys):
    db = str(code_kb)
    conn = open_ro(code_kb)
    sid = queries.get_function(conn, 1, MAIN)["stable_id"]
    conn.close()
    rc, out, _ = run(capsys, "--db", db, "ui", "diff", "1", "2", "--function", sid, "--unified")
    assert rc == 0
    assert "~   i32.const 100" in out and "~   i32.const 200" in out
    assert "~   call func[3] <unnamed>" in out and ESCAPED_NAME in out and "\x1b" not in out
    assert "1 changed" not in out and "2 changed (const 1, callee 1)" in out
    rc, out, _ = run(capsys, "--db", db, "ui", "diff", "1", "2", "--function", sid)
    assert rc == 0 and "version 1 · #4" in out and "version 2 · #4" in out
    rc, _, err = run(capsys, "--db", db, "ui", "diff", "1", "2", "--function", "nosuchid")
    assert rc == 1 and "nosuchid" in err


def test_cli_code_all_writes_the_whole_module_c(code_kb, capsys, tmp_path):
    db = str(code_kb)
    out_c = tmp_path / "v1.c"
    rc, out, err = run(capsys, "--db", db, "code", "1", "--all", "-o", str(out_c))
    assert rc == 0 and out == "" and f"wrote 5 functions of version 1 to {out_c}" in err
    text = out_c.read_text()
    # every defined function once, in index order, with the KB's / module's names
    heads = [ln for ln in text.splitlines() if ln.startswith("/* func[")]
    assert [h.split("]")[0] for h in heads] == [f"/* func[{i}" for i in range(1, 6)]
    one = code.disassembly(open_ro(code_kb), 1, MAIN)["lifted_c"]
    assert one in text  # the same C as the one-function view
    assert "\x1b" not in text and "</script>" in text  # strings stay literal, in comments
    gcc = shutil.which("gcc")
    if gcc:
        import subprocess

        from kbtool.lift import prelude_path

        p = subprocess.run(
            [gcc, "-fsyntax-only", "-include", str(prelude_path()), "-x", "c", str(out_c)],
            capture_output=True,
            text=True,
        )
        assert p.returncode == 0, p.stderr[:2000]
    rc, out2, _ = run(capsys, "--db", db, "code", "1", "--all")  # stdout
    assert rc == 0 and out2 == text


@pytest.mark.parametrize(
    "args, message",
    [
        (("1", "4", "--all"), "--all takes a version id alone"),
        (("1", "--all", "--c"), "--all writes the C, or the disassembly with --wasm"),
        (("1", "--all", "--json"), "--all writes the C, or the disassembly with --wasm"),
        (("9", "--all"), "unknown version id 9"),
        (("1", "4"), "-o goes with --all"),
    ],
)
def test_cli_code_all_bad_input_writes_nothing(code_kb, capsys, tmp_path, args, message):
    out_c = tmp_path / "never.c"
    rc, out, err = run(capsys, "--db", str(code_kb), "code", *args, "-o", str(out_c))
    assert rc == 1 and message in err and out == ""
    assert list(tmp_path.iterdir()) == []  # no file, no temporary left


def test_cli_code_all_wasm_writes_the_whole_listing(code_kb, capsys, tmp_path):
    out = tmp_path / "v1.dis"
    rc, stdout, err = run(
        capsys, "--db", str(code_kb), "code", "1", "--all", "--wasm", "-o", str(out)
    )
    assert rc == 0 and stdout == "" and "wrote 5 functions of version 1" in err
    text = out.read_text()
    heads = [ln.split(">")[0] for ln in text.splitlines() if ln.startswith("func[")]
    assert [h.split("]")[0] for h in heads] == [f"func[{i}" for i in range(1, 6)]
    assert code.disassembly(open_ro(code_kb), 1, MAIN)["mnemonics"] in text
    assert ESCAPED_NAME in text and "\x1b" not in text  # hostile names and strings: literal
    assert "int32_t" not in text  # no C


def test_cli_code_all_bytes_missing(code_kb_no_bytes, capsys, tmp_path):
    out_c = tmp_path / "v2.c"
    rc, _, err = run(capsys, "--db", str(code_kb_no_bytes), "code", "2", "--all", "-o", str(out_c))
    assert rc == 1 and "module bytes of version 2 are not in the KB" in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("make", [code.module_c, code.module_listing])
def test_module_c_and_listing_report_progress(conn, make):
    seen: list[tuple[int, int]] = []
    chunks = list(make(conn, 1, workers=1, progress=lambda d, t: seen.append((d, t))))
    assert len(chunks) == 1 + 5  # header + the 5 defined functions
    assert seen == [(k, 5) for k in range(1, 6)]
