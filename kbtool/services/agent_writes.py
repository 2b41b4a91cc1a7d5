"""What an agent pass writes, and where: names through the gate (and, for a provider, the
answer's comment, local names and prototype), suggestions below the write floor, feed events,
and the provider answers kept as they arrive (the KB's ``agent_answers``). The gate's
decision without writing (:func:`would_write`) serves dry runs."""

from __future__ import annotations

import logging
import re
import sqlite3
import threading
from collections.abc import Mapping
from typing import Any

from kbtool.agents import LLMBackend, Proposal, Reviewed
from kbtool.agents.prompts import cleaned_c
from kbtool.kb import queries, store
from kbtool.kb.errors import KBError
from kbtool.kb.gate import upsert_symbol, validate_name
from kbtool.kb.provenance import AUTHORITY

log = logging.getLogger("kbtool.agent_pass")

PROVENANCE = "agent"


def would_write(symbol: Mapping[str, Any] | None, name: str, confidence: float) -> tuple[bool, str]:
    """The gate's decision for an agent write onto ``symbol``, without writing (dry runs).

    Mirrors :func:`kbtool.kb.gate.upsert_symbol` for provenance ``agent`` (contract Part 3);
    tests check a dry run decides exactly as a real pass does.
    """
    problem = validate_name(name, PROVENANCE)
    if problem is not None:
        return False, problem
    if not symbol or symbol.get("name") is None:
        return True, "unnamed"
    prov, e = symbol["provenance"], float(symbol["confidence"])
    if symbol["name"] == name and prov == PROVENANCE and confidence <= e:
        return False, "no change"
    if symbol.get("locked"):
        return False, "locked"
    if prov == "human":
        return False, "human name outranks agent"
    if AUTHORITY[PROVENANCE] > AUTHORITY[prov]:
        return True, f"agent outranks {prov}"
    if confidence > e:
        return True, f"confidence {confidence:g} > {e:g}"
    return False, f"confidence {confidence:g} not above {prov} {e:g}"


def write_knowledge(
    conn: sqlite3.Connection,
    stable_id: str,
    version_id: int,
    p: Proposal,
    ctx: Mapping[str, Any] | None,
    actor: str,
) -> None:
    """A written provider name brings its knowledge: the summary as the function comment,
    the local names and the prototype, each through the gate at the name's confidence (a
    refusal, e.g. a human comment or a prototype that does not fit the signature, only
    drops that piece)."""
    from kbtool.services import knowledge as kn

    common = {
        "version_id": version_id,
        "provenance": PROVENANCE,
        "confidence": p.confidence,
        "actor": actor,
        "evidence": {"backend": p.backend, "model": p.model, "source": "llm", "name": p.name},
    }
    try:
        if p.summary:
            kn.set_comment(conn, stable_id, p.summary, **common)
        if p.prototype:
            kn.set_prototype(conn, stable_id, p.prototype, **common)
        if p.locals and ctx is not None:
            res = cleaned_c(ctx)
            back = {new: old for old, new in (res.rename_map if res is not None else {}).items()}
            for shown, name in list(p.locals.items())[:32]:
                wasm = back.get(shown, shown)
                if not re.fullmatch(r"[pl]\d+", wasm):
                    continue
                try:
                    kn.rename_local(conn, stable_id, wasm, name, **common)
                except KBError as exc:
                    log.info("local %s of %s not named: %s", wasm, stable_id, exc)
    except KBError as exc:
        log.info("knowledge of %s not written: %s", stable_id, exc)


class KBAnswers:
    """The pass's answer store: the KB's ``agent_answers`` (thread-safe; one short
    transaction per answer, so an interrupted pass keeps what it paid for)."""

    def __init__(self, conn: sqlite3.Connection, version_id: int, llm: LLMBackend) -> None:
        self.conn, self.version_id, self.llm = conn, version_id, llm
        self.lock = threading.Lock()

    def get(self, key: str) -> Mapping[str, Any] | None:
        with self.lock:
            return queries.agent_answer(self.conn, self.llm.backend, self.llm.model, key)

    def put(self, key: str, answer: Mapping[str, Any]) -> None:
        with self.lock:
            store.save_agent_answer(
                self.conn,
                {
                    "backend": self.llm.backend,
                    "model": self.llm.model,
                    "prompt_hash": key,
                    "version_id": self.version_id,
                    "func_index": answer.get("index"),
                    "variant": answer.get("variant"),
                    "answer": answer["text"],
                    "tokens_in": answer.get("tokens_in"),
                    "tokens_out": answer.get("tokens_out"),
                    "prompt_tokens": answer.get("prompt_tokens"),
                },
            )
            if answer.get("base"):  # the same question without neighbour names: no version,
                # so the version's answer counts and token sums see each answer once
                store.save_agent_answer(
                    self.conn,
                    {
                        "backend": self.llm.backend,
                        "model": self.llm.model,
                        "prompt_hash": answer["base"],
                        "version_id": None,
                        "func_index": None,
                        "variant": answer.get("variant"),
                        "answer": answer["text"],
                        "tokens_in": None,
                        "tokens_out": None,
                        "prompt_tokens": None,
                    },
                )


