"""A later ingest's report flags made by the matcher's child after its answer (issue #30).

The diff report classifies each defined pair of the pairing (:func:`kbtool.services.diff.
report.classify_pair`: the same code up to relocation, only relocated, a layout change);
that needs the pairing's pairs (old index -> new index), the two versions' rows, their
modules' views and memory-access texts, and no stable id, name or KB write. The matcher's
child has the pairing first: after sending it, it makes the pairs as the report's pairing
will have them (:func:`pair_map`: the carried identities, then the matcher's pairs), their
flags, and sends both (:func:`child_flags`), while this process writes the ids, names and
data model. The report takes the flags only when this process's pairing has exactly the
child's pairs (:func:`flags_for`; any other pairing, or no answer, is classified in this
process as before): the same inputs, the same flags, the same report bytes.

The child never touches the KB: what it needs of the parent version (its module bytes,
hash and memory-access texts) is read here before the fork (:func:`report_inputs`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def report_inputs(conn, parent: int, old_rows, funcs, slots, data, mod, sha256) -> dict:
    """What the child needs to classify the report's pairs (the parent version's module
    bytes, hash and memory accesses read now: the child reads no KB)."""
    from kbtool.kb import queries

    return {
        "parent": parent,
        "old_rows": old_rows,
        "old_bytes": queries.module_bytes(conn, parent),
        "old_sha": queries.version_info(conn, parent).get("sha256"),
        "old_mem": queries.mem_ops_json_all(conn, parent),
        "funcs": funcs,
        "slots": slots,
        "data": data,
        "mod": mod,
        "sha256": sha256,
    }


def pair_map(old_rows, new_rows, exact, full) -> Any:
    """A :class:`~kbtool.identity.pairing.Pairing` with the pairs (no scores) that
    :func:`kbtool.identity.pairing.pair_rows` makes of ``old_rows`` and ``new_rows`` whose
    stable ids are those ingest gives them: the old id where ``exact`` carried one, else a
    new id no old row has (the review checks never change the pairs)."""
    from kbtool.identity.pairing import Pair, Pairing

    old_sid = {r["index"]: r["stable_id"] for r in old_rows}
    sid = {m.new_index: old_sid[m.old_index] for m in exact}
    pg = Pairing(
        from_version_id=0,
        to_version_id=0,
        old_rows={r["index"]: r for r in old_rows},
        new_rows={r["index"]: r for r in new_rows},
        old_recs={},
        new_recs={},
    )
    by_new, by_old = pg.by_new, pg.by_old
    old_by_sid: dict[str, int] = {}
    for r in old_rows:
        old_by_sid.setdefault(r["stable_id"], r["index"])
    for r in new_rows:
        n = r["index"]
        s = sid.get(n)
        o = old_by_sid.get(s) if s is not None else None
        if o is None or o in by_old or pg.old_rows[o]["imported"] != r["imported"]:
            continue
        by_new[n] = by_old[o] = Pair(o, n, 0.0, "identity", False, True)
    by_new_match = {m.new_index: m for m in full}
    for n in sorted(by_new_match):
        m = by_new_match[n]
        if n in by_new or m.old_index in by_old:
            continue
        by_new[n] = by_old[m.old_index] = Pair(m.old_index, n, 0.0, m.method, False, False)
    return pg


class _NewMem:
    """The new version's ``mem_ops`` texts by index, as ingest stores them (made on ask)."""

    def __init__(self, funcs) -> None:
        self.funcs = funcs

    def get(self, i: int, default: Any = None) -> Any:
        from kbtool.kb.store import dumps

        if not 0 <= i < len(self.funcs):
            return default
        ops = self.funcs[i].mem_ops
        return dumps(ops) if ops else "[]"


def child_flags(inputs: dict, exact, full) -> tuple[dict[int, int], bytes] | None:
    """In the matcher's child: the report's pairs ``{old index: new index}`` and each
    defined pair's flags code, in order (None when the views cannot be made)."""
    from kbtool.services.diff.relocation import module_view
    from kbtool.services.diff.report import classify_pair, pair_flags_code, relocation_check
    from kbtool.services.ingest_rows import matching_rows
    from kbtool.wasm import WasmFormatError

    funcs = inputs["funcs"]
    pg = pair_map(inputs["old_rows"], matching_rows(funcs, inputs["slots"]), exact, full)
    try:
        new_view = module_view(inputs["data"], inputs["mod"], sha=inputs["sha256"])
        old_view = module_view(inputs["old_bytes"], sha=inputs["old_sha"])
    except WasmFormatError:
        return None
    if new_view is None:  # (the report reads the stored bytes: not here)
        return None
    reloc = relocation_check(None, pg, new_view, old_sha=inputs["old_sha"], new_mem=None)
    reloc.views = (old_view, new_view) if old_view is not None else None
    olds, _news = reloc.mem_indices()
    old_mem = inputs["old_mem"]
    reloc.mem = ({i: old_mem[i] for i in olds if i in old_mem}, _NewMem(funcs))
    codes = bytes(pair_flags_code(*classify_pair(pg, reloc, p)) for p in pg.defined_pairs())
    return {o: p.new_index for o, p in pg.by_old.items()}, codes


def flags_for(answer: Callable[[], Any]) -> Callable[[Any, list], bytes | None]:
    """The report's ``classes`` (:data:`kbtool.services.diff.report.Classes`) of the
    child's ``answer()``: its flags when the report's pairing has exactly its pairs."""

    def classes(pg, defined: list) -> bytes | None:
        got = answer()
        if got is None:
            return None
        pairs, codes = got
        if len(codes) != len(defined) or len(pairs) != len(pg.by_old):
            return None
        for o, p in pg.by_old.items():
            if pairs.get(o) != p.new_index:
                return None
        return codes

    return classes
