"""The shapes the query layer returns, one TypedDict per resource row.

Keys that are only sometimes present sit in a ``total=False`` subclass or are marked
``NotRequired`` (no postponed annotations here, so ``__required_keys__``/``__optional_keys__``
are exact at runtime). ``Version``, ``Coverage`` and ``FunctionEntry`` live beside their
functions (:mod:`._base`, :mod:`.versions`, :mod:`.functions`). The stored JSON records (diff
reports, lineage records, thread facts) have shapes here too, keys that older kbtool did not
write marked ``NotRequired``; run summaries and evidence stay ``Any``.
"""

from typing import Any, Literal, NamedTuple, NotRequired, TypedDict

# --- versions -------------------------------------------------------------------------------


class LineageCandidate(TypedDict):
    """One earlier version the lineage decision weighed (``program`` absent for ``--base``)."""

    version_id: int
    label: str
    overlap: float | None
    program: NotRequired[str]


class LineageRecord(TypedDict):
    """``versions.lineage`` (:meth:`kbtool.services.lineage.Lineage.record`): how the parent
    was chosen. The basis and library keys came later: versions ingested before lack them."""

    method: str  # "related", "base", "program", "new-program", "first"
    overlap: float | None
    threshold: float
    min_instrs: int
    candidates: list[LineageCandidate]
    basis: NotRequired[str]
    own_functions: NotRequired[int]
    library_functions: NotRequired[int]
    library: NotRequired[str]  # ranges of library/runtime function indices ("3-9,12")


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
    lineage: LineageRecord | None


class OracleBytes(NamedTuple):
    """A stored reference module with its bytes (:func:`oracle_modules`)."""

    id: int
    label: str
    data: bytes


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


class IdentityRow(NamedTuple):
    """A function's KB identity and current name (:func:`function_identities`)."""

    index: int
    stable_id: str
    imported: bool
    import_module: str | None
    import_field: str | None
    name: str | None
    provenance: str | None


class MemOp(NamedTuple):
    """One memory access of a function's facts (:func:`mem_ops_for`), in body order."""

    op: int  # opcode id (:data:`kbtool.wasm.opcodes.MNEMONICS`)
    offset: int  # the memarg offset
    width: int  # bytes accessed


class DiffSummary(TypedDict):
    """Counts of a diff report (``added``/``removed``: the ``new``/``deleted`` changes)."""

    unchanged: int
    moved: int
    modified: int
    added: int
    removed: int
    runtime_churn: int
    review: int


class ChangeTriage(TypedDict):
    """What a ``modified`` change carries besides its pairing: the explanation as short lines
    (:class:`kbtool.services.diff.explain.Explanation` ``items``), how much changed and how
    patch-like it is (:mod:`kbtool.services.diff.triage`); absent from other changes."""

    explain: NotRequired[list[str]]
    change_weight: NotRequired[float]
    triage: NotRequired[float]
    reasons: NotRequired[list[str]]
    triage_kind: NotRequired[str]  # KINDS of kbtool.services.diff.ordering


class DiffChange(ChangeTriage):
    """One function of a diff report (:mod:`kbtool.services.diff.report`); ``relocated`` is
    set (true) only for same code whose data addresses or callees moved."""

    classification: Literal["unchanged", "moved", "modified", "new", "deleted"]
    from_index: int | None
    to_index: int | None
    from_stable_id: str | None
    to_stable_id: str | None
    score: float | None
    review: bool
    runtime: bool
    name: str | None
    provenance: str | None
    confidence: float | None
    relocated: NotRequired[bool]


# ``from`` is a keyword: the functional form. The program fields came later (reports saved
# before lack them; ``stored_diff`` sets today's), ``warning`` only across two programs,
# ``triage_rules`` (the triage generation it was saved under) only in what ``save_diff`` wrote.
StoredDiffReport = TypedDict(
    "StoredDiffReport",
    {
        "from": str,
        "to": str,
        "from_version_id": int,
        "to_version_id": int,
        "stored": bool,
        "from_program": NotRequired[str],
        "to_program": NotRequired[str],
        "warning": NotRequired[str],
        "summary": DiffSummary,
        "changes": list[DiffChange],
        "triage_rules": NotRequired[int],
    },
)


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


# --- thread facts (:mod:`kbtool.analysis.threads`), one shape per ``kind``


class SharedMemoryFact(TypedDict):
    kind: Literal["shared_memory"]
    memory: int
    min_pages: int
    max_pages: int | None
    imported: bool


# ``class`` is a keyword: the functional form
AtomicSiteFact = TypedDict(
    "AtomicSiteFact",
    {
        "kind": Literal["atomic_site"],
        "func_index": int,
        "site": int,
        "op": str,
        "class": str,  # load, store, rmw, cmpxchg, wait, notify, fence
        "rmw": str | None,
        "width": int,
        "offset": int,
    },
)


class LockEvidence(TypedDict):
    atomic_classes: list[str]
    loops: int
    wait_via: NotRequired[list[int]]  # callees that wait (when any)
    notify_via: NotRequired[list[int]]  # callees that notify (when any)


class LockFact(TypedDict):
    kind: Literal["lock"]
    func_index: int
    pattern: str  # futex, spin, futex_release
    strength: str  # strong, weak
    evidence: LockEvidence


class TlsBaseFact(TypedDict):
    kind: Literal["tls_base"]
    global_index: int
    init_function: int
    evidence: str


class WorkerEntryFact(TypedDict):
    kind: Literal["worker_entry"]
    func_index: int
    export: str
    evidence: str


class WorkerOnlyFact(TypedDict):
    kind: Literal["worker_only"]
    func_index: int
    evidence: str


ThreadFact = (
    SharedMemoryFact | AtomicSiteFact | LockFact | TlsBaseFact | WorkerEntryFact | WorkerOnlyFact
)


class AnalysisRun(TypedDict):
    id: int
    kind: str
    summary: Any
    created_at: str


class AnalysisResult(TypedDict):
    version_id: int
    analyzed: bool
    thread_facts: list[ThreadFact]
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
    mem_ops: list[MemOp]
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
