"""The KB schema: one module, one version number, forward-only migrations.

A KB is a SQLite file whose ``meta`` table holds ``kind = 'kbtool-kb'`` and the
``schema_version``. ``ensure_schema`` creates or migrates it; ``check_schema``
verifies that a file opened read-only is a KB of the version this code reads.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from kbtool.kb.errors import NotAKBError, SchemaVersionError
from kbtool.kb.schema_fresh import FRESH_SCRIPT, FRESH_VERSION

SCHEMA_VERSION = 13
KB_KIND = "kbtool-kb"
# the page size of a KB created by ingesting a big module (SQLite's default 4096 otherwise;
# an existing file keeps its own): such a version writes tens of MB of facts, references and
# module bytes, and 32 KB pages cost ~8-10% less CPU to build and commit (fewer B-tree
# pages, fewer overflow chains for the facts' op blobs); an empty KB takes ~1.5 MB more
BIG_PAGE_SIZE = 32768
BIG_MODULE_BYTES = 4_000_000


def new_kb_page_size(module_bytes: int) -> int | None:
    """The page size for a KB created to hold a first module of ``module_bytes`` (None:
    SQLite's default)."""
    return BIG_PAGE_SIZE if module_bytes > BIG_MODULE_BYTES else None


_V1 = """
CREATE TABLE meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE versions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    label TEXT NOT NULL UNIQUE,
    sha256 TEXT NOT NULL,
    size INTEGER NOT NULL,
    toolchain_version TEXT,
    shared_memory INTEGER NOT NULL DEFAULT 0,
    imported_functions INTEGER NOT NULL,
    defined_functions INTEGER NOT NULL,
    exported_functions INTEGER NOT NULL,
    instructions INTEGER NOT NULL DEFAULT 0,
    module_name TEXT,
    producers TEXT,            -- JSON object
    target_features TEXT,      -- JSON list
    source_path TEXT,
    parent_version_id INTEGER REFERENCES versions(id),
    carried INTEGER NOT NULL DEFAULT 0,
    ingested_at TEXT NOT NULL
);

-- the module bytes, so disassembly and re-analysis are always reproducible
CREATE TABLE modules (
    version_id INTEGER PRIMARY KEY REFERENCES versions(id),
    data BLOB NOT NULL
);

CREATE TABLE functions (
    version_id INTEGER NOT NULL REFERENCES versions(id),
    idx INTEGER NOT NULL,
    stable_id TEXT NOT NULL,
    imported INTEGER NOT NULL,
    import_module TEXT,
    import_field TEXT,
    type_sig TEXT NOT NULL,
    body_hash TEXT,
    shape_hash TEXT,
    body_offset INTEGER NOT NULL DEFAULT 0,
    body_size INTEGER NOT NULL DEFAULT 0,
    instr_count INTEGER NOT NULL DEFAULT 0,
    raw_name TEXT,
    export_names TEXT,          -- JSON list
    is_exported INTEGER NOT NULL DEFAULT 0,
    prev_index INTEGER,         -- index in the parent version when identity carried
    match_method TEXT,          -- how identity was carried (body, shape, name, ...) or 'new'
    match_score REAL,
    body_changed INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (version_id, idx)
) WITHOUT ROWID;
CREATE INDEX functions_stable_id ON functions(stable_id, version_id);
CREATE INDEX functions_shape ON functions(shape_hash);

CREATE TABLE facts (
    version_id INTEGER NOT NULL,
    idx INTEGER NOT NULL,
    calls TEXT NOT NULL,            -- JSON list of direct callee indices (in order, dups kept)
    call_indirect INTEGER NOT NULL,
    ref_funcs TEXT NOT NULL,        -- JSON list
    consts TEXT NOT NULL,           -- JSON list
    strings TEXT NOT NULL,          -- JSON list
    globals_used TEXT NOT NULL,     -- JSON list
    mem_ops TEXT NOT NULL,          -- JSON list of [op id, offset, width]
    atomic_sites INTEGER NOT NULL,
    loops INTEGER NOT NULL,
    ops BLOB NOT NULL,              -- array('H') of op ids (kbtool.wasm.opcodes.MNEMONICS)
    table_slots TEXT NOT NULL DEFAULT '[]',  -- JSON list of positions in the element segments
    PRIMARY KEY (version_id, idx)
) WITHOUT ROWID;

CREATE TABLE call_edges (
    version_id INTEGER NOT NULL,
    caller INTEGER NOT NULL,
    callee INTEGER NOT NULL,
    PRIMARY KEY (version_id, caller, callee)
) WITHOUT ROWID;
CREATE INDEX call_edges_callee ON call_edges(version_id, callee);

-- one row per logical function (stable_id); written only by kbtool.kb.gate
CREATE TABLE symbols (
    stable_id TEXT PRIMARY KEY,
    name TEXT,
    summary TEXT,
    type_signature TEXT,
    provenance TEXT NOT NULL,
    confidence REAL NOT NULL,
    locked INTEGER NOT NULL DEFAULT 0,
    evidence TEXT NOT NULL DEFAULT '[]',
    version_id INTEGER,
    updated_at TEXT NOT NULL
);
CREATE INDEX symbols_name ON symbols(name COLLATE NOCASE);

-- every decision of the gate, written or refused
CREATE TABLE annotation_events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    stable_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    written INTEGER NOT NULL,
    reason TEXT NOT NULL,
    provenance TEXT NOT NULL,
    confidence REAL,
    actor TEXT NOT NULL,
    old_name TEXT,
    new_name TEXT,
    old TEXT,                   -- JSON of the record before (null when unnamed)
    new TEXT,                   -- JSON of the proposed/written record
    evidence TEXT,
    version_id INTEGER,
    created_at TEXT NOT NULL
);
CREATE INDEX annotation_events_sid ON annotation_events(stable_id, id);

-- agent/analysis feed (polled by the studio)
CREATE TABLE events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL,
    stable_id TEXT,
    version_id INTEGER,
    payload TEXT,
    created_at TEXT NOT NULL
);

CREATE TABLE diffs (
    from_version_id INTEGER NOT NULL REFERENCES versions(id),
    to_version_id INTEGER NOT NULL REFERENCES versions(id),
    report TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (from_version_id, to_version_id)
);

CREATE TABLE oracle_modules (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    label TEXT NOT NULL UNIQUE,
    sha256 TEXT NOT NULL,
    size INTEGER NOT NULL,
    source_path TEXT,
    data BLOB NOT NULL,
    created_at TEXT NOT NULL
);
"""

# Version 2: programs (lineages), per-version analysis results (thread facts, structs), deep
# records per stable_id, where the module bytes came from.
_V2 = """
CREATE TABLE programs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL
);
ALTER TABLE versions ADD COLUMN program_id INTEGER REFERENCES programs(id);
ALTER TABLE versions ADD COLUMN lineage TEXT;   -- JSON: how the parent was chosen (overlap, method)
CREATE INDEX versions_program ON versions(program_id, id);
CREATE INDEX versions_sha256 ON versions(sha256);

CREATE TABLE thread_facts (
    version_id INTEGER NOT NULL REFERENCES versions(id),
    seq INTEGER NOT NULL,
    kind TEXT NOT NULL,
    func_index INTEGER,
    payload TEXT NOT NULL,      -- JSON object (the fact as analyze_version returns it)
    PRIMARY KEY (version_id, seq)
) WITHOUT ROWID;
CREATE INDEX thread_facts_func ON thread_facts(version_id, func_index);

CREATE TABLE structs (
    version_id INTEGER NOT NULL REFERENCES versions(id),
    name TEXT NOT NULL,
    source_function INTEGER,
    fields TEXT NOT NULL,       -- JSON list of {offset, size, type, name}
    members TEXT NOT NULL DEFAULT '[]',  -- JSON list of [func_index, param_index]
    PRIMARY KEY (version_id, name)
) WITHOUT ROWID;

CREATE TABLE analyses (
    stable_id TEXT PRIMARY KEY,
    version_id INTEGER NOT NULL,
    func_index INTEGER NOT NULL,
    raw_c TEXT,
    clean_c TEXT,
    understanding TEXT,
    rename_map TEXT NOT NULL DEFAULT '{}',  -- JSON object old -> new
    status TEXT NOT NULL,
    confidence REAL NOT NULL DEFAULT 0,
    backend TEXT,
    model TEXT,
    updated_at TEXT NOT NULL
);

CREATE TABLE analysis_runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    version_id INTEGER NOT NULL REFERENCES versions(id),
    kind TEXT NOT NULL,         -- analyze, agent, deep
    summary TEXT NOT NULL,      -- JSON
    created_at TEXT NOT NULL
);
"""

# Version 3: agent names below the write floor, kept for a person to accept or dismiss.
_V3 = """
CREATE TABLE suggestions (
    version_id INTEGER NOT NULL REFERENCES versions(id),
    stable_id TEXT NOT NULL,
    func_index INTEGER NOT NULL,
    name TEXT NOT NULL,
    confidence REAL NOT NULL,
    backend TEXT NOT NULL,
    model TEXT,
    rule TEXT,
    source TEXT,
    evidence TEXT NOT NULL DEFAULT '{}',   -- JSON (the proposal's evidence)
    status TEXT NOT NULL DEFAULT 'open',   -- open, accepted, dismissed
    created_at TEXT NOT NULL,
    decided_at TEXT,
    PRIMARY KEY (version_id, stable_id)
) WITHOUT ROWID;
CREATE INDEX suggestions_status ON suggestions(version_id, status, confidence);
"""

# Version 4: bounded refusals. An identical refused proposal (same function, caller, reason,
# proposal and current record, nothing written since) is one row with a count and the time
# of its last repeat; `fingerprint` finds it. Rows written before v4 count once.
_V4 = """
ALTER TABLE annotation_events ADD COLUMN repeats INTEGER NOT NULL DEFAULT 1;
ALTER TABLE annotation_events ADD COLUMN last_at TEXT;
ALTER TABLE annotation_events ADD COLUMN fingerprint TEXT;
CREATE INDEX annotation_events_fingerprint ON annotation_events(fingerprint)
    WHERE fingerprint IS NOT NULL;
CREATE INDEX annotation_events_refused ON annotation_events(actor, created_at) WHERE written = 0;
"""

# Version 5: the data model of a version (kbtool.analysis.datamodel): globals with roles, data
# items (strings, tables, ...) with a content identity, and references from code to both.
_V5 = """
CREATE TABLE data_globals (
    version_id INTEGER NOT NULL REFERENCES versions(id),
    idx INTEGER NOT NULL,
    type TEXT NOT NULL,
    mutable INTEGER NOT NULL,
    initial TEXT,               -- JSON number or null
    imported INTEGER NOT NULL,
    import_name TEXT,
    exports TEXT NOT NULL DEFAULT '[]',   -- JSON list
    role TEXT,
    name TEXT,                  -- what the toolchain calls it, when known
    confidence REAL NOT NULL DEFAULT 0,
    reads INTEGER NOT NULL DEFAULT 0,
    writes INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (version_id, idx)
) WITHOUT ROWID;
CREATE TABLE data_items (
    version_id INTEGER NOT NULL REFERENCES versions(id),
    address INTEGER NOT NULL,
    size INTEGER NOT NULL,
    kind TEXT NOT NULL,         -- cstring, utf16, gostring, pointer_table, funcptr_table, numeric, zero
    segment INTEGER NOT NULL,
    text TEXT,
    label TEXT NOT NULL,
    data_id TEXT NOT NULL,      -- identity across releases: kind + content (+ n-th duplicate)
    refs INTEGER NOT NULL DEFAULT 0,
    targets TEXT NOT NULL DEFAULT '[]',   -- JSON list (tables)
    PRIMARY KEY (version_id, address)
) WITHOUT ROWID;
CREATE INDEX data_items_id ON data_items(data_id);
CREATE INDEX data_items_label ON data_items(version_id, label);
CREATE TABLE data_refs (
    version_id INTEGER NOT NULL REFERENCES versions(id),
    func_index INTEGER NOT NULL,   -- -1: a reference from data (a Go string header)
    offset INTEGER NOT NULL,       -- file offset of the instruction (or of the header)
    kind TEXT NOT NULL,            -- load, store, addr, funcptr, gostring, via_header, read, write, call_indirect
    target_kind TEXT NOT NULL,     -- data, global, table
    target INTEGER NOT NULL,
    width INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX data_refs_target ON data_refs(version_id, target_kind, target);
CREATE INDEX data_refs_func ON data_refs(version_id, func_index);
CREATE TABLE data_models (
    version_id INTEGER PRIMARY KEY REFERENCES versions(id),
    data_start INTEGER NOT NULL,
    data_end INTEGER NOT NULL,
    truncated INTEGER NOT NULL DEFAULT 0,
    built_at TEXT NOT NULL
);
"""

# Version 6: knowledge beyond names (issue 27): function and line comments, prototypes, local
# names, data/global names (later: types), one row per (kind, target, key), written only by
# kbtool.kb.gate like symbols. Their gate decisions are annotation_events rows whose stable_id
# is the annotation's own key (``k:<kind>:<target>:<key>``, never a function id, so the name
# history of a function is unchanged) and whose ``subject``/``target``/``akey`` say what it is.
_V6 = """
CREATE TABLE knowledge (
    kind TEXT NOT NULL,          -- comment, line_comment, prototype, local, data_name (, type)
    target TEXT NOT NULL,        -- function stable_id, data_id, g:<global key>, type name
    key TEXT NOT NULL DEFAULT '',  -- '' or the line offset in the body or the local index
    value TEXT NOT NULL,         -- JSON object (text / name / prototype / anchor ...)
    provenance TEXT NOT NULL,
    confidence REAL NOT NULL,
    locked INTEGER NOT NULL DEFAULT 0,
    evidence TEXT NOT NULL DEFAULT '[]',
    version_id INTEGER,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (kind, target, key)
) WITHOUT ROWID;
CREATE INDEX knowledge_target ON knowledge(target, kind);
ALTER TABLE annotation_events ADD COLUMN subject TEXT;
ALTER TABLE annotation_events ADD COLUMN target TEXT;
ALTER TABLE annotation_events ADD COLUMN akey TEXT;
CREATE INDEX annotation_events_target ON annotation_events(target, id) WHERE target IS NOT NULL;
"""

# Version 7: provider answers kept as they arrive (issue 31): an interrupted agent pass loses
# nothing and a re-run sends only the prompts without an answer. Keyed by backend, model and
# the hash of the prompt (so a changed prompt is a new question).
_V7 = """
CREATE TABLE agent_answers (
    backend TEXT NOT NULL,
    model TEXT NOT NULL,
    prompt_hash TEXT NOT NULL,
    version_id INTEGER,
    func_index INTEGER,
    variant TEXT,
    answer TEXT NOT NULL,
    tokens_in INTEGER,           -- as the provider counted (NULL: not reported)
    tokens_out INTEGER,
    prompt_tokens INTEGER,       -- kbtool's estimate when the prompt was built
    created_at TEXT NOT NULL,
    PRIMARY KEY (backend, model, prompt_hash)
) WITHOUT ROWID;
CREATE INDEX agent_answers_version ON agent_answers(version_id, func_index);
"""

# Version 9: a version's call graph structure, built at `kbtool analyze` (issue 30), read back
# by the code views instead of decoding every body (kbtool/kb/callgraphs.py).
_V9 = """
CREATE TABLE IF NOT EXISTS callgraphs (
    version_id INTEGER PRIMARY KEY REFERENCES versions(id),
    module_digest TEXT NOT NULL,  -- blake2b-128 hex of the module bytes it was built from
    format INTEGER NOT NULL,      -- the builder's format; another one is ignored (rebuilt)
    graph BLOB NOT NULL           -- zlib'd JSON (kbtool.services.callgraph_store)
) WITHOUT ROWID;
"""


def _v8_go_shapes(conn: sqlite3.Connection) -> None:
    """Version 8: shape hashes of Go modules normalise function values and return PCs
    (``(PC_F << 16) | PC_B``) and static addresses outside the data (issue 29.5): recompute
    them from the stored module bytes, and ``body_changed`` of the functions that carried an
    identity from a Go parent. Stable ids are opaque once assigned and stay as they are."""
    from kbtool.wasm.facts import analyze_module, is_go_module
    from kbtool.wasm.reader import parse_module

    go: set[int] = set()
    for vid, data in conn.execute("SELECT version_id, data FROM modules ORDER BY version_id"):
        try:
            if not is_go_module(parse_module(bytes(data))):
                continue
            funcs = analyze_module(bytes(data)).functions
        except Exception:  # noqa: BLE001 - a module the old code stored but cannot re-read
            continue
        go.add(vid)
        conn.executemany(
            "UPDATE functions SET shape_hash = ? WHERE version_id = ? AND idx = ? AND imported = 0",
            [(f.shape_hash, vid, f.index) for f in funcs if not f.imported],
        )
    for vid in sorted(go):
        parent = conn.execute(
            "SELECT parent_version_id FROM versions WHERE id = ?", (vid,)
        ).fetchone()
        if not parent or parent[0] not in go:
            continue
        conn.execute(
            "UPDATE functions SET body_changed = (SELECT CASE WHEN p.shape_hash IS"
            " functions.shape_hash THEN 0 ELSE 1 END FROM functions p"
            " WHERE p.version_id = ? AND p.idx = functions.prev_index)"
            " WHERE version_id = ? AND prev_index IS NOT NULL AND imported = 0"
            " AND EXISTS (SELECT 1 FROM functions p WHERE p.version_id = ?"
            " AND p.idx = functions.prev_index)",
            (parent[0], vid, parent[0]),
        )


# Version 10: a version's data references as packed columns (kbtool/kb/datarefs.py; issue 30
# point 4): ``data_refs`` (a row per reference, indexes on target and function) becomes
# ``data_ref_chunks`` (the references in (function, offset) order, 1024 per row) and
# ``data_ref_targets`` (the same sorted by target: target keys and positions). The old rows
# are converted version by version, then the old table dropped.
_V10 = """
CREATE TABLE IF NOT EXISTS data_ref_chunks (
    version_id INTEGER NOT NULL REFERENCES versions(id),
    chunk INTEGER NOT NULL,      -- positions [chunk * 1024, ...) in (function, offset) order
    n INTEGER NOT NULL,          -- references in it
    lo_func INTEGER NOT NULL,    -- its first and last function
    hi_func INTEGER NOT NULL,
    cols BLOB NOT NULL,          -- func_index, offset, target key, kind, width (packed)
    PRIMARY KEY (version_id, chunk)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS data_ref_chunks_func ON data_ref_chunks(version_id, hi_func, lo_func);
CREATE TABLE IF NOT EXISTS data_ref_targets (
    version_id INTEGER NOT NULL REFERENCES versions(id),
    chunk INTEGER NOT NULL,
    n INTEGER NOT NULL,
    lo_key INTEGER NOT NULL,     -- its first and last key (target * 4 + target kind code)
    hi_key INTEGER NOT NULL,
    cols BLOB NOT NULL,          -- key, position in data_ref_chunks (packed, by key)
    PRIMARY KEY (version_id, chunk)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS data_ref_targets_key ON data_ref_targets(version_id, hi_key, lo_key);
"""


def _v10_packed_refs(conn: sqlite3.Connection) -> None:
    """Version 10: ``data_refs`` rows into the packed tables (each version's rows in their
    stored order, sorted by (function, offset) as a fresh ingest writes them)."""
    from kbtool.kb import datarefs

    _run_script(conn, _V10)
    old = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'data_refs'")
    if old.fetchone() is None:  # (a KB whose version was set back by hand: nothing to convert)
        return
    per: dict[int, list] = {}
    for vid, *row in conn.execute(
        "SELECT version_id, func_index, offset, kind, target_kind, target, width FROM data_refs"
        " ORDER BY rowid"
    ):
        per.setdefault(vid, []).append(tuple(row))
    for vid, rows in sorted(per.items()):
        datarefs.write(conn, vid, rows)
    conn.execute("DROP TABLE data_refs")


# Version 11: two indexes that serve no query go (issue 30): ``functions_shape`` (on
# ``shape_hash``) and ``data_items_id`` (on ``data_id``). No statement of kbtool filters, joins,
# sorts or groups on either column (tests/unit/kb/test_schema_11.py lists the indexes every
# query uses); a fresh ingest built them for nothing (~50 ms of ffmpeg's). Rows unchanged.
_V11 = """
DROP INDEX IF EXISTS functions_shape;
DROP INDEX IF EXISTS data_items_id;
"""


# Version 12: the three tables of long rows become rowid tables (issue 30 point 4), their
# primary key a unique index beside them; columns, keys, other indexes and rows unchanged.
# A row of a WITHOUT ROWID table is a B-tree index entry: past ~1/4 of a page (8 KB of a
# 32 KB page) all but ~4 KB of it goes to an overflow page of its own, mostly empty (a facts
# row of a big function: its ops and memory accesses; a chunk of 1024 packed references:
# 9-14 KB each). A rowid table keeps a row up to a whole page in its leaf. ffmpeg's KB:
# 133 MB -> 102 MB (facts 58 -> 40 MB, the two reference tables 28 -> 9 MB).
_V12_TABLES = {
    "facts": (
        """CREATE TABLE facts (
    version_id INTEGER NOT NULL,
    idx INTEGER NOT NULL,
    calls TEXT NOT NULL,            -- JSON list of direct callee indices (in order, dups kept)
    call_indirect INTEGER NOT NULL,
    ref_funcs TEXT NOT NULL,        -- JSON list
    consts TEXT NOT NULL,           -- JSON list
    strings TEXT NOT NULL,          -- JSON list
    globals_used TEXT NOT NULL,     -- JSON list
    mem_ops TEXT NOT NULL,          -- JSON list of [op id, offset, width]
    atomic_sites INTEGER NOT NULL,
    loops INTEGER NOT NULL,
    ops BLOB NOT NULL,              -- array('H') of op ids (kbtool.wasm.opcodes.MNEMONICS)
    table_slots TEXT NOT NULL DEFAULT '[]',  -- JSON list of positions in the element segments
    PRIMARY KEY (version_id, idx)
)""",
        "version_id, idx, calls, call_indirect, ref_funcs, consts, strings, globals_used,"
        " mem_ops, atomic_sites, loops, ops, table_slots",
        "version_id, idx",
    ),
    "data_ref_chunks": (
        """CREATE TABLE data_ref_chunks (
    version_id INTEGER NOT NULL REFERENCES versions(id),
    chunk INTEGER NOT NULL,      -- positions [chunk * 1024, ...) in (function, offset) order
    n INTEGER NOT NULL,          -- references in it
    lo_func INTEGER NOT NULL,    -- its first and last function
    hi_func INTEGER NOT NULL,
    cols BLOB NOT NULL,          -- func_index, offset, target key, kind, width (packed)
    PRIMARY KEY (version_id, chunk)
)""",
        "version_id, chunk, n, lo_func, hi_func, cols",
        "version_id, chunk",
    ),
    "data_ref_targets": (
        """CREATE TABLE data_ref_targets (
    version_id INTEGER NOT NULL REFERENCES versions(id),
    chunk INTEGER NOT NULL,
    n INTEGER NOT NULL,
    lo_key INTEGER NOT NULL,     -- its first and last key (target * 4 + target kind code)
    hi_key INTEGER NOT NULL,
    cols BLOB NOT NULL,          -- key, position in data_ref_chunks (packed, by key)
    PRIMARY KEY (version_id, chunk)
)""",
        "version_id, chunk, n, lo_key, hi_key, cols",
        "version_id, chunk",
    ),
}


# The reference tables' range indexes end with ``chunk``: in a WITHOUT ROWID table an index
# holds the primary key, so ``SELECT chunk ... WHERE version_id = ? AND hi_key >= ? AND
# lo_key <= ?`` was answered from the index alone; a rowid table's index holds the rowid, so
# without ``chunk`` each hit would read its table row, blob and all.
_V12_INDEXES = {
    "data_ref_chunks_func": "CREATE INDEX data_ref_chunks_func"
    " ON data_ref_chunks(version_id, hi_func, lo_func, chunk)",
    "data_ref_targets_key": "CREATE INDEX data_ref_targets_key"
    " ON data_ref_targets(version_id, hi_key, lo_key, chunk)",
}


def _v12_rowid_tables(conn: sqlite3.Connection) -> None:
    """Version 12: each of :data:`_V12_TABLES` rebuilt as a rowid table, its rows copied in
    primary-key order (so rowid order is key order, as a fresh ingest writes them), its
    other indexes made again from their own DDL."""
    for table, (ddl, cols, key) in _V12_TABLES.items():
        old = f"{table}_v11"
        indexes = conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ?"
            " AND sql IS NOT NULL ORDER BY name",
            (table,),
        ).fetchall()
        for name, _ in indexes:
            conn.execute(f'DROP INDEX "{name}"')
        conn.execute(f"ALTER TABLE {table} RENAME TO {old}")
        conn.execute(ddl)
        conn.execute(
            f"INSERT INTO {table} ({cols}) SELECT {cols} FROM {old} ORDER BY {key}"  # noqa: S608
        )
        conn.execute(f"DROP TABLE {old}")
        for name, sql in indexes:
            conn.execute(_V12_INDEXES.get(name, sql))


