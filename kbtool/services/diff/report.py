"""The diff report: what changed between two versions, one entry per function.

    get_diff(conn, a, b)      stored report if one was saved, else computed (a pure read)
    compute_diff(conn, a, b)  always computes, never writes
    save_diff(conn, report)   store a report (``kbtool diff A B --save``)

Pairing (shared with carry-over, :mod:`kbtool.services.diff.carry`):

1. Functions that share a ``stable_id`` on both sides are the same logical function (the
   identity the KB recorded at ingest) and are paired first.
2. The matcher (:func:`kbtool.identity.matcher.match_functions`, fuzzy) runs over both whole
   versions; its pairs between functions not paired in step 1 are added. Those are the
   pairs whose new side did not keep the old identity: the ones carry-over names.
3. What is left is ``deleted`` (old side) or ``new`` (new side).

Classification of a pair: the *code* is the same when the exact body hash is equal, or
when every direct callee maps to the image of the old callee under the pairing and either
the normalised shape hash is equal or the instruction stream (opcodes), the referenced
strings and the small constants (|c| < 1024) are equal. So a body that only differs by
shifted function indices or relocated linear-memory addresses is not "modified", but one
that now calls another function, references other text or computes differently is.
Same code and same index:
``unchanged``; same code at another index: ``moved``; otherwise ``modified``. Imported
functions are paired too (they anchor the callee comparison) but are not listed.

Each change: ``classification, from_index, to_index, from_stable_id, to_stable_id, score,
review, runtime, name, provenance, confidence``. ``score`` is the matcher's score (0..1;
null for ``new``/``deleted``); for an identity pair the matcher did not reproduce, the
content similarity of the two bodies, with ``review`` set. ``review`` is the matcher's flag
(low score, or the best candidate not clearly ahead of the second), also set when the
type signature changed and the score is below 0.8, next to a wrapper split
(:func:`review_wrapper_splits`) and for weak pairs the call graph does not back
(:func:`review_weak_neighbourhoods`); the flag never changes the pairing. ``name``, ``provenance`` and
``confidence`` are the annotation of the **to-side** function when it has one, else the
annotation of the **from-side** function (so a deleted function shows its old name, and a
carried name shows as soon as it was carried). ``runtime``: see :mod:`kbtool.analysis.runtime`.

Summary: counts of ``unchanged``, ``moved``, ``modified``, ``added`` (new), ``removed``
(deleted), ``runtime_churn`` (runtime functions modified, new or deleted while the
toolchain version changed between the two versions, both known) and ``review``.

Programs: ``from_program`` and ``to_program`` name the program (lineage) of each side, and
``warning`` (one sentence) is present only when they differ: names are never carried between
programs, so such a diff compares unrelated code (:mod:`kbtool.services.diff.programs`).
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Callable, Mapping
from operator import itemgetter
from typing import Any

from kbtool.analysis.runtime import (
    RUNTIME_WRAPPER_MAX_INSTR,
    is_runtime_name,
    runtime_by_signature,
)
from kbtool.identity.pairing import Pair, Pairing, pair_rows
from kbtool.kb import queries, store
from kbtool.kb.db import transaction
from kbtool.services.diff.entries import pair_changes, runtime_imports
from kbtool.services.diff.ordering import report_order
from kbtool.services.diff.programs import add_program_fields, program_fields
from kbtool.services.diff.rejoin import (
    version_annotations,
)  # re-exported (its home: cheap to import)
from kbtool.services.diff.relocation import (
    ModuleView,
    cached_view,
    field_offsets_differ,
    mem_offsets_differ,
    module_view,
    same_bodies,
)
from kbtool.wasm.errors import WasmFormatError

__all__ = [
    "get_diff",
    "version_annotations",
    "compute_diff",
    "compute_diff_with_pairing",
    "stored_diff",
    "retriage_stored",
    "TRIAGE_PENDING",
    "set_triage",
    "code_runtime",
    "save_diff",
    "delete_diff",
    "pair_versions",
    "Pairing",
    "Pair",
    "CLASSIFICATIONS",
    "CHANGED",
]

#: the ``triage_rules`` of a report stored without triage (ingest): never a rules generation,
#: so :func:`stored_diff` treats it as one saved under older rules (triaged on read)
TRIAGE_PENDING = 0


def __getattr__(name: str) -> Any:
    """``changelog`` and ``TRIAGE_RULES`` (PEP 562), imported on first use: ingest stores its
    report without triage and needs neither (the changelog's modules: ~18 ms of every later
    ingest's start-up). A caller that sets ``changelog`` here (a benchmark's timer) is the
    one :func:`_changelog` calls."""
    if name == "changelog":
        from kbtool.services.diff.changelog import changelog

        globals()["changelog"] = changelog
        return changelog
    if name == "TRIAGE_RULES":
        from kbtool.services.diff.triage import TRIAGE_RULES

        globals()["TRIAGE_RULES"] = TRIAGE_RULES
        return TRIAGE_RULES
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _changelog(*args: Any, **kwargs: Any) -> dict[str, Any]:
    """:func:`kbtool.services.diff.changelog.changelog` (this module's ``changelog``)."""
    fn = globals().get("changelog") or __getattr__("changelog")
    return fn(*args, **kwargs)


def _triage_rules() -> int:
    """:data:`kbtool.services.diff.triage.TRIAGE_RULES`."""
    return globals().get("TRIAGE_RULES") or __getattr__("TRIAGE_RULES")


CLASSIFICATIONS = ("unchanged", "moved", "modified", "new", "deleted")
CHANGED = frozenset(("modified", "new", "deleted"))  # code changes (moved keeps the code)


def pair_versions(conn: sqlite3.Connection, a: int, b: int, *, fuzzy: bool = True) -> Pairing:
    """Pair the functions of version ``a`` (older) with those of ``b`` (newer); a pure read."""
    return pair_rows(
        a, b, queries.matching_rows(conn, a), queries.matching_rows(conn, b), fuzzy=fuzzy
    )


# --------------------------------------------------------------------------- annotations


def _runtime_by_name(row: dict[str, Any], ann: dict[str, Any] | None) -> bool:
    """A function is runtime by a name: its annotation's (or the oracle's flag), its raw
    name or one of its export names (the first half of :func:`_is_runtime`)."""
    if ann is not None and (ann["runtime_oracle"] or is_runtime_name(ann["name"])):
        return True
    exports, raw = row["export_names"], row["raw_name"]
    return bool((raw and is_runtime_name(raw)) or (exports and any(map(is_runtime_name, exports))))


def _is_runtime(
    row: dict[str, Any] | None, ann: dict[str, Any] | None, rows: Mapping[int, dict[str, Any]]
) -> bool:
    if row is None:
        return False
    if _runtime_by_name(row, ann):
        return True
    if row["instr_count"] > RUNTIME_WRAPPER_MAX_INSTR:
        return False  # (runtime_by_signature's answer: too big for a wrapper; imports unread)
    imports = [
        rows[c]["import_name"]
        for c in dict.fromkeys(row["calls"])
        if c in rows and rows[c]["imported"]
    ]
    return runtime_by_signature(imports, row["instr_count"])


def _runtime_check(
    rows: Mapping[int, dict[str, Any]], rt_imports: set[int] | None = None
) -> Callable[[dict[str, Any] | None, dict[str, Any] | None], bool]:
    """``_is_runtime(row, ann, rows)`` for the rows of one version, as one function of
    ``(row, ann)`` that finds the version's runtime imports once (on first need, unless
    given: :func:`~kbtool.services.diff.entries.runtime_imports`), not the callees' import
    names per row (a report asks it of every row: 45,000 times on ffmpeg)."""
    by_name = is_runtime_name

    def check(row: dict[str, Any] | None, ann: dict[str, Any] | None) -> bool:
        nonlocal rt_imports
        if row is None:
            return False
        # (_runtime_by_name, inline: asked of every row of a report)
        if ann is not None and (ann["runtime_oracle"] or by_name(ann["name"])):
            return True
        raw = row["raw_name"]
        if raw and by_name(raw):
            return True
        exports = row["export_names"]
        if exports and any(map(by_name, exports)):
            return True
        if row["instr_count"] > RUNTIME_WRAPPER_MAX_INSTR:
            return False
        if rt_imports is None:
            rt_imports = runtime_imports(rows)
        # (runtime_by_signature of the imported callees' names: one is the runtime's)
        return not rt_imports.isdisjoint(row["calls"])

    return check


def code_runtime(row: dict[str, Any] | None, rows: Mapping[int, dict[str, Any]]) -> bool:
    """A function looks like runtime by its own code (raw or export name, the imports it
    calls), whatever its annotation says."""
    return _is_runtime(row, None, rows)


# --------------------------------------------------------------------------- report


def _label(conn: sqlite3.Connection, version_id: int) -> dict[str, Any]:
    return queries.version_info(conn, version_id)  # raises UnknownVersionError


def compute_diff(conn: sqlite3.Connection, a: int, b: int) -> dict[str, Any]:
    """The diff report of ``a`` (older baseline) -> ``b`` (newer), computed now; never writes.

    Raises :class:`kbtool.kb.errors.UnknownVersionError` for an unknown id.
    """
    return compute_diff_with_pairing(conn, a, b)[0]


def compute_diff_with_pairing(
    conn: sqlite3.Connection, a: int, b: int, *, keep: dict[str, Any] | None = None
) -> tuple[dict[str, Any], Pairing]:
    """:func:`compute_diff` plus the pairing it was built from (its rows serve the changelog).

    ``keep``: a dict that receives the ``changelog`` built on the way (the explanations);
    with a ``touched`` pair of sets, they receive the indices whose annotation the changelog
    read (:func:`kbtool.services.diff.changelog.changelog`); with a ``state`` dict, it receives
    what :mod:`kbtool.services.diff.relabel` needs to rebuild a few entries after a rename."""
    va = _label(conn, a)
    vb = _label(conn, b)
    pg = pair_versions(conn, a, b)
    return build_report(conn, pg, va, vb, keep=keep), pg


def stored_diff(
    conn: sqlite3.Connection,
    a: int,
    b: int,
    *,
    keep: dict[str, Any] | None = None,
    retriage: bool = True,
) -> dict[str, Any] | None:
    """The saved report of the pair, or None. A report saved under older triage rules
    (``triage_rules``, kept with it by :func:`save_diff`) gets today's triage (scores, reasons, kinds), so every surface orders
    it as the changelog does; ``keep["changelog"]`` then holds the changelog computed for it.

    A report ingest stored (``triage_rules`` :data:`TRIAGE_PENDING`: no triage at all) is
    such a report too: the reader gets the triage ingest used to compute.

    ``retriage=False``: such a report comes back as stored, with ``keep["stale_triage"]``
    set (and ``keep["never_triaged"]`` for one stored without triage); :func:`retriage_stored` brings it up later (the diff cache first looks for the answer
    kept on disk: the re-triage reads every modified body, a minute on ffmpeg)."""
    report = queries.stored_diff_report(conn, a, b)
    if report is None:
        return None
    report["stored"] = True
    _refresh_names(conn, report)
    add_program_fields(conn, report)  # programs are today's (a lineage can be reassigned)
    rules = report.pop("triage_rules", None)
    if rules != _triage_rules() and any(
        c["classification"] == "modified" for c in report["changes"]
    ):
        if not retriage:
            if keep is not None:
                keep["stale_triage"] = True
                keep["never_triaged"] = rules == TRIAGE_PENDING  # stored by ingest, never triaged
            return report
        retriage_stored(conn, report, keep=keep)
    return report


def retriage_stored(
    conn: sqlite3.Connection, report: dict[str, Any], *, keep: dict[str, Any] | None = None
) -> None:
    """Today's triage on a stored report, in place (the pairing and classification stay);
    ``keep["changelog"]`` receives the changelog it was taken from."""
    cl = _changelog(conn, report)
    set_triage(report["changes"], cl)
    if keep is not None:
        keep["changelog"] = cl


def set_triage(changes: list[dict[str, Any]], cl: dict[str, Any]) -> None:
    """Each modified change's explanation and triage, from the changelog."""
    explained = {m["to_index"]: m for m in cl["modified"]}
    for c in changes:
        m = explained.get(c["to_index"]) if c["classification"] == "modified" else None
        if m is not None:
            # what changed, as short lines (the change keys of docs/interface.md stay as they are)
            c["explain"] = m["items"]
            c["change_weight"] = m["weight"]
            c["triage"] = m["triage"]
            c["reasons"] = m["reasons"]
            c["triage_kind"] = m["triage_kind"]


def _refresh_names(conn: sqlite3.Connection, report: dict[str, Any]) -> None:
    """Names move on after a report is stored (renames, carry, agents): show today's.

    The pairing and classification stay as stored; ``name``/``provenance``/``confidence``
    are the to-side annotation when there is one, else the from-side one (as when built).
    """
    old = queries.annotations_by_index(conn, report["from_version_id"])
    new = queries.annotations_by_index(conn, report["to_version_id"])
    for c in report["changes"]:
        ann = (new.get(c["to_index"]) if c["to_index"] is not None else None) or (
            old.get(c["from_index"]) if c["from_index"] is not None else None
        )
        c["name"] = ann["name"] if ann else None
        c["provenance"] = ann["provenance"] if ann else None
        c["confidence"] = ann["confidence"] if ann else None


class _Relocation:
    """Relocation-aware equivalence of the pairs the facts call different
    (:mod:`kbtool.services.diff.relocation`): only pairs with the same instruction stream are
    decoded, the two modules are parsed on first need."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        pg: Pairing,
        new_view: ModuleView | None = None,
        *,
        old_sha: str | None = None,
        new_mem: Mapping[int, str] | None = None,
    ) -> None:
        """``new_view``: the view of the to-version's stored module when the caller has it
        (ingest: made of the very bytes it stored), so they are not read and hashed again.
        ``old_sha``: the from-version's stored SHA-256 (its view's key: the bytes are not
        hashed, nor read when the view is kept). ``new_mem``: the to-version's ``mem_ops``
        facts as the JSON text stored, by index, when the caller has them (ingest: the text
        it just wrote), so they are not read back."""
        self.conn, self.pg, self.new_view = conn, pg, new_view
        self.old_sha, self.new_mem = old_sha, new_mem
        self.views: tuple[ModuleView, ModuleView] | None | bool = False
        self.mem: tuple[Mapping[int, str], Mapping[int, str]] | None = None

    def _mem(self) -> tuple[dict[int, str], dict[int, str]]:
        """The stored memory accesses of every pair :meth:`layout_shift` may read (the same
        instruction stream, other bodies) as their JSON text, both versions read at once on
        first need (parsed only where the two texts differ: on ffmpeg 7 pairs of 7,156)."""
        if self.mem is None:
            pg = self.pg
            olds, news = self.mem_indices()
            new_mem = self.new_mem
            self.mem = (
                queries.mem_ops_json_for(self.conn, pg.from_version_id, olds),
                queries.mem_ops_json_for(self.conn, pg.to_version_id, news)
                if new_mem is None
                else new_mem,
            )
        return self.mem

    def mem_indices(self) -> tuple[list[int], list[int]]:
        """The old and new indices of the pairs whose accesses :meth:`_mem` reads."""
        pg, olds, news = self.pg, [], []
        views = self._views()
        agree = views is not None and views[0].shapes_agree and views[1].shapes_agree
        for p in pg.defined_pairs():
            o, n = pg.old_rows[p.old_index], pg.new_rows[p.new_index]
            if o["ops"] != n["ops"] or o["body_hash"] == n["body_hash"]:
                continue
            if agree and o["shape_hash"] and o["shape_hash"] == n["shape_hash"]:
                continue  # (answered without the accesses: see layout_shift)
            olds.append(p.old_index)
            news.append(p.new_index)
        return olds, news

    def _views(self) -> tuple[ModuleView, ModuleView] | None:
        if self.views is False:
            sha = self.old_sha
            va = cached_view(bytes.fromhex(sha)) if sha else None
            a = None if va is not None else queries.module_bytes(self.conn, self.pg.from_version_id)
            vb = self.new_view
            b = None if vb is not None else queries.module_bytes(self.conn, self.pg.to_version_id)
            try:
                va = va if va is not None else module_view(a, sha=sha)
                vb = vb if vb is not None else module_view(b)
                self.views = (va, vb) if va is not None and vb is not None else None
            except WasmFormatError:
                self.views = None
        return self.views  # type: ignore[return-value]

    def callee(self, i: int) -> int | None:
        p = self.pg.by_old.get(i)
        return p.new_index if p is not None else None

    def layout_shift(self, p: Pair) -> bool:
        """Same instruction stream, but memory accesses at other field offsets."""
        o, n = self.pg.old_rows[p.old_index], self.pg.new_rows[p.new_index]
        if o["ops"] != n["ops"]:
            return False
        views = self._views()
        if views is None:
            return False
        if o["shape_hash"] and o["shape_hash"] == n["shape_hash"]:
            # the shape hash keeps every memory offset but static ones: equal shapes have
            # the same offsets wherever one side's is not static (no body decoded)
            if views[0].shapes_agree and views[1].shapes_agree:
                return False
        # the stored accesses when both are at hand (the same answer, no body decoded:
        # tests/unit/services/test_diff_tokens.py), else the bodies' decode
        mem_a, mem_b = self._mem()
        a, b = mem_a.get(p.old_index), mem_b.get(p.new_index)
        if a is not None and b is not None:
            if a == b:  # the same accesses: no offset differs
                return False
            parse = queries.parse_mem_ops
            return mem_offsets_differ(views[0], parse(a), views[1], parse(b))
        return field_offsets_differ(views[0], p.old_index, views[1], p.new_index)

    def same(self, p: Pair) -> bool:
        o, n = self.pg.old_rows[p.old_index], self.pg.new_rows[p.new_index]
        if o["ops"] != n["ops"] or o["type_sig"] != n["type_sig"]:
            return False
        views = self._views()
        if views is None:
            return False
        return same_bodies(views[0], p.old_index, views[1], p.new_index, self.callee)


#: a pair's flags ``(same, relocated)`` by their code (:func:`pair_flags_code`)
_FLAGS = ((False, False), (True, False), (True, True))

#: ``classes(pg, defined_pairs)``: each defined pair's :data:`_FLAGS` code, in order, when
#: they were computed for this very pairing (ingest: by the matcher's child), else None
Classes = Callable[[Pairing, list[Pair]], Any]


def classify_pair(pg: Pairing, reloc: Any, p: Pair) -> tuple[bool, bool]:
    """A defined pair's ``(same, relocated)``: the same code (up to relocation), and only
    relocated (other bytes); a memory layout change is not the same code."""
    same = pg.same_code(p)
    relocated = same and (
        pg.old_rows[p.old_index]["body_hash"] != pg.new_rows[p.new_index]["body_hash"]
    )
    if not same and reloc.same(p):
        same = relocated = True
    if relocated and reloc.layout_shift(p):  # struct fields moved: a layout change
        same = relocated = False
    return same, relocated


def classify_pairs(pg: Pairing, reloc: Any, pairs: list[Pair]) -> bytes:
    """:func:`classify_pair`'s :func:`pair_flags_code` of each of ``pairs``, in one loop:
    ``layout_shift``'s early exits (other streams, equal shapes where the views agree)
    taken here, so most relocated pairs make no call (ffmpeg: 12k of them)."""
    old_rows, new_rows, same_code = pg.old_rows, pg.new_rows, pg.same_code
    agree: bool | None = None  # (the views' shapes agree: asked on the first need)
    out = bytearray()
    for p in pairs:
        o, n = old_rows[p.old_index], new_rows[p.new_index]
        same = same_code(p)
        relocated = same and o["body_hash"] != n["body_hash"]
        if not same and reloc.same(p):
            same = relocated = True
        if relocated and o["ops"] == n["ops"]:
            if agree is None:
                views = reloc._views()  # noqa: SLF001 - this module's class
                agree = views is not None and views[0].shapes_agree and views[1].shapes_agree
            sh = o["shape_hash"]
            if not (agree and sh and sh == n["shape_hash"]) and reloc.layout_shift(p):
                same = relocated = False
        out.append(2 if relocated else int(same))
    return bytes(out)


def pair_flags_code(same: bool, relocated: bool) -> int:
    """The index of ``(same, relocated)`` in :data:`_FLAGS`."""
    return 2 if relocated else int(same)


def relocation_check(
    conn: Any,
    pg: Pairing,
    new_view: ModuleView | None = None,
    *,
    old_sha: str | None = None,
    new_mem: Mapping[int, str] | None = None,
) -> _Relocation:
    """:func:`build_report`'s relocation check of ``pg`` (:func:`classify_pair` takes it;
    ingest's matcher child gives it its views and accesses: ``views``, ``mem``)."""
    return _Relocation(conn, pg, new_view, old_sha=old_sha, new_mem=new_mem)


