"""Bounded reading of the files a user hands to kbtool (``ingest``, ``--js``, ``oracle add``,
``import-names``): never more than a documented maximum per kind, read in chunks, so an
endless or huge input (``/dev/zero``, a FIFO, a 3 GB file) is one clear error instead of a
MemoryError.

| kind    | default maximum | environment variable       |
|---------|-----------------|----------------------------|
| `wasm`  | 1 GiB           | `KBTOOL_MAX_WASM_BYTES`    |
| `js`    | 256 MiB         | `KBTOOL_MAX_JS_BYTES`      |
| `names` | 256 MiB         | `KBTOOL_MAX_NAMES_BYTES`   |

A regular file larger than its maximum is refused before anything is read. A stream (a
character device, a FIFO, ``/dev/stdin``) is read up to the maximum; a stream that is not a
module (``wasm``: no ``\\0asm`` header) or not text (``js``/``names``: NUL bytes) is refused
at its first chunk.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from kbtool.kb.errors import KBError

CHUNK = 1 << 20
LIMITS = {
    "wasm": ("KBTOOL_MAX_WASM_BYTES", 1 << 30, "WebAssembly module"),
    "js": ("KBTOOL_MAX_JS_BYTES", 256 << 20, "JavaScript file"),
    "names": ("KBTOOL_MAX_NAMES_BYTES", 256 << 20, "names file"),
}
WASM_MAGIC = b"\x00asm"


class InputError(KBError):
    """An input file that cannot be read within its limits (one-line message)."""


def max_bytes(kind: str) -> int:
    """The maximum size of an input of ``kind`` (its environment variable, else the default)."""
    env, default, _ = LIMITS[kind]
    raw = os.environ.get(env, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise InputError(f"{env} must be a number of bytes, not {raw!r}") from None
    if value < 1:
        raise InputError(f"{env} must be at least 1, not {value}")
    return value


def _size_text(n: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n} bytes"


def _too_big(p: Path, kind: str, limit: int) -> InputError:
    env, _, what = LIMITS[kind]
    return InputError(
        f"{p}: larger than the {_size_text(limit)} maximum for a {what} (set {env} to raise it)"
    )


def read_input(path: str | Path, kind: str) -> bytes:
    """The bytes of ``path``, at most :func:`max_bytes` ``(kind)``; :class:`InputError`
    (one line) for a missing file, a directory, an oversized file or a stream that is
    not of its kind."""
    p = Path(path)
    limit = max_bytes(kind)
    what = LIMITS[kind][2]
    try:
        st = os.stat(p)
    except FileNotFoundError:
        raise InputError(f"no such file: {p}") from None
    except OSError as exc:
        raise InputError(f"cannot read {p}: {exc.strerror or exc}") from None
    if stat.S_ISDIR(st.st_mode):
        raise InputError(f"{p} is a directory, not a {what}")
    regular = stat.S_ISREG(st.st_mode)
    if regular and st.st_size > limit:
        raise _too_big(p, kind, limit)
    chunks: list[bytes] = []
    total = 0
    try:
        with open(p, "rb") as fh:
            while True:
                chunk = fh.read(min(CHUNK, limit + 1 - total))
                if not chunk:
                    break
                if not regular and not chunks:
                    _check_stream_head(p, kind, chunk)
                chunks.append(chunk)
                total += len(chunk)
                if total > limit:
                    raise _too_big(p, kind, limit)
    except OSError as exc:
        raise InputError(f"cannot read {p}: {exc.strerror or exc}") from None
    return b"".join(chunks)


def _check_stream_head(p: Path, kind: str, chunk: bytes) -> None:
    if kind == "wasm":
        if not WASM_MAGIC.startswith(chunk[:4]):
            raise InputError(f"{p}: not a WebAssembly module (no \\0asm header)")
    elif b"\x00" in chunk:
        raise InputError(f"{p}: binary data (NUL bytes), not a {LIMITS[kind][2]}")


def read_text_input(path: str | Path, kind: str, *, errors: str = "strict") -> str:
    """:func:`read_input` decoded as UTF-8 (``errors`` as for :meth:`bytes.decode`); a
    file that is not UTF-8 is an :class:`InputError`."""
    data = read_input(path, kind)
    try:
        return data.decode("utf-8", errors=errors)
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{path}: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})"
        ) from None
