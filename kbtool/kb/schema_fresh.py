"""A fresh KB's schema in one script: what :data:`kbtool.kb.schema.MIGRATIONS` 1..13 leave in
``sqlite_master`` (each object's stored SQL, in the same order), created at once instead of
table by table, renamed, copied and dropped (issue #30 point 4: ~10 ms of a small module's
fresh ingest). Regenerate it whenever a migration is added: ``python -m kbtool.kb.schema_fresh``
prints the script and its version from the migrations (:func:`generate`); paste both here
(tests/unit/kb/test_schema_fresh.py compares the two paths' KBs and this text)."""

from __future__ import annotations

FRESH_VERSION = 13

FRESH_SCRIPT = """
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
, program_id INTEGER REFERENCES programs(id), lineage TEXT);
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
, repeats INTEGER NOT NULL DEFAULT 1, last_at TEXT, fingerprint TEXT, subject TEXT, target TEXT, akey TEXT);
CREATE INDEX annotation_events_sid ON annotation_events(stable_id, id);
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
CREATE TABLE programs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL
);
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
CREATE INDEX annotation_events_fingerprint ON annotation_events(fingerprint)
    WHERE fingerprint IS NOT NULL;
CREATE INDEX annotation_events_refused ON annotation_events(actor, created_at) WHERE written = 0;
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
CREATE INDEX data_items_label ON data_items(version_id, label);
CREATE TABLE data_models (
    version_id INTEGER PRIMARY KEY REFERENCES versions(id),
    data_start INTEGER NOT NULL,
    data_end INTEGER NOT NULL,
    truncated INTEGER NOT NULL DEFAULT 0,
    built_at TEXT NOT NULL
);
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
CREATE INDEX annotation_events_target ON annotation_events(target, id) WHERE target IS NOT NULL;
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
CREATE TABLE callgraphs (
    version_id INTEGER PRIMARY KEY REFERENCES versions(id),
    module_digest TEXT NOT NULL,  -- blake2b-128 hex of the module bytes it was built from
    format INTEGER NOT NULL,      -- the builder's format; another one is ignored (rebuilt)
    graph BLOB NOT NULL           -- zlib'd JSON (kbtool.services.callgraph_store)
) WITHOUT ROWID;
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
);
CREATE TABLE data_ref_chunks (
    version_id INTEGER NOT NULL REFERENCES versions(id),
    chunk INTEGER NOT NULL,      -- positions [chunk * 1024, ...) in (function, offset) order
    n INTEGER NOT NULL,          -- references in it
    lo_func INTEGER NOT NULL,    -- its first and last function
    hi_func INTEGER NOT NULL,
    cols BLOB NOT NULL,          -- func_index, offset, target key, kind, width (packed)
    PRIMARY KEY (version_id, chunk)
);
CREATE INDEX data_ref_chunks_func ON data_ref_chunks(version_id, hi_func, lo_func, chunk);
CREATE TABLE data_ref_targets (
    version_id INTEGER NOT NULL REFERENCES versions(id),
    chunk INTEGER NOT NULL,
    n INTEGER NOT NULL,
    lo_key INTEGER NOT NULL,     -- its first and last key (target * 4 + target kind code)
    hi_key INTEGER NOT NULL,
    cols BLOB NOT NULL,          -- key, position in data_ref_chunks (packed, by key)
    PRIMARY KEY (version_id, chunk)
);
CREATE INDEX data_ref_targets_key ON data_ref_targets(version_id, hi_key, lo_key, chunk);
CREATE TABLE call_edges (
    version_id INTEGER NOT NULL,
    caller INTEGER NOT NULL,
    callee INTEGER NOT NULL,
    PRIMARY KEY (version_id, callee, caller)
) WITHOUT ROWID;
"""


def generate() -> str:
    """The script as the migrations leave ``sqlite_master`` (run on an in-memory KB):
    every object's stored SQL in creation order, SQLite's own objects left out."""
    import sqlite3

    from kbtool.kb import schema

    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.execute("BEGIN")
    for target in range(1, schema.SCHEMA_VERSION + 1):
        schema.MIGRATIONS[target](conn)
    rows = conn.execute(
        "SELECT name, sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY rowid"
    ).fetchall()
    conn.close()
    return "\n" + "".join(f"{sql};\n" for name, sql in rows if not name.startswith("sqlite_"))


if __name__ == "__main__":  # regenerate: python -m kbtool.kb.schema_fresh
    from kbtool.kb.schema import SCHEMA_VERSION

    print(f'FRESH_VERSION = {SCHEMA_VERSION}\n\nFRESH_SCRIPT = """{generate()}"""')
