"""``kbtool deep``: per function, lift to C, clean it, write an understanding; live events.

For each selected function of a version: ``raw_c`` (the lifter), ``clean_c`` and
``rename_map`` (:func:`kbtool.lift.clean.clean_c`: variables renamed from their roles,
callee and global names from the KB in place, struct pointers named after recovered structs),
an ``understanding`` (offline: a few sentences from the facts and the cleaned code; with a
provider backend, the model's reading of the cleaned C and facts, validated by
:mod:`kbtool.agents.understanding`, with the offline one as the fallback), a
``status`` (``done``; ``truncated`` when the lifter hit its budget; ``failed``) and a
``confidence`` (how much evidence the understanding rests on). Stored per stable_id with
:func:`kbtool.kb.store.upsert_analysis`; re-running skips finished functions unless
``force``. Every step is an event in the studio's feed (``deep-started``, ``lifted``,
``cleaned``, ``deep-done`` per function, ``failed``; ``deep-pass-started``/``-done`` around
the pass), each in its own short transaction so a poller sees it at once.

Name proposals: after the records, deep runs the agent pass
(:func:`kbtool.services.agent_pass.run_agent_pass`) on the functions it read, with the chosen
backend (offline by default; a provider when asked): names go through the verifier and the
gate like any agent's, and the pass's summary is returned under ``naming``. ``name=False``
skips it. With a provider the pass replays the names of the answers deep already got
(:class:`~kbtool.agents.understanding.DeepAnswerBackend`): one model call per function in
all, :data:`PROVIDER_CONCURRENCY` at a time in worker threads that never touch the DB.

Provider answers are kept in the KB's ``agent_answers`` as they arrive (keyed like the agent
pass's: backend, model, prompt hash; variant ``deep``), by the main thread as soon as each
call returns: a deep run interrupted at any point and run again sends only the prompts that
have no answer yet (the functions already recorded are skipped, the others replay their
kept answers). The functions the interrupted run recorded but had not named yet are named
by the re-run from their kept answers (no call), as an uninterrupted run would have.
"""

from __future__ import annotations

import re
import sqlite3
from collections import deque
from collections.abc import Callable, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, replace
from typing import Any

from kbtool.agents import LLMBackend, callers_of, context_from_facts, resolve_backend
from kbtool.agents.understanding import (
    DeepAnswer,
    DeepAnswerBackend,
    ask_deep,
    deep_key,
    deep_prompt,
    facts_understanding,
)
from kbtool.kb import queries, store
from kbtool.kb.db import transaction
from kbtool.kb.errors import KBError
from kbtool.lift import LiftModule, lift_function
from kbtool.lift.clean import clean_c
from kbtool.services.agent_pass import (
    PROVIDER_CONCURRENCY,
    plan_agent_pass,
    run_agent_pass,
)
from kbtool.services.code import code_module
from kbtool.services.knowledge import write_understanding

Progress = Callable[[int, int], None]
DEFAULT_MAX_FUNCTIONS = 200
BACKEND = "offline"


def _lift_module(conn: sqlite3.Connection, version_id: int) -> tuple[LiftModule, dict[int, str]]:
    """The version prepared by the code service (KB names first), and the KB's names."""
    return code_module(conn, version_id).lm, queries.function_names(conn, version_id)


def _stack_globals(lm: LiftModule) -> tuple[str, ...]:
    """C names the lifter gives the stack-pointer global (name section, else global 0)."""
    out = ["g0", "__stack_pointer"]
    gname = getattr(lm, "global_c_names", None)
    if isinstance(gname, dict) and 0 in gname:
        out.append(gname[0])
    return tuple(out)


def _event(
    conn: sqlite3.Connection,
    kind: str,
    version_id: int,
    stable_id: str | None = None,
    **payload: Any,
) -> int:
    with transaction(conn):
        return store.append_event(
            conn, kind, stable_id=stable_id, version_id=version_id, payload=payload
        )


