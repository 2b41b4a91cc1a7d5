"""The report's pair entries with the runtime check inline (issue #30, session 30 T): each
pair's ``runtime`` is ``_is_runtime`` of its new side or its old side (annotation, raw or
export name, a small caller of a runtime import), and every other field as before."""

from __future__ import annotations

import random

from kbtool.kb.db import open_ro
from kbtool.services.diff import report as R
from kbtool.services.diff.entries import pair_changes, runtime_imports


def _reference(pg, defined, flags, ann_old, ann_new) -> list[dict]:
    out = []
    for p, (same, relocated) in zip(defined, flags, strict=True):
        o, n = p.old_index, p.new_index
        orow, nrow = pg.old_rows.get(o), pg.new_rows.get(n)
        an, ao = ann_new.get(n), ann_old.get(o)
        ann = an or ao
        e = {
            "classification": ("unchanged" if n == o else "moved") if same else "modified",
            "from_index": o,
            "to_index": n,
            "from_stable_id": orow["stable_id"] if orow else None,
            "to_stable_id": nrow["stable_id"] if nrow else None,
            "score": p.score,
            "review": bool(p.review),
            "runtime": bool(
                R._is_runtime(nrow, an, pg.new_rows) or R._is_runtime(orow, ao, pg.old_rows)
            ),
            "name": ann["name"] if ann else None,
            "provenance": ann["provenance"] if ann else None,
            "confidence": ann["confidence"] if ann else None,
        }
        if relocated:
            e["relocated"] = True
        out.append(e)
    return out


def test_pair_entries_answer_as_is_runtime(demo_kb_master) -> None:
    conn = open_ro(demo_kb_master)
    try:
        pg = R.pair_versions(conn, 1, 2)
    finally:
        conn.close()
    defined = pg.defined_pairs()
    rng = random.Random(30)
    anns = (
        {"name": "memcpy", "provenance": "export", "confidence": 1.0, "runtime_oracle": False},
        {"name": "app", "provenance": "oracle", "confidence": 0.9, "runtime_oracle": True},
        {"name": "app", "provenance": "human", "confidence": 1.0, "runtime_oracle": False},
    )
    # a few rows made small callers of a runtime import, a few given runtime names
    rti = runtime_imports(pg.new_rows)
    assert rti  # (the demo imports WASI)
    for p in rng.sample(defined, 20):
        row = dict(pg.new_rows[p.new_index], instr_count=5, raw_name=None, export_names=[])
        row["calls"] = [*row["calls"], next(iter(rti))]
        pg.new_rows[p.new_index] = row
    for p in rng.sample(defined, 10):
        pg.old_rows[p.old_index] = dict(pg.old_rows[p.old_index], export_names=["x", "memset"])
    seen_runtime = set()
    for _ in range(4):
        ann_old = {p.old_index: rng.choice(anns) for p in rng.sample(defined, 30)}
        ann_new = {p.new_index: rng.choice(anns) for p in rng.sample(defined, 30)}
        codes = bytes(rng.randrange(3) for _ in defined)
        got = pair_changes(
            pg,
            defined,
            codes,
            None,
            R._FLAGS,
            ann_old,
            ann_new,
            runtime_imports(pg.old_rows),
            runtime_imports(pg.new_rows),
        )
        flags = [R._FLAGS[c] for c in codes]
        assert got == _reference(pg, defined, flags, ann_old, ann_new)
        seen_runtime |= {e["runtime"] for e in got}
        # classified here when no codes are known: ``classify`` asked of each pair in order
        asked = []

        def classify(p, asked=asked):
            asked.append(p)
            return (True, False)

        got = pair_changes(
            pg,
            defined,
            None,
            classify,
            R._FLAGS,
            ann_old,
            ann_new,
            runtime_imports(pg.old_rows),
            rti,
        )
        assert asked == defined and all(e["classification"] != "modified" for e in got)
    assert seen_runtime == {True, False}
