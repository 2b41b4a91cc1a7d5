"""Function fingerprints and the committed reference database.

Two hashes per function, both computed from :class:`kbtool.wasm.FuncFacts`:

- ``shape``: ``FuncFacts.shape_hash`` (body bytes with call targets, type indices and
  static data addresses normalised; everything else verbatim);
- ``full``: the signature plus the op sequence with every immediate dropped (the
  mnemonic stream, as Ghidra's FunctionID "full hash" ignores constants);
- ``loose``: the shape with every ``i32.const`` inside the module's static region replaced
  by what it points at, pointers abstracted: the text it refers to (a C string, or the
  string of an in-data ``(ptr, len)`` pair: Rust's ``fmt::Arguments`` pieces and panic
  ``Location``s), else its first 8 bytes with any word that is itself a static address
  replaced by a placeholder (the shape hash keeps the raw bytes *at* the address, which
  differ between builds when the data holds pointers). Computed only for functions whose
  full hash is known (cheap).

The reference database (``data/fingerprints.json``) is derived from modules built by
``refs/build.sh`` (named builds: the name section is the truth) with
``refs/make_fingerprints.py``; it is never derived from the measurement corpus.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from hashlib import blake2b
from typing import Any

from kbtool.plainclass import FrozenPlain
from kbtool.wasm import FuncFacts, Module
from kbtool.wasm.active import IMPL as _decoder_impl
from kbtool.wasm.active import PATH as _decoder_path
from kbtool.wasm.facts import DataMap, build_data_map, static_region
from kbtool.wasm.instr import skip_local_decls
from kbtool.wasm.opcodes import KIND, MNEMONICS

from .body import decode_body

DATA_FILE = "fingerprints.json"

# the compiled decoder's token reader, imported on first need (its one-byte token table is
# built at import: ~13.5 M instructions, paid only by a module whose recognizers ask for a
# loose digest); False on the pure path (the pure walk is the reference)
_TOKENS: Any = None


def _token_reader() -> Any:
    global _TOKENS
    if _TOKENS is None:
        _TOKENS = (
            importlib.import_module(f"{_decoder_impl.__name__}.tokens")
            if _decoder_path == "compiled"
            else False
        )
    return _TOKENS


def full_hash(f: FuncFacts) -> str:
    """Hash of the type signature and the op sequence without immediates."""
    h = blake2b(digest_size=12)
    h.update(f.type_sig.encode())
    h.update(b"\0")
    h.update(f.ops)
    return h.hexdigest()


_K_I32, _K_CALL, _K_CALL_INDIRECT, _K_TYPE, _K_TABLE, _K_REF_FUNC = 3, 5, 11, 16, 14, 12


def static_bounds(m: Module) -> tuple[int, int]:
    """``[lo, hi)`` of the static data addresses (see :func:`kbtool.wasm.facts.static_region`)."""
    segs = [(d.offset, d.data) for d in m.data_segments if d.offset is not None and not d.passive]
    return static_region(m, DataMap(segs))


class LooseContext:
    """Per-module state of :func:`loose_hash`: the static region and the data map."""

    def __init__(self, data: bytes, m: Module) -> None:
        self.bounds = static_bounds(m)
        self.dmap = build_data_map(data, m)
        self.tokens: dict[int, str] = {}
        # each body's (loose, texts) digests: the recognizers ask again for the same body
        # (fingerprint, anchored and callee passes), each decode a pure-Python walk
        self.digests: dict[tuple[int, int], tuple[str, str]] = {}

    def address_token(self, v: int) -> str:
        t = self.tokens.get(v)
        if t is None:
            t = self.tokens[v] = self._token(v)
        return t

    def _token(self, v: int) -> str:
        e = self.dmap.entry(v)
        if e is None:
            return "@"
        text = e[1] or e[2]
        if text:
            return "s:" + text[:64]
        seg, rel = e[3], e[4]
        lo, hi = self.bounds
        words = []
        for k in range(rel, min(rel + 8, len(seg) - 3), 4):
            w = int.from_bytes(seg[k : k + 4], "little")
            words.append("@" if lo <= w < hi else str(w))
        return "d:" + ",".join(words)


def loose_hash(data: bytes, f: FuncFacts, ctx: LooseContext) -> str:
    """Hash of the signature and the body with call targets and type/table indices replaced
    by placeholders and static data addresses by what they point at; other immediates kept."""
    return loose_digests(data, f, ctx)[0]


def loose_digests(data: bytes, f: FuncFacts, ctx: LooseContext) -> tuple[str, str]:
    """``(loose hash, texts hash)``: the texts hash covers only the strings the body refers
    to, in order (a full-hash match must agree on them); computed once per body and ``ctx``."""
    key = (f.index, f.body_offset)
    got = ctx.digests.get(key)
    if got is None:
        got = ctx.digests[key] = _loose_digests(data, f, ctx)
    return got


def _body_tokens(data: bytes, f: FuncFacts) -> list[tuple[int, tuple]]:
    """:func:`.body.decode_body`'s ``[(op, imms)]`` of ``f``: read by the compiled decoder's
    token reader when it is in use (the same tokens as ``decode_one``; a small module's
    fingerprint passes spent 7-12 ms in the pure walk), else by the pure walk (the reference)."""
    tokens = _TOKENS if _TOKENS is not None else _token_reader()
    if tokens is False or type(data) is not bytes:
        return decode_body(data, f)
    end = f.body_offset + f.body_size
    out: list[tuple[int, tuple]] = []
    tokens.decode_tokens(
        data, skip_local_decls(data, f.body_offset, end), end, out, f.instr_count + 1
    )
    return out


def _loose_digests(data: bytes, f: FuncFacts, ctx: LooseContext) -> tuple[str, str]:
    lo, hi = ctx.bounds
    h = blake2b(digest_size=12)
    ht = blake2b(digest_size=8)
    h.update(f.type_sig.encode())
    texts: list[str] = []
    toks = _body_tokens(data, f)
    reader = _TOKENS  # (set by _body_tokens: the compiled token module, or False)
    if reader is False:
        parts = loose_parts(toks, lo, hi, ctx.address_token, texts)
    else:
        parts = reader.loose_parts(toks, lo, hi, ctx.address_token, texts)
    for tok in texts:
        ht.update(tok.encode() + b"\0")
    h.update("\n".join(parts).encode())
    return h.hexdigest(), ht.hexdigest()


def loose_parts(
    toks: list, lo: int, hi: int, token_of: Callable[[int], str], texts: list[str]
) -> list[str]:
    """The reference of the decoder twin's ``tokens.loose_parts`` (the pure path's): the
    loose text's lines of ``toks``, the ``s:`` address tokens appended to ``texts``."""
    parts = []
    for op, imms in toks:
        k = KIND[op]
        if k in (_K_CALL, _K_CALL_INDIRECT, _K_TYPE, _K_TABLE, _K_REF_FUNC):
            parts.append(MNEMONICS[op])
        elif k == _K_I32 and imms and lo <= imms[0] < hi:
            tok = token_of(imms[0])
            parts.append("i32.const " + tok)
            if tok.startswith("s:"):
                texts.append(tok)
        else:
            parts.append(f"{MNEMONICS[op]} {imms!r}")
    return parts


