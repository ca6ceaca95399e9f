#include "common/threads.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/mem.h"

struct worker_arg {
    struct thread_pool *pool;
    int id;
};

struct thread_pool {
    int n;           /* threads including the caller */
    pthread_t *tids; /* n - 1 workers */
    struct worker_arg *args;
    pthread_mutex_t mu;
    pthread_cond_t go, done;
    unsigned long gen; /* bumped for every pool_for */
    int pending;       /* workers still running this generation */
    int quit;
    pool_fn fn;
    void *ctx;
    size_t items;
};

static void run_chunk(struct thread_pool *p, int w)
{
    size_t b = p->items * (size_t)w / (size_t)p->n;
    size_t e = p->items * (size_t)(w + 1) / (size_t)p->n;
    if (e > b)
        p->fn(p->ctx, b, e, w);
}

static void *worker_main(void *arg)
{
    struct worker_arg *wa = arg;
    struct thread_pool *p = wa->pool;
    unsigned long seen = 0;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->quit && p->gen == seen)
            pthread_cond_wait(&p->go, &p->mu);
        if (p->quit)
            break;
        seen = p->gen;
        pthread_mutex_unlock(&p->mu);
        run_chunk(p, wa->id);
        pthread_mutex_lock(&p->mu);
        if (--p->pending == 0)
            pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

struct thread_pool *pool_new(int n_threads)
{
    if (n_threads < 1)
        n_threads = 1;
    struct thread_pool *p = mem_calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->n = 1;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->go, NULL);
    pthread_cond_init(&p->done, NULL);
    p->tids = mem_calloc((size_t)n_threads, sizeof *p->tids);
    p->args = mem_calloc((size_t)n_threads, sizeof *p->args);
    if (!p->tids || !p->args)
        goto fail;
    for (int i = 1; i < n_threads; i++) {
        p->args[i].pool = p;
        p->args[i].id = i;
        if (pthread_create(&p->tids[i - 1], NULL, worker_main, &p->args[i]))
            goto fail;
        p->n = i + 1;
    }
    return p;
fail:
    pool_free(p);
    return NULL;
}

void pool_free(struct thread_pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->quit = 1;
    pthread_cond_broadcast(&p->go);
    pthread_mutex_unlock(&p->mu);
    for (int i = 1; i < p->n; i++)
        pthread_join(p->tids[i - 1], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->go);
    pthread_cond_destroy(&p->done);
    mem_free(p->tids);
    mem_free(p->args);
    mem_free(p);
}

int pool_size(const struct thread_pool *p)
{
    return p ? p->n : 1;
}

void pool_for(struct thread_pool *p, size_t n, pool_fn fn, void *ctx)
{
    if (!p || p->n == 1) {
        if (n)
            fn(ctx, 0, n, 0);
        return;
    }
    pthread_mutex_lock(&p->mu);
    p->fn = fn;
    p->ctx = ctx;
    p->items = n;
    p->pending = p->n - 1;
    p->gen++;
    pthread_cond_broadcast(&p->go);
    pthread_mutex_unlock(&p->mu);
    run_chunk(p, 0);
    pthread_mutex_lock(&p->mu);
    while (p->pending > 0)
        pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
}

void pool_barrier_init(struct pool_barrier *b, const struct thread_pool *p)
{
    atomic_init(&b->arrived, 0);
    atomic_init(&b->phase, 0);
    b->n = (unsigned)pool_size(p);
}

void pool_barrier_wait(struct pool_barrier *b)
{
    unsigned phase = atomic_load_explicit(&b->phase, memory_order_acquire);
    if (atomic_fetch_add_explicit(&b->arrived, 1, memory_order_acq_rel) + 1 == b->n) {
        atomic_store_explicit(&b->arrived, 0, memory_order_relaxed);
        atomic_store_explicit(&b->phase, phase + 1, memory_order_release);
        return;
    }
    for (unsigned spins = 0; atomic_load_explicit(&b->phase, memory_order_acquire) == phase;)
        if (++spins > 2000)
            sched_yield(); /* a worker off its CPU: do not burn the one it needs */
}

int threads_default(void)
{
    const char *env = getenv("ACCELTRACE_THREADS");
    if (env && atoi(env) > 0)
        return atoi(env);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}
