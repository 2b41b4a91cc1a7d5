/* kbtool lift prelude: declarations for lifted WebAssembly functions (generated). */
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

/* helpers generated from the opcode table */
extern int32_t i32_trunc_f32_s(float a0);
extern int32_t i32_trunc_f64_s(double a0);
extern int64_t i64_trunc_f32_s(float a0);
extern int64_t i64_trunc_f64_s(double a0);
extern int32_t i32_trunc_sat_f32_s(float a0);
extern int32_t i32_trunc_sat_f32_u(float a0);
extern int32_t i32_trunc_sat_f64_s(double a0);
extern int32_t i32_trunc_sat_f64_u(double a0);
extern int64_t i64_trunc_sat_f32_s(float a0);
extern int64_t i64_trunc_sat_f32_u(float a0);
extern int64_t i64_trunc_sat_f64_s(double a0);
extern int64_t i64_trunc_sat_f64_u(double a0);
extern void memory_init(uint32_t imm0, uint32_t imm1, int32_t a0, int32_t a1, int32_t a2);
extern void data_drop(uint32_t imm0);
extern void table_init(uint32_t imm0, uint32_t imm1, int32_t a0, int32_t a1, int32_t a2);
extern void elem_drop(uint32_t imm0);
extern void table_copy(uint32_t imm0, uint32_t imm1, int32_t a0, int32_t a1, int32_t a2);
extern int32_t table_grow(uint32_t imm0, wasm_ref a0, int32_t a1);
extern int32_t table_size(uint32_t imm0);
extern void table_fill(uint32_t imm0, int32_t a0, wasm_ref a1, int32_t a2);
extern struct R_jj i64_add128(int64_t a0, int64_t a1, int64_t a2, int64_t a3);
extern struct R_jj i64_sub128(int64_t a0, int64_t a1, int64_t a2, int64_t a3);
extern struct R_jj i64_mul_wide_s(int64_t a0, int64_t a1);
extern struct R_jj i64_mul_wide_u(int64_t a0, int64_t a1);
extern v128 v128_load(int32_t a0);
extern v128 v128_load8x8_s(int32_t a0);
extern v128 v128_load8x8_u(int32_t a0);
extern v128 v128_load16x4_s(int32_t a0);
extern v128 v128_load16x4_u(int32_t a0);
extern v128 v128_load32x2_s(int32_t a0);
extern v128 v128_load32x2_u(int32_t a0);
extern v128 v128_load8_splat(int32_t a0);
extern v128 v128_load16_splat(int32_t a0);
extern v128 v128_load32_splat(int32_t a0);
extern v128 v128_load64_splat(int32_t a0);
extern void v128_store(int32_t a0, v128 a1);
extern v128 i8x16_swizzle(v128 a0, v128 a1);
extern v128 i8x16_splat(int32_t a0);
extern v128 i16x8_splat(int32_t a0);
extern v128 i32x4_splat(int32_t a0);
extern v128 i64x2_splat(int64_t a0);
extern v128 f32x4_splat(float a0);
extern v128 f64x2_splat(double a0);
extern int32_t i8x16_extract_lane_s(v128 a0, uint32_t lane);
extern int32_t i8x16_extract_lane_u(v128 a0, uint32_t lane);
extern v128 i8x16_replace_lane(v128 a0, int32_t a1, uint32_t lane);
extern int32_t i16x8_extract_lane_s(v128 a0, uint32_t lane);
extern int32_t i16x8_extract_lane_u(v128 a0, uint32_t lane);
extern v128 i16x8_replace_lane(v128 a0, int32_t a1, uint32_t lane);
extern int32_t i32x4_extract_lane(v128 a0, uint32_t lane);
extern v128 i32x4_replace_lane(v128 a0, int32_t a1, uint32_t lane);
extern int64_t i64x2_extract_lane(v128 a0, uint32_t lane);
extern v128 i64x2_replace_lane(v128 a0, int64_t a1, uint32_t lane);
extern float f32x4_extract_lane(v128 a0, uint32_t lane);
extern v128 f32x4_replace_lane(v128 a0, float a1, uint32_t lane);
extern double f64x2_extract_lane(v128 a0, uint32_t lane);
extern v128 f64x2_replace_lane(v128 a0, double a1, uint32_t lane);
extern v128 i8x16_eq(v128 a0, v128 a1);
extern v128 i8x16_ne(v128 a0, v128 a1);
extern v128 i8x16_lt_s(v128 a0, v128 a1);
extern v128 i8x16_lt_u(v128 a0, v128 a1);
extern v128 i8x16_gt_s(v128 a0, v128 a1);
extern v128 i8x16_gt_u(v128 a0, v128 a1);
extern v128 i8x16_le_s(v128 a0, v128 a1);
extern v128 i8x16_le_u(v128 a0, v128 a1);
extern v128 i8x16_ge_s(v128 a0, v128 a1);
extern v128 i8x16_ge_u(v128 a0, v128 a1);
extern v128 i16x8_eq(v128 a0, v128 a1);
extern v128 i16x8_ne(v128 a0, v128 a1);
extern v128 i16x8_lt_s(v128 a0, v128 a1);
extern v128 i16x8_lt_u(v128 a0, v128 a1);
extern v128 i16x8_gt_s(v128 a0, v128 a1);
extern v128 i16x8_gt_u(v128 a0, v128 a1);
extern v128 i16x8_le_s(v128 a0, v128 a1);
extern v128 i16x8_le_u(v128 a0, v128 a1);
extern v128 i16x8_ge_s(v128 a0, v128 a1);
extern v128 i16x8_ge_u(v128 a0, v128 a1);
extern v128 i32x4_eq(v128 a0, v128 a1);
extern v128 i32x4_ne(v128 a0, v128 a1);
extern v128 i32x4_lt_s(v128 a0, v128 a1);
extern v128 i32x4_lt_u(v128 a0, v128 a1);
extern v128 i32x4_gt_s(v128 a0, v128 a1);
extern v128 i32x4_gt_u(v128 a0, v128 a1);
extern v128 i32x4_le_s(v128 a0, v128 a1);
extern v128 i32x4_le_u(v128 a0, v128 a1);
extern v128 i32x4_ge_s(v128 a0, v128 a1);
extern v128 i32x4_ge_u(v128 a0, v128 a1);
extern v128 f32x4_eq(v128 a0, v128 a1);
extern v128 f32x4_ne(v128 a0, v128 a1);
extern v128 f32x4_lt(v128 a0, v128 a1);
extern v128 f32x4_gt(v128 a0, v128 a1);
extern v128 f32x4_le(v128 a0, v128 a1);
extern v128 f32x4_ge(v128 a0, v128 a1);
extern v128 f64x2_eq(v128 a0, v128 a1);
extern v128 f64x2_ne(v128 a0, v128 a1);
extern v128 f64x2_lt(v128 a0, v128 a1);
extern v128 f64x2_gt(v128 a0, v128 a1);
extern v128 f64x2_le(v128 a0, v128 a1);
extern v128 f64x2_ge(v128 a0, v128 a1);
extern v128 v128_not(v128 a0);
extern v128 v128_and(v128 a0, v128 a1);
extern v128 v128_andnot(v128 a0, v128 a1);
extern v128 v128_or(v128 a0, v128 a1);
extern v128 v128_xor(v128 a0, v128 a1);
extern v128 v128_bitselect(v128 a0, v128 a1, v128 a2);
extern int32_t v128_any_true(v128 a0);
extern v128 v128_load8_lane(int32_t a0, v128 a1, uint32_t lane);
extern v128 v128_load16_lane(int32_t a0, v128 a1, uint32_t lane);
extern v128 v128_load32_lane(int32_t a0, v128 a1, uint32_t lane);
extern v128 v128_load64_lane(int32_t a0, v128 a1, uint32_t lane);
extern void v128_store8_lane(int32_t a0, v128 a1, uint32_t lane);
extern void v128_store16_lane(int32_t a0, v128 a1, uint32_t lane);
extern void v128_store32_lane(int32_t a0, v128 a1, uint32_t lane);
extern void v128_store64_lane(int32_t a0, v128 a1, uint32_t lane);
extern v128 v128_load32_zero(int32_t a0);
extern v128 v128_load64_zero(int32_t a0);
extern v128 f32x4_demote_f64x2_zero(v128 a0);
extern v128 f64x2_promote_low_f32x4(v128 a0);
extern v128 i8x16_abs(v128 a0);
extern v128 i8x16_neg(v128 a0);
extern v128 i8x16_popcnt(v128 a0);
extern int32_t i8x16_all_true(v128 a0);
extern int32_t i8x16_bitmask(v128 a0);
extern v128 i8x16_narrow_i16x8_s(v128 a0, v128 a1);
extern v128 i8x16_narrow_i16x8_u(v128 a0, v128 a1);
extern v128 f32x4_ceil(v128 a0);
extern v128 f32x4_floor(v128 a0);
extern v128 f32x4_trunc(v128 a0);
extern v128 f32x4_nearest(v128 a0);
extern v128 i8x16_shl(v128 a0, int32_t a1);
extern v128 i8x16_shr_s(v128 a0, int32_t a1);
extern v128 i8x16_shr_u(v128 a0, int32_t a1);
extern v128 i8x16_add(v128 a0, v128 a1);
extern v128 i8x16_add_sat_s(v128 a0, v128 a1);
extern v128 i8x16_add_sat_u(v128 a0, v128 a1);
extern v128 i8x16_sub(v128 a0, v128 a1);
extern v128 i8x16_sub_sat_s(v128 a0, v128 a1);
extern v128 i8x16_sub_sat_u(v128 a0, v128 a1);
extern v128 f64x2_ceil(v128 a0);
extern v128 f64x2_floor(v128 a0);
extern v128 i8x16_min_s(v128 a0, v128 a1);
extern v128 i8x16_min_u(v128 a0, v128 a1);
extern v128 i8x16_max_s(v128 a0, v128 a1);
extern v128 i8x16_max_u(v128 a0, v128 a1);
extern v128 f64x2_trunc(v128 a0);
extern v128 i8x16_avgr_u(v128 a0, v128 a1);
extern v128 i16x8_extadd_pairwise_i8x16_s(v128 a0);
extern v128 i16x8_extadd_pairwise_i8x16_u(v128 a0);
extern v128 i32x4_extadd_pairwise_i16x8_s(v128 a0);
extern v128 i32x4_extadd_pairwise_i16x8_u(v128 a0);
extern v128 i16x8_abs(v128 a0);
extern v128 i16x8_neg(v128 a0);
extern v128 i16x8_q15mulr_sat_s(v128 a0, v128 a1);
extern int32_t i16x8_all_true(v128 a0);
extern int32_t i16x8_bitmask(v128 a0);
extern v128 i16x8_narrow_i32x4_s(v128 a0, v128 a1);
extern v128 i16x8_narrow_i32x4_u(v128 a0, v128 a1);
extern v128 i16x8_extend_low_i8x16_s(v128 a0);
extern v128 i16x8_extend_high_i8x16_s(v128 a0);
extern v128 i16x8_extend_low_i8x16_u(v128 a0);
extern v128 i16x8_extend_high_i8x16_u(v128 a0);
extern v128 i16x8_shl(v128 a0, int32_t a1);
extern v128 i16x8_shr_s(v128 a0, int32_t a1);
extern v128 i16x8_shr_u(v128 a0, int32_t a1);
extern v128 i16x8_add(v128 a0, v128 a1);
extern v128 i16x8_add_sat_s(v128 a0, v128 a1);
extern v128 i16x8_add_sat_u(v128 a0, v128 a1);
extern v128 i16x8_sub(v128 a0, v128 a1);
extern v128 i16x8_sub_sat_s(v128 a0, v128 a1);
extern v128 i16x8_sub_sat_u(v128 a0, v128 a1);
extern v128 f64x2_nearest(v128 a0);
extern v128 i16x8_mul(v128 a0, v128 a1);
extern v128 i16x8_min_s(v128 a0, v128 a1);
extern v128 i16x8_min_u(v128 a0, v128 a1);
extern v128 i16x8_max_s(v128 a0, v128 a1);
extern v128 i16x8_max_u(v128 a0, v128 a1);
extern v128 i16x8_avgr_u(v128 a0, v128 a1);
extern v128 i16x8_extmul_low_i8x16_s(v128 a0, v128 a1);
extern v128 i16x8_extmul_high_i8x16_s(v128 a0, v128 a1);
extern v128 i16x8_extmul_low_i8x16_u(v128 a0, v128 a1);
extern v128 i16x8_extmul_high_i8x16_u(v128 a0, v128 a1);
extern v128 i32x4_abs(v128 a0);
extern v128 i32x4_neg(v128 a0);
extern int32_t i32x4_all_true(v128 a0);
extern int32_t i32x4_bitmask(v128 a0);
extern v128 i32x4_extend_low_i16x8_s(v128 a0);
extern v128 i32x4_extend_high_i16x8_s(v128 a0);
extern v128 i32x4_extend_low_i16x8_u(v128 a0);
extern v128 i32x4_extend_high_i16x8_u(v128 a0);
extern v128 i32x4_shl(v128 a0, int32_t a1);
extern v128 i32x4_shr_s(v128 a0, int32_t a1);
extern v128 i32x4_shr_u(v128 a0, int32_t a1);
extern v128 i32x4_add(v128 a0, v128 a1);
extern v128 i32x4_sub(v128 a0, v128 a1);
extern v128 i32x4_mul(v128 a0, v128 a1);
extern v128 i32x4_min_s(v128 a0, v128 a1);
extern v128 i32x4_min_u(v128 a0, v128 a1);
extern v128 i32x4_max_s(v128 a0, v128 a1);
extern v128 i32x4_max_u(v128 a0, v128 a1);
extern v128 i32x4_dot_i16x8_s(v128 a0, v128 a1);
extern v128 i32x4_extmul_low_i16x8_s(v128 a0, v128 a1);
extern v128 i32x4_extmul_high_i16x8_s(v128 a0, v128 a1);
extern v128 i32x4_extmul_low_i16x8_u(v128 a0, v128 a1);
extern v128 i32x4_extmul_high_i16x8_u(v128 a0, v128 a1);
extern v128 i64x2_abs(v128 a0);
extern v128 i64x2_neg(v128 a0);
extern int32_t i64x2_all_true(v128 a0);
extern int32_t i64x2_bitmask(v128 a0);
extern v128 i64x2_extend_low_i32x4_s(v128 a0);
extern v128 i64x2_extend_high_i32x4_s(v128 a0);
extern v128 i64x2_extend_low_i32x4_u(v128 a0);
extern v128 i64x2_extend_high_i32x4_u(v128 a0);
extern v128 i64x2_shl(v128 a0, int32_t a1);
extern v128 i64x2_shr_s(v128 a0, int32_t a1);
extern v128 i64x2_shr_u(v128 a0, int32_t a1);
extern v128 i64x2_add(v128 a0, v128 a1);
extern v128 i64x2_sub(v128 a0, v128 a1);
extern v128 i64x2_mul(v128 a0, v128 a1);
extern v128 i64x2_eq(v128 a0, v128 a1);
extern v128 i64x2_ne(v128 a0, v128 a1);
extern v128 i64x2_lt_s(v128 a0, v128 a1);
extern v128 i64x2_gt_s(v128 a0, v128 a1);
extern v128 i64x2_le_s(v128 a0, v128 a1);
extern v128 i64x2_ge_s(v128 a0, v128 a1);
extern v128 i64x2_extmul_low_i32x4_s(v128 a0, v128 a1);
extern v128 i64x2_extmul_high_i32x4_s(v128 a0, v128 a1);
extern v128 i64x2_extmul_low_i32x4_u(v128 a0, v128 a1);
extern v128 i64x2_extmul_high_i32x4_u(v128 a0, v128 a1);
extern v128 f32x4_abs(v128 a0);
extern v128 f32x4_neg(v128 a0);
extern v128 f32x4_sqrt(v128 a0);
extern v128 f32x4_add(v128 a0, v128 a1);
extern v128 f32x4_sub(v128 a0, v128 a1);
extern v128 f32x4_mul(v128 a0, v128 a1);
extern v128 f32x4_div(v128 a0, v128 a1);
extern v128 f32x4_min(v128 a0, v128 a1);
extern v128 f32x4_max(v128 a0, v128 a1);
extern v128 f32x4_pmin(v128 a0, v128 a1);
extern v128 f32x4_pmax(v128 a0, v128 a1);
extern v128 f64x2_abs(v128 a0);
extern v128 f64x2_neg(v128 a0);
extern v128 f64x2_sqrt(v128 a0);
extern v128 f64x2_add(v128 a0, v128 a1);
extern v128 f64x2_sub(v128 a0, v128 a1);
extern v128 f64x2_mul(v128 a0, v128 a1);
extern v128 f64x2_div(v128 a0, v128 a1);
extern v128 f64x2_min(v128 a0, v128 a1);
extern v128 f64x2_max(v128 a0, v128 a1);
extern v128 f64x2_pmin(v128 a0, v128 a1);
extern v128 f64x2_pmax(v128 a0, v128 a1);
extern v128 i32x4_trunc_sat_f32x4_s(v128 a0);
extern v128 i32x4_trunc_sat_f32x4_u(v128 a0);
extern v128 f32x4_convert_i32x4_s(v128 a0);
extern v128 f32x4_convert_i32x4_u(v128 a0);
extern v128 i32x4_trunc_sat_f64x2_s_zero(v128 a0);
extern v128 i32x4_trunc_sat_f64x2_u_zero(v128 a0);
extern v128 f64x2_convert_low_i32x4_s(v128 a0);
extern v128 f64x2_convert_low_i32x4_u(v128 a0);
extern v128 i8x16_relaxed_swizzle(v128 a0, v128 a1);
extern v128 i32x4_relaxed_trunc_f32x4_s(v128 a0);
extern v128 i32x4_relaxed_trunc_f32x4_u(v128 a0);
extern v128 i32x4_relaxed_trunc_f64x2_s_zero(v128 a0);
extern v128 i32x4_relaxed_trunc_f64x2_u_zero(v128 a0);
extern v128 f32x4_relaxed_madd(v128 a0, v128 a1, v128 a2);
extern v128 f32x4_relaxed_nmadd(v128 a0, v128 a1, v128 a2);
extern v128 f64x2_relaxed_madd(v128 a0, v128 a1, v128 a2);
extern v128 f64x2_relaxed_nmadd(v128 a0, v128 a1, v128 a2);
extern v128 i8x16_relaxed_laneselect(v128 a0, v128 a1, v128 a2);
extern v128 i16x8_relaxed_laneselect(v128 a0, v128 a1, v128 a2);
extern v128 i32x4_relaxed_laneselect(v128 a0, v128 a1, v128 a2);
extern v128 i64x2_relaxed_laneselect(v128 a0, v128 a1, v128 a2);
extern v128 f32x4_relaxed_min(v128 a0, v128 a1);
extern v128 f32x4_relaxed_max(v128 a0, v128 a1);
extern v128 f64x2_relaxed_min(v128 a0, v128 a1);
extern v128 f64x2_relaxed_max(v128 a0, v128 a1);
extern v128 i16x8_relaxed_q15mulr_s(v128 a0, v128 a1);
extern v128 i16x8_relaxed_dot_i8x16_i7x16_s(v128 a0, v128 a1);
extern v128 i32x4_relaxed_dot_i8x16_i7x16_add_s(v128 a0, v128 a1, v128 a2);
extern int32_t memory_atomic_notify(int32_t a0, int32_t a1);
extern int32_t memory_atomic_wait32(int32_t a0, int32_t a1, int64_t a2);
extern int32_t memory_atomic_wait64(int32_t a0, int64_t a1, int64_t a2);
extern void atomic_fence(void);
extern int32_t i32_atomic_load(int32_t a0);
extern int64_t i64_atomic_load(int32_t a0);
extern int32_t i32_atomic_load8_u(int32_t a0);
extern int32_t i32_atomic_load16_u(int32_t a0);
extern int64_t i64_atomic_load8_u(int32_t a0);
extern int64_t i64_atomic_load16_u(int32_t a0);
extern int64_t i64_atomic_load32_u(int32_t a0);
extern void i32_atomic_store(int32_t a0, int32_t a1);
extern void i64_atomic_store(int32_t a0, int64_t a1);
extern void i32_atomic_store8(int32_t a0, int32_t a1);
extern void i32_atomic_store16(int32_t a0, int32_t a1);
extern void i64_atomic_store8(int32_t a0, int64_t a1);
extern void i64_atomic_store16(int32_t a0, int64_t a1);
extern void i64_atomic_store32(int32_t a0, int64_t a1);
extern int32_t i32_atomic_rmw_add(int32_t a0, int32_t a1);
extern int64_t i64_atomic_rmw_add(int32_t a0, int64_t a1);
extern int32_t i32_atomic_rmw8_add_u(int32_t a0, int32_t a1);
extern int32_t i32_atomic_rmw16_add_u(int32_t a0, int32_t a1);
extern int64_t i64_atomic_rmw8_add_u(int32_t a0, int64_t a1);
extern int64_t i64_atomic_rmw16_add_u(int32_t a0, int64_t a1);
extern int64_t i64_atomic_rmw32_add_u(int32_t a0, int64_t a1);
extern int32_t i32_atomic_rmw_sub(int32_t a0, int32_t a1);
extern int64_t i64_atomic_rmw_sub(int32_t a0, int64_t a1);
extern int32_t i32_atomic_rmw8_sub_u(int32_t a0, int32_t a1);
extern int32_t i32_atomic_rmw16_sub_u(int32_t a0, int32_t a1);
extern int64_t i64_atomic_rmw8_sub_u(int32_t a0, int64_t a1);
extern int64_t i64_atomic_rmw16_sub_u(int32_t a0, int64_t a1);
extern int64_t i64_atomic_rmw32_sub_u(int32_t a0, int64_t a1);
extern int32_t i32_atomic_rmw_and(int32_t a0, int32_t a1);
extern int64_t i64_atomic_rmw_and(int32_t a0, int64_t a1);
extern int32_t i32_atomic_rmw8_and_u(int32_t a0, int32_t a1);
extern int32_t i32_atomic_rmw16_and_u(int32_t a0, int32_t a1);
extern int64_t i64_atomic_rmw8_and_u(int32_t a0, int64_t a1);
extern int64_t i64_atomic_rmw16_and_u(int32_t a0, int64_t a1);
extern int64_t i64_atomic_rmw32_and_u(int32_t a0, int64_t a1);
extern int32_t i32_atomic_rmw_or(int32_t a0, int32_t a1);
extern int64_t i64_atomic_rmw_or(int32_t a0, int64_t a1);
extern int32_t i32_atomic_rmw8_or_u(int32_t a0, int32_t a1);
extern int32_t i32_atomic_rmw16_or_u(int32_t a0, int32_t a1);
extern int64_t i64_atomic_rmw8_or_u(int32_t a0, int64_t a1);
extern int64_t i64_atomic_rmw16_or_u(int32_t a0, int64_t a1);
extern int64_t i64_atomic_rmw32_or_u(int32_t a0, int64_t a1);
extern int32_t i32_atomic_rmw_xor(int32_t a0, int32_t a1);
extern int64_t i64_atomic_rmw_xor(int32_t a0, int64_t a1);
extern int32_t i32_atomic_rmw8_xor_u(int32_t a0, int32_t a1);
extern int32_t i32_atomic_rmw16_xor_u(int32_t a0, int32_t a1);
extern int64_t i64_atomic_rmw8_xor_u(int32_t a0, int64_t a1);
extern int64_t i64_atomic_rmw16_xor_u(int32_t a0, int64_t a1);
extern int64_t i64_atomic_rmw32_xor_u(int32_t a0, int64_t a1);
extern int32_t i32_atomic_rmw_xchg(int32_t a0, int32_t a1);
extern int64_t i64_atomic_rmw_xchg(int32_t a0, int64_t a1);
extern int32_t i32_atomic_rmw8_xchg_u(int32_t a0, int32_t a1);
extern int32_t i32_atomic_rmw16_xchg_u(int32_t a0, int32_t a1);
extern int64_t i64_atomic_rmw8_xchg_u(int32_t a0, int64_t a1);
extern int64_t i64_atomic_rmw16_xchg_u(int32_t a0, int64_t a1);
extern int64_t i64_atomic_rmw32_xchg_u(int32_t a0, int64_t a1);
extern int32_t i32_atomic_rmw_cmpxchg(int32_t a0, int32_t a1, int32_t a2);
extern int64_t i64_atomic_rmw_cmpxchg(int32_t a0, int64_t a1, int64_t a2);
extern int32_t i32_atomic_rmw8_cmpxchg_u(int32_t a0, int32_t a1, int32_t a2);
extern int32_t i32_atomic_rmw16_cmpxchg_u(int32_t a0, int32_t a1, int32_t a2);
extern int64_t i64_atomic_rmw8_cmpxchg_u(int32_t a0, int64_t a1, int64_t a2);
extern int64_t i64_atomic_rmw16_cmpxchg_u(int32_t a0, int64_t a1, int64_t a2);
extern int64_t i64_atomic_rmw32_cmpxchg_u(int32_t a0, int64_t a1, int64_t a2);
extern wasm_ref global_atomic_get(int32_t a0, wasm_ref a1);
#endif /* KBTOOL_LIFT_PRELUDE_H */
