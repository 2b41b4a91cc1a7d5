"""Name tokens and identifier checks shared by the verifier, heuristics and the benchmark."""

from __future__ import annotations

import re

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
# Names a tool or a decompiler makes up: they say nothing about the function.
_GENERIC = re.compile(
    r"(?:func|function|fn|sub|fun|f|proc|routine|unknown|unnamed|anon|anonymous|noname|"
    r"wasm_function|wasm_func|w2c|loc|lab|label|thunk|wrapper|helper|todo|tmp|temp|foo|bar|"
    r"name|do_something|something|stub|handler|callback)_?(?:[0-9a-fx]+)?\Z",
    re.IGNORECASE,
)
C_KEYWORDS = frozenset(
    "auto break case char const continue default do double else enum extern float for goto if "
    "inline int long register restrict return short signed sizeof static struct switch typedef "
    "union unsigned void volatile while _Bool _Complex _Imaginary _Alignas _Alignof _Atomic "
    "_Generic _Noreturn _Static_assert _Thread_local".split()
)
MAX_NAME_LEN = 96


def is_c_identifier(name: str) -> bool:
    """True for a C identifier (ASCII letters, digits, underscore; no keyword)."""
    return bool(_IDENT.match(name)) and name not in C_KEYWORDS and len(name) <= MAX_NAME_LEN


def is_generic_name(name: str) -> bool:
    """True for a placeholder name such as ``func_12``, ``sub_4a``, ``unknown`` or ``f3``."""
    core = name.strip("_")
    if not core:
        return True
    if _GENERIC.match(core):
        return True
    return not any(t for t in split_tokens(core) if not t.isdigit() and len(t) > 1)


def split_tokens(name: str) -> list[str]:
    """Lower-cased tokens of ``name`` split on ``_``, ``.``, ``|`` and camelCase boundaries."""
    out: list[str] = []
    for part in re.split(r"[_.|$\-\s]+", name):
        out.extend(m.group(0).lower() for m in _CAMEL.finditer(part))
    return out


def token_scores(guess: str, truth: str) -> tuple[int, int, int]:
    """(matched, guess tokens, truth tokens) with multiset matching, for precision/recall."""
    g, t = split_tokens(guess), split_tokens(truth)
    pool = list(t)
    hit = 0
    for tok in g:
        if tok in pool:
            pool.remove(tok)
            hit += 1
    return hit, len(g), len(t)


def looks_like_symbol(word: str) -> bool:
    """An identifier that reads like a code symbol rather than an English word.

    It has an underscore between letters or a lower-to-upper camelCase bump (``fooBar``,
    ``ZSTD_compress``, ``__func``); plain words (``error``, ``Invalid``) do not qualify.
    """
    if not is_c_identifier(word):
        return False
    inner = word.strip("_")
    if "_" in inner and any(c.isalpha() for c in inner):
        return True
    return bool(re.search(r"[a-z][A-Z]", inner))
