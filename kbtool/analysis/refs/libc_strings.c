/* Reference program for kbtool.analysis fingerprints: string and memory functions.
 * Sizes come from argc/argv so the compiler keeps real calls instead of inlining. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <ctype.h>
#include <errno.h>

static volatile size_t sink;

int main(int argc, char **argv) {
    size_t n = (size_t)argc * 7u;
    char *a = malloc(n + 64), *b = calloc(n + 64, 1);
    memset(a, argc, n);
    memcpy(b, a, n);
    memmove(b + 1, b, n);
    sink += (size_t)memcmp(a, b, n);
    sink += strlen(argv[0]) + strnlen(argv[0], n);
    sink += (size_t)strcmp(argv[0], a) + (size_t)strncmp(argv[0], b, n);
    sink += (size_t)strcasecmp(argv[0], a) + (size_t)strncasecmp(a, b, n);
    sink += (size_t)(strchr(argv[0], argc) - argv[0]) + (size_t)(strrchr(a, argc) - a);
    sink += (size_t)(memchr(a, argc, n) != 0) + (size_t)(strstr(a, b) != 0);
    strcpy(a, argv[0]);
    strncpy(b, argv[0], n);
    strcat(a, b);
    strncat(a, b, n);
    char *d = strdup(a);
    sink += strspn(d, b) + strcspn(d, a) + (size_t)(strpbrk(d, a) != 0);
    sink += (size_t)atoi(d) + (size_t)strtol(d, 0, 10) + (size_t)strtoul(b, 0, 16);
    sink += (size_t)toupper(argc) + (size_t)tolower(argc) + (size_t)isalpha(argc);
    errno = argc;
    sink += (size_t)errno;
    d = realloc(d, n * 3 + 1);
    void *al = aligned_alloc(64, 128);
    void *pm = 0;
    sink += (size_t)posix_memalign(&pm, 32, n + 8);
    free(pm);
    free(al);
    free(d);
    free(a);
    free(b);
    return (int)(sink & 1);
}
