"""Go symbol recovery: real function names from the Go runtime's pclntab in linear memory.

A module built by Go's own toolchain (``GOOS=js`` or ``GOOS=wasip1``, ``GOARCH=wasm``) keeps
the runtime's function table (``runtime.pclntab``) in its data segments even when the ``name``
section is stripped (``-ldflags=-s``): the runtime needs it for stack traces and GC. Each
pclntab entry holds a function's entry PC and its full Go name. Go's wasm linker gives every
function the PC ``(PC_F << 16) | PC_B`` where ``PC_F = 0x1000 + i`` for the i-th defined
function (``cmd/link/internal/wasm/asm.go``: ``funcValueOffset``) and ``PC_B = 0`` at entry;
the module's function table holds, at index ``PC_F``, that function (the runtime's
``call_indirect`` dispatch). So ``wasm index = table[PC >> 16]`` (without a table:
``imports + (PC >> 16) - 0x1000``, the linker's own formula). Go's wasm-only runtime functions
(``wasm_export_run``, ``wasm_pc_f_loop``, ``go:buildid`` ...) are in the table like any other.
The pclntab writes generic instantiations with their type arguments elided
(``slices.Sort[...]``, cmd/link/internal/ld/pcln.go), exactly as Go's own stack traces do.

Supported pclntab layouts (magic, little-endian, quantum 1, pointer size 8):
``0xfffffffb`` Go 1.2-1.15, ``0xfffffffa`` Go 1.16-1.17, ``0xfffffff0`` Go 1.18-1.19,
``0xfffffff1`` Go 1.20 and later. Under 0xfffffff1, Go 1.25 changed what a wasm functab entry
holds from ``PC - textStart`` to ``(PC - textStart) >> 16`` (the function number); the two are
told apart exactly, as the linker guarantees PC_B = 0 at every entry: old-style entries are all
multiples of 0x10000, new-style ones are consecutive numbers. Another magic on a Go module
raises :class:`GoSymbolsError` (reported, never guessed). Every offset and count read from the data is bounds-checked against
the initialised memory image; nothing is allocated from a declared count.

Pure: stdlib + :mod:`kbtool.wasm` only.
"""

from __future__ import annotations

import functools
import re
import struct
from bisect import bisect_right
from collections.abc import Iterator

from kbtool.plainclass import NEW, Plain

from .reader import Module

__all__ = [
    "FUNC_VALUE_OFFSET",
    "GoSymbols",
    "GoSymbolsError",
    "KNOWN_MAGICS",
    "FORMATS",
    "MAX_NAME_BYTES",
    "recover_go_names",
]

FUNC_VALUE_OFFSET = 0x1000  # cmd/link/internal/wasm: PC_F of the first defined function
MAX_NAME_BYTES = 4096  # longer names are cut (the longest seen in real builds: 1.3 KB)
KNOWN_MAGICS = {
    0xFFFFFFFB: "go1.2-1.15",
    0xFFFFFFFA: "go1.16-1.17",
    0xFFFFFFF0: "go1.18-1.19",
    0xFFFFFFF1: "go1.20+",
}
# what ``GoSymbols.pclntab_format`` can say: the 0xfffffff1 family is split by how wasm entries
# are stored (PCs up to Go 1.24; function-index offsets, PC >> 16, from Go 1.25: ld/pcln.go
# textOff)
FORMATS = ("go1.2-1.15", "go1.16-1.17", "go1.18-1.19", "go1.20-1.24", "go1.25+")
_PTR = 8  # GOARCH=wasm is a 64-bit architecture
# header: magic, pad1=0, pad2=0, minLC (quantum), ptrSize; any 0xfffffffX magic is matched so
# that an unknown (newer) layout on a Go module is reported instead of missed
_HEADER_RE = re.compile(rb"[\xf0-\xff]\xff\xff\xff\x00\x00\x01\x08")


