"""Token counts, prices and the running meter of a provider pass (pure).

Tokens: the SDK's own count is used wherever the provider reports one (the ``usage`` of each
answer: what the provider bills); before a call, and for prompt budgets, :func:`estimate_tokens`
approximates a BPE tokenizer from the pieces its pre-tokenizer cuts (words, identifier parts,
numbers, punctuation runs, blanks), fitted on OpenAI's encodings, plus :data:`FRAMING_TOKENS`
per call; an answer is expected to be :data:`EXPECTED_OUTPUT_TOKENS` long until answers of the
pass are billed (measured in ``benchmarks/agent_pass.py``).

Prices are US dollars per million tokens (input, output) per model. :data:`DEFAULT_PRICES`
holds list prices at the time of writing; a user overrides or adds models with
``KBTOOL_AGENT_PRICES`` (a JSON object ``{"model": [in, out]}`` or the path of a file holding
one) or ``kbtool agent --price IN,OUT``. An unknown model has no price: the meter still counts
tokens and shows the cost as unknown.
"""

from __future__ import annotations

import json
import math
import os
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

PRICES_ENV = "KBTOOL_AGENT_PRICES"
#: US$ per million tokens (input, output); override with KBTOOL_AGENT_PRICES / --price
DEFAULT_PRICES: dict[str, tuple[float, float]] = {
    "claude-sonnet-4-6": (3.0, 15.0),
    "claude-opus-4-6": (15.0, 75.0),
    "claude-haiku-4-5": (1.0, 5.0),
    "gpt-5.4-mini": (0.25, 2.0),
    "gpt-5.4": (1.25, 10.0),
}
#: an answer of the shape the naming prompt asks for (``SYSTEM_PROMPT``): an explanation of
#: three sentences (two to four are asked for), a one-sentence summary, a few pieces of
#: evidence, the optional locals and prototype filled in; pretty-printed, as chat models
#: usually write JSON. Its estimate is the output expected per answer before any answer of
#: this model is billed.
TYPICAL_ANSWER: dict[str, Any] = {
    "explanation": "The function walks the linked list that its first parameter points to and, "
    "for each node, calls the destructor stored in the node's callback field before freeing "
    "the node with free. The loop follows the next pointer at offset 8 until it reaches a null "
    "pointer, and the indirect call through the function table invokes the callback with the "
    "node's payload. It finally clears the list head and returns nothing.",
    "name": "list_free_all",
    "summary": "Frees every node of a singly linked list, calling each node's destructor "
    "on its payload first, then resets the list head.",
    "evidence": {
        "strings": ["list: double free"],
        "callees": ["free", "node_destroy"],
        "constants": [8],
        "code": ["l2 = *(int32_t *)(M + l1 + 8);", "f12(*(int32_t *)(M + l1 + 4));"],
    },
    "confidence": 0.7,
    "locals": {"a0": "list", "l1": "node", "l2": "next"},
    "prototype": "void list_free_all(struct list *list);",
}
#: billed answers of this pass after which the running projection is re-scaled by them
LIVE_MIN = 8

# The pieces a BPE tokenizer's pre-tokenizer cuts text into before merging (the GPT-2 /
# cl100k / o200k family): a word part (identifiers split at case changes and underscores,
# one mark or blank before it going with it), numbers in groups of three digits, a run of
# punctuation (a blank before it going with it), line breaks, other blanks.
_LOWER = r"[^\W\d_A-Z]"  # lower-case and uncased letters of any script
_PIECE = re.compile(
    rf"(?:[^\r\n\w]|_)?(?:[A-Z]*{_LOWER}+|[A-Z]+{_LOWER}*)"
    r"|\d{1,3}"
    r"| ?(?:[^\s\w]|_)+[\r\n]*"
    r"|\s*[\r\n]+"
    r"|\s+(?!\S)|\s+"
)
_VOWEL = re.compile(r"[aeiouyAEIOUY]")
#: input tokens of the chat format around a call's two messages (system, user) beyond
#: their text: role markers, 3 per message, and 3 priming the reply (OpenAI's documented
#: count; Anthropic's Messages format is alike). No tool or JSON schema is sent.
FRAMING_TOKENS = 2 * 3 + 3


def estimate_tokens(text: str) -> int:
    """Approximate BPE token count of ``text`` (no tokenizer download, no network).

    Text is cut into the pieces a BPE pre-tokenizer makes (:data:`_PIECE`); a piece costs
    one token (a common word, a short punctuation run, a number of up to three digits, a
    line break), more when the vocabulary is unlikely to hold it whole: long words (a
    token per five letters past six, past four when capitalised; a lower-case word after a
    blank, an English word, a token per twelve letters past eight), ALL-CAPS words (three
    letters a token), runs without a vowel (hex digits, abbreviations: 3.5 letters a
    token), long punctuation runs, non-Latin letters (four a token in a word, 2.6 in a long
    run, CJK 0.9). Fitted against OpenAI's o200k and cl100k encodings on text that is not
    the benchmark's (C headers, Python sources, English documentation, prompts of brotli
    and libyaml): within about 5 % per kind of text, 1 % on naming prompts
    (``benchmarks/agent_pass.py`` compares, with the optional ``bpe-openai``)."""
    return math.ceil(sum(map(_piece_tokens, _PIECE.findall(text))))


