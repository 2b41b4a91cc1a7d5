"""Bad or huge inputs are one-line errors, never tracebacks: endless files (``/dev/zero``)
and oversized ones for ingest, --js, oracle add and import-names (a size cap per kind),
unbounded agent numbers, an imported confidence of inf, and a full disk under MCP."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from kbtool.services.inputs import InputError, max_bytes, read_input, read_text_input

CLI = [sys.executable, "-m", "kbtool.cli"]
TIMEOUT = 300
CORPUS = Path("/work/shared/corpus")


def kbtool(
    *args: str, cwd: Path, env: dict | None = None, stdin: bytes | None = None
) -> subprocess.CompletedProcess:
    return subprocess.run(
        CLI + list(args),
        cwd=cwd,
        capture_output=True,
        timeout=TIMEOUT,
        env=dict(os.environ, **(env or {})),
        input=stdin,
    )


def one_line_error(r: subprocess.CompletedProcess, rc: int = 1) -> str:
    err = r.stderr.decode("utf-8", "replace").strip()
    assert r.returncode == rc, (r.returncode, err)
    assert "Traceback" not in err and "MemoryError" not in err, err
    if rc == 1:
        assert len(err.splitlines()) == 1, err
    return err


def module_of(db: Path, version_id: int = 1) -> bytes:
    from kbtool.kb import queries
    from kbtool.kb.db import open_ro

    conn = open_ro(db)
    try:
        data = queries.module_bytes(conn, version_id)
    finally:
        conn.close()
    assert data is not None
    return data


@pytest.fixture
def wasm(demo_kb_master: Path, tmp_path: Path) -> Path:
    p = tmp_path / "zstd.wasm"
    p.write_bytes(module_of(demo_kb_master, 1))
    return p


# ---------------------------------------------------------------- endless files


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero")
@pytest.mark.parametrize(
    "args,what",
    [
        (("ingest", "/dev/zero"), "not a WebAssembly module"),
        (("oracle", "add", "/dev/zero"), "not a WebAssembly module"),
        (("import-names", "/dev/zero"), "not a names file"),
    ],
)
def test_dev_zero_is_one_line(demo_kb: Path, args, what):
    r = kbtool("--db", str(demo_kb), *args, cwd=demo_kb.parent)
    assert what in one_line_error(r)


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero")
def test_dev_zero_as_js_glue(demo_kb: Path, wasm: Path):
    r = kbtool(
        "--db",
        str(demo_kb),
        "ingest",
        str(wasm),
        "--label",
        "again",
        "--force",
        "--js",
        "/dev/zero",
        cwd=demo_kb.parent,
    )
    assert "not a JavaScript file" in one_line_error(r)


def test_oversized_files_are_refused_with_their_limit(demo_kb: Path, wasm: Path, tmp_path: Path):
    r = kbtool(
        "--db",
        str(demo_kb),
        "ingest",
        str(wasm),
        "--label",
        "x",
        "--force",
        cwd=tmp_path,
        env={"KBTOOL_MAX_WASM_BYTES": "4096"},
    )
    err = one_line_error(r)
    assert "4 KiB maximum for a WebAssembly module" in err and "KBTOOL_MAX_WASM_BYTES" in err
    r = kbtool(
        "--db",
        str(demo_kb),
        "oracle",
        "add",
        str(wasm),
        cwd=tmp_path,
        env={"KBTOOL_MAX_WASM_BYTES": "4096"},
    )
    assert "KBTOOL_MAX_WASM_BYTES" in one_line_error(r)
    js = tmp_path / "glue.js"
    js.write_text("var Module = {};\n" * 1000)
    r = kbtool(
        "--db",
        str(demo_kb),
        "ingest",
        str(wasm),
        "--label",
        "x",
        "--force",
        "--js",
        str(js),
        cwd=tmp_path,
        env={"KBTOOL_MAX_JS_BYTES": "1000"},
    )
    assert "KBTOOL_MAX_JS_BYTES" in one_line_error(r)
    names = tmp_path / "names.tsv"
    r = kbtool("--db", str(demo_kb), "export", "1", "-o", str(names), cwd=tmp_path)
    assert r.returncode == 0
    r = kbtool(
        "--db",
        str(demo_kb),
        "import-names",
        str(names),
        cwd=tmp_path,
        env={"KBTOOL_MAX_NAMES_BYTES": "1000"},
    )
    assert "KBTOOL_MAX_NAMES_BYTES" in one_line_error(r)


def test_endless_text_stream_stops_at_the_cap(demo_kb: Path, tmp_path: Path):
    """A stream with no NUL that never ends (`yes`) is read up to the cap, then refused."""
    yes = subprocess.Popen(["yes"], stdout=subprocess.PIPE)
    try:
        r = subprocess.run(
            CLI + ["--db", str(demo_kb), "import-names", "/dev/stdin"],
            stdin=yes.stdout,
            capture_output=True,
            timeout=TIMEOUT,
            env=dict(os.environ, KBTOOL_MAX_NAMES_BYTES=str(1 << 20)),
        )
    finally:
        yes.kill()
        yes.wait()
        yes.stdout.close()
    assert "1 MiB maximum for a names file" in one_line_error(r)


def test_a_module_through_a_pipe_still_ingests(demo_kb: Path, wasm: Path, tmp_path: Path):
    r = kbtool(
        "--db",
        str(demo_kb),
        "ingest",
        "/dev/stdin",
        "--label",
        "piped",
        "--force",
        cwd=tmp_path,
        stdin=wasm.read_bytes(),
    )
    assert r.returncode == 0, r.stderr
    assert b"ingested version 3" in r.stdout


def test_reader_module(tmp_path: Path, monkeypatch):
    p = tmp_path / "a.wasm"
    p.write_bytes(b"\x00asm\x01\x00\x00\x00")
    assert read_input(p, "wasm") == b"\x00asm\x01\x00\x00\x00"
    assert max_bytes("wasm") == 1 << 30 and max_bytes("js") == max_bytes("names") == 256 << 20
    monkeypatch.setenv("KBTOOL_MAX_WASM_BYTES", "4")
    with pytest.raises(InputError, match="4 bytes maximum"):
        read_input(p, "wasm")
    monkeypatch.setenv("KBTOOL_MAX_WASM_BYTES", "lots")
    with pytest.raises(InputError, match="must be a number of bytes"):
        read_input(p, "wasm")
    with pytest.raises(InputError, match="no such file"):
        read_input(tmp_path / "missing", "names")
    with pytest.raises(InputError, match="is a directory"):
        read_input(tmp_path, "names")
    (tmp_path / "latin1.tsv").write_bytes(b"caf\xe9\n")
    with pytest.raises(InputError, match="not UTF-8 text"):
        read_text_input(tmp_path / "latin1.tsv", "names")


# ---------------------------------------------------------------- numbers


@pytest.mark.parametrize("option", ["--rounds", "--max-functions"])
def test_agent_numbers_beyond_any_use_are_usage_errors(demo_kb: Path, option):
    r = kbtool(
        "--db", str(demo_kb), "agent", "2", "-b", "offline", option, str(10**30), cwd=demo_kb.parent
    )
    err = one_line_error(r, rc=2)
    assert option in err and "less than or equal" in err


@pytest.mark.parametrize("value", ["inf", "-inf", "nan"])
def test_import_confidence_inf_is_refused_like_nan(demo_kb: Path, tmp_path: Path, value):
    names = tmp_path / "names.tsv"
    assert (
        kbtool("--db", str(demo_kb), "export", "1", "-o", str(names), cwd=tmp_path).returncode == 0
    )
    lines = names.read_text().splitlines(keepends=True)
    row = next(i for i, ln in enumerate(lines) if ln[:1].isdigit())
    cells = lines[row].split("\t")
    cells[3], cells[4] = "oracle", value  # provenance, confidence
    cells[2] = "renamed_by_import"
    lines[row] = "\t".join(cells)
    names.write_text("".join(lines))
    r = kbtool("--db", str(demo_kb), "import-names", str(names), "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    assert rep["refused"] >= 1
    assert any(f"invalid confidence {value}" in x["why"] for x in rep.get("refusals", [])), rep
    conn = sqlite3.connect(demo_kb)
    try:
        assert (
            conn.execute("select count(*) from symbols where name='renamed_by_import'").fetchone()[
                0
            ]
            == 0
        )
    finally:
        conn.close()


# ---------------------------------------------------------------- full disk under MCP


def _agent_pass_error(command: list[str]) -> str:
    pytest.importorskip("mcp.client.stdio")
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    from tests.support.mcp import dump, server_env

    async def main() -> dict:
        params = StdioServerParameters(
            command=command[0], args=command[1:], env=server_env(PYTHONDONTWRITEBYTECODE="1")
        )
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as s:
                await asyncio.wait_for(s.initialize(), TIMEOUT)
                res = await asyncio.wait_for(
                    s.call_tool("run_agent_pass", {"version_id": 2, "backend": "offline"}), TIMEOUT
                )
                return dump(res)

    d = asyncio.run(main())
    assert d.get("isError"), d
    text = " ".join(b.get("text", "") for b in d["content"])
    assert "internal error" not in text and "Traceback" not in text, text
    return text


def test_mcp_agent_pass_past_the_file_size_limit(demo_kb: Path):
    """The KB cannot grow (RLIMIT_FSIZE, SIGXFSZ ignored): a clear disk error."""
    limit = 40 * 1024  # the -shm (32 KiB) fits, the WAL soon does not
    boot = (
        "import os, resource, signal, sys; signal.signal(signal.SIGXFSZ, signal.SIG_IGN);"
        f" resource.setrlimit(resource.RLIMIT_FSIZE, ({limit}, {limit}));"
        " os.execv(sys.executable, [sys.executable, '-m', 'kbtool.cli', 'mcp', '--db',"
        f" {str(demo_kb)!r}])"
    )
    text = _agent_pass_error([sys.executable, "-c", boot])
    assert "disk" in text and "run_agent_pass could not write the KB" in text


def _userns_tmpfs() -> bool:
    if not sys.platform.startswith("linux") or shutil.which("unshare") is None:
        return False
    r = subprocess.run(
        ["unshare", "-Urm", "sh", "-c", "mount -t tmpfs -o size=1m tmpfs /mnt"],
        capture_output=True,
        timeout=30,
    )
    return r.returncode == 0


@pytest.mark.skipif(not _userns_tmpfs(), reason="no user namespace to mount a small tmpfs")
def test_mcp_agent_pass_on_a_full_disk(demo_kb: Path, tmp_path: Path):
    """A real full file system (a tmpfs just larger than the KB, in a private mount
    namespace): SQLite's 'database or disk is full' becomes 'disk full: ...'."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    size = demo_kb.stat().st_size + 32 * 1024 + 48 * 1024
    script = (
        f"mount -t tmpfs -o size={size} tmpfs {mnt} && cp {demo_kb} {mnt}/kb.db &&"
        f" exec {sys.executable} -m kbtool.cli mcp --db {mnt}/kb.db"
    )
    text = _agent_pass_error(["unshare", "-Urm", "sh", "-c", script])
    assert "disk full" in text or "disk is full" in text, text
