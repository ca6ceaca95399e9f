/*
 * Tests of capture/kura/kura_sde: the schedule check (schedule), the von Mises check (von Mises
 * terminal draw), the prior and oracle scores of docs/kura.md (the wrap check is tested with
 * formats/kura_fixed in test_kura_fixed).
 * Randomized tests print their seed; ACCELTRACE_SEED repeats one.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "capture/kura/kura_sde.h"
#include "common/rng.h"
#include "formats/kura_fixed.h"
#include "tests/helpers/test_helpers.h"

static void check_preset(const char *name, int t_exp, double kappa_exp)
{
    int t;
    double c0, ce, b0, be;
    assert_int_equal(kura_preset(name, &t, &c0, &ce, &b0, &be, NULL), 0);
    assert_int_equal(t, t_exp);
    struct kura_schedule s;
    assert_int_equal(kura_schedule_init(&s, name, t, c0, ce, b0, be, NULL), 0);
    /* kappa within 1e-12 */
    assert_true(fabs(s.kappa - kappa_exp) < 1e-12);
    /* endpoints exact */
    assert_true(s.c[0] == c0 && s.beta[0] == b0);
    assert_true(s.c[t - 1] == ce && s.beta[t - 1] == be);
    for (int i = 0; i < t; i++) {
        double ci = c0 + (ce - c0) * i / (t - 1), bi = b0 + (be - b0) * i / (t - 1);
        assert_true(fabs(s.c[i] - ci) <= 1e-15 * fabs(ci));
        assert_true(fabs(s.beta[i] - bi) <= 1e-15 * fabs(bi));
        assert_true(s.sigma[i] == sqrt(s.beta[i]));
    }
    kura_schedule_release(&s);
}

/* kappa 1.2 (t100, t1000), 8/7 (t300); exact endpoints; linear interior; c_max. */
static void test_schedule(void **state)
{
    (void)state;
    check_preset("t100", 100, 1.2);
    check_preset("t300", 300, 8.0 / 7.0);
    check_preset("t1000", 1000, 1.2);
    struct kura_schedule s;
    assert_int_equal(kura_schedule_init(&s, "t100", 100, 3e-5, 0.03, 1e-4, 0.1, NULL), 0);
    assert_true(s.c[99] == 0.03 && s.beta[99] == 0.1);
    /* prior kappa_i = 1.2 within 1e-12 at every t100 step (docs/kura.md#score-sources) */
    for (int i = 0; i < 100; i++)
        assert_true(fabs(kura_prior_kappa(&s, i) - 1.2) < 1e-12);
    /* threshold at t100: 0.030558 */
    assert_true(fabs(kura_recon_bound(&s) - 0.030558) < 5e-7);
    kura_schedule_release(&s);
    /* c_end = c_max accepted; the next double up rejected */
    assert_int_equal(kura_schedule_init(&s, NULL, 100, 3e-5, KURA_C_MAX, 1e-4, 0.1, NULL), 0);
    kura_schedule_release(&s);
    struct errmsg e = {0};
    assert_int_equal(
        kura_schedule_init(&s, NULL, 100, 3e-5, nextafter(KURA_C_MAX, 2), 1e-4, 0.1, &e),
        ERR_USAGE);
    printf("rejected: %s\n", errmsg_text(&e));
    /* other rejections: T < 3, beta <= 0, c < 0 */
    assert_int_equal(kura_schedule_init(&s, NULL, 2, 3e-5, 0.03, 1e-4, 0.1, NULL), ERR_USAGE);
    assert_int_equal(kura_schedule_init(&s, NULL, 100, 3e-5, 0.03, 0.0, 0.1, NULL), ERR_USAGE);
    assert_int_equal(kura_schedule_init(&s, NULL, 100, 3e-5, 0.03, 1e-4, -1, NULL), ERR_USAGE);
    assert_int_equal(kura_schedule_init(&s, NULL, 100, -1e-9, 0.03, 1e-4, 0.1, NULL), ERR_USAGE);
    assert_int_equal(
        kura_preset("t42", &(int){0}, &(double){0}, &(double){0}, &(double){0}, &(double){0}, NULL),
        ERR_USAGE);
    /* t300, t1000 thresholds (the reconstruction check): 0.016764 and 0.009836 */
    int t;
    double c0, ce, b0, be;
    kura_preset("t300", &t, &c0, &ce, &b0, &be, NULL);
    kura_schedule_init(&s, "t300", t, c0, ce, b0, be, NULL);
    assert_true(fabs(kura_recon_bound(&s) - 0.016764) < 5e-7);
    kura_schedule_release(&s);
    kura_preset("t1000", &t, &c0, &ce, &b0, &be, NULL);
    kura_schedule_init(&s, "t1000", t, c0, ce, b0, be, NULL);
    assert_true(fabs(kura_recon_bound(&s) - 0.009836) < 5e-7);
    kura_schedule_release(&s);
}

