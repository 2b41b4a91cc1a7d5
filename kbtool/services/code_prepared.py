"""Versions prepared for code views: the parsed module, the KB's names over it, in LRUs.

A prepared module (:func:`kbtool.lift.prepare`) is kept per (KB file, version id, change
token), so on-demand calls after the first cost one small query plus the function's own
work; a rename changes the token and the next call sees the new name. The parsed module
(and its analysis, call-graph structure) is kept by content digest, whatever the names.
"""

from __future__ import annotations

import atexit
import gc
import hashlib
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any, NamedTuple

from kbtool.kb import datamodel, queries
from kbtool.kb.db import open_ro
from kbtool.kb.errors import (
    ImportedFunctionError,
    KBError,
    ModuleBytesMissingError,
    UnknownFunctionError,
)
from kbtool.kb.queries.code_labels import (
    code_key,
    event_stamp,
    has_data_model,
    identity_rows,
    label_rows,
    module_bytes_unlocked,
    require_version,
    shown_label_rows,
)
from kbtool.lift import LiftModule, Names, prepare
from kbtool.lift.context import Given
from kbtool.services import callgraph_store, code_store, heap, knowledge
from kbtool.services import types as types_svc
from kbtool.services.code_module_kept import thaw
from kbtool.services.code_structs import StructFields
from kbtool.services.code_structs_lazy import LazyStructFields
from kbtool.textutil import printable
from kbtool.wasm import WasmFormatError, analyze_module
from kbtool.wasm.reader import Module, parse_module

PREPARED_CACHE = 6  # prepared versions kept per process
PARSED_CACHE = 3  # parsed modules (and their analyses), by content digest
RESULT_CACHE = 128  # disassembly results kept per process
LINES_CACHE = 4  # functions whose lines (disassembly or C) are kept for paging, per process
MAX_DATA_LABELS = 1_000_000  # data items labelled in the C (the data model bounds them too)
#: when threads waited for one preparation, each lets those that asked after it go first by
#: this long per such thread (at most WAITER_STAGGER_MAX of them): the studio asks for a huge
#: function's C and call graph, then (150 ms on) for its first disassembly window, the screen
#: shown meanwhile; that cheap request then answers before the lift and the graph's load take
#: the GIL for ~120 ms (issue 30: the first screen)
WAITER_STAGGER = 0.006
WAITER_STAGGER_MAX = 4
_DIGEST_ASIDE = 1 << 20  # a module this big is digested beside the KB reads (see _ModuleRead)


class CodeUnavailableError(KBError):
    """The stored module bytes of a version cannot be decoded."""


# ---------------------------------------------------------------- caches


@dataclass
class _Parsed:
    data: bytes
    module: Module
    names: Names
    digest: str = ""  # blake2b-128 of the bytes, hex (a stored call graph is keyed by it)
    analysis: Any = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    graph: dict | None = None
    in_table: set[int] | None = None  # functions placed in a table (element segments)
    code_starts: list[int] | None = None  # file offset of each defined body, for bisect
    body_refs: dict[int, set[int]] = field(default_factory=dict)  # index -> ref.func targets
    ref_sites: dict[int, list[int]] | None = None  # index -> offsets of `0xd2 <leb index>`

    def get_analysis(self) -> Any:
        with self.lock:
            if self.analysis is None:
                self.analysis = analyze_module(self.data)
                heap.settle()
            return self.analysis

    def get_graph(self, stored: Callable[[], dict | None] | None = None) -> dict:
        """The call graph's structure (edges, candidates); names are added per KB state.
        ``stored`` reads the one ``kbtool analyze`` stored (None: not stored, or stale):
        asked first, so a stored graph never decodes the module."""
        if self.graph is None and stored is not None:
            found = stored()
            if found is not None:
                with self.lock:
                    if self.graph is None:
                        self.graph = found
                        heap.settle()
                    return self.graph
        if self.graph is not None:
            return self.graph
        analysis = self.get_analysis()
        with self.lock:
            if self.graph is None:
                self.graph = callgraph_store.structure(analysis, self.data)
                heap.settle()
            return self.graph


class FunctionIdentity(NamedTuple):
    """A function's KB identity and current name, as the code views need them."""

    stable_id: str | None
    imported: bool
    import_module: str | None
    import_field: str | None
    name: str | None
    provenance: str | None


_NO_IDENTITY = FunctionIdentity(None, False, None, None, None, None)


