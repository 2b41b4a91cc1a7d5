"""The data items' hot part: cut the segments at referenced addresses and string ends and
classify the pieces (:func:`cut_items`, called by :func:`kbtool.analysis.dataitems.build_items`).

Part of the data walk's compiled twin (``kbtool.analysis._cdatawalk.items``, mypyc;
:mod:`..datawalk_active` picks it with the walk): ffmpeg's 57k items and 75k string checks
as native calls. The pure module here is the reference (same items: tests compare both).
"""

from __future__ import annotations

from collections.abc import Callable
from hashlib import blake2b
from struct import unpack_from as _unpack_from
from typing import Any, Final

try:  # mypyc: native 64-bit ints in the loops (no tag checks, no boxing)
    from mypy_extensions import i32, i64
except ImportError:  # the pure path without it (not a dependency): plain ints
    i32 = i64 = int  # type: ignore[misc,assignment]

try:  # mypyc's runtime library (installed with mypy): a str built by native appends
    from librt.strings import StringWriter
except ImportError:  # the pure path without it: the byte-table slug only
    StringWriter = None  # type: ignore[assignment,misc]

from ..datatypes import MAX_BSS_ITEM, MAX_ITEMS, MAX_LABEL, MAX_TEXT, MIN_STRING
from .itemtype import DataItem

#: whether this is the compiled twin (its module file a shared library): the label's slug
#: is then a loop over the text's code points (run pure, the byte table's C-level passes)
_COMPILED: Final = not __file__.endswith(".py") and StringWriter is not None

# control characters C strings carry (terminal colours, bells, tabs): escaped where shown
_RARE_CONTROLS = "\x1b\x07\x08\x0b\x0c"
_CONTROLS = "\t\n\r" + _RARE_CONTROLS
_NO_CONTROLS = str.maketrans("", "", _CONTROLS)
_ASCII_OK = bytes(range(0x20, 0x7F)) + _CONTROLS.encode()  # printable ASCII, the controls
_RARE_BYTES = _RARE_CONTROLS.encode()
_NO_RARE = str.maketrans("", "", _RARE_CONTROLS)
_NO_LINE_CONTROLS = str.maketrans("", "", "\t\n\r")
# a first byte :func:`_c_text` never accepts: a control character but the ones above,
# DEL, a UTF-8 continuation byte or one no UTF-8 sequence starts with (1: never; bytes
# and Final: compiled, a native byte read, not a module dict lookup and a list read)
_NEVER_FIRST: Final = bytes(
    (c < 0x20 and chr(c) not in _CONTROLS) or c == 0x7F or 0x80 <= c < 0xC2 or c >= 0xF5
    for c in range(256)
)


def _cstring_at(mem: bytes, k: int) -> str | None:
    """The C string starting at ``mem[k]`` (printable UTF-8, NUL-terminated), if any."""
    z = mem.find(b"\0", k, k + 4096)
    if z < 0 or z - k < 1:
        return None
    return _c_text(mem[k:z])


def _cstring_len(mem: bytes, k: int) -> int:
    """The length in bytes of :func:`_cstring_at`'s string (its UTF-8 is those very bytes),
    -1 when there is none: what the item cuts need, without encoding the text again (a
    first byte :func:`_c_text` never accepts is refused at once, as in :func:`_cstring_seen`)."""
    if k < len(mem) and _NEVER_FIRST[mem[k]]:
        return -1
    z = mem.find(b"\0", k, k + 4096)
    if z < 0 or z - k < 1 or _c_text(mem[k:z]) is None:
        return -1
    return z - k


_NO_STRING: Final[tuple[int, str | None]] = (-1, None)  # (what :func:`_cstring_seen` keeps)


def _cstring_seen(mem: bytes, k: int, seen: dict[int, tuple[int, str | None]]) -> int:
    """:func:`_cstring_len`, keeping ``(length, text)`` (``(-1, None)``: no string) in
    ``seen[k]``: the bounds loop checks most items' first bytes and :func:`_classify`
    reads it back (one decode per string). A first byte :func:`_c_text` never accepts (a NUL
    among them) is refused before the NUL is looked for (most data is not text)."""
    if k < len(mem) and _NEVER_FIRST[mem[k]]:
        seen[k] = _NO_STRING
        return -1
    return _ascii_seen(mem, k, seen) if _COMPILED else _utf8_seen(mem, k, seen)