@functools.cache
def _version_re() -> re.Pattern[bytes]:
    """A "go1.N[.M][rcK|betaK][-suffix]" version, compiled at its first use (~0.3 ms; a module
    without Go producers or a Go data image never looks for one)."""
    return re.compile(rb"go1\.\d{1,3}(?:\.\d{1,3})?(?:(?:rc|beta)\d{1,3})?(?:-[\w.+-]{1,64})?")


_ZERO_BUDGET_MIN = 1 << 20  # zero-filled gap bytes allowed in the memory image, at least
_TAIL_ZEROS = 4096  # zero bytes readable past the end of each run (still zero memory)
_MAX_HEADER_CANDIDATES = 16  # pclntab-header-like byte strings examined
_MAX_VERSION_CANDIDATES = 32  # "go1.N" strings checked for a string header pointing at them


class GoSymbolsError(ValueError):
    """A Go module whose function table cannot be read (unknown layout, corrupt data).

    One line; ``str(e)`` says what was found and where.
    """


class GoSymbols(Plain):
    """Function names recovered from a Go module's pclntab.

    ``names`` maps wasm function index -> Go name (untrusted text: printable as decoded,
    capped at :data:`MAX_NAME_BYTES`; callers escape). ``entry_pcs`` gives each mapped
    function's entry PC. Counts: ``pclntab_funcs`` entries in the table, ``mapped`` of them
    resolved to a defined wasm function, ``unmapped`` did not (``notes`` says why);
    ``unnamed_functions`` defined wasm functions with no pclntab entry.
    """

    __slots__ = _FIELDS = (
        "go_version",
        "version_source",
        "pclntab_magic",
        "pclntab_format",
        "pclntab_address",
        "mapping",
        "names",
        "entry_pcs",
        "pclntab_funcs",
        "mapped",
        "unmapped",
        "unnamed_functions",
        "defined_functions",
        "notes",
    )

    def __init__(
        self,
        go_version: str | None,
        version_source: str | None,  # "producers", "runtime.buildVersion" or None
        pclntab_magic: int,
        pclntab_format: str,  # a FORMATS value
        pclntab_address: int,  # linear-memory address of the pclntab header
        mapping: str,  # "element-table" (the module's function table) or "linker-formula"
        names: dict[int, str] = NEW,
        entry_pcs: dict[int, int] = NEW,
        pclntab_funcs: int = 0,
        mapped: int = 0,
        unmapped: int = 0,
        unnamed_functions: int = 0,
        defined_functions: int = 0,
        notes: list[str] = NEW,
    ) -> None:
        self.go_version = go_version
        self.version_source = version_source
        self.pclntab_magic = pclntab_magic
        self.pclntab_format = pclntab_format
        self.pclntab_address = pclntab_address
        self.mapping = mapping
        self.names = {} if names is NEW else names
        self.entry_pcs = {} if entry_pcs is NEW else entry_pcs
        self.pclntab_funcs = pclntab_funcs
        self.mapped = mapped
        self.unmapped = unmapped
        self.unnamed_functions = unnamed_functions
        self.defined_functions = defined_functions
        self.notes = [] if notes is NEW else notes

    @property
    def coverage(self) -> float:
        """Share of the module's defined functions that got a Go name."""
        return len(self.names) / self.defined_functions if self.defined_functions else 0.0

    def evidence(self, func_index: int) -> dict[str, object]:
        """JSON-ready evidence for one recovered name (for an ``export`` annotation)."""
        return {
            "source": "go-pclntab",
            "go_version": self.go_version,
            "pclntab_format": self.pclntab_format,
            "pclntab_magic": f"0x{self.pclntab_magic:08x}",
            "pclntab_address": f"0x{self.pclntab_address:x}",
            "entry_pc": f"0x{self.entry_pcs[func_index]:x}",
            "mapping": self.mapping,
        }


# ----------------------------------------------------------------------------- memory image