class _Rows(Mapping):
    """Function index -> :class:`FunctionIdentity`, each made when asked for from the
    identity rows' columns (:func:`kbtool.services.code_store.id_columns`): a code view asks
    for a few, and 22k named tuples up front were ~15 ms of a cold preparation."""

    def __init__(self, cols: list[list]) -> None:
        self.cols = cols
        index = cols[0]
        self.pos: dict[int, int] | None = None
        if index != list(range(len(index))):  # not every index from 0 on: look up
            self.pos = {i: k for k, i in enumerate(index)}

    def __getitem__(self, index: int) -> FunctionIdentity:
        if self.pos is not None:
            k = self.pos[index]
        elif isinstance(index, int) and 0 <= index < len(self.cols[0]):
            k = index
        else:
            raise KeyError(index)
        c = self.cols
        return tuple.__new__(
            FunctionIdentity, (c[1][k], bool(c[2][k]), c[3][k], c[4][k], c[5][k], c[6][k])
        )

    def __iter__(self) -> Iterator[int]:
        return iter(self.cols[0])

    def __len__(self) -> int:
        return len(self.cols[0])


@dataclass
class CodeModule:
    """One version prepared for code views, with the KB's identities and names."""

    version_id: int
    lm: LiftModule
    parsed: _Parsed
    rows: Mapping[int, FunctionIdentity]  # function index -> its KB identity
    graph: dict | None = None
    #: how the kept preparation on disk was used (:mod:`kbtool.services.code_store`):
    #: "use", "renamed" (names read again), "rebuild", "built" (none kept) or "" (store off)
    store: str = ""
    #: what its huge functions' kept C is judged by: (kept file key, change token, the
    #: token's decision stamp); None: not kept (:mod:`kbtool.services.code_kept_c`)
    c_key: tuple | None = None
    #: the structs' layouts the lifted C's field hook reads (laid out on first use when lazy)
    fields: StructFields | None = None

    @property
    def num_functions(self) -> int:
        return self.lm.module.num_functions

    def check(self, func_index: int) -> FunctionIdentity:
        """The KB row of a defined function; KB errors for out of range and imports."""
        n = self.num_functions
        if func_index < 0 or func_index >= n:
            raise UnknownFunctionError(
                f"version {self.version_id} has no function {func_index}"
                f" (its indices run 0..{n - 1})"
            )
        row = self.rows.get(func_index)
        m = self.lm.module
        if func_index < m.num_func_imports or (row is not None and row.imported):
            imp = m.func_imports[func_index] if func_index < m.num_func_imports else None
            what = f"{imp.module}.{imp.field}" if imp else f"{row.import_module}.{row.import_field}"
            raise ImportedFunctionError(
                f"function {func_index} of version {self.version_id} is an import ({_one_line(what)}):"
                " it has no code"
            )
        return row or _NO_IDENTITY


class _LRU(OrderedDict):
    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size

    def get_item(self, key: Any) -> Any:
        value = self.get(key)
        if value is not None:
            self.move_to_end(key)
        return value

    def put(self, key: Any, value: Any) -> None:
        self[key] = value
        self.move_to_end(key)
        while len(self) > self.size:
            self.popitem(last=False)


_LOCK = threading.Lock()
_PREPARED = _LRU(PREPARED_CACHE)
_PARSED = _LRU(PARSED_CACHE)
_RESULTS = _LRU(RESULT_CACHE)
# (id(CodeModule), func_index, kind) -> (CodeModule, lines): the whole text of a big function
# once computed, so every later window is a slice (the code module's key carries the KB's
# change token, so a rename or a knowledge edit makes a new module and these go stale)
_LINES = _LRU(LINES_CACHE)
_SOON = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kbtool-prepare")
_BUILDING: dict[tuple, threading.Lock] = {}  # key -> held while one thread prepares it
_ASKED = [0]  # requests being answered and preparations a request's thread makes (`answering`)
_QUIET_SINCE = [0.0]  # when `_ASKED` last fell to 0 (or the start-up preparations were asked for)
#: the versions after the newest that `prepare_latest_soon` prepares start once no request has
#: been answered for this long (at most QUIET_MAX later): a page opened right after start
#: prepares what it asks for itself, with nothing beside it
QUIET = 1.0
QUIET_MAX = 30.0
_BACKGROUND = threading.local()  # `.on` on `_SOON`'s thread: its preparations yield to those
_REQUEST = threading.local()  # `.on` while a front-end answers a request on this thread
#: the longest a background preparation waits, at each of its steps, for a request's own
YIELD_MAX = 2.0


