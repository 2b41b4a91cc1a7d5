"""The dataclass methods' code kept between runs (kbtool/startup.py, issue 30.4): a second
``kbtool ingest`` compiles none of them, classes made from the cache behave as dataclasses
made without it, and a cache file that is foreign, writable by others or damaged is ignored."""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kbtool import startup
from tests.support.paths import DEMO_WASM, ROOT

pytestmark = pytest.mark.skipif(
    sys.version_info[:2] != (3, 11), reason="the cache replaces CPython 3.11's _create_fn only"
)

SOURCE = """
from dataclasses import dataclass, field

@dataclass(frozen=True, slots=True)
class Point:
    x: int
    y: int = 0
    tags: tuple = ()

@dataclass(order=True)
class Box:
    name: str
    items: list = field(default_factory=list)
"""


def _make(profile_dir: Path | None) -> tuple[dict, int]:
    """The classes of SOURCE created in a new namespace, and the texts compiled meanwhile
    (with the cache of ``profile_dir``; without any cache when None)."""
    ns: dict = {"__name__": "cached_mod"}
    code = compile(SOURCE, "<test>", "exec", dont_inherit=True)  # (no postponed annotations)
    if profile_dir is None:
        exec(code, ns)  # noqa: S102 - test source
        return ns, 0
    os.environ["KBTOOL_STARTUP_CACHE"] = str(profile_dir)
    try:
        cache = startup.CompiledDataclassMethods("test").install()
        try:
            exec(code, ns)  # noqa: S102 - test source
            compiled = len(cache._new)
        finally:
            cache.uninstall()
    finally:
        del os.environ["KBTOOL_STARTUP_CACHE"]
    return ns, compiled


def _behaviour(ns: dict) -> list:
    p, box = ns["Point"], ns["Box"]
    out = [repr(p(1, 2)), p(1) == p(1, 0), hash(p(3)) == hash(p(3)), p.__slots__]
    with pytest.raises(dataclasses.FrozenInstanceError):
        p(1).x = 2  # type: ignore[misc]
    with pytest.raises(TypeError):
        p()  # type: ignore[call-arg]
    a, b = box("a"), box("b", [1])
    a.items.append(3)
    out += [repr(a), repr(b), a < b, box("a").items == [], sorted([b, a])[0].name]
    return out


def _codes(ns: dict) -> list:
    return [
        (name, fn.__code__.co_code, fn.__code__.co_consts, fn.__code__.co_names)
        for cls in (ns["Point"], ns["Box"])
        for name, fn in sorted(vars(cls).items())
        if callable(fn) and hasattr(fn, "__code__") and fn.__code__.co_filename == "<string>"
    ]


def test_second_creation_compiles_nothing_and_behaves_the_same(tmp_path: Path) -> None:
    plain, _ = _make(None)
    first, compiled_first = _make(tmp_path)
    second, compiled_second = _make(tmp_path)
    assert compiled_first > 5 and compiled_second == 0
    assert _behaviour(plain) == _behaviour(first) == _behaviour(second)
    assert _codes(plain) == _codes(second) and _codes(plain)
    assert dataclasses._create_fn is not None and "kbtool" not in dataclasses._create_fn.__module__


@pytest.mark.parametrize("damage", ["others_may_write", "garbage", "not_code"])
def test_damaged_or_unsafe_cache_is_ignored(tmp_path: Path, damage: str) -> None:
    _make(tmp_path)
    (path,) = tmp_path.glob("dataclass-fns-test-*.marshal")
    if damage == "others_may_write":
        path.chmod(0o666)
    elif damage == "garbage":
        path.write_bytes(b"\x00not marshal")
    else:
        import marshal

        path.write_bytes(marshal.dumps({"def x(): pass": "print('no code here')"}))
    ns, compiled = _make(tmp_path)
    assert compiled > 5  # nothing taken from that file
    assert _behaviour(ns) == _behaviour(_make(None)[0])


def test_switched_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KBTOOL_STARTUP_CACHE", "off")
    assert startup.cache_file("ingest") is None


def test_ingest_fills_the_cache_once(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "KBTOOL_STARTUP_CACHE": str(tmp_path / "c")}
    runs = []
    for n in (1, 2):
        r = subprocess.run(
            [sys.executable, "-m", "kbtool", "--db", str(tmp_path / f"kb{n}.db")]
            + ["ingest", str(DEMO_WASM)],
            capture_output=True,
            text=True,
            env=env,
            cwd=ROOT,
        )
        assert r.returncode == 0, r.stderr[-2000:]
        (path,) = (tmp_path / "c").glob("dataclass-fns-ingest-*.marshal")
        runs.append((re.sub(r" in [0-9.]+s:", ":", r.stdout), path.stat().st_mtime_ns))
    assert runs[0][0] == runs[1][0]  # the same summary
    assert runs[0][1] == runs[1][1]  # the second run compiled no new text: file untouched
