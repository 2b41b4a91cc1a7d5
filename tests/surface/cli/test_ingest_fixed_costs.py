"""A first ingest's fixed costs (issue 30.4, session 27 S): ``import kbtool.cli`` loads no
front-end stack nor any service, and a first ingest never imports what only a later one
needs (the matcher child's pickle, the matcher itself)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support.fresh_imports import modules_after
from tests.support.paths import DEMO_WASM, ROOT

HEAVY = {"rich", "typer", "click", "pydantic", "textual", "starlette", "uvicorn", "mcp", "numpy"}


def test_importing_the_cli_loads_no_front_end_nor_service() -> None:
    loaded = modules_after("import kbtool.cli")
    assert "kbtool.cli" in loaded
    assert not {m for m in loaded if m.split(".")[0] in HEAVY}
    assert not {m for m in loaded if m.startswith(("kbtool.services", "kbtool.wasm"))}


def test_first_ingest_imports_neither_pickle_nor_the_matcher(tmp_path: Path) -> None:
    db = str(tmp_path / "kb.db")
    loaded = modules_after(
        f"from kbtool.cli import main\nassert main(['--db', {db!r}, 'ingest', {str(DEMO_WASM)!r}]) == 0"
    )
    assert "kbtool.services.ingest_match" in loaded
    assert "pickle" not in loaded
    # the first version of a program pairs nothing: no matcher, pure or compiled
    assert not {m for m in loaded if m.startswith("kbtool.identity.matcher")}
    assert not {m for m in loaded if "_cmatcher" in m}
    # the query package loads its resource modules on first use (session 29 S): an ingest
    # reads none of these (nor agents' orjson before the fingerprints need it)
    for name in ("agents", "analysis", "events", "search", "diffs"):
        assert f"kbtool.kb.queries.{name}" not in loaded, name


def test_later_ingest_with_the_warm_ups_off_imports_neither(tmp_path: Path) -> None:
    # KBTOOL_DIFF_WARM / KBTOOL_CODE_WARM off (as _modules_after sets them): the switches
    # are read before the diff warm-up or the code store is imported (either would start
    # nothing), and reading them loads no subprocess machinery
    db = str(tmp_path / "kb.db")
    later = DEMO_WASM.with_name("zstd-1.5.6.wasm")
    loaded = modules_after(
        "from kbtool.cli import main\n"
        "from kbtool.commands import ingest_cmd\n"
        "ingest_cmd._CODE_WARM_MIN_BYTES = 0  # (every module asks the code store)\n"
        f"assert main(['--db', {db!r}, 'ingest', {str(DEMO_WASM)!r}]) == 0\n"
        f"assert main(['--db', {db!r}, 'ingest', {str(later)!r}]) == 0"
    )
    assert "kbtool.services.diff.carry" in loaded  # (a later ingest: paired, carried)
    assert "kbtool.services.detached" in loaded  # (the switches were read)
    for name in ("kbtool.services.diff.warm", "kbtool.services.code_store", "subprocess"):
        assert name not in loaded, name
    # a module this small is matched in this process (no child): nothing is pickled, so
    # pickle is not imported (session 29 S)
    assert "kbtool.identity.matcher_active" in loaded
    assert "pickle" not in loaded


def test_warm_ups_on_still_start(tmp_path: Path, monkeypatch) -> None:
    # the other side: a switch not off still asks the warm-up, with what it asked before
    from kbtool.commands import ingest_cmd
    from kbtool.services import code_store
    from kbtool.services.diff import warm

    asked: list[tuple[str, int]] = []
    monkeypatch.setenv("KBTOOL_DIFF_WARM", "1")
    monkeypatch.setenv("KBTOOL_CODE_WARM", "on")
    monkeypatch.setattr(
        warm,
        "start_background",
        lambda conn, vid: asked.append(("diff", vid)) or {"pairs": [[1, 2]]},
    )
    monkeypatch.setattr(
        code_store, "start_background", lambda conn, vid: asked.append(("code", vid))
    )
    assert ingest_cmd._warm_diffs(None, 2) == [[1, 2]]
    ingest_cmd._warm_code(None, 2)
    assert asked == [("diff", 2), ("code", 2)]
    for off in ("0", "off", " No ", ""):
        monkeypatch.setenv("KBTOOL_DIFF_WARM", off)
        monkeypatch.setenv("KBTOOL_CODE_WARM", off)
        assert ingest_cmd._warm_diffs(None, 3) == []
        ingest_cmd._warm_code(None, 3)
    assert asked == [("diff", 2), ("code", 2)]


def test_a_command_that_reads_the_kb_loads_no_wasm_layer(tmp_path: Path) -> None:
    # the CLI catches the wasm layer's format error as the ValueError it is: a command that
    # only reads the KB never imports kbtool.wasm (its decoder twin included)
    db = str(tmp_path / "kb.db")
    assert modules_after(
        f"from kbtool.cli import main\nmain(['--db', {db!r}, 'ingest', {str(DEMO_WASM)!r}])"
    )
    loaded = modules_after(
        f"from kbtool.cli import main\nassert main(['--db', {db!r}, 'versions']) == 0"
    )
    assert "kbtool.commands.core" in loaded or any(m.startswith("kbtool.commands.") for m in loaded)
    assert not {m for m in loaded if m == "kbtool.wasm" or m.startswith("kbtool.wasm.")}


def test_a_malformed_module_is_still_one_error_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.wasm"
    bad.write_bytes(b"\0asm\1\0\0\0\1\5")  # a type section past the end of the file
    env = {**os.environ, "PYTHONPATH": str(ROOT), "KBTOOL_DIFF_WARM": "0", "KBTOOL_CODE_WARM": "0"}
    r = subprocess.run(
        [sys.executable, "-m", "kbtool", "--db", str(tmp_path / "kb.db"), "ingest", str(bad)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=300,
    )
    assert r.returncode == 1
    assert r.stderr == (
        "error: not a valid WebAssembly module: offset 0xa: expected type section of 5 bytes;"
        " section extends past the end of the file\n"
    )


def test_first_ingest_compiles_no_text_safety_pattern(tmp_path: Path) -> None:
    # printable ASCII names and labels are answered without the patterns (session 30 S):
    # the line pattern was compiled at import, ~0.3 ms of every ingest
    db = str(tmp_path / "kb.db")
    modules_after(
        "from kbtool.cli import main\n"
        "from kbtool import textutil\n"
        f"assert main(['--db', {db!r}, 'ingest', {str(DEMO_WASM)!r}]) == 0\n"
        "lazy = [textutil._CONTROL, textutil._ALL_CONTROL, textutil._JSON_UNSAFE]\n"
        "assert not any('sub' in vars(p) for p in lazy), 'a pattern was compiled'"
    )
