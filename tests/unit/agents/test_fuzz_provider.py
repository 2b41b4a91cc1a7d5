"""The fuzz harness's provider layer (issue #24, "the fuzz harness runs the new output-path,
signal and provider cases"): ``benchmarks.fuzz_provider`` drives ``kbtool agent --backend
provider_b`` in real subprocesses against hostile endpoints on 127.0.0.1 and finds no
failure; its checks do catch a misbehaving run (a traceback, a multi-line error, raw control
characters, a name that is not an identifier)."""

from __future__ import annotations

import random
import subprocess
import sys

import pytest

from benchmarks import fuzz_provider as fp
from tests.support.paths import ROOT

pytest.importorskip("openai")


def test_hostile_endpoints_give_bounded_clean_runs():
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.fuzz_provider",
            "--smoke",
            "--kinds",
            "malformed,trickle",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "0 failures" in r.stdout
    assert "provider malformed 1" in r.stdout and "provider trickle 1" in r.stdout


def test_the_endpoint_misbehaves_as_described():
    import json
    import urllib.error
    import urllib.request

    def post(srv) -> tuple[int, bytes]:
        req = urllib.request.Request(srv.url + "/chat/completions", data=b"{}", method="POST")
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                return resp.status, resp.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()

    with fp.HostileProvider("storm-429", random.Random(1)) as srv:
        code, body = post(srv)
        assert code == 429 and "error" in json.loads(body)
    with fp.HostileProvider("huge", random.Random(1)) as srv:
        code, body = post(srv)
        assert code == 200 and len(body) > fp.MAX_BYTES * 10
    with fp.HostileProvider("malformed", random.Random(1)) as srv:
        labels = {
            post(srv) and srv.labels[-1] for _ in range(len(fp.malformed_bodies(random.Random(0))))
        }
        assert {"control name", "deep nesting", "not json", "empty"} <= labels


def test_the_checks_catch_a_bad_run(tmp_path):
    """The failure checks are not vacuous: a KB holding an agent name with an escape and a
    confidence over 1 fails the KB check."""
    import shutil
    import sqlite3

    from kbtool.services.demo import build_demo

    db = tmp_path / "kb.db"
    build_demo(db, echo=lambda _m: None)
    assert fp._check_kb(db) is None
    bad = tmp_path / "bad.db"
    shutil.copyfile(db, bad)
    conn = sqlite3.connect(bad)
    sid = conn.execute("SELECT stable_id FROM symbols LIMIT 1").fetchone()[0]
    conn.execute(
        "UPDATE symbols SET name = ?, provenance = 'agent', confidence = 2.0 WHERE stable_id = ?",
        ("evil\x1bname", sid),
    )
    conn.commit()
    conn.close()
    assert "not identifiers" in (fp._check_kb(bad) or "")
