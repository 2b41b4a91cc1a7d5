"""A big answer's text written by kbtool's stdio guard, not serialized again by the SDK.

The MCP SDK's server writes each tool answer as one JSON-RPC line, serializing the answer's
text as a JSON string (pydantic: ~40 ms for ffmpeg's 5.7 MB whole ``get_diff``, plus copies
for the line, its encoding and the pipe) before the first byte leaves; the client waits for
all of it. Here, while :func:`kbtool.mcp.linebound.guarded_stdio` serves (:data:`ACTIVE`), a
tool's ASCII answer of :data:`SPLICE_FROM` bytes or more goes to the SDK as a short stand-in
(``kbtool-splice-<nonce>-<n>``, the nonce random per process, never shown to a client), and
the guard, forwarding the SDK's (short) line, writes the answer's JSON string literal in its
place (:func:`splice`): the bytes pydantic would have written (orjson escapes the same
characters the same way; tested), made once per kept answer (a warm whole ``get_diff`` is
the same text object: its literal is kept, :data:`KEPT` of them).

A stand-in is spliced once, then forgotten. Stand-ins the SDK never writes (a cancelled
call) are kept up to :data:`MAX_PENDING_BYTES` in all; past that the answer goes to the SDK
as it is. Outside the guard (tests, in-memory sessions) every answer goes as it is.
"""

from __future__ import annotations

import itertools
import os
import secrets
import threading
from collections import OrderedDict

__all__ = ["ACTIVE", "SPLICE_FROM", "literal", "splice", "stand_in"]


def _env_bytes(name: str, default: int) -> int:
    try:
        value = int(os.environ.get(name, ""))
    except ValueError:
        return default
    return value if value > 0 else default


#: answers this long (characters, all ASCII) or longer are spliced; ``KBTOOL_MCP_SPLICE_FROM``
SPLICE_FROM = _env_bytes("KBTOOL_MCP_SPLICE_FROM", 1 << 20)
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
    for an ASCII text: ``"`` and ``\\`` escaped, ``\\b \\t \\n \\f \\r``, other controls as
    ``\\u00xx``, DEL as is."""
    try:
        import orjson
    except ImportError:  # pragma: no cover - orjson is a dependency
        import json

        out = json.dumps(text, ensure_ascii=False)  # same escapes but upper-case hex
        return _lower_hex(out).encode()
    return orjson.dumps(text)


def _lower_hex(out: str) -> str:  # pragma: no cover - orjson is a dependency
    import re

    return re.sub(r"\\u00([0-9A-F]{2})", lambda m: "\\u00" + m.group(1).lower(), out)


def stand_in(text: str) -> str:
    """What the SDK should send for ``text``: ``text`` itself, or a stand-in the guard
    replaces by ``text``'s literal (a big ASCII answer while the guard serves)."""
    if len(text) < SPLICE_FROM or not text.isascii() or not ACTIVE.is_set():
        return text
    with _LOCK:
        kept = _KEPT.get(id(text))
        if kept is not None and kept[0] is text:
            _KEPT.move_to_end(id(text))
            lit = kept[1]
        else:
            lit = b""
        if sum(map(len, _PENDING.values())) + len(lit or text) > MAX_PENDING_BYTES:
            return text
    if not lit:
        lit = literal(text)  # outside the lock: ~20 ms for 5.7 MB
        with _LOCK:
            _KEPT[id(text)] = (text, lit)
            while len(_KEPT) > KEPT:
                _KEPT.popitem(last=False)
    token = f"{_MARK}{next(_COUNT)}"
    with _LOCK:
        _PENDING[b'"' + token.encode() + b'"'] = lit
    return token


def splice(line: bytes) -> list[bytes] | None:
    """``line`` (a whole short line the SDK wrote) as pieces with its stand-ins replaced by
    their answers' literals, or None when it holds none."""
    if _MARK_BYTES not in line:
        return None
    out: list[bytes] = []
    start = 0
    while True:
        at = line.find(b'"' + _MARK_BYTES, start)
        if at < 0:
            break
        end = line.find(b'"', at + 1) + 1
        with _LOCK:
            lit = _PENDING.pop(line[at:end], None)
        if lit is None or end <= 0:  # not one of ours (or already written): as it is
            out.append(line[start : end if end > 0 else len(line)])
            start = end if end > 0 else len(line)
            continue
        out += (line[start:at], lit)
        start = end
    out.append(line[start:])
    return out
