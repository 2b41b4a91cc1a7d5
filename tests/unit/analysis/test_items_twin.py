"""The data items' cutting (:func:`kbtool.analysis.datawalk.items.cut_items`) runs compiled
with the data walk (``kbtool.analysis._cdatawalk.items``) and gives exactly the pure
module's items; with the twin blocked the pure module cuts them."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from kbtool.analysis import datamodel, datawalk_active
from kbtool.analysis.dataitems import build_items, segments
from kbtool.analysis.datawalk import items as pure_items
from kbtool.wasm import analyze_module
from kbtool.wasm.datamap import passive_addresses
from tests.support.paths import CORPUS, ROOT

COMPILED = datawalk_active.load_compiled()
needs_twin = pytest.mark.skipif(
    COMPILED is None, reason=f"compiled data walk {datawalk_active.compiled_state()}"
)

MODULES = [
    "release/sql.js-1.12.0.sql-wasm.wasm",
    "release/onnxruntime-web-1.20.1.ort-wasm-simd-threaded.wasm",
]


def _inputs(rel: str):
    path = CORPUS / rel
    if not path.is_file():
        pytest.skip("corpus not present")
    data = path.read_bytes()
    a = analyze_module(data)
    passive = passive_addresses(data, a.module)
    model = datamodel.build_data_model(a, data)
    return a, passive, model


def _fields(items) -> list[tuple]:
    return [(i.address, i.size, i.kind, i.segment, i.text, i.targets) for i in items]


@needs_twin
def test_the_chosen_items_module_is_the_twins():
    assert datawalk_active.ITEMS.__name__ == "kbtool.analysis._cdatawalk.items"
    assert not str(datawalk_active.ITEMS.__file__).endswith(".py")


@needs_twin
@pytest.mark.parametrize("rel", MODULES)
def test_compiled_items_equal_the_pure_ones(rel):
    a, passive, model = _inputs(rel)
    segs = segments(a, passive)
    refs = model.ref_rows
    marks = COMPILED.ref_marks
    # a Go-style length and function-pointer marks too, on real addresses
    cuts, fptr, gostr = marks(refs)
    some = sorted(cuts)[:: max(1, len(cuts) // 50)]
    gostr.update({x: 5 for x in some[:10]})
    fptr.update(some[10:30])
    table = (0, 1 << 20)
    hi = max(b + len(d) for b, d, _ in segs)
    for tr, bss_hi in ((None, 0), (table, hi + 4096)):
        want = pure_items.cut_items(segs, set(cuts), set(fptr), dict(gostr), tr, bss_hi)
        got = datawalk_active.ITEMS.cut_items(segs, set(cuts), set(fptr), dict(gostr), tr, bss_hi)
        assert got[1] == want[1]
        assert _fields(got[0]) == _fields(want[0])
        kinds = {i.kind for i in got[0]}
        assert {"cstring", "numeric", "zero"} <= kinds


@needs_twin
def test_string_helpers_equal_the_pure_ones():
    mem = (
        b"hello world\0\0\0ab\0colour \x1b[31mred\x1b[0m\0\xff\xfe bad\0caf\xc3\xa9 ok\0"
        b"w\0i\0d\0e\0\0\0" + bytes(range(256)) + b"\0"
    )
    C = datawalk_active.ITEMS
    for k in range(len(mem)):
        assert C._cstring_at(mem, k) == pure_items._cstring_at(mem, k)
        assert C._cstring_len(mem, k) == pure_items._cstring_len(mem, k)
        assert C._string_start(mem, k) == pure_items._string_start(mem, k)
        assert C._utf16_at(mem, k) == pure_items._utf16_at(mem, k)
        assert C._utf8_text(mem[k : k + 9]) == pure_items._utf8_text(mem[k : k + 9])


@needs_twin
def test_labels_and_bisect_equal_the_pure_ones():
    """The compiled labelling gives the pure one's labels (a text's slug, a kind's prefix,
    a label taken twice suffixed with the address); the native bisect is ``bisect_left``."""
    from bisect import bisect_left

    from kbtool.analysis.datatypes import DataItem

    C = datawalk_active.ITEMS
    texts = ["Hello, World!", "hello world", "", "--x--", "\u00e9t\u00e9 2024", "a" * 80, "!!"]
    kinds = ["cstring", "utf16", "gostring", "zero", "bss", "pointer_table", "funcptr_table"]
    kinds += ["numeric"]

    def make():
        return [
            DataItem(0x400 + 8 * n, 4, kind, 0, text if kind in ("cstring", "utf16") else None)
            for n, (kind, text) in enumerate((k, t) for t in texts for k in kinds)
        ]

    got, want = make(), make()
    C.label_items(got)
    pure_items.label_items(want)
    labels = [i.label for i in got]
    assert labels == [i.label for i in want]
    assert labels[:3] == ["s_hello_world", "s_hello_world_408", "data_410"]  # (taken twice)
    assert all(C._slug(t) == pure_items._slug(t) for t in texts)
    ordered = [1, 3, 3, 7, 100, 1 << 40]
    for x in (-1, 0, 1, 2, 3, 4, 7, 8, 100, 101, 1 << 40, 1 << 41):
        assert C._at_least(ordered, x) == bisect_left(ordered, x)
        assert pure_items._at_least(ordered, x) == bisect_left(ordered, x)


def test_blocked_twin_cuts_with_the_pure_module():
    """``KBTOOL_DATASCAN=pure``: the pure scan and the pure items module, same items."""
    path = CORPUS / "release" / "sql.js-1.12.0.sql-wasm.wasm"
    if not path.is_file():
        pytest.skip("corpus not present")
    code = (
        "import sys, hashlib\n"
        "from kbtool.analysis import datawalk_active, datamodel\n"
        "from kbtool.wasm import analyze_module\n"
        "data = open(sys.argv[1], 'rb').read()\n"
        "m = datamodel.build_data_model(analyze_module(data), data)\n"
        "h = hashlib.sha256(repr([(i.address, i.size, i.kind, i.text, i.label, i.targets)"
        " for i in m.items]).encode()).hexdigest()\n"
        "print(datawalk_active.PATH, datawalk_active.ITEMS.__name__, len(m.items), h)\n"
    )
    out = []
    for mode in ("pure", ""):
        env = {**os.environ, "KBTOOL_DATASCAN": mode}
        p = subprocess.run(
            [sys.executable, "-c", code, str(path)],
            capture_output=True,
            text=True,
            env=env,
            cwd=ROOT,
            timeout=120,
        )
        assert p.returncode == 0, p.stderr
        out.append(p.stdout.split())
    assert out[0][:2] == ["pure", "kbtool.analysis.datawalk.items"]
    assert int(out[0][2]) > 1000
    assert out[0][2:] == out[1][2:]


def test_build_items_without_segments_is_empty():
    path = CORPUS / "release" / "sql.js-1.12.0.sql-wasm.wasm"
    if not path.is_file():
        pytest.skip("corpus not present")
    a = analyze_module(path.read_bytes())
    a.module.data_segments = []
    assert build_items(a, [], None, 0, {}) == ([], False)


@needs_twin
def test_item_rows_equal_the_pure_ones_and_the_dict_form():
    """The stored rows (data ids, labels, targets JSON) come out the same compiled, pure,
    and as the dicts the store also takes (each field as the dict path writes it)."""
    import hashlib

    import orjson

    from kbtool.analysis.dataitems import memory_image, read_memory

    a, passive, model = _inputs(MODULES[0])
    model.items[3].targets = [1, 2, 70000]
    base, image = memory_image(a, passive=passive)

    def mem(x, n):
        return read_memory(a, x, n, passive)

    got = datawalk_active.ITEMS.item_rows(model.items, image, base, mem)
    assert got == pure_items.item_rows(model.items, image, base, mem)
    no_image = pure_items.item_rows(model.items, b"", 0, mem)  # no image: read per item
    assert datawalk_active.ITEMS.item_rows(model.items, b"", 0, mem) == no_image
    seen: dict[str, int] = {}
    for it, row in zip(model.items, got, strict=True):
        n = min(it.size, 1 << 16)
        raw = image[it.address - base : it.address - base + n] or b""
        h = hashlib.blake2b(it.kind.encode() + b"\0" + raw, digest_size=8).hexdigest()
        n = seen.get(h, 0)
        seen[h] = n + 1
        assert row == (
            it.address,
            it.size,
            it.kind,
            it.segment,
            it.text,
            it.label or f"data_{it.address:x}",
            f"d:{h}" if n == 0 else f"d:{h}#{n}",
            it.refs,
            orjson.dumps(it.targets).decode() if it.targets else "[]",
        )
    assert len(seen) < len(got)  # some duplicates numbered


@needs_twin
def test_item_rows_put_the_given_null_where_an_item_has_no_text():
    """``null`` (ingest passes the store's NULL) stands for a missing text, that very object,
    compiled and pure; every other field is the row with None there."""
    from kbtool.analysis.dataitems import memory_image, read_memory

    a, passive, model = _inputs(MODULES[0])
    base, image = memory_image(a, passive=passive)

    def mem(x, n):
        return read_memory(a, x, n, passive)

    null = object()
    plain = pure_items.item_rows(model.items, image, base, mem)
    assert any(r[4] is None for r in plain) and any(r[4] is not None for r in plain)
    for impl in (datawalk_active.ITEMS, pure_items):
        rows = impl.item_rows(model.items, image, base, mem, null)
        assert len(rows) == len(plain)
        for r, p in zip(rows, plain, strict=True):
            assert (r[4] is null) == (p[4] is None)
            assert r[:4] + (None if r[4] is null else r[4],) + r[5:] == p


def _unique_labels_as_before(items) -> None:
    """The data labels' last pass as ``datalabels`` ran it (interpreted), the oracle."""
    seen: set[str] = set()
    for it in items:
        label = it.label or f"data_{it.address:x}"
        if label in seen:
            label = f"{label}_{it.address:x}"
        seen.add(label)
        it.label = label


@pytest.mark.parametrize(
    "side", [pure_items] + ([COMPILED.items] if COMPILED is not None else []), ids=str
)
def test_unique_labels_as_the_interpreted_pass(side):
    """Labels missing, empty, taken once, twice and by a suffixed form already (``a`` at
    0x10 then ``a_10``), addresses past 2**62 (the hex by ``hex``): the labels the
    interpreted pass gave, on the item class of that side."""
    labels = [None, "", "a", "a", "a_10", "b", None, "a", "data_20", None, "big", "big"]
    addrs = [0x10, 0x20, 0x30, 0x10, 0x40, 0x50, 0x20, 0x60, 0x70, 0x80, 2**63, 2**63 + 5]

    def made():
        out = []
        for lab, a in zip(labels, addrs, strict=True):
            it = side.DataItem(address=a, size=4, kind="numeric", segment=0)
            it.label = lab
            out.append(it)
        return out

    want, got = made(), made()
    _unique_labels_as_before(want)
    side.unique_labels(got)
    assert [it.label for it in got] == [it.label for it in want]
    assert len({it.label for it in got}) == len(got)


def _string_cases() -> list[bytes]:
    """Memory images whose strings end, break and run out every way the item cuts meet."""
    import random

    rng = random.Random(30)
    parts = [b"abc", b"x\ty\n", b"\x1b[0m", b"\x07", b"\x01", b"\x7f", b"\0", b"caf\xc3\xa9",
             b"\xe2\x82\xac", b"\xc3", b"\xff", b"\x80", b" ", b"\r\n", b"\x0b\x0c"]  # fmt: skip
    out = [b"", b"\0", b"a", b"abc", b"a" * 4095 + b"\0", b"a" * 4096 + b"\0", b"a" * 5000]
    out += [b"\x1b\x07ab\0", b"\x1bab\x07cd\0", b"ab\x01\xc3\xa9\0", b"ab\x7f", b"\x07" * 5]
    for _ in range(400):
        out.append(b"".join(rng.choice(parts) for _ in range(rng.randrange(1, 12))))
    return out


@needs_twin
def test_compiled_cstring_seen_equals_the_pure_one():
    # the compiled one byte loop (NUL, classes, rare count; a control refused at once; past
    # ASCII handed over) against the pure module's find and _c_text, at every start
    for mem in _string_cases():
        for k in range(len(mem) + 1):
            want: dict = {}
            got: dict = {}
            n = pure_items._cstring_seen(mem, k, want)
            assert datawalk_active.ITEMS._cstring_seen(mem, k, got) == n, (mem, k)
            assert got == want, (mem, k)
