"""Thread-model facts (pure): shared memory, atomic sites, locks, TLS, worker entries.

Every fact is a plain dict with a ``kind``:

- ``shared_memory``: a memory declared shared (index, min/max pages, imported);
- ``atomic_site``: one per atomic instruction (``func_index``, ``op``, ``class`` one of
  load/store/rmw/cmpxchg/wait/notify/fence, ``rmw`` operation, ``width`` bytes,
  ``offset`` memarg offset, ``site`` ordinal in the function);
- ``lock``: a function whose atomic pattern is a lock: ``futex`` (cmpxchg/xchg + wait),
  ``spin`` (cmpxchg in a loop, no wait), ``futex_release`` (rmw/store + notify);
- ``tls_base``: a mutable global set from the parameter of an ``__wasm_init_tls``-shaped
  function (sets the global from p0, then ``memory.init``/``memory.copy`` to p0);
- ``worker_entry``: a function that starts threads' code (export ``wasi_thread_start``,
  Emscripten's thread entry exports when unminified);
- ``worker_only``: functions reached by direct calls only from worker entries.

Only functions with ``FuncFacts.atomic_sites > 0`` (plus a few small ones for TLS) are
decoded, so the cost follows the number of atomic functions, not the module size.
"""

from __future__ import annotations

from kbtool.wasm import ModuleAnalysis
from kbtool.wasm.opcodes import MNEMONICS, WIDTH

from .body import atomic_sites, decode_body

MAX_LOCK_BODY = 256  # a lock is a small function; big ones merely contain a CAS loop

WORKER_EXPORTS = {
    "wasi_thread_start": "wasi-threads entry",
    "_emscripten_thread_init": "Emscripten pthread init",
    "__emscripten_thread_main": "Emscripten pthread main",
    "_emscripten_thread_exit": "Emscripten pthread exit",
    "emscripten_tls_init": "Emscripten TLS init (workers)",
    "_emscripten_thread_crashed": "Emscripten pthread crash hook",
}


def atomic_class(mnemonic: str) -> tuple[str, str | None]:
    """``(class, rmw operation)`` of an atomic mnemonic."""
    if mnemonic == "atomic.fence":
        return "fence", None
    if mnemonic.startswith("memory.atomic.wait"):
        return "wait", None
    if mnemonic == "memory.atomic.notify":
        return "notify", None
    if ".rmw" in mnemonic:
        op = mnemonic.rsplit(".", 1)[1].removesuffix("_u")
        return ("cmpxchg" if op == "cmpxchg" else "rmw"), op
    return ("load" if ".load" in mnemonic else "store"), None


def _width(op: int, mnemonic: str) -> int:
    w = WIDTH[op]
    if w:
        return w
    if mnemonic == "memory.atomic.wait64":
        return 8
    if mnemonic in ("memory.atomic.wait32", "memory.atomic.notify"):
        return 4
    return 0


def thread_facts(a: ModuleAnalysis, data: bytes, progress=None) -> list[dict]:
    m = a.module
    facts: list[dict] = []
    for i, mem in enumerate(m.memories):
        if mem.shared:
            facts.append(
                {
                    "kind": "shared_memory",
                    "memory": i,
                    "min_pages": mem.min,
                    "max_pages": mem.max,
                    "imported": mem.imported,
                }
            )
    atomic_funcs = [f for f in a.functions if f.atomic_sites and not f.imported]
    classes_of: dict[int, set[str]] = {}
    for n, f in enumerate(atomic_funcs):
        classes: set[str] = set()
        site = 0
        for op, offset in atomic_sites(data, f):
            mn = MNEMONICS[op]
            cls, rmw = atomic_class(mn)
            classes.add(cls if cls != "rmw" else f"rmw.{rmw}")
            facts.append(
                {
                    "kind": "atomic_site",
                    "func_index": f.index,
                    "site": site,
                    "op": mn,
                    "class": cls,
                    "rmw": rmw,
                    "width": _width(op, mn),
                    "offset": offset,
                }
            )
            site += 1
        classes_of[f.index] = classes
        if progress is not None and n % 256 == 0:
            progress(n, len(atomic_funcs))
    facts.extend(_lock_facts(a, atomic_funcs, classes_of))
    facts.extend(_tls_facts(a, data))
    facts.extend(_worker_facts(a))
    return facts


