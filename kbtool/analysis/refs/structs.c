/* Fixture for kbtool.analysis struct recovery: accesses at constant offsets of one pointer. */
#include <stdint.h>

struct point { int32_t x; int32_t y; double w; int16_t tag; uint8_t flag; };
struct node { struct point *pt; struct node *next; int64_t key; float score; };

__attribute__((noinline)) double point_norm(struct point *p) {
    return (double)p->x * p->x + (double)p->y * p->y + p->w + p->tag + p->flag;
}

__attribute__((noinline)) int64_t node_walk(struct node *n) {
    int64_t s = 0;
    while (n) {
        s += n->key + (int64_t)n->score + (int64_t)point_norm(n->pt) + n->pt->x;
        n = n->next;
    }
    return s;
}

__attribute__((export_name("entry"))) int64_t entry(struct node *n, struct point *p) {
    p->flag = 1;
    return node_walk(n) + (int64_t)point_norm(p);
}
