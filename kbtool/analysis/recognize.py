"""Recognizers that name runtime/libc functions in stripped builds.

Each recognizer returns candidates ``(func_index, name, confidence, evidence)``; the
evidence is a plain dict (``recognizer``, ``method``, ``fingerprint``, ``reference``...).
:func:`recognize` resolves them: a name claimed for several functions, or a function
fitting several names, is not written but listed for review.

Recognizers (how each decides, see docs/analysis.md):

- ``fingerprint.shape``: the function's shape hash equals a reference function's and the
  body has at least ``SHAPE_FLOOR`` instructions; all reference entries with that hash
  carry one canonical name. Callee context raises confidence when the reference callees
  that were themselves recognised agree.
- ``fingerprint.loose``: no shape match, but the shape with static addresses replaced by
  what they point at (pointers abstracted) equals a reference's (Rust panic/fmt data).
- ``fingerprint.full``: no shape match, but the op sequence (constants dropped) equals a
  reference function's, with at least ``FULL_FLOOR`` instructions and the same strings
  referred to; lower confidence.
- ``fingerprint.anchored``: a body below the floors whose shape/loose (or, mid-size, full)
  hash matches AND whose direct callees are all known and equal the reference's.
- ``fingerprint.callee_of``: the one unnamed callee of a named function, when the
  reference calls exactly one function not accounted for and the shapes agree.
- ``__errno_location`` by behaviour (:mod:`.errno`); ``saveSetjmp`` by the setjmp
  lowering's call pattern (:mod:`.sjlj`); ``__pthread_mutex_lock`` anchored on a recognised
  trylock and Emscripten runtime functions by the ``env`` imports they call (:mod:`.pthread`).
- ``behaviour``: small bodies whose behaviour pins the name down (``memory.fill`` of the
  three parameters returning the first is memset; the stack pointer getters/setters;
  ``__wasm_call_ctors`` as the first call of ``_start``/``_initialize``; ``__wasm_init_tls``
  and ``__wasm_init_memory`` by their memory.init pattern).
"""

from __future__ import annotations

import weakref
from collections import Counter, defaultdict

from kbtool.plainclass import Plain
from kbtool.wasm import FuncFacts, ModuleAnalysis
from kbtool.wasm.instr import decode_one, skip_local_decls
from kbtool.wasm.opcodes import MNEMONICS

from .errno import errno_candidates
from .families import canonical, family_of, is_type_glue
from .fingerprints import (
    FingerprintDB,
    LooseContext,
    RefEntry,
    full_hash,
    loose_digests,
    loose_hash,
)
from .pthread import mutex_lock_candidates, private_import_candidates
from .sjlj import save_setjmp_candidates

SHAPE_FLOOR = 12  # instructions; smaller exact-shape matches happen by accident
FULL_FLOOR = 40  # the op stream alone is weaker evidence: demand a longer body
MAX_BEHAVIOUR_BODY = 64  # behaviour patterns only look at small bodies
ANCHOR_ROUNDS = 4  # anchored small bodies: rounds of callers-of-the-newly-named

OP = {m: i for i, m in enumerate(MNEMONICS)}


class Candidate(Plain):
    """One recognized function: its index and proposed name."""

    __slots__ = _FIELDS = ("func_index", "name", "confidence", "evidence")

    def __init__(
        self,
        func_index: int,
        name: str,
        confidence: float,
        evidence: dict,
    ) -> None:
        self.func_index = func_index
        self.name = name
        self.confidence = confidence
        self.evidence = evidence


def _decode(data: bytes, f: FuncFacts, limit: int = MAX_BEHAVIOUR_BODY):
    """``[(mnemonic, imms)]`` of a small body, or None if it is larger than ``limit``."""
    if f.imported or f.instr_count > limit:
        return None
    end = f.body_offset + f.body_size
    p = skip_local_decls(data, f.body_offset, end)
    out = []
    while p < end:
        op, p, imms = decode_one(data, p, end)
        out.append((MNEMONICS[op], imms))
    return out


