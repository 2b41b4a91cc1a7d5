"""Known runtime/libc names, their families, and name canonicalisation for comparisons.

A family groups names for measurement and review (``memory``, ``string``, ``alloc``...).
``canonical`` maps toolchain spellings of one function to one key: Emscripten's
``dlmalloc`` is ``malloc``, Zig's ``c.string.strlen`` / ``compiler_rt.memcmp`` are
``strlen`` / ``memcmp``, LLVM's ``.1`` suffixes of local duplicates are dropped.
"""

from __future__ import annotations

import re

from kbtool.textutil import LazyPattern

FAMILIES: dict[str, tuple[str, ...]] = {
    "memory": (
        "memcpy",
        "memmove",
        "memset",
        "memcmp",
        "memchr",
        "__memcpy",
        "__memset",
        "emscripten_memcpy_big",
    ),
    "string": (
        "strlen",
        "strnlen",
        "strcmp",
        "strncmp",
        "strchr",
        "__strchrnul",
        "strrchr",
        "strcpy",
        "__stpcpy",
        "strncpy",
        "__stpncpy",
        "strcat",
        "strncat",
        "strdup",
        "strspn",
        "strcspn",
        "strpbrk",
        "strstr",
        "strcasecmp",
        "strncasecmp",
        "__memrchr",
        "twobyte_strstr",
        "threebyte_strstr",
        "fourbyte_strstr",
        "twoway_strstr",
        "toupper",
        "tolower",
        "isalpha",
        "isdigit",
        "isspace",
    ),
    "alloc": (
        "malloc",
        "free",
        "calloc",
        "realloc",
        "aligned_alloc",
        "posix_memalign",
        "memalign",
        "internal_memalign",
        "dispose_chunk",
        "try_realloc_chunk",
        "sbrk",
        "init_mparams",
        "emmalloc_malloc",
        "emmalloc_free",
        "__libc_malloc",
        "__libc_free",
        "__libc_calloc",
    ),
    "errno": ("__errno_location", "__wasi_syscall_ret", "strerror", "__strerror_l"),
    "stack": (
        "stackSave",
        "stackRestore",
        "stackAlloc",
        "emscripten_stack_get_current",
        "emscripten_stack_get_base",
        "emscripten_stack_get_end",
        "emscripten_stack_init",
        "emscripten_stack_set_limits",
        "emscripten_stack_get_free",
        "_emscripten_stack_restore",
        "_emscripten_stack_alloc",
    ),
    "init": (
        "__wasm_call_ctors",
        "__wasm_call_dtors",
        "_start",
        "_initialize",
        "__wasm_init_memory",
        "__wasm_init_tls",
        "__main_void",
        "__original_main",
    ),
    "setjmp": (
        "setjmp",
        "longjmp",
        "saveSetjmp",
        "testSetjmp",
        "emscripten_longjmp",
        "__wasm_setjmp",
        "__wasm_setjmp_test",
        "__wasm_longjmp",
        "setThrew",
    ),
    "lock": (
        "__lock",
        "__unlock",
        "__lockfile",
        "__unlockfile",
        "__ofl_lock",
        "__ofl_unlock",
        "__pthread_mutex_lock",
        "__pthread_mutex_unlock",
        "__pthread_mutex_trylock",
        "pthread_mutex_lock",
        "pthread_mutex_unlock",
    ),
    "printf": (
        "printf",
        "fprintf",
        "sprintf",
        "snprintf",
        "vprintf",
        "vfprintf",
        "vsprintf",
        "vsnprintf",
        "siprintf",
        "fiprintf",
        "printf_core",
        "puts",
        "fputs",
        "putchar",
        "fputc",
        "fwrite",
        "__fwritex",
        "__towrite",
        "__overflow",
        "fflush",
        "__stdio_write",
        "out",
        "pad",
        "pop_arg",
        "fmt_fp",
        "fmt_u",
        "fmt_x",
        "fmt_o",
        "getint",
        "sn_write",
        "wctomb",
        "wcrtomb",
        "frexp",
        "frexpl",
        "__signbitl",
        "__fpclassifyl",
        "qsort",
        "qsort_r",
    ),
    "rust_alloc": (
        "__rust_alloc",
        "__rust_dealloc",
        "__rust_realloc",
        "__rust_alloc_zeroed",
        "__rdl_alloc",
        "__rdl_dealloc",
        "__rdl_realloc",
        "__rdl_alloc_zeroed",
        "__rust_alloc_error_handler",
        "__rg_oom",
        "__rdl_oom",
        "rust_oom",
        "alloc::raw_vec::capacity_overflow",
        "alloc::alloc::handle_alloc_error",
        "alloc::raw_vec::finish_grow",
    ),
    "rust_panic": (
        "rust_begin_unwind",
        "rust_panic",
        "__rust_start_panic",
        "core::panicking::panic",
        "core::panicking::panic_fmt",
        "core::panicking::panic_bounds_check",
        "core::result::unwrap_failed",
        "core::option::expect_failed",
        "core::panicking::panic_str",
        "core::panicking::panic_display",
        "core::panicking::assert_failed",
        "core::panicking::assert_failed_inner",
        "std::panicking::begin_panic",
        "std::panicking::rust_panic_with_hook",
        "core::slice::index::slice_end_index_len_fail",
        "core::slice::index::slice_start_index_len_fail",
        "core::slice::index::slice_index_order_fail",
        "core::str::slice_error_fail",
    ),
    "int64": (
        "__multi3",
        "__divti3",
        "__udivti3",
        "__modti3",
        "__umodti3",
        "__udivmodti4",
        "__lshrti3",
        "__ashlti3",
        "__ashrti3",
        "__muldi3",
        "__divdi3",
        "__udivdi3",
        "__moddi3",
        "__umoddi3",
        "__mulodi4",
        "__muloti4",
        "__multf3",
        "__addtf3",
        "__subtf3",
        "__divtf3",
        "__extenddftf2",
        "__trunctfdf2",
        "__fixtfsi",
        "__fixunstfsi",
        "__floatsitf",
        "__floatunsitf",
        "__letf2",
        "__getf2",
        "__unordtf2",
        "__eqtf2",
        "__netf2",
        "__lttf2",
        "__gttf2",
    ),
    "thread": (
        "__pthread_create",
        "pthread_create",
        "__pthread_join",
        "pthread_join",
        "__pthread_self",
        "pthread_self",
        "emscripten_futex_wait",
        "emscripten_futex_wake",
        "__wasi_thread_start",
        "wasi_thread_start",
        "_emscripten_thread_init",
        "__emscripten_thread_main",
        "emscripten_tls_init",
        "_emscripten_thread_exit",
        "__timedwait",
        "__timedwait_cp",
        "__wait",
        "__wake",
        "a_cas",
        "a_swap",
        "a_fetch_add",
        "a_inc",
        "a_dec",
    ),
}