_CLASSIFICATION, _REVIEW = itemgetter("classification"), itemgetter("review")


def build_report(
    conn: sqlite3.Connection,
    pg: Pairing,
    va: dict[str, Any],
    vb: dict[str, Any],
    *,
    keep: dict[str, Any] | None = None,
    triage: bool = True,
    new_view: ModuleView | None = None,
    new_mem: Mapping[int, str] | None = None,
    classes: Classes | None = None,
    defined: list[Pair] | None = None,
) -> dict[str, Any]:
    """The report of a computed pairing. ``triage=False``: without the changelog's
    explanations and triage of modified changes (what :func:`store_report` saves at ingest,
    marked :data:`TRIAGE_PENDING`; the reader or the background warm job triages it).
    ``new_view``: the to-version module's relocation view when the caller has it (ingest);
    ``new_mem``: its ``mem_ops`` facts as stored, by index (ingest: see :class:`_Relocation`);
    ``classes``: see :data:`Classes` (None, or an answer of None: classified here);
    ``defined``: ``pg.defined_pairs()`` when the caller has it (ingest: the name carry's)."""
    ann_old = version_annotations(conn, pg.from_version_id)
    ann_new = version_annotations(conn, pg.to_version_id)
    ta, tb = va.get("toolchain_version"), vb.get("toolchain_version")
    toolchain_changed = bool(ta and tb and ta != tb)

    old_rows, new_rows = pg.old_rows, pg.new_rows
    rti_old, rti_new = runtime_imports(old_rows), runtime_imports(new_rows)
    rt_old, rt_new = _runtime_check(old_rows, rti_old), _runtime_check(new_rows, rti_new)

    def entry(cls: str, o: int | None, n: int | None, p: Pair | None) -> dict[str, Any]:
        orow = old_rows.get(o) if o is not None else None
        nrow = new_rows.get(n) if n is not None else None
        an = ann_new.get(n) if n is not None else None
        ao = ann_old.get(o) if o is not None else None
        ann = an or ao
        return {
            "classification": cls,
            "from_index": o,
            "to_index": n,
            "from_stable_id": orow["stable_id"] if orow else None,
            "to_stable_id": nrow["stable_id"] if nrow else None,
            "score": p.score if p is not None else None,
            "review": bool(p.review) if p is not None else False,
            "runtime": bool(rt_new(nrow, an) or rt_old(orow, ao)),
            "name": ann["name"] if ann else None,
            "provenance": ann["provenance"] if ann else None,
            "confidence": ann["confidence"] if ann else None,
        }

    reloc = _Relocation(conn, pg, new_view, old_sha=va.get("sha256"), new_mem=new_mem)
    if defined is None:
        defined = pg.defined_pairs()
    known = classes(pg, defined) if classes is not None else None
    paired = pair_changes(
        pg,
        defined,
        known,
        lambda p: classify_pair(pg, reloc, p),
        _FLAGS,
        ann_old,
        ann_new,
        rti_old,
        rti_new,
    )
    changes = report_order(pg, defined, paired, entry)
    report_so_far = {
        "from": va["label"],
        "to": vb["label"],
        "from_version_id": pg.from_version_id,
        "to_version_id": pg.to_version_id,
        "changes": changes,
    }
    if triage:
        cl = _changelog(
            conn,
            report_so_far,
            pairing=pg,
            touched=(keep or {}).get("touched"),
            state=(keep or {}).get("state"),
        )
        if keep is not None:
            keep["changelog"] = cl
        set_triage(changes, cl)

    counts = Counter(map(_CLASSIFICATION, changes))  # (by C loops: 22k changes on ffmpeg)
    review = sum(map(_REVIEW, changes))
    churn = 0
    if toolchain_changed:
        for c in changes:
            if c["runtime"] and c["classification"] in CHANGED:
                churn += 1
    return {
        "from": va["label"],
        "to": vb["label"],
        "from_version_id": pg.from_version_id,
        "to_version_id": pg.to_version_id,
        "stored": False,
        **program_fields(conn, pg.from_version_id, pg.to_version_id),
        "summary": {
            "unchanged": counts["unchanged"],
            "moved": counts["moved"],
            "modified": counts["modified"],
            "added": counts["new"],
            "removed": counts["deleted"],
            "runtime_churn": churn,
            "review": review,
        },
        "changes": changes,
    }


