"""One function's code (disassembly records and text, lifted C, windows of lines) and the
whole version's listing or C, with the KB's names.

The disassembly is decoded into records (:func:`kbtool.lift.disasm.disassemble_function`)
and made text by :mod:`kbtool.render.disasm`; what a surface needs beyond the text (the
lines that call a function, the per-function diff) is read from the records.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from typing import Any

from kbtool.kb import queries
from kbtool.kb.errors import KBError
from kbtool.lift import disassemble_module, lift_function, lift_module
from kbtool.lift.disasm import Instr, Listing, disassemble_function
from kbtool.lift.names import annotate_c
from kbtool.render.disasm import (
    head_lines,
    instr_line,
    listing_lines,
    render_error,
    render_listing,
    tail_lines,
)
from kbtool.services import code_kept_c, knowledge
from kbtool.services.code_prepared import (
    _LINES,
    _LOCK,
    _RESULTS,
    CodeModule,
    _one_line,
    code_module,
    store_now,
)
from kbtool.services.code_window import skim, window_lines
from kbtool.wasm import WasmFormatError

_RENDERING: dict[tuple, threading.Lock] = {}  # (module, index, kind) -> held while rendered

HUGE_INSTRUCTIONS = 20_000  # a body this long shows its first screen before the rest
FIRST_SCREEN = 2_000  # instructions in that first screen


def _records(cm: CodeModule, func_index: int, max_lines: int | None = None) -> Listing | str:
    """The function's listing records, or the one-line reason it has none."""
    try:
        if max_lines is None:
            return disassemble_function(cm.lm, func_index)
        return disassemble_function(cm.lm, func_index, max_lines=max_lines)
    except WasmFormatError as exc:
        return _one_line(exc)


def function_code(
    conn: sqlite3.Connection,
    version_id: int,
    func_index: int,
    *,
    max_lines: int | None = None,
    lift: bool = True,
) -> tuple[dict[str, Any], Listing | None]:
    """:func:`disassembly`'s object (not copied: do not change it) and the listing records
    it was rendered from (None for a body that cannot be disassembled).

    ``lift=False`` (with ``max_lines``: a huge function's first screen) does not lift the C:
    unless this process lifted it before or it is kept on disk and still valid
    (:func:`kbtool.services.code_kept_c.kept`), ``lifted_c`` is empty and ``c_pending``
    true; :func:`lifted_c` gives it (kept, so the whole answer after it does not lift the
    function again)."""
    cm = code_module(conn, version_id)
    cm.check(func_index)
    key = (id(cm), func_index)
    with _LOCK:
        hit = _RESULTS.get_item(key)
    if hit is not None and hit[0] is cm:
        return hit[1], hit[2]
    total = body_instructions(conn, version_id, func_index) if max_lines is not None else None
    partial = max_lines is not None and total is not None and total > max_lines
    mnemonics, calls, listing = (
        _first_screen(cm, func_index, max_lines) if partial else _listing(cm, func_index)
    )
    kept = None if lift or not partial else _kept_c(cm, func_index)
    if lift or not partial:
        c = _lifted(cm, func_index, keep=partial)
    elif kept is not None:  # lifted before (this process, or kept on disk): no wait
        c = kept
    else:
        c = ("", False, None)
    if not partial and listing is not None:
        _keep_listing(cm, func_index, mnemonics, calls)
    out = whole_answer(conn, cm, func_index, mnemonics, c, calls, partial=partial)
    if total is not None:
        out["instructions"] = total
    if partial and not lift and kept is None:
        out["c_pending"] = True
    if not partial:
        with _LOCK:
            _RESULTS.put(key, (cm, out, listing))
    return out, listing


def _listing(
    cm: CodeModule, func_index: int, max_lines: int | None = None
) -> tuple[str, list, Listing | None]:
    """The listing's text, its call lines and its records (None: the one-line reason)."""
    listing = _records(cm, func_index, max_lines)
    if isinstance(listing, str):
        return render_error(listing), [], None
    return render_listing(listing), listing_calls(listing), listing


