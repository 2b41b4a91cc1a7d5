"""Names that travel: the git-diffable text export of a version, and importing such a file
into another KB, where each name finds its function by what the function is, not by ids.

Export format (UTF-8, one row per function in index order, stable across runs)::

    # kbtool KB export
    # version LABEL sha256 SHA
    index  stable_id  name  provenance  confidence  type  summary  module_sha256  body_hash  shape_hash  instrs

Cells are tab-separated; backslash, tab, newline, carriage return and every other control
character (C0, DEL, C1) are escaped (``\\t``, ``\\n``, ``\\r``, ``\\\\``, ``\\xHH``), so a
summary holding a terminal escape sequence never reaches a terminal raw. Files written before
the hash columns existed (7 cells) still import (by stable id only).

Import: a row finds its function in the target version by, in order,

1. ``module+index``: the target version has the same module bytes (sha256) -> same index;
2. ``exact-body``: exactly one target function has the row's body hash;
3. ``shape``: exactly one target function has the row's shape hash;

both only for functions of at least ``MIN_SHAPE_INSTRS`` instructions: a unique small body or
shape is luck, not evidence. Bodies hold raw callee indices, so small dispatch wrappers of
two releases swap byte-identical bodies when the callees are renumbered (zstd 1.5.5 -> 1.5.6:
the 8-instruction ``btopt``/``btultra`` and the 17/20-instruction ``*_extDict`` and
``HUF_decompress*_usingDTable`` wrappers; 24 was set on that pair, the other pairs of
benchmarks/lineage.py are held out);
4. ``stable-id``: the target version has a function with the row's stable id (same KB
   lineage only: stable ids depend on each KB's ingest history).

Unique means unique on both sides: a body or shape hash held by several target functions, or
by several functions of the exported version, is ambiguous and names nothing (nor does the
row fall back to its stable id then); so is a target function several rows with different
names land on. All are reported. A stable id is used only when the target function with that
id has the row's shape, or the row's shape occurs nowhere in the target.
"""

from __future__ import annotations

import math
import re
import sqlite3
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kbtool.kb import gate, queries
from kbtool.kb.db import transaction
from kbtool.kb.errors import KBError
from kbtool.services import knowledge as knowledge_svc
from kbtool.services import lineage as lineage_svc
from kbtool.services import types as types_svc
from kbtool.textutil import BIDI, INVISIBLE
from kbtool.wasm.namesec import with_function_names

EXPORT_HEADER = "# kbtool KB export"
COLUMNS = (
    "index",
    "stable_id",
    "name",
    "provenance",
    "confidence",
    "type",
    "summary",
    "module_sha256",
    "body_hash",
    "shape_hash",
    "instrs",
)
LEGACY_COLUMNS = 7
MIN_SHAPE_INSTRS = 24  # under this many instructions a unique body/shape match is not enough
METHODS = ("module+index", "exact-body", "shape", "stable-id")

# controls, line separators, bidi controls and invisibles (kbtool.textutil) and the backslash
_ESCAPE = re.compile(f"[\x00-\x1f\x7f-\x9f\u2028\u2029{BIDI}{INVISIBLE}\\\\]")
_NAMED = {"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"}


class ExportFormatError(KBError):
    """A file that is not a kbtool export, or a malformed row (``file:line: why``)."""


def cell(value: Any) -> str:
    """One escaped cell (empty for None)."""
    if value is None:
        return ""
    return _ESCAPE.sub(lambda m: _NAMED.get(m.group()) or _hex_escape(m.group()), str(value))


def _hex_escape(ch: str) -> str:
    o = ord(ch)
    return f"\\x{o:02x}" if o < 0x100 else f"\\u{o:04x}" if o < 0x10000 else f"\\U{o:08x}"


def uncell(text: str) -> str | None:
    """Inverse of :func:`cell` (None for an empty cell)."""
    if text == "":
        return None
    out, i = [], 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            width = {"x": 2, "u": 4, "U": 8}.get(nxt, 0)
            digits = text[i + 2 : i + 2 + width]
            if (
                width
                and len(digits) == width
                and re.fullmatch(r"[0-9a-fA-F]+", digits)
                and int(digits, 16) <= 0x10FFFF
            ):
                out.append(chr(int(digits, 16)))
                i += 2 + width
                continue
            out.append({"t": "\t", "n": "\n", "r": "\r", "\\": "\\"}.get(nxt, nxt))
            i += 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)


