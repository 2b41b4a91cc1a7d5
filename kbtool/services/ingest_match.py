"""A later ingest's matcher in a second process (issue #30).

The matcher's input is two lists of records and its output (the identities, the full
pairing, the run's notes, the review checks' verdicts on that pairing) is small; the new
version's data walk needs neither. For a big module ingest forks one process for the
matcher (:func:`start_match`) and walks the data meanwhile, then joins (:meth:`MatchJob.
result`). The child only computes: it never touches the KB (the transaction stays this
process's, one that lands whole or not at all). A child that fails, dies or cannot start
changes nothing: the matcher then runs here, which gives the same answer, or the same
error. Below ``KBTOOL_PARALLEL_MATCH_BYTES`` (and in a threaded process, where a fork
is unsafe: :func:`kbtool.wasm.workers.pool_context`) everything runs in this process.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Sequence
from itertools import starmap
from operator import attrgetter
from typing import Any

#: modules with more bytes than this match in a second process (ffmpeg: 32.7 MB, ~3.6 s
#: of matcher); ``KBTOOL_PARALLEL_MATCH_BYTES`` overrides it (tests lower it)
PARALLEL_MATCH_BYTES = 8_000_000

_STATE: dict[str, Any] = {}

#: the new records go to an early child in this many pickles (the child unpickles one
#: while this process pickles the next)
_RECORD_CHUNKS = 4


def match_in_child(nbytes: int) -> bool:
    """Whether a module of ``nbytes`` is matched in a second process (more than one core
    to run on, more than ``KBTOOL_PARALLEL_MATCH_BYTES``)."""
    try:
        limit = int(os.environ.get("KBTOOL_PARALLEL_MATCH_BYTES", PARALLEL_MATCH_BYTES))
    except ValueError:
        limit = PARALLEL_MATCH_BYTES
    return nbytes > limit and _cores() > 1


def _cores() -> int:
    """The cores this process may run on (its affinity: ``taskset -c 0`` gives one)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - no affinity call (macOS)
        return os.cpu_count() or 1


def _run(old: Sequence, new: Sequence, prep: Any = None) -> tuple[list, list, list[str], Any]:
    """The matcher on ``old``/``new`` inside a review memo: ``(exact, full, notes,
    verdicts)`` (``verdicts``: the memo's key and verdicts of the final pairing's review,
    None when it kept none; ``prep``: :func:`kbtool.identity.matcher.prepare_old` of this
    very ``old`` list, made ahead)."""
    from kbtool.identity.matcher import MatchStats, match_functions_staged, review

    stats: list[MatchStats] = []
    with review.review_memo():
        exact, full = match_functions_staged(old, new, stats=stats, old_prepared=prep)
        memo = review._MEMO.get()  # noqa: SLF001 - the verdicts this run left
        verdicts = (memo[0], memo[3]) if memo else None
    return exact, full, stats[0].notes, verdicts


def _pack(matches: Any) -> tuple[bool, Any]:
    """A list of :class:`~kbtool.identity.records.Match` as one tuple of field values each
    (``(True, tuples)``; anything else as it is): a pickle of ~22k slotted dataclasses
    costs ~0.045 s each way, of their tuples ~0.003 (:func:`_unpack` rebuilds them, equal)."""
    from kbtool.identity.records import Match
    from kbtool.plainclass import field_names

    if not isinstance(matches, list) or any(type(m) is not Match for m in matches):
        return False, matches
    return True, list(map(attrgetter(*field_names(Match)), matches))


def _unpack(packed: tuple[bool, Any]) -> Any:
    """:func:`_pack`'s list again: equal :class:`~kbtool.identity.records.Match` objects."""
    from kbtool.identity.records import Match

    done, value = packed
    return list(starmap(Match, value)) if done else value


class Packed:
    """The child's full matches as sent (:func:`_pack`), unpacked only by :func:`matches_of`
    (a pairing the child made never reads them: ffmpeg ~42k ``Match`` objects, ~20 ms)."""

    __slots__ = ("packed",)

    def __init__(self, packed: tuple[bool, Any]) -> None:
        self.packed = packed


def matches_of(full: Any) -> Any:
    return _unpack(full.packed) if isinstance(full, Packed) else full


