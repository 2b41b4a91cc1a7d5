/* Reference program for kbtool.analysis fingerprints: printf family, 64/128-bit helpers. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char buf[256];

/* Debian's wasm32 compiler-rt is built with -fstack-protector; wasi-libc has no guard. */
#ifndef __EMSCRIPTEN__
unsigned long __stack_chk_guard = 0x2f8a11u;
void __stack_chk_fail(void) { abort(); }
#endif

static int my_log(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int r = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    va_start(ap, fmt);
    r += vfprintf(stderr, fmt, ap);
    va_end(ap);
    va_start(ap, fmt);
    r += vprintf(fmt, ap);
    va_end(ap);
    return r;
}

static int cmp(const void *a, const void *b) {
    return *(const int *)a - *(const int *)b;
}

int main(int argc, char **argv) {
    __int128 x = (__int128)argc * (__int128)(long long)(size_t)argv;
    unsigned __int128 u = (unsigned __int128)x;
    long long q = (long long)argc << 40;
    x = x / (argc + 3) + x % (argc + 5);
    u = u / (unsigned)(argc + 7) + u % (unsigned)(argc + 9);
    x = x << (argc & 63) ;
    u = u >> (argc & 31);
    printf("%d %s %lld %f\n", argc, argv[0], (long long)(x + (__int128)u) + q, argc * 1.5);
    fprintf(stderr, "%x\n", argc);
    sprintf(buf, "%s-%d", argv[0], argc);
    snprintf(buf, sizeof buf, "%u", (unsigned)argc);
    puts(buf);
    fputs(buf, stdout);
    putchar(argc);
    my_log("%s %p", buf, (void *)buf);
    int v[8] = {5, 3, argc, 1, 7, 2, 9, 0};
    qsort(v, 8, sizeof v[0], cmp);
    long double ld = (long double)argc * 3.25L;
    printf("%Lf %d\n", ld, v[argc & 7]);
    fflush(stdout);
    return 0;
}
