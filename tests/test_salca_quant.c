/*
 * Tests of capture/salca/salca_quant (docs/salca.md#selection, docs/salca.md#int8-attention): FP16
 * rounding, the 2-bit key record (the key record check), the 3-bit query (the query scale check),
 * the integer relevance (the relevance check) and the INT8 quantizer. Randomized; seed:
 * ACCELTRACE_SEED (default 11), printed.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "capture/salca/salca_kv.h"
#include "capture/salca/salca_quant.h"
#include "capture/salca/salca_select.h"
#include "common/rng.h"
#include "tests/helpers/test_helpers.h"

static uint64_t seed = 11;

static void test_fp16(void **state)
{
    (void)state;
    assert_int_equal(salca_fp16_bits(1.0f), 0x3c00);
    assert_int_equal(salca_fp16_bits(-2.0f), 0xc000);
    assert_int_equal(salca_fp16_bits(65504.0f), 0x7bff);
    assert_int_equal(salca_fp16_bits(70000.0f), 0x7bff); /* saturates, never inf */
    assert_int_equal(salca_fp16_bits(-INFINITY), 0xfbff);
    assert_int_equal(salca_fp16_bits(0x1p-24f), 0x0001);   /* smallest subnormal */
    assert_int_equal(salca_fp16_bits(0x1p-25f), 0x0000);   /* tie to even: 0 */
    assert_int_equal(salca_fp16_bits(0x1.8p-25f), 0x0001); /* above the tie */
    assert_int_equal(salca_fp16_bits(0x3p-25f), 0x0002);   /* 1.5 ulp: tie to even 2 */
    /* 1 + 2^-11 is the tie between 1 and 1 + 2^-10: even mantissa wins */
    assert_int_equal(salca_fp16_bits(1.0f + 0x1p-11f), 0x3c00);
    assert_int_equal(salca_fp16_bits(1.0f + 0x3p-11f), 0x3c02);
    /* every binary16 value round-trips */
    for (uint32_t h = 0; h < 0x7c00; h++) {
        float f = salca_fp16_to_f32((uint16_t)h);
        assert_int_equal(salca_fp16_bits(f), h);
        assert_int_equal(salca_fp16_bits(-f), h | 0x8000);
    }
}

static void heavy_first(uint8_t *heavy, uint32_t r)
{
    for (uint32_t m = 0; m < r; m++)
        heavy[m] = (uint8_t)(2 * m); /* every other channel, ascending */
}

/* 20 bytes at d = 128, s_f = 1/2; codes in [0, 3]; the stated error bound. */
static void test_key_record(void **state)
{
    (void)state;
    struct rng r;
    rng_stream(&r, seed, "test.keyrec", 0, 0);
    uint8_t heavy[64];
    heavy_first(heavy, 64);
    assert_int_equal(salca_key_record_bytes(64), 20);
    float k[128], dq[64];
    uint8_t rec[20];
    for (int trial = 0; trial < 20000; trial++) {
        double scale = trial % 4 == 0 ? 1e-9 : trial % 4 == 1 ? 1.0 : trial % 4 == 2 ? 300.0 : 1e4;
        double off = (rng_uniform(&r) - 0.5) * scale * 4;
        for (int j = 0; j < 128; j++) {
            double x = off + scale * rng_normal(&r);
            if (x > 65504)
                x = 65504;
            if (x < -65504)
                x = -65504;
            k[j] = (float)x;
        }
        float s, z;
        salca_key_record_encode(k, heavy, 64, rec, &s, &z);
        salca_key_record_decode(rec, 64, dq);
        for (uint32_t m = 0; m < 64; m++) {
            unsigned c = salca_key_record_code(rec, m);
            assert_true(c <= 3);
            double err = fabs((double)dq[m] - k[heavy[m]]);
            /* the key record check: |k^ - k| <= s/2 + 2^-10 (|z| + 3s) + 2^-23 */
            double bound = s / 2.0 + 0x1p-10 * (fabs(z) + 3.0 * s) + 0x1p-23;
            if (err > bound)
                fail_msg("trial %d channel %u: error %g > bound %g (s %g z %g)", trial, m, err,
                         bound, s, z);
        }
    }
    /* a constant key decodes to its FP16 value */
    for (int j = 0; j < 128; j++)
        k[j] = 3.14159f;
    float s, z;
    salca_key_record_encode(k, heavy, 64, rec, &s, &z);
    salca_key_record_decode(rec, 64, dq);
    assert_true(s == 0.0f);
    for (int m = 0; m < 64; m++)
        assert_true(dq[m] == salca_fp16_round(3.14159f));
    /* layout: first code in bits 0-1 of byte 0, then s and z little-endian */
    for (int j = 0; j < 128; j++)
        k[j] = 0.0f;
    k[heavy[0]] = 3.0f; /* z = 0, s = 1: code 3 at channel 0 */
    salca_key_record_encode(k, heavy, 64, rec, &s, &z);
    assert_int_equal(rec[0], 3);
    assert_int_equal(rec[16] | rec[17] << 8, 0x3c00);
    assert_int_equal(rec[18] | rec[19] << 8, 0x0000);
}

