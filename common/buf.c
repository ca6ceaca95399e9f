#include "common/buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/err.h"
#include "common/mem.h"

void buf_init(struct buf *b)
{
    b->data = NULL;
    b->len = b->cap = 0;
    b->err = 0;
}

void buf_release(struct buf *b)
{
    mem_free(b->data);
    buf_init(b);
}

void buf_clear(struct buf *b)
{
    b->len = 0;
    b->err = 0;
}

int buf_err(const struct buf *b)
{
    return b->err;
}

int buf_reserve(struct buf *b, size_t extra)
{
    if (b->err)
        return b->err;
    size_t need;
    if (!mem_add(b->len, extra, &need) || !mem_add(need, 1, &need))
        return b->err = ERR_NOMEM;
    if (need <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need) {
        if (cap > SIZE_MAX / 2) {
            cap = need;
            break;
        }
        cap *= 2;
    }
    uint8_t *p = mem_realloc(b->data, cap);
    if (!p)
        return b->err = ERR_NOMEM;
    b->data = p;
    b->cap = cap;
    return 0;
}

int buf_append(struct buf *b, const void *p, size_t n)
{
    int rc = buf_reserve(b, n);
    if (rc)
        return rc;
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = 0;
    return 0;
}

int buf_printf(struct buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (b->err)
        return b->err;
    if (n < 0)
        return b->err = ERR_INTERNAL;
    int rc = buf_reserve(b, (size_t)n);
    if (rc)
        return rc;
    va_start(ap, fmt);
    vsnprintf((char *)b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return 0;
}
