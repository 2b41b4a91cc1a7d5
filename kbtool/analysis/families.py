"""Known runtime/libc names, their families, and name canonicalisation for comparisons.

A family groups names for measurement and review (``memory``, ``string``, ``alloc``...).
``canonical`` maps toolchain spellings of one function to one key: Emscripten's
``dlmalloc`` is ``malloc``, Zig's ``c.string.strlen`` / ``compiler_rt.memcmp`` are
``strlen`` / ``memcmp``, LLVM's ``.1`` suffixes of local duplicates are dropped.
"""

from __future__ import annotations

import re

FAMILIES: dict[str, tuple[str, ...]] = {
    "memory": ("memcpy", "memmove", "memset", "memcmp", "memchr", "__memcpy", "__memset",
               "emscripten_memcpy_big"),
    "string": ("strlen", "strnlen", "strcmp", "strncmp", "strchr", "__strchrnul", "strrchr",
               "strcpy", "__stpcpy", "strncpy", "__stpncpy", "strcat", "strncat", "strdup",
               "strspn", "strcspn", "strpbrk", "strstr", "strcasecmp", "strncasecmp",
               "__memrchr", "twobyte_strstr", "threebyte_strstr", "fourbyte_strstr",
               "twoway_strstr", "toupper", "tolower", "isalpha", "isdigit", "isspace"),
    "alloc": ("malloc", "free", "calloc", "realloc", "aligned_alloc", "posix_memalign",
              "memalign", "internal_memalign", "dispose_chunk", "try_realloc_chunk", "sbrk",
              "init_mparams", "emmalloc_malloc", "emmalloc_free", "__libc_malloc",
              "__libc_free", "__libc_calloc", "__rust_alloc", "__rust_dealloc",
              "__rust_realloc", "__rust_alloc_zeroed"),
    "errno": ("__errno_location", "__wasi_syscall_ret", "strerror", "__strerror_l"),
    "stack": ("stackSave", "stackRestore", "stackAlloc", "emscripten_stack_get_current",
              "emscripten_stack_get_base", "emscripten_stack_get_end",
              "emscripten_stack_init", "emscripten_stack_set_limits",
              "emscripten_stack_get_free", "_emscripten_stack_restore",
              "_emscripten_stack_alloc"),
    "init": ("__wasm_call_ctors", "__wasm_call_dtors", "_start", "_initialize",
             "__wasm_init_memory", "__wasm_init_tls", "__main_void", "__original_main"),
    "setjmp": ("setjmp", "longjmp", "saveSetjmp", "testSetjmp", "emscripten_longjmp",
               "__wasm_setjmp", "__wasm_setjmp_test", "__wasm_longjmp", "setThrew"),
    "lock": ("__lock", "__unlock", "__lockfile", "__unlockfile", "__ofl_lock",
             "__ofl_unlock", "__pthread_mutex_lock", "__pthread_mutex_unlock",
             "__pthread_mutex_trylock", "pthread_mutex_lock", "pthread_mutex_unlock"),
    "printf": ("printf", "fprintf", "sprintf", "snprintf", "vprintf", "vfprintf",
               "vsprintf", "vsnprintf", "siprintf", "fiprintf", "printf_core", "puts",
               "fputs", "putchar", "fputc", "fwrite", "__fwritex", "__towrite",
               "__overflow", "fflush", "__stdio_write", "out", "pad", "pop_arg", "fmt_fp",
               "fmt_u", "fmt_x", "fmt_o", "getint", "sn_write", "wctomb", "wcrtomb",
               "frexp", "frexpl", "__signbitl", "__fpclassifyl", "qsort", "qsort_r"),
    "int64": ("__multi3", "__divti3", "__udivti3", "__modti3", "__umodti3", "__udivmodti4",
              "__lshrti3", "__ashlti3", "__ashrti3", "__muldi3", "__divdi3", "__udivdi3",
              "__moddi3", "__umoddi3", "__mulodi4", "__muloti4", "__multf3", "__addtf3",
              "__subtf3", "__divtf3", "__extenddftf2", "__trunctfdf2", "__fixtfsi",
              "__fixunstfsi", "__floatsitf", "__floatunsitf", "__letf2", "__getf2",
              "__unordtf2", "__eqtf2", "__netf2", "__lttf2", "__gttf2"),
    "thread": ("__pthread_create", "pthread_create", "__pthread_join", "pthread_join",
               "__pthread_self", "pthread_self", "emscripten_futex_wait",
               "emscripten_futex_wake", "__wasi_thread_start", "wasi_thread_start",
               "_emscripten_thread_init", "__emscripten_thread_main", "emscripten_tls_init",
               "_emscripten_thread_exit", "__timedwait", "__timedwait_cp", "__wait",
               "__wake", "a_cas", "a_swap", "a_fetch_add", "a_inc", "a_dec"),
}

_FAMILY_OF = {n: fam for fam, names in FAMILIES.items() for n in names}

# one canonical key per function whatever the toolchain calls it
_ALIASES = {
    "dlmalloc": "malloc", "dlfree": "free", "dlcalloc": "calloc", "dlrealloc": "realloc",
    "dlmemalign": "memalign", "dlposix_memalign": "posix_memalign",
    "emmalloc_malloc": "malloc", "emmalloc_free": "free", "__libc_malloc": "malloc",
    "__libc_free": "free", "__libc_calloc": "calloc", "__libc_realloc": "realloc",
    "__pthread_create": "pthread_create", "__pthread_join": "pthread_join",
    "__pthread_mutex_lock": "pthread_mutex_lock",
    "__pthread_mutex_unlock": "pthread_mutex_unlock", "__pthread_self": "pthread_self",
    "__stpcpy": "stpcpy", "__stpncpy": "stpncpy", "__memrchr": "memrchr",
    "_emscripten_stack_restore": "stackRestore", "_emscripten_stack_alloc": "stackAlloc",
}

_ZIG_PREFIX = re.compile(r"^(?:c\.[a-z_]+\.|compiler_rt\.)")
_DUP_SUFFIX = re.compile(r"\.\d+$")


def canonical(name: str) -> str:
    """The comparison key of a function name (toolchain spellings folded)."""
    n = _ZIG_PREFIX.sub("", name)
    n = _DUP_SUFFIX.sub("", n)
    return _ALIASES.get(n, n)


def family_of(name: str) -> str:
    """The family of a (possibly toolchain-spelled) name; ``libc`` for other libc code."""
    c = canonical(name)
    return _FAMILY_OF.get(c) or _FAMILY_OF.get(name) or "libc"
