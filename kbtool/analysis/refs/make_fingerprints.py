"""Derive kbtool/analysis/data/fingerprints.json from the named reference builds.

Usage: python kbtool/analysis/refs/make_fingerprints.py BUILD_DIR [OUT_JSON]
(BUILD_DIR as written by build.sh). The name section of each build is the truth; the
functions of the reference programs themselves (main, helpers) are left out.
"""

from __future__ import annotations

import json
import pathlib
import re
import sys

from kbtool.analysis.families import demangle_rust, family_of, is_rust_runtime
from kbtool.analysis.fingerprints import (
    FingerprintDB,
    LooseContext,
    RefEntry,
    full_hash,
    loose_digests,
)
from kbtool.wasm import analyze_module

# functions of the reference programs (not library code)
OWN = {
    "main",
    "cmp",
    "my_log",
    "worker",
    "__original_main",
    "__main_argc_argv",
    "point_norm",
    "node_walk",
    "entry",
    "__stack_chk_fail",
    "fail",
    "guarded",
    "run",
    "setup",
}


def is_reference_library(name: str) -> bool:
    """Library code of a reference build (not the reference program's own functions)."""
    if name in OWN:
        return False
    rust = demangle_rust(name)
    return rust is None or is_rust_runtime(rust)


_SECTION = re.compile(r"^\s+-\s+[0-9a-f]+\s+[0-9a-f]+ ([A-Za-z_.]+)$")
_INPUT = re.compile(r"^\s+-\s+[0-9a-f]+\s+[0-9a-f]+\s+\S.*:\((.+)\)$")
_SYMBOL = re.compile(r"^\s+-\s+[0-9a-f]+\s+[0-9a-f]+\s+(\S+)$")


def map_names(map_text: str) -> list[str]:
    """Names of the CODE entries of a wasm-ld link map, in body order."""
    out: list[str] = []
    in_code = False
    want = False
    for line in map_text.splitlines():
        sec = _SECTION.match(line)
        if sec:
            in_code = sec.group(1) == "CODE"
            continue
        if not in_code:
            continue
        if _INPUT.match(line):
            out.append(_INPUT.match(line).group(1))
            want = True
        elif want and _SYMBOL.match(line):
            out[-1] = _SYMBOL.match(line).group(1)
            want = False
    return out


def describe(stem: str) -> str:
    tool = {
        "wasi": "wasi-libc (Debian 0.0~git20220510) + clang 14",
        "zig": "zig cc 0.17.1 (PyPI ziglang; its wasi-libc + compiler_rt)",
        "emcc": "emscripten 3.1.6 (Debian) emcc",
        "rust": "rustc 1.63 (Debian) + libstd-rust-dev-wasm32; refs/rust_std.rs",
    }.get(stem.split("-")[0], "?")
    return f"{tool}; {stem}"


def main(argv: list[str]) -> int:
    src = pathlib.Path(argv[1])
    out = (
        pathlib.Path(argv[2])
        if len(argv) > 2
        else pathlib.Path(__file__).resolve().parent.parent / "data" / "fingerprints.json"
    )
    merged: dict[tuple[str, str, str], dict] = {}
    builds: dict[str, str] = {}
    for path in sorted(src.glob("*.wasm")):
        bid = path.stem
        builds[bid] = describe(bid)
        data = path.read_bytes()
        a = analyze_module(data)
        bounds = LooseContext(data, a.module)
        names = dict(a.module.func_names)
        mp = path.with_suffix(".map")
        if not names and mp.exists():
            listed = map_names(mp.read_text("utf-8"))
            if len(listed) != len(a.module.code):
                raise SystemExit(
                    f"{mp}: {len(listed)} code entries, module has {len(a.module.code)}"
                )
            base = a.module.num_func_imports
            names = {base + k: n for k, n in enumerate(listed)}
        for f in a.functions:
            name = names.get(f.index)
            if f.imported or not name or not is_reference_library(name):
                continue
            key = (f.shape_hash, full_hash(f), name)
            ent = merged.setdefault(
                key,
                {
                    "name": name,
                    "shape": f.shape_hash,
                    "full": key[1],
                    "instr_count": f.instr_count,
                    "type_sig": f.type_sig,
                    "callees": sorted({names.get(c, "?") for c in f.calls}),
                    "refs": set(),
                    "loose": loose_digests(data, f, bounds),
                },
            )
            ent["refs"].add(bid)
    entries = [
        RefEntry(
            f"{v['shape'][:16]}:{v['name']}",
            v["name"],
            family_of(v["name"]),
            v["shape"],
            v["full"],
            v["instr_count"],
            v["type_sig"],
            tuple(v["callees"]),
            tuple(sorted(v["refs"])),
            *v["loose"],
        )
        for v in merged.values()
    ]
    db = FingerprintDB(entries, builds)
    out.write_text(json.dumps(db.to_json(), indent=0, sort_keys=True) + "\n", "utf-8")
    print(f"{len(entries)} entries from {len(builds)} builds -> {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
