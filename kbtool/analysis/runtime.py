"""Recognise toolchain runtime functions: libc, malloc, compiler-rt, Emscripten/Rust/Go/Zig runtime.

A reverse engineer tracking an application across releases wants to tell *its* changes
from the churn a new compiler or libc brings. A function counts as runtime when

- one of its names (annotation, name section, exports) is a runtime name: the C standard
  library and POSIX functions wasi-libc/musl/Emscripten ship, malloc implementations
  (dlmalloc, emmalloc, mimalloc), reserved C identifiers (``__`` prefix: compiler-rt,
  libc internals, crt), C++ runtime (libc++/libc++abi, ``__cxa_*``, ``_Unwind_*``,
  ``operator new``), Rust's ``core``/``alloc``/``std``/``compiler_builtins``/``dlmalloc``
  crates (legacy ``_ZN`` and v0 ``_R`` mangling, or demangled), Go's ``runtime.``,
  ``internal/...``, ``syscall/js.`` packages, Zig's standard namespaces (``compiler_rt.``,
  ``c.``, ``heap.`` ...), Emscripten's ``emscripten_*``/``stackSave``/``dynCall_*`` glue;
- its name came from an oracle reference module that is a runtime library (the evidence
  of the oracle match says so, see :mod:`kbtool.services.oracle`);
- by signature: it is a thin wrapper that calls a runtime import (WASI, Emscripten
  syscalls, wasm-bindgen, Go's ``gojs``) directly, with a small body.

The patterns are general (names as the toolchains emit them), not tuned to one module.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from kbtool.textutil import LazyPattern

__all__ = [
    "is_runtime_name",
    "is_runtime_import",
    "is_runtime_label",
    "runtime_by_signature",
    "RUNTIME_WRAPPER_MAX_INSTR",
]

# C standard library, POSIX and wasi-libc/musl/Emscripten libc functions (exact names).
_LIBC = frozenset(
    """