def select_functions(
    conn: sqlite3.Connection,
    version_id: int,
    *,
    functions: list[int] | None = None,
    all_functions: bool = False,
    force: bool = False,
    max_functions: int | None = DEFAULT_MAX_FUNCTIONS,
) -> list[dict[str, Any]]:
    """The function list entries deep will work on (defined functions only)."""
    entries = {f["index"]: f for f in queries.list_functions(conn, version_id, False)}
    if functions:
        missing = [i for i in functions if i not in entries]
        if missing:
            raise KBError(
                f"version {version_id} has no defined function {missing[0]}"
                " (imports have no code; list them with `kbtool functions`)"
            )
        picked = [entries[i] for i in dict.fromkeys(functions)]
    else:
        done = set() if force else queries.deep_done(conn, version_id)
        picked = [
            f
            for i, f in sorted(entries.items())
            if i not in done and (all_functions or f["confidence"] is None or f["confidence"] < 0.5)
        ]
    if max_functions is not None and not functions:
        picked = picked[:max_functions]
    return picked


def run_deep(
    conn: sqlite3.Connection,
    version_id: int,
    *,
    functions: list[int] | None = None,
    all_functions: bool = False,
    force: bool = False,
    max_functions: int | None = DEFAULT_MAX_FUNCTIONS,
    progress: Progress | None = None,
    name: bool = True,
    backend: str = "offline",
    env: Mapping[str, str] | None = None,
    notice: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Deep-analyse functions of ``version_id``; returns counts and per-function results.

    ``backend`` offline (default) writes the understanding from facts; a provider
    (``provider_a``, ``provider_b``, ``auto``) writes it with one model call per function
    (:data:`PROVIDER_CONCURRENCY` at a time) and its name proposal goes to the agent pass.
    ``env`` replaces ``os.environ`` for the backend; ``notice`` gets the call estimate.
    Raises ``UnknownVersionError``, ``KBError``, ``ValueError`` (unknown backend) or
    ``BackendUnavailable``.
    """
    queries.get_version(conn, version_id)  # UnknownVersionError with the known ids
    chosen = resolve_backend(backend, env)
    picked = select_functions(
        conn,
        version_id,
        functions=functions,
        all_functions=all_functions,
        force=force,
        max_functions=max_functions,
    )
    done = queries.deep_done(conn, version_id)
    finished: list[dict[str, Any]] = []
    if functions and not force:
        finished = [f for f in picked if _finished(conn, f, done, version_id)]
        picked = [f for f in picked if f not in finished]
    skipped = (len(dict.fromkeys(functions)) - len(picked)) if functions else 0
    lm, kb_names = _lift_module(conn, version_id)
    structs = _struct_params(conn, version_id)
    stack = _stack_globals(lm)
    reader = None
    if isinstance(chosen, LLMBackend):
        reader = _ProviderReader(conn, version_id, chosen, backend, env, picked + finished)
    out = {
        "version_id": version_id,
        "backend": chosen.name,
        "model": chosen.model,
        "considered": len(picked) + skipped,
        "done": 0,
        "truncated": 0,
        "failed": 0,
        "skipped_existing": skipped,
        "renamed_variables": 0,
        "variables": 0,
        "understood_by_provider": 0,
        "understanding_fallbacks": 0,
        "understanding_errors": {},
        "functions": [],
    }
    if reader is not None and notice is not None:
        notice(
            f"estimate: up to {len(picked)} model calls to {chosen.name} ({chosen.model}), "
            f"{PROVIDER_CONCURRENCY} at a time, one per function for its understanding and "
            "name (--max-functions caps it)"
        )
    _event(
        conn,
        "deep-pass-started",
        version_id,
        functions=len(picked),
        backend=chosen.name,
        model=chosen.model,
    )
    pending: deque[_Job] = deque()
    with ThreadPoolExecutor(max_workers=PROVIDER_CONCURRENCY) as pool:
        for n, f in enumerate(picked):
            if progress:
                progress(n, len(picked))
            job = _lift_and_clean(conn, version_id, f, lm, stack, structs.get(f["index"]), out)
            if job is None:
                continue
            if reader is not None:
                job.answer = reader.submit(pool, job)
            pending.append(job)
            if reader is not None:
                _keep_arrived(conn, version_id, reader, pending)
            while pending and (
                reader is None or len(pending) > PROVIDER_CONCURRENCY or pending[0].answer.done()
            ):
                if reader is not None:
                    _await_first(conn, version_id, reader, pending)
                _finish(conn, version_id, pending.popleft(), kb_names, reader, out)
        while pending:
            if reader is not None:
                _await_first(conn, version_id, reader, pending)
            _finish(conn, version_id, pending.popleft(), kb_names, reader, out)
    if progress:
        progress(len(picked), len(picked))
    resumed = _replay_kept(conn, reader, finished) if reader is not None and name else []
    if name and (out["functions"] or resumed):
        indices = [f["func_index"] for f in out["functions"]] + resumed
        if reader is None:
            out["naming"] = run_agent_pass(
                conn, version_id, backend=chosen.name, rounds=1, functions=indices, env=env
            )
        else:  # the names the provider gave with its understandings, through verifier and gate
            plan = replace(
                reader.plan,
                backend=DeepAnswerBackend(chosen, reader.answers),
                candidates=[c for c in reader.plan.candidates if c.index in set(indices)],
                replayed=True,
            )
            out["naming"] = run_agent_pass(
                conn,
                version_id,
                backend=chosen.name,
                rounds=1,
                plan=plan,
                functions=indices,
                env=env,
            )
    summary = {k: v for k, v in out.items() if k not in ("functions", "naming")}
    with transaction(conn):
        store.record_run(conn, version_id, "deep", summary)
    _event(
        conn,
        "deep-pass-done",
        version_id,
        **{k: v for k, v in summary.items() if k != "version_id"},
    )
    return out


def _replay_kept(
    conn: sqlite3.Connection, reader: _ProviderReader, finished: list[dict[str, Any]]
) -> list[int]:
    """The functions of ``finished`` (recorded by an earlier, perhaps interrupted, run) whose
    provider understanding has a kept answer to the same prompt: their answers go back into
    ``reader.answers`` (no call) so the naming step proposes their names as a whole run
    would have."""
    b, out = reader.backend, []
    for f in finished:
        rec = queries.get_analysis(conn, f["stable_id"])
        if rec is None or rec.get("backend") != b.name or not rec.get("clean_c"):
            continue  # an offline record (or a fallback): no provider name to replay
        try:
            ctx = reader.context(f["index"])
        except Exception:  # noqa: BLE001 - a context that cannot be built names nothing
            continue
        hit = queries.agent_answer(
            conn, b.backend, b.model, deep_key(b.backend, b.model, deep_prompt(ctx, rec["clean_c"]))
        )
        if hit is not None:
            reader.answers[f["index"]] = ask_deep(b, ctx, rec["clean_c"], stored=str(hit["text"]))
            out.append(f["index"])
    return out


def _finished(conn: sqlite3.Connection, f: dict[str, Any], done: set[int], version_id: int) -> bool:
    """An explicitly asked function that already has a finished record of this version."""
    if f["index"] not in done:
        return False
    existing = queries.get_analysis(conn, f["stable_id"])
    return bool(existing and existing["status"] == "done" and existing["version_id"] == version_id)


@dataclass(slots=True)
class _Job:
    """One function between its cleaning and its record."""

    index: int
    stable_id: str
    raw_c: str
    clean_c: str
    cleaned: Any
    truncated: bool
    facts_index: int
    answer: Future[DeepAnswer] | None = None
    key: str | None = None  # the answer store key of its deep prompt
    kept: bool = False  # its answer is in the KB (replayed, or stored when it arrived)


def _keep_arrived(
    conn: sqlite3.Connection, version_id: int, reader: _ProviderReader, pending: deque[_Job]
) -> None:
    """Store every answer that arrived and is not kept yet (main thread, one short
    transaction each)."""
    for job in pending:
        if job.kept or job.answer is None or not job.answer.done():
            continue
        job.kept = True
        ans = job.answer.result()
        if ans.text is None or job.key is None:  # replayed, or the call failed
            continue
        store.save_agent_answer(
            conn,
            {
                "backend": reader.backend.backend,
                "model": reader.backend.model,
                "prompt_hash": job.key,
                "version_id": version_id,
                "func_index": job.index,
                "variant": "deep",
                "answer": ans.text,
                "tokens_in": ans.tokens_in,
                "tokens_out": ans.tokens_out,
                "prompt_tokens": None,
            },
        )


def _await_first(
    conn: sqlite3.Connection, version_id: int, reader: _ProviderReader, pending: deque[_Job]
) -> None:
    """Wait for the oldest job's answer, storing the others' as they arrive meanwhile."""
    head = pending[0].answer
    while head is not None and not head.done():
        wait(
            [j.answer for j in pending if j.answer is not None and not j.kept],
            return_when=FIRST_COMPLETED,
        )
        _keep_arrived(conn, version_id, reader, pending)
    _keep_arrived(conn, version_id, reader, pending)


def _lift_and_clean(
    conn: sqlite3.Connection,
    version_id: int,
    f: dict[str, Any],
    lm: LiftModule,
    stack: tuple[str, ...],
    structs: dict[int, str] | None,
    out: dict[str, Any],
) -> _Job | None:
    idx, sid = f["index"], f["stable_id"]
    _event(conn, "deep-started", version_id, sid, func_index=idx, name=f["name"])
    try:
        res = lift_function(lm, idx)
        _event(
            conn,
            "lifted",
            version_id,
            sid,
            func_index=idx,
            truncated=res.truncated,
            lines=res.text.count("\n"),
        )
        cleaned = clean_c(res.text, stack_globals=stack, struct_params=structs)
        _event(conn, "cleaned", version_id, sid, func_index=idx, renamed=len(cleaned.rename_map))
    except KBError:
        raise
    except Exception as exc:  # one function's failure never stops the pass
        out["failed"] += 1
        _event(
            conn,
            "failed",
            version_id,
            sid,
            func_index=idx,
            error=f"{type(exc).__name__}: {exc}"[:300],
        )
        return None
    return _Job(idx, sid, res.text, cleaned.text, cleaned, res.truncated, idx)


def _finish(
    conn: sqlite3.Connection,
    version_id: int,
    job: _Job,
    kb_names: dict[int, str],
    reader: _ProviderReader | None,
    out: dict[str, Any],
) -> None:
    """Write one function's record: the provider's understanding when it gave a usable one,
    else the offline one (the event says why)."""
    idx, sid = job.index, job.stable_id
    facts = queries.get_function_facts(conn, version_id, idx) or {}
    understanding, confidence = facts_understanding(facts, job.cleaned, kb_names.get(idx))
    by, model, why = BACKEND, None, None
    if reader is not None and job.answer is not None:
        ans = job.answer.result()
        reader.answers[idx] = ans
        if ans.understanding is not None:
            understanding, confidence = ans.understanding, ans.confidence
            by, model = reader.backend.name, reader.backend.model
            out["understood_by_provider"] += 1
        else:
            why = ans.error
            out["understanding_fallbacks"] += 1
            errors = out["understanding_errors"]
            errors[ans.code] = errors.get(ans.code, 0) + 1
    status = "truncated" if job.truncated else "done"
    with transaction(conn):
        store.upsert_analysis(
            conn,
            {
                "stable_id": sid,
                "version_id": version_id,
                "func_index": idx,
                "raw_c": job.raw_c,
                "clean_c": job.clean_c,
                "understanding": understanding,
                "rename_map": job.cleaned.rename_map,
                "status": status,
                "confidence": confidence,
                "backend": by,
                "model": model,
            },
        )
    # the understanding as the function comment, the renames as local names (issue 27); a
    # provider's own names for the variables win over the cleaner's role names
    renames = dict(job.cleaned.rename_map)
    if by != BACKEND and reader is not None:
        renames.update(_provider_locals(reader.answers.get(idx), job.cleaned.rename_map))
    write_understanding(
        conn,
        version_id,
        sid,
        understanding,
        confidence,
        renames,
        evidence={"backend": by, "model": model},
    )
    extra: dict[str, Any] = {"understanding_by": "agent" if by != BACKEND else BACKEND}
    if why:
        extra["understanding_fallback"] = why
    _event(
        conn,
        "deep-done",
        version_id,
        sid,
        func_index=idx,
        status=status,
        confidence=confidence,
        backend=by,
        model=model,
        **extra,
    )
    out[status] += 1
    out["renamed_variables"] += len(job.cleaned.rename_map)
    out["variables"] += _variable_count(job.raw_c)
    row = {
        "func_index": idx,
        "stable_id": sid,
        "status": status,
        "renamed": len(job.cleaned.rename_map),
        **extra,
    }
    out["functions"].append(row)


class _ProviderReader:
    """Builds each function's agent context once and asks the provider (thread-safe: the
    worker threads only read the plan and call the SDK; the DB stays in the main thread)."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        version_id: int,
        backend: LLMBackend,
        selector: str,
        env: Mapping[str, str] | None,
        picked: list[dict[str, Any]],
    ) -> None:
        self.conn, self.backend = conn, backend
        indices = [f["index"] for f in picked]
        self.plan = plan_agent_pass(conn, version_id, selector, True, 0, functions=indices, env=env)
        self._callers = callers_of(self.plan.facts)
        self.answers: dict[int, DeepAnswer] = {}

    def submit(self, pool: ThreadPoolExecutor, job: _Job) -> Future[DeepAnswer]:
        """The future answer for ``job``: a kept answer to the same prompt replays at once
        (no call); else one call in ``pool``. Main thread (reads the KB)."""
        try:
            ctx = self.context(job.facts_index)
        except Exception as exc:  # a context that cannot be built is this function's failure
            why = f"no context: {type(exc).__name__}: {exc}"[:300]
            done: Future[DeepAnswer] = Future()
            done.set_result(DeepAnswer(job.facts_index, None, 0.0, None, "provider_error", why))
            return done
        b = self.backend
        job.key = deep_key(b.backend, b.model, deep_prompt(ctx, job.clean_c))
        hit = queries.agent_answer(self.conn, b.backend, b.model, job.key)
        if hit is not None:
            job.kept = True
            done = Future()
            done.set_result(ask_deep(b, ctx, job.clean_c, stored=str(hit["text"])))
            return done
        return pool.submit(ask_deep, b, ctx, job.clean_c)

    def context(self, index: int) -> dict[str, Any]:
        f = self.plan.facts[index]
        return context_from_facts(
            self.plan.facts,
            index,
            self.plan.names,
            self._callers,
            stable_id=f.stable_id,
            existing=_named(f.symbol),
        )

    def ask(self, index: int, clean: str) -> DeepAnswer:
        """The provider's answer for one function; never raises (a worker thread)."""
        try:
            ctx = self.context(index)
        except Exception as exc:  # a context that cannot be built is this function's failure
            why = f"no context: {type(exc).__name__}: {exc}"[:300]
            return DeepAnswer(index, None, 0.0, None, "provider_error", why)
        return ask_deep(self.backend, ctx, clean)


