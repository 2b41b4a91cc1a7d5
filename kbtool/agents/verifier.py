"""The proposal verifier: the one check every agent write passes before the gate.

:func:`verify` runs on every proposal of every backend (``run_agent_pass``, ``kbtool deep``
naming) and :func:`check_name` on every MCP ``propose_symbol`` / ``propose_symbols`` name
before anything reaches the write gate. A rejection carries a stable ``code``
(``malformed``, ``not_identifier``, ``keyword``, ``generic``, ``injection``,
``not_a_name``, ``taken``, ``bad_confidence``, ``inconsistent``) so a pass can count and
report them, and a one-line ``reason`` that says why (the name is quoted escaped).

Summaries are prose from a model or an agent: :func:`clean_summary` removes the control
characters the gate refuses (and normalises line ends) so a stray escape in a summary never
costs the name; :func:`verify` cleans the proposal's summary in place.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Mapping
from typing import Any

from kbtool.textutil import printable

from .proposal import Proposal, Verdict
from .tokens import C_KEYWORDS, is_generic_name, split_tokens

_ALLOC = {"alloc", "malloc", "calloc", "realloc", "new", "create", "dup", "strdup", "clone"}
_PREDICATE_HEAD = {"is", "has", "can", "should"}
_OUTPUT = {"print", "printf", "log", "write", "send", "emit", "puts", "dump", "fprintf"}
_MUTATE = {"init", "reset", "set", "clear", "zero", "store", "fill", "memset", "memcpy", "copy"}

MAX_NAME_LEN = 256  # the gate's bound for names typed by people and agents
MAX_SUMMARY_LEN = 8192  # the gate's bound for summaries
# One segment of a C-like (optionally ``::``-qualified) identifier, as the gate accepts it.
_SEGMENT = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*\Z")
# Words a C/C++ reader never sees as a function name: keywords and literal constants.
_RESERVED = C_KEYWORDS | frozenset(
    "bool true false NULL nullptr TRUE FALSE null nil None undefined NaN nan Infinity inf "
    "class namespace template typename this new delete operator private public protected "
    "virtual friend using throw try catch constexpr decltype noexcept static_assert "
    "thread_local alignas alignof asm mutable explicit".split()
)
# Names disassemblers and decompilers make up (IDA, Ghidra, radare2, wasm tools): they say
# nothing about the function. ``tokens.is_generic_name`` has the plain words (func_12,
# sub_4a, unknown, f3); these are the tool prefixes in front of an address or a number.
_TOOL_PLACEHOLDER = re.compile(
    r"(?:j_|thunk_|nullsub_?|unk_|dat_|lab_|ptr_|off_|byte_|word_|dword_|qword_|stru_|"
    r"fun_|sub_|func_|fn_|function_|fcn_|fcn\.|loc_|wasm_function_?|w2c_|\$?f)"
    r"(?:0x)?[0-9a-f]+\Z",
    re.IGNORECASE,
)
# A prompt-injection attempt written as a name: an instruction to the reader of the KB.
_INJECT_VERB = {"ignore", "disregard", "forget", "override", "bypass"}
_INJECT_OBJECT = {
    "instruction",
    "instructions",
    "prompt",
    "prompts",
    "rules",
    "guidelines",
    "directions",
    "directives",
}
_INJECT_EARLIER = {"previous", "prior", "above", "earlier"}
_INJECT_WORD = {"jailbreak", "jailbroken", "promptinjection"}
# English function words: a name made of several of these reads as a sentence, not a symbol.
_SENTENCE_WORDS = {
    "the",
    "all",
    "you",
    "your",
    "and",
    "to",
    "of",
    "a",
    "an",
    "is",
    "are",
    "now",
    "this",
    "these",
    "please",
    "must",
    "should",
    "any",
    "every",
    "me",
    "my",
    "we",
    "our",
    "from",
    "instead",
    "i",
    "it",
    "be",
    "do",
    "not",
    "with",
    "for",
    "them",
    "that",
}
_SUMMARY_CONTROL = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]"
)


def verify(
    proposal: Proposal,
    ctx: Mapping[str, Any],
    taken: Collection[str] = (),
) -> Verdict:
    """Check ``proposal`` against its context and the names already used in the version.

    ``taken`` holds names of OTHER functions of the version (the function's own current name
    may be in it; it is ignored when it is ``ctx["existing"]["name"]``). Cleans the
    proposal's summary in place (:func:`clean_summary`).
    """
    name = proposal.name
    if proposal.error or name is None:
        return Verdict.reject("malformed", proposal.error or "no name proposed")
    proposal.summary = clean_summary(proposal.summary)
    verdict = check_name(name, strings=ctx.get("strings") or ())
    if not verdict.ok:
        return verdict
    c = proposal.confidence
    if (
        isinstance(c, bool)
        or not isinstance(c, (int, float))
        or not math.isfinite(c)
        or not (0.0 <= c <= 1.0)
    ):
        return Verdict.reject("bad_confidence", f"confidence {c!r} outside 0.0..1.0")
    own = (ctx.get("existing") or {}).get("name")
    if name in taken and name != own:
        return Verdict.reject("taken", f"{name!r} already names another function")
    problem = inconsistency(name, ctx)
    if problem:
        return Verdict.reject("inconsistent", problem)
    return Verdict.accept()


def check_name(name: Any, *, strings: Collection[Any] = ()) -> Verdict:
    """The checks of a name alone (no facts needed): what every agent and MCP write passes.

    Refused: not a C-like identifier (``::`` qualification and ``$`` allowed, as the gate
    does), a C/C++ keyword or literal (``while``, ``NULL``), a placeholder a tool makes up
    (``sub_1234``, ``func_12``, ``FUN_00401000``, ``unknown``, ``f3``), a name that reads as an
    instruction or a sentence (``IGNORE_ALL_PREVIOUS_INSTRUCTIONS``) and a name copied from
    one of the function's ``strings`` that is prose (several words), not a symbol.
    """
    if not isinstance(name, str) or not name:
        return Verdict.reject("malformed", "no name proposed")
    shown = printable(name[:60]) + ("…" if len(name) > 60 else "")
    if len(name) > MAX_NAME_LEN:
        return Verdict.reject(
            "not_identifier", f"invalid name: longer than {MAX_NAME_LEN} characters"
        )
    segments = name.split("::")
    if not all(_SEGMENT.match(s) for s in segments):
        return Verdict.reject(
            "not_identifier", f"invalid name: {shown!r} is not a C-like identifier"
        )
    if name in _RESERVED:  # a qualified `Vec::new` is a real (Rust) name
        return Verdict.reject("keyword", f"{shown!r} is a reserved word, not a function name")
    last = segments[-1]
    core = last.strip("_$")
    if is_generic_name(last) or _TOOL_PLACEHOLDER.match(core) or _repeated(core):
        return Verdict.reject(
            "generic", f"placeholder name {shown!r}: it says nothing about the function"
        )
    why = injection(name)
    if why:
        return Verdict.reject("injection", f"{shown!r} {why}")
    for s in strings:
        if isinstance(s, str) and _prose_string(s) and _squash(s) == _squash(name):
            return Verdict.reject(
                "not_a_name",
                f"{shown!r} is the text of a string the function references, not a name for it",
            )
    return Verdict.accept()


def injection(name: str) -> str | None:
    """Why ``name`` looks like an instruction to whoever reads the KB, or None."""
    toks = split_tokens(name)
    words = set(toks)
    if words & _INJECT_WORD:
        return "reads as a prompt-injection attempt, not a function name"
    if words & _INJECT_VERB and words & (_INJECT_OBJECT | _INJECT_EARLIER):
        return "reads as an instruction to the reader (prompt injection), not a function name"
    letters = [c for c in name if c.isalpha()]
    shouted = bool(letters) and all(c.isupper() for c in letters)
    if (
        len(toks) >= 4
        and sum(t in _SENTENCE_WORDS for t in toks) >= 2
        and (shouted or len(toks) >= 6)
    ):
        return "reads as a sentence, not a function name"
    return None


def clean_summary(summary: Any) -> str:
    """``summary`` as the gate accepts it: CR/CRLF become newlines, other control and bidi
    characters are dropped (tabs and newlines kept), at most :data:`MAX_SUMMARY_LEN`
    characters. Not text: empty."""
    if not isinstance(summary, str) or not summary:
        return ""
    text = summary.replace("\r\n", "\n").replace("\r", "\n")
    text = _SUMMARY_CONTROL.sub("", text)
    return text[:MAX_SUMMARY_LEN]


def _repeated(core: str) -> bool:
    """``aaaa``, ``xxxxxxxx``: one character repeated (a filler, not a word)."""
    return len(core) >= 3 and len(set(core.lower())) == 1


def _squash(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def _prose_string(text: str) -> bool:
    """A string that is prose (an error message, a sentence), not an identifier."""
    return len(re.findall(r"[A-Za-z]+", text)) >= 4 and " " in text.strip()


def inconsistency(name: str, ctx: Mapping[str, Any]) -> str | None:
    """A reason why ``name`` contradicts the facts of ``ctx``, or None when it fits."""
    toks = split_tokens(name)
    if not toks:
        return None
    sig = ctx.get("type") or ""
    returns = _returns_value(sig)
    calls = bool(ctx.get("callees")) or int(ctx.get("call_indirect") or 0) > 0
    mem = ctx.get("mem_ops") or {}
    stores = int(mem.get("stores") or 0)
    body = set(ctx.get("mnemonics") or ())
    writes = stores > 0 or bool(body & {"memory.fill", "memory.copy", "global.set"})
    known_body = "mnemonics" in ctx or "mem_ops" in ctx
    if sig and set(toks) & _ALLOC and not calls and returns is False:
        return f"{name!r} claims allocation but calls nothing and returns nothing"
    if sig and toks[0] in _PREDICATE_HEAD and returns is False:
        return f"{name!r} reads as a predicate but returns nothing"
    if known_body and set(toks) & _OUTPUT and not calls and not writes:
        return f"{name!r} claims output but calls nothing and writes no memory"
    if known_body and toks[0] in _MUTATE and not calls and not writes and not ctx.get("globals"):
        return f"{name!r} claims to modify state but stores nothing and calls nothing"
    return None


def _returns_value(sig: str) -> bool | None:
    if "->" not in sig:
        return None
    res = sig.split("->", 1)[1].strip()
    return res not in ("()", "")


def check_evidence(
    evidence: Mapping[str, Any], ctx: Mapping[str, Any], c: str = ""
) -> tuple[list[str], list[str]]:
    """(verified, false) claims of an answer's ``evidence`` against the function's facts:
    a string must be one the function references (or a data label it uses), a callee one of
    its callees (name, ``fN`` placeholder or import field), a constant one of its constants
    or a number in its C, a line of code a line of its C (whitespace ignored). ``c`` is the C
    the prompt showed."""
    ok: list[str] = []
    bad: list[str] = []
    strings = [s for s in (ctx.get("strings") or []) if isinstance(s, str)]
    labels = [str(d) for d in (ctx.get("data") or [])]
    squashed = {_squash(s) for s in strings + labels if _squash(s)}
    callee_names: set[str] = set()
    for e in ctx.get("callees") or []:
        for n in (
            e.get("name"),
            f"f{e.get('index')}",
            e.get("import"),
            (e.get("import") or "").split(".")[-1],
        ):
            if n:
                callee_names.add(str(n).lower())
    consts = {int(x) for x in ctx.get("constants") or [] if isinstance(x, int)}
    c_flat = re.sub(r"\s+", "", c or ctx.get("c") or "")
    c_numbers = {
        int(m, 16) if m[:2].lower() == "0x" else int(m)
        for m in re.findall(r"\b(?:0[xX][0-9a-fA-F]+|\d+)\b", c or ctx.get("c") or "")
    }
    for s in evidence.get("strings") or []:
        q = _squash(str(s))
        hit = bool(q) and (q in squashed or any(q in t for t in squashed if len(q) >= 6))
        (ok if hit else bad).append(f"string {printable(str(s)[:60])!r}")
    for n in evidence.get("callees") or []:
        key = str(n).strip().rstrip("()").lower()
        (ok if key in callee_names else bad).append(f"callee {printable(str(n)[:60])!r}")
    for v in evidence.get("constants") or []:
        hit = v in consts or (v & 0xFFFFFFFF) in {x & 0xFFFFFFFF for x in consts} or v in c_numbers
        (ok if hit else bad).append(f"constant {v}")
    for line in evidence.get("code") or []:
        q = re.sub(r"\s+", "", str(line)).rstrip(";")
        hit = bool(q) and len(q) >= 4 and q in c_flat
        (ok if hit else bad).append(f"code {printable(str(line)[:60])!r}")
    return ok, bad


def consistent_with_facts(name: str, ctx: Mapping[str, Any]) -> bool:
    """A word of ``name`` (3+ letters) appears in a callee name, a string or a data label."""
    words = {t for t in split_tokens(name) if len(t) >= 3}
    if not words:
        return False
    pool: set[str] = set()
    for e in ctx.get("callees") or []:
        pool.update(split_tokens(str(e.get("name") or "")))
    for s in list(ctx.get("strings") or []) + list(ctx.get("data") or []):
        pool.update(t.lower() for t in re.findall(r"[A-Za-z]{3,}", str(s)))
        pool.update(split_tokens(str(s)))
    return bool(words & pool)
