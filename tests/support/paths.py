"""Where the tests find the repository, the bundled demo releases and the wasm corpus."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DEMO_DIR = ROOT / "kbtool" / "demo"
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