# ----------------------------------------------------------------------------- fingerprints

CONF = {"shape": 0.9, "loose": 0.88, "full": 0.75}


def display_name(e: RefEntry) -> str:
    """The name written for a reference entry: a mangled Rust symbol as its path (the hash
    of the reference build means nothing here); C names as the toolchain spells them."""
    c = canonical(e.name)
    return c if e.name.startswith("_ZN") else e.name


def fingerprint_candidates(
    a: ModuleAnalysis, data: bytes, db: FingerprintDB, review: list[dict], ctx: LooseContext
) -> list[Candidate]:
    out: list[Candidate] = []
    for f in a.functions:
        if f.imported or f.instr_count < SHAPE_FLOOR:
            continue
        method, ents = "shape", db.by_shape.get(f.shape_hash)
        if not ents:
            if (f.type_sig, f.instr_count) not in db.full_keys:
                continue  # (no entry has its signature and length: no full hash can match)
            fh = full_hash(f)
            if fh not in db.by_full:
                continue
            loose, texts = loose_digests(data, f, ctx)
            method, ents = "loose", db.by_loose.get(loose)
            if not ents:
                if f.instr_count < FULL_FLOOR:
                    continue
                # the op stream alone, but the strings the body refers to must agree
                method = "full"
                ents = [e for e in db.by_full[fh] if not e.texts or e.texts == texts]
                if not ents:
                    continue
        names = sorted({canonical(e.name) for e in ents})
        ev = {
            "recognizer": f"fingerprint.{method}",
            "method": f"{method} hash",
            "fingerprint": ents[0].id,
            "reference": sorted({r for e in ents for r in e.refs}),
            "instr_count": f.instr_count,
        }
        if len(names) > 1:
            review.append(
                {
                    "func_index": f.index,
                    "candidates": names,
                    "reason": "fingerprint fits several names",
                    "evidence": ev,
                }
            )
            continue
        if is_type_glue(names[0]):
            review.append(
                {
                    "func_index": f.index,
                    "candidates": names,
                    "reason": "type-dependent glue: the body does not prove the name",
                    "evidence": ev,
                }
            )
            continue
        best = min(ents, key=lambda e: (len(e.name), e.name))
        ev["callees"] = list(best.callees)
        out.append(Candidate(f.index, display_name(best), CONF[method], ev))
    return out


_IMPORT_PREFIX = "__imported_"


def _callee_key(name: str) -> str:
    """Comparison key of a callee name (wasi-libc spells its imports
    ``__imported_wasi_snapshot_preview1_fd_write``)."""
    if name.startswith(_IMPORT_PREFIX):
        for mod in ("wasi_snapshot_preview1_", "wasi_unstable_"):
            if name.startswith(_IMPORT_PREFIX + mod):
                return name[len(_IMPORT_PREFIX + mod) :]
    return canonical(name)


