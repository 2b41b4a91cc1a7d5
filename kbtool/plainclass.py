"""What ``@dataclass`` gives a class, as plain inherited methods (issue 30): a dataclass's
``__init__``, ``__repr__`` and ``__eq__`` are generated as source text and compiled at import,
on every small module's ingest (~1-4 M instructions a class). A subclass names its fields in
``_FIELDS`` (the order of its own explicit ``__init__``'s parameters) and gets:

- :class:`Plain`: ``==`` over the fields as a tuple (``NotImplemented`` for another class),
  no hash, ``repr`` ``Cls(a=1, b='x')``, ``__match_args__``: a ``@dataclass`` (eq, not
  frozen);
- :class:`FrozenPlain`: that, and ``hash`` of the fields' tuple, no assignment or deletion
  after ``__init__`` (which sets its fields with ``object.__setattr__``), pickled by its
  fields: a ``@dataclass(frozen=True)``.

A subclass that had ``slots=True`` sets ``__slots__ = _FIELDS``. Standard library only."""

from __future__ import annotations

from typing import Any


class Plain:
    """``@dataclass``'s ``==``, ``repr`` and ``__match_args__`` over ``_FIELDS``; unhashable."""

    __slots__ = ()
    _FIELDS: tuple[str, ...] = ()
    __hash__ = None  # type: ignore[assignment]

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        cls.__match_args__ = cls._FIELDS

    def _values(self) -> tuple:
        return tuple([getattr(self, f) for f in self._FIELDS])

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()  # type: ignore[attr-defined]

    def __repr__(self) -> str:
        inner = ", ".join([f"{f}={getattr(self, f)!r}" for f in self._FIELDS])
        return f"{type(self).__qualname__}({inner})"


class FrozenPlain(Plain):
    """``@dataclass(frozen=True)``: :class:`Plain` hashable by its fields, read-only."""

    __slots__ = ()

    def __hash__(self) -> int:
        return hash(self._values())

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}")

    def __reduce__(self) -> tuple[Any, tuple]:
        return (type(self), self._values())


def field_names(cls: type) -> tuple[str, ...]:
    """A record class's fields in its constructor's order, whether a dataclass or a plain
    class: its ``__init__``'s positional parameters (a dataclass's generated one gives
    ``dataclasses.fields``' names, without importing :mod:`dataclasses`)."""
    code = cls.__init__.__code__  # type: ignore[misc]
    return code.co_varnames[1 : code.co_argcount]


#: ``field(default_factory=...)``'s default in an explicit ``__init__``: the parameter's
#: default, replaced by a new list or dict when it is this object (an explicit None is kept)
NEW: Any = object()
