"""Names that travel (kbtool.services.names_io) and names back into the binary
(kbtool.wasm.namesec): export rows with hashes, escaping, import by module+index / exact body /
shape / stable id, ambiguity, the release-chain round trip, and the name-section write-back
checked by wasm-tools and wasm-objdump."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from kbtool.kb import gate, queries
from kbtool.kb.db import open_rw
from kbtool.services import names_io
from kbtool.services.ingest import ingest_file
from kbtool.wasm import WasmFormatError, parse_module
from kbtool.wasm.namesec import with_function_names
from testkit.wasmbuild import CORPUS, build_wat, have_wabt
from tests.support.paths import DEMO_DIR

Z55, Z56 = DEMO_DIR / "zstd-1.5.5.wasm", DEMO_DIR / "zstd-1.5.6.wasm"
Z57 = CORPUS / "gt" / "zstd-1.5.7.O2.stripped.wasm"


# ----------------------------------------------------------------------------- text format


def test_cells_escape_every_control_character_and_round_trip():
    nasty = "title \x1b]0;T\x07 tab\there\nnew \\ back \x9b csi \x7f"
    c = names_io.cell(nasty)
    assert not any(ord(ch) < 0x20 or 0x7F <= ord(ch) <= 0x9F for ch in c)
    assert "\\x1b]0;T\\x07" in c
    assert names_io.uncell(c) == nasty
    assert names_io.cell(None) == "" and names_io.uncell("") is None


def test_export_rows_carry_hashes_and_escape_summaries(demo_kb):
    conn = open_rw(demo_kb)
    sid = queries.get_function(conn, 2, 20)["stable_id"]
    gate.upsert_symbol(conn, sid, "evil", provenance="human", confidence=1.0, actor="t")
    # the gate now refuses control characters in summaries; a KB written by an older kbtool
    # may hold them, and the export must still escape them
    conn.execute("UPDATE symbols SET summary = ? WHERE stable_id = ?", ("x\x1b]0;T\x07y", sid))
    text = names_io.export_text(conn, 2)
    assert "\x1b" not in text and "\x07" not in text
    lines = text.splitlines()
    assert lines[0] == "# kbtool KB export" and lines[2].split("\t") == list(names_io.COLUMNS)
    assert names_io.export_text(conn, 2) == text  # stable across runs
    rows = {r["index"]: r for r in map(names_io.parse_line, lines[3:])}
    info = queries.version_info(conn, 2)
    fn = queries.get_function(conn, 2, 20)
    assert rows[20]["summary"] == "x\x1b]0;T\x07y" and rows[20]["name"] == "evil"
    assert rows[20]["module_sha256"] == info["sha256"]
    assert (rows[20]["body_hash"], rows[20]["shape_hash"]) == (fn["body_hash"], fn["shape_hash"])
    assert rows[20]["instr_count"] == fn["instr_count"] and rows[20]["stable_id"] == sid


def test_not_an_export_is_a_clear_error():
    with pytest.raises(names_io.ExportFormatError, match="not a kbtool export"):
        names_io.parse_export("hello\n", "x.txt")
    with pytest.raises(names_io.ExportFormatError, match=r"x.txt:4: expected 11"):
        names_io.parse_export("# kbtool KB export\n# v\nindex\tx\n1\t2\t3\n", "x.txt")


# ----------------------------------------------------------------------------- placing rows


def _t(index, body, shape, sid=None, n=50):
    return {
        "index": index,
        "stable_id": sid or f"s{index}",
        "body_hash": body,
        "shape_hash": shape,
        "instr_count": n,
        "imported": False,
    }


def _r(index, name, body, shape, n=50, sid="zz", sha="other"):
    return {
        "index": index,
        "name": name,
        "body_hash": body,
        "shape_hash": shape,
        "instr_count": n,
        "stable_id": sid,
        "module_sha256": sha,
        "summary": None,
        "provenance": "human",
        "confidence": 1.0,
    }


def test_place_rows_by_method_and_ambiguity():
    target = [
        _t(0, "B0", "S0"),
        _t(1, "B1", "S1"),
        _t(2, "Bdup", "Sdup"),
        _t(3, "Bdup", "Sdup"),
        _t(4, "B4", "Stiny", n=3),
        _t(5, "B5", "S5", sid="keep"),
    ]
    rows = [
        _r(10, "by_body", "B0", "S0"),
        _r(11, "by_shape", "Bx", "S1"),
        _r(12, "twin", "Bdup", "Sdup"),  # two target functions: ambiguous
        _r(13, "tiny", "By", "Stiny", n=3),  # unique tiny shape is not enough
        _r(14, "by_sid", "Bz", "Sz", sid="keep"),
        _r(15, "nowhere", "Bq", "Sq"),
    ]
    p = names_io.place_rows(rows, target, "sha", 1)
    assert {i: r["name"] for i, r in p.targets.items()} == {
        0: "by_body",
        1: "by_shape",
        5: "by_sid",
    }
    assert p.by_method() == {"module+index": 0, "exact-body": 1, "shape": 1, "stable-id": 1}
    assert [a["name"] for a in p.ambiguous] == ["twin"]
    assert sorted(r["name"] for r in p.unplaced) == ["nowhere", "tiny"]
    # two rows with different names on one function: neither is written
    clash = names_io.place_rows(
        [_r(1, "a", "B0", "S0"), _r(2, "b", "Bk", "Snew", sid="s0")], target, "x", 1
    )
    assert not clash.targets and len(clash.ambiguous) == 2
    # a shape shared by two exported functions is ambiguous even when unique in the target
    src_twins = names_io.place_rows(
        [_r(1, "a", "Ba", "S1"), _r(2, None, "Bb", "S1")], target, "x", 1
    )
    assert not src_twins.targets and len(src_twins.ambiguous) == 1
    # same module: the index decides, even for twins
    same = names_io.place_rows([_r(3, "twin", "Bdup", "Sdup", sha="sha")], target, "sha", 1)
    assert same.method_of == {3: "module+index"}


# ----------------------------------------------------------------------------- round trip


@pytest.mark.skipif(not Z57.exists(), reason="corpus not present")
def test_round_trip_from_a_release_chain_into_a_kb_of_the_last_release(demo_kb, tmp_path):
    src = open_rw(demo_kb)  # zstd 1.5.5 (+ hand names) -> 1.5.6
    last = ingest_file(src, Z57, label="zstd-1.5.7")
    assert last.parent_version_id == 2
    text = names_io.export_text(src, last.version_id)
    want = {i: a["name"] for i, a in queries.annotations_by_index(src, last.version_id).items()}
    assert len(want) > 200

    dst = open_rw(tmp_path / "fresh.db")
    ingest_file(dst, Z57, label="1.5.7")
    rep = names_io.import_names(dst, text, source="names.txt")
    got = {i: a["name"] for i, a in queries.annotations_by_index(dst, 1).items()}
    assert got == want  # every name on the same function (same module sha, same index)
    assert rep.by_method["module+index"] == len(want) and not rep.ambiguous
    again = names_io.import_names(dst, text, source="names.txt")
    assert again.written == 0 and again.already == len(want)  # re-import converges


def test_import_into_another_release_places_by_body_and_shape(demo_kb, tmp_path):
    src = open_rw(demo_kb)
    text = names_io.export_text(src, 1)  # zstd 1.5.5 with the hand names
    dst = open_rw(tmp_path / "fresh.db")
    ingest_file(dst, Z56, label="1.5.6")
    rep = names_io.import_names(dst, text, source="n.txt")
    assert rep.by_method["module+index"] == 0
    assert rep.by_method["exact-body"] > 20 and rep.by_method["shape"] > 10
    # every placed name agrees with the demo KB's own chain where the chain named it
    chain = {i: a["name"] for i, a in queries.annotations_by_index(src, 2).items()}
    placed = {i: n for i, n in rep.placed.items() if i in chain}
    wrong = {i: (n, chain[i]) for i, n in placed.items() if chain[i] != n}
    assert len(placed) > 50 and wrong == {}


def test_cli_import_reports_methods(demo_kb, tmp_path):
    from tests.support.cli import run_cli as _cli

    exp = tmp_path / "names.txt"
    assert _cli("export", "2", "-o", str(exp), "--db", str(demo_kb)).returncode == 0
    conn = open_rw(tmp_path / "fresh.db")
    ingest_file(conn, Z56, label="x")
    conn.close()
    out = _cli("import-names", str(exp), "--db", str(tmp_path / "fresh.db"))
    assert out.returncode == 0, out.stderr
    assert "module+index" in out.stdout and "ambiguous" in out.stdout


# ----------------------------------------------------------------------------- name section


def _objdump_names(path: Path) -> dict[int, str]:
    out = subprocess.run(
        ["wasm-objdump", "-x", "-j", "name", str(path)], check=True, capture_output=True, text=True
    ).stdout
    names = {}
    for line in out.splitlines():
        line = line.strip()
        if line.startswith("- func[") and "<" in line and " local[" not in line:
            idx = int(line[7 : line.index("]")])
            names[idx] = line[line.index("<") + 1 : line.rindex(">")]
    return names


needs_tools = pytest.mark.skipif(
    shutil.which("wasm-objdump") is None or shutil.which("wasm-tools") is None,
    reason="wasm-objdump / wasm-tools not on PATH",
)


@needs_tools
def test_export_wasm_writes_a_valid_name_section(demo_kb, tmp_path):
    from tests.support.cli import run_cli as _cli

    out = tmp_path / "named.wasm"
    res = _cli("export", "2", "--wasm", str(out), "--db", str(demo_kb))
    assert res.returncode == 0, res.stderr
    subprocess.run(["wasm-tools", "validate", str(out)], check=True)
    conn = open_rw(demo_kb)
    want = {i: a["name"] for i, a in queries.annotations_by_index(conn, 2).items()}
    assert _objdump_names(out) == want
    # the code is untouched; the new section sits where a name section belongs
    orig = parse_module(queries.module_bytes(conn, 2))
    back = parse_module(out.read_bytes())
    assert back.func_names == want and len(back.func_type_indices) == len(orig.func_type_indices)


NAMED = """(module
  (func $first (result i32) i32.const 1)
  (func $second (param $p i32) (result i32) local.get $p)
  (export "second" (func $second)))