def _ascii_seen(mem: bytes, k: i64, seen: dict[int, tuple[int, str | None]]) -> int:
    """:func:`_cstring_seen` past its first byte, compiled: one byte loop finds the NUL and
    classifies the bytes before it (not :func:`_nul_at`, then :func:`_ascii_rare` over the
    same bytes). Another control or DEL refuses at once (:func:`_c_text` refuses any text
    holding one, NUL or not); a byte past ASCII hands over to :func:`_utf8_seen`."""
    table = _ASCII_CLASS
    lim: i64 = len(mem)
    if k + 4096 < lim:
        lim = k + 4096
    rare: i64 = 0
    z: i64 = k
    while z < lim:
        b: i64 = mem[z]
        if b == 0:
            break
        c: i64 = table[b]  # (0 printable and 1 \t \n \r: on)
        z += 1
        if c == 2:
            rare += 1
        elif c == 3:
            seen[k] = _NO_STRING
            return -1
        elif c == 4:
            return _utf8_seen(mem, k, seen)
    n: i64 = z - k
    if z >= lim or n < 1 or rare * 4 > n:
        seen[k] = _NO_STRING
        return -1
    seen[k] = (n, mem[k:z].decode("utf-8"))
    return n


def _utf8_seen(mem: bytes, k: i64, seen: dict[int, tuple[int, str | None]]) -> int:
    """:func:`_cstring_seen`'s NUL search and :func:`_c_text` (compiled: for a string with
    a byte past ASCII; a native int, the compare, slice and length are not generic)."""
    z: i64 = _nul_at(mem, k) if _COMPILED else mem.find(b"\0", k, k + 4096)
    if z < 0 or z - k < 1:
        seen[k] = _NO_STRING
        return -1
    t = _c_text(mem[k:z])
    if t is None:
        seen[k] = _NO_STRING
        return -1
    seen[k] = (z - k, t)
    return z - k


def _nul_at(mem: bytes, k: i64) -> i64:
    """``mem.find(b"\\0", k, k + 4096)`` for ``k >= 0`` by a byte loop (compiled: no method
    call; ffmpeg's strings average ~30 bytes, the call cost ~1,400 instructions)."""
    lim: i64 = len(mem)
    if k + 4096 < lim:
        lim = k + 4096
    z: i64 = k
    while z < lim:
        if mem[z] == 0:
            return z
        z += 1
    return -1


def _nul_before(mem: bytes, k: i64) -> i64:
    """``mem.rfind(b"\\0", max(0, k - 4096), k)`` for ``0 < k <= len(mem)`` by a byte loop
    (compiled: no method call; the string a reference points into starts a few dozen
    bytes back)."""
    lo: i64 = k - 4096 if k > 4096 else 0
    z: i64 = k - 1
    while z >= lo:
        if mem[z] == 0:
            return z
        z -= 1
    return -1


def _c_text(raw: bytes) -> str | None:
    """``raw`` (a C string's bytes, no NUL) as text when it is printable UTF-8."""
    if raw and _NEVER_FIRST[raw[0]]:
        # its first character is a control this refuses (or its first byte starts no
        # UTF-8 character): no text, whatever follows (what the checks below conclude,
        # without decoding binary data or raising for it)
        return None
    if _COMPILED:  # ASCII bytes (most strings) classified by one native loop
        rare = _ascii_rare(raw)
        if rare >= 0:
            return None if rare * 4 > len(raw) else raw.decode("utf-8")
        if rare == -1:
            return None  # an ASCII control this refuses
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if text.isprintable():  # the common case, at C speed
        return text
    # every character printable or one of the controls, at C speed too: ASCII text on
    # its bytes (printable ASCII and the controls deleted, nothing may be left), other
    # text with the controls deleted
    if raw.isascii():
        if raw.translate(None, _ASCII_OK):
            return None
        rare = len(raw) - len(raw.translate(None, _RARE_BYTES))
    else:
        if not text.translate(_NO_CONTROLS).isprintable():
            return None
        rare = len(text) - len(text.translate(_NO_RARE))
    if rare * 4 > len(text):
        return None  # mostly control bytes: data, not text
    return text