def _child(writer: Any, parent_pid: int) -> None:
    from kbtool.wasm.facts import gc_paused
    from kbtool.wasm.workers import worker_init

    worker_init(parent_pid)
    if os.environ.get("KBTOOL_TEST_MATCH_CHILD_FAIL"):  # tests: a child that dies
        os._exit(3)
    try:
        with gc_paused():
            _answer(writer, _STATE["old"], _STATE["new"], lambda: _STATE.get("report"))
        writer.close()
    except BaseException:  # noqa: BLE001 - the parent runs the matcher again: its error
        os._exit(1)
    os._exit(0)  # (all sent: no teardown of the heap the parent waits for)


def _answer(
    writer: Any,
    old: Sequence,
    new: Sequence,
    report: Callable[[], Any],
    back: Any = None,
    prep: Any = None,
) -> None:
    """The matcher's answer sent, then (``report()``: the flags' inputs, None: none) the
    report's pairs and their flags. ``back``: a :class:`_Spool` they are written to (the
    pipe then says where): the pairs as soon as made (this process builds the report's
    pairing from them and classifies the pairs after the head meanwhile:
    :func:`kbtool.services.ingest_classify.split_at`), the head's codes, then the rest's
    (each None when not made); without one, one message ``(pairs, flags)`` (None: none),
    which a pipe holds until this process reads it."""
    import pickle

    def send(data: bytes) -> None:
        writer.send_bytes(data if back is None else pickle.dumps(back.put(data)))

    exact, full, notes, verdicts = _run(old, new, prep)
    out = (_pack(exact), _pack(full), notes, verdicts)
    send(pickle.dumps(out, pickle.HIGHEST_PROTOCOL))
    del out
    inputs = report()
    if inputs is not None:  # then the report's pairs and flags (None: none made)
        sent: list = []

        def out(value: Any) -> None:
            send(pickle.dumps(value, 5))
            sent.append(value)

        flags = _flags(inputs, exact, full, old, new, verdicts, None if back is None else out)
        if back is None:
            send(pickle.dumps(flags, 5))
        else:  # (the pairs, the head's codes, the rest's: None where not made)
            head = sent[1] if len(sent) > 1 else None
            while len(sent) < 2:
                out(None)
            out(None if flags is None or head is None else flags[1][len(head) :])


def _early_child(writer: Any, reader: Any, parent_pid: int) -> None:
    """The child forked before the decode (:meth:`MatchJob.start_early`): it reads the
    parent version's rows and the report's inputs by its own read-only connection and makes
    the report's views while this process decodes, then takes the new records (the first
    message), answers, and takes the new side of the report's pairing (the second)."""
    import pickle

    from kbtool.identity.records import records_from_rows
    from kbtool.services.ingest_rows import rows_from_records
    from kbtool.wasm.facts import gc_paused
    from kbtool.wasm.workers import worker_init

    worker_init(parent_pid)
    if os.environ.get("KBTOOL_TEST_MATCH_CHILD_FAIL"):  # tests: a child that dies
        os._exit(3)
    try:
        with gc_paused():
            inputs = _early_inputs(_STATE["path"], _STATE["parent"], _STATE["data"], _STATE["sha"])
            old = records_from_rows(inputs["old_rows"])
            _preload_child()  # (while the new records are made: not after them)
            prep = _prepare_old(old)  # (likewise: the matcher's old side)
            spool = _STATE["spool"]

            def received() -> Any:  # (the pipe says where in the spool file it lies)
                return pickle.loads(_read_spool(spool, *pickle.loads(reader.recv_bytes())))

            new: list = []
            for _ in range(pickle.loads(reader.recv_bytes())):  # (the records' chunks)
                new += _unpack_records(received())

            def report() -> dict:  # (the new rows made of the records and what they lack)
                extras, inputs["new_mem"] = received()
                inputs["new_rows"] = rows_from_records(new, extras)
                return inputs

            _answer(writer, old, new, report, _STATE["back"], prep)
        writer.close()
    except BaseException:  # noqa: BLE001 - the parent runs the matcher itself: its error
        os._exit(1)
    os._exit(0)


def _preload_child() -> None:
    """Import what the matcher and then the report's pairing and flags need (~15 ms on
    ffmpeg) while an early child waits for the new records."""
    import kbtool.identity.matcher
    import kbtool.identity.pairing
    import kbtool.services.diff.report  # noqa: F401


def _prepare_old(old: list) -> Any:
    """The matcher's old side made ahead (:func:`kbtool.identity.matcher.prepare_old`: its
    indexes and the feature store's counts of its records; ~0.1 s of ffmpeg's matcher) while
    an early child waits for the new records; None when it fails (the matcher makes it)."""
    from kbtool.identity.matcher import prepare_old

    try:
        return prepare_old(old)
    except Exception:  # noqa: BLE001 - the matcher makes the old side itself: its answer
        return None