class RefEntry(FrozenPlain):
    """One reference function: a name seen with these hashes in these builds (a plain
    frozen class: once ``@dataclass(frozen=True, slots=True)``)."""

    __slots__ = _FIELDS = (
        "id",
        "name",
        "family",
        "shape",
        "full",
        "instr_count",
        "type_sig",
        "callees",
        "refs",
        "loose",
        "texts",
    )

    def __init__(
        self,
        id: str,  # fingerprint id, stable: "<hash kind>:<hash>:<name>"
        name: str,
        family: str,
        shape: str,
        full: str,
        instr_count: int,
        type_sig: str,
        callees: tuple[str, ...],  # names of the direct callees in the reference build
        refs: tuple[str, ...],  # reference build ids
        loose: str = "",  # loose hash (see loose_hash); "" when not recorded
        texts: str = "",  # hash of the strings the body refers to (see loose_digests)
    ) -> None:
        put = object.__setattr__
        put(self, "id", id)
        put(self, "name", name)
        put(self, "family", family)
        put(self, "shape", shape)
        put(self, "full", full)
        put(self, "instr_count", instr_count)
        put(self, "type_sig", type_sig)
        put(self, "callees", callees)
        put(self, "refs", refs)
        put(self, "loose", loose)
        put(self, "texts", texts)


class FingerprintDB:
    """Lookup of reference entries by shape hash and by full hash."""

    def __init__(self, entries: list[RefEntry], builds: dict[str, str]) -> None:
        self.entries = entries
        self.builds = builds  # build id -> description (toolchain, flags)
        self.by_shape: dict[str, list[RefEntry]] = {}
        self.by_full: dict[str, list[RefEntry]] = {}
        self.by_loose: dict[str, list[RefEntry]] = {}
        # (type signature, instruction count) of every entry: a body can share an entry's
        # full hash (signature + op sequence, one op per instruction) only if it has both,
        # so most bodies are ruled out without hashing (ffmpeg: 21k hashes, ~40 ms)
        self.full_keys: set[tuple[str, int]] = set()
        for e in entries:
            self.full_keys.add((e.type_sig, e.instr_count))
            self.by_shape.setdefault(e.shape, []).append(e)
            self.by_full.setdefault(e.full, []).append(e)
            if e.loose:
                self.by_loose.setdefault(e.loose, []).append(e)

    @classmethod
    def from_json(cls, obj: dict) -> FingerprintDB:
        if obj.get("format") != 1:
            raise ValueError("fingerprint data: unknown format")
        ents = [_entry(e) for e in obj["entries"]]
        return cls(ents, dict(obj.get("builds", {})))

    @classmethod
    def from_json_lazy(cls, obj: dict) -> FingerprintDB:
        """As :meth:`from_json`, but an entry is made when a lookup first returns it (a
        module looks up a few dozen of the ~1,300: making them all is ~3 ms of a small
        module's ingest); ``entries`` makes them all when asked for."""
        if obj.get("format") != 1:
            raise ValueError("fingerprint data: unknown format")
        return _LazyFingerprintDB(obj["entries"], dict(obj.get("builds", {})))


