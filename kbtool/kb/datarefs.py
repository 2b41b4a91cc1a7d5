"""A version's data references stored as packed columns (schema 10; issue 30 point 4).

A reference is ``(func_index, offset, kind, target_kind, target, width)`` (the data model's
row tuple). ffmpeg has 382k of them: as one SQLite row each, plus an index on the target
and one on the function, they cost more CPU to store than the rest of the data model's
SQL; packed into a few hundred blobs they cost a fraction (see docs/DECISIONS.md).

- ``data_ref_chunks``: the references in (function, offset) order (ties keep the order
  given), :data:`CHUNK` per row: chunk ``c`` holds positions ``[c * CHUNK, ...)``. Columns
  ``func_index``, ``offset``, ``key``, ``kind`` (a code of :data:`KINDS`), ``width``, where
  ``key = target * 4 + code of target_kind`` (:data:`TARGET_KINDS`). ``lo_func``/``hi_func``
  (the first and last function in it) find a function's references.
- ``data_ref_targets``: the same references sorted by key, stable (one target's references
  stay in position order, that is (function, offset) order), :data:`CHUNK` per row: columns
  ``key`` and ``pos`` (the position in ``data_ref_chunks``). ``lo_key``/``hi_key`` find a
  target's (or a range of targets') references.

A blob is ``[n columns][one array typecode per column][each column, little-endian]``; a
column takes the narrowest of its typecodes that holds every value (built in C by
:mod:`array`, no per-row Python). Readers return the row tuples, as written.
"""

from __future__ import annotations

import sqlite3
import sys
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Iterator
from itertools import compress, groupby, islice, repeat
from operator import add, and_, eq, itemgetter, le, mul

from kbtool.wasm.kept import keep_also

Ref = tuple[int, int, str, str, int, int]

#: references per stored row (both tables)
CHUNK = 1024
#: the kinds a reference has (codes are the positions: stored, never reordered)
KINDS = (
    "load",
    "store",
    "addr",
    "funcptr",
    "gostring",
    "via_header",
    "read",
    "write",
    "call_indirect",
)
#: what a reference points at (codes as :data:`KINDS`; at most 4: two bits of the key)
TARGET_KINDS = ("data", "global", "table")
_KIND = {k: i for i, k in enumerate(KINDS)}
_TARGET_KIND = {k: i for i, k in enumerate(TARGET_KINDS)}
_BIG_ENDIAN = sys.byteorder == "big"


# --------------------------------------------------------------------------- packing


def _column(values: Callable[[], Iterable[int]], typecodes: str) -> array:
    """``values()`` as an array of the first of ``typecodes`` that holds them all."""
    for tc in typecodes:
        try:
            return array(tc, values())
        except OverflowError:
            continue
    raise ValueError("a data reference value does not fit in 64 bits")


def _codes(names: Iterable[str], table: dict[str, int], what: str) -> array:
    """The codes of ``names`` in ``table``, as bytes (built in C)."""
    try:
        return array("B", bytes(map(table.__getitem__, names)))
    except KeyError as exc:
        raise ValueError(f"unknown data reference {what} {exc.args[0]!r}") from None


def _blob(cols: tuple[array, ...], k: int, e: int) -> bytes:
    parts = [bytes([len(cols)]), "".join(c.typecode for c in cols).encode()]
    for c in cols:
        part = c[k:e]
        if _BIG_ENDIAN:
            part.byteswap()
        parts.append(part.tobytes())
    return b"".join(parts)


def _unblob(blob: bytes) -> list[array]:
    ncols = blob[0]
    typecodes = blob[1 : 1 + ncols].decode()
    body = memoryview(blob)[1 + ncols :]
    n = len(body) // sum(array(tc).itemsize for tc in typecodes)
    out, at = [], 0
    for tc in typecodes:
        col = array(tc)
        col.frombytes(body[at : at + n * col.itemsize])
        at += n * col.itemsize
        if _BIG_ENDIAN:
            col.byteswap()
        out.append(col)
    return out


def _ascending(xs: list[int]) -> bool:
    """Whether ``xs`` never goes down (each pair compared once, no sorted copy: ffmpeg's
    382k functions of references in ~8 ms, ``xs == sorted(xs)`` ~16 ms)."""
    return all(map(le, xs, islice(xs, 1, None)))


