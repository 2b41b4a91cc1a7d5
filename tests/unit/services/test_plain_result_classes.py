"""The ingest's result, lineage and body comparison classes as plain classes (issue 30: no dataclass methods
generated and compiled at import on a small module's path) behave as the dataclasses they
replace: the same constructor (positions, defaults, a new list or dict each time), ``==``,
``hash``, ``repr``, ``__dict__`` order (``kbtool ingest --json``), frozen fields, pickling."""

from __future__ import annotations

import inspect
import pickle
from dataclasses import dataclass, field
from typing import Any

import pytest

from kbtool.services.diff.relocation import BodyCompare
from kbtool.services.ingest import IngestResult
from kbtool.services.lineage import HashProfile, Lineage, ModuleRows


@dataclass
class _IngestResult:
    version_id: int
    label: str
    imported: int
    defined: int
    exported: int
    instructions: int
    toolchain_version: str | None
    shared_memory: bool
    parent_version_id: int | None
    carried: int
    carried_by_method: dict[str, int] = field(default_factory=dict)
    body_changed: int = 0
    new_identities: int = 0
    names_written: int = 0
    names_refused: int = 0
    names_same: int = 0
    names_by_source: dict[str, int] = field(default_factory=dict)
    glue: dict[str, Any] | None = None
    diff_carry: dict[str, int] | None = None
    program: str | None = None
    new_program: bool = False
    lineage: dict[str, Any] | None = None
    lineage_text: str = ""
    go: dict[str, Any] | None = None
    matcher_notes: list[str] = field(default_factory=list)
    data: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class _HashProfile:
    pairs: tuple
    bodies: frozenset
    shapes: frozenset
    basis: str = "all"
    library: int = 0


@dataclass(frozen=True, slots=True)
class _ModuleRows:
    rows: tuple
    library_indices: tuple = ()


@dataclass(slots=True)
class _Lineage:
    program: str
    program_id: int | None
    parent_version_id: int | None
    overlap: float | None
    method: str
    new_program: bool
    candidates: list = field(default_factory=list)
    basis: str = "own"
    own_functions: int = 0
    library: str = ""
    near: dict | None = None


@dataclass
class _BodyCompare:
    same: bool
    relocated: bool = False
    reason: str = ""
    data_changes: list = field(default_factory=list)


_PAIRS = [
    (BodyCompare, _BodyCompare, (False,)),
    (BodyCompare, _BodyCompare, (True, True, "x", [("a", "b")])),
    (IngestResult, _IngestResult, (1, "v1", 2, 3, 1, 99, None, False, None, 0)),
    (HashProfile, _HashProfile, ((("a", "b"),), frozenset({"a"}), frozenset({"b"}))),
    (ModuleRows, _ModuleRows, ((("a", "b", 9, True),),)),
    (Lineage, _Lineage, ("zstd", 1, None, 0.5, "related", False)),
]


def _params(c: type) -> list[tuple[str, Any]]:
    out = []
    for p in list(inspect.signature(c.__init__).parameters.values())[1:]:
        d = p.default
        out.append((p.name, "new" if type(d) is object else d))  # a default factory's marker
    return out


def _ref_params(c: type) -> list[tuple[str, Any]]:
    out = []
    for p in list(inspect.signature(c.__init__).parameters.values())[1:]:
        d = p.default
        out.append((p.name, "new" if repr(d) == "<factory>" else d))
    return out


@pytest.mark.parametrize(("plain", "ref", "args"), _PAIRS)
def test_behaves_as_the_dataclass(plain, ref, args) -> None:
    assert _params(plain) == _ref_params(ref)
    a, b = plain(*args), ref(*args)
    assert repr(a) == repr(b).replace("_" + plain.__name__ + "(", plain.__name__ + "(", 1)
    assert a == plain(*args) and a != b and (a == b) is False
    assert plain.__match_args__ == ref.__match_args__
    names = [n for n, _ in _params(plain)]
    assert [getattr(a, n) for n in names] == [getattr(b, n) for n in names]
    if ref.__hash__ is None:
        assert plain.__hash__ is None
        with pytest.raises(TypeError):
            hash(a)
    else:
        assert hash(a) == hash(b)
    if hasattr(b, "__dict__"):
        assert list(a.__dict__) == list(b.__dict__)
    else:
        assert not hasattr(a, "__dict__")
    assert pickle.loads(pickle.dumps(a)) == a
    # a default factory: a new list or dict for each object; an explicit value kept as given
    for k, (n, d) in enumerate(_params(plain)):
        if d == "new" and k >= len(args):
            assert getattr(plain(*args), n) is not getattr(plain(*args), n)
            assert getattr(plain(*args, **{n: None}), n) is None


@pytest.mark.parametrize("plain", [HashProfile, ModuleRows])
def test_frozen(plain) -> None:
    obj = plain(*next(args for p, _, args in _PAIRS if p is plain))
    with pytest.raises(AttributeError, match="cannot assign to field 'library_indices'|cannot"):
        obj.library_indices = ()  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del obj.rows  # type: ignore[attr-defined]


def test_equal_with_nan_by_identity() -> None:
    """``==`` compares the fields as tuples (an object is equal to itself, NaN included)."""
    nan = float("nan")
    a = Lineage("p", None, None, nan, "first", True)
    b = _Lineage("p", None, None, nan, "first", True)
    assert (a == a) is (b == b) is True
    assert (a == Lineage("p", None, None, float("nan"), "first", True)) is False
