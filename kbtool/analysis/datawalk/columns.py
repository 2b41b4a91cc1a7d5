"""The data references as the packed columns the KB stores (:func:`kbtool.kb.datarefs.pack`),
in one typed pass over the reference tuples, radix sorts by position (when they come out of
(function, offset) order) and by target.

Part of the data walk's compiled twin (``kbtool.analysis._cdatawalk.columns``, mypyc;
:mod:`..datawalk_active` loads it with the walk): ffmpeg's 382k references become their
columns' little-endian bytes with no int object per value (the store's own packing, a few
C-level passes over the tuples and a sort with a key per position, costs ~6x more). Run
pure it is slower than that packing: the store uses it only compiled. The KB's format
stays the store's: it names the kind codes, the key's scale and reads the bytes back as
its arrays (tests compare both packings).
"""

from __future__ import annotations

from typing import Any, Final

try:  # mypyc: native ints in the loops (no tag checks, no boxing)
    from mypy_extensions import i32, i64, u8
except ImportError:  # the pure path without it (not a dependency): plain ints
    i32 = i64 = u8 = int  # type: ignore[misc,assignment]

try:  # mypyc's runtime library (installed with mypy): native arrays and byte writes
    from librt.strings import BytesWriter, write_i32_le, write_i64_le
    from librt.vecs import vec
except ImportError:  # the pure path without it: lists and a bytearray
    from kbtool.wasm.opbuf import BytesWriter, vec  # type: ignore[assignment]

    def write_i32_le(b: BytesWriter, n: int) -> None:  # type: ignore[misc]
        b.write(n.to_bytes(4, "little", signed=True))

    def write_i64_le(b: BytesWriter, n: int) -> None:  # type: ignore[misc]
        b.write(n.to_bytes(8, "little", signed=True))


def _zeros(n: i64) -> vec[i64]:
    """``n`` zeros (one list of zeros converted: the other arrays of that length are copies
    of one, :func:`_copy`)."""
    return vec[i64]([0] * n)


def _copy(v: vec[i64]) -> vec[i64]:
    """A copy of ``v`` (one native copy of its values: no list of zeros made and converted
    per array). Every array made so here is written whole before it is read: its values
    do not matter, only its length (no array of zeros is kept for it)."""
    return v[0 : len(v)]


_BIG: Final = 1 << 60  # a value beyond it: OverflowError (the store's packing decides)
_DIGIT: Final = 16  # bits per radix pass
_MASK: Final = (1 << 16) - 1


def _check(x: i64) -> None:
    if x >= _BIG or x <= -_BIG:
        raise OverflowError("a data reference value past 60 bits")


def _write(values: vec[i64], lo: i64, hi: i64, small: str) -> tuple[str, bytes]:
    """``values`` as ``(typecode, little-endian bytes)``: ``small`` (``"B"``: 0..255, ``"i"``:
    a signed 32-bit value, ``"I"``: an unsigned one, here under 2**31: the caller declines
    more) when every value fits it, else ``"q"``."""
    w = BytesWriter()
    n: i64 = len(values)
    i: i64 = 0
    if small == "B" and lo >= 0 and hi <= 255:
        while i < n:
            w.append(u8(values[i]))  # (a u8: the writer's native append, not a method call)
            i += 1
        return "B", w.getvalue()
    if small == "I" and lo >= 0 and hi < (1 << 31):  # (the same bytes as an unsigned)
        while i < n:
            write_i32_le(w, i32(values[i]))
            i += 1
        return "I", w.getvalue()
    if small != "I" and lo >= -(1 << 31) and hi < (1 << 31):
        while i < n:
            write_i32_le(w, i32(values[i]))
            i += 1
        return "i", w.getvalue()
    while i < n:
        write_i64_le(w, values[i])
        i += 1
    return "q", w.getvalue()


