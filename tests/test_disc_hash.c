/*
 * Tests of formats/disc_hash: the docs/disc.md#load-balance-analyzer hashes and the one-pass
 * load-balance statistics (docs/disc.md#acceptance-checks).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/err.h"
#include "common/mem.h"
#include "common/rng.h"
#include "common/threads.h"
#include "formats/disc_hash.h"
#include "tests/helpers/test_helpers.h"

static void set_bit(uint64_t *row, uint64_t j)
{
    row[j >> 6] |= (uint64_t)1 << (j & 63);
}

/* hash values. */
static void test_hash_values(void **state)
{
    (void)state;
    const uint32_t want[8] = {0, 39, 15, 54, 30, 5, 45, 20};
    for (uint64_t j = 0; j < 8; j++)
        assert_int_equal(disc_hash_mul(j, 6, DISC_HASH_K_ODD), want[j]);
    assert_int_equal(disc_hash_mul(1, 7, DISC_HASH_K_ODD), 79);
    assert_int_equal(disc_hash_range(125, 3, 1000), 1);
    assert_int_equal(disc_hash_range(999, 3, 1000), 7);
    assert_int_equal(disc_hash_range(124, 3, 1000), 0);
    assert_int_equal(disc_hash_mod(1027, 6), 3);
    /* range equals MSB_b(j) for a power-of-two n_cols (docs/disc.md#load-balance-analyzer) */
    for (uint64_t j = 0; j < 1024; j += 37)
        assert_int_equal(disc_hash_range(j, 4, 1024), (uint32_t)(j >> 6));
    assert_int_equal(disc_hash_from_name("mul"), DISC_HASH_MUL);
    assert_int_equal(disc_hash_from_name("xor"), -1);
    assert_string_equal(disc_hash_name(DISC_HASH_RANGE), "range");
}

static struct disc_lb *std_lb(uint64_t n_cols)
{
    struct disc_lb *lb = NULL;
    assert_int_equal(disc_lb_new_std(&lb, n_cols, DISC_HASH_K_ODD), 0);
    return lb;
}

/* one nonzero per DPU per row at U = 64 -> sigma 0 and imbalance 1 for U <= 64. */
static void test_one_per_unit(void **state)
{
    (void)state;
    const uint64_t n = 1024;
    struct disc_lb *lb = std_lb(n);
    uint32_t *scratch = mem_alloc(disc_lb_scratch_len(lb) * sizeof *scratch);
    for (int h = 0; h < DISC_HASH_KINDS; h++) {
        uint64_t row[16] = {0};
        int seen[64] = {0};
        for (uint64_t j = 0; j < n; j++) {
            uint32_t v = disc_hash_apply(h, j, 6, n, DISC_HASH_K_ODD);
            if (!seen[v]) {
                seen[v] = 1;
                set_bit(row, j);
            }
        }
        for (int v = 0; v < 64; v++)
            assert_true(seen[v]);
        struct disc_lb_acc acc;
        disc_lb_acc_init(&acc, lb);
        assert_int_equal(disc_lb_mask(lb, row, 1, 16, NULL, NULL, &acc), 0);
        assert_int_equal(acc.nnz, 64);
        for (int i = 0; i < 4; i++) { /* U = 8, 16, 32, 64 */
            assert_true(acc.std_sum[h][i] == 0.0);
            assert_true(disc_lb_acc_imbalance(&acc, lb, h, i) == 1.0);
        }
        /* at U = 128 some unit is empty: std > 0 */
        assert_true(acc.std_sum[h][4] > 0.0);
    }
    mem_free(scratch);
    disc_lb_free(lb);
}

/* c nonzeros on one unit -> sigma = c sqrt(U-1)/U and imbalance U. */
static void test_one_unit(void **state)
{
    (void)state;
    const uint64_t n = 1024;
    const uint32_t c = 5;
    struct disc_lb *lb = std_lb(n);
    uint32_t *scratch = mem_alloc(disc_lb_scratch_len(lb) * sizeof *scratch);
    for (int h = 0; h < DISC_HASH_KINDS; h++)
        for (int i = 0; i < DISC_LB_STD_UNITS; i++) {
            unsigned b = disc_lb_unit_bits(lb, i);
            double u = (double)(1u << b);
            uint64_t row[16] = {0};
            uint32_t got = 0;
            for (uint64_t j = 0; j < n && got < c; j++)
                if (disc_hash_apply(h, j, b, n, DISC_HASH_K_ODD) == 3) {
                    set_bit(row, j);
                    got++;
                }
            assert_int_equal(got, c);
            struct disc_lb_rowstat rs;
            disc_lb_row(lb, row, scratch, &rs);
            assert_int_equal(rs.nnz, c);
            assert_true(fabs(rs.sigma[h][i] - c * sqrt(u - 1) / u) < 1e-12);
            assert_int_equal(rs.max[h][i], c);
            struct disc_lb_acc acc;
            disc_lb_acc_init(&acc, lb);
            disc_lb_acc_add(&acc, &rs);
            assert_true(fabs(disc_lb_acc_imbalance(&acc, lb, h, i) - u) < 1e-12);
        }
    mem_free(scratch);
    disc_lb_free(lb);
}

