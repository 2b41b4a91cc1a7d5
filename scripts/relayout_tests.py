#!/usr/bin/env python3
"""Move the flat tests/ into tests/unit/<layer>/ and tests/surface/<front-end>/.

Each ``tests/test_*.py`` (and ``tests/web/test_*.py``) goes where a newcomer would look for
it: a test that drives a front-end (TUI Pilot, web router, MCP client, the CLI, Rich
renderers) under ``tests/surface/<front-end>/``; any other under ``tests/unit/<layer>/``, the
layer it exercises (wasm, identity, lift, analysis, agents, glue, kb, services). The file's
name says it first (``test_lift_*`` -> lift, ``*_tui`` -> tui); otherwise what it imports
and runs decides (the highest layer it imports: a test importing services tests a use case).

    python scripts/relayout_tests.py            # the plan (same as --dry-run)
    python scripts/relayout_tests.py --apply    # git mv + fix-ups, in this checkout
    python scripts/relayout_tests.py --fix-paths FILE...   # only the path fix-up, in place

``--apply`` moves each file with ``git mv``, creates the packages' ``__init__.py``, moves
Textual snapshot directories (``tests/__snapshots__/<module>/`` go beside their test),
moves ``tests/web``'s conftest with its tests and its ``support.py`` to
``tests/support/web.py``, ``tests/codefixtures.py`` to ``tests/support/codefixtures.py``,
rewrites ``from tests.X import`` of moved helpers, rewrites ``Path(__file__)`` uses to
``tests.support.paths`` names (so a file's depth no longer matters), and rewrites mentions
of moved paths (``tests/test_x.py``) in the repository's Python, Markdown and TOML files.
It refuses to run with a test file that has uncommitted changes (someone is editing it).
"""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"

LAYERS = ("wasm", "identity", "lift", "analysis", "agents", "glue", "kb", "services")
SURFACES = ("cli", "tui", "web", "mcp", "render")

# file-name words that say what a test is about (checked in this order: the surface first)
NAME_SURFACE = [
    (r"(^|_)tui($|_)|snapshots|_screen|interactive|nav_functions|heatmap", "tui"),
    (r"(^|_)mcp($|_)|inspector", "mcp"),
    (r"(^|_)web($|_)|_routes?$|browser|studio|router|http|readonly", "web"),
    (r"(^|_)cli($|_)|papercuts|output_paths|packaging|durability|hardening_cli|_command$", "cli"),
    (r"(^|_)render($|_)|ui_diff|diff_views|diff_layout", "render"),
]
NAME_LAYER = [
    (
        r"_service$|^diff_(cache|triage|triage_rules|triage_inlining|explain|relocation)$|^lineage$"
        r"|^ingest|^lookalike|^optlevels|^oracle_trivial",
        "services",
    ),
    (r"^wasm|^decode|^leb|^opcodes|gosyms", "wasm"),
    (r"^lift|^code_(cleaned|structs)|runnable", "lift"),
    (r"^analysis|atomic|recogni|threads", "analysis"),
    (r"^agents?(_|$)|provider|^fuzz_provider|^deep(_|$)", "agents"),
    (r"^glue|emscripten|loader", "glue"),
    (r"^identity|^matcher|pairing|^diff_align|^diff_go_identity", "identity"),
    (
        r"^gate|^kb(_|$)|^hardening_kb|^hardening_gate|^refusal|^knowledge_core|concurrency|^schema"
        r"|^durab",
        "kb",
    ),
]
# import prefix -> where it points (front-ends first)
IMPORT_SURFACE = {
    "kbtool.tui": "tui",
    "tests.support.tui": "tui",
    "textual": "tui",
    "kbtool.web": "web",
    "tests.support.web": "web",
    "tests.web": "web",
    "starlette": "web",
    "kbtool.mcp": "mcp",
    "tests.support.mcp": "mcp",
    "mcp": "mcp",
    "kbtool.cli": "cli",
    "kbtool.commands": "cli",
    "tests.support.cli": "cli",
    "typer": "cli",
    "kbtool.render": "render",
}
IMPORT_LAYER = {f"kbtool.{x}": x for x in LAYERS}
LAYER_ORDER = ("services", "kb", "agents", "analysis", "identity", "glue", "lift", "wasm")

# helpers that move, and the module names their importers must use afterwards
HELPERS = {
    "tests/web/support.py": ("tests/support/web.py", "tests.web.support", "tests.support.web"),
    "tests/codefixtures.py": (
        "tests/support/codefixtures.py",
        "tests.codefixtures",
        "tests.support.codefixtures",
    ),
}


def git(*args: str, cwd: Path = ROOT) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout


def test_files(root: Path) -> list[Path]:
    tests = root / "tests"
    return sorted([*tests.glob("test_*.py"), *(tests / "web").glob("test_*.py")])


def imports_of(text: str) -> list[str]:
    out = re.findall(r"^\s*from\s+([\w.]+)\s+import", text, re.M)
    out += re.findall(r"^\s*import\s+([\w.]+)", text, re.M)
    return out