@lru_cache(maxsize=1 << 16)  # identifiers, words and indentation repeat: mostly cache hits
def _piece_tokens(s: str) -> float:
    """Tokens of one pre-tokenizer piece."""
    last = s[-1]
    if last.isalpha():
        return _word_tokens(s)
    if last.isdigit() or s.isspace():
        return 1.0
    core = s.strip()
    wide = sum(1 for c in core if ord(c) > 0x7F)
    return 1 + max(0, len(core) - wide - 4) / 2 + wide


def _word_tokens(piece: str) -> float:
    """Tokens of one word part (with the mark or blank before it, if any)."""
    lead = "" if piece[0].isalpha() else piece[0]
    core = piece[1:] if lead else piece
    n = len(core)
    wide = sum(1 for c in core if ord(c) > 0x7F)
    if wide:
        cjk = sum(1 for c in core if ord(c) >= 0x2E80)
        per = 4.0 if wide <= 12 else 2.6  # a word, or a run of letters without blanks
        return max(1.0, (n - wide) / 4 + (wide - cjk) / per + cjk * 0.9)
    extra = 0.0 if lead in ("", " ", "_") else 0.3  # "(word", "\tword": often two tokens
    if n > 3 and not _VOWEL.search(core):
        return extra + n / 3.5
    if core.isupper():
        return extra + max(1.0, n / 3)
    if core[0].isupper():
        return extra + (1.0 if n <= 4 else 1 + (n - 4) / 5)
    if lead == " ":  # an English word: the vocabulary holds most of them whole
        return 1.0 + max(0, n - 8) / 12
    return extra + (1.0 if n <= 6 else 1 + (n - 6) / 5)


def _expected_output() -> int:
    from .sdk_client import MAX_TOKENS  # an answer never exceeds the max_tokens asked for

    return min(estimate_tokens(json.dumps(TYPICAL_ANSWER, indent=2)), MAX_TOKENS)


#: output tokens assumed per answer before any answer of the pass is billed
EXPECTED_OUTPUT_TOKENS = _expected_output()


def parse_price(text: str) -> tuple[float, float]:
    """``"3,15"`` -> (3.0, 15.0) US$ per million input/output tokens; ValueError otherwise."""
    parts = [p.strip() for p in str(text).split(",")]
    try:
        vals = [float(p) for p in parts]
    except ValueError:
        vals = []
    if len(vals) != 2 or not all(math.isfinite(v) and v >= 0 for v in vals):
        raise ValueError(f"a price is IN,OUT in US$ per million tokens (e.g. 3,15), not {text!r}")
    return vals[0], vals[1]


def price_table(env: Mapping[str, str] | None = None) -> dict[str, tuple[float, float]]:
    """:data:`DEFAULT_PRICES` updated from ``KBTOOL_AGENT_PRICES`` (JSON or a JSON file path);
    ValueError with one line for a value that is not such an object."""
    env = os.environ if env is None else env
    out = dict(DEFAULT_PRICES)
    raw = (env.get(PRICES_ENV) or "").strip()
    if not raw:
        return out
    text = raw
    if not raw.startswith("{"):
        try:
            text = Path(raw).read_text("utf-8")
        except OSError as e:
            raise ValueError(f"{PRICES_ENV}: cannot read {raw!r}: {e.strerror}") from None
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"{PRICES_ENV} is not JSON: {e.msg} (line {e.lineno})") from None
    if not isinstance(obj, dict):
        raise ValueError(f'{PRICES_ENV} must be a JSON object {{"model": [in, out]}}')
    for model, v in obj.items():
        if not isinstance(v, list | tuple) or len(v) != 2:
            raise ValueError(f"{PRICES_ENV}: the price of {model!r} must be [in, out]")
        out[str(model)] = parse_price(f"{v[0]},{v[1]}")
    return out


def cost(tokens_in: int, tokens_out: int, price: tuple[float, float] | None) -> float | None:
    """US$ for these tokens at ``price`` (None: unknown)."""
    if price is None:
        return None
    return (tokens_in * price[0] + tokens_out * price[1]) / 1_000_000


