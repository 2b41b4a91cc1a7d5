"""The infix operators' byte tables (``_Values.binary`` picks its case by small ints)."""

from __future__ import annotations

from kbtool.lift.ctable import CTABLE, PREC
from kbtool.lift.lifter.values import (
    _BIN_FORM,
    _BIN_OPER,
    _BIN_PREC,
    _FORM_CODE,
    _OPER_CODE,
    _WIDENS,
)

_INFIX = ("bin", "binu", "cmp", "cmpu", "shl", "shr", "shru")


def test_every_infix_op_has_its_form_operator_and_precedence_codes():
    """Each table entry of an infix form gives that form's code, its operator's code (1-6
    exactly for the operators C widens, 7/8 for / and %, 9/10 for == and !=, else 11) and
    the operator's precedence; any other op gives 0 in all three."""
    assert sorted(_FORM_CODE) == sorted(_INFIX)
    assert len(set(_FORM_CODE.values())) == len(_FORM_CODE) and 0 not in _FORM_CODE.values()
    assert len(_BIN_FORM) == len(_BIN_OPER) == len(_BIN_PREC) == len(CTABLE)
    seen = set()
    for op, ent in enumerate(CTABLE):
        if ent is None or ent[0] not in _INFIX:
            assert (_BIN_FORM[op], _BIN_OPER[op], _BIN_PREC[op]) == (0, 0, 0)
            continue
        form, text = ent[0], ent[3]
        seen.add(text)
        assert _BIN_FORM[op] == _FORM_CODE[form]
        assert _BIN_PREC[op] == PREC[text]
        oc = _BIN_OPER[op]
        assert (1 <= oc <= 6) == (text in _WIDENS)
        assert (oc == 7) == (text == "/") and (oc == 8) == (text == "%")
        assert (oc == 9) == (text == "==") and (oc == 10) == (text == "!=")
        assert oc == _OPER_CODE.get(text, 11)
    assert seen == set(PREC)  # every operator is some op's
