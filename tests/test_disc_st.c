/*
 * Tests of DiSC ST (docs/disc.md#st-masks, docs/disc.md#acceptance-checks) on micro captures (N =
 * 64, so a mask row is one 64-bit word): all-ones masks match dense attention, every computed row
 * keeps >= 1 bit, --st-theta 1 keeps one bit per row, the generate/reuse schedule,
 * unchanged rows outside S_k and at reuse steps, nnz/sparsity bookkeeping, and the
 * --st-target bisection (alpha_b reaches the target, the float below does not).
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
#include "capture/disc/dit.h"
#include "tests/helpers/capture_helpers.h"

#define MAXK 8
#define L 2
#define H 4
#define N 64

struct col {
    int steps;
    uint64_t tok[MAXK];
    uint32_t nk[MAXK];
    bool gen_step[MAXK];
    bool have[MAXK][L][H];
    bool gen[MAXK][L][H];
    uint64_t rows[MAXK][L][H][N];
    uint32_t row_nnz[MAXK][L][H][N];
    uint64_t nnz[MAXK][L][H];
    uint32_t nrows[MAXK][L][H];
    double sparsity[MAXK][L][H];
    float theta[MAXK][L][H];
};

static int hook(void *ctx, const Acceltrace__Record *rec)
{
    struct col *t = ctx;
    if (rec->body_case == ACCELTRACE__RECORD__BODY_DISC_STEP) {
        const Acceltrace__DiscStep *s = rec->disc_step;
        uint64_t w = 0;
        for (int i = 0; i < 8; i++)
            w |= (uint64_t)s->token_mask.data[i] << (8 * i);
        t->tok[s->k] = w;
        t->nk[s->k] = s->n_kept;
        t->gen_step[s->k] = s->st_generated;
        t->steps++;
    } else if (rec->body_case == ACCELTRACE__RECORD__BODY_DISC_MASK) {
        const Acceltrace__DiscMask *m = rec->disc_mask;
        if (m->batch != 0)
            return 0;
        int k = (int)m->step, b = (int)m->block, h = (int)m->head;
        t->gen[k][b][h] = m->generated;
        t->nnz[k][b][h] = m->nnz;
        t->nrows[k][b][h] = m->rows;
        t->sparsity[k][b][h] = m->sparsity;
        t->theta[k][b][h] = m->theta;
        if (m->kept) {
            t->have[k][b][h] = true;
            for (int r = 0; r < N; r++) {
                uint64_t w = 0;
                for (int i = 0; i < 8; i++)
                    w |= (uint64_t)m->bits.data[r * 8 + i] << (8 * i);
                t->rows[k][b][h][r] = w;
                t->row_nnz[k][b][h][r] = m->row_nnz[r];
            }
        }
    }
    return 0;
}

/* Runs a micro capture; returns the capture (caller frees) with records collected in t. */
static struct disc_capture *run(struct disc_params *p, struct col *t)
{
    struct errmsg e = {0};
    struct disc_capture *c;
    memset(t, 0, sizeof *t);
    int rc = test_capture_disc(p, hook, t, &c, &e);
    if (rc)
        printf("%s\n", e.text);
    assert_int_equal(rc, 0);
    return c;
}

static void micro(struct disc_params *p)
{
    disc_params_default(p);
    snprintf(p->model, sizeof p->model, "micro");
    p->threads = 1;
    p->compare_dense = false;
}

/* --ctr-off --st-alpha 0 (all-ones masks) against --ctr-off --st-off. */
static void test_st_all_ones(void **state)
{
    (void)state;
    struct disc_params p;
    struct col *t = calloc(1, sizeof *t);
    micro(&p);
    p.ctr = DISC_CTR_OFF;
    p.st = DISC_ST_OFF;
    struct disc_capture *a = run(&p, t);
    p.st = DISC_ST_ALPHA;
    p.st_alpha = 0.0f;
    snprintf(p.keep_masks, sizeof p.keep_masks, "steps=0");
    struct disc_capture *b = run(&p, t);
    const struct disc_result *ra = disc_capture_result(a), *rb = disc_capture_result(b);
    double err = disc_rel_err(rb->latent, ra->latent, ra->n_latent);
    printf("all-ones ST vs dense: relative L2 %.3g\n", err);
    assert_true(err <= 1e-5);
    for (int blk = 0; blk < L; blk++)
        for (int h = 0; h < H; h++) {
            assert_int_equal(t->nnz[0][blk][h], N * N);
            assert_true(t->sparsity[0][blk][h] == 0.0);
        }
    capture_disc_ops.close(a);
    capture_disc_ops.close(b);
    free(t);
}

