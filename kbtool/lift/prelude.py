"""The C prelude (``prelude.h``) that makes every lifted function valid C.

The header is generated from :data:`kbtool.lift.ctable.CTABLE` plus a fixed part; the
shipped file ``kbtool/lift/prelude.h`` is its output (regenerate with
``python -m kbtool.lift.prelude > kbtool/lift/prelude.h``; a test checks it is current).

Contents: ``v128`` (a 16-byte struct), ``wasm_ref``, the linear memory base ``M``
(``extern uint8_t *M``), scalar helpers with wasm semantics as ``static inline`` bodies
(clz/ctz/popcnt, rotates, float min/max/nearest/..., trapping and saturating conversions,
reinterpretations, memory.copy/fill), and declarations (no bodies) of the SIMD, atomic,
table, reference, exception-handling and runtime helpers. Lifted C assumes ``-fwrapv``
(wasm integer arithmetic wraps).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from .ctable import CTABLE, helper, imm_args, lane_arg

_C = {"i32": "int32_t", "i64": "int64_t", "f32": "float", "f64": "double", "v128": "v128"}
_CODE = {"i32": "i", "i64": "j", "f32": "f", "f64": "d", "v128": "v"}

_HEAD = r"""/* kbtool lift prelude: declarations for lifted WebAssembly functions (generated). */
#ifndef KBTOOL_LIFT_PRELUDE_H
#define KBTOOL_LIFT_PRELUDE_H
#include <stdbool.h>
#include <stdint.h>

typedef struct v128 { uint8_t b[16]; } v128;
typedef struct wasm_ref_s *wasm_ref;
typedef void (*wasm_funcptr)(void);

/* linear memory 0: M + address; ADDR(item) is the wasm address of a data item object */
extern uint8_t *M;
#define ADDR(x) ((int32_t)((uint8_t *)&(x) - M))
extern int32_t memory_size(void);
extern int32_t memory_grow(int32_t pages);
__attribute__((noreturn)) static inline void wasm_unreachable(void) { __builtin_trap(); }
__attribute__((noreturn)) static inline void wasm_trap(void) { __builtin_trap(); }

/* integer bit operations */
static inline int32_t i32_clz(int32_t x) { return x ? __builtin_clz((uint32_t)x) : 32; }
static inline int32_t i32_ctz(int32_t x) { return x ? __builtin_ctz((uint32_t)x) : 32; }
static inline int32_t i32_popcnt(int32_t x) { return __builtin_popcount((uint32_t)x); }
static inline int64_t i64_clz(int64_t x) { return x ? __builtin_clzll((uint64_t)x) : 64; }
static inline int64_t i64_ctz(int64_t x) { return x ? __builtin_ctzll((uint64_t)x) : 64; }
static inline int64_t i64_popcnt(int64_t x) { return __builtin_popcountll((uint64_t)x); }
static inline int32_t i32_rotl(int32_t x, int32_t n) { uint32_t u = (uint32_t)x; n &= 31; return (int32_t)((u << n) | (u >> ((32 - n) & 31))); }
static inline int32_t i32_rotr(int32_t x, int32_t n) { uint32_t u = (uint32_t)x; n &= 31; return (int32_t)((u >> n) | (u << ((32 - n) & 31))); }
static inline int64_t i64_rotl(int64_t x, int64_t n) { uint64_t u = (uint64_t)x; n &= 63; return (int64_t)((u << n) | (u >> ((64 - n) & 63))); }
static inline int64_t i64_rotr(int64_t x, int64_t n) { uint64_t u = (uint64_t)x; n &= 63; return (int64_t)((u >> n) | (u << ((64 - n) & 63))); }

/* floating point with wasm semantics */
static inline float f32_abs(float x) { return __builtin_fabsf(x); }
static inline double f64_abs(double x) { return __builtin_fabs(x); }
static inline float f32_ceil(float x) { return __builtin_ceilf(x); }
static inline double f64_ceil(double x) { return __builtin_ceil(x); }
static inline float f32_floor(float x) { return __builtin_floorf(x); }
static inline double f64_floor(double x) { return __builtin_floor(x); }
static inline float f32_trunc(float x) { return __builtin_truncf(x); }
static inline double f64_trunc(double x) { return __builtin_trunc(x); }
static inline float f32_nearest(float x) { return __builtin_nearbyintf(x); }
static inline double f64_nearest(double x) { return __builtin_nearbyint(x); }
static inline float f32_sqrt(float x) { return __builtin_sqrtf(x); }
static inline double f64_sqrt(double x) { return __builtin_sqrt(x); }
static inline float f32_copysign(float x, float y) { return __builtin_copysignf(x, y); }
static inline double f64_copysign(double x, double y) { return __builtin_copysign(x, y); }
static inline float f32_min(float a, float b) { if (a != a || b != b) return a + b; if (a == b) return __builtin_signbit(a) ? a : b; return a < b ? a : b; }
static inline float f32_max(float a, float b) { if (a != a || b != b) return a + b; if (a == b) return __builtin_signbit(a) ? b : a; return a > b ? a : b; }
static inline double f64_min(double a, double b) { if (a != a || b != b) return a + b; if (a == b) return __builtin_signbit(a) ? a : b; return a < b ? a : b; }
static inline double f64_max(double a, double b) { if (a != a || b != b) return a + b; if (a == b) return __builtin_signbit(a) ? b : a; return a > b ? a : b; }

