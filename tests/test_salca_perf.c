/*
 * test_salca_perf: the Salca analytic solver (docs/salca.md#analytic-performance-model), acceptance
 * tests (the section 9 table lines as strings) and the solver rejection check (p outside [1, p']
 * and infeasible p), and property tests over a grid of other inputs.
 *
 * The the solver table check lines are recomputed numbers (the paper's formulas on the paper's
 * inputs): the test guards our arithmetic and reading of section 4 against regressions, it does not
 * test a model against the paper.
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

#include "common/buf.h"
#include "common/err.h"
#include "common/mem.h"
#include "replay/salca_perf.h"

/* docs/salca.md#analytic-performance-model table, in its order (the solver table check). Paper: 25,
 * 2, 16/16, 3.9%, 24/2, 1.1, 11/16, 5.8%, ~13%, 1.87x (Salca paper section 4 and Fig. 10 text). */
static const char *const a1_lines[] = {
    "b_pre=160",
    "b_att=2048",
    "hbm_bits_per_ns=4096.0000",
    "front.1.m_pre=38",
    "front.1.r_min=0.0130",
    "front.2.m_pre=25",
    "front.2.r_min=0.0396",
    "front.3.m_pre=12",
    "front.3.r_min=0.1237",
    "design.m_pre=25",
    "design.m_att=2",
    "design.h_pre=16",
    "design.h_pre_real=15.6250",
    "design.h_att=16",
    "design.B_req_bits_per_ns=4048.0000",
    "design.r_min=0.0396",
    "fixed.m_pre=25.6000",
    "fixed.r_min=0.0387",
    "p_prime_pre=24",
    "p_prime_att=2",
    "u_pre=0.9896",
    "u_att=0.5500",
    "m_att_beta_att=1.1000",
    "final.m_pre=17",
    "final.m_att=2",
    "final.h_pre=11",
    "final.h_att=16",
    "final.h_pre_direct=11",
    "final.h_att_direct=15",
    "final.B_req_bits_per_ns=3408.0000",
    "final.r_min=0.0582",
    "asic_s4.b_pre=544",
    "asic_s4.m_pre=7.5294",
    "asic_s4.r_min=0.1314",
    "asic_s4.r_min_int=0.1414",
    "conflict_gain=1.8632",
};

static void test_solver_table_lines(void **state)
{
    (void)state;
    struct salca_perf_in in;
    salca_perf_in_paper(&in);
    in.p_pre = 16;
    in.p_att = 1;
    struct salca_perf_out *out = mem_alloc(sizeof *out);
    assert_non_null(out);
    struct errmsg e = {0};
    assert_int_equal(salca_perf_solve(&in, out, &e), 0);
    struct buf b;
    buf_init(&b);
    assert_int_equal(salca_perf_format(out, &b), 0);
    /* The table's lines come first and in order; further keys may follow. */
    char *text = (char *)b.data, *save = NULL;
    char *line = strtok_r(text, "\n", &save);
    for (size_t i = 0; i < sizeof a1_lines / sizeof a1_lines[0]; i++) {
        assert_non_null(line);
        assert_string_equal(line, a1_lines[i]);
        line = strtok_r(NULL, "\n", &save);
    }
    buf_release(&b);
    mem_free(out);
}

static int solve_p(int64_t p_pre, int64_t p_att, struct salca_perf_out *out, struct errmsg *e)
{
    struct salca_perf_in in;
    salca_perf_in_paper(&in);
    in.p_pre = p_pre;
    in.p_att = p_att;
    return salca_perf_solve(&in, out, e);
}

