"""Emscripten glue reader on adversarial JavaScript: time per case, linear in the input.

    python benchmarks/glue.py [--mb 5] [--smoke]

Each case is one unit repeated to fill the size (unterminated strings, open brackets,
endless chains ...), plus 250,000 distinct keys and a big import object. Printed: seconds
and MB/s per case, next to Python's own `re` scanning the same text for identifiers (the
floor any JS reader pays). `--smoke` runs every case at 64 KB and only checks the results
are well formed (the test suite runs it).
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kbtool.glue import GlueNames, parse_glue  # noqa: E402

UNITS = [
    ("long-identifier", "a"),
    ("long-underscore-identifier", "_"),
    ("open-parens", "("),
    ("open-braces", "{a:"),
    ("unterminated-strings", "\"'`"),
    ("slashes", "/"),
    ("regex-classes", "(/[\\"),
    ("chains", "_a=Z.b;"),
    ("long-chain", "a=f._b="),
    ("dots", "Z."),
    ("holder-brackets", "wasmExports['"),
    ("templates", "`${"),
    ("spaces-eq", " = "),
    ("instantiate", "f.instantiateWasm(b,a);var b={"),
    ("assign-fn", "function assignWasmExports(a){"),
    ("legacy", "return Z.a.apply("),
    ("aliases", "f._x=y;y=a=>(y=Z.q)(a);"),
]
_IDENT = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")


def cases(size: int) -> list[tuple[str, str]]:
    """(name, javascript) of every adversarial case at about ``size`` bytes."""
    n = max(1000, size // 20)
    out = [(name, "Z=c.exports;var b={a:$c};" + unit * (size // len(unit))) for name, unit in UNITS]
    out.append(("keys", "Z=c.exports;" + "".join(f"_a{i}=Z.b{i};" for i in range(n))))
    out.append(
        (
            "imports",
            "var b={a:$c};f.instantiateWasm(b,a);var $c={"
            + "".join(f"a{i}:Y{i}," for i in range(n))
            + "};"
            + "".join(f"Y{i}=_q{i};" for i in range(n // 10)),
        )
    )
    out.append(("holders", "".join(f"h{i}=c.exports;_x=h{i}.q;" for i in range(n))))
    out.append(("spaces", "Z=c.exports;" + " " * size + "=Z.a" + " " * size))
    return out


def well_formed(g: GlueNames) -> bool:
    names = [*g.exports.items(), *g.imports.items()]
    return (
        all(_IDENT.fullmatch(k) and _IDENT.fullmatch(v) for k, v in names)
        and len(g.unknown) <= 201
        and all(isinstance(u, str) and u for u in g.unknown)
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=5.0)
    ap.add_argument("--smoke", action="store_true")
    args = ap.parse_args()
    size = 64 * 1024 if args.smoke else int(args.mb * 1024 * 1024)
    bad = 0
    all_cases = cases(size)
    print(f"{'case':<28} {'MB':>6} {'kbtool s':>9} {'MB/s':>7} {'re scan s':>9}")
    for name, js in all_cases:
        t0 = time.perf_counter()
        g = parse_glue(js)
        secs = time.perf_counter() - t0
        t1 = time.perf_counter()
        sum(1 for _ in _IDENT.finditer(js))
        floor = time.perf_counter() - t1
        ok = well_formed(g)
        bad += not ok
        mb = len(js) / 1e6
        print(
            f"{name:<28} {mb:6.2f} {secs:9.2f} {mb / max(secs, 1e-9):7.1f} {floor:9.2f}"
            + ("" if ok else "  MALFORMED RESULT")
        )
    print(f"cases: {len(all_cases)}, malformed: {bad}")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
