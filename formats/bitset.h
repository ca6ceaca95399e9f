/*
 * bitset: packed 2-D bit matrices (docs/design.md#the-trace-container: "Bitsets are row-major,
 * LSB-first, each row padded to 64-bit words").
 *
 * Layout: row r occupies words [r * words_per_row, (r + 1) * words_per_row); column c of
 * that row is bit (c % 64) of word (c / 64), bit 0 being the least significant. The bytes
 * of a serialized bitset are those words in little-endian order, so column c of row r is
 * bit (c % 8) of byte r * words_per_row * 8 + c / 8 on every host. Padding bits (columns
 * >= cols in the last word of a row) are always zero; bitset_from_bytes rejects input
 * where they are not, so equal matrices have equal bytes.
 *
 * Ownership: struct bitset is caller storage; bitset_init allocates the words and
 * bitset_release frees them. A struct bitset with words == NULL is empty (0 x 0).
 */
#ifndef ACCELTRACE_BITSET_H
#define ACCELTRACE_BITSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct bitset {
    uint64_t *words;        /* rows * words_per_row words, owned */
    uint32_t rows;          /* number of rows */
    uint32_t cols;          /* number of columns (bits used per row) */
    uint32_t words_per_row; /* (cols + 63) / 64 */
};

/* 64-bit words one row of `cols` bits occupies: (cols + 63) / 64. */
static inline uint32_t bitset_words_per_row(uint32_t cols)
{
    return (uint32_t)(((uint64_t)cols + 63) / 64);
}

/*
 * Serialized size in bytes of a rows x cols bitset: rows * words_per_row * 8.
 * false when it does not fit in size_t.
 */
bool bitset_bytes_for(uint32_t rows, uint32_t cols, size_t *out);

/* Allocates a zeroed rows x cols bitset into b. 0, ERR_NOMEM or ERR_LIMIT (size overflow). */
int bitset_init(struct bitset *b, uint32_t rows, uint32_t cols);
/* Frees b's words and resets it to empty. */
void bitset_release(struct bitset *b);
/* Sets every bit to 0. */
void bitset_zero(struct bitset *b);

/* Pointer to the first word of row r (r < rows). */
static inline uint64_t *bitset_row(const struct bitset *b, uint32_t r)
{
    return b->words + (size_t)r * b->words_per_row;
}

static inline bool bitset_get(const struct bitset *b, uint32_t r, uint32_t c)
{
    return (bitset_row(b, r)[c >> 6] >> (c & 63)) & 1u;
}

static inline void bitset_set(struct bitset *b, uint32_t r, uint32_t c)
{
    bitset_row(b, r)[c >> 6] |= (uint64_t)1 << (c & 63);
}

static inline void bitset_clear(struct bitset *b, uint32_t r, uint32_t c)
{
    bitset_row(b, r)[c >> 6] &= ~((uint64_t)1 << (c & 63));
}

static inline void bitset_put(struct bitset *b, uint32_t r, uint32_t c, bool v)
{
    if (v)
        bitset_set(b, r, c);
    else
        bitset_clear(b, r, c);
}

/* Number of set bits in row r. */
uint64_t bitset_row_popcount(const struct bitset *b, uint32_t r);
/* Number of set bits in the whole matrix. */
uint64_t bitset_popcount(const struct bitset *b);
/* Popcount of n words (helper for callers holding raw rows). */
uint64_t bitset_words_popcount(const uint64_t *w, size_t n);

/*
 * Row iteration: the smallest set column >= from in row r, or -1 when there is none.
 * Typical loop: for (int64_t c = bitset_row_next(b, r, 0); c >= 0;
 *                    c = bitset_row_next(b, r, (uint32_t)c + 1))
 */
int64_t bitset_row_next(const struct bitset *b, uint32_t r, uint32_t from);

/*
 * Writes the set columns of row r in ascending order to idx (capacity cap) and returns
 * how many there are (which may exceed cap; only cap are written).
 */
size_t bitset_row_indices(const struct bitset *b, uint32_t r, uint32_t *idx, size_t cap);

/*
 * XOR delta against the previous step's matrix (docs/design.md#the-trace-container): cur ^= prev.
 * Applying it twice restores cur. Both must have the same shape: 0 or ERR_USAGE.
 */
int bitset_xor(struct bitset *cur, const struct bitset *prev);

/* true when a and b have the same shape and bits. */
bool bitset_equal(const struct bitset *a, const struct bitset *b);

/* Copies src into dst (dst is (re)initialized). 0 or ERR_NOMEM. */
int bitset_copy(struct bitset *dst, const struct bitset *src);

/*
 * Serializes b to out (capacity out_len >= bitset_bytes_for(rows, cols)) as the
 * little-endian bytes of its words. Returns the bytes written, or 0 when out is too small.
 */
size_t bitset_to_bytes(const struct bitset *b, uint8_t *out, size_t out_len);

/*
 * Parses a rows x cols bitset from n bytes (e.g. a protobuf `bytes` field) into b, which
 * is initialized here. ERR_DATA when n is not exactly the serialized size or a padding
 * bit is set; ERR_LIMIT / ERR_NOMEM on size problems. On error b is left empty.
 */
int bitset_from_bytes(struct bitset *b, uint32_t rows, uint32_t cols, const uint8_t *p, size_t n);

#endif