def anchored_candidates(
    a: ModuleAnalysis,
    data: bytes,
    db: FingerprintDB,
    named: dict[int, Candidate],
    ctx: LooseContext,
) -> list[Candidate]:
    """Bodies below the shape floor (forwarders such as ``__rust_alloc`` -> ``__rdl_alloc``,
    ``emscripten_longjmp`` -> ``setThrew``): the shape (or loose) hash equals a reference
    function's AND every direct callee is already known (recognised, or an import, whose
    field name counts) and the callee names equal the reference's. The callees anchor the
    tiny shape; one canonical name must remain. Mid-size bodies (below the full-hash floor)
    may also match by the full hash when the strings they refer to agree (``panic_fmt``
    whose frame size differs between builds, anchored by ``rust_begin_unwind``)."""
    imports = [i for i in a.module.imports if i.kind == "func"]
    out: list[Candidate] = []
    for f in a.functions:
        if f.imported or f.index in named or not f.calls or f.instr_count >= FULL_FLOOR:
            continue
        got: set[str] = set()
        for t in f.calls:
            if t < len(imports):
                got.add(imports[t].field)
            elif t in named:
                got.add(canonical(named[t].name))
            else:
                break
        else:
            ents = db.by_shape.get(f.shape_hash) or []
            method = "shape"
            if not any({_callee_key(n) for n in e.callees} == got for e in ents):
                ents, method = db.by_loose.get(loose_hash(data, f, ctx)) or [], "loose"
            fit = [e for e in ents if {_callee_key(n) for n in e.callees} == got]
            if not fit and f.instr_count >= SHAPE_FLOOR:
                loose, texts = loose_digests(data, f, ctx)
                method = "full"
                fit = [
                    e
                    for e in db.by_full.get(full_hash(f), ())
                    if {_callee_key(n) for n in e.callees} == got
                    and (not e.texts or e.texts == texts)
                ]
            names = {canonical(e.name) for e in fit}
            if len(names) != 1 or is_type_glue(next(iter(names))):
                continue
            best = min(fit, key=lambda e: (len(e.name), e.name))
            ev = {
                "recognizer": "fingerprint.anchored",
                "method": f"{method} hash of a small body + its known callees",
                "fingerprint": best.id,
                "reference": sorted({r for e in fit for r in e.refs}),
                "instr_count": f.instr_count,
                "callees": list(best.callees),
                "anchor_callees": sorted(got),
            }
            conf = 0.75 if method == "full" else 0.8
            out.append(Candidate(f.index, display_name(best), conf, ev))
    return out


def callee_candidates(
    a: ModuleAnalysis,
    data: bytes,
    db: FingerprintDB,
    named: dict[int, Candidate],
    ctx: LooseContext,
) -> list[Candidate]:
    """Downward anchoring: a named function whose reference calls exactly one function not
    yet accounted for, and which itself calls exactly one unnamed function, names that
    callee, if the callee's shape (or loose) hash equals a reference entry of that name
    (any size: ``rust_panic`` -> ``__rust_start_panic``, a 3-instruction body)."""
    imports = [i for i in a.module.imports if i.kind == "func"]
    out: list[Candidate] = []
    seen: set[int] = set()
    for c in list(named.values()):
        refc = {_callee_key(n) for n in c.evidence.get("callees", ()) if n != "?"}
        if not refc:
            continue
        fn = a.functions[c.func_index]
        # a call past the last function decodes (only validation rejects it): skip it
        nfun = len(a.functions)
        unnamed = {t for t in fn.calls if len(imports) <= t < nfun and t not in named}
        if len(unnamed) != 1:
            continue
        here = {canonical(named[t].name) for t in fn.calls if t in named}
        here |= {imports[t].field for t in fn.calls if t < len(imports)}
        left = refc - here
        if len(left) != 1:
            continue
        want = left.pop()
        g = a.functions[unnamed.pop()]
        if g.index in seen or is_type_glue(want):
            continue
        method = "shape"
        ents = [e for e in db.by_shape.get(g.shape_hash, ()) if canonical(e.name) == want]
        if not ents:
            method = "loose"
            ents = [
                e
                for e in db.by_loose.get(loose_hash(data, g, ctx), ())
                if canonical(e.name) == want
            ]
        if not ents:
            continue
        seen.add(g.index)
        best = min(ents, key=lambda e: (len(e.name), e.name))
        ev = {
            "recognizer": "fingerprint.callee_of",
            "method": f"{method} hash + the one callee of {c.name} left unnamed",
            "fingerprint": best.id,
            "reference": sorted({r for e in ents for r in e.refs}),
            "instr_count": g.instr_count,
            "callees": list(best.callees),
            "caller": c.func_index,
        }
        out.append(Candidate(g.index, display_name(best), 0.75, ev))
    return out


