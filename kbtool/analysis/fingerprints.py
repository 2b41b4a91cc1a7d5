"""Function fingerprints and the committed reference database.

Two hashes per function, both computed from :class:`kbtool.wasm.FuncFacts`:

- ``shape``: ``FuncFacts.shape_hash`` (body bytes with call targets, type indices and
  static data addresses normalised; everything else verbatim);
- ``full``: the signature plus the op sequence with every immediate dropped (the
  mnemonic stream, as Ghidra's FunctionID "full hash" ignores constants).

The reference database (``data/fingerprints.json``) is derived from modules built by
``refs/build.sh`` (named builds: the name section is the truth) with
``refs/make_fingerprints.py``; it is never derived from the measurement corpus.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from hashlib import blake2b
from importlib import resources

from kbtool.wasm import FuncFacts

DATA_FILE = "fingerprints.json"


def full_hash(f: FuncFacts) -> str:
    """Hash of the type signature and the op sequence without immediates."""
    h = blake2b(digest_size=12)
    h.update(f.type_sig.encode())
    h.update(b"\0")
    h.update(f.ops)
    return h.hexdigest()


@dataclass(frozen=True, slots=True)
class RefEntry:
    """One reference function: a name seen with these hashes in these builds."""

    id: str  # fingerprint id, stable: "<hash kind>:<hash>:<name>"
    name: str
    family: str
    shape: str
    full: str
    instr_count: int
    type_sig: str
    callees: tuple[str, ...]  # names of the direct callees in the reference build
    refs: tuple[str, ...]  # reference build ids


class FingerprintDB:
    """Lookup of reference entries by shape hash and by full hash."""

    def __init__(self, entries: list[RefEntry], builds: dict[str, str]) -> None:
        self.entries = entries
        self.builds = builds  # build id -> description (toolchain, flags)
        self.by_shape: dict[str, list[RefEntry]] = {}
        self.by_full: dict[str, list[RefEntry]] = {}
        for e in entries:
            self.by_shape.setdefault(e.shape, []).append(e)
            self.by_full.setdefault(e.full, []).append(e)

    @classmethod
    def from_json(cls, obj: dict) -> FingerprintDB:
        if obj.get("format") != 1:
            raise ValueError("fingerprint data: unknown format")
        ents = [
            RefEntry(e["id"], e["name"], e["family"], e["shape"], e["full"],
                     int(e["instr_count"]), e["type_sig"], tuple(e["callees"]),
                     tuple(e["refs"]))
            for e in obj["entries"]
        ]
        return cls(ents, dict(obj.get("builds", {})))

    def to_json(self) -> dict:
        return {
            "format": 1,
            "builds": dict(sorted(self.builds.items())),
            "entries": [
                {"id": e.id, "name": e.name, "family": e.family, "shape": e.shape,
                 "full": e.full, "instr_count": e.instr_count, "type_sig": e.type_sig,
                 "callees": list(e.callees), "refs": list(e.refs)}
                for e in sorted(self.entries, key=lambda e: e.id)
            ],
        }


_DEFAULT: FingerprintDB | None = None


def default_db() -> FingerprintDB:
    """The committed reference fingerprints (loaded once)."""
    global _DEFAULT
    if _DEFAULT is None:
        text = resources.files("kbtool.analysis").joinpath("data", DATA_FILE).read_text("utf-8")
        _DEFAULT = FingerprintDB.from_json(json.loads(text))
    return _DEFAULT
