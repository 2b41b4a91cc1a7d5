"""Imports: the import object passed to instantiate and the JS functions it names."""

from __future__ import annotations

import re

from kbtool.glue.lexer import (
    _ID,
    _IDENT_FULL,
    _KNOWN_IMPORT_VARS,
    _MAX_CANDIDATES,
    _MAX_IMPORT_OBJECT,
    _MAX_INFO_OBJECT,
    _NB,
    _VALUE_END,
    _block_end,
    _code_events,
    _is_ident,
    _js_to_real,
    _object_key,
    _parse_object,
    _strip_comments,
)
from kbtool.glue.model import SHAPE_IMPORTS, GlueNames, _drop_reverse_duplicates, _short_list

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