def _hits(mods: list[str], table: dict[str, str]) -> Counter:
    c: Counter = Counter()
    for m in mods:
        for prefix, where in table.items():
            if m == prefix or m.startswith(prefix + "."):
                c[where] += 1
    return c


def classify(path: Path, text: str) -> str:
    """``unit/<layer>`` or ``surface/<front-end>`` for one test file."""
    if path.parent.name == "web":
        return "surface/web"  # with its conftest
    stem = path.stem[len("test_") :]
    for pattern, where in NAME_SURFACE:
        if re.search(pattern, stem):
            return f"surface/{where}"
    for pattern, where in NAME_LAYER:
        if re.search(pattern, stem):
            return f"unit/{where}"
    mods = imports_of(text)
    surf = _hits(mods, IMPORT_SURFACE)
    if re.search(r"\bmain\(\s*\[|\"kbtool\.cli\"|'kbtool\.cli'|CliRunner", text):
        surf["cli"] += 1
    if re.search(r"\brun_test\(|snap_compare|\bPilot\b", text):
        surf["tui"] += 2
    if re.search(r"\broute\(", text):
        surf["web"] += 1
    if surf:
        return "surface/" + max(SURFACES, key=lambda s: (surf[s], -SURFACES.index(s)))
    layers = _hits(mods, IMPORT_LAYER)
    for layer in LAYER_ORDER:
        if layers[layer]:
            return f"unit/{layer}"
    return "unit/services"


def plan(root: Path = ROOT) -> list[tuple[Path, Path]]:
    """(from, to) for every test file, paths relative to ``root``."""
    out = []
    for f in test_files(root):
        where = classify(f, f.read_text(encoding="utf-8"))
        out.append((f.relative_to(root), Path("tests") / where / f.name))
    return out


# ------------------------------------------------------------------ path fix-ups

# Path(__file__) expressions -> tests.support.paths names; the file's own depth is read from
# its path, so the same rewrite is right before and after a move.
_FILE = r"(?:__import__\(\"pathlib\"\)\.)?Path\(__file__\)(?:\.resolve\(\))?"
_EXPR = re.compile(
    _FILE + r"(?P<chain>\.parents\[\d+\]|\.parent\.parent|\.parent)"
    r"(?P<tail>(?:\s*/\s*\"[^\"]*\")*)"
)


def _target(m: re.Match[str], rel: Path) -> tuple[str, str] | None:
    """(``tests.support.paths`` name, what follows it) for one ``Path(__file__)`` expression
    of the file at ``rel``; None for a path inside the file's own directory tree."""
    depth = len(rel.parts) - 1  # tests/test_x.py: 1 (its .parent is tests/)
    chain, tail = m.group("chain"), m.group("tail") or ""
    k = {".parent": 0, ".parent.parent": 1}.get(chain)
    if k is None:
        k = int(chain[len(".parents[") : -1])
    if rel.parts[0] != "tests":
        return None
    if k == depth - 1:  # the tests directory
        fixtures = re.match(r'\s*/\s*"fixtures"', tail)
        if fixtures:
            return "FIXTURES", tail[fixtures.end() :]
        return "TESTS_DIR", tail
    if k == depth:
        return "ROOT", tail
    if k == depth + 1:
        corpus = re.match(r'\s*/\s*"shared"\s*/\s*"corpus"', tail)
        if corpus:
            return "CORPUS", tail[corpus.end() :]
        return "ROOT", ".parent" + tail
    return None


def fix_paths(text: str, rel: Path) -> str:
    """``text`` (the file at ``rel``, relative to the repository) without ``Path(__file__)``
    arithmetic: ``tests.support.paths`` names instead. Unchanged when it has none."""
    if not _EXPR.search(text):
        return text
    plain: set[str] = set()

    # `ROOT = Path(__file__).resolve().parents[1]`: the line goes, the import takes its place
    def whole(m: re.Match[str]) -> str:
        e = _EXPR.fullmatch(m.group(2))
        t = _target(e, rel) if e else None
        if t is not None and t == (m.group(1), ""):
            plain.add(t[0])
            return ""
        return m.group(0)

    text = re.sub(r"^(\w+) = (.+)\n", whole, text, flags=re.M)
    defined = set(re.findall(r"^(\w+)\s*[:=]", text, re.M))
    used: dict[str, str] = {n: n for n in plain}

    def sub(m: re.Match[str]) -> str:
        t = _target(m, rel)
        if t is None:
            return m.group(0)
        name, rest = t
        alias = used.get(name) or (
            f"{name}_DIR"
            if name in defined and not name.endswith("_DIR")
            else ("ALL_TESTS" if name in defined else name)
        )
        used[name] = alias
        return alias + rest

    new = _EXPR.sub(sub, text)
    if not used:
        return text
    names = [n if a == n else f"{n} as {a}" for n, a in sorted(used.items())]
    return _add_import(new, f"from tests.support.paths import {', '.join(names)}\n")


