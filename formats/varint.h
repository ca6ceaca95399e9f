/*
 * varint: unsigned LEB128 varints and the delta coding of sorted index lists
 * (docs/salca.md#trace-records; also used by other records).
 *
 * A varint stores 7 bits per byte, least significant group first; the high bit of a byte
 * says another byte follows. A u64 takes 1..10 bytes. Decoding rejects truncated input,
 * more than 10 bytes, and values that overflow 64 (or 32) bits.
 *
 * Sorted index list (strictly ascending i_0 < i_1 < ...): varint(i_0), then for k >= 1
 * varint(i_k - i_{k-1} - 1). A run of m consecutive indices therefore costs
 * varint(i_0) + m - 1 bytes. The count is not stored in the bytes; records carry it
 * separately (or callers count with varint_indices_count).
 */
#ifndef ACCELTRACE_VARINT_H
#define ACCELTRACE_VARINT_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

#define VARINT_MAX_BYTES 10

/* Bytes varint_put_u64 writes for v (1..10). */
size_t varint_size(uint64_t v);

/* Writes v at out (room for VARINT_MAX_BYTES) and returns the bytes written. */
size_t varint_put_u64(uint8_t *out, uint64_t v);

/* Appends v to b. 0 or ERR_NOMEM. */
int varint_append_u64(struct buf *b, uint64_t v);

/*
 * Decodes one varint from p[0..n). On success *v is the value, *used the bytes consumed,
 * and 0 is returned; ERR_DATA when the input is truncated, longer than 10 bytes or
 * overflows 64 bits.
 */
int varint_get_u64(const uint8_t *p, size_t n, uint64_t *v, size_t *used);

/* As varint_get_u64 but the value must fit in 32 bits (ERR_DATA otherwise). */
int varint_get_u32(const uint8_t *p, size_t n, uint32_t *v, size_t *used);

/*
 * Appends the delta coding of idx[0..count) to b. ERR_DATA when the list is not strictly
 * ascending (b is then left as it was), ERR_NOMEM on allocation failure.
 */
int varint_encode_indices(struct buf *b, const uint32_t *idx, size_t count);

/*
 * Decodes a delta-coded index list from p[0..n) into idx (capacity cap). *count receives
 * the number of indices. Every index must be < limit (pass UINT32_MAX for "any 32-bit").
 * ERR_DATA on a malformed varint or an index >= limit / past 32 bits; ERR_LIMIT when
 * the list holds more than cap indices. Never writes past idx[cap - 1].
 */
int varint_decode_indices(const uint8_t *p, size_t n, uint32_t limit, uint32_t *idx, size_t cap,
                          size_t *count);

/*
 * Counts and validates the indices of a delta-coded list (as varint_decode_indices with
 * unbounded capacity, without storing them). 0 or ERR_DATA.
 */
int varint_indices_count(const uint8_t *p, size_t n, uint32_t limit, size_t *count);

#endif