def by_function_and_offset(rows: list[Ref]) -> list[Ref]:
    """``rows`` sorted by (function, offset), stable (a tie keeps the scan's order).

    Sorted on the offset (an int key, no key tuple per row: ~4x faster on ffmpeg's 382k
    rows): a body's references are file offsets inside it and the code section holds the
    bodies in function-index order, so the offset orders the functions too (checked: the
    functions then run upwards, else the general key sorts). References from data
    (function -1, Go string headers: offsets in the data section, after the code) end up
    last and are moved first, where (function, offset) puts them."""
    rows.sort(key=itemgetter(1))
    funcs = list(map(itemgetter(0), rows))
    if _ascending(funcs):
        return rows
    k = len(funcs)
    while k and funcs[k - 1] < 0:
        k -= 1
    head, tail = funcs[:k], funcs[k:]
    if tail and head and min(tail) == max(tail) < head[0] and _ascending(head):
        return rows[k:] + rows[:k]
    rows.sort(key=itemgetter(0, 1))
    return rows


#: a compiled pass giving :func:`pack` its columns (the data walk's twin,
#: ``kbtool.analysis.datawalk.columns.ref_columns``, passed in by the services: the KB
#: imports no analysis): ``columns(rows, kind codes, target kind codes, 4)`` -> functions,
#: offsets, keys, kinds, widths, keys sorted (stable), their positions, each as
#: ``(typecode, little-endian bytes)`` with the typecodes :func:`pack` would choose; the
#: rows may come in any order: the columns are those of :func:`by_function_and_offset`'s
#: order (a native stable sort in the pass)
Columns = Callable[..., list[tuple[str, bytes]]]


def _from_le(typecode: str, raw: bytes) -> array:
    col = array(typecode)
    col.frombytes(raw)
    if _BIG_ENDIAN:
        col.byteswap()
    return col


def _compiled_columns(rows: list[Ref], columns: Columns) -> tuple[array, ...] | None:
    """:func:`pack`'s seven arrays by ``columns``, or None when it declines (a kind it does
    not know, a value past its range, another typecode's size here): the pure passes then
    run (and say what is wrong)."""
    try:
        got = columns(rows, _KIND, _TARGET_KIND, 4)
    except (KeyError, OverflowError, TypeError, ValueError):  # (mypyc: ValueError past i64)
        return None
    sizes = {"B": 1, "i": 4, "I": 4, "q": 8}
    if any(array(tc).itemsize != sizes.get(tc) for tc, _ in got):
        return None
    return tuple(_from_le(tc, raw) for tc, raw in got)


def pack(rows: list[Ref], columns: Columns | None = None) -> tuple[list[tuple], list[tuple]]:
    """The ``data_ref_chunks`` and ``data_ref_targets`` rows (without the version) of
    ``rows``, already in (function, offset) order: ``(chunk, n, lo_func, hi_func, blob)``
    and ``(chunk, n, lo_key, hi_key, blob)``. ``columns``: a compiled pass for the columns
    (:data:`Columns`: the same rows, ~6x less CPU than the passes here)."""
    n = len(rows)
    if not n:
        return [], []
    got = _compiled_columns(rows, columns) if columns is not None else None
    return _pack_columns(rows, got)


def pack_any_order(
    rows: list[Ref], columns: Columns | None = None
) -> tuple[list[tuple], list[tuple]]:
    """:func:`pack` of :func:`by_function_and_offset` of ``rows`` (left as they are: the
    caller's list needs no copy): with ``columns``, the compiled pass sorts (no sort of the
    tuples here, ~30 ms on ffmpeg's 382k references); when it declines, a copy of the rows
    is sorted and packed here."""
    got = _compiled_columns(rows, columns) if columns is not None and rows else None
    if got is not None:
        return _pack_columns(rows, got)
    return pack(by_function_and_offset(list(rows)))


def _pack_columns(
    rows: list[Ref], got: tuple[array, ...] | None
) -> tuple[list[tuple], list[tuple]]:
    """:func:`pack`'s rows from the compiled pass's arrays ``got``, or (None) from the
    store's own passes over ``rows`` (in (function, offset) order)."""
    n = len(rows)
    if got is not None:
        funcs, offsets, keys, kinds, widths, key_list, positions = got
    else:
        funcs = _column(lambda: map(itemgetter(0), rows), "iq")
        offsets = _column(lambda: map(itemgetter(1), rows), "iq")
        kinds = _codes(map(itemgetter(2), rows), _KIND, "kind")
        key_list = list(
            map(
                add,
                map(mul, map(itemgetter(4), rows), repeat(4)),
                _codes(map(itemgetter(3), rows), _TARGET_KIND, "target kind"),
            )
        )
        keys = _column(lambda: key_list, "iq")
        try:
            widths = array("B", bytes(map(itemgetter(5), rows)))
        except ValueError:  # (a width over 255: bytes() refuses it)
            widths = _column(lambda: map(itemgetter(5), rows), "iq")
        # by target: positions sorted on the key (stable: a target's in position order)
        positions = _column(lambda: sorted(range(n), key=key_list.__getitem__), "Iq")
        key_list.sort()
    cols = (funcs, offsets, keys, kinds, widths)
    chunks = [
        (
            k // CHUNK,
            min(CHUNK, n - k),
            funcs[k],
            funcs[min(k + CHUNK, n) - 1],
            _blob(cols, k, k + CHUNK),
        )
        for k in range(0, n, CHUNK)
    ]
    by_key = (array(keys.typecode, key_list), positions)
    targets = [
        (
            k // CHUNK,
            min(CHUNK, n - k),
            key_list[k],
            key_list[min(k + CHUNK, n) - 1],
            _blob(by_key, k, k + CHUNK),
        )
        for k in range(0, n, CHUNK)
    ]
    return chunks, targets


