"""A big answer's text written by kbtool's stdio guard, not serialized again by the SDK.

The MCP SDK's server writes each tool answer as one JSON-RPC line, serializing the answer's
text as a JSON string (pydantic: ~40 ms for ffmpeg's 5.7 MB whole ``get_diff``, plus copies
for the line, its encoding and the pipe) before the first byte leaves; the client waits for
all of it. Here, while :func:`kbtool.mcp.linebound.guarded_stdio` serves (:data:`ACTIVE`), a
tool's ASCII answer of :data:`SPLICE_FROM` bytes or more goes to the SDK as a short stand-in
(``kbtool-splice-<nonce>-<n>``, the nonce random per process, never shown to a client), and
the guard, forwarding the SDK's (short) line, writes the answer's JSON string literal in its
place (:func:`splice`): the bytes pydantic would have written (orjson escapes the same
characters the same way; tested). A whole diff's literal is kept with its answer, on disk
too (:func:`stand_in_literal`; :mod:`kbtool.services.diff.answer`); any other answer's is
made once per text object (:func:`stand_in`, the last :data:`KEPT` of them).

A stand-in is spliced once, then forgotten. Stand-ins the SDK never writes (a cancelled
call) are kept up to :data:`MAX_PENDING_BYTES` in all; past that the answer goes to the SDK
as it is. Outside the guard (tests, in-memory sessions) every answer goes as it is.
"""

from __future__ import annotations

import itertools
import secrets
import threading
from collections import OrderedDict
from collections.abc import Callable

from kbtool.services.json_answer import env_bytes

__all__ = [
    "ACTIVE",
    "SPLICE_FROM",
    "forget",
    "literal",
    "splice",
    "stand_in",
    "stand_in_literal",
    "wire_bytes",
]


#: answers this long (characters, all ASCII) or longer are spliced; ``KBTOOL_MCP_SPLICE_FROM``
SPLICE_FROM = env_bytes("KBTOOL_MCP_SPLICE_FROM", 1 << 20)
MAX_PENDING_BYTES = 64 << 20  # stand-ins made and not written yet (a cancelled call's)
KEPT = 2  # literals of the last answers (a whole diff asked again is the same text object)

ACTIVE = threading.Event()  # set while guarded_stdio serves: only its lines are spliced
_MARK = f"kbtool-splice-{secrets.token_hex(16)}-"
_MARK_BYTES = _MARK.encode()
_COUNT = itertools.count(1)
_LOCK = threading.Lock()
_PENDING: dict[bytes, bytes] = {}  # b'"<stand-in>"' -> the answer's JSON string literal
_KEPT: OrderedDict[int, tuple[str, bytes]] = OrderedDict()  # id(text) -> (text, literal)


def literal(text: str) -> bytes:
    """``text`` as a JSON string literal (quotes included), as the SDK's pydantic writes it
    for an ASCII text (:func:`kbtool.services.json_answer.string_literal`)."""
    from kbtool.services.json_answer import string_literal

    return string_literal(text)


def stand_in_literal(make: Callable[[], bytes]) -> str | None:
    """A stand-in for the answer whose literal ``make`` gives (a kept whole diff's, read
    from its file: never decoded), or None when it goes to the SDK as text (outside the
    guard, too short, not ASCII, or too many stand-ins pending)."""
    if not ACTIVE.is_set():
        return None
    lit = make()
    if len(lit) < SPLICE_FROM or not lit.isascii():
        return None
    return _pending(lit)


def _pending(lit: bytes) -> str | None:
    """A new stand-in for ``lit``, or None past :data:`MAX_PENDING_BYTES`."""
    token = f"{_MARK}{next(_COUNT)}"
    with _LOCK:
        if sum(map(len, _PENDING.values())) + len(lit) > MAX_PENDING_BYTES:
            return None
        _PENDING[b'"' + token.encode() + b'"'] = lit
    return token


def stand_in(text: str) -> str:
    """What the SDK should send for ``text``: ``text`` itself, or a stand-in the guard
    replaces by ``text``'s literal (a big ASCII answer while the guard serves)."""
    if len(text) < SPLICE_FROM or not text.isascii() or not ACTIVE.is_set():
        return text
    with _LOCK:
        kept = _KEPT.get(id(text))
        if kept is not None and kept[0] is text:
            _KEPT.move_to_end(id(text))
    lit = kept[1] if kept is not None and kept[0] is text else b""
    if not lit:
        lit = literal(text)  # outside the lock: ~20 ms for 5.7 MB
        with _LOCK:
            _KEPT[id(text)] = (text, lit)
            while len(_KEPT) > KEPT:
                _KEPT.popitem(last=False)
    token = _pending(lit)
    return text if token is None else token


def splice(line: bytes) -> list[bytes] | None:
    """``line`` (a whole short line the SDK wrote) as pieces with its stand-ins replaced by
    their answers' literals (each place a stand-in appears), or None when it holds none."""
    if _MARK_BYTES not in line:
        return None
    out: list[bytes] = []
    used: set[bytes] = set()
    start = 0
    while True:
        at = line.find(b'"' + _MARK_BYTES, start)
        if at < 0:
            break
        end = line.find(b'"', at + 1) + 1
        if end <= 0:
            break
        with _LOCK:
            lit = _PENDING.get(line[at:end])
        if lit is None:  # not one of ours (or already written): as it is
            out.append(line[start:end])
        else:
            out += (line[start:at], lit)
            used.add(line[at:end])
        start = end
    out.append(line[start:])
    with _LOCK:
        for token in used:
            _PENDING.pop(token, None)
    return out


def wire_bytes(wire: str) -> int:
    """About how many bytes ``wire`` (what a tool gives the SDK) takes in the SDK's line as a
    JSON string: a stand-in's answer literal exactly, else the text with its quotes,
    backslashes, newlines and tabs escaped (other control characters are rare in answers)."""
    if wire.startswith(_MARK):
        with _LOCK:
            lit = _PENDING.get(b'"' + wire.encode() + b'"')
        if lit is not None:
            return len(lit)
    size = len(wire) if wire.isascii() else len(wire.encode("utf-8", "surrogatepass"))
    escaped = sum(map(wire.count, ('"', "\\", "\n", "\t", "\r")))
    return size + 2 + escaped


def forget(wire: str) -> None:
    """Drop ``wire``'s answer when it is a stand-in the SDK will never write."""
    if wire.startswith(_MARK):
        with _LOCK:
            _PENDING.pop(b'"' + wire.encode() + b'"', None)
