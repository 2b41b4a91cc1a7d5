"""The CLI as a user types it: contract JSON shapes, one-line errors, names round trip."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from kbtool.cli import main
from tests.support.paths import DEMO_DIR


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_help_on_every_command(capsys):
    code, out, _ = run(capsys, "--help")
    assert code == 0
    commands = [
        "ingest",
        "versions",
        "functions",
        "coverage",
        "show",
        "demo",
        "set-name",
        "unlock",
        "revert",
        "renames",
        "history",
        "search",
        "export",
        "import-names",
    ]
    for cmd in commands:
        assert cmd in out
        code, text, _ = run(capsys, cmd, "--help")
        assert code == 0 and "Usage" in text and len(text) > 100


def test_json_shapes(demo_kb, capsys):
    db = ["--db", str(demo_kb)]
    code, out, _ = run(capsys, "versions", "--json", *db)
    versions = json.loads(out)
    assert (
        code == 0
        and [set(v) for v in versions]
        == [
            {
                "id",
                "label",
                "toolchain_version",
                "functions",
                "shared_memory",
                "program",
                "parent_version_id",
            }
        ]
        * 2
    )
    code, out, _ = run(capsys, "functions", "2", "--json", *db)
    funcs = json.loads(out)
    assert set(funcs[0]) == {"index", "stable_id", "type", "name", "provenance", "confidence"}
    code, out, _ = run(capsys, "functions", "2", "--json", "--unnamed", *db)
    assert all(f["name"] is None for f in json.loads(out))
    code, out, _ = run(capsys, "coverage", "2", "--json", *db)
    cov = json.loads(out)
    assert {
        "defined",
        "named",
        "coverage_pct",
        "oracle_named",
        "human_named",
        "agent_named",
    } <= set(cov)
    sid = next(f["stable_id"] for f in funcs if f["name"] == "ZSTD_compress")
    code, out, _ = run(capsys, "show", sid, "--json", *db)
    rec = json.loads(out)
    assert rec["name"] == "ZSTD_compress" and rec["provenance"] == "export"
    assert {
        "stable_id",
        "name",
        "summary",
        "type_signature",
        "provenance",
        "confidence",
        "locked",
        "evidence",
    } <= set(rec)


def test_db_from_env(demo_kb, capsys, monkeypatch):
    monkeypatch.setenv("KBTOOL_DB", str(demo_kb))
    code, out, _ = run(capsys, "versions", "--json")
    assert code == 0 and len(json.loads(out)) == 2


@pytest.mark.parametrize(
    "argv,needle",
    [
        (["functions", "99"], "unknown version id 99"),
        (["coverage", "7"], "known version ids: 1, 2"),
        (["show", "deadbeef"], "unknown stable_id"),
        (["set-name", "deadbeef", "foo"], "unknown stable_id"),
        (["history", "deadbeef"], "unknown stable_id"),
    ],
)
def test_clear_errors(demo_kb, capsys, argv, needle):
    code, out, err = run(capsys, *argv, "--db", str(demo_kb))
    assert code == 1
    assert needle in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_errors_for_bad_files(tmp_path, capsys):
    code, _, err = run(capsys, "versions", "--db", str(tmp_path / "missing.db"))
    assert code == 1 and "no KB at" in err
    assert not (tmp_path / "missing.db").exists()
    notkb = tmp_path / "notes.db"
    notkb.write_text("just text " * 50)
    code, _, err = run(capsys, "versions", "--db", str(notkb))
    assert code == 1 and "not a kbtool KB" in err
    code, _, err = run(
        capsys, "ingest", str(tmp_path / "nope.wasm"), "--db", str(tmp_path / "kb.db")
    )
    assert code == 1 and "no such file" in err
    trunc = tmp_path / "t.wasm"
    trunc.write_bytes((DEMO_DIR / "zstd-1.5.5.wasm").read_bytes()[:1000])
    code, _, err = run(capsys, "ingest", str(trunc), "--db", str(tmp_path / "kb.db"))
    assert code == 1 and "offset 0x" in err and "Traceback" not in err
    code, _, err = run(capsys, "ingest", str(notkb), "--db", str(tmp_path / "kb.db"))
    assert code == 1 and "not a valid WebAssembly module" in err


def test_name_lifecycle(demo_kb, capsys, tmp_path):
    db = ["--db", str(demo_kb)]
    funcs = json.loads(run(capsys, "functions", "2", "--json", "--unnamed", *db)[1])
    sid = funcs[0]["stable_id"]
    assert (
        run(capsys, "set-name", sid, "parse_frame_header", "--summary", "reads a\tframe", *db)[0]
        == 0
    )
    assert run(capsys, "set-name", sid, "parse_header_v2", *db)[0] == 0
    code, out, _ = run(capsys, "search", "PARSE_", "--json", *db)
    assert [r["name"] for r in json.loads(out)] == ["parse_header_v2"]
    code, out, _ = run(capsys, "renames", sid, "--json", *db)
    assert [r["to"] for r in json.loads(out)] == ["parse_header_v2", "parse_frame_header"]
    assert run(capsys, "revert", sid, *db)[0] == 0
    rec = json.loads(run(capsys, "show", sid, "--json", *db)[1])
    assert rec["name"] == "parse_frame_header" and rec["locked"] is True
    assert run(capsys, "unlock", sid, *db)[0] == 0
    assert json.loads(run(capsys, "show", sid, "--json", *db)[1])["locked"] is False
    code, _, err = run(capsys, "set-name", sid, "bad name!", *db)
    assert code == 1 and "C-like identifier" in err
    code, out, _ = run(capsys, "history", sid, "--json", *db)
    kinds = [e["kind"] for e in json.loads(out)["events"]]
    assert kinds == ["human-edit", "human-edit", "revert", "unlock", "rejection"]
    # export twice: byte-identical; import back into a fresh copy of the demo
    out1 = tmp_path / "a.txt"
    out2 = tmp_path / "b.txt"
    assert run(capsys, "export", "2", "-o", str(out1), *db)[0] == 0
    assert run(capsys, "export", "2", "-o", str(out2), *db)[0] == 0
    assert out1.read_bytes() == out2.read_bytes()
    lines = out1.read_text().splitlines()
    assert lines[0] == "# kbtool KB export"
    assert any("reads a\\tframe" in line for line in lines)


def test_import_names_round_trip(demo_kb_master, tmp_path, capsys):
    a, b = tmp_path / "a.db", tmp_path / "b.db"
    shutil.copy(demo_kb_master, a)
    shutil.copy(demo_kb_master, b)
    funcs = json.loads(run(capsys, "functions", "2", "--json", "--unnamed", "--db", str(a))[1])
    for k, f in enumerate(funcs[:5]):
        run(capsys, "set-name", f["stable_id"], f"teammate_fn_{k}", "--db", str(a))
    exp = tmp_path / "names.txt"
    run(capsys, "export", "2", "-o", str(exp), "--db", str(a))
    code, out, _ = run(capsys, "import-names", str(exp), "--db", str(b))
    # a teammate's human names stay human, unlocked (issue #23.7; docs/DECISIONS.md)
    assert code == 0 and "imported 5 name(s): human 5" in " ".join(out.split())
    rec = json.loads(run(capsys, "show", funcs[0]["stable_id"], "--json", "--db", str(b))[1])
    assert rec["name"] == "teammate_fn_0" and rec["provenance"] == "human" and not rec["locked"]
    code, out, _ = run(capsys, "import-names", str(exp), "--db", str(b))
    assert "imported 0 name(s)" in out, "re-import is idempotent"
    bad = tmp_path / "bad.txt"
    bad.write_text("not an export\n")
    code, _, err = run(capsys, "import-names", str(bad), "--db", str(b))
    assert code == 1 and "not a kbtool export" in err


def test_console_script_entry_point(demo_kb):
    out = subprocess.run(
        [sys.executable, "-m", "kbtool.cli", "--db", str(demo_kb), "versions", "--json"],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0 and json.loads(out.stdout)[1]["label"] == "zstd-1.5.6"
