"""Crafted hostile modules (issues 11 and 24) and benchmarks of the worst ones.

The builders are used by tests/unit/wasm/test_wasm_hardening.py, tests/unit/identity/test_matcher_bounds.py and
benchmarks/fuzz.py. Two benchmarks:

* decode: :func:`kbtool.wasm.analyze_module` on the quadratic-strings module (one data
  segment of ``A`` bytes without a NUL, one i32.const per distinct address inside it) next to
  a real module of the corpus (lightningcss, 14 MB) measured in the same run;
* matcher (issue 24): the growth curve of ingesting the next release of the look-alike
  family (:func:`matcher_family`: F functions of one signature calling each other) for
  F = 1k, 2k, 4k, 10k, 100k, next to a normal release of the same function count
  (:func:`normal_release`), each measured in a fresh process (ingest seconds of the release
  that runs the matcher, peak RSS, the matcher's budget notes), plus ``oracle match`` at 2k.

    nice python -m benchmarks.crafted            # both, full sizes
    python -m benchmarks.crafted --only matcher --sizes 1000,2000
    python -m benchmarks.crafted --smoke         # tiny sizes, no corpus module
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from kbtool.wasm.leb import encode_sleb, encode_uleb

CORPUS = Path("/work/shared/corpus/release/lightningcss-wasm-1.29.1.wasm")
MAGIC = b"\0asm\1\0\0\0"


def vec(items: list[bytes]) -> bytes:
    return encode_uleb(len(items)) + b"".join(items)


def section(sid: int, payload: bytes) -> bytes:
    return bytes((sid,)) + encode_uleb(len(payload)) + payload


def module(*sections: bytes) -> bytes:
    return MAGIC + b"".join(sections)


def one_function(
    body: bytes,
    locals_: bytes = b"\x00",
    functype: bytes = b"\x60\x00\x00",
    extra: tuple[bytes, ...] = (),
) -> bytes:
    """A module with one type, one function whose body is ``locals_ + body``, and
    ``extra`` sections placed after the function section (memory, global, ...) and
    before the code section (data sections go in ``data``-less order: caller's job)."""
    code = locals_ + body
    return module(
        section(1, vec([functype])),
        section(3, vec([b"\x00"])),
        *extra,
        section(10, vec([encode_uleb(len(code)) + code])),
    )


# ----------------------------------------------------------------------------- issue 11 cases


def shared_prefix_type(n: int = 2000) -> bytes:
    """A function type whose parameter is ``0x63`` + ``n`` 0x65 "shared" bytes (recursion)."""
    t = b"\x01\x60\x01\x63" + b"\x65" * n + b"\x70\x00"
    return MAGIC + b"\x01" + encode_uleb(len(t)) + t


def shared_prefix_block(n: int = 2000) -> bytes:
    """The same prefix run in a block type."""
    return one_function(b"\x02\x63" + b"\x65" * n + b"\x70\x0b\x0b")


def shared_prefix_local(n: int = 2000) -> bytes:
    """The same prefix run in a local declaration."""
    return one_function(b"\x0b", locals_=b"\x01\x01\x63" + b"\x65" * n + b"\x70")


def quadratic_strings(count: int = 262_144, base: int = 1024) -> bytes:
    """One data segment of ``count + 4096`` ``A`` bytes (no NUL) and one function with
    ``count`` ``i32.const`` pointing at distinct addresses inside it."""
    body = bytearray()
    for i in range(count):
        body += b"\x41" + encode_sleb(base + i) + b"\x1a"
    body += b"\x0b"
    seg = b"A" * (count + 4096)
    data = vec([b"\x00\x41" + encode_sleb(base) + b"\x0b" + encode_uleb(len(seg)) + seg])
    code = b"\x00" + bytes(body)
    return module(
        section(1, vec([b"\x60\x00\x00"])),
        section(3, vec([b"\x00"])),
        section(5, vec([b"\x00" + encode_uleb(64)])),
        section(10, vec([encode_uleb(len(code)) + code])),
        section(11, data),
    )


def huge_page_size() -> bytes:
    """A memory with custom page size log2 0xFFFFFFFF and a data segment (~30 bytes)."""
    mem = section(5, vec([b"\x08\x01" + encode_uleb(0xFFFFFFFF)]))
    data = section(11, vec([b"\x00\x41\x00\x0b\x01\x41"]))
    return module(mem, data)


def huge_counts() -> list[bytes]:
    """Sections declaring counts far beyond their bytes (never allocate from them)."""
    big = encode_uleb(0xFFFFFFFF)
    return [
        module(section(1, big)),
        module(section(3, big)),
        module(section(1, vec([b"\x60\x00\x00"])), section(3, vec([b"\x00"])), section(10, big)),
        module(section(11, big)),
        module(section(2, big)),
        one_function(b"\x0b", locals_=b"\x01" + big + b"\x7f"),  # 4G locals of one type
        one_function(b"\x0e" + big + b"\x00\x0b"),  # br_table with 4G labels
        module(section(5, vec([b"\x01\x02\x01"]))),  # memory min 2 > max 1
        module(section(5, vec([b"\x00" + encode_uleb(65537)]))),  # > 4 GiB of 64K pages
    ]


def shared_everything() -> bytes:
    """Valid under shared-everything-threads (wasm-tools --features all): a shared func
    type, shared globals (mutability flags 2/3), a shared table of (shared func) refs, and
    locals / a block type / ref.null with shared heap types."""
    types = section(1, vec([b"\x65\x60\x00\x00"]))
    funcs = section(3, vec([b"\x00"]))
    table = section(4, vec([b"\x65\x70\x02\x01"]))
    mem = section(5, vec([b"\x03\x01\x01"]))
    glob = section(6, vec([b"\x7f\x03\x41\x00\x0b", b"\x7f\x02\x41\x00\x0b"]))
    body = b"\x02\x65\x70\x01\x65\x6e\x02\x65\x6f\xd0\x65\x6f\x0b\x1a\x0b"
    code = section(10, vec([encode_uleb(len(body)) + body]))
    return module(types, funcs, table, mem, glob, code)


def compact_imports() -> bytes:
    """Compact import section (wasm-tools encoding: the count is the number of entries)."""
    imp = vec(
        [
            b"\x03env\x00\x7f" + vec([b"\x01a\x00\x00", b"\x01b\x00\x00", b"\x01c\x03\x7f\x00"]),
            b"\x04wasi\x00\x7e\x00\x01" + vec([b"\x01x", b"\x01y"]),
        ]
    )
    return module(section(1, vec([b"\x60\x01\x7f\x00", b"\x60\x00\x00"])), section(2, imp))


def crafted_cases() -> dict[str, bytes]:
    """Every crafted case by name (the fuzz harness and the CLI test run them all)."""
    cases = {
        "shared_prefix_type": shared_prefix_type(),
        "shared_prefix_block": shared_prefix_block(),
        "shared_prefix_local": shared_prefix_local(),
        "quadratic_strings_small": quadratic_strings(4096),
        "huge_page_size": huge_page_size(),
        "shared_everything": shared_everything(),
        "compact_imports": compact_imports(),
    }
    for i, m in enumerate(huge_counts()):
        cases[f"huge_count_{i}"] = m
    return cases


# ----------------------------------------------------------------------------- issue 24: matcher


FAMILY_CALLS = (1, 2, 4, 8, 16)  # f_i calls f_(i+k) mod F for each k


def _code_section(bodies: list[bytes]) -> bytes:
    return section(10, vec([encode_uleb(len(b)) + b for b in bodies]))


def name_section(names: list[str]) -> bytes:
    """A ``name`` custom section naming function ``i`` ``names[i]``."""
    entries = [encode_uleb(i) + vec([bytes((b,)) for b in n.encode()]) for i, n in enumerate(names)]
    sub = b"\x01" + encode_uleb(len(vec(entries))) + vec(entries)
    return section(0, b"\x04name" + sub)


def matcher_family(count: int, release: int = 0, named: bool = False, hub: bool = False) -> bytes:
    """``count`` functions of one type ``() -> ()`` calling each other (f_i calls
    f_(i+k) mod count for k in ``FAMILY_CALLS``): one huge look-alike family.

    ``release=1`` is the next release: every other function calls targets shifted by one
    and every third function gains ``i32.const 7; drop`` (issue 24's hostile pair: a third
    of the bodies stay byte-identical, all share one signature and two shapes).
    ``named``: with a name section (``family_<i>``), a reference for ``oracle match``.
    ``hub``: every function also calls function 0 first (one caller list of ``count``).
    """
    bodies = []
    for i in range(count):
        body = bytearray(b"\x00")  # no locals
        if release and i % 3 == 0:
            body += b"\x41\x07\x1a"
        if hub and i:
            body += b"\x10\x00"
        for step in FAMILY_CALLS:
            target = (i + step + (1 if release and i % 2 else 0)) % count
            body += b"\x10" + encode_uleb(target)
        body += b"\x0b"
        bodies.append(bytes(body))
    names = (name_section([f"family_{i}" for i in range(count)]),) if named else ()
    return module(
        section(1, vec([b"\x60\x00\x00"])),
        section(3, vec([b"\x00"] * count)),
        _code_section(bodies),
        *names,
    )


# value types and the stack-neutral snippets a "normal" function is made of
_VT = {"i32": 0x7F, "i64": 0x7E, "f32": 0x7D, "f64": 0x7C}
_ZERO = {
    "i32": b"\x41\x00",
    "i64": b"\x42\x00",
    "f32": b"\x43" + bytes(4),
    "f64": b"\x44" + bytes(8),
}


def _normal_types(rng) -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
    names = list(_VT)
    types = {((), ()), (("i32",), ()), (("i32",), ("i32",)), (("i32", "i32"), ("i32",))}
    while len(types) < 40:
        params = tuple(rng.choice(names) for _ in range(rng.randint(0, 4)))
        results = tuple(rng.choice(names) for _ in range(rng.randint(0, 1)))
        types.add((params, results))
    return sorted(types)


Chunk = tuple[bytes, int | None, bytes]  # code before a call, the callee (or None), code after


def _normal_chunk(rng, f_types, sigs, index: int, count: int) -> Chunk:
    """One stack-neutral snippet: constants, arithmetic, memory, a loop, a call."""
    kind = rng.random()
    if kind < 0.30:
        a, b = rng.randint(0, 5000), rng.randint(0, 300)
        op = rng.choice((0x6A, 0x6B, 0x6C, 0x71, 0x72, 0x73, 0x74))
        return (
            b"\x41" + encode_sleb(a) + b"\x41" + encode_sleb(b) + bytes((op,)) + b"\x1a",
            None,
            b"",
        )
    if kind < 0.45:
        addr = rng.randint(0, 60000)
        return (
            b"\x41" + encode_sleb(addr) + b"\x28\x02" + encode_uleb(rng.randint(0, 64)) + b"\x1a",
            None,
            b"",
        )
    if kind < 0.55:
        return (
            b"\x41"
            + encode_sleb(rng.randint(0, 4000))
            + b"\x41"
            + encode_sleb(rng.randint(0, 9))
            + b"\x36\x02"
            + encode_uleb(rng.randint(0, 64)),
            None,
            b"",
        )
    if kind < 0.62:
        return (b"\x03\x40\x41\x00\x0d\x00\x0b", None, b"")  # loop; i32.const 0; br_if 0; end
    if kind < 0.68:
        return (b"\x42" + encode_sleb(rng.randint(-(1 << 40), 1 << 40)) + b"\x1a", None, b"")
    # a call to a nearby function (callers and callees cluster, as source files do)
    callee = min(count - 1, max(0, index + rng.randint(-40, 40)))
    params, results = sigs[f_types[callee]]
    return (b"".join(_ZERO[p] for p in params), callee, b"\x1a" * len(results))


def normal_release(count: int, release: int = 0, seed: int = 24, named: bool = False) -> bytes:
    """A synthetic release of ``count`` functions with realistic variety: 40 signatures,
    sizes from a few to a few hundred instructions, constants, memory accesses, loops and
    calls to nearby functions. ``release=1`` is the next release: ~3% of the functions
    edited, ~1% deleted and ~1% added (so indices shift), the rest identical. ``named``:
    with a name section (``fn_<original index>``, ``new_<index>`` for added ones)."""
    import random

    rng = random.Random(seed)
    sigs = _normal_types(rng)
    f_types = [rng.randrange(len(sigs)) for _ in range(count)]
    sizes = [max(1, min(120, int(rng.lognormvariate(1.6, 0.9)))) for _ in range(count)]
    bodies = [
        [_normal_chunk(rng, f_types, sigs, i, count) for _ in range(sizes[i])] for i in range(count)
    ]
    order = list(range(count))
    if release:
        edit = random.Random(seed + release)
        for i in range(count):
            r = edit.random()
            if r < 0.03:
                bodies[i].insert(
                    edit.randrange(len(bodies[i]) + 1), _normal_chunk(edit, f_types, sigs, i, count)
                )
        dropped = {i for i in range(count) if edit.random() < 0.01}
        order = [i for i in order if i not in dropped]
        for _ in range(len(dropped)):
            order.insert(edit.randrange(len(order) + 1), -1)  # a new function
    # function indices of this release, calls remapped (a call to a dropped function
    # becomes a call to its neighbour)
    new_index = {}
    for pos, i in enumerate(order):
        if i >= 0:
            new_index[i] = pos
    extra = random.Random(seed + 100 + release)
    type_of, codes = [], []
    for pos, i in enumerate(order):
        if i < 0:
            t = extra.randrange(len(sigs))
            chunks = [
                _normal_chunk(extra, f_types, sigs, min(pos, count - 1), count)
                for _ in range(extra.randint(2, 30))
            ]
        else:
            t, chunks = f_types[i], bodies[i]
        type_of.append(t)
        body = bytearray(b"\x00")
        for before, callee, after in chunks:
            body += before
            if callee is not None:
                if callee in new_index:
                    body += b"\x10" + encode_uleb(new_index[callee])
                else:  # the callee was dropped: the call site goes, its operands stay
                    ps, rs = sigs[f_types[callee]]
                    body += b"\x1a" * len(ps) + b"".join(_ZERO[r] for r in rs)
            body += after
        body += b"".join(_ZERO[r] for r in sigs[t][1]) + b"\x0b"
        codes.append(bytes(body))
    types = [
        b"\x60" + vec([bytes((_VT[p],)) for p in ps]) + vec([bytes((_VT[r],)) for r in rs])
        for ps, rs in sigs
    ]
    names = [f"fn_{i}" if i >= 0 else f"new_{pos}" for pos, i in enumerate(order)]
    return module(
        section(1, vec(types)),
        section(3, vec([encode_uleb(t) for t in type_of])),
        section(5, vec([b"\x00\x02"])),
        _code_section(codes),
        *((name_section(names),) if named else ()),
    )


# ----------------------------------------------------------------------------- benchmark


def _time_analyze(data: bytes) -> tuple[float, int]:
    from kbtool.wasm import analyze_module

    t0 = time.perf_counter()
    a = analyze_module(data)
    return time.perf_counter() - t0, a.instr_count


GROWTH_SIZES = (1_000, 2_000, 4_000, 10_000, 100_000)
SMOKE_SIZES = (100, 200)
ROOT = Path(__file__).resolve().parents[1]

# one measurement in a fresh process (its own peak RSS): ingest release 0 then release 1 of
# one generator into a fresh KB; the second ingest runs the matcher against the first
_CHILD = r"""
import json, resource, sys, tempfile, time
from pathlib import Path
from benchmarks import crafted
from kbtool.kb.db import open_rw
from kbtool.services.ingest import ingest_bytes
import kbtool.identity.matcher as matcher_mod  # ingest imports it when it needs it
kind, count = sys.argv[1], int(sys.argv[2])
gen = crafted.matcher_family if kind == "family" else crafted.normal_release
a, b = gen(count, 0), gen(count, 1)
seen = []  # the matcher's own stats of the ingest's run (comparisons: load-independent)
real = matcher_mod.match_functions_staged
def _staged(old, new, stats=None, **kw):
    stats = [] if stats is None else stats
    out = real(old, new, stats=stats, **kw)
    seen.extend(stats)
    return out
matcher_mod.match_functions_staged = _staged
with tempfile.TemporaryDirectory() as tmp:
    conn = open_rw(Path(tmp) / "kb.db")
    t0 = time.perf_counter()
    ingest_bytes(conn, a, label="r0", program="bench")
    t1, c1 = time.perf_counter(), time.process_time()
    res = ingest_bytes(conn, b, label="r1", program="bench")
    t2, c2 = time.perf_counter(), time.process_time()
    out = {"bytes": len(b), "first": t1 - t0, "second": t2 - t1, "cpu": c2 - c1,
           "carried": res.carried, "notes": res.matcher_notes,
           "work": seen[-1].total if seen else 0}
    if len(sys.argv) > 3:  # oracle match: release 0 with names as the reference of release 1
        from kbtool.services.oracle import add_oracle, match_oracle
        ref = Path(tmp) / "ref.wasm"
        ref.write_bytes(gen(count, 0, named=True))
        add_oracle(conn, ref, label="ref")
        t3 = time.perf_counter()
        got = match_oracle(conn, res.version_id)
        out["oracle"] = time.perf_counter() - t3
        out["oracle_named"] = got["written"]
    conn.close()
out["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(out))
"""


def measure(kind: str, count: int, oracle: bool = False, timeout: float = 3600) -> dict:
    """Ingest seconds (both releases), peak RSS and the matcher notes of one size, measured
    in a fresh process; ``{"error": ...}`` when it fails or runs past ``timeout``."""
    import json
    import os
    import subprocess

    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p),
    }
    argv = [sys.executable, "-c", _CHILD, kind, str(count)] + (["oracle"] if oracle else [])
    try:
        out = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"over {timeout:.0f} s"}
    if out.returncode:
        tail = (out.stderr.strip().splitlines() or ["?"])[-1]
        return {"error": tail[:80]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def growth(sizes: tuple[int, ...], oracle_at: int | None, timeout: float) -> None:
    """Print the matcher family's ingest growth curve next to a normal release."""
    print("matcher look-alike family (issue 24) vs a normal release of the same size:")
    print(
        "(ingest s: wall seconds of the release that runs the matcher; cpu s: its CPU seconds;"
        " work/fn: the matcher's comparisons per function, load-independent)"
    )
    print(
        f"{'functions':>9}  {'family KB':>9} {'ingest s':>9} {'cpu s':>8} {'work/fn':>7} "
        f"{'peak MiB':>8}  {'normal KB':>9} {'ingest s':>9} {'cpu s':>8} {'work/fn':>7} "
        f"{'peak MiB':>8}  family notes"
    )
    for count in sizes:
        fam, norm = (
            measure("family", count, timeout=timeout),
            measure("normal", count, timeout=timeout),
        )

        def cols(r: dict, count: int = count) -> str:
            if "error" in r:
                return f"{'-':>9} {r['error'][:36]:>36}"
            return (
                f"{r['bytes'] / 1024:9.0f} {r['second']:9.2f} {r['cpu']:8.2f} "
                f"{r['work'] / (2 * count):7.1f} {r['peak_rss_mib']:8.0f}"
            )

        notes = "; ".join(fam.get("notes") or []) or ("-" if "error" not in fam else "")
        print(f"{count:>9,}  {cols(fam)}  {cols(norm)}  {notes}", flush=True)
    if oracle_at:
        for kind in ("family", "normal"):
            r = measure(kind, oracle_at, oracle=True, timeout=timeout)
            if "error" in r:
                print(f"oracle match at {oracle_at:,} functions ({kind}): {r['error']}")
            else:
                print(
                    f"oracle match at {oracle_at:,} functions ({kind}): {r['oracle']:.2f} s, "
                    f"{r['oracle_named']:,} names written"
                )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true", help="tiny sizes, no corpus")
    ap.add_argument("--count", type=int, default=262_144, help="i32.const addresses")
    ap.add_argument(
        "--sizes",
        type=lambda v: tuple(int(x) for x in v.split(",")),
        help="matcher family sizes (default 1000,2000,4000,10000,100000)",
    )
    ap.add_argument("--only", choices=("strings", "matcher"), help="run one benchmark only")
    ap.add_argument("--timeout", type=float, default=3600, help="seconds per measurement")
    args = ap.parse_args(argv)
    if args.only != "matcher":
        count = 2048 if args.smoke else args.count
        crafted = quadratic_strings(count)
        dt, n = _time_analyze(crafted)
        print(
            f"crafted quadratic-strings module: {len(crafted) / 1e6:.2f} MB, {n} instructions, "
            f"analyze_module {dt:.2f} s ({len(crafted) / 1e6 / max(dt, 1e-9):.2f} MB/s)"
        )
        if not args.smoke and CORPUS.exists():
            peer = CORPUS.read_bytes()
            dt2, n2 = _time_analyze(peer)
            print(
                f"peer {CORPUS.name}: {len(peer) / 1e6:.2f} MB, {n2} instructions, "
                f"analyze_module {dt2:.2f} s ({len(peer) / 1e6 / max(dt2, 1e-9):.2f} MB/s)"
            )
    if args.only != "strings":
        sizes = args.sizes or (SMOKE_SIZES if args.smoke else GROWTH_SIZES)
        growth(sizes, oracle_at=SMOKE_SIZES[0] if args.smoke else 2_000, timeout=args.timeout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
