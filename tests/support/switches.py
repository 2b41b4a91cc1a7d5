"""Readers of lifted C switches shared by the switch tests (not a test module)."""

from __future__ import annotations

import re

# a case that only jumps elsewhere: `case 26: goto L63;`
TRAMPOLINE = re.compile(r"^\s*(?:(?:case -?\d+|default): )+goto L\d+;\s*$", re.M)


def case_values(text: str, *, skip_labels: bool = False) -> dict[str, list[int]]:
    """The case values above each case body: {first statement: values}. ``skip_labels``:
    a label line (``L6:;``) is not a body's first statement."""
    out: dict[str, list[int]] = {}
    vals: list[int] = []
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("case "):
            vals += [int(v) for v in re.findall(r"case (-?\d+):", s)]
        elif vals and not (skip_labels and s.endswith(":;")):
            out[s] = vals
            vals = []
    return out