# each byte's class for :func:`_ascii_rare`: 0 printable ASCII, 1 \t \n \r, 2 a rare
# control, 3 another control or DEL, 4 not ASCII
_ASCII_CLASS: Final = bytes(
    0
    if 0x20 <= c < 0x7F
    else 1
    if chr(c) in "\t\n\r"
    else 2
    if chr(c) in _RARE_CONTROLS
    else 3
    if c < 0x80
    else 4
    for c in range(256)
)


def _ascii_rare(raw: bytes) -> i64:
    """What :func:`_c_text` concludes of ASCII bytes, by one byte loop (compiled: no
    ``isprintable``, ``isascii`` or ``translate`` method calls, ~2,000 instructions a
    string with a newline): the count of rare controls when every byte is printable ASCII
    or one of the controls it accepts, -1 when one is another control or DEL (no text),
    -2 when a byte is not ASCII (the caller decodes)."""
    table = _ASCII_CLASS
    n: i64 = len(raw)
    rare: i64 = 0
    refused = False
    i: i64 = 0
    while i < n:
        c: i64 = table[raw[i]]
        i += 1
        if c == 0 or c == 1:
            continue
        if c == 2:
            rare += 1
        elif c == 3:
            refused = True
        else:
            return -2
    return -1 if refused else rare


def _utf8_text(raw: bytes) -> str | None:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if text.isprintable():
        return text or None
    return text if text.translate(_NO_LINE_CONTROLS).isprintable() else None


def _cstring_known(mem: bytes, k: int, seen: dict[int, tuple[int, str | None]]) -> int:
    """:func:`_cstring_seen`, read back from ``seen`` when it has looked at ``k`` before."""
    got = seen.get(k)
    if got is not None:
        return got[0]
    return _cstring_seen(mem, k, seen)


def _string_start(mem: bytes, k: int, seen: dict[int, tuple[int, str | None]] | None = None) -> int:
    """``k`` itself, or the start of the C string ``mem[k]`` lies inside (not at its start).
    ``seen``: :func:`_cstring_seen`'s record for ``mem`` (the string's start is looked at
    once, by whichever comes first: ffmpeg has 21k references into the middle of 9k
    strings, each string then cut at its start and read again there)."""
    if k == 0 or mem[k - 1] == 0 or not (0x20 <= mem[k - 1] < 0x7F):
        return k
    z: i64 = _nul_before(mem, k) if _COMPILED else mem.rfind(b"\0", max(0, k - 4096), k)
    s0 = z + 1
    n = _cstring_len(mem, s0) if seen is None else _cstring_known(mem, s0, seen)
    if n >= MIN_STRING and s0 + n > k:
        return s0
    return k


def _utf16_at(mem: bytes, k: int) -> str | None:
    if k % 2:
        return None
    n = 0
    while k + 2 * n + 1 < len(mem) and mem[k + 2 * n + 1] == 0 and 0x20 <= mem[k + 2 * n] < 0x7F:
        n += 1
    if n < MIN_STRING or mem[k + 2 * n : k + 2 * n + 2] != b"\0\0":
        return None
    return mem[k : k + 2 * n].decode("utf-16-le")


def _zeros_from(mem: bytes, k: int) -> bool:
    """``not mem[k:].strip(b"\\0")``: every byte from ``k`` on is zero (a byte loop, compiled:
    no copy of the piece; most pieces stop at their first byte)."""
    for i in range(k, len(mem)):
        if mem[i]:
            return False
    return True