KNOWLEDGE_PREFIX = "# knowledge\t"


def knowledge_lines(conn: sqlite3.Connection, version_id: int) -> list[str]:
    """The knowledge section: one ``#``-prefixed line per comment, line comment, prototype,
    local name (by function index of this version) and data name (by content id), sorted, so
    older kbtools skip it and the file stays git-diffable::

        # knowledge  KIND  INDEX  KEY  PROVENANCE  CONFIDENCE  VALUE  ANCHOR
    """
    out: list[tuple] = []
    for idx, sid, _sig in knowledge_svc.kn.version_targets(conn, version_id):
        for r in knowledge_svc.kn.for_target(conn, sid):
            v = r["value"]
            value = v.get("name") if r["kind"] == "local" else v.get("text")
            anchor = (
                " ".join([str(v.get("ordinal") or 0), *(v.get("anchor") or [])])
                if r["kind"] == "line_comment"
                else ""
            )
            out.append(
                (
                    idx,
                    r["kind"],
                    int(r["key"]) if r["key"].isdigit() else 0,
                    r["kind"],
                    str(idx),
                    r["key"],
                    r["provenance"],
                    f"{r['confidence']:.4f}",
                    value,
                    anchor,
                )
            )
    for r in knowledge_svc.kn.of_kind(conn, "data_name"):
        out.append(
            (
                1 << 62,
                r["kind"],
                0,
                r["kind"],
                "-",
                r["target"],
                r["provenance"],
                f"{r['confidence']:.4f}",
                r["value"].get("name"),
                "",
            )
        )
    for kind in ("data_type", "type"):  # types (issue 27): by data key / by type name
        for r in knowledge_svc.kn.of_kind(conn, kind):
            out.append(
                (
                    1 << 62,
                    r["kind"],
                    0,
                    r["kind"],
                    "-",
                    r["target"],
                    r["provenance"],
                    f"{r['confidence']:.4f}",
                    r["value"].get("text"),
                    "",
                )
            )
    out.sort(key=lambda t: (t[0], t[1], t[2], t[5]))
    return [KNOWLEDGE_PREFIX + "\t".join(cell(c) or "" for c in t[3:]) for t in out]


def parse_knowledge(text: str, source: str = "file") -> list[dict[str, Any]]:
    """The knowledge lines of an export (none in an older file)."""
    out = []
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.startswith(KNOWLEDGE_PREFIX):
            continue
        parts = line[len(KNOWLEDGE_PREFIX) :].split("\t")
        if len(parts) != 7:
            raise ExportFormatError(
                f"{source}:{n}: a knowledge line has 7 fields, got {len(parts)}"
            )
        kind, idx, key, prov, conf, value, anchor = parts
        if kind not in knowledge_svc.kn.KINDS:
            raise ExportFormatError(f"{source}:{n}: unknown knowledge kind {kind[:30]!r}")
        try:
            out.append(
                {
                    "kind": kind,
                    "index": None if idx == "-" else int(idx),
                    "key": uncell(key) or "",
                    "provenance": uncell(prov),
                    "confidence": float(conf) if conf else None,
                    "value": uncell(value),
                    "anchor": (uncell(anchor) or "").split(),
                }
            )
        except ValueError as exc:
            raise ExportFormatError(f"{source}:{n}: bad number: {exc}") from None
    return out


def export_text(conn: sqlite3.Connection, version_id: int, *, knowledge: bool = True) -> str:
    """The export of a version: two comment lines, a header line, one row per function, then
    (``knowledge``) the knowledge section (:func:`knowledge_lines`)."""
    info = queries.version_info(conn, version_id)
    sha = info["sha256"]
    lines = [EXPORT_HEADER, f"# version {cell(info['label'])} sha256 {sha}", "\t".join(COLUMNS)]
    for r in queries.export_rows(conn, version_id):
        lines.append(
            "\t".join(
                (
                    str(r["index"]),
                    r["stable_id"],
                    cell(r["name"]),
                    cell(r["provenance"]),
                    "" if r["confidence"] is None else f"{r['confidence']:.4f}",
                    cell(r["type"]),
                    cell(r["summary"]),
                    sha,
                    r["body_hash"] or "",
                    r["shape_hash"] or "",
                    str(r["instr_count"] or 0),
                )
            )
        )
    if knowledge:
        lines += knowledge_lines(conn, version_id)
    return "\n".join(lines) + "\n"