def ref_columns(
    refs: list[Any], kinds: dict[str, int], target_kinds: dict[str, int], scale: i64
) -> list[tuple[str, bytes]]:
    """The columns of ``refs`` (``(func_index, offset, kind, target_kind, target, width)``
    tuples, in any order) in stored order, that is sorted by (function, offset), stable (a
    tie keeps the order given: :func:`kbtool.kb.datarefs.by_function_and_offset`'s order),
    as ``(typecode, little-endian bytes)``: functions, offsets, keys, kind codes, widths,
    then the keys sorted and the positions in that order (stable: a key's positions
    ascend). A kind's code is its value in ``kinds``; a key is ``target * scale +`` its
    target kind's code (``target_kinds``). Typecodes are the narrowest of the store's: ``i``
    else ``q`` (kinds ``B``; widths ``B``, ``i``, ``q``; positions ``I``, ``q``). A kind
    missing from its table raises ``KeyError``; a value past 60 bits, or rows out of order
    whose (function, offset) span does not fit one 60-bit sort key, ``OverflowError``."""
    n: i64 = len(refs)
    if n >= 1 << 31:
        raise OverflowError("positions past 31 bits")
    # the columns made at their length (copies of one array of zeros) and set by index
    # (compiled: one native store each, no append call and no growth copy per value)
    funcs = _zeros(n)
    offsets = _copy(funcs)
    keys = _copy(funcs)
    codes = _copy(funcs)
    widths = _copy(funcs)
    ri: i64 = 0
    flo_prev: i64 = -_BIG  # the previous reference's function and offset
    olo_prev: i64 = -_BIG
    flo: i64 = 0
    fhi: i64 = 0
    olo: i64 = 0
    ohi: i64 = 0
    klo: i64 = 0
    khi: i64 = 0
    wlo: i64 = 0
    whi: i64 = 0
    clo: i64 = 0
    chi: i64 = 0
    first = True
    ordered = True  # (function, offset) never went down so far
    # the kind strings seen so far and their codes, looked up by identity first (the walk's
    # references share a handful of string objects: a pointer compared per probe, not a
    # dict lookup per reference); a string not among them (or an equal copy) takes the
    # dict, as before
    seen_k: list[object] = []
    seen_c: list[int] = []
    seen_t: list[object] = []
    seen_tc: list[int] = []
    for r0 in refs:  # (func_index, offset, kind, target_kind, target, width) tuples
        r: tuple[Any, ...] = r0
        f: i64 = r[0]
        o: i64 = r[1]
        ko: object = r[2]
        c: i64 = -1
        j: i64 = 0
        while j < len(seen_k):
            if seen_k[j] is ko:
                c = seen_c[j]
                break
            j += 1
        if c < 0:
            c = kinds[r[2]]
            if len(seen_k) < 16:
                seen_k.append(ko)
                seen_c.append(c)
        to: object = r[3]
        tc: i64 = -1
        j = 0
        while j < len(seen_t):
            if seen_t[j] is to:
                tc = seen_tc[j]
                break
            j += 1
        if tc < 0:
            tc = target_kinds[r[3]]
            if len(seen_t) < 16:
                seen_t.append(to)
                seen_tc.append(tc)
        t: i64 = r[4]
        _check(t)
        k: i64 = t * scale + tc
        wd: i64 = r[5]
        _check(f)
        _check(o)
        _check(wd)
        funcs[ri] = f
        offsets[ri] = o
        keys[ri] = k
        codes[ri] = c
        widths[ri] = wd
        ri += 1
        if f < flo_prev or (f == flo_prev and o < olo_prev):
            ordered = False
        flo_prev = f
        olo_prev = o
        if first:
            flo = fhi = f
            olo = ohi = o
            klo = khi = k
            wlo = whi = wd
            clo = chi = c
            first = False
            continue
        flo = min(flo, f)
        fhi = max(fhi, f)
        olo = min(olo, o)
        ohi = max(ohi, o)
        klo = min(klo, k)
        khi = max(khi, k)
        wlo = min(wlo, wd)
        whi = max(whi, wd)
        clo = min(clo, c)
        chi = max(chi, c)
    if not ordered:  # (ffmpeg: a constant's "addr" comes when it is used, after its offset)
        by_pos = _order_by_position(funcs, offsets, flo, fhi, olo, ohi, funcs)
        funcs = _gather(funcs, by_pos, funcs)
        offsets = _gather(offsets, by_pos, offsets)
        keys = _gather(keys, by_pos, keys)
        codes = _gather(codes, by_pos, codes)
        widths = _gather(widths, by_pos, widths)
        by_pos = _zeros(0)
    # the columns written as soon as they are final, their arrays dropped before the sort
    # by key (its arrays then take their place: a lower peak)
    out = [_write(funcs, flo, fhi, "i"), _write(offsets, olo, ohi, "i")]
    funcs = offsets = _zeros(0)
    out.append(_write(keys, klo, khi, "i"))
    out.append(_write(codes, clo, chi, "B"))
    out.append(_write(widths, wlo, whi, "B"))
    codes = widths = _zeros(0)
    order = _order_by_key(keys, klo, khi, keys)
    out.append(_write(_gather(keys, order, keys), klo, khi, "i"))
    keys = _zeros(0)
    out.append(_write(order, 0, n - 1, "I"))
    return out


