/*
 * Tests of formats/varint: LEB128 edge values, malformed input, and the delta coding of
 * sorted index lists (docs/salca.md#trace-records). Seed: ACCELTRACE_SEED (default 5).
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
#include "formats/varint.h"
#include "tests/helpers/test_helpers.h"

static uint64_t seed = 5;

static void test_leb128(void **state)
{
    (void)state;
    static const uint64_t vals[] = {
        0, 1, 127, 128, 300, 16383, 16384, UINT32_MAX, (uint64_t)UINT32_MAX + 1, UINT64_MAX};
    static const size_t sizes[] = {1, 1, 1, 2, 2, 2, 3, 5, 5, 10};
    for (size_t i = 0; i < sizeof vals / sizeof *vals; i++) {
        uint8_t b[10];
        size_t n = varint_put_u64(b, vals[i]);
        assert_int_equal(n, sizes[i]);
        assert_int_equal(varint_size(vals[i]), n);
        uint64_t v;
        size_t used;
        assert_int_equal(varint_get_u64(b, n, &v, &used), 0);
        assert_int_equal(v, vals[i]);
        assert_int_equal(used, n);
        if (n > 1) /* truncated */
            assert_int_equal(varint_get_u64(b, n - 1, &v, &used), ERR_DATA);
    }
    uint8_t b300[] = {0xac, 0x02}; /* 300, the protobuf documentation's example */
    uint64_t v;
    size_t used;
    assert_int_equal(varint_get_u64(b300, 2, &v, &used), 0);
    assert_int_equal(v, 300);
    uint8_t over[11];
    memset(over, 0xff, sizeof over);
    assert_int_equal(varint_get_u64(over, 11, &v, &used), ERR_DATA); /* > 10 bytes */
    over[9] = 0x02; /* 10th byte carries more than bit 63 */
    assert_int_equal(varint_get_u64(over, 10, &v, &used), ERR_DATA);
    uint32_t v32;
    uint8_t big[5] = {0x80, 0x80, 0x80, 0x80, 0x10}; /* 2^32 */
    assert_int_equal(varint_get_u32(big, 5, &v32, &used), ERR_DATA);
}

static void test_index_lists(void **state)
{
    (void)state;
    struct buf b;
    buf_init(&b);
    /* a run of m consecutive indices costs varint(i_0) + m - 1 bytes (docs/salca.md#trace-records)
     */
    uint32_t run[6] = {1000, 1001, 1002, 1003, 1004, 1005};
    assert_int_equal(varint_encode_indices(&b, run, 6), 0);
    assert_int_equal(b.len, 2 + 5);
    static const uint8_t want[] = {0xe8, 0x07, 0, 0, 0, 0, 0};
    assert_memory_equal(b.data, want, 7);
    uint32_t out[8];
    size_t count;
    assert_int_equal(varint_decode_indices(b.data, b.len, UINT32_MAX, out, 8, &count), 0);
    assert_int_equal(count, 6);
    assert_memory_equal(out, run, sizeof run);
    assert_int_equal(varint_decode_indices(b.data, b.len, UINT32_MAX, out, 5, &count), ERR_LIMIT);
    assert_int_equal(varint_decode_indices(b.data, b.len, 1005, out, 8, &count), ERR_DATA);
    assert_int_equal(varint_indices_count(b.data, b.len, 1006, &count), 0);
    assert_int_equal(count, 6);
    /* not strictly ascending: refused, buffer unchanged */
    uint32_t bad[3] = {5, 5, 6};
    size_t len0 = b.len;
    assert_int_equal(varint_encode_indices(&b, bad, 3), ERR_DATA);
    assert_int_equal(b.len, len0);
    /* a gap past 32 bits is corrupt */
    uint8_t gap[] = {0xff, 0xff, 0xff, 0xff, 0x0f, 0x00};
    assert_int_equal(varint_indices_count(gap, sizeof gap, UINT32_MAX, &count), ERR_DATA);
    buf_release(&b);

    struct rng r;
    rng_seed(&r, seed);
    for (int trial = 0; trial < 200; trial++) {
        size_t n = (size_t)rng_below(&r, 500);
        uint32_t *idx = malloc((n ? n : 1) * sizeof *idx), *dec = malloc((n ? n : 1) * sizeof *dec);
        uint32_t cur = (uint32_t)rng_below(&r, 100000);
        for (size_t i = 0; i < n; i++) {
            idx[i] = cur;
            cur += 1 + (uint32_t)(rng_uniform(&r) < 0.7 ? 0 : rng_below(&r, 5000));
        }
        buf_init(&b);
        assert_int_equal(varint_encode_indices(&b, idx, n), 0);
        assert_int_equal(varint_decode_indices(b.data, b.len, cur, dec, n, &count), 0);
        assert_int_equal(count, n);
        if (n)
            assert_memory_equal(idx, dec, n * sizeof *idx);
        buf_release(&b);
        free(idx);
        free(dec);
    }
}

int main(void)
{
    seed = th_seed(seed);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_leb128),
        cmocka_unit_test(test_index_lists),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