def _lock_facts(a: ModuleAnalysis, funcs: list, classes_of: dict[int, set[str]]) -> list[dict]:
    """``lock`` facts: the atomic pattern of small functions, with the wait/notify of a
    direct callee counted (Emscripten's locks call ``emscripten_futex_wait``/``_wake``)."""
    waits = {i for i, c in classes_of.items() if "wait" in c}
    notifies = {i for i, c in classes_of.items() if "notify" in c}
    # one level further: musl's __timedwait -> emscripten_futex_wait
    waits |= {g.index for g in a.functions if not g.imported and waits.intersection(g.calls)}
    notifies |= {
        g.index
        for g in a.functions
        if not g.imported and g.instr_count <= 32 and notifies.intersection(g.calls)
    }
    out = []
    for f in funcs:
        if f.instr_count > MAX_LOCK_BODY:
            continue
        classes = classes_of[f.index]
        via_wait = sorted(t for t in set(f.calls) if t in waits and t != f.index)
        via_notify = sorted(t for t in set(f.calls) if t in notifies and t != f.index)
        got = _lock_pattern(classes, f.loops, bool(via_wait), bool(via_notify))
        if got is None:
            continue
        pattern, strength = got
        ev = {"atomic_classes": sorted(classes), "loops": f.loops}
        if via_wait:
            ev["wait_via"] = via_wait[:4]
        if via_notify:
            ev["notify_via"] = via_notify[:4]
        out.append(
            {
                "kind": "lock",
                "func_index": f.index,
                "pattern": pattern,
                "strength": strength,
                "evidence": ev,
            }
        )
    return out


def _lock_pattern(
    classes: set[str], loops: int, callee_wait: bool = False, callee_notify: bool = False
) -> tuple[str, str] | None:
    """``(pattern, strength)``. ``futex``: an acquire (cmpxchg/xchg) and a wait (own or a
    direct callee's); strong only inside a loop (retry after wake-up), else weak (a
    once-guard fits too). ``spin``: a cmpxchg loop without wait/notify: always weak (a
    lock-free CAS update such as sbrk's fits too). ``futex_release``: a releasing write
    plus a notify (own or callee's): strong unless the body also has a cmpxchg (an inlined
    lock/unlock pair in a bigger function)."""
    acquire = "cmpxchg" in classes or "rmw.xchg" in classes
    wait = "wait" in classes or callee_wait
    notify = "notify" in classes or callee_notify
    if acquire and wait:
        return "futex", "strong" if loops else "weak"
    if "cmpxchg" in classes and loops and not notify:
        return "spin", "weak"
    if notify and (classes & {"rmw.xchg", "rmw.sub", "store", "rmw.and"}):
        return "futex_release", "weak" if "cmpxchg" in classes else "strong"
    return None


def _tls_facts(a: ModuleAnalysis, data: bytes) -> list[dict]:
    """``__wasm_init_tls(p0)``: ``global.set G`` from p0 then ``memory.init``/copy to p0."""
    out = []
    for f in a.functions:
        if f.imported or f.type_sig != "(i32) -> ()" or f.instr_count > 24 or f.calls:
            continue
        ops = f.mnemonics()
        if "global.set" not in ops or not ({"memory.init", "memory.copy"} & set(ops)):
            continue
        body = decode_body(data, f)
        if (
            len(body) >= 2
            and MNEMONICS[body[0][0]] == "local.get"
            and body[0][1] == (0,)
            and MNEMONICS[body[1][0]] == "global.set"
        ):
            g = body[1][1][0]
            out.append(
                {
                    "kind": "tls_base",
                    "global_index": g,
                    "init_function": f.index,
                    "evidence": "global set from p0 of a (i32)->() memory.init/copy "
                    "initialiser (__wasm_init_tls shape)",
                }
            )
    return out if len(out) == 1 else []


def _worker_facts(a: ModuleAnalysis) -> list[dict]:
    m = a.module
    entries: dict[int, str] = {}
    for e in m.exports:
        if e.kind == "func" and e.name in WORKER_EXPORTS:
            entries[e.index] = e.name
    if not entries:
        return []
    out = [
        {"kind": "worker_entry", "func_index": i, "export": n, "evidence": WORKER_EXPORTS[n]}
        for i, n in sorted(entries.items())
    ]
    roots = {e.index for e in m.exports if e.kind == "func" and e.index not in entries}
    if m.start is not None:
        roots.add(m.start)
    for el in m.elements:
        roots.update(x for x in el.func_indices if x is not None)
    main_reach = _reach(a, roots)
    worker_reach = _reach(a, set(entries))
    for i in sorted(worker_reach - main_reach - set(entries)):
        out.append(
            {
                "kind": "worker_only",
                "func_index": i,
                "evidence": "reached by direct calls only from worker entries",
            }
        )
    return out


def _reach(a: ModuleAnalysis, roots: set[int]) -> set[int]:
    seen = set(roots)
    stack = list(roots)
    n = len(a.functions)
    while stack:
        i = stack.pop()
        if 0 <= i < n:
            for c in a.functions[i].calls:
                if c not in seen:
                    seen.add(c)
                    stack.append(c)
    return seen