def get_diff(conn: sqlite3.Connection, from_version_id: int, to_version_id: int) -> dict[str, Any]:
    """The stored report of the pair when one was saved, else :func:`compute_diff` (a pure read)."""
    _label(conn, from_version_id)
    _label(conn, to_version_id)
    report = stored_diff(conn, from_version_id, to_version_id)
    if report is not None:
        return report
    return compute_diff(conn, from_version_id, to_version_id)


def save_diff(
    conn: sqlite3.Connection, report: dict[str, Any], *, triage_rules: int | None = None
) -> None:
    """Store ``report`` as the diff of its pair (replacing an older one), with the triage
    rules it was made under (``TRIAGE_PENDING``: made without triage; None: today's,
    :data:`~kbtool.services.diff.triage.TRIAGE_RULES`)."""
    if triage_rules is None:
        triage_rules = _triage_rules()
    a, b = int(report["from_version_id"]), int(report["to_version_id"])
    _label(conn, a)
    _label(conn, b)
    with transaction(conn):
        # with the triage rules it was made under (a later kbtool brings its triage up)
        store.save_diff_report(conn, a, b, dict(report, stored=True, triage_rules=triage_rules))


def store_report(
    conn: sqlite3.Connection,
    pg: Pairing,
    *,
    new_view: ModuleView | None = None,
    new_mem: Mapping[int, str] | None = None,
    classes: Classes | None = None,
    defined: list[Pair] | None = None,
) -> dict[str, Any]:
    """Build the report of an already computed pairing and store it (ingest does this for
    each (parent, new) pair, so every surface serves it without re-running the matcher).

    Stored without the changelog's triage (:data:`TRIAGE_PENDING`: ingest skips the
    changelog, 0.8 of 1.4 CPU s of a later demo release, ~12 s on ffmpeg): a reader re-triages
    it as a report saved under older rules (:func:`stored_diff`), and the background warm job
    (:mod:`kbtool.services.diff.warm`, started by ``kbtool ingest``) builds that changelog
    and keeps the answer on disk. The returned report has no triage either. ``new_view``,
    ``new_mem``, ``classes``, ``defined``: see :func:`build_report`."""
    report = build_report(
        conn,
        pg,
        _label(conn, pg.from_version_id),
        _label(conn, pg.to_version_id),
        triage=False,
        new_view=new_view,
        new_mem=new_mem,
        classes=classes,
        defined=defined,
    )
    save_diff(conn, report, triage_rules=TRIAGE_PENDING)
    return report


def delete_diff(conn: sqlite3.Connection, a: int, b: int) -> bool:
    """Forget the stored report of a pair; True when there was one."""
    with transaction(conn):
        return store.delete_diff_report(conn, a, b)
