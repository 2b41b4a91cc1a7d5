"""A version's preparation for the code views, kept on disk (issue 30 point 1).

Every code view needs the version prepared (:mod:`kbtool.services.code_prepared`): the KB's
names and data labels read, unique C names given to ~88k functions, globals and data labels
of ffmpeg, the passive data segments located in the code, ~210 ms. A fresh process (a
studio on a new server, the TUI, MCP) would pay it for every version it opens; this module
keeps what it built in one file per (KB file, version) and reads it back in a few tens of ms:

- the file is keyed by the KB file (path, device, inode), the version id, the module's
  SHA-256, when the version was ingested, when its data model was built and
  :data:`FORMAT` (its name and its header both carry them: a KB replaced at the same path,
  another module or another layout never meets an old file);
- beside what was built it keeps the KB's change token it was built at; read back under
  another token, what may have moved is found from the annotation decisions written since
  (:func:`judge`): none of the version's functions and no other knowledge -> used as is; only
  function annotations of the version -> its names are read again and the C names given
  again (a rename is never shown stale); anything else (other knowledge, an analysis run)
  -> built again from the KB (what depends on the module alone is kept);
- files are written atomically (a temporary file renamed), hold a BLAKE2b digest of their
  payload (a truncated or corrupted file is a miss, never an error or a wrong answer), at
  most :data:`DISK_FILES` per KB file (the oldest go; other KBs' stay);
- ``KBTOOL_CODE_CACHE_DIR`` says where (default ``$XDG_CACHE_HOME/kbtool/code``, else
  ``~/.cache/kbtool/code``); ``off`` turns it off.

``python -m kbtool.services.code_store --db KB [--version V]`` prepares and keeps versions
(what ``kbtool analyze`` and ``kbtool ingest`` start in the background for big modules:
:func:`start_background`), and the lifted C of their largest functions
(:mod:`kbtool.services.code_kept_c`).
"""

from __future__ import annotations

import hashlib
import marshal
import os
import sqlite3
import sys
import time
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbtool.services import disk_cap
from kbtool.services.detached import spawn, switched_off

FORMAT = 5  # bump when what is kept or how it is built changes
DISK_FILES = 16  # versions kept per KB file
TOTAL_BYTES = 1 << 30  # all KBs' preparations together (ffmpeg's is ~4.7 MB a version)
MAGIC = b"KBTOOL-CODE\n"
_DIGEST = 16
#: a module this big is prepared in the background after ``analyze``/``ingest`` (a small
#: one is prepared in a few ms by whoever asks)
WARM_MIN_BYTES = 1 << 20


def store_dir() -> Path | None:
    """Where preparations are kept (None: not kept; ``KBTOOL_CODE_CACHE_DIR``)."""
    return disk_cap.cache_dir("KBTOOL_CODE_CACHE_DIR", "code")


@dataclass
class Kept:
    """What a preparation built, as kept on disk (plain values only)."""

    token: tuple  # the KB's change token when it was built
    ids: list  # identity rows (code_labels.identity_rows) as 7 columns (lists)
    global_names: dict  # data model global names
    labels: Sequence  # data labels as read (before their C names)
    #: the version's recovered structs (queries.structs); as read back, still marshalled
    #: (bytes) until :func:`decode_structs` (only the lifted C lays them out)
    structs: list | bytes
    toolchain: str  # the module's toolchain (lower case; module only)
    passive: dict | None  # passive segment -> address (module only; None: search again)
    func_c: list
    global_c: list
    data_items: Sequence  # (address, size, C identifier, text) rows; ItemRows as read back
    used: set
    digest: str  # blake2b-128 of the module bytes, hex (what parsed modules are kept under)
    stamp: str = ""  # the annotation decision of the token's event id (code_labels.event_stamp)
    hooked: bool | None = None  # bool() of the structs' field hook (None: not known)
    #: the parsed module's sections as plain values (code_module_kept.freeze; None: parse
    #: it); to save, the parsed ``(Module, bytes)`` may be given instead (frozen then)
    module: Any = None


def decode_structs(structs: list | bytes) -> list:
    """The recovered structs of :attr:`Kept.structs` (still marshalled, or decoded)."""
    if isinstance(structs, bytes):
        value = marshal.loads(structs)
        return value if isinstance(value, list) else []
    return structs