def callee_agreement(a: ModuleAnalysis, named: dict[int, Candidate]) -> None:
    """Raise (or lower) confidence where recognised callees agree with the reference."""
    for c in named.values():
        refc = {canonical(n) for n in c.evidence.get("callees", ()) if n != "?"}
        if not refc:
            continue
        got = {canonical(named[t].name) for t in a.functions[c.func_index].calls if t in named}
        if not got:
            continue
        if got <= refc:
            c.confidence = min(0.97, c.confidence + 0.05)
            c.evidence["callee_context"] = sorted(got)
        else:
            c.confidence = max(0.5, c.confidence - 0.2)
            c.evidence["callee_conflict"] = sorted(got - refc)


# ----------------------------------------------------------------------------- behaviour


#: the last module's answer: (its analysis, its functions' and bytes' ids, the global): ingest asks
#: twice (the lineage's recognizers, then the data model), a threaded build's prologue
#: decode costs ~15-40 ms on ffmpeg each time
_LAST_SP: tuple[weakref.ref, int, int, int | None] | None = None


def stack_pointer_global(a: ModuleAnalysis, data: bytes | None = None) -> int | None:
    """The mutable i32 global used by the most functions (LLVM's __stack_pointer), if it
    is used by clearly more functions than any other global. (The answer for the analysis
    last asked about is kept while that analysis lives: ``data`` is its module's bytes.)"""
    global _LAST_SP
    last = _LAST_SP
    key = (id(a.functions), id(data))
    if last is not None and last[0]() is a and last[1:3] == key:
        return last[3]
    sp = _stack_pointer_global(a, data)
    _LAST_SP = (weakref.ref(a), *key, sp)
    return sp


def _stack_pointer_global(a: ModuleAnalysis, data: bytes | None) -> int | None:
    m = a.module
    use: Counter[int] = Counter()
    for f in a.functions:
        for g in f.globals_used:
            use[g] += 1
    ranked = [(n, g) for g, n in use.items() if _global_is_mut_i32(m, g)]
    if not ranked:
        return None
    ranked.sort(reverse=True)
    if len(ranked) > 1 and ranked[1][0] * 2 > ranked[0][0]:
        # close use counts (threaded builds: the TLS/thread-pointer global is read almost as
        # often): decide by the frame prologue `global.get G; <k>; i32.sub`
        return _prologue_stack_pointer(a, data, [g for _n, g in ranked[:2]])
    return ranked[0][1]


def _prologue_stack_pointer(a: ModuleAnalysis, data: bytes | None, cands: list[int]) -> int | None:
    """The candidate global that opens clearly more frame prologues (``global.get G;
    i32.const k | local.get; i32.sub``) than the other; only the first 3 instructions of
    the bodies using a candidate are decoded."""
    if data is None:
        return None
    want = set(cands)
    opens: Counter[int] = Counter()
    for f in a.functions:
        if f.imported or f.instr_count < 4 or not want.intersection(f.globals_used):
            continue
        end = f.body_offset + f.body_size
        p = skip_local_decls(data, f.body_offset, end)
        seq = []
        for _k in range(3):
            if p >= end:
                break
            op, p, imms = decode_one(data, p, end)
            seq.append((MNEMONICS[op], imms))
        if (
            len(seq) == 3
            and seq[0][0] == "global.get"
            and seq[0][1][0] in want
            and seq[1][0] in ("i32.const", "local.get")
            and seq[2][0] == "i32.sub"
        ):
            opens[seq[0][1][0]] += 1
    ranked = opens.most_common()
    if not ranked or (len(ranked) > 1 and ranked[1][1] * 2 > ranked[0][1]):
        return None
    return ranked[0][0]


def _global_is_mut_i32(m, g: int) -> bool:
    gi = [i for i in m.imports if i.kind == "global"]
    if g < len(gi):
        d = gi[g].desc
        return d is not None and getattr(d, "mutable", False) and getattr(d, "valtype", "") == "i32"
    k = g - len(gi)
    if 0 <= k < len(m.globals):
        return m.globals[k].mutable and m.globals[k].valtype == "i32"
    return False