static void test_solver_rejects(void **state)
{
    (void)state;
    struct salca_perf_out *out = mem_alloc(sizeof *out);
    assert_non_null(out);
    struct errmsg e = {0};
    /* p_pre = 25 > p' = 24. */
    assert_int_equal(solve_p(25, 1, out, &e), ERR_USAGE);
    assert_non_null(strstr(e.text, "p_pre 25 outside [1, 24]"));
    assert_int_equal(solve_p(16, 3, out, &e), ERR_USAGE);
    /* p = (24, 1): m = (26, 2), bandwidth 4128 > 4096 and PCs 17 + 16 > 32. */
    memset(&e, 0, sizeof e);
    assert_int_equal(solve_p(24, 1, out, &e), ERR_USAGE);
    assert_non_null(strstr(e.text, "bandwidth"));
    assert_non_null(strstr(e.text, "4128 > 4096 bits/ns"));
    assert_non_null(strstr(e.text, "17 + 16 > 32"));
    assert_non_null(strstr(e.text, "m = (26, 2)"));
    /* p = (24, 2), the paper's p': m = (26, 4). */
    assert_int_equal(solve_p(24, 2, out, &e), ERR_USAGE);
    assert_non_null(strstr(e.text, "m = (26, 4)"));
    /* a fixed-PC view asking for more PCs than chn = 32 */
    {
        struct salca_perf_in in;
        salca_perf_in_paper(&in);
        in.h_pre = 20;
        in.h_att = 16;
        memset(&e, 0, sizeof e);
        assert_int_equal(salca_perf_solve(&in, out, &e), ERR_USAGE);
        assert_non_null(strstr(e.text, "h_pre + h_att = 20 + 16 > chn = 32"));
        in.h_pre = 16;
        assert_int_equal(salca_perf_solve(&in, out, &e), 0);
    }
    /* p = (23, 1) is accepted: m = (25, 2), h 16/16. */
    assert_int_equal(solve_p(23, 1, out, &e), 0);
    assert_int_equal(out->final_m_pre, 25);
    assert_int_equal(out->final_m_att, 2);
    assert_int_equal(out->final_h_pre, 16);
    assert_int_equal(out->final_h_att, 16);
    /* [derived] the feasible p for the paper's inputs are exactly p_att = 1, p_pre <= 23. */
    for (int64_t pa = 1; pa <= 2; pa++)
        for (int64_t pp = 1; pp <= 24; pp++) {
            int rc = solve_p(pp, pa, out, &e);
            assert_int_equal(rc == 0, pa == 1 && pp <= 23);
        }
    mem_free(out);
}

static void test_rat_parse(void **state)
{
    (void)state;
    struct salca_rat r;
    assert_int_equal(salca_rat_parse("0.95", &r), 0);
    assert_int_equal(r.num, 19);
    assert_int_equal(r.den, 20);
    assert_int_equal(salca_rat_parse("1/2", &r), 0);
    assert_int_equal(r.num, 1);
    assert_int_equal(r.den, 2);
    assert_int_equal(salca_rat_parse("0.07", &r), 0);
    assert_int_equal(r.num, 7);
    assert_int_equal(r.den, 100);
    assert_int_equal(salca_rat_parse("-2.50", &r), 0);
    assert_int_equal(r.num, -5);
    assert_int_equal(r.den, 2);
    assert_int_equal(salca_rat_parse("1e3", &r), ERR_USAGE);
    assert_int_equal(salca_rat_parse("", &r), ERR_USAGE);
    assert_int_equal(salca_rat_parse("1.2.3", &r), ERR_USAGE);
    assert_int_equal(salca_rat_parse("1/0", &r), ERR_USAGE);
    assert_int_equal(salca_rat_ceil((struct salca_rat){-3, 2}), -1);
    assert_int_equal(salca_rat_floor((struct salca_rat){-3, 2}), -2);
    assert_int_equal(salca_rat_ceil((struct salca_rat){8, 1}), 8);
}

/* The bandwidth and PC constraints for (m_pre, m_att), checked in double with a margin
 * (inputs are exact decimals, so equality cases are handled by the margin). */
static bool feasible_d(const struct salca_perf_in *in, const struct salca_perf_out *o, double m_pre,
                       double m_att)
{
    double cyc = salca_rat_d(in->f_cmp_ghz) / (salca_rat_d(in->bw) * salca_rat_d(in->f_hbm_ghz));
    double breq =
        ((double)o->b_pre * m_pre + (double)o->b_att * m_att) * salca_rat_d(in->f_cmp_ghz);
    double hp = ceil((double)o->b_pre * m_pre * cyc - 1e-9);
    double ha = ceil((double)o->b_att * m_att * cyc - 1e-9);
    return breq <= salca_rat_d(o->hbm_bits_per_ns) + 1e-9 && hp + ha <= salca_rat_d(in->chn);
}

