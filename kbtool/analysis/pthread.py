"""``pthread_mutex_lock`` by behaviour, anchored on a recognised ``pthread_mutex_trylock``.

musl's lock (Emscripten's libc) is ``if (normal && !a_cas(&m->_m_lock, 0, EBUSY)) return 0;
return __pthread_mutex_timedlock(m, 0)``, and timedlock tries ``trylock`` first and again in
its spin/wait loop. Binaryen inlines timedlock into the lock (one caller) and inlines the
``a_*`` helpers differently per program, so the lock's shape does not transfer (176
instructions in one build, 171 / 274 / 294 in the references). What stays: a
``(i32) -> i32`` body with atomic instructions that calls the recognised trylock at least
:data:`MIN_TRYLOCK_CALLS` times. Application code that merely *uses* trylock calls it once
(a retry around it would also need its own atomics); the candidate must be the only function
fitting, else none is named.
"""

from __future__ import annotations

from kbtool.wasm import ModuleAnalysis

from .families import canonical

MIN_TRYLOCK_CALLS = 2


def mutex_lock_candidates(
    a: ModuleAnalysis, named: dict[int, str]
) -> list[tuple[int, float, dict]]:
    """``[(func_index, confidence, evidence)]``: at most one ``__pthread_mutex_lock``.
    ``named``: function index -> name recognised so far."""
    if any(canonical(n) == "pthread_mutex_lock" for n in named.values()):
        return []
    tries = [i for i, n in named.items() if canonical(n) == "__pthread_mutex_trylock"]
    if len(tries) != 1:
        return []
    t = tries[0]
    fits = [
        f.index
        for f in a.functions
        if not f.imported
        and f.index not in named
        and f.type_sig == "(i32) -> i32"
        and f.atomic_sites > 0
        and f.calls.count(t) >= MIN_TRYLOCK_CALLS
    ]
    if len(fits) != 1:
        return []
    f = a.functions[fits[0]]
    ev = {
        "recognizer": "behaviour.mutex_lock",
        "method": "(i32) -> i32 with atomics calling the recognised __pthread_mutex_trylock "
        f">= {MIN_TRYLOCK_CALLS} times (musl's lock + inlined timedlock); the only such body",
        "fingerprint": None,
        "reference": None,
        "trylock": t,
        "trylock_calls": f.calls.count(t),
        "atomic_sites": f.atomic_sites,
    }
    return [(f.index, 0.7, ev)]


def _private(field: str) -> bool:
    """A JS-library internal of the Emscripten runtime (``__pthread_create_js``,
    ``__emscripten_thread_cleanup``, ``_emscripten_throw_longjmp``): a leading underscore;
    application code does not call these, only the libc that wraps them."""
    return field.startswith("_") and not field.startswith("__imported_")


def private_import_candidates(
    a: ModuleAnalysis, db, named: dict[int, str]
) -> list[tuple[int, str, float, dict]]:
    """Functions named by the ``env`` imports they call. The set of ``env`` import fields a
    function calls must equal the set of every reference entry of one canonical name (all
    entries with that set share the name; a binaryen split fragment with the same set makes
    it ambiguous), contain at least one runtime-private import (leading underscore: keeps an
    application function calling one public API such as ``emscripten_get_now`` out), and be
    called by no other function of the module. Minified import names never qualify."""
    imports = [i for i in a.module.imports if i.kind == "func"]
    env = {k: i.field for k, i in enumerate(imports) if i.module == "env"}
    if not any(_private(f) for f in env.values()):
        return []
    fields = set(env.values())
    by_set: dict[frozenset, set[str]] = {}
    ents_by_set: dict[frozenset, list] = {}
    for e in db.entries:
        s = frozenset(n for n in e.callees if n in fields)
        if s and any(_private(n) for n in s):
            by_set.setdefault(s, set()).add(canonical(e.name))
            ents_by_set.setdefault(s, []).append(e)
    users: dict[frozenset, list[int]] = {}
    for f in a.functions:
        if f.imported:
            continue
        s = frozenset(env[t] for t in f.calls if t in env)
        if s in by_set:
            users.setdefault(s, []).append(f.index)
    out = []
    taken = {canonical(n) for n in named.values()}
    for s, fs in users.items():
        names = by_set[s]
        if len(names) != 1 or len(fs) != 1 or fs[0] in named:
            continue
        name = next(iter(names))
        if name in taken:
            continue
        ents = ents_by_set[s]
        best = min(ents, key=lambda e: (len(e.name), e.name))
        ev = {
            "recognizer": "behaviour.runtime_imports",
            "method": "the only function calling exactly these Emscripten env imports (one "
            "runtime-private), as every reference function of this name does",
            "fingerprint": best.id,
            "reference": sorted({r for e in ents for r in e.refs}),
            "env_imports": sorted(s),
        }
        out.append((fs[0], best.name, 0.7, ev))
    return out
