"""``kbtool ingest``'s work and output, without Typer: the Typer command
(:func:`kbtool.commands.core.ingest`) and the CLI's direct path for a plain
``kbtool [--db P] ingest FILE [options]`` (:func:`kbtool.cli.main`, no Typer nor pydantic
import: ~0.1 s of a small module's ingest) both call :func:`run`, so both print the same.

The summary goes through Rich (styles, wrapping, the progress bar of a big module) only
where a terminal shows it; a pipe or a file gets the same words, one line each, without
importing Rich (~20 ms of a small module's ingest): :class:`_Plain`."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from kbtool.kb.bulk import first_load
from kbtool.kb.db import open_rw
from kbtool.kb.schema import new_kb_page_size
from kbtool.textutil import json_safe, printable

#: this module's own Rich tags (the pattern :func:`_drop_tags` removes without compiling it)
_MARKUP = r"\[/?[a-z][a-z ]*\]|\[/\]"
_TAG_LETTERS = frozenset("abcdefghijklmnopqrstuvwxyz")


def _drop_tags(text: str) -> str:
    """``re.sub(_MARKUP, "", text)`` without compiling the pattern (~0.2 ms a process):
    each ``[`` starts a tag when ``/`` alone or ``/?`` then a letter, letters and blanks
    follow up to ``]`` (a tag never holds ``[``, so scanning from the next ``[`` after a
    miss finds every match the pattern would)."""
    if "[" not in text:
        return text
    out: list[str] = []
    i = 0
    while (j := text.find("[", i)) >= 0:
        k = j + 1
        if text.startswith("/]", k):
            out.append(text[i:j])
            i = k + 2
            continue
        if text.startswith("/", k):
            k += 1
        if k < len(text) and text[k] in _TAG_LETTERS:
            k += 1
            while k < len(text) and (text[k] in _TAG_LETTERS or text[k] == " "):
                k += 1
            if text.startswith("]", k):
                out.append(text[i:j])
                i = k + 1
                continue
        out.append(text[i : j + 1])
        i = j + 1
    out.append(text[i:])
    return "".join(out)


def _terminal(stream: Any) -> bool:
    """Whether Rich would treat ``stream`` as a terminal (``rich.console.Console.is_terminal``:
    ``TTY_COMPATIBLE``, then ``FORCE_COLOR``, then ``isatty``)."""
    tty = os.environ.get("TTY_COMPATIBLE", "")
    if tty in ("0", "1"):
        return tty == "1"
    force = os.environ.get("FORCE_COLOR")
    if force is not None:
        return force != ""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


class _Lit(str):
    """Untrusted text already escaped (:func:`kbtool.textutil.printable`): printed as is."""


class _Plain:
    """The Rich console's ``print`` for a stream that is not a terminal: the parts joined
    by one blank (as Rich does), this module's style tags dropped, no wrapping."""

    is_terminal = False

    def __init__(self, name: str) -> None:
        self._name = name  # "stdout" | "stderr", looked up at each print (tests swap them)

    def print(self, *parts: Any, soft_wrap: bool = False) -> None:
        stream = getattr(sys, self._name)
        if stream is None:  # (a closed stream, ``>&-``: Rich prints nothing there either)
            return
        text = " ".join(p if isinstance(p, _Lit) else _drop_tags(str(p)) for p in parts)
        stream.write(text + "\n")


def _plain_lit(value: object, style: str = "") -> _Lit:
    return _Lit("\u2014" if value is None else printable(value))


#: :data:`kbtool.render.text.UNKNOWN_TOOLCHAIN` (that module imports Rich)
_UNKNOWN_TOOLCHAIN = "unknown"


def _plain_toolchain(value: str | None) -> _Lit:
    return _Lit(printable(value) if value else _UNKNOWN_TOOLCHAIN)


def _outputs() -> tuple[Any, Any, Any, Any]:
    """``(console, err_console, lit, toolchain_text)``: Rich's where stdout is a terminal,
    else the plain ones (stderr too when it is not a terminal either)."""
    if _terminal(sys.stdout):
        from kbtool.commands.consoles import console, err_console
        from kbtool.render.text import lit, toolchain_text

        return console, err_console, lit, toolchain_text
    if _terminal(sys.stderr):
        from kbtool.commands.consoles import err_console
    else:
        err_console = _Plain("stderr")
    return _Plain("stdout"), err_console, _plain_lit, _plain_toolchain


def _print_json(value: Any) -> None:
    """As :func:`kbtool.commands.consoles.print_json` (the same bytes), without Rich."""
    if sys.stdout is not None:
        sys.stdout.write(json_safe(json.dumps(value, indent=2, ensure_ascii=False)) + "\n")


def _progress_bar(err_console):
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TimeElapsedColumn(),
        console=err_console,
        transient=True,
    )


def _run_ingest(
    conn, file: Path, label: str | None, js: Path | None, carry: bool = True, **lineage
):
    from kbtool.services.ingest import ingest_file  # here: `kbtool versions` never needs it

    big = file.exists() and file.stat().st_size > 1_000_000 and _terminal(sys.stderr)
    if not big:
        return ingest_file(conn, file, label=label, glue_path=js, carry=carry, **lineage)
    from kbtool.commands.consoles import err_console

    with _progress_bar(err_console) as bar:
        task = bar.add_task(f"decoding {file.name}", total=file.stat().st_size)

        def progress(stage: str, done: int, total: int) -> None:
            if stage == "decode":
                bar.update(task, completed=done, total=total)
            else:
                bar.update(task, description=f"{stage} {file.name}")

        return ingest_file(
            conn, file, label=label, glue_path=js, progress=progress, carry=carry, **lineage
        )


def run(
    db: str,
    file: Path,
    *,
    label: str | None = None,
    js: Path | None = None,
    no_carry: bool = False,
    program: str | None = None,
    base: int | None = None,
    force: bool = False,
    json_out: bool = False,
) -> None:
    """Ingest ``file`` into the KB at ``db`` (created when missing) and print the summary
    (``json_out``: the contract's JSON). Errors propagate (the CLI prints them as one line)."""
    from kbtool.services.ingest import AlreadyIngested

    # (a KB this ingest creates gets pages sized for its first module)
    size = file.stat().st_size if file.is_file() else 0
    page_size = new_kb_page_size(size)  # (None: a small module)
    # a new KB's first big load is written once (kbtool.kb.bulk); a small one's stays in
    # WAL mode: the mode switches' syncs would cost more wall time than the WAL's copy
    bulk = page_size is not None and not os.path.exists(db)
    conn = open_rw(db, create=True, page_size=page_size)
    t0 = time.perf_counter()
    try:
        with first_load(conn, bulk):
            res = _run_ingest(
                conn, file, label, js, carry=not no_carry, program=program, base=base, force=force
            )
    except AlreadyIngested as exc:
        if json_out:
            _print_json({"already_ingested": exc.version_id, "label": exc.label})
        else:
            console, _err, lit, _tc = _outputs()
            console.print(lit(str(exc), "yellow"))
        return
    secs = time.perf_counter() - t0
    preparing = [] if res.new_program else _warm_diffs(conn, res.version_id)
    if not 0 < size < _CODE_WARM_MIN_BYTES:  # (a small file: no import of the code store)
        _warm_code(conn, res.version_id)
    if json_out:
        _print_json({**res.__dict__, "seconds": round(secs, 3)})
        return
    console, err_console, lit, toolchain_text = _outputs()
    _print_summary(res, secs, console, err_console, lit, toolchain_text)
    if preparing:
        shown = ", ".join(f"{a} -> {b}" for a, b in preparing)
        status = "python -m kbtool.services.diff.warm --status --db KB"
        console.print(f"diffs: preparing {shown} in the background (progress: {status})")


def _warm_diffs(conn, version_id: int) -> list:
    """The pairs of ``version_id`` prepared in a detached process (issue 30.3: diffs kept
    ahead; ``KBTOOL_DIFF_WARM``). Not asked for the first version of a program: it has no
    pair, and the module costs ~13 ms of a small module's ingest to import; nor imported
    when ``KBTOOL_DIFF_WARM`` says off (``start_background`` would prepare nothing)."""
    from kbtool.services.detached import switched_off

    if switched_off("KBTOOL_DIFF_WARM"):
        return []
    from kbtool.services.diff.warm import start_background

    return start_background(conn, version_id)["pairs"]


#: :data:`kbtool.services.code_store.WARM_MIN_BYTES` (a module below it is prepared by whoever
#: asks, so the code store, ~5-8 ms of imports, is not imported for it; a test keeps both equal)
_CODE_WARM_MIN_BYTES = 1 << 20


def _warm_code(conn, version_id: int) -> None:
    """A big module's code preparation kept on disk by a detached process (issue 30.1:
    the first code of a fresh server, TUI or MCP; ``KBTOOL_CODE_WARM``: when it says off,
    the code store, which would start nothing, is not imported)."""
    from kbtool.services.detached import switched_off

    if switched_off("KBTOOL_CODE_WARM"):
        return
    from kbtool.services.code_store import start_background

    start_background(conn, version_id)


def _print_summary(res, secs: float, console, err_console, lit, toolchain_text) -> None:
    console.print(
        f"ingested version [bold]{res.version_id}[/] ",
        lit(res.label, "bold cyan"),
        f" in {secs:.2f}s: {res.imported} imported + {res.defined} defined functions, "
        f"{res.exported} exported, {res.instructions:,} instructions",
    )
    console.print(
        "toolchain: ",
        toolchain_text(res.toolchain_version),
        f"  shared memory: {'yes' if res.shared_memory else 'no'}",
    )
    console.print(lit(res.lineage_text, "bold" if res.new_program else ""))
    if res.parent_version_id is not None:
        methods = ", ".join(f"{k} {v}" for k, v in sorted(res.carried_by_method.items()))
        console.print(
            f"identities carried from version {res.parent_version_id}: {res.carried}"
            f" ({methods or 'none'}); body changed: {res.body_changed}; new: {res.new_identities}"
        )
    for note in res.matcher_notes:  # a matcher stage stopped at its work budget (hostile input)
        console.print("[yellow]note:[/] ", lit(note))
    sources = ", ".join(f"{k} {v}" for k, v in sorted(res.names_by_source.items()))
    console.print(
        f"names from the binary: {res.names_written} written"
        + (f" ({sources})" if sources else "")
        + f", {res.names_same} already named the same, {res.names_refused} refused"
    )
    if res.go is not None:
        go = res.go
        if "error" in go:
            err_console.print("[yellow]go:[/] ", lit(go["error"]))
        else:
            console.print(
                "Go pclntab (",
                lit(go.get("go_version") or "version unknown"),
                f", {go['pclntab_format']}): {go['named']} of {go['defined']} functions named",
            )
    if res.diff_carry:
        dc = res.diff_carry
        console.print(
            f"names carried by diff: {dc.get('written', 0)} written, {dc.get('refused', 0)} refused"
        )
    if res.glue is not None:
        g = res.glue
        console.print(
            "JS glue (",
            lit(g.get("shape") or "unrecognised"),
            f"): {g['exports']} export names, {g['imports']} import names recovered",
        )
        for note in g["unknown"][:10]:
            err_console.print("[yellow]glue:[/] ", lit(note))
