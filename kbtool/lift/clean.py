"""Cleaned C: the lifter's output with variables renamed from their roles (pure).

Roles read off the lifted text (the lifter names parameters ``pN`` and locals ``lN``):

- ``frame``: a local set to ``<stack pointer> - N`` and stored back (the shadow-stack frame);
- ``i``, ``j``, ``k``...: a local stepped by a constant inside a loop (a loop counter);
- ``size``: a variable passed as the size argument of an allocator (``malloc``, ``calloc``,
  ``realloc``, ``alloc``-named callees);
- ``mem``/``len``/``<callee>_ret``: a local assigned once from a call to a named function;
- ``<struct>`` or ``objN``: a parameter memory is read or written through at two or more
  constant offsets (a struct pointer; named after the recovered struct when known);
- ``field_<offset>``: a local loaded once from a constant offset of a parameter;
- ``aN``: any other parameter.

The result stays valid C with the prelude (renaming is per identifier token, never inside a
comment or string, new names never clash with other identifiers of the text).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

_TOKEN = re.compile(
    r"/\*.*?\*/|\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*'|[A-Za-z_][A-Za-z0-9_]*|.", re.S
)
_VAR = re.compile(r"^[pl]\d+$")
_C_WORDS = frozenset(
    """auto break case char const continue default do double else enum extern