# Version 13: ``call_edges`` keyed by (version_id, callee, caller), its callee index gone
# (issue 30 point 4): the table answers "who calls f" (a range of its key); a function's
# callees are its ``facts.calls`` (the edges are that list's distinct values). A fresh ingest
# sorted ffmpeg's 47k edges for the index (every entry ties on version_id). Rows unchanged;
# copied in the new key order from the old index (covering: no sort).
_V13 = """
ALTER TABLE call_edges RENAME TO call_edges_v12;
CREATE TABLE call_edges (
    version_id INTEGER NOT NULL,
    caller INTEGER NOT NULL,
    callee INTEGER NOT NULL,
    PRIMARY KEY (version_id, callee, caller)
) WITHOUT ROWID;
INSERT INTO call_edges (version_id, caller, callee) SELECT version_id, caller, callee
    FROM call_edges_v12 ORDER BY version_id, callee, caller;
DROP TABLE call_edges_v12;
"""


# Migration n takes a KB at schema version n-1 to version n.
def _run_script(conn: sqlite3.Connection, script: str) -> None:
    """Run DDL statements one by one (``executescript`` would commit mid-migration)."""
    buf = ""
    for line in script.splitlines(keepends=True):
        buf += line
        if sqlite3.complete_statement(buf):
            conn.execute(buf)
            buf = ""


MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {
    1: lambda conn: _run_script(conn, _V1),
    2: lambda conn: _run_script(conn, _V2),
    3: lambda conn: _run_script(conn, _V3),
    4: lambda conn: _run_script(conn, _V4),
    5: lambda conn: _run_script(conn, _V5),
    6: lambda conn: _run_script(conn, _V6),
    7: lambda conn: _run_script(conn, _V7),
    8: _v8_go_shapes,
    9: lambda conn: _run_script(conn, _V9),
    10: _v10_packed_refs,
    11: lambda conn: _run_script(conn, _V11),
    12: _v12_rowid_tables,
    13: lambda conn: _run_script(conn, _V13),
}

TABLES = tuple(
    "meta versions modules functions facts call_edges symbols annotation_events events diffs"
    " oracle_modules programs thread_facts structs analyses analysis_runs suggestions"
    " data_globals data_items data_ref_chunks data_ref_targets data_models knowledge"
    " agent_answers callgraphs".split()
)


def _verify(conn: sqlite3.Connection) -> None:
    """After migrating: every table of this schema exists."""
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    missing = set(TABLES) - names
    if missing:
        raise RuntimeError(f"migration left tables missing: {sorted(missing)}")


def read_schema_version(conn: sqlite3.Connection) -> int | None:
    """The KB's schema version, 0 for an empty file, None when it is not a KB."""
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if not names:
        return 0
    if "meta" not in names:
        return None
    rows = dict(conn.execute("SELECT key, value FROM meta").fetchall())
    if rows.get("kind") != KB_KIND:
        return None
    return int(rows.get("schema_version", "0"))


