"""Papercuts a newcomer hit (issue #23.11): `kbtool show` evidence as a table and `--deep`,
the flags legend of `ui diff`, `kbtool mcp --print-config`, the README's backend and client
tables. Real KBs (the demo), real subprocesses, the MCP SDK's real stdio client.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from rich.console import Console

from kbtool.agents import agent_backends, provider_a, provider_b
from kbtool.kb import gate, queries, store
from kbtool.kb.db import open_rw, transaction
from kbtool.render.terminal import render_view
from kbtool.services.deep import run_deep
from tests.support.paths import ROOT

HOSTILE = "[bold red]pwn[/] \x1b[31mred\u202etxt"


def kbtool(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "100", "NO_COLOR": "1"}
    env.pop("KBTOOL_DB", None)
    return subprocess.run(
        [sys.executable, "-m", "kbtool", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=cwd,
    )


# ---------------------------------------------------------------- show: evidence, --deep


def test_show_prints_evidence_as_a_table(demo_kb):
    conn = open_rw(str(demo_kb))
    sid = queries.get_function(conn, 2, 101)["stable_id"]
    with transaction(conn):
        gate.upsert_symbol(
            conn,
            sid,
            "huf_write_table",
            provenance="human",
            confidence=1.0,
            actor="human:test",
            lock=False,
            evidence={"source": "test", "note": HOSTILE, "reasons": ["a", "b"], "score": 0.5},
        )
    conn.close()
    p = kbtool("--db", str(demo_kb), "show", "2:101")
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert "{'" not in out and "'source':" not in out  # no Python dict repr
    head = next(line for line in out.splitlines() if "source" in line and "details" in line)
    assert head.split() == ["#", "source", "actor", "details"]
    row = next(line for line in out.splitlines() if " test " in line)
    assert "human:test" in row
    assert "reasons: a; b" in out and "score: 0.5" in out
    # untrusted text shown literally: markup not parsed, controls escaped
    assert "[bold red]pwn[/]" in out and "\\x1b[31mred" in out
    assert "\x1b" not in out and "\u202e" not in out


def test_show_deep_prints_the_deep_record(demo_kb):
    conn = open_rw(str(demo_kb))
    run_deep(conn, 2, functions=[101], name=False)
    sid = queries.get_function(conn, 2, 101)["stable_id"]
    rec = queries.get_analysis(conn, sid)
    conn.close()
    p = kbtool("--db", str(demo_kb), "show", "2:101", "--deep")
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert "understanding" in out and rec["understanding"].split()[0] in out
    old, new = next(iter(rec["rename_map"].items()))
    assert f"{old} → {new}" in out
    assert "cleaned C" in out
    longest = max(rec["clean_c"].splitlines(), key=len)
    assert longest in out  # whole lines, not cropped to the terminal
    js = json.loads(kbtool("--db", str(demo_kb), "show", "2:101", "--deep", "--json").stdout)
    assert js["deep"]["clean_c"] == rec["clean_c"] and js["name"] == "HUF_writeCTable_wksp"
    # a function without a record says how to make one
    p = kbtool("--db", str(demo_kb), "show", "2:102", "--deep")
    assert p.returncode == 0 and "kbtool deep 2 -f 102" in p.stdout


def test_show_deep_escapes_model_text(demo_kb):
    conn = open_rw(str(demo_kb))
    sid = queries.get_function(conn, 2, 101)["stable_id"]
    with transaction(conn):
        store.upsert_analysis(
            conn,
            {
                "stable_id": sid,
                "version_id": 2,
                "func_index": 101,
                "raw_c": "int f(void);",
                "clean_c": f"/* {HOSTILE} */\nint f(void);",
                "understanding": f"It {HOSTILE}.",
                "rename_map": {"p0": HOSTILE},
                "status": "done",
                "confidence": 0.5,
                "backend": "provider_b",
                "model": "m[x]",
            },
        )
    conn.close()
    for colour in ("0", "1"):
        env_colour = {"FORCE_COLOR": "1"} if colour == "1" else {}
        p = subprocess.run(
            [sys.executable, "-m", "kbtool", "--db", str(demo_kb), "show", "2:101", "--deep"],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "COLUMNS": "100", **env_colour},
        )
        assert p.returncode == 0, p.stderr
        plain = re.sub(r"\x1b\[[0-9;]*m", "", p.stdout)  # Rich's own colours
        assert "\x1b" not in plain and "\u202e" not in plain
        assert plain.count("[bold red]pwn[/]") >= 3 and "provider_b (m[x])" in plain


# ---------------------------------------------------------------- ui diff legend


def _view(changes: list[dict], toolchain_changed: bool = False) -> dict:
    summary = {
        "unchanged": 0,
        "moved": 0,
        "modified": len(changes),
        "added": 0,
        "removed": 0,
        "runtime_churn": 0,
        "review": 0,
    }
    report = {
        "from": "1.0",
        "to": "1.1",
        "stored": True,
        "summary": summary,
        "changes": [
            {
                "classification": "modified",
                "from_index": i,
                "to_index": i,
                "name": None,
                "provenance": None,
                "confidence": None,
                "score": 0.9,
                **c,
            }
            for i, c in enumerate(changes)
        ],
    }
    return {
        "report": report,
        "toolchain_changed": toolchain_changed,
        "changelog": {
            "from": "1.0",
            "to": "1.1",
            "modified": [],
            "new": [],
            "deleted": [],
            "imports_added": [],
            "imports_removed": [],
        },
    }


def _printed(view: dict, width: int = 80) -> list[str]:
    console = Console(width=width, record=True, color_system=None)
    render_view(view, console)
    return console.export_text().splitlines()


def test_ui_diff_legend_explains_the_flags_shown():
    lines = _printed(
        _view([{"runtime": True, "review": False}, {"runtime": False, "review": True}])
    )
    legend = [line for line in lines if line.startswith("flags:")]
    assert legend == ["flags: rt = runtime/toolchain code · review = an uncertain match to check"]
    assert len(legend[0]) <= 80  # one line on an 80-column terminal
    below = lines.index(legend[0])
    assert any(line.rstrip().endswith("review") for line in lines[:below])  # under the table
    churn = _printed(_view([{"runtime": True, "review": False}], toolchain_changed=True))
    assert "flags: churn = runtime code changed with the toolchain" in churn
    assert not any(line.startswith("flags:") for line in _printed(_view([{}])))


def test_ui_diff_command_prints_the_legend(demo_kb_master):
    p = kbtool("--db", str(demo_kb_master), "ui", "diff", "1", "2", "--only", "review")
    assert p.returncode == 0, p.stderr
    assert "flags: review = an uncertain match to check" in p.stdout


# ---------------------------------------------------------------- MCP client configs


def test_print_config_shapes(tmp_path):
    kb = tmp_path / "my kb.db"
    vs = json.loads(kbtool("--db", str(kb), "mcp", "--print-config", "vscode").stdout)
    entry = vs["servers"]["kbtool"]
    assert entry["type"] == "stdio" and Path(entry["command"]).is_absolute()
    assert entry["args"][-3:] == ["mcp", "--db", str(kb.absolute())]
    rel = kbtool("mcp", "--print-config", "cursor", "--db", "rel.db", cwd=tmp_path)
    cur = json.loads(rel.stdout)["mcpServers"]["kbtool"]
    assert cur["args"][-1] == str(tmp_path / "rel.db") and "does not exist yet" in rel.stderr
    claude = json.loads(kbtool("--db", str(kb), "mcp", "--print-config", "claude").stdout)
    assert claude["mcpServers"]["kbtool"]["command"] == entry["command"]
    line = kbtool("--db", str(kb), "mcp", "--print-config", "claude-code").stdout.strip()
    assert line.startswith("claude mcp add kbtool -- ") and f"'{kb.absolute()}'" in line
    bad = kbtool("mcp", "--print-config", "emacs")
    assert bad.returncode == 1 and bad.stderr.startswith("error: unknown MCP client 'emacs'")
    assert "Traceback" not in bad.stderr


def test_printed_vscode_config_starts_a_working_server(demo_kb_master, tmp_path):
    """The printed command and args, as VS Code would run them (another cwd, no PATH)."""
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    entry = json.loads(
        kbtool("--db", str(demo_kb_master), "mcp", "--print-config", "vscode").stdout
    )["servers"]["kbtool"]

    async def main() -> list:
        server = StdioServerParameters(
            command=entry["command"],
            args=entry["args"],
            cwd=str(tmp_path),
            env={"PATH": "/nonexistent"},
        )
        async with stdio_client(server) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            res = await s.call_tool("list_versions", {})
            return json.loads(res.content[0].text)

    versions = asyncio.run(main())
    assert [v["id"] for v in versions] == [1, 2]


# ---------------------------------------------------------------- README tables


def _readme_table(heading: str) -> list[list[str]]:
    text = (ROOT / "README.md").read_text()
    start = text.index(heading)
    rows = []
    for line in text[start:].splitlines()[1:]:
        if line.startswith("|"):
            rows.append([c.strip().strip("`") for c in line.strip("|").split("|")])
        elif rows:
            break
    return rows[2:]  # past the header and the rule


def test_readme_backend_table_matches_the_code():
    rows = {r[0]: r for r in _readme_table("Agent backends")}
    assert set(rows) == {b["name"] for b in agent_backends(env={})}
    assert rows["provider_a"][1:4] == [
        provider_a.PACKAGE,
        provider_a.KEY_ENV,
        " or ".join(provider_a.MessagesClient.BASE_URL_ENVS),
    ]
    assert rows["provider_b"][1:4] == [
        provider_b.PACKAGE,
        provider_b.KEY_ENV,
        " or ".join(provider_b.ChatClient.BASE_URL_ENVS),
    ]
    assert rows["offline"][1:4] == ["—", "—", "—"]


def test_readme_client_table_names_every_client():
    from kbtool.commands.mcp import CLIENTS

    rows = _readme_table("MCP client configs")
    assert {r[0] for r in rows} >= {f"kbtool mcp --print-config {c}" for c in CLIENTS}


# ---------------------------------------------------------------- TUI code pane at 80x24


def test_code_pane_usable_at_80x24(demo_kb_master):
    from kbtool.tui.screens.code import CodeScreen, LinesView
    from tests.support.tui import make_app, screen_text, settle

    name = "ZSTD_estimateCStreamSize_usingCCtxParams"  # 40 characters, v2 #167

    async def main():
        app = make_app(demo_kb_master)
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(pilot)
            app.push_screen(CodeScreen(2, 167))
            await settle(pilot)
            first = screen_text(app)
            view = app.screen.query_one("#code-view", LinesView)
            await pilot.press("right", "right", "right")
            await settle(pilot)
            moved = (view.scroll_offset.x, screen_text(app))
            await pilot.press("shift+right")
            await settle(pilot)
            far = view.scroll_offset.x
            await pilot.press("shift+left", "left", "left", "left", "left")
            await settle(pilot)
            return first, moved, far, view.scroll_offset.x

    first, (x, moved), far, back = asyncio.run(main())
    lines = first.splitlines()
    assert name in lines[0]  # the title: the whole name
    assert "←→ scroll" in lines[1]
    # callers: one line each, an ellipsis only where the name is wider than the pane
    assert any("#168 ZSTD_estimateCStreamSiz…" in line for line in lines)
    assert any(line.rstrip().endswith("#169 ZSTD_estimateCStreamSize") for line in lines)
    assert not any(line.split("▏")[-1].strip() == "gCParams" for line in lines)  # no wrap
    # sideways scroll: 4 columns a press, the gutter stays
    code_before = next(line for line in lines if line.startswith(" 1 /* func[167]"))
    assert x == 12
    code_after = next(line for line in moved.splitlines() if line.startswith(" 1 "))
    assert code_after[3:].startswith(code_before[3 + 12 : 3 + 12 + 20])
    assert far == 12 + 32 and back == 0
