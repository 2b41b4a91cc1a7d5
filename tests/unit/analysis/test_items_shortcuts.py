"""The data items' shortcuts give what the long way gives (session 17 D): a label's slug by a
byte table equals the regex ``[^0-9A-Za-z]+`` -> ``_``; a C string's text refused on its
first byte equals the full decode and checks (also before its NUL is looked for), the
zero checks by a byte loop equal ``strip``; a list kept when it already strictly
increases equals ``sorted(set(...))``; the compiled reference count on native arrays
equals the pure count (targets below, at and inside items, unordered items). Each holds for
the pure module and the compiled twin when it is built."""

from __future__ import annotations

import random
import re

import pytest

from kbtool.analysis import datamodel, datawalk_active
from kbtool.analysis.datatypes import MAX_LABEL, DataItem
from kbtool.analysis.datawalk import items as pure_items

COMPILED = datawalk_active.load_compiled()
SIDES = [pure_items] + ([datawalk_active.ITEMS] if COMPILED is not None else [])
_NOT_SLUG = re.compile(r"[^0-9A-Za-z]+")
_CONTROLS = "\t\n\r\x1b\x07\x08\x0b\x0c"


def _regex_slug(text: str) -> str:
    """The slug as it was made before the byte table (the definition)."""
    return _NOT_SLUG.sub("_", text).strip("_").lower()[:MAX_LABEL].rstrip("_")


def _full_c_text(raw: bytes) -> str | None:
    """``_c_text`` without the first-byte refusal: decode, then the printable checks."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if all(c.isprintable() or c in _CONTROLS for c in text):
        rare = sum(1 for c in text if c in _CONTROLS[3:])
        return None if rare * 4 > len(text) else text
    return None


@pytest.mark.parametrize("side", SIDES, ids=lambda m: m.__name__)
def test_slug_is_the_regex_slug(side):
    rng = random.Random(17)
    alphabet = [chr(c) for c in range(128)] + list("\u00e9\u00df\u0130\u212a\ufb00\u2028\u65e5_ ")
    texts = ["Hello, World!", "", "__", "a" * 80, "--x--", "\u00e9t\u00e9 2024", "ÄBC-def"]
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60))) for _ in range(5000)]
    texts += ["a" + chr(c) + "B" + chr(c) for c in range(0, 0x3000, 7)]
    texts += ["x" * 31 + "-" + "y" * 5, "x" * 30 + "--yy", "a\ud800b"]  # the cut, a lone surrogate
    for t in texts:
        assert side._slug(t) == _regex_slug(t), t


@pytest.mark.parametrize("side", SIDES, ids=lambda m: m.__name__)
def test_c_text_refusing_on_the_first_byte_is_the_full_check(side):
    tails = [b"", b"abc", b"hello world", b"\xc3\xa9t\xc3\xa9", b"\x1b[0m", b"\xff", b"\x80a"]
    tails += [b"\x01\x02\x03"]
    for first in range(1, 256):
        for tail in tails:
            raw = bytes([first]) + tail
            assert side._c_text(raw) == _full_c_text(raw), raw
    assert side._c_text(b"\x1b\x1b\x1bab") is None and side._c_text(b"ab\x1bcd") == "ab\x1bcd"


def _long_cstring_len(mem: bytes, k: int) -> int:
    """A C string's length at ``mem[k]`` the long way: its NUL, then the full check."""
    z = mem.find(b"\0", k, k + 4096)
    if z < 0 or z - k < 1 or _full_c_text(mem[k:z]) is None:
        return -1
    return z - k


@pytest.mark.parametrize("side", SIDES, ids=lambda m: m.__name__)
def test_string_and_zero_checks_refusing_early_are_the_long_checks(side):
    """A position whose first byte no C string starts with is refused before its NUL is
    looked for; the zero checks loop over the bytes instead of stripping a copy: the same
    answers as the long way (``strip``), at every position of mixed memory."""
    rng = random.Random(11)
    pieces = [b"\0" * 9, b"hello\0", b"\xc3\xa9t\xc3\xa9\0", b"\x1b[0m\0", b"\xff\x80", b"ab"]
    pieces += [bytes([c]) for c in range(256)]
    mems = [b"", b"\0", b"abc", b"abc\0\0\0", b"\0\0\x01"]
    mems += [b"".join(rng.choice(pieces) for _ in range(rng.randint(1, 40))) for _ in range(300)]
    for mem in mems:
        for k in range(len(mem) + 2):
            want = _long_cstring_len(mem, k)
            seen: dict[int, tuple[int, str | None]] = {}
            assert side._cstring_len(mem, k) == want, (mem, k)
            assert side._cstring_seen(mem, k, seen) == want, (mem, k)
            text = _full_c_text(mem[k : k + want]) if want >= 0 else None
            assert seen[k] == (want, text), (mem, k)
            assert side._zeros_from(mem, k) == (not mem[k:].strip(b"\0")), (mem, k)


