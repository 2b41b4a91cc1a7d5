"""The lifter's opcode constants are numbers (mypyc compiles a test against one as a compare
with a constant); each is its op's id in the one opcode table, and the import checks it."""

from __future__ import annotations

import pytest

from kbtool.lift.lifter import base, opnames
from kbtool.wasm.opcodes import K_SELECT_T, KIND, MNEMONICS, OP_BY_NAME


def test_every_constant_is_its_ops_id_in_the_opcode_table():
    consts = {k: v for k, v in vars(opnames).items() if k.startswith("OP_") and k != "OP_BY_NAME"}
    assert set(consts.values()) == set(opnames._NAMES)
    assert len(consts) == len(opnames._NAMES) == 60
    for name, op in consts.items():
        mn = opnames._NAMES[op]
        if mn == "select t*":
            assert op == KIND.index(K_SELECT_T) and name == "OP_SELECT_T"
        else:
            assert op == OP_BY_NAME[mn] and MNEMONICS[op] == mn
            assert name == "OP_" + mn.upper().replace(".", "_")
    assert base.F_EFFECT == base.F_CALL | base.F_MEM | base.F_GLOB


def test_a_wrong_constant_fails_the_import_check(monkeypatch):
    monkeypatch.setitem(opnames._NAMES, opnames.OP_LOCAL_GET + 1000, "local.get")
    with pytest.raises(RuntimeError, match="local.get"):
        opnames._check()
