"""Bounds on what an MCP client may send: the longest line and the deepest nesting.

A JSON-RPC message over stdio is one line. Without a bound a single line of 200 MB is read
whole (and decoded, and parsed: several times its size in memory), and a line of 100,000
nested brackets overflows the parser's recursion. Here:

- :func:`bounded_lines` reads at most :data:`MAX_LINE` bytes of a line (``KBTOOL_MCP_MAX_LINE``,
  default 8 MiB); the rest of an overlong line is read in 64 KB chunks and thrown away, never
  buffered, and the line is reported as :class:`Overlong`;
- :func:`nesting_problem` refuses a line nested deeper than :data:`MAX_DEPTH` brackets
  (``KBTOOL_MCP_MAX_DEPTH``, default 64) before any JSON parser sees it;
- :func:`refusal` is the JSON-RPC error answer (-32600 Invalid Request), with the request's
  ``id`` when it can be read from the line's top level, else ``null``.

The SDK's server (``kbtool mcp``) serves behind :func:`guarded_stdio`, a pair of pipes
between the real stdin and stdout and the SDK (the SDK reads lines without a bound). The server answers and keeps
serving; it tells :mod:`kbtool.mcp.idle` how many requests are in flight (background work
waits for a quiet moment). Pure standard library.
"""

from __future__ import annotations

import io
import json
import logging
import os
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, BinaryIO

from kbtool.mcp import splice
from kbtool.mcp.idle import ACTIVITY

log = logging.getLogger("kbtool.mcp")

PARSE_ERROR, INVALID_REQUEST = -32700, -32600
CHUNK = 1 << 16
PREFIX = 4096  # bytes of an overlong line kept to find its id


def _env_int(name: str, default: int) -> int:
    try:
        value = int(os.environ.get(name, ""))
    except ValueError:
        return default
    return value if value > 0 else default


MAX_LINE = _env_int("KBTOOL_MCP_MAX_LINE", 8 << 20)
MAX_DEPTH = _env_int("KBTOOL_MCP_MAX_DEPTH", 64)


@dataclass(frozen=True, slots=True)
class Overlong:
    """A line longer than the bound: its first bytes and its full size."""

    prefix: bytes
    size: int


def bounded_lines(stream: BinaryIO, max_line: int | None = None) -> Iterator[bytes | Overlong]:
    """The lines of ``stream`` (with their newline), an overlong one as :class:`Overlong`;
    memory stays within ``max_line`` (default :data:`MAX_LINE`) plus one chunk."""
    limit = max_line or MAX_LINE
    while True:
        line = stream.readline(limit + 1)
        if not line:
            return
        if len(line) <= limit or line.endswith(b"\n"):  # limit bytes and their newline
            yield line
            continue
        size = len(line)
        prefix = line[:PREFIX]
        del line
        while True:  # discard the rest of the line without keeping it
            chunk = stream.readline(CHUNK)
            size += len(chunk)
            if not chunk or chunk.endswith(b"\n"):
                break
        yield Overlong(prefix, size)


_OPEN = frozenset(b"[{")
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)


def nesting_problem(line: bytes, max_depth: int | None = None) -> str | None:
    """Why ``line`` is nested too deep to parse, or None (brackets inside strings ignored)."""
    limit = max_depth or MAX_DEPTH
    if line.count(b"[") + line.count(b"{") <= limit:  # the common case: cheap
        return None
    depth = deepest = 0
    for b in _STRING.sub(b'""', line).translate(None, delete=_NOT_BRACKET):
        depth += 1 if b in _OPEN else -1
        if depth > deepest:
            deepest = depth
            if deepest > limit:
                return f"request nested deeper than {limit} levels"
    return None


_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")
_TOP_ID = re.compile(rb'"id"\s*:\s*(-?\d{1,18}|"[^"\\]{0,128}")')


def request_id(prefix: bytes) -> Any:
    """The ``id`` of a request from its first bytes when it sits at the top level (before any
    nested object or array), else None."""
    body = prefix.lstrip()
    if not body.startswith(b"{"):
        return None
    top = re.split(rb"[\[{]", body[1:], maxsplit=1)[0]
    m = _TOP_ID.search(top)
    if not m:
        return None
    try:
        return json.loads(m.group(1))
    except ValueError:
        return None


def refusal(rid: Any, code: int, message: str) -> bytes:
    """One JSON-RPC error line."""
    reply = {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}}
    return json.dumps(reply, separators=(",", ":")).encode() + b"\n"


def check(item: bytes | Overlong, max_line: int | None = None) -> bytes | None:
    """The error line answering ``item`` when it breaks a bound, else None."""
    if isinstance(item, Overlong):
        limit = max_line or MAX_LINE
        log.warning("refused a request line of %d bytes (limit %d)", item.size, limit)
        return refusal(
            request_id(item.prefix),
            INVALID_REQUEST,
            f"Invalid Request: line of {item.size} bytes is longer than the limit of"
            f" {limit} bytes (KBTOOL_MCP_MAX_LINE)",
        )
    problem = nesting_problem(item)
    if problem:
        log.warning("refused a request line: %s", problem)
        return refusal(
            request_id(item[:PREFIX]),
            INVALID_REQUEST,
            f"Invalid Request: {problem} (KBTOOL_MCP_MAX_DEPTH)",
        )
    return unknown_method(item)