# --------------------------------------------------------------------------- writes


def write(
    conn: sqlite3.Connection, version_id: int, rows: list[Ref], columns: Columns | None = None
) -> None:
    """Store ``rows`` as the references of ``version_id`` (which has none stored), in the
    caller's transaction; ``rows`` is not changed (in any order: sorted here by (function,
    offset), stable). ``columns``: as :func:`pack_any_order`."""
    chunks, targets = pack_any_order(rows, columns)
    keep_also(chunks, targets)  # (a process ending after: never freed; kbtool.wasm.kept)
    vid = int(version_id)
    conn.executemany(
        "INSERT INTO data_ref_chunks(version_id, chunk, n, lo_func, hi_func, cols)"
        f" VALUES ({vid:d},?,?,?,?,?)",  # noqa: S608
        chunks,
    )
    conn.executemany(
        "INSERT INTO data_ref_targets(version_id, chunk, n, lo_key, hi_key, cols)"
        f" VALUES ({vid:d},?,?,?,?,?)",  # noqa: S608
        targets,
    )


# --------------------------------------------------------------------------- reads


def count(conn: sqlite3.Connection, version_id: int) -> int:
    row = conn.execute(
        "SELECT coalesce(sum(n), 0) FROM data_ref_chunks WHERE version_id = ?", (version_id,)
    ).fetchone()
    return int(row[0])


def _rows(cols: list[array], a: int, b: int) -> list[Ref]:
    funcs, offsets, keys, kinds, widths = cols
    return [
        (funcs[i], offsets[i], KINDS[kinds[i]], TARGET_KINDS[keys[i] & 3], keys[i] >> 2, widths[i])
        for i in range(a, b)
    ]


