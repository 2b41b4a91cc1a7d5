"""Every public read of the query layer and the data model, run on a KB file at an older
schema (a migration's test: the answers before and after must be equal)."""

from __future__ import annotations

import inspect
import sqlite3
from pathlib import Path
from typing import Any
from urllib.parse import quote

from kbtool.kb import datamodel, queries
from kbtool.kb.db import _configure
from kbtool.kb.errors import KBError

# reads of the data model the query layer re-exports nowhere (kbtool/kb/datamodel.py)
DATA_READS = (
    "model_row",
    "model_info",
    "list_items",
    "item_at",
    "item_by_label",
    "items_by_text",
    "globals_of",
    "refs_to",
    "refs_from",
    "function_names_for",
    "function_by_name",
)


def reader(path: Path) -> sqlite3.Connection:
    """A read-only connection configured as ``open_ro``'s, without its schema check (which
    refuses an older schema): the readers of that schema on that file."""
    conn = sqlite3.connect(
        "file:" + quote(str(path.resolve())) + "?mode=ro", uri=True, isolation_level=None
    )
    _configure(conn)
    conn.execute("PRAGMA query_only = ON")
    return conn


def samples(conn: sqlite3.Connection) -> dict[str, list[Any]]:
    """Argument values by parameter name, taken from the KB itself."""
    vids = [r[0] for r in conn.execute("SELECT id FROM versions ORDER BY id")]
    fn = conn.execute(
        "SELECT f.version_id, f.idx, f.stable_id, s.name FROM functions f JOIN symbols s"
        " USING (stable_id) WHERE f.imported = 0 AND s.name IS NOT NULL ORDER BY 1, 2"
        " LIMIT 1"
    ).fetchone()
    item = conn.execute(
        "SELECT address, label, text FROM data_items WHERE version_id = ? AND text IS NOT NULL"
        " ORDER BY address LIMIT 1",
        (vids[-1],),
    ).fetchone()
    sha, label = conn.execute("SELECT sha256, label FROM versions ORDER BY id LIMIT 1").fetchone()
    return {
        "version_id": vids,
        "from_version_id": vids[:1],
        "to_version_id": vids[-1:],
        "index": [fn[1]],
        "func_index": [fn[1], fn[1] + 3],
        "indices": [[fn[1], fn[1] + 1, fn[1] + 7]],
        "stable_id": [fn[2], "nosuch"],
        "query": [fn[3][:4]],
        "text": [item[2][:3]],
        "name": [fn[3]],
        "label": [label, item[1]],
        "address": [item[0]],
        "values": [[0, 1, 4]],
        "sha256": [sha],
        "backend": ["ollama"],
        "model": [None],
        "prompt_hash": ["0" * 16],
        "target_kind": ["data", "global"],
        "lo": [item[0], 0],
        "include_imports": [True],
        "offset": [0, 3],
        "count": [50],
        # stable_id_taken: few questions (ids looked up one by one), very many (the whole set)
        "expected": [1, 10**9],
        # heatmap_cells: the TUI's code order (provenances, unnamed last) and buckets
        "slots": [("human", "oracle", "export", "agent", "diff-carry", None)],
        "buckets": [11],
    }


def plain(x: Any) -> Any:
    if isinstance(x, sqlite3.Row):
        return tuple(x)
    if isinstance(x, dict):
        return {k: plain(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [plain(v) for v in x]
    return x


def read_everything(conn: sqlite3.Connection) -> dict[str, Any]:
    """Every public read of the query layer and the data model, with every sample of its
    parameters: name -> answers."""
    by_name = samples(conn)
    fns = [
        (n, f)
        for n, f in ((n, getattr(queries, n)) for n in dir(queries))  # (dir: the lazy names too)
        if inspect.isfunction(f) and not n.startswith("_") and n != "parse_mem_ops"
    ]
    fns += [(f"datamodel.{n}", getattr(datamodel, n)) for n in DATA_READS]
    out: dict[str, Any] = {}
    for name, f in sorted(fns):
        params = [
            p
            for p in list(inspect.signature(f).parameters.values())[1:]
            if p.default is inspect.Parameter.empty
        ]
        missing = [p.name for p in params if p.name not in by_name]
        assert not missing, (
            f"{name}: no sample for {missing} (add one to tests.support.kb_reads.samples)"
        )
        combos: list[dict[str, Any]] = [{}]
        for p in params:
            combos = [{**c, p.name: v} for c in combos for v in by_name[p.name]]
        answers = []
        for kwargs in combos:
            try:
                got = f(conn, **kwargs)
                if callable(got):  # a predicate (stable_id_taken): its answers on the samples
                    got = [got(v) for v in by_name["stable_id"]]
                answers.append(repr(plain(got)))
            except KBError as exc:  # an unknown id: the answer is the refusal
                answers.append(f"{type(exc).__name__}: {exc}")
        out[name] = answers
    return out
