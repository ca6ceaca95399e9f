/*
 * Tests of traces/trace_disc: the recount of a kept mask from its serialized bits equals
 * formats/disc_hash on the same bits, the token mask limits the rows counted, and bad bits
 * or a bad token mask are refused with the fault named. Masks come from a seeded RNG.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/err.h"
#include "common/rng.h"
#include "formats/bitset.h"
#include "formats/disc_hash.h"
#include "traces/trace_disc.h"

#define N 96

static void test_recount(void **state)
{
    (void)state;
    const uint64_t seed = 16;
    print_message("seed %llu\n", (unsigned long long)seed);
    struct rng r;
    rng_stream(&r, seed, "test_trace_disc", 0, 0);
    struct bitset m, tm;
    assert_int_equal(bitset_init(&m, N, N), 0);
    assert_int_equal(bitset_init(&tm, 1, N), 0);
    for (uint32_t i = 0; i < N; i++) {
        for (uint32_t j = 0; j < N; j++)
            if (rng_uniform(&r) < 0.3)
                bitset_set(&m, i, j);
        if (i % 3)
            bitset_set(&tm, 0, i); /* 64 computed rows */
    }
    size_t len = (size_t)N * bitset_words_per_row(N) * 8, tlen = bitset_words_per_row(N) * 8;
    uint8_t *bytes = malloc(len), *tbytes = malloc(tlen);
    assert_int_equal(bitset_to_bytes(&m, bytes, len), len);
    assert_int_equal(bitset_to_bytes(&tm, tbytes, tlen), tlen);
    const unsigned bits[2] = {3, 5};
    struct disc_lb *lb;
    assert_int_equal(disc_lb_new(&lb, N, 0x9e3779b1u, bits, 2), 0);

    struct disc_lb_acc got, want;
    enum trace_disc_fault fault;
    /* every row */
    assert_int_equal(trace_disc_recount_mask(lb, N, bytes, len, NULL, NULL, &got, &fault), 0);
    assert_int_equal(fault, TRACE_DISC_OK);
    disc_lb_acc_init(&want, lb);
    assert_int_equal(disc_lb_mask(lb, m.words, N, m.words_per_row, NULL, NULL, &want), 0);
    assert_int_equal(got.rows, N);
    assert_memory_equal(&got, &want, sizeof got);
    /* the token mask's rows only */
    assert_int_equal(trace_disc_recount_mask(lb, N, bytes, len, tbytes, NULL, &got, &fault), 0);
    disc_lb_acc_init(&want, lb);
    assert_int_equal(disc_lb_mask(lb, m.words, N, m.words_per_row, tm.words, NULL, &want), 0);
    assert_int_equal(got.rows, 64);
    assert_memory_equal(&got, &want, sizeof got);

    /* a short mask, then a token mask with a padding bit set */
    assert_int_equal(trace_disc_recount_mask(lb, N, bytes, len - 8, NULL, NULL, &got, &fault),
                     ERR_DATA);
    assert_int_equal(fault, TRACE_DISC_BAD_BITS);
    tbytes[tlen - 1] |= 0x80; /* column 127 of a 96-column row */
    assert_int_equal(trace_disc_recount_mask(lb, N, bytes, len, tbytes, NULL, &got, &fault),
                     ERR_DATA);
    assert_int_equal(fault, TRACE_DISC_BAD_TOKEN_MASK);

    disc_lb_free(lb);
    free(bytes);
    free(tbytes);
    bitset_release(&m);
    bitset_release(&tm);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_recount),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
