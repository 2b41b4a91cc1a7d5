"""One rule for untrusted text on every surface: controls, bidi controls and invisibles (zero
width, tag characters U+E0000-U+E007F) are refused by the gate in names and revealed as
escapes in the terminal, JSON and export files (issue 24 point 9)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from kbtool.kb.gate import upsert_symbol
from kbtool.services.names_io import cell, uncell
from kbtool.textutil import json_safe, printable, strip_unsafe, unsafe_chars
from testkit.kb import bare_kb
from tests.support.paths import ROOT

HOSTILE = [
    "rlo\u202eexe.txt",
    "tag\U000e0049\U000e0047\U000e004e",
    "zw\u200bsp",
    "shy\u00adx",
    "bom\ufeffx",
    "c1\x9bx",
    "esc\x1b[31m",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_revealed_in_terminal_json_and_export(text):
    shown = printable(text)
    assert not unsafe_chars(shown) and "\\" in shown
    js = json_safe(json.dumps(text, ensure_ascii=False))
    assert not unsafe_chars(js) and json.loads(js) == text  # the same value, nothing raw
    c = cell(text)
    assert not unsafe_chars(c) and uncell(c) == text  # export round trip
    assert not unsafe_chars(strip_unsafe(text))


@pytest.mark.parametrize("text", HOSTILE)
def test_gate_refuses_hidden_characters_in_binary_names(tmp_path, text):
    conn = bare_kb(tmp_path / "kb.db", ["a" * 16])
    try:
        d = upsert_symbol(
            conn, "a" * 16, "name_" + text, provenance="export", confidence=0.9, actor="ingest"
        )
        assert d["written"] is False and "control" in d["reason"]
    finally:
        conn.close()


def test_version_label_with_bidi_reaches_export_escaped(tmp_path):

    demo = ROOT / "kbtool" / "demo" / "zstd-1.5.5.wasm"
    db = tmp_path / "kb.db"
    run = [sys.executable, "-m", "kbtool", "--db", str(db)]
    r = subprocess.run(
        [*run, "ingest", str(demo), "--label", "v1\u202eevil"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    r = subprocess.run([*run, "export", "1"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "\u202e" not in r.stdout and not unsafe_chars(r.stdout, allow_newlines=True)
    assert "v1\\u202eevil" in r.stdout
