"""A function's first screen of disassembly before its version is prepared (issue 30 point 1).

A fresh process (``kbtool serve`` opened on a function) answered its first code request only
after the whole version was prepared (:func:`kbtool.services.code_prepared.code_module`):
~130 ms of CPU on ffmpeg even with the preparation kept on disk (its every name, label and
data segment rebuilt, the 32 MB module read), and on a busy machine several times that in
wall time. A first screen needs far less: the function's own body, the names its lines show
and the data labels and strings of the constants it uses.

:func:`first_window` makes that screen from the version's kept preparation
(:mod:`kbtool.services.code_store`), when the KB has not changed since it was kept
(:func:`kbtool.services.code_store.judge` says "use"): the module's sections without the
data segments' payloads (:func:`light_module`), the function's body read alone through
SQLite's incremental blob I/O into a module-sized anonymous map (only the pages it writes
are touched), the data segments read (one range) only when a line asks for a string. The
names are made exactly as the preparation makes them (same reads, same order), and the
lines by the same record maker and renderer (:func:`kbtool.services.code_function._first_lines`),
so the window is the prepared version's, line for line. Anything else (no kept preparation,
a changed KB, a window past the first screen) is None: the caller prepares the version as
before.
"""

from __future__ import annotations

import gc
import mmap
import sqlite3
import threading
from typing import Any

from kbtool.kb.queries.code_labels import code_key, event_stamp
from kbtool.lift import LiftModule, Names
from kbtool.services import code_kept_c, code_prepared, code_store, disk_cap, knowledge
from kbtool.services.code_function import FIRST_SCREEN, _first_lines, kept_whole, window_answer
from kbtool.services.code_module_kept import _unints, module_of, parser_stamp
from kbtool.services.code_prepared import CLEAR_TOO, CodeModule, _Rows, is_cached
from kbtool.wasm import model
from kbtool.wasm.datamap import build_data_map

LIGHT_CACHE = 2  # versions' light modules kept (a page opens one version, then the next)
C_KEPT = 2  # functions whose kept C's lines a light module holds (a page shows one at a time)
_LOCK = threading.Lock()
_LIGHT: dict[tuple, _Light] = {}
_MAKING: dict[tuple, threading.Lock] = {}  # key -> held while one thread makes it


class _Light:
    """A version's light module (a :class:`CodeModule` over a ``bytearray`` holding only the
    bodies read so far) and the blob reads that fill it; the lines of the kept C read so
    far (:meth:`c_lines`)."""

    def __init__(self, cm: CodeModule) -> None:
        self.cm = cm
        self.filled: set[int] = set()
        self.lock = threading.Lock()
        self.c: dict[int, list[str] | None] = {}  # function index -> its kept C's lines
        self.c_lock = threading.Lock()
        self.whole: dict[int, dict[str, Any]] = {}  # function index -> its kept whole answer
        self.w: dict[int, list[str] | None] = {}  # function index -> its kept listing's lines

    def c_lines(self, func_index: int) -> list[str] | None:
        """The lines of the function's C kept on disk and valid for this KB
        (:func:`kbtool.services.code_kept_c.kept`: the very C the prepared version's views
        give), or None (not a huge function, none kept, or kept for another KB state); the
        last :data:`C_KEPT` functions' lines are held for the next windows."""
        with self.c_lock:
            if func_index in self.c:
                return self.c[func_index]
            got = code_kept_c.kept(self.cm, func_index)
            lines = None if got is None else got[0].splitlines()
            self.c[func_index] = lines
            while len(self.c) > C_KEPT:
                del self.c[next(iter(self.c))]
            return lines

    def w_lines(self, func_index: int) -> list[str] | None:
        """The lines of the function's whole disassembly kept on disk and valid for this KB
        (:func:`kbtool.services.code_kept_c.kept_listing`), or None; held as :meth:`c_lines`
        holds the C's."""
        with self.c_lock:
            if func_index in self.w:
                return self.w[func_index]
            got = code_kept_c.kept_listing(self.cm, func_index)
            lines = None if got is None else got[0].splitlines()
            self.w[func_index] = lines
            while len(self.w) > C_KEPT:
                del self.w[next(iter(self.w))]
            return lines

    def fill(self, conn: sqlite3.Connection, func_index: int) -> bool:
        """The body of ``func_index`` in place (False: it cannot be read)."""
        with self.lock:
            if func_index in self.filled:
                return True
            m = self.cm.lm.module
            start, end = m.code[func_index - m.num_func_imports]
            got = _blob_range(conn, self.cm.version_id, start, end)
            if got is None:
                return False
            self.cm.lm.data[start:end] = got
            self.filled.add(func_index)
            return True


