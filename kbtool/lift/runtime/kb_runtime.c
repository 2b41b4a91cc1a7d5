/* kbtool runnable runtime: linear memory, tables, traps and the prelude's out-of-line
   helpers for a lifted WebAssembly module, plus main().

   Memory 0 lives in one reservation: 2 GiB of guard below M (the lifted C adds a signed
   int32_t address to M, so addresses >= 2 GiB land there), then the 4 GiB the module may
   grow into, then 4 GiB of guard for static offsets. Only [M, M + size) is readable and
   writable, so an out-of-bounds access faults and becomes a wasm trap, as in wasmtime.
   A trap prints one line to stderr and exits with 134 (128 + SIGABRT, `wasmtime run`'s
   status for a trap). The program runs on a thread with a 256 MiB stack; overflowing it
   is reported as a trap too ("call stack exhausted"). */
#define _GNU_SOURCE
#include "prelude.h"
#include "kb_runtime.h"
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define PAGE 65536ULL
#define BELOW (2ULL << 30)
#define SPAN (4ULL << 30)
#define ABOVE (4ULL << 30)

uint8_t *M;
uint64_t kb_memory_bytes;
static uint8_t *kb_reserve;
static uint32_t kb_memory_max_pages;

static void kb_write_err(const char *s) {
  size_t n = strlen(s);
  while (n) {
    ssize_t w = write(2, s, n);
    if (w <= 0) return;
    s += w; n -= (size_t)w;
  }
}

void kb_trap(const char *what) {
  kb_write_err("Error: wasm trap: ");
  kb_write_err(what);
  kb_write_err("\n");
  _exit(KB_TRAP_EXIT);
}

void kb_exit(int code) { _exit(code); }

int kb_mem_ok(uint32_t addr, uint64_t len) {
  return (uint64_t)addr + len <= kb_memory_bytes;
}

/* ---------------------------------------------------------------- memory */

int32_t memory_size(void) { return (int32_t)(kb_memory_bytes / PAGE); }

int32_t memory_grow(int32_t pages) {
  uint64_t old = kb_memory_bytes / PAGE, add = (uint32_t)pages;
  if (!kb_has_memory) return -1;
  if (old + add > kb_memory_max_pages) return -1;
  if (add) {
    if (mprotect(M + kb_memory_bytes, add * PAGE, PROT_READ | PROT_WRITE) != 0) return -1;
    kb_memory_bytes += add * PAGE;
  }
  return (int32_t)old;
}