/* codes in [-3, 3]; scaling q by c > 0 leaves S unchanged. */
static void test_query_scaling(void **state)
{
    (void)state;
    struct rng r;
    rng_stream(&r, seed, "test.query", 0, 0);
    uint32_t d = 128, n = 3000;
    struct salca_kv kv;
    assert_int_equal(salca_kv_init(&kv, d, 64, n, 16), 0);
    float k[128], v[128];
    for (uint32_t i = 0; i < n; i++) {
        for (uint32_t j = 0; j < d; j++) {
            k[j] = (float)(rng_normal(&r) * (j % 16 == 5 ? 8 : 1));
            v[j] = (float)rng_normal(&r);
        }
        assert_int_equal(salca_kv_append(&kv, k, v), 0);
    }
    salca_kv_finish_prefill(&kv);
    struct salca_scratch sc;
    assert_int_equal(salca_scratch_init(&sc, n, d, 64, 16), 0);
    struct salca_sel_params p = {.pool = 5,
                                 .k_mode = SALCA_K_FIXED,
                                 .rho = {1, 20},
                                 .k_min = 64,
                                 .p_mass = 0.95,
                                 .cmp = SALCA_CMP_GE};
    static struct salca_method_res res[SALCA_M_COUNT];
    uint32_t *ref = malloc(n * sizeof *ref);
    for (int trial = 0; trial < 30; trial++) {
        float q[128], q2[128];
        for (uint32_t j = 0; j < d; j++)
            q[j] = (float)rng_normal(&r);
        int8_t qc[64];
        salca_query_quant(q, kv.heavy, 64, qc);
        for (int m = 0; m < 64; m++)
            assert_true(qc[m] >= -3 && qc[m] <= 3);
        salca_job(&kv, q, &p, 1u << SALCA_M_SALCA, false, &sc, res);
        uint32_t cnt = res[SALCA_M_SALCA].count;
        memcpy(ref, res[SALCA_M_SALCA].idx, cnt * sizeof *ref);
        double cs[] = {0.25, 2.0, 1024.0, 0.37, 5.3}; /* powers of two, then arbitrary */
        for (size_t a = 0; a < sizeof cs / sizeof cs[0]; a++) {
            for (uint32_t j = 0; j < d; j++)
                q2[j] = (float)(q[j] * cs[a]);
            salca_job(&kv, q2, &p, 1u << SALCA_M_SALCA, false, &sc, res);
            assert_int_equal(res[SALCA_M_SALCA].count, cnt);
            assert_memory_equal(res[SALCA_M_SALCA].idx, ref, cnt * sizeof *ref);
        }
    }
    free(ref);
    salca_scratch_release(&sc);
    salca_kv_release(&kv);
}

/* A_i equals sum_j q'_j k^_ij in double within the stated bound. */
static void test_relevance(void **state)
{
    (void)state;
    struct rng r;
    rng_stream(&r, seed, "test.relevance", 0, 0);
    uint8_t heavy[64];
    heavy_first(heavy, 64);
    int32_t lut[16 * 256];
    for (int trial = 0; trial < 2000; trial++) {
        float q[128], k[128], dq[64];
        double ks = trial % 3 == 0 ? 0.01 : trial % 3 == 1 ? 1.0 : 200.0;
        for (int j = 0; j < 128; j++) {
            q[j] = (float)rng_normal(&r);
            k[j] = (float)(ks * rng_normal(&r) + ks * (rng_uniform(&r) - 0.5));
        }
        int8_t qc[64];
        salca_query_quant(q, heavy, 64, qc);
        int32_t Q = salca_relevance_lut(qc, 64, lut);
        uint8_t rec[20];
        float s, z, A;
        salca_key_record_encode(k, heavy, 64, rec, &s, &z);
        salca_relevance(lut, Q, rec, 20, &s, &z, 64, 1, &A);
        salca_key_record_decode(rec, 64, dq);
        double ref = 0;
        int32_t D = 0;
        for (int m = 0; m < 64; m++) {
            ref += (double)qc[m] * dq[m];
            D += qc[m] * (int32_t)salca_key_record_code(rec, m);
        }
        assert_true(abs(D) <= 9 * 64);
        double bound = 0x1p-10 * fabs(A) + 1e-6 * (fabs((double)s * D) + fabs((double)z * Q));
        if (fabs(A - ref) > bound)
            fail_msg("trial %d: A %g vs %g (bound %g)", trial, A, ref, bound);
    }
}

/* INT8 (docs/salca.md#int8-attention): codes in [-127, 127], error <= sigma/2, zero vector gives
 * sigma 0. */
static void test_int8(void **state)
{
    (void)state;
    struct rng r;
    rng_stream(&r, seed, "test.int8", 0, 0);
    float x[128];
    int8_t x8[128];
    for (int trial = 0; trial < 1000; trial++) {
        for (int j = 0; j < 128; j++)
            x[j] = (float)(rng_normal(&r) * (trial + 1));
        float sg = salca_int8_quant(x, 128, x8);
        for (int j = 0; j < 128; j++) {
            assert_true(x8[j] >= -127 && x8[j] <= 127);
            assert_true(fabs((double)sg * x8[j] - x[j]) <= sg * 0.5 * (1 + 1e-5));
        }
    }
    memset(x, 0, sizeof x);
    assert_true(salca_int8_quant(x, 128, x8) == 0.0f);
    for (int j = 0; j < 128; j++)
        assert_int_equal(x8[j], 0);
}

int main(void)
{
    seed = th_seed(seed);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fp16),          cmocka_unit_test(test_key_record),
        cmocka_unit_test(test_query_scaling), cmocka_unit_test(test_relevance),
        cmocka_unit_test(test_int8),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