def _classify(
    mem: bytes,
    base: int,
    lo: int,
    hi: int,
    table: tuple[int, int] | None,
    fptr: bool = False,
    known: tuple[int, str | None] | None = None,
) -> tuple[str, str | None, list[int]]:
    """Kind, text and targets of the bytes ``mem`` at address ``base``. ``known``: what
    :func:`_cstring_seen` found at the start of bytes of which ``mem`` is a prefix (with
    no NUL that they do not have): its string is ``mem``'s when ``mem`` holds its NUL,
    else ``mem`` has none (no second decode)."""
    if _zeros_from(mem, 0):
        return "zero", None, []
    s: str | None = None
    n = -1  # the first NUL's position when ``s`` is a C string
    if known is not None:
        if len(mem) > known[0] >= 0:  # (the string's NUL: its length, ``mem``'s first one)
            s = known[1]
            n = known[0]
    else:
        s = _cstring_at(mem, 0)
        if s is not None:
            n = mem.find(b"\0")
    if s is not None and n >= MIN_STRING and _zeros_from(mem, n + 1):
        return "cstring", s, []  # the string and the NUL padding after it
    u = _utf16_at(mem, 0)
    if u is not None:
        return "utf16", u, []
    if base % 4 == 0 and len(mem) >= 8 and len(mem) % 4 == 0:
        # the little-endian words, read only as far as a table may still be one: most
        # pieces are numbers and fail at their first nonzero word (no int per word)
        t_lo = table[0] if fptr and table is not None else 0
        t_hi = table[1] if fptr and table is not None else 0
        ptrs = True  # every nonzero word so far lies in [lo, hi)
        slots = t_lo < t_hi  # ... in the function table's slots (funcptr_table)
        nz = 0
        for i in range(0, len(mem), 4):
            w = mem[i] | (mem[i + 1] << 8) | (mem[i + 2] << 16) | (mem[i + 3] << 24)
            if w:
                nz += 1
                if ptrs and not lo <= w < hi:
                    ptrs = False
                if slots and not t_lo <= w < t_hi:
                    slots = False
                if not ptrs and not slots:
                    break
        if ptrs and nz and nz * 2 >= len(mem) >> 2:
            return "pointer_table", None, list(_unpack_from(f"<{len(mem) >> 2}I", mem))
        # indexed and called through call_indirect: its words are function-table slots
        if slots:
            return "funcptr_table", None, list(_unpack_from(f"<{len(mem) >> 2}I", mem))
    return "numeric", None, []


def _unique_sorted(xs: list[int]) -> list[int]:
    """``sorted(set(xs))``: ``xs`` itself when it already strictly increases (most of a
    segment's lists: no set and no sort per segment)."""
    for i in range(1, len(xs)):
        if xs[i - 1] >= xs[i]:
            return sorted(set(xs))
    return xs