def _first_screen(
    cm: CodeModule, func_index: int, max_lines: int | None
) -> tuple[str, list, Listing | None]:
    """A huge function's first screen (:func:`_listing` of its first ``max_lines``
    instructions), held with the module's results: opened again (back from a callee, the
    TUI's code screen reopened) it is not decoded and rendered again (~20 ms of CPU on
    ffmpeg's largest). Its answer is made again each time (its C may be lifted since)."""
    key = (id(cm), func_index, "first", max_lines)
    with _LOCK:
        hit = _RESULTS.get_item(key)
    if hit is not None and hit[0] is cm:
        return hit[1]
    got = _listing(cm, func_index, max_lines)
    with _LOCK:
        _RESULTS.put(key, (cm, got))
    return got


def whole_answer(
    conn: sqlite3.Connection,
    cm: CodeModule,
    func_index: int,
    mnemonics: str,
    c: tuple[str, bool, str | None],
    calls: list,
    *,
    partial: bool = False,
) -> dict[str, Any]:
    """The Disassembly object of ``func_index`` of ``cm`` (a prepared version, or a fresh
    process's light module: :mod:`kbtool.services.code_first`) for its listing's text and
    call lines and its C (text, truncated, reason)."""
    sid, _imp, _mod, _fld, name, prov = cm.check(func_index)
    lifted, c_truncated, reason = c
    return {
        "mnemonics": mnemonics,
        "lifted_c": lifted,
        "version_id": cm.version_id,
        "func_index": func_index,
        "stable_id": sid,
        "name": name or cm.lm.names.functions.get(func_index),
        "provenance": prov,
        "type": cm.lm.module.func_type(func_index).text(),
        "truncated": c_truncated,
        "reason": reason,
        "call_lines": calls,
        # comments, prototype, line comments, local names with provenance (issue 27)
        "knowledge": knowledge.function_knowledge(conn, sid, cm.version_id) if sid else None,
        "partial": partial,
    }


def _keep_listing(cm: CodeModule, func_index: int, mnemonics: str, calls: list) -> None:
    """Keep a huge function's whole disassembly on disk (:func:`kept_whole` reads it in the
    next process) unless it is kept already."""
    if code_kept_c.wanted(cm, func_index) and code_kept_c.kept_listing(cm, func_index) is None:
        code_kept_c.save_listing(cm.c_key, func_index, mnemonics, calls)


def kept_whole(conn: sqlite3.Connection, cm: CodeModule, func_index: int) -> dict[str, Any] | None:
    """A huge function's Disassembly object from its whole disassembly and C kept on disk
    (:mod:`kbtool.services.code_kept_c`, judged by ``cm.c_key``: the very text a decode and
    a lift give), without decoding or lifting it; None when either is not kept (or is stale).
    Works on a prepared version and on a fresh process's light module alike."""
    got = code_kept_c.kept_listing(cm, func_index)
    if got is None:
        return None
    with _LOCK:
        hit = _RESULTS.get_item((id(cm), func_index, "c"))
    c = hit[1] if hit is not None and hit[0] is cm else code_kept_c.kept(cm, func_index)
    if c is None:
        return None
    return whole_answer(conn, cm, func_index, got[0], c, got[1])


def _kept_c(cm: CodeModule, func_index: int) -> tuple[str, bool, str | None] | None:
    """The function's C when this process lifted it before (see :func:`_lifted`) or it is
    kept on disk and still valid (then held like a lift of this process); never lifts."""
    key = (id(cm), func_index, "c")
    with _LOCK:
        hit = _RESULTS.get_item(key)
    if hit is not None and hit[0] is cm:
        return hit[1]
    c = code_kept_c.kept(cm, func_index)
    if c is not None:
        with _LOCK:
            _RESULTS.put(key, (cm, c))
    return c


def _lifted(cm: CodeModule, func_index: int, *, keep: bool) -> tuple[str, bool, str | None]:
    """The function's C with the KB's names, whether the lifter gave up, and why. ``keep``
    (a partial answer, not cached itself): kept, so the whole answer after a huge function's
    first screen does not lift the function a second time."""
    key = (id(cm), func_index, "c")
    with _LOCK:
        hit = _RESULTS.get_item(key)
    if hit is not None and hit[0] is cm:
        return hit[1]
    c = code_kept_c.lifted(cm, func_index, lambda: _lift(cm, func_index))
    if keep:
        with _LOCK:
            _RESULTS.put(key, (cm, c))
    return c


