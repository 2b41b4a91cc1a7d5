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

int main(int argc, char **argv) {
    (void)argv;
    printf("%d\n", guarded(argc + 3));
    return 0;
}
