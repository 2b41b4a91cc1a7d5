"""``kbtool code``: one function's disassembly and lifted C; the per-function diff of ``ui diff``.

    kbtool code 2 812            # version 2, function index 812: raw wasm, then C
    kbtool code 2:812 --c        # the same function, C only
    kbtool code 2 812 --cleaned  # its cleaned C (kbtool deep's, else the lifter's cleaner)
    kbtool code 9f3c0a1b2c3d4e5f --wasm [--version 2]   # by stable_id (latest version by default)
    kbtool code 2 --all -o app.c # the whole version's C, every core, progress on stderr
    kbtool code 2 --all --wasm -o app.dis   # ... or its disassembly, objdump-like
    kbtool code 2 --all --runnable -o app/  # C that builds and runs: make -C app; app/program ARGS
    kbtool ui diff 1 2 --function STABLE_ID [--unified]  # both releases side by side

Long output goes through the pager when stdout is a terminal (``--pager``/``--no-pager``).
Names and strings from the binary are shown literally (no markup, controls escaped).
"""

from __future__ import annotations

import contextlib
import re
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Group, RenderableType
from rich.text import Text

from kbtool.commands.common import (
    DbOption,
    ForceOption,
    JsonOption,
    check_output,
    console,
    count_progress,
    err_console,
    fail,
    print_json,
    ro,
)
from kbtool.kb import queries
from kbtool.render.code import WASM, C, c_syntax, code_text, function_diff_view
from kbtool.render.text import lit
from kbtool.services import code as code_service
from kbtool.services.outfile import Terminated, atomic_output, terminate_raises

_PAIR = re.compile(r"(\d+):(\d+)\Z")

COption = Annotated[bool, typer.Option("--c", help="Only the lifted C.")]
WasmOption = Annotated[bool, typer.Option("--wasm", help="Only the raw wasm disassembly.")]
CleanedOption = Annotated[
    bool,
    typer.Option(
        "--cleaned",
        help="The cleaned C (variables named from their roles): kbtool"
        " deep's record when there is one, else the lifter's C through the cleaner.",
    ),
]
PagerOption = Annotated[
    bool | None,
    typer.Option(
        "--pager/--no-pager",
        help="Page the output (default: when longer than the terminal).",
        show_default=False,
    ),
]


def register(app: typer.Typer) -> None:
    app.command("code")(code_cmd)


def resolve_target(conn, target: str, index: int | None, version: int | None) -> tuple[int, int]:
    """``(version_id, func_index)`` from ``VERSION INDEX``, ``VERSION:INDEX`` or a stable_id."""
    if index is not None:
        if not target.isdigit():
            raise typer.BadParameter(
                f"VERSION must be a version id when INDEX is given, not {target!r}"
            )
        return int(target), index
    m = _PAIR.match(target)
    if m:
        return int(m.group(1)), int(m.group(2))
    queries.require_stable_id(conn, target)
    where = queries.functions_by_stable_id(conn, target)
    if version is None:
        return where[-1]["version_id"], where[-1]["index"]
    for w in where:
        if w["version_id"] == version:
            return version, w["index"]
    queries.get_version(conn, version)  # unknown version: its own message
    seen = ", ".join(str(w["version_id"]) for w in where)
    fail(f"function {target} does not appear in version {version} (it appears in: {seen})")
    raise AssertionError  # unreachable


def _print(renderable: RenderableType, lines: int, pager: bool | None) -> None:
    if pager is None:
        pager = console.is_terminal and lines > console.height - 2
    if pager:
        with console.pager(styles=True):
            console.print(renderable, soft_wrap=True)
    else:
        console.print(renderable, soft_wrap=True)