def _seq(body) -> list[str]:
    return [f"{mn} {' '.join(map(str, im))}".strip() for mn, im in body]


def behaviour_candidates(a: ModuleAnalysis, data: bytes, sp: int | None) -> list[Candidate]:
    out: list[Candidate] = []
    m = a.module

    def cand(i: int, name: str, conf: float, pattern: str, **extra) -> None:
        ev = {
            "recognizer": "behaviour",
            "method": pattern,
            "fingerprint": None,
            "reference": None,
            **extra,
        }
        out.append(Candidate(i, name, conf, ev))

    for f in a.functions:
        if f.imported or f.instr_count > MAX_BEHAVIOUR_BODY:
            continue
        sig = f.type_sig
        if (
            sig == "(i32, i32, i32) -> i32"
            and not f.calls
            and not {"memory.fill", "memory.copy"}.isdisjoint(f.mnemonics())
        ):  # (the op names listed only for the one signature that needs them)
            body = _decode(data, f)
            s = _seq(body)
            for op, name in (("memory.fill", "memset"), ("memory.copy", "memcpy|memmove")):
                k = next((j for j, x in enumerate(s) if x.startswith(op)), None)
                if (
                    k is None
                    or k < 3
                    or s[k - 3 : k] != ["local.get 0", "local.get 1", "local.get 2"]
                ):
                    continue
                if s[-2:] != ["local.get 0", "end"]:
                    continue
                if name == "memset":
                    cand(f.index, "memset", 0.9, "memory.fill(p0, p1, p2); return p0")
                else:  # memcpy and memmove both fit: never written, only reviewed
                    cand(
                        f.index,
                        name,
                        0.0,
                        "memory.copy(p0, p1, p2); return p0",
                        ambiguous=["memcpy", "memmove"],
                    )
        if sp is None:
            continue
        if sig == "() -> i32" and f.instr_count == 2:
            if _seq(_decode(data, f)) == [f"global.get {sp}", "end"]:
                cand(
                    f.index, "stackSave", 0.8, "returns the stack pointer global", stack_pointer=sp
                )
        elif sig == "(i32) -> ()" and f.instr_count == 3:
            if _seq(_decode(data, f)) == ["local.get 0", f"global.set {sp}", "end"]:
                cand(
                    f.index,
                    "stackRestore",
                    0.8,
                    "sets the stack pointer global from p0",
                    stack_pointer=sp,
                )
        elif sig == "(i32) -> i32" and f.instr_count <= 12 and not f.calls:
            s = _seq(_decode(data, f))
            if (
                s[:3] == [f"global.get {sp}", "local.get 0", "i32.sub"]
                and "i32.and" in [x.split()[0] for x in s]
                and f"global.set {sp}" in s
            ):
                cand(
                    f.index,
                    "stackAlloc",
                    0.85,
                    "stack pointer minus p0, aligned, stored back and returned",
                    stack_pointer=sp,
                )
    # __wasm_call_ctors: the first call of the crt entry point
    for e in m.exports:
        if e.kind == "func" and e.name in ("_start", "_initialize") and e.index < len(a.functions):
            calls = a.functions[e.index].calls
            body = _decode(data, a.functions[e.index], 400) or []
            first = next((im[0] for mnem, im in body if mnem == "call"), None)
            tgt = (
                a.functions[first]
                if first is not None and first in calls and first < len(a.functions)
                else None
            )
            # __wasm_call_ctors is a bare list of constructor calls (no other work)
            if (
                tgt is not None
                and tgt.type_sig == "() -> ()"
                and not tgt.imported
                and set(tgt.mnemonics()) <= {"call", "end"}
            ):
                cand(
                    first,
                    "__wasm_call_ctors",
                    0.85,
                    f"first call of the exported crt entry {e.name}",
                    entry=e.name,
                )
            break
    return out