abort abs atexit atof atoi atol atoll at_quick_exit bsearch calloc clearerr clock
clock_gettime clock_getres close div exit _exit _Exit fclose fdopen feof ferror fflush fgetc
fgetpos fgets fileno fopen fprintf fputc fputs fread free freopen fscanf fseek fseeko fsetpos
fstat ftell ftello fwrite getc getchar getenv gets gettimeofday gmtime gmtime_r isalnum
isalpha isascii isblank iscntrl isdigit isgraph islower isprint ispunct isspace isupper
isxdigit isatty labs ldiv llabs lldiv localeconv localtime localtime_r longjmp lseek malloc
mblen mbrtowc mbstowcs mbtowc memchr memcmp memcpy memmem memmove memrchr memset mktime
mmap munmap nanosleep open perror posix_memalign aligned_alloc memalign valloc pvalloc
malloc_usable_size printf putc putchar puts qsort qsort_r raise rand rand_r read readv
realloc reallocarray remove rename rewind sbrk scanf setbuf setjmp setlocale setvbuf signal
snprintf sprintf sqrt srand sscanf stat stpcpy stpncpy strcasecmp strcat strchr strchrnul
strcmp strcoll strcpy strcspn strdup strerror strerror_r strftime strlen strncasecmp strncat
strncmp strncpy strndup strnlen strpbrk strrchr strsep strspn strstr strtod strtof strtok
strtok_r strtol strtold strtoll strtoul strtoull strxfrm swprintf sysconf system time
timegm tmpfile tolower toupper towlower towupper ungetc vasprintf asprintf vfprintf vfscanf
vprintf vscanf vsnprintf vsprintf vsscanf wcrtomb wcslen wcscmp wcsncmp wcstombs wctomb
wmemchr wmemcmp wmemcpy wmemmove wmemset write writev pread pwrite getpid getrandom
getentropy arc4random environ_get uselocale newlocale freelocale duplocale
acos acosf acosh asin asinf asinh atan atan2 atan2f atanf atanh cbrt ceil ceilf copysign
cos cosf cosh erf erfc exp exp2 expf expm1 fabs fabsf fdim floor floorf fma fmax fmaxf fmin
fminf fmod fmodf frexp frexpf frexpl hypot ilogb ldexp ldexpf lgamma llrint llround log
log10 log1p log2 logb logf lrint lround modf modff nan nearbyint nextafter pow powf
remainder remquo rint round roundf scalbn scalbnf scalbnl sin sincos sinf sinh sqrtf tan
tanf tanh tgamma trunc truncf fmodl
pthread_create pthread_join pthread_detach pthread_self pthread_exit pthread_once
pthread_key_create pthread_key_delete pthread_getspecific pthread_setspecific
pthread_mutex_init pthread_mutex_lock pthread_mutex_trylock pthread_mutex_unlock
pthread_mutex_destroy pthread_cond_init pthread_cond_wait pthread_cond_timedwait
pthread_cond_signal pthread_cond_broadcast pthread_cond_destroy pthread_attr_init
pthread_attr_destroy pthread_attr_setstacksize pthread_equal pthread_rwlock_rdlock
pthread_rwlock_wrlock pthread_rwlock_unlock sched_yield sem_init sem_wait sem_post
dlmalloc dlfree dlcalloc dlrealloc dlmemalign dlposix_memalign dlmalloc_usable_size
emmalloc_malloc emmalloc_free emmalloc_memalign emmalloc_realloc mi_malloc mi_free
mi_calloc mi_realloc mi_zalloc je_malloc je_free
internal_memalign tmalloc_large tmalloc_small prepend_alloc add_segment sys_alloc sys_trim
release_unused_segments init_top init_bins segment_holding change_mparam_properties
printf_core pop_arg fmt_fp fmt_x fmt_o fmt_u getint out_of_memory
dummy dummy1 dummy_lock dummy_unlock sn_write sw_write
_start _initialize main_argc_argv stackSave stackRestore stackAlloc setThrew getTempRet0
setTempRet0 emscripten_stack_init emscripten_stack_get_free emscripten_stack_get_base
emscripten_stack_get_end emscripten_stack_get_current
""".split()
)

# Prefixes of runtime namespaces, as emitted in name sections (mangled or demangled).
_PREFIXES = (
    "__",  # reserved C identifiers: compiler-rt, libc internals, crt, wasi
    "_Unwind_",
    "_ZN10__cxxabiv1",
    "_ZNSt3__",
    "_ZNKSt3__",
    "_ZNSt",
    "_ZNKSt",
    "_ZSt",
    "_ZTVN10__cxxabiv1",
    "_Znw",
    "_Zna",
    "_Zdl",
    "_Zda",  # libc++/libc++abi, operator new/delete
    "std::__1::",
    "std::__2::",
    "std::__",
    "__cxxabiv1::",
    "operator new",
    "operator delete",
    "emscripten_",
    "_emscripten_",
    "dynCall_",
    "legalstub$",
    "legalfunc$",
    "_embind_",
    "invoke_",
    "$emscripten",
    # Rust: legacy mangling (crate name length-prefixed) and demangled paths
    "_ZN4core",
    "_ZN5alloc",
    "_ZN3std",
    "_ZN17compiler_builtins",
    "_ZN8dlmalloc",
    "_ZN12panic_unwind",
    "_ZN11panic_abort",
    "_ZN9hashbrown",
    "_ZN14rustc_demangle",
    "_ZN3wee",
    "_ZN6wee_alloc",
    "core::",
    "alloc::",
    "std::",
    "compiler_builtins::",
    "dlmalloc::",
    "panic_unwind::",
    "panic_abort::",
    "hashbrown::",
    "rustc_demangle::",
    "wee_alloc::",
    "rust_begin_unwind",
    "rust_panic",
    "rust_oom",
    "__rust_",
    "__rdl_",
    "__rg_",
    "wasm_bindgen::__rt",
    "wasm_bindgen::convert",
    "__wbindgen",
    "__wbg_",
    # Go (gc and TinyGo)
    "runtime.",
    "runtime/",
    "internal/",
    "internal.",
    "syscall/js.",
    "syscall.",
    "sync.",
    "sync/atomic.",
    "reflect.",
    "unicode/utf8.",
    "math/bits.",
    "errors.",
    "gojs.",
    "_rt0_wasm",
    "wasm_export_",
    "go.buildid",
    "go:",
    "tinygo_",
    "(*runtime.",
    # Zig standard library namespaces (zig cc / zig build)
    "compiler_rt.",
    "c.",
    "heap.",
    "mem.",
    "sort.",
    "fmt.",
    "debug.",
    "os.",
    "posix.",
    "start.",
    "builtin.",
    "math.",
    "std.",
    # wasi-libc / crt helpers not covered by "__"
    "_start",
    "_initialize",
)

# Rust v0 mangling: _R + optional instantiating-crate + path; runtime crates by name.
_RUST_V0 = LazyPattern(
    r"_R[A-Za-z]*?C(?:s[0-9A-Za-z]*_)?"
    r"(?:4core|5alloc|3std|17compiler_builtins|8dlmalloc|12panic_unwind|9hashbrown)"
)
_SELF_TY_STRIP = LazyPattern(r"^(?:&|mut |\*const |\*mut |\[|\(|dyn )+")
_RUNTIME_SELF_TY = LazyPattern(
    r"(?:core|alloc|std|compiler_builtins|dlmalloc|panic_unwind|hashbrown)::"
    r"|(?:u8|u16|u32|u64|u128|usize|i8|i16|i32|i64|i128|isize|f32|f64|bool|char|str)\b"
)

# Import modules that belong to the runtime, not to the application.
_RUNTIME_IMPORT_MODULES = (
    "wasi_snapshot_preview1",
    "wasi_unstable",
    "wasi",
    "gojs",
    "go",
    "__wbindgen_placeholder__",
    "__wbindgen_externref_xform__",
)
_RUNTIME_IMPORT_FIELDS = LazyPattern(
    r"^(emscripten_|_emscripten_|__syscall|__wasi|__assert_fail|abort|_abort|__cxa_|_embind_|"
    r"_tzset_js|_mktime_js|_localtime_js|_gmtime_js|_munmap_js|_mmap_js|environ_|fd_|proc_|"
    r"clock_|invoke_|__wbindgen|__wbg_|runtime\.|syscall/js\.|setTempRet0|getTempRet0|"
    r"segfault|alignfault|__handle_stack_overflow|__stack_pointer)"
)

# Labels of oracle modules that are runtime libraries.
_RUNTIME_LABEL = LazyPattern(
    r"(libc|musl|wasi|compiler[-_]?rt|dlmalloc|emmalloc|mimalloc|malloc|libcxx|libc\+\+|"
    r"cxxabi|emscripten|runtime|compiler_builtins|rust[-_]?std|libstd|libcore|tinygo|golang)",
    re.IGNORECASE,
)

RUNTIME_WRAPPER_MAX_INSTR = 64  # a direct caller of a runtime import this small is a wrapper


def is_runtime_name(name: str | None) -> bool:
    """True when ``name`` is a toolchain runtime function name (see the module docstring)."""
    if not name:
        return False
    if name in _LIBC:
        return True
    if name.startswith(_PREFIXES):
        return True
    if name.startswith("_R") and _RUST_V0.match(name):
        return True
    # demangled Rust trait impls "<T as core::fmt::Display>::fmt": the implementing type
    # decides (application types implementing core traits are application code)
    if name.startswith("<"):
        self_ty = _SELF_TY_STRIP.sub("", name[1:])
        return bool(_RUNTIME_SELF_TY.match(self_ty))
    return False


def is_runtime_import(import_name: str | None) -> bool:
    """``"module.field"`` of an import that the runtime (WASI, Emscripten, bindgen, Go) provides."""
    if not import_name:
        return False
    module, _, field = import_name.partition(".")
    if module in _RUNTIME_IMPORT_MODULES or module.startswith("wasi"):
        return True
    return bool(_RUNTIME_IMPORT_FIELDS.match(field))


def is_runtime_label(label: str | None) -> bool:
    """An oracle module whose label says it is a runtime library (libc-ref.wasm, musl, ...)."""
    return bool(label) and bool(_RUNTIME_LABEL.search(label))


def runtime_by_signature(callee_imports: Iterable[str | None], instr_count: int) -> bool:
    """A small function that calls a runtime import directly (``__wasi_fd_write`` wrappers,
    syscall shims, bindgen stubs)."""
    if instr_count > RUNTIME_WRAPPER_MAX_INSTR:
        return False
    return any(is_runtime_import(i) for i in callee_imports)