class _DataMapLater:
    """The data map (:func:`kbtool.wasm.datamap.build_data_map`, what ``string_at`` reads),
    built from the data segments' bytes when a line first asks for a string; one that cannot
    be built answers no string (as a preparation whose data map failed)."""

    def __init__(self, db_path: str, version_id: int, m: model.Module, segs: list, kept: Any):
        self._args = (db_path, version_id, m, segs, kept)
        self._lock = threading.Lock()
        self._map: Any = None

    def _built(self) -> Any:
        with self._lock:
            if self._map is None:
                paused = gc.isenabled()  # ~7k segments, no cycles (see light_module)
                if paused:
                    gc.disable()
                try:
                    self._map = _build_map(*self._args) or _NO_MAP
                finally:
                    if paused:
                        gc.enable()
            return self._map

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._built(), name)


class _NoMap:
    lo = hi = 0

    def entry(self, addr: int) -> None:
        return None


_NO_MAP = _NoMap()


def _build_map(db_path: str, version_id: int, m: model.Module, segs: list, kept: Any) -> Any:
    from kbtool.kb.db import open_ro

    mem, offs, none_at, fos, lens, passive = segs
    mem, offs, fos, lens, passive = map(_unints, (mem, offs, fos, lens, passive))
    try:
        conn = open_ro(db_path)
        try:
            lo = min(fos, default=0)
            hi = max((f + n for f, n in zip(fos, lens, strict=True)), default=0)
            chunk = _blob_range(conn, version_id, lo, hi) if hi > lo else b""
        finally:
            conn.close()
        if chunk is None:
            return None
        for k in none_at:
            offs[k] = None
        m.data_segments = [
            model.DataSegment(mi, o, chunk[fo - lo : fo - lo + n], bool(p), fo)
            for mi, o, fo, n, p in zip(mem, offs, fos, lens, passive, strict=True)
        ]
        tc = kept.toolchain
        return build_data_map(b"", m, tc.startswith(("rustc", "go")), kept.passive)
    except Exception:  # noqa: BLE001 - annotations are optional (as prepare's data map)
        return None


def _blob_range(conn: sqlite3.Connection, version_id: int, start: int, end: int) -> bytes | None:
    try:
        with conn.blobopen("modules", "data", version_id, readonly=True) as blob:
            if end > len(blob):
                return None
            blob.seek(start)
            got = blob.read(end - start)
    except sqlite3.Error:
        return None
    return got if len(got) == end - start else None


def _module_size(conn: sqlite3.Connection, version_id: int) -> int | None:
    try:
        with conn.blobopen("modules", "data", version_id, readonly=True) as blob:
            return len(blob)
    except sqlite3.Error:
        return None


def _thaw_light(value: Any, conn: sqlite3.Connection, version_id: int, size: int) -> Any:
    """The module :func:`kbtool.services.code_module_kept.freeze` kept, without its data
    segments (``(module, segment columns)``) and with only its ``name`` custom section's
    bytes (what the module's own names are read from); None when not kept by this parser."""
    if not isinstance(value, dict) or value.get("stamp") != parser_stamp():
        return None
    if value["plain"][6] != size:
        return None
    customs = []
    for name, at, n in value["customs"]:
        payload = b""
        if name == "name":
            payload = _blob_range(conn, version_id, at, at + n)
            if payload is None:
                return None
        customs.append(model.CustomSection(name, at, payload))
    return module_of(value, size, [], customs), value["segs"]