@dataclass
class Meter:
    """What a provider pass has spent so far (thread-safe updates), and what round 1 will
    cost in all (:meth:`projection`).

    The projection starts from the pre-pass estimate (:meth:`plan`: kbtool's token estimate
    of the prompts to send, the scale and output tokens per answer it assumed) and, once
    :data:`LIVE_MIN` answers of this pass came with the provider's usage, re-scales the
    prompts still to send by what the provider billed against kbtool's estimate of the same
    prompts (a tokenizer's ratio: right from the first answers), and the answers still to
    come by the mean of two projections of the billed output, per answer and per input
    token: a first pass through an SDK with no token counter is calibrated as its answers
    arrive."""

    price: tuple[float, float] | None = None
    calls: int = 0  # model calls that got an answer
    cached: int = 0  # answers taken from the KB's answer store (no call)
    errors: int = 0  # calls that failed after their retries
    tokens_in: int = 0
    tokens_out: int = 0
    estimated: bool = False  # some counts are estimates (the provider reported none)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    # the projection: planned (estimated, unscaled) input tokens and calls of round 1, the
    # pre-pass scale and output per answer; the estimate and billing of answered prompts
    _plan: tuple[int, int, float, int] | None = field(default=None, repr=False)
    _sent_est: int = 0
    _billed_est: int = 0
    _billed_in: int = 0
    _billed_out: int = 0
    _billed_n: int = 0

    def plan(
        self,
        raw_tokens: int,
        calls: int,
        ratio: float = 1.0,
        per_answer: int = EXPECTED_OUTPUT_TOKENS,
    ) -> None:
        """Round 1 will send ``calls`` prompts of ``raw_tokens`` (kbtool's estimate), scaled
        by ``ratio``, each answered with about ``per_answer`` tokens."""
        with self._lock:
            self._plan = (int(raw_tokens), int(calls), float(ratio), int(per_answer))

    def add(
        self,
        tokens_in: int | None,
        tokens_out: int | None,
        *,
        prompt: str = "",
        answer: str = "",
        estimate: int | None = None,
    ) -> None:
        """One answered call; ``estimate``: kbtool's token estimate of its prompt (both
        messages), which the provider's ``tokens_in`` calibrates."""
        with self._lock:
            self.calls += 1
            if tokens_in is None or tokens_out is None:
                self.estimated = True
            self.tokens_in += tokens_in if tokens_in is not None else estimate_tokens(prompt)
            self.tokens_out += tokens_out if tokens_out is not None else estimate_tokens(answer)
            if estimate is not None:
                self._sent_est += estimate
                if tokens_in is not None and tokens_out is not None:
                    self._billed_est += estimate
                    self._billed_in += tokens_in
                    self._billed_out += tokens_out
                    self._billed_n += 1

    def hit(self) -> None:
        with self._lock:
            self.cached += 1

    def fail(self) -> None:
        with self._lock:
            self.errors += 1

    @property
    def cost(self) -> float | None:
        return cost(self.tokens_in, self.tokens_out, self.price)

    def projection(self) -> dict[str, Any] | None:
        """Round 1's tokens and cost in all (spent + still to send), or None without a plan:
        ``projected_tokens_in``, ``projected_tokens_out``, ``projected_cost_usd`` and
        ``projection_basis`` (the pre-pass estimate, or N answers billed so far)."""
        with self._lock:
            if self._plan is None:
                return None
            raw, calls, ratio, per_answer = self._plan
            left_calls = max(0, calls - self.calls - self.errors)
            left_in = max(0, raw - self._sent_est) if left_calls else 0
            if self._billed_n >= LIVE_MIN and self._billed_est and self._billed_in:
                left_in = round(left_in * self._billed_in / self._billed_est)
                # the answers to come: as long as so far, or growing with their prompts
                # (callees come first: the first prompts and answers are the smallest
                # functions'); the truth lies between, measured on three modules
                per_call = left_calls * self._billed_out / self._billed_n
                per_token = left_in * self._billed_out / self._billed_in
                left_out = round((per_call + per_token) / 2)
                basis = f"calibrated on {self._billed_n} answers billed in this pass"
            else:
                left_in, left_out = round(left_in * ratio), left_calls * per_answer
                basis = "pre-pass estimate"
            tin, tout = self.tokens_in + left_in, self.tokens_out + left_out
        usd = cost(tin, tout, self.price)
        return {
            "projected_tokens_in": tin,
            "projected_tokens_out": tout,
            "projected_cost_usd": round(usd, 6) if usd is not None else None,
            "projection_basis": basis,
        }

    def to_dict(self) -> dict[str, Any]:
        c = self.cost
        out = {
            "calls": self.calls,
            "cached_answers": self.cached,
            "call_errors": self.errors,
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
            "estimated_cost_usd": round(c, 6) if c is not None else None,
        }
        proj = self.projection()
        if proj is not None:
            out.update(proj)
        return out