_FAMILY_OF = {n: fam for fam, names in FAMILIES.items() for n in names}

# one canonical key per function whatever the toolchain calls it
_ALIASES = {
    "dlmalloc": "malloc",
    "dlfree": "free",
    "dlcalloc": "calloc",
    "dlrealloc": "realloc",
    "dlmemalign": "memalign",
    "dlposix_memalign": "posix_memalign",
    "emmalloc_malloc": "malloc",
    "emmalloc_free": "free",
    "__libc_malloc": "malloc",
    "__libc_free": "free",
    "__libc_calloc": "calloc",
    "__libc_realloc": "realloc",
    "__pthread_create": "pthread_create",
    "__pthread_join": "pthread_join",
    "__pthread_mutex_lock": "pthread_mutex_lock",
    "__pthread_mutex_unlock": "pthread_mutex_unlock",
    "__pthread_self": "pthread_self",
    "__stpcpy": "stpcpy",
    "__stpncpy": "stpncpy",
    "__memrchr": "memrchr",
    "_emscripten_stack_restore": "stackRestore",
    "_emscripten_stack_alloc": "stackAlloc",
}

_RUST_HASH = LazyPattern(r"^h[0-9a-f]{16}$")  # Rust builds only
_RUST_ESC = {"SP": "@", "BP": "*", "RF": "&", "LT": "<", "GT": ">", "LP": "(", "RP": ")", "C": ","}
_RUST_ESC_RE = LazyPattern(r"\$([A-Z]{1,2}|u[0-9a-f]{1,6})\$")
_RUST_RUNTIME = (
    "core::",
    "alloc::",
    "std::",
    "dlmalloc::",
    "hashbrown::",
    "compiler_builtins::",
    "panic_unwind::",
    "panic_abort::",
    "rustc_demangle::",
    "memchr::",
    "miniz_oxide::",
    "gimli::",
    "addr2line::",
    "object::",
    "adler::",
)


