/*
 * Tests of the DiSC sampler (docs/disc.md#sampler, the sampler check): timestep lists for K = 20
 * and K = 6 (half away from zero, not numpy's half to even), and a model stub with eps = 0
 * giving x_K = x_0 / alpha_999 (factor 157.41046, relative 1e-6) for DPM-Solver++ 2M and
 * DDIM; dit_sample_from stopped after any step and started again at the next one from the
 * saved x and x0hat gives the uninterrupted run's latents bit for bit.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <math.h>

#include "capture/disc/dit_sampler.h"
#include "common/err.h"

static void test_timesteps(void **state)
{
    (void)state;
    uint32_t want20[20] = {999, 949, 899, 849, 799, 749, 699, 649, 599, 549,
                           500, 450, 400, 350, 300, 250, 200, 150, 100, 50};
    for (int k = 0; k < 20; k++)
        assert_int_equal(dit_timestep(k, 20), want20[k]);
    uint32_t want6[6] = {999, 833, 666, 500, 333, 167};
    for (int k = 0; k < 6; k++)
        assert_int_equal(dit_timestep(k, 6), want6[k]);
}

static int zero_eps(void *ctx, int k, uint32_t t, const float *x, float *eps)
{
    (void)k, (void)t, (void)x;
    memset(eps, 0, *(size_t *)ctx * sizeof(float));
    return 0;
}

static void test_zero_model(void **state)
{
    (void)state;
    /* 1/sqrt(alpha_bar_999) of the linear schedule (the sampler check). */
    assert_true(fabs(1.0 / sqrt(dit_alpha_bar(999)) / 157.41046 - 1.0) < 1e-6);
    for (int kind = 0; kind < 2; kind++)
        for (int K = 6; K <= 20; K += 14) {
            uint32_t t[20];
            double a[21], s[21], l[21];
            struct dit_schedule sc = {K, t, a, s, l};
            dit_schedule_fill(&sc, K);
            assert_true(a[K] == 1.0 && s[K] == 0.0 && isinf(l[K]));
            size_t n = 5;
            float x[5] = {1.0f, -0.5f, 0.25f, 2.0f, -3.0f}, x0[5];
            memcpy(x0, x, sizeof x);
            float traj[20 * 5];
            assert_int_equal(
                dit_sample((enum dit_sampler_kind)kind, &sc, x, n, zero_eps, NULL, &n, traj), 0);
            for (size_t i = 0; i < n; i++) {
                double want = x0[i] * 157.41046;
                assert_true(fabs(x[i] / want - 1.0) < 1e-6);
                assert_true(traj[(size_t)(K - 1) * n + i] == x[i]);
            }
        }
}

/* A model stub whose eps depends on x and k, so the history matters. */
static int wavy_eps(void *ctx, int k, uint32_t t, const float *x, float *eps)
{
    (void)t;
    for (size_t i = 0; i < *(size_t *)ctx; i++)
        eps[i] = sinf(x[i] * (float)(k + 1)) + 0.1f * (float)i;
    return 0;
}

/* Stops the sampler after step `stop` (post callback). */
struct stopper {
    size_t n;
    int stop;
};

static int stop_post(void *ctx, int k, const float *x_next)
{
    (void)x_next;
    return k == ((struct stopper *)ctx)->stop ? ERR_INTERNAL : 0;
}

static int wavy_eps_s(void *ctx, int k, uint32_t t, const float *x, float *eps)
{
    return wavy_eps(&((struct stopper *)ctx)->n, k, t, x, eps);
}

static void test_resume_from(void **state)
{
    (void)state;
    enum { K = 8, N = 6 };
    uint32_t t[K];
    double a[K + 1], s[K + 1], l[K + 1];
    struct dit_schedule sc = {K, t, a, s, l};
    dit_schedule_fill(&sc, K);
    for (int kind = 0; kind < 2; kind++)
        for (int stop = 0; stop < K; stop++) {
            size_t n = N;
            float x[N], x0p[N] = {0}, ref[N], traj[K * N], rtraj[K * N];
            for (int i = 0; i < N; i++)
                x[i] = ref[i] = 0.3f * (float)i - 0.7f;
            assert_int_equal(
                dit_sample((enum dit_sampler_kind)kind, &sc, ref, n, wavy_eps, NULL, &n, rtraj), 0);
            struct stopper st = {N, stop};
            assert_int_equal(dit_sample_from((enum dit_sampler_kind)kind, &sc, 0, x, x0p, n,
                                             wavy_eps_s, stop_post, &st, traj),
                             ERR_INTERNAL);
            st.stop = -1;
            assert_int_equal(dit_sample_from((enum dit_sampler_kind)kind, &sc, stop + 1, x, x0p, n,
                                             wavy_eps_s, stop_post, &st, traj),
                             0);
            assert_memory_equal(x, ref, sizeof x);
            assert_memory_equal(traj, rtraj, sizeof traj);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_timesteps),
        cmocka_unit_test(test_zero_model),
        cmocka_unit_test(test_resume_from),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
