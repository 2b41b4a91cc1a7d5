/* Reference program for kbtool.analysis fingerprints: setjmp/longjmp helpers. */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>

static jmp_buf env;
static int depth;

static void fail(int code) {
    if (code > 2) longjmp(env, code);
    depth += code;
}

static int guarded(int n) {
    int r = setjmp(env);
    if (r) return -r;
    for (int i = 0; i < n; i++) fail(i);
    return depth;
}

/* a second, nested setjmp site: keeps saveSetjmp/testSetjmp out of line */
static int nested(int n) {
    jmp_buf inner;
    volatile int tries = 0;
    if (setjmp(inner) != 0 || tries > 2) return tries;
    tries++;
    if (n > 1) longjmp(inner, n);
    return guarded(n) + tries;
}

int main(int argc, char **argv) {
    (void)argv;
    printf("%d %d\n", guarded(argc + 3), nested(argc));
    return 0;
}
