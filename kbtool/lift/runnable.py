"""Runnable C: the glue that turns a lifted module's C into a native program (pure part).

``kbtool code VERSION --all --runnable -o DIR`` writes (see :mod:`kbtool.services.runnable`)::

    DIR/module.c      the readable C, exactly ``kbtool code VERSION --all``'s text
    DIR/kb_names.h    #define NAME <prefix>NAME for every function and global of the
                      module (force-included after prelude.h when compiling module.c only):
                      the module's ``malloc``, ``memcpy``, ``floor``, ``main``... would
                      otherwise clash with the host C library at link time
    DIR/kb_glue.c     generated: globals with their initial values, data segments, element
                      segments (the function tables), import wrappers (WASI calls go to the
                      shim), memory/table limits, kb_module_start (start function, _start)
    DIR/prelude.h, kb_runtime.[ch], kb_wasi.c   the fixed runtime (kbtool/lift/runtime)
    DIR/Makefile      ``make -C DIR`` builds DIR/program with gcc

    glue = runnable_glue(lm, label)   # {"kb_glue.c": ..., "kb_names.h": ..., "Makefile": ...}
    runtime_files()                   # {"kb_runtime.c": text, ...} shipped with the package

The program runs like ``wasmtime run``: ``DIR/program [--dir HOST[::GUEST]]...
[--env NAME[=VALUE]]... [--argv0 NAME] [--] ARGS...``. Raises :class:`RunnableError`
(one-line message) for a module that is not a command (no ``_start`` export) or uses
features the runtime does not provide.
"""

from __future__ import annotations

import math
import re
from importlib import resources

from .context import LiftModule

#: WASI preview-1 functions the shim implements: field -> (params, results)
WASI_SIGS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "args_get": (("i32", "i32"), ("i32",)),
    "args_sizes_get": (("i32", "i32"), ("i32",)),
    "environ_get": (("i32", "i32"), ("i32",)),
    "environ_sizes_get": (("i32", "i32"), ("i32",)),
    "clock_res_get": (("i32", "i32"), ("i32",)),
    "clock_time_get": (("i32", "i64", "i32"), ("i32",)),
    "fd_advise": (("i32", "i64", "i64", "i32"), ("i32",)),
    "fd_allocate": (("i32", "i64", "i64"), ("i32",)),
    "fd_close": (("i32",), ("i32",)),
    "fd_datasync": (("i32",), ("i32",)),
    "fd_fdstat_get": (("i32", "i32"), ("i32",)),
    "fd_fdstat_set_flags": (("i32", "i32"), ("i32",)),
    "fd_fdstat_set_rights": (("i32", "i64", "i64"), ("i32",)),
    "fd_filestat_get": (("i32", "i32"), ("i32",)),
    "fd_filestat_set_size": (("i32", "i64"), ("i32",)),
    "fd_filestat_set_times": (("i32", "i64", "i64", "i32"), ("i32",)),
    "fd_pread": (("i32", "i32", "i32", "i64", "i32"), ("i32",)),
    "fd_prestat_get": (("i32", "i32"), ("i32",)),
    "fd_prestat_dir_name": (("i32", "i32", "i32"), ("i32",)),
    "fd_pwrite": (("i32", "i32", "i32", "i64", "i32"), ("i32",)),
    "fd_read": (("i32", "i32", "i32", "i32"), ("i32",)),
    "fd_readdir": (("i32", "i32", "i32", "i64", "i32"), ("i32",)),
    "fd_renumber": (("i32", "i32"), ("i32",)),
    "fd_seek": (("i32", "i64", "i32", "i32"), ("i32",)),
    "fd_sync": (("i32",), ("i32",)),
    "fd_tell": (("i32", "i32"), ("i32",)),
    "fd_write": (("i32", "i32", "i32", "i32"), ("i32",)),
    "path_create_directory": (("i32", "i32", "i32"), ("i32",)),
    "path_filestat_get": (("i32", "i32", "i32", "i32", "i32"), ("i32",)),
    "path_filestat_set_times": (("i32", "i32", "i32", "i32", "i64", "i64", "i32"), ("i32",)),
    "path_link": (("i32", "i32", "i32", "i32", "i32", "i32", "i32"), ("i32",)),
    "path_open": (("i32", "i32", "i32", "i32", "i32", "i64", "i64", "i32", "i32"), ("i32",)),
    "path_readlink": (("i32", "i32", "i32", "i32", "i32", "i32"), ("i32",)),
    "path_remove_directory": (("i32", "i32", "i32"), ("i32",)),
    "path_rename": (("i32", "i32", "i32", "i32", "i32", "i32"), ("i32",)),
    "path_symlink": (("i32", "i32", "i32", "i32", "i32"), ("i32",)),
    "path_unlink_file": (("i32", "i32", "i32"), ("i32",)),
    "poll_oneoff": (("i32", "i32", "i32", "i32"), ("i32",)),
    "proc_exit": (("i32",), ()),
    "proc_raise": (("i32",), ("i32",)),
    "random_get": (("i32", "i32"), ("i32",)),
    "sched_yield": ((), ("i32",)),
    "sock_accept": (("i32", "i32", "i32"), ("i32",)),
    "sock_recv": (("i32", "i32", "i32", "i32", "i32", "i32"), ("i32",)),
    "sock_send": (("i32", "i32", "i32", "i32", "i32"), ("i32",)),
    "sock_shutdown": (("i32", "i32"), ("i32",)),
}
WASI_MODULES = ("wasi_snapshot_preview1", "wasi_unstable")
#: host functions Emscripten's STANDALONE_WASM builds import besides WASI: ``env`` field ->
#: ((params, results), C body); the same as a standalone host gives them (a memory-growth
#: notice is nothing to do natively, dup3 is not supported: -ENOSYS)
EMSCRIPTEN_IMPORTS: dict[str, tuple[tuple[tuple[str, ...], tuple[str, ...]], str]] = {
    "emscripten_notify_memory_growth": ((("i32",), ()), "(void)a0;"),
    "__syscall_dup3": (
        (("i32", "i32", "i32"), ("i32",)),
        "(void)a0; (void)a1; (void)a2; return -52;",
    ),
}
RUNTIME_FILES = ("kb_runtime.h", "kb_runtime.c", "kb_wasi.c")
PROGRAM = "program"

