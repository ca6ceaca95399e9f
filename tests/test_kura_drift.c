/*
 * Tests of capture/kura/kura_drift and the drift acceptance of docs/kura.md:
 * (separable box sums = direct sum within 1e-12 rad), the ramp check (periodic ramps), constant
 * fields, the fixed-vs-float property test on random fields of several sizes through the
 * capture's evaluator, and thread-count independence.
 * Randomized tests print their seed; ACCELTRACE_SEED repeats one.
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

#include "capture/kura/kura_data.h"
#include "capture/kura/kura_drift.h"
#include "capture/kura/kura_sde.h"
#include "common/mem.h"
#include "common/rng.h"
#include "common/threads.h"
#include "formats/kura_fixed.h"
#include "tests/helpers/test_helpers.h"

static double *uniform_map(struct rng *r, size_t n)
{
    double *t = mem_alloc(n * sizeof(double));
    for (size_t i = 0; i < n; i++)
        t[i] = -M_PI + 2 * M_PI * rng_uniform(r);
    return t;
}

/* box-sum path = direct sum within 1e-12 rad on uniform 5x5, 7x13 and 96x96 maps. */
static void test_box_equals_direct(void **state)
{
    (void)state;
    struct rng r;
    rng_stream(&r, th_seed(11u), "k4", 0, 0);
    const size_t sz[][2] = {{5, 5}, {7, 13}, {96, 96}, {3, 4}, {1, 1}};
    struct thread_pool *pool = pool_new(2);
    double worst = 0;
    for (size_t s = 0; s < sizeof sz / sizeof sz[0]; s++) {
        size_t h = sz[s][0], w = sz[s][1], n = h * w;
        double *t = uniform_map(&r, n);
        double *ud = mem_alloc(n * 8), *ub = mem_alloc(n * 8), *ub2 = mem_alloc(n * 8);
        const double ks[] = {0.03, 1.0, 25.0};
        for (int k = 0; k < 3; k++) {
            kura_float_drift_direct(t, h, w, ks[k], 1.5 * ks[k], 0.0, ud, NULL);
            assert_int_equal(kura_float_drift_box(t, h, w, ks[k], 1.5 * ks[k], 0.0, ub, NULL), 0);
            assert_int_equal(kura_float_drift_box(t, h, w, ks[k], 1.5 * ks[k], 0.0, ub2, pool), 0);
            for (size_t i = 0; i < n; i++) {
                double d = fabs(ud[i] - ub[i]);
                if (d > worst)
                    worst = d;
                assert_true(d <= 1e-12);
                assert_true(ub[i] == ub2[i]); /* threads do not change bits */
            }
        }
        mem_free(t);
        mem_free(ud);
        mem_free(ub);
        mem_free(ub2);
    }
    pool_free(pool);
    printf("worst |box - direct| = %.3g rad\n", worst);
    /* far outside the fast sin/cos range (libm fallback): theta + 2 pi 200000 gives the
     * same drift within the input's own rounding (ulp(1.3e6) = 2.3e-10) */
    size_t n = 9 * 11;
    double *t = uniform_map(&r, n), *big = mem_alloc(n * 8), *u1 = mem_alloc(n * 8),
           *u2 = mem_alloc(n * 8);
    for (size_t i = 0; i < n; i++)
        big[i] = t[i] + (i % 2 ? 2 * M_PI * 200000 : 0.0);
    assert_int_equal(kura_float_drift_box(t, 9, 11, 1.0, 1.5, 0.0, u1, NULL), 0);
    assert_int_equal(kura_float_drift_box(big, 9, 11, 1.0, 1.5, 0.0, u2, NULL), 0);
    for (size_t i = 0; i < n; i++)
        assert_true(fabs(u1[i] - u2[i]) < 1e-8);
    mem_free(t);
    mem_free(big);
    mem_free(u1);
    mem_free(u2);
}

/* periodic ramps. */
static void test_ramp(void **state)
{
    (void)state;
    const int nxy[3][2] = {{1, 0}, {0, 1}, {2, 3}};
    const size_t sz[3][2] = {{96, 96}, {37, 23}, {64, 64}};
    double obs_unq = 0, obs_q = 0, obs_du = 0;
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++) {
            size_t h = sz[b][0], w = sz[b][1], n = h * w;
            char prm[64];
            snprintf(prm, sizeof prm, "nx=%d,ny=%d", nxy[a][0], nxy[a][1]);
            struct kura_data_spec spec;
            assert_int_equal(kura_data_parse("ramp", prm, &spec, NULL), 0);
            double *t = mem_alloc(n * 8), *nb = mem_alloc(n * 8), *nbq = mem_alloc(n * 8);
            int16_t *q = mem_alloc(n * 2);
            int32_t *uq = mem_alloc(n * 4);
            assert_int_equal(kura_data_generate(&spec, h, w, 1, t, NULL, NULL, NULL), 0);
            /* neighbour sum: k = 25, no reference term */
            kura_float_drift_direct(t, h, w, 25.0, 0.0, 0.0, nb, NULL);
            for (size_t i = 0; i < n; i++)
                q[i] = kura_quantize(t[i]);
            assert_int_equal(kura_float_drift_direct_q(q, h, w, 25.0, 0.0, 0.0, nbq, NULL), 0);
            struct kura_regs g;
            kura_regs_init(&g, 0.03, 0.045, 0.0);
            assert_int_equal(kura_fixed_drift_map(q, h, w, &g, uq, NULL, NULL), 0);
            for (size_t i = 0; i < n; i++) {
                assert_true(fabs(nb[i]) <= 1e-12);
                if (fabs(nb[i]) > obs_unq)
                    obs_unq = fabs(nb[i]);
                double du = fabs(uq[i] / 32768.0 - nbq[i]);
                assert_true(du <= kura_delta_u());
                if (du > obs_du)
                    obs_du = du;
                if (b == 2) { /* 64x64: exact in Q1.15 */
                    int32_t qe = (int32_t)(uint16_t)(1024 * (nxy[a][0] * (int)(i % w) +
                                                             nxy[a][1] * (int)(i / w)));
                    assert_int_equal((uint16_t)q[i], qe);
                    assert_true(fabs(nbq[i]) <= 1e-12);
                    assert_true(fabs(uq[i] / 32768.0) <= kura_delta_u());
                } else if (fabs(nbq[i]) > obs_q) {
                    obs_q = fabs(nbq[i]);
                }
            }
            mem_free(t);
            mem_free(nb);
            mem_free(nbq);
            mem_free(q);
            mem_free(uq);
        }
    printf("unquantized <= %.3g, on theta_q <= %.3g, |u_q - sum_q| <= %.3g (dU %.4g)\n", obs_unq,
           obs_q, obs_du, kura_delta_u());
}

