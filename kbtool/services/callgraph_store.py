"""A version's call graph structure stored at ``kbtool analyze`` and read back by the code
views (issue 30): the first ``/api/callgraph``, MCP ``indirect=true`` or studio page of a big
module reads it (~60 ms on ffmpeg) instead of decoding every body (~2.5 s CPU).

The structure is :func:`kbtool.lift.build_callgraph` without names (``{nodes, edges,
indirect, candidates}``, every node's ``name``/``stable_id`` None): a pure function of the
module bytes, so a stored one is used only when its module digest and :data:`FORMAT` match
(else it is built as before); names, stable ids and provenance are added per KB state (the
change token) by :func:`kbtool.services.code_graph.callgraph`. ``kbtool analyze`` replaces it.
"""

from __future__ import annotations

import hashlib
import sqlite3
import zlib

import orjson

from kbtool.kb import callgraphs
from kbtool.lift import build_callgraph
from kbtool.wasm import ModuleAnalysis

__all__ = ["FORMAT", "encode", "load", "module_digest", "save", "store", "structure"]

# the builder's output format: bump when kbtool.lift.build_callgraph's answer changes for the
# same bytes (an older stored graph is then ignored and rebuilt on the fly until re-analysis)
FORMAT = 1
_KEYS = {"nodes", "edges", "indirect", "candidates"}
LEVEL = 6  # zlib level: ffmpeg's 5.5 MB of JSON -> 0.35 MB, ~15 ms to inflate


def module_digest(data: bytes) -> str:
    """The digest a stored graph is keyed by (blake2b-128 of the module bytes, hex)."""
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def structure(analysis: ModuleAnalysis, data: bytes) -> dict:
    """The call graph's structure, names left out (the code views add them)."""
    return build_callgraph(analysis, data, {}, {}, {})


def encode(analysis: ModuleAnalysis, data: bytes) -> tuple[str, bytes]:
    """Build the structure and encode it for :func:`save`: ``(module digest, blob)``."""
    return module_digest(data), zlib.compress(orjson.dumps(structure(analysis, data)), LEVEL)


def save(conn: sqlite3.Connection, version_id: int, encoded: tuple[str, bytes]) -> None:
    """Store an :func:`encode` result as ``version_id``'s call graph (replacing an older one),
    in the caller's transaction."""
    digest, blob = encoded
    callgraphs.replace_callgraph(conn, version_id, digest, FORMAT, blob)


def store(conn: sqlite3.Connection, version_id: int, analysis: ModuleAnalysis, data: bytes) -> None:
    """Build and store ``version_id``'s call graph structure in the caller's transaction."""
    save(conn, version_id, encode(analysis, data))


def load(conn: sqlite3.Connection, version_id: int, digest: str) -> dict | None:
    """The stored structure of ``version_id`` if it was built from the bytes of ``digest``
    in this :data:`FORMAT`, else None (never stored, other bytes, older builder, damaged)."""
    row = callgraphs.stored_callgraph(conn, version_id)
    if row is None or row.format != FORMAT or row.module_digest != digest:
        return None
    try:
        graph = orjson.loads(zlib.decompress(row.graph))
    except (zlib.error, orjson.JSONDecodeError):
        return None
    if not isinstance(graph, dict) or not _KEYS <= graph.keys():
        return None
    return graph
