#include "common/arena.h"

#include <string.h>

#include "common/mem.h"

struct arena_block {
    struct arena_block *next;
    size_t cap;
    size_t used;
    _Alignas(16) unsigned char data[];
};

void arena_init(struct arena *a, size_t block_size)
{
    a->head = NULL;
    a->block_size = block_size ? block_size : 65536;
}

void *arena_alloc(struct arena *a, size_t n)
{
    size_t need;
    if (!mem_add(n, 15, &need))
        return NULL;
    need &= ~(size_t)15;
    struct arena_block *b = a->head;
    if (!b || b->cap - b->used < need) {
        size_t cap = need > a->block_size ? need : a->block_size, total;
        if (!mem_add(sizeof *b, cap, &total))
            return NULL;
        b = mem_alloc(total);
        if (!b)
            return NULL;
        b->cap = cap;
        b->used = 0;
        b->next = a->head;
        a->head = b;
    }
    void *p = b->data + b->used;
    b->used += need;
    return p;
}

void *arena_calloc(struct arena *a, size_t count, size_t size)
{
    size_t n;
    if (!mem_mul(count, size, &n))
        return NULL;
    void *p = arena_alloc(a, n);
    if (p)
        memset(p, 0, n);
    return p;
}

void arena_reset(struct arena *a)
{
    struct arena_block *b = a->head;
    if (!b)
        return;
    while (b->next) {
        struct arena_block *n = b->next;
        mem_free(b);
        b = n;
    }
    b->used = 0;
    a->head = b;
}

void arena_release(struct arena *a)
{
    arena_reset(a);
    mem_free(a->head);
    a->head = NULL;
}