def _at_least(ordered: list[int], x: int) -> int:
    """``bisect_left(ordered, x)`` (compiled: the ints compared natively, no call per
    comparison; ffmpeg's 7,320 segments take four each over 74k cuts)."""
    lo = 0
    hi = len(ordered)
    while lo < hi:
        mid = (lo + hi) >> 1
        if ordered[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


def _at_least_from(ordered: list[int], x: int, j: int) -> int:
    """:func:`_at_least` found from the hint ``j`` (the answer for an ``x`` no larger, or
    any index: the segments come by address, each call's ``x`` at or after the last one's):
    steps of 1, 2, 4... from ``j``, then a bisection in the last step (a few comparisons
    where ffmpeg's 7,320 segments hold ~10 cuts each, not ~17); a hint past ``x`` bisects
    the whole list. The same index."""
    n = len(ordered)
    if j > n:
        j = n
    if j > 0 and ordered[j - 1] >= x:
        return _at_least(ordered, x)
    step = 1
    lo = j  # ordered[lo - 1] < x (or lo == 0)
    while lo < n and ordered[lo] < x:
        hi = lo + step
        if hi >= n or ordered[hi] >= x:
            lo += 1  # ordered[lo] < x: the answer lies in (lo, min(hi, n)]
            if hi > n:
                hi = n
            while lo < hi:
                mid = (lo + hi) >> 1
                if ordered[mid] < x:
                    lo = mid + 1
                else:
                    hi = mid
            return lo
        lo = hi + 1  # ordered[hi] < x
        step += step
    return lo


def cut_items(
    segs: list[tuple[int, bytes, int]],
    cuts: set[int],
    fptr: set[int],
    gostr: dict[int, int],
    table_range: tuple[int, int] | None = None,
    bss_hi: int = 0,
) -> tuple[list[DataItem], bool]:
    """:func:`kbtool.analysis.dataitems.build_items` once the segments (``segs``, by
    address, not empty) and the references' marks are known: ``cuts`` the referenced data
    addresses, ``fptr`` the ``funcptr`` targets, ``gostr`` each Go string's length."""
    lo: int = segs[0][0]
    hi: int = max(b + len(d) for b, d, _ in segs)
    for a, w in list(gostr.items()):
        cuts.add(a + w)  # a Go string ends where its length says (no NUL)
    items: list[DataItem] = []
    truncated = False
    ordered = sorted(cuts)
    at = 0  # the cuts' index of the last position looked up (a hint for the next one)
    for si, (base, mem, k) in enumerate(segs):
        end = base + len(mem)
        # the bytes up to the next segment (or the end of the data) are zeros no segment
        # sets: wasm-opt drops a segment's trailing zeros, so its last item and the
        # variables after it read on into them
        gap_end = segs[si + 1][0] if si + 1 < len(segs) else hi
        # a reference into the middle of a C string (``"directory" + 1``) is an interior
        # reference of that string, not the start of an item
        # (Go strings have no NUL: every cut stands)
        # (a string at the end lost its NUL with the zeros: they are read back for strings)
        memz = mem + bytes(min(gap_end - end, 8) if si + 1 < len(segs) else 8)
        # what the bounds loop found at a position of memz: piece a is a prefix of
        # memz[a - base:] (its zeros after the segment are at most a word, memz has 8)
        seen: dict[int, tuple[int, str | None]] = {}
        at = _at_least_from(ordered, base, at)
        at_end = _at_least_from(ordered, end, at)
        mine = ordered[at:at_end]
        inside = _unique_sorted(
            [a if gostr else _string_start(memz, a - base, seen) + base for a in mine]
        )
        # pointer tables point at more items: one level of their words as cuts
        # (``inside`` strictly increases, none below ``base``: ``base`` is either its first
        # or goes first)
        starts = _unique_sorted(inside if inside and inside[0] == base else [base] + inside)
        # strings run to their NUL: a new item starts after it when nothing else cuts there
        bounds: list[int] = []
        for i, a in enumerate(starts):
            bounds.append(a)
            nxt = starts[i + 1] if i + 1 < len(starts) else end
            q = a - base
            while q < nxt - base:
                n = _cstring_known(memz, q, seen)
                if n < 0:
                    break
                if n < MIN_STRING:
                    # a short string between literals ("nan", "inf"): an item of its own
                    # when a literal follows it
                    q2 = q + n + 1
                    while q2 < nxt - base and mem[q2] == 0:
                        q2 += 1
                    if q2 >= nxt - base or _cstring_known(memz, q2, seen) < MIN_STRING:
                        break
                    bounds.append(base + q2)
                    q = q2
                    continue
                q += n + 1
                while q < nxt - base and mem[q] == 0:
                    q += 1
                if q < nxt - base:
                    bounds.append(base + q)
        bounds = _unique_sorted(bounds)
        # ... and the referenced addresses in those zeros start items of their own
        at = _at_least_from(ordered, gap_end, at_end)
        allb = bounds + ordered[at_end:at]
        for i, a in enumerate(allb):
            b = allb[i + 1] if i + 1 < len(allb) else gap_end
            if b > end:
                b = min(b, max(a, end) + MAX_BSS_ITEM)
            piece = mem[a - base : b - base]
            if b > end and piece:
                # the trimmed zeros back, up to a word (a string's NUL, a table's last word)
                piece += bytes(min(b - end, (-len(piece)) % 4 or 4))
            targets: list[int]
            if a in gostr and b - a == gostr[a] and _utf8_text(piece) is not None:
                kind, text, targets = "gostring", _utf8_text(piece), []
            else:
                kind, text, targets = _classify(
                    piece, a, lo, hi, table_range, a in fptr, seen.get(a - base)
                )
            items.append(  # (address, size, kind, segment, text, label, targets: positional)
                DataItem(
                    a,
                    b - a,
                    kind,
                    k,
                    text[:MAX_TEXT] if text is not None else None,
                    None,
                    targets if len(targets) <= 256 else targets[:256],  # (a new list each)
                )
            )
            if len(items) >= MAX_ITEMS:
                return items, True
    bss = sorted(a for a in cuts if hi <= a < bss_hi)
    for i, a in enumerate(bss):
        b = bss[i + 1] if i + 1 < len(bss) else bss_hi
        items.append(DataItem(address=a, size=min(b - a, MAX_BSS_ITEM), kind="bss", segment=-1))
        if len(items) >= MAX_ITEMS:
            return items, True
    return items, truncated


#: a ``data_items`` row without its version: address, size, kind, segment, text, label,
#: data_id, refs, targets (JSON)
ItemRow = tuple[int, int, str, int, Any, str, str, int, str]  # (text: str or ``null``)


def item_rows(
    items: list[DataItem],
    image: bytes,
    base: int,
    memory: Callable[[int, int], bytes | None],
    null: Any = None,
) -> list[ItemRow]:
    """The stored rows of ``items`` (:data:`ItemRow`; an item without text has ``null``
    there: the store's NULL, :data:`kbtool.kb.store.NULL`). ``data_id``: kind + content digest,
    ``#n`` for the n-th duplicate by address (stable across releases while the content
    stays); the content is read from ``image`` (the initial memory from ``base``) when
    there is one, else through ``memory(address, length)``. A missing label is
    ``data_<hex address>``; targets as JSON (``[1,2]``: the ints as ``orjson`` writes them)."""
    seen: dict[str, int] = {}
    out: list[ItemRow] = []
    # each kind's digest state after its ``kind\0`` prefix: an item's digest is a copy of it
    # fed the content (the digest of the prefix and content joined, without joining them);
    # and, but for strings, the digests of the contents seen so far (ffmpeg: 21k of its
    # 36k other items repeat one, every .bss item has none; 144 of 29k strings repeat):
    # a dict probe instead of three hash method calls
    prefixed: dict[str, tuple[Any, dict[Any, str] | None]] = {}
    for it in items:
        a: int = it.address
        size: int = it.size
        n = min(size, 1 << 16)
        raw = image[a - base : a - base + n] if image and a >= base else memory(a, n)
        kind: str = it.kind
        pre = prefixed.get(kind)
        if pre is None:
            memo: dict[Any, str] | None = None if kind in _TEXT_KINDS else {}
            pre = (blake2b(kind.encode() + b"\0", digest_size=8), memo)
            prefixed[kind] = pre
        digests = pre[1]
        key: Any = raw if raw else b""  # (None and b"": the prefix alone)
        got = digests.get(key) if digests is not None else None
        if got is None:
            hasher = pre[0].copy()
            if raw:
                hasher.update(raw)
            h: str = hasher.hexdigest()
            if digests is not None:
                digests[key] = h
        else:
            h = got
        k = seen.get(h, 0)
        seen[h] = k + 1
        targets: list[int] = it.targets
        text = it.text
        out.append(
            (
                a,
                size,
                kind,
                it.segment,
                null if text is None else text,
                it.label or f"data_{a:x}",
                f"d:{h}" if k == 0 else f"d:{h}#{k}",
                it.refs,
                "[" + ",".join([str(t) for t in targets]) + "]" if targets else "[]",
            )
        )
    return out


_TEXT_KINDS = ("cstring", "utf16", "gostring")
# a text's UTF-8 bytes: ASCII letters lower-cased, digits kept, every other byte (the
# other ASCII characters, each byte of a non-ASCII one) a space
_SLUG_BYTES: Final = bytes(
    c | 0x20 if 0x41 <= c <= 0x5A else c if 0x30 <= c <= 0x39 or 0x61 <= c <= 0x7A else 0x20
    for c in range(256)
)


def _slug(text: str) -> str:
    """``text`` as a label part: runs of characters other than ASCII letters and digits as
    ``_`` (none at either end), lower case, at most :data:`MAX_LABEL` characters (the
    regex ``[^0-9A-Za-z]+`` -> ``_``, stripped, lowered; by a byte table: no regex).
    Compiled: one loop over the code points up to the label's length (seven str/bytes
    method calls before, ~4,000 instructions a label on ffmpeg's 29k strings)."""
    if not _COMPILED:
        return _slug_bytes(text)
    table = _SLUG_BYTES
    lim: i64 = MAX_LABEL  # (read once: an imported name is a dict lookup per read)
    out = StringWriter()
    n: i64 = 0  # characters written
    gap = False  # a run of other characters since the last letter or digit written
    i: i64 = 0
    m: i64 = len(text)
    while i < m:
        c: i64 = ord(text[i])
        i += 1
        t: i32 = table[c] if c < 0x80 else 0x20  # (a non-ASCII character: a gap; an i32:
        # the writer's native append)
        if t == 0x20:
            gap = n > 0
            continue
        if gap:
            if n >= lim - 1:
                break  # (the ``_`` would end the label: stripped)
            out.append(0x5F)
            n += 1
            gap = False
        if n >= lim:
            break
        out.append(t)
        n += 1
    return out.getvalue()


def _slug_bytes(text: str) -> str:
    """:func:`_slug` by the byte table's C-level passes (the pure path)."""
    words = text.encode("utf-8", "surrogatepass").translate(_SLUG_BYTES).split()
    return b"_".join(words)[:MAX_LABEL].rstrip(b"_").decode("ascii")


_HEX_MAX: Final = (1 << 62) - 1  # (a native int's bound, compared inline: see refcount)


def _hex(a: int) -> str:
    """``f"{a:x}"`` (compiled, that f-string is a ``str.format`` method call, ~2,000
    instructions; ``hex`` and a slice ~1,200; the digits written natively ~200)."""
    if not _COMPILED or not 0 <= a <= _HEX_MAX:
        return hex(a)[2:] if a >= 0 else "-" + hex(a)[3:]
    v: i64 = a
    shift: i64 = 0
    while (v >> shift) >= 16:
        shift += 4
    out = StringWriter()
    while shift >= 0:
        d: i64 = (v >> shift) & 15
        out.append(i32(d + 48 if d < 10 else d + 87))  # 0-9, a-f
        shift -= 4
    return out.getvalue()


def label_items(items: list[DataItem]) -> None:
    """:func:`kbtool.analysis.dataitems.label_items` (labels from content: ``s_<text>`` for
    strings, ``<kind>_<hex address>`` otherwise; a label taken twice gets the address as a
    suffix), compiled with the walk: ffmpeg's 65k items."""
    seen: dict[str, int] = {}
    for it in items:
        kind: str = it.kind
        a: int = it.address
        text: str | None = it.text
        if text and kind in _TEXT_KINDS:
            base = "s_" + (_slug(text) or _hex(a))
        elif kind == "zero":
            base = "zero_" + _hex(a)
        elif kind == "bss":
            base = "bss_" + _hex(a)
        elif kind == "funcptr_table":
            base = "fptrs_" + _hex(a)
        elif kind == "pointer_table":
            base = "ptrs_" + _hex(a)
        else:
            base = "data_" + _hex(a)
        n = seen.get(base, 0)
        seen[base] = n + 1
        it.label = base if n == 0 else base + "_" + _hex(a)


def kind_positions(items: list[DataItem], kind: str) -> list[int]:
    """The positions of the items of ``kind``, ascending (compiled: no attribute read from
    Python per item; ffmpeg's 65k items hold a few hundred tables)."""
    out: list[int] = []
    n = len(items)
    for k in range(n):
        if items[k].kind == kind:
            out.append(k)
    return out


def item_starts(items: list[DataItem]) -> list[int]:
    """``[it.address for it in items]`` (compiled: no attribute read from Python per item)."""
    return [it.address for it in items]


def unique_labels(items: list[DataItem]) -> None:
    """The data labels' last pass (:func:`kbtool.analysis.datalabels.role_labels`), compiled
    with the walk: an item without a label gets ``data_<hex address>``; a label an earlier
    item has gets the address as a suffix (ffmpeg's 65k items)."""
    seen: set[str] = set()
    for it in items:
        a: int = it.address
        label = it.label or "data_" + _hex(a)
        if label in seen:
            label = label + "_" + _hex(a)
        seen.add(label)
        it.label = label