def _rust_ident(part: str) -> str:
    def esc(m: re.Match) -> str:
        code = m.group(1)
        if code.startswith("u"):
            try:
                return chr(int(code[1:], 16))
            except ValueError:  # pragma: no cover - malformed escape
                return m.group(0)
        return _RUST_ESC.get(code, m.group(0))

    if part.startswith("_$"):
        part = part[1:]
    return _RUST_ESC_RE.sub(esc, part).replace("..", "::")


def demangle_rust(name: str) -> str | None:
    """The path of a legacy-mangled Rust symbol without its hash (``_ZN4core9panicking5panic
    17h..E`` -> ``core::panicking::panic``), or None when ``name`` is not one."""
    n = name.split(".llvm.", 1)[0]
    if not n.startswith("_ZN") or not n.endswith("E"):
        return None
    p, end, parts = 3, len(n) - 1, []
    while p < end:
        q = p
        while q < end and n[q].isdigit():
            q += 1
        if q == p or q - p > 5:
            return None
        ln = int(n[p:q])
        if ln <= 0 or q + ln > end:
            return None
        parts.append(n[q : q + ln])
        p = q + ln
    if parts and _RUST_HASH.match(parts[-1]):
        parts.pop()
    if not parts:
        return None
    return "::".join(_rust_ident(x) for x in parts)


_TYPE_GLUE = re.compile(
    r"drop_in_place|as core::ops::drop::Drop>::drop|^<(?:&|&mut |\*const |\*mut )*[A-Z]\b"
    r"|^<(?:&|&mut )*\[[A-Z]\]"
)


def is_type_glue(path: str) -> bool:
    """Rust code whose identity is the type it was instantiated for, not its body: drop
    glue (``core::ptr::drop_in_place<String>`` and ``<RawVec<T> as Drop>::drop`` compile to
    the same body) and blanket forwarders (``<&T as core::fmt::Debug>::fmt``). Such a body
    proves no name: recognizers never write these."""
    return bool(_TYPE_GLUE.search(path))


def is_rust_runtime(path: str) -> bool:
    """A demangled Rust path (or an impl ``<T as core::...>``) of the std/runtime crates."""
    if path.startswith(_RUST_RUNTIME) or path.startswith(
        ("__rust_", "__rdl_", "__rg_", "rust_begin_unwind", "rust_panic", "rust_oom")
    ):
        return True
    if path.startswith("<"):
        inner = path[1:].lstrip("&*[(").removeprefix("mut ").removeprefix("dyn ")
        return inner.startswith(_RUST_RUNTIME) or bool(
            re.match(
                r"(?:T|u8|u16|u32|u64|u128|usize|i8|i16|i32|i64|i128|isize|f32|f64|bool|char|str)"
                r"\b",
                inner,
            )
        )
    return False


_ZIG_PREFIX = re.compile(r"^(?:c\.[a-z_]+\.|compiler_rt\.)")
_DUP_SUFFIX = re.compile(r"\.\d+$")


def canonical(name: str) -> str:
    """The comparison key of a function name (toolchain spellings folded)."""
    rust = demangle_rust(name)
    if rust is not None:
        return rust
    n = _ZIG_PREFIX.sub("", name)
    n = _DUP_SUFFIX.sub("", n)
    return _ALIASES.get(n, n)


def family_of(name: str) -> str:
    """The family of a (possibly toolchain-spelled) name; ``libc`` for other libc code."""
    c = canonical(name)
    fam = _FAMILY_OF.get(c) or _FAMILY_OF.get(name)
    if fam:
        return fam
    if is_rust_runtime(c):
        if (
            c.startswith(("core::panicking::", "std::panicking::", "std::panic::"))
            or "panic" in c.rsplit("::", 1)[-1]
        ):
            return "rust_panic"
        if c.startswith(("alloc::alloc::", "alloc::raw_vec::", "dlmalloc::", "std::alloc::")):
            return "rust_alloc"
        if "core::fmt" in c or c.startswith("alloc::fmt::"):
            return "rust_fmt"
        return "rust_std"
    return "libc"