/* Constant field (generator const): neighbour term zero in float and fixed. */
static void test_constant_field(void **state)
{
    (void)state;
    struct kura_data_spec spec;
    assert_int_equal(kura_data_parse("const", "theta=-2.5", &spec, NULL), 0);
    size_t h = 13, w = 9, n = h * w;
    double *t = mem_alloc(n * 8), *u = mem_alloc(n * 8);
    assert_int_equal(kura_data_generate(&spec, h, w, 3, t, NULL, NULL, NULL), 0);
    kura_float_drift_direct(t, h, w, 0.7, 0.0, 0.0, u, NULL);
    for (size_t i = 0; i < n; i++)
        assert_true(u[i] == 0.0);
    struct kura_drift dr;
    assert_int_equal(kura_drift_init(&dr, h, w, NULL), 0);
    double em, ea;
    assert_int_equal(kura_drift_eval(&dr, t, KURA_DRIFT_FIXED, 0.03, 0.0, 0.0, true, u, &em, &ea),
                     0);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(dr.u_q[i], 0);
        assert_int_equal(dr.d[i], 0);
        assert_true(u[i] == 0.0);
    }
    kura_drift_release(&dr);
    mem_free(t);
    mem_free(u);
}

/* Issue acceptance 3: fixed vs float within X_i on random fields of several sizes, through
 * the capture's evaluator (both modes), with 1 and 2 threads giving the same bits. */
static void test_fixed_vs_float_property(void **state)
{
    (void)state;
    uint64_t seed = th_seed(11u);
    struct rng r;
    rng_stream(&r, seed, "prop", 0, 0);
    struct thread_pool *pool = pool_new(2);
    double worst = 0;
    for (int m = 0; m < 40; m++) {
        size_t h = 5 + rng_below(&r, 120), w = 5 + rng_below(&r, 120), n = h * w;
        double k = 1e-4 + 0.2 * rng_uniform(&r), kref = 1.5 * k;
        double *t = uniform_map(&r, n);
        double *u1 = mem_alloc(n * 8), *u2 = mem_alloc(n * 8), *u3 = mem_alloc(n * 8);
        struct kura_drift a, b;
        assert_int_equal(kura_drift_init(&a, h, w, NULL), 0);
        assert_int_equal(kura_drift_init(&b, h, w, pool), 0);
        double em1, ea1, em2, ea2, em3 = -1, ea3 = -1;
        assert_int_equal(kura_drift_eval(&a, t, KURA_DRIFT_FIXED, k, kref, 0, true, u1, &em1, &ea1),
                         0);
        assert_int_equal(kura_drift_eval(&b, t, KURA_DRIFT_FIXED, k, kref, 0, true, u2, &em2, &ea2),
                         0);
        assert_memory_equal(u1, u2, n * 8);
        assert_true(em1 == em2 && ea1 == ea2);
        double x = kura_drift_bound(k, kref, 0);
        assert_true(em1 <= x);
        assert_true(ea1 <= em1);
        if (em1 / x > worst)
            worst = em1 / x;
        /* float mode: u is the direct sum on unquantized theta; the check is the same */
        assert_int_equal(kura_drift_eval(&a, t, KURA_DRIFT_FLOAT, k, kref, 0, true, u3, &em3, &ea3),
                         0);
        assert_true(em3 == em1 && ea3 == ea1);
        for (size_t i = 0; i < n; i++) /* quantization moves theta by <= LSB/2 */
            assert_true(fabs(u3[i] - u1[i]) <= x + (k * 24.0 / 25.0 * 2 + kref) * 4.8e-5 * 1.01);
        kura_drift_release(&a);
        kura_drift_release(&b);
        mem_free(t);
        mem_free(u1);
        mem_free(u2);
        mem_free(u3);
    }
    pool_free(pool);
    printf("property: worst max error / X_i = %.3f over 40 random fields\n", worst);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_box_equals_direct),
        cmocka_unit_test(test_ramp),
        cmocka_unit_test(test_constant_field),
        cmocka_unit_test(test_fixed_vs_float_property),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
