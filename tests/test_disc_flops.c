/*
 * Tests of the DiSC FLOP tallies (docs/disc.md#quality-and-flop-accounting, the FLOP tally check):
 * the tiny dense forward equals the section 5 table class by class exactly; CFG doubles every class
 * except embed (2,142,142,464 for tiny); the ctr and all tallies of a micro capture equal the
 * closed forms evaluated here on the recorded N_k and mask nnz.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <math.h>

#include "capture/disc/disc_capture.h"
#include "capture/disc/disc_flops.h"
#include "capture/disc/dit.h"
#include "tests/helpers/capture_helpers.h"

static void test_tiny_table(void **state)
{
    (void)state;
    struct dit_config c;
    struct errmsg e = {0};
    assert_int_equal(dit_config_get(&c, "tiny", 0, &e), 0);
    uint64_t d[DISC_F_COUNT] = {0}, cr[DISC_F_COUNT] = {0}, a[DISC_F_COUNT] = {0};
    disc_flops_step(&c, 1, (uint64_t)c.tokens, DISC_FLOP_ST_OFF, NULL, d, cr, a);
    /* docs/disc.md#quality-and-flop-accounting [derived] table: tiny, dense, one forward pass at B
     * = 1 */
    const uint64_t want[DISC_F_COUNT] = {
        10871635968ull, 9663676416ull,  377487360ull, 9663676416ull, 3623878656ull, 3623878656ull,
        2123366400ull,  2831155200ull,  110592000ull, 2831155200ull, 3623878656ull, 14495514624ull,
        150994944ull,   14495514624ull, 92405760ull,  1072201728ull};
    for (int i = 0; i < DISC_F_COUNT; i++) {
        assert_int_equal(d[i], want[i]);
        assert_int_equal(cr[i], want[i]);
        assert_int_equal(a[i], want[i]);
    }
    assert_int_equal(disc_flops_total(d), 79651012608ull);
    /* CFG: everything doubles except embed = 2 embed - 2 (256 d + 7 d^2) */
    uint64_t d2[DISC_F_COUNT] = {0}, c2[DISC_F_COUNT] = {0}, a2[DISC_F_COUNT] = {0};
    disc_flops_step(&c, 2, (uint64_t)c.tokens, DISC_FLOP_ST_OFF, NULL, d2, c2, a2);
    for (int i = 0; i < DISC_F_EMBED; i++)
        assert_int_equal(d2[i], 2 * want[i]);
    assert_int_equal(d2[DISC_F_EMBED], 2142142464ull);
    assert_string_equal(disc_flop_name(DISC_F_SA_QKV), "sa_qkv");
    assert_string_equal(disc_flop_name(DISC_F_EMBED), "embed");
}

/* Independent evaluation of the section 5 CTR / ST columns for one step. */
struct chk {
    const struct dit_config *c;
    int B;
    uint64_t nnz_block[64];
    bool have_step;
    Acceltrace__DiscStep step;
    uint64_t fc[DISC_F_COUNT], fa[DISC_F_COUNT];
    int checked, bad;
    int cur_k;
};