"""


@needs_tools
@pytest.mark.skipif(not have_wabt(), reason="wat2wasm not on PATH")
def test_existing_name_section_is_replaced_and_other_custom_sections_kept(tmp_path):
    src = build_wat(NAMED, tmp_path, debug_names=True, name="named").read_bytes()
    # a trailing custom section that must survive
    payload = b"\x05extra" + b"keep me"
    src = src + b"\x00" + bytes([len(payload)]) + payload
    out = tmp_path / "out.wasm"
    out.write_bytes(with_function_names(src, {0: "héllo_ünïcode", 1: "x"}))
    subprocess.run(["wasm-tools", "validate", str(out)], check=True)
    assert _objdump_names(out) == {0: "héllo_ünïcode", 1: "x"}
    dump = subprocess.run(
        ["wasm-objdump", "-x", str(out)], capture_output=True, text=True, check=True
    ).stdout
    assert "extra" in dump and dump.count('"name"') == 1
    assert "local[0] <p>" in dump  # the local names of the old section are kept
    assert out.read_bytes().count(b"\x04name") == 1


def test_name_section_writer_rejects_broken_modules():
    with pytest.raises(WasmFormatError):
        with_function_names(b"not wasm", {0: "a"})
    with pytest.raises(WasmFormatError):
        with_function_names(b"\x00asm\x01\x00\x00\x00\x01\xff\x7f", {0: "a"})


def test_old_seven_column_exports_still_import_by_stable_id(demo_kb):
    conn = open_rw(demo_kb)
    sid = queries.get_function(conn, 2, 30)["stable_id"]
    old = (
        "# kbtool KB export\n# version x sha256 y\n"
        "index\tstable_id\tname\tprovenance\tconfidence\ttype\tsummary\n"
        f"30\t{sid}\tfrom_old_file\thuman\t1.0000\t\tsum\\tmore\n"
    )
    rep = names_io.import_names(conn, old, source="old.txt")
    assert rep.by_method["stable-id"] == 1 and rep.written == 1
    sym = queries.get_symbol(conn, sid)
    assert sym["name"] == "from_old_file" and sym["summary"] == "sum\tmore"
