"""Look-alike families and wrapper splits in the matcher: context decides, or the pair is flagged."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from kbtool.identity.matcher import REVIEW_SCORE, match_functions
from kbtool.identity.records import records_from_analysis
from kbtool.wasm import analyze_module

pytestmark = pytest.mark.skipif(shutil.which("wat2wasm") is None, reason="needs wat2wasm")


def _records(tmp_path: Path, name: str, text: str):
    src = tmp_path / f"{name}.wat"
    src.write_text(text)
    out = tmp_path / f"{name}.wasm"
    subprocess.run(["wat2wasm", str(src), "-o", str(out)], check=True)
    return records_from_analysis(analyze_module(out.read_bytes()))


def _body(k: int) -> str:
    """A look-alike: the same instruction stream, ``k`` the only difference."""
    return (
        f"(param i32) (result i32) local.get 0 i32.load offset=8 i32.const {k} i32.add "
        "local.get 0 i32.load offset=16 i32.mul i32.const 7 i32.xor"
    )


def _caller(tag: int, callee: str) -> str:
    """A distinct caller (its own constants) calling ``callee``."""
    return (
        f"(param i32) (result i32) local.get 0 i32.const {1000 + tag} i32.add call {callee} "
        f"i32.const {2000 + 3 * tag} i32.mul i32.const {tag} i32.sub"
    )


def _module(funcs: list[tuple[str, str]]) -> str:
    body = "\n".join(f"  (func {name} {text})" for name, text in funcs)
    return f"(module\n  (memory 1)\n{body}\n)"


def _pairs(old, new) -> dict[int, tuple[int, float, bool]]:
    return {m.old_index: (m.new_index, m.score, m.review) for m in match_functions(old, new)}


def test_rotated_family_paired_by_callers(tmp_path: Path) -> None:
    """Four identical methods whose order rotates; each has its own caller: no flags."""
    fam = [f"$m{i}" for i in range(4)]
    callers = [(f"$c{i}", _caller(i, fam[i])) for i in range(4)]
    v1 = _module([(f, _body(5)) for f in fam] + callers)
    rot = fam[1:] + fam[:1]  # m1 m2 m3 m0 in v2
    v2 = _module([(f, _body(5)) for f in rot] + callers)
    got = _pairs(_records(tmp_path, "v1", v1), _records(tmp_path, "v2", v2))
    for i in range(4):
        new_index = rot.index(fam[i])
        n, score, review = got[i]
        assert n == new_index, (i, got[i])
        assert not review and score >= REVIEW_SCORE


def test_twins_nothing_decides_are_flagged(tmp_path: Path) -> None:
    """Twins differing in one constant, no callers, whose order flips: the body says one
    pairing, the order the other; flagged with a score below the review threshold."""
    anchor_a = ("$a", _caller(1, "$x"))
    anchor_b = ("$b", _caller(2, "$x"))
    x = ("$x", "(param i32) (result i32) local.get 0 i32.const 99 i32.rotl")
    v1 = _module([x, anchor_a, ("$t1", _body(1)), ("$t2", _body(2)), anchor_b])
    v2 = _module([x, anchor_a, ("$t2", _body(2)), ("$t1", _body(1)), anchor_b])
    got = _pairs(_records(tmp_path, "v1", v1), _records(tmp_path, "v2", v2))
    for o in (2, 3):
        n, score, review = got[o]
        assert review, got[o]
        assert score < REVIEW_SCORE
    # the anchors themselves are decided
    assert got[1][0] == 1 and not got[1][2]


def test_changed_constant_twins_decided_by_callers(tmp_path: Path) -> None:
    """v2 changes both twins' constants so that old t2 looks exactly like new t1; the callers
    disagree with the body: never a confident pair."""
    v1 = _module(
        [
            ("$t1", _body(1)),
            ("$t2", _body(2)),
            ("$c1", _caller(1, "$t1")),
            ("$c2", _caller(2, "$t2")),
        ]
    )
    v2 = _module(
        [
            ("$t1", _body(2)),
            ("$t2", _body(3)),
            ("$c1", _caller(1, "$t1")),
            ("$c2", _caller(2, "$t2")),
        ]
    )
    got = _pairs(_records(tmp_path, "v1", v1), _records(tmp_path, "v2", v2))
    for o in (0, 1):
        if o in got and got[o][0] != o:  # any wrong pairing of a twin is flagged
            assert got[o][2] and got[o][1] < REVIEW_SCORE, got[o]


def test_wrapper_split_follows_the_callers(tmp_path: Path) -> None:
    """v1 ``api`` holds the body; v2 ``api`` is a thin wrapper calling the outlined body.
    The name follows the callers to the wrapper, unflagged (the callers back it)."""
    body = (
        "(param i32) (result i32) local.get 0 i32.load offset=4 local.get 0 i32.load offset=12 "
        "i32.add i32.const 17 i32.mul local.get 0 i32.load offset=20 i32.xor i32.const 3 i32.shl"
    )
    v1 = _module([("$api", body), ("$user", _caller(7, "$api"))])
    v2 = _module(
        [
            ("$internal", body),
            ("$api", "(param i32) (result i32) local.get 0 call $internal"),
            ("$user", _caller(7, "$api")),
        ]
    )
    got = _pairs(_records(tmp_path, "v1", v1), _records(tmp_path, "v2", v2))
    n, score, review = got[0]
    assert n == 1, got
    assert not review


def test_added_wrapper_does_not_steal(tmp_path: Path) -> None:
    """A new wrapper around an unchanged function its callers still call: the pair stays."""
    body = (
        "(param i32) (result i32) local.get 0 i32.load offset=4 i32.const 9 i32.add "
        "local.get 0 i32.load offset=28 i32.mul i32.const 5 i32.shr_u i32.const 11 i32.or"
    )
    v1 = _module([("$f", body), ("$user", _caller(3, "$f"))])
    v2 = _module(
        [
            ("$f", body),
            ("$compat", "(param i32) (result i32) local.get 0 call $f"),
            ("$user", _caller(3, "$f")),
        ]
    )
    got = _pairs(_records(tmp_path, "v1", v1), _records(tmp_path, "v2", v2))
    assert got[0][0] == 0 and not got[0][2]


def test_diff_never_shows_flagged_twins_as_confident(tmp_path: Path) -> None:
    """End to end: ingest named v1 and v2 (twins whose order flips), diff, carry-over. No
    flagged change is unchanged/moved at or above the review threshold, and names carried
    over flagged pairs say so (review evidence, confidence below 0.5)."""
    from kbtool.kb import queries
    from kbtool.kb.db import open_rw
    from kbtool.services.diff.carry import carry_names
    from kbtool.services.diff.report import compute_diff
    from kbtool.services.ingest import ingest_bytes

    anchor_a = ("$a", _caller(1, "$x"))
    anchor_b = ("$b", _caller(2, "$x"))
    x = ("$x", "(param i32) (result i32) local.get 0 i32.const 99 i32.rotl")
    exports = ' (export "a" (func $a)) (export "b" (func $b))'
    v1 = _module([x, anchor_a, ("$t1", _body(1)), ("$t2", _body(2)), anchor_b])[:-1] + exports + ")"
    v2 = _module([x, anchor_a, ("$t2", _body(2)), ("$t1", _body(1)), anchor_b])[:-1] + exports + ")"
    blobs = []
    for name, text, flags in (("v1", v1, ["--debug-names"]), ("v2", v2, [])):
        (tmp_path / f"{name}.wat").write_text(text)
        out = tmp_path / f"{name}.wasm"
        subprocess.run(
            ["wat2wasm", *flags, str(tmp_path / f"{name}.wat"), "-o", str(out)], check=True
        )
        blobs.append(out.read_bytes())
    conn = open_rw(tmp_path / "kb.db")
    a = ingest_bytes(conn, blobs[0], label="v1", carry=False).version_id
    b = ingest_bytes(conn, blobs[1], label="v2", carry=False).version_id
    carry_names(conn, a, b)
    report = compute_diff(conn, a, b)
    twins = [c for c in report["changes"] if c["to_index"] in (2, 3)]
    assert twins and all(c["review"] for c in twins), twins
    for c in report["changes"]:
        if c["review"]:
            assert c["score"] is None or c["score"] < REVIEW_SCORE, c
    carried = queries.annotations_by_index(conn, b, with_evidence=True)
    seen = 0
    for idx in (2, 3):
        ann = carried.get(idx)
        if ann is not None and ann["provenance"] == "diff-carry":
            seen += 1
            assert ann["confidence"] < 0.5
            ev = ann["evidence"]
            ev = ev[-1] if isinstance(ev, list) else ev
            assert ev.get("review") is True, ann
    assert seen, carried  # the twins' names did travel, as flagged carries
    conn.close()


def test_folded_wrapper_follows_the_callers(tmp_path: Path) -> None:
    """The mirror case: v1 has ``api`` (thin wrapper) + ``internal`` (body); v2 inlined the
    body into ``api``. The new ``api`` pairs with the old wrapper, as its callers say."""
    body = (
        "(param i32) (result i32) local.get 0 i32.load offset=4 local.get 0 i32.load offset=12 "
        "i32.add i32.const 17 i32.mul local.get 0 i32.load offset=20 i32.xor i32.const 3 i32.shl"
    )
    v1 = _module(
        [
            ("$internal", body),
            ("$api", "(param i32) (result i32) local.get 0 call $internal"),
            ("$user", _caller(7, "$api")),
        ]
    )
    v2 = _module([("$api", body), ("$user", _caller(7, "$api"))])
    got = _pairs(_records(tmp_path, "v1", v1), _records(tmp_path, "v2", v2))
    assert got.get(1, (None,))[0] == 0, got  # old wrapper api -> new api
    assert 0 not in got or got[0][0] != 0  # the old body does not take the name


def test_flagged_pairs_keep_no_identity(tmp_path: Path) -> None:
    """``fuzzy=False`` (what ingest keeps identities by) leaves out flagged look-alikes."""
    x = ("$x", "(param i32) (result i32) local.get 0 i32.const 99 i32.rotl")
    v1 = _module(
        [
            x,
            ("$a", _caller(1, "$x")),
            ("$t1", _body(1)),
            ("$t2", _body(2)),
            ("$b", _caller(2, "$x")),
        ]
    )
    v2 = _module(
        [
            x,
            ("$a", _caller(1, "$x")),
            ("$t2", _body(2)),
            ("$t1", _body(1)),
            ("$b", _caller(2, "$x")),
        ]
    )
    old, new = _records(tmp_path, "v1", v1), _records(tmp_path, "v2", v2)
    exact = {m.old_index for m in match_functions(old, new, fuzzy=False)}
    full = {m.old_index: m for m in match_functions(old, new)}
    assert 2 not in exact and 3 not in exact
    assert full[2].review and full[3].review
    assert all(not m.review for m in match_functions(old, new, fuzzy=False))