_C = {"i32": "int32_t", "i64": "int64_t", "f32": "float", "f64": "double", "v128": "v128"}


class RunnableError(ValueError):
    """The module cannot become a runnable program (one-line message)."""


def runtime_files() -> dict[str, str]:
    """The fixed runtime sources (kbtool/lift/runtime) by file name, plus ``prelude.h``."""
    root = resources.files("kbtool.lift") / "runtime"
    out = {name: (root / name).read_text(encoding="utf-8") for name in RUNTIME_FILES}
    out["prelude.h"] = (resources.files("kbtool.lift") / "prelude.h").read_text(encoding="utf-8")
    return out


def _ctype(t: str) -> str:
    return _C.get(t, "wasm_ref")


def _prefix(names: list[str]) -> str:
    """A prefix no name of the module starts with (so renames cannot chain)."""
    k = 0
    while True:
        p = "kbf_" if k == 0 else f"kbf{k}_"
        if not any(n.startswith(p) for n in names):
            return p
        k += 1


def _c_string(data: bytes) -> str:
    """``data`` as C string literal lines (octal escapes: unambiguous, gcc-fast)."""
    out = []
    for i in range(0, len(data), 64):
        chunk = data[i : i + 64]
        out.append('  "' + "".join(f"\\{b:03o}" for b in chunk) + '"')
    return "\n".join(out) if out else '  ""'


def _literal(value: int | float | None, t: str) -> str:
    if value is None:
        return "0"
    if t == "i32":
        v = int(value) & 0xFFFFFFFF
        return f"(int32_t){v}u"
    if t == "i64":
        v = int(value) & 0xFFFFFFFFFFFFFFFF
        return f"(int64_t){v}ull"
    if t in ("f32", "f64"):
        f = float(value)
        suffix = "f" if t == "f32" else ""
        if math.isnan(f):
            return f'__builtin_nan{suffix}("")'
        if math.isinf(f):
            return ("-" if f < 0 else "") + f"__builtin_inf{suffix}()"
        return f"({_ctype(t)}){f.hex()}"
    return "0"


def _label_comment(text: str) -> str:
    return re.sub(r"[^\x20-\x7e]", "?", text).replace("*/", "* /")


