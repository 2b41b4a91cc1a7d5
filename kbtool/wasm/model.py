"""The module model the reader fills: types, imports, tables, memories, globals, exports,
elements, data segments, custom sections, tags and their section table (:mod:`kbtool.wasm.reader`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

KIND_NAMES = {0: "func", 1: "table", 2: "memory", 3: "global", 4: "tag"}


SECTION_NAMES = {
    0: "custom",
    1: "type",
    2: "import",
    3: "function",
    4: "table",
    5: "memory",
    6: "global",
    7: "export",
    8: "start",
    9: "element",
    10: "code",
    11: "data",
    12: "datacount",
    13: "tag",
}


# ----------------------------------------------------------------------------- model


@dataclass(slots=True)
class FuncType:
    """A function type: its parameter and result value types."""

    params: tuple[str, ...] = ()
    results: tuple[str, ...] = ()
    kind: str = "func"  # "func", or "struct"/"array" for GC types (params/results empty)

    def text(self) -> str:
        if self.kind != "func":
            return f"({self.kind})"
        ps = "(" + ", ".join(self.params) + ")"
        if not self.results:
            rs = "()"
        elif len(self.results) == 1:
            rs = self.results[0]
        else:
            rs = "(" + ", ".join(self.results) + ")"
        return f"{ps} -> {rs}"

    def __str__(self) -> str:
        return self.text()


@dataclass(slots=True)
class Import:
    """One import: module and field names, its kind and index."""

    module: str
    field: str
    kind: str  # "func", "table", "memory", "global", "tag"
    index: int  # index in its own index space (function index for a func import)
    type_index: int | None = None  # func and tag imports
    desc: object = None  # Table / Memory / Global for those kinds


@dataclass(slots=True)
class Table:
    """A table: its reference type and limits."""

    reftype: str
    min: int
    max: int | None
    imported: bool = False
    table64: bool = False
    shared: bool = False  # shared-everything-threads


@dataclass(slots=True)
class Memory:
    """A linear memory: its limits (pages) and flags."""

    min: int
    max: int | None
    shared: bool = False
    memory64: bool = False
    imported: bool = False
    page_size_log2: int = 16


@dataclass(slots=True)
class Global:
    """A global: its value type, mutability and initializer."""

    valtype: str
    mutable: bool
    imported: bool = False
    init: int | float | None = None  # value of a constant initialiser, None otherwise
    shared: bool = False  # shared-everything-threads


@dataclass(slots=True)
class Export:
    """One export: its name, kind and index."""

    name: str
    kind: str
    index: int


@dataclass(slots=True)
class Element:
    """An element segment: mode, table, offset and function indices."""

    mode: str  # "active", "passive", "declarative"
    table_index: int
    offset: int | None  # constant offset of an active segment, None if not constant
    reftype: str
    func_indices: list[int | None]  # ref.func targets; None for ref.null / other exprs


@dataclass(slots=True)
class DataSegment:
    """A data segment: memory, offset and where its bytes are."""

    memory_index: int
    offset: int | None  # constant offset of an active segment, None if not constant
    data: bytes
    passive: bool
    file_offset: int = 0  # file offset of ``data``


@dataclass(slots=True)
class CustomSection:
    """A custom section: its name and payload."""

    name: str
    offset: int  # file offset of ``data`` (the payload after the name)
    data: bytes


@dataclass(slots=True)
class Tag:
    """An exception tag: its attribute and type index."""

    attribute: int
    type_index: int


@dataclass(slots=True)
class Section:
    """One section as it appears in the file: id, name and extent."""

    id: int
    name: str
    offset: int  # file offset of the payload
    size: int


@dataclass
class Module:
    """A parsed WebAssembly module: its sections' contents, in index order."""

    types: list[FuncType] = field(default_factory=list)
    imports: list[Import] = field(default_factory=list)
    func_imports: list[Import] = field(default_factory=list)
    func_type_indices: list[int] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    memories: list[Memory] = field(default_factory=list)
    globals: list[Global] = field(default_factory=list)
    exports: list[Export] = field(default_factory=list)
    start: int | None = None
    elements: list[Element] = field(default_factory=list)
    data_segments: list[DataSegment] = field(default_factory=list)
    customs: list[CustomSection] = field(default_factory=list)
    func_names: dict[int, str] = field(default_factory=dict)
    local_names: dict[int, dict[int, str]] = field(default_factory=dict)
    module_name: str | None = None
    producers: dict[str, list[str]] = field(default_factory=dict)
    target_features: list[str] = field(default_factory=list)
    code: list[tuple[int, int]] = field(default_factory=list)
    # extras beyond the INTERNALS contract
    tags: list[Tag] = field(default_factory=list)
    data_count: int | None = None
    sections: list[Section] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # tolerated problems in custom sections
    size: int = 0

    @property
    def num_func_imports(self) -> int:
        return len(self.func_imports)

    @property
    def num_functions(self) -> int:
        return len(self.func_imports) + len(self.func_type_indices)

    @property
    def shared_memory(self) -> bool:
        return any(m.shared for m in self.memories)

    def func_type_index(self, func_index: int) -> int:
        n = len(self.func_imports)
        if func_index < n:
            return self.func_imports[func_index].type_index
        return self.func_type_indices[func_index - n]

    def func_type(self, func_index: int) -> FuncType:
        return self.types[self.func_type_index(func_index)]

    def custom(self, name: str) -> CustomSection | None:
        for c in self.customs:
            if c.name == name:
                return c
        return None
