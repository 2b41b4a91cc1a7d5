"""Emscripten's ``saveSetjmp`` by behaviour: the JS-invoke setjmp lowering's call pattern.

``saveSetjmp``'s body differs between programs (binaryen inlines ``realloc`` into it when the
program calls nothing else that reallocates: 611 instructions in one build, 69 in another),
so its shape does not transfer. What does not change is how LLVM's LowerEmscriptenSjLj pass
calls it in every function that contains ``setjmp``::

    table = saveSetjmp(env, label, table, size)   ; (i32, i32, i32, i32) -> i32
    size  = getTempRet0()                          ; import () -> i32, right after

and that ``saveSetjmp`` returns its second result through ``setTempRet0`` (an import
``(i32) -> ()``). A function is named when

- its type is ``(i32, i32, i32, i32) -> i32`` and it calls an ``(i32) -> ()`` import,
- it is called from at least one other function, and at EVERY call site outside itself the
  next call (at most one ``local.set``/``local.tee`` between) is an ``() -> i32`` import,
- it is the only function in the module with all of this (several -> none).

Confidence 0.8 when those imports carry the names ``getTempRet0``/``setTempRet0``, else 0.7
(minified imports: only their types back the pattern). Internal calls are never legalised,
so a call followed by the high-word getter is otherwise only seen at calls of imports.
Callers larger than :data:`MAX_CALLER_BODY` instructions are not decoded (the candidate is
then dropped: every call site must be seen).
"""

from __future__ import annotations

from array import array

from kbtool.wasm import FuncFacts, ModuleAnalysis
from kbtool.wasm.opcodes import K_CALL, KIND, MNEMONICS

MAX_CALLER_BODY = 60_000
MAX_CANDIDATES = 32
_CALL = MNEMONICS.index("call")
_SETS = {MNEMONICS.index("local.set"), MNEMONICS.index("local.tee")}
#: the op ids whose one immediate is a function index (``call``, ``return_call``): each takes
#: the next entry of a function's ``calls``, which lists them in body order
_CALL_OPS = frozenset(i for i, k in enumerate(KIND) if k == K_CALL)


def _ops_and_call_targets(f: FuncFacts) -> tuple[array, dict[int, int]]:
    """A body's op ids (the decoder's, ``f.ops``) and the target of each call op by its
    position: the instructions :func:`kbtool.analysis.body.decode_body` would decode again,
    read from the facts the decoder already made."""
    ops = array("H")
    ops.frombytes(f.ops)
    calls = iter(f.calls)
    return ops, {j: next(calls) for j, op in enumerate(ops) if op in _CALL_OPS}


def save_setjmp_candidates(a: ModuleAnalysis, data: bytes) -> list[tuple[int, float, dict]]:
    """``[(func_index, confidence, evidence)]``: at most one ``saveSetjmp``."""
    imports = [i for i in a.module.imports if i.kind == "func"]
    nimp = len(imports)
    sig = {k: a.functions[k].type_sig for k in range(nimp)}
    setters = {k for k, s in sig.items() if s == "(i32) -> ()"}
    getters = {k for k, s in sig.items() if s == "() -> i32"}
    if not setters or not getters:
        return []
    cands = [
        f.index
        for f in a.functions
        if not f.imported
        and f.type_sig == "(i32, i32, i32, i32) -> i32"
        and setters.intersection(f.calls)
    ]
    if not cands or len(cands) > MAX_CANDIDATES:
        return []
    callers: dict[int, list[int]] = {c: [] for c in cands}
    for f in a.functions:
        if f.imported:
            continue
        for c in cands:
            if c != f.index and c in f.calls:
                callers[c].append(f.index)
    found = []
    for c, fs in callers.items():
        if not fs or any(a.functions[k].instr_count > MAX_CALLER_BODY for k in fs):
            continue
        sites = 0
        used: set[int] = set()
        ok = True
        for k in fs:
            ops, target = _ops_and_call_targets(a.functions[k])
            n = len(ops)
            for j, op in enumerate(ops):
                if op != _CALL or target[j] != c:
                    continue
                sites += 1
                nxt = j + 1
                if nxt < n and ops[nxt] in _SETS:
                    nxt += 1
                if nxt < n and ops[nxt] == _CALL and target[nxt] in getters:
                    used.add(target[nxt])
                else:
                    ok = False
                    break
            if not ok:
                break
        if ok and sites:
            found.append((c, sites, sorted(used), len(fs)))
    if len(found) != 1:
        return []
    c, sites, used, ncallers = found[0]
    set_used = sorted(setters.intersection(a.functions[c].calls))
    named = {imports[k].field for k in used} == {"getTempRet0"} and "setTempRet0" in {
        imports[k].field for k in set_used
    }
    ev = {
        "recognizer": "behaviour.sjlj",
        "method": "every call is followed by the () -> i32 high-word getter "
        "(table = saveSetjmp(env, label, table, size); size = getTempRet0()) and the body "
        "calls the (i32) -> () setter",
        "fingerprint": None,
        "reference": None,
        "call_sites": sites,
        "callers": ncallers,
        "getter_imports": [imports[k].field for k in used],
        "setter_imports": [imports[k].field for k in set_used],
    }
    return [(c, 0.8 if named else 0.7, ev)]
