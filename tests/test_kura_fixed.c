/*
 * Tests of formats/kura_fixed: the bit-exact fixed-point drift of docs/kura.md#fixed-point-drift
 * (the LUT check, registers, the constant-field check, box-sum map = direct per-pixel definition,
 * error bound on random maps, the c_max limit of the schedule check) and the wrap check.
 * Randomized tests print their seed; set ACCELTRACE_SEED to repeat one.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "common/mem.h"
#include "common/rng.h"
#include "common/threads.h"
#include "formats/kura_fixed.h"
#include "tests/helpers/test_helpers.h"

/* docs/kura.md#fixed-point-drift: L[0] = 0, L[2048] = 23170, L[4096] = 32767; the clamp hits k =
 * 4082..4096. */
static void test_lut_values(void **state)
{
    (void)state;
    const int16_t *L = kura_lut();
    assert_int_equal(L[0], 0);
    assert_int_equal(L[2048], 23170);
    assert_int_equal(L[4096], 32767);
    int clamped = 0;
    for (int k = 0; k < KURA_LUT_N; k++) {
        double v = floor(32768.0 * sin(M_PI * k / 8192.0) + 0.5);
        if (v > 32767.0) {
            clamped++;
            assert_true(k >= 4082);
        }
        if (k > 0)
            assert_true(L[k] >= L[k - 1]);
    }
    assert_int_equal(clamped, 15);
}

/* all 65,536 codes; |sin_q/2^15 - sin theta_q| <= 2^-15, cos alike; odd and even. */
static void test_sin_cos_all_codes(void **state)
{
    (void)state;
    double max_s = 0, max_c = 0;
    int32_t arg_s = 0;
    for (int32_t i = -32768; i <= 32767; i++) {
        int16_t q = (int16_t)i;
        double th = kura_q_theta(q);
        int32_t s = kura_sin_q(q), c = kura_cos_q(q);
        assert_true(s >= -32767 && s <= 32767);
        assert_true(c >= -32767 && c <= 32767);
        double es = fabs(s / 32768.0 - sin(th)), ec = fabs(c / 32768.0 - cos(th));
        assert_true(es <= 1.0 / 32768.0 + 1e-15);
        assert_true(ec <= 1.0 / 32768.0 + 1e-15);
        if (es > max_s) {
            max_s = es;
            arg_s = i;
        }
        if (ec > max_c)
            max_c = ec;
        int16_t neg = (int16_t)(uint16_t)(-(uint32_t)(uint16_t)q);
        assert_int_equal(kura_sin_q(neg), -s); /* exactly odd */
        assert_int_equal(kura_cos_q(neg), c);  /* exactly even */
    }
    /* docs/kura.md#fixed-point-drift: the largest sample error is exactly 1 LSB, sin_q at +-pi/2.
     */
    assert_true(fabs(max_s - 1.0 / 32768.0) < 1e-12);
    assert_true(fabs(max_c - 1.0 / 32768.0) < 1e-12);
    assert_true(arg_s == 16384 || arg_s == -16384);
    assert_int_equal(kura_sin_q(16384), 32767);
    assert_int_equal(kura_cos_q(0), 32767);
    assert_int_equal(kura_cos_q(-32768), -32767);
    assert_int_equal(kura_sin_q(0), 0);
    assert_int_equal(kura_sin_q(-32768), 0);
}

