"""A data item of the data model (:class:`DataItem`, re-exported by
:mod:`kbtool.analysis.datatypes`), defined in the data walk's package so that its compiled
twin (``kbtool.analysis._cdatawalk.itemtype``, mypyc) holds it as a native class: the walk
makes ffmpeg's 72k items and reads their fields with no generic call (a constructor call
cost ~2,100 instructions, a field read from compiled code ~160).

:mod:`kbtool.analysis.datatypes` exports the class of the side the walk runs on (the
compiled one when :mod:`..datawalk_active` picks the twin, else this module run pure), so
the walk's items and the model's own (``datalabels``) are one class. Both sides are the
same dataclass: the same fields, defaults, ``==``, ``repr``, ``asdict``; the compiled one
also checks its fields' types when set.

Standard library only: :mod:`kbtool.analysis.datatypes` imports it while it loads."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class DataItem:
    address: int
    size: int
    kind: str  # cstring, utf16, gostring, pointer_table, funcptr_table, numeric, zero, bss
    segment: int  # index of the data segment it sits in
    text: str | None = None  # strings: the text (cut at MAX_TEXT)
    label: str | None = None
    targets: list[int] = field(default_factory=list)  # tables: addresses or function indices
    refs: int = 0  # references from code
