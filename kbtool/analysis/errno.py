"""``__errno_location`` by behaviour (its body is below every shape floor).

The function is tiny and returns the address of ``errno``: a constant static address
(``i32.const A``; single-threaded musl/Emscripten/wasi-libc) or TLS base + offset
(``global.get G; i32.const k; i32.add``; threaded builds). Many accessors look like that;
what singles errno out is what the libc does with it: it stores small positive error codes
(``EILSEQ``, ``ENOMEM``, ``EOVERFLOW``...) into it, either through a call
(``call f; i32.const N; i32.store``) or, for the constant form, directly at the address
(``i32.const A; i32.const N; i32.store``). A candidate is named only when

- at least :data:`MIN_STORING_FUNCS` distinct functions store an errno-range constant
  (1..:data:`MAX_ERRNO`) into its result/address, or one does and a small function stores
  its parameter there whose callers call a WASI/Emscripten import (``__wasi_syscall_ret``:
  the failing import's result becomes errno), and
- it is the only candidate with that evidence (several -> none named, reviewed).

Cost: a few byte-pattern scans of the code section per candidate (candidates are bodies of
2 or 4 instructions with a ``() -> i32`` type, at most :data:`MAX_CANDIDATES`).
"""

from __future__ import annotations

import re
from bisect import bisect_right

from kbtool.wasm import FuncFacts, ModuleAnalysis
from kbtool.wasm.leb import encode_sleb, encode_uleb

from .body import decode_body
from .runtime import is_runtime_import

MAX_ERRNO = 140  # musl's largest is 133, WASI's 76
MIN_STORING_FUNCS = 2
MAX_CANDIDATES = 64
# i32.const N (1..140 as sLEB128), then i32.store align=2 offset=0
_STORE_LOCAL = rb"\x20([\x00-\x7f])\x36\x02\x00"  # local.get L; i32.store offset=0
SYSCALL_RET_MAX_BODY = 32
_STORE_CONST = rb"\x41([\x01-\x3f]|[\xc0-\xff]\x00|[\x80-\x8c]\x01)\x36\x02\x00"


def _sleb_value(b: bytes) -> int:
    x = shift = 0
    for c in b:
        x |= (c & 0x7F) << shift
        shift += 7
    if b[-1] & 0x40:
        x -= 1 << shift
    return x


def _candidates(
    a: ModuleAnalysis, data: bytes, sp: int | None, bounds: tuple[int, int]
) -> list[tuple[FuncFacts, str, int | None]]:
    """``(func, form, address)``: tiny ``() -> i32`` bodies returning a static address
    (form ``const``) or a mutable global (not the stack pointer) plus a constant (``tls``)."""
    out = []
    lo, hi = bounds
    for f in a.functions:
        if f.imported or f.type_sig != "() -> i32" or f.instr_count not in (2, 4) or f.calls:
            continue
        body = decode_body(data, f)
        ops = [op for op, _ in body]
        imms = [im for _, im in body]
        if len(body) == 2 and ops[0] == 65 and lo <= imms[0][0] < hi:  # i32.const A; end
            out.append((f, "const", imms[0][0]))
        elif (
            len(body) == 4
            and ops[0] == 35  # global.get
            and ops[1] == 65  # i32.const
            and ops[2] == 106  # i32.add
            and imms[0][0] != sp
        ):
            out.append((f, "tls", None))
        if len(out) > MAX_CANDIDATES:
            return []
    return out


def _find_after(
    head: bytes, rests: tuple[bytes, ...], data: bytes, lo: int, hi: int
) -> list[list[re.Match]]:
    """For each of ``rests``, what ``re.compile(re.escape(head) + rest, re.DOTALL)
    .finditer(data, lo, hi)`` yields (the same matches, left to right, none overlapping),
    from one pass over ``data``: the literal ``head`` found by ``bytes.find``, each pattern
    tried where it occurs and its own last match has ended (one scan of ffmpeg's 25 MB of
    code instead of one per pattern). The literal is searched by a regex of it: the same
    positions as ``bytes.find`` (ffmpeg's ``call`` of its candidate, three bytes found
    nowhere: 12 ms instead of 20)."""
    pats = [re.compile(re.escape(head) + rest, re.DOTALL) for rest in rests]
    found: list[list[re.Match]] = [[] for _ in pats]
    free = [lo] * len(pats)  # where each pattern's next match may start
    search = re.compile(re.escape(head)).search
    at = search(data, lo, hi)
    while at is not None:
        p = at.start()
        for k, pat in enumerate(pats):
            if p >= free[k]:
                m = pat.match(data, p, hi)
                if m is not None:
                    found[k].append(m)
                    free[k] = m.end()
        at = search(data, p + 1, hi)
    return found


def errno_candidates(
    a: ModuleAnalysis, data: bytes, sp: int | None, bounds: tuple[int, int]
) -> list[tuple[int, float, dict]]:
    """``[(func_index, confidence, evidence)]``: the one ``__errno_location`` fit, or []."""
    cands = _candidates(a, data, sp, bounds)
    if not cands:
        return []
    code = [f for f in a.functions if not f.imported]
    starts = [f.body_offset for f in code]
    lo = starts[0]
    hi = code[-1].body_offset + code[-1].body_size

    def owner(pos: int) -> int | None:
        k = bisect_right(starts, pos) - 1
        if k < 0 or pos >= code[k].body_offset + code[k].body_size:
            return None
        return code[k].index

    imports = [i for i in a.module.imports if i.kind == "func"]

    def calls_runtime_import(g: FuncFacts) -> bool:
        return any(
            t < len(imports) and is_runtime_import(f"{imports[t].module}.{imports[t].field}")
            for t in g.calls
        )

    fits = []
    for f, form, addr in cands:
        heads = [b"\x10" + encode_uleb(f.index)]
        if form == "const":
            heads.append(b"\x41" + encode_sleb(addr))
        funcs: set[int] = set()
        codes: set[int] = set()
        relays: set[int] = set()
        for head in heads:
            consts, locs = _find_after(head, (_STORE_CONST, _STORE_LOCAL), data, lo, hi)
            for m in consts:
                o = owner(m.start())
                if o is not None and o != f.index:
                    funcs.add(o)
                    codes.add(_sleb_value(m.group(1)))
            for m in locs:
                o = owner(m.start())
                if o is None or o == f.index or o in relays:
                    continue
                g = a.functions[o]
                if g.instr_count > SYSCALL_RET_MAX_BODY or int(m.group(1)[0]) >= len(
                    a.module.func_type(o).params
                ):
                    continue  # not a small function storing one of its parameters
                if any(o in c.calls and calls_runtime_import(c) for c in code):
                    relays.add(o)
        if len(funcs) >= MIN_STORING_FUNCS or (funcs and relays):
            fits.append((f, form, addr, funcs, codes, relays))
    if len(fits) != 1:
        return []
    f, form, addr, funcs, codes, relays = fits[0]
    conf = 0.8 if len(funcs) + len(relays) >= 3 else 0.7
    ev = {
        "recognizer": "behaviour",
        "method": "tiny () -> i32 returning a "
        + ("static address" if form == "const" else "TLS-base-relative address")
        + " into which several functions store small positive error codes",
        "fingerprint": None,
        "reference": None,
        "storing_functions": sorted(funcs)[:16],
        "stored_codes": sorted(codes)[:16],
        "syscall_ret_relays": sorted(relays)[:16],
        "address": addr,
        "candidates_considered": len(cands),
    }
    return [(f.index, conf, ev)]