/* docs/disc.md#acceptance-checks on one micro run with CTR on, K = 6, every mask kept. */
static void test_st_rows_reuse_nnz(void **state)
{
    (void)state;
    struct disc_params p;
    struct col *t = calloc(1, sizeof *t);
    micro(&p);
    p.steps = 6;
    snprintf(p.keep_masks, sizeof p.keep_masks, "blocks=all");
    struct disc_capture *c = run(&p, t);
    assert_int_equal(t->steps, 6);
    for (int k = 0; k < 6; k++) {
        assert_int_equal(t->gen_step[k], k % 2 == 0); /* K_r = 2: 1,0,1,0,1,0 */
        assert_int_equal(__builtin_popcountll(t->tok[k]), t->nk[k]);
        for (int blk = 0; blk < L; blk++)
            for (int h = 0; h < H; h++) {
                assert_true(t->have[k][blk][h]);
                assert_int_equal(t->gen[k][blk][h], k % 2 == 0);
                assert_int_equal(t->nrows[k][blk][h], t->nk[k]);
                uint64_t nnz = 0, pop = 0;
                for (int r = 0; r < N; r++) {
                    uint32_t pc = (uint32_t)__builtin_popcountll(t->rows[k][blk][h][r]);
                    assert_int_equal(t->row_nnz[k][blk][h][r], pc);
                    bool computed = (t->tok[k] >> r) & 1;
                    if (computed) {
                        assert_true(pc >= 1); /* the ST row check: every computed row keeps a bit */
                        nnz += t->row_nnz[k][blk][h][r];
                        pop += pc;
                    }
                    /* rows outside S_k, and every row at reuse steps, are unchanged */
                    if (k > 0 && (!computed || k % 2 == 1))
                        assert_true(t->rows[k][blk][h][r] == t->rows[k - 1][blk][h][r]);
                }
                /* the ST nnz check */
                assert_int_equal(t->nnz[k][blk][h], nnz);
                assert_int_equal(pop, nnz);
                double sp = 1.0 - (double)nnz / ((double)t->nk[k] * N);
                assert_true(t->sparsity[k][blk][h] == sp);
                assert_true(t->theta[k][blk][h] == 1.0f / 64.0f);
            }
    }
    capture_disc_ops.close(c);
    /* K_r = 1 generates at every step. */
    p.st_refresh = 1;
    snprintf(p.keep_masks, sizeof p.keep_masks, "none");
    c = run(&p, t);
    for (int k = 0; k < 6; k++)
        assert_true(t->gen_step[k]);
    capture_disc_ops.close(c);
    free(t);
}

/* an absolute theta of 1 keeps exactly one bit (the argmax) per computed row. */
static void test_st_theta_one(void **state)
{
    (void)state;
    struct disc_params p;
    struct col *t = calloc(1, sizeof *t);
    micro(&p);
    p.st = DISC_ST_THETA;
    p.st_theta = 1.0f;
    snprintf(p.keep_masks, sizeof p.keep_masks, "steps=all");
    struct disc_capture *c = run(&p, t);
    for (int k = 0; k < 4; k++)
        for (int blk = 0; blk < L; blk++)
            for (int h = 0; h < H; h++) {
                for (int r = 0; r < N; r++)
                    if ((t->tok[k] >> r) & 1)
                        assert_int_equal(__builtin_popcountll(t->rows[k][blk][h][r]), 1);
                assert_int_equal(t->nnz[k][blk][h], t->nk[k]);
            }
    capture_disc_ops.close(c);
    free(t);
}