def _read_kept(skey: tuple) -> code_store.Kept | None:
    """The kept preparation's parts a first screen needs (the identities, the global names,
    the C names of functions, globals and data items, the module's part), checked as
    :func:`kbtool.services.code_store.load` checks them; None when there is none."""
    path = code_store._file(skey)
    if path is None:
        return None
    value = disk_cap.read_framed(path, code_store.MAGIC)
    if not isinstance(value, dict) or value.get("key") != list(skey):
        return None
    try:
        ids = code_store.unpack_columns(value["ids"])
        if ids is None:
            ids = code_store.id_columns(value["ids"][1])
        data_items, _idents = code_store.unpack_items(value["data_items"])
        kept = code_store.Kept(
            tuple(value["token"]), ids, value["global_names"], [], b"", value["toolchain"],
            value["passive"], value["func_c"], value["global_c"], data_items, set(),
            value["digest"], value["stamp"], value["hooked"], value["module"],
        )  # fmt: skip
    except (KeyError, TypeError, ValueError, IndexError):
        return None
    shapes = (
        (kept.ids, list),
        (kept.global_names, dict),
        (kept.toolchain, str),
        (kept.passive, dict),  # None: searched in the whole code: not here
        (kept.func_c, list),
        (kept.global_c, list),
        (kept.data_items, (list, code_store.ItemRows)),
        (kept.stamp, str),
    )
    if not all(isinstance(v, t) for v, t in shapes) or len(kept.ids) != 7:
        return None
    return kept


def light_module(conn: sqlite3.Connection, version_id: int) -> _Light | None:
    """The version's light module (kept for the next first screens until the version is
    prepared), or None when the kept preparation cannot be used as is. Made with the cyclic
    collector paused (as :func:`kbtool.services.code_prepared._load_kept` reads the kept
    preparation): its ~10^5 new strings and tuples hold no cycles, and the young collections
    they would set off walked them again for nothing."""
    path, token = code_key(conn)
    if not path or code_store.store_dir() is None:
        return None
    key = (path, version_id, token)
    with _LOCK:
        hit = _LIGHT.get(key)
        making = _MAKING.setdefault(key, threading.Lock()) if hit is None else None
    if making is None:
        return hit
    try:
        with making:  # a second thread asking meanwhile (start-up, a request) waits for it
            with _LOCK:
                hit = _LIGHT.get(key)
            if hit is not None:
                return hit
            paused = gc.isenabled()
            if paused:
                gc.disable()
            try:
                light = _light_module(conn, key)
            finally:
                if paused:
                    gc.enable()
            if light is not None:
                with _LOCK:
                    _LIGHT[key] = light
                    while len(_LIGHT) > LIGHT_CACHE:
                        del _LIGHT[next(iter(_LIGHT))]
            return light
    finally:
        with _LOCK:
            if _MAKING.get(key) is making:
                del _MAKING[key]


