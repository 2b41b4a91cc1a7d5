"""Types and bounds of the data model (:mod:`kbtool.analysis.datamodel`): globals, data
items, references, the model."""

from __future__ import annotations

import os
from bisect import bisect_right
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kbtool.plainclass import NEW, Plain
from kbtool.twinstate import package_state

MIN_STRING = 4  # printable bytes for a C string item (shorter runs stay numeric data)
MIN_ZERO = 16  # a run of zero bytes at least this long is a zero block
MAX_LABEL = 32  # characters of a string label taken from its text
MAX_ITEMS = 500_000  # items kept per module (a crafted module cannot grow the model unbounded)
MAX_REFS = 4_000_000  # references kept per module
MAX_IMAGE = 256 << 20  # bytes of initial memory scanned as one image (Go string headers)
MAX_BSS = 64 << 20  # .bss assumed at most this long after the data (stack start bound)
MAX_BSS_ITEM = 1 << 20  # a .bss item's size is capped (its end is only the next reference)
MAX_TEXT = 256  # characters of an item's text kept in the model
GO_PAIR_WINDOW = 12  # instructions between the stores of a Go string's pointer and length
MAX_GO_STRING = 1 << 16  # longest Go string literal taken from a (pointer, length) pair

# names toolchains give their globals when they export or import them
KNOWN_GLOBAL_NAMES = frozenset(
    {
        "__stack_pointer",
        "__heap_base",
        "__heap_end",
        "__data_end",
        "__tls_base",
        "__tls_size",
        "__tls_align",
        "__memory_base",
        "__table_base",
        "__dso_handle",
        "__global_base",
        "__stack_low",
        "__stack_high",
        "__stack_base",
        "__stack_end",
        "__indirect_function_table",
    }
)
# Emscripten's stack helpers read one global each
GETTER_GLOBALS = {
    "emscripten_stack_get_base": "__stack_base",
    "emscripten_stack_get_end": "__stack_end",
    "emscripten_stack_get_current": "__stack_pointer",
    "__get_tls_base": "__tls_base",
    "_emscripten_stack_restore": "__stack_pointer",
}
# Go's wasm backend (cmd/link/internal/wasm): the globals it defines, in order
GO_GLOBALS = ("SP", "CTXT", "g", "RET0", "RET1", "RET2", "RET3", "PAUSE")


class GlobalInfo(Plain):
    """One global of the data model."""

    __slots__ = _FIELDS = (
        "index",
        "type",
        "mutable",
        "initial",
        "imported",
        "import_name",
        "exports",
        "role",
        "name",
        "confidence",
        "reads",
        "writes",
    )

    def __init__(
        self,
        index: int,
        type: str,
        mutable: bool,
        initial: int | float | None,
        imported: bool,
        import_name: str | None,
        exports: list[str],
        role: str | None,
        name: str | None,  # what the toolchain calls it, when the role or the binary says
        confidence: float,  # of ``name``
        reads: int = 0,  # functions reading it
        writes: int = 0,  # functions writing it
    ) -> None:
        self.index = index
        self.type = type
        self.mutable = mutable
        self.initial = initial
        self.imported = imported
        self.import_name = import_name
        self.exports = exports
        self.role = role
        self.name = name
        self.confidence = confidence
        self.reads = reads
        self.writes = writes


class DataRef(Plain):
    """One instruction's reference to data, a global or a table."""

    __slots__ = _FIELDS = ("func_index", "offset", "kind", "target_kind", "target", "width")

    def __init__(
        self,
        func_index: int,
        offset: int,  # file offset of the instruction
        kind: str,  # load, store, addr, read, write, call_indirect
        target_kind: str,  # data, global, table
        target: int,  # address, global index or table index
        width: int = 0,  # bytes loaded or stored
    ) -> None:
        self.func_index = func_index
        self.offset = offset
        self.kind = kind
        self.target_kind = target_kind
        self.target = target
        self.width = width


#: a reference as the model holds it: ``(func_index, offset, kind, target_kind, target,
#: width)``, a :class:`DataRef`'s fields in order (the ``data_refs`` row the KB writes)
RefTuple = tuple[int, int, str, str, int, int]


class DataModel(Plain):
    """A module's data model: globals, data items and the references to them."""

    _FIELDS = ("globals", "items", "ref_rows", "data_start", "data_end", "truncated")
    __slots__ = (*_FIELDS, "_starts")

    def __init__(
        self,
        globals: list[GlobalInfo],
        items: list[DataItem],
        ref_rows: list[RefTuple],  # plain tuples: no object per reference (ffmpeg: 382k)
        data_start: int,
        data_end: int,
        truncated: bool = False,
        _starts: list[int] = NEW,
    ) -> None:
        self.globals = globals
        self.items = items
        self.ref_rows = ref_rows
        self.data_start = data_start
        self.data_end = data_end
        self.truncated = truncated
        self._starts = [] if _starts is NEW else _starts

    @property
    def refs(self) -> list[DataRef]:
        """The references as :class:`DataRef` objects (made on each call: the build and
        the KB writer read :attr:`ref_rows`)."""
        return [DataRef(*t) for t in self.ref_rows]

    def item_at(self, address: int) -> DataItem | None:
        """The item holding ``address`` (None outside every segment)."""
        if not self._starts:
            self._starts = _item_starts(self.items)
        k = bisect_right(self._starts, address) - 1
        if k < 0:
            return None
        it = self.items[k]
        return it if it.address <= address < it.address + max(it.size, 1) else None

    def to_dict(self) -> dict:
        from dataclasses import asdict  # (the items are dataclasses; not on an ingest's path)

        return {
            "globals": [_fields_dict(g) for g in self.globals],
            "items": [asdict(i) for i in self.items],
            "refs": [_fields_dict(r) for r in self.refs],
            "data_start": self.data_start,
            "data_end": self.data_end,
            "truncated": self.truncated,
        }


def _item_starts(items: list[DataItem]) -> list[int]:
    """``[it.address for it in items]``, by the walk's compiled pass when it runs compiled
    (imported on first use: the walk's package imports this module while it loads)."""
    from . import datawalk_active

    try:
        return datawalk_active.ITEMS.item_starts(items)
    except TypeError:  # (items of another class than the walk's: read one by one)
        return [it.address for it in items]


def _item_class() -> type:
    """The data walk's :class:`~.datawalk.itemtype.DataItem`: its compiled twin's (a native
    class) when the walk runs compiled (:mod:`.datawalk_active`'s test: ``KBTOOL_DATASCAN``
    not ``pure`` and the twin built from today's ``datawalk/``), else the pure module's.
    Imported last: the walk's package imports this module's bounds while it loads."""
    here = Path(__file__).resolve().parent
    if os.environ.get("KBTOOL_DATASCAN", "").strip().lower() != "pure" and (
        package_state(here, "_cdatawalk", here / "_cdatawalk.sha256", here / "datawalk") == "ready"
    ):
        try:
            from ._cdatawalk.itemtype import DataItem as compiled
        except ImportError:
            pass
        else:
            return compiled
    from .datawalk.itemtype import DataItem as pure

    return pure


if TYPE_CHECKING:
    from .datawalk.itemtype import DataItem
else:
    DataItem = _item_class()


def _fields_dict(obj: Plain) -> dict[str, Any]:
    """``dataclasses.asdict`` of a plain class here: its fields with lists copied (a
    global's exports; the rest are numbers and strings)."""
    return {
        f: (list(v) if type(v) is list else v)
        for f, v in zip(obj._FIELDS, obj._values(), strict=True)
    }
