"""Knowledge travels: ``kbtool export`` writes a sorted ``# knowledge`` section (git-diffable,
stable), ``import-names`` places it with its functions in another KB through the gate, an older
export still imports, and ``export --wasm`` writes local names into the name section."""

from __future__ import annotations

import shutil

from kbtool.kb import knowledge as kn
from kbtool.kb.db import open_ro, open_rw
from kbtool.services import knowledge as ks
from kbtool.services import names_io
from kbtool.wasm.reader import parse_module


def _annotate(db) -> dict:
    conn = open_rw(db)
    from kbtool.kb import queries

    done = {}
    for f in queries.list_functions(conn, 1):
        row = queries.get_function(conn, 1, f["index"])
        if row["imported"] or row["instr_count"] < 40 or not row["type"].startswith("(i32, i32)"):
            continue
        sid = row["stable_id"]
        ks.set_comment(conn, f"1:{f['index']}", f"Does\tthing {f['index']}\nsecond line")
        ks.rename_local(conn, f"1:{f['index']}", "1", f"len_{f['index']}")
        mn = ks._Code(conn, 1).body(f["index"])[1]
        ks.set_comment(conn, f"1:{f['index']}", f"line {f['index']}", line=mn[5][0])
        done[f["index"]] = sid
        if len(done) == 5:
            break
    conn.close()
    return done


def test_export_import_carries_every_kind(demo_kb, tmp_path):
    done = _annotate(demo_kb)
    conn = open_ro(demo_kb)
    text = names_io.export_text(conn, 1)
    assert text == names_io.export_text(conn, 1)  # stable
    klines = [ln for ln in text.splitlines() if ln.startswith("# knowledge\t")]
    assert len(klines) == 15 and klines == sorted(klines, key=lambda ln: int(ln.split("\t")[2]))
    assert all("\n" not in ln and "\\t" in ln for ln in klines if "\tcomment\t" in ln)
    conn.close()
    # another KB of the same releases without any of it: everything lands on the same functions
    other = tmp_path / "other.db"
    shutil.copyfile(demo_kb, other)
    conn = open_rw(other)
    conn.execute("DELETE FROM knowledge")
    conn.commit()
    rep = names_io.import_names(conn, text, source="kb.txt", version_id=1)
    assert rep.knowledge["written"] == 15 and rep.as_dict()["knowledge"]["refused"] == 0
    for idx, sid in done.items():
        k = ks.function_knowledge(conn, sid, 1)
        assert k["comment"]["text"] == f"Does\tthing {idx}\nsecond line"
        assert k["locals"][0]["name"] == f"len_{idx}"
        assert k["line_comments"][0]["text"] == f"line {idx}"
        assert kn.get(conn, "comment", sid)["evidence"][0]["source"] == "import-names"
    # an export written before knowledge existed still imports (its rows only)
    old = "\n".join(ln for ln in text.splitlines() if not ln.startswith("# knowledge")) + "\n"
    assert names_io.import_names(conn, old, source="old.txt", version_id=1).knowledge == {}
    conn.close()


def test_export_wasm_writes_local_names(demo_kb):
    done = _annotate(demo_kb)
    conn = open_ro(demo_kb)
    data, _n = names_io.named_module(conn, 1)
    locals_ = parse_module(data).local_names
    for idx in done:
        assert locals_[idx][1] == f"len_{idx}"