/* the argmax rule on single rows (theta above every probability). */
static void test_st_argmax_row(void **state)
{
    (void)state;
    float s[100], p[100];
    uint64_t row[2];
    for (int j = 0; j < 100; j++)
        s[j] = sinf((float)j * 1.7f) * 3.0f;
    int am = 0;
    for (int j = 1; j < 100; j++)
        if (s[j] > s[am])
            am = j;
    assert_int_equal(dit_st_generate_row(s, 100, 1.0f, row, p), 1);
    assert_true((row[am / 64] >> (am % 64)) & 1);
    assert_int_equal(__builtin_popcountll(row[0]) + __builtin_popcountll(row[1]), 1);
    /* ties: the lowest index wins */
    for (int j = 0; j < 100; j++)
        s[j] = j == 17 || j == 80 ? 2.0f : 0.0f;
    assert_int_equal(dit_st_generate_row(s, 100, 1.0f, row, p), 1);
    assert_true(row[0] == 1ull << 17 && row[1] == 0);
    /* theta = 0 keeps all; theta = 1/N with alpha = 1 keeps at least the max */
    assert_int_equal(dit_st_generate_row(s, 100, 0.0f, row, p), 100);
    assert_true(row[1] == (1ull << 36) - 1); /* padding bits stay clear */
    size_t nnz = dit_st_generate_row(s, 100, 1.0f / 100.0f, row, p);
    assert_int_equal(nnz, 2);
}

static double step0_sparsity(const struct col *t, int blk)
{
    double nnz = 0, cells = 0;
    for (int h = 0; h < H; h++) {
        nnz += (double)t->nnz[0][blk][h];
        cells += (double)t->nrows[0][blk][h] * N;
    }
    return 1.0 - nnz / cells;
}

/* --st-target 0.6; alpha_b reaches it, the float below alpha_b does not. */
static void test_st_target(void **state)
{
    (void)state;
    struct disc_params p;
    struct col *t = calloc(1, sizeof *t);
    micro(&p);
    p.st = DISC_ST_TARGET;
    p.st_target = 0.6;
    struct disc_capture *c = run(&p, t);
    const struct disc_result *r = disc_capture_result(c);
    float alpha[L];
    for (int blk = 0; blk < L; blk++) {
        alpha[blk] = r->alpha[blk];
        printf("block %d: alpha %.9g, step-0 sparsity %.6f\n", blk, alpha[blk],
               step0_sparsity(t, blk));
        assert_true(step0_sparsity(t, blk) >= 0.6);
        assert_false(r->st_short[blk]);
        assert_true(t->theta[0][blk][0] == alpha[blk] / 64.0f);
    }
    capture_disc_ops.close(c);
    /* Block j with the float just below alpha_j (blocks < j unchanged, so block j sees the
     * same input): its pooled step-0 sparsity falls below the target. */
    for (int j = 0; j < L; j++) {
        float ab[L];
        memcpy(ab, alpha, sizeof ab);
        ab[j] = nextafterf(alpha[j], 0.0f);
        p.st = DISC_ST_ALPHA;
        p.st_alpha_block = ab;
        c = run(&p, t);
        assert_true(step0_sparsity(t, j) < 0.6);
        capture_disc_ops.close(c);
    }
    /* --st-target 1: alpha_b = N, flagged for a warning. */
    p.st = DISC_ST_TARGET;
    p.st_alpha_block = NULL;
    p.st_target = 1.0;
    c = run(&p, t);
    r = disc_capture_result(c);
    for (int blk = 0; blk < L; blk++) {
        assert_true(r->alpha[blk] == 64.0f);
        assert_true(r->st_short[blk]);
    }
    assert_int_equal(r->n_st_short, L);
    capture_disc_ops.close(c);
    free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_st_all_ones),  cmocka_unit_test(test_st_rows_reuse_nnz),
        cmocka_unit_test(test_st_theta_one), cmocka_unit_test(test_st_argmax_row),
        cmocka_unit_test(test_st_target),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