def code_view(d: dict, *, show: str | None = None) -> tuple[Group, int]:
    """Header, then the wasm listing and/or the C; with the number of lines."""
    head = Text.assemble(
        ("func ", "bold"),
        (f"#{d['func_index']} ", "bold"),
        lit(d["name"] or "unnamed", "bold cyan" if d["name"] else "dim"),
        ("  ", ""),
        lit(d["type"], "green"),
        (f"  version {d['version_id']}  stable_id {d['stable_id']}", "dim"),
    )
    if d.get("provenance"):
        head.append_text(Text.assemble(("  named by ", "dim"), lit(d["provenance"], "dim")))
    parts: list[RenderableType] = [head]
    lines = 1
    if show in (None, WASM):
        parts += [
            Text(""),
            Text("raw wasm", style="bold underline"),
            code_text(d["mnemonics"], WASM),
        ]
        lines += 2 + d["mnemonics"].count("\n")
    if show in (None, C):
        if d.get("truncated"):
            parts.append(lit(f"C not lifted: {d.get('reason')}", "bold yellow"))
        parts += [Text(""), Text("lifted C", style="bold underline"), c_syntax(d["lifted_c"])]
        lines += 2 + d["lifted_c"].count("\n")
    return Group(*parts), lines


def code_cmd(
    target: Annotated[
        str,
        typer.Argument(
            help="A version id (then INDEX), VERSION:INDEX, or a function's stable_id.",
            show_default=False,
        ),
    ],
    index: Annotated[
        int | None, typer.Argument(help="Function index in that version.", show_default=False)
    ] = None,
    c_only: COption = False,
    wasm_only: WasmOption = False,
    cleaned: CleanedOption = False,
    version: Annotated[
        int | None,
        typer.Option(
            "--version", help="With a stable_id: this version (default: the latest it appears in)."
        ),
    ] = None,
    pager: PagerOption = None,
    all_functions: Annotated[
        bool,
        typer.Option(
            "--all",
            help="The whole version's C (every defined function, KB names) as one file that"
            " compiles with the prelude, lifted on every core; with --wasm its disassembly.",
        ),
    ] = False,
    output: Annotated[
        Path | None,
        typer.Option("-o", "--output", help="With --all: write the C here (default: stdout)."),
    ] = None,
    runnable: Annotated[
        bool,
        typer.Option(
            "--runnable",
            help="With --all -o DIR: write the C plus a runtime, a WASI shim and a Makefile"
            " into DIR; `make -C DIR` builds DIR/program, which runs like `wasmtime run`.",
        ),
    ] = False,
    force: ForceOption = False,
    json_out: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Show one function's code: the disassembly (raw wasm) and the C it lifts to."""
    if c_only and wasm_only:
        fail("--c and --wasm exclude each other (give neither for both)")
    if runnable and (not all_functions or output is None or wasm_only):
        fail("--runnable writes a directory: kbtool code VERSION --all --runnable -o DIR")
    if all_functions:
        if index is not None or not target.isdigit():
            fail("--all takes a version id alone: kbtool code VERSION --all [-o FILE]")
        if c_only or json_out:
            fail("--all writes the C, or the disassembly with --wasm (no --c, no --json)")
        if runnable:
            from kbtool.commands.code_runnable import write_runnable_cmd

            write_runnable_cmd(db, int(target), output)
            return
        _write_module(db, int(target), output, listing=wasm_only, force=force)
        return
    if output is not None:
        fail("-o goes with --all (one function's code prints to the terminal)")
    if cleaned:
        if c_only or wasm_only or all_functions:
            fail("--cleaned shows one function's cleaned C (no --c, --wasm or --all)")
        _print_cleaned(db, target, index, version, json_out, pager)
        return
    conn = ro(db)
    try:
        vid, idx = resolve_target(conn, target, index, version)
        d = code_service.disassembly(conn, vid, idx)
    finally:
        conn.close()
    if json_out:
        if c_only:
            d.pop("mnemonics")
        elif wasm_only:
            d.pop("lifted_c")
        print_json(d)
        return
    view, lines = code_view(d, show=C if c_only else WASM if wasm_only else None)
    _print(view, lines, pager)


def _print_cleaned(
    db: str | None,
    target: str,
    index: int | None,
    version: int | None,
    json_out: bool,
    pager: bool | None,
) -> None:
    """``kbtool code V I --cleaned``: the header, where the cleaned C comes from, the C."""
    from kbtool.services.cleaned import cleaned_c

    conn = ro(db)
    try:
        vid, idx = resolve_target(conn, target, index, version)
        d = cleaned_c(conn, vid, idx)
    finally:
        conn.close()
    if json_out:
        print_json(d)
        return
    view, lines = code_view({**d, "mnemonics": "", "lifted_c": ""}, show="header")
    where = (
        f"from kbtool deep (version {d['source_version_id']})"
        if d["source"] == "deep"
        else "the lifter's C through the cleaner"
    )
    renamed = ", ".join(f"{old} -> {new}" for old, new in sorted(d["rename_map"].items()))
    parts = [view, Text(""), Text.assemble(("cleaned C", "bold underline"), (f"  {where}", "dim"))]
    if renamed:
        parts.append(lit(f"renamed: {renamed}", "dim"))
    if d.get("truncated"):
        parts.append(lit("the lifter gave up on this body: the C is a placeholder", "bold yellow"))
    parts.append(c_syntax(d["clean_c"]))
    _print(Group(*parts), lines + 3 + d["clean_c"].count("\n"), pager)


def _write_module(
    db: str | None, version_id: int, output: Path | None, *, listing: bool, force: bool = False
) -> None:
    """``kbtool code VERSION --all [--wasm]``: stream the C (or the disassembly) to a file
    or stdout, with a done/total bar on a terminal. The file is written atomically (the
    old one stays until the new one is complete; never the KB, see
    :mod:`kbtool.services.outfile`); SIGTERM and Ctrl-C stop the workers and leave no
    temporary."""
    check_output(output, db, force)
    conn = ro(db)
    n = 0
    label = "disassembling" if listing else "lifting"
    chunks = None
    try:
        # no refresh thread: the lift pool forks only from a single-threaded process
        with (
            terminate_raises(),
            count_progress(label, show=err_console.is_terminal, auto_refresh=False) as bar,
        ):
            task = bar.add_task(label, total=None)

            def progress(done: int, total: int) -> None:
                if not done & 63 or done == total:
                    bar.update(task, completed=done, total=total, refresh=True)

            make = code_service.module_listing if listing else code_service.module_c
            chunks = make(conn, version_id, progress=progress)
            first = next(chunks)  # unknown version / missing bytes fail here, before any file
            with (
                atomic_output(output) if output is not None else contextlib.nullcontext(sys.stdout)
            ) as out:
                out.write(first)
                for chunk in chunks:
                    out.write(chunk)
                    n += 1
        if output is not None:
            err_console.print(
                f"wrote {n} functions of version {version_id} to {output}",
                markup=False,
                highlight=False,
                soft_wrap=True,
            )
    except BrokenPipeError:  # `kbtool code 2 --all | head`: the reader is gone; stop quietly
        _drop_stdout()
    except Terminated:  # SIGTERM: what is still buffered for a stalled reader is dropped
        if output is None:
            _drop_stdout()
        raise
    except OSError as exc:
        fail(f"cannot write {output or 'stdout'}: {exc.strerror or exc}")
    finally:
        if chunks is not None:
            chunks.close()  # an error or a signal: stop the worker pool now
        conn.close()


def _drop_stdout() -> None:
    """Point stdout at /dev/null: the exit flush must not block on (or fail at) a reader
    that is gone or stalled."""
    import os

    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def print_function_diff(
    db: str | None,
    stable_id: str,
    from_version: int,
    to_version: int,
    *,
    unified: bool = False,
    pager: bool | None = None,
    json_out: bool = False,
    context: int = 3,
) -> None:
    """``kbtool ui diff A B --function SID``: the function's code in both releases."""
    conn = ro(db)
    try:
        diff = code_service.function_diff(conn, stable_id, from_version, to_version)
    finally:
        conn.close()
    if json_out:
        print_json(diff)
        return
    view = function_diff_view(diff, side=not unified, context=context)
    lines = len(diff["rows"]) + diff["c_diff"].count("\n") + 4
    _print(view, lines, pager)