def check_schema(conn: sqlite3.Connection, path: str = "") -> None:
    """Raise unless ``conn`` is a KB at exactly this code's schema version."""
    try:
        version = read_schema_version(conn)
    except sqlite3.DatabaseError as exc:
        raise NotAKBError(f"{path or 'file'} is not a kbtool KB ({exc})") from None
    if version is None or version == 0:
        raise NotAKBError(f"{path or 'file'} is not a kbtool KB")
    if version < SCHEMA_VERSION:
        import shlex

        raise SchemaVersionError(
            f"{path} has KB schema {version}, this kbtool reads {SCHEMA_VERSION}: "
            f"run `kbtool migrate{' --db ' + shlex.quote(path) if path else ''}` once to migrate it"
        )
    if version > SCHEMA_VERSION:
        raise SchemaVersionError(
            f"{path} has KB schema {version}, newer than this kbtool ({SCHEMA_VERSION}): upgrade kbtool"
        )


def ensure_schema(conn: sqlite3.Connection, path: str = "") -> None:
    """Create a fresh KB or migrate an older one, in one transaction."""
    try:
        version = read_schema_version(conn)
    except sqlite3.DatabaseError as exc:
        raise NotAKBError(f"{path or 'file'} is not a kbtool KB ({exc})") from None
    if version is None:
        raise NotAKBError(f"{path or 'file'} is not a kbtool KB (it has other tables)")
    if version > SCHEMA_VERSION:
        raise SchemaVersionError(
            f"{path} has KB schema {version}, newer than this kbtool ({SCHEMA_VERSION}): upgrade kbtool"
        )
    if version == SCHEMA_VERSION:
        return
    fresh = version == 0 and FRESH_VERSION == SCHEMA_VERSION  # a new file: the end state at once
    if not fresh:
        conn.execute("BEGIN IMMEDIATE")
    try:
        if fresh:  # one call for the whole script (no per-statement split nor execute)
            conn.executescript(f"BEGIN IMMEDIATE;\n{FRESH_SCRIPT}")
        else:
            for target in range(version + 1, SCHEMA_VERSION + 1):
                MIGRATIONS[target](conn)
        conn.execute(
            "INSERT OR REPLACE INTO meta(key, value) VALUES ('kind', ?), ('schema_version', ?)",
            (KB_KIND, str(SCHEMA_VERSION)),
        )
        _verify(conn)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:  # SQLITE_FULL/IOERR may have rolled back already
            conn.execute("ROLLBACK")
        raise
