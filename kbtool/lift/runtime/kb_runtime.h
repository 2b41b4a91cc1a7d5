/* kbtool runnable runtime: what the generated glue (kb_glue.c) and the runtime share.
   The lifted module's C (module.c) sees only prelude.h; this header is for the glue, the
   runtime (kb_runtime.c) and the WASI shim (kb_wasi.c). */
#ifndef KB_RUNTIME_H
#define KB_RUNTIME_H
#include <stdint.h>
#include <stddef.h>

typedef void (*wasm_funcptr)(void);
typedef struct wasm_ref_s *wasm_ref;

/* ---- provided by the generated glue (kb_glue.c) ---- */
typedef struct { uint32_t memory; uint32_t offset; uint32_t size; const uint8_t *bytes;
                 int passive; } kb_data_segment;
typedef struct { uint32_t table; uint32_t offset; uint32_t count; const wasm_funcptr *funcs;
                 const uint32_t *types; int mode; /* 0 active, 1 passive, 2 declarative */ }
    kb_elem_segment;
typedef struct { uint32_t min; uint32_t max; /* UINT32_MAX: none */ } kb_limits;

extern const int kb_has_memory;
extern const kb_limits kb_memory_limits;           /* in 64 KiB pages */
extern const kb_data_segment kb_data_segments[];
extern const uint32_t kb_num_data_segments;
extern const kb_limits kb_table_limits[];
extern const uint32_t kb_num_tables;
extern const kb_elem_segment kb_elem_segments[];
extern const uint32_t kb_num_elem_segments;
extern const char *const kb_program_name;          /* the module's label, for messages */
void kb_module_start(void);                        /* the start function, then _start */

/* ---- provided by the runtime (kb_runtime.c) ---- */
extern uint8_t *M;
extern uint64_t kb_memory_bytes;                   /* current size of memory 0 */
__attribute__((noreturn)) void kb_trap(const char *what);
__attribute__((noreturn)) void kb_exit(int code);
int kb_mem_ok(uint32_t addr, uint64_t len);       /* addr..addr+len inside memory 0 */
void kb_wasi_init(int argc, char **argv, int nenv, char **env, int ndirs, char **dirs);

/* exit status of a trap, as `wasmtime run` gives it (128 + SIGABRT) */
#define KB_TRAP_EXIT 134
#endif