#: what else keeps parts of versions for code views (kbtool.services.code_first's light
#: modules), forgotten with the prepared ones
CLEAR_TOO: list[Callable[[], None]] = []


def clear_cache() -> None:
    """Forget every prepared module (tests; memory)."""
    with _LOCK:
        _PREPARED.clear()
        _PARSED.clear()
        _RESULTS.clear()
        _LINES.clear()
    for clear in CLEAR_TOO:
        clear()


def _key(conn: sqlite3.Connection, version_id: int) -> tuple:
    """(KB file, version id, change token): what a prepared version is kept under."""
    path, token = code_key(conn)
    return (path or f"memory:{id(conn)}", version_id, token)


def _parsed(data: bytes, digest: bytes | None = None, kept: Any = None) -> _Parsed:
    """The parsed module of ``data`` (cached by its blake2b-128 ``digest``, computed here
    unless given); ``kept``: its sections as a kept preparation holds them
    (:mod:`kbtool.services.code_module_kept`), rebuilt rather than parsed when they fit."""
    if digest is None:
        digest = _digest(data)
    with _LOCK:
        hit = _PARSED.get_item(digest)
    if hit is not None:
        return hit
    module = thaw(kept, data) if kept is not None else None
    try:
        if module is None:
            module = parse_module(data)
    except WasmFormatError as exc:
        raise CodeUnavailableError(f"the stored module cannot be decoded: {exc}") from None
    parsed = _Parsed(data, module, Names.from_module(module), digest.hex())
    with _LOCK:
        _PARSED.put(digest, parsed)
    return parsed


def _digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


class _ModuleRead(threading.Thread):
    """The module's bytes and digest, read on a second connection beside the KB reads of
    :func:`_prepare`: SQLite reads the blob and hashlib digests it without the GIL, so on a
    second core most of a huge module's ~60 ms of both are free. :meth:`result` falls back
    to the caller's connection (its usual errors) whenever the second one fails."""

    def __init__(self, db_path: str, version_id: int, want_digest: bool = True) -> None:
        super().__init__(name="kbtool-module-read", daemon=True)
        self.db_path, self.version_id = db_path, version_id
        self.data: bytes | None = None
        self.digest: bytes | None = None
        self.want_digest = want_digest  # False: known already (kept with the preparation)
        self.start()

    def run(self) -> None:
        try:
            conn = open_ro(self.db_path)
            try:
                self.data = module_bytes_unlocked(conn, self.version_id)
            finally:
                conn.close()
            if self.data and len(self.data) >= _DIGEST_ASIDE and self.want_digest:
                self.digest = _digest(self.data)
        except Exception:  # noqa: BLE001 - read again on the caller's connection
            self.data = None

    def result(self, conn: sqlite3.Connection) -> tuple[bytes | None, bytes | None]:
        self.join()
        if self.data is None:
            return queries.module_bytes(conn, self.version_id), None
        return self.data, self.digest