@pytest.mark.parametrize("side", SIDES, ids=lambda m: m.__name__)
def test_unique_sorted_is_sorted_set(side):
    rng = random.Random(3)
    cases = [[], [5], [1, 2, 3], [1, 1, 2], [3, 2, 1], [2, 2], [1, 5, 4, 9]]
    cases += [[rng.randint(0, 20) for _ in range(rng.randint(0, 12))] for _ in range(300)]
    for xs in cases:
        assert side._unique_sorted(list(xs)) == sorted(set(xs))


@pytest.mark.skipif(COMPILED is None, reason="compiled data walk not built")
@pytest.mark.parametrize("ordered", [True, False])
@pytest.mark.parametrize("shift", [0, (1 << 62) - 9004, (1 << 62) - 5000, 1 << 62, 1 << 63])
def test_compiled_count_on_native_arrays_equals_the_pure_count(ordered, shift, monkeypatch):
    """``shift``: addresses near or past the native ints the compiled count bisects on
    (a wasm64 module's): those past them take the plain path, the same count; targets
    past them among addresses that fit, too (the last item ending at the largest native
    int, items on both sides of it)."""
    rng = random.Random(5)
    addrs = [a + shift for a in sorted(rng.sample(range(2048, 9000, 4), 120))]
    kinds = ["cstring", "numeric", "utf16", "zero", "gostring", "pointer_table"]
    if not ordered:  # (overlapping segments: the items' addresses need not increase)
        addrs[40], addrs[41] = addrs[41], addrs[40]
    pool = addrs + [a + 2 for a in addrs] + [0, 5, 2047, 100_000, 1 << 64, -(1 << 63)]
    pool += [(1 << 62) - 1, 1 << 62, -(1 << 62), -(1 << 62) - 1]  # (the native bounds)

    def make():
        return [DataItem(a, 6, kinds[i % len(kinds)], 0, "text") for i, a in enumerate(addrs)]

    refs = []
    for n in range(4000):  # the same targets many times, by load, store, addr
        t = rng.choice(pool)
        refs.append((n % 50, n, rng.choice(["load", "store", "addr"]), "data", t, 4))
        if n % 7 == 0:
            refs.append((n % 50, n, rng.choice(["read", "write"]), "global", n % 5, 0))
    starts = list(addrs)
    got_items, want_items = make(), make()
    got_r: dict[int, set[int]] = {}
    got_w: dict[int, set[int]] = {}
    got = COMPILED.count_item_refs(refs, got_items, starts, got_r, got_w)
    monkeypatch.setattr(datawalk_active, "IMPL", None)  # the pure loop
    want_r: dict[int, set[int]] = {}
    want_w: dict[int, set[int]] = {}
    want = datamodel._count_refs(refs, want_items, starts, want_r, want_w)
    assert got == want and (got_r, got_w) == (want_r, want_w)
    assert [i.refs for i in got_items] == [i.refs for i in want_items]
    assert sum(i.refs for i in got_items) > 1000 and len(got) < len(refs)  # (some dropped)


@pytest.mark.skipif(COMPILED is None, reason="compiled data walk not built")
def test_compiled_count_through_targets_sharing_a_cache_slot(monkeypatch):
    """The compiled count remembers each target's item in a direct-mapped slot: targets
    that take the same slot, alternating, in different items and in none, count as the
    pure count does."""
    from kbtool.analysis.datawalk import refcount

    mask = refcount._SLOTS - 1

    def slot(t: int) -> int:
        return (t ^ (t >> 13) ^ (t >> 26)) & mask

    addrs = list(range(4096, 4096 + 64 * 2000, 64))
    a = addrs[3] + 2
    same = [t for t in range(4096, addrs[-1] + 600) if slot(t) == slot(a)][:6]
    assert len(same) >= 3 and a in same
    refs = []
    for n in range(60):
        t = same[n % len(same)] if n % 5 else addrs[-1] + 500  # (past the last item too)
        refs.append((n % 3, n, ["load", "addr"][n % 2], "data", t, 4))

    def make():
        return [DataItem(x, 6, "numeric", 0, "text") for x in addrs]

    got_items, want_items = make(), make()
    got = COMPILED.count_item_refs(refs, got_items, list(addrs), {}, {})
    monkeypatch.setattr(datawalk_active, "IMPL", None)
    want = datamodel._count_refs(refs, want_items, list(addrs), {}, {})
    assert got == want
    assert [i.refs for i in got_items] == [i.refs for i in want_items]
    assert sum(1 for i in got_items if i.refs) >= 3
