"""The kept module's field names without :mod:`dataclasses` (issue 30: plain model classes on
a small module's path): a class's fields are its ``__init__``'s positional parameters, the
names ``dataclasses.fields`` gives for a dataclass, so the parser stamp is the one the
``dataclasses.fields`` form wrote, and a plain class written in the same order keeps and
rebuilds the same way."""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path

from kbtool.services import code_module_kept as kept
from kbtool.wasm import model

_CLASSES = (*kept._SMALL.values(), model.DataSegment, model.CustomSection, model.Module)


def test_field_names_are_the_dataclass_fields() -> None:
    for c in _CLASSES:
        if dataclasses.is_dataclass(c):
            assert kept.field_names(c) == tuple(f.name for f in dataclasses.fields(c)), c
        else:  # a plain class: the names of what it stores
            stored = set(getattr(c, "__slots__", ())) | set(getattr(c, "__annotations__", {}))
            assert kept.field_names(c) and set(kept.field_names(c)) <= stored, c


def test_stamp_is_the_dataclass_fields_form() -> None:
    """The digest the ``dataclasses.fields`` form computed (while the model's classes are
    dataclasses): modules kept before this change are still read."""
    if not all(dataclasses.is_dataclass(c) for c in _CLASSES):
        return
    h = hashlib.sha256(b"kept module encoding %d" % kept.ENCODING)
    base = Path(model.__file__).parent
    for name in kept._PARSER:
        h.update((base / f"{name}.py").read_bytes())
    for c in _CLASSES:
        h.update(repr([f.name for f in dataclasses.fields(c)]).encode())
    assert kept.parser_stamp() == h.hexdigest()


class _Plain:
    __slots__ = ("a", "b")
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, a: int, b: list[int] | None = None) -> None:
        self.a = a
        self.b = b

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return (self.a, self.b) == (other.a, other.b)  # type: ignore[attr-defined]


@dataclasses.dataclass(slots=True)
class _Data:
    a: int
    b: list[int] | None = None


def test_plain_and_dataclass_alike(monkeypatch) -> None:
    assert kept.field_names(_Plain) == kept.field_names(_Data) == ("a", "b")
    for c in (_Plain, _Data):
        monkeypatch.setitem(kept._SMALL, c.__name__, c)
        obj = c(7, [1, 2])
        small = kept._small([obj, (obj,)])
        assert small == (
            "[",
            [("@", c.__name__, [7, [1, 2]]), ("(", [("@", c.__name__, [7, [1, 2]])])],
        )
        assert kept._unsmall(small) == [obj, (obj,)]
