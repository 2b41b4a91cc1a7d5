"""kbtool.lift: pure code views of one module version (no DB, no front end).

Imports only :mod:`kbtool.wasm` and the standard library. Three views:

**Disassembly** (the studio's Disassembly ``mnemonics``), as instruction records::

    lm = prepare(wasm_bytes, names)            # once per version; names optional
    listing = disassemble_function(lm, func_index)   # Listing: header facts + Instr records
    for listing in disassemble_module(lm): ...  # every defined function, like lift_module

Each :class:`kbtool.lift.disasm.Instr` has its file offset, depth, opcode, immediates and
what they resolve to (callee, global, local, branch targets, data item, string, line
comment); :mod:`kbtool.render.disasm` makes the text (``disassemble_module(lm,
render=render_listing)`` renders in the workers). Deterministic.

**Lifted C** (the studio's ``lifted_c``)::

    res = lift_function(lm, func_index)        # LiftResult(func_index, text, truncated,
                                               #            reason, stats)
    for res in lift_module(lm): ...            # in index order; forked workers on every
                                               # usable core (workers=1: this process)

``res.text`` is self-contained C: the declarations the function needs (callee prototypes,
``extern`` globals, multi-value result structs and call_indirect function-pointer typedefs,
each behind an include guard) and the definition. Every function of a module, concatenated
in any combination, is valid C with the prelude::

    gcc -fsyntax-only -include $(python -c 'import kbtool.lift as l; print(l.prelude_path())')

Locals are typed (``int32_t``/``int64_t``/``float``/``double``/``v128``/``wasm_ref``),
parameters ``pN`` (or their sanitised names), locals ``lN``, temporaries ``tN``/``rN``,
labels ``LN``. A ``local.tee`` stays an expression (``if ((l3 = f(p0)) == 0) ...``) when a
lookahead shows its value is consumed before anything reads the local again. Memory accesses read ``*(int32_t *)(M + p + 8)`` (``M`` = linear memory
base); ``Names.field_hook`` may render them as ``p->field_8``. Control flow is structured
(``if``/``else``, ``while (1)``, ``do {} while (cond)``, ``do {} while (0)`` + ``break``,
``switch``); ``goto`` only where C cannot express the branch. SIMD, atomics, bulk memory,
tables, references and exceptions call prelude helpers named after the mnemonic
(``i32x4_add(a, b)``, ``i32_atomic_rmw_add(addr, v)``); GC ops too (``struct_new(t, ...)``,
``struct_get_i32(ref, t, field)``, ``array_len(a)``, ``ref_test(r, HT_I31, 1)``), and
``br_on_null`` / ``br_on_non_null`` / ``br_on_cast[_fail]`` are conditional breaks
(``if (r == REF_NULL) break;``). Semantics assume ``-fwrapv``. A function over the budget
(instructions, output size, ``max_seconds``) or using an instruction without a C rendering
gets a valid stub with a ``/* kbtool: not lifted: <reason> */`` comment and
``truncated=True``. Names from the
binary are untrusted: identifiers are sanitised and made unique, comment text is escaped.

**Call graph** (the studio's Call graph object)::

    analysis = kbtool.wasm.analyze_module(wasm_bytes)
    graph = build_callgraph(analysis, wasm_bytes, names, stable_ids, statuses)
    # {"nodes": [{index, stable_id, name, status, imported, in_table}],
    #  "edges": [{caller, callee, kind: direct|ref|indirect, count[, candidates]}],
    #  "indirect": [{caller, table, type, count, candidates, key}],   # large sets only
    #  "candidates": {"<table>:<sig>": [func indices]}}

**Speed**: ``pip install`` compiles the lifter with mypyc when it can (``setup.py``; about
2.5x less CPU, identical output; ``python -m kbtool.lift.accel build`` does it again by hand);
:data:`LIFTER_PATH` says which one runs (``pure`` / ``compiled``), ``KBTOOL_LIFT=pure`` forces
the pure one.

The prelude header ships as package data: :func:`prelude_path` gives its path and
:func:`kbtool.lift.prelude.render_prelude` its text.
"""

from .active import IMPL as _LIFTER
from .active import PATH as LIFTER_PATH
from .active import lift_function  # the compiled one hands type errors to the pure one
from .callgraph import build_callgraph, indirect_types
from .context import LiftModule, prepare
from .disasm import disassemble_function
from .module import default_workers, disassemble_module, lift_module
from .names import Names, c_ident, comment_text
from .prelude import prelude_path, render_prelude

# the pure lifter, or its mypyc-compiled twin when built (python -m kbtool.lift.accel build)
LiftError = _LIFTER.LiftError
LiftResult = _LIFTER.LiftResult
LiftStats = _LIFTER.LiftStats
param_c_names = _LIFTER.param_c_names

__all__ = [
    "LIFTER_PATH",
    "LiftError",
    "LiftModule",
    "LiftResult",
    "LiftStats",
    "Names",
    "build_callgraph",
    "c_ident",
    "comment_text",
    "default_workers",
    "disassemble_function",
    "disassemble_module",
    "indirect_types",
    "lift_function",
    "lift_module",
    "param_c_names",
    "prelude_path",
    "prepare",
    "render_prelude",
]
