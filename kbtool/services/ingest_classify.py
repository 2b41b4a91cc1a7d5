"""A later ingest's report pairing and flags made by the matcher's child (issue #30).

After the matcher ingest pairs the two versions (:func:`kbtool.identity.pairing.
pair_rows`) and the diff report classifies each defined pair (:func:`kbtool.services.diff.
report.classify_pair`: the same code up to relocation, only relocated, a layout change).
Neither needs a name, a KB write or more of the stable ids than which new function kept
which old id: the matcher's exact matches say that (every other new function gets an id no
version uses). So the matcher's child, after sending its answer, pairs and classifies
(:func:`child_flags`) while this process writes the ids, names and data model; this
process takes the child's pairing (:func:`pairing_from`: when none of its new ids is an
old one) and the flags when its pairing has exactly the child's pairs (:func:`flags_for`).
No answer (a child that fails or dies): paired and classified here as before. The same
inputs, the same pairing and flags, the same report bytes.

The child never touches the KB: what it needs of the parent version (its module bytes,
hash and memory-access texts) is read here before the fork (:func:`report_inputs`).
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import starmap
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


def child_pairing(parent: int, old_rows, new_rows, exact, full, old, new, verdicts) -> Any:
    """In the matcher's child: :func:`kbtool.identity.pairing.pair_rows` of the report, the
    new rows given the stable ids ingest gives them as far as the pairing can tell: the old
    id where ``exact`` carried one, else an id no old row has (ingest's new ids are ids no
    version uses; the review checks read no stable id and no version id). The matcher's
    review ``verdicts`` are reused as in one process."""
    from kbtool.identity.matcher import review
    from kbtool.identity.pairing import pair_rows
    from kbtool.services.ingest_match import install_verdicts

    old_sid = {r["index"]: r["stable_id"] for r in old_rows}
    sid = {m.new_index: old_sid[m.old_index] for m in exact}
    for r in new_rows:
        n = r["index"]
        r["stable_id"] = sid[n] if n in sid else f"\x00new {n}"  # (no old id starts so)
    with review.review_memo():
        install_verdicts(verdicts, old, new)
        return pair_rows(parent, 0, old_rows, new_rows, matches=full, old_recs=old, new_recs=new)


def pairing_from(answer, parent: int, vid: int, old_rows, new_rows, old_recs, new_recs, carried):
    """The report's pairing from the child's pairs (:func:`child_flags`), or None when a new
    id of this process is an old one (the child's pairing assumed none is: then
    :func:`kbtool.identity.pairing.pair_rows` pairs them here)."""
    from kbtool.identity.pairing import Pair, Pairing

    old_sids = {r["stable_id"] for r in old_rows}
    if any(r["stable_id"] in old_sids for r in new_rows if r["index"] not in carried):
        return None
    pg = Pairing(
        from_version_id=parent,
        to_version_id=vid,
        old_rows={r["index"]: r for r in old_rows},
        new_rows={r["index"]: r for r in new_rows},
        old_recs={r.index: r for r in old_recs},
        new_recs={r.index: r for r in new_recs},
    )
    by_new, by_old = pg.by_new, pg.by_old
    for p in starmap(Pair, answer[0]):
        by_new[p.new_index] = by_old[p.old_index] = p
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


def split_at(n: int) -> int:
    """Of ``n`` defined pairs, how many the matcher's child classifies first (the head):
    this process, which has the pairs by then and little else to do, classifies the rest
    (:func:`tail_codes`) meanwhile."""
    return n - n * 2 // 5


def child_flags(
    inputs: dict, exact, full, old=None, new=None, verdicts=None, *, out=None
) -> tuple[list[tuple], bytes] | None:
    """In the matcher's child: the report's pairs (each pair's fields, in the pairing's
    order: :func:`child_pairing`) and each defined pair's flags code, in order (None when
    the views cannot be made). ``inputs``: :func:`report_inputs`, or an early child's
    (:mod:`kbtool.services.ingest_match`: ``new_rows`` and ``new_mem`` given, no ``funcs``).
    ``out``: called with the pairs once made, then with the head's codes (:func:`split_at`)
    before the rest are made (each sent on at once)."""
    from kbtool.services.ingest_rows import matching_rows

    new_rows = inputs.get("new_rows")  # (an early child's: this process's rows)
    if new_rows is None:
        new_rows = matching_rows(inputs["funcs"], inputs["slots"])
    pg = child_pairing(
        inputs["parent"], inputs["old_rows"], new_rows, exact, full, old, new, verdicts
    )
    classify = _classifier(pg, inputs)
    if classify is None:
        return None
    pairs = [
        (p.old_index, p.new_index, p.score, p.method, p.review, p.identity)
        for p in pg.by_new.values()
    ]
    defined = pg.defined_pairs()
    if out is None:
        return pairs, classify(defined)
    out(pairs)
    k = split_at(len(defined))
    head = classify(defined[:k])
    out(head)
    return pairs, head + classify(defined[k:])


def tail_codes(pg, inputs: dict) -> bytes | None:
    """In this process, while the matcher's child classifies the head: the codes of the
    defined pairs after :func:`split_at` (``inputs``: :func:`report_inputs` with
    ``new_mem``); None when the views cannot be made or the classification fails (the
    child's own codes of them are used then)."""
    try:
        classify = _classifier(pg, inputs)
        if classify is None:
            return None
        defined = pg.defined_pairs()
        return classify(defined[split_at(len(defined)) :])
    except Exception:  # noqa: BLE001 - the child's codes, else the report's own classification
        return None


def _classifier(pg, inputs: dict) -> Callable[[list], bytes] | None:
    """The report's classification of ``pg``'s pairs (a list of defined pairs -> their
    flags codes) with the two modules' views and memory accesses of ``inputs``, reading no
    KB; None when the views cannot be made (the report reads the stored bytes then)."""
    from kbtool.services.diff.relocation import module_view
    from kbtool.services.diff.report import classify_pairs, relocation_check
    from kbtool.wasm import WasmFormatError

    try:
        new_view = module_view(inputs["data"], inputs["mod"], sha=inputs["sha256"])
        old_view = module_view(inputs["old_bytes"], sha=inputs["old_sha"])
    except WasmFormatError:
        return None
    if new_view is None:
        return None
    reloc = relocation_check(None, pg, new_view, old_sha=inputs["old_sha"], new_mem=None)
    reloc.views = (old_view, new_view) if old_view is not None else None
    # every access of both versions: ``layout_shift`` reads only the pairs ``mem_indices``
    # lists (relocated ones: other body hashes, the same ops, not answered by the shapes),
    # so the rest are never read (the same answer without that pass over the pairs)
    new_mem = inputs.get("new_mem")  # (an early child's, or this process's: the texts stored)
    reloc.mem = (inputs["old_mem"], _NewMem(inputs["funcs"]) if new_mem is None else new_mem)

    def classify(pairs: list) -> bytes:
        return classify_pairs(pg, reloc, pairs)

    return classify


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
        by_old = pg.by_old
        for o, n, *_rest in pairs:
            p = by_old.get(o)
            if p is None or p.new_index != n:
                return None
        return codes

    return classes


def child_report(
    job, parent, vid, old_rows, new_rows, old_recs, new_recs, carried, tail=None
) -> tuple:
    """``(pairing, classes)`` for :func:`kbtool.services.lineage.carry_from_parent` from the
    matcher's child (:func:`pairing_from`, :func:`flags_for`); ``(None, None)`` when it
    made none (then paired and classified here). The pairing is made of the child's pairs
    while it classifies them; ``tail``: :func:`tail_codes`'s inputs, when the child sends
    the head's codes apart: the rest are classified here meanwhile. ``classes`` waits for
    the child's codes when the report asks."""
    if not (job.in_child and job.report is not None):
        return None, None
    pairs = job.pairs()
    if pairs is None:
        return None, None
    pg = pairing_from((pairs,), parent, vid, old_rows, new_rows, old_recs, new_recs, carried)
    mine = tail_codes(pg, tail) if pg is not None and tail is not None and job.split else None

    def answer() -> tuple | None:
        head = job.codes()
        if head is not None and mine is not None:
            job.stop(kill=True)  # (its codes of the rest are not wanted)
        rest = None if head is None else (mine if mine is not None else job.rest())
        return None if rest is None else (pairs, head + rest)

    return pg, flags_for(answer)