class _Image:
    """Initialised linear memory: contiguous runs built from the active data segments.

    Nearby segments are merged into one run (gaps read as zero, as wasm memory is
    zero-initialised, and so do the first :data:`_TAIL_ZEROS` bytes after a run); the zero
    bytes added are capped by the segments' own size, so a module declaring far-apart segments
    cannot make us allocate gigabytes.
    """

    __slots__ = ("starts", "runs")

    def __init__(self, module: Module) -> None:
        segs = sorted(
            (
                (s.offset & 0xFFFFFFFF, k, s.data)
                for k, s in enumerate(module.data_segments)
                if not s.passive and s.memory_index == 0 and s.offset is not None and s.data
            ),
            key=lambda t: t[0],
        )
        budget = max(_ZERO_BUDGET_MIN, sum(len(t[2]) for t in segs))
        self.starts: list[int] = []
        self.runs: list[bytearray] = []
        pieces: list[bytes] = []
        members: list[tuple[int, int, bytes]] = []
        start = end = 0
        overlaps = False
        for off, k, data in segs:
            if pieces and off < end:  # rare: a segment overwrites bytes of another
                overlaps = True
                if off + len(data) > end:
                    pieces.append(bytes(off + len(data) - end))
                    end = off + len(data)
            elif pieces and off - end <= budget:
                budget -= off - end
                pieces.append(bytes(off - end))
                pieces.append(data)
                end = off + len(data)
            else:
                self._close(start, pieces, members if overlaps else [])
                pieces, members, start, overlaps = [data], [], off, False
                end = off + len(data)
            members.append((k, off, data))
        self._close(start, pieces, members if overlaps else [])
        # the linker omits trailing zeros too: a record's last fields may lie just past the data
        for i, run in enumerate(self.runs):
            room = _TAIL_ZEROS
            if i + 1 < len(self.runs):
                room = min(room, self.starts[i + 1] - self.starts[i] - len(run))
            run.extend(bytes(room))

    def _close(
        self, start: int, pieces: list[bytes], members: list[tuple[int, int, bytes]]
    ) -> None:
        if not pieces:
            return
        run = bytearray(b"".join(pieces))
        for _, off, data in sorted(members):  # overlaps: later segments win, as at instantiation
            run[off - start : off - start + len(data)] = data
        self.starts.append(start)
        self.runs.append(run)

    def locate(self, addr: int) -> tuple[bytearray, int] | None:
        """(run, offset in run) holding ``addr``, or None."""
        i = bisect_right(self.starts, addr) - 1
        if i < 0:
            return None
        rel = addr - self.starts[i]
        run = self.runs[i]
        return (run, rel) if 0 <= rel < len(run) else None

    def read(self, addr: int, n: int, what: str) -> memoryview:
        loc = self.locate(addr)
        if loc is None or n < 0 or loc[1] + n > len(loc[0]):
            raise GoSymbolsError(f"{what}: {n} bytes at 0x{addr:x} lie outside initialised data")
        run, rel = loc
        return memoryview(run)[rel : rel + n]

    def address_of(self, run_index: int, rel: int) -> int:
        return self.starts[run_index] + rel


# ----------------------------------------------------------------------------- detection


def _go_markers(module: Module) -> list[str]:
    """Signs that the Go (gc) toolchain linked this module."""
    marks = []
    for c in module.customs:
        if c.name in ("go.buildid", "go:buildid"):
            marks.append(f"custom section {c.name!r}")
    for value in module.producers.get("processed-by", []):
        if value.startswith("Go cmd/compile"):
            marks.append("producers: processed-by Go cmd/compile")
    n_imp, n_def = module.num_func_imports, len(module.func_type_indices)
    for el in module.elements:
        if (
            el.mode == "active"
            and el.table_index == 0
            and el.offset == FUNC_VALUE_OFFSET
            and n_def
            and len(el.func_indices) == n_def
            and el.func_indices[0] == n_imp
            and el.func_indices[-1] == n_imp + n_def - 1
        ):
            marks.append("function table at 0x1000 lists every defined function (Go linker)")
    return marks


