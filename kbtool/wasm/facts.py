"""Instruction walk and per-function facts (the hot path).

One table-driven loop over every body: the opcode byte indexes ``BYTE_KIND`` (immediate
kind), immediates are skipped without building ints where the value is not needed, and
the only per-instruction work is appending the op id to an ``array('H')``. Facts that
need values (calls, constants, globals, memory offsets) decode just those LEBs.

Shape hash (DESIGN "Identity"): the hash of the type signature text and the body bytes in
which the build-dependent immediates are replaced: call/return_call/ref.func targets by
``import module.field`` (imports) or a placeholder (defined functions); type indices
(call_indirect, call_ref, block types) by the signature text; i32/i64 constants that point
into a data segment by the bytes they point at (the string, or the first 16 bytes);
table/element indices by a placeholder; in a Go module, function values and return PCs
``(PC_F << 16) | PC_B`` (``PC_F = 0x1000 + i``: every function carries its own number and
its callees' in ``i64.const``/``i32.const``) by a placeholder plus ``PC_B`` (the resume
block, which is structure). Everything else (local indices, branch depths, memory offsets,
other constants, local declarations) is kept verbatim.

A body the fast loop cannot walk cleanly is re-decoded by the careful decoder
(:func:`kbtool.wasm.instr.check_body`), which raises the precise WasmFormatError.

The loop itself is :func:`kbtool.wasm.decoder.analyze_range` (compiled with mypyc when
installed, see :mod:`kbtool.wasm.active`); the data map (addresses -> strings and data
bytes) is :mod:`kbtool.wasm.datamap`. This module builds the per-module context, runs the
loop (in this process or on a fork pool) and assembles :class:`ModuleAnalysis`.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import os
from array import array
from collections.abc import Iterator
from hashlib import blake2b
from typing import Any

from kbtool.plainclass import NEW, Plain

from . import active
from .datamap import (  # noqa: F401 - re-exported: facts was their home
    _INIT_RE,
    DataMap,
    _init_matches,
    build_data_map,
    passive_addresses,
    static_region,
)
from .opcodes import MNEMONICS
from .reader import Module, parse_module
from .toolchain import detect_toolchain

#: the data map's limits, still importable from here (facts was their home); their home is
#: the pure data map, looked up when first asked for (see ``datamap._FROM_DMAP``)
_FROM_DATAMAP = frozenset({"_RUN", "MAX_CSTRING", "MAX_RUN", "MAX_STR_LEN", "MIN_STRING"})


def __getattr__(name: str) -> Any:  # PEP 562: ``from kbtool.wasm.facts import MAX_RUN``
    if name in _FROM_DATAMAP:
        from . import datamap

        return getattr(datamap, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


PROGRESS_STEP = 1 << 20  # bytes of code between two progress callbacks
GO_FUNC_VALUE_OFFSET = 0x1000  # cmd/link/internal/wasm funcValueOffset: PC_F of code index 0

# ----------------------------------------------------------------------------- results


class FuncFacts(Plain):
    """The static facts of one function."""

    __slots__ = _FIELDS = (
        "index",
        "imported",
        "import_module",
        "import_field",
        "type_sig",
        "export_names",
        "raw_name",
        "body_offset",
        "body_size",
        "instr_count",
        "ops",
        "calls",
        "call_indirect",
        "ref_funcs",
        "consts",
        "strings",
        "globals_used",
        "mem_ops",
        "atomic_sites",
        "loops",
        "body_hash",
        "shape_hash",
    )

    def __init__(
        self,
        index: int,
        imported: bool,
        import_module: str | None,
        import_field: str | None,
        type_sig: str,
        export_names: list[str],
        raw_name: str | None,
        body_offset: int,
        body_size: int,
        instr_count: int,
        ops: bytes,
        calls: list[int],
        call_indirect: int,
        ref_funcs: list[int],
        consts: list[int],
        strings: list[str],
        globals_used: list[int],
        mem_ops: list[tuple[int, int, int]],
        atomic_sites: int,
        loops: int,
        body_hash: str,
        shape_hash: str,
    ) -> None:
        self.index = index
        self.imported = imported
        self.import_module = import_module
        self.import_field = import_field
        self.type_sig = type_sig
        self.export_names = export_names
        self.raw_name = raw_name
        self.body_offset = body_offset
        self.body_size = body_size
        self.instr_count = instr_count
        self.ops = ops
        self.calls = calls
        self.call_indirect = call_indirect
        self.ref_funcs = ref_funcs
        self.consts = consts
        self.strings = strings
        self.globals_used = globals_used
        self.mem_ops = mem_ops
        self.atomic_sites = atomic_sites
        self.loops = loops
        self.body_hash = body_hash
        self.shape_hash = shape_hash

    @property
    def import_name(self) -> str | None:
        if not self.imported:
            return None
        return f"{self.import_module}.{self.import_field}"

    def mnemonics(self) -> list[str]:

        a = array("H")
        a.frombytes(self.ops)
        return [MNEMONICS[i] for i in a]


class ModuleAnalysis(Plain):
    """A module with the static facts of each of its defined functions."""

    _FIELDS = ("module", "functions", "toolchain_version")
    module: Module
    functions: list[FuncFacts]
    toolchain_version: str | None
    #: the data walk's stops, from the decoder when it decoded every body in this process
    #: (else None): ``(positions, index)``, the file offsets of each ``i32``/``i64.const``,
    #: memarg, ``global.get``/``set`` and ``(return_)call_indirect`` in body order, and per
    #: code index (one more at the end) the count of those in the bodies before it, each a
    #: little-endian i32; the walk's all-unknown stack jumps from one to the next
    #: (:func:`kbtool.analysis.datawalk.body_refs`), and drops them after use
    hot: tuple[bytes, bytes] | None  # (not a field: not in ==, repr)
    #: the facts rows' texts, from the decoder as ``hot`` (else None): per code index the
    #: JSON text of ``mem_ops`` and of ``calls`` (``orjson.dumps``'s) and the distinct
    #: callees in first-seen order; :func:`kbtool.services.ingest_rows.fact_rows` reads them
    side: tuple[list[str], list[str], list[list[int]]] | None  # (not a field either)

    def __init__(
        self,
        module: Module,
        functions: list[FuncFacts] = NEW,
        toolchain_version: str | None = None,
        hot: tuple[bytes, bytes] | None = None,
        side: tuple[list[str], list[str], list[list[int]]] | None = None,
    ) -> None:
        self.module = module
        self.functions = [] if functions is NEW else functions
        self.toolchain_version = toolchain_version
        self.hot = hot
        self.side = side

    @property
    def instr_count(self) -> int:
        return sum(f.instr_count for f in self.functions)


# ----------------------------------------------------------------------------- context


def _digest(b: bytes) -> str:
    return blake2b(b, digest_size=16).hexdigest()


def is_go_module(m: Module, toolchain: str | None = None) -> bool:
    """A Go-built module: the toolchain says so, or the function table at ``0x1000`` lists
    most defined functions (the Go linker's function-value table)."""
    if not m.code:
        return False
    tc = (toolchain if toolchain is not None else detect_toolchain(m, ()) or "").lower()
    return tc.startswith("go") or any(
        el.offset == GO_FUNC_VALUE_OFFSET and len(el.func_indices) >= len(m.code) // 2
        for el in m.elements
        if isinstance(el.offset, int)
    )


class _Ctx:
    """What the decoder loop reads of a module: its bytes, the parsed module, the shape
    hash's replacement tables, the data map and the address ranges."""

    def __init__(self, data: bytes, m: Module) -> None:

        self.data = data
        self.m = m
        self.toolchain = detect_toolchain(m, ())
        tc = (self.toolchain or "").lower()
        sized_first = tc.startswith(("rustc", "go"))
        self.nimp = m.num_func_imports
        self.type_text = [t.text() for t in m.types]
        self.type_repl = [b"\xffT" + t.encode() + b"\x00" for t in self.type_text]
        self.imp_repl = [
            b"\xffI" + f"{i.module}.{i.field}".encode() + b"\x00" for i in m.func_imports
        ]
        self.dmap = build_data_map(data, m, sized_first)
        self.static_lo, self.static_hi = static_region(m, self.dmap)
        # Go: function values (PC_F << 16) | PC_B with PC_F = 0x1000 + code index
        self.go = is_go_module(m, self.toolchain)
        self.gov_lo = GO_FUNC_VALUE_OFFSET << 16 if self.go else 1
        self.gov_hi = (GO_FUNC_VALUE_OFFSET + len(m.code)) << 16 if self.go else 0
        # Go addresses are i64 constants: static ones outside every data segment (zero-filled
        # gaps, .bss/.noptrbss) get a placeholder
        self.go_bss_lo = self.static_lo if self.go else 1
        self.go_bss_hi = self.static_hi if self.go else 0
        if self.go:
            self.dmap.ptr_mask = (self.static_lo, self.static_hi, self.gov_lo, self.gov_hi)
        self.hot: tuple[bytes, bytes] | None = None  # (set by the decoder: ModuleAnalysis.hot)
        self.side: tuple[list[str], list[str], list[list[int]]] | None = None  # (.side)
        self.exports: dict[int, list[str]] = {}
        for e in m.exports:
            if e.kind == "func":
                self.exports.setdefault(e.index, []).append(e.name)

    def sig(self, func_index: int) -> str:
        ti = self.m.func_type_index(func_index)
        return self.type_text[ti] if ti < len(self.type_text) else f"type[{ti}]"


def _import_facts(ctx: _Ctx) -> list[FuncFacts]:
    out = []
    m = ctx.m
    for i, imp in enumerate(m.func_imports):
        sig = ctx.sig(i)
        h = _digest(f"import {imp.module}.{imp.field} {sig}".encode())
        out.append(
            FuncFacts(
                i,
                True,
                imp.module,
                imp.field,
                sig,
                ctx.exports.get(i, []),
                m.func_names.get(i),
                0,
                0,
                0,
                b"",
                [],
                0,
                [],
                [],
                [],
                [],
                [],
                0,
                0,
                h,
                h,
            )
        )
    return out


# ----------------------------------------------------------------------------- workers

_WORKER_STATE: dict = {}
#: modules with more bytes than this are worth two processes (``decode_workers``): the pure
#: decoder, the data model's scan; ``KBTOOL_PARALLEL_DECODE_BYTES`` overrides it (tests lower
#: it to exercise the pools)
PARALLEL_DECODE_BYTES = 4_000_000
#: the threshold for :func:`analyze_module` when the compiled decoder runs: the pool's costs
#: (pickling every function's facts back, each worker rebuilding the data map's caches) then
#: outweigh the halved loop (ffmpeg, 32.7 MB: 1.5-1.9 s CPU in one process, 2.3 s on two,
#: slower on a busy machine)
PARALLEL_DECODE_BYTES_COMPILED = 64_000_000


def _workers_above(nbytes: int, default: int) -> int:
    try:
        limit = int(os.environ.get("KBTOOL_PARALLEL_DECODE_BYTES", default))
    except ValueError:
        limit = default
    return 2 if nbytes > limit and (os.cpu_count() or 1) > 1 else 1


def decode_workers(nbytes: int) -> int:
    """Processes for whole-module work over every body of a module of ``nbytes`` (the
    pure decoder, the data model's scan): 2 for big modules on a multi-core machine (bodies
    are independent; ~15-40% faster), else 1."""
    return _workers_above(nbytes, PARALLEL_DECODE_BYTES)


def analyze_workers(nbytes: int) -> int:
    """Processes for :func:`analyze_module` on a module of ``nbytes``: as
    :func:`decode_workers` with the pure decoder; with the compiled one, 2 only above
    ``PARALLEL_DECODE_BYTES_COMPILED`` (below it one process is cheaper and as fast)."""
    if active.PATH == "compiled":
        return _workers_above(nbytes, PARALLEL_DECODE_BYTES_COMPILED)
    return decode_workers(nbytes)


def _worker_run(rng: tuple[int, int]) -> list[tuple]:
    with gc_paused():
        return active.analyze_range(_WORKER_STATE["ctx"], rng[0], rng[1])


def _analyze_range(
    ctx: _Ctx, first: int, last: int, progress=None, total_done: int = 0, total: int = 0
) -> list[FuncFacts]:
    """Facts of the defined functions with code indices ``first <= i < last``."""
    return [
        FuncFacts(*t)
        for t in active.analyze_range(ctx, first, last, progress, total_done, total, PROGRESS_STEP)
    ]


def _split(code: list[tuple[int, int]], parts: int) -> list[tuple[int, int]]:
    """Split body indices into ``parts`` ranges of about equal byte size."""
    if not code:
        return []
    total = code[-1][1] - code[0][0]
    bounds = [0]
    target = total / parts
    acc_start = code[0][0]
    for i, (s, _e) in enumerate(code):
        if len(bounds) < parts and s - acc_start >= target * len(bounds):
            bounds.append(i)
    bounds.append(len(code))
    return [(bounds[i], bounds[i + 1]) for i in range(len(bounds) - 1) if bounds[i] < bounds[i + 1]]


# ----------------------------------------------------------------------------- API


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic garbage collector paused for the block (restored after): decoding
    allocates a few lists and dicts per function and none of them form cycles, yet the
    collector's passes over the growing heap cost as much as the compiled decode itself
    (ffmpeg: 2.3 s CPU with it, 1.0 s without)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def analyze_module(data, *, progress=None, workers: int = 1) -> ModuleAnalysis:
    """Parse ``data`` and compute :class:`FuncFacts` for every function (imports first).

    ``progress(done_bytes, total_bytes)`` is called about every MB of code.
    ``workers > 1`` splits the bodies over a process pool (fork); the default decodes in
    this process. The garbage collector is paused meanwhile (:func:`gc_paused`).
    """
    if not isinstance(data, bytes):
        data = bytes(data)
    with gc_paused():
        return _analyze_module(data, progress, workers)


def _analyze_module(data: bytes, progress, workers: int) -> ModuleAnalysis:
    m = parse_module(data)
    ctx = _Ctx(data, m)
    funcs = _import_facts(ctx)
    code = m.code
    total = (code[-1][1] - code[0][0]) if code else 0
    if workers > 1 and len(code) > 64:
        funcs.extend(_analyze_parallel(data, ctx, workers, progress, total))
    else:
        funcs.extend(_analyze_range(ctx, 0, len(code), progress, 0, total))
    if progress is not None:
        progress(total, total)

    sample: dict[str, None] = {}
    for f in funcs:
        for s in f.strings:
            sample[s] = None
        if len(sample) > 5000:
            break
    tc = ctx.toolchain or detect_toolchain(m, list(sample))
    return ModuleAnalysis(m, funcs, tc, ctx.hot, ctx.side)


def _analyze_parallel(data, ctx, workers, progress, total):
    """Decode the bodies on a pool of ``workers`` forked processes that inherit the context
    and die with this process; in this process instead when it runs several threads (a
    fork from the threaded MCP server can deadlock): see :mod:`kbtool.wasm.workers`."""
    # imported here: a plain import of kbtool.wasm (the lifter, the web server) needs no pool
    from concurrent.futures import ProcessPoolExecutor

    from .workers import kill_workers, pool_context, signals_deferred, worker_init

    mpctx = pool_context()
    if mpctx is None:
        return _analyze_range(ctx, 0, len(ctx.m.code), progress, 0, total)
    ranges = _split(ctx.m.code, workers * 4)
    out: list[FuncFacts] = []
    _WORKER_STATE["ctx"] = ctx  # inherited by the forked workers
    ex = ProcessPoolExecutor(
        max_workers=workers, mp_context=mpctx, initializer=worker_init, initargs=(os.getpid(),)
    )
    try:
        done = 0
        with signals_deferred():  # map submits every range: the workers fork here
            results = ex.map(_worker_run, ranges)
        for (a, b), res in zip(ranges, results, strict=True):
            out.extend(FuncFacts(*t) for t in res)
            done += ctx.m.code[b - 1][1] - ctx.m.code[a][0]
            if progress is not None:
                progress(done, total)
    except BaseException:
        kill_workers(ex)
        raise
    else:
        ex.shutdown(wait=True)
    finally:
        _WORKER_STATE.pop("ctx", None)
    return out


def function_body(data, m: Module, func_index: int) -> tuple[int, int]:
    """File offsets ``(start, end)`` of a defined function's body."""
    i = func_index - m.num_func_imports
    if i < 0 or i >= len(m.code):
        raise IndexError(f"function {func_index} has no body")
    return m.code[i]


def edge_values(callees: list[list[int]], nimp: int) -> list[int]:
    """The call edges of the decoder's distinct callees per defined body (``side[2]`` of
    :class:`ModuleAnalysis`; body ``k`` is function ``nimp + k``) as one flat list
    ``[callee, caller, ...]`` in (callee, caller) order, by the chosen decoder's
    ``slots.edge_values`` (compiled with the twin)."""
    impl = importlib.import_module(f"{active.IMPL.__name__}.slots")
    return impl.edge_values(callees, nimp)
