#include "common/mem.h"

#include <errno.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
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

int mem_parse_size(const char *s, uint64_t *bytes)
{
    static const struct {
        const char *unit;
        double f;
    } units[] = {{"", 1},
                 {"B", 1},
                 {"KB", 1e3},
                 {"MB", 1e6},
                 {"GB", 1e9},
                 {"TB", 1e12},
                 {"K", 1024.0},
                 {"M", 1048576.0},
                 {"G", 1073741824.0},
                 {"T", 1099511627776.0},
                 {"KiB", 1024.0},
                 {"MiB", 1048576.0},
                 {"GiB", 1073741824.0},
                 {"TiB", 1099511627776.0}};
    if (!s || !(*s >= '0' && *s <= '9') || strpbrk(s, "xXpP"))
        return ERR_USAGE; /* no sign, no space, no hex: a plain decimal */
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || !isfinite(v) || v < 0)
        return ERR_USAGE;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (!strcmp(end, units[i].unit)) {
            double b = v * units[i].f;
            if (!(b < 9223372036854775808.0))
                return ERR_USAGE;
            *bytes = (uint64_t)b;
            return 0;
        }
    return ERR_USAGE;
}

char *mem_size_text(uint64_t bytes, char *buf, size_t n)
{
    static const char *const names[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double v = (double)bytes;
    size_t u = 0;
    while (v >= 1024.0 && u + 1 < sizeof names / sizeof names[0]) {
        v /= 1024.0;
        u++;
    }
    snprintf(buf, n, v >= 100 ? "%.0f %s" : "%.3g %s", v, names[u]);
    return buf;
}

int mem_budget_refuse(struct errmsg *e, const char *what, uint64_t need_bytes, uint64_t limit_bytes,
                      const char *hint)
{
    char need[32], limit[32];
    return errmsg_set(e, ERR_LIMIT, "%s needs about %s, above --mem-limit %s; %s", what,
                      mem_size_text(need_bytes, need, sizeof need),
                      mem_size_text(limit_bytes, limit, sizeof limit), hint);
}