def _producers_version(module: Module) -> str | None:
    for key in ("language", "processed-by"):
        for value in module.producers.get(key, []):
            m = _version_re().search(value.encode("utf-8", "replace"))
            if value.startswith("Go") and m:
                return m.group().decode("ascii")
    return None


def _build_version(image: _Image) -> str | None:
    """``runtime.buildVersion``: a "go1.N..." string that a Go string header points at."""
    found: set[str] = set()
    checked = 0
    for i, run in enumerate(image.runs):
        for m in _version_re().finditer(run):
            checked += 1
            if checked > _MAX_VERSION_CANDIDATES:
                return None
            addr = image.address_of(i, m.start())
            header = struct.pack("<QQ", addr, m.end() - m.start())
            if any(header in r for r in image.runs):
                found.add(m.group().decode("ascii"))
                if len(found) > 1:
                    return None  # ambiguous: report nothing rather than pick one
    return found.pop() if found else None


def _function_table(module: Module) -> dict[int, int]:
    """Table 0 as built by the active element segments with constant offsets."""
    table: dict[int, int] = {}
    for el in module.elements:
        if el.mode != "active" or el.table_index != 0 or el.offset is None:
            continue
        for k, fi in enumerate(el.func_indices):
            if fi is not None:
                table[el.offset + k] = fi
    return table


# ----------------------------------------------------------------------------- pclntab


class _Table(Plain):
    """A Go pclntab's header fields."""

    __slots__ = _FIELDS = ("magic", "address", "nfunc", "format", "entries", "notes")

    def __init__(
        self,
        magic: int,
        address: int,
        nfunc: int,
        format: str,  # a FORMATS value
        entries: list[tuple[int, str]],  # (entry PC, name) in table order
        notes: list[str],
    ) -> None:
        self.magic = magic
        self.address = address
        self.nfunc = nfunc
        self.format = format
        self.entries = entries
        self.notes = notes


def _u64(image: _Image, addr: int, what: str) -> int:
    return struct.unpack("<Q", image.read(addr, 8, what))[0]


def _cstring(image: _Image, addr: int, what: str) -> tuple[str, bool]:
    """NUL-terminated name at ``addr`` (capped); (text, was_cut)."""
    loc = image.locate(addr)
    if loc is None:
        raise GoSymbolsError(f"{what} at 0x{addr:x} lies outside initialised data")
    run, rel = loc
    end = run.find(0, rel, rel + MAX_NAME_BYTES + 1)
    cut = end < 0
    if cut:
        end = min(len(run), rel + MAX_NAME_BYTES)
    return bytes(run[rel:end]).decode("utf-8", "replace"), cut