def _import_lines(lm: LiftModule, pre: str) -> list[str]:
    """One C definition per imported function: WASI preview 1 calls the shim, a known
    Emscripten import its stand-in, any other import traps when called."""
    m = lm.module
    out: list[str] = []
    for i, imp in enumerate(m.func_imports):
        t = m.func_type(i)
        params = [_ctype(p) for p in t.params]
        ret = _ctype(t.results[0]) if len(t.results) == 1 else "void"
        args = ", ".join(f"{c} a{k}" for k, c in enumerate(params)) or "void"
        call = ", ".join(f"a{k}" for k in range(len(params)))
        cname = f"{pre}{lm.func_c[i]}"
        sig = WASI_SIGS.get(imp.field)
        if (
            imp.module in WASI_MODULES
            and sig is not None
            and (tuple(t.params), tuple(t.results)) == sig
        ):
            shim = f"kb_wasi_{imp.field}"
            decl_args = ", ".join(params) or "void"
            out.append(f"{ret} {shim}({decl_args});")
            body = f"return {shim}({call});" if ret != "void" else f"{shim}({call});"
            out.append(f"{ret} {cname}({args}) {{ {body} }}")
        elif (
            imp.module == "env"
            and imp.field in EMSCRIPTEN_IMPORTS
            and EMSCRIPTEN_IMPORTS[imp.field][0] == (tuple(t.params), tuple(t.results))
        ):
            out.append(f"{ret} {cname}({args}) {{ {EMSCRIPTEN_IMPORTS[imp.field][1]} }}")
        else:
            what = _label_comment(f"{imp.module}.{imp.field}")
            unused = " ".join(f"(void)a{k};" for k in range(len(params)))
            out.append(
                f'{ret} {cname}({args}) {{ {unused} kb_trap("unsupported import {what}"); }}'
            )
    return out


