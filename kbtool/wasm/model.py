"""The module model the reader fills: types, imports, tables, memories, globals, exports,
elements, data segments, custom sections, tags and their section table (:mod:`kbtool.wasm.reader`).
"""

from __future__ import annotations

from kbtool.plainclass import NEW, Plain

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
# (plain classes on :class:`kbtool.plainclass.Plain`, once ``@dataclass``: the same
# ``__init__``, ``==``, ``repr``, no hash, ``__slots__`` where it had ``slots=True``; a
# dataclass's methods are generated and compiled at import, on every small module's ingest)


class FuncType(Plain):
    """A function type: its parameter and result value types."""

    __slots__ = _FIELDS = ("params", "results", "kind")

    def __init__(
        self,
        params: tuple[str, ...] = (),
        results: tuple[str, ...] = (),
        kind: str = "func",  # "func", or "struct"/"array" for GC types (params/results empty)
    ) -> None:
        self.params = params
        self.results = results
        self.kind = kind

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


class Import(Plain):
    """One import: module and field names, its kind and index."""

    __slots__ = _FIELDS = ("module", "field", "kind", "index", "type_index", "desc")

    def __init__(
        self,
        module: str,
        field: str,
        kind: str,  # "func", "table", "memory", "global", "tag"
        index: int,  # index in its own index space (function index for a func import)
        type_index: int | None = None,  # func and tag imports
        desc: object = None,  # Table / Memory / Global for those kinds
    ) -> None:
        self.module = module
        self.field = field
        self.kind = kind
        self.index = index
        self.type_index = type_index
        self.desc = desc


class Table(Plain):
    """A table: its reference type and limits."""

    __slots__ = _FIELDS = ("reftype", "min", "max", "imported", "table64", "shared")

    def __init__(
        self,
        reftype: str,
        min: int,
        max: int | None,
        imported: bool = False,
        table64: bool = False,
        shared: bool = False,  # shared-everything-threads
    ) -> None:
        self.reftype = reftype
        self.min = min
        self.max = max
        self.imported = imported
        self.table64 = table64
        self.shared = shared


class Memory(Plain):
    """A linear memory: its limits (pages) and flags."""

    __slots__ = _FIELDS = ("min", "max", "shared", "memory64", "imported", "page_size_log2")

    def __init__(
        self,
        min: int,
        max: int | None,
        shared: bool = False,
        memory64: bool = False,
        imported: bool = False,
        page_size_log2: int = 16,
    ) -> None:
        self.min = min
        self.max = max
        self.shared = shared
        self.memory64 = memory64
        self.imported = imported
        self.page_size_log2 = page_size_log2


class Global(Plain):
    """A global: its value type, mutability and initializer."""

    __slots__ = _FIELDS = ("valtype", "mutable", "imported", "init", "shared")

    def __init__(
        self,
        valtype: str,
        mutable: bool,
        imported: bool = False,
        init: int | float | None = None,  # value of a constant initialiser, None otherwise
        shared: bool = False,  # shared-everything-threads
    ) -> None:
        self.valtype = valtype
        self.mutable = mutable
        self.imported = imported
        self.init = init
        self.shared = shared


class Export(Plain):
    """One export: its name, kind and index."""

    __slots__ = _FIELDS = ("name", "kind", "index")

    def __init__(
        self,
        name: str,
        kind: str,
        index: int,
    ) -> None:
        self.name = name
        self.kind = kind
        self.index = index


class Element(Plain):
    """An element segment: mode, table, offset and function indices."""

    __slots__ = _FIELDS = ("mode", "table_index", "offset", "reftype", "func_indices")

    def __init__(
        self,
        mode: str,  # "active", "passive", "declarative"
        table_index: int,
        offset: int | None,  # constant offset of an active segment, None if not constant
        reftype: str,
        func_indices: list[int | None],  # ref.func targets; None for ref.null / other exprs
    ) -> None:
        self.mode = mode
        self.table_index = table_index
        self.offset = offset
        self.reftype = reftype
        self.func_indices = func_indices


class DataSegment(Plain):
    """A data segment: memory, offset and where its bytes are."""

    __slots__ = _FIELDS = ("memory_index", "offset", "data", "passive", "file_offset")

    def __init__(
        self,
        memory_index: int,
        offset: int | None,  # constant offset of an active segment, None if not constant
        data: bytes,
        passive: bool,
        file_offset: int = 0,  # file offset of ``data``
    ) -> None:
        self.memory_index = memory_index
        self.offset = offset
        self.data = data
        self.passive = passive
        self.file_offset = file_offset


