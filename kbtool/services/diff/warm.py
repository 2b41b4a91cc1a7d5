"""Diffs prepared before anyone asks (issue 30, point 3).

Ingest stores the report of each (parent, new) pair; any other pair of versions (the reverse
of an ingest pair, two versions that are not neighbours) is computed on first request: the
matcher, the classification and the triage, about 20 CPU s on ffmpeg's 22.5k functions. The
answer is then kept on disk (:class:`kbtool.services.diff.cache.DiskAnswers`, keyed by the
two modules' content) and read back by any process in ~0.1 s. This module computes those pairs
ahead of time, with the very same code path (:class:`~kbtool.services.diff.cache.DiffCache`),
so the answer a person gets later is byte for byte the one a fresh computation gives:

- :func:`pairs_to_prepare`: the same-program pairs of a version (or of the whole KB) whose
  answer is not kept (or not joinable with today's annotations): the reverse of a stored pair first, then the
  stored pairs (their changelog reads every modified body: 9 CPU s on ffmpeg; a report stored
  under older triage rules is re-triaged with it), then other pairs by distance;
- :func:`prepare_pairs`: compute and keep them, one at a time, with a progress callback and a
  status file (:func:`status_path`) another process reads;
- :func:`start_background`: the same in a detached low-priority process
  (``python -m kbtool.services.diff.warm``), started by ``analyze_version`` after its
  writes: the caller never waits. ``KBTOOL_DIFF_WARM=off`` (or a disk cache turned off)
  disables it. Runs of one KB are serialised by a lock file, so two analyses queue.

``kbtool ingest`` of a new version starts it too (:mod:`kbtool.commands.ingest_cmd`).
A rename or any other annotation write keeps the prepared answers: they are kept by content
and today's annotations are joined in when read (:mod:`kbtool.services.diff.rejoin`); a
rename of a function a changelog reads makes the entries that read it be built again, by the
request that meets it (:mod:`kbtool.services.diff.relabel`: ~0.15 s on ffmpeg, no matcher
run), which keeps the answer again: a gate write starts no preparation.

    python -m kbtool.services.diff.warm --db KB [--version V]   # in the foreground
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from kbtool.kb import queries
from kbtool.services.detached import spawn, switched_off
from kbtool.services.diff.cache import DiffCache, disk_dir
from kbtool.services.diff.head import keep_head

__all__ = [
    "MAX_PAIRS",
    "pairs_to_prepare",
    "preparing",
    "describe_status",
    "prepare_pairs",
    "read_status",
    "start_background",
    "status_path",
    "warm_enabled",
]

MAX_PAIRS = 12  # pairs prepared per run (the disk keeps 64 files per KB: 4 per pair)

Progress = Callable[[int, int, tuple[int, int], float], None]  # done, total, pair, cpu s


def warm_enabled() -> bool:
    """Pairs are prepared in the background unless ``KBTOOL_DIFF_WARM`` or the disk cache
    (``KBTOOL_DIFF_CACHE_DIR``) says off."""
    return not switched_off("KBTOOL_DIFF_WARM") and disk_dir() is not None


def pairs_to_prepare(
    conn: sqlite3.Connection,
    version_id: int | None = None,
    *,
    cache: DiffCache | None = None,
    limit: int = MAX_PAIRS,
) -> list[tuple[int, int]]:
    """Same-program pairs ``(a, b)`` with no answer kept on disk for today's content and
    annotations (:meth:`DiffCache.kept`); only those with ``version_id`` when given. The reverse of a
    stored pair comes first, then stored pairs, then pairs of nearer versions; at most
    ``limit``."""
    cache = cache if cache is not None else DiffCache()
    by_program: dict[str | None, list[int]] = {}
    for v in queries.list_versions(conn):
        by_program.setdefault(v["program"], []).append(v["id"])
    ranked: list[tuple[tuple[int, int, int], tuple[int, int]]] = []
    for ids in by_program.values():
        pos = {v: k for k, v in enumerate(ids)}
        for a in ids:
            for b in ids:
                if a == b or (version_id is not None and version_id not in (a, b)):
                    continue
                if queries.stored_diff_stamp(conn, a, b) is not None:
                    rank = 1  # stored: its changelog (and a re-triage under new rules)
                elif queries.stored_diff_stamp(conn, b, a) is not None:
                    rank = 0  # the reverse of an ingest pair: the one asked for most
                else:
                    rank = 2
                ranked.append(((rank, abs(pos[a] - pos[b]), a), (a, b)))
    ranked.sort()
    out: list[tuple[int, int]] = []
    for _rank, (a, b) in ranked:
        if len(out) >= limit:
            break
        if not cache.kept(conn, a, b, whole=True):
            out.append((a, b))
    return out


def status_path(db_path: str) -> Path | None:
    """The status file of the background preparation of one KB file (None: no disk cache)."""
    directory = disk_dir()
    if directory is None:
        return None
    digest = hashlib.sha256(os.path.realpath(db_path).encode()).hexdigest()[:24]
    return directory / f"warm-{digest}.status"


def read_status(db_path: str) -> dict[str, Any] | None:
    """What the last background preparation of the KB said: ``{state, pid, pairs, done,
    current, seconds}`` (state ``running``, ``done`` or ``failed: ...``), or None."""
    path = status_path(db_path)
    if path is None:
        return None
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def preparing(db_path: str, a: int, b: int) -> bool:
    """A live background preparation of the KB is computing ``a -> b`` right now."""
    st = read_status(db_path)
    if not st or st.get("state") != "running" or st.get("current") != [a, b]:
        return False
    pid = st.get("pid")
    return pid != os.getpid() and _alive(pid)


def _alive(pid: object) -> bool:
    """A process with this id exists (signal 0 sends nothing)."""
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def describe_status(st: dict[str, Any] | None) -> str:
    """One line for a person: what the background preparation did or is doing."""
    if not st:
        return "no diff preparation has run for this KB"
    pairs = [tuple(p) for p in st.get("pairs") or []]
    done, state = int(st.get("done") or 0), str(st.get("state"))
    listed = ", ".join(f"{a} -> {b}" for a, b in pairs) or "none"
    if state == "running" and not _alive(st.get("pid")):
        return f"diff preparation stopped: {done} of {len(pairs)} done ({listed})"
    if state == "running":
        cur = st.get("current")
        now = f"; computing {cur[0]} -> {cur[1]}" if isinstance(cur, list) and len(cur) == 2 else ""
        return f"preparing diffs: {done} of {len(pairs)} done ({listed}){now}"
    return f"diff preparation {state}: {done} of {len(pairs)} ({listed}), {st.get('seconds')} CPU s"


def _write_status(path: Path | None, value: dict[str, Any]) -> None:
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".warm-", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(value, f)
        os.replace(tmp, path)
    except OSError:
        pass  # a status nobody can write only costs the progress line


def _work(cache: DiffCache) -> int:
    """How many answers the cache built so far (computed, re-triaged, rebuilt in part)."""
    return cache.computed + cache.changelogs + cache.retriaged + cache.relabelled + cache.partial


def prepare_pairs(
    conn: sqlite3.Connection,
    pairs: list[tuple[int, int]],
    *,
    progress: Progress | None = None,
    cache: DiffCache | None = None,
    status: Path | None = None,
) -> dict[str, Any]:
    """Compute each pair's report and changelog through the diff cache (kept on disk);
    ``{"prepared": n, "kept_before": k, "cpu_seconds": s}``."""
    cache = cache if cache is not None else DiffCache()
    state: dict[str, Any] = {
        "state": "running",
        "pid": os.getpid(),
        "pairs": [list(p) for p in pairs],
        "done": 0,
        "current": None,
        "seconds": 0.0,
    }
    c0 = time.process_time()
    prepared = 0
    try:
        for k, (a, b) in enumerate(pairs):
            state.update(done=k, current=[a, b], seconds=round(time.process_time() - c0, 2))
            _write_status(status, state)
            before = _work(cache)
            cache.report(conn, a, b)
            cache.changelog(conn, a, b)
            cache.answer(conn, a, b)  # the MCP server's whole answer, kept encoded
            keep_head(cache, conn, a, b)  # what the TUI's diff screen shows first
            cache.clear()  # one pair in memory at a time: the answers are on disk
            prepared += _work(cache) > before
            if progress is not None:
                progress(k + 1, len(pairs), (a, b), time.process_time() - c0)
    except Exception as exc:  # noqa: BLE001 - the status says why; a request computes it then
        state.update(state=f"failed: {type(exc).__name__}: {exc}"[:300])
        _write_status(status, state)
        raise
    cpu = time.process_time() - c0
    state.update(state="done", done=len(pairs), current=None, seconds=round(cpu, 2))
    _write_status(status, state)
    return {"prepared": prepared, "kept_before": len(pairs) - prepared, "cpu_seconds": cpu}


def start_background(conn: sqlite3.Connection, version_id: int | None = None) -> dict[str, Any]:
    """Prepare ``version_id``'s pairs (every pair when None) in a detached low-priority
    process; never waits for it. ``{"pairs": [...], "pid": int | None, "status": path}``;
    no process when nothing is to prepare, the KB is not a file or preparing is off."""
    out: dict[str, Any] = {"pairs": [], "pid": None, "status": None}
    path = queries.database_file(conn)
    if not path or not warm_enabled():
        return out
    pairs = pairs_to_prepare(conn, version_id)
    if not pairs:
        return out
    status = status_path(path)
    args = ["--db", path, "--quiet"]
    if version_id is not None:
        args += ["--version", str(version_id)]
    pid = spawn("kbtool.services.diff.warm", args)
    if pid is None:  # no process: the first request computes the pair, as before
        return out
    out.update(pairs=[list(p) for p in pairs], pid=pid, status=str(status) if status else None)
    return out


@contextlib.contextmanager
def _kb_lock(db_path: str) -> Iterator[None]:
    """One preparation per KB file at a time (a second one waits, then finds the pairs kept)."""
    status = status_path(db_path)
    if status is None:
        yield
        return
    import fcntl

    status.parent.mkdir(parents=True, exist_ok=True)
    with open(status.with_suffix(".lock"), "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m kbtool.services.diff.warm",
        description="Compute and keep the diffs of a KB's same-program pairs nobody stored.",
    )
    ap.add_argument("--db", required=True, help="the KB file")
    ap.add_argument("--version", type=int, help="only pairs with this version")
    ap.add_argument("--pair", type=int, nargs=2, metavar=("A", "B"), help="only this pair")
    ap.add_argument("--limit", type=int, default=MAX_PAIRS, help="pairs at most")
    ap.add_argument("--quiet", action="store_true", help="no progress lines")
    ap.add_argument("--status", action="store_true", help="what the background run is doing")
    args = ap.parse_args(argv)
    if args.status:
        print(describe_status(read_status(args.db)))
        return 0
    from kbtool.kb.db import open_ro
    from kbtool.kb.errors import KBError

    if args.quiet:
        with contextlib.suppress(OSError):
            os.nice(10)  # a background helper: the person's own work goes first
    try:
        with _kb_lock(args.db):
            conn = open_ro(args.db)
            try:
                pairs = pairs_to_prepare(conn, args.version, limit=args.limit)
                if args.pair:  # that pair alone, unless stored or kept already
                    queries.get_version(conn, args.pair[0])
                    queries.get_version(conn, args.pair[1])
                    pairs = (
                        [] if DiffCache().kept(conn, *args.pair, whole=True) else [tuple(args.pair)]
                    )

                def say(done: int, total: int, pair: tuple[int, int], cpu: float) -> None:
                    if not args.quiet:
                        print(
                            f"prepared diff {pair[0]} -> {pair[1]} ({done} of {total}, {cpu:.1f} CPU s)"
                        )

                if not args.quiet:
                    print(
                        f"{len(pairs)} pair(s) to prepare"
                        + (": " if pairs else "")
                        + ", ".join(f"{a} -> {b}" for a, b in pairs)
                    )
                prepare_pairs(conn, pairs, progress=say, status=status_path(args.db))
            finally:
                conn.close()
    except (KBError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # noqa: BLE001 - one line, never a traceback (the status has it)
        print(f"error: preparing diffs failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
