"""What one ingest stored (:class:`IngestResult`, re-exported by :mod:`kbtool.services.ingest`).

A plain class with what ``@dataclass`` gave it (the same ``__init__`` parameters and
defaults, ``==`` over the fields, no hash, a field-by-field ``repr``, ``__dict__`` in field
order: ``kbtool ingest --json`` prints it): a dataclass's methods are generated and compiled
at import, on every small module's ingest (issue 30)."""

from __future__ import annotations

from typing import Any

from kbtool.plainclass import NEW, Plain


class IngestResult(Plain):
    """What one ingest stored: the version, its counts, its parent and what it carried."""

    _FIELDS = (
        "version_id",
        "label",
        "imported",
        "defined",
        "exported",
        "instructions",
        "toolchain_version",
        "shared_memory",
        "parent_version_id",
        "carried",
        "carried_by_method",
        "body_changed",
        "new_identities",
        "names_written",
        "names_refused",
        "names_same",
        "names_by_source",
        "glue",
        "diff_carry",
        "program",
        "new_program",
        "lineage",
        "lineage_text",
        "go",
        "matcher_notes",
        "data",
    )

    def __init__(
        self,
        version_id: int,
        label: str,
        imported: int,
        defined: int,
        exported: int,
        instructions: int,
        toolchain_version: str | None,
        shared_memory: bool,
        parent_version_id: int | None,
        carried: int,
        carried_by_method: dict[str, int] = NEW,
        body_changed: int = 0,
        new_identities: int = 0,
        names_written: int = 0,
        names_refused: int = 0,  # a real refusal by the gate (e.g. a locked human name)
        names_same: int = 0,  # the function already had that name (other provenance or confidence)
        names_by_source: dict[str, int] = NEW,
        glue: dict[str, Any] | None = None,
        diff_carry: dict[str, int] | None = None,
        program: str | None = None,
        new_program: bool = False,
        lineage: dict[str, Any] | None = None,
        lineage_text: str = "",
        go: dict[str, Any] | None = None,
        matcher_notes: list[str] = NEW,  # a matcher stage stopped at its budget
        data: dict[str, Any] | None = None,  # the data model's counts (items, globals, refs)
    ) -> None:
        self.version_id = version_id
        self.label = label
        self.imported = imported
        self.defined = defined
        self.exported = exported
        self.instructions = instructions
        self.toolchain_version = toolchain_version
        self.shared_memory = shared_memory
        self.parent_version_id = parent_version_id
        self.carried = carried
        self.carried_by_method = {} if carried_by_method is NEW else carried_by_method
        self.body_changed = body_changed
        self.new_identities = new_identities
        self.names_written = names_written
        self.names_refused = names_refused
        self.names_same = names_same
        self.names_by_source = {} if names_by_source is NEW else names_by_source
        self.glue = glue
        self.diff_carry = diff_carry
        self.program = program
        self.new_program = new_program
        self.lineage = lineage
        self.lineage_text = lineage_text
        self.go = go
        self.matcher_notes = [] if matcher_notes is NEW else matcher_notes
        self.data = data
