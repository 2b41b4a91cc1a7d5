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
