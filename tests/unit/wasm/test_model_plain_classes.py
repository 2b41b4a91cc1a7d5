"""The module model's, the decoder's facts', the data model's and the recognizers' classes as
plain classes (issue 30: no dataclass methods generated and compiled at import on a small
module's path) behave as the dataclasses they replace: a dataclass made from each one's
``__init__`` (the same fields, order and defaults) gives the same ``repr``, ``==``,
no hash, ``__match_args__``, slots, a new list or dict per default, and pickling."""

from __future__ import annotations

import dataclasses
import inspect
import pickle

import pytest

from kbtool.analysis import StaticAnalysis
from kbtool.analysis import datatypes as dt
from kbtool.analysis.fingerprints import RefEntry
from kbtool.analysis.recognize import Candidate
from kbtool.wasm import facts, gosyms, model

#: (class, slots, the fields left out of ``repr`` and ``==``: ``hot`` was so in the dataclass,
#: ``side`` is as ``hot``;
#: ``_starts`` and ``_param_index`` (caches) were out of its ``repr`` only, now of both)
CLASSES = [
    *[
        (getattr(model, n), True, ())
        for n in (
            "FuncType",
            "Import",
            "Table",
            "Memory",
            "Global",
            "Export",
            "Element",
            "DataSegment",
            "CustomSection",
            "Tag",
            "Section",
        )
    ],
    (model.Module, False, ()),
    (facts.FuncFacts, True, ()),
    (facts.ModuleAnalysis, False, ("hot", "side")),
    (dt.GlobalInfo, True, ()),
    (dt.DataRef, True, ()),
    (dt.DataModel, True, ("_starts",)),
    (Candidate, True, ()),
    (StaticAnalysis, False, ("_param_index",)),
    (gosyms.GoSymbols, True, ()),
    (gosyms._Table, True, ()),
]


def _reference(cls: type, slots: bool, hidden: tuple[str, ...]) -> tuple[type, list[str]]:
    """The dataclass ``cls`` was: its fields from ``__init__``, a default ``_NEW`` a
    factory of the type a default instance holds."""
    params = list(inspect.signature(cls.__init__).parameters.values())[1:]
    required = {p.name: _value(p.name, i) for i, p in enumerate(params) if p.default is p.empty}
    blank = cls(**required)
    spec = []
    for p in params:
        kw = {}
        if p.name in hidden:
            kw.update(repr=False, compare=False)
        if p.default is not p.empty:
            if p.default is not None and type(p.default).__name__ == "object":
                kw["default_factory"] = type(getattr(blank, p.name))
            else:
                kw["default"] = p.default
        spec.append((p.name, "object", dataclasses.field(**kw)))
    ref = dataclasses.make_dataclass(cls.__name__, spec, slots=slots)
    ref.__qualname__ = cls.__qualname__
    return ref, [p.name for p in params]


def _value(name: str, i: int) -> object:
    return [i, name] if i % 3 == 0 else (f"{name}-{i}" if i % 3 == 1 else i * 7)


@pytest.mark.parametrize("cls,slots,hidden", CLASSES, ids=lambda c: getattr(c, "__name__", ""))
def test_a_plain_class_behaves_as_its_dataclass(cls, slots, hidden):
    ref, names = _reference(cls, slots, hidden)
    assert not dataclasses.is_dataclass(cls)
    shown = tuple(n for n in names if n not in hidden)
    assert cls.__match_args__ == cls._FIELDS == shown
    assert cls.__hash__ is None
    assert ("__slots__" in vars(cls)) == slots  # (Plain itself has empty slots)
    if slots:
        assert set(cls.__slots__) == set(names)
    values = {n: _value(n, i) for i, n in enumerate(names)}
    a, r = cls(**values), ref(**values)
    assert repr(a) == repr(r)
    assert a == cls(*values.values()) and not (a != cls(**values))
    other = dict(values, **{names[0]: "changed"})
    assert (a == cls(**other)) == (r == ref(**other))
    assert a.__eq__(r) is NotImplemented
    for n in hidden:  # left out of == (and repr) as the dataclass had it
        assert (a == cls(**dict(values, **{n: "x"}))) == (r == ref(**dict(values, **{n: "x"})))
    with pytest.raises(TypeError):
        hash(a)
    assert pickle.loads(pickle.dumps(a)) == a
    assert [getattr(a, n) for n in names] == list(values.values())
    assert hasattr(a, "__dict__") != slots
    # the defaults: a new list or dict per instance, as default_factory made them
    required = {n: v for n, v in values.items() if n in _required(cls)}
    b1, b2, rb = cls(**required), cls(**required), ref(**required)
    assert repr(b1) == repr(rb)
    for n in names:
        if n not in required and isinstance(getattr(b1, n), (list, dict)):
            assert getattr(b1, n) is not getattr(b2, n)
    assert cls(**dict(required, **{n: None for n in names if n not in required})) is not None


def _required(cls: type) -> set[str]:
    params = list(inspect.signature(cls.__init__).parameters.values())[1:]
    return {p.name for p in params if p.default is p.empty}


def test_data_model_to_dict_is_the_dataclass_form():
    g = dt.GlobalInfo(0, "i32", True, 5, False, None, ["sp"], "stack_pointer", "sp", 0.9, 2, 3)
    m = dt.DataModel([g], [], [(1, 2, "load", "data", 1024, 4)], 1024, 2048)
    d = m.to_dict()
    assert d["globals"] == [
        {
            "index": 0,
            "type": "i32",
            "mutable": True,
            "initial": 5,
            "imported": False,
            "import_name": None,
            "exports": ["sp"],
            "role": "stack_pointer",
            "name": "sp",
            "confidence": 0.9,
            "reads": 2,
            "writes": 3,
        }
    ]
    assert d["globals"][0]["exports"] is not g.exports
    assert d["refs"] == [
        {
            "func_index": 1,
            "offset": 2,
            "kind": "load",
            "target_kind": "data",
            "target": 1024,
            "width": 4,
        }
    ]
    assert (d["items"], d["data_start"], d["data_end"], d["truncated"]) == ([], 1024, 2048, False)


def test_the_reference_entry_is_a_frozen_dataclass_still():
    ref, names = _reference(RefEntry, True, ())
    ref = dataclasses.make_dataclass(
        "RefEntry",
        [(f.name, "object", dataclasses.field(default=f.default)) for f in dataclasses.fields(ref)],
        frozen=True,
        slots=True,
    )
    ref.__qualname__ = RefEntry.__qualname__
    values = {n: (f"{n}-{i}" if i < 7 else (f"{n}-x",)) for i, n in enumerate(names)}
    values["instr_count"] = 35
    values.update(loose="l", texts="t")
    a, r = RefEntry(**values), ref(**values)
    assert repr(a) == repr(r) and hash(a) == hash(r)
    assert a == RefEntry(*values.values()) and a != RefEntry(**dict(values, texts="u"))
    assert RefEntry.__match_args__ == tuple(names) and not hasattr(a, "__dict__")
    with pytest.raises(AttributeError):
        a.name = "other"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del a.name
    b = pickle.loads(pickle.dumps(a))
    assert b == a and hash(b) == hash(a)
    assert repr(RefEntry(*list(values.values())[:9])) == repr(ref(*list(values.values())[:9]))