static double rmin_d(const struct salca_perf_in *in, double m_pre, double m_att)
{
    return salca_rat_d(in->beta_att) * m_att /
           (salca_rat_d(in->beta_pre) * m_pre * salca_rat_d(in->alpha));
}

/* Issue acceptance 3: over a grid of inputs the solver meets its own constraints. */
static void test_property_grid(void **state)
{
    (void)state;
    static const char *chns[] = {"8", "16", "24", "32", "64"};
    static const char *bws[] = {"64", "128", "256"};
    static const char *ds[] = {"64", "128", "256"};
    static const char *sfs[] = {"0.25", "0.5", "1"};
    static const char *alphas[] = {"1", "1.17", "2.18"};
    static const char *betas[][2] = {{"0.95", "0.55"}, {"0.8", "0.3"}, {"1", "1"}};
    static const char *fcmps[] = {"0.5", "1", "0.25"};
    struct salca_perf_out *o = mem_alloc(sizeof *o);
    assert_non_null(o);
    size_t solved = 0, finals = 0, infeasible = 0;
    for (size_t a = 0; a < 5; a++)
        for (size_t b = 0; b < 3; b++)
            for (size_t c = 0; c < 3; c++)
                for (size_t s = 0; s < 3; s++)
                    for (size_t al = 0; al < 3; al++)
                        for (size_t be = 0; be < 3; be++)
                            for (size_t f = 0; f < 3; f++) {
                                struct salca_perf_in in;
                                salca_perf_in_paper(&in);
                                assert_int_equal(salca_rat_parse(chns[a], &in.chn), 0);
                                assert_int_equal(salca_rat_parse(bws[b], &in.bw), 0);
                                assert_int_equal(salca_rat_parse(ds[c], &in.d), 0);
                                assert_int_equal(salca_rat_parse(sfs[s], &in.s_f), 0);
                                assert_int_equal(salca_rat_parse(alphas[al], &in.alpha), 0);
                                assert_int_equal(salca_rat_parse(betas[be][0], &in.beta_pre), 0);
                                assert_int_equal(salca_rat_parse(betas[be][1], &in.beta_att), 0);
                                assert_int_equal(salca_rat_parse(fcmps[f], &in.f_cmp_ghz), 0);
                                struct errmsg e = {0};
                                int rc = salca_perf_solve(&in, o, &e);
                                if (rc < 0) {
                                    /* Only an empty front may fail without p. */
                                    assert_int_equal(rc, ERR_USAGE);
                                    assert_non_null(strstr(e.text, "no feasible"));
                                    /* m = (1, 1) must then really be infeasible. */
                                    assert_false(feasible_d(&in, o, 1, 1));
                                    infeasible++;
                                    continue;
                                }
                                solved++;
                                for (size_t i = 0; i < o->n_front; i++) {
                                    const struct salca_perf_front *p = &o->front[i];
                                    assert_int_equal(p->m_att, (int64_t)i + 1);
                                    assert_true(
                                        feasible_d(&in, o, (double)p->m_pre, (double)p->m_att));
                                    /* maximal m_pre */
                                    assert_false(
                                        feasible_d(&in, o, (double)p->m_pre + 1, (double)p->m_att));
                                    assert_true(p->h_pre + p->h_att <= in.chn.num);
                                    double want = rmin_d(&in, (double)p->m_pre, (double)p->m_att);
                                    assert_true(fabs(salca_rat_d(p->r_min) - want) <= 1e-12 * want);
                                }
                                /* The front stops at the first m_att without an m_pre. */
                                assert_false(feasible_d(&in, o, 1, (double)o->n_front + 1));
                                const struct salca_perf_front *dp = &o->front[o->design_idx];
                                if (o->design_meets_r_q) {
                                    assert_true(salca_rat_d(dp->r_min) <= 0.05 + 1e-15);
                                    for (size_t i = o->design_idx + 1; i < o->n_front; i++)
                                        assert_true(salca_rat_d(o->front[i].r_min) > 0.05);
                                }
                                double fr = rmin_d(&in, salca_rat_d(o->fixed_m_pre),
                                                   salca_rat_d(o->fixed_m_att));
                                assert_true(fabs(salca_rat_d(o->fixed_r_min) - fr) <= 1e-12 * fr);
                                /* Every final design that is accepted meets both constraints;
                                 * every rejected one violates one. */
                                int64_t pp_max = o->p_prime_pre, pa_max = o->p_prime_att;
                                for (int64_t pa = 1; pa <= pa_max; pa++)
                                    for (int64_t pp = 1; pp <= pp_max; pp += 1 + pp_max / 8) {
                                        struct salca_perf_out *o2 = mem_alloc(sizeof *o2);
                                        assert_non_null(o2);
                                        in.p_pre = pp;
                                        in.p_att = pa;
                                        int rc2 = salca_perf_solve(&in, o2, &e);
                                        double mp =
                                            ceil((double)pp / salca_rat_d(in.beta_pre) - 1e-9);
                                        double ma =
                                            ceil((double)pa / salca_rat_d(in.beta_att) - 1e-9);
                                        if (rc2 == 0) {
                                            finals++;
                                            assert_int_equal(o2->final_m_pre, (int64_t)mp);
                                            assert_int_equal(o2->final_m_att, (int64_t)ma);
                                            assert_true(salca_rat_cmp(o2->final_b_req,
                                                                      o2->hbm_bits_per_ns) <= 0);
                                            assert_true(o2->final_h_pre + o2->final_h_att <=
                                                        in.chn.num);
                                            double w = rmin_d(&in, mp, ma);
                                            assert_true(fabs(salca_rat_d(o2->final_r_min) - w) <=
                                                        1e-12 * w);
                                        } else {
                                            assert_int_equal(rc2, ERR_USAGE);
                                            assert_false(feasible_d(&in, o2, mp, ma));
                                        }
                                        mem_free(o2);
                                    }
                            }
    printf("grid: %zu solved, %zu without a front, %zu feasible final designs\n", solved,
           infeasible, finals);
    assert_true(solved > 1000);
    assert_true(finals > 1000);
    mem_free(o);
}