/* reinterpretations and constants given as bits */
static inline float f32_reinterpret_i32(int32_t x) { float f; __builtin_memcpy(&f, &x, 4); return f; }
static inline double f64_reinterpret_i64(int64_t x) { double f; __builtin_memcpy(&f, &x, 8); return f; }
static inline int32_t i32_reinterpret_f32(float x) { int32_t i; __builtin_memcpy(&i, &x, 4); return i; }
static inline int64_t i64_reinterpret_f64(double x) { int64_t i; __builtin_memcpy(&i, &x, 8); return i; }

/* trapping float -> int conversions */
#define KB_TRUNC(name, F, I, lo, hi) static inline I name(F x) { if (!(x > (F)(lo) && x < (F)(hi))) wasm_trap(); return (I)x; }
KB_TRUNC(i32_trunc_f32_s, float, int32_t, -2147483904.0, 2147483648.0)
KB_TRUNC(i32_trunc_f64_s, double, int32_t, -2147483649.0, 2147483648.0)
KB_TRUNC(i64_trunc_f32_s, float, int64_t, -9223373136366403584.0, 9223372036854775808.0)
KB_TRUNC(i64_trunc_f64_s, double, int64_t, -9223372036854777856.0, 9223372036854775808.0)
static inline int32_t i32_trunc_f32_u(float x) { if (!(x > -1.0f && x < 4294967296.0f)) wasm_trap(); return (int32_t)(uint32_t)x; }
static inline int32_t i32_trunc_f64_u(double x) { if (!(x > -1.0 && x < 4294967296.0)) wasm_trap(); return (int32_t)(uint32_t)x; }
static inline int64_t i64_trunc_f32_u(float x) { if (!(x > -1.0f && x < 18446744073709551616.0f)) wasm_trap(); return (int64_t)(uint64_t)x; }
static inline int64_t i64_trunc_f64_u(double x) { if (!(x > -1.0 && x < 18446744073709551616.0)) wasm_trap(); return (int64_t)(uint64_t)x; }

/* saturating float -> int conversions */
#define KB_SAT(name, F, I, T, lo, hi, mn, mx) static inline I name(F x) { if (x != x) return 0; if (!(x > (F)(lo))) return (I)(T)(mn); if (!(x < (F)(hi))) return (I)(T)(mx); return (I)(T)x; }
KB_SAT(i32_trunc_sat_f32_s, float, int32_t, int32_t, -2147483904.0, 2147483648.0, INT32_MIN, INT32_MAX)
KB_SAT(i32_trunc_sat_f64_s, double, int32_t, int32_t, -2147483649.0, 2147483648.0, INT32_MIN, INT32_MAX)
KB_SAT(i32_trunc_sat_f32_u, float, int32_t, uint32_t, -1.0, 4294967296.0, 0, UINT32_MAX)
KB_SAT(i32_trunc_sat_f64_u, double, int32_t, uint32_t, -1.0, 4294967296.0, 0, UINT32_MAX)
KB_SAT(i64_trunc_sat_f32_s, float, int64_t, int64_t, -9223373136366403584.0, 9223372036854775808.0, INT64_MIN, INT64_MAX)
KB_SAT(i64_trunc_sat_f64_s, double, int64_t, int64_t, -9223372036854777856.0, 9223372036854775808.0, INT64_MIN, INT64_MAX)
KB_SAT(i64_trunc_sat_f32_u, float, int64_t, uint64_t, -1.0, 18446744073709551616.0, 0, UINT64_MAX)
KB_SAT(i64_trunc_sat_f64_u, double, int64_t, uint64_t, -1.0, 18446744073709551616.0, 0, UINT64_MAX)

/* bulk memory on memory 0 */
static inline void memory_copy(int32_t d, int32_t s, int32_t n) { __builtin_memmove(M + (uint32_t)d, M + (uint32_t)s, (uint32_t)n); }
static inline void memory_fill(int32_t d, int32_t v, int32_t n) { __builtin_memset(M + (uint32_t)d, v, (uint32_t)n); }

