"""A bounded JavaScript scanner: identifiers, strings, templates, regexes, blocks, object literals."""

from __future__ import annotations

import re
from collections.abc import Iterator

# --------------------------------------------------------------------------- lexical bits

_IDCHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_$")
_ID = r"[A-Za-z_$][A-Za-z0-9_$]*+"
_NB = r"(?<![A-Za-z0-9_$.])"  # not preceded by an identifier character or a dot
_IDENT_FULL = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
_WS = " \t\r\n\f\v\u00a0\ufeff\u2028\u2029"
_MAX_IDENT = 256  # longer "identifiers" are not names we report
_MAX_NOTES = 200
_MAX_UNNAMED_NOTES = 50  # per-export "no stated name" notes before summarising
_MAX_WS = 4096  # whitespace runs looked across when walking around a token
# Bounds that keep a hostile 5 MB input linear.
_MAX_HOLDERS = 16  # exports-object variable names considered
_MAX_MODULE_VARS = 4  # Module-object variable names considered for aliases
_MAX_SCOPED_FUNCS = 4  # assignWasmExports-like functions scanned
_MAX_ACCESSES = 100_000  # references to the exports object looked at
_MAX_PER_KEY = 8  # references per export key looked at
_MAX_CANDIDATES = 8  # instantiate calls considered for the import object
_MAX_FUNC_BODY = 1_000_000
_MAX_INFO_OBJECT = 4_096
_MAX_IMPORT_OBJECT = 4_000_000
_REGEX_PREFIX_KEYWORDS = frozenset(
    "return typeof case do else in of new delete void throw instanceof yield await".split()
)
_RESERVED = frozenset(
    "break case catch class const continue debugger default delete do else export extends "
    "false finally for function if import in instanceof new null return super switch this "
    "throw true try typeof var void while with yield let static await async of undefined".split()
)

# Runtime JS names whose wasm export name is fixed by Emscripten's conventions.
_RUNTIME_NAMES = {
    "wasmMemory": "memory",
    "memory": "memory",
    "wasmTable": "__indirect_function_table",
    "__indirect_function_table": "__indirect_function_table",
}
# Non-underscore runtime helpers that are wasm exports under their JS name.
_RUNTIME_HELPERS = frozenset(
    {
        "stackSave",
        "stackRestore",
        "stackAlloc",
        "getTempRet0",
        "setTempRet0",
        "establishStackSpace",
        "dynCall",
    }
)
_KNOWN_HOLDERS = ("wasmExports", "asm")
_KNOWN_IMPORT_VARS = ("wasmImports", "asmLibraryArg")
# An assigned value ends here (the right-hand side is exactly one name).
_VALUE_END = r"\s*+(?=[;,})\]\r\n]|\Z)"


def _is_ident(s: str) -> bool:
    return 0 < len(s) <= _MAX_IDENT and _IDENT_FULL.fullmatch(s) is not None and s not in _RESERVED


def _js_to_real(name: str) -> tuple[str | None, str | None]:
    """Real (wasm-side) name stated by a JS name, or (None, problem-or-None)."""
    if name in _RUNTIME_NAMES:
        return _RUNTIME_NAMES[name], None
    if name.startswith("_"):
        real = name[1:]
        if _is_ident(real):
            return real, None
        return None, f"JS name {name!r} does not give a valid C identifier"
    if name in _RUNTIME_HELPERS or (name.startswith("dynCall_") and _is_ident(name)):
        return name, None
    return None, None


def _skip_ws_back(text: str, p: int) -> int:
    """Smallest k <= p such that text[k:p] is whitespace (looking back a bounded way)."""
    seg = text[max(0, p - _MAX_WS) : p]
    return p - (len(seg) - len(seg.rstrip(_WS)))


def _skip_ws(text: str, p: int, end: int) -> int:
    seg = text[p : min(end, p + _MAX_WS)]
    return p + (len(seg) - len(seg.lstrip(_WS)))


def _ident_back(text: str, end: int) -> int:
    """Start index of the identifier-character run ending at ``end`` (bounded)."""
    k = end
    lim = max(0, end - _MAX_IDENT - 1)
    while k > lim and text[k - 1] in _IDCHARS:
        k -= 1
    return k


# --------------------------------------------------------------------------- JS scanner

_PUNCT = re.compile(r"""[{}()\[\],:;"'`/]""")
_DQ = re.compile(r'"(?:[^"\\\r\n]++|\\.)*+"', re.S)
_SQ = re.compile(r"'(?:[^'\\\r\n]++|\\.)*+'", re.S)
_TPL = re.compile(r"[`\\]|\$\{")
_RE_BODY = re.compile(r"(?:[^/\\\[\r\n]++|\\.|\[(?:[^\]\\\r\n]++|\\.)*+\])*+/[A-Za-z]*+")