def _add_import(text: str, line: str) -> str:
    """``line`` after the last top-level import statement (ruff's isort tidies the block)."""
    imports = [n for n in ast.parse(text).body if isinstance(n, (ast.Import, ast.ImportFrom))]
    if not imports:
        return line + text
    lines = text.splitlines(keepends=True)
    end = imports[-1].end_lineno
    return "".join(lines[:end]) + line + "".join(lines[end:])


# ------------------------------------------------------------------ apply


def apply(root: Path) -> list[tuple[Path, Path]]:
    moves = plan(root)
    dirty = [
        str(a) for a, _b in moves if git("status", "--porcelain", "--", str(a), cwd=root).strip()
    ]
    if dirty:
        sys.exit("uncommitted changes in " + ", ".join(dirty[:10]) + ": commit them first")
    for sub in ("unit", "surface"):
        for d in {b.parent for _a, b in moves if b.parts[1] == sub} | {Path("tests") / sub}:
            (root / d).mkdir(parents=True, exist_ok=True)
            init = root / d / "__init__.py"
            if not init.exists():
                init.write_text("")
                git("add", str(init.relative_to(root)), cwd=root)
    # helpers first, so that rewriting imports sees the final names
    renames: dict[str, str] = {}
    for old, (new, old_mod, new_mod) in HELPERS.items():
        if (root / old).exists():
            git("mv", old, new, cwd=root)
            renames[old_mod] = new_mod
    web_conftest = root / "tests" / "web" / "conftest.py"
    if web_conftest.exists():
        git("mv", "tests/web/conftest.py", "tests/surface/web/conftest.py", cwd=root)
    for a, b in moves:
        git("mv", str(a), str(b), cwd=root)
        snap = root / "tests" / "__snapshots__" / a.stem
        if snap.is_dir():
            dest = root / b.parent / "__snapshots__"
            dest.mkdir(exist_ok=True)
            git("mv", str(snap.relative_to(root)), str((dest / a.stem).relative_to(root)), cwd=root)
    web_init = root / "tests" / "web" / "__init__.py"
    if web_init.exists() and not [
        p
        for p in (root / "tests" / "web").iterdir()
        if p.name not in ("__init__.py", "__pycache__")
    ]:
        git("rm", "-q", "tests/web/__init__.py", cwd=root)
    # a test module still imported by another (it should not be) is imported from its new place
    for a, b in moves:
        renames[".".join(a.with_suffix("").parts)] = ".".join(b.with_suffix("").parts)
    # rewrite: helper imports, Path(__file__) arithmetic, mentions of moved paths
    mentions = {str(a): str(b) for a, b in moves}
    mentions.update({old: new for old, (new, _m, _n) in HELPERS.items()})
    mentions["tests/web/conftest.py"] = "tests/surface/web/conftest.py"
    moved = {str(b) for _a, b in moves} | {new for new, _m, _n in HELPERS.values()}
    moved |= {"tests/surface/web/conftest.py"}
    tracked = [
        Path(p)
        for p in git("ls-files", cwd=root).splitlines()
        if p.endswith((".py", ".md", ".toml")) and (root / p).is_file()
    ]
    touched: list[str] = []
    for rel in tracked:
        f = root / rel
        text = f.read_text(encoding="utf-8")
        new = text
        for old_mod, new_mod in renames.items():
            new = re.sub(rf"\b{re.escape(old_mod)}\b", new_mod, new)
        if str(rel) in moved:
            new = fix_paths(new, rel)
        for old, dest in mentions.items():
            new = re.sub(rf"(?<![\w/]){re.escape(old)}\b", dest, new)
        if new != text:
            f.write_text(new, encoding="utf-8")
            touched.append(str(rel))
    # the import blocks the rewrite touched, tidied as the project's ruff wants them
    py = [t for t in touched if t.endswith(".py")]
    if py:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "ruff",
                "check",
                "--fix",
                "--quiet",
                "--select",
                "I001,F401",
                *py,
            ],
            cwd=root,
            check=False,
        )
    return moves


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--apply", action="store_true", help="move the files (git mv) and fix them up")
    ap.add_argument("--dry-run", action="store_true", help="print the plan only (the default)")
    ap.add_argument("--root", type=Path, default=ROOT, help="the checkout (default: this one)")
    ap.add_argument(
        "--fix-paths",
        nargs="+",
        metavar="FILE",
        type=Path,
        help="rewrite Path(__file__) uses in these test files, in place",
    )
    args = ap.parse_args(argv)
    root = args.root.resolve()
    if args.fix_paths:
        for f in args.fix_paths:
            f = f.resolve()
            text = f.read_text(encoding="utf-8")
            new = fix_paths(text, f.relative_to(root))
            if new != text:
                f.write_text(new, encoding="utf-8")
                print(f"fixed {f.relative_to(root)}")
        return 0
    moves = apply(root) if args.apply else plan(root)
    counts = Counter(str(b.parent) for _a, b in moves)
    for a, b in moves:
        print(f"{a} -> {b}")
    print()
    for d, n in sorted(counts.items()):
        print(f"{n:4d}  {d}/")
    print(f"{len(moves):4d}  test files {'moved' if args.apply else 'to move'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