def _order_by_position(
    funcs: vec[i64], offsets: vec[i64], flo: i64, fhi: i64, olo: i64, ohi: i64, like: vec[i64]
) -> vec[i64]:
    """The positions sorted by (function, offset), stable. An insertion sort while it moves
    few (the walk's references are nearly in order: ffmpeg's 382k have ~20k inversions),
    else :func:`_order_by_key` on one key per reference, ``(function - flo) * offset span
    + offset - olo`` (``OverflowError`` when the spans' product passes 60 bits: the store's
    passes then sort). ``like``: an array of ``len(funcs)`` values (copied: their values
    do not matter)."""
    n: i64 = len(funcs)
    order = _copy(like)
    i: i64 = 0
    while i < n:
        order[i] = i
        i += 1
    budget: i64 = 8 * n + 4096  # moves allowed before the radix sort takes over
    i = 1
    while i < n:
        f = funcs[i]
        o = offsets[i]
        j = i
        while j > 0:
            q = order[j - 1]
            fq = funcs[q]
            if fq < f or (fq == f and offsets[q] <= o):
                break
            order[j] = q
            j -= 1
        order[j] = i
        budget -= i - j
        if budget < 0:
            break
        i += 1
    if budget >= 0:
        return order
    span_o: i64 = ohi - olo + 1
    span_f: i64 = fhi - flo + 1
    if span_f > _BIG // span_o:
        raise OverflowError("a data reference position key past 60 bits")
    pos = _copy(like)
    i = 0
    while i < n:
        pos[i] = (funcs[i] - flo) * span_o + (offsets[i] - olo)
        i += 1
    return _order_by_key(pos, 0, span_f * span_o - 1, like)


def _gather(values: vec[i64], order: vec[i64], like: vec[i64]) -> vec[i64]:
    """``values`` in ``order`` (``like``: an array of ``len(order)`` values, copied: each is
    written over)."""
    n: i64 = len(order)
    out = _copy(like)
    i: i64 = 0
    while i < n:
        out[i] = values[order[i]]
        i += 1
    return out


def _order_by_key(keys: vec[i64], klo: i64, khi: i64, like: vec[i64]) -> vec[i64]:
    """The positions of ``keys`` sorted by key, stable: an LSD radix sort, 16 bits a pass
    over ``key - klo`` (two passes for ffmpeg's keys; ``like``: an array of ``len(keys)``
    values, copied: a pass writes every position of the other array)."""
    n: i64 = len(keys)
    order = _copy(like)
    i: i64 = 0
    while i < n:
        order[i] = i
        i += 1
    other = _copy(like)
    counts = _zeros(_MASK + 2)
    span: i64 = khi - klo
    shift: i64 = 0
    while n > 1 and (span >> shift) > 0:
        d: i64 = 0
        while d <= _MASK + 1:
            counts[d] = 0
            d += 1
        i = 0
        while i < n:
            d = ((keys[i] - klo) >> shift) & _MASK
            counts[d + 1] += 1
            i += 1
        d = 0
        while d < _MASK + 1:
            counts[d + 1] += counts[d]
            d += 1
        i = 0
        while i < n:
            p = order[i]
            d = ((keys[p] - klo) >> shift) & _MASK
            other[counts[d]] = p
            counts[d] += 1
            i += 1
        order, other = other, order
        shift += _DIGIT
    return order
