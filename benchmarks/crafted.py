"""Crafted hostile modules (issue 11) and an ingest benchmark of the worst one.

The builders are used by tests/test_wasm_hardening.py and benchmarks/fuzz.py. The benchmark
times :func:`kbtool.wasm.analyze_module` on the quadratic-strings module (one data segment
of ``A`` bytes without a NUL, one i32.const per distinct address inside it) next to a real
module of the corpus (lightningcss, 14 MB) measured in the same run.

    nice python -m benchmarks.crafted            # full size (1.57 MB crafted module)
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


# ----------------------------------------------------------------------------- benchmark


def _time_analyze(data: bytes) -> tuple[float, int]:
    from kbtool.wasm import analyze_module

    t0 = time.perf_counter()
    a = analyze_module(data)
    return time.perf_counter() - t0, a.instr_count


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true", help="tiny crafted module, no corpus")
    ap.add_argument("--count", type=int, default=262_144, help="i32.const addresses")
    args = ap.parse_args(argv)
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
