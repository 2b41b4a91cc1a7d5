"""What a naming prompt shows beyond the stored facts, read from the KB for a pass:
the function's cleaned C (:mod:`kbtool.services.code`'s prepared module, KB names in place,
:func:`kbtool.lift.clean.clean_c` variable roles), the identifier the C uses for each callee
and caller (so a bottom-up pass can show the names they get later), the data labels it uses
(:func:`kbtool.services.data.xrefs`, once ``kbtool analyze`` built the data model) and the
comments already written on it (:func:`kbtool.services.knowledge.function_knowledge`).

Lifting is bounded by the lifter's own budget per function; a function that fails to lift
gets no C (the prompt then describes its body from the facts).
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable, Sequence
from typing import Any

from kbtool.kb.errors import KBError
from kbtool.lift import lift_function

log = logging.getLogger("kbtool.agent_prompts")

MAX_DATA_LABELS = 24


def enrich_contexts(
    conn: sqlite3.Connection,
    version_id: int,
    contexts: Sequence[dict[str, Any]],
    *,
    progress: Callable[[int, int], None] | None = None,
) -> None:
    """Add ``c_raw`` (the lifter's C; the prompt cleans it, see
    :func:`kbtool.agents.prompts.cleaned_c`), ``c_names``, ``c_stack``, ``c_structs``,
    ``data`` and ``comments`` to each context in place."""
    from kbtool.services.code import code_module
    from kbtool.services.deep import _stack_globals, _struct_params

    try:
        cm = code_module(conn, version_id)
    except KBError as exc:  # module bytes not stored: prompts from facts only
        log.info("no C for version %s: %s", version_id, exc)
        cm = None
    stack = _stack_globals(cm.lm) if cm is not None else ()
    structs = _struct_params(conn, version_id) if cm is not None else {}
    data_ok = _has_data_model(conn, version_id)
    for k, ctx in enumerate(contexts):
        idx = int(ctx["index"])
        if cm is not None:
            try:
                res = lift_function(cm.lm, idx)
                ctx["c_raw"] = res.text
                ctx["c_stack"] = list(stack)
                if structs.get(idx):
                    ctx["c_structs"] = {str(k): v for k, v in structs[idx].items()}
            except Exception as exc:  # one function's failure never stops the pass
                log.info("function %s: no C (%s: %s)", idx, type(exc).__name__, exc)
            links = [
                e.get("index") for e in (ctx.get("callees") or []) + (ctx.get("callers") or [])
            ]
            ctx["c_names"] = {
                str(i): cm.lm.func_c[i]
                for i in links
                if isinstance(i, int) and 0 <= i < len(cm.lm.func_c)
            }
        if data_ok:
            ctx["data"], extra = _data_of(conn, version_id, idx)
            known = set(ctx.get("strings") or [])
            ctx["strings"] = list(ctx.get("strings") or []) + [t for t in extra if t not in known]
        comments = _comments(conn, ctx.get("stable_id"), version_id)
        if comments:
            ctx["comments"] = comments
        if progress is not None:
            progress(k + 1, len(contexts))


def _has_data_model(conn: sqlite3.Connection, version_id: int) -> bool:
    from kbtool.kb import datamodel

    return datamodel.model_info(conn, version_id) is not None


def _data_of(conn: sqlite3.Connection, version_id: int, idx: int) -> tuple[list[str], list[str]]:
    """(labels, string texts) of what function ``idx`` references."""
    from kbtool.services.data import xrefs

    try:
        uses = (xrefs(conn, version_id, f"#{idx}", limit=200).get("uses") or {}).get("data") or []
    except KBError:
        return [], []
    labels: list[str] = []
    texts: list[str] = []
    for u in uses:
        label = u.get("label")
        if label and label not in labels and len(labels) < MAX_DATA_LABELS:
            labels.append(str(label))
        if isinstance(u.get("text"), str) and u["text"] and u["text"] not in texts:
            texts.append(u["text"])
    return labels, texts


def _comments(conn: sqlite3.Connection, stable_id: str | None, version_id: int) -> list[str]:
    if not stable_id:
        return []
    try:
        from kbtool.services.knowledge import function_knowledge
    except ImportError:  # knowledge service not present
        return []
    try:
        k = function_knowledge(conn, stable_id)
    except KBError:
        return []
    out = []
    if k.get("comment"):
        out.append(str(k["comment"]["text"]))
    out += [str(c["text"]) for c in k.get("line_comments") or []][:3]
    return out
