"""What a plain ``kbtool ingest`` of a small module has in ``sys.modules`` when it ends (issue
30.4: most of such an ingest's CPU is the interpreter's start and its imports). Read from
``sys.modules`` at exit, not from ``-X importtime`` (which misses what
``importlib.import_module`` loads), in the user's own process (``main()`` with the process's
command line: the direct ingest and its early exit), without ``site`` (whose hooks import
modules of their own), the installed packages on the path.

The other lean tests name modules one by one (``test_ingest_start_lean.py``: kbtool's
packages; ``test_ingest_lean.py``: the UI stacks; ``test_ingest_stdlib_lean.py``: tempfile,
shlex); this one bounds the whole set: the third-party packages a fresh ingest may load at
all, the standard library's heavy subsystems, the matcher and the diff services on a first
version, and Rich's console alone (no progress bar) on a terminal."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

from tests.support.paths import DEMO_DIR, ROOT

#: the only packages outside the standard library and kbtool a plain ingest into a pipe
#: loads: orjson (stored JSON, the fingerprint data) and the compiled twins' runtime
THIRD_PARTY_ALLOWED = {"orjson", "librt", "mypy_extensions"}

#: standard-library subsystems no small ingest runs (each costs ms to import)
STDLIB_NEVER = {
    "argparse",
    "asyncio",
    "bz2",
    "concurrent",
    "csv",
    "decimal",
    "email",
    "gettext",
    "gzip",
    "http",
    "locale",
    "logging",
    "lzma",
    "multiprocessing",
    "pickle",
    "selectors",
    "shlex",
    "shutil",
    "socket",
    "ssl",
    "subprocess",
    "tarfile",
    "tempfile",
    "textwrap",
    "unittest",
    "xml",
    "zipfile",
}

#: kbtool packages a first version's ingest never runs (a prefix covers its submodules)
KBTOOL_NOT_ON_A_FIRST_INGEST = (
    "kbtool.agents",
    "kbtool.commands.common",
    "kbtool.commands.consoles",
    "kbtool.glue",
    "kbtool.identity.matcher",
    "kbtool.identity._cmatcher",
    "kbtool.identity.pairing",
    "kbtool.lift",
    "kbtool.mcp",
    "kbtool.render",
    "kbtool.services.code_store",
    "kbtool.services.diff",
    "kbtool.services.knowledge",
    "kbtool.terminal",
    "kbtool.tui",
    "kbtool.web",
)

#: kbtool packages not even a later version's ingest runs
KBTOOL_NEVER = (
    "kbtool.agents",
    "kbtool.commands.common",
    "kbtool.glue",
    "kbtool.lift",
    "kbtool.mcp",
    "kbtool.services.code_store",
    "kbtool.terminal",
    "kbtool.tui",
    "kbtool.web",
)

#: what the process prints into a file at exit (``_end_process`` runs the exit handlers)
_RUNNER = """
import atexit, sys
out = sys.argv.pop(1)
atexit.register(lambda: open(out, "w").write("\\n".join(sorted(sys.modules))))
from kbtool.cli import main
sys.argv = ["kbtool", *sys.argv[1:]]
sys.exit(main())
"""


def _modules_of_ingest(tmp_path: Path, db: Path, wasm: Path, **env: str) -> set[str]:
    out = tmp_path / f"modules-{wasm.stem}-{len(env)}.txt"
    path = os.pathsep.join(
        [str(ROOT), sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]
    )
    base = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE")}
    r = subprocess.run(
        [sys.executable, "-S", "-c", _RUNNER, str(out), "--db", str(db), "ingest", str(wasm)],
        capture_output=True,
        text=True,
        env={
            **base,
            "PYTHONPATH": path,
            "KBTOOL_DIFF_WARM": "0",
            "KBTOOL_CODE_WARM": "0",
            **env,
        },
        cwd=tmp_path,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert "ingested version" in r.stdout
    return set(out.read_text().splitlines())


def _under(name: str, prefixes: tuple[str, ...] | set[str]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def _third_party(loaded: set[str]) -> set[str]:
    stdlib = set(sys.stdlib_module_names) | set(sys.builtin_module_names) | {"__main__"}
    return {m.split(".")[0] for m in loaded} - stdlib - {"kbtool"}


def test_fresh_ingest_into_a_pipe_loads_a_bounded_set(tmp_path: Path) -> None:
    loaded = _modules_of_ingest(tmp_path, tmp_path / "kb.db", DEMO_DIR / "zstd-1.5.5.wasm")
    assert {"kbtool.services.ingest", "kbtool.kb.gate", "orjson"} <= loaded  # a real ingest
    assert _third_party(loaded) <= THIRD_PARTY_ALLOWED, sorted(_third_party(loaded))
    assert not {m.split(".")[0] for m in loaded} & STDLIB_NEVER
    extra = sorted(m for m in loaded if _under(m, KBTOOL_NOT_ON_A_FIRST_INGEST))
    assert not extra, f"a first ingest loaded {extra}"


def test_fresh_ingest_on_a_terminal_loads_rich_console_only(tmp_path: Path) -> None:
    loaded = _modules_of_ingest(
        tmp_path, tmp_path / "kb.db", DEMO_DIR / "zstd-1.5.5.wasm", TTY_COMPATIBLE="1"
    )
    assert "rich.console" in loaded  # the terminal's summary is Rich's
    assert _third_party(loaded) <= THIRD_PARTY_ALLOWED | {"rich"}, sorted(_third_party(loaded))
    # a small module shows no progress bar; Rich's markdown and syntax stacks never run
    assert not {"rich.progress", "rich.live", "rich.syntax", "rich.markdown"} & loaded
    assert not {m.split(".")[0] for m in loaded} & STDLIB_NEVER - {"pickle"}  # (rich.console)


def test_later_ingest_loads_no_front_end(tmp_path: Path) -> None:
    db = tmp_path / "kb.db"
    _modules_of_ingest(tmp_path, db, DEMO_DIR / "zstd-1.5.5.wasm")
    loaded = _modules_of_ingest(tmp_path, db, DEMO_DIR / "zstd-1.5.6.wasm")
    assert "kbtool.identity.pairing" in loaded  # the matcher ran (a later version)
    assert _third_party(loaded) <= THIRD_PARTY_ALLOWED, sorted(_third_party(loaded))
    assert not {m.split(".")[0] for m in loaded} & STDLIB_NEVER
    extra = sorted(m for m in loaded if _under(m, KBTOOL_NEVER))
    assert not extra, f"a later ingest loaded {extra}"