def rows_at(conn: sqlite3.Connection, version_id: int, positions: Iterable[int]) -> list[Ref]:
    """The references at ``positions`` (ascending), in that order."""
    out: list[Ref] = []
    for chunk, group in groupby(positions, key=lambda p: p // CHUNK):
        row = conn.execute(
            "SELECT cols FROM data_ref_chunks WHERE version_id = ? AND chunk = ?",
            (version_id, chunk),
        ).fetchone()
        funcs, offsets, keys, kinds, widths = _unblob(row[0])
        for p in group:
            i = p - chunk * CHUNK
            key = keys[i]
            out.append(
                (funcs[i], offsets[i], KINDS[kinds[i]], TARGET_KINDS[key & 3], key >> 2, widths[i])
            )
    return out


def _blobs(
    conn: sqlite3.Connection, table: str, col: str, version_id: int, lo: int, hi: int
) -> Iterator[bytes]:
    """The blobs of ``table`` whose ``lo_<col>..hi_<col>`` meets ``[lo, hi]``, in chunk
    order: the chunks from the (covering) index, then each blob by its key (a scan of the
    table would read every blob's first part)."""
    chunks = sorted(
        r[0]
        for r in conn.execute(
            f"SELECT chunk FROM {table} WHERE version_id = ? AND hi_{col} >= ? AND lo_{col} <= ?",  # noqa: S608
            (version_id, lo, hi),
        )
    )
    for chunk in chunks:
        row = conn.execute(
            f"SELECT cols FROM {table} WHERE version_id = ? AND chunk = ?",  # noqa: S608
            (version_id, chunk),
        ).fetchone()
        yield row[0]


def positions_to(
    conn: sqlite3.Connection, version_id: int, target_kind: str, lo: int, hi: int | None
) -> list[int]:
    """Positions of the references to ``target`` ``lo`` (``hi`` None: in position order)
    or to any target in ``[lo, hi)`` (ascending positions)."""
    code = _TARGET_KIND.get(target_kind)
    if code is None or (hi is not None and hi <= lo):
        return []
    first = lo * 4 + code
    last = first if hi is None else (hi - 1) * 4 + code
    out: list[int] = []
    pairs: list[tuple[int, int]] = []  # (position, key) of a range's references
    for blob in _blobs(conn, "data_ref_targets", "key", version_id, first, last):
        keys, pos = _unblob(blob)
        a, b = bisect_left(keys, first), bisect_right(keys, last)
        if hi is None:
            out.extend(pos[a:b])
        else:
            ks = keys[a:b]
            mine = map(eq, map(and_, ks, repeat(3)), repeat(code))  # (the range's kind only)
            pairs.extend(compress(zip(pos[a:b], ks, strict=True), mine))
    if hi is None:
        return out
    pairs.sort()
    return _ties_by_target(conn, version_id, pairs)


def _ties_by_target(
    conn: sqlite3.Connection, version_id: int, pairs: list[tuple[int, int]]
) -> list[int]:
    """The positions of ``pairs`` (ascending ``(position, key)``) with the references of one
    instruction (same function and offset: neighbouring positions, as a Go header's
    ``addr`` and ``via_header``) in target order, as the range's SQL ordered them. Only a
    run of neighbouring positions whose targets differ can hold such a tie: only those
    runs' functions and offsets are read."""
    out = [p for p, _ in pairs]
    n = len(pairs)
    runs: list[tuple[int, int]] = []
    for i in range(1, n):
        if pairs[i][0] != pairs[i - 1][0] + 1 or pairs[i][1] == pairs[i - 1][1]:
            continue
        if runs and i < runs[-1][1]:
            continue  # (inside the run found last)
        a, b = i - 1, i + 1
        while a > 0 and pairs[a][0] == pairs[a - 1][0] + 1:
            a -= 1
        while b < n and pairs[b][0] == pairs[b - 1][0] + 1:
            b += 1
        runs.append((a, b))
    if not runs:
        return out
    at = [i for a, b in runs for i in range(a, b)]
    where = dict(zip(at, _functions_offsets(conn, version_id, [out[i] for i in at]), strict=True))
    for a, b in runs:
        # (function, offset) runs upwards with the position: by it, then target, position
        run = sorted(range(a, b), key=lambda i: (where[i], pairs[i][1], pairs[i][0]))
        out[a:b] = [pairs[i][0] for i in run]
    return out


def _functions_offsets(
    conn: sqlite3.Connection, version_id: int, positions: list[int]
) -> list[tuple[int, int]]:
    """(function, offset) of each of ``positions`` (ascending)."""
    out: list[tuple[int, int]] = []
    for chunk, group in groupby(positions, key=lambda p: p // CHUNK):
        row = conn.execute(
            "SELECT cols FROM data_ref_chunks WHERE version_id = ? AND chunk = ?",
            (version_id, chunk),
        ).fetchone()
        funcs, offsets = _unblob(row[0])[:2]
        out.extend((funcs[p - chunk * CHUNK], offsets[p - chunk * CHUNK]) for p in group)
    return out


def from_function(
    conn: sqlite3.Connection, version_id: int, func_index: int, limit: int
) -> list[Ref]:
    """What ``func_index`` references, by offset (the stored order), at most ``limit``."""
    out: list[Ref] = []
    for blob in _blobs(conn, "data_ref_chunks", "func", version_id, func_index, func_index):
        cols = _unblob(blob)
        a, b = bisect_left(cols[0], func_index), bisect_right(cols[0], func_index)
        out.extend(_rows(cols, a, min(b, a + max(0, limit - len(out)))))
        if len(out) >= limit:
            break
    return out


def all_refs(conn: sqlite3.Connection, version_id: int) -> list[Ref]:
    """Every reference of ``version_id`` in position ((function, offset)) order."""
    out: list[Ref] = []
    for (blob,) in conn.execute(
        "SELECT cols FROM data_ref_chunks WHERE version_id = ? ORDER BY chunk", (version_id,)
    ):
        cols = _unblob(blob)
        out.extend(_rows(cols, 0, len(cols[0])))
    return out


def all_by_target(conn: sqlite3.Connection, version_id: int) -> list[Ref]:
    """Every reference of ``version_id`` as the target side stores them: by (target, target
    kind), a target's in position order (what :func:`positions_to` pages)."""
    positions: list[int] = []
    for (blob,) in conn.execute(
        "SELECT cols FROM data_ref_targets WHERE version_id = ? ORDER BY chunk", (version_id,)
    ):
        positions.extend(_unblob(blob)[1])
    forward = all_refs(conn, version_id)
    return [forward[p] for p in positions]