class _Spool:
    """An unlinked file both processes hold from the fork (an anonymous memory file where
    there is one): this process appends each pickle for an early child to it and sends only
    where it lies through the pipe. Through a pipe of 64 KiB, 27 MB of records would hand
    the two processes to each other hundreds of times, each a wait for the scheduler on a
    busy machine; and a pipe message the child, still matching, does not read would hold
    this process."""

    def __init__(self) -> None:
        fd = -1
        if hasattr(os, "memfd_create"):
            with contextlib.suppress(OSError):
                fd = os.memfd_create("kbtool-match")
        if fd < 0:
            import tempfile

            fd, name = tempfile.mkstemp(prefix="kbtool-match-")
            os.unlink(name)
        self.fd, self.end = fd, 0

    def put(self, data: bytes) -> tuple[int, int]:
        """Append ``data``: ``(offset, length)``."""
        off, view = self.end, memoryview(data)
        done = 0
        while done < len(view):
            done += os.pwrite(self.fd, view[done:], off + done)
        self.end = off + done
        return off, done

    def close(self) -> None:
        os.close(self.fd)


def _read_spool(fd: int, off: int, n: int) -> bytes:
    """``n`` bytes at ``off`` of the spool file (``fd``: :class:`_Spool`'s, by the fork)."""
    parts = []
    while n > 0:
        got = os.pread(fd, n, off)
        if not got:
            raise EOFError("the spool file ended early")
        parts.append(got)
        n -= len(got)
        off += len(got)
    return b"".join(parts)


def _early_inputs(path: str, parent: int, data: bytes, sha: str) -> dict:
    """What the early child reads of the KB (its own read-only connection: the parent
    version's rows, module bytes, hash and memory-access texts, all committed before this
    ingest's transaction) and the report's two views made meanwhile (kept by content:
    :func:`kbtool.services.ingest_classify.child_flags` finds them)."""
    from kbtool.kb import queries
    from kbtool.kb.db import open_ro
    from kbtool.services.diff.relocation import module_view
    from kbtool.wasm import WasmFormatError

    kb = open_ro(path)
    try:
        got = {
            "parent": parent,
            "old_rows": queries.matching_rows(kb, parent),
            "old_bytes": queries.module_bytes(kb, parent),
            "old_sha": queries.version_info(kb, parent).get("sha256"),
            "old_mem": queries.mem_ops_json_all(kb, parent),
        }
    finally:
        kb.close()
    got.update(funcs=None, slots=None, data=data, mod=None, sha256=sha)
    with contextlib.suppress(WasmFormatError):
        module_view(data, sha=sha)
    if got["old_sha"]:
        with contextlib.suppress(WasmFormatError):
            module_view(got["old_bytes"], sha=got["old_sha"])
    return got


def _unpack_records(rows: list[tuple]) -> list:
    from kbtool.identity.records import FuncRecord

    return list(starmap(FuncRecord, rows))


def _flags(
    report: dict, exact: list, full: list, old: Any, new: Any, verdicts: Any, out: Any
) -> Any:
    """:func:`kbtool.services.ingest_classify.child_flags`, or None when it fails (this
    process then pairs and classifies the pairs itself)."""
    from kbtool.services.ingest_classify import child_flags

    try:
        return child_flags(report, exact, full, old, new, verdicts, out=out)
    except Exception:  # noqa: BLE001 - the parent classifies them: its answer or error
        return None