static void kb_memory_init_all(void) {
  kb_memory_max_pages = 65536;
  if (kb_has_memory && kb_memory_limits.max != UINT32_MAX && kb_memory_limits.max < 65536)
    kb_memory_max_pages = kb_memory_limits.max;
  kb_reserve = mmap(NULL, BELOW + SPAN + ABOVE, PROT_NONE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (kb_reserve == MAP_FAILED) {
    kb_write_err("kbtool runtime: cannot reserve the linear memory (10 GiB of address space)\n");
    _exit(1);
  }
  M = kb_reserve + BELOW;
  kb_memory_bytes = 0;
  if (kb_has_memory && kb_memory_limits.min && memory_grow((int32_t)kb_memory_limits.min) < 0) {
    kb_write_err("kbtool runtime: cannot map the initial linear memory\n");
    _exit(1);
  }
  for (uint32_t i = 0; i < kb_num_data_segments; i++) {
    const kb_data_segment *d = &kb_data_segments[i];
    if (d->passive) continue;
    if (!kb_mem_ok(d->offset, d->size)) kb_trap("out of bounds memory access (data segment)");
    memcpy(M + d->offset, d->bytes, d->size);
    data_drop(i);  /* an active segment is dropped once applied */
  }
}

/* ---------------------------------------------------------------- bulk memory */

static unsigned char *kb_dropped_data;

void memory_init(uint32_t seg, uint32_t mem, int32_t d, int32_t s, int32_t n) {
  (void)mem;
  uint64_t size = seg < kb_num_data_segments && !(kb_dropped_data && kb_dropped_data[seg])
                      ? kb_data_segments[seg].size : 0;
  if ((uint64_t)(uint32_t)s + (uint32_t)n > size || !kb_mem_ok((uint32_t)d, (uint32_t)n))
    kb_trap("out of bounds memory access");
  if (n) memcpy(M + (uint32_t)d, kb_data_segments[seg].bytes + (uint32_t)s, (uint32_t)n);
}

void data_drop(uint32_t seg) {
  if (!kb_dropped_data) kb_dropped_data = calloc(kb_num_data_segments + 1, 1);
  if (seg < kb_num_data_segments) kb_dropped_data[seg] = 1;
}

/* ---------------------------------------------------------------- tables */

typedef struct { wasm_funcptr *elems; uint32_t size, max; } kb_table;
static kb_table *kb_tables;
static unsigned char *kb_dropped_elems;

static kb_table *kb_tab(uint32_t t) {
  if (t >= kb_num_tables) kb_trap("undefined table");
  return &kb_tables[t];
}

static void kb_tables_init(void) {
  kb_tables = calloc(kb_num_tables + 1, sizeof *kb_tables);
  kb_dropped_elems = calloc(kb_num_elem_segments + 1, 1);
  for (uint32_t t = 0; t < kb_num_tables; t++) {
    kb_tables[t].size = kb_table_limits[t].min;
    kb_tables[t].max = kb_table_limits[t].max;
    kb_tables[t].elems = calloc(kb_tables[t].size + 1, sizeof(wasm_funcptr));
  }
  for (uint32_t i = 0; i < kb_num_elem_segments; i++) {
    const kb_elem_segment *e = &kb_elem_segments[i];
    if (e->mode != 0) { if (e->mode == 2) kb_dropped_elems[i] = 1; continue; }
    kb_table *t = kb_tab(e->table);
    if ((uint64_t)e->offset + e->count > t->size) kb_trap("out of bounds table access (element segment)");
    memcpy(t->elems + e->offset, e->funcs, e->count * sizeof(wasm_funcptr));
    kb_dropped_elems[i] = 1;
  }
}

wasm_funcptr wasm_table_func(uint32_t table, int32_t index) {
  kb_table *t = kb_tab(table);
  if ((uint32_t)index >= t->size) kb_trap("undefined element: out of bounds table access");
  wasm_funcptr f = t->elems[(uint32_t)index];
  if (!f) kb_trap("uninitialized element");
  return f;
}

wasm_ref table_get(uint32_t table, int32_t index) {
  kb_table *t = kb_tab(table);
  if ((uint32_t)index >= t->size) kb_trap("out of bounds table access");
  return (wasm_ref)t->elems[(uint32_t)index];
}

void table_set(uint32_t table, int32_t index, wasm_ref value) {
  kb_table *t = kb_tab(table);
  if ((uint32_t)index >= t->size) kb_trap("out of bounds table access");
  t->elems[(uint32_t)index] = (wasm_funcptr)value;
}

int32_t table_size(uint32_t table) { return (int32_t)kb_tab(table)->size; }

int32_t table_grow(uint32_t table, wasm_ref init, int32_t n) {
  kb_table *t = kb_tab(table);
  uint64_t old = t->size, want = old + (uint32_t)n;
  if (want > t->max || want > 10000000) return -1;
  wasm_funcptr *e = realloc(t->elems, (want + 1) * sizeof *e);
  if (!e) return -1;
  for (uint64_t i = old; i < want; i++) e[i] = (wasm_funcptr)init;
  t->elems = e;
  t->size = (uint32_t)want;
  return (int32_t)old;
}

void table_fill(uint32_t table, int32_t i, wasm_ref v, int32_t n) {
  kb_table *t = kb_tab(table);
  if ((uint64_t)(uint32_t)i + (uint32_t)n > t->size) kb_trap("out of bounds table access");
  for (uint32_t k = 0; k < (uint32_t)n; k++) t->elems[(uint32_t)i + k] = (wasm_funcptr)v;
}

void table_copy(uint32_t dt, uint32_t st, int32_t d, int32_t s, int32_t n) {
  kb_table *a = kb_tab(dt), *b = kb_tab(st);
  if ((uint64_t)(uint32_t)d + (uint32_t)n > a->size || (uint64_t)(uint32_t)s + (uint32_t)n > b->size)
    kb_trap("out of bounds table access");
  memmove(a->elems + (uint32_t)d, b->elems + (uint32_t)s, (uint32_t)n * sizeof(wasm_funcptr));
}

void table_init(uint32_t seg, uint32_t table, int32_t d, int32_t s, int32_t n) {
  kb_table *t = kb_tab(table);
  uint64_t count = seg < kb_num_elem_segments && !kb_dropped_elems[seg] ? kb_elem_segments[seg].count : 0;
  if ((uint64_t)(uint32_t)s + (uint32_t)n > count || (uint64_t)(uint32_t)d + (uint32_t)n > t->size)
    kb_trap("out of bounds table access");
  if (n) memcpy(t->elems + (uint32_t)d, kb_elem_segments[seg].funcs + (uint32_t)s,
                (uint32_t)n * sizeof(wasm_funcptr));
}

void elem_drop(uint32_t seg) {
  if (seg < kb_num_elem_segments) kb_dropped_elems[seg] = 1;
}

/* ---------------------------------------------------------------- wide arithmetic */

struct R_jj i64_add128(int64_t al, int64_t ah, int64_t bl, int64_t bh) {
  unsigned __int128 a = ((unsigned __int128)(uint64_t)ah << 64) | (uint64_t)al;
  unsigned __int128 b = ((unsigned __int128)(uint64_t)bh << 64) | (uint64_t)bl;
  unsigned __int128 r = a + b;
  return (struct R_jj){(int64_t)(uint64_t)r, (int64_t)(uint64_t)(r >> 64)};
}
struct R_jj i64_sub128(int64_t al, int64_t ah, int64_t bl, int64_t bh) {
  unsigned __int128 a = ((unsigned __int128)(uint64_t)ah << 64) | (uint64_t)al;
  unsigned __int128 b = ((unsigned __int128)(uint64_t)bh << 64) | (uint64_t)bl;
  unsigned __int128 r = a - b;
  return (struct R_jj){(int64_t)(uint64_t)r, (int64_t)(uint64_t)(r >> 64)};
}
struct R_jj i64_mul_wide_s(int64_t a, int64_t b) {
  __int128 r = (__int128)a * b;
  return (struct R_jj){(int64_t)(uint64_t)r, (int64_t)(uint64_t)((unsigned __int128)r >> 64)};
}
struct R_jj i64_mul_wide_u(int64_t a, int64_t b) {
  unsigned __int128 r = (unsigned __int128)(uint64_t)a * (uint64_t)b;
  return (struct R_jj){(int64_t)(uint64_t)r, (int64_t)(uint64_t)(r >> 64)};
}

/* ---------------------------------------------------------------- atomics (one thread) */

static inline uint8_t *kb_atomic_at(int32_t a, uint32_t size) {
  if (!kb_mem_ok((uint32_t)a, size)) kb_trap("out of bounds memory access");
  if ((uint32_t)a & (size - 1)) kb_trap("unaligned atomic");
  return M + (uint32_t)a;
}
#define KB_ALOAD(name, R, T) R name(int32_t a) { return (R)*(T *)kb_atomic_at(a, sizeof(T)); }
#define KB_ASTORE(name, V, T) void name(int32_t a, V v) { *(T *)kb_atomic_at(a, sizeof(T)) = (T)v; }
KB_ALOAD(i32_atomic_load, int32_t, uint32_t)
KB_ALOAD(i64_atomic_load, int64_t, uint64_t)
KB_ALOAD(i32_atomic_load8_u, int32_t, uint8_t)
KB_ALOAD(i32_atomic_load16_u, int32_t, uint16_t)
KB_ALOAD(i64_atomic_load8_u, int64_t, uint8_t)
KB_ALOAD(i64_atomic_load16_u, int64_t, uint16_t)
KB_ALOAD(i64_atomic_load32_u, int64_t, uint32_t)
KB_ASTORE(i32_atomic_store, int32_t, uint32_t)
KB_ASTORE(i64_atomic_store, int64_t, uint64_t)
KB_ASTORE(i32_atomic_store8, int32_t, uint8_t)
KB_ASTORE(i32_atomic_store16, int32_t, uint16_t)
KB_ASTORE(i64_atomic_store8, int64_t, uint8_t)
KB_ASTORE(i64_atomic_store16, int64_t, uint16_t)
KB_ASTORE(i64_atomic_store32, int64_t, uint32_t)
#define KB_RMW(op, EXPR)                                                                     \
  int32_t i32_atomic_rmw_##op(int32_t a, int32_t v) { uint32_t *p = (uint32_t *)kb_atomic_at(a, 4); uint32_t o = *p, w = (uint32_t)v; *p = EXPR; return (int32_t)o; } \
  int64_t i64_atomic_rmw_##op(int32_t a, int64_t v) { uint64_t *p = (uint64_t *)kb_atomic_at(a, 8); uint64_t o = *p, w = (uint64_t)v; *p = EXPR; return (int64_t)o; } \
  int32_t i32_atomic_rmw8_##op##_u(int32_t a, int32_t v) { uint8_t *p = kb_atomic_at(a, 1); uint8_t o = *p, w = (uint8_t)v; *p = (uint8_t)(EXPR); return o; } \
  int32_t i32_atomic_rmw16_##op##_u(int32_t a, int32_t v) { uint16_t *p = (uint16_t *)kb_atomic_at(a, 2); uint16_t o = *p, w = (uint16_t)v; *p = (uint16_t)(EXPR); return o; } \
  int64_t i64_atomic_rmw8_##op##_u(int32_t a, int64_t v) { uint8_t *p = kb_atomic_at(a, 1); uint8_t o = *p, w = (uint8_t)v; *p = (uint8_t)(EXPR); return o; } \
  int64_t i64_atomic_rmw16_##op##_u(int32_t a, int64_t v) { uint16_t *p = (uint16_t *)kb_atomic_at(a, 2); uint16_t o = *p, w = (uint16_t)v; *p = (uint16_t)(EXPR); return o; } \
  int64_t i64_atomic_rmw32_##op##_u(int32_t a, int64_t v) { uint32_t *p = (uint32_t *)kb_atomic_at(a, 4); uint32_t o = *p, w = (uint32_t)v; *p = (uint32_t)(EXPR); return o; }
KB_RMW(add, o + w)
KB_RMW(sub, o - w)
KB_RMW(and, o & w)
KB_RMW(or, o | w)
KB_RMW(xor, o ^ w)
KB_RMW(xchg, w)
#define KB_CMPXCHG(name, R, V, T, n)                                                         \
  R name(int32_t a, V e, V r) { T *p = (T *)kb_atomic_at(a, n); T o = *p; if (o == (T)e) *p = (T)r; return (R)o; }
KB_CMPXCHG(i32_atomic_rmw_cmpxchg, int32_t, int32_t, uint32_t, 4)
KB_CMPXCHG(i64_atomic_rmw_cmpxchg, int64_t, int64_t, uint64_t, 8)
KB_CMPXCHG(i32_atomic_rmw8_cmpxchg_u, int32_t, int32_t, uint8_t, 1)
KB_CMPXCHG(i32_atomic_rmw16_cmpxchg_u, int32_t, int32_t, uint16_t, 2)
KB_CMPXCHG(i64_atomic_rmw8_cmpxchg_u, int64_t, int64_t, uint8_t, 1)
KB_CMPXCHG(i64_atomic_rmw16_cmpxchg_u, int64_t, int64_t, uint16_t, 2)
KB_CMPXCHG(i64_atomic_rmw32_cmpxchg_u, int64_t, int64_t, uint32_t, 4)
void atomic_fence(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
int32_t memory_atomic_notify(int32_t a, int32_t n) { (void)kb_atomic_at(a, 4); (void)n; return 0; }
int32_t memory_atomic_wait32(int32_t a, int32_t e, int64_t t) {
  /* one thread: nobody can wake us; wasmtime traps on an unshared memory */
  (void)kb_atomic_at(a, 4); (void)e; (void)t;
  kb_trap("atomic wait on non-shared memory");
}
int32_t memory_atomic_wait64(int32_t a, int64_t e, int64_t t) {
  (void)kb_atomic_at(a, 8); (void)e; (void)t;
  kb_trap("atomic wait on non-shared memory");
}

/* ---------------------------------------------------------------- traps from signals */

static void kb_on_signal(int sig, siginfo_t *info, void *ctx) {
  (void)ctx;
  if (sig == SIGSEGV || sig == SIGBUS) {
    uint8_t *a = (uint8_t *)info->si_addr;
    if (a >= kb_reserve && a < kb_reserve + BELOW + SPAN + ABOVE)
      kb_trap("out of bounds memory access");
    kb_trap("call stack exhausted (or a host fault)");
  }
  if (sig == SIGFPE) kb_trap("integer divide by zero or integer overflow");
  if (sig == SIGILL || sig == SIGTRAP) kb_trap("wasm `unreachable` instruction executed");
  kb_trap("unexpected signal");
}

static void kb_altstack(void) {
  static __thread int done;
  if (done) return;
  stack_t ss;
  ss.ss_size = 1 << 16;
  ss.ss_sp = malloc(ss.ss_size);
  ss.ss_flags = 0;
  if (ss.ss_sp) sigaltstack(&ss, NULL);
  done = 1;
}

static void kb_signals(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = kb_on_signal;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP};
  for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++) sigaction(sigs[i], &sa, NULL);
  signal(SIGPIPE, SIG_IGN);  /* a closed pipe is EPIPE from fd_write, as in wasmtime */
}

