/*
 * Tests of formats/bitset: layout (row-major, LSB-first, rows padded to 64-bit words),
 * popcount, row iteration, XOR delta, serialization. Seed: ACCELTRACE_SEED (default 11).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/err.h"
#include "common/rng.h"
#include "formats/bitset.h"
#include "tests/helpers/test_helpers.h"

static uint64_t seed = 11;

static void test_layout_bytes(void **state)
{
    (void)state;
    struct bitset b;
    assert_int_equal(bitset_init(&b, 2, 70), 0);
    assert_int_equal(b.words_per_row, 2);
    bitset_set(&b, 0, 0);
    bitset_set(&b, 0, 9);
    bitset_set(&b, 0, 69);
    bitset_set(&b, 1, 64);
    size_t n;
    assert_true(bitset_bytes_for(2, 70, &n));
    assert_int_equal(n, 32);
    uint8_t out[32];
    assert_int_equal(bitset_to_bytes(&b, out, sizeof out), 32);
    /* column c of row r: bit c % 8 of byte r * 16 + c / 8 */
    uint8_t want[32] = {0};
    want[0] = 0x01;
    want[1] = 0x02;
    want[8] = 0x20;      /* column 69 = byte 8, bit 5 */
    want[16 + 8] = 0x01; /* row 1, column 64 */
    assert_memory_equal(out, want, 32);
    assert_int_equal(bitset_popcount(&b), 4);
    assert_int_equal(bitset_row_popcount(&b, 0), 3);
    struct bitset c;
    assert_int_equal(bitset_from_bytes(&c, 2, 70, out, 32), 0);
    assert_true(bitset_equal(&b, &c));
    bitset_release(&c);
    /* a padding bit set, or a wrong length, is corrupt data */
    out[15] |= 0x80;
    assert_int_equal(bitset_from_bytes(&c, 2, 70, out, 32), ERR_DATA);
    assert_null(c.words);
    assert_int_equal(bitset_from_bytes(&c, 2, 70, out, 31), ERR_DATA);
    bitset_release(&b);
}

static void test_random_against_bools(void **state)
{
    (void)state;
    struct rng r;
    rng_seed(&r, seed);
    for (int trial = 0; trial < 50; trial++) {
        uint32_t rows = (uint32_t)rng_below(&r, 20) + 1, cols = (uint32_t)rng_below(&r, 300) + 1;
        bool *ref = calloc((size_t)rows * cols, 1);
        struct bitset b, prev;
        assert_int_equal(bitset_init(&b, rows, cols), 0);
        assert_int_equal(bitset_init(&prev, rows, cols), 0);
        uint64_t count = 0;
        for (uint32_t i = 0; i < rows; i++)
            for (uint32_t j = 0; j < cols; j++) {
                bool v = rng_uniform(&r) < 0.3;
                ref[(size_t)i * cols + j] = v;
                bitset_put(&b, i, j, v);
                count += v;
                if (rng_uniform(&r) < 0.5)
                    bitset_set(&prev, i, j);
            }
        assert_int_equal(bitset_popcount(&b), count);
        for (uint32_t i = 0; i < rows; i++) {
            uint32_t idx[300];
            size_t n = bitset_row_indices(&b, i, idx, 300);
            size_t k = 0;
            for (int64_t c = bitset_row_next(&b, i, 0); c >= 0;
                 c = bitset_row_next(&b, i, (uint32_t)c + 1)) {
                assert_true(ref[(size_t)i * cols + (size_t)c]);
                assert_true(k < n);
                assert_int_equal(idx[k], (uint32_t)c);
                k++;
            }
            assert_int_equal(k, n);
            assert_int_equal(n, bitset_row_popcount(&b, i));
        }
        /* XOR delta against the previous step and back */
        struct bitset d;
        memset(&d, 0, sizeof d);
        assert_int_equal(bitset_copy(&d, &b), 0);
        assert_int_equal(bitset_xor(&d, &prev), 0);
        for (uint32_t i = 0; i < rows; i++)
            for (uint32_t j = 0; j < cols; j++)
                assert_int_equal(bitset_get(&d, i, j),
                                 ref[(size_t)i * cols + j] != bitset_get(&prev, i, j));
        assert_int_equal(bitset_xor(&d, &prev), 0);
        assert_true(bitset_equal(&d, &b));
        struct bitset other;
        assert_int_equal(bitset_init(&other, rows, cols + 1), 0);
        assert_int_equal(bitset_xor(&d, &other), ERR_USAGE);
        bitset_release(&other);
        bitset_release(&d);
        bitset_release(&b);
        bitset_release(&prev);
        free(ref);
    }
}

int main(void)
{
    seed = th_seed(seed);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layout_bytes),
        cmocka_unit_test(test_random_against_bools),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
