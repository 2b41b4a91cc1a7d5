"""Semantic check of lifted C: a C source built to wasm with clang, every exported function
lifted, the lifted C built with gcc into a shared library, and return values plus the final
linear memory compared with wasmtime running the wasm on the same inputs."""

from __future__ import annotations

import ctypes
import math
import random
import struct
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from kbtool.lift import lift_module, prelude_path, prepare

_CT = {"i32": "int32_t", "i64": "int64_t", "f32": "float", "f64": "double"}
_CTYPES = {
    "i32": ctypes.c_int32,
    "i64": ctypes.c_int64,
    "f32": ctypes.c_float,
    "f64": ctypes.c_double,
}


@dataclass
class SemResult:
    """What a run found: lifted C per exported name, calls that agreed, mismatches."""

    c: dict[str, str] = field(default_factory=dict)
    agree: int = 0
    mismatches: list = field(default_factory=list)
    memory_same: bool = True


def _proto(lm, fi: int) -> str:
    t = lm.module.func_type(fi)
    ret = _CT[t.results[0]] if t.results else "void"
    return f"{ret} {lm.func_c[fi]}({', '.join(_CT[p] for p in t.params) or 'void'});"


def runtime_c(lm) -> str:
    """C definitions of memory, globals and table 0 for the lifted functions."""
    m = lm.module
    pages = m.memories[0].min if m.memories else 1
    size = pages * 65536
    out = [
        "#include <stdint.h>",
        "#include <string.h>",
        "#include <stdlib.h>",
        f"static uint8_t kb_mem[{size}];",
        "uint8_t *M = kb_mem;",
        f"int32_t memory_size(void) {{ return {pages}; }}",
        "int32_t memory_grow(int32_t n) { return n == 0 ? memory_size() : -1; }",
    ]
    for i, g in enumerate(m.globals):
        init = g.init if isinstance(g.init, int | float) else 0
        out.append(f"{_CT.get(g.valtype, 'void *')} {lm.global_c[i]} = {init};")
    table: list[str] = []
    for el in m.elements:
        if el.mode == "active" and el.table_index == 0 and el.offset is not None:
            for k, fi in enumerate(el.func_indices):
                while len(table) <= el.offset + k:
                    table.append("0")
                if fi is not None:
                    out.append(_proto(lm, fi))
                    table[el.offset + k] = f"(wasm_funcptr){lm.func_c[fi]}"
    out.append(
        f"static wasm_funcptr kb_table[{max(len(table), 1)}] = {{{', '.join(table) or '0'}}};"
    )
    out.append(
        "wasm_funcptr wasm_table_func(uint32_t t, int32_t i) { (void)t; return kb_table[i]; }"
    )
    out.append("void kb_init(void) {")
    for k, seg in enumerate(m.data_segments):
        if not seg.passive and seg.offset is not None:
            arr = ", ".join(str(b) for b in seg.data)
            out.append(
                f"  {{ static const uint8_t d{k}[] = {{{arr}}}; "
                f"memcpy(M + {seg.offset}, d{k}, {len(seg.data)}); }}"
            )
    out.append("}")
    return "\n".join(out) + "\n"


def inputs(ty: str, rng: random.Random) -> list:
    """Argument values per wasm type: edges, small counts and random values."""
    if ty == "i32":
        return [
            0,
            1,
            -1,
            2,
            7,
            13,
            40,
            100,
            255,
            -100,
            0x7FFFFFFF,
            -0x80000000,
            12345,
            rng.randrange(-1 << 31, 1 << 31),
            rng.randrange(0, 64),
            rng.randrange(0, 1000),
        ]
    if ty == "i64":
        return [
            0,
            1,
            -1,
            3,
            1 << 40,
            -(1 << 50),
            0x7FFFFFFFFFFFFFFF,
            rng.randrange(-1 << 63, 1 << 63),
            rng.randrange(0, 1000),
        ]
    return [0.0, 1.5, -2.25, 3.0, 1e10, -7.5, 0.1, rng.uniform(-100, 100)]