# ----------------------------------------------------------------------------- resolve


def resolve(cands: list[Candidate], review: list[dict]) -> dict[int, Candidate]:
    """One name per function and one function per name, or none (reviewed instead)."""
    by_func: dict[int, list[Candidate]] = defaultdict(list)
    for c in cands:
        by_func[c.func_index].append(c)
    chosen: dict[int, Candidate] = {}
    for i, cs in by_func.items():
        names = {canonical(c.name) for c in cs}
        if len(names) > 1 or any(c.confidence <= 0 for c in cs):
            review.append(
                {
                    "func_index": i,
                    "candidates": sorted({c.name for c in cs}),
                    "reason": "several names fit",
                    "evidence": cs[0].evidence,
                }
            )
            continue
        chosen[i] = max(cs, key=lambda c: c.confidence)
        if len(cs) > 1:  # independent recognizers agree
            chosen[i].confidence = min(0.98, chosen[i].confidence + 0.05)
            chosen[i].evidence["agreeing"] = sorted({c.evidence["recognizer"] for c in cs})
    by_name: dict[str, list[int]] = defaultdict(list)
    for i, c in chosen.items():
        by_name[canonical(c.name)].append(i)
    for name, idx in by_name.items():
        if len(idx) > 1:
            for i in idx:
                c = chosen.pop(i)
                review.append(
                    {
                        "func_index": i,
                        "candidates": [c.name],
                        "reason": f"{len(idx)} functions fit {name}",
                        "evidence": c.evidence,
                    }
                )
    return chosen


def recognize(a: ModuleAnalysis, data: bytes, db: FingerprintDB) -> tuple[list[dict], list[dict]]:
    """``(names, review)``: names written (one per function, deterministic order) and the
    functions left for review."""
    review: list[dict] = []
    ctx = LooseContext(data, a.module)
    cands = fingerprint_candidates(a, data, db, review, ctx)
    sp = stack_pointer_global(a, data)
    cands += behaviour_candidates(a, data, sp)
    cands += [
        Candidate(i, "__errno_location", conf, ev)
        for i, conf, ev in errno_candidates(a, data, sp, ctx.bounds)
    ]
    cands += [
        Candidate(i, "saveSetjmp", conf, ev) for i, conf, ev in save_setjmp_candidates(a, data)
    ]
    chosen = resolve(cands, review)
    callee_agreement(a, chosen)
    for _round in range(ANCHOR_ROUNDS):  # each round may anchor the callers of the last
        new = anchored_candidates(a, data, db, chosen, ctx)
        new += callee_candidates(a, data, db, chosen, ctx)
        # exact spellings: wasi-libc's `free` is a forwarder to a separate `dlfree`
        taken = {c.name for c in chosen.values()}
        fresh = [c for c in new if c.name not in taken]
        for c in new:
            if c.name in taken:
                review.append(
                    {
                        "func_index": c.func_index,
                        "candidates": [c.name],
                        "reason": "name already recognised elsewhere",
                        "evidence": c.evidence,
                    }
                )
        more = resolve(fresh, review)
        if not more:
            break
        chosen.update(more)
    private = private_import_candidates(a, db, {i: c.name for i, c in chosen.items()})
    chosen.update(resolve([Candidate(i, n, conf, ev) for i, n, conf, ev in private], review))
    lock = mutex_lock_candidates(a, {i: c.name for i, c in chosen.items()})
    chosen.update(
        resolve([Candidate(i, "__pthread_mutex_lock", conf, ev) for i, conf, ev in lock], review)
    )
    names = [
        {
            "func_index": i,
            "name": c.name,
            "confidence": round(c.confidence, 3),
            "family": family_of(c.name),
            "evidence": c.evidence,
        }
        for i, c in sorted(chosen.items())
    ]
    review.sort(key=lambda r: r["func_index"])
    return names, review