FIELDS = tuple(Kept.__dataclass_fields__)
_SAME = "same as data_items"  # the labels, sorted, are the data items (each its own name)


def id_columns(ids: list) -> list[list]:
    """Identity rows as their 7 columns."""
    return [list(c) for c in zip(*ids, strict=True)] if ids else [[] for _ in range(7)]


def _encode(kept: Kept) -> dict[str, Any]:
    value = dict(kept.__dict__)
    del value["used"]  # the union of the C names: made again when read
    value["token"] = list(kept.token)
    value["ids"] = pack_rows(list(zip(*kept.ids, strict=True)))
    value["data_items"] = pack_rows(list(kept.data_items))
    if isinstance(kept.module, tuple):  # frozen here, off the thread that showed code
        from kbtool.services.code_module_kept import freeze

        value["module"] = freeze(*kept.module)
    value["structs"] = (
        kept.structs if isinstance(kept.structs, bytes) else marshal.dumps(kept.structs)
    )
    same = sorted(kept.labels) == list(kept.data_items)
    value["labels"] = _SAME if same else pack_rows(list(kept.labels))
    return value


def _decode(value: dict[str, Any]) -> Kept:
    ids = unpack_columns(value["ids"])
    if ids is None:
        ids = id_columns(value["ids"][1])
    data_items, idents = unpack_items(value["data_items"])
    labels = value["labels"]
    labels = data_items if labels == _SAME else unpack_rows(labels)
    used = set(value["func_c"])
    used.update(value["global_c"])
    used.update(idents)
    fields = dict(value, ids=ids, data_items=data_items, labels=labels, used=used)
    fields["token"] = tuple(value["token"])
    return Kept(**{f: fields[f] for f in FIELDS})


# ---------------------------------------------------------------- packing

_SEP, _NONE = "\x00", "\x01"  # between strings of a column; a None in a string column


def pack_rows(rows: list) -> list:
    """A list of equal-length tuples of ints and strings (or None) as columns: an int
    column as int64 bytes, a string column as one ``\\x00``-joined string (None as
    ``\\x01``), which :func:`unpack_columns` reads back far faster than the tuples (one
    object per column, not per value). ``["rows", rows]`` when a value does not fit (a
    string holding either separator, an int past 64 bits, another type)."""
    if not rows:
        return ["rows", rows]
    width = len(rows[0])
    cols = list(zip(*rows, strict=True)) if all(len(r) == width for r in rows) else None
    if cols is None:
        return ["rows", rows]
    out: list = ["cols", len(rows)]
    for col in cols:
        kinds = {type(v) for v in col}
        if kinds == {int}:
            try:
                out.append(("i", array("q", col).tobytes()))
            except OverflowError:
                return ["rows", rows]
        elif kinds <= {str, type(None)}:
            nones = col.count(None)
            sparse = nones * 2 > len(col)  # mostly None: the indices of the others
            texts = [v for v in col if v is not None] if sparse else col
            texts = [_NONE if v is None else v for v in texts]
            joined = _SEP.join(texts)
            if (texts and joined.count(_SEP) != len(texts) - 1) or joined.count(_NONE) != (
                0 if sparse else nones
            ):
                return ["rows", rows]
            if sparse:
                at = array("q", [k for k, v in enumerate(col) if v is not None]).tobytes()
                out.append(("z", at, joined if texts else None))
            else:
                out.append(("s", joined))
        else:
            return ["rows", rows]
    return out


def unpack_columns(packed: list) -> list[list] | None:
    """The columns of :func:`pack_rows`' answer (None: it kept the rows themselves)."""
    if packed[0] != "cols":
        return None
    n = packed[1]
    cols: list[list] = []
    for kind, value, *more in packed[2:]:
        if kind == "i":
            a = array("q")
            a.frombytes(value)
            col = a.tolist()
        elif kind == "z":  # mostly None: the others at their indices
            col = [None] * n
            if more[0] is not None:
                at = array("q")
                at.frombytes(value)
                for k, text in zip(at, more[0].split(_SEP), strict=True):
                    col[k] = text
        else:
            col = value.split(_SEP) if n else []
            if _NONE in value:
                col = [None if v == _NONE else v for v in col]
        if len(col) != n:
            raise ValueError("a column of another length")
        cols.append(col)
    return cols