METHOD_NOT_FOUND = -32601
DRAIN_SECONDS = 600.0  # at end of input, how long answers to requests in flight are awaited


def _request_key(line: bytes) -> Any:
    """The id of a request line (a method and an id), else None."""
    try:
        msg = json.loads(line)
    except ValueError:
        return None
    if isinstance(msg, dict) and "method" in msg and isinstance(msg.get("id"), int | str):
        return json.dumps(msg["id"])
    return None


def _cancelled_key(line: bytes) -> Any:
    """The id of the request a ``notifications/cancelled`` line cancels, else None."""
    if b"notifications/cancelled" not in line:
        return None
    try:
        msg = json.loads(line)
    except ValueError:
        return None
    if not isinstance(msg, dict) or msg.get("method") != "notifications/cancelled":
        return None
    params = msg.get("params")
    rid = params.get("requestId") if isinstance(params, dict) else None
    return json.dumps(rid) if isinstance(rid, int | str) else None


_ANSWER_TOP = re.compile(rb'"(?:result|error)"\s*:\s*$')


def _response_key(line: bytes) -> Any:
    """The id a response line answers, else None. Read off the line's first bytes when its
    top level, up to the answer, holds the id (the SDK writes ``{"jsonrpc", "id", "result"``
    in that order): a whole diff is a 6 MB line, 40 ms to parse only for its id."""
    body = line[:PREFIX].lstrip()
    if body.startswith(b"{"):
        top = re.split(rb"[\[{]", body[1:], maxsplit=1)[0]
        if b'"method"' not in top and _ANSWER_TOP.search(top):
            m = _TOP_ID.search(top)
            if m:
                return json.dumps(json.loads(m.group(1)))
    try:
        msg = json.loads(line)
    except ValueError:
        return None
    if isinstance(msg, dict) and "method" not in msg and isinstance(msg.get("id"), int | str):
        return json.dumps(msg["id"])
    return None


def _client_methods() -> frozenset[str]:
    """The request methods the installed MCP SDK serves (read off its ClientRequest union)."""
    try:
        import typing

        from mcp import types

        union = types.ClientRequest.model_fields["root"].annotation
        out = set()
        for model in typing.get_args(union):
            ann = model.model_fields["method"].annotation
            out.update(a for a in typing.get_args(ann) if isinstance(a, str))
        if out:
            return frozenset(out)
    except Exception:  # noqa: BLE001 - fall back to the methods of every 1.x SDK
        pass
    return frozenset(
        {
            "initialize",
            "ping",
            "tools/list",
            "tools/call",
            "resources/list",
            "resources/read",
            "resources/templates/list",
            "prompts/list",
            "prompts/get",
            "logging/setLevel",
            "completion/complete",
        }
    )


_METHODS: frozenset[str] | None = None


def unknown_method(line: bytes) -> bytes | None:
    """A request whose method the SDK does not know is answered here with -32601 (older SDKs
    end the whole session on one, newer ones answer it the same way); notifications, answers
    and lines that are not JSON go on to the SDK untouched."""
    global _METHODS
    try:
        msg = json.loads(line)
    except ValueError:
        return None
    if not isinstance(msg, dict) or "id" not in msg or not isinstance(msg.get("method"), str):
        return None
    if _METHODS is None:
        _METHODS = _client_methods()
    if msg["method"] in _METHODS:
        return None
    rid = msg["id"] if isinstance(msg["id"], int | str) else None
    return refusal(rid, METHOD_NOT_FOUND, f"Method not found: {msg['method'][:80]}")


PIPE_BYTES = 1 << 20  # the pipes' buffer (Linux): a 6 MB answer in a few hops, not ~100


def _widen(fd: int) -> None:
    """Give the pipe at ``fd`` a :data:`PIPE_BYTES` buffer where the system allows it."""
    try:
        import fcntl

        fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), PIPE_BYTES)
    except (ImportError, OSError):  # not Linux, not a pipe, or over the system's limit
        pass