static void expect(struct chk *t, uint32_t nk, bool gen, bool st)
{
    const struct dit_config *c = t->c;
    uint64_t N = (uint64_t)c->tokens, d = (uint64_t)c->hidden, h = (uint64_t)c->heads;
    uint64_t T = (uint64_t)c->text_tokens, dh = (uint64_t)c->head_dim, L = (uint64_t)c->depth;
    uint64_t B = (uint64_t)t->B, Nk = nk, p2 = 4;
    uint64_t *f = t->fc;
    memset(t->fc, 0, sizeof t->fc);
    f[DISC_F_SA_QKV] = B * L * 2 * (Nk + 2 * N) * d * d;
    f[DISC_F_SA_QK] = B * L * 2 * Nk * N * d;
    f[DISC_F_SA_SOFTMAX] = B * L * 5 * h * Nk * N;
    f[DISC_F_SA_PV] = B * L * 2 * Nk * N * d;
    f[DISC_F_SA_PROJ] = B * L * 2 * Nk * d * d;
    f[DISC_F_CA_Q] = B * L * 2 * Nk * d * d;
    f[DISC_F_CA_KV] = B * L * 4 * T * d * d;
    f[DISC_F_CA_QK] = B * L * 2 * Nk * T * d;
    f[DISC_F_CA_SOFTMAX] = B * L * 5 * h * Nk * T;
    f[DISC_F_CA_PV] = B * L * 2 * Nk * T * d;
    f[DISC_F_CA_PROJ] = B * L * 2 * Nk * d * d;
    f[DISC_F_FFN_UP] = f[DISC_F_FFN_DOWN] = B * L * 8 * Nk * d * d;
    f[DISC_F_FFN_ACT] = B * L * 32 * Nk * d;
    f[DISC_F_VEC] = B * L * (7 * N * d + 12 * Nk * d) + 7 * B * N * d;
    f[DISC_F_EMBED] =
        2 * B * (N * 4 * p2 * d + T * (uint64_t)c->caption * d + T * d * d + N * d * p2 * 8) +
        2 * (256 * d + 7 * d * d);
    memcpy(t->fa, t->fc, sizeof t->fc);
    if (!st)
        return;
    uint64_t nnz = 0;
    for (uint64_t b = 0; b < L; b++)
        nnz += t->nnz_block[b];
    t->fa[DISC_F_SA_PV] = 2 * dh * nnz;
    if (gen) {
        t->fa[DISC_F_SA_SOFTMAX] = B * L * 6 * h * Nk * N + 2 * nnz;
    } else {
        t->fa[DISC_F_SA_QK] = 2 * dh * nnz;
        t->fa[DISC_F_SA_SOFTMAX] = 5 * nnz;
    }
}

static void check_step(struct chk *t)
{
    if (!t->have_step)
        return;
    expect(t, t->step.n_kept, t->step.st_generated, true);
    for (int i = 0; i < DISC_F_COUNT; i++) {
        t->bad += t->step.flops_ctr[i] != t->fc[i];
        t->bad += t->step.flops_all[i] != t->fa[i];
    }
    t->checked++;
    t->have_step = false;
    memset(t->nnz_block, 0, sizeof t->nnz_block);
}

static int hook(void *ctx, const Acceltrace__Record *rec)
{
    struct chk *t = ctx;
    if (rec->body_case == ACCELTRACE__RECORD__BODY_DISC_STEP) {
        check_step(t);
        t->step = *rec->disc_step;
        /* keep copies of the arrays: the record is freed after the hook */
        static uint64_t fc[DISC_F_COUNT], fa[DISC_F_COUNT];
        memcpy(fc, rec->disc_step->flops_ctr, sizeof fc);
        memcpy(fa, rec->disc_step->flops_all, sizeof fa);
        t->step.flops_ctr = fc;
        t->step.flops_all = fa;
        t->have_step = true;
    } else if (rec->body_case == ACCELTRACE__RECORD__BODY_DISC_MASK) {
        t->nnz_block[rec->disc_mask->block] += rec->disc_mask->nnz;
    } else if (rec->body_case == ACCELTRACE__RECORD__BODY_SUMMARY) {
        check_step(t);
    }
    return 0;
}

static void test_micro_recorded(void **state)
{
    (void)state;
    for (int cfg = 0; cfg < 2; cfg++) {
        struct disc_params p;
        disc_params_default(&p);
        snprintf(p.model, sizeof p.model, "micro");
        p.threads = 1;
        p.steps = 6;
        p.compare_dense = false;
        p.cfg_on = cfg == 1;
        p.cfg_scale = 4.5;
        struct errmsg e = {0};
        struct disc_capture *c;
        assert_int_equal(test_disc_open(&p, &c, &e), 0);
        struct chk t = {.c = disc_capture_config(c), .B = cfg ? 2 : 1};
        assert_int_equal(test_disc_run(c, hook, &t, &e), 0);
        assert_int_equal(t.checked, 6);
        assert_int_equal(t.bad, 0);
        capture_disc_ops.close(c);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tiny_table),
        cmocka_unit_test(test_micro_recorded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
