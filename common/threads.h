/*
 * threads: a fixed pool of pthreads for fork-join parallel loops.
 *
 * pool_for(p, n, fn, ctx) splits [0, n) into one contiguous chunk per thread (the caller's
 * thread works too) and returns when all chunks are done. Chunks are deterministic: chunk
 * w covers [n*w/T, n*(w+1)/T), so results that are combined per chunk in order do not
 * depend on timing. A pool of 1 thread runs everything on the caller. Not reentrant: one
 * pool_for at a time per pool. threads_default() is the number of online CPUs, or
 * ACCELTRACE_THREADS when set.
 */
#ifndef ACCELTRACE_THREADS_H
#define ACCELTRACE_THREADS_H

#include <stdatomic.h>
#include <stddef.h>

struct thread_pool;

/* fn processes items [begin, end) as worker `worker` (0 = caller). */
typedef void (*pool_fn)(void *ctx, size_t begin, size_t end, int worker);

/* New pool of n_threads (>= 1) threads including the caller; NULL on failure. */
struct thread_pool *pool_new(int n_threads);
void pool_free(struct thread_pool *p);
int pool_size(const struct thread_pool *p);
/* Runs fn over [0, n) split into pool_size() chunks; blocks until done. */
void pool_for(struct thread_pool *p, size_t n, pool_fn fn, void *ctx);

/* A barrier for the workers of one pool_for of pool_size() items (every worker must reach
 * each wait): it spins briefly, then yields the CPU while it waits. */
struct pool_barrier {
    atomic_uint arrived;
    atomic_uint phase;
    unsigned n;
};
void pool_barrier_init(struct pool_barrier *b, const struct thread_pool *p);
void pool_barrier_wait(struct pool_barrier *b);

int threads_default(void);

#endif