def _regex_allowed(text: str, i: int) -> bool:
    j = _skip_ws_back(text, i)
    if j == 0:
        return True
    ch = text[j - 1]
    if ch in "(,=:[!&|?{};+-*%<>~^":
        return True
    if ch in _IDCHARS:
        k = _ident_back(text, j)
        return text[k:j] in _REGEX_PREFIX_KEYWORDS
    return False


def _skip_template(text: str, pos: int, end: int, stack: list[bool]) -> int:
    """Scan template-literal text from ``pos``; return where code resumes."""
    while pos < end:
        m = _TPL.search(text, pos, end)
        if m is None:
            return end
        tok = m.group()
        if tok == "`":
            return m.end()
        if tok == "\\":
            pos = m.end() + 1
            continue
        stack.append(True)  # "${": code until the matching "}"
        return m.end()
    return end


def _code_events(text: str, pos: int, end: int) -> Iterator[tuple[int, str]]:
    """Yield (index, char) of structural punctuation that is code, not string/comment/regex."""
    tstack: list[bool] = []  # True: brace opened by a template "${"
    while pos < end:
        m = _PUNCT.search(text, pos, end)
        if m is None:
            return
        i = m.start()
        c = text[i]
        if c == '"' or c == "'":
            sm = (_DQ if c == '"' else _SQ).match(text, i, end)
            pos = sm.end() if sm else i + 1
            continue
        if c == "`":
            pos = _skip_template(text, i + 1, end, tstack)
            continue
        if c == "/":
            nxt = text[i + 1 : i + 2]
            if nxt == "/":
                j = text.find("\n", i + 2, end)
                pos = end if j < 0 else j + 1
                continue
            if nxt == "*":
                j = text.find("*/", i + 2, end)
                pos = end if j < 0 else j + 2
                continue
            if _regex_allowed(text, i):
                rm = _RE_BODY.match(text, i + 1, end)
                pos = rm.end() if rm else i + 1
                continue
            pos = i + 1
            continue
        pos = i + 1
        if c == "{":
            tstack.append(False)
        elif c == "}" and tstack:
            if tstack.pop():
                pos = _skip_template(text, i + 1, end, tstack)
                continue
        yield i, c


def _block_end(text: str, open_idx: int, limit: int) -> int | None:
    """Index of the bracket closing the one at ``open_idx`` (code-aware, looking at most
    ``limit`` characters ahead), or None."""
    depth = 0
    for i, c in _code_events(text, open_idx + 1, min(len(text), open_idx + 1 + limit)):
        if c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                return i
            depth -= 1
    return None


def _parse_object(
    text: str, open_idx: int, limit: int
) -> tuple[list[tuple[str, str | None, int]], int] | None:
    """Split the object literal whose ``{`` is at ``open_idx`` into raw entries.

    Each entry is (key text, value text, value offset); value text is None for an entry
    without a top-level colon (shorthand / spread).  Returns (entries, closing offset), or
    None when the literal does not close within ``limit`` characters.
    """
    entries: list[tuple[str, str | None, int]] = []
    depth = 0
    start = open_idx + 1
    colon: int | None = None

    def add(stop: int) -> None:
        if colon is None:
            piece = text[start:stop]
            if _strip_comments(piece):
                entries.append((piece, None, start))
        else:
            entries.append((text[start:colon], text[colon + 1 : stop], colon + 1))

    for i, c in _code_events(text, open_idx + 1, min(len(text), open_idx + 1 + limit)):
        if c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                if c != "}":
                    return None
                add(i)
                return entries, i
            depth -= 1
        elif depth == 0:
            if c == ",":
                add(i)
                start, colon = i + 1, None
            elif c == ":" and colon is None:
                colon = i
            elif c == ";":
                return None  # not an object literal
    return None


_COMMENTS = re.compile(r"/\*.*?\*/|//[^\n]*+", re.S)


def _strip_comments(s: str) -> str:
    if len(s) > 4096:  # long pieces are code, not a key or a bare name
        return s.strip()
    return _COMMENTS.sub(" ", s).strip()


_KEY = re.compile(rf"""(?:({_ID})|"([^"\\\r\n]{{0,256}})"|'([^'\\\r\n]{{0,256}})')\Z""")


def _object_key(raw: str) -> str | None:
    m = _KEY.match(_strip_comments(raw))
    if m is None:
        return None
    return next(g for g in m.groups() if g is not None)
