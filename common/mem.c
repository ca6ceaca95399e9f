#include "common/mem.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static atomic_long fail_countdown;

void mem_fail_after(long n)
{
    atomic_store(&fail_countdown, n);
}

/* True when the armed fault injector says this allocation must fail. */
static bool should_fail(void)
{
    long v = atomic_load(&fail_countdown);
    if (v <= 0)
        return false;
    if (v == 1)
        return true; /* stays armed at 1: every later allocation fails too */
    atomic_fetch_sub(&fail_countdown, 1);
    return false;
}

void *mem_alloc(size_t n)
{
    if (should_fail())
        return NULL;
    return malloc(n ? n : 1);
}

void *mem_calloc(size_t count, size_t size)
{
    if (should_fail())
        return NULL;
    return calloc(count ? count : 1, size ? size : 1);
}

void *mem_realloc(void *p, size_t n)
{
    if (should_fail())
        return NULL;
    return realloc(p, n ? n : 1);
}

void mem_free(void *p)
{
    free(p);
}

char *mem_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = mem_alloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

bool mem_mul(size_t a, size_t b, size_t *out)
{
    if (a && b > SIZE_MAX / a)
        return false;
    *out = a * b;
    return true;
}

bool mem_add(size_t a, size_t b, size_t *out)
{
    if (b > SIZE_MAX - a)
        return false;
    *out = a + b;
    return true;
}