def _provider_locals(ans: DeepAnswer | None, rename_map: Mapping[str, str]) -> dict[str, str]:
    """wasm variable (``p0``, ``l3``) -> the provider's name for it: the answer's ``locals``
    name the cleaned C's variables, mapped back through the cleaner's ``rename_map``."""
    locs = getattr(ans.proposal, "locals", None) if ans is not None else None
    if not locs:
        return {}
    back = {new: old for old, new in rename_map.items()}
    out: dict[str, str] = {}
    for shown, new in list(locs.items())[:64]:
        wasm = back.get(shown, shown)
        if re.fullmatch(r"[pl]\d+", wasm) and re.fullmatch(r"[A-Za-z_]\w{0,63}", new):
            out[wasm] = new
    return out


def _named(symbol: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if not symbol or symbol.get("name") is None:
        return None
    return {k: symbol[k] for k in ("name", "confidence", "provenance")}


def _variable_count(text: str) -> int:
    return len(set(re.findall(r"\b[pl]\d+\b", text)))


def _struct_params(conn: sqlite3.Connection, version_id: int) -> dict[int, dict[int, str]]:
    """func index -> {param index -> struct name} from ``kbtool analyze`` results, if any."""
    out: dict[int, dict[int, str]] = {}
    for s in queries.structs(conn, version_id):
        for member in s.get("members", []):
            if isinstance(member, dict):
                fi, base = member.get("func_index"), str(member.get("base", ""))
                pi = int(base[1:]) if re.fullmatch(r"p\d+", base) else None
            elif isinstance(member, list | tuple) and len(member) == 2:
                fi, pi = member
            else:
                continue
            if isinstance(fi, int) and isinstance(pi, int):
                out.setdefault(fi, {}).setdefault(pi, s["name"])
    return out
