"""The data items are one class whichever side made them (session 24 W): the model's
``DataItem`` (:mod:`kbtool.analysis.datatypes`) is the class the chosen data walk makes
(the compiled twin's native class when the walk runs compiled, the pure module's with
``KBTOOL_DATASCAN=pure``), in whichever order the modules are first imported; both classes
are the same dataclass (fields, defaults, ``==``, ``repr``, ``asdict``, pickling)."""

from __future__ import annotations

import copy
import dataclasses
import os
import pickle
import subprocess
import sys

import pytest

from kbtool.analysis import datatypes, datawalk_active
from kbtool.analysis.datawalk import itemtype as pure_itemtype
from tests.support.paths import ROOT

COMPILED = datawalk_active.load_compiled()
needs_twin = pytest.mark.skipif(
    COMPILED is None, reason=f"compiled data walk {datawalk_active.compiled_state()}"
)


def _classes() -> list[type]:
    out: list[type] = [pure_itemtype.DataItem]
    if COMPILED is not None:
        from kbtool.analysis._cdatawalk import itemtype as compiled_itemtype

        out.append(compiled_itemtype.DataItem)
    return out


def test_the_models_class_is_the_walks():
    assert datatypes.DataItem is datawalk_active.ITEMS.DataItem
    if datawalk_active.IMPL is not None:
        assert datatypes.DataItem.__module__ == "kbtool.analysis._cdatawalk.itemtype"
    else:
        assert datatypes.DataItem is pure_itemtype.DataItem


@pytest.mark.parametrize(
    "first", ["kbtool.analysis.datatypes", "kbtool.analysis.datawalk_active", "kbtool"]
)
@pytest.mark.parametrize("env", ["", "pure"])
def test_the_same_class_in_any_import_order(first, env):
    """A fresh process importing ``first`` before the others: the model's class is the
    walk's items' class (the compiled one unless the walk is pure)."""
    code = (
        f"import importlib; importlib.import_module({first!r})\n"
        "from kbtool.analysis import datatypes, datawalk_active\n"
        "assert datatypes.DataItem is datawalk_active.ITEMS.DataItem\n"
        "print(datawalk_active.PATH, datatypes.DataItem.__module__)\n"
    )
    run_env = dict(os.environ, PYTHONPATH=str(ROOT))
    run_env.pop("KBTOOL_DATASCAN", None)
    if env:
        run_env["KBTOOL_DATASCAN"] = env
    r = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=run_env, cwd=ROOT
    )
    assert r.returncode == 0, r.stderr
    path, module = r.stdout.split()
    want = "pure" if env == "pure" or COMPILED is None else "compiled"
    assert path == want
    assert module == (
        "kbtool.analysis._cdatawalk.itemtype"
        if want == "compiled"
        else "kbtool.analysis.datawalk.itemtype"
    )


@pytest.mark.parametrize("cls", _classes(), ids=lambda c: c.__module__)
def test_both_classes_are_the_same_dataclass(cls):
    a = cls(0x400, 8, "cstring", 2, "hello")
    b = cls(address=0x400, size=8, kind="cstring", segment=2, text="hello")
    assert a == b and a is not b
    assert [f.name for f in dataclasses.fields(cls)] == [
        "address",
        "size",
        "kind",
        "segment",
        "text",
        "label",
        "targets",
        "refs",
    ]
    assert dataclasses.asdict(a) == {
        "address": 0x400,
        "size": 8,
        "kind": "cstring",
        "segment": 2,
        "text": "hello",
        "label": None,
        "targets": [],
        "refs": 0,
    }
    assert repr(a) == (
        "DataItem(address=1024, size=8, kind='cstring', segment=2, text='hello', "
        "label=None, targets=[], refs=0)"
    )
    assert a.targets is not cls(0, 1, "zero", 0).targets  # a new list each
    a.label = "s_hello"
    a.refs += 3
    a.targets = [1, 2]
    assert a != b
    assert (a.label, a.refs, a.targets) == ("s_hello", 3, [1, 2])
    assert pickle.loads(pickle.dumps(a)) == a
    assert copy.copy(a) == a and copy.deepcopy(a) == a and copy.deepcopy(a).targets is not a.targets
    assert dataclasses.replace(a, size=4).size == 4
    with pytest.raises(AttributeError):
        a.other = 1  # (slots: no other attribute)


@needs_twin
def test_compiled_items_equal_pure_ones_field_by_field():
    """An item of each class from the same values has the same fields and text."""
    pure_cls, compiled_cls = _classes()
    args = (0x10, 4, "pointer_table", 0, None, "ptrs_10", [0x20, 0x30], 2)
    p, c = pure_cls(*args), compiled_cls(*args)
    assert dataclasses.astuple(p) == dataclasses.astuple(c)
    assert repr(p) == repr(c)
