"""Shared fixtures: the bundled demo releases, a built demo KB, the corpus (skipped when absent)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DEMO_DIR = ROOT / "kbtool" / "demo"
CORPUS = ROOT.parent / "shared" / "corpus"


@pytest.fixture(autouse=True)
def _frozen_time(monkeypatch):
    monkeypatch.setenv("KBTOOL_FROZEN_TIME", "2026-01-01T00:00:00.000000Z")


@pytest.fixture(scope="session")
def demo_kb_master(tmp_path_factory) -> Path:
    """The demo KB, built once per session (copy it with ``demo_kb`` before writing)."""
    import os

    from kbtool.services.demo import build_demo

    os.environ["KBTOOL_FROZEN_TIME"] = "2026-01-01T00:00:00.000000Z"
    path = tmp_path_factory.mktemp("demo") / "demo.db"
    build_demo(path, echo=lambda _msg: None)
    from kbtool.kb.db import open_rw

    conn = open_rw(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return path


@pytest.fixture
def demo_kb(demo_kb_master, tmp_path) -> Path:
    """A private copy of the demo KB."""
    dst = tmp_path / "demo.db"
    shutil.copy(demo_kb_master, dst)
    return dst


def corpus_manifest() -> dict | None:
    m = CORPUS / "MANIFEST.json"
    return json.loads(m.read_text()) if m.exists() else None


def corpus_file(rel: str) -> Path:
    p = CORPUS / rel
    if not p.exists():
        pytest.skip(f"corpus file {rel} not present")
    return p
