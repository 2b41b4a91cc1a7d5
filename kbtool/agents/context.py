"""Per-function agent context (a JSON-ready TypedDict, :class:`Context`) and its bounding.

The caller (the pass service, the benchmark) builds one context per function; every proposer
and the verifier read only this dict. Keys (all optional except ``index``):

===================  ==========================================================================
``index``            int, function index in the version
``stable_id``        str, content identity (echoed into proposals)
``type``             str, type signature such as ``(i32, i32) -> i32``
``instr_count``      int, decoded instructions
``strings``          list[str], strings referenced through constants (untrusted)
``constants``        list[int], integer constants (de-duplicated, in order)
``callees``          list of ``{"index", "name", "import"}``: direct callees; ``name`` is the name
                     known so far (None if unnamed), ``import`` is ``module.field`` for imports
``imports_called``   list[str], ``module.field`` of each import called
``call_indirect``    int, indirect call sites
``callers``          list of ``{"index", "name", "instr_count", "calls"}``: direct callers
                     (``calls``: how many distinct functions that caller calls)
``globals``          list[int], global indices read or written
``mem_ops``          ``{"loads", "stores", "offsets"}``: memory access summary
``loops``            int
``exports``          list[str], export names of the function
``mnemonics``        list[str], the whole body for short functions (see ``SHORT_BODY``)
``lifted_c``         str, optional lifted C text
``c``                str, the cleaned C the naming prompt shows (the pass service adds it)
``c_names``          dict index -> identifier the C uses for that callee/caller (its placeholder)
``data``             list[str], data labels and globals the function uses (``kbtool analyze``)
``comments``         list[str], comments already written on the function
``existing``         ``{"name", "confidence", "provenance"}`` of the current annotation or None
``string_sharing``   dict str -> int, how many functions of the version reference each string
===================  ==========================================================================
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypedDict

from ..wasm.opcodes import MNEMONICS

SHORT_BODY = 48
DEFAULT_MAX_CHARS = 6000
_LIST_CAPS = {
    "strings": 24,
    "constants": 32,
    "callees": 40,
    "callers": 24,
    "imports_called": 24,
    "globals": 16,
    "exports": 8,
    "mnemonics": SHORT_BODY,
}
_STRING_CAP = 200


# A direct callee in a context: ``import`` (a keyword, hence the functional form) is
# ``module.field`` for an import, None for a defined function.
CalleeRef = TypedDict(
    "CalleeRef", {"index": int, "name": "str | None", "import": "str | None", "type": str}
)


class CallerRef(TypedDict):
    """A direct caller in a context; ``calls``: how many distinct functions it calls."""

    index: int
    name: str | None
    instr_count: int
    calls: int
    type: str


class MemOpsSummary(TypedDict):
    """Loads, stores and (up to 16) distinct offsets of a function's memory accesses."""

    loads: int
    stores: int
    offsets: list[int]


class Context(TypedDict, total=False):
    """The per-function agent context (keys as in the module docstring; only ``index`` always)."""

    index: int
    stable_id: str | None
    type: str
    instr_count: int
    strings: list[str]
    constants: list[int]
    callees: list[CalleeRef]
    imports_called: list[str]
    call_indirect: int
    callers: list[CallerRef]
    globals: list[int]
    mem_ops: MemOpsSummary
    loops: int
    exports: list[str]
    mnemonics: list[str]
    lifted_c: str
    c: str
    c_names: dict[int, str]
    data: list[str]
    comments: list[str]
    existing: dict[str, Any] | None
    string_sharing: dict[str, int]
    truncated: list[str]


def callers_of(functions: Sequence[Any]) -> dict[int, list[int]]:
    """Map callee index -> sorted caller indices, from ``FuncFacts.calls`` (linear)."""
    out: dict[int, set[int]] = {}
    for f in functions:
        for c in f.calls:
            out.setdefault(c, set()).add(f.index)
    return {k: sorted(v) for k, v in out.items()}


def string_sharing(functions: Iterable[Any]) -> dict[str, int]:
    """How many functions reference each string (a string used by one function is specific)."""
    out: dict[str, int] = {}
    for f in functions:
        for s in set(f.strings):
            out[s] = out.get(s, 0) + 1
    return out


