"""In-process cache of diff reports and changelogs, for the long-lived read surfaces.

``kbtool serve`` and the TUI ask for the same pair again and again (a page reload, a tab
switch, the changelog panel after the table). Ingest stores the report of each (parent, new)
pair; any other pair is computed (the matcher: seconds on a large module). This cache keeps
the last few answers in memory, keyed by

    (KB file and its inode, from id, to id, kind, content, the stored report's stamp,
     the two versions' annotations)

``kind`` is ``report`` or ``changelog``. ``content`` is what an answer reads of the KB
besides the two modules' facts (:func:`_content_token`: labels, toolchains, programs,
analysis runs); the annotations (:func:`kbtool.services.diff.rejoin.fingerprint`) are those
of the two versions only, so a gate write elsewhere (another version's function, a comment)
keeps the answer. The stamp (:func:`kbtool.kb.queries.stored_diff_stamp`) moves when a
report is saved or deleted. A computed report brings its changelog along (it is built on the
way), so the changelog panel after the table costs nothing more.

Answers are shared: callers must not mutate them. Counters (``computed``, ``loaded``,
``hits``, ``disk_hits``, ``relabelled``, ``partial``) say what happened, for tests and
benchmarks.
Nothing is written to the KB.

A computed answer is also kept on disk (issue 30: a pair is computed once, not once per
process): JSON files in ``$KBTOOL_DIFF_CACHE_DIR`` (default ``$XDG_CACHE_HOME/kbtool/diffs``,
else ``~/.cache/kbtool/diffs``; ``off`` turns it off), named by a digest of the key WITHOUT
the annotations plus both modules' SHA-256, :data:`DISK_FORMAT` and the triage rules'
version (:data:`kbtool.services.diff.triage.TRIAGE_RULES`), so a KB replaced at the same
path, another algorithm or a saved report never meets an old file. Beside the report and
the changelog a ``meta`` file keeps the annotations they were built from and the function
indices whose annotation the changelog read, and a ``state`` file what each changelog entry
read and its triage before the cross-function rules; after a rename (any annotation write)
the answer is brought up to date when read (:mod:`kbtool.services.diff.rejoin`:
byte-identical to a fresh computation), and when the changelog read the renamed function
only the entries that read it are built again (:mod:`kbtool.services.diff.relabel`: tens of
ms on ffmpeg) and the answer is kept again under today's annotations (orjson: ~30 ms).
Files are written atomically; at most
``DISK_FILES`` are kept per KB file (the oldest of that KB go: one KB never evicts
another's); an unreadable file is ignored and replaced.

A stored report saved under older triage rules is re-triaged once (every modified body is
read: 13 s CPU on ffmpeg) and kept on disk (keyed with the annotations), as is a stored
report's changelog (kept by content like a computed one, rebuilt in part the same way).
A stored pair's report as answered (today's names, programs and triage) is kept on disk
whole (kind ``stored``, with the fingerprint of the annotations it was built under): a new
process reads that one file instead of the KB's report, today's names and the changelog it
takes its triage from (~95 -> ~40 ms on ffmpeg); any annotation write of the two versions
misses it and the answer is made as before, then kept again. A computed pair's report is
read alone when its meta says nothing moved on; its changelog file is read when first asked
for. Disk files: :mod:`kbtool.services.diff.disk`.
A ``background`` cache (:data:`DIFF_CACHE`) answers such a report at once, as stored plus
``triage_pending: true``, while a thread re-triages it (:meth:`DiffCache._refresh_later`).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kbtool.kb import queries
from kbtool.services.diff.disk import DISK_FILES, DISK_FORMAT, DiskAnswers, disk_dir
from kbtool.services.diff.programs import program_fields
from kbtool.services.diff.rejoin import (
    changed_indices,
    fingerprint,
    rejoinable,
    rename_changes,
    snapshot,
)
from kbtool.services.diff.rejoin import version_annotations as annotations_of

if TYPE_CHECKING:
    from kbtool.services.json_answer import Encoded

# the matcher, the changelog and the relabelling are imported when a pair is built, not
# when a kept answer is read (a new process's first whole answer: services.diff.answer)

__all__ = [
    "DiffCache",
    "DIFF_CACHE",
    "DISK_FILES",
    "DISK_FORMAT",
    "DiskAnswers",
    "MAX_ENTRIES",
    "MAX_CHANGES",
    "disk_dir",
]

MAX_ENTRIES = 8  # answers kept (reports and changelogs)
MAX_CHANGES = 200_000  # change entries kept across all reports (a 22k-function pair is ~23k)


def _size(kind: str, value: dict[str, Any]) -> int:
    if kind == "report":
        return len(value.get("changes") or ())
    return (
        len(value.get("modified") or ())
        + len(value.get("new") or ())
        + len(value.get("deleted") or ())
    )


def _file_identity(path: str) -> tuple[int, int]:
    """(device, inode) of the KB file: a KB replaced at the same path is another KB (version
    ids never repeat inside one KB: AUTOINCREMENT)."""
    try:
        st = os.stat(path)
    except OSError:
        return (0, 0)
    return (st.st_dev, st.st_ino)


class DiffCache:
    """A small LRU of diff answers (see the module docstring); thread-safe."""

    def __init__(
        self,
        max_entries: int = MAX_ENTRIES,
        max_changes: int = MAX_CHANGES,
        disk: DiskAnswers | None = None,
        background: bool = False,
    ) -> None:
        self.disk = disk if disk is not None else DiskAnswers(disk_dir())
        self.background = background
        self._refreshing: dict[tuple, threading.Thread] = {}
        self.max_entries = max_entries
        self.max_changes = max_changes
        self._items: OrderedDict[tuple, tuple[int, dict[str, Any]]] = OrderedDict()
        self._lock = threading.Lock()
        self._pending: dict[tuple, threading.Lock] = {}
        self._states: dict[tuple, tuple[Any, tuple[str, dict[str, Any], str]]] = {}
        self.computed = 0  # reports computed (the matcher ran)
        self.loaded = 0  # stored reports read from the KB
        self.changelogs = 0  # changelogs built from the facts (stored reports only)
        self.retriaged = 0  # stored reports brought up to today's triage rules
        self.hits = 0
        self.disk_hits = 0  # computed answers read back from disk (another process made them)
        self.relabelled = 0  # kept pairings whose changelog was built again (a rename it reads)
        self.partial = 0  # ... of which only the entries that read a renamed function
        self.texts: OrderedDict[tuple, Encoded] = OrderedDict()  # whole answers (:mod:`.answer`)
        self.texts_read = 0  # whole answers read back encoded from disk

    # ------------------------------------------------------------ public

    def report(self, conn: sqlite3.Connection, a: int, b: int) -> dict[str, Any]:
        """The diff report of ``a`` -> ``b``: stored if saved, else computed (carry-over off)."""
        return self._get(conn, a, b, "report")

    def changelog(self, conn: sqlite3.Connection, a: int, b: int) -> dict[str, Any]:
        """The semantic changelog of the report of ``a`` -> ``b``."""
        return self._get(conn, a, b, "changelog")

    def answer_text(
        self, conn: sqlite3.Connection, a: int, b: int, encode: Callable[[Any], str] | None = None
    ) -> str:
        """:meth:`answer`'s text."""
        return self.answer(conn, a, b, encode).text()

    def answer(
        self, conn: sqlite3.Connection, a: int, b: int, encode: Callable[[Any], str] | None = None
    ) -> Encoded:
        """The whole report of ``a`` -> ``b`` as the MCP server answers it, kept encoded, its
        text and literal each made when asked (:func:`.answer.whole_answer`). ``encode`` must
        write exactly what :func:`kbtool.services.json_answer.as_json` writes."""
        from kbtool.services.diff.answer import whole_answer

        return whole_answer(self, conn, a, b, encode)

    def kept(self, conn: sqlite3.Connection, a: int, b: int, *, whole: bool = False) -> bool:
        """Nothing of the pair is left to compute: its report and changelog are on disk under
        today's key. A stored report is read, not computed; its changelog (every modified body
        read) is kept on disk once built, together with a re-triaged report when the stored one
        is of older triage rules (:meth:`_retriaged`), so the changelog's file says it all.
        ``whole`` (a preparation): a stored pair's report is also kept whole
        (:meth:`_kept_stored`; under any annotations: a rename needs no preparation, the
        first read after it keeps it again), so that its first read is one file, and the
        whole answer is kept encoded (:mod:`.answer`)."""
        from kbtool.services.diff.answer import kept_text

        key = self._key(conn, a, b, "report")
        modules = _modules(conn, a, b)
        cl_key = key[:3] + ("changelog",) + key[4:]
        meta = self.disk.get(key[:3] + ("meta",) + key[4:6], modules)
        return (
            meta is not None
            and self.disk.has(cl_key[:6], modules)
            and (key[5] is not None or self.disk.has(key[:6], modules))
            and rejoinable(meta, self._state(conn, a, b)[1])
            and (
                not whole
                or key[5] is None
                or self.disk.has(key[:3] + ("stored",) + key[4:6], modules)
            )
            and (not whole or kept_text(self, key, modules))
        )

    def kept_meta(self, conn: sqlite3.Connection, a: int, b: int) -> dict[str, Any] | None:
        """What a kept unstored pair was built from: ``{snapshot, touched}`` (the function
        indices, old and new side, whose annotation its changelog read), or None."""
        key = self._key(conn, a, b, "meta")
        return self.disk.get(key[:6], _modules(conn, a, b))

    def kept_state(self, conn: sqlite3.Connection, a: int, b: int) -> dict[str, Any] | None:
        """What each entry of a kept unstored pair's changelog read (:mod:`.relabel`), or
        None (for benchmarks: which rename rebuilds the most)."""
        key = self._key(conn, a, b, "state")
        return self.disk.get(key[:6], _modules(conn, a, b))

    def clear(self) -> None:
        """Forget the answers in memory (those on disk stay: they are still right)."""
        with self._lock:
            self._items.clear()
            self.texts.clear()

    def __len__(self) -> int:
        return len(self._items)

    # ------------------------------------------------------------ inside

    def _key(self, conn: sqlite3.Connection, a: int, b: int, kind: str) -> tuple:
        """``(db, a, b, kind, content, stamp, annotations)``: ``content`` is what the answer
        reads of the KB beside the two modules' facts and annotations (labels, toolchains,
        programs, analysis runs), ``annotations`` the fingerprint of the two versions'
        annotations (a computed answer is kept on disk without it: :mod:`.rejoin`)."""
        path = queries.database_file(conn)
        db = (path, _file_identity(path)) if path else f"memory:{id(conn)}"
        content, _snap, fp = self._state(conn, a, b)
        return (db, a, b, kind, content, queries.stored_diff_stamp(conn, a, b), fp)

    def _state(self, conn: sqlite3.Connection, a: int, b: int) -> tuple[str, dict[str, Any], str]:
        """``(content, annotation snapshot, its fingerprint)`` of the pair, read again only
        when the KB's change token moved (a memory hit costs three small queries)."""
        path = queries.database_file(conn)
        where = ((path, _file_identity(path)) if path else f"memory:{id(conn)}", a, b)
        token = queries.change_token(conn)
        with self._lock:
            memo = self._states.get(where)
        if memo is not None and memo[0] == token:
            return memo[1]
        snap, fp = _annotation_state(conn, a, b)
        state = (_content_token(conn, a, b), snap, fp)
        with self._lock:
            if len(self._states) >= 4 * self.max_entries:
                self._states.clear()
            self._states[where] = (token, state)
        return state

    def _lookup(self, key: tuple, *, count: bool = True) -> dict[str, Any] | None:
        with self._lock:
            hit = self._items.get(key)
            if hit is None:
                return None
            self._items.move_to_end(key)
            self.hits += count
            return hit[1]

    def _put(self, key: tuple, value: dict[str, Any]) -> None:
        with self._lock:
            self._items[key] = (_size(key[3], value), value)
            self._items.move_to_end(key)
            stale = [k for k in self._items if k[:4] == key[:4] and k != key]
            for k in stale:  # older answers for the same question: the KB moved on
                del self._items[k]
            total = sum(n for n, _ in self._items.values())
            while len(self._items) > 1 and (
                len(self._items) > self.max_entries or total > self.max_changes
            ):
                _k, (n, _v) = self._items.popitem(last=False)
                total -= n

    def _get(self, conn: sqlite3.Connection, a: int, b: int, kind: str) -> dict[str, Any]:
        key = self._key(conn, a, b, kind)
        hit = self._lookup(key)
        if hit is not None:
            return hit
        with self._lock:  # one computation per question at a time; the others wait for it
            gate = self._pending.setdefault(key, threading.Lock())
        with gate:
            hit = self._lookup(key)
            if hit is not None:
                return hit
            try:
                return self._fill(conn, a, b, kind, key)
            finally:
                with self._lock:
                    self._pending.pop(key, None)

    def _fill(self, conn: sqlite3.Connection, a: int, b: int, kind: str, key: tuple):
        report_key = key[:3] + ("report",) + key[4:]
        cl_key = key[:3] + ("changelog",) + key[4:]
        report = self._lookup(report_key, count=False) if kind == "changelog" else None
        modules: tuple | None = None
        if report is None and key[5] is not None:  # a stored pair: its answer kept whole?
            modules = _modules(conn, a, b)
            report = self._kept_stored(report_key, modules)
        if report is None:
            from kbtool.services.diff.report import stored_diff

            fresh: dict[str, Any] = {}
            report = stored_diff(conn, a, b, keep=fresh, retriage=False)
            if report is not None:
                self.loaded += 1
                if fresh.get("stale_triage"):  # saved under older triage rules
                    modules = _modules(conn, a, b)
                    if kind == "report" and self._refresh_later(conn, report, report_key, modules):
                        return report
                    self._wait_refresh(report_key)
                    report, cl = self._retriaged(
                        conn, report, report_key, cl_key, modules, fresh.get("never_triaged")
                    )
                    self._put(cl_key, cl)
                self._put(report_key, report)
                self._keep_stored(conn, report_key, modules or _modules(conn, a, b), report)
            else:
                modules = _modules(conn, a, b)
                report, got = self._computed(
                    conn, a, b, report_key, modules, with_changelog=kind == "changelog"
                )
                self._put(report_key, report)
                if got is not None:
                    self._put(cl_key, got)
        if kind == "report":
            return report
        hit = self._lookup(key, count=False)  # computed just now, with the report
        if hit is not None:
            return hit
        if key[5] is None:  # a kept unstored pair's changelog, read when first asked for
            modules = modules or _modules(conn, a, b)
            cl = self._kept_changelog(conn, a, b, report_key, modules)
            if cl is None:  # no longer as the report was read: both again
                report, cl = self._computed(conn, a, b, report_key, modules)
                self._put(report_key, report)
            assert cl is not None
            self._put(key, cl)
            return cl
        # a stored report's changelog: built from the facts once (every modified body is
        # read: a minute on ffmpeg), then kept on disk like a computed answer
        # (kept by content with the annotations it read, as a computed pair's: :mod:`.rejoin`)
        modules = modules or _modules(conn, a, b)
        cl, built = self._stored_changelog(conn, a, b, key, modules, report)
        self.changelogs += built
        self._put(key, cl)
        return cl

    def _kept_stored(self, report_key: tuple, modules: tuple) -> dict[str, Any] | None:
        """A stored pair's report as last answered (names, programs and triage of today),
        kept on disk whole with the fingerprint of the annotations it was built under: one
        file read instead of the KB's report, today's names and the changelog it takes its
        triage from. None when not kept, or kept under other annotations."""
        report = self._read_stored(report_key, modules)
        if report is not None:
            self.disk_hits += 1
            self._put(report_key, report)
        return report

    def _read_stored(self, report_key: tuple, modules: tuple) -> dict[str, Any] | None:
        kept = self.disk.get(report_key[:3] + ("stored",) + report_key[4:6], modules)
        if (
            kept is None
            or kept.get("format") != STORED_FORMAT
            or kept.get("annotations") != report_key[6]
            or not isinstance(kept.get("report"), dict)
        ):
            return None
        report: dict[str, Any] = kept["report"]
        return report

    def _keep_stored(
        self, conn: sqlite3.Connection, report_key: tuple, modules: tuple, report: dict[str, Any]
    ) -> None:
        """Keep a stored pair's final report (never one answered with ``triage_pending``), if
        the KB still is as ``report_key`` says (no write since the key was taken)."""
        if report.get("triage_pending") or report_key[5] is None:
            return
        if self._key(conn, report_key[1], report_key[2], "report") != report_key:
            return
        value = {"format": STORED_FORMAT, "annotations": report_key[6], "report": report}
        self.disk.put(report_key[:3] + ("stored",) + report_key[4:6], modules, value)

    def _kept_changelog(
        self, conn: sqlite3.Connection, a: int, b: int, report_key: tuple, modules: tuple
    ) -> dict[str, Any] | None:
        """The kept changelog of an unstored pair whose report was read alone (its meta
        still under today's annotations), else None."""
        dc, dm = (report_key[:3] + (k,) + report_key[4:6] for k in ("changelog", "meta"))
        meta = self.disk.get(dm, modules)
        if meta is None or meta.get("snapshot") != self._state(conn, a, b)[1]:
            return None
        return self.disk.get(dc, modules)

    def _computed(
        self,
        conn: sqlite3.Connection,
        a: int,
        b: int,
        report_key: tuple,
        modules: tuple,
        *,
        with_changelog: bool = True,
    ) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """A pair nobody stored: kept on disk by content (no annotations in the key) with the
        annotations it was built from; today's annotations are joined in (:func:`rename_changes`)
        when the changelog read none of those that changed, else only the changelog entries
        that read one are built again (:func:`relabel`, over the kept pairing,
        classification and the other entries' kept triage). Without ``with_changelog`` a
        kept answer under today's annotations is the report alone (changelog None: read
        when asked for, :meth:`_kept_changelog`)."""
        from kbtool.services.diff.changelog import changelog
        from kbtool.services.diff.report import compute_diff_with_pairing, set_triage

        dr, dc, dm, ds = (report_key[:3] + (k,) + report_key[4:6] for k in KEPT_KINDS)
        if not self.disk.has(dm, modules):
            _wait_for_warm(conn, a, b)  # a background preparation is on this pair
        snap = self._state(conn, a, b)[1]
        meta = self.disk.get(dm, modules)
        report = self.disk.get(dr, modules) if meta is not None else None
        if report is not None and not with_changelog and meta.get("snapshot") == snap:
            self.disk_hits += 1
            return report, None
        cl = self.disk.get(dc, modules) if report is not None else None
        kept: dict[str, Any] | None = None
        if meta is not None and report is not None and cl is not None:
            try:
                rebuilt = False
                if meta["snapshot"] != snap:
                    got = self._brought_up(conn, report, cl, meta, snap, ds, modules)
                    if got is None:  # an answer kept without its state: changelog built again
                        report, kept = None, report
                    elif got[1] is not cl:  # entries rebuilt: kept under today's annotations
                        report, cl, state, read = got
                        rebuilt = True
                        meta = _meta(snap, meta["touched"], read)
                        for key, value in ((dr, report), (dc, cl), (ds, state), (dm, meta)):
                            self.disk.put(key, modules, value)  # orjson: ~30 ms on ffmpeg
            except (KeyError, TypeError, ValueError, AttributeError):
                report = kept = None  # a file of another shape: computed again
            if report is not None:
                if rebuilt:
                    self.relabelled += 1
                    self.partial += 1
                else:
                    self.disk_hits += 1
                return report, cl
        report = kept
        touched: tuple[set[int], set[int]] = (set(), set())
        state: dict[str, Any] = {}
        if report is not None:  # the kept pairing and classification, today's names
            cl = changelog(conn, report, touched=touched, state=state)
            set_triage(report["changes"], cl)
            self.relabelled += 1
        else:
            keep: dict[str, Any] = {"touched": touched, "state": state}
            report, _pairing = compute_diff_with_pairing(conn, a, b, keep=keep)
            cl = keep["changelog"]
            self.computed += 1
        self.disk.put(dr, modules, report)
        self.disk.put(dc, modules, cl)
        self.disk.put(ds, modules, state)
        # last: the pair is kept once its meta is there
        self.disk.put(dm, modules, _meta(snap, {"old": [], "new": []}, touched))
        return report, cl

    def _brought_up(
        self,
        conn: sqlite3.Connection,
        report: dict[str, Any],
        cl: dict[str, Any],
        meta: dict[str, Any],
        snap: dict[str, Any],
        ds: tuple,
        modules: tuple,
    ) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any], tuple[set, set]] | None:
        """A kept report and changelog under today's annotations ``snap``: the report's
        annotation fields joined in (in place), and the changelog entries that read a changed
        annotation built again (:func:`relabel`; ``cl`` itself when none did). None when that
        needs the state and it is not kept."""
        from kbtool.services.diff.changelog import STATE_FORMAT
        from kbtool.services.diff.relabel import relabel, runtime_by_code

        a, b = int(report["from_version_id"]), int(report["to_version_id"])
        was, touched = meta["snapshot"], meta["touched"]
        changed = changed_indices(was, snap)
        tc = _toolchain_changed(conn, a, b)
        rename_changes(report, was, snap, tc, runtime_by_code(conn, a, b))
        if not (changed[0] & set(touched["old"]) or changed[1] & set(touched["new"])):
            return report, cl, {}, (set(), set())
        state = self.disk.get(ds, modules)
        if state is None or state.get("format") != STATE_FORMAT:
            return None  # kept without it (or of another shape): the changelog is built again
        names = tuple({int(k): v[0] for k, v in snap[s].items()} for s in ("a", "b"))
        cl, state, read = relabel(conn, report, cl, state, changed, names)  # sets the triage
        return report, cl, state, read

    def _refresh_later(
        self, conn: sqlite3.Connection, report: dict[str, Any], report_key: tuple, modules: tuple
    ) -> bool:
        """A long-lived surface (``background``) answers a stale stored report at once, with
        the triage it was saved with and ``triage_pending: true``, while a thread brings it up
        to today's rules (and keeps the answer on disk); the next request gets that. False
        when the answer must be made now: not ``background``, an in-memory KB, a report
        without stored triage, or one a process already re-triaged (then it is on disk)."""
        path = queries.database_file(conn)
        if not self.background or not path or self.kept(conn, report_key[1], report_key[2]):
            return False
        if any("triage" not in c for c in report["changes"] if c["classification"] == "modified"):
            return False
        report["triage_pending"] = True
        with self._lock:
            running = self._refreshing.get(report_key)
            if running is None or not running.is_alive():
                running = threading.Thread(
                    target=self._refresh,
                    args=(path, report_key, modules),
                    name="kbtool-diff-retriage",
                    daemon=True,
                )
                self._refreshing[report_key] = running
                running.start()
        return True

    def _refresh(self, path: str, report_key: tuple, modules: tuple) -> None:
        from kbtool.kb.db import open_ro
        from kbtool.services.diff.report import stored_diff

        a, b = report_key[1], report_key[2]
        cl_key = report_key[:3] + ("changelog",) + report_key[4:]
        try:
            conn = open_ro(path)
        except Exception:  # the KB went away: the next request reports it
            return
        try:
            fresh: dict[str, Any] = {}
            report = stored_diff(conn, a, b, keep=fresh, retriage=False)
            if report is None:
                return
            report, cl = self._retriaged(
                conn, report, report_key, cl_key, modules, fresh.get("never_triaged")
            )
            self._put(report_key, report)
            self._put(cl_key, cl)
            self._keep_stored(conn, report_key, modules, report)
        except Exception:  # noqa: BLE001 - a failed refresh leaves the request path to retry
            return
        finally:
            conn.close()
            with self._lock:
                self._refreshing.pop(report_key, None)

    def _wait_refresh(self, report_key: tuple) -> None:
        """Wait for a background re-triage of the pair (its answer is then on disk)."""
        with self._lock:
            running = self._refreshing.get(report_key)
        if running is not None:
            running.join()

    def _retriaged(
        self,
        conn: sqlite3.Connection,
        report: dict[str, Any],
        report_key: tuple,
        cl_key: tuple,
        modules: tuple,
        pending: bool | None = False,
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """A stored report with today's triage and its changelog (the pairing stays as
        stored): the triage is taken from the stored report's changelog, kept on disk by
        content like any (:meth:`_stored_changelog`), else built now and kept."""
        from kbtool.services.diff.report import set_triage

        a, b = report_key[1], report_key[2]
        cl, built = self._stored_changelog(conn, a, b, cl_key, modules, report)
        if pending:  # stored by ingest without triage: its changelog built once, as ever
            self.changelogs += built
        else:
            self.retriaged += built
        set_triage(report["changes"], cl)  # what retriage_stored does, from that changelog
        return report, cl

    def _stored_changelog(
        self,
        conn: sqlite3.Connection,
        a: int,
        b: int,
        cl_key: tuple,
        modules: tuple,
        report: dict[str, Any],
    ) -> tuple[dict[str, Any], bool]:
        """The changelog of a stored report (its names today's, its triage not read) and
        whether it was built now: kept on disk by content with the annotations it read (a
        rename it did not read keeps it; one it read rebuilds the entries that read it:
        :func:`relabel`), else built from ``report`` and kept."""
        from kbtool.services.diff.changelog import STATE_FORMAT, changelog
        from kbtool.services.diff.relabel import relabel

        ck, mk = cl_key[:6], cl_key[:3] + ("meta",) + cl_key[4:6]
        sk = cl_key[:3] + ("state",) + cl_key[4:6]
        if not self.disk.has(mk, modules):
            _wait_for_warm(conn, a, b)  # a background preparation may be building it now
        snap = self._state(conn, a, b)[1]
        meta = self.disk.get(mk, modules)
        cl = self.disk.get(ck, modules) if meta is not None else None
        if cl is not None and rejoinable(meta, snap):
            self.disk_hits += 1
            return cl, False
        state = self.disk.get(sk, modules) if cl is not None else None
        if cl is not None and state is not None and state.get("format") == STATE_FORMAT:
            try:  # only the entries that read a renamed function are built again
                changed = changed_indices(meta["snapshot"], snap)
                names = tuple({int(k): v[0] for k, v in snap[s].items()} for s in ("a", "b"))
                cl, state, read = relabel(conn, report, cl, state, changed, names, triage=False)
            except (KeyError, TypeError, ValueError, AttributeError):
                cl = None  # a file of another shape: built again
            else:
                self.partial += 1
                self.disk.put(ck, modules, cl)
                self.disk.put(sk, modules, state)
                self.disk.put(mk, modules, _meta(snap, meta["touched"], read))
                return cl, True  # built now (in part: ``partial``)
        touched: tuple[set[int], set[int]] = (set(), set())
        state = {}
        cl = changelog(conn, report, touched=touched, state=state)
        self.disk.put(ck, modules, cl)
        self.disk.put(sk, modules, state)
        self.disk.put(mk, modules, _meta(snap, {"old": [], "new": []}, touched))
        return cl, True


WARM_WAIT_SECONDS = 600.0  # longest wait for a background preparation of the pair asked for


def _wait_for_warm(conn: sqlite3.Connection, a: int, b: int) -> None:
    """When a background preparation (:mod:`kbtool.services.diff.warm`) is computing this
    very pair, wait for it instead of computing it a second time beside it (two cores: both
    would take twice as long); return when it moved on, stopped or failed."""
    from kbtool.services.diff.warm import preparing

    path = queries.database_file(conn)
    if not path:
        return
    deadline = time.monotonic() + WARM_WAIT_SECONDS
    while preparing(path, a, b) and time.monotonic() < deadline:
        time.sleep(0.1)


STORED_FORMAT = 1  # the shape of a stored pair's kept report (``_kept_stored``)


KEPT_KINDS = ("report", "changelog", "meta", "state")  # the files of a computed pair


def _meta(snap: dict[str, Any], touched: dict[str, list[int]], read: tuple[set, set]) -> dict:
    """A kept answer's meta: the annotations it was built under and the indices its
    changelog read (``touched`` and ``read`` together)."""
    return {
        "snapshot": snap,
        "touched": {
            "old": sorted(set(touched["old"]) | read[0]),
            "new": sorted(set(touched["new"]) | read[1]),
        },
    }


def _content_token(conn: sqlite3.Connection, a: int, b: int) -> str:
    """What an answer reads of the KB beyond the two modules and their annotations: the
    versions' labels and toolchains, their programs, the analysis runs (facts)."""
    parts: list[Any] = [queries.change_token(conn)[2]]
    for v in (a, b):
        info = queries.version_info(conn, v)
        parts.append([info.get("label"), info.get("toolchain_version")])
    parts.append(program_fields(conn, a, b))
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:32]


def _annotation_state(conn: sqlite3.Connection, a: int, b: int) -> tuple[dict[str, Any], str]:
    """The snapshot of both versions' annotations (:func:`rejoin.snapshot`) and its digest."""
    snap = snapshot(annotations_of(conn, a), annotations_of(conn, b))
    return snap, fingerprint(snap)


def _toolchain_changed(conn: sqlite3.Connection, a: int, b: int) -> bool:
    ta = queries.version_info(conn, a).get("toolchain_version")
    tb = queries.version_info(conn, b).get("toolchain_version")
    return bool(ta and tb and ta != tb)


def _modules(conn: sqlite3.Connection, a: int, b: int) -> tuple:
    """Both versions' module digests: what the answer was computed from."""
    return tuple(queries.version_info(conn, v).get("sha256") for v in (a, b))


#: the process-wide cache of ``kbtool serve``, the TUI and the MCP server (a stale stored
#: report is re-triaged in the background, see :meth:`DiffCache._refresh_later`)
DIFF_CACHE = DiffCache(background=True)
