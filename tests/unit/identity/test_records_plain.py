"""``FuncRecord`` and ``Match`` as plain classes (no dataclass made at import) behave as the
``@dataclass(slots=True)`` / ``@dataclass(frozen=True, slots=True)`` they were: fields and
defaults in order, ``==``, hash, repr, pickling, read-only ``Match``, ``replace``."""

from __future__ import annotations

import dataclasses
import pickle

import pytest

from kbtool.identity.records import FuncRecord, Match, replace
from kbtool.plainclass import field_names


@dataclasses.dataclass(slots=True)
class _Rec:  # (session 33's FuncRecord)
    index: int
    stable_id: str | None = None
    imported: bool = False
    import_name: str | None = None
    type_sig: str = ""
    body_hash: str | None = None
    shape_hash: str | None = None
    names: tuple[str, ...] = ()
    calls: tuple[int, ...] = ()
    strings: tuple[str, ...] = ()
    consts: tuple[int, ...] = ()
    ops: bytes = b""
    instr_count: int = 0
    body_size: int = 0
    loops: int = 0
    call_indirect: int = 0
    table_slots: tuple[int, ...] = ()


@dataclasses.dataclass(frozen=True, slots=True)
class _Match:  # (session 33's Match)
    old_index: int
    new_index: int
    score: float
    method: str
    review: bool


def _values(obj) -> tuple:
    return tuple(getattr(obj, f) for f in field_names(type(obj)))


def test_fields_and_defaults_as_the_dataclasses() -> None:
    assert field_names(FuncRecord) == tuple(f.name for f in dataclasses.fields(_Rec))
    assert field_names(Match) == tuple(f.name for f in dataclasses.fields(_Match))
    assert FuncRecord._FIELDS == field_names(FuncRecord)  # noqa: SLF001
    assert _values(FuncRecord(7)) == dataclasses.astuple(_Rec(7))
    args = (7, "sid", False, None, "(i32)->i32", "b", "s", ("f",), (1, 2), ("x",), (3,), b"\1")
    r, ref = FuncRecord(*args, 9, 10, 1, 2, (4,)), _Rec(*args, 9, 10, 1, 2, (4,))
    assert _values(r) == dataclasses.astuple(ref)
    assert repr(r) == repr(ref).replace("_Rec(", "FuncRecord(")
    assert r.__match_args__ == ref.__match_args__
    assert not hasattr(r, "__dict__")


def test_equality_hash_pickle() -> None:
    a, b = FuncRecord(1, type_sig="t"), FuncRecord(1, type_sig="t")
    assert a == b and a != FuncRecord(2, type_sig="t") and a != _Rec(1, type_sig="t")
    with pytest.raises(TypeError):
        hash(a)
    a.stable_id = "x"  # (mutable: ingest gives the new records their ids)
    assert a != b and pickle.loads(pickle.dumps(a)) == a
    m, ref = Match(1, 2, 0.5, "body", False), _Match(1, 2, 0.5, "body", False)
    assert m == Match(1, 2, 0.5, "body", False) and hash(m) == hash(ref)
    assert repr(m) == repr(ref).replace("_Match(", "Match(")
    assert pickle.loads(pickle.dumps(m)) == m
    with pytest.raises(AttributeError):
        m.score = 1.0  # type: ignore[misc]


def test_replace() -> None:
    r = FuncRecord(3, calls=(1,), instr_count=5)
    assert replace(r, instr_count=6) == FuncRecord(3, calls=(1,), instr_count=6)
    assert replace(r) == r and replace(r) is not r
    assert replace(Match(1, 2, 0.5, "body", False), review=True).review is True
    with pytest.raises(TypeError):
        replace(r, nothing=1)


@dataclasses.dataclass(slots=True)
class _Pair:  # (session 33's pairing.Pair)
    old_index: int
    new_index: int
    score: float
    method: str
    review: bool
    identity: bool


def test_pairing_classes_as_the_dataclasses() -> None:
    from kbtool.identity.pairing import Pair, Pairing

    p, ref = Pair(1, 2, 0.5, "body", False, True), _Pair(1, 2, 0.5, "body", False, True)
    assert field_names(Pair) == tuple(f.name for f in dataclasses.fields(_Pair))
    assert repr(p) == repr(ref).replace("_Pair(", "Pair(") and not hasattr(p, "__dict__")
    assert p == Pair(1, 2, 0.5, "body", False, True) and p != Pair(1, 2, 0.5, "body", True, True)
    p.review = True  # (mutable: the review checks flag pairs)
    assert p.review is True
    a, b = Pairing(1, 2, {}, {}, {}, {}), Pairing(1, 2, {}, {}, {}, {})
    assert a == b and a.by_new is not b.by_new and a.by_old is not a.by_new
    a.by_new[2] = p
    assert a != b and Pairing(1, 2, {}, {}, {}, {}, {2: p}) == a