def _entry(e: dict) -> RefEntry:
    """A :class:`RefEntry` from its JSON object."""
    return RefEntry(
        e["id"],
        e["name"],
        e["family"],
        e["shape"],
        e["full"],
        int(e["instr_count"]),
        e["type_sig"],
        tuple(e["callees"]),
        tuple(e["refs"]),
        e.get("loose", ""),
        e.get("texts", ""),
    )


class _RowIndex(dict):
    """``hash -> [RefEntry]`` whose lists start as row numbers and become entries (in the
    same order) on first lookup; membership needs no entry at all."""

    def __init__(self, entry: Callable[[int], RefEntry]) -> None:
        super().__init__()
        self._entry = entry

    def __getitem__(self, key: str) -> list[RefEntry]:
        v = dict.__getitem__(self, key)
        if v and type(v[0]) is int:
            v[:] = [self._entry(i) for i in v]
        return v

    def get(self, key: str, default: Any = None) -> Any:
        return self[key] if dict.__contains__(self, key) else default

    def values(self) -> Any:
        return [self[k] for k in self]

    def items(self) -> Any:
        return [(k, self[k]) for k in self]


class _LazyFingerprintDB(FingerprintDB):
    """:class:`FingerprintDB` over the JSON entries, each made once when first returned."""

    def __init__(self, raw: list[dict], builds: dict[str, str]) -> None:
        self._raw = raw
        self._made: list[RefEntry | None] = [None] * len(raw)
        self.builds = builds
        self.by_shape = _RowIndex(self._entry_at)
        self.by_full = _RowIndex(self._entry_at)
        self.by_loose = _RowIndex(self._entry_at)
        self.full_keys = set()
        by_shape, by_full, by_loose = self.by_shape, self.by_full, self.by_loose
        for i, e in enumerate(raw):
            self.full_keys.add((e["type_sig"], int(e["instr_count"])))
            dict.setdefault(by_shape, e["shape"], []).append(i)
            dict.setdefault(by_full, e["full"], []).append(i)
            loose = e.get("loose", "")
            if loose:
                dict.setdefault(by_loose, loose, []).append(i)

    def _entry_at(self, i: int) -> RefEntry:
        got = self._made[i]
        if got is None:
            got = self._made[i] = _entry(self._raw[i])
        return got

    @property  # type: ignore[override]
    def entries(self) -> list[RefEntry]:
        return [self._entry_at(i) for i in range(len(self._raw))]

    def to_json(self) -> dict:
        return {
            "format": 1,
            "builds": dict(sorted(self.builds.items())),
            "entries": [
                {
                    "id": e.id,
                    "name": e.name,
                    "family": e.family,
                    "shape": e.shape,
                    "full": e.full,
                    "instr_count": e.instr_count,
                    "type_sig": e.type_sig,
                    "callees": list(e.callees),
                    "refs": list(e.refs),
                    "loose": e.loose,
                    "texts": e.texts,
                }
                for e in sorted(self.entries, key=lambda e: e.id)
            ],
        }


_DEFAULT: FingerprintDB | None = None


def default_db() -> FingerprintDB:
    """The committed reference fingerprints (loaded once)."""
    global _DEFAULT
    if _DEFAULT is None:
        import orjson  # (the same values as json.loads, in half the time: 0.7 MB at start-up)

        _DEFAULT = FingerprintDB.from_json_lazy(orjson.loads(_data_bytes()))
    return _DEFAULT


def _data_bytes() -> bytes:
    """The committed JSON: read next to this file when it is a plain file (an ``open``: the
    ``pkgutil`` route costs ~5.9 M instructions more per process), else through the package's
    loader (a zip or another loader; not importlib.resources: it imports tempfile, shutil...)."""
    import os

    try:
        with open(os.path.join(os.path.dirname(__file__), "data", DATA_FILE), "rb") as fh:
            return fh.read()
    except OSError:
        pass
    import pkgutil

    raw = pkgutil.get_data(__package__ or "kbtool.analysis", f"data/{DATA_FILE}")
    if raw is None:  # (a loader that cannot read package data)
        raise FileNotFoundError(f"kbtool.analysis data/{DATA_FILE}")
    return raw