def runnable_glue(lm: LiftModule, label: str = "", opt: str = "-O1") -> dict[str, str]:
    """The generated files for ``lm`` (the same prepared module the C was lifted from, so
    the names agree): ``kb_glue.c``, ``kb_names.h`` and ``Makefile``."""
    m = lm.module
    if len(m.memories) > 1:
        raise RunnableError("the module has several memories; the runtime supports one")
    exports = {e.name: e for e in m.exports}
    start = exports.get("_start")
    if start is None or start.kind != "func":
        raise RunnableError("the module is not a WASI command: it exports no _start function")
    names = [*lm.func_c, *lm.global_c]
    pre = _prefix(names)
    nfi = m.num_func_imports
    head = [
        f"/* kbtool runnable glue for {_label_comment(label) or 'the module'} (generated). */",
        '#include "prelude.h"',
        '#include "kb_runtime.h"',
        "",
        f'const char *const kb_program_name = "{_label_comment(label)}";',
        "",
    ]
    out = list(head)
    # globals
    if m.globals:
        out.append("/* globals, with their initial values */")
    for i, g in enumerate(m.globals):
        note = "  /* imported: no value given */" if g.imported else ""
        if not g.imported and g.init is None:
            note = "  /* initialiser is not a constant */"
        out.append(
            f"{_ctype(g.valtype)} {pre}{lm.global_c[i]} = {_literal(g.init, g.valtype)};{note}"
        )
    # imports
    out.append("")
    out.append("/* imported functions: WASI preview 1 goes to the shim (kb_wasi.c) */")
    out.extend(_import_lines(lm, pre))
    # tables and element segments
    out.append("")
    referenced: set[int] = set()
    for el in m.elements:
        referenced.update(fi for fi in el.func_indices if fi is not None and fi >= nfi)
    if referenced:
        out.append("/* functions in tables (only their addresses are taken here) */")
        for fi in sorted(referenced):
            out.append(f"extern void {pre}{lm.func_c[fi]}(void);")
    tables = [t for t in m.tables]
    limits = [f"{{{t.min}u, {t.max if t.max is not None else 0xFFFFFFFF}u}}" for t in tables]
    out.append(f"const kb_limits kb_table_limits[] = {{{', '.join(limits) or '{0, 0}'}}};")
    out.append(f"const uint32_t kb_num_tables = {len(tables)};")
    segs = []
    for k, el in enumerate(m.elements):
        mode = {"active": 0, "passive": 1}.get(el.mode, 2)
        if mode == 0 and el.offset is None:
            raise RunnableError(f"element segment {k} has a non-constant offset")
        items = [
            f"(wasm_funcptr){pre}{lm.func_c[fi]}" if fi is not None else "0"
            for fi in el.func_indices
        ]
        out.append(f"static const wasm_funcptr kb_e{k}[] = {{{', '.join(items) or '0'}}};")
        segs.append(f"{{{el.table_index}u, {el.offset or 0}u, {len(items)}u, kb_e{k}, 0, {mode}}}")
    out.append(
        "const kb_elem_segment kb_elem_segments[] = {"
        + (", ".join(segs) or "{0, 0, 0, 0, 0, 2}")
        + "};"
    )
    out.append(f"const uint32_t kb_num_elem_segments = {len(segs)};")
    # memory and data
    out.append("")
    mem = m.memories[0] if m.memories else None
    if mem is not None and mem.imported:
        note = "  /* imported memory: created with its declared limits */"
    else:
        note = ""
    out.append(f"const int kb_has_memory = {1 if mem is not None else 0};{note}")
    mx = mem.max if mem is not None and mem.max is not None else 0xFFFFFFFF
    out.append(f"const kb_limits kb_memory_limits = {{{mem.min if mem else 0}u, {mx}u}};")
    dsegs = []
    for k, seg in enumerate(m.data_segments):
        if not seg.passive and seg.offset is None:
            raise RunnableError(f"data segment {k} has a non-constant offset")
        out.append(
            f"static const uint8_t kb_d{k}[{max(len(seg.data), 1)}] =\n{_c_string(seg.data)};"
        )
        dsegs.append(
            f"{{{seg.memory_index}u, {seg.offset or 0}u, {len(seg.data)}u, kb_d{k}, "
            f"{1 if seg.passive else 0}}}"
        )
    out.append(
        "const kb_data_segment kb_data_segments[] = {"
        + (",\n  ".join(dsegs) or "{0, 0, 0, 0, 1}")
        + "};"
    )
    out.append(f"const uint32_t kb_num_data_segments = {len(dsegs)};")
    # start
    out.append("")
    calls = []
    if m.start is not None:
        if m.start < nfi:
            calls.append(f"{pre}{lm.func_c[m.start]}();")
        else:
            out.append(f"extern void {pre}{lm.func_c[m.start]}(void);")
            calls.append(f"{pre}{lm.func_c[m.start]}();")
    if start.index < nfi:
        raise RunnableError("_start is an imported function")
    if start.index not in referenced and start.index != m.start:
        out.append(f"extern void {pre}{lm.func_c[start.index]}(void);")
    calls.append(f"{pre}{lm.func_c[start.index]}();")
    out.append("void kb_module_start(void) {\n  " + "\n  ".join(calls) + "\n}")
    glue = "\n".join(out) + "\n"

    rename = [
        "/* kbtool: the module's functions and globals under a prefix, so its malloc, memcpy,",
        "   floor, main... do not meet the host C library's (generated) */",
        "#ifndef KB_NAMES_H",
        "#define KB_NAMES_H",
    ]
    rename += [f"#define {n} {pre}{n}" for n in names]
    rename.append("#endif")
    return {
        "kb_glue.c": glue,
        "kb_names.h": "\n".join(rename) + "\n",
        "Makefile": makefile(opt),
    }


def makefile(opt: str = "-O1") -> str:
    """The Makefile: ``make`` builds ``program`` with gcc (``make OPT=-O2`` to optimise
    more; the flags give C wasm's semantics: wrapping integers, no strict aliasing)."""
    return f"""# kbtool runnable C (generated): make builds ./{PROGRAM}
CC ?= gcc
OPT ?= {opt}
SEMANTICS = -fwrapv -fno-strict-aliasing -ffp-contract=off -fno-tree-vectorize
CFLAGS ?= -w
LDLIBS = -lm -lpthread

{PROGRAM}: module.o kb_glue.o kb_runtime.o kb_wasi.o
\t$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

module.o: module.c prelude.h kb_names.h
\t$(CC) $(OPT) $(SEMANTICS) $(CFLAGS) -include prelude.h -include kb_names.h -c module.c -o $@

kb_glue.o: kb_glue.c prelude.h kb_runtime.h
\t$(CC) -O1 $(CFLAGS) -c kb_glue.c -o $@

kb_runtime.o: kb_runtime.c prelude.h kb_runtime.h
\t$(CC) -O2 $(SEMANTICS) $(CFLAGS) -c kb_runtime.c -o $@

kb_wasi.o: kb_wasi.c kb_runtime.h
\t$(CC) -O2 $(CFLAGS) -c kb_wasi.c -o $@

clean:
\trm -f {PROGRAM} *.o

.PHONY: clean
"""