class _Build:
    """One preparation under way: held while one thread prepares, and how many threads
    have asked for it (the preparer first)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.arrivals = 0


def code_module(conn: sqlite3.Connection, version_id: int) -> CodeModule:
    """The prepared version (cached per KB file, version id and change token). Threads
    asking for the same one at once prepare it once: the others wait for it (a web page's
    first requests, the TUI's background preparation and its first code screen), and when
    it is ready the last to have asked goes first (see :data:`WAITER_STAGGER`)."""
    key = _key(conn, version_id)
    with _LOCK:
        hit = _PREPARED.get_item(key)
        if hit is None:
            build = _BUILDING.setdefault(key, _Build())
            build.arrivals += 1
            mine = build.arrivals
    if hit is not None:
        return hit
    answering_now = bool(getattr(_REQUEST, "on", False))
    _asking(-answering_now)  # waiting for a preparation (the background's?) does not stop it
    try:
        with build.lock:
            with _LOCK:
                hit = _PREPARED.get_item(key)
            if hit is None:
                asked = not getattr(_BACKGROUND, "on", False)
                try:
                    _asking(asked)
                    with _collector_paused():
                        return _prepare(conn, version_id, key)
                finally:
                    _asking(-asked)
                    with _LOCK:
                        if _BUILDING.get(key) is build:
                            del _BUILDING[key]
    finally:
        _asking(answering_now)
    later = build.arrivals - mine  # threads that asked after this one, waiting too
    if later > 0:
        time.sleep(min(later, WAITER_STAGGER_MAX) * WAITER_STAGGER)
    return hit


_PAUSES: list = [0, None]  # preparations under way; the collector's thresholds before them
_NO_FULL = 1 << 30  # a full collection's threshold no preparation reaches


@contextmanager
def _collector_paused() -> Iterator[None]:
    """No full (generation 2) collection while a version is prepared: it builds ~10^5
    long-lived objects and no cycles to free, so every full collection it would trigger
    walks a growing heap for nothing (~40 ms of ffmpeg's cold preparation). Young
    collections go on (the garbage of other threads, a TUI's, is freed as usual). Nested
    and concurrent preparations share one pause; the thresholds before it are restored."""
    with _LOCK:
        if _PAUSES[0] == 0:
            _PAUSES[1] = gc.get_threshold()
            young = _PAUSES[1][:2]
            gc.set_threshold(*young, _NO_FULL)
        _PAUSES[0] += 1
    try:
        yield
    finally:
        with _LOCK:
            _PAUSES[0] -= 1
            if _PAUSES[0] == 0:
                gc.set_threshold(*_PAUSES[1])


def _asking(n: int) -> None:
    with _LOCK:
        _ASKED[0] += n
        if _ASKED[0] == 0:
            _QUIET_SINCE[0] = time.monotonic()


def _wait_quiet() -> None:
    """Until no request has been answered for :data:`QUIET` s (at most :data:`QUIET_MAX`)."""
    end = time.monotonic() + QUIET_MAX
    while time.monotonic() < end:
        if _ASKED[0] == 0 and time.monotonic() - _QUIET_SINCE[0] >= QUIET:
            return
        time.sleep(0.05)


@contextmanager
def answering() -> Iterator[None]:
    """A front-end answers a request on this thread (the web app wraps each one): background
    preparations wait meanwhile (:func:`_yield_to_requests`), except for the one the request
    itself waits for."""
    _asking(1)
    _REQUEST.on = True
    try:
        yield
    finally:
        _REQUEST.on = False
        _asking(-1)


def _yield_to_requests() -> None:
    """On `_SOON`'s thread: wait while a request is answered (:func:`answering`) or prepares
    a version on its own thread (another one: the same one waits for this), at most
    :data:`YIELD_MAX` at each step: both would share the GIL, and the request is what a
    person waits for (a page opened while ``kbtool serve`` prepares versions at start)."""
    if not getattr(_BACKGROUND, "on", False):
        return
    end = time.monotonic() + YIELD_MAX
    while _ASKED[0] > 0 and time.monotonic() < end:
        time.sleep(0.005)


def _prepare(conn: sqlite3.Connection, version_id: int, key: tuple) -> CodeModule:
    require_version(conn, version_id)  # UnknownVersionError before anything else
    _yield_to_requests()  # here and between the steps below (each ~20-80 ms on ffmpeg)
    db = key[0] if not key[0].startswith("memory:") else ""
    skey = code_store.file_key(conn, db, version_id) if db and code_store.store_dir() else None
    # a kept preparation has the module's digest: not computed again
    reading = _ModuleRead(db, version_id, not code_store.exists(skey)) if db else None
    kept = _load_kept(skey)
    how = code_store.judge(conn, kept, key[2]) if kept is not None else ""
    _yield_to_requests()
    if kept is not None and how != code_store.REBUILD:  # the KB's reads as kept
        if how == code_store.USE:
            ids = kept.ids
        else:
            ids = code_store.id_columns(identity_rows(conn, version_id))
        structs, (global_names, data_labels) = kept.structs, (kept.global_names, kept.labels)
        # laid out when the C first asks (code_structs_lazy); built eagerly if not known
        fields = (  # only the structs' bytes held (not the whole kept preparation)
            LazyStructFields(partial(code_store.decode_structs, structs), kept.hooked)
            if kept.hooked is not None
            else StructFields(code_store.decode_structs(structs))
        )
    else:
        ids = code_store.id_columns(identity_rows(conn, version_id))
        structs = queries.structs(conn, version_id)
        global_names, data_labels = _data_names(conn, version_id)
        fields = StructFields(structs)
    rows = _Rows(ids)
    kb_names = {i: n for i, n in zip(ids[0], ids[5], strict=True) if n}
    known = knowledge.code_knowledge(conn, version_id)
    typed = types_svc.code_types(
        conn, version_id, known, fields
    )  # KB types (issue 27) over `fields`
    if reading is not None:
        data, digest = reading.result(conn)
    else:
        data, digest = queries.module_bytes(conn, version_id), None
    if not data:
        raise ModuleBytesMissingError(
            f"the module bytes of version {version_id} are not in the KB (re-ingest the release"
            " to see its code)"
        )
    if digest is None and kept is not None:
        digest = bytes.fromhex(kept.digest)
    _yield_to_requests()
    parsed = _parsed(data, digest, kept.module if kept is not None else None)
    _yield_to_requests()
    functions = dict(parsed.names.functions)
    functions.update(kb_names)
    names = Names(
        functions=functions,
        globals={
            **global_names,
            **parsed.names.globals,
            **knowledge.global_names(conn, version_id),
        },
        locals=knowledge.merged_locals(parsed.names.locals, known),
        field_hook=typed.hook if typed else None,
        data_hook=typed.data_hook(),
        data=data_labels,
        comments={i: k["comment"] for i, k in known.items() if k["comment"]},
        prototypes={i: k["prototype"]["text"] for i, k in known.items() if k["prototype"]},
        line_comments={i: k["lines"] for i, k in known.items() if k["lines"]},
    )
    lm = prepare((data, parsed.module), names, _given(kept, how, parsed.module))
    fields.lm = typed.lm = lm
    store = how or ("built" if skey else "")
    cm = CodeModule(version_id, lm, parsed, rows, store=store, fields=fields)
    if skey is not None:
        cm.c_key = (skey, key[2], event_stamp(conn, key[2][1]))
    with _LOCK:
        _PREPARED.put(key, cm)
    heap.settle()  # a long-lived front-end: no full collection walks it again (services.heap)
    if skey is not None and how != code_store.USE:  # built (or named) now: kept for the next
        kept = code_store.Kept(
            key[2], ids, global_names, data_labels, structs, lm.toolchain, lm.passive,
            lm.func_c, lm.global_c, lm.data_items, lm.module_idents, parsed.digest,
            event_stamp(conn, key[2][1]), bool(fields), (parsed.module, data),
        )  # fmt: skip
        _keep_later(skey, kept)
    return cm


def _load_kept(skey: tuple | None) -> code_store.Kept | None:
    """The kept preparation (None: no store, or none kept), read with the cyclic collector
    paused and frozen as soon as it is read (``heap.settle(collect=False)``; a no-op in a
    one-shot command): its decode makes ~10^5 tuples and lists (ffmpeg's 65k data items)
    and no cycles, which the young collections during the decode and then during the rest
    of the preparation (parse, struct layouts) walked again: ~15-20 of its ~110 ms of CPU.
    They are kept with the prepared version, which is frozen when it is done anyway."""
    if skey is None:
        return None
    paused = gc.isenabled()
    if paused:
        gc.disable()
    try:
        kept = code_store.load(skey)
        if kept is not None:
            heap.settle(collect=False)
        return kept
    finally:
        if paused:
            gc.enable()


def _given(kept: code_store.Kept | None, how: str, module: Module) -> Given | None:
    """What the kept preparation gives :func:`kbtool.lift.prepare`: the module's own part
    always, the C identifiers when the names are the same (and fit the module)."""
    if kept is None:
        return None
    idents = None
    if how == code_store.USE and (
        len(kept.func_c) == module.num_functions and len(kept.global_c) == len(module.globals)
    ):
        idents = (kept.func_c, kept.global_c, kept.data_items, kept.used)
    return Given(kept.toolchain, kept.passive, idents)


#: a preparation built now is written this long after (its ~100 ms of marshalling then do
#: not take the GIL from the first screen that waited for it)
STORE_DELAY = 1.0
_TO_KEEP: dict[tuple, code_store.Kept] = {}
_AT_EXIT: list = []
_TIMERS: list[threading.Timer] = []  # the pending delayed write (at most one)
#: held by whoever is writing kept preparations: a flush returns only once the timer's
#: write under way is on disk too (it took the item before the flush looked)
_WRITING = threading.Lock()


def _keep_later(skey: tuple, kept: code_store.Kept) -> None:
    with _LOCK:
        first = not _TO_KEEP
        _TO_KEEP[skey] = kept
        if not _AT_EXIT:  # a one-shot command ending sooner keeps it as it exits
            _AT_EXIT.append(atexit.register(flush_store, at_exit=True))
    if first:
        timer = threading.Timer(STORE_DELAY, flush_store)
        timer.daemon = True
        timer.name = "kbtool-code-store"
        with _LOCK:
            _TIMERS.append(timer)
        timer.start()


def store_now() -> int:
    """Write the preparations not kept yet now, with no delayed-write thread left behind;
    how many. A whole-module lift calls it before forking its workers: the pool forks only
    from a single-threaded process, and the pending write's timer thread (alive for
    :data:`STORE_DELAY` after a cold preparation) made the first ``kbtool code --all``
    after an ingest lift every function in one process."""
    with _LOCK:
        timers = _TIMERS[:]
        _TIMERS.clear()
    for timer in timers:
        timer.cancel()
        timer.join()  # (a write already under way ends first)
    return flush_store()


def flush_store(at_exit: bool = False) -> int:
    """Write the preparations built in this process that are not kept yet; how many
    (``at_exit``: only into a store directory that is still there, e.g. not a test run's
    removed already). Returns once every one is on disk, also one the delayed write had
    taken and was still writing."""
    done = 0
    with _WRITING:
        while True:
            with _LOCK:
                if not _TO_KEEP:
                    return done
                skey = next(iter(_TO_KEEP))
                kept = _TO_KEEP.pop(skey)
            done += code_store.save(skey, kept, create=not at_exit)


def keep_prepared(conn: sqlite3.Connection, version_id: int) -> str:
    """Prepare ``version_id`` and keep it on disk now (``python -m
    kbtool.services.code_store``); how the kept one was used (see :attr:`CodeModule.store`)."""
    cm = code_module(conn, version_id)
    flush_store()
    return cm.store


def prepare_soon(db_path: str, version_id: int) -> Future[None]:
    """Prepare ``version_id`` of the KB at ``db_path`` for code views on one background
    thread (a no-op when it is prepared): a front-end asks when a version is opened (its
    function list), since its code is what is read next; a code request meanwhile waits for
    this preparation rather than making a second one (:func:`code_module`)."""
    return _SOON.submit(_prepare_quietly, str(db_path), version_id)


def prepare_latest_soon(db_path: str, count: int = 1) -> Future[None]:
    """:func:`prepare_soon` for the KB's ``count`` newest versions, newest first, found on
    the background thread: what ``kbtool serve`` starts with, since the studio and the
    dashboard open the newest version first (a KB without versions, or one that cannot be
    read, prepares nothing). A request preparing a version meanwhile goes first, and the
    versions after the newest wait for the requests to go quiet (:data:`QUIET`)."""
    with _LOCK:
        _QUIET_SINCE[0] = time.monotonic()
    return _SOON.submit(_prepare_latest_quietly, str(db_path), count)


def _prepare_latest_quietly(db_path: str, count: int = 1) -> None:
    try:
        conn = open_ro(db_path)
        try:
            ids = [v["id"] for v in queries.list_versions(conn)][::-1][: max(0, count)]
        finally:
            conn.close()
    except Exception:  # noqa: BLE001 - the server's own requests say why
        return
    for n, version_id in enumerate(ids):
        if n:
            _wait_quiet()
        _prepare_quietly(db_path, version_id)


def _prepare_quietly(db_path: str, version_id: int) -> None:
    _BACKGROUND.on = True  # `_SOON`'s thread: yields to requests (`_yield_to_requests`)
    conn = open_ro(db_path)
    try:
        code_module(conn, version_id)
    except Exception:  # the code request itself says why
        pass
    finally:
        conn.close()


def is_cached(conn: sqlite3.Connection, version_id: int) -> bool:
    """Whether the version is prepared for code views in this process (no work to wait for)."""
    key = _key(conn, version_id)
    with _LOCK:
        return key in _PREPARED


def _data_names(conn: sqlite3.Connection, version_id: int) -> tuple[dict[int, str], list]:
    """Global names and data labels from the version's data model (``kbtool analyze``);
    empty without one."""
    if not has_data_model(conn, version_id):
        return {}, []
    given = knowledge.data_names(conn)  # names people and agents gave (issue 27) win
    gl = {g["index"]: g["name"] for g in datamodel.globals_of(conn, version_id) if g["name"]}
    if not given:  # every item under its own label: filtered in SQL, plain rows
        return gl, shown_label_rows(conn, version_id, MAX_DATA_LABELS)
    labels = [
        (address, size, given.get(data_id) or label, text)
        for address, size, label, text, data_id, kind, refs in label_rows(
            conn, version_id, MAX_DATA_LABELS
        )
        if kind != "zero" or refs or data_id in given
    ]
    return gl, labels


def _one_line(text: object) -> str:
    return printable(text)
