"""The specialist proposer: known function families, tried before any general proposer.

Families (rule ids in brackets; confidences come from :mod:`.calibration`, never from here):

* string-tagged functions: a string that is exactly a code symbol (``__func__`` of an assert
  or log call) [``string_tag.exact``], or a message prefixed by one, such as
  ``"foo_bar: invalid argument"`` or ``"fooBar(): failed"`` [``string_tag.prefix``];
* import-call wrappers forwarding to one import: WASI libc wraps ``wasi_*.<f>`` as
  ``__wasi_<f>`` [``import_wrapper.wasi``]; other hosts [``import_wrapper.other``];
* WASI libc (wasi-libc/musl) functions recognised by the one set of WASI calls they make and
  their signature, e.g. ``__lseek`` is the only caller shape of ``fd_seek`` with
  ``(i32, i64, i32) -> i64`` [``wasi_libc.posix``];
* thin wrappers and thunks of a named callee: ``foo`` calling ``foo_internal`` or
  ``foo_generic`` [``thunk.strip_suffix``]; and the callee of a thin named caller, which is
  named after it [``thunk.caller_internal``].
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .tokens import is_c_identifier, looks_like_symbol

THIN_MAX_INSTR = 24
IMPL_SUFFIXES = ("_internal", "_generic", "_impl", "_body", "_inner", "_real", "_worker", "_core")
_PREFIX_TAG = re.compile(r"\s*\[?([A-Za-z_][A-Za-z0-9_]*)\]?\s*(?:\(\s*\))?\s*:\s+\S")
_CALL_TAG = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\(\)\s+\S")


@dataclass(slots=True)
class Candidate:
    """A name a rule derived from a context, before calibration gives it a confidence."""

    rule: str
    name: str
    reasons: list[str] = field(default_factory=list)
    summary: str = ""


def known_names(ctx: Mapping[str, Any]) -> set[str]:
    """Names of the callees (and import fields) of ``ctx``: a string naming one of them
    names the callee, not this function."""
    out: set[str] = set()
    for c in ctx.get("callees") or ():
        if c.get("name"):
            out.add(c["name"])
        if c.get("import"):
            out.add(str(c["import"]).rsplit(".", 1)[-1])
    return out


def is_thin(ctx: Mapping[str, Any]) -> bool:
    """Short, one distinct direct callee, no loop, no string, no store, no indirect call."""
    mem = ctx.get("mem_ops") or {}
    return (
        int(ctx.get("instr_count") or 0) <= THIN_MAX_INSTR
        and len(ctx.get("callees") or ()) == 1
        and not int(ctx.get("call_indirect") or 0)
        and not int(ctx.get("loops") or 0)
        and not ctx.get("strings")
        and not int(mem.get("stores") or 0)
    )


def string_tags(ctx: Mapping[str, Any]) -> list[Candidate]:
    """Symbols that strings of ``ctx`` name, specific strings first."""
    callees = known_names(ctx)
    sharing = ctx.get("string_sharing") or {}
    exact: list[Candidate] = []
    prefix: list[Candidate] = []
    for s in ctx.get("strings") or ():
        if not isinstance(s, str):
            continue
        shared = int(sharing.get(s, 1))
        word = s.strip()
        if word.endswith("()"):
            word = word[:-2]
        if looks_like_symbol(word) and word not in callees and shared <= 1:
            exact.append(Candidate("string_tag.exact", word, [f"string {s!r} names a symbol"]))
            continue
        m = _PREFIX_TAG.match(s) or _CALL_TAG.match(s)
        if m and looks_like_symbol(m.group(1)) and m.group(1) not in callees:
            prefix.append(
                Candidate("string_tag.prefix", m.group(1), [f"message {s[:80]!r} is tagged"])
            )
    return _dedupe(exact) + _dedupe(prefix)


def import_wrapper(ctx: Mapping[str, Any]) -> Candidate | None:
    """A thin function whose one callee is an import."""
    if not is_thin(ctx):
        return None
    (callee,) = ctx["callees"]
    imp = callee.get("import")
    if not imp or "." not in str(imp):
        return None
    module, fieldname = str(imp).rsplit(".", 1)
    if not is_c_identifier(fieldname):
        return None
    why = [f"forwards to import {imp}"]
    if module.startswith("wasi"):
        return Candidate(
            "import_wrapper.wasi", f"__wasi_{fieldname}", why, f"WASI libc wrapper of {imp}"
        )
    return Candidate(
        "import_wrapper.other",
        f"{fieldname.lstrip('_')}_wrapper",
        why,
        f"wrapper of host import {imp}",
    )


# (WASI calls made, signature or None for any) -> wasi-libc name. From the wasi-libc sources:
# libc-bottom-half/cloudlibc and sources/ (the functions that own each WASI call).
WASI_LIBC = {
    (frozenset({"proc_exit"}), "(i32) -> ()"): "_Exit",
    (frozenset({"fd_write"}), "(i32, i32, i32) -> i32"): "writev",
    (frozenset({"fd_read"}), "(i32, i32, i32) -> i32"): "readv",
    (frozenset({"fd_pwrite"}), "(i32, i32, i32, i64) -> i32"): "pwritev",
    (frozenset({"fd_pread"}), "(i32, i32, i32, i64) -> i32"): "preadv",
    (frozenset({"fd_fdstat_get"}), "(i32) -> i32"): "__isatty",
    (frozenset({"fd_seek"}), "(i32, i64, i32) -> i64"): "__lseek",
    (frozenset({"fd_close"}), "(i32) -> i32"): "close",
    (frozenset({"fd_sync"}), "(i32) -> i32"): "fsync",
    (frozenset({"fd_datasync"}), "(i32) -> i32"): "fdatasync",
    (frozenset({"random_get"}), "(i32, i32) -> i32"): "getentropy",
    (frozenset({"sched_yield"}), "() -> i32"): "sched_yield",
    (frozenset({"args_sizes_get", "args_get"}), None): "__main_void",
    (frozenset({"environ_sizes_get", "environ_get"}), None): "__wasilibc_initialize_environ",
    (frozenset({"fd_prestat_get", "fd_prestat_dir_name"}), None): "__wasilibc_populate_preopens",
}


def wasi_calls(ctx: Mapping[str, Any]) -> set[str] | None:
    """The WASI functions ``ctx`` calls (directly as imports or through ``__wasi_*``
    wrappers), or None when it also calls anything else that is named or imported."""
    out: set[str] = set()
    for c in ctx.get("callees") or ():
        imp, name = c.get("import"), c.get("name") or ""
        if imp and str(imp).startswith("wasi"):
            out.add(str(imp).rsplit(".", 1)[-1])
        elif name.startswith("__wasi_"):
            out.add(name[len("__wasi_") :])
        elif imp or name:
            return None
    return out


def wasi_libc(ctx: Mapping[str, Any]) -> Candidate | None:
    """A wasi-libc function identified by the WASI calls it makes and its signature."""
    if int(ctx.get("instr_count") or 0) > 200:
        return None
    calls = wasi_calls(ctx)
    if not calls:
        return None
    key = frozenset(calls)
    name = WASI_LIBC.get((key, ctx.get("type"))) or WASI_LIBC.get((key, None))
    if not name:
        return None
    return Candidate(
        "wasi_libc.posix",
        name,
        [f"wasi-libc shape: calls {', '.join(sorted(calls))} with type {ctx.get('type')}"],
        f"wasi-libc {name}",
    )


def thunks(ctx: Mapping[str, Any]) -> list[Candidate]:
    """Names from a thin function's named callee, or from a thin named caller."""
    out: list[Candidate] = []
    if is_thin(ctx):
        (callee,) = ctx["callees"]
        cname = callee.get("name")
        if cname and not callee.get("import"):
            for suf in IMPL_SUFFIXES:
                if cname.endswith(suf) and len(cname) > len(suf) + 2:
                    out.append(
                        Candidate(
                            "thunk.strip_suffix",
                            cname[: -len(suf)],
                            [f"thin wrapper of {cname}"],
                            f"entry point of {cname}",
                        )
                    )
                    break
    for caller in ctx.get("callers") or ():
        cn = caller.get("name")
        thin = int(caller.get("instr_count") or 10**9) <= THIN_MAX_INSTR
        if cn and thin and int(caller.get("calls") or 0) == 1 and not cn.endswith(IMPL_SUFFIXES):
            out.append(
                Candidate(
                    "thunk.caller_internal",
                    f"{cn}_internal",
                    [f"the one callee of thin wrapper {cn}"],
                    f"implementation behind {cn}",
                )
            )
            break
    return out


def specialist_candidates(ctx: Mapping[str, Any]) -> list[Candidate]:
    """All specialist candidates for ``ctx``, most specific family first."""
    out = string_tags(ctx)
    for fam in (import_wrapper, wasi_libc):
        c = fam(ctx)
        if c:
            out.append(c)
    out.extend(thunks(ctx))
    return out


def _dedupe(cands: list[Candidate]) -> list[Candidate]:
    seen: dict[str, Candidate] = {}
    for c in cands:
        seen.setdefault(c.name, c)
    return list(seen.values())
