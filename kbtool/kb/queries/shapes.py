"""The shapes the query layer returns, one TypedDict per resource row.

Keys that are only sometimes present sit in a ``total=False`` subclass (no postponed
annotations here, so ``__required_keys__``/``__optional_keys__`` are exact at runtime).
``Version``, ``Coverage`` and ``FunctionEntry`` live beside their functions
(:mod:`._base`, :mod:`.versions`, :mod:`.functions`). Stored free-form JSON (diff reports,
lineage records, thread facts, run summaries, evidence) stays ``Any``.
"""

from typing import Any, TypedDict

# --- versions -------------------------------------------------------------------------------


class VersionInfo(TypedDict, total=False):
    """:func:`version_info`: the Version fields plus counts, hashes and producers."""

    id: int
    label: str
    toolchain_version: str | None
    functions: int
    shared_memory: bool
    program: str
    parent_version_id: int | None
    imported_functions: int
    defined_functions: int
    exported_functions: int
    instructions: int
    sha256: str
    size: int
    module_name: str | None
    producers: dict[str, Any]
    target_features: list[Any]
    source_path: str | None
    carried: int | None
    ingested_at: str
    lineage: dict[str, Any] | None


class LineageVersion(TypedDict):
    id: int
    label: str
    program: str
    program_id: int | None


class VersionRef(TypedDict):
    id: int
    label: str


class OracleModule(TypedDict):
    id: int
    label: str
    sha256: str
    size: int
    source_path: str | None
    created_at: str


# --- symbols --------------------------------------------------------------------------------


class Symbol(TypedDict):
    """The annotation record of a logical function."""

    stable_id: str
    name: str | None
    summary: str | None
    type_signature: str | None
    provenance: str | None
    confidence: float | None
    locked: bool
    evidence: list[Any]
    version_id: int | None
    updated_at: str | None


class ExportRow(TypedDict):
    index: int
    stable_id: str
    type: str | None
    name: str | None
    provenance: str | None
    confidence: float | None
    summary: str | None
    body_hash: str | None
    shape_hash: str | None
    instr_count: int | None
    imported: bool


class _IndexAnnotation(TypedDict):
    name: str
    summary: str | None
    provenance: str | None
    confidence: float | None


class IndexAnnotation(_IndexAnnotation, total=False):
    """:func:`annotations_by_index` values; ``evidence`` only with ``with_evidence``."""

    evidence: list[Any]


# --- functions ------------------------------------------------------------------------------


# a function with its name (callers, callees, function entries); ``import`` is a keyword
FunctionName = TypedDict(
    "FunctionName",
    {
        "index": int,
        "stable_id": str,
        "imported": bool,
        "import": str | None,
        "name": str | None,
        "provenance": str | None,
    },
)


class FunctionRecord(TypedDict):
    """:func:`get_function`: identity, binary names and annotation."""

    version_id: int
    index: int
    stable_id: str
    imported: bool
    import_module: str | None
    import_field: str | None
    type: str | None
    raw_name: str | None
    export_names: list[str]
    is_exported: bool
    body_size: int | None
    instr_count: int | None
    body_hash: str | None
    shape_hash: str | None
    body_changed: bool
    match_method: str | None
    match_score: float | None
    prev_index: int | None
    name: str | None
    provenance: str | None
    confidence: float | None
    symbol: Symbol | None


class FunctionAppearance(TypedDict):
    """One version a logical function appears in."""

    version_id: int
    label: str
    index: int
    body_changed: bool
    match_method: str | None
    match_score: float | None


class MemoryAccess(TypedDict):
    op: str
    offset: int
    width: int


class FunctionFacts(TypedDict):
    """The Function facts of docs/interface.md plus the extras of :func:`get_function_facts`."""

    func_index: int
    stable_id: str
    type_signature: str | None
    call_targets: list[str]
    referenced_strings: list[str]
    raw_name: str | None
    instruction_mnemonics: list[str]
    is_exported: bool
    export_names: list[str]
    callees: list[FunctionName]
    indirect_call_sites: int
    constants: list[int]
    globals_used: list[int]
    memory_accesses: list[MemoryAccess]
    atomic_sites: int
    loops: int
    body_size: int | None
    instr_count: int | None


# --- search ---------------------------------------------------------------------------------


class SearchResult(TypedDict):
    stable_id: str
    name: str | None
    provenance: str | None
    confidence: float | None


class JumpTarget(TypedDict):
    stable_id: str
    version_id: int
    index: int
    name: str | None
    provenance: str | None


class CallTargetCount(TypedDict):
    target: str
    index: int | None
    count: int


