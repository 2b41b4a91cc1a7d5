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

from kbtool.glue.exports import _collect_exports, _module_vars, _resolve_aliases
from kbtool.glue.imports import _collect_imports
from kbtool.glue.lexer import _MAX_NOTES, _MAX_UNNAMED_NOTES
from kbtool.glue.model import NO_SHAPE_NOTE, GlueNames, _drop_reverse_duplicates, _short_list

# --------------------------------------------------------------------------- assembly


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
