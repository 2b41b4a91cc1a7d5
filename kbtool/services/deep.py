"""``kbtool deep``: per function, lift to C, clean it, write an understanding; live events.

For each selected function of a version: ``raw_c`` (the lifter), ``clean_c`` and
``rename_map`` (:func:`kbtool.lift.clean.clean_c`: variables renamed from their roles,
callee and global names from the KB in place, struct pointers named after recovered structs),
an ``understanding`` (offline: a few sentences from the facts and the cleaned code), a
``status`` (``done``; ``truncated`` when the lifter hit its budget; ``failed``) and a
``confidence`` (how much evidence the understanding rests on). Stored per stable_id with
:func:`kbtool.kb.store.upsert_analysis`; re-running skips finished functions unless
``force``. Every step is an event in the studio's feed (``deep-started``, ``lifted``,
``cleaned``, ``deep-done`` per function, ``failed``; ``deep-pass-started``/``-done`` around
the pass), each in its own short transaction so a poller sees it at once.

Name proposals: after the records, deep runs the agent pass
(:func:`kbtool.services.agent_pass.run_agent_pass`) on the functions it read, with the chosen
backend (offline by default; a provider when asked): names go through the gate like any
agent's, and the pass's summary is returned under ``naming``. ``name=False`` skips it.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable
from typing import Any

from kbtool.kb import queries, store
from kbtool.kb.db import transaction
from kbtool.kb.errors import KBError
from kbtool.lift import LiftModule, lift_function
from kbtool.lift.clean import clean_c, describe
from kbtool.services.agent_pass import run_agent_pass
from kbtool.services.code import code_module

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


def _event(conn: sqlite3.Connection, kind: str, version_id: int, stable_id: str | None = None,
           **payload: Any) -> int:
    with transaction(conn):
        return store.append_event(conn, kind, stable_id=stable_id, version_id=version_id,
                                  payload=payload)


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
            raise KBError(f"version {version_id} has no defined function {missing[0]}"
                          " (imports have no code; list them with `kbtool functions`)")
        picked = [entries[i] for i in dict.fromkeys(functions)]
    else:
        done = set() if force else queries.deep_done(conn, version_id)
        picked = [f for i, f in sorted(entries.items()) if i not in done
                  and (all_functions or f["confidence"] is None or f["confidence"] < 0.5)]
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
) -> dict[str, Any]:
    """Deep-analyse functions of ``version_id``; returns counts and per-function results."""
    queries.get_version(conn, version_id)  # UnknownVersionError with the known ids
    picked = select_functions(conn, version_id, functions=functions, all_functions=all_functions,
                              force=force, max_functions=max_functions)
    done = queries.deep_done(conn, version_id)
    lm, kb_names = _lift_module(conn, version_id)
    structs = _struct_params(conn, version_id)
    stack = _stack_globals(lm)
    out = {"version_id": version_id, "backend": BACKEND, "considered": len(picked), "done": 0,
           "truncated": 0, "failed": 0, "skipped_existing": 0, "renamed_variables": 0,
           "variables": 0, "functions": []}
    _event(conn, "deep-pass-started", version_id, functions=len(picked))
    for n, f in enumerate(picked):
        idx, sid = f["index"], f["stable_id"]
        if progress:
            progress(n, len(picked))
        if idx in done and not force and functions:
            existing = queries.get_analysis(conn, sid)
            if existing and existing["status"] == "done" and existing["version_id"] == version_id:
                out["skipped_existing"] += 1
                continue
        _event(conn, "deep-started", version_id, sid, func_index=idx, name=f["name"])
        try:
            res = lift_function(lm, idx)
            _event(conn, "lifted", version_id, sid, func_index=idx, truncated=res.truncated,
                   lines=res.text.count("\n"))
            cleaned = clean_c(res.text, stack_globals=stack, struct_params=structs.get(idx))
            _event(conn, "cleaned", version_id, sid, func_index=idx,
                   renamed=len(cleaned.rename_map))
            facts = queries.get_function_facts(conn, version_id, idx) or {}
            understanding, confidence = describe(facts, cleaned, name=kb_names.get(idx))
            status = "truncated" if res.truncated else "done"
            with transaction(conn):
                store.upsert_analysis(conn, {
                    "stable_id": sid, "version_id": version_id, "func_index": idx,
                    "raw_c": res.text, "clean_c": cleaned.text, "understanding": understanding,
                    "rename_map": cleaned.rename_map, "status": status, "confidence": confidence,
                    "backend": BACKEND, "model": None,
                })
            _event(conn, "deep-done", version_id, sid, func_index=idx, status=status,
                   confidence=confidence)
            out[status] += 1
            out["renamed_variables"] += len(cleaned.rename_map)
            out["variables"] += _variable_count(res.text)
            out["functions"].append({"func_index": idx, "stable_id": sid, "status": status,
                                     "renamed": len(cleaned.rename_map)})
        except KBError:
            raise
        except Exception as exc:  # one function's failure never stops the pass
            out["failed"] += 1
            _event(conn, "failed", version_id, sid, func_index=idx,
                   error=f"{type(exc).__name__}: {exc}"[:300])
    if progress:
        progress(len(picked), len(picked))
    if name and out["functions"]:
        out["naming"] = run_agent_pass(conn, version_id, backend=backend, rounds=1,
                                       functions=[f["func_index"] for f in out["functions"]])
    summary = {k: v for k, v in out.items() if k not in ("functions", "naming")}
    with transaction(conn):
        store.record_run(conn, version_id, "deep", summary)
    _event(conn, "deep-pass-done", version_id,
           **{k: v for k, v in summary.items() if k != "version_id"})
    return out


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