/* a dense row of 1024 columns. */
static void test_dense_row(void **state)
{
    (void)state;
    struct disc_lb *lb = std_lb(1024);
    uint32_t *scratch = mem_alloc(disc_lb_scratch_len(lb) * sizeof *scratch);
    uint64_t row[16];
    memset(row, 0xff, sizeof row);
    struct disc_lb_rowstat rs;
    disc_lb_row(lb, row, scratch, &rs);
    assert_int_equal(rs.nnz, 1024);
    assert_int_equal(rs.bin, 0);
    const double sig[5] = {0.8660254, 0.6123724, 0.5590170, 0.75, 0.6373774};
    const uint32_t mx[5] = {129, 65, 33, 18, 9};
    for (int i = 0; i < 5; i++) {
        assert_true(rs.sigma[DISC_HASH_MOD][i] == 0.0);
        assert_true(rs.sigma[DISC_HASH_RANGE][i] == 0.0);
        assert_int_equal(rs.max[DISC_HASH_MOD][i], 1024u >> (3 + i));
        /* the dense-row check gives 7 significant digits */
        assert_true(fabs(rs.sigma[DISC_HASH_MUL][i] - sig[i]) < 5e-8);
        assert_int_equal(rs.max[DISC_HASH_MUL][i], mx[i]);
    }
    mem_free(scratch);
    disc_lb_free(lb);
}

/* Brute-force statistics of one row, by hashing every set column directly at each U. */
static void brute_row(const uint64_t *row, uint64_t n, const struct disc_lb *lb,
                      struct disc_lb_rowstat *out)
{
    uint32_t cnt[1 << 8];
    uint64_t nnz = 0;
    for (uint64_t j = 0; j < n; j++)
        nnz += (row[j >> 6] >> (j & 63)) & 1u;
    out->nnz = nnz;
    out->bin = disc_lb_bin(n - nnz, n);
    for (int h = 0; h < DISC_HASH_KINDS; h++)
        for (int i = 0; i < disc_lb_n_units(lb); i++) {
            unsigned b = disc_lb_unit_bits(lb, i);
            size_t u = (size_t)1 << b;
            memset(cnt, 0, sizeof cnt);
            for (uint64_t j = 0; j < n; j++)
                if ((row[j >> 6] >> (j & 63)) & 1u)
                    cnt[disc_hash_apply(h, j, b, n, DISC_HASH_K_ODD)]++;
            double mu = (double)nnz / (double)u, ss = 0;
            uint32_t m = 0;
            for (size_t v = 0; v < u; v++) {
                double d = (double)cnt[v] - mu;
                ss += d * d;
                if (cnt[v] > m)
                    m = cnt[v];
            }
            out->sigma[h][i] = sqrt(ss / (double)u);
            out->max[h][i] = m;
        }
}

static void assert_acc_equal(const struct disc_lb_acc *a, const struct disc_lb_acc *b)
{
    assert_int_equal(a->rows, b->rows);
    assert_int_equal(a->nnz, b->nnz);
    assert_memory_equal(a, b, sizeof *a);
}

/* folded counts equal direct counts on random masks. */
static void test_fold_random(void **state)
{
    (void)state;
    struct rng r;
    rng_stream(&r, th_seed(20261130u), "d21", 0, 0);
    const uint64_t ns[4] = {64, 100, 1000, 1024};
    for (int t = 0; t < 4; t++) {
        uint64_t n = ns[t];
        size_t wpr = (size_t)((n + 63) / 64);
        struct disc_lb *lb = std_lb(n);
        uint32_t *scratch = mem_alloc(disc_lb_scratch_len(lb) * sizeof *scratch);
        uint64_t *row = mem_calloc(wpr, 8);
        for (int rep = 0; rep < 20; rep++) {
            memset(row, 0, wpr * 8);
            for (uint64_t j = 0; j < n; j++)
                if (rng_uniform(&r) < 0.4)
                    set_bit(row, j);
            struct disc_lb_rowstat a, b;
            memset(&a, 0, sizeof a);
            memset(&b, 0, sizeof b);
            disc_lb_row(lb, row, scratch, &a);
            brute_row(row, n, lb, &b);
            assert_memory_equal(&a, &b, sizeof a);
        }
        mem_free(row);
        mem_free(scratch);
        disc_lb_free(lb);
    }
}

/* row-sparsity bins by integer arithmetic (800 and 900 of 1000). */
static void test_row_sparsity_bins(void **state)
{
    (void)state;
    struct disc_lb *lb = std_lb(1000);
    uint32_t *scratch = mem_alloc(disc_lb_scratch_len(lb) * sizeof *scratch);
    uint64_t row[16] = {0};
    for (uint64_t j = 0; j < 800; j++)
        set_bit(row, j);
    struct disc_lb_rowstat rs;
    disc_lb_row(lb, row, scratch, &rs);
    assert_int_equal(rs.bin, 4);
    for (uint64_t j = 800; j < 900; j++)
        set_bit(row, j);
    disc_lb_row(lb, row, scratch, &rs);
    assert_int_equal(rs.bin, 2);
    assert_int_equal(disc_lb_bin(1000, 1000), 19);
    assert_int_equal(disc_lb_bin(0, 1000), 0);
    assert_int_equal(disc_lb_bin(0, 0), -1);
    mem_free(scratch);
    disc_lb_free(lb);
}

