/*
 * trace_disc: recount of a kept DiSC mask from its stored bits (see the header).
 */
#include "traces/trace_disc.h"

#include <string.h>

#include "common/err.h"
#include "formats/bitset.h"

int trace_disc_recount_mask(const struct disc_lb *lb, uint32_t n, const uint8_t *bits, size_t len,
                            const uint8_t *token_mask, struct thread_pool *pool,
                            struct disc_lb_acc *acc, enum trace_disc_fault *fault)
{
    struct bitset bs, tm;
    memset(&bs, 0, sizeof bs);
    memset(&tm, 0, sizeof tm);
    *fault = TRACE_DISC_OK;
    if (bitset_from_bytes(&bs, n, n, bits, len) < 0) {
        *fault = TRACE_DISC_BAD_BITS;
        return ERR_DATA;
    }
    const uint64_t *filter = NULL;
    if (token_mask) {
        if (bitset_from_bytes(&tm, 1, n, token_mask, (size_t)bitset_words_per_row(n) * 8) < 0) {
            bitset_release(&bs);
            *fault = TRACE_DISC_BAD_TOKEN_MASK;
            return ERR_DATA;
        }
        filter = tm.words;
    }
    disc_lb_acc_init(acc, lb);
    int rc = disc_lb_mask(lb, bs.words, n, bs.words_per_row, filter, pool, acc);
    bitset_release(&bs);
    bitset_release(&tm);
    if (rc < 0) {
        *fault = TRACE_DISC_NOMEM;
        return rc;
    }
    return 0;
}