/* multi-value results */
#ifndef KB_R_jj
#define KB_R_jj
struct R_jj { int64_t v0; int64_t v1; };
#endif

/* SIMD constants and shuffles */
extern v128 v128_const(uint32_t w0, uint32_t w1, uint32_t w2, uint32_t w3);
extern v128 i8x16_shuffle(v128 a, v128 b, v128 lanes);

/* tables, references, indirect calls */
extern wasm_funcptr wasm_table_func(uint32_t table, int32_t index);
extern wasm_ref table_get(uint32_t table, int32_t index);
extern void table_set(uint32_t table, int32_t index, wasm_ref value);
#define REF_FUNC(f) ((wasm_ref)(uintptr_t)(f))
#define REF_NULL ((wasm_ref)0)

/* exception handling */
extern int wasm_try(void);
extern int wasm_catch(uint32_t tag);
extern int32_t wasm_exn_i32(uint32_t k);
extern int64_t wasm_exn_i64(uint32_t k);
extern float wasm_exn_f32(uint32_t k);
extern double wasm_exn_f64(uint32_t k);
extern v128 wasm_exn_v128(uint32_t k);
extern wasm_ref wasm_exn_ref(uint32_t k);
__attribute__((noreturn)) extern void wasm_throw(uint32_t tag, ...);
__attribute__((noreturn)) extern void wasm_rethrow(uint32_t depth);
__attribute__((noreturn)) extern void wasm_throw_ref(wasm_ref exn);

/* GC proposal: structs, arrays, i31, casts. A heap type is a type index or an HT_* code
   (the abstract heap types' s33 encodings); nullable is 0 or 1. Packed i8/i16 fields
   read with *_get_s / *_get_u and write with the i32 setters. */
enum { HT_NOEXN = -12, HT_NOFUNC = -13, HT_NOEXTERN = -14, HT_NONE = -15, HT_FUNC = -16,
       HT_EXTERN = -17, HT_ANY = -18, HT_EQ = -19, HT_I31 = -20, HT_STRUCT = -21,
       HT_ARRAY = -22, HT_EXN = -23 };
