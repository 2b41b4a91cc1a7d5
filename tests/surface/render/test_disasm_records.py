"""Structured disassembly (issue 25.3): the disassembler returns instruction records, the
text is made by ``kbtool.render.disasm`` only, and the services read the records (call links,
the per-function diff) instead of parsing their own listing."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from kbtool.kb.db import open_ro, open_rw
from kbtool.lift import prepare
from kbtool.lift.disasm import DataRef, Instr, Listing, Ref, disassemble_function
from kbtool.render.disasm import instr_line, listing_lines, render_listing
from kbtool.services import code, code_diff
from tests.support.codefixtures import code_kb_fixture  # noqa: F401  (fixture)

WAT = """
(module
  (import "env" "log" (func $log (param i32)))
  (global $sp (mut i32) (i32.const 4096))
  (memory 1)
  (data (i32.const 1024) "hello, world\\00")
  (func $dupa (result i32) i32.const 1)
  (func $dupb (result i32) i32.const 2)
  (func $walk (export "walk") (param $n i32) (result i32) (local $acc i32)
    (block $out
      (loop $again
        local.get $n
        br_if $out
        local.get $n
        br_table $out $again $out
      )
    )
    i32.const 1024
    call $log
    global.get $sp
    drop
    call $dupb
    local.tee $acc
  )
)
"""


def _wasm(tmp_path: Path, dup_names: bool = False) -> bytes:
    if not shutil.which("wat2wasm"):
        pytest.skip("needs wat2wasm")
    src, out = tmp_path / "m.wat", tmp_path / "m.wasm"
    src.write_text(WAT)
    subprocess.run(["wat2wasm", "--debug-names", str(src), "-o", str(out)], check=True)
    data = out.read_bytes()
    # the name section is the only place "dupb" is spelled: two functions named alike
    return data.replace(b"dupb", b"dupa") if dup_names else data


def test_records_resolve_targets_and_render_the_listing(tmp_path):
    lm = prepare(_wasm(tmp_path))
    listing = disassemble_function(lm, 3)
    assert isinstance(listing, Listing) and listing.name == "walk"
    assert listing.locals == ((1, 1, "i32"),)
    ins = listing.instrs
    assert all(isinstance(i, Instr) for i in ins)
    by = [i.mnemonic for i in ins]
    block, loop = by.index("block"), by.index("loop")
    br_if, br_table = ins[by.index("br_if")], ins[by.index("br_table")]
    assert br_if.targets == (block,)  # `br_if $out`: the block's opener
    assert br_table.targets == (block, loop, block)  # every label, the default last
    assert ins[loop].depth == ins[block].depth + 1
    call_log, call_dup = (i for i in ins if i.mnemonic == "call")
    assert call_log.ref == Ref("func", 0, "log") and call_dup.ref == Ref("func", 2, "dupb")
    assert ins[by.index("global.get")].ref == Ref("global", 0, "sp")
    assert ins[by.index("local.tee")].ref == Ref("local", 1, "acc")
    const = next(i for i in ins if i.mnemonic == "i32.const" and i.imms == (1024,))
    assert const.string == "hello, world" and const.data is None
    # the one text maker: records in, text out, offsets from the records
    text = render_listing(listing)
    lines = text.splitlines()
    assert lines[0] == "func[3] <walk>: (i32) -> i32" and lines[1] == " local[1]: i32"
    assert lines[2:] == [instr_line(i) for i in ins] == listing_lines(listing)[2:]
    assert f' {const.offset:06x}:   i32.const 1024  ;; "hello, world"' in lines
    assert any(ln.endswith("call $dupb") for ln in lines)
    assert any(ln.endswith("local.tee 1 <acc>") for ln in lines)


def test_unnamed_and_out_of_range_callees_and_notes_render_from_records():
    ins = Instr(0x20, 2, 0x10, "call", (7,), "7", Ref("func", 7, None))
    assert instr_line(ins) == " 000020:     call func[7] <unnamed>"
    ins = ins._replace(ref=Ref("func", 9999, None, False), line_comment="checks the size")
    assert instr_line(ins) == " 000020:     call func[9999] <out of range>  ;; // checks the size"
    ld = Instr(0x30, 1, 0x28, "i32.load", (2, 8, 0), "2 8", data=DataRef("g_state", 8, None))
    assert instr_line(ld) == " 000030:   i32.load 2 8  ;; g_state+8"


def test_call_links_follow_the_callee_index_not_its_name(tmp_path):
    """Two functions with the same name: the link on `call $dupa` opens the one called
    (reading the listing's text back, the first of that name was linked)."""
    from kbtool.services.ingest import ingest_bytes

    db = tmp_path / "kb.db"
    conn = open_rw(db)
    try:
        ingest_bytes(conn, _wasm(tmp_path, dup_names=True), label="dup-1")
    finally:
        conn.close()
    code.clear_cache()
    ro = open_ro(db)
    d = code.disassembly(ro, 1, 3)
    lines = d["mnemonics"].splitlines()
    calls = {lines[n - 1].split()[-1]: idx for n, idx in d["call_lines"]}
    assert calls == {"$log": 0, "$dupa": 2}  # func[2], the one `call` names, not func[1]


def test_function_diff_reads_records_and_matches_the_text_reader(code_kb, monkeypatch):
    """The service's diff never parses its own listing, and gives what the text reader
    (for listings handed in as text) gives on the same two listings."""
    code.clear_cache()
    conn = open_ro(code_kb)
    pairs = [(i, i) for i in range(1, 6)]
    from_text = []
    for i, j in pairs:
        a, b = code.disassembly(conn, 1, i), code.disassembly(conn, 2, j)
        from_text.append(
            code.diff_lines(
                a["mnemonics"], b["mnemonics"], same_callee=code.callee_pairing(conn, 1, 2)
            )
        )

    def no_text(_text):
        raise AssertionError("the service parsed its own listing")

    monkeypatch.setattr(code_diff, "_lines_from_text", no_text)
    for (i, j), want in zip(pairs, from_text, strict=True):
        got = code.function_diff_at(conn, 1, i, 2, j)
        assert {k: got[k] for k in ("rows", "summary")} == want
    assert any(r["op"] == "changed" for w in from_text for r in w["rows"])
    listing = code.listing(conn, 1, 4)
    assert code.listing_calls(listing) == code.disassembly(conn, 1, 4)["call_lines"]


def test_xref_targets_come_from_the_instruction_record(code_kb):
    """``x`` in the raw wasm view looks up what the instruction's record names."""
    code.clear_cache()
    conn = open_ro(code_kb)
    listing = code.listing(conn, 1, 1)  # greet: i32.const 1024 (a string); call $log; load +8
    call = next(i for i in listing.instrs if i.mnemonic == "call")
    assert code.instr_targets(conn, 1, call)[0] == f"#{call.ref.index}"
    const = next(i for i in listing.instrs if i.mnemonic == "i32.const" and i.imms[0] == 1024)
    assert hex(1024) in code.instr_targets(conn, 1, const)
    load = next(i for i in listing.instrs if i.mnemonic == "i32.load")
    assert code.instr_targets(conn, 1, load)[-1] == hex(load.imms[1])
