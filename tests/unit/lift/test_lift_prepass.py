"""The pass before the walk (``prepass._prepass``) reads every op once for two analyses, the
locals' sign kinds and the shadow-stack frames; each half keeps its own stack, so turning
the frame half off changes nothing in the signs, and the frames it finds are prologues
(so a body without a ``global.get`` needs no frame half)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbtool.lift import prepare
from kbtool.lift.lifter.base import _Budget
from kbtool.lift.lifter.decode import _decode
from kbtool.lift.lifter.opnames import OP_GLOBAL_GET, OP_LOCAL_SET, OP_LOCAL_TEE
from kbtool.lift.lifter.prepass import _prepass

ZSTD = Path("/work/shared/corpus/gt/zstd-1.5.7.O2.named.wasm")


@pytest.mark.skipif(not ZSTD.exists(), reason="needs the zstd corpus build")
def test_the_two_halves_are_independent_and_frames_are_prologues():
    lm = prepare(ZSTD.read_bytes())
    m = lm.module
    sp_hint = next(g for g, gl in enumerate(m.globals) if gl.mutable and gl.valtype == "i32")
    framed = kinds_seen = 0
    seen: set[int] = set()
    for fi in range(m.num_func_imports, m.num_functions):
        start, end = m.code[fi - m.num_func_imports]
        t = m.func_type(fi)
        decls, ops, args, _ctrl, arith = _decode(lm.data, start, end, _Budget(10**9, None))
        types = list(t.params)
        for c, ty in decls:
            types.extend([ty] * c)
        signs, regions = _prepass(ops, args, types, len(t.params), lm.func_types, sp_hint, True)
        alone, none = _prepass(ops, args, types, len(t.params), lm.func_types, sp_hint, False)
        assert signs == alone, fi
        assert none == [], fi
        assert len(signs) == len(types)
        seen.update(signs)
        kinds_seen += any(signs)
        if regions:
            framed += 1
            # a prologue subtracts from a global's value: the driver skips the frame half
            # of a body without both (most leaf functions of C code read no global)
            assert arith and OP_GLOBAL_GET in ops, fi
        for x, s, e, n in regions:
            # the region starts right after the assignment of its base local
            assert ops[s - 1] in (OP_LOCAL_SET, OP_LOCAL_TEE) and args[s - 1][0] == x
            assert s < e <= len(ops) and 0 < n < (1 << 24)
    assert framed > 50 and kinds_seen > 50
    assert seen == {0, 1, 2}  # signed, unsigned and bool locals all occur
