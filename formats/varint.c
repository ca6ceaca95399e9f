#include "formats/varint.h"

#include "common/err.h"

size_t varint_size(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

size_t varint_put_u64(uint8_t *out, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        out[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    out[n++] = (uint8_t)v;
    return n;
}

int varint_append_u64(struct buf *b, uint64_t v)
{
    uint8_t tmp[VARINT_MAX_BYTES];
    return buf_append(b, tmp, varint_put_u64(tmp, v));
}

int varint_get_u64(const uint8_t *p, size_t n, uint64_t *v, size_t *used)
{
    uint64_t x = 0;
    for (size_t i = 0; i < n && i < VARINT_MAX_BYTES; i++) {
        uint64_t g = p[i] & 0x7f;
        /* the 10th byte may only carry the top bit of a u64 */
        if (i == 9 && g > 1)
            return ERR_DATA;
        x |= g << (7 * i);
        if (!(p[i] & 0x80)) {
            *v = x;
            *used = i + 1;
            return 0;
        }
    }
    return ERR_DATA;
}

int varint_get_u32(const uint8_t *p, size_t n, uint32_t *v, size_t *used)
{
    uint64_t x;
    int rc = varint_get_u64(p, n, &x, used);
    if (rc)
        return rc;
    if (x > UINT32_MAX)
        return ERR_DATA;
    *v = (uint32_t)x;
    return 0;
}

int varint_encode_indices(struct buf *b, const uint32_t *idx, size_t count)
{
    size_t len0 = b->len;
    for (size_t k = 0; k < count; k++) {
        uint64_t d;
        if (k == 0) {
            d = idx[0];
        } else {
            if (idx[k] <= idx[k - 1]) {
                b->len = len0;
                return ERR_DATA;
            }
            d = (uint64_t)idx[k] - idx[k - 1] - 1;
        }
        int rc = varint_append_u64(b, d);
        if (rc) {
            b->len = len0;
            return rc;
        }
    }
    return 0;
}

/* Shared walk of decode and count: stores into idx when idx != NULL. */
static int walk_indices(const uint8_t *p, size_t n, uint32_t limit, uint32_t *idx, size_t cap,
                        size_t *count)
{
    size_t pos = 0, k = 0;
    uint64_t prev = 0;
    while (pos < n) {
        uint64_t d;
        size_t used;
        if (varint_get_u64(p + pos, n - pos, &d, &used))
            return ERR_DATA;
        pos += used;
        uint64_t v;
        if (k == 0) {
            v = d;
        } else {
            if (d > UINT32_MAX)
                return ERR_DATA;
            v = prev + d + 1;
        }
        if (v > UINT32_MAX || v >= limit)
            return ERR_DATA;
        if (idx) {
            if (k >= cap)
                return ERR_LIMIT;
            idx[k] = (uint32_t)v;
        }
        prev = v;
        k++;
    }
    *count = k;
    return 0;
}

int varint_decode_indices(const uint8_t *p, size_t n, uint32_t limit, uint32_t *idx, size_t cap,
                          size_t *count)
{
    static uint32_t dummy;
    *count = 0;
    return walk_indices(p, n, limit, idx ? idx : &dummy, idx ? cap : 0, count);
}

int varint_indices_count(const uint8_t *p, size_t n, uint32_t limit, size_t *count)
{
    *count = 0;
    return walk_indices(p, n, limit, NULL, 0, count);
}