/* ---------------------------------------------------------------- main */

static void *kb_run(void *arg) {
  (void)arg;
  kb_altstack();
  kb_module_start();
  _exit(0);
  return NULL;
}

static void kb_usage(void) {
  kb_write_err("usage: PROGRAM [--dir HOST[::GUEST]]... [--env NAME[=VALUE]]... [--argv0 NAME] [--] [ARGS...]\n"
               "Runs the lifted module like `wasmtime run [--dir ...] [--env ...] MODULE ARGS...`.\n");
}

int main(int argc, char **argv) {
  char **dirs = calloc((size_t)argc + 1, sizeof *dirs), **env = calloc((size_t)argc + 1, sizeof *env);
  int ndirs = 0, nenv = 0, i = 1;
  const char *argv0 = NULL;
  for (; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--")) { i++; break; }
    if (!strcmp(a, "--dir") || !strcmp(a, "--env") || !strcmp(a, "--argv0")) {
      if (i + 1 >= argc) { kb_usage(); return 2; }
      if (a[2] == 'd') dirs[ndirs++] = argv[++i];
      else if (a[2] == 'e') env[nenv++] = argv[++i];
      else argv0 = argv[++i];
      continue;
    }
    if (!strncmp(a, "--dir=", 6)) { dirs[ndirs++] = (char *)a + 6; continue; }
    if (!strncmp(a, "--env=", 6)) { env[nenv++] = (char *)a + 6; continue; }
    if (!strcmp(a, "--kb-help")) { kb_usage(); return 0; }
    break;
  }
  /* the program's argv: argv0 (default: this program's name) then the rest */
  int pargc = argc - i + 1;
  char **pargv = calloc((size_t)pargc + 1, sizeof *pargv);
  pargv[0] = (char *)(argv0 ? argv0 : argv[0]);
  for (int k = 1; k < pargc; k++) pargv[k] = argv[i + k - 1];
  kb_signals();
  kb_memory_init_all();
  kb_tables_init();
  kb_wasi_init(pargc, pargv, nenv, env, ndirs, dirs);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, (size_t)256 << 20);
  pthread_t th;
  if (pthread_create(&th, &attr, kb_run, NULL) != 0) {
    kb_altstack();
    kb_module_start();
    return 0;
  }
  pthread_join(th, NULL);
  return 0;
}
