"""The data walk's native shortcuts give what the long way gives (session 22 D): the LEB
decoders' native first eight bytes and Python's past them equal a plain decode for every
length up to ten bytes and both signs; a string start found through the bounds loop's
record (``seen``) is the one found without it, and leaves the record the bounds loop would
make; the label's slug by the code-point loop equals the regex (run pure too); an item's
data id read back for a content seen before is the digest of that content. Each holds
for the pure modules and the compiled twin when it is built."""

from __future__ import annotations

import random
import re
from hashlib import blake2b

import pytest

from kbtool.analysis import datawalk_active
from kbtool.analysis.datatypes import MAX_LABEL, DataItem
from kbtool.analysis.datawalk import items as pure_items
from testkit.wasmbuild import sleb, uleb

PURE_WALK = __import__("kbtool.analysis.datawalk", fromlist=["_uleb"])
COMPILED = datawalk_active.load_compiled()
WALKS = [PURE_WALK] + ([COMPILED] if COMPILED is not None else [])
ITEMS = [pure_items] + ([datawalk_active.ITEMS] if COMPILED is not None else [])


def _padded(enc: bytes, extra: int, signed_neg: bool) -> bytes:
    """``enc`` with ``extra`` redundant continuation bytes (a valid longer encoding)."""
    if not extra:
        return enc
    fill = 0x7F if signed_neg else 0x00
    body = bytearray(enc)
    body[-1] |= 0x80
    body += bytes([fill | 0x80] * (extra - 1) + [fill])
    return bytes(body)


@pytest.mark.parametrize("side", WALKS, ids=lambda m: m.__name__)
def test_leb_decoders_equal_a_plain_decode_at_every_length(side):
    rng = random.Random(22)
    values = [0, 1, 63, 64, 127, 128, (1 << 32) - 1, (1 << 56) - 1, 1 << 56, (1 << 63) - 1]
    values += [rng.getrandbits(rng.randint(1, 64)) for _ in range(400)]
    for v in values:
        for extra in range(0, 4):
            enc = _padded(uleb(v), extra, False)
            if len(enc) > 10:
                continue
            data = b"\xaa" + enc + b"\x01"
            assert side._uleb(data, 1) == (v, 1 + len(enc)), (v, enc)
    svalues = [0, -1, 63, -64, 64, -65, (1 << 55) - 1, -(1 << 55), 1 << 55, -(1 << 63)]
    svalues += [(1 << 63) - 1] + [rng.randint(-(1 << 63), (1 << 63) - 1) for _ in range(400)]
    for v in svalues:
        for extra in range(0, 4):
            enc = _padded(sleb(v), extra, v < 0)
            if len(enc) > 10:
                continue
            data = b"\xaa" + enc + b"\x01"
            assert side._sleb(data, 1) == (v, 1 + len(enc)), (v, enc)
    assert side._sleb(b"\xff\xff\xff\xff\xff\xff\xff\xff\x7f", 0) == (-1, 9)  # (9 bytes)
    with pytest.raises(IndexError):
        side._uleb(b"\x80" * 12, 0)


@pytest.mark.parametrize("side", ITEMS, ids=lambda m: m.__name__)
def test_string_start_through_the_record_is_the_one_without(side):
    rng = random.Random(5)
    pieces = [b"\0", b"hello\0", b"directory\0", b"\xc3\xa9t\xc3\xa9\0", b"ab", b"\x1b[0m\0"]
    pieces += [b"%s: %d\n\0", b"\xff\x80", b"xyz", b"\x01\x02"]
    mems = [b"".join(rng.choice(pieces) for _ in range(rng.randint(1, 30))) for _ in range(200)]
    for mem in mems:
        seen: dict[int, tuple[int, str | None]] = {}
        for k in rng.sample(range(len(mem)), min(len(mem), 25)):
            want = side._string_start(mem, k)
            assert side._string_start(mem, k, seen) == want, (mem, k)
        for q, (n, text) in seen.items():  # each entry what the bounds loop records there
            fresh: dict[int, tuple[int, str | None]] = {}
            assert side._cstring_seen(mem, q, fresh) == n and fresh[q] == (n, text)
            assert side._cstring_known(mem, q, seen) == n


