"""A seeded fixture KB for the TUI tests (built in SQLite like ``kbfixtures.bare_kb``; names through the gate).

Two versions of a small module: every provenance at several confidences, call edges,
strings, carried identities with changed bodies, a deleted and a new function, annotation
events of every kind, and hostile text from the "binary" (Rich markup in an export name,
terminal escapes in a raw name and in referenced strings). ``KBTOOL_FROZEN_TIME`` pins every
timestamp, so screens render identically on every run.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import sqlite3
from array import array
from contextlib import contextmanager
from pathlib import Path

import pytest

from kbtool.kb.db import now, open_rw
from kbtool.kb.gate import upsert_symbol

FROZEN = "2026-01-15T12:00:00.000000Z"
N1 = 240            # defined functions of version 1
IMPORTS = (("env", "read"), ("env", "write"), ("wasi_snapshot_preview1", "fd_write"), ("env", "abort"))
MARKUP_NAME = "[bold red]pwned[/bold red]"
ESC_RAW = "\x1b[31mred\x07bell"
ESC_STRING = "\x1b]0;owned\x07 [link=http://x]click[/link]"
WORDS = ("parse", "read", "write", "hash", "block", "frame", "table", "huf", "fse", "zstd", "decode",
         "encode", "init", "free", "alloc", "copy", "seq", "lit", "dict", "window")


@contextmanager
def frozen_time():
    old = os.environ.get("KBTOOL_FROZEN_TIME")
    os.environ["KBTOOL_FROZEN_TIME"] = FROZEN
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("KBTOOL_FROZEN_TIME", None)
        else:
            os.environ["KBTOOL_FROZEN_TIME"] = old


def sid(tag: str) -> str:
    return hashlib.blake2b(tag.encode(), digest_size=8).hexdigest()


def _ops(rng: random.Random, n: int) -> bytes:
    return array("H", [rng.choice((32, 33, 16, 2, 3, 11, 12)) for _ in range(n)]).tobytes()


def _insert_version(conn: sqlite3.Connection, label: str, toolchain: str, funcs: list[dict],
                    parent: int | None, rng: random.Random) -> int:
    n_imp = len(IMPORTS)
    cur = conn.execute(
        "INSERT INTO versions (label, sha256, size, toolchain_version, shared_memory, imported_functions,"
        " defined_functions, exported_functions, instructions, module_name, producers, target_features,"
        " source_path, parent_version_id, carried, ingested_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        (label, hashlib.sha256(label.encode()).hexdigest(), 123_456 + len(funcs), toolchain, 1, n_imp,
         len(funcs), sum(1 for f in funcs if f.get("exports")), 40_000, None,
         json.dumps({"processed-by": [toolchain]}), json.dumps(["+bulk-memory", "+atomics"]),
         f"/releases/{label}.wasm", parent, sum(1 for f in funcs if f.get("carried")), now()),
    )
    vid = cur.lastrowid
    rows, facts, edges = [], [], set()
    for i, (mod, fld) in enumerate(IMPORTS):
        rows.append((vid, i, sid(f"import:{mod}.{fld}"), 1, mod, fld, "(i32, i32) -> i32", None, None,
                     0, 0, 0, None, "[]", 0, None, "import", None, 0))
        facts.append((vid, i, "[]", 0, "[]", "[]", "[]", "[]", "[]", 0, 0, b""))
    for pos, f in enumerate(funcs):
        idx = n_imp + pos
        f["index"] = idx
    by_tag = {f["tag"]: f for f in funcs}
    for f in funcs:
        idx = f["index"]
        callees = [by_tag[t]["index"] for t in f["calls"] if t in by_tag]
        callees += [i for i in f.get("import_calls", [])]
        for c in callees:
            edges.add((vid, idx, c))
        size = 20 + (f["n"] * 37) % 900
        rows.append((vid, idx, f["sid"], 0, None, None, f["type"], f"body:{f['tag']}:{f.get('body', 0)}",
                     f"shape:{f['tag']}:{f.get('body', 0)}", 0, size, size // 3, f.get("raw_name"),
                     json.dumps(f.get("exports", [])), int(bool(f.get("exports"))),
                     f.get("prev_index"), f.get("method", "new"), f.get("score"), int(f.get("changed", False))))
        facts.append((vid, idx, json.dumps(callees), f["n"] % 3, "[]", json.dumps([f["n"] + 7 * f.get("body", 0), 1024]),
                      json.dumps(f.get("strings", [])), json.dumps([0, 1] if f["n"] % 2 else []),
                      json.dumps([[40, 8, 4], [54, 0, 4]]), 1 if f["n"] % 17 == 0 else 0, f["n"] % 4,
                      _ops(rng, 12)))
    conn.executemany("INSERT INTO functions (version_id, idx, stable_id, imported, import_module, import_field,"
                     " type_sig, body_hash, shape_hash, body_offset, body_size, instr_count, raw_name,"
                     " export_names, is_exported, prev_index, match_method, match_score, body_changed)"
                     " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", rows)
    conn.executemany("INSERT INTO facts (version_id, idx, calls, call_indirect, ref_funcs, consts, strings,"
                     " globals_used, mem_ops, atomic_sites, loops, ops) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", facts)
    conn.executemany("INSERT INTO call_edges VALUES (?,?,?)", sorted(edges))
    return vid


def build_fixture_kb(path: Path, *, versions: int = 2) -> Path:
    """Write the seeded fixture KB at ``path`` (deterministic for a given ``versions``)."""
    rng = random.Random(5)
    with frozen_time():
        conn = open_rw(path)
        try:
            funcs = []
            for n in range(N1):
                f = {"n": n, "tag": f"f{n}", "sid": sid(f"fn{n}"),
                     "type": rng.choice(("(i32) -> i32", "(i32, i32) -> ()", "() -> ()", "(i32, i64) -> i64")),
                     "calls": [f"f{rng.randrange(N1)}" for _ in range(n % 4)],
                     "import_calls": [rng.randrange(len(IMPORTS))] if n % 5 == 0 else []}
                if n % 7 == 0:
                    f["strings"] = [f"{WORDS[n % len(WORDS)]} failed: %s", "corrupted block"]
                funcs.append(f)
            funcs[3]["exports"] = ["ZSTD_decompress"]
            funcs[4]["exports"] = [MARKUP_NAME]
            funcs[5]["raw_name"] = ESC_RAW
            funcs[5]["strings"] = [ESC_STRING, "plain string"]
            funcs[6]["calls"] = ["f3", "f4", "f5"]
            funcs[10]["calls"] = ["f6"]
            v1 = _insert_version(conn, "app-1.0", "clang 18.1.2", funcs, None, rng)
            _name_v1(conn, rng)
            if versions >= 2:
                funcs2 = []
                for f in funcs:
                    if f["n"] in (50, 51):          # deleted in 1.1
                        continue
                    g = dict(f, carried=True, method="body", score=1.0, prev_index=f["index"])
                    if f["n"] % 13 == 0:
                        g.update(body=1, changed=True, method="shape", score=0.87)
                    funcs2.append(g)
                for k in range(12):                  # new in 1.1
                    funcs2.insert(100 + k, {"n": 1000 + k, "tag": f"g{k}", "sid": sid(f"new{k}"),
                                            "type": "(i32) -> i32", "calls": ["f6"],
                                            "strings": [f"new feature {k}"] if k < 3 else []})
                _insert_version(conn, "app-1.1", "clang 19.1.0", funcs2, v1, rng)
                # a diff-carry name onto a new function, and a human rename in the newer version
                upsert_symbol(conn, sid("new0"), "ZSTD_decompressStream_v2", provenance="diff-carry",
                              confidence=0.62, actor="diff:1->2", evidence={"score": 0.62, "from": "f6"})
                upsert_symbol(conn, sid("fn6"), "decode_frame_header", provenance="human", confidence=1.0,
                              actor="human:cli", summary="Parses the frame header; returns its size.")
            for extra in range(3, versions + 1):
                _insert_version(conn, f"app-1.{extra - 1}", "clang 19.1.0",
                                [dict(f, carried=True, method="body", score=1.0) for f in funcs], extra - 1, rng)
        finally:
            conn.close()
    return path


def _name_v1(conn: sqlite3.Connection, rng: random.Random) -> None:
    plan = []
    for n in range(N1):
        r = rng.random()
        if n in (4, 5, 6):
            continue
        if r < 0.10:
            plan.append((n, "human", 1.0))
        elif r < 0.30:
            plan.append((n, "oracle", round(rng.uniform(0.6, 1.0), 2)))
        elif r < 0.40:
            plan.append((n, "export", 0.9))
        elif r < 0.60:
            plan.append((n, "agent", round(rng.uniform(0.1, 0.9), 2)))
        elif r < 0.68:
            plan.append((n, "diff-carry", round(rng.uniform(0.3, 0.8), 2)))
    for n, prov, conf in plan:
        name = f"{WORDS[n % len(WORDS)]}_{WORDS[(n * 7) % len(WORDS)]}_{n}"
        upsert_symbol(conn, sid(f"fn{n}"), name, provenance=prov, confidence=conf, actor=f"{prov}:fixture",
                      evidence={"source": "fixture"})
    upsert_symbol(conn, sid("fn4"), MARKUP_NAME, provenance="export", confidence=0.9, actor="ingest:export",
                  evidence={"export": MARKUP_NAME})
    # fn6: agent guess, then an oracle match outranks it, then a refused agent guess
    upsert_symbol(conn, sid("fn6"), "maybe_frame", provenance="agent", confidence=0.4, actor="agent:offline")
    upsert_symbol(conn, sid("fn6"), "ZSTD_getFrameHeader", provenance="oracle", confidence=0.95,
                  actor="oracle:libzstd", evidence={"method": "shape"})
    upsert_symbol(conn, sid("fn6"), "frame_thing", provenance="agent", confidence=0.5, actor="agent:offline")


def build_empty_kb(path: Path) -> Path:
    with frozen_time():
        open_rw(path).close()
    return path


# ---------------------------------------------------------------- pytest fixtures and helpers

@pytest.fixture(scope="session", name="fixture_master")
def fixture_master_fixture(tmp_path_factory) -> Path:
    return build_fixture_kb(tmp_path_factory.mktemp("tui") / "fixture.db")


@pytest.fixture(name="kb")
def kb_fixture(fixture_master, tmp_path) -> Path:
    """A private copy of the seeded fixture KB (tests may write to it)."""
    dst = tmp_path / "kb.db"
    shutil.copy(fixture_master, dst)
    return dst


@pytest.fixture(scope="session", name="demo_master")
def demo_master_fixture(tmp_path_factory) -> Path:
    """The demo KB (two real zstd releases), built once per session with `kbtool demo`'s code."""
    from kbtool.services.demo import build_demo

    path = tmp_path_factory.mktemp("tui-demo") / "demo.db"
    with frozen_time():
        build_demo(path, echo=lambda _msg: None)
    conn = open_rw(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return path


@pytest.fixture(name="demo_kb")
def demo_kb_fixture(demo_master, tmp_path) -> Path:
    dst = tmp_path / "demo.db"
    shutil.copy(demo_master, dst)
    return dst


def make_app(db: Path, **kw):
    from kbtool.tui.app import KbApp

    kw.setdefault("poll_seconds", None)   # tests call poll_changes() themselves: no timers racing
    kw.setdefault("blink", False)
    return KbApp(db, **kw)


def screen_text(app) -> str:
    """Everything visible on the terminal, as plain text lines."""
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


async def settle(pilot) -> None:
    """Let workers (search debounce, diff, rename) finish and the screen repaint: no sleeping."""
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()          # the footer recomposes its keys one message later
