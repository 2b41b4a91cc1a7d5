"""kbtool.analysis: pure static analysis of one module (issue 15).

No DB and no front-ends: only :mod:`kbtool.wasm` and the stdlib.

    from kbtool.wasm import analyze_module
    from kbtool.analysis import analyze_module_static
    sa = analyze_module_static(analyze_module(data), data, progress=None)
    sa.names         # [{func_index, name, confidence, family, evidence}] (recognised)
    sa.review        # [{func_index, candidates, reason, evidence}] (fits several names)
    sa.thread_facts  # [{kind, ...}] (see kbtool.analysis.threads)
    sa.structs       # [{name, source_function, fields: [{offset, size, type, name}], members}]
    sa.struct_for_param(func_index, param_index) -> struct dict | None

Output is deterministic (sorted by function index / struct name).
"""

from __future__ import annotations

from collections.abc import Callable

from kbtool.plainclass import NEW, Plain
from kbtool.wasm import ModuleAnalysis

from .fingerprints import FingerprintDB, default_db, full_hash
from .recognize import recognize

# (structs and threads are imported by analyze_module_static: an ingest, which imports this
# package for the data model and the recognizers, needs neither)

Progress = Callable[[str, int, int], None]


class StaticAnalysis(Plain):
    """The static passes' results: names, review items, thread facts, recovered structs."""

    _FIELDS = ("names", "review", "thread_facts", "structs")
    names: list[dict]
    review: list[dict]
    thread_facts: list[dict]
    structs: list[dict]
    _param_index: dict[tuple[int, int], int]

    def __init__(
        self,
        names: list[dict] = NEW,
        review: list[dict] = NEW,
        thread_facts: list[dict] = NEW,
        structs: list[dict] = NEW,
        _param_index: dict[tuple[int, int], int] = NEW,
    ) -> None:
        self.names = [] if names is NEW else names
        self.review = [] if review is NEW else review
        self.thread_facts = [] if thread_facts is NEW else thread_facts
        self.structs = [] if structs is NEW else structs
        self._param_index = {} if _param_index is NEW else _param_index

    def struct_for_param(self, func_index: int, param_index: int) -> dict | None:
        """The struct a parameter points to (name, source_function, fields), if recovered."""
        if not self._param_index:
            for k, s in enumerate(self.structs):
                for mem in s["members"]:
                    if mem["base"].startswith("p") and "@" not in mem["base"]:
                        self._param_index[(mem["func_index"], int(mem["base"][1:]))] = k
        k = self._param_index.get((func_index, param_index))
        return None if k is None else self.structs[k]

    def to_dict(self) -> dict:
        return {
            "names": self.names,
            "review": self.review,
            "thread_facts": self.thread_facts,
            "structs": self.structs,
        }


def analyze_module_static(
    analysis: ModuleAnalysis,
    data: bytes,
    *,
    progress: Progress | None = None,
    db: FingerprintDB | None = None,
    struct_budget: int | None = None,
) -> StaticAnalysis:
    """Recognise runtime functions, collect thread facts and recover structs
    (``struct_budget``: :data:`.structs.DEFAULT_BUDGET` when None).

    ``progress(stage, done, total)`` is called per stage ("names", "threads", "structs").
    """
    from .structs import DEFAULT_BUDGET, recover_structs
    from .threads import thread_facts

    if struct_budget is None:
        struct_budget = DEFAULT_BUDGET
    if not isinstance(data, bytes):
        data = bytes(data)

    def stage(name: str):
        if progress is None:
            return None
        return lambda done, total: progress(name, done, total)

    if progress is not None:
        progress("names", 0, 1)
    names, review = recognize(analysis, data, db or default_db())
    if progress is not None:
        progress("names", 1, 1)
    facts = thread_facts(analysis, data, stage("threads"))
    structs = recover_structs(analysis, data, struct_budget, stage("structs"))
    if progress is not None:
        progress("structs", 1, 1)
    return StaticAnalysis(names, review, facts, structs)


__all__ = ["FingerprintDB", "StaticAnalysis", "analyze_module_static", "default_db", "full_hash"]