class NavRow(TypedDict):
    """A Search result plus ``version_id`` and ``index``."""

    stable_id: str
    name: str | None
    provenance: str | None
    confidence: float | None
    version_id: int
    index: int


class NavStringRow(NavRow):
    """A :class:`NavRow` with the function's matching ``strings``."""

    strings: list[str]


# --- events ---------------------------------------------------------------------------------


class _AnnotationEvent(TypedDict):
    id: int
    kind: str
    written: bool
    reason: str | None
    provenance: str | None
    confidence: float | None
    actor: str | None
    old_name: str | None
    new_name: str | None
    old: dict[str, Any] | None
    new: dict[str, Any] | None
    evidence: Any
    version_id: int | None
    created_at: str
    repeats: int | None
    last_at: str


class AnnotationEvent(_AnnotationEvent, total=False):
    """One gate decision; ``version_label`` only in :func:`history`."""

    version_label: str | None


class FirstSeen(TypedDict):
    version_id: int
    label: str
    index: int
    ingested_at: str


class VersionName(TypedDict):
    version_id: int
    label: str
    name: str | None


class History(TypedDict):
    stable_id: str
    first_seen: FirstSeen
    versions: list[FunctionAppearance]
    events: list[AnnotationEvent]
    symbol: Symbol | None
    names_by_version: list[VersionName]


# ``from`` is a keyword: the functional form
Rename = TypedDict(
    "Rename",
    {
        "event_id": int,
        "kind": str,
        "from": str | None,
        "to": str | None,
        "provenance": str | None,
        "confidence": float | None,
        "actor": str | None,
        "version_id": int | None,
        "at": str,
        "revert_steps": int,
    },
)


class FeedEvent(TypedDict):
    id: int
    kind: str
    stable_id: str | None
    version_id: int | None
    payload: dict[str, Any]
    created_at: str


class EventFeed(TypedDict):
    last_id: int
    events: list[FeedEvent]


# --- diffs ----------------------------------------------------------------------------------


class MatchingRow(TypedDict):
    """Per-function input of the diff matcher."""

    index: int
    stable_id: str
    imported: bool
    import_name: str | None
    type_sig: str | None
    body_hash: str | None
    shape_hash: str | None
    raw_name: str | None
    export_names: list[str]
    body_size: int | None
    instr_count: int | None
    calls: list[int]
    strings: list[str]
    consts: list[int]
    ops: bytes
    loops: int
    call_indirect: int
    table_slots: list[int]


# --- analysis -------------------------------------------------------------------------------


class Analysis(TypedDict):
    """The deep-analysis record of a function."""

    stable_id: str
    version_id: int
    func_index: int
    raw_c: str | None
    clean_c: str | None
    understanding: str | None
    rename_map: dict[str, str]
    status: str
    confidence: float | None
    backend: str | None
    model: str | None
    updated_at: str | None


class _Struct(TypedDict):
    name: str
    source_function: int | None
    fields: list[Any]
    members: list[Any]


class Struct(_Struct, total=False):
    """A recovered struct; ``bases`` only from :func:`structs_for_function`."""

    bases: list[Any]


class AnalysisRun(TypedDict):
    id: int
    kind: str
    summary: Any
    created_at: str


class AnalysisResult(TypedDict):
    version_id: int
    analyzed: bool
    thread_facts: list[Any]
    structs: list[Struct]
    summary: Any


# --- agents ---------------------------------------------------------------------------------


class CurrentAnnotation(TypedDict):
    name: str
    provenance: str | None
    confidence: float | None
    locked: bool


class AgentRow(TypedDict):
    """One function of an agent pass's input."""

    index: int
    stable_id: str
    imported: bool
    import_module: str | None
    import_field: str | None
    type_sig: str | None
    export_names: list[str]
    instr_count: int | None
    calls: list[int]
    call_indirect: int
    consts: list[int]
    strings: list[str]
    globals_used: list[int]
    mem_ops: list[tuple[Any, ...]]
    loops: int
    ops: bytes
    symbol: CurrentAnnotation | None


class Suggestion(TypedDict):
    version_id: int
    stable_id: str
    index: int
    name: str
    confidence: float
    backend: str | None
    model: str | None
    rule: str | None
    source: str | None
    evidence: Any
    status: str
    created_at: str
    decided_at: str | None
    current: CurrentAnnotation | None


class SuggestionPage(TypedDict):
    version_id: int
    total: int
    offset: int
    limit: int
    items: list[Suggestion]


class AgentAnswer(TypedDict):
    text: str
    tokens_in: int | None
    tokens_out: int | None


class AgentAnswerCounts(TypedDict):
    answers: int
    tokens_in: int
    tokens_out: int