static void test_quantize_and_shift(void **state)
{
    (void)state;
    assert_int_equal(kura_quantize(0.0), 0);
    assert_int_equal(kura_quantize(0.7),
                     7301); /* the activity check: theta_c = 0.7 gives q = 7301 */
    assert_int_equal(kura_quantize(-M_PI), -32768);
    assert_int_equal(kura_quantize(M_PI), -32768); /* wrap16 of 32768 */
    assert_int_equal(kura_quantize(3 * M_PI), -32768);
    assert_int_equal(kura_quantize(-M_PI / 2), -16384);
    for (int32_t i = -32768; i <= 32767; i += 7)
        assert_int_equal(kura_quantize(kura_q_theta((int16_t)i)), i);
    /* floor division by 2^k for negative values */
    const int64_t xs[] = {-1, -32767, -32768, -32769,        -65536,       0,
                          1,  32767,  32768,  INT64_MIN / 2, INT64_MAX / 2};
    for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++) {
        double f = floor((double)xs[i] / 32768.0);
        if (fabs((double)xs[i]) < 1e15)
            assert_true((double)kura_shr_floor(xs[i], 15) == f);
    }
    assert_int_equal(kura_shr_floor(-1, 15), -1);
    /* the fast map path equals the definition floor((theta*32768)/pi + 0.5) mod 2^16 */
    struct rng r;
    rng_stream(&r, 99, "quantize", 0, 0);
    enum { NQ = 200000 };
    static double th[NQ];
    static int16_t qm[NQ];
    for (int i = 0; i < NQ; i++) {
        double scale = i % 4 == 0 ? 4.0 : i % 4 == 1 ? 1e3 : i % 4 == 2 ? 1e14 : 1e300;
        th[i] = (2 * rng_uniform(&r) - 1) * scale;
        if (i % 1000 == 7) /* exact half-LSB ties */
            th[i] = ((double)(int)(rng_below(&r, 65536) - 32768) + 0.5) * M_PI / 32768.0;
    }
    kura_quantize_map(th, NQ, qm);
    for (int i = 0; i < NQ; i++) {
        double v = floor((th[i] * 32768.0) / M_PI + 0.5);
        int16_t ref = (int16_t)(uint16_t)((uint64_t)(int64_t)fmod(v, 65536.0) & 0xFFFFu);
        assert_int_equal(qm[i], ref);
        assert_int_equal(kura_quantize(th[i]), ref);
    }
    assert_int_equal(kura_quantize(NAN), 0);
    assert_int_equal(kura_shr_floor(-32769, 15), -2);
}

/* docs/kura.md#fixed-point-drift: at t100 step 99 (K = 0.03, K_ref = 0.045, psi = 0) G = 820278,
 * R_c = 30760437. */
static void test_regs_t100_step99(void **state)
{
    (void)state;
    struct kura_regs g;
    assert_int_equal(kura_regs_init(&g, 0.03, 1.5 * 0.03, 0.0), 0);
    assert_int_equal(g.g, 820278);
    assert_int_equal(g.r_c, 30760437);
    assert_int_equal(g.r_s, 0);
    assert_int_not_equal(kura_regs_init(&g, -1e-9, 0, 0), 0);
    assert_int_not_equal(kura_regs_init(&g, NAN, 0, 0), 0);
    /* Worst-step bound of docs/kura.md#fixed-point-drift: 5.83e-6 rad at t100. */
    assert_true(fabs(kura_drift_bound(0.03, 0.045, 0) - 5.83e-6) < 0.005e-6);
    assert_true(fabs(kura_delta_u() - 3.124e-3) < 0.001e-3);
    assert_true(fabs(kura_eps_sample() - 4.579e-5) < 0.001e-5);
}

/* (limit part): c_max is accepted and gives d = 2^31 - 1 on the documented map; one ulp
 * above gives d = 2^31 and is rejected. */
static void test_c_max_limit(void **state)
{
    (void)state;
    int16_t q[25];
    for (int i = 0; i < 25; i++)
        q[i] = -98;
    q[12] = -16482;
    struct kura_regs g;
    assert_int_equal(kura_regs_init(&g, KURA_C_MAX, 1.5 * KURA_C_MAX, 0.0), 0);
    assert_true(kura_d_pixel(q, 5, 5, 2, 2, &g, NULL) == INT32_MAX);
    int32_t d[25];
    assert_int_equal(kura_fixed_drift_map(q, 5, 5, &g, NULL, d, NULL), 0);
    assert_int_equal(d[12], INT32_MAX);
    double up = nextafter(KURA_C_MAX, 2.0);
    assert_int_not_equal(kura_regs_init(&g, up, 1.5 * up, 0.0), 0);
    /* The same registers computed by hand one ulp above overflow int32. */
    struct kura_regs h = {(int32_t)floor(up / (25.0 * M_PI) * 2147483648.0 + 0.5), 0,
                          (int32_t)floor(1.5 * up / M_PI * 2147483648.0 + 0.5)};
    assert_int_equal(h.r_c, 1309451975);
    assert_true(kura_d_pixel(q, 5, 5, 2, 2, &h, NULL) == (int64_t)1 << 31);
    assert_int_equal(kura_fixed_drift_map(q, 5, 5, &h, NULL, d, NULL), -3 /* ERR_DATA */);
}