def _lift(cm: CodeModule, func_index: int) -> tuple[str, bool, str | None]:
    res = lift_function(cm.lm, func_index)
    return annotate_c(res.text, func_index, cm.lm.names), bool(res.truncated), res.reason or None


def lifted_c(
    conn: sqlite3.Connection, version_id: int, func_index: int
) -> tuple[str, bool, str | None]:
    """One function's C with the KB's names, whether the lifter gave up, and why (kept per
    prepared version, as :func:`function_code` keeps it)."""
    cm = code_module(conn, version_id)
    cm.check(func_index)
    return _lifted(cm, func_index, keep=True)


def disassembly(
    conn: sqlite3.Connection, version_id: int, func_index: int, *, max_lines: int | None = None
) -> dict[str, Any]:
    """The contract's Disassembly object: ``mnemonics`` (raw wasm) and ``lifted_c``, plus
    ``version_id``, ``func_index``, ``stable_id``, ``name``, ``provenance``, ``type``,
    ``truncated``, ``reason`` (why the C is a placeholder, else null) and ``call_lines``.

    ``max_lines``: disassemble at most that many instructions (the first screen of a huge
    function, in bounded time and memory); ``partial`` is then true when more remain and
    ``instructions`` says how many there are. A partial answer is not cached.

    A huge function's whole answer, when its disassembly and C are kept on disk and this
    process has not made it, is read from them (:func:`kept_whole`: the same object)."""
    if max_lines is None:
        cm = code_module(conn, version_id)
        with _LOCK:
            hit = _RESULTS.get_item((id(cm), func_index)) or _RESULTS.get_item(
                (id(cm), func_index, "whole")
            )
        if hit is not None and hit[0] is cm:
            return dict(hit[1])
        whole = kept_whole(conn, cm, func_index)
        if whole is not None:
            with _LOCK:
                _RESULTS.put((id(cm), func_index, "whole"), (cm, whole))
            return dict(whole)
    return dict(function_code(conn, version_id, func_index, max_lines=max_lines)[0])


def listing(conn: sqlite3.Connection, version_id: int, func_index: int) -> Listing | None:
    """The function's disassembly records (:class:`kbtool.lift.disasm.Listing`), as
    :func:`disassembly` rendered them; None for a body that cannot be disassembled."""
    return function_code(conn, version_id, func_index)[1]


def listing_calls(listing: Listing) -> list[list[int]]:
    """``[[line, callee index], ...]``: the 1-based lines of the listing that call or
    reference a function (``call``, ``return_call``, ``ref.func``), so a front end can make
    those lines links."""
    first = len(head_lines(listing)) + 1
    return [
        [first + k, ins.ref.index]
        for k, ins in enumerate(listing.instrs)
        if ins.ref is not None and ins.ref.kind == "func"
    ]


def instr_targets(conn: sqlite3.Connection, version_id: int, ins: Instr) -> list[str]:
    """What one instruction refers to, most specific first, as
    :func:`kbtool.services.data.xrefs` targets, read from its record: the callee
    (``#index``), the data item (its label), the global (``g:name``), the string (``"text``,
    the whole string), a memory offset and a constant (hex, when not 0)."""
    out: list[str] = []

    def add(t: str) -> None:
        if t and t not in out:
            out.append(t)

    ref = ins.ref
    if ref is not None and ref.kind == "func":
        add(f"#{ref.index}")
    if ins.data is not None:
        add(ins.data.label)
    if ref is not None and ref.kind == "global":
        add("g:" + (ref.name or str(ref.index)))
    if ins.string is not None:
        s = code_module(conn, version_id).lm.string_at(ins.imms[0] & 0xFFFFFFFF)
        if s:
            add('"' + s)
    mn = ins.mnemonic
    if (".load" in mn or ".store" in mn) and len(ins.imms) >= 2 and ins.imms[1]:
        add(hex(ins.imms[1]))
    if mn in ("i32.const", "i64.const") and ins.imms[0] > 0:
        add(hex(ins.imms[0]))
    return out


def body_instructions(conn: sqlite3.Connection, version_id: int, func_index: int) -> int | None:
    """Instructions in a defined body (stored at ingest), or None when unknown."""
    try:
        n = queries.get_function(conn, version_id, func_index).get("instr_count")
    except KBError:
        return None
    return n if isinstance(n, int) else None


