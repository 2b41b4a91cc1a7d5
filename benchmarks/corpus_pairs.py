"""Release pairs of the corpus, derived from its MANIFEST (not hard-coded file names).

A *family* is a series of builds that differ only in version: `pair_id` with the version
replaced by `{v}` (e.g. `zstd-{v}.O2.exports`). For each family with named and stripped
builds: consecutive versions are `nearby` pairs, first → last is `hardest`, each reversed is
`swapped`; builds of one version that differ only in the optimisation token (`O2`, `Os`, ...)
are `opt-level` pairs. A build is named by its `pair_id`; files are
`gt/<pair_id>.named.wasm` and `gt/<pair_id>.stripped.wasm`.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path

DEFAULT_CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus"
if not DEFAULT_CORPUS.is_dir():  # a git worktree elsewhere: the shared corpus
    DEFAULT_CORPUS = Path("/work/shared/corpus")
_OPT = re.compile(r"O[0-3sz]\Z")


def _vkey(version: str) -> tuple:
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"[.\-]", version))


def builds(corpus: Path = DEFAULT_CORPUS) -> dict[str, str]:
    """pair_id -> version, for builds with both a named and a stripped file."""
    manifest = json.loads((corpus / "MANIFEST.json").read_text())
    roles: dict[str, set[str]] = defaultdict(set)
    version: dict[str, str] = {}
    for m in manifest["modules"]:
        if m.get("pair_id") and m.get("version"):
            roles[m["pair_id"]].add(m.get("role"))
            version[m["pair_id"]] = m["version"]
    return {p: version[p] for p, r in roles.items() if {"named", "stripped"} <= r}


def corpus_pairs(corpus: Path = DEFAULT_CORPUS) -> list[tuple[str, str, str]]:
    """(kind, old pair_id, new pair_id) rows: nearby, hardest, swapped, opt-level."""
    found = builds(corpus)
    families: dict[str, list[str]] = defaultdict(list)
    for pid, ver in found.items():
        families[pid.replace(ver, "{v}", 1)].append(pid)
    rows: list[tuple[str, str, str]] = []
    for fam in sorted(families):
        series = sorted(families[fam], key=lambda p: _vkey(found[p]))
        forward = [("nearby", a, b) for a, b in zip(series, series[1:], strict=False)]
        if len(series) > 2:
            forward.append(("hardest", series[0], series[-1]))
        rows += forward
        rows += [("swapped", b, a) for _, a, b in forward]
    by_version: dict[str, list[str]] = defaultdict(list)
    for pid, ver in found.items():
        by_version[ver].append(pid)
    for ver in sorted(by_version, key=_vkey):
        ids = sorted(by_version[ver])
        for a in ids:
            for b in ids:
                ta, tb = a.split("."), b.split(".")
                if a != b and len(ta) == len(tb):
                    diff = [(x, y) for x, y in zip(ta, tb, strict=True) if x != y]
                    if len(diff) == 1 and all(_OPT.match(t) for t in diff[0]):
                        rows.append(("opt-level", a, b))
    return rows


if __name__ == "__main__":
    for row in corpus_pairs():
        print(*row)
