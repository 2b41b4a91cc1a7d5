"""A field inserted into a struct (issue 29.1), compiled for real with clang: the functions
that only read the shifted fields are one layout change listed once with its functions
(not "relocated", not each ranked as its own change); the function with a real new check
ranks first."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kbtool.kb.db import open_ro
from kbtool.services.diff.changelog import changelog
from kbtool.services.diff.view import read_report

V1 = """struct conn { int fd; int len; int cap; int flags; char *buf; };
__attribute__((noinline)) int conn_len(struct conn *c) { return c->len * 3 + 1; }
__attribute__((noinline)) int conn_room(struct conn *c) { return c->cap - c->len; }
__attribute__((noinline)) int conn_flags(struct conn *c) { return c->flags & 0x7f; }
__attribute__((noinline)) char *conn_buf(struct conn *c) { return c->buf + c->len; }
__attribute__((noinline)) int conn_check(struct conn *c, int n) { return c->len + n; }
"""
V2 = V1.replace("struct conn { int fd;", "struct conn { int fd; int id;").replace(
    "return c->len + n;", "if (n > c->cap - c->len) return -1; return c->len + n;"
)


def _clang_ok() -> bool:
    return shutil.which("clang") is not None and shutil.which("wasm-ld") is not None


@pytest.fixture(scope="module")
def layout_kb(tmp_path_factory) -> Path:
    if not _clang_ok():
        pytest.skip("clang/wasm-ld missing")
    tmp = tmp_path_factory.mktemp("layout")
    db = tmp / "kb.db"
    for i, (name, src) in enumerate((("v1", V1), ("v2", V2))):
        (tmp / f"{name}.c").write_text(src)
        subprocess.run(
            [
                "clang",
                "--target=wasm32-wasi",
                "-O2",
                "-nostdlib",
                "-Wl,--no-entry",
                "-Wl,--export-all",
                "-o",
                str(tmp / f"{name}.wasm"),
                str(tmp / f"{name}.c"),
            ],
            check=True,
            capture_output=True,
        )
        base = ("--base", "1") if i else ()
        r = subprocess.run(
            [
                sys.executable,
                "-m",
                "kbtool.cli",
                "--db",
                str(db),
                "ingest",
                str(tmp / f"{name}.wasm"),
                "-l",
                name,
                *base,
            ],
            capture_output=True,
            text=True,
        )
        assert r.returncode == 0, r.stderr
    return db


def test_struct_field_inserted_is_one_layout_change(layout_kb):
    conn = open_ro(layout_kb)
    report, pairing = read_report(conn, 1, 2)
    by_name = {c["name"]: c for c in report["changes"]}
    shifted = ("conn_len", "conn_room", "conn_flags", "conn_buf")
    for n in shifted:  # a layout change, not a relocation
        assert by_name[n]["classification"] == "modified" and not by_name[n].get("relocated")
    cl = changelog(conn, report, pairing=pairing)
    assert cl["modified"][0]["name"] == "conn_check"
    assert cl["modified"][0]["triage_kind"] == "fix"
    groups = cl["groups"]["layout"]
    assert len(groups) == 1 and groups[0]["delta"] == 4
    assert {f["name"] for f in groups[0]["functions"]} >= set(shifted)
    assert groups[0]["layout_only"] == 4
    assert {m["name"] for m in cl["modified"] if m["triage_kind"] == "layout"} == set(shifted)


def test_ui_diff_lists_the_layout_change_once(layout_kb):
    r = subprocess.run(
        [sys.executable, "-m", "kbtool.cli", "--db", str(layout_kb), "ui", "diff", "1", "2"],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "160"},
    )
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "1. conn_check" in out and "2." not in out  # the only ranked entry
    layout = [ln for ln in out.splitlines() if ln.startswith("layout")]
    assert len(layout) == 1 and "+4" in layout[0] and "4 with no other change" in layout[0]
    assert "relocated" not in out