_NOT_SLUG = re.compile(r"[^0-9A-Za-z]+")


@pytest.mark.parametrize("side", ITEMS, ids=lambda m: m.__name__)
@pytest.mark.parametrize("loop", [True, False], ids=["loop", "bytes"])
def test_slug_by_either_way_is_the_regex_slug(side, loop, monkeypatch):
    if loop and side is pure_items:
        if pure_items.StringWriter is None:
            pytest.skip("librt not installed: the pure slug has no loop")
        monkeypatch.setattr(pure_items, "_COMPILED", True)  # the compiled way, run pure
    rng = random.Random(9)
    alphabet = [chr(c) for c in range(128)] + list("\u00e9\u00df\u212a\ufb00\u65e5\ud800_ ")
    texts = ["", "_", "a" * 80, "x" * 31 + "-y", "x" * 30 + "--yy", "x" * 32 + "-", "-a-"]
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 70))) for _ in range(3000)]
    for t in texts:
        want = _NOT_SLUG.sub("_", t).strip("_").lower()[:MAX_LABEL].rstrip("_")
        got = side._slug(t) if loop else side._slug_bytes(t)
        assert got == want, t
    if side is not pure_items:
        assert side._COMPILED is True


@pytest.mark.parametrize("side", ITEMS, ids=lambda m: m.__name__)
def test_repeated_contents_keep_their_digest_and_count(side):
    image = b"abc\0" * 4 + bytes(64) + b"\x01\x02\x03\x04" * 4
    items = [DataItem(0x100 + 4 * i, 4, "cstring", 0, "abc") for i in range(4)]
    items += [DataItem(0x110, 32, "zero", 0), DataItem(0x130, 32, "zero", 0)]
    items += [DataItem(0x150, 4, "numeric", 0), DataItem(0x150, 4, "pointer_table", 0)]
    items += [DataItem(0x200, 8, "bss", -1), DataItem(0x208, 8, "bss", -1)]
    rows = side.item_rows(items, image, 0x100, lambda a, n: None)
    ids = [r[6] for r in rows]

    def digest(kind: str, raw: bytes) -> str:
        return "d:" + blake2b(kind.encode() + b"\0" + raw, digest_size=8).hexdigest()

    assert ids[:4] == [digest("cstring", b"abc\0")] + [
        digest("cstring", b"abc\0") + f"#{k}" for k in (1, 2, 3)
    ]
    assert ids[4:6] == [digest("zero", bytes(32)), digest("zero", bytes(32)) + "#1"]
    assert ids[6] == digest("numeric", b"\x01\x02\x03\x04") != ids[7]
    assert ids[7] == digest("pointer_table", b"\x01\x02\x03\x04")
    assert ids[8:] == [digest("bss", b""), digest("bss", b"") + "#1"]
    # through ``memory`` (no image), and no content at all (None): the same digests
    rows2 = side.item_rows(items[:2], b"", 0, lambda a, n: b"abc\0")
    assert [r[6] for r in rows2] == ids[:2]
    rows3 = side.item_rows(items[8:], b"", 0, lambda a, n: None)
    assert [r[6] for r in rows3] == ids[8:]


@pytest.mark.parametrize("side", ITEMS, ids=lambda m: m.__name__)
def test_nul_search_by_a_byte_loop_is_find(side):
    rng = random.Random(4)
    mems = [b"", b"\0", b"abc", b"x" * 5000 + b"\0", b"\0" * 3 + b"a" * 4100 + b"\0"]
    mems += [bytes(rng.choice(b"\0\x01ab") for _ in range(rng.randint(1, 60))) for _ in range(200)]
    for mem in mems:
        for k in list(range(min(len(mem), 70) + 3)) + [len(mem) - 1, len(mem) + 5]:
            if k >= 0:
                assert side._nul_at(mem, k) == mem.find(b"\0", k, k + 4096), (mem[:20], k)
    # ... and backwards (session 24 W: a string's start), for 0 < k <= len(mem)
    mems += [b"\0" + b"y" * 4200, b"z" * 4097 + b"\0" + b"w" * 10]
    for mem in mems:
        for k in {*range(1, min(len(mem), 70) + 1), len(mem), max(1, len(mem) - 4096)}:
            if 0 < k <= len(mem):
                want = mem.rfind(b"\0", max(0, k - 4096), k)
                assert side._nul_before(mem, k) == want, (mem[:20], k)