class Feed:
    """Appends feed events unless disabled (dry runs); an event is never worth failing a pass."""

    def __init__(self, conn: sqlite3.Connection, version_id: int, *, enabled: bool) -> None:
        self.conn, self.version_id, self.enabled = conn, version_id, enabled

    def __call__(
        self, kind: str, *, stable_id: str | None = None, payload: dict[str, Any] | None = None
    ) -> None:
        if self.enabled:
            store.append_event(
                self.conn, kind, stable_id=stable_id, version_id=self.version_id, payload=payload
            )


class Decisions:
    """The pass's side of :func:`kbtool.agents.run_rounds`: ``write`` (through the gate, or
    as the gate would in a dry run), ``suggest`` (below the write floor) and ``on_result``
    (feed events)."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        version_id: int,
        candidates: list[Any],
        contexts: list[dict[str, Any]],
        emit: Feed,
        *,
        actor: str,
        backend: str,
        dry_run: bool,
        knowledge: bool,
        min_confidence: float,
    ) -> None:
        self.conn, self.version_id, self.emit, self.actor = conn, version_id, emit, actor
        self.backend, self.dry_run, self.knowledge = backend, dry_run, knowledge
        self.min_confidence = min_confidence
        self.symbols = {f.index: f.symbol for f in candidates}
        self.contexts = {int(c["index"]): c for c in contexts}
        self.by_index = {f.index: f for f in candidates}

    def write(self, p: Proposal) -> tuple[bool, str]:
        if self.dry_run:
            ok, reason = would_write(self.symbols.get(p.index), p.name or "", p.confidence)
            if ok:
                self.symbols[p.index] = {
                    "name": p.name,
                    "provenance": PROVENANCE,
                    "confidence": p.confidence,
                    "locked": False,
                }
            return ok, reason
        sid = p.stable_id or self.by_index[p.index].stable_id
        d = upsert_symbol(
            self.conn,
            sid,
            p.name or "",
            provenance=PROVENANCE,
            confidence=p.confidence,
            actor=self.actor,
            summary=p.summary or None,
            evidence=p.evidence(),
            version_id=self.version_id,
        )
        if d["written"] and self.knowledge and p.source == "llm":
            write_knowledge(
                self.conn, sid, self.version_id, p, self.contexts.get(p.index), self.actor
            )
        return d["written"], d["reason"]

    def suggest(self, p: Proposal) -> tuple[bool, str]:
        ok, reason = would_write(self.symbols.get(p.index), p.name or "", p.confidence)
        if not ok:
            return False, reason
        why = f"confidence {p.confidence:g} below the write floor {self.min_confidence:g}"
        if self.dry_run:
            return True, why
        f = self.by_index[p.index]
        store.save_suggestion(
            self.conn,
            {
                "version_id": self.version_id,
                "stable_id": p.stable_id or f.stable_id,
                "func_index": p.index,
                "name": p.name,
                "confidence": p.confidence,
                "backend": p.backend or self.backend,
                "model": p.model,
                "rule": p.rule,
                "source": p.source,
                "evidence": {**p.evidence(), "actor": self.actor, "summary": p.summary or None},
            },
        )
        return True, why

    def on_result(self, round_no: int, rv: Reviewed, outcome: str, reason: str) -> None:
        p = rv.proposal
        payload = {
            "name": p.name,
            "confidence": p.confidence,
            "round": round_no,
            "source": p.source,
            "rule": p.rule,
            "backend": p.backend,
            "model": p.model,
            "reason": reason,
        }
        if outcome == "write":
            self.emit("named", stable_id=p.stable_id, payload=payload)
        elif outcome == "suggest":
            self.emit("suggested", stable_id=p.stable_id, payload=payload)
        elif reason != "no change":  # a re-run re-proposing what is stored is no news
            by = "verifier" if outcome == "verifier_reject" else "economy"
            code = rv.verdict.code if by == "verifier" else "gate"
            self.emit(
                "rejected", stable_id=p.stable_id, payload={**payload, "by": by, "code": code}
            )