class ItemRows(Sequence):
    """Data items ``(address, size, C identifier, text or None)`` over their columns, each
    tuple made when asked: a code view looks a few up by address (``starts``, the address
    column, is what :class:`kbtool.lift.LiftModule` bisects), and 65k tuples up front were
    ~7 ms of ffmpeg's cold preparation."""

    __slots__ = ("starts", "sizes", "idents", "notes")

    def __init__(self, cols: list[list]) -> None:
        self.starts, self.sizes, self.idents, self.notes = cols

    def __len__(self) -> int:
        return len(self.starts)

    def __getitem__(self, k: Any) -> Any:
        if isinstance(k, slice):
            return [self[i] for i in range(*k.indices(len(self)))]
        return (self.starts[k], self.sizes[k], self.idents[k], self.notes[k])

    def __iter__(self) -> Iterator[tuple]:
        return zip(self.starts, self.sizes, self.idents, self.notes, strict=True)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]


def unpack_items(packed: list) -> tuple[Sequence, list]:
    """The data items ``(address, size, C identifier, text or None)`` :func:`pack_rows`
    packed (:class:`ItemRows`, or tuples) and their C identifiers (a list)."""
    cols = unpack_columns(packed)
    if cols is None or len(cols) != 4:
        items = unpack_rows(packed)
        return items, [it[2] for it in items]
    return ItemRows(cols), cols[2]


def unpack_rows(packed: list) -> list:
    """The rows :func:`pack_rows` packed (tuples)."""
    cols = unpack_columns(packed)
    return list(packed[1]) if cols is None else list(zip(*cols, strict=True))


def file_key(conn: sqlite3.Connection, path: str, version_id: int) -> tuple | None:
    """What the file of ``version_id`` of the KB at ``path`` is kept under (None: no file)."""
    from kbtool.kb.queries.code_labels import store_identity

    try:
        st = os.stat(path)
    except OSError:
        return None
    sha, ingested, built = store_identity(conn, version_id)
    if not sha:
        return None
    return (FORMAT, os.path.realpath(path), st.st_dev, st.st_ino, version_id, sha, ingested, built)


def _file(key: tuple) -> Path | None:
    directory = store_dir()
    if directory is None:
        return None
    prefix = hashlib.sha256(repr(key[1:4]).encode()).hexdigest()[:12]
    digest = hashlib.sha256(repr(key).encode()).hexdigest()[:32]
    return directory / f"{prefix}-{digest}.code"


def exists(key: tuple | None) -> bool:
    """A file is kept under ``key`` (not read: it may still be a miss)."""
    path = _file(key) if key is not None else None
    return path is not None and path.is_file()


def load(key: tuple) -> Kept | None:
    """The kept preparation under ``key``, or None (none, unreadable, foreign, damaged)."""
    path = _file(key)
    if path is None:
        return None
    value = disk_cap.read_framed(path, MAGIC)
    if value is disk_cap.MISSING:
        return None
    disk_cap.touch(path)  # used: the cache's bounds drop the least recently used first
    if not isinstance(value, dict) or value.get("key") != list(key):
        return None
    try:
        kept = _decode(value)
    except (KeyError, TypeError, ValueError, IndexError):
        return None
    shapes = (
        tuple,
        list,
        dict,
        (list, ItemRows),
        (list, bytes),
        str,
        (dict, type(None)),
        list,
        list,
        (list, ItemRows),
        set,
        str,
        str,
        (bool, type(None)),
        (dict, type(None)),
    )
    if not all(isinstance(getattr(kept, f), t) for f, t in zip(FIELDS, shapes, strict=True)):
        return None
    if len(kept.digest) != 2 * _DIGEST or not all(c in "0123456789abcdef" for c in kept.digest):
        return None
    return kept


def save(key: tuple, kept: Kept, create: bool = True) -> bool:
    """Keep ``kept`` under ``key`` (atomically); False when it could not be written (or,
    unless ``create``, the directory is not there)."""
    path = _file(key)
    if path is None or (not create and not path.parent.is_dir()):
        return False
    try:
        value = _encode(kept)
        value["key"] = list(key)
    except (ValueError, TypeError):
        return False
    try:
        if not disk_cap.write_framed(path, MAGIC, value, ".code-"):
            return False  # a value marshal cannot keep: nothing is kept
        _prune(path.parent, path.name.split("-", 1)[0])
    except OSError:
        return False  # a full or read-only disk only costs the next process a preparation
    return True


