"""The CLI's command modules and their registry.

:data:`MODULES` lists every command module in registration order (``kbtool --help`` lists
their commands in that order); :data:`COMMANDS` and :data:`GROUPS` say which module registers
each top-level command or command group and its one-line help, so ``kbtool versions`` imports
only :mod:`kbtool.commands.core` and ``kbtool --help`` imports none
(tests/surface/cli/test_cli_startup.py checks both tables against the real app).
"""

from __future__ import annotations

MODULES: tuple[str, ...] = (
    "core",
    "names",
    "programs",
    "mcp",
    "serve",
    "tui",
    "diff",
    "code",
    "deep",
    "agent",
    "analyze",
    "backup",
    "data",
    "knowledge",
    "types",
    "migrate",
)

# (name, module, one-line help) of each top-level command, in registration order.
COMMANDS: tuple[tuple[str, str, str], ...] = (
    (
        "ingest",
        "core",
        "Ingest one release of a module: decode it, store facts, carry identities and names.",
    ),
    ("versions", "core", "List ingested versions with toolchain, function counts and coverage."),
    (
        "functions",
        "core",
        "List the functions of a version with their names, provenance and confidence.",
    ),
    (
        "coverage",
        "core",
        "Show how many defined functions of a version are named, split by provenance.",
    ),
    ("show", "core", "Show a logical function: its annotation record and where it appears."),
    ("demo", "core", "Build a demo KB from the bundled zstd releases and show what it holds."),
    (
        "set-name",
        "names",
        "Name a function as a human (locked by default: no tool may overwrite it).",
    ),
    (
        "unlock",
        "names",
        "Unlock a human name so oracle/export names of higher confidence may replace it.",
    ),
    (
        "revert",
        "names",
        "Restore the annotation as it was before a change: name, provenance, confidence, lock (see `kbtool renames`; reverting twice redoes).",
    ),
    ("renames", "names", "The reversible rename trail of a function, newest first."),
    (
        "history",
        "names",
        "When a function was first seen, every version it is in, and every decision on its name and knowledge (comment, line comments, prototype, local names and types).",
    ),
    ("search", "names", "Search functions by name, index, referenced string or constant."),
    (
        "export",
        "names",
        "Export a version's names as git-diffable, tab-separated text (or into the module: --wasm).",
    ),
    (
        "import-names",
        "names",
        "Read names from a `kbtool export` file into the KB, each onto the function it belongs to: same module + index, else a unique exact body, else a unique shape (not for tiny bodies), else the stable id.",
    ),
    (
        "set-program",
        "programs",
        "Move a version into another program and carry names from its most related version there.",
    ),
    ("mcp", "mcp", "Serve the KB as MCP tools over stdio (run by an MCP client, not by hand)."),
    (
        "serve",
        "serve",
        "Serve the dashboard and its read-only JSON API (default http://127.0.0.1:8787/).",
    ),
    (
        "tui",
        "tui",
        "Browse the KB in the terminal: versions, heatmap, diff, search, detail, history.",
    ),
    (
        "diff",
        "diff",
        "What changed between two versions: classification per function, then the changelog.",
    ),
    ("code", "code", "Show one function's code: the disassembly (raw wasm) and the C it lifts to."),
    (
        "deep",
        "deep",
        "Lift each function to C, clean it (variables renamed from their roles) and write an understanding; the studio's Agents panel shows the work live.",
    ),
    (
        "agent",
        "agent",
        "Name functions of a version with an agent backend (provenance `agent`, through the gate).",
    ),
    (
        "suggestions",
        "agent",
        "Agent names kept below the write floor: list them, accept them through the gate, dismiss them.",
    ),
    (
        "analyze",
        "analyze",
        "Static analysis of a stored version: name libc/runtime functions (as agent, through the gate), record thread facts and recover structs.",
    ),
    (
        "backup",
        "backup",
        "Copy the KB to OUT as one consistent file, safe while kbtool is reading or writing it.",
    ),
    (
        "xrefs",
        "data",
        "Who uses TARGET: each place (function, offset, kind); for a function also what it uses.",
    ),
    ("strings", "data", "The version's strings (C, UTF-16, Go) with their labels and xref counts."),
    (
        "globals",
        "data",
        "The version's globals: type, initial value, import/export, role, name, readers/writers.",
    ),
    ("data", "data", "The version's data items (address, size, kind, label, xref count)."),
    (
        "memory",
        "data",
        "The initial memory at ADDRESS as hex and ASCII (what the data segments put there).",
    ),
    (
        "comment",
        "knowledge",
        "Comment a function (or, with --line, one instruction of it), as a human (locked).",
    ),
    (
        "set-type",
        "knowledge",
        "Set a function's prototype (checked against its wasm signature); its parameter names become the C parameter names.",
    ),
    ("rename-local", "knowledge", "Name a parameter or local variable of a function."),
    (
        "name-data",
        "knowledge",
        "Name a data item (by its content: every release with the same bytes shows it) or a global.",
    ),
    (
        "knowledge",
        "knowledge",
        "A function's comments, prototype, line comments and local names (with provenance).",
    ),
    (
        "revert-knowledge",
        "knowledge",
        "Restore a comment, prototype or local name as it was before its latest change(s).",
    ),
    (
        "migrate",
        "migrate",
        "Migrate the KB to this kbtool's schema, in one transaction (a no-op on a current KB).",
    ),
)

# (name, module, one-line help) of each command group (``kbtool ui diff``, ``kbtool types add``).
GROUPS: tuple[tuple[str, str, str], ...] = (
    ("ui", "diff", "Read-only terminal views (Rich)."),
    ("oracle", "diff", "Reference modules that carry names, and naming from them."),
    (
        "types",
        "types",
        "Struct, union, enum and typedef declarations: add, list, show, apply, rename, export.",
    ),
)


def module_of(name: str) -> str | None:
    """The module (a name in :data:`MODULES`) that registers command or group ``name``."""
    for entry in COMMANDS + GROUPS:
        if entry[0] == name:
            return entry[1]
    return None
