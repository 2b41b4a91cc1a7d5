"""A whole diff report's answer, kept already encoded beside the kept report (issue 30).

The MCP server's whole ``get_diff`` answer is the report's JSON text as
:func:`kbtool.services.json_answer.as_json` writes it (5.7 MB on ffmpeg, all ASCII). A new
process used to read the kept report (``orjson.loads``, ~35 ms), import the diff modules and
encode it again (~30 ms) before writing it. Here that text is kept on disk with the other
kept files of the pair (:mod:`kbtool.services.diff.disk`), named by the same key as the
report (KB file, both versions, content, the stored report's stamp, both modules' SHA-256,
``DISK_FORMAT``, ``TRIAGE_RULES``) plus the encoder's form (:func:`json_answer.form`), with
the fingerprint of the two versions' annotations it was built under in its first line: a
rename, or any other annotation write of the two versions, misses it exactly as it misses a
kept report, and the answer is made again from the report and kept again.

File: one JSON header line ``{"format", "form", "annotations"}`` then the text as a JSON
string literal (:func:`json_answer.string_literal`; ASCII for a big answer): what the MCP
server's stdio guard writes into the answer line (:mod:`kbtool.mcp.splice`), so a new
process writes the file's bytes without decoding or escaping them (the text is decoded
only where it is asked for: :class:`json_answer.Encoded`). Written by the preparation
(:mod:`kbtool.services.diff.warm`) and by the first answer of a pair (where a report is kept today: the disk cache, never the KB); never
for an answer made while a stored report's triage is pending; never when the KB moved while
it was made. The last two texts are also kept in memory (a warm call is a dict hit).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import orjson

from kbtool.kb import queries

if TYPE_CHECKING:
    from kbtool.services.diff.cache import DiffCache
    from kbtool.services.json_answer import Encoded

__all__ = ["ANSWER_FORMAT", "MAX_TEXTS", "text_key", "whole_answer", "whole_text"]

ANSWER_FORMAT = 2  # the kept answer file's shape (header line, then the text's literal)
MAX_TEXTS = 2  # whole answers kept in memory per cache (5.7 MB each on ffmpeg)


def text_key(report_key: tuple, form: str) -> tuple:
    """The disk key of the answer of ``report_key`` in ``form`` (without the annotations:
    they are in the file's header)."""
    return report_key[:3] + ("text", f"{form}/{ANSWER_FORMAT}") + report_key[4:6]


def whole_text(
    cache: DiffCache,
    conn: sqlite3.Connection,
    a: int,
    b: int,
    encode: Callable[[dict[str, Any]], str] | None = None,
) -> str:
    """The whole report of ``a`` -> ``b`` as ``encode`` writes it (default
    :func:`json_answer.as_json`, the MCP server's answer): :func:`whole_answer`'s text."""
    return whole_answer(cache, conn, a, b, encode).text()


def whole_answer(
    cache: DiffCache,
    conn: sqlite3.Connection,
    a: int,
    b: int,
    encode: Callable[[dict[str, Any]], str] | None = None,
) -> Encoded:
    """The whole report of ``a`` -> ``b`` as ``encode`` writes it, with its literal: from
    memory, else the kept file, else encoded from :meth:`DiffCache.report` and kept."""
    from kbtool.services import json_answer

    form = json_answer.form()
    key = cache._key(conn, a, b, "report")
    with cache._lock:
        kept = cache.texts.get((key, form))
        if kept is not None:
            cache.texts.move_to_end((key, form))
            cache.hits += 1
            return kept
    modules = tuple(queries.version_info(conn, v).get("sha256") for v in (a, b))
    literal = _read(cache, text_key(key, form), modules, form, key[6])
    if literal is not None:
        cache.texts_read += 1
        kept = json_answer.Encoded(literal=literal)
        _remember(cache, (key, form), kept)
        return kept
    report = cache.report(conn, a, b)
    kept = json_answer.Encoded((encode or json_answer.as_json)(report))
    if report.get("triage_pending") or cache._key(conn, a, b, "report") != key:
        return kept  # not final, or the KB moved while it was made: not kept
    _remember(cache, (key, form), kept)
    header = {"format": ANSWER_FORMAT, "form": form, "annotations": key[6]}
    cache.disk.put_bytes(
        text_key(key, form), modules, orjson.dumps(header) + b"\n" + kept.literal()
    )
    return kept


def kept_text(cache: DiffCache, report_key: tuple, modules: tuple) -> bool:
    """A whole answer of the pair is kept on disk in today's form (under any annotations:
    the first read after a rename keeps it again, as a stored pair's whole report)."""
    from kbtool.services import json_answer

    return cache.disk.has(text_key(report_key, json_answer.form()), modules)


def _read(
    cache: DiffCache, key: tuple, modules: tuple, form: str, annotations: str
) -> bytes | None:
    """The kept literal of ``key``, or None (missing, or of another format, form or
    annotations)."""
    raw = cache.disk.get_bytes(key, modules)
    if raw is None:
        return None
    end = raw.find(b"\n")
    try:
        header = orjson.loads(raw[:end]) if end > 0 else None
    except orjson.JSONDecodeError:
        return None
    if (
        not isinstance(header, dict)
        or header.get("format") != ANSWER_FORMAT
        or header.get("form") != form
        or header.get("annotations") != annotations
    ):
        return None
    literal = raw[end + 1 :]
    if not (literal.startswith(b'"') and literal.endswith(b'"')):
        return None  # cut short: made again
    return literal


def _remember(cache: DiffCache, key: tuple, text: Encoded) -> None:
    with cache._lock:
        stale = [k for k in cache.texts if k[0][:4] == key[0][:4] and k != key]
        for k in stale:  # the same question under an older key: the KB moved on
            del cache.texts[k]
        cache.texts[key] = text
        cache.texts.move_to_end(key)
        while len(cache.texts) > MAX_TEXTS:
            cache.texts.popitem(last=False)
