/*
 * trace_disc: the DiSC load-balance recount of a kept mask from its bits, for every
 * reader of disc traces (replay/disc_model for R_P and R_S of hardware other than the
 * recorded one, analysis/hash_lb for the std-dev vs sparsity pools; docs/disc.md section
 * 7.3 rule 1, docs/models.md#disc).
 *
 * A DiscMask keeps its bits as a serialized N x N bitset (formats/bitset); the rows that
 * were computed are those set in its step's token mask (a serialized 1 x N bitset), or
 * every row when the step has none. The counting itself is formats/disc_hash; this module
 * only turns the stored bytes into that call, with the same checks for both sides.
 * Nothing here prints; the caller names the mask in its message.
 */
#ifndef ACCELTRACE_TRACE_DISC_H
#define ACCELTRACE_TRACE_DISC_H

#include <stddef.h>
#include <stdint.h>

#include "formats/disc_hash.h"

/* Which input a failed recount rejected. */
enum trace_disc_fault {
    TRACE_DISC_OK = 0,
    TRACE_DISC_BAD_BITS,       /* the mask bits are not an N x N bitset */
    TRACE_DISC_BAD_TOKEN_MASK, /* the token mask is not a 1 x N bitset */
    TRACE_DISC_NOMEM,          /* out of memory while counting */
};

/*
 * Counts the kept mask bits[0..len) (n x n, serialized) with lb into acc (initialized
 * here) over the rows set in token_mask (bitset_words_per_row(n) * 8 bytes; NULL = every
 * row), rows counted on pool (NULL = the caller's thread; results identical for any
 * count). acc->rows is the number of computed rows counted. 0; ERR_DATA with *fault
 * BAD_BITS or BAD_TOKEN_MASK; ERR_NOMEM (or the error of disc_lb_mask) with *fault NOMEM.
 */
int trace_disc_recount_mask(const struct disc_lb *lb, uint32_t n, const uint8_t *bits, size_t len,
                            const uint8_t *token_mask, struct thread_pool *pool,
                            struct disc_lb_acc *acc, enum trace_disc_fault *fault);

#endif
