"""Screenshots of `kbtool ui diff` as SVG (Rich's export_svg), into screenshots/ui-diff*.svg.

    python screenshots/make_diff.py

Builds the demo KB (the two bundled zstd releases) in a temporary directory and runs the
real command, ``kbtool ui diff 1 2``, with its console swapped for a recording one:

- ``ui-diff.svg``: ``kbtool ui diff 1 2`` at 100 columns (the whole output: table, changelog);
- ``ui-diff-80.svg``: ``kbtool ui diff 1 2 --only changed`` at 80 columns.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))


def shoot(db: Path, argv: list[str], width: int, out: Path, title: str) -> None:
    from rich.console import Console

    import kbtool.commands.diff as diff_cmd
    from kbtool.cli import main

    rec = Console(
        record=True,
        width=width,
        force_terminal=True,
        color_system="truecolor",
        highlight=False,
        file=open(os.devnull, "w"),
    )  # noqa: SIM115
    saved = diff_cmd.console
    diff_cmd.console = rec
    try:
        code = main([*argv, "--db", str(db)])
    finally:
        diff_cmd.console = saved
    if code != 0:
        raise SystemExit(f"kbtool {' '.join(argv)} failed ({code})")
    out.write_text(rec.export_svg(title=title), encoding="utf-8")
    print(f"wrote {out.relative_to(ROOT)} ({out.stat().st_size:,} bytes)")


def main() -> int:
    os.environ.setdefault("KBTOOL_FROZEN_TIME", "2026-01-01T00:00:00.000000Z")
    from kbtool.services.demo import build_demo

    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "demo.db"
        build_demo(db, echo=lambda _m: None)
        shoot(db, ["ui", "diff", "1", "2"], 100, HERE / "ui-diff.svg", "kbtool ui diff 1 2")
        shoot(
            db,
            ["ui", "diff", "1", "2", "--only", "changed"],
            80,
            HERE / "ui-diff-80.svg",
            "kbtool ui diff 1 2 --only changed",
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
