"""KBs for the web tests (helpers, plus a check of what they hold).

``web_kb(tmp_dir)`` builds, once per test session (per xdist worker), a KB for every web
test: the demo KB (two real zstd releases) when ingest works, else a hand-built two-version
KB on ``tests/kbfixtures.bare_kb``. Either way it then adds hostile names through the gate
(``<script>`` / ``<img onerror>`` as oracle and export names, HTML in evidence and summaries)
and a short annotation history (agent guess, oracle overwrite, refused agent write), so the
dashboard's escaping and its history panel have something to show.
"""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from kbtool.kb import queries
from kbtool.kb.db import now, open_ro
from kbtool.kb.gate import upsert_symbol

XSS_SCRIPT = "<script>window.__xss=1</script>"
XSS_IMG = '<img src=x onerror="window.__xss=2">'
XSS_SUMMARY = "<b>bold?</b><svg onload=window.__xss=3>"


@dataclass
class WebKB:
    path: Path
    kind: str                         # "demo" or "bare"
    version_ids: list[int]
    script_sid: str                   # named XSS_SCRIPT (oracle)
    img_sid: str                      # named XSS_IMG (export)
    history_sid: str                  # agent guess -> oracle -> refused agent write
    unnamed_sid: str                  # has no annotation
    human_name: str                   # a searchable human name
    notes: list[str] = field(default_factory=list)


_CACHE: dict[str, WebKB] = {}


def sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _sid(i: int, salt: str = "") -> str:
    return hashlib.blake2b(f"web-test|{i}|{salt}".encode(), digest_size=8).hexdigest()


def _bare(path: Path) -> None:
    """Two versions of 40 functions: 36 carried (two with changed bodies), 4 removed, 5 new."""
    from tests.kbfixtures import bare_kb

    v1 = [_sid(i) for i in range(40)]
    conn = bare_kb(path, v1, label="1.0.0")
    conn.execute("UPDATE functions SET body_hash = 'b' || idx, shape_hash = 's' || idx,"
                 " body_size = 40 + idx * 3, instr_count = 10 + idx, match_method = 'new'")
    v2 = v1[:36] + [_sid(i, "v2") for i in range(5)]
    cur = conn.execute(
        "INSERT INTO versions (label, sha256, size, imported_functions, defined_functions,"
        " exported_functions, parent_version_id, ingested_at) VALUES ('1.0.1', 'y', 0, 0, ?, 0, 1, ?)",
        (len(v2), now()),
    )
    vid = cur.lastrowid
    conn.executemany(
        "INSERT INTO functions (version_id, idx, stable_id, imported, type_sig, body_hash, shape_hash,"
        " body_size, instr_count, match_method, match_score, prev_index, body_changed)"
        " VALUES (?,?,?,0,'(i32) -> i32',?,?,?,?,?,?,?,?)",
        [(vid, i, sid, f"b{i}" + ("x" if i in (3, 7) else ""), f"s{i}", 40 + i * 3, 10 + i,
          "body" if i < 36 else "new", 1.0 if i < 36 else None, i if i < 36 else None,
          1 if i in (3, 7) else 0) for i, sid in enumerate(v2)],
    )
    conn.executemany(
        "INSERT INTO facts VALUES (?,?,?,0,'[]','[7, 1024]','[\"hello <b>\"]','[]','[]',0,1,x'')",
        [(vid, i, f"[{(i + 1) % len(v2)}]") for i in range(len(v2))],
    )
    conn.executemany("INSERT INTO call_edges VALUES (?,?,?)",
                     [(vid, i, (i + 1) % len(v2)) for i in range(len(v2))])
    for i, name in enumerate(("huf_decompress", "fse_readNCount", "zstd_frameHeaderSize")):
        upsert_symbol(conn, v1[i], name, provenance="human", confidence=1.0, actor="human:test",
                      summary=f"hand name {i}", evidence={"source": "test"})
    for i in range(10, 16):
        upsert_symbol(conn, v1[i], f"export_fn_{i}", provenance="export", confidence=0.95,
                      actor="ingest:export", evidence={"export": f"e{i}"})
    for i in range(16, 20):
        upsert_symbol(conn, v1[i], f"agent_guess_{i}", provenance="agent", confidence=0.2 + i / 40,
                      actor="agent:offline")
    for i in range(20, 23):
        upsert_symbol(conn, v1[i], f"carried_{i}", provenance="diff-carry", confidence=0.6,
                      actor="diff:carry", version_id=vid)
    conn.close()


def _hostile(path: Path) -> WebKB:
    """Hostile names, an annotation history, picked ids; returns the description."""
    from kbtool.kb.db import open_rw

    conn = open_rw(path)
    try:
        vids = [v["id"] for v in queries.list_versions(conn)]
        last = vids[-1]
        fns = queries.list_functions(conn, last)
        unnamed = [f for f in fns if f["name"] is None]
        # unnamed functions present in every version, so history has more than one row
        in_all = [f for f in unnamed
                  if len(queries.functions_by_stable_id(conn, f["stable_id"])) == len(vids)]
        pool = (in_all or unnamed)
        script_f, img_f, hist_f, keep_f = pool[0], pool[1], pool[2], pool[3]
        upsert_symbol(conn, script_f["stable_id"], XSS_SCRIPT, provenance="oracle", confidence=0.9,
                      actor="oracle:test", summary=XSS_SUMMARY,
                      evidence={"note": XSS_IMG, "source": "<script>alert(1)</script>"})
        upsert_symbol(conn, img_f["stable_id"], XSS_IMG, provenance="export", confidence=0.7,
                      actor="ingest:export", evidence={"export": XSS_SCRIPT})
        sid = hist_f["stable_id"]
        upsert_symbol(conn, sid, "maybe_memcpy", provenance="agent", confidence=0.35,
                      actor="agent:offline", evidence={"why": "loop copying bytes"}, version_id=vids[0])
        upsert_symbol(conn, sid, "ZSTD_copy16", provenance="oracle", confidence=0.9,
                      actor="oracle:test", evidence={"match": "symbolised build"}, version_id=last)
        upsert_symbol(conn, sid, "copy_bytes", provenance="agent", confidence=0.5,
                      actor="agent:mcp", version_id=last)       # refused: oracle is higher
        human = [f for f in fns if f["provenance"] == "human"]
        if human:
            human_name = human[0]["name"]
        else:
            upsert_symbol(conn, keep_f["stable_id"], "huf_decompress", provenance="human",
                          confidence=1.0, actor="human:test")
            human_name = "huf_decompress"
        left = [f for f in unnamed if f["stable_id"] not in
                {script_f["stable_id"], img_f["stable_id"], sid, keep_f["stable_id"]}]
    finally:
        conn.close()
    return WebKB(path=path, kind="", version_ids=vids, script_sid=script_f["stable_id"],
                 img_sid=img_f["stable_id"], history_sid=sid, unnamed_sid=left[0]["stable_id"],
                 human_name=human_name)


def web_kb(tmp_dir: Path) -> WebKB:
    """The session's web-test KB (built once per process, copied from a template)."""
    if "kb" in _CACHE:
        return _CACHE["kb"]
    path = Path(tmp_dir) / "web.db"
    kind, notes = "demo", []
    try:
        from kbtool.services.demo import build_demo

        build_demo(path, echo=lambda msg: None)
        conn = open_ro(path)
        try:
            if len(queries.list_versions(conn)) < 2:
                raise RuntimeError("demo KB has fewer than two versions")
        finally:
            conn.close()
    except Exception as exc:  # ingest not available yet: hand-built KB
        notes.append(f"demo KB unavailable ({type(exc).__name__}: {exc}); using bare_kb")
        for suffix in ("", "-wal", "-shm"):
            Path(str(path) + suffix).unlink(missing_ok=True)
        kind = "bare"
        _bare(path)
    kb = _hostile(path)
    kb.kind, kb.notes = kind, notes
    _checkpoint(path)
    _CACHE["kb"] = kb
    return kb


def _checkpoint(path: Path) -> None:
    """Fold the WAL into the main file so a read-only server sees one stable file."""
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


def copy_kb(kb: WebKB, dest: Path) -> Path:
    dest = Path(dest)
    shutil.copyfile(kb.path, dest)
    return dest


def test_web_kb_holds_what_the_web_tests_need(tmp_path_factory) -> None:
    kb = web_kb(tmp_path_factory.getbasetemp())
    conn = open_ro(kb.path)
    try:
        assert len(kb.version_ids) >= 2
        assert queries.get_symbol(conn, kb.script_sid)["name"] == XSS_SCRIPT
        assert queries.get_symbol(conn, kb.img_sid)["name"] == XSS_IMG
        assert queries.get_symbol(conn, kb.unnamed_sid) is None
        events = queries.annotation_events(conn, kb.history_sid)
        assert [e["written"] for e in events][-3:] == [True, True, False]
    finally:
        conn.close()
