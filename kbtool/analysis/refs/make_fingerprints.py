"""Derive kbtool/analysis/data/fingerprints.json from the named reference builds.

Usage: python kbtool/analysis/refs/make_fingerprints.py BUILD_DIR [OUT_JSON]
(BUILD_DIR as written by build.sh). The name section of each build is the truth; the
functions of the reference programs themselves (main, helpers) are left out.
"""

from __future__ import annotations

import json
import pathlib
import sys

from kbtool.analysis.families import family_of
from kbtool.analysis.fingerprints import FingerprintDB, RefEntry, full_hash
from kbtool.wasm import analyze_module

# functions of the reference programs (not library code)
OWN = {"main", "cmp", "my_log", "worker", "__original_main", "__main_argc_argv",
       "point_norm", "node_walk", "entry", "__stack_chk_fail"}


def describe(stem: str) -> str:
    tool = "wasi-libc (Debian 0.0~git20220510) + clang 14" if stem.startswith("wasi-") \
        else "emscripten 3.1.6 (Debian) emcc"
    return f"{tool}; {stem}"


def main(argv: list[str]) -> int:
    src = pathlib.Path(argv[1])
    out = pathlib.Path(argv[2]) if len(argv) > 2 else \
        pathlib.Path(__file__).resolve().parent.parent / "data" / "fingerprints.json"
    merged: dict[tuple[str, str, str], dict] = {}
    builds: dict[str, str] = {}
    for path in sorted(src.glob("*.wasm")):
        bid = path.stem
        builds[bid] = describe(bid)
        a = analyze_module(path.read_bytes())
        names = a.module.func_names
        for f in a.functions:
            name = names.get(f.index)
            if f.imported or not name or name in OWN:
                continue
            key = (f.shape_hash, full_hash(f), name)
            ent = merged.setdefault(key, {
                "name": name, "shape": f.shape_hash, "full": key[1],
                "instr_count": f.instr_count, "type_sig": f.type_sig,
                "callees": sorted({names.get(c, "?") for c in f.calls}), "refs": set()})
            ent["refs"].add(bid)
    entries = [
        RefEntry(f"{v['shape'][:16]}:{v['name']}", v["name"], family_of(v["name"]),
                 v["shape"], v["full"], v["instr_count"], v["type_sig"],
                 tuple(v["callees"]), tuple(sorted(v["refs"])))
        for v in merged.values()
    ]
    db = FingerprintDB(entries, builds)
    out.write_text(json.dumps(db.to_json(), indent=0, sort_keys=True) + "\n", "utf-8")
    print(f"{len(entries)} entries from {len(builds)} builds -> {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