/* constant 5x5 field for every q: u_q = 0, d = reference term, float neighbour term 0. */
static void test_constant_field(void **state)
{
    (void)state;
    struct kura_regs g;
    assert_int_equal(kura_regs_init(&g, 0.03, 0.045, 0.0), 0);
    int16_t q[25];
    int32_t uq[25], d[25];
    double u[25];
    for (int32_t v = -32768; v <= 32767; v++) {
        for (int i = 0; i < 25; i++)
            q[i] = (int16_t)v;
        assert_int_equal(kura_fixed_drift_map(q, 5, 5, &g, uq, d, NULL), 0);
        int64_t ref = kura_shr_floor((int64_t)g.r_s * kura_cos_q((int16_t)v) -
                                         (int64_t)g.r_c * kura_sin_q((int16_t)v) + (1 << 14),
                                     15);
        for (int i = 0; i < 25; i++) {
            assert_int_equal(uq[i], 0);
            assert_int_equal(d[i], ref);
        }
        if ((v & 255) == 0) { /* float neighbour term (K_ref = 0) is exactly 0 */
            kura_float_drift_direct_q(q, 5, 5, 0.03, 0.0, 0.0, u, NULL);
            for (int i = 0; i < 25; i++)
                assert_true(u[i] == 0.0);
        }
    }
}

/* The box-sum map equals the per-pixel definition bit for bit (sizes incl. small/odd). */
static void test_map_equals_pixel(void **state)
{
    (void)state;
    uint64_t seed = th_seed(20261130u);
    struct rng r;
    rng_stream(&r, seed, "map-vs-pixel", 0, 0);
    const size_t sizes[][2] = {{5, 5}, {7, 13}, {1, 1}, {3, 8}, {37, 23}, {64, 64}};
    struct thread_pool *pool = pool_new(2);
    assert_non_null(pool);
    struct kura_regs g;
    assert_int_equal(kura_regs_init(&g, 0.5, 0.75, 0.3), 0);
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        size_t h = sizes[s][0], w = sizes[s][1], n = h * w;
        int16_t *q = mem_alloc(n * sizeof *q);
        int32_t *uq = mem_alloc(n * 4), *d = mem_alloc(n * 4), *d2 = mem_alloc(n * 4);
        for (size_t i = 0; i < n; i++)
            q[i] = (int16_t)(uint16_t)rng_below(&r, 65536);
        assert_int_equal(kura_fixed_drift_map(q, h, w, &g, uq, d, NULL), 0);
        assert_int_equal(kura_fixed_drift_map(q, h, w, &g, NULL, d2, pool), 0);
        for (size_t i = 0; i < n; i++) {
            int32_t u1;
            int64_t d1 = kura_d_pixel(q, h, w, i / w, i % w, &g, &u1);
            assert_int_equal(u1, uq[i]);
            assert_int_equal(d1, d[i]);
            assert_int_equal(d2[i], d[i]);
        }
        mem_free(q);
        mem_free(uq);
        mem_free(d);
        mem_free(d2);
    }
    pool_free(pool);
}

/* >= 100 uniform maps, sides 5..70, K in {3e-5, 0.01, 0.03}, K_ref = 1.5 K, psi = 0:
 * every pixel |d pi/2^31 - u_f64(theta_q)| <= X_i (observed about 0.3 X_i). Also the
 * neighbour part alone: |u_q 2^-15 - sum| <= dU. */