def _same(a, b, ty) -> bool:
    if ty in ("f32", "f64"):
        if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
            return True
        fmt = "<f" if ty == "f32" else "<d"
        return struct.pack(fmt, a) == struct.pack(fmt, b)
    return a == b


def check(tmp_path: Path, source: str, opt: str = "-O2", calls: int = 24) -> SemResult:
    """Build ``source`` (C, no libc) to wasm, lift it, and run both on the same inputs."""
    src = tmp_path / "fix.c"
    src.write_text(source)
    wasm = tmp_path / "fix.wasm"
    subprocess.run(
        [
            "clang",
            "--target=wasm32",
            opt,
            "-nostdlib",
            "-Wl,--no-entry",
            "-Wl,--export-all",
            "-o",
            str(wasm),
            str(src),
        ],
        check=True,
    )
    return check_wasm(tmp_path, wasm.read_bytes(), calls)


def wat(tmp_path: Path, text: str) -> bytes:
    """A .wat text assembled with wat2wasm."""
    src = tmp_path / "fix.wat"
    src.write_text(text)
    out = tmp_path / "fix.wasm"
    subprocess.run(["wat2wasm", "--enable-all", str(src), "-o", str(out)], check=True)
    return out.read_bytes()


def check_wasm(tmp_path: Path, data: bytes, calls: int = 24) -> SemResult:
    """Lift every function of ``data`` and run the exported ones under gcc and wasmtime."""
    import wasmtime

    lm = prepare(data)
    results = list(lift_module(lm))
    assert not [r.func_index for r in results if r.truncated]
    (tmp_path / "lifted.c").write_text("".join(r.text for r in results) + runtime_c(lm))
    lib = tmp_path / "lifted.so"
    renames = [f"-D{n}=kb{n}" for n in [*lm.func_c, *lm.global_c] if n.startswith("__")]
    subprocess.run(
        [
            "gcc",
            "-shared",
            "-fPIC",
            "-O1",
            "-fwrapv",
            "-w",
            *renames,
            "-include",
            prelude_path(),
            str(tmp_path / "lifted.c"),
            "-o",
            str(lib),
            "-lm",
        ],
        check=True,
    )
    so = ctypes.CDLL(str(lib))
    so.kb_init()
    store = wasmtime.Store()
    inst = wasmtime.Instance(store, wasmtime.Module(store.engine, data), [])
    exports = inst.exports(store)
    m = lm.module
    by_index = {r.func_index: r.text for r in results}
    out = SemResult()
    rng = random.Random(1234)
    funcs = [
        (e.name, e.index) for e in m.exports if e.kind == "func" and not e.name.startswith("__")
    ]
    for name, fi in sorted(funcs):
        out.c[name] = by_index[fi]
        t = m.func_type(fi)
        cf = getattr(so, lm.func_c[fi])
        cf.argtypes = [_CTYPES[p] for p in t.params]
        cf.restype = _CTYPES[t.results[0]] if t.results else None
        pools = [inputs(p, rng) for p in t.params]
        for k in range(calls):
            args = [pool[(k * (j + 3) + j) % len(pool)] for j, pool in enumerate(pools)]
            if t.params and t.params[0] == "f32":  # the f32 both sides receive, shown as such
                args = [
                    struct.unpack("<f", struct.pack("<f", a))[0] if isinstance(a, float) else a
                    for a in args
                ]
            want = exports[name](store, *args)
            got = cf(*args)
            if not t.results or _same(want, got, t.results[0]):
                out.agree += 1
            else:
                out.mismatches.append((name, args, want, got))
    wmem = exports.get("memory") if hasattr(exports, "get") else None
    if wmem is not None:
        size = wmem.data_len(store)
        wbytes = bytes(wmem.read(store, 0, size))
        cbytes = ctypes.string_at(ctypes.c_void_p.in_dll(so, "M").value, size)
        out.memory_same = wbytes == cbytes
    return out