def context_from_facts(
    functions: Sequence[Any],
    index: int,
    names: Mapping[int, str],
    callers: Mapping[int, list[int]] | None = None,
    *,
    stable_id: str | None = None,
    existing: Mapping[str, Any] | None = None,
    lifted_c: str | None = None,
    sharing: Mapping[str, int] | None = None,
) -> Context:
    """Build the context of ``functions[index]`` from wasm facts (``kbtool.wasm.FuncFacts``).

    ``names`` maps function index -> name known so far (imports by field, exports, earlier
    rounds). ``callers`` comes from :func:`callers_of` (computed once per version).
    """
    f = functions[index]
    callees: list[CalleeRef] = []
    imports: list[str] = []
    for c in dict.fromkeys(f.calls):
        if not 0 <= c < len(functions):
            continue
        g = functions[c]
        imp = g.import_name if g.imported else None
        callees.append({"index": c, "name": names.get(c), "import": imp, "type": g.type_sig})
        if imp:
            imports.append(imp)
    caller_list: list[CallerRef] = [
        {
            "index": i,
            "name": names.get(i),
            "instr_count": functions[i].instr_count,
            "calls": len(set(functions[i].calls)),
            "type": functions[i].type_sig,
        }
        for i in (callers or {}).get(index, [])
        if 0 <= i < len(functions)
    ]
    ctx: Context = {
        "index": f.index,
        "stable_id": stable_id,
        "type": f.type_sig,
        "instr_count": f.instr_count,
        "strings": list(f.strings),
        "constants": list(dict.fromkeys(f.consts)),
        "callees": callees,
        "imports_called": imports,
        "call_indirect": f.call_indirect,
        "callers": caller_list,
        "globals": list(dict.fromkeys(f.globals_used)),
        "mem_ops": summarize_mem_ops(f.mem_ops),
        "loops": f.loops,
        "exports": list(f.export_names),
        "existing": dict(existing) if existing else None,
    }
    if f.instr_count <= SHORT_BODY:
        ctx["mnemonics"] = f.mnemonics()
    if lifted_c:
        ctx["lifted_c"] = lifted_c
    if sharing is not None and f.strings:
        ctx["string_sharing"] = {s: int(sharing.get(s, 1)) for s in f.strings}
    return ctx


def summarize_mem_ops(mem_ops: Sequence[tuple[int, int, int]]) -> MemOpsSummary:
    """Loads, stores and distinct offsets of a function's memory accesses."""
    loads = stores = 0
    offsets: dict[int, None] = {}
    for op, off, _width in mem_ops:
        if ".store" in MNEMONICS[op]:
            stores += 1
        else:
            loads += 1
        offsets.setdefault(off, None)
    return {"loads": loads, "stores": stores, "offsets": list(offsets)[:16]}


def bound_context(ctx: Mapping[str, Any], max_chars: int = DEFAULT_MAX_CHARS) -> Context:
    """Return a copy of ``ctx`` whose JSON form fits in about ``max_chars`` characters.

    Lists are capped, strings truncated, then the lifted C text is cut, then the longest lists
    are halved until the context fits. The original is not modified; ``truncated`` lists the
    keys that were cut so a model knows the view is partial.
    """
    out: Context = copy.deepcopy(dict(ctx))
    cut: list[str] = []
    for key, cap in _LIST_CAPS.items():
        v = out.get(key)
        if isinstance(v, list) and len(v) > cap:
            out[key] = v[:cap]
            cut.append(key)
    if isinstance(out.get("strings"), list):
        out["strings"] = [_clip(s, _STRING_CAP) for s in out["strings"]]
    if isinstance(out.get("string_sharing"), dict):
        keep = set(out.get("strings") or [])
        out["string_sharing"] = {
            _clip(k, _STRING_CAP): v
            for k, v in out["string_sharing"].items()
            if _clip(k, _STRING_CAP) in keep
        }
    size = _size(out)
    if size > max_chars and isinstance(out.get("lifted_c"), str):
        room = max(0, len(out["lifted_c"]) - (size - max_chars) - 32)
        out["lifted_c"] = out["lifted_c"][:room] + "\n/* ... truncated ... */"
        cut.append("lifted_c")
    shrinkable: list[Callable[[], bool]] = [
        lambda k=k: _halve(out, k)
        for k in (
            "string_sharing",
            "mnemonics",
            "constants",
            "callers",
            "strings",
            "callees",
            "globals",
        )
    ]
    while _size(out) > max_chars:
        if not any(step() for step in shrinkable):
            out.pop("lifted_c", None)
            break
        cut.append("lists")
    if cut:
        out["truncated"] = sorted(set(cut))
    return out


def _clip(s: str, n: int) -> str:
    return s if len(s) <= n else s[: n - 3] + "..."


def _size(obj: Any) -> int:
    return len(json.dumps(obj, ensure_ascii=False, default=str))


def _halve(out: Context, key: str) -> bool:
    v = out.get(key)
    if isinstance(v, list) and len(v) > 1:
        out[key] = v[: len(v) // 2]
        return True
    if isinstance(v, dict) and len(v) > 1:
        out[key] = dict(list(v.items())[: len(v) // 2])
        return True
    return False


def refresh_names(ctx: Mapping[str, Any], names: Mapping[int, str]) -> Context:
    """A copy of ``ctx`` whose callee and caller names reflect ``names`` (for a later round).

    Names already in the context are kept unless ``names`` has a newer one for that index.
    """
    out: Context = dict(ctx)
    for key in ("callees", "callers"):
        if isinstance(ctx.get(key), list):
            out[key] = [{**e, "name": names.get(e.get("index"), e.get("name"))} for e in ctx[key]]
    return out