def parse_line(line: str) -> dict[str, Any] | None:
    """One export row as a dict (None for comments and the header); ValueError when malformed."""
    if not line or line.startswith("#") or line.startswith("index\t"):
        return None
    parts = line.rstrip("\n").split("\t")
    if len(parts) not in (LEGACY_COLUMNS, len(COLUMNS)):
        raise ValueError(
            f"expected {len(COLUMNS)} (or {LEGACY_COLUMNS}) tab-separated fields, got {len(parts)}"
        )
    parts += [""] * (len(COLUMNS) - len(parts))
    idx, sid, name, prov, conf, typ, summary, sha, body, shape, instrs = parts
    try:
        return {
            "index": int(idx),
            "stable_id": sid,
            "name": uncell(name),
            "provenance": uncell(prov),
            "confidence": float(conf) if conf else None,
            "type": uncell(typ),
            "summary": uncell(summary),
            "module_sha256": sha or None,
            "body_hash": body or None,
            "shape_hash": shape or None,
            "instr_count": int(instrs) if instrs else None,
        }
    except ValueError as exc:
        raise ValueError(f"bad number: {exc}") from None


def parse_export(text: str, source: str = "file") -> list[dict[str, Any]]:
    """Every row of an export file; :class:`ExportFormatError` when it is not one."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != EXPORT_HEADER:
        raise ExportFormatError(
            f"{source} is not a kbtool export (first line must be '{EXPORT_HEADER}')"
        )
    rows = []
    for n, line in enumerate(lines[1:], start=2):
        try:
            row = parse_line(line)
        except ValueError as exc:
            raise ExportFormatError(f"{source}:{n}: {exc}") from None
        if row:
            rows.append(row)
    return rows


# --------------------------------------------------------------------------- placing


@dataclass
class Placement:
    """Where each row goes in the target version: index -> row, and what could not be placed."""

    version_id: int
    targets: dict[int, dict[str, Any]] = field(default_factory=dict)  # target index -> row
    method_of: dict[int, str] = field(default_factory=dict)  # target index -> method
    ambiguous: list[dict[str, Any]] = field(default_factory=list)  # row + why
    unplaced: list[dict[str, Any]] = field(default_factory=list)

    def by_method(self) -> dict[str, int]:
        c = Counter(self.method_of.values())
        return {m: c.get(m, 0) for m in METHODS}


def place_rows(
    rows: list[dict[str, Any]], target: list[dict[str, Any]], target_sha: str, version_id: int
) -> Placement:
    """Match the named export rows to the functions of a target version (pure; see the
    module doc). ``rows`` are all rows of the export: unnamed ones count for uniqueness."""
    by_index = {t["index"]: t for t in target}
    by_body: dict[str, list[int]] = defaultdict(list)
    by_shape: dict[str, list[int]] = defaultdict(list)
    by_sid: dict[str, int] = {}
    shape_of: dict[int, str | None] = {}
    src_body = Counter(r["body_hash"] for r in rows if r["body_hash"])
    src_shape = Counter(r["shape_hash"] for r in rows if r["shape_hash"])
    for t in target:
        shape_of[t["index"]] = t["shape_hash"]
        if t["body_hash"] and not t["imported"]:
            by_body[t["body_hash"]].append(t["index"])
        if t["shape_hash"] and not t["imported"]:
            by_shape[t["shape_hash"]].append(t["index"])
        by_sid[t["stable_id"]] = t["index"]

    out = Placement(version_id)
    claims: dict[int, list[tuple[dict[str, Any], str]]] = defaultdict(list)
    for row in rows:
        if not row["name"]:
            continue
        hit: tuple[int, str] | None = None
        why = None
        body, shape = row["body_hash"], row["shape_hash"]
        tb, ts = by_body.get(body, ()) if body else (), by_shape.get(shape, ()) if shape else ()
        big = (row["instr_count"] or 0) >= MIN_SHAPE_INSTRS
        if row["module_sha256"] == target_sha and row["index"] in by_index:
            hit = (row["index"], "module+index")
        elif len(tb) == 1 and src_body[body] == 1 and big:
            hit = (tb[0], "exact-body")
        elif len(tb) > 1 or (tb and src_body[body] > 1):
            why = f"body hash held by {len(tb)} target and {src_body[body]} exported functions"
        elif len(ts) == 1 and src_shape[shape] == 1 and big:
            hit = (ts[0], "shape")
        elif len(ts) > 1 or (ts and src_shape[shape] > 1):
            why = f"shape hash held by {len(ts)} target and {src_shape[shape]} exported functions"
        if hit is None and why is None and row["stable_id"] in by_sid:
            idx = by_sid[row["stable_id"]]
            if not ts or shape_of[idx] == shape:
                hit = (idx, "stable-id")
        if hit is not None:
            claims[hit[0]].append((row, hit[1]))
        elif why is not None:
            out.ambiguous.append({**row, "why": why})
        else:
            out.unplaced.append(row)
    for idx, got in sorted(claims.items()):
        names = {r["name"] for r, _ in got}
        if len(names) > 1:
            out.ambiguous.extend(
                {**r, "why": f"{len(got)} rows with different names land on function {idx}"}
                for r, _ in got
            )
            continue
        row, method = min(got, key=lambda rm: METHODS.index(rm[1]))
        out.targets[idx] = row
        out.method_of[idx] = method
    return out


def choose_target_version(conn: sqlite3.Connection, rows: list[dict[str, Any]]) -> int:
    """The version an export belongs to: same module bytes, else the most related version."""
    if not queries.lineage_versions(conn):
        raise KBError("the KB has no versions yet: ingest the module first")
    shas = {r["module_sha256"] for r in rows if r["module_sha256"]}
    for sha in sorted(shas):
        same = queries.versions_with_sha256(conn, sha)
        if same:
            return same[-1]["id"]
    prof = lineage_svc.profile(
        (r["body_hash"], r["shape_hash"], r["instr_count"] or 0) for r in rows
    )
    best = max(
        (
            (
                lineage_svc.overlap(prof, lineage_svc.profile(queries.hash_rows(conn, v["id"]))),
                v["id"],
            )
            for v in queries.lineage_versions(conn)
        ),
    )
    if not shas:  # an old export without hashes: its stable ids are all there is
        return queries.latest_version_id(conn)
    if best[0] <= 0:
        raise KBError("no version of this KB shares functions with the export; pass --version")
    return best[1]


# --------------------------------------------------------------------------- importing


IMPORT_DEFAULT_CONFIDENCE = 0.9  # a row without a confidence (older exports)
KEEPS_PROVENANCE = ("oracle", "export", "agent", "diff-carry")


def import_as(row: dict[str, Any], *, as_human: bool, lock: bool = True) -> dict[str, Any]:
    """What an import writes for ``row``: provenance, confidence, lock, and whether a human
    name of this KB wins over it. Rules (docs/DECISIONS.md, "Imported names keep where they
    came from"):

    - ``--as-human``: your decision: human, confidence 1.0, locked unless ``lock=False``,
      whatever the row says and even when the name is already the current one;
    - a row the exporter's KB had from a person (``human``): human, unlocked, at the row's
      confidence; it outranks agents and carried names but never replaces a human name of
      this KB (yours win; the row is refused and listed);
    - ``oracle``/``export``/``agent``/``diff-carry`` rows keep their provenance and
      confidence, and the gate weighs them as it would locally;
    - a row without provenance (an older export): oracle at 0.9.
    """
    conf = row["confidence"] if row["confidence"] is not None else IMPORT_DEFAULT_CONFIDENCE
    conf = float(conf)
    if math.isfinite(conf):  # inf/nan reach the gate, which refuses them (never clamped)
        conf = min(max(conf, 0.0), 1.0)
    if as_human:
        return {"provenance": "human", "confidence": 1.0, "lock": lock, "yield_to_human": False}
    if row["provenance"] == "human":
        return {"provenance": "human", "confidence": conf, "lock": False, "yield_to_human": True}
    if row["provenance"] in KEEPS_PROVENANCE:
        return {
            "provenance": row["provenance"],
            "confidence": conf,
            "lock": None,
            "yield_to_human": False,
        }
    return {
        "provenance": "oracle",
        "confidence": IMPORT_DEFAULT_CONFIDENCE if row["confidence"] is None else conf,
        "lock": None,
        "yield_to_human": False,
    }


@dataclass
class ImportReport:
    version_id: int
    provenance: str  # "human" with --as-human, else "as exported"
    by_method: dict[str, int]
    written: int = 0
    already: int = 0  # the function already had that record (nothing to write)
    refused: int = 0  # the gate refused (a locked or higher-ranked name)
    ambiguous: list[dict[str, Any]] = field(default_factory=list)
    unplaced: int = 0
    placed: dict[int, str] = field(default_factory=dict)  # target index -> name
    by_provenance: dict[str, int] = field(default_factory=dict)  # written names per provenance
    refusals: list[dict[str, Any]] = field(default_factory=list)  # {index, name, why}
    knowledge: dict[str, int] = field(default_factory=dict)  # comments, prototypes, ... imported

    def as_dict(self) -> dict[str, Any]:
        return {
            "version_id": self.version_id,
            "provenance": self.provenance,
            "by_method": self.by_method,
            "written": self.written,
            "written_by_provenance": self.by_provenance,
            "already": self.already,
            "refused": self.refused,
            "refusals": self.refusals,
            "unplaced": self.unplaced,
            "ambiguous": [
                {"index": a["index"], "name": a["name"], "why": a["why"]} for a in self.ambiguous
            ],
            "knowledge": self.knowledge,
        }


def import_names(
    conn: sqlite3.Connection,
    text: str,
    *,
    source: str = "file",
    version_id: int | None = None,
    as_human: bool = False,
    lock: bool = True,
) -> ImportReport:
    """Read an export and write its names onto the matching functions, through the gate,
    each with the provenance :func:`import_as` gives it."""
    rows = parse_export(text, source)
    if version_id is None:
        version_id = choose_target_version(conn, rows)
    info = queries.version_info(conn, version_id)
    target = queries.export_rows(conn, version_id)
    sid_of = {t["index"]: t["stable_id"] for t in target}
    placement = place_rows(rows, target, info["sha256"], version_id)
    rep = ImportReport(
        version_id,
        "human" if as_human else "as exported",
        placement.by_method(),
        ambiguous=placement.ambiguous,
        unplaced=len(placement.unplaced),
    )
    with transaction(conn):
        for idx, row in sorted(placement.targets.items()):
            sid = sid_of[idx]
            rep.placed[idx] = row["name"]
            how = import_as(row, as_human=as_human, lock=lock)
            if how["yield_to_human"]:
                cur = queries.get_symbol(conn, sid)
                if cur is not None and cur["provenance"] == "human" and cur["name"] == row["name"]:
                    rep.already += 1  # both people agree: this KB's record stays as it is
                    continue
            d = gate.upsert_symbol(
                conn,
                sid,
                row["name"],
                provenance=how["provenance"],
                confidence=how["confidence"],
                actor=f"import:{source}",
                summary=row["summary"],
                type_signature=None,
                evidence={
                    "source": "import-names",
                    "file": source,
                    "method": placement.method_of[idx],
                    "from_index": row["index"],
                    "original_provenance": row["provenance"],
                    "original_confidence": row["confidence"],
                },
                lock=how["lock"],
                version_id=version_id,
                yield_to_human=how["yield_to_human"],
            )
            if d["written"]:
                rep.written += 1
                rep.by_provenance[how["provenance"]] = (
                    rep.by_provenance.get(how["provenance"], 0) + 1
                )
            elif d["reason"] == "no change":
                rep.already += 1
            else:
                rep.refused += 1
                rep.refusals.append({"index": idx, "name": row["name"], "why": d["reason"]})
        klines = parse_knowledge(text, source)
        if klines:
            rep.knowledge = _import_knowledge(
                conn,
                rows,
                klines,
                target,
                info["sha256"],
                version_id,
                source=source,
                as_human=as_human,
                lock=lock,
            )
    return rep


def _import_knowledge(
    conn: sqlite3.Connection,
    rows: list[dict[str, Any]],
    klines: list[dict[str, Any]],
    target: list[dict[str, Any]],
    target_sha: str,
    version_id: int,
    *,
    source: str,
    as_human: bool,
    lock: bool,
) -> dict[str, int]:
    """Place the knowledge lines with their functions (the rows' placement, unnamed functions
    included) and write them through the gate; line comments move with their instruction
    context when the body is not the same."""
    out = {"written": 0, "already": 0, "refused": 0, "unplaced": 0}
    wanted = {k["index"] for k in klines if k["index"] is not None}
    rows2 = [
        dict(r, name=r["name"] or (f"\x00{r['index']}" if r["index"] in wanted else None))
        for r in rows
    ]
    placement = place_rows(rows2, target, target_sha, version_id)
    to_target = {
        row["index"]: (idx, placement.method_of[idx]) for idx, row in placement.targets.items()
    }
    sid_of = {t["index"]: t["stable_id"] for t in target}
    code = None
    type_values: dict[str, Any] | None = None
    for k in klines:
        how = import_as(
            {"provenance": k["provenance"], "confidence": k["confidence"]},
            as_human=as_human,
            lock=lock,
        )
        key, value = k["key"], None
        if k["kind"] in ("data_name", "data_type", "type"):
            tsid = key
            key = ""
            value = {"name": k["value"]} if k["kind"] == "data_name" else {"text": k["value"]}
            if k["kind"] == "type":  # types (issue 27): parsed against the KB's other types
                if type_values is None:
                    type_values = types_svc.import_values(
                        conn, [(x["key"], x["value"]) for x in klines if x["kind"] == "type"]
                    )
                value = type_values.get(tsid)
                if value is None:
                    out["refused"] += 1
                    continue
        else:
            hit = to_target.get(k["index"])
            if hit is None:
                out["unplaced"] += 1
                continue
            idx, method = hit
            tsid = sid_of[idx]
            if k["kind"] == "local":
                value = {"name": k["value"]}
            elif k["kind"] in ("comment", "prototype", "local_type"):
                value = {"text": k["value"]}
            else:
                ordinal = int(k["anchor"][0]) if k["anchor"] and k["anchor"][0].isdigit() else 0
                value = {"text": k["value"], "anchor": k["anchor"][1:], "ordinal": ordinal}
                if method not in ("module+index", "exact-body"):
                    if code is None:
                        code = knowledge_svc._Code(conn, version_id)
                    try:
                        start, instrs, _t = code.body(idx)
                    except KBError:
                        out["unplaced"] += 1
                        continue
                    pos = knowledge_svc.locate_line(value, int(key or 0), start, instrs)
                    if pos is None:
                        out["unplaced"] += 1
                        continue
                    key = str(instrs[pos][0] - start)
                    value["ordinal"] = pos
        try:
            d = gate.upsert_knowledge(
                conn,
                k["kind"],
                tsid,
                key,
                value,
                provenance=how["provenance"],
                confidence=how["confidence"],
                actor=f"import:{source}",
                lock=how["lock"],
                version_id=version_id,
                yield_to_human=how["yield_to_human"],
                evidence={
                    "source": "import-names",
                    "file": source,
                    "from_index": k["index"],
                    "original_provenance": k["provenance"],
                },
            )
        except KBError:
            out["refused"] += 1
            continue
        if d["written"]:
            out["written"] += 1
        elif d["reason"] == "no change":
            out["already"] += 1
        else:
            out["refused"] += 1
    return out


# --------------------------------------------------------------------------- into the binary


def named_module(conn: sqlite3.Connection, version_id: int) -> tuple[bytes, int]:
    """The version's module bytes with the KB's function names in its ``name`` section, and
    the parameter/local names the KB knows (prototypes, local names) in its local subsection
    (over the module's own local names)."""
    names = {i: a["name"] for i, a in queries.annotations_by_index(conn, version_id).items()}
    data = queries.module_bytes(conn, version_id)
    if data is None:
        raise KBError(f"version {version_id} has no stored module bytes (re-ingest the file)")
    local_names = None
    known = knowledge_svc.code_knowledge(conn, version_id)
    if any(k["locals"] or k["prototype"] for k in known.values()):
        from kbtool.wasm.reader import parse_module

        local_names = knowledge_svc.merged_locals(parse_module(data).local_names, known)
    return with_function_names(data, names, local_names), len(names)


def write_named_module(conn: sqlite3.Connection, version_id: int, out: str | Path) -> int:
    """Write :func:`named_module` to ``out``; return the number of names written."""
    data, n = named_module(conn, version_id)
    Path(out).write_bytes(data)
    return n
