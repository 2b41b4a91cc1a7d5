"""Another optimisation level of a program is not joined silently or wrongly (issue 23 points
1 and 10): own-code overlap between -O2/-Os/-O3 builds of one program goes as low as 0.6 %
(zstd, emcc) while different programs sharing a libc reach 4.6 %, so such a build starts a
new program, and the ingest summary says that ``--program`` joins it."""

from __future__ import annotations

from kbtool.services.lineage import near_miss
from tests.support.cli import run_cli
from tests.support.programs import program_build


def test_an_os_build_of_an_o2_program_gets_a_hint_and_joins_with_program(tmp_path):
    o2 = program_build("lz4-1.9.4.clang.O2.stripped.wasm")
    os_ = program_build("lz4-1.9.4.clang.Os.stripped.wasm")
    db = str(tmp_path / "kb.db")
    first = run_cli("--db", db, "ingest", str(o2), "--label", "o2")
    assert first.returncode == 0, first.stderr
    assert "hint:" not in first.stdout
    res = run_cli("--db", db, "ingest", str(os_), "--label", "os")
    assert res.returncode == 0, res.stderr
    out = " ".join(res.stdout.split())
    assert "program lz4-2 (new:" in out and "nothing carried from other programs" in out
    assert "hint: if this is another build of program lz4" in out
    assert "with its version 1), ingest it with --program lz4" in out
    again = run_cli(
        "--db", db, "ingest", str(os_), "--label", "os-joined", "--force", "--program", "lz4"
    )
    assert again.returncode == 0, again.stderr
    assert "program lz4: parent version 1 (--program" in " ".join(again.stdout.split())


def test_a_different_program_sharing_nothing_gets_no_hint(tmp_path):
    yaml = program_build("libyaml-0.1.7.clang.O2.stripped.wasm")
    lz4 = program_build("lz4-1.9.4.clang.O2.stripped.wasm")
    db = str(tmp_path / "kb.db")
    assert run_cli("--db", db, "ingest", str(yaml)).returncode == 0
    res = run_cli("--db", db, "ingest", str(lz4))
    assert res.returncode == 0, res.stderr
    assert "program lz4 (new:" in res.stdout and "hint:" not in res.stdout


def test_near_miss_prefers_the_program_the_file_name_gives():
    rows = [
        (0.02, None, 4, {"program": "lua"}),
        (0.0, None, 1, {"program": "zstd"}),
    ]
    assert near_miss("zstd", rows) == {"program": "zstd", "version_id": 1, "overlap": 0.0}
    assert near_miss("brotli", rows) == {"program": "lua", "version_id": 4, "overlap": 0.02}
    assert near_miss("brotli", [(0.0, None, 1, {"program": "zstd"})]) is None
    assert near_miss("brotli", []) is None
