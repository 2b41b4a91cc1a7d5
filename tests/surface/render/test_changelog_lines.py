"""The diff's changelog written as segments (``ChangelogLines``, what ``kbtool diff`` prints
after the change table) is exactly :func:`changelog_from_data` printed through Rich: the same
characters, and in a colour terminal the same escape codes, at any width, with hostile names
and strings (markup, escapes, wide and combining characters, lines Rich must wrap)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from kbtool.kb.db import open_ro
from kbtool.render.changelog_lines import ChangelogLines
from kbtool.render.terminal import DiffRows, changelog_from_data, diff_lines, parse_only
from kbtool.services.diff.view import kept_view
from tests.support.changelog_data import NAME, changelog
from tests.support.diff_kb import two_versions_kb
from tests.support.paths import ROOT

SYSTEMS = [None, "standard", "256", "truecolor"]


def printed(
    renderable, width: int, colour: bool | str | None, crop: bool, no_color: bool = False, **kw
) -> str:
    """What a console of ``width`` writes for ``renderable`` (``colour``: True = truecolor,
    or a colour system's name; ``no_color``: as with NO_COLOR)."""
    system = "truecolor" if colour is True else colour or None
    buf = io.StringIO()
    console = Console(
        file=buf,
        width=width,
        force_terminal=bool(system),
        color_system=system,
        no_color=no_color,
    )
    console.print(renderable, crop=crop, **kw)
    return buf.getvalue()


@settings(max_examples=200, deadline=None)
@given(
    cl=changelog(),
    width=st.integers(12, 200),
    colour=st.sampled_from(SYSTEMS),
    no_color=st.booleans(),
    only=st.sampled_from([None, "modified", "new,deleted", "changed", "moved"]),
)
def test_the_changelog_prints_exactly_as_rich_prints_it(cl, width, colour, no_color, only):
    keep = parse_only(only)
    slow = printed(changelog_from_data(cl, only=keep), width, colour, True, no_color)
    fast = printed(ChangelogLines(cl, only=keep), width, colour, False, no_color)
    assert fast == slow


@settings(max_examples=60, deadline=None)
@given(
    names=st.lists(NAME, min_size=1, max_size=8),
    width=st.integers(20, 200),
    colour=st.sampled_from(SYSTEMS),
    no_color=st.booleans(),
)
def test_the_change_table_prints_as_its_text_in_every_colour_system(names, width, colour, no_color):
    """The table's rows written whole (plain, or pre-rendered escape codes in colour) are
    the reference :func:`diff_lines` printed, whatever the colour system."""
    provs = [None, "human", "agent", "odd\x1bprov"]
    changes = [
        {
            "classification": ["modified", "moved", "new", "deleted"][i % 4],
            "from_index": i,
            "to_index": i + 1,
            "name": n,
            "provenance": provs[i % 4],
            "confidence": 0.5,
            "score": 0.25,
            "review": bool(i % 2),
            "runtime": bool(i % 3),
        }
        for i, n in enumerate(names)
    ]
    report = {"changes": changes}
    kw = dict(width=width, show_score=width >= 100)
    slow = printed(diff_lines(report, **kw), width, colour, True, no_color, no_wrap=True)
    fast = printed(DiffRows(report, **kw), width, colour, False, no_color, no_wrap=True)
    assert fast == slow


_REFERENCE = r"""
import json, sys
from rich.console import Console
from kbtool.render.terminal import changelog_from_data
cl = json.load(open(sys.argv[1]))
width, colour = int(sys.argv[2]), sys.argv[3] == "1"
system = "truecolor" if colour else None
Console(width=width, force_terminal=colour, color_system=system).print(changelog_from_data(cl))
"""


def _reference_in_a_new_process(tmp_path, cl: dict, width: int, colour: bool) -> str:
    """The reference renderer's output in a fresh process: Rich keeps each style's escape
    codes from the first colour system that wrote it, so one process, one system."""
    data = tmp_path / "cl.json"
    data.write_text(json.dumps(cl))
    res = subprocess.run(
        [sys.executable, "-c", _REFERENCE, str(data), str(width), "1" if colour else "0"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=True,
    )
    return res.stdout


def test_kbtool_diff_prints_the_reference_changelog(tmp_path):
    """``kbtool diff`` in a real process, plain and with FORCE_COLOR, ends with the reference
    renderer's changelog of the same pair, byte for byte."""
    db = two_versions_kb(tmp_path)
    conn = open_ro(db)
    try:
        cl = kept_view(conn, 1, 2, with_changelog=True)["changelog"]
    finally:
        conn.close()
    assert cl["modified"]
    for colour, width in ((False, 80), (True, 80), (True, 33)):
        env = {
            "COLUMNS": str(width),
            "FORCE_COLOR": "1" if colour else "",
            "COLORTERM": "truecolor",
        }
        res = subprocess.run(
            [sys.executable, "-m", "kbtool.cli", "--db", str(db), "diff", "1", "2"],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT), **env},
        )
        assert res.returncode == 0, res.stderr
        ref = _reference_in_a_new_process(tmp_path, cl, width, colour)
        assert res.stdout.endswith(ref)
        assert ("\x1b[" in res.stdout) == colour