class CustomSection(Plain):
    """A custom section: its name and payload."""

    __slots__ = _FIELDS = ("name", "offset", "data")

    def __init__(
        self,
        name: str,
        offset: int,  # file offset of ``data`` (the payload after the name)
        data: bytes,
    ) -> None:
        self.name = name
        self.offset = offset
        self.data = data


class Tag(Plain):
    """An exception tag: its attribute and type index."""

    __slots__ = _FIELDS = ("attribute", "type_index")

    def __init__(
        self,
        attribute: int,
        type_index: int,
    ) -> None:
        self.attribute = attribute
        self.type_index = type_index


class Section(Plain):
    """One section as it appears in the file: id, name and extent."""

    __slots__ = _FIELDS = ("id", "name", "offset", "size")

    def __init__(
        self,
        id: int,
        name: str,
        offset: int,  # file offset of the payload
        size: int,
    ) -> None:
        self.id = id
        self.name = name
        self.offset = offset
        self.size = size


class Module(Plain):
    """A parsed WebAssembly module: its sections' contents, in index order."""

    # extras beyond the INTERNALS contract
    _FIELDS = (
        "types",
        "imports",
        "func_imports",
        "func_type_indices",
        "tables",
        "memories",
        "globals",
        "exports",
        "start",
        "elements",
        "data_segments",
        "customs",
        "func_names",
        "local_names",
        "module_name",
        "producers",
        "target_features",
        "code",
        "tags",
        "data_count",
        "sections",
        "warnings",
        "size",
    )
    types: list[FuncType]
    imports: list[Import]
    func_imports: list[Import]
    func_type_indices: list[int]
    tables: list[Table]
    memories: list[Memory]
    globals: list[Global]
    exports: list[Export]
    start: int | None
    elements: list[Element]
    data_segments: list[DataSegment]
    customs: list[CustomSection]
    func_names: dict[int, str]
    local_names: dict[int, dict[int, str]]
    module_name: str | None
    producers: dict[str, list[str]]
    target_features: list[str]
    code: list[tuple[int, int]]
    tags: list[Tag]
    data_count: int | None
    sections: list[Section]
    warnings: list[str]
    size: int

    def __init__(
        self,
        types: list[FuncType] = NEW,
        imports: list[Import] = NEW,
        func_imports: list[Import] = NEW,
        func_type_indices: list[int] = NEW,
        tables: list[Table] = NEW,
        memories: list[Memory] = NEW,
        globals: list[Global] = NEW,
        exports: list[Export] = NEW,
        start: int | None = None,
        elements: list[Element] = NEW,
        data_segments: list[DataSegment] = NEW,
        customs: list[CustomSection] = NEW,
        func_names: dict[int, str] = NEW,
        local_names: dict[int, dict[int, str]] = NEW,
        module_name: str | None = None,
        producers: dict[str, list[str]] = NEW,
        target_features: list[str] = NEW,
        code: list[tuple[int, int]] = NEW,
        tags: list[Tag] = NEW,
        data_count: int | None = None,
        sections: list[Section] = NEW,
        warnings: list[str] = NEW,  # tolerated problems in custom sections
        size: int = 0,
    ) -> None:
        self.types = [] if types is NEW else types
        self.imports = [] if imports is NEW else imports
        self.func_imports = [] if func_imports is NEW else func_imports
        self.func_type_indices = [] if func_type_indices is NEW else func_type_indices
        self.tables = [] if tables is NEW else tables
        self.memories = [] if memories is NEW else memories
        self.globals = [] if globals is NEW else globals
        self.exports = [] if exports is NEW else exports
        self.start = start
        self.elements = [] if elements is NEW else elements
        self.data_segments = [] if data_segments is NEW else data_segments
        self.customs = [] if customs is NEW else customs
        self.func_names = {} if func_names is NEW else func_names
        self.local_names = {} if local_names is NEW else local_names
        self.module_name = module_name
        self.producers = {} if producers is NEW else producers
        self.target_features = [] if target_features is NEW else target_features
        self.code = [] if code is NEW else code
        self.tags = [] if tags is NEW else tags
        self.data_count = data_count
        self.sections = [] if sections is NEW else sections
        self.warnings = [] if warnings is NEW else warnings
        self.size = size

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
