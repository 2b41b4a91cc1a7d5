"""A tiny two-release wasm module built here byte by byte, ingested into a KB, for the code views.

Release 1 and 2 of one module (imports ``env.log``; exports ``greet``, ``main``, ``big``):

* ``greet`` (func 1) passes the address of a data string holding ``</script>``, Rich markup
  and ANSI/BEL escapes to ``env.log`` and reads ``*(p + 8)`` (release 2: ``+ 12``);
* ``helper_a``/``helper_b`` (2, 3) compute small things;
* ``main`` (4) calls ``helper_a`` and adds 100 (release 2: calls ``helper_b``, adds 200);
* ``big`` (5) is 10,000 instructions long.

``helper_a`` is also exported under a hostile name (Rich markup and a terminal escape).
"""

from __future__ import annotations

from pathlib import Path

import pytest

HOSTILE_DATA = b"</script><b>x</b>[bold red]markup[/] \x1b[31mRED\x1b[0m\x07bell"
HOSTILE_NAME = "[bold red]pwn[/]\x1b[2Jname"
DATA_ADDR = 1024
ESC_AT = HOSTILE_DATA.index(b"\x1b")
BIG_REPEAT = 2_500  # 4 instructions each: 10,000 instructions


def uleb(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | 0x80 if n else b)
        if not n:
            return bytes(out)


def sleb(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        done = (n == 0 and not b & 0x40) or (n == -1 and b & 0x40)
        out.append(b if done else b | 0x80)
        if done:
            return bytes(out)


def _vec(items: list[bytes]) -> bytes:
    return uleb(len(items)) + b"".join(items)


def _name(s: str) -> bytes:
    b = s.encode()
    return uleb(len(b)) + b


def _sec(sid: int, payload: bytes) -> bytes:
    return bytes([sid]) + uleb(len(payload)) + payload


def i32_const(n: int) -> bytes:
    return b"\x41" + sleb(n)


def _body(code: bytes, locals_: bytes = b"\x00") -> bytes:
    full = locals_ + code + b"\x0b"
    return uleb(len(full)) + full


def build_module(release: int) -> bytes:
    """The module's bytes for release 1 or 2."""
    t_ii = b"\x60\x01\x7f\x01\x7f"  # (i32) -> i32
    types = _sec(1, _vec([t_ii]))
    imports = _sec(2, _vec([_name("env") + _name("log") + b"\x00\x00"]))
    funcs = _sec(3, _vec([b"\x00"] * 5))
    memory = _sec(5, _vec([b"\x00\x01"]))
    exports = _sec(
        7,
        _vec(
            [
                _name("greet") + b"\x00\x01",
                _name("main") + b"\x00\x04",
                _name("big") + b"\x00\x05",
                _name(HOSTILE_NAME) + b"\x00\x02",
                _name("memory") + b"\x02\x00",
            ]
        ),
    )
    load_offset = 8 if release == 1 else 12
    greet = (
        i32_const(DATA_ADDR)
        + b"\x10\x00"  # call env.log
        + i32_const(DATA_ADDR + ESC_AT)
        + b"\x10\x00"
        + b"\x1a"  # log(escapes); drop
        + b"\x20\x00"
        + b"\x28\x02"
        + uleb(load_offset)  # local.get 0; i32.load
        + b"\x6a"
    )  # i32.add
    helper_a = b"\x20\x00" + i32_const(7) + b"\x6c"  # p0 * 7
    helper_b = b"\x20\x00" + i32_const(3) + b"\x6a"  # p0 + 3
    callee, addend = (2, 100) if release == 1 else (3, 200)
    main = b"\x20\x00" + b"\x10" + uleb(callee) + i32_const(addend) + b"\x6a" + b"\x10\x01"
    big = (
        b"".join(
            b"\x20\x00" + i32_const(k % 1000) + b"\x6a" + b"\x21\x00" for k in range(BIG_REPEAT)
        )
        + b"\x20\x00"
    )
    code = _sec(10, _vec([_body(greet), _body(helper_a), _body(helper_b), _body(main), _body(big)]))
    data = _sec(
        11,
        _vec(
            [
                b"\x00"
                + i32_const(DATA_ADDR)
                + b"\x0b"
                + uleb(len(HOSTILE_DATA) + 1)
                + HOSTILE_DATA
                + b"\x00"
            ]
        ),
    )
    return b"\x00asm\x01\x00\x00\x00" + types + imports + funcs + memory + exports + code + data


def build_code_kb(path: Path, *, strip_bytes_of: int | None = None) -> Path:
    """A KB with both releases (version ids 1 and 2).

    ``strip_bytes_of``: delete that version's stored module bytes (the "bytes gone" case)."""
    from kbtool.kb.db import open_rw
    from kbtool.services.ingest import ingest_bytes

    conn = open_rw(path)
    try:
        ingest_bytes(conn, build_module(1), label="app-1")
        ingest_bytes(conn, build_module(2), label="app-2")
        if strip_bytes_of is not None:
            conn.execute("DELETE FROM modules WHERE version_id = ?", (strip_bytes_of,))
            conn.commit()
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    return path


# ---------------------------------------------------------------- pytest fixtures (import them)

_BUILT: dict[str, Path] = {}


def _built(tmp_path_factory, key: str, **kw) -> Path:
    """Built once per session whichever test module asks first (read-only afterwards)."""
    if key not in _BUILT:
        import os

        old = os.environ.get("KBTOOL_FROZEN_TIME")
        os.environ["KBTOOL_FROZEN_TIME"] = "2026-01-15T12:00:00.000000Z"
        try:
            _BUILT[key] = build_code_kb(tmp_path_factory.mktemp("code") / f"{key}.db", **kw)
        finally:
            if old is None:
                os.environ.pop("KBTOOL_FROZEN_TIME", None)
            else:
                os.environ["KBTOOL_FROZEN_TIME"] = old
    return _BUILT[key]


@pytest.fixture(name="code_kb")
def code_kb_fixture(tmp_path_factory) -> Path:
    """The two-release KB (read-only: copy it before writing)."""
    return _built(tmp_path_factory, "code")


@pytest.fixture(name="code_kb_no_bytes")
def code_kb_no_bytes_fixture(tmp_path_factory) -> Path:
    """The same KB without the module bytes of version 2."""
    return _built(tmp_path_factory, "nobytes", strip_bytes_of=2)


@pytest.fixture(name="code_conn")
def code_conn_fixture(code_kb):
    """A read-only connection to the two-release KB, the code caches cleared around it."""
    from kbtool.kb.db import open_ro
    from kbtool.services import code

    code.clear_cache()
    c = open_ro(code_kb)
    yield c
    c.close()
    code.clear_cache()
