"""Knowledge beyond names (issue 27): comments, line comments, prototypes, local names and data
names through the one gate, shown in the code, carried to the next release, bad input refused."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from kbtool.kb import gate
from kbtool.kb import knowledge as kn
from kbtool.kb.db import open_rw
from kbtool.services import code as code_service
from kbtool.services import knowledge as ks
from kbtool.services.diff.carry import carry_names
from kbtool.services.ingest import ingest_file
from tests.support.paths import DEMO_DIR

DEMO_V1 = DEMO_DIR / "zstd-1.5.5.wasm"
DEMO_V2 = DEMO_DIR / "zstd-1.5.6.wasm"


def _instr_offsets(mnemonics: str) -> list[int]:
    out = []
    for row in mnemonics.splitlines():
        head = row.strip().split(":", 1)[0]
        if row.startswith(" ") and len(head) == 6 and all(c in "0123456789abcdef" for c in head):
            out.append(int(head, 16))
    return out


def _fn_with_params(conn, vid: int, min_instrs: int = 8) -> int:
    from kbtool.kb import queries

    for f in queries.list_functions(conn, vid):
        if f["type"].startswith("(i32, i32)"):
            row = queries.get_function(conn, vid, f["index"])
            if not row["imported"] and row["instr_count"] >= min_instrs:
                return f["index"]
    raise AssertionError("no function with two i32 parameters")


def test_every_kind_goes_through_the_gate(demo_kb):
    conn = open_rw(demo_kb)
    idx = _fn_with_params(conn, 1)
    f = ks.resolve_function(conn, f"1:{idx}")
    sid = f["stable_id"]
    # agent first, then a human: the human wins and locks; the agent is then refused
    assert ks.set_comment(
        conn, sid, "agent idea", provenance="agent", confidence=0.6, actor="agent:t"
    )["written"]
    assert ks.set_comment(conn, sid, "Parses the frame header.")["written"]
    d = ks.set_comment(
        conn, sid, "agent again", provenance="agent", confidence=0.99, actor="agent:t"
    )
    assert not d["written"] and d["reason"] == "locked"
    assert kn.get(conn, "comment", sid)["value"]["text"] == "Parses the frame header."
    # an unlocked human comment still outranks agents, and an oracle needs a higher confidence
    assert ks.rename_local(conn, sid, "p0", "src", lock=False, confidence=0.7)["written"]
    assert not ks.rename_local(
        conn, sid, "0", "other", provenance="agent", confidence=1.0, actor="a"
    )["written"]
    assert not ks.rename_local(
        conn, sid, "0", "other", provenance="oracle", confidence=0.7, actor="o"
    )["written"]
    assert ks.rename_local(conn, sid, "0", "other", provenance="oracle", confidence=0.8, actor="o")[
        "written"
    ]
    # prototypes: normalised, checked against the wasm signature
    sig = f["type_sig"]
    n_params = len(kn.parse_type_sig(sig)[0])
    ret = "int" if sig.endswith("-> i32") else "void"
    params = ", ".join(f"char *a{k}" for k in range(n_params))
    assert ks.set_prototype(conn, sid, f"{ret}   demo_fn( {params} );")["written"]
    assert kn.get(conn, "prototype", sid)["value"]["text"] == f"{ret} demo_fn({params})"
    # events: one per decision, with the kind and key, old and new; the name history is untouched
    evs = ks.history(conn, sid)
    assert [e["subject"] for e in evs].count("comment") == 3
    assert any(e["subject"] == "local" and e["key"] == "0" and not e["written"] for e in evs)
    from kbtool.kb import queries

    assert all(
        e["kind"] not in ("human-edit",) or e["new_name"]
        for e in queries.annotation_events(conn, sid)
    )
    # revert per kind: the local goes back to the human name, exactly (unlocked, 0.7)
    assert gate.revert_knowledge(conn, "local", sid, "0")["written"]
    rec = kn.get(conn, "local", sid, "0")
    assert (rec["value"]["name"], rec["provenance"], rec["confidence"], rec["locked"]) == (
        "src",
        "human",
        0.7,
        False,
    )
    # lock per kind
    assert gate.set_knowledge_lock(conn, "local", sid, "0", True)["written"]
    assert kn.get(conn, "local", sid, "0")["locked"]


@pytest.mark.parametrize(
    "call, reason",
    [
        (lambda c, s: ks.set_comment(c, s, "x" * 1_000_000), "longer than"),
        (lambda c, s: ks.set_comment(c, s, "clear \x1b[2J screen"), "control"),
        (lambda c, s: ks.set_comment(c, s, "rtl \u202e text"), "bidi"),
        (lambda c, s: ks.set_prototype(c, s, "int f(int a"), "invalid prototype"),
        (lambda c, s: ks.set_prototype(c, s, "int f(int a; system())"), "unexpected character"),
        (lambda c, s: ks.set_prototype(c, s, "int f(void)"), "disagrees with the wasm signature"),
        (
            lambda c, s: ks.set_prototype(c, s, "double f(int a, int b)"),
            "disagrees with the wasm signature",
        ),
        (lambda c, s: ks.rename_local(c, s, "0", "not an ident"), "not a C identifier"),
    ],
)
def test_bad_input_is_refused_and_nothing_written(demo_kb, call, reason):
    conn = open_rw(demo_kb)
    sid = ks.resolve_function(conn, f"1:{_fn_with_params(conn, 1)}")["stable_id"]
    d = call(conn, sid)
    assert not d["written"] and reason in d["reason"]
    assert "\n" not in d["reason"]
    assert kn.for_target(conn, sid) == []
    ev = ks.history(conn, sid)[-1]
    assert not ev["written"] and ev["kind"] == "rejection"
    assert len(json.dumps(ev)) < 4000  # an excerpt of the input, never the whole of it


def test_unknown_local_and_line_are_clear_errors(demo_kb):
    conn = open_rw(demo_kb)
    idx = _fn_with_params(conn, 1)
    with pytest.raises(ks.KnowledgeError, match="unknown local '999'"):
        ks.rename_local(conn, f"1:{idx}", "999", "x")
    with pytest.raises(ks.KnowledgeError, match="no instruction at offset"):
        ks.set_comment(conn, f"1:{idx}", "t", line=1)
    with pytest.raises(ks.KnowledgeError, match="no function"):
        ks.set_comment(conn, "nosuchfunction", "t")


def test_the_code_shows_it_and_still_compiles(demo_kb, tmp_path):
    conn = open_rw(demo_kb)
    idx = _fn_with_params(conn, 1)
    f = ks.resolve_function(conn, f"1:{idx}")
    sig_params = kn.parse_type_sig(f["type_sig"])[0]
    ret = "int" if f["type_sig"].endswith("-> i32") else "void"
    params = ", ".join(["const char *zSql"] + [f"int n{k}" for k in range(1, len(sig_params))])
    assert ks.set_prototype(conn, f["stable_id"], f"{ret} parse_sql({params})")["written"]
    evil = "ends */ int evil; /* and ??/\n\\ second line"
    assert ks.set_comment(conn, f["stable_id"], evil)["written"]
    assert ks.rename_local(conn, f["stable_id"], "1", "count")["written"]
    before = code_service.disassembly(conn, 1, idx)
    offs = _instr_offsets(before["mnemonics"])
    assert ks.set_comment(conn, f"1:{idx}", "the */ check", line=offs[2])["written"]
    d = code_service.disassembly(conn, 1, idx)
    c = d["lifted_c"]
    assert "(int32_t zSql, int32_t count" in c
    assert f"/* prototype: {ret} parse_sql(const char *zSql" in c
    assert " * ends *\\/ int evil; /\\* and ?\\?/" in c and "int evil;" not in c.replace(
        "*\\/ int evil;", ""
    )
    assert f"/* @{offs[2]:06x}: the *\\/ check */" in c
    # the disassembly: comment lines under the header, the line comment after its instruction
    m = d["mnemonics"]
    assert f" ;; prototype: {ret} parse_sql(" in m
    line = next(r for r in m.splitlines() if r.startswith(f" {offs[2]:06x}:"))
    assert line.endswith(";; // the */ check")
    assert "<zSql>" in m and "<count>" in m
    gcc = shutil.which("gcc") or shutil.which("clang")
    if gcc is None:
        pytest.skip("no C compiler")
    from kbtool.lift import prelude_path

    src = tmp_path / "f.c"
    src.write_text(c)
    p = subprocess.run(
        [gcc, "-fsyntax-only", "-w", "-include", str(prelude_path()), str(src)],
        capture_output=True,
        text=True,
    )
    assert p.returncode == 0, p.stderr


def test_carried_to_the_next_release(tmp_path):
    """Release 2 ingested as an unrelated program gets fresh stable ids; carry-over (the code
    path ingest runs) brings comments, prototypes, locals and line comments along matched
    functions as diff-carry, says how, and drops a line whose context is gone with an event."""
    db = tmp_path / "kb.db"
    conn = open_rw(db, create=True)
    ingest_file(conn, DEMO_V1, program="a")
    from kbtool.kb import queries

    annotated = {}
    for f in queries.list_functions(conn, 1):
        f = queries.get_function(conn, 1, f["index"])
        if f["imported"] or f["instr_count"] < 12 or not f["type"].startswith("(i32"):
            continue
        sid = f["stable_id"]
        mn = code_service.disassembly(conn, 1, f["index"])["mnemonics"]
        offs = _instr_offsets(mn)
        ks.set_comment(conn, sid, f"comment of {f['index']}")
        ks.rename_local(conn, sid, "0", f"arg_{f['index']}")
        ks.set_comment(conn, sid, f"line of {f['index']}", line=offs[len(offs) // 2])
        annotated[f["index"]] = (sid, offs[len(offs) // 2] - offs[0])
        if len(annotated) >= 60:
            break
    ingest_file(conn, DEMO_V2, program="b")
    res = carry_names(conn, 1, 2)
    assert res["knowledge_carried"] > 100
    new_rows = {
        f["index"]: queries.get_function(conn, 2, f["index"])
        for f in queries.list_functions(conn, 2)
    }
    known = ks.code_knowledge(conn, 2)
    same_body = 0
    for fi, k in known.items():
        assert k["comment"].startswith("comment of ")
        old = int(k["comment"].split()[-1])
        assert k["locals"] == {0: f"arg_{old}"}
        rec = kn.get(conn, "comment", new_rows[fi]["stable_id"])
        assert rec["provenance"] == "diff-carry"
        assert rec["evidence"][0]["carried_from"] == 1 and rec["evidence"][0]["how"]
        old_row = queries.get_function(conn, 1, old)
        if old_row["body_hash"] == new_rows[fi]["body_hash"]:
            same_body += 1
            # the same body: the line comment sits on the same instruction
            mn = code_service.disassembly(conn, 2, fi)["mnemonics"]
            offs = _instr_offsets(mn)
            assert list(k["lines"]) == [offs[0] + annotated[old][1]]
    assert same_body > 10
    # a line whose context is gone is dropped with an event, nothing written
    rows = conn.execute(
        "SELECT COUNT(*) FROM annotation_events WHERE kind = 'carry-dropped'"
    ).fetchone()[0]
    assert rows == res["knowledge_dropped"]


def test_cli_commands(demo_kb):
    conn = open_rw(demo_kb)
    idx = _fn_with_params(conn, 1)
    conn.close()

    def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "kbtool.cli", "--db", str(demo_kb), *args],
            capture_output=True,
            text=True,
            input=stdin,
        )

    assert run("comment", f"1:{idx}", "Reads a block.").returncode == 0
    p = run("comment", f"1:{idx}", "-", stdin="y" * 1_000_000)
    assert p.returncode == 1 and p.stderr.count("\n") == 1 and "longer than 4096" in p.stderr
    p = run("set-type", f"1:{idx}", "int f(int a)")
    assert (
        p.returncode == 1
        and "disagrees with the wasm signature" in p.stderr
        and "Traceback" not in p.stderr
    )
    p = run("rename-local", f"1:{idx}", "99", "x")
    assert p.returncode == 1 and "unknown local" in p.stderr
    assert run("rename-local", f"1:{idx}", "p1", "len").returncode == 0
    p = run("knowledge", f"1:{idx}", "--json")
    out = json.loads(p.stdout)
    assert out["comment"]["text"] == "Reads a block." and out["locals"][0]["name"] == "len"
    assert run("revert-knowledge", f"1:{idx}", "local", "--local", "1").returncode == 0
    assert json.loads(run("knowledge", f"1:{idx}", "--json").stdout)["locals"] == []
    p = run("code", "1", str(idx))
    assert "Reads a block." in p.stdout
    shown = json.loads(run("show", f"1:{idx}", "--json").stdout)
    assert shown["knowledge"]["comment"]["text"] == "Reads a block."
    assert "Reads a block." in run("show", f"1:{idx}").stdout


def test_a_line_whose_context_is_gone_is_dropped_with_an_event(tmp_path):
    """Carry-over along a pair whose new body has no instruction with the line's context: the
    line comment is not put on a guess; a carry-dropped event says so, nothing is written; the
    function comment and a same-typed local still carry, with how in the evidence."""
    from kbtool.kb import queries

    db = tmp_path / "kb.db"
    conn = open_rw(db, create=True)
    ingest_file(conn, DEMO_V1, program="a")
    ingest_file(conn, DEMO_V2, program="b")

    def pick(vid: int, other: dict | None) -> dict:
        for f in queries.list_functions(conn, vid):
            row = queries.get_function(conn, vid, f["index"])
            if (
                not row["imported"]
                and row["instr_count"] > 40
                and row["type"].startswith("(i32")
                and (
                    other is None
                    or (
                        abs(row["instr_count"] - other["instr_count"]) > 30
                        and row["type"].split(")")[0] == other["type"].split(")")[0]
                    )
                )
            ):
                return row
        raise AssertionError

    old = pick(1, None)
    new = pick(2, old)
    from collections import Counter

    old_instrs = ks._Code(conn, 1).body(old["index"])[1]
    new_instrs = ks._Code(conn, 2).body(new["index"])[1]
    new_ctx = {tuple(ks._anchor(new_instrs, k)) for k in range(len(new_instrs))}
    cores = Counter(
        tuple(ks._anchor(new_instrs, k)[ks.ANCHOR - 1 : ks.ANCHOR + 2])
        for k in range(len(new_instrs))
    )
    pos = next(
        k
        for k in range(len(old_instrs))
        if tuple(ks._anchor(old_instrs, k)) not in new_ctx
        and cores[tuple(ks._anchor(old_instrs, k)[ks.ANCHOR - 1 : ks.ANCHOR + 2])] != 1
    )
    sid = old["stable_id"]
    assert ks.set_comment(conn, f"1:{old['index']}", "gone line", line=old_instrs[pos][0])[
        "written"
    ]
    assert ks.set_comment(conn, f"1:{old['index']}", "the function")["written"]
    assert ks.rename_local(conn, f"1:{old['index']}", "0", "first")["written"]
    k = ks.carry_knowledge(
        conn, 1, 2, [(old["index"], new["index"], sid, new["stable_id"], 0.9, False)]
    )
    assert k["dropped"] == 1 and not [
        r for r in kn.for_target(conn, new["stable_id"]) if r["kind"] == "line_comment"
    ]
    ev = [e for e in ks.history(conn, new["stable_id"]) if e["kind"] == "carry-dropped"]
    assert len(ev) == 1 and not ev[0]["written"] and ev[0]["subject"] == "line_comment"
    assert "context is gone" in ev[0]["reason"]
    c = kn.get(conn, "comment", new["stable_id"])
    assert c["provenance"] == "diff-carry" and c["confidence"] == 0.9
    assert c["evidence"][0]["carried_from"] == 1 and c["evidence"][0]["how"] == "same function"
    assert (
        kn.get(conn, "local", new["stable_id"], "0")["evidence"][0]["how"]
        == "same local index and type"
    )