def _prune(directory: Path, prefix: str) -> None:
    """At most :data:`DISK_FILES` files of one KB, :data:`TOTAL_BYTES` in all
    (:func:`kbtool.services.disk_cap.prune`)."""
    disk_cap.prune(
        directory,
        kb_pattern=f"{prefix}-*.code",
        all_pattern="*.code",
        tmp_pattern=".code-*.tmp",
        per_kb=DISK_FILES,
        total_bytes=TOTAL_BYTES,
    )


#: how a kept preparation is used under today's change token (see :func:`judge`)
USE, RENAMED, REBUILD = "use", "renamed", "rebuild"


def judge(conn: sqlite3.Connection, kept: Kept, token: tuple) -> str:
    """:data:`USE` the kept preparation as is, read the version's function names again
    (:data:`RENAMED`), or build it again from the KB (:data:`REBUILD`), given the change
    token now: versions ingested since change nothing of this version; an analysis run does
    (its data model, its structs); annotation decisions do when they wrote a function of
    this version (its names) or any other knowledge (comments, types, data and local names).
    The decision the kept token ends with must still be the KB's (else it is another KB's
    history under the same file: built again)."""
    from kbtool.kb.queries.code_labels import annotation_subjects_since, event_stamp

    was = tuple(kept.token)
    if len(was) != 3 or was[2] != token[2] or was[1] > token[1]:
        return REBUILD
    if event_stamp(conn, was[1]) != kept.stamp:  # another history (a copy put back, ...)
        return REBUILD
    if was == tuple(token):
        return USE
    if was[1] == token[1]:
        return USE
    subjects = annotation_subjects_since(conn, was[1])
    if any(s.startswith("k:") for s in subjects):
        return REBUILD
    if not subjects:
        return USE
    mine = set(kept.ids[1])
    return RENAMED if any(s in mine for s in subjects) else USE


# ---------------------------------------------------------------- in the background


def warm_enabled() -> bool:
    """Versions are prepared in the background unless ``KBTOOL_CODE_WARM`` or the store
    (``KBTOOL_CODE_CACHE_DIR``) says off."""
    return not switched_off("KBTOOL_CODE_WARM") and store_dir() is not None


def start_background(
    conn: sqlite3.Connection, version_id: int, min_bytes: int = WARM_MIN_BYTES
) -> int | None:
    """Prepare and keep ``version_id`` in a detached low-priority process (the caller never
    waits); its pid, or None (the store or the warming is off, the KB is not a file, or the
    module is under ``min_bytes``: prepared at once by whoever asks)."""
    if not warm_enabled():
        return None
    from kbtool.kb.queries.code_labels import module_size
    from kbtool.kb.queries.versions import database_file

    path = database_file(conn)
    if not path or module_size(conn, version_id) < min_bytes:
        return None
    return spawn(
        "kbtool.services.code_store", ["--db", path, "--quiet", "--version", str(version_id)]
    )


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(
        prog="python -m kbtool.services.code_store",
        description="Prepare a KB's versions for the code views and keep them on disk.",
    )
    ap.add_argument("--db", required=True, help="the KB file")
    ap.add_argument("--version", type=int, action="append", help="this version (default: all)")
    ap.add_argument("--quiet", action="store_true", help="no progress lines")
    args = ap.parse_args(argv)
    if store_dir() is None:
        print("error: the code store is off (KBTOOL_CODE_CACHE_DIR)", file=sys.stderr)
        return 1
    from kbtool.kb import queries
    from kbtool.kb.db import open_ro
    from kbtool.kb.errors import KBError
    from kbtool.services import code_kept_c, code_prepared

    if args.quiet:
        try:
            os.nice(10)  # a background helper: the person's own work goes first
        except OSError:
            pass
    try:
        conn = open_ro(args.db)
        try:
            versions = args.version or [v["id"] for v in queries.list_versions(conn)]
            for v in versions:
                t = time.perf_counter()
                how = code_prepared.keep_prepared(conn, v)
                lifted = code_kept_c.keep_version(conn, v)  # its huge functions' C
                if not args.quiet:
                    ms = (time.perf_counter() - t) * 1000
                    print(
                        f"version {v}: {how} ({ms:.0f} ms; the C of {lifted} huge functions kept)"
                    )
        finally:
            conn.close()
    except (KBError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # noqa: BLE001 - one line, never a traceback
        print(f"error: preparing code failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
