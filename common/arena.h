/*
 * arena: bump allocation for many short-lived objects freed together (per record, per
 * step). Blocks are chained; arena_reset keeps the first block for reuse. Allocations are
 * aligned to 16 bytes. arena_alloc returns NULL on out-of-memory or size overflow.
 */
#ifndef ACCELTRACE_ARENA_H
#define ACCELTRACE_ARENA_H

#include <stddef.h>

struct arena_block;

struct arena {
    struct arena_block *head; /* newest block first */
    size_t block_size;        /* default block size, bytes */
};

void arena_init(struct arena *a, size_t block_size);
void *arena_alloc(struct arena *a, size_t n);
void *arena_calloc(struct arena *a, size_t count, size_t size);
/* Frees every block but the oldest, which is emptied. */
void arena_reset(struct arena *a);
void arena_release(struct arena *a);

#endif