def _light_module(conn: sqlite3.Connection, key: tuple) -> _Light | None:
    path, version_id, token = key
    skey = code_store.file_key(conn, path, version_id)
    if skey is None or not code_store.exists(skey):
        return None
    kept = _read_kept(skey)
    if kept is None or code_store.judge(conn, kept, token) != code_store.USE:
        return None
    size = _module_size(conn, version_id)
    if not size:
        return None
    try:
        thawed = _thaw_light(kept.module, conn, version_id, size)
    except (KeyError, TypeError, ValueError, IndexError):
        return None
    if thawed is None:
        return None
    m, segs = thawed
    if len(kept.func_c) != m.num_functions or len(kept.global_c) != len(m.globals):
        return None  # the preparation would give the C names again: not these
    ids = kept.ids
    # the names as code_prepared._prepare makes them (same reads, same order)
    parsed_names = Names.from_module(m)
    kb_names = {i: n for i, n in zip(ids[0], ids[5], strict=True) if n}
    known = knowledge.code_knowledge(conn, version_id)
    functions = dict(parsed_names.functions)
    functions.update(kb_names)
    names = Names(
        functions=functions,
        globals={
            **kept.global_names,
            **parsed_names.globals,
            **knowledge.global_names(conn, version_id),
        },
        locals=knowledge.merged_locals(parsed_names.locals, known),
        data=[],
        comments={i: k["comment"] for i, k in known.items() if k["comment"]},
        prototypes={i: k["prototype"]["text"] for i, k in known.items() if k["prototype"]},
        line_comments={i: k["lines"] for i, k in known.items() if k["lines"]},
    )
    items = kept.data_items
    lm = LiftModule(
        # zero pages until the bodies asked for are written in (a bytearray would be filled)
        data=mmap.mmap(-1, size),  # type: ignore[arg-type]
        module=m,
        names=names,
        func_c=kept.func_c,
        global_c=kept.global_c,
        dmap=_DataMapLater(path, version_id, m, segs, kept),
        type_texts=[t.text() for t in m.types],
        data_starts=getattr(items, "starts", None) or [d[0] for d in items],
        data_items=items,
        toolchain=kept.toolchain,
        passive=kept.passive,
    )
    cm = CodeModule(version_id, lm, None, _Rows(ids))  # type: ignore[arg-type]
    # what the prepared version's kept C is judged by (code_prepared._prepare sets the same)
    cm.c_key = (skey, token, event_stamp(conn, token[1]))
    return _Light(cm)


def first_window(
    conn: sqlite3.Connection,
    version_id: int,
    func_index: int,
    offset: int = 0,
    limit: int = 200,
) -> tuple[dict[str, Any], str | None] | None:
    """A window of the disassembly (:func:`code_window`'s answer) and the function's stable
    id, made before the version is prepared: within its first screen from the light module,
    past it from the function's whole disassembly kept on disk (a huge function's); None
    when the version is prepared already (the usual path is as cheap), the window is past
    the first screen of a function without a kept disassembly, or the kept preparation
    cannot be used (the caller prepares the version)."""
    offset, limit = max(0, offset), max(1, min(limit, 20_000))
    if is_cached(conn, version_id):
        _forget(version_id, conn)  # prepared: its light module is not asked for again
        return None
    light = light_module(conn, version_id)
    if light is None:
        return None
    cm = light.cm
    row = cm.check(func_index)  # unknown index, an import: the usual errors
    if offset + limit > FIRST_SCREEN:  # past it: a huge function's kept disassembly only
        lines = light.w_lines(func_index)
        if lines is None:
            return None
        window = lines[offset : offset + limit]
        return window_answer("wasm", window, offset, limit, len(lines), version_id, func_index), (
            row.stable_id
        )
    if not light.fill(conn, func_index):
        return None
    total, window = _first_lines(conn, cm, version_id, func_index, offset, limit)
    out = window_answer("wasm", window, offset, limit, total, version_id, func_index)
    return out, row.stable_id


def first_c_window(
    conn: sqlite3.Connection,
    version_id: int,
    func_index: int,
    offset: int = 0,
    limit: int = 200,
) -> tuple[dict[str, Any], str | None] | None:
    """A window of the function's lifted C (:func:`code_window`'s answer with ``kind="c"``)
    and its stable id, made before the version is prepared from the C kept on disk for a
    huge function (:mod:`kbtool.services.code_kept_c`: the same text, judged by the same
    key as the prepared version judges it); None when the version is prepared already, the
    kept preparation cannot be used, or no valid C is kept for the function (the caller
    prepares the version and lifts it, as before). Any window: the C is whole."""
    offset, limit = max(0, offset), max(1, min(limit, 20_000))
    if is_cached(conn, version_id):
        _forget(version_id, conn)
        return None
    light = light_module(conn, version_id)
    if light is None:
        return None
    row = light.cm.check(func_index)  # unknown index, an import: the usual errors
    lines = light.c_lines(func_index)
    if lines is None:
        return None
    total, window = len(lines), lines[offset : offset + limit]
    out = window_answer("c", window, offset, limit, total, version_id, func_index)
    return out, row.stable_id


