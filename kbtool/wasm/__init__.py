"""kbtool.wasm: pure WebAssembly layer (binary reader, opcode table, decoder, facts).

No DB, no front-end imports; Python stdlib only.
"""

from .errors import WasmFormatError
from .facts import FuncFacts, ModuleAnalysis, analyze_module, function_body
from .instr import disassemble, iter_instructions
from .opcodes import MNEMONICS
from .reader import (
    CustomSection,
    DataSegment,
    Element,
    Export,
    FuncType,
    Global,
    Import,
    Memory,
    Module,
    Table,
    Tag,
    parse_module,
)
from .toolchain import detect_toolchain

__all__ = [
    "MNEMONICS",
    "CustomSection",
    "DataSegment",
    "Element",
    "Export",
    "FuncFacts",
    "FuncType",
    "Global",
    "Import",
    "Memory",
    "Module",
    "ModuleAnalysis",
    "Table",
    "Tag",
    "WasmFormatError",
    "analyze_module",
    "detect_toolchain",
    "disassemble",
    "function_body",
    "iter_instructions",
    "parse_module",
]
