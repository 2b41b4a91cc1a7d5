"""The bundled demo: two real zstd releases, names from exports, a teammate's hand names,
and the second release ingested on top so identities and names carry over."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from kbtool import demo as demo_data
from kbtool.kb import queries, schema
from kbtool.kb.db import default_db_path, inspect_kb, open_rw, version_labels
from kbtool.kb.errors import KBError
from kbtool.kb.gate import upsert_symbol
from kbtool.services.ingest import ingest_file

HERE = Path(demo_data.__file__).parent
RELEASES = (("zstd-1.5.5.wasm", "zstd-1.5.5"), ("zstd-1.5.6.wasm", "zstd-1.5.6"))
HUMAN_NAMES = HERE / "human-names-1.5.5.tsv"


def human_names() -> list[tuple[int, str, str]]:
    rows = []
    for line in HUMAN_NAMES.read_text(encoding="utf-8").splitlines():
        if not line or line.startswith("#"):
            continue
        idx, name, summary = (line.split("\t") + ["", ""])[:3]
        rows.append((int(idx), name, summary))
    return rows


def demo_kb_schema(path: Path) -> int | None:
    """The schema of the demo KB at ``path`` (a KB holding the bundled releases, at this
    kbtool's schema or an older one), or None when the file is not that (another KB, a
    newer kbtool's, not a KB): read without changing anything."""
    try:
        version = inspect_kb(path, allow_empty=False)
        labels = version_labels(path)
    except KBError:
        return None
    if version > schema.SCHEMA_VERSION:
        return None
    return version if {label for _, label in RELEASES} <= labels else None


def migrate_demo(path: Path) -> int:
    """Migrate the demo KB at ``path`` to this kbtool's schema (one transaction, as any write
    command does); the schema it is at after."""
    conn = open_rw(path, create=False)
    try:
        return schema.read_schema_version(conn) or 0
    finally:
        conn.close()


def build_demo(path: str | Path, echo: Callable[[str], None] = print) -> list[str]:
    """Create a demo KB at ``path``; return the commands a user can try next."""
    conn = open_rw(path)
    try:
        first = None
        for fname, label in RELEASES[:1]:
            res = ingest_file(conn, HERE / fname, label=label)
            first = res.version_id
            echo(
                f"ingested {label}: {res.defined} functions, {res.names_written} names from exports"
            )
        named = 0
        for idx, name, summary in human_names():
            sid = queries.get_function(conn, first, idx)["stable_id"]
            d = upsert_symbol(
                conn,
                sid,
                name,
                provenance="human",
                confidence=1.0,
                actor="human:demo",
                summary=summary or None,
                evidence={"source": "demo hand names"},
            )
            named += d["written"]
        echo(f"recorded {named} hand-made names on {RELEASES[0][1]}")
        for fname, label in RELEASES[1:]:
            res = ingest_file(conn, HERE / fname, label=label)
            carried = res.diff_carry.get("written", 0) if res.diff_carry else 0
            echo(
                f"ingested {label}: {res.carried} identities carried, {res.body_changed} changed bodies,"
                f" {res.new_identities} new, {carried} names carried by diff"
            )
        last = queries.latest_version_id(conn)
    finally:
        conn.close()
    db = "" if str(path) == default_db_path() else f" --db {path}"
    return [
        "",
        "Try next:",
        f"  kbtool ui diff 1 {last}{db}        # what changed, as tables + changelog",
        f"  kbtool coverage {last}{db}",
        f"  kbtool search huf{db}",
        f"  kbtool tui{db}                     # the full-screen browser",
        f"  kbtool serve{db}                   # the web dashboard on http://127.0.0.1:8787",
    ]