def _parse_pclntab(image: _Image, hdr: int, magic: int, seen: set[int]) -> _Table:
    """Entries of the pclntab whose header is at linear address ``hdr``.

    Stops at the first sign of corruption; ``seen`` (functab addresses already parsed) keeps
    many headers that share one functab from costing one full parse each.
    """
    notes: list[str] = []
    word = [
        _u64(image, hdr + 8 + 8 * k, "pclntab header")
        for k in range(8 if magic in (0xFFFFFFF0, 0xFFFFFFF1) else 7 if magic == 0xFFFFFFFA else 1)
    ]
    nfunc = word[0]
    if magic in (0xFFFFFFF0, 0xFFFFFFF1):  # Go 1.18+: pcHeader with textStart
        text_start, nameoff_base, pcln = word[2], hdr + word[3], hdr + word[7]
        field = 4
    elif magic == 0xFFFFFFFA:  # Go 1.16-1.17: pcHeader without textStart
        text_start, nameoff_base, pcln = 0, hdr + word[2], hdr + word[6]
        field = _PTR
    else:  # Go 1.2-1.15: functab follows nfunc; offsets are from the table start
        text_start, nameoff_base, pcln = 0, hdr, hdr
        field = _PTR
    ftab = pcln if magic != 0xFFFFFFFB else hdr + 8 + _PTR
    # bounds before any per-entry work: the whole functab must be initialised data
    if ftab in seen:
        raise GoSymbolsError(f"pclntab at 0x{hdr:x}: functab at 0x{ftab:x} already examined")
    seen.add(ftab)
    loc = image.locate(ftab)
    if nfunc <= 0 or loc is None or (nfunc * 2 + 1) * field > len(loc[0]) - loc[1]:
        raise GoSymbolsError(
            f"pclntab at 0x{hdr:x}: functab of {nfunc} entries at 0x{ftab:x} "
            "is empty or does not fit in initialised data"
        )
    raw = image.read(ftab, (nfunc * 2 + 1) * field, "pclntab functab")
    fmt = "<I" if field == 4 else "<Q"
    vals = [v[0] for v in struct.iter_unpack(fmt, raw)]
    entries: list[tuple[int, str]] = []
    prev = -1
    mismatched = cut_names = 0
    tolerated = nfunc // 100
    for i in range(nfunc):
        entry, funcoff = vals[2 * i], vals[2 * i + 1]
        if entry < prev:
            raise GoSymbolsError(
                f"pclntab at 0x{hdr:x}: functab entry {i} of {nfunc} is out of order "
                "(corrupt or not a pclntab)"
            )
        prev = entry
        if mismatched > tolerated:
            raise GoSymbolsError(
                f"pclntab at 0x{hdr:x}: {mismatched} functab entries disagree with their _func "
                f"record (corrupt or not a pclntab)"
            )
        fdata = pcln + funcoff
        f_entry = (
            struct.unpack("<I", image.read(fdata, 4, "_func entry"))[0]
            if field == 4
            else _u64(image, fdata, "_func entry")
        )
        if f_entry != entry:
            mismatched += 1
            continue
        nameoff = struct.unpack("<i", image.read(fdata + field, 4, "_func nameoff"))[0]
        if nameoff < 0:
            mismatched += 1
            continue
        name, cut = _cstring(image, nameoff_base + nameoff, "function name")
        cut_names += cut
        entries.append((entry, name))
    if mismatched > tolerated:
        raise GoSymbolsError(
            f"pclntab at 0x{hdr:x}: {mismatched} functab entries disagree with their _func "
            f"record (corrupt or not a pclntab)"
        )
    if mismatched:
        notes.append(f"{mismatched} functab entries disagree with their _func record; skipped")
    if cut_names:
        notes.append(f"{cut_names} names longer than {MAX_NAME_BYTES} bytes were cut")
    fmt_name = KNOWN_MAGICS[magic]
    if field == 4:  # Go 1.18+: entries are offsets from textStart
        by_index = magic == 0xFFFFFFF1 and any((text_start + e) & 0xFFFF for e, _ in entries)
        if by_index:  # Go 1.25+ stores (PC - textStart) >> 16 on wasm; PC_B is always 0
            entries = [((text_start + e) << 16, n) for e, n in entries]
        else:
            entries = [(text_start + e, n) for e, n in entries]
        if magic == 0xFFFFFFF1:
            fmt_name = "go1.25+" if by_index else "go1.20-1.24"
    return _Table(magic, hdr, nfunc, fmt_name, entries, notes)


def _candidates(image: _Image) -> Iterator[_Table | str]:
    """Each pclntab header in the image: a parsed table, or a one-line rejection."""
    seen = 0
    ftabs: set[int] = set()
    for i, run in enumerate(image.runs):
        for m in _HEADER_RE.finditer(run):
            seen += 1
            if seen > _MAX_HEADER_CANDIDATES:
                yield f"more than {_MAX_HEADER_CANDIDATES} header-like byte strings; gave up"
                return
            addr = image.address_of(i, m.start())
            magic = struct.unpack_from("<I", run, m.start())[0]
            if magic not in KNOWN_MAGICS:
                yield f"unknown pclntab magic 0x{magic:08x} at 0x{addr:x} (layout not supported)"
                continue
            try:
                yield _parse_pclntab(image, addr, magic, ftabs)
            except GoSymbolsError as exc:
                yield str(exc)