def whole_function(
    conn: sqlite3.Connection, version_id: int, func_index: int
) -> dict[str, Any] | None:
    """A huge function's whole Disassembly object (:func:`kbtool.services.code.disassembly`)
    before the version is prepared, from its disassembly and C kept on disk
    (:func:`kbtool.services.code_function.kept_whole`: the same object the prepared version
    gives; the last :data:`C_KEPT` functions' answers held by the light module, which a
    change of the KB replaces); None when the version is prepared already (its own path reads
    them as cheaply), the kept preparation cannot be used, or they are not kept (the caller
    prepares)."""
    if is_cached(conn, version_id):
        return None
    light = light_module(conn, version_id)
    if light is None:
        return None
    light.cm.check(func_index)  # unknown index, an import: the usual errors
    with light.c_lock:
        hit = light.whole.get(func_index)
    if hit is None:
        hit = kept_whole(conn, light.cm, func_index)
        if hit is None:
            return None
        with light.c_lock:  # held for the next requests (the last C_KEPT functions')
            light.whole[func_index] = hit
            while len(light.whole) > C_KEPT:
                del light.whole[next(iter(light.whole))]
    return dict(hit)


def warm(db_path: str, count: int = 2) -> int:
    """The light modules of the KB's ``count`` newest versions, their data maps built too
    (``kbtool serve`` as it starts, on a thread of its own: ~80 ms of CPU a version on
    ffmpeg, so that a page opened on any function of them shows its first lines at once;
    before each version it waits while requests are answered, as the background
    preparations do);
    how many were made. A KB that cannot be read, or versions without a kept preparation,
    make none (their requests prepare as before)."""
    from kbtool.kb import queries
    from kbtool.kb.db import open_ro

    try:
        conn = open_ro(db_path)
    except Exception:  # noqa: BLE001 - the server's own requests say why
        return 0
    made = 0
    try:
        ids = [v["id"] for v in queries.list_versions(conn)][::-1][: max(0, count)]
        code_prepared._BACKGROUND.on = True  # this thread yields to the requests answered
        for vid in ids:
            code_prepared._yield_to_requests()  # a request's own light module goes first
            if is_cached(conn, vid):
                continue
            light = light_module(conn, vid)
            if light is not None:
                light.cm.lm.dmap.lo  # noqa: B018 - built now, not by the first string shown
                made += 1
    except Exception:  # noqa: BLE001 - likewise
        pass
    finally:
        conn.close()
    return made


def has_light(conn: sqlite3.Connection, version_id: int) -> bool:
    """Whether the version's light module is made (its first screens answer at once)."""
    path, token = code_key(conn)
    with _LOCK:
        return (path, version_id, token) in _LIGHT


def _forget(version_id: int, conn: sqlite3.Connection | None = None) -> None:
    """Drop the version's light modules (it is prepared); with ``conn``, the kept C's (and
    kept disassembly's) lines they hold go to the prepared version's lines (what its windows
    page through) when it judges its kept C by the same key: the lines it would read from
    the same file."""
    with _LOCK:
        gone = [_LIGHT.pop(k) for k in [k for k in _LIGHT if k[1] == version_id]]
    held = [
        (light.cm.c_key, i, kind, lines)
        for light in gone
        for kind, got in (("c", light.c), ("wasm", light.w))
        for i, lines in got.items()
        if lines
    ]
    if not held or conn is None:
        return
    cm = code_prepared.code_module(conn, version_id)  # prepared: no work
    with code_prepared._LOCK:
        for c_key, i, kind, lines in held:
            key = (id(cm), i, kind)
            if c_key == cm.c_key and code_prepared._LINES.get(key) is None:
                code_prepared._LINES.put(key, (cm, lines))


def clear_cache() -> None:
    """Forget the light modules (tests)."""
    with _LOCK:
        _LIGHT.clear()


CLEAR_TOO.append(clear_cache)  # code.clear_cache() forgets the light modules too

__all__ = [
    "clear_cache",
    "first_c_window",
    "first_window",
    "has_light",
    "light_module",
    "warm",
    "whole_function",
]