float for goto if inline int long register restrict return short signed sizeof static struct
switch typedef union unsigned void volatile while M""".split()
)
ALLOCATORS = re.compile(r"(^|_)(malloc|calloc|realloc|alloc|xmalloc|new)($|_)", re.I)
CALL_RESULT = {
    "malloc": "mem",
    "calloc": "mem",
    "realloc": "mem",
    "strlen": "len",
    "fopen": "fp",
    "open": "fd",
    "read": "nread",
    "write": "nwritten",
}
_COUNTERS = ("i", "j", "k", "n", "m")


@dataclass
class CleanResult:
    text: str
    rename_map: dict[str, str] = field(default_factory=dict)
    roles: dict[str, str] = field(default_factory=dict)  # new name -> role


def clean_c(
    lifted: str,
    *,
    stack_globals: tuple[str, ...] = ("g0", "__stack_pointer"),
    struct_params: dict[int, str] | None = None,
) -> CleanResult:
    """Rename ``pN``/``lN`` variables of one lifted function from their roles."""
    body = lifted
    idents = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", _strip_comments_and_strings(body)))
    taken = {t for t in idents if not _VAR.match(t)} | _C_WORDS
    roles: dict[str, tuple[str, str]] = {}  # old -> (new base, role)

    code = _strip_comments_and_strings(body)
    # the shadow-stack frame
    for g in stack_globals:
        m = re.search(rf"\b(l\d+) = {re.escape(g)} - \d+;", code)
        if m and re.search(rf"\b{re.escape(g)} = {m.group(1)};", code):
            roles.setdefault(m.group(1), ("frame", "stack frame"))
    # loop counters: stepped by a constant inside a loop
    if "do {" in code or "while (1)" in code:
        n = 0
        for m in re.finditer(r"\b(l\d+) = \1 [+-] \d+;", code):
            v = m.group(1)
            if v not in roles and n < len(_COUNTERS):
                roles[v] = (_COUNTERS[n], "loop counter")
                n += 1
    # sizes passed to allocators, results of named calls
    for m in re.finditer(r"\b(l\d+) = ([A-Za-z_][A-Za-z0-9_]*)\(([^;]*)\);", code):
        var, callee, args = m.groups()
        if re.fullmatch(r"f\d+", callee):
            continue
        if ALLOCATORS.search(callee):
            a = args.split(",")[-1].strip()
            if _VAR.match(a) and a not in roles:
                roles[a] = ("size", "allocation size")
        if var not in roles and len(re.findall(rf"\b{var} = ", code)) == 1:
            base = CALL_RESULT.get(callee.lower(), f"{_short(callee)}_ret")
            roles[var] = (base, f"result of {callee}")
    # a local loaded once from a field of a parameter: named after the field
    for m in re.finditer(
        r"\b(l\d+) = \*\((?:u?int\d+_t|float|double) \*\)\(M \+ (p\d+) \+ (\d+)\);", code
    ):
        var, _base, off = m.groups()
        if var not in roles and len(re.findall(rf"\b{var} = ", code)) == 1:
            roles[var] = (f"field_{off}", "field value")
    # the lifter's typed views (`#define P0 ((struct f1_p0_view *)(M + p0))`, then `P0->field_8`)
    views = dict(re.findall(r"#define (\w+) \(\(struct \w+ \*\)\(M \+ (p\d+)\)\)", code))
    for m in re.finditer(r"\b(l\d+) = (\w+)->field_(\d+);", code):
        var, macro, off = m.groups()
        if macro in views and var not in roles and len(re.findall(rf"\b{var} = ", code)) == 1:
            roles[var] = (f"field_{off}", "field value")
    # struct pointers among the parameters
    bases = Counter(m.group(1) for m in re.finditer(r"\(M \+ (p\d+) \+ \d+\)", code))
    for macro, p in views.items():
        bases[p] += len(re.findall(rf"\b{macro}->", code))
    for p, count in sorted(bases.items()):
        if count >= 2 and p not in roles:
            k = int(p[1:])
            sname = (struct_params or {}).get(k)
            roles[p] = (_short(sname) if sname else f"obj{k}", "struct pointer")
    for p in sorted(set(re.findall(r"\bp\d+\b", code))):
        roles.setdefault(p, (f"a{int(p[1:])}", "parameter"))

    mapping: dict[str, str] = {}
    used = set(taken)
    for old in sorted(roles, key=_order):
        base, _role = roles[old]
        new = base
        n = 2
        while new in used or new in _C_WORDS:
            new = f"{base}{n}"
            n += 1
        used.add(new)
        mapping[old] = new
    text = _rename(body, mapping)
    return CleanResult(
        text=text, rename_map=mapping, roles={mapping[o]: roles[o][1] for o in mapping}
    )


def _order(v: str) -> tuple[int, int]:
    return (0 if v[0] == "p" else 1, int(v[1:]))


def _short(name: str) -> str:
    s = re.sub(r"[^A-Za-z0-9_]", "_", name).strip("_").lower() or "v"
    if s[0].isdigit():
        s = "v_" + s
    return s[:32]


def _strip_comments_and_strings(text: str) -> str:
    return "".join(
        " " if t.startswith(("/*", '"', "'")) and len(t) > 1 else t for t in _TOKEN.findall(text)
    )


def _rename(text: str, mapping: dict[str, str]) -> str:
    if not mapping:
        return text
    return "".join(mapping.get(t, t) for t in _TOKEN.findall(text))


def describe(facts: dict, cleaned: CleanResult, *, name: str | None) -> tuple[str, float]:
    """An offline understanding (a few sentences) from facts and the cleaned code, and how
    much evidence it rests on (0..1)."""
    sig = facts.get("type_signature") or "?"
    parts = [f"{name or 'This function'} has type {sig}."]
    callees = [c.get("name") or f"func[{c['index']}]" for c in facts.get("callees", [])][:6]
    imports = [t for t in facts.get("call_targets", []) if t != "<indirect>"][:6]
    evidence = 0.1
    if callees:
        parts.append("It calls " + ", ".join(callees) + ".")
        evidence += 0.1 * min(3, sum(1 for c in facts.get("callees", []) if c.get("name")))
    if imports:
        parts.append("It reaches the host through " + ", ".join(imports) + ".")
        evidence += 0.1
    n_ind = sum(1 for t in facts.get("call_targets", []) if t == "<indirect>")
    if n_ind:
        parts.append(f"It makes {n_ind} indirect call(s) through the function table.")
    strings = facts.get("referenced_strings", [])[:3]
    if strings:
        parts.append("It references " + ", ".join(repr(s[:60]) for s in strings) + ".")
        evidence += 0.15
    structs = [n for n, r in cleaned.roles.items() if r == "struct pointer"]
    if structs:
        parts.append("It reads or writes fields through " + ", ".join(structs) + ".")
    mem = facts.get("memory_accesses") or []
    stores = sum(
        1
        for m in mem
        if isinstance(m, dict)
        and m.get("op", "").startswith(("i32.store", "i64.store", "f32.store", "f64.store"))
    )
    if stores:
        parts.append(f"Side effects: {stores} memory store(s).")
    if facts.get("loops"):
        counters = [n for n, r in cleaned.roles.items() if r == "loop counter"]
        parts.append(
            f"It has {facts['loops']} loop(s)"
            + (f" counted by {', '.join(counters)}." if counters else ".")
        )
    if "frame" in cleaned.rename_map.values():
        parts.append("It keeps locals in a shadow-stack frame.")
    return " ".join(parts), round(min(0.6, evidence), 2)
