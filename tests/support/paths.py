"""Where the tests find the repository, their fixtures, the bundled demo releases and the wasm
corpus: one place, so a test file can move to any depth below tests/ unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]  # the checkout (tests/support/paths.py -> ROOT)
TESTS_DIR = ROOT / "tests"
FIXTURES = TESTS_DIR / "fixtures"  # wasm, C, Go and JS inputs the tests build or read
SNAPSHOTS = (
    TESTS_DIR / "surface" / "tui" / "__snapshots__"
)  # Textual snapshot images (pytest-textual-snapshot, next to their tests)
BENCHMARKS = ROOT / "benchmarks"
DOCS = ROOT / "docs"
PACKAGE = ROOT / "kbtool"
DEMO_DIR = PACKAGE / "demo"
DEMO_WASM = DEMO_DIR / "zstd-1.5.5.wasm"  # the older bundled demo release
CORPUS = ROOT.parent / "shared" / "corpus"  # ../shared/corpus next to the checkout ...
if not CORPUS.is_dir():
    CORPUS = Path("/work/shared/corpus")  # ... or the shared one (git worktrees live elsewhere)


def corpus_manifest() -> dict | None:
    """The corpus MANIFEST, or None without a corpus."""
    m = CORPUS / "MANIFEST.json"
    return json.loads(m.read_text()) if m.exists() else None


def corpus_file(rel: str) -> Path:
    """A corpus file; skips the calling test when it is absent."""
    p = CORPUS / rel
    if not p.exists():
        pytest.skip(f"corpus file {rel} not present")
    return p


def run_ok(cmd: list[str]) -> bool:
    """Whether a command runs and exits 0 (probing what this machine permits)."""
    import subprocess

    return subprocess.run(cmd, capture_output=True).returncode == 0
