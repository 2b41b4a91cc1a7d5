"""Recover real wasm export/import names from an Emscripten JavaScript loader ("glue").

Release builds of Emscripten minify the wasm export and import names (``xa``, ``Z``,
``$`` ...).  The JS glue that ships beside the ``.wasm`` still says which C symbol
each minified export is, e.g.::

    _sqlite3_open=(a,b)=>(f._sqlite3_open=Z.xa)(a,b)          # xa -> sqlite3_open

This module reads that glue as *untrusted text*: it never evaluates it, it uses
only linear scans and regexes without nested unbounded quantifiers (possessive
quantifiers everywhere), and it records a mapping only when the glue states it:

* a JS name ``_foo`` (bare variable or property of the Module object) is the
  C symbol ``foo`` (one leading underscore stripped, ``___errno_location`` ->
  ``__errno_location``);
* a few runtime names are kept as they are (``stackSave``, ``stackRestore``,
  ``stackAlloc``, ``dynCall_*`` ...), ``wasmMemory``/``memory`` mean the export
  ``memory`` and ``wasmTable``/``__indirect_function_table`` the export
  ``__indirect_function_table``;
* a minified JS variable (``var Gb=(a,b)=>(Gb=Z.Ca)(a,b)``) names nothing, unless
  the Module object property is assigned that very variable (``f.stackAlloc=x``).

Anything else seen but not understood goes to ``GlueNames.unknown``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

__all__ = ["GlueNames", "parse_glue"]

NO_SHAPE_NOTE = "no Emscripten export wrapper shape recognised"

SHAPE_ARROW = "emscripten-arrow-wrapper"
SHAPE_APPLY = "emscripten-apply-wrapper"
SHAPE_LEGACY_APPLY = "emscripten-legacy-apply-wrapper"
SHAPE_DIRECT = "emscripten-direct-assign"
SHAPE_DEBUG = "emscripten-export-wrapper-debug"
SHAPE_IMPORTS = "emscripten-import-object"


@dataclass
class GlueNames:
    exports: dict[str, str] = field(default_factory=dict)  # minified export -> real name
    imports: dict[str, str] = field(default_factory=dict)  # minified import field -> real name
    import_module: str | None = None  # module the import object is passed under
    unknown: list[str] = field(default_factory=list)  # notes on shapes not understood
    shape: str | None = None  # recognised shape(s), "+"-joined


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


# --------------------------------------------------------------------------- chains


@dataclass
class _LV:
    obj: str | None  # object of a property assignment (f in f._malloc), else None
    name: str  # bare variable or property name


def _lv_back(text: str, r: int) -> tuple[_LV, int] | None:
    """Parse an assignable name (``x``, ``o.p``, ``o["p"]``) ending at ``r``."""
    if r <= 0:
        return None
    if text[r - 1] == "]":
        j = _skip_ws_back(text, r - 1)
        if j == 0 or text[j - 1] not in "\"'":
            return None
        q = text[j - 1]
        k = text.rfind(q, max(0, j - 2 - _MAX_IDENT), j - 1)
        if k < 0:
            return None
        prop = text[k + 1 : j - 1]
        if not _IDENT_FULL.fullmatch(prop):
            return None
        b = _skip_ws_back(text, k)
        if b == 0 or text[b - 1] != "[":
            return None
        oend = _skip_ws_back(text, b - 1)
        ostart = _ident_back(text, oend)
        obj = text[ostart:oend]
        if not _is_ident(obj) or (ostart > 0 and text[ostart - 1] in _IDCHARS):
            return None
        return _LV(obj, prop), ostart
    k = _ident_back(text, r)
    name = text[k:r]
    if not _is_ident(name) or (k > 0 and text[k - 1] in _IDCHARS):
        return None
    d = _skip_ws_back(text, k)
    if d > 0 and text[d - 1] == ".":
        oend = _skip_ws_back(text, d - 1)
        ostart = _ident_back(text, oend)
        obj = text[ostart:oend]
        if not _is_ident(obj) or (ostart > 0 and text[ostart - 1] in _IDCHARS):
            return None
        return _LV(obj, name), ostart
    return _LV(None, name), k


def _chain_before(text: str, pos: int) -> list[_LV]:
    """Assignment targets ``a = o.b = `` directly before ``pos`` (nearest last)."""
    out: list[_LV] = []
    p = pos
    for _ in range(6):
        q = _skip_ws_back(text, p)
        if q == 0 or text[q - 1] != "=":
            break
        e = q - 1
        if e > 0 and text[e - 1] in "=!<>+-*/%&|^?~":
            break
        parsed = _lv_back(text, _skip_ws_back(text, e))
        if parsed is None:
            break
        lv, start = parsed
        if start > 0 and text[start - 1] == ".":
            break  # deeper member expression: not ours
        out.append(lv)
        p = start
    out.reverse()
    return out


def _holder_access_re(names: list[str]) -> re.Pattern[str]:
    alts = "|".join(re.escape(n) for n in sorted(set(names), key=len, reverse=True))
    base = rf"(?:{alts})(?![A-Za-z0-9_$])" if alts else r"(?!)"
    asm = rf"{_ID}\s*+(?:\.\s*+asm(?![A-Za-z0-9_$])|\[\s*+[\"']asm[\"']\s*+\])"
    key = (
        rf"(?:\.\s*+(?P<k1>{_ID})"
        r"|\[\s*+(?:\"(?P<k2>[^\"\\\r\n]{0,256})\"|'(?P<k3>[^'\\\r\n]{0,256})')\s*+\])"
    )
    return re.compile(rf"{_NB}(?:{base}|{asm})\s*+{key}")


_EXPORTS_ASSIGN = re.compile(
    rf"{_NB}({_ID})\s*+=(?![=>])\s*+{_ID}(?:\s*+\.\s*+instance)?\s*+"
    r"(?:\.\s*+exports|\[\s*+[\"']exports[\"']\s*+\])(?![A-Za-z0-9_$(.\[])"
)
_FUNC_ONE_PARAM = re.compile(rf"{_NB}function\s++({_ID})\s*+\(\s*+({_ID})\s*+\)\s*+\{{")
_CREATE_EXPORT_WRAPPER = re.compile(
    rf"{_NB}createExportWrapper\s*+\(\s*+(?:\"([^\"\\\r\n]{{1,256}})\"|'([^'\\\r\n]{{1,256}})')"
)
_LEGACY_FUNC = re.compile(r"function\s*+\(\s*+\)\s*+\{")
_APPLY_AFTER = re.compile(r"\s*+\.\s*+apply\s*+\(")
_WRAP_AFTER = re.compile(r"\s*+\)\s*+(\.\s*+apply\s*+)?\(")
_FOR_IN = re.compile(rf"for\s*+\(\s*+(?:var\s++|let\s++|const\s++)?{_ID}\s++in\s++({_ID})\s*+\)")


@dataclass
class _ExportFacts:
    names: dict[str, set[str]] = field(default_factory=dict)  # key -> real names
    locals_: dict[str, set[str]] = field(default_factory=dict)  # key -> minified JS vars
    referenced: dict[str, int] = field(default_factory=dict)  # key -> first offset
    shapes: dict[str, set[str]] = field(default_factory=dict)  # key -> wrapper shapes
    module_vars: dict[str, int] = field(default_factory=dict)  # Module-object var -> uses
    per_key: dict[str, int] = field(default_factory=dict)  # key -> references looked at
    accesses: int = 0
    notes: list[str] = field(default_factory=list)


def _record_chain(facts: _ExportFacts, key: str, chain: list[_LV], shape: str) -> None:
    """Record the names one assignment chain states for export ``key``.

    A Module property (``Module["_malloc"]``) outranks a bare variable in the same chain:
    bundlers rename variables (``var _malloc2 = Module3["_malloc"] = ...``) but never
    property names.
    """
    prop_names: set[str] = set()
    bare_names: set[str] = set()
    for lv in chain:
        real, problem = _js_to_real(lv.name)
        if problem:
            facts.notes.append(f"export {key!r}: {problem}")
        if real is not None:
            if lv.obj is not None:
                prop_names.add(real)
                facts.module_vars[lv.obj] = facts.module_vars.get(lv.obj, 0) + 1
            else:
                bare_names.add(real)
        elif lv.obj is None:
            facts.locals_.setdefault(key, set()).add(lv.name)
    facts.names.setdefault(key, set()).update(prop_names or bare_names)
    if chain:
        facts.shapes.setdefault(key, set()).add(shape)


def _scan_holder_accesses(
    text: str, rx: re.Pattern[str], start: int, end: int, facts: _ExportFacts
) -> None:
    for m in rx.finditer(text, start, end):
        key = m.group("k1") or m.group("k2") or m.group("k3") or ""
        if key == "asm" or (m.group("k1") is None and not key):
            continue
        facts.accesses += 1
        if facts.accesses > _MAX_ACCESSES:
            if facts.accesses == _MAX_ACCESSES + 1:
                facts.notes.append(
                    f"more than {_MAX_ACCESSES} references to the exports object; rest ignored"
                )
            return
        if not _IDENT_FULL.fullmatch(key) or len(key) > _MAX_IDENT:
            facts.notes.append(f"export key {key[:40]!r} is not an identifier; skipped")
            continue
        after = _skip_ws(text, m.end(), end)
        nxt = text[after : after + 1]
        if nxt == "=" and text[after + 1 : after + 2] not in ("=", ">"):
            continue  # a write to the object (e.g. CommonJS ``exports.x = ...``), not a read
        seen = facts.per_key.get(key, 0)
        if seen >= _MAX_PER_KEY:
            continue  # real glue names an export in a handful of places at most
        facts.per_key[key] = seen + 1
        facts.referenced.setdefault(key, m.start())
        shape: str | None = None
        chain: list[_LV] = []
        if nxt == ")":
            w = _WRAP_AFTER.match(text, m.end())
            if w is not None:
                shape = SHAPE_APPLY if w.group(1) else SHAPE_ARROW
            else:
                shape = SHAPE_DIRECT
            chain = _chain_before(text, m.start())
        elif nxt in ("", ";", ",", "}", "]") or "\n" in text[m.end() : after]:
            shape = SHAPE_DIRECT
            chain = _chain_before(text, m.start())
        elif _APPLY_AFTER.match(text, m.end()):
            # 1.38-era: f=function(){return Module["asm"]["_x"].apply(null,arguments)}
            r = _skip_ws_back(text, m.start())
            if text[max(0, r - 6) : r] == "return" and (r < 7 or text[r - 7] not in _IDCHARS):
                fi = text.rfind("function", max(0, r - 2000), r)
                fm = _LEGACY_FUNC.match(text, fi) if fi >= 0 else None
                if fm is not None and "}" not in text[fm.end() : r]:
                    shape = SHAPE_LEGACY_APPLY
                    chain = _chain_before(text, fi)
        if shape is not None and chain:
            _record_chain(facts, key, chain, shape)


def _collect_exports(text: str) -> _ExportFacts:
    facts = _ExportFacts()
    holders = set(_KNOWN_HOLDERS)
    for m in _EXPORTS_ASSIGN.finditer(text):
        if len(holders) >= _MAX_HOLDERS:
            facts.notes.append("too many exports-object variables; extra ones ignored")
            break
        if m.group(1) not in _RESERVED:
            holders.add(m.group(1))
    for m in re.finditer(rf"{_NB}(wasmExports\d++)(?![A-Za-z0-9_$])", text):
        if len(holders) >= _MAX_HOLDERS:
            break
        holders.add(m.group(1))
    hlist = sorted(holders)
    _scan_holder_accesses(text, _holder_access_re(hlist), 0, len(text), facts)

    # Functions receiving the exports object as their single parameter
    # (assignWasmExports(wasmExports), possibly minified).
    alts = "|".join(re.escape(h) for h in hlist)
    callees = {
        m.group(1)
        for m in re.finditer(rf"{_NB}({_ID})\s*+\(\s*+(?:{alts})\s*+\)", text)
        if m.group(1) not in _RESERVED
    }
    callees.add("assignWasmExports")
    scanned = 0
    for fm in _FUNC_ONE_PARAM.finditer(text):
        fname, param = fm.group(1), fm.group(2)
        if fname not in callees or param in holders:
            continue
        scanned += 1
        if scanned > _MAX_SCOPED_FUNCS:
            break
        close = _block_end(text, fm.end() - 1, _MAX_FUNC_BODY)
        if close is None:
            continue
        _scan_holder_accesses(text, _holder_access_re([param]), fm.end(), close, facts)

    for m in _CREATE_EXPORT_WRAPPER.finditer(text):
        key = m.group(1) or m.group(2)
        if not _IDENT_FULL.fullmatch(key):
            facts.notes.append(f"createExportWrapper key {key[:40]!r} is not an identifier")
            continue
        chain = _chain_before(text, m.start())
        if chain:
            facts.referenced.setdefault(key, m.start())
            _record_chain(facts, key, chain, SHAPE_DEBUG)

    for m in _FOR_IN.finditer(text):
        if m.group(1) in holders:
            facts.notes.append(
                f"exports object {m.group(1)!r} is iterated dynamically (for-in); "
                "names assigned that way are not listed in the glue"
            )
            break
    return facts


def _module_vars(facts: _ExportFacts) -> set[str]:
    """``Module`` plus the most used objects of named property assignments (minified Module)."""
    ranked = sorted(facts.module_vars.items(), key=lambda kv: (-kv[1], kv[0]))
    return {"Module"} | {name for name, _ in ranked[: _MAX_MODULE_VARS - 1]}


def _resolve_aliases(text: str, facts: _ExportFacts) -> dict[str, list[str]]:
    """Name exports whose wrapper variable is assigned to a Module property.

    Returns forwarding notes per export key (``Module.stackSave=()=>ra()``).
    """
    var_to_keys: dict[str, set[str]] = {}
    for key, vars_ in facts.locals_.items():
        if facts.names.get(key):
            continue
        for v in vars_:
            var_to_keys.setdefault(v, set()).add(key)
    forwards: dict[str, list[str]] = {}
    if not var_to_keys:
        return forwards
    mods = "|".join(re.escape(m) for m in sorted(_module_vars(facts), key=len, reverse=True))
    prop = rf"(?:\.\s*+(?P<p1>{_ID})|\[\s*+(?:\"(?P<p2>{_ID})\"|'(?P<p3>{_ID})')\s*+\])"
    taken = {n: k for k, ns in facts.names.items() for n in ns}
    alias_rx = re.compile(rf"{_NB}(?:{mods})\s*+{prop}\s*+=(?![=>])\s*+(?P<v>{_ID}){_VALUE_END}")
    for m in alias_rx.finditer(text):
        keys = var_to_keys.get(m.group("v"))
        if not keys or len(keys) != 1:
            continue
        (key,) = keys
        pname = m.group("p1") or m.group("p2") or m.group("p3")
        real, _problem = _js_to_real(pname)
        if real is None:
            if _is_ident(pname):
                real = pname  # Module.<name> = wrapper: the JS-visible name of the export
            else:
                continue
        if taken.get(real, key) != key:
            continue
        facts.names.setdefault(key, set()).add(real)
    fwd_rx = re.compile(
        rf"{_NB}(?:{mods})\s*+{prop}\s*+=(?![=>])\s*+(?:\([^()]{{0,200}}\)|{_ID})\s*+=>"
        rf"\s*+\{{?\s*+(?:return\s++)?(?P<v>{_ID})\s*+\("
    )
    for m in fwd_rx.finditer(text):
        for key in var_to_keys.get(m.group("v"), ()):
            pname = m.group("p1") or m.group("p2") or m.group("p3")
            forwards.setdefault(key, []).append(pname)
    return forwards


# --------------------------------------------------------------------------- imports

_INSTANTIATE_WASM = re.compile(rf"instantiateWasm(?:[\"']\s*+\])?\s*+\(\s*+({_ID})\s*+,")
_WA_INSTANTIATE = re.compile(r"WebAssembly\s*+\.\s*+instantiate(?:Streaming)?\s*+\(")


def _nearest_def(text: str, name: str, before: int, what: str) -> re.Match[str] | None:
    """Definition ``name = {`` (what="obj") or ``name = F()`` (what="call") nearest before
    ``before``; falls back to the first one after it."""
    if what == "obj":
        rhs = r"(?P<brace>\{)"
    else:
        rhs = rf"(?:(?P<brace>\{{)|(?P<fn>{_ID})\s*+\(\s*+\))"
    rx = re.compile(rf"{_NB}{re.escape(name)}\s*+=(?![=>])\s*+{rhs}")
    best = None
    for m in rx.finditer(text):
        if m.start() < before:
            best = m
        else:
            return best or m
    return best


def _info_object(text: str, notes: list[str]) -> list[tuple[str, str, int]] | None:
    """(module name, value expr, value offset) of the object handed to instantiate."""
    candidates: list[tuple[str, int]] = []
    for m in _INSTANTIATE_WASM.finditer(text):
        if len(candidates) >= _MAX_CANDIDATES:
            break
        candidates.append((m.group(1), m.start()))
    second_arg = re.compile(rf"\s*+({_ID})\s*+[,)]")
    for m in _WA_INSTANTIATE.finditer(text):
        if len(candidates) >= 2 * _MAX_CANDIDATES:
            break
        # second argument: after the first top-level comma inside the call
        depth = 0
        for i, c in _code_events(text, m.end(), min(len(text), m.end() + 2000)):
            if c in "([{":
                depth += 1
            elif c in ")]}":
                if depth == 0:
                    break
                depth -= 1
            elif c == "," and depth == 0:
                a = second_arg.match(text, i + 1)
                if a:
                    candidates.append((a.group(1), m.start()))
                break
    for name, at in candidates:
        d = _nearest_def(text, name, at, "call")
        if d is None:
            continue
        open_idx: int | None = d.start("brace") if d.group("brace") else None
        if open_idx is None:
            fn = d.group("fn")
            fm = re.compile(rf"{_NB}function\s++{re.escape(fn)}\s*+\(\s*+\)\s*+\{{").search(text)
            if fm is None:
                continue
            close = _block_end(text, fm.end() - 1, _MAX_INFO_OBJECT)
            rm = re.compile(r"return\s*+\{").search(text, fm.end(), close or len(text))
            if rm is None:
                continue
            open_idx = rm.end() - 1
        parsed = _parse_object(text, open_idx, _MAX_INFO_OBJECT)
        if parsed is None or not parsed[0] or len(parsed[0]) > 8:
            continue
        triples: list[tuple[str, str, int]] = []
        for raw_k, raw_v, v_at in parsed[0]:
            k = _object_key(raw_k)
            if k is None:
                break
            if raw_v is None:
                triples.append((k, k, v_at))
                continue
            v = _strip_comments(raw_v)
            triples.append((k, v, v_at + raw_v.index(v[:1]) if v else v_at))
        else:
            if any(_is_ident(v) or v.startswith("{") for _, v, _ in triples):
                return triples
    if candidates:
        notes.append("instantiate call seen but its import-object argument was not understood")
    return None


def _import_aliases(text: str, wanted: set[str], mods: set[str]) -> dict[str, set[str]]:
    """Real names stated for minified JS function names in ``wanted``."""
    out: dict[str, set[str]] = {}
    if not wanted:
        return out

    def add(v: str, js_name: str) -> None:
        if v in wanted:
            real, _ = _js_to_real(js_name)
            if real is not None:
                out.setdefault(v, set()).add(real)

    # Ya=function _abort(...)  /  var Ya=function _abort(
    for m in re.finditer(rf"{_NB}({_ID})\s*+=(?![=>])\s*+function\s++(_{_ID})\s*+\(", text):
        add(m.group(1), m.group(2))
    # Ya=_abort  /  _abort=Ya  (bare aliases)
    end = _VALUE_END
    for m in re.finditer(rf"{_NB}({_ID})\s*+=(?![=>])\s*+(_{_ID}){end}", text):
        add(m.group(1), m.group(2))
    for m in re.finditer(rf"{_NB}(_{_ID})\s*+=(?![=>])\s*+({_ID}){end}", text):
        add(m.group(2), m.group(1))
    # Module._abort=Ya
    if mods:
        alts = "|".join(re.escape(x) for x in sorted(mods, key=len, reverse=True))
        prop = rf"(?:\.\s*+(_{_ID})|\[\s*+[\"'](_{_ID})[\"']\s*+\])"
        for m in re.finditer(rf"{_NB}(?:{alts})\s*+{prop}\s*+=(?![=>])\s*+({_ID}){end}", text):
            add(m.group(3), m.group(1) or m.group(2))
    return out


def _collect_imports(text: str, module_vars: set[str], result: GlueNames, shapes: set[str]) -> None:
    notes = result.unknown
    obj_open: int | None = None
    obj_name: str | None = None
    info = _info_object(text, notes)
    if info is not None:
        modules = [(k, v, at) for k, v, at in info if _is_ident(v) or v.startswith("{")]
        first_k, first_v, first_at = modules[0]
        result.import_module = first_k
        others = [k for k, v, _ in modules[1:] if v == first_v]
        if others:
            notes.append(
                f"import object is also passed under module(s) {', '.join(others)}; "
                f"import_module reports {first_k!r}"
            )
        extra = [k for k, v, _ in modules[1:] if v != first_v]
        if extra:
            notes.append(f"other import module(s) not parsed: {', '.join(extra)}")
        if first_v.startswith("{"):
            obj_open = first_at
        else:
            obj_name = first_v
            d = _nearest_def(text, first_v, first_at, "obj")
            obj_open = d.start("brace") if d else None
            if obj_open is None:
                notes.append(f"import object {first_v!r} is not defined as an object literal")
    else:
        for name in _KNOWN_IMPORT_VARS:
            d = _nearest_def(text, name, len(text), "obj")
            if d is not None:
                obj_open, obj_name = d.start("brace"), name
                break
    if obj_open is None:
        return
    parsed = _parse_object(text, obj_open, _MAX_IMPORT_OBJECT)
    if parsed is None:
        notes.append(f"import object {obj_name or '(inline)'} could not be delimited")
        return
    shapes.add(SHAPE_IMPORTS)
    entries: list[tuple[str, str | None]] = []
    unreadable = 0
    for raw_k, raw_v, _at in parsed[0]:
        if raw_v is None:
            piece = _strip_comments(raw_k)
            if _is_ident(piece):
                entries.append((piece, piece))  # shorthand {name}
            else:
                unreadable += 1
            continue
        k = _object_key(raw_k)
        if k is None:
            unreadable += 1
            continue
        v = _strip_comments(raw_v)
        entries.append((k, v if _is_ident(v) else None))
    if unreadable:
        notes.append(f"import object: {unreadable} entries with computed/spread keys not read")

    wanted = {v for _, v in entries if v is not None and _js_to_real(v)[0] is None}
    aliases = _import_aliases(text, wanted, module_vars)
    found: dict[str, set[str]] = {}
    unnamed_inline: list[str] = []
    unnamed_var: list[str] = []
    for k, v in entries:
        if not _IDENT_FULL.fullmatch(k):
            notes.append(f"import field {k[:40]!r} is not an identifier; skipped")
            continue
        if v is None:
            unnamed_inline.append(k)
            found.setdefault(k, set())
            continue
        real, problem = _js_to_real(v)
        if problem:
            notes.append(f"import {k!r}: {problem}")
        names = {real} if real is not None else aliases.get(v, set())
        if not names:
            unnamed_var.append(f"{k}={v}")
        found.setdefault(k, set()).update(names)
    for k, names in found.items():
        if len(names) == 1:
            result.imports[k] = next(iter(names))
        elif len(names) > 1:
            notes.append(f"import {k!r} maps to several names {sorted(names)}; kept neither")
    _drop_reverse_duplicates(result.imports, notes, "import")
    if unnamed_inline:
        notes.append(
            f"import object: {len(unnamed_inline)} field(s) are inline JS functions/expressions "
            f"with no stated name: {_short_list(unnamed_inline)}"
        )
    if unnamed_var:
        notes.append(
            f"import object: {len(unnamed_var)} field(s) refer to minified JS names with no "
            f"stated real name: {_short_list(unnamed_var)}"
        )


# --------------------------------------------------------------------------- assembly


def _short_list(items: list[str], limit: int = 30) -> str:
    shown = ", ".join(items[:limit])
    return shown + (f", ... (+{len(items) - limit})" if len(items) > limit else "")


def _drop_reverse_duplicates(mapping: dict[str, str], notes: list[str], what: str) -> None:
    by_real: dict[str, list[str]] = {}
    for k, real in mapping.items():
        by_real.setdefault(real, []).append(k)
    for real, keys in by_real.items():
        if len(keys) > 1:
            for k in keys:
                del mapping[k]
            notes.append(
                f"{what}s {', '.join(repr(k) for k in sorted(keys))} all map to {real!r}; kept none"
            )


def parse_glue(js_text: str) -> GlueNames:
    """Recover minified wasm export/import names from Emscripten glue text (never evaluated)."""
    result = GlueNames()
    if isinstance(js_text, bytes | bytearray):
        js_text = bytes(js_text).decode("utf-8", errors="replace")
    if not isinstance(js_text, str) or not js_text.strip():
        result.unknown.append(NO_SHAPE_NOTE)
        return result
    text = js_text
    facts = _collect_exports(text)
    forwards = _resolve_aliases(text, facts)
    notes = result.unknown
    notes.extend(facts.notes)

    for key, names in facts.names.items():
        if len(names) == 1:
            result.exports[key] = next(iter(names))
        elif len(names) > 1:
            notes.append(f"export {key!r} maps to several names {sorted(names)}; kept neither")
    _drop_reverse_duplicates(result.exports, notes, "export")

    if result.exports:
        unnamed = sorted(
            (k for k in facts.referenced if k not in result.exports and not facts.names.get(k)),
            key=lambda k: facts.referenced[k],
        )
        if len(unnamed) > _MAX_UNNAMED_NOTES:
            rest = unnamed[_MAX_UNNAMED_NOTES:]
            unnamed = unnamed[:_MAX_UNNAMED_NOTES]
        else:
            rest = []
        for key in unnamed:
            vars_ = sorted(facts.locals_.get(key, ()))
            if vars_:
                msg = (
                    f"export {key!r} is bound only to minified JS name(s) "
                    f"{', '.join(vars_)}; real name not stated"
                )
            else:
                msg = f"export {key!r} is used by the glue without a stated name"
            if key in forwards:
                msg += (
                    f" (called by Module.{', Module.'.join(sorted(set(forwards[key])))} "
                    "through a forwarding function, which does not name the export)"
                )
            notes.append(msg)
        if rest:
            notes.append(
                f"{len(rest)} more exports are used by the glue without a stated name: "
                f"{_short_list(rest)}"
            )
    else:
        notes.insert(0, NO_SHAPE_NOTE)

    shapes = {sh for key in result.exports for sh in facts.shapes.get(key, ())}
    _collect_imports(text, _module_vars(facts), result, shapes)
    result.shape = "+".join(sorted(shapes)) or None
    notes[:] = list(dict.fromkeys(notes))  # drop repeats, keep order
    if len(notes) > _MAX_NOTES:
        extra = len(notes) - _MAX_NOTES
        del notes[_MAX_NOTES:]
        notes.append(f"... {extra} more notes omitted")
    return result
