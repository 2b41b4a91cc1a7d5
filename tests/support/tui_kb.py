"""The seeded KB of the TUI tests (no textual needed to build it).

Two versions of a small module: every provenance at several confidences, call edges,
strings, carried identities with changed bodies, a deleted and a new function, annotation
events of every kind, and hostile text from the "binary" (Rich markup in an export name,
terminal escapes in a raw name and in referenced strings). Rows go through
``kbtool.kb.store``, names through the gate; ``FROZEN`` pins every timestamp, so screens
render identically on every run.
"""

from __future__ import annotations

import hashlib
import json
import random
import sqlite3
from array import array
from pathlib import Path

from kbtool.kb import store
from kbtool.kb.db import open_rw, transaction
from kbtool.kb.gate import upsert_symbol
from testkit import kb as support_kb
from testkit.kb import facts_row

FROZEN = "2026-01-15T12:00:00.000000Z"
N1 = 240  # defined functions of version 1
IMPORTS = (
    ("env", "read"),
    ("env", "write"),
    ("wasi_snapshot_preview1", "fd_write"),
    ("env", "abort"),
)
MARKUP_NAME = "[bold red]pwned[/bold red]"
ESC_RAW = "\x1b[31mred\x07bell"
ESC_STRING = "\x1b]0;owned\x07 [link=http://x]click[/link]"
WORDS = (
    "parse",
    "read",
    "write",
    "hash",
    "block",
    "frame",
    "table",
    "huf",
    "fse",
    "zstd",
    "decode",
    "encode",
    "init",
    "free",
    "alloc",
    "copy",
    "seq",
    "lit",
    "dict",
    "window",
)


def frozen_time():
    """Pin ``kbtool.kb.db.now()`` to ``FROZEN`` while the block runs."""
    return support_kb.frozen_time(FROZEN)


def build_empty_kb(path: Path) -> Path:
    """A KB with the schema and nothing else (timestamps at ``FROZEN``)."""
    return support_kb.build_empty_kb(path, FROZEN)


def sid(tag: str) -> str:
    return hashlib.blake2b(tag.encode(), digest_size=8).hexdigest()


def _ops(rng: random.Random, n: int) -> bytes:
    return array("H", [rng.choice((32, 33, 16, 2, 3, 11, 12)) for _ in range(n)]).tobytes()


def _insert_version(
    conn: sqlite3.Connection,
    label: str,
    toolchain: str,
    funcs: list[dict],
    parent: int | None,
    rng: random.Random,
) -> int:
    n_imp = len(IMPORTS)
    vid = store.insert_version(
        conn,
        {
            "label": label,
            "sha256": hashlib.sha256(label.encode()).hexdigest(),
            "size": 123_456 + len(funcs),
            "toolchain_version": toolchain,
            "shared_memory": 1,
            "imported_functions": n_imp,
            "defined_functions": len(funcs),
            "exported_functions": sum(1 for f in funcs if f.get("exports")),
            "instructions": 40_000,
            "module_name": None,
            "producers": json.dumps({"processed-by": [toolchain]}),
            "target_features": json.dumps(["+bulk-memory", "+atomics"]),
            "source_path": f"/releases/{label}.wasm",
            "parent_version_id": parent,
            "carried": sum(1 for f in funcs if f.get("carried")),
        },
    )
    rows, facts, edges = [], [], set()
    for i, (mod, fld) in enumerate(IMPORTS):
        rows.append(
            {
                "version_id": vid,
                "idx": i,
                "stable_id": sid(f"import:{mod}.{fld}"),
                "imported": 1,
                "import_module": mod,
                "import_field": fld,
                "type_sig": "(i32, i32) -> i32",
                "body_hash": None,
                "shape_hash": None,
                "body_offset": 0,
                "body_size": 0,
                "instr_count": 0,
                "raw_name": None,
                "export_names": "[]",
                "is_exported": 0,
                "prev_index": None,
                "match_method": "import",
                "match_score": None,
                "body_changed": 0,
            }
        )
        facts.append(facts_row(vid, i))
    for pos, f in enumerate(funcs):
        f["index"] = n_imp + pos
    by_tag = {f["tag"]: f for f in funcs}
    for f in funcs:
        idx = f["index"]
        callees = [by_tag[t]["index"] for t in f["calls"] if t in by_tag]
        callees += list(f.get("import_calls", []))
        for c in callees:
            edges.add((vid, idx, c))
        size = 20 + (f["n"] * 37) % 900
        rows.append(
            {
                "version_id": vid,
                "idx": idx,
                "stable_id": f["sid"],
                "imported": 0,
                "import_module": None,
                "import_field": None,
                "type_sig": f["type"],
                "body_hash": f"body:{f['tag']}:{f.get('body', 0)}",
                "shape_hash": f"shape:{f['tag']}:{f.get('body', 0)}",
                "body_offset": 0,
                "body_size": size,
                "instr_count": size // 3,
                "raw_name": f.get("raw_name"),
                "export_names": json.dumps(f.get("exports", [])),
                "is_exported": int(bool(f.get("exports"))),
                "prev_index": f.get("prev_index"),
                "match_method": f.get("method", "new"),
                "match_score": f.get("score"),
                "body_changed": int(f.get("changed", False)),
            }
        )
        facts.append(
            facts_row(
                vid,
                idx,
                calls=json.dumps(callees),
                call_indirect=f["n"] % 3,
                consts=json.dumps([f["n"] + 7 * f.get("body", 0), 1024]),
                strings=json.dumps(f.get("strings", [])),
                globals_used=json.dumps([0, 1] if f["n"] % 2 else []),
                mem_ops=json.dumps([[40, 8, 4], [54, 0, 4]]),
                atomic_sites=1 if f["n"] % 17 == 0 else 0,
                loops=f["n"] % 4,
                ops=_ops(rng, 12),
            )
        )
    store.insert_functions(conn, rows)
    store.insert_facts(conn, facts)
    store.insert_call_edges(
        conn, ({"version_id": v, "caller": a, "callee": b} for v, a, b in sorted(edges))
    )
    return vid