/* kappa = 1.2, 10^6 draws: mean cos = I1/I0 = 0.51278 +- 0.003, mean sin = 0 +- 0.003. */
static void test_von_mises(void **state)
{
    (void)state;
    struct rng r;
    rng_stream(&r, th_seed(7u), "kura/terminal", 0, 0);
    double sc = 0, ss = 0;
    const int n = 1000000;
    for (int i = 0; i < n; i++) {
        double th = kura_wrap(rng_von_mises(&r, 0.0, 1.2));
        assert_true(th >= -M_PI && th < M_PI);
        sc += cos(th);
        ss += sin(th);
    }
    printf("mean cos %.5f (0.51278), mean sin %.5f\n", sc / n, ss / n);
    assert_true(fabs(sc / n - 0.51278) < 0.003);
    assert_true(fabs(ss / n) < 0.003);
}

/* docs/kura.md#score-sources: oracle score, including the min-shift case |delta| > 38.6 sigma. */
static void test_oracle_score(void **state)
{
    (void)state;
    /* near mu the score is -delta/sigma^2 */
    double s = kura_oracle_score(0.001, 0.0, 0.1);
    assert_true(fabs(s - (-0.001 / 0.01)) < 1e-9);
    /* sigma = 0.01, delta = 0.5: without the min-shift all weights underflow (NaN) */
    s = kura_oracle_score(0.5, 0.0, 0.01);
    assert_true(isfinite(s));
    assert_true(fabs(s - (-0.5 / 1e-4)) < 1e-6 * 5000);
    /* wrapped: theta just below pi around mu = -pi + 0.01 has delta = -0.01 - tiny */
    s = kura_oracle_score(M_PI - 0.005, -M_PI + 0.005, 0.1);
    assert_true(fabs(s - 0.01 / 0.01) < 1e-6);
    /* large sigma: symmetric point delta = pi has score ~0 by symmetry of the 7 terms */
    s = kura_oracle_score(-M_PI, 0.0, 1.0);
    assert_true(fabs(s) < 0.05);
}

static void test_mapping_and_stats(void **state)
{
    (void)state;
    assert_true(fabs(kura_x_to_theta(1.0) - 0.9 * M_PI) < 1e-15);
    assert_true(kura_theta_to_x(M_PI) == 1.0);
    assert_true(kura_theta_to_x(-M_PI) == -1.0);
    assert_true(fabs(kura_theta_to_x(kura_x_to_theta(0.37)) - 0.37) < 1e-15);
    double th[4] = {0.3, 0.3, 0.3, 0.3};
    assert_true(fabs(kura_order_r(th, 4) - 1.0) < 1e-15);
    double op[2] = {0.0, -M_PI};
    assert_true(kura_order_r(op, 2) < 1e-15);
    double a[3] = {3.1, -3.1, 0}, b[3] = {-3.1, 3.1, 0.1}, mae, mx;
    kura_circ_err(a, b, 3, &mae, &mx);
    double d = 2 * M_PI - 6.2;
    assert_true(fabs(mx - 0.1) < 1e-12 || fabs(mx - d) < 1e-12);
    assert_true(fabs(mae - (2 * d + 0.1) / 3) < 1e-12);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_schedule),
        cmocka_unit_test(test_von_mises),
        cmocka_unit_test(test_oracle_score),
        cmocka_unit_test(test_mapping_and_stats),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