static void test_other_inputs(void **state)
{
    (void)state;
    struct salca_perf_out *o = mem_alloc(sizeof *o);
    assert_non_null(o);
    struct salca_perf_in in;
    struct errmsg e = {0};
    /* Fixed h given: fixed.m_pre = 11·128·1/(160·0.5) = 17.6
     * (docs/salca.md#analytic-performance-model fixed-PC). */
    salca_perf_in_paper(&in);
    in.h_pre = 11;
    in.h_att = 16;
    assert_int_equal(salca_perf_solve(&in, o, &e), 0);
    assert_true(fabs(salca_rat_d(o->fixed_m_pre) - 17.6) < 1e-12);
    assert_true(fabs(salca_rat_d(o->fixed_m_att) - 2.0) < 1e-12);
    /* r_q below every front point: the design falls back to the smallest r_min. */
    salca_perf_in_paper(&in);
    assert_int_equal(salca_rat_parse("0.001", &in.r_q), 0);
    assert_int_equal(salca_perf_solve(&in, o, &e), 0);
    assert_false(o->design_meets_r_q);
    assert_int_equal(o->front[o->design_idx].m_att, 1);
    /* Non-whole bit counts are rejected. */
    salca_perf_in_paper(&in);
    assert_int_equal(salca_rat_parse("0.3", &in.s_f), 0);
    in.d = salca_rat_int(128); /* 2·128·0.3 = 76.8 bits */
    assert_int_equal(salca_perf_solve(&in, o, &e), ERR_USAGE);
    mem_free(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rat_parse),      cmocka_unit_test(test_solver_table_lines),
        cmocka_unit_test(test_solver_rejects), cmocka_unit_test(test_other_inputs),
        cmocka_unit_test(test_property_grid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
