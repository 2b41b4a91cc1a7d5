"""A data item of the data model (:class:`DataItem`, re-exported by
:mod:`kbtool.analysis.datatypes`), defined in the data walk's package so that its compiled
twin (``kbtool.analysis._cdatawalk.itemtype``, mypyc) holds it as a native class: the walk
makes ffmpeg's 72k items and reads their fields with no generic call (a constructor call
cost ~2,100 instructions, a field read from compiled code ~160).

:mod:`kbtool.analysis.datatypes` exports the class of the side the walk runs on (the
compiled one when :mod:`..datawalk_active` picks the twin, else this module run pure), so
the walk's items and the model's own (``datalabels``) are one class. Both sides are the
same dataclass: the same fields, defaults, ``==``, ``repr``, ``asdict``, pickling; the
compiled one also checks its fields' types when set.

Standard library only: :mod:`kbtool.analysis.datatypes` imports it while it loads."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(init=False, slots=True)
class DataItem:
    address: int
    size: int
    kind: str  # cstring, utf16, gostring, pointer_table, funcptr_table, numeric, zero, bss
    segment: int  # index of the data segment it sits in
    text: str | None = None  # strings: the text (cut at MAX_TEXT)
    label: str | None = None
    targets: list[int] = field(default_factory=list)  # tables: addresses or function indices
    refs: int = 0  # references from code

    # written out, not the dataclass's: compiled, the dataclass's ``__init__`` is a Python
    # function the native constructor calls (~3,300 instructions an item, more than the
    # plain class it replaced); this one compiles to native stores (``targets``: a new
    # list when not given, as ``default_factory`` makes)
    def __init__(
        self,
        address: int,
        size: int,
        kind: str,
        segment: int,
        text: str | None = None,
        label: str | None = None,
        targets: list[int] | None = None,
        refs: int = 0,
    ) -> None:
        self.address = address
        self.size = size
        self.kind = kind
        self.segment = segment
        self.text = text
        self.label = label
        self.targets = [] if targets is None else targets
        self.refs = refs

    def __reduce__(self) -> tuple[object, tuple[object, ...]]:
        """Pickled and copied by its fields (the compiled class has no construction
        without arguments to restore them into)."""
        return (
            DataItem,
            (
                self.address,
                self.size,
                self.kind,
                self.segment,
                self.text,
                self.label,
                self.targets,
                self.refs,
            ),
        )