def _map_entries(module: Module, table: _Table) -> GoSymbols:
    """Resolve each entry PC to a wasm function index (see the module docstring)."""
    n_imp = module.num_func_imports
    n_all = module.num_functions
    elements = _function_table(module)
    mapping = "element-table" if elements else "linker-formula"
    syms = GoSymbols(
        go_version=None,
        version_source=None,
        pclntab_magic=table.magic,
        pclntab_format=table.format,
        pclntab_address=table.address,
        mapping=mapping,
        pclntab_funcs=table.nfunc,
        defined_functions=n_all - n_imp,
        notes=list(table.notes),
    )
    off_entry = not_defined = dup = 0
    for pc, name in table.entries:
        if pc & 0xFFFF:
            off_entry += 1
            continue
        pc_f = pc >> 16
        idx = elements.get(pc_f) if elements else n_imp + pc_f - FUNC_VALUE_OFFSET
        if idx is None or not n_imp <= idx < n_all:
            not_defined += 1
            continue
        if idx in syms.names:
            dup += 1
            continue
        syms.names[idx] = name
        syms.entry_pcs[idx] = pc
    syms.mapped = len(syms.names)
    syms.unmapped = syms.pclntab_funcs - syms.mapped
    syms.unnamed_functions = syms.defined_functions - syms.mapped
    if off_entry:
        syms.notes.append(f"{off_entry} entry PCs are not wasm function entries (PC_B != 0)")
    if not_defined:
        syms.notes.append(f"{not_defined} entry PCs name no defined function via the {mapping}")
    if dup:
        syms.notes.append(f"{dup} entries map to an already named function; first kept")
    return syms


# ----------------------------------------------------------------------------- entry point


def recover_go_names(module: Module) -> GoSymbols | None:
    """Go names of the defined functions of a Go-built module, from its pclntab.

    Returns None when the module is not a Go (gc toolchain) module. Raises
    :class:`GoSymbolsError` when it is one but its function table has an unknown layout or
    is corrupt. A pclntab counts only when at least half of its entries resolve to defined
    wasm functions (a table of another architecture embedded as data does not).
    """
    markers = _go_markers(module)
    image = _Image(module)
    rejected: list[str] = []
    for cand in _candidates(image):
        if isinstance(cand, str):
            rejected.append(cand)
            continue
        syms = _map_entries(module, cand)
        if syms.mapped and 2 * syms.mapped >= syms.pclntab_funcs:
            break
        rejected.append(
            f"pclntab at 0x{cand.address:x} ({syms.pclntab_format}) maps {syms.mapped} of "
            f"{syms.pclntab_funcs} entries to wasm functions (not a GOARCH=wasm table)"
        )
    else:
        if not markers:
            return None
        why = "; ".join(rejected[:3]) if rejected else "no pclntab header in the data segments"
        raise GoSymbolsError(f"Go module ({markers[0]}) but no usable pclntab: {why}")
    version = _producers_version(module)
    if version:
        syms.go_version, syms.version_source = version, "producers"
    else:
        version = _build_version(image)
        if version:
            syms.go_version, syms.version_source = version, "runtime.buildVersion"
    minor = _minor(syms.go_version)
    if minor is not None and syms.pclntab_format in ("go1.20-1.24", "go1.25+"):
        if (minor >= 25) != (syms.pclntab_format == "go1.25+"):
            syms.notes.append(
                f"entry encoding {syms.pclntab_format} is unexpected for {syms.go_version}"
            )
    return syms


def _minor(version: str | None) -> int | None:
    m = re.match(r"go1\.(\d+)", version or "")
    return int(m.group(1)) if m else None