static void test_error_bound(void **state)
{
    (void)state;
    uint64_t seed = th_seed(20261130u);
    struct rng r;
    rng_stream(&r, seed, "k8", 0, 0);
    const double ks[3] = {3e-5, 0.01, 0.03};
    double worst_ratio = 0, worst_du = 0;
    for (int m = 0; m < 120; m++) {
        size_t h = 5 + rng_below(&r, 66), w = 5 + rng_below(&r, 66), n = h * w;
        double k = ks[m % 3], kref = 1.5 * k;
        int16_t *q = mem_alloc(n * sizeof *q);
        int32_t *uq = mem_alloc(n * 4), *d = mem_alloc(n * 4);
        double *u = mem_alloc(n * 8), *nb = mem_alloc(n * 8);
        for (size_t i = 0; i < n; i++)
            q[i] = kura_quantize(-M_PI + 2 * M_PI * rng_uniform(&r));
        struct kura_regs g;
        assert_int_equal(kura_regs_init(&g, k, kref, 0.0), 0);
        assert_int_equal(kura_fixed_drift_map(q, h, w, &g, uq, d, NULL), 0);
        assert_int_equal(kura_float_drift_direct_q(q, h, w, k, kref, 0.0, u, NULL), 0);
        assert_int_equal(kura_float_drift_direct_q(q, h, w, 25.0, 0.0, 0.0, nb, NULL), 0);
        double x = kura_drift_bound(k, kref, 0.0);
        for (size_t i = 0; i < n; i++) {
            double e = fabs(d[i] * M_PI / 2147483648.0 - u[i]);
            if (e / x > worst_ratio)
                worst_ratio = e / x;
            assert_true(e <= x);
            double du = fabs(uq[i] / 32768.0 - nb[i]);
            if (du > worst_du)
                worst_du = du;
            assert_true(du <= kura_delta_u());
        }
        mem_free(q);
        mem_free(uq);
        mem_free(d);
        mem_free(u);
        mem_free(nb);
    }
    printf("worst error / X_i = %.3f, worst |u_q 2^-15 - sum| = %.3g (dU %.4g)\n", worst_ratio,
           worst_du, kura_delta_u());
}

/* wrap keeps [-pi, pi), sin/cos within 1e-12, and exact near multiples of pi. */
static void test_wrap(void **state)
{
    (void)state;
    struct rng r;
    rng_stream(&r, th_seed(20261130u), "k2", 0, 0);
    for (int i = 0; i < 1000000; i++) {
        double x = -100.0 + 200.0 * rng_uniform(&r);
        double y = kura_wrap(x);
        assert_true(y >= -M_PI && y < M_PI);
        assert_true(fabs(sin(y) - sin(x)) < 1e-12);
        assert_true(fabs(cos(y) - cos(x)) < 1e-12);
    }
    for (int k = -2001; k <= 2001; k++) {
        double x = k * M_PI;
        for (int j = 0; j < 4; j++)
            x = nextafter(x, -INFINITY);
        for (int j = 0; j <= 8; j++) {
            double y = kura_wrap(x);
            assert_true(y >= -M_PI && y < M_PI);
            x = nextafter(x, INFINITY);
        }
    }
    double below = nextafter(M_PI, 0);
    assert_true(kura_wrap(below) == below);
    assert_true(kura_wrap(M_PI) == -M_PI);
    assert_true(kura_wrap(-M_PI) == -M_PI);
    assert_true(kura_wrap(0.0) == 0.0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lut_values),
        cmocka_unit_test(test_sin_cos_all_codes),
        cmocka_unit_test(test_quantize_and_shift),
        cmocka_unit_test(test_regs_t100_step99),
        cmocka_unit_test(test_c_max_limit),
        cmocka_unit_test(test_constant_field),
        cmocka_unit_test(test_map_equals_pixel),
        cmocka_unit_test(test_error_bound),
        cmocka_unit_test(test_wrap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