@pytest.mark.parametrize("side", ITEMS, ids=lambda m: m.__name__)
def test_hex_and_string_checks_the_compiled_way_are_the_plain_ones(side, monkeypatch):
    if side is pure_items:
        if pure_items.StringWriter is None:
            pytest.skip("librt not installed: the pure module has no native way")
        monkeypatch.setattr(pure_items, "_COMPILED", True)  # the compiled way, run pure
    values = [0, 1, 9, 10, 15, 16, 255, 256, 0xABCDEF, (1 << 62) - 1, 1 << 62, 1 << 70]
    values += [-1, -16, -(1 << 62), -(1 << 70)] + [
        random.Random(2).getrandbits(40) for _ in range(200)
    ]
    for a in values:
        assert side._hex(a) == f"{a:x}", a
    mem = b"hello\0\0\xff\x80ab\0" + b"y" * 4100 + b"\0%d: %s\0\x1b[0m\0"
    for k in range(len(mem) + 2):
        seen: dict[int, tuple[int, str | None]] = {}
        n = side._cstring_seen(mem, k, seen)
        assert n == pure_items._cstring_len(mem, k), k


def _c_text_reference(raw: bytes) -> str | None:
    """What ``_c_text`` answers, written plainly: printable UTF-8 where the controls
    ``\\t \\n \\r \\x1b \\x07 \\x08 \\x0b \\x0c`` may appear, the rare five at most a
    quarter of the characters, the first character not a control other than those."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    rare_set = "\x1b\x07\x08\x0b\x0c"
    if any(not (ch.isprintable() or ch in "\t\n\r" + rare_set) for ch in text):
        return None
    if sum(ch in rare_set for ch in text) * 4 > len(text):
        return None
    return text


@pytest.mark.parametrize("side", ITEMS, ids=lambda m: m.__name__)
def test_c_text_by_the_ascii_loop_is_the_plain_check(side):
    """Session 24 W: compiled, ASCII bytes are classified by one byte loop
    (``_ascii_rare``); the text (or None) is the plain check's for ASCII with every
    control, with rare controls around the quarter, and for non-ASCII text and bytes."""
    rng = random.Random(24)
    alphabet = [*range(0x20, 0x7F)] * 3 + [0x09, 0x0A, 0x0D, 0x1B, 0x07, 0x08, 0x0B, 0x0C]
    alphabet += [0x00, 0x01, 0x1F, 0x7F, 0x80, 0xC3, 0xA9, 0xE2, 0x82, 0xAC, 0xFF]
    samples = [
        b"",
        b"a",
        b"\n",
        b"abc\x1b",
        b"ab\x1b\x1b",
        b"abc\x1b\x1b",
        b"a\x7f",
        b"\xc3\xa9t\xc3\xa9",
    ]
    samples += [b"caf\xc3\xa9\n", b"caf\xc3\xa9\x01", b"x\x1b\xc3\xa9\x1b", b"ok\xe2\x82\xac\t"]
    for _ in range(3000):
        n = rng.randint(0, 40)
        samples.append(bytes(rng.choice(alphabet) for _ in range(n)))
        samples.append(bytes(rng.choice(alphabet[:300]) for _ in range(n)))  # (mostly ASCII)
    for raw in samples:
        assert side._c_text(raw) == pure_items._c_text(raw), raw
        if raw and pure_items._NEVER_FIRST[raw[0]]:
            assert side._c_text(raw) is None
        else:
            assert side._c_text(raw) == _c_text_reference(raw), raw
