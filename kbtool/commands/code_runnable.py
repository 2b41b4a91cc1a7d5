"""``kbtool code VERSION --all --runnable -o DIR``: the whole version as C that builds and
runs (see :mod:`kbtool.services.runnable` and docs/runnable.md)."""

from __future__ import annotations

from pathlib import Path

from kbtool.commands.common import count_progress, db_path, err_console, fail, ro
from kbtool.services.outfile import terminate_raises


def write_runnable_cmd(db: str | None, version_id: int, output: Path | None) -> None:
    """Lift the version on every core into ``output`` (a directory) with the runtime, the
    WASI shim and a Makefile; a done/total bar on a terminal; one line when done."""
    from kbtool.services.runnable import write_runnable

    if output is None:
        fail("--runnable writes a directory: kbtool code VERSION --all --runnable -o DIR")
        return
    conn = ro(db)
    try:
        with (
            terminate_raises(),
            count_progress("lifting", show=err_console.is_terminal, auto_refresh=False) as bar,
        ):
            task = bar.add_task("lifting", total=None)

            def progress(done: int, total: int) -> None:
                if not done & 63 or done == total:
                    bar.update(task, completed=done, total=total, refresh=True)

            info = write_runnable(conn, version_id, output, kb_path=db_path(db), progress=progress)
    except OSError as exc:
        fail(f"cannot write {output}: {exc.strerror or exc}")
        return
    finally:
        conn.close()
    err_console.print(
        f"wrote {info.functions} functions of version {version_id} as runnable C to"
        f" {info.directory}; build: make -C {info.directory}; run: {info.program} [ARGS]",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )
