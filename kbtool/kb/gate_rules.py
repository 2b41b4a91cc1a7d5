"""The gate's rules: text and confidence checks, bounded excerpts, and the one decision
(authority, confidence, lock) every annotation write takes (:mod:`kbtool.kb.gate`).
"""

from __future__ import annotations

from typing import Any, TypedDict

from kbtool.kb.provenance import AUTHORITY
from kbtool.textutil import BIDI, INVISIBLE, LazyPattern

MAX_NAME = 256  # names typed by people and agents


MAX_BINARY_NAME = 1024  # names copied from binaries (Rust/C++ demangled names are long)


MAX_SUMMARY = 8192


MAX_TYPE_SIGNATURE = 1024


MAX_STABLE_ID = 64  # stable_ids are 16 hex digits; anything longer is not one


EXCERPT = 200  # characters of each refused value kept in its event


MAX_EVIDENCE_TEXT = 1024  # characters of each evidence string (evidence is kept in records)


MAX_EVIDENCE_ITEMS = 32  # keys of an evidence object / items of an evidence list


MAX_REFUSALS_PER_MINUTE = 120  # refusal rows one caller (actor) may add per minute; beyond,


# a function's further refusals are counted on one row

# People and agents give C-like identifiers, optionally qualified with `::` (C++/Rust paths).
_IDENT = LazyPattern(r"[A-Za-z_$][A-Za-z0-9_$]*(::[A-Za-z_$][A-Za-z0-9_$]*)*\Z")


# Names copied out of binaries (name sections, exports, references) may be demangled
# Rust/C++ names: anything printable without control characters. "Control" here means
# C0/DEL/C1 controls, the line/paragraph separators U+2028/U+2029 and the bidi controls
# (U+061C, U+200E/U+200F, U+202A..U+202E, U+2066..U+2069): characters that move a
# terminal's cursor, set its title, or reorder what a reader sees ("Trojan Source").
# The invisibles (zero-width, soft hyphen, tag characters U+E0000..U+E007F) hide text from a
# reader: refused too. One vocabulary for every surface: kbtool.textutil.
_BIDI = BIDI


_CONTROL = LazyPattern(f"[\x00-\x1f\x7f-\x9f\u2028\u2029{BIDI}{INVISIBLE}]")


def _has_control(text: str) -> bool:
    """Whether :data:`_CONTROL` finds a character in ``text``. Printable ASCII holds none
    (among ASCII ``isprintable`` is False exactly for C0 and DEL, all in the class), so the
    names a module carries are answered without compiling the pattern (~0.5 ms a process)."""
    if text.isascii() and text.isprintable():
        return False
    return _CONTROL.search(text) is not None


# Summaries are prose: newlines and tabs are allowed (multi-line descriptions), every other
# control character above is refused. Type signatures are one line: no control at all.
_SUMMARY_CONTROL = LazyPattern(f"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029{BIDI}{INVISIBLE}]")


class Decision(TypedDict):
    written: bool
    reason: str


def validate_name(name: Any, provenance: str) -> str | None:
    """Why ``name`` is not acceptable from ``provenance``, or None when it is."""
    if not isinstance(name, str) or not name:
        return "invalid name: empty"
    if provenance in ("human", "agent"):
        if len(name) > MAX_NAME:
            return f"invalid name: longer than {MAX_NAME} characters"
        if not _IDENT.match(name):
            return "invalid name: not a C-like identifier"
        return None
    if len(name) > MAX_BINARY_NAME:
        return f"invalid name: longer than {MAX_BINARY_NAME} characters"
    if _has_control(name) or name != name.strip():
        return "invalid name: control characters or surrounding whitespace"
    return None


def validate_summary(summary: Any) -> str | None:
    """Why ``summary`` is not acceptable, or None (any writer; ``None`` means "keep")."""
    if summary is None:
        return None
    if not isinstance(summary, str):
        return "invalid summary: not text"
    if len(summary) > MAX_SUMMARY:
        return f"invalid summary: longer than {MAX_SUMMARY} characters"
    if _SUMMARY_CONTROL.search(summary):
        return "invalid summary: control or bidi characters (only newlines and tabs are allowed)"
    return None


def validate_type_signature(type_signature: Any) -> str | None:
    """Why ``type_signature`` is not acceptable, or None (``None`` means "keep")."""
    if type_signature is None:
        return None
    if not isinstance(type_signature, str):
        return "invalid type signature: not text"
    if len(type_signature) > MAX_TYPE_SIGNATURE:
        return f"invalid type signature: longer than {MAX_TYPE_SIGNATURE} characters"
    if _has_control(type_signature):
        return "invalid type signature: control or bidi characters"
    return None


def validate_confidence(confidence: Any) -> str | None:
    """Why ``confidence`` is not a number within 0.0..1.0 (booleans are not numbers here)."""
    if (
        isinstance(confidence, bool)
        or not isinstance(confidence, (int, float))
        or not 0 <= confidence <= 1  # exact for ints of any size; False for NaN
    ):
        return f"invalid confidence {short_repr(confidence)}: must be within 0.0..1.0"
    return None


def short_repr(value: Any, limit: int = 40) -> str:
    """``repr(value)`` cut to ``limit`` characters; never builds a huge string (big ints,
    long texts) just to throw it away."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        return f"<integer of {value.bit_length()} bits>"
    if isinstance(value, str):
        return repr(clip(value, limit))
    if isinstance(value, (bool, int, float, type(None))):
        return repr(value)
    return f"<{type(value).__name__}>"


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, saying how long it was."""
    if len(text) <= limit:
        return text
    return text[:limit] + f"… ({len(text)} characters)"


def excerpt(value: Any, limit: int = EXCERPT, _depth: int = 0) -> Any:
    """A JSON-safe, bounded copy of ``value``: strings clipped to ``limit`` characters,
    objects and lists to :data:`MAX_EVIDENCE_ITEMS` entries, 4 levels deep; other values
    (and integers beyond 64 bits, non-finite floats) become a short description."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        return clip(value, limit)
    if isinstance(value, int):
        return value if value.bit_length() <= 64 else short_repr(value)
    if isinstance(value, float):
        return value if value == value and abs(value) != float("inf") else repr(value)
    if _depth >= 4:
        return f"<{type(value).__name__}>"
    if isinstance(value, dict):
        items = list(value.items())[:MAX_EVIDENCE_ITEMS]
        return {clip(str(k), 64): excerpt(v, limit, _depth + 1) for k, v in items}
    if isinstance(value, (list, tuple)):
        return [excerpt(v, limit, _depth + 1) for v in value[:MAX_EVIDENCE_ITEMS]]
    return f"<{type(value).__name__}>"


def _decide(cur: dict[str, Any] | None, provenance: str, confidence: float) -> tuple[bool, str]:
    if cur is None:
        return True, "unnamed"
    if provenance == "human":
        return True, "human edit"
    if cur["locked"]:
        return False, "locked"
    cur_prov, e = cur["provenance"], float(cur["confidence"])
    if cur_prov == "human":
        if provenance in ("agent", "diff-carry"):
            return False, "human name outranks " + provenance
        if confidence > e:
            return True, f"confidence {confidence:g} > {e:g} over unlocked human name"
        return False, f"confidence {confidence:g} not above human {e:g}"
    if AUTHORITY[provenance] > AUTHORITY[cur_prov]:
        return True, f"{provenance} outranks {cur_prov}"
    if confidence > e:
        return True, f"confidence {confidence:g} > {e:g}"
    return False, f"confidence {confidence:g} not above {cur_prov} {e:g}"


def _merge_evidence(
    cur: dict[str, Any] | None, provenance: str, ev: dict[str, Any]
) -> list[dict[str, Any]]:
    """Evidence of the record: the new item first, older items of the same provenance kept (max 8)."""
    items = [ev]
    if cur is not None and cur["provenance"] == provenance:
        items += [e for e in cur["evidence"] if e != ev]
    return items[:8]
