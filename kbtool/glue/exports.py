"""Exports: which minified export each JS name is assigned from (wrapper chains, aliases)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from kbtool.glue.lexer import (
    _ID,
    _IDCHARS,
    _IDENT_FULL,
    _KNOWN_HOLDERS,
    _MAX_ACCESSES,
    _MAX_FUNC_BODY,
    _MAX_HOLDERS,
    _MAX_IDENT,
    _MAX_MODULE_VARS,
    _MAX_PER_KEY,
    _MAX_SCOPED_FUNCS,
    _NB,
    _RESERVED,
    _VALUE_END,
    _block_end,
    _ident_back,
    _is_ident,
    _js_to_real,
    _skip_ws,
    _skip_ws_back,
)
from kbtool.glue.model import (
    SHAPE_APPLY,
    SHAPE_ARROW,
    SHAPE_DEBUG,
    SHAPE_DIRECT,
    SHAPE_LEGACY_APPLY,
)

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