#define HT_SHARED(h) ((h) - 1000)
extern wasm_ref struct_new(uint32_t type, ...);
extern wasm_ref struct_new_default(uint32_t type);
extern int32_t struct_get_i32(wasm_ref s, uint32_t type, uint32_t field);
extern int64_t struct_get_i64(wasm_ref s, uint32_t type, uint32_t field);
extern float struct_get_f32(wasm_ref s, uint32_t type, uint32_t field);
extern double struct_get_f64(wasm_ref s, uint32_t type, uint32_t field);
extern v128 struct_get_v128(wasm_ref s, uint32_t type, uint32_t field);
extern wasm_ref struct_get_ref(wasm_ref s, uint32_t type, uint32_t field);
extern int32_t struct_get_s(wasm_ref s, uint32_t type, uint32_t field);
extern int32_t struct_get_u(wasm_ref s, uint32_t type, uint32_t field);
extern void struct_set_i32(wasm_ref s, uint32_t type, uint32_t field, int32_t v);
extern void struct_set_i64(wasm_ref s, uint32_t type, uint32_t field, int64_t v);
extern void struct_set_f32(wasm_ref s, uint32_t type, uint32_t field, float v);
extern void struct_set_f64(wasm_ref s, uint32_t type, uint32_t field, double v);
extern void struct_set_v128(wasm_ref s, uint32_t type, uint32_t field, v128 v);
extern void struct_set_ref(wasm_ref s, uint32_t type, uint32_t field, wasm_ref v);
extern wasm_ref array_new_i32(uint32_t type, int32_t v, int32_t n);
extern wasm_ref array_new_i64(uint32_t type, int64_t v, int32_t n);
extern wasm_ref array_new_f32(uint32_t type, float v, int32_t n);
extern wasm_ref array_new_f64(uint32_t type, double v, int32_t n);
extern wasm_ref array_new_v128(uint32_t type, v128 v, int32_t n);
extern wasm_ref array_new_ref(uint32_t type, wasm_ref v, int32_t n);
extern wasm_ref array_new_default(uint32_t type, int32_t n);
extern wasm_ref array_new_fixed(uint32_t type, uint32_t n, ...);
extern wasm_ref array_new_data(uint32_t type, uint32_t seg, int32_t off, int32_t n);
extern wasm_ref array_new_elem(uint32_t type, uint32_t seg, int32_t off, int32_t n);
extern int32_t array_get_i32(wasm_ref a, uint32_t type, int32_t i);
extern int64_t array_get_i64(wasm_ref a, uint32_t type, int32_t i);
extern float array_get_f32(wasm_ref a, uint32_t type, int32_t i);
extern double array_get_f64(wasm_ref a, uint32_t type, int32_t i);
extern v128 array_get_v128(wasm_ref a, uint32_t type, int32_t i);
extern wasm_ref array_get_ref(wasm_ref a, uint32_t type, int32_t i);
extern int32_t array_get_s(wasm_ref a, uint32_t type, int32_t i);
extern int32_t array_get_u(wasm_ref a, uint32_t type, int32_t i);
extern void array_set_i32(wasm_ref a, uint32_t type, int32_t i, int32_t v);
extern void array_set_i64(wasm_ref a, uint32_t type, int32_t i, int64_t v);
extern void array_set_f32(wasm_ref a, uint32_t type, int32_t i, float v);
extern void array_set_f64(wasm_ref a, uint32_t type, int32_t i, double v);
extern void array_set_v128(wasm_ref a, uint32_t type, int32_t i, v128 v);
extern void array_set_ref(wasm_ref a, uint32_t type, int32_t i, wasm_ref v);
extern int32_t array_len(wasm_ref a);
extern void array_fill_i32(wasm_ref a, uint32_t type, int32_t off, int32_t v, int32_t n);
extern void array_fill_i64(wasm_ref a, uint32_t type, int32_t off, int64_t v, int32_t n);
extern void array_fill_f32(wasm_ref a, uint32_t type, int32_t off, float v, int32_t n);
extern void array_fill_f64(wasm_ref a, uint32_t type, int32_t off, double v, int32_t n);
extern void array_fill_v128(wasm_ref a, uint32_t type, int32_t off, v128 v, int32_t n);
extern void array_fill_ref(wasm_ref a, uint32_t type, int32_t off, wasm_ref v, int32_t n);
extern void array_copy(uint32_t dtype, uint32_t stype, wasm_ref d, int32_t doff, wasm_ref s, int32_t soff, int32_t n);
extern void array_init_data(uint32_t type, uint32_t seg, wasm_ref a, int32_t doff, int32_t soff, int32_t n);
extern void array_init_elem(uint32_t type, uint32_t seg, wasm_ref a, int32_t doff, int32_t soff, int32_t n);
extern int32_t ref_test(wasm_ref r, int32_t heaptype, int32_t nullable);
extern wasm_ref ref_cast(wasm_ref r, int32_t heaptype, int32_t nullable);
extern wasm_ref any_convert_extern(wasm_ref r);
extern wasm_ref extern_convert_any(wasm_ref r);
extern wasm_ref ref_i31(int32_t x);
extern int32_t i31_get_s(wasm_ref r);
extern int32_t i31_get_u(wasm_ref r);
"""

_DEFINED = set(re.findall(r"\b(\w+)\s*\(", _HEAD))


def _sig_c(op: int) -> str | None:
    ent = CTABLE[op]
    if ent is None:
        return None
    form, params, results, _text = ent
    if form not in ("call", "mem", "void", "voidmem"):
        return None
    name = helper(op)
    args = [f"uint32_t imm{i}" for i in range(imm_args(op))]
    for i, p in enumerate(params):
        args.append(f"{_C.get(p, 'wasm_ref')} a{i}")
    if lane_arg(op):
        args.append("uint32_t lane")
    if not results:
        ret = "void"
    elif len(results) == 1:
        ret = _C.get(results[0], "wasm_ref")
    else:
        ret = "struct R_" + "".join(_CODE[r] for r in results)
    return f"extern {ret} {name}({', '.join(args) or 'void'});"


def render_prelude() -> str:
    lines = [_HEAD, "/* helpers generated from the opcode table */"]
    for op in range(len(CTABLE)):
        if helper(op) in _DEFINED:
            continue
        s = _sig_c(op)
        if s is not None:
            lines.append(s)
    lines.append("#endif /* KBTOOL_LIFT_PRELUDE_H */")
    return "\n".join(lines) + "\n"


def _names() -> frozenset[str]:
    text = render_prelude()
    found = set(re.findall(r"\b([A-Za-z_]\w*)\s*\(", text))
    found |= set(re.findall(r"#define\s+(\w+)", text))
    found |= {"v128", "wasm_ref", "wasm_funcptr", "M", "KB_TRUNC", "KB_SAT"}
    found |= set(re.findall(r"\b(HT_\w+) =", text))
    return frozenset(found)


#: identifiers the prelude declares at file scope (lifted names must avoid them)
PRELUDE_NAMES = _names()


def prelude_path() -> str:
    """Path of the shipped ``prelude.h``."""

    return str(Path(__file__).with_name("prelude.h"))


if __name__ == "__main__":  # pragma: no cover
    sys.stdout.write(render_prelude())