/* a diagonal-band mask equals a brute-force count, for 1 and 2 threads. */
static void test_band_brute_threads(void **state)
{
    (void)state;
    const uint32_t n = 1000, band = 70;
    const size_t wpr = (n + 63) / 64;
    uint64_t *bits = mem_calloc((size_t)n * wpr, 8);
    uint64_t *filter = mem_calloc(wpr, 8);
    for (uint32_t i = 0; i < n; i++) {
        for (uint32_t j = (i > band ? i - band : 0); j < n && j <= i + band; j++)
            set_bit(bits + (size_t)i * wpr, j);
        if (i % 3 != 1)
            set_bit(filter, i);
    }
    struct disc_lb *lb = std_lb(n);
    struct disc_lb_acc brute, one, two;
    disc_lb_acc_init(&brute, lb);
    for (uint32_t i = 0; i < n; i++) {
        if (i % 3 == 1)
            continue;
        struct disc_lb_rowstat rs;
        memset(&rs, 0, sizeof rs);
        brute_row(bits + (size_t)i * wpr, n, lb, &rs);
        disc_lb_acc_add(&brute, &rs);
    }
    disc_lb_acc_init(&one, lb);
    assert_int_equal(disc_lb_mask(lb, bits, n, wpr, filter, NULL, &one), 0);
    struct thread_pool *p = pool_new(2);
    assert_non_null(p);
    disc_lb_acc_init(&two, lb);
    assert_int_equal(disc_lb_mask(lb, bits, n, wpr, filter, p, &two), 0);
    pool_free(p);
    assert_acc_equal(&brute, &one);
    assert_acc_equal(&one, &two);
    assert_int_equal(one.rows, 667);
    mem_free(bits);
    mem_free(filter);
    disc_lb_free(lb);
}

/* Other unit lists (U = 2 and 256) and constants through the same pass. */
static void test_custom_units(void **state)
{
    (void)state;
    const unsigned bits[3] = {8, 1, 5};
    struct disc_lb *lb = NULL;
    assert_int_equal(disc_lb_new(&lb, 4096, 0x12345679u, bits, 3), 0);
    assert_int_equal(disc_lb_bmax(lb), 8);
    uint32_t *scratch = mem_alloc(disc_lb_scratch_len(lb) * sizeof *scratch);
    uint64_t row[64] = {0};
    for (uint64_t j = 0; j < 4096; j += 3)
        set_bit(row, j);
    struct disc_lb_rowstat rs;
    disc_lb_row(lb, row, scratch, &rs);
    for (int h = 0; h < DISC_HASH_KINDS; h++)
        for (int i = 0; i < 3; i++) {
            uint32_t cnt[256] = {0};
            uint32_t m = 0;
            for (uint64_t j = 0; j < 4096; j += 3)
                cnt[disc_hash_apply(h, j, bits[i], 4096, 0x12345679u)]++;
            for (int v = 0; v < 256; v++)
                if (cnt[v] > m)
                    m = cnt[v];
            assert_int_equal(rs.max[h][i], m);
        }
    /* U = 512 takes the per-bit path for mod; it must agree with a direct count */
    const unsigned b9 = 9;
    struct disc_lb *lb9 = NULL;
    assert_int_equal(disc_lb_new(&lb9, 4096, DISC_HASH_K_ODD, &b9, 1), 0);
    uint32_t *s9 = mem_alloc(disc_lb_scratch_len(lb9) * sizeof *s9);
    uint64_t cnt9 = disc_lb_count_row(lb9, row, s9);
    assert_int_equal(cnt9, (4096 + 2) / 3);
    for (uint32_t v = 0; v < 512; v++) {
        uint32_t want = 0;
        for (uint64_t j = 0; j < 4096; j += 3)
            want += disc_hash_mod(j, 9) == v;
        assert_int_equal(s9[v], want);
    }
    mem_free(s9);
    disc_lb_free(lb9);
    mem_free(scratch);
    disc_lb_free(lb);
    const unsigned dup[2] = {3, 3};
    assert_int_equal(disc_lb_new(&lb, 64, DISC_HASH_K_ODD, dup, 2), ERR_USAGE);
    assert_int_equal(disc_lb_new(&lb, 64, 2, bits, 1), ERR_USAGE);
    assert_int_equal(disc_lb_new(&lb, 0, DISC_HASH_K_ODD, bits, 1), ERR_USAGE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hash_values),        cmocka_unit_test(test_one_per_unit),
        cmocka_unit_test(test_one_unit),           cmocka_unit_test(test_dense_row),
        cmocka_unit_test(test_fold_random),        cmocka_unit_test(test_row_sparsity_bins),
        cmocka_unit_test(test_band_brute_threads), cmocka_unit_test(test_custom_units),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