def code_window(
    conn: sqlite3.Connection,
    version_id: int,
    func_index: int,
    *,
    kind: str = "wasm",
    offset: int = 0,
    limit: int = 200,
) -> dict[str, Any]:
    """A window of one function's code: lines ``offset..offset+limit`` of its disassembly
    (``kind="wasm"``) or lifted C (``"c"``), as ``{kind, lines, offset, limit, total,
    next_offset, version_id, func_index}`` (``next_offset`` null at the end).

    A disassembly window within the first ``FIRST_SCREEN`` lines decodes only the
    instructions up to it (a huge function's first screen costs what a small one costs);
    a later one decodes only its own instructions, from the resume point before it
    (:mod:`kbtool.services.code_window`: one decode-only pass over the body, kept), so no
    window waits for the whole listing and none is built. The C is lifted alone (no
    disassembly) and its lines are kept, so every later window is a slice; both are kept per
    prepared version (a rename or a knowledge edit makes a new one)."""
    if kind not in ("wasm", "c"):
        raise ValueError(f"kind must be wasm or c, not {_one_line(kind)[:20]}")
    offset, limit = max(0, offset), max(1, min(limit, 20_000))
    cm = code_module(conn, version_id)
    cm.check(func_index)
    lines = _kept_lines(cm, func_index, kind)
    if lines is None and kind == "wasm" and offset + limit > FIRST_SCREEN:
        lines = kept_listing_lines(cm, func_index)  # a huge function's, kept on disk
    if lines is None and kind == "wasm" and offset + limit <= FIRST_SCREEN:
        total, window = _first_lines(conn, cm, version_id, func_index, offset, limit)
    elif lines is None and kind == "wasm" and (sk := skim(cm.lm, func_index)) is not None:
        total = len(sk.head) + sk.count  # past the first screen: from its resume point
        window = window_lines(cm.lm, func_index, sk, offset, limit)
    else:
        if lines is None:
            lines = _all_lines(cm, func_index, kind)
        total, window = len(lines), lines[offset : offset + limit]
    return window_answer(kind, window, offset, limit, total, version_id, func_index)


def window_answer(
    kind: str,
    window: list[str],
    offset: int,
    limit: int,
    total: int,
    version_id: int,
    func_index: int,
) -> dict[str, Any]:
    """The answer of :func:`code_window` for ``window`` (its lines from ``offset``)."""
    end = offset + len(window)
    return {
        "kind": kind,
        "lines": window,
        "offset": offset,
        "limit": limit,
        "total": total,
        "next_offset": end if end < total else None,
        "version_id": version_id,
        "func_index": func_index,
    }


def kept_listing_lines(cm: CodeModule, func_index: int) -> list[str] | None:
    """The lines of a huge function's whole disassembly kept on disk
    (:func:`kbtool.services.code_kept_c.kept_listing`), held for the next windows like
    rendered ones; None when none is kept. A window past the first screen is then a slice
    instead of a decode-only pass over the body (~150 ms for ffmpeg's largest)."""
    got = code_kept_c.kept_listing(cm, func_index)
    if got is None:
        return None
    lines = got[0].splitlines()
    with _LOCK:
        _LINES.put((id(cm), func_index, "wasm"), (cm, lines))
    return lines


def _kept_lines(cm: CodeModule, func_index: int, kind: str) -> list[str] | None:
    """The function's lines of ``kind`` when this process has them (paged before, or the
    whole answer of :func:`function_code` is cached)."""
    with _LOCK:
        hit = _LINES.get_item((id(cm), func_index, kind))
        whole = _RESULTS.get_item((id(cm), func_index))
    if hit is not None and hit[0] is cm:
        return hit[1]
    if whole is not None and whole[0] is cm:
        return whole[1]["lifted_c" if kind == "c" else "mnemonics"].splitlines()
    return None


def _all_lines(cm: CodeModule, func_index: int, kind: str) -> list[str]:
    """Every line of the function's C (or the disassembly of a body a window cannot resume
    in), kept for the next windows; made once (a second thread asking meanwhile waits)."""
    key = (id(cm), func_index, kind)
    with _LOCK:
        lock = _RENDERING.setdefault(key, threading.Lock())
    try:
        with lock:
            kept = _kept_lines(cm, func_index, kind)
            return kept if kept is not None else _render_lines(cm, func_index, kind)
    finally:
        with _LOCK:
            if _RENDERING.get(key) is lock:
                del _RENDERING[key]


