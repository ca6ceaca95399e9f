#include "formats/bitset.h"

#include <string.h>

#include "common/err.h"
#include "common/mem.h"

bool bitset_bytes_for(uint32_t rows, uint32_t cols, size_t *out)
{
    size_t w;
    if (!mem_mul((size_t)rows, (size_t)bitset_words_per_row(cols), &w))
        return false;
    return mem_mul(w, 8, out);
}

int bitset_init(struct bitset *b, uint32_t rows, uint32_t cols)
{
    size_t bytes;
    memset(b, 0, sizeof *b);
    if (!bitset_bytes_for(rows, cols, &bytes))
        return ERR_LIMIT;
    b->rows = rows;
    b->cols = cols;
    b->words_per_row = bitset_words_per_row(cols);
    if (bytes == 0)
        return 0;
    b->words = mem_calloc(bytes / 8, 8);
    if (!b->words) {
        memset(b, 0, sizeof *b);
        return ERR_NOMEM;
    }
    return 0;
}

void bitset_release(struct bitset *b)
{
    mem_free(b->words);
    memset(b, 0, sizeof *b);
}

void bitset_zero(struct bitset *b)
{
    if (b->words)
        memset(b->words, 0, (size_t)b->rows * b->words_per_row * 8);
}

uint64_t bitset_words_popcount(const uint64_t *w, size_t n)
{
    uint64_t s = 0;
    for (size_t i = 0; i < n; i++)
        s += (uint64_t)__builtin_popcountll(w[i]);
    return s;
}

uint64_t bitset_row_popcount(const struct bitset *b, uint32_t r)
{
    return bitset_words_popcount(bitset_row(b, r), b->words_per_row);
}

uint64_t bitset_popcount(const struct bitset *b)
{
    if (!b->words)
        return 0;
    return bitset_words_popcount(b->words, (size_t)b->rows * b->words_per_row);
}

int64_t bitset_row_next(const struct bitset *b, uint32_t r, uint32_t from)
{
    if (from >= b->cols)
        return -1;
    const uint64_t *w = bitset_row(b, r);
    uint32_t wi = from >> 6;
    uint64_t cur = w[wi] & (~(uint64_t)0 << (from & 63));
    for (;;) {
        if (cur) {
            int64_t c = (int64_t)wi * 64 + __builtin_ctzll(cur);
            return c < (int64_t)b->cols ? c : -1;
        }
        if (++wi >= b->words_per_row)
            return -1;
        cur = w[wi];
    }
}

size_t bitset_row_indices(const struct bitset *b, uint32_t r, uint32_t *idx, size_t cap)
{
    size_t n = 0;
    const uint64_t *w = bitset_row(b, r);
    for (uint32_t wi = 0; wi < b->words_per_row; wi++) {
        uint64_t x = w[wi];
        while (x) {
            uint32_t c = wi * 64 + (uint32_t)__builtin_ctzll(x);
            x &= x - 1;
            if (c >= b->cols)
                break;
            if (n < cap)
                idx[n] = c;
            n++;
        }
    }
    return n;
}

int bitset_xor(struct bitset *cur, const struct bitset *prev)
{
    if (cur->rows != prev->rows || cur->cols != prev->cols)
        return ERR_USAGE;
    size_t n = (size_t)cur->rows * cur->words_per_row;
    for (size_t i = 0; i < n; i++)
        cur->words[i] ^= prev->words[i];
    return 0;
}

bool bitset_equal(const struct bitset *a, const struct bitset *b)
{
    if (a->rows != b->rows || a->cols != b->cols)
        return false;
    size_t n = (size_t)a->rows * a->words_per_row;
    return n == 0 || memcmp(a->words, b->words, n * 8) == 0;
}

int bitset_copy(struct bitset *dst, const struct bitset *src)
{
    struct bitset t;
    int rc = bitset_init(&t, src->rows, src->cols);
    if (rc)
        return rc;
    if (t.words)
        memcpy(t.words, src->words, (size_t)t.rows * t.words_per_row * 8);
    bitset_release(dst);
    *dst = t;
    return 0;
}

size_t bitset_to_bytes(const struct bitset *b, uint8_t *out, size_t out_len)
{
    size_t n = (size_t)b->rows * b->words_per_row;
    if (out_len < n * 8)
        return 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t x = b->words[i];
        for (int k = 0; k < 8; k++)
            out[i * 8 + (size_t)k] = (uint8_t)(x >> (8 * k));
    }
    return n * 8;
}

int bitset_from_bytes(struct bitset *b, uint32_t rows, uint32_t cols, const uint8_t *p, size_t n)
{
    size_t need;
    memset(b, 0, sizeof *b);
    if (!bitset_bytes_for(rows, cols, &need))
        return ERR_LIMIT;
    if (n != need)
        return ERR_DATA;
    int rc = bitset_init(b, rows, cols);
    if (rc)
        return rc;
    size_t nw = need / 8;
    for (size_t i = 0; i < nw; i++) {
        uint64_t x = 0;
        for (int k = 0; k < 8; k++)
            x |= (uint64_t)p[i * 8 + (size_t)k] << (8 * k);
        b->words[i] = x;
    }
    uint32_t tail = cols & 63;
    if (tail && rows) {
        uint64_t pad = ~(uint64_t)0 << tail;
        for (uint32_t r = 0; r < rows; r++)
            if (bitset_row(b, r)[b->words_per_row - 1] & pad) {
                bitset_release(b);
                return ERR_DATA;
            }
    }
    return 0;
}
