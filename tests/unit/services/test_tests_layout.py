"""The tests a newcomer can walk: no test module imports another, none computes paths from its
own location (so any file can move to any depth), and scripts/relayout_tests.py places every
test file in one of the agreed directories and rewrites path arithmetic correctly at any depth."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

from tests.support.paths import ROOT, TESTS_DIR

_spec = importlib.util.spec_from_file_location(
    "relayout_tests", ROOT / "scripts" / "relayout_tests.py"
)
relayout = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(relayout)

ALLOWED = {f"tests/unit/{x}" for x in relayout.LAYERS} | {
    f"tests/surface/{x}" for x in relayout.SURFACES
}


def _test_sources() -> list[Path]:
    return [
        p
        for p in TESTS_DIR.rglob("*.py")
        if "fixtures" not in p.relative_to(TESTS_DIR).parts
        and p.name not in ("paths.py", "test_tests_layout.py")
    ]  # (this file names the patterns)


def test_no_test_module_imports_another():
    bad = [
        f"{p.relative_to(ROOT)}: {m}"
        for p in _test_sources()
        for m in re.findall(
            r"^\s*(?:from|import)\s+(tests(?:\.\w+)*\.test_\w+)", p.read_text(), re.M
        )
    ]
    assert bad == [], "move the shared part to tests/support/"


def test_no_test_computes_paths_from_its_own_location():
    bad = [
        str(p.relative_to(ROOT))
        for p in _test_sources()
        if re.search(r"Path\(__file__\)\S*\.parent", p.read_text())
    ]
    assert bad == [], "use tests.support.paths (ROOT, TESTS_DIR, FIXTURES, CORPUS...)"


def test_every_test_file_has_one_place_in_the_layout():
    moves = relayout.plan(ROOT)
    if not moves:  # laid out already: every test file sits in an agreed directory
        placed = {
            str(p.parent.relative_to(ROOT))
            for p in TESTS_DIR.rglob("test_*.py")
            if "fixtures" not in p.parts and "support" not in p.parts
        }
        assert placed and placed <= ALLOWED
        return
    sources = {str(a) for a, _b in moves}
    assert sources == {str(p.relative_to(ROOT)) for p in relayout.test_files(ROOT)}
    assert {str(b.parent) for _a, b in moves} <= ALLOWED
    assert len({b for _a, b in moves}) == len(moves), "two files to one name"
    where = {str(a): str(b.parent) for a, b in moves}
    for name, place in (
        ("test_wasm_reader", "unit/wasm"),
        ("test_gate", "unit/kb"),
        ("test_tui", "surface/tui"),
        ("test_migrate_command", "surface/cli"),
    ):
        assert where.get(f"tests/{name}.py", f"tests/{place}") == f"tests/{place}"


def test_path_rewrite_names_the_same_place_at_any_depth():
    for rel, up in ((Path("tests/test_x.py"), 1), (Path("tests/unit/kb/test_x.py"), 3)):
        text = (
            "from pathlib import Path\n\n"
            f"ROOT = Path(__file__).resolve().parents[{up}]\n"
            f'FIX = Path(__file__).parents[{up - 1}] / "fixtures" / "lift"\n'
            f'DOC = Path(__file__).resolve().parents[{up}] / "docs" / "x.md"\n'
        )
        out = relayout.fix_paths(text, rel)
        assert "__file__" not in out
        assert "from tests.support.paths import FIXTURES, ROOT\n" in out
        assert "\nROOT = " not in out  # the import takes the line's place
        assert 'FIX = FIXTURES / "lift"' in out and 'DOC = ROOT / "docs" / "x.md"' in out
    # a module-level name of the file's own keeps its meaning through an alias
    own = 'from pathlib import Path\n\nFIXTURES = Path(__file__).parent / "fixtures" / "analysis"\n'
    out = relayout.fix_paths(own, Path("tests/test_y.py"))
    assert "from tests.support.paths import FIXTURES as FIXTURES_DIR" in out
    assert 'FIXTURES = FIXTURES_DIR / "analysis"' in out


def test_benchmarks_never_import_tests():
    """What benchmarks and tests share lives in ``testkit/``."""
    bad = [
        f"{p.relative_to(ROOT)}: {m}"
        for p in (ROOT / "benchmarks").rglob("*.py")
        for m in re.findall(r"^\s*(?:from|import)\s+(tests(?:\.\w+)*)\b", p.read_text(), re.M)
    ]
    assert bad == [], "move the shared part to testkit/"
