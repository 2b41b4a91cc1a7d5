"""The gate's refusal budget parses its stamps without strptime (issue 30.4, session 29 S):
the same datetime or the same ValueError as ``datetime.strptime`` for every text, and the
stamps ``now()`` writes load no ``_strptime`` (nor its calendar and locale)."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from datetime import UTC, datetime

import pytest

from kbtool.kb.gate_events import _parse_stamp
from tests.support.paths import ROOT

FMT = "%Y-%m-%dT%H:%M:%S.%fZ"


def _strptime(text: str) -> datetime | str:
    try:
        return datetime.strptime(text, FMT).replace(tzinfo=UTC)
    except ValueError:
        return "ValueError"


def _ours(text: str) -> datetime | str:
    try:
        return _parse_stamp(text)
    except ValueError:
        return "ValueError"


EDGES = [
    "2026-11-29T06:00:00.123456Z",
    "2024-02-29T23:59:59.999999Z",
    "2023-02-29T00:00:00.000000Z",  # not a leap year
    "2026-04-31T00:00:00.000000Z",
    "2026-00-10T00:00:00.000000Z",
    "2026-13-10T00:00:00.000000Z",
    "2026-01-00T00:00:00.000000Z",
    "2026-01-32T00:00:00.000000Z",
    "2026-01-01T24:00:00.000000Z",
    "2026-01-01T00:60:00.000000Z",
    "2026-01-01T00:00:60.000000Z",
    "2026-01-01T00:00:61.000000Z",
    "0000-01-01T00:00:00.000000Z",
    "0001-01-01T00:00:00.000000Z",
    "9999-12-31T23:59:59.999999Z",
    "2026-01-01t00:00:00.000000z",  # strptime ignores case
    "2026-01-01T00:00:00.000000",
    "2026-01-01T00:00:00.00000Z",
    "2026-1-1T0:0:0.5Z",
    "2026-01-01T00:00:00.+00000Z",
    "2026-01-01T00:00:00.-00000Z",
    "2026-01-01T00:00:00. 00000Z",
    "2026-01-01T00:00:00.00000\u0661Z",  # a non-ASCII digit
    "\u0662\u0660\u0662\u0666-01-01T00:00:00.000000Z",
    "2026-01-01T00:00:00.000000Z ",
    "",
    "frozen",
]


@pytest.mark.parametrize("text", EDGES)
def test_edges_as_strptime(text: str) -> None:
    assert _ours(text) == _strptime(text)


def test_random_stamps_as_strptime() -> None:
    rnd = random.Random(29)
    for _ in range(3000):
        parts = [
            rnd.randrange(0, 10000),
            rnd.randrange(0, 14),
            rnd.randrange(0, 33),
            rnd.randrange(0, 26),
            rnd.randrange(0, 62),
            rnd.randrange(0, 62),
            rnd.randrange(0, 1_000_000),
        ]
        text = "{:04d}-{:02d}-{:02d}T{:02d}:{:02d}:{:02d}.{:06d}Z".format(*parts)
        if rnd.random() < 0.2:  # one character replaced
            i = rnd.randrange(len(text))
            text = text[:i] + rnd.choice("0123456789-:.TZtz x+") + text[i + 1 :]
        assert _ours(text) == _strptime(text), text


def test_now_stamps_load_no_strptime() -> None:
    code = (
        "import sys\n"
        "from kbtool.kb.db import now\n"
        "from kbtool.kb.gate_events import _parse_stamp\n"
        "t = _parse_stamp(now())\n"
        "assert t.tzinfo is not None\n"
        "print('_strptime' in sys.modules, 'calendar' in sys.modules)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("KBTOOL_FROZEN_TIME", None)
    r = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() == ["False", "False"]
