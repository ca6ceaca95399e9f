/*
 * Tests of DiSC CTR (docs/disc.md#ctr-selection, docs/disc.md#acceptance-checks): token maxima and
 * threshold on a 4x4x4 latent, the exact pruning target parser and count, tau bisection, and micro
 * captures pruning exactly ceil(R N) tokens per step (R = 1 gives empty masks).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <math.h>

#include "capture/disc/disc_capture.h"
#include "capture/disc/disc_ctr.h"
#include "tests/helpers/capture_helpers.h"

/* C_in x H x W = 4x4x4, G = 2, N = 4; one element of token (1, 0) changes. */
static void test_ctr_select(void **state)
{
    (void)state;
    float prev[64] = {0}, x[64] = {0}, d[4];
    int32_t kept[4];
    uint64_t mask;
    x[(3 * 4 + 3) * 4 + 0] = 0.25f; /* c = 3, y = 3, x = 0 */
    disc_ctr_token_max(x, prev, 4, 4, 2, d);
    assert_true(d[0] == 0 && d[1] == 0 && d[2] == 0.25f && d[3] == 0);
    assert_int_equal(disc_ctr_select(d, 4, 0.25f, kept, &mask), 1);
    assert_int_equal(kept[0], 2);
    assert_int_equal(mask, 0x4);
    x[(3 * 4 + 3) * 4 + 0] = nextafterf(0.25f, 0.0f);
    disc_ctr_token_max(x, prev, 4, 4, 2, d);
    assert_int_equal(disc_ctr_select(d, 4, 0.25f, kept, &mask), 0);
    assert_int_equal(mask, 0);
    assert_int_equal(disc_ctr_select(d, 4, 0.0f, kept, &mask), 4);
    assert_int_equal(mask, 0xf);
}

static void test_target_parse(void **state)
{
    (void)state;
    uint64_t num;
    int f;
    struct errmsg e = {0};
    assert_int_equal(disc_ctr_parse_target("0.07", &num, &f, &e), 0);
    assert_int_equal(num, 7);
    assert_int_equal(f, 2);
    /* exact integers: 0.07 * 100 = 7, not 8 as ceil(0.07 * 100.0) in double gives */
    assert_int_equal(disc_ctr_n_prune(num, f, 100), 7);
    assert_int_equal(disc_ctr_parse_target("1", &num, &f, &e), 0);
    assert_int_equal(disc_ctr_n_prune(num, f, 64), 64);
    assert_int_equal(disc_ctr_parse_target("0.25", &num, &f, &e), 0);
    assert_int_equal(disc_ctr_n_prune(num, f, 64), 16);
    assert_int_equal(disc_ctr_parse_target("0.123456789", &num, &f, &e), 0);
    assert_int_equal(disc_ctr_n_prune(num, f, 1000), 124);
    const char *bad[] = {"", ".5", "1.5", "0.", "0.1234567890", "00.1", "-0", "0,5", "1e-1", "2"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(disc_ctr_parse_target(bad[i], &num, &f, &e), ERR_USAGE);
}

static void test_tau_bisection(void **state)
{
    (void)state;
    float d[10] = {0.5f, 0.1f, 0.3f, 0.0f, 0.9f, 0.2f, 0.7f, 0.4f, 0.6f, 0.8f};
    for (uint64_t np = 0; np <= 10; np++) {
        float tau = disc_ctr_tau_for_prune(d, 10, np);
        int below = 0, below_prev = 0;
        float prev = tau > 0 ? nextafterf(tau, 0.0f) : 0.0f;
        for (int i = 0; i < 10; i++) {
            below += d[i] < tau;
            below_prev += d[i] < prev;
        }
        assert_int_equal(below, (int)np); /* distinct d: exactly np pruned */
        if (tau > 0)
            assert_true(below_prev < (int)np); /* smallest such tau */
    }
    assert_true(disc_ctr_tau_for_prune(d, 10, 0) == 0.0f);
    /* diff statistics and quantiles */
    float a[4] = {1, 2, 3, 4}, b[4] = {1, 1, 1, 1}, s[4] = {0, 1, 2, 3};
    double mean, rms, mx;
    disc_ctr_diff_stats(a, b, 4, &mean, &rms, &mx);
    assert_true(mean == 1.5 && mx == 3.0 && fabs(rms - sqrt(14.0 / 4)) < 1e-15);
    assert_true(disc_ctr_quantile(s, 4, 50) == 1 && disc_ctr_quantile(s, 4, 90) == 3);
    assert_true(disc_ctr_quantile(s, 4, 99) == 3 && disc_ctr_quantile(s, 4, 25) == 0);
}

struct d3 {
    int N, K, steps_seen, masks_k1;
    uint64_t want_pruned;
    int bad;
    bool full_prune;
};

static int d3_hook(void *ctx, const Acceltrace__Record *rec)
{
    struct d3 *t = ctx;
    if (rec->body_case == ACCELTRACE__RECORD__BODY_DISC_STEP) {
        const Acceltrace__DiscStep *s = rec->disc_step;
        uint64_t want = s->k == 0 ? (uint64_t)t->N : (uint64_t)t->N - t->want_pruned;
        if (s->n_kept != want)
            t->bad++;
        if (fabs(s->prune_ratio - (1.0 - (double)s->n_kept / t->N)) > 0)
            t->bad++;
        t->steps_seen++;
    } else if (rec->body_case == ACCELTRACE__RECORD__BODY_DISC_MASK) {
        const Acceltrace__DiscMask *m = rec->disc_mask;
        if (t->full_prune && m->step >= 1) {
            if (m->rows != 0 || m->nnz != 0 || !isnan(m->sparsity))
                t->bad++;
            t->masks_k1++;
        }
    }
    return 0;
}

static void run_d3(const char *R, int image, uint64_t want_pruned, bool full)
{
    struct disc_params p;
    disc_params_default(&p);
    snprintf(p.model, sizeof p.model, "micro");
    snprintf(p.ctr_target, sizeof p.ctr_target, "%s", R);
    p.image_size = image;
    p.threads = 1;
    p.compare_dense = false;
    struct errmsg e = {0};
    struct disc_capture *c;
    assert_int_equal(test_disc_open(&p, &c, &e), 0);
    struct d3 t = {
        .N = disc_capture_config(c)->tokens, .want_pruned = want_pruned, .full_prune = full};
    assert_int_equal(test_disc_run(c, d3_hook, &t, &e), 0);
    assert_int_equal(t.bad, 0);
    assert_int_equal(t.steps_seen, 4);
    if (full)
        assert_int_equal(t.masks_k1, 3 * 2 * 4); /* 3 steps x 2 blocks x 4 heads */
    capture_disc_ops.close(c);
}

/* on micro (N = 64): ceil(R N) pruned at every k >= 1. */
static void test_ctr_targets(void **state)
{
    (void)state;
    run_d3("0", 0, 0, false);
    run_d3("0.25", 0, 16, false);
    run_d3("0.5", 0, 32, false);
    run_d3("1", 0, 64, true);
    run_d3("0.07", 160, 7, false); /* N = 100 */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ctr_select),
        cmocka_unit_test(test_target_parse),
        cmocka_unit_test(test_tau_bisection),
        cmocka_unit_test(test_ctr_targets),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
