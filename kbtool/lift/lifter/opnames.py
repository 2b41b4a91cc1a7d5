"""The opcodes the lifter tests by name: their ids in the one opcode table
(:data:`kbtool.wasm.opcodes.OP_BY_NAME`; a typed ``select`` by its immediate kind), written
as numbers so that mypyc compiles a test against one as a compare with a constant (a
computed ``Final`` is a module attribute read and checked at every use); checked against
the table at import."""

from __future__ import annotations

from typing import Final

from kbtool.wasm.opcodes import K_SELECT_T, KIND, OP_BY_NAME

OP_UNREACHABLE: Final = 0
OP_NOP: Final = 1
OP_BLOCK: Final = 2
OP_LOOP: Final = 3
OP_IF: Final = 4
OP_ELSE: Final = 5
OP_TRY: Final = 6
OP_CATCH: Final = 7
OP_THROW: Final = 8
OP_RETHROW: Final = 9
OP_THROW_REF: Final = 10
OP_END: Final = 11
OP_BR: Final = 12
OP_BR_IF: Final = 13
OP_BR_TABLE: Final = 14
OP_RETURN: Final = 15
OP_CALL: Final = 16
OP_CALL_INDIRECT: Final = 17
OP_RETURN_CALL: Final = 18
OP_RETURN_CALL_INDIRECT: Final = 19
OP_CALL_REF: Final = 20
OP_RETURN_CALL_REF: Final = 21
OP_DELEGATE: Final = 24
OP_CATCH_ALL: Final = 25
OP_DROP: Final = 26
OP_SELECT: Final = 27
OP_SELECT_T: Final = 28  # `select t*`: the same mnemonic, typed
OP_TRY_TABLE: Final = 31
OP_LOCAL_GET: Final = 32
OP_LOCAL_SET: Final = 33
OP_LOCAL_TEE: Final = 34
OP_GLOBAL_GET: Final = 35
OP_GLOBAL_SET: Final = 36
OP_TABLE_GET: Final = 37
OP_TABLE_SET: Final = 38
OP_I32_LOAD: Final = 40  # the first load; stores follow the loads
OP_I32_STORE: Final = 54  # the first store; memory.size follows them
OP_MEMORY_SIZE: Final = 63
OP_MEMORY_GROW: Final = 64
OP_I32_CONST: Final = 65
OP_I64_CONST: Final = 66
OP_F32_CONST: Final = 67
OP_F64_CONST: Final = 68
OP_I32_EQZ: Final = 69
OP_I64_EQZ: Final = 80
OP_I32_ADD: Final = 106
OP_I32_SUB: Final = 107
OP_I32_DIV_S: Final = 109
OP_I32_REM_U: Final = 112
OP_I32_AND: Final = 113
OP_I32_XOR: Final = 115
OP_REF_NULL: Final = 208
OP_REF_IS_NULL: Final = 209
OP_REF_FUNC: Final = 210
OP_REF_EQ: Final = 211
OP_REF_AS_NON_NULL: Final = 212
OP_BR_ON_NULL: Final = 213
OP_BR_ON_NON_NULL: Final = 214
OP_V128_CONST: Final = 332
OP_I8X16_SHUFFLE: Final = 333


#: each constant's mnemonic in the opcode table (``select t*``: the typed select's kind)
_NAMES: Final = {
    OP_UNREACHABLE: "unreachable",
    OP_NOP: "nop",
    OP_BLOCK: "block",
    OP_LOOP: "loop",
    OP_IF: "if",
    OP_ELSE: "else",
    OP_TRY: "try",
    OP_CATCH: "catch",
    OP_THROW: "throw",
    OP_RETHROW: "rethrow",
    OP_THROW_REF: "throw_ref",
    OP_END: "end",
    OP_BR: "br",
    OP_BR_IF: "br_if",
    OP_BR_TABLE: "br_table",
    OP_RETURN: "return",
    OP_CALL: "call",
    OP_CALL_INDIRECT: "call_indirect",
    OP_RETURN_CALL: "return_call",
    OP_RETURN_CALL_INDIRECT: "return_call_indirect",
    OP_CALL_REF: "call_ref",
    OP_RETURN_CALL_REF: "return_call_ref",
    OP_DELEGATE: "delegate",
    OP_CATCH_ALL: "catch_all",
    OP_DROP: "drop",
    OP_SELECT: "select",
    OP_SELECT_T: "select t*",
    OP_TRY_TABLE: "try_table",
    OP_LOCAL_GET: "local.get",
    OP_LOCAL_SET: "local.set",
    OP_LOCAL_TEE: "local.tee",
    OP_GLOBAL_GET: "global.get",
    OP_GLOBAL_SET: "global.set",
    OP_TABLE_GET: "table.get",
    OP_TABLE_SET: "table.set",
    OP_I32_LOAD: "i32.load",
    OP_I32_STORE: "i32.store",
    OP_MEMORY_SIZE: "memory.size",
    OP_MEMORY_GROW: "memory.grow",
    OP_I32_CONST: "i32.const",
    OP_I64_CONST: "i64.const",
    OP_F32_CONST: "f32.const",
    OP_F64_CONST: "f64.const",
    OP_I32_EQZ: "i32.eqz",
    OP_I64_EQZ: "i64.eqz",
    OP_I32_ADD: "i32.add",
    OP_I32_SUB: "i32.sub",
    OP_I32_DIV_S: "i32.div_s",
    OP_I32_REM_U: "i32.rem_u",
    OP_I32_AND: "i32.and",
    OP_I32_XOR: "i32.xor",
    OP_REF_NULL: "ref.null",
    OP_REF_IS_NULL: "ref.is_null",
    OP_REF_FUNC: "ref.func",
    OP_REF_EQ: "ref.eq",
    OP_REF_AS_NON_NULL: "ref.as_non_null",
    OP_BR_ON_NULL: "br_on_null",
    OP_BR_ON_NON_NULL: "br_on_non_null",
    OP_V128_CONST: "v128.const",
    OP_I8X16_SHUFFLE: "i8x16.shuffle",
}


def _check() -> None:
    for op, name in _NAMES.items():
        want = KIND.index(K_SELECT_T) if name == "select t*" else OP_BY_NAME[name]
        if op != want:
            raise RuntimeError(f"opnames: {name} is op {want}, not {op}")


_check()