class MatchJob:
    """The matcher's run for one ingest: in a forked child (``proc``) or, without one,
    here when :meth:`result` is asked."""

    def __init__(self, old: Sequence, new: Sequence, report: dict | None = None) -> None:
        self.old, self.new = old, new
        self.report = report  # the child's inputs for the report's flags (None: none made)
        self.proc: Any = None
        self.reader: Any = None
        self.in_child = False  # whether the answer came from the child
        # the child's report pairs and their flags after its answer (the head's, the
        # rest's: ``split``, sent apart), once read
        self._pairs: Any = False
        self._codes: Any = False
        self._rest: Any = False
        self.split = False
        self.parent: int | None = None  # the version an early child reads (start_early)
        self.sender: Any = None  # to an early child: the new records, the report's rows
        # the early child's spool files (:class:`_Spool`): the records and the report's new
        # rows this way, its answers (``_back``) the other way
        self._spool: _Spool | None = None
        self._back: _Spool | None = None

    def start_early(self, path: str, parent: int, data: bytes, sha: str) -> None:
        """Fork the child before the decode (:func:`start_early`): it reads version
        ``parent`` of the KB at ``path`` itself and waits for :meth:`send_rows`."""
        from kbtool.wasm.workers import pool_context, signals_deferred

        mpctx = pool_context()
        if mpctx is None:
            return
        try:
            self._spool, self._back = _Spool(), _Spool()
        except OSError:  # no temporary file: no early child
            self._close_spool()
            return
        reader, writer = mpctx.Pipe(duplex=False)
        c_reader, sender = mpctx.Pipe(duplex=False)
        _STATE.update(
            path=path, parent=parent, data=data, sha=sha, spool=self._spool.fd, back=self._back
        )
        try:
            with signals_deferred():
                proc = mpctx.Process(
                    target=_early_child,
                    args=(writer, c_reader, os.getpid()),
                    name="kbtool-match",
                    daemon=True,
                )
                proc.start()
        except OSError:  # no fork (limits): the matcher runs here
            reader.close()
            sender.close()
            self._close_spool()
            return
        finally:
            _STATE.clear()
            writer.close()
            c_reader.close()
        self.proc, self.reader, self.sender, self.parent = proc, reader, sender, parent

    def send_rows(self, rows: list[tuple]) -> None:
        """The new version's records as the tuples of their fields
        (:func:`kbtool.identity.records.record_rows`) to the early child, before this
        process makes its own records of them (the caller sets :attr:`new` then); the child
        starts the matcher once it has them (:func:`_unpack_records`)."""
        if self.proc is None:
            return
        import pickle

        step = max(1, -(-len(rows) // _RECORD_CHUNKS))
        chunks = [rows[i : i + step] for i in range(0, len(rows), step)]
        spool = self._spool
        assert spool is not None  # (made with the child)
        try:  # (in chunks: the child unpickles one while this process pickles the next)
            self.sender.send_bytes(pickle.dumps(len(chunks)))
            for chunk in chunks:
                at = spool.put(pickle.dumps(chunk, pickle.HIGHEST_PROTOCOL))
                self.sender.send_bytes(pickle.dumps(at))
        except OSError:  # the child died (or no room for the spool): the matcher runs here
            self.stop()

    def prepare_report(self, funcs: Sequence, new_mem: dict) -> None:
        """The new side of the report's pairing for the early child: what its rows need
        beside the records the child has (:func:`kbtool.services.ingest_rows.row_extras`
        of the decoder's ``funcs``: ~0.3 MB where the rows pickle to ~29 MB on ffmpeg) and
        the memory-access texts, pickled now into the spool file and where it lies sent at
        once (a few bytes the child reads after its answer, without waiting for this
        process to read that answer): the child then makes the rows
        (:func:`~kbtool.services.ingest_rows.rows_from_records`), the report's pairing and
        its flags."""
        if self.proc is None or self._spool is None:
            return
        import pickle

        from kbtool.services.ingest_rows import row_extras

        msg = pickle.dumps((row_extras(funcs), new_mem), pickle.HIGHEST_PROTOCOL)
        try:
            at = self._spool.put(msg)
        except OSError:  # (no room): the report's pairing and flags made here
            return
        self.report = {}  # (the child makes the flags)
        try:
            self.sender.send_bytes(pickle.dumps(at))
        except OSError:  # the child died: the matcher, pairing and flags run here
            self.report = None
            self.stop()

    def _close_spool(self) -> None:
        for spool in (self._spool, self._back):
            if spool is not None:
                spool.close()
        self._spool = self._back = None

    def _recv(self) -> bytes:
        """The child's next message (through the back spool for an early child)."""
        import pickle

        got = self.reader.recv_bytes()
        if self._back is None:
            return got
        return _read_spool(self._back.fd, *pickle.loads(got))

    def start(self, report: Callable[[], dict] | None = None) -> None:
        """Fork the child (``report()``: its inputs for the report's flags, asked only when
        there is one)."""
        from kbtool.wasm.workers import pool_context, signals_deferred

        mpctx = pool_context()
        if mpctx is None:
            return
        if report is not None:
            self.report = report()
        reader, writer = mpctx.Pipe(duplex=False)
        _STATE["old"], _STATE["new"] = self.old, self.new  # inherited by the fork
        if self.report is not None:
            _STATE["report"] = self.report
        try:
            with signals_deferred():
                proc = mpctx.Process(
                    target=_child, args=(writer, os.getpid()), name="kbtool-match", daemon=True
                )
                proc.start()
        except OSError:  # no fork (limits): the matcher runs here
            reader.close()
            self.report = None
            return
        finally:
            _STATE.clear()
            writer.close()
        self.proc, self.reader = proc, reader

    def result(self) -> tuple[list, list, list[str], Any]:
        """``(exact, full, notes, verdicts)`` as :func:`_run` gives them; the child's when
        it answered (``full``: :class:`Packed`), else the matcher's run here (the same)."""
        out = None
        if self.proc is not None:
            import pickle  # (here: a first ingest, or a small one with no child, reads no answer)

            try:
                out = pickle.loads(self._recv())
                out = (_unpack(out[0]), Packed(out[1]), out[2], out[3])
            except (EOFError, OSError, pickle.UnpicklingError):
                out = None  # the child died or failed: run here
            finally:
                if out is None:
                    self.stop()
                elif self.report is None:  # (all sent)
                    self.stop(done=True)
        if out is not None:
            self.in_child = True
            return out
        return _run(self.old, self.new)

    def pairs(self) -> list | None:
        """The child's report pairs after its answer (:func:`kbtool.services.
        ingest_classify.child_flags`), or None (no child, it made none, or it died; the
        child is ended then); their flags follow (:meth:`codes`)."""
        import pickle

        if self._pairs is False:
            self._pairs = None
            if self.proc is not None and self.report is not None:
                whole = self._back is None  # (one message: pairs and flags)
                got = None
                try:
                    got = pickle.loads(self._recv())
                except (EOFError, OSError, pickle.UnpicklingError):
                    got = None
                if got is None or whole:
                    self._pairs, self._codes = got if got is not None else (None, None)
                    self._rest = b""
                    self.stop(done=got is not None)
                    self.report = None  # (its memory back)
                else:
                    self._pairs, self.split = got, True
        return self._pairs

    def codes(self) -> bytes | None:
        """The flags of :meth:`pairs` (each defined pair's code, in order; of the head only
        when ``split``: :meth:`rest` has the others), or None (the child is ended then)."""
        if self._codes is False:
            self._codes = self._next() if self._pairs else None
        return self._codes

    def rest(self) -> bytes | None:
        """After :meth:`codes` of a ``split`` answer: the codes of the pairs after the
        head, or None; the child is ended then."""
        if self._rest is False:
            self._rest = self._next() if self._codes is not None else None
            self.stop(done=self._rest is not None)
            self.report = None  # (its memory back)
        return self._rest

    def _next(self) -> Any:
        """The child's next message unpickled; None when there is none (it is ended)."""
        import pickle

        if self.proc is None:
            return None
        try:
            got = pickle.loads(self._recv())
        except (EOFError, OSError, pickle.UnpicklingError):
            got = None
        if got is None:
            self.stop()
            self.report = None
        return got

    def drop(self) -> list:
        """The data this job holds (both sides' records, the report's inputs, the child's
        pairs), no longer its own: the caller frees it (:func:`kbtool.services.ingest_end.
        free_meanwhile`). Only once the job is stopped and its answers read."""
        held = [self.old, self.new, self.report, self._pairs, self._codes, self._rest]
        self.old = self.new = ()
        self.report = None
        return held

    def stop(self, *, done: bool = False, kill: bool = False) -> None:
        """End the child (an answer read, an error or an interrupt here). ``done``: it sent
        all it had to and exits by itself: not waited for (the kernel's teardown of its
        memory, ~0.05 s on ffmpeg, goes on beside this process; reaped later). ``kill``:
        its answer is not wanted (an early child matching another parent, the rest of the
        flags this process classified itself): killed now and not waited for either (its
        teardown, 0.03-0.09 s of this process's wall at load 4-7, was on the report's path;
        reaped by :mod:`multiprocessing` at its next start or at exit)."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if self.sender is not None:  # (an early child that waits for more: EOF)
            self.sender.close()
        self._close_spool()  # (the child keeps its own descriptor)
        if done:
            self.reader.close()
            return
        if proc.is_alive() and not kill:
            proc.join(timeout=0.5)
        if proc.is_alive():
            proc.kill()
            if not kill:
                proc.join(timeout=5)
        self.reader.close()


def start_match(
    old: Sequence, new: Sequence, nbytes: int, report: Callable[[], dict] | None = None
) -> MatchJob:
    """The matcher's job on ``old``/``new``; started in a child for a module of ``nbytes``
    above the threshold (``report()``: the child's inputs for the report's flags, asked
    only then: :func:`kbtool.services.ingest_classify.report_inputs`)."""
    job = MatchJob(old, new)
    if match_in_child(nbytes):
        job.start(report)
    return job


def start_early(
    conn, data: bytes, sha: str, program: str | None, base: int | None, same: list
) -> MatchJob | None:
    """The matcher's child forked before the decode of a module above the threshold,
    reading the parent the lineage is expected to choose (:func:`expected_parent`) by its
    own read-only connection while this process decodes; None when there is none, ``conn``
    is inside a transaction (the child would not see its writes) or not a file, or no core
    is free (:func:`early_wanted`). The caller sends the new records (:meth:`MatchJob.
    send_rows`) and stops the job when the lineage chose another parent."""
    from kbtool.kb import queries

    if conn.in_transaction or not match_in_child(len(data)) or not early_wanted():
        return None
    path = queries.database_file(conn)
    parent = expected_parent(conn, program, base, same)
    if parent is None or not path or not os.path.exists(path):
        return None
    job = MatchJob((), ())
    job.start_early(path, parent, data, sha)
    return job if job.proc is not None else None


def early_wanted() -> bool:
    """Whether to fork the match child before the decode: ``KBTOOL_EARLY_MATCH`` ``1`` yes,
    ``0`` no; else only while a core is free (the last minute's load average below the
    cores this process may run on). The early child spends ~0.5 s more CPU in all (both
    processes read the parent's rows, the records and the report's rows cross by pickles)
    to start the matcher ~0.3 s sooner: a gain only on an idle core; on a busy machine it
    takes the decode's CPU (ffmpeg at load 3 on 2 cores: the decode 0.51 -> 0.86 s wall)."""
    env = os.environ.get("KBTOOL_EARLY_MATCH", "")
    if env in ("0", "1"):
        return env == "1"
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # pragma: no cover - no load average (Windows)
        return False
    return load < _cores()


def expected_parent(conn, program: str | None, base: int | None, same: list) -> int | None:
    """The parent version :func:`kbtool.services.lineage.choose_lineage` is expected to
    choose, known before the decode: ``base``, the same bytes' version, else the latest
    version (of ``program`` when given); None: none. Only a guess: a wrong one costs the
    early child's work, never a result (the caller checks it against the lineage)."""
    from kbtool.kb import queries

    if base is not None:
        return base
    if program is None and same:
        return same[-1]["id"]
    versions = [
        v["id"]
        for v in queries.lineage_versions(conn)
        if program is None or v["program"] == program
    ]
    return versions[-1] if versions else None


def install_verdicts(verdicts: Any, old: Sequence, new: Sequence) -> None:
    """Give this process's open review memo the child's verdicts on the final pairing, for
    the records ``old``/``new`` (this process's copies of the child's inputs, equal in
    every field): the diff report's pairing then reuses them as it would in one process."""
    if verdicts is None:
        return
    from kbtool.identity.matcher import review

    memo = review._MEMO.get()  # noqa: SLF001
    if memo is None:
        return
    key, by_new = verdicts
    memo[:] = [key, {r.index: r for r in old}, {r.index: r for r in new}, by_new]


def keep_views(conn, parent, data, mod, sha256, old_bytes: bytes | None = None) -> None:
    """The relocation views of the new module and the parent's made now, while the matcher
    runs in its child: kept by content (:func:`kbtool.services.diff.relocation.
    module_view`), the report's check then finds them (a module the view refuses: none).
    ``old_bytes``: the parent's module bytes when already read (the child's inputs)."""
    from kbtool.kb import queries
    from kbtool.services.diff.relocation import module_view
    from kbtool.wasm import WasmFormatError

    with contextlib.suppress(WasmFormatError):
        module_view(data, mod, sha=sha256)
    old_sha = queries.version_info(conn, parent).get("sha256")
    if old_sha:  # (as the report asks: by the stored hash)
        if old_bytes is None:
            old_bytes = queries.module_bytes(conn, parent)
        with contextlib.suppress(WasmFormatError):
            module_view(old_bytes, sha=old_sha)


def preload() -> None:
    """Import what the diff report's pairing, carry and report need after the join (on
    ffmpeg ~0.03 s of imports), while the matcher runs in its child."""
    import kbtool.identity.pairing
    import kbtool.services.diff.carry
    import kbtool.services.diff.report  # noqa: F401