def build_fixture_kb(path: Path, *, versions: int = 2) -> Path:
    """Write the seeded fixture KB at ``path`` (deterministic for a given ``versions``)."""
    rng = random.Random(5)
    with frozen_time():
        conn = open_rw(path)
        try:
            with transaction(conn):
                _fill(conn, rng, versions)
        finally:
            conn.close()
    return path


def _fill(conn: sqlite3.Connection, rng: random.Random, versions: int) -> None:
    funcs = []
    for n in range(N1):
        f = {
            "n": n,
            "tag": f"f{n}",
            "sid": sid(f"fn{n}"),
            "type": rng.choice(
                ("(i32) -> i32", "(i32, i32) -> ()", "() -> ()", "(i32, i64) -> i64")
            ),
            "calls": [f"f{rng.randrange(N1)}" for _ in range(n % 4)],
            "import_calls": [rng.randrange(len(IMPORTS))] if n % 5 == 0 else [],
        }
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
            if f["n"] in (50, 51):  # deleted in 1.1
                continue
            g = dict(f, carried=True, method="body", score=1.0, prev_index=f["index"])
            if f["n"] % 13 == 0:
                g.update(body=1, changed=True, method="shape", score=0.87)
            funcs2.append(g)
        for k in range(12):  # new in 1.1
            funcs2.insert(
                100 + k,
                {
                    "n": 1000 + k,
                    "tag": f"g{k}",
                    "sid": sid(f"new{k}"),
                    "type": "(i32) -> i32",
                    "calls": ["f6"],
                    "strings": [f"new feature {k}"] if k < 3 else [],
                },
            )
        _insert_version(conn, "app-1.1", "clang 19.1.0", funcs2, v1, rng)
        # a diff-carry name onto a new function, and a human rename in the newer version
        upsert_symbol(
            conn,
            sid("new0"),
            "ZSTD_decompressStream_v2",
            provenance="diff-carry",
            confidence=0.62,
            actor="diff:1->2",
            evidence={"score": 0.62, "from": "f6"},
        )
        upsert_symbol(
            conn,
            sid("fn6"),
            "decode_frame_header",
            provenance="human",
            confidence=1.0,
            actor="human:cli",
            summary="Parses the frame header; returns its size.",
        )
    for extra in range(3, versions + 1):
        _insert_version(
            conn,
            f"app-1.{extra - 1}",
            "clang 19.1.0",
            [dict(f, carried=True, method="body", score=1.0) for f in funcs],
            extra - 1,
            rng,
        )


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
        upsert_symbol(
            conn,
            sid(f"fn{n}"),
            name,
            provenance=prov,
            confidence=conf,
            actor=f"{prov}:fixture",
            evidence={"source": "fixture"},
        )
    upsert_symbol(
        conn,
        sid("fn4"),
        MARKUP_NAME,
        provenance="export",
        confidence=0.9,
        actor="ingest:export",
        evidence={"export": MARKUP_NAME},
    )
    # fn6: agent guess, then an oracle match outranks it, then a refused agent guess
    upsert_symbol(
        conn, sid("fn6"), "maybe_frame", provenance="agent", confidence=0.4, actor="agent:offline"
    )
    upsert_symbol(
        conn,
        sid("fn6"),
        "ZSTD_getFrameHeader",
        provenance="oracle",
        confidence=0.95,
        actor="oracle:libzstd",
        evidence={"method": "shape"},
    )
    upsert_symbol(
        conn, sid("fn6"), "frame_thing", provenance="agent", confidence=0.5, actor="agent:offline"
    )