def forward_lines(
    src_fd: int,
    out: BinaryIO,
    lock: threading.Lock,
    done: Callable[[bytes], None],
    splice: Callable[[bytes], list[bytes] | None] | None = None,
) -> None:
    """Copy the lines read from ``src_fd`` to ``out``, holding ``lock`` while a line is
    written (another writer never cuts into a line); call ``done`` with each whole line once
    it is out. A line is held until its newline while it is shorter than :data:`CHUNK`, and
    then written as ``splice`` pieces it (:func:`kbtool.mcp.splice.splice`: a big answer's
    stand-in replaced by the answer); a longer one is written as it arrives (a 6 MB answer
    line reaches the client while the server is still writing it, not after). Ends at end
    of input."""
    parts: list[bytes] = []  # the current line so far
    held = 0  # its bytes not written yet (all of them while it is short)
    holding = False  # the lock: held from a long line's first write to its newline
    try:
        while True:
            chunk = os.read(src_fd, PIPE_BYTES)
            if not chunk:
                break
            start = 0
            while start < len(chunk):
                nl = chunk.find(b"\n", start)
                end = len(chunk) if nl < 0 else nl + 1
                piece = chunk[start:end] if start or end < len(chunk) else chunk
                parts.append(piece)
                start = end
                if nl >= 0:
                    line = parts[0] if len(parts) == 1 else b"".join(parts)
                    parts.clear()
                    if holding:  # a long line: its start is out already
                        out.write(piece)
                    else:
                        lock.acquire()
                        pieces = splice(line) if splice is not None else None
                        for p in pieces or (line,):
                            out.write(p)
                    out.flush()
                    lock.release()
                    holding = False
                    held = 0
                    done(line)
                    continue
                if not holding:
                    held += len(piece)
                    if held < CHUNK:
                        continue  # a short line so far: held whole (a stand-in is found whole)
                    lock.acquire()
                    holding = True
                    for p in parts:
                        out.write(p)
                else:
                    out.write(piece)
            if holding:
                out.flush()  # the part of a long line written so far goes on now
    finally:
        if holding:
            lock.release()
        os.close(src_fd)
    if parts:  # a last line without its newline
        if not holding:
            with lock:
                for p in parts:
                    out.write(p)
                out.flush()
        done(b"".join(parts))


@contextmanager
def guarded_stdio() -> Iterator[None]:
    """Put the bounds between this process's real stdin/stdout and whatever serves fds 0/1
    inside the block (the SDK's stdio server): good lines go through, a refused line is
    answered with its error line, written between whole output lines."""
    sys.stdout.flush()
    real_in = os.fdopen(os.dup(0), "rb")
    real_out_fd = os.dup(1)
    real_out = os.fdopen(os.dup(real_out_fd), "wb")
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    for fd in (out_w, real_out_fd):
        _widen(fd)
    os.dup2(in_r, 0)
    os.dup2(out_w, 1)
    os.close(in_r)
    os.close(out_w)
    sys.stdin = io.TextIOWrapper(os.fdopen(0, "rb", closefd=False), encoding="utf-8")
    sys.stdout = io.TextIOWrapper(
        os.fdopen(1, "wb", closefd=False), encoding="utf-8", line_buffering=True
    )
    lock = threading.Lock()
    pending: set[Any] = set()  # ids of requests passed on and not answered yet
    parent = os.getppid()
    answered = threading.Condition()

    def emit(data: bytes) -> None:
        with lock:
            real_out.write(data)
            real_out.flush()

    def pump_in() -> None:
        try:
            for item in bounded_lines(real_in):
                answer = check(item)
                if answer is not None:
                    emit(answer)
                    continue
                rid = _request_key(item)
                gone = _cancelled_key(item) if rid is None else None
                if rid is not None or gone is not None:
                    with answered:
                        if rid is not None:
                            pending.add(rid)
                        else:  # a cancelled request may never be answered
                            pending.discard(gone)
                        ACTIVITY.set_in_flight(len(pending))
                data = item if item.endswith(b"\n") else item + b"\n"
                view = memoryview(data)
                while view:
                    view = view[os.write(in_w, view) :]
            # end of input: the SDK would cancel what is still running; a client that wrote
            # its requests and closed stdin gets every answer first (as a pipe expects)
            # (a client that went away, its process gone, is not waited for: its pass stops)
            deadline = time.monotonic() + DRAIN_SECONDS
            with answered:
                while pending and os.getppid() == parent and time.monotonic() < deadline:
                    answered.wait(0.2)
        except OSError:  # the server went away
            pass
        finally:
            os.close(in_w)

    def answer_out(line: bytes) -> None:
        rid = _response_key(line)
        if rid is not None:
            with answered:
                pending.discard(rid)
                ACTIVITY.set_in_flight(len(pending))
                answered.notify_all()

    def pump_out() -> None:
        forward_lines(out_r, real_out, lock, answer_out, splice.splice)
        with answered:  # the server is gone: nothing more will be answered
            pending.clear()
            ACTIVITY.set_in_flight(0)
            answered.notify_all()

    threads = [
        threading.Thread(target=f, daemon=True, name=f"kbtool-mcp-{f.__name__}")
        for f in (pump_in, pump_out)
    ]
    for t in threads:
        t.start()
    splice.ACTIVE.set()  # big answers go out as stand-ins this guard writes (kbtool.mcp.splice)
    try:
        yield
    finally:
        splice.ACTIVE.clear()
        sys.stdout.flush()
        os.dup2(real_out_fd, 1)  # our end of the output pipe closes: pump_out sees its end
        threads[1].join(timeout=2)
