"""``kbtool ingest`` without Typer (:func:`kbtool.cli._ingest_direct`): a plain command line
prints exactly what the Typer command prints, and anything unusual goes to Typer."""

from __future__ import annotations

import json
import re
from pathlib import Path

from kbtool.cli import _ingest_direct, _plain_int
from tests.support.cli import run_cli
from tests.support.paths import DEMO_DIR, DEMO_WASM

NEWER = DEMO_DIR / "zstd-1.5.6.wasm"


def _no_time(text: str) -> str:
    return re.sub(r" in [0-9.]+s:", " in Xs:", text)


def test_direct_and_typer_print_the_same(tmp_path: Path) -> None:
    # `--` is Typer's end of options: the direct path declines it, Typer runs the command
    a, b = str(tmp_path / "a.db"), str(tmp_path / "b.db")
    direct = run_cli("--db", a, "ingest", str(DEMO_WASM), "--label", "old")
    typer_ = run_cli("--db", b, "ingest", "--label", "old", "--", str(DEMO_WASM))
    assert direct.returncode == typer_.returncode == 0, direct.stderr + typer_.stderr
    assert "ingested version 1" in direct.stdout
    assert _no_time(direct.stdout) == _no_time(typer_.stdout)
    # the second release: a parent, carried identities, JSON; options after FILE and `=`
    direct = run_cli("ingest", str(NEWER), "--json", "--no-carry", f"--db={a}")
    typer_ = run_cli("--db", b, "ingest", "--json", "--no-carry", "--", str(NEWER))
    assert direct.returncode == typer_.returncode == 0, direct.stderr + typer_.stderr
    got, want = json.loads(direct.stdout), json.loads(typer_.stdout)
    for d in (got, want):
        d.pop("seconds")
        d["data"].pop("seconds")
        d["data"].pop("cpu_seconds")
    assert got == want
    assert got["parent_version_id"] == 1 and got["carried"] > 0 and got["diff_carry"] is None


def test_same_bytes_and_errors_as_typer(tmp_path: Path) -> None:
    db = str(tmp_path / "kb.db")
    assert run_cli("--db", db, "ingest", str(DEMO_WASM)).returncode == 0
    again = run_cli("--db", db, "ingest", str(DEMO_WASM))
    assert again.returncode == 0 and "nothing ingested" in again.stdout
    missing = run_cli("--db", db, "ingest", str(tmp_path / "none.wasm"))
    assert missing.returncode == 1
    assert missing.stderr.strip().startswith("error: no such file")
    # a --base that is not an integer: Typer's usage error (exit 2), not a traceback
    bad = run_cli("--db", db, "ingest", "--base", "x", str(DEMO_WASM))
    assert bad.returncode == 2 and "--base" in bad.stderr and "Traceback" not in bad.stderr


def test_unusual_command_lines_go_to_typer(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # (a wrongly taken line would write ./kbtool.db here)
    monkeypatch.delenv("KBTOOL_DB", raising=False)
    f = str(DEMO_WASM)
    for args in (
        ["ingest", "--help"],
        ["ingest"],
        ["ingest", f, f],
        ["ingest", "--", f],
        ["ingest", f, "--bogus"],
        ["ingest", f, "--label"],
        ["ingest", f, "--label", ""],
        ["ingest", f, "--force=1"],
        ["ingest", f, "-l=x"],
        ["ingest", f, "--base", "0x10"],
        ["--version", "ingest", f],
        ["versions"],
        ["--db", "ingest"],
    ):
        assert _ingest_direct(args) is None, args
    assert not list(tmp_path.iterdir())  # nothing was written by any of them


def test_base_is_taken_only_as_a_plain_integer() -> None:
    # the direct path's check before it takes --base (a string test, no regex compiled at
    # start): exactly the integers ``-?[0-9]+`` matches; anything else goes to Typer
    pattern = re.compile(r"-?[0-9]+\Z")
    for text in ("0", "12", "-3", "", "-", "--1", "+1", " 1", "1 ", "1\n", "0x10", "1e3"):
        assert _plain_int(text) == bool(pattern.match(text)), text
    for text in ("\u0663", "\u00b2", "1_000", "\uff11"):  # other digits, separators
        assert not _plain_int(text) and not pattern.match(text), text
