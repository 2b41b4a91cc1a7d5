"""Checking a value against a TypedDict annotation, deeply: required keys present, no
undeclared key, nested TypedDicts, named records (NamedTuple), lists, dict values, tuples,
optionals, ``Literal`` values and unions of TypedDicts told apart by their ``kind`` (the
thread facts)."""

from __future__ import annotations

import types
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints, is_typeddict

_SCALARS: dict[Any, tuple[type, ...]] = {
    int: (int,),
    float: (int, float),
    str: (str,),
    bool: (bool,),
}


def check_shape(
    value: Any,
    tp: Any,
    where: str,
    seen: list[str],
    *,
    scalars: bool = False,
    keys: dict[str, set[str]] | None = None,
) -> None:
    """Assert ``value`` has the shape of ``tp``; record every TypedDict checked in ``seen``.
    ``scalars``: also check ``int``/``float``/``str``/``bool`` values (a bool is no int);
    ``keys``: collects the keys met per TypedDict name (which optional keys really occur)."""

    def check(value: Any, tp: Any, where: str) -> None:
        origin = get_origin(tp)
        if scalars and tp in _SCALARS:
            ok = isinstance(value, _SCALARS[tp]) and (tp is bool or not isinstance(value, bool))
            assert ok, f"{where}: {value!r} is not a {tp.__name__}"
        elif origin in (Union, types.UnionType):
            if value is None and type(None) in get_args(tp):
                return
            arms = [a for a in get_args(tp) if a is not type(None)]
            if len(arms) > 1 and not all(is_typeddict(a) for a in arms):  # ``str | int``
                fits = []
                for a in arms:
                    try:
                        check(value, a, where)
                        fits.append(a)
                    except AssertionError:
                        pass
                assert fits, f"{where}: {value!r} is none of {tp}"
                return
            if len(arms) > 1:  # TypedDicts told apart by their ``kind`` (thread facts)
                assert isinstance(value, dict), f"{where}: {type(value).__name__}, not a dict"
                kind = value.get("kind")
                arms = [a for a in arms if kind in get_args(get_type_hints(a)["kind"])]
                assert arms, f"{where}: kind {kind!r} is none of {tp}"
            assert len(arms) == 1, f"{where}: ambiguous union {tp}"
            check(value, arms[0], where)
        elif origin is Literal:
            assert value in get_args(tp), f"{where}: {value!r} is none of {get_args(tp)}"
        elif is_typeddict(tp):
            assert isinstance(value, dict), f"{where}: {type(value).__name__}, not a {tp.__name__}"
            present = set(value)
            missing = tp.__required_keys__ - present
            extra = present - tp.__required_keys__ - tp.__optional_keys__
            assert not missing, f"{where}: {tp.__name__} lacks required keys {sorted(missing)}"
            assert not extra, f"{where}: {tp.__name__} has undeclared keys {sorted(extra)}"
            seen.append(tp.__name__)
            if keys is not None:
                keys.setdefault(tp.__name__, set()).update(present)
            hints = get_type_hints(tp)
            for k in present:
                check(value[k], hints[k], f"{where}.{k}")
        elif isinstance(tp, type) and issubclass(tp, tuple) and hasattr(tp, "_fields"):
            assert isinstance(value, tp), f"{where}: {type(value).__name__}, not a {tp.__name__}"
            seen.append(tp.__name__)
            hints = get_type_hints(tp)
            for k in tp._fields:
                check(getattr(value, k), hints[k], f"{where}.{k}")
        elif origin is list:
            assert isinstance(value, list), f"{where}: {type(value).__name__}, not a list"
            (item,) = get_args(tp)
            for i, v in enumerate(value):
                check(v, item, f"{where}[{i}]")
        elif origin is dict:
            assert isinstance(value, dict), f"{where}: {type(value).__name__}, not a dict"
            _k, val = get_args(tp)
            for k, v in value.items():
                check(v, val, f"{where}[{k!r}]")
        elif origin is tuple:
            assert isinstance(value, tuple), f"{where}: {type(value).__name__}, not a tuple"
            args = get_args(tp)
            if len(args) == 2 and args[1] is Ellipsis:
                return
            assert len(value) == len(args), f"{where}: {len(value)} items, not {len(args)}"
            for i, (v, a) in enumerate(zip(value, args, strict=True)):
                check(v, a, f"{where}[{i}]")

    check(value, tp, where)


def declared_keys(tp: Any) -> set[str]:
    """Every key a TypedDict declares, required or not."""
    return set(tp.__required_keys__ | tp.__optional_keys__)


def shaped(fn: Any, *args: Any, **kwargs: Any) -> tuple[Any, list[str]]:
    """Call a query and check its result against its return annotation."""
    value = fn(*args, **kwargs)
    seen: list[str] = []
    check_shape(value, get_type_hints(fn)["return"], fn.__name__, seen)
    return value, seen