def _render_lines(cm: CodeModule, func_index: int, kind: str) -> list[str]:
    if kind == "c":
        lines = _lifted(cm, func_index, keep=True)[0].splitlines()
    else:
        rec = _records(cm, func_index)
        lines = (render_error(rec) if isinstance(rec, str) else render_listing(rec)).splitlines()
    with _LOCK:
        _LINES.put((id(cm), func_index, kind), (cm, lines))
    return lines


def _first_lines(
    conn: sqlite3.Connection,
    cm: CodeModule,
    version_id: int,
    func_index: int,
    offset: int,
    limit: int,
) -> tuple[int, list[str]]:
    """(total lines, the window) of the disassembly, decoding only up to the window."""
    total_instr = body_instructions(conn, version_id, func_index) or 0
    want = offset + limit
    rec = _records(cm, func_index, want)
    if isinstance(rec, str):
        lines = render_error(rec).splitlines()
        return len(lines), lines[offset:want]
    head = head_lines(rec)
    # the window's own cut is not the function's: no tail line then
    tail = [] if total_instr > want and rec.truncated is not None else tail_lines(rec)
    n_head, n_instr = len(head), len(rec.instrs)
    total = (
        n_head + total_instr
        if not tail and rec.truncated is not None
        else (n_head + n_instr + len(tail))
    )
    window = head[offset:want]
    if want > n_head and offset < n_head + n_instr:
        window += [instr_line(ins) for ins in rec.instrs[max(0, offset - n_head) : want - n_head]]
    window += tail[max(0, offset - n_head - n_instr) : max(0, want - n_head - n_instr)]
    return total, window


def module_c(
    conn: sqlite3.Connection,
    version_id: int,
    *,
    workers: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Iterator[str]:
    """The whole version lifted to C with the KB's names: a header comment, then every
    defined function in index order (one chunk each). The text compiles as one file with
    ``gcc -fsyntax-only -include prelude.h``. ``workers`` processes lift it (default: every
    usable core); ``progress(done, total)`` is called as functions come back."""
    return _whole_module(conn, version_id, "c", workers, progress)


def module_listing(
    conn: sqlite3.Connection,
    version_id: int,
    *,
    workers: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Iterator[str]:
    """The whole version's disassembly with the KB's names, objdump-like: a header line,
    then every defined function's listing in index order (one chunk each); as
    :func:`module_c` otherwise."""
    return _whole_module(conn, version_id, "listing", workers, progress)


def _whole_module(
    conn: sqlite3.Connection,
    version_id: int,
    kind: str,
    workers: int | None,
    progress: Callable[[int, int], None] | None,
) -> Iterator[str]:
    cm = code_module(conn, version_id)
    if workers is None or workers > 1:
        store_now()  # no delayed-write thread when the workers fork (a cold preparation)
    label = _one_line(queries.get_version(conn, version_id).get("label") or "")
    m = cm.lm.module
    total = m.num_functions - m.num_func_imports
    if kind == "c":
        yield (
            f"/* kbtool: version {version_id} ({label.replace('*/', '* /')}), {total} functions"
            " lifted to C with the KB's names.\n"
            "   Check: gcc -fsyntax-only -include prelude.h FILE"
            " (prelude.h: python -c 'import kbtool.lift as l; print(l.prelude_path())') */\n\n"
        )
        texts = (
            annotate_c(res.text, res.func_index, cm.lm.names)
            for res in lift_module(cm.lm, workers=workers)
        )
    else:
        yield f";; kbtool: version {version_id} ({label}), {total} functions, KB names\n\n"
        texts = disassemble_module(cm.lm, workers=workers, render=render_listing)
    for done, text in enumerate(texts, 1):
        if progress is not None:
            progress(done, total)
        yield text + "\n"


__all__ = [
    "FIRST_SCREEN",
    "HUGE_INSTRUCTIONS",
    "body_instructions",
    "code_window",
    "disassembly",
    "function_code",
    "instr_targets",
    "listing",
    "listing_calls",
    "lifted_c",
    "listing_lines",
    "module_c",
    "module_listing",
]
