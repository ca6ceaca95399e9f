/*
 * Tests of replay/kura_power and replay/kura_dma: docs/kura.md#acceptance-checks and the
 * shipped coefficient table (configs/kura_energy.json).
 *
 * The paper numbers asserted here are calibrated (fit4 is fitted through the paper's four
 * E_px points, t_marsh is solved for 641.3 us; docs/models.md), so these tests guard
 * regressions of the fit, the solve and the arithmetic built on them; they are not a
 * check of the model against the paper.
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

#include "common/rng.h"
#include "replay/kura_dma.h"
#include "replay/kura_model.h"
#include "replay/kura_power.h"

static const int SHAPES[5] = {5, 10, 15, 20, 25};

/* The paper's four compute-only points (section 4.2, Fig. 6 budget answers), pJ/px. */
static const struct kura_fit_point PAPER4[4] = {
    {10, 10, 258.5}, {15, 15, 195.4}, {20, 15, 178.1}, {25, 20, 166.0}};

static void rel_close(double got, double want, double rel)
{
    if (!(fabs(got - want) <= rel * fabs(want))) {
        print_error("got %.10g, want %.10g (rel %.3g)\n", got, want, rel);
        fail();
    }
}

/* the exact fit through the paper's four points gives fit4 and R^2 = 1. */
static void test_fit_paper_points(void **state)
{
    (void)state;
    struct kura_fit_result r;
    struct errmsg em = {0};
    double res[4];
    assert_int_equal(kura_fit(PAPER4, 4, KURA_FIT_EPX_PJ, 100e6, &r, res, &em), 0);
    /* docs/kura.md#power-area-and-energy fit4 (rounded to 6-7 digits in docs/kura.md) */
    rel_close(r.c.hw, 0.195887, 1e-4);
    rel_close(r.c.w, 0.509283, 1e-4);
    rel_close(r.c.h, 1.678762, 1e-4);
    rel_close(r.c.fixed, 30.33637, 1e-4);
    assert_true(r.r2 >= 1 - 1e-9);
    for (int i = 0; i < 4; i++) {
        assert_true(fabs(res[i]) < 0.1);
        double e = kura_epx_pj(&r.c, PAPER4[i].n_h, PAPER4[i].n_w, 100e6);
        assert_true(fabs(e - PAPER4[i].y) < 0.1);
    }
    /* the shipped set equals the fit */
    struct kura_energy e;
    kura_energy_default(&e);
    rel_close(e.power_fit4.hw, r.c.hw, 1e-9);
    rel_close(e.power_fit4.fixed, r.c.fixed, 1e-9);
    /* docs/kura.md#power-area-and-energy: rounded to (0.1959, 0.5093, 1.6788, 30.34) it still gives
     * the points within 0.02 pJ */
    struct kura_coeffs rounded = {0.1959, 0.5093, 1.6788, 30.34};
    for (int i = 0; i < 4; i++)
        assert_true(fabs(kura_epx_pj(&rounded, PAPER4[i].n_h, PAPER4[i].n_w, 100e6) - PAPER4[i].y) <
                    0.02);
}

/* noisy grid from fit4 recovers the coefficients within 5%, R^2 > 0.999; 3 points fail. */
static void test_fit_noisy_grid(void **state)
{
    (void)state;
    struct kura_energy e;
    kura_energy_default(&e);
    struct kura_fit_point pts[25];
    struct rng r;
    uint64_t seed = 1;
    printf("seed %llu\n", (unsigned long long)seed);
    rng_seed(&r, seed);
    size_t n = 0;
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 5; j++) {
            double v = kura_epx_pj(&e.power_fit4, SHAPES[i], SHAPES[j], e.f_hz);
            pts[n++] =
                (struct kura_fit_point){SHAPES[i], SHAPES[j], v * (1 + 0.001 * rng_normal(&r))};
        }
    struct kura_fit_result fr;
    struct errmsg em = {0};
    assert_int_equal(kura_fit(pts, n, KURA_FIT_EPX_PJ, e.f_hz, &fr, NULL, &em), 0);
    rel_close(fr.c.hw, e.power_fit4.hw, 0.05);
    rel_close(fr.c.w, e.power_fit4.w, 0.05);
    rel_close(fr.c.h, e.power_fit4.h, 0.05);
    rel_close(fr.c.fixed, e.power_fit4.fixed, 0.05);
    assert_true(fr.r2 > 0.999);
    assert_int_equal(kura_fit(pts, 3, KURA_FIT_EPX_PJ, e.f_hz, &fr, NULL, &em), ERR_DATA);
    /* rank < 4: four points on one shape */
    struct kura_fit_point same[4] = {{5, 5, 1}, {5, 5, 2}, {5, 5, 3}, {5, 5, 4}};
    assert_int_equal(kura_fit(same, 4, KURA_FIT_P_MW, e.f_hz, &fr, NULL, &em), ERR_DATA);
    /* power and area fits are exact on exact bilinear data */
    for (size_t i = 0; i < n; i++)
        pts[i].y = kura_bilinear(&e.area_table1, pts[i].n_h, pts[i].n_w) + 1000.0 * pts[i].n_w;
    assert_int_equal(kura_fit(pts, n, KURA_FIT_AREA_UM2, e.f_hz, &fr, NULL, &em), 0);
    rel_close(fr.c.hw, 5051.18, 1e-9);
    rel_close(fr.c.w, 1000.0, 1e-9);
    rel_close(fr.c.fixed, 1706844, 1e-9);
}

/* N_w*(N_h) by eq. 12 with fit4 (docs/kura.md#power-area-and-energy values). */
static void test_nw_opt(void **state)
{
    (void)state;
    struct kura_energy e;
    kura_energy_default(&e);
    const double want[5] = {26.01, 22.28, 20.46, 19.37, 18.65};
    for (int i = 0; i < 5; i++)
        assert_true(fabs(kura_nw_opt(&e.power_fit4, SHAPES[i]) - want[i]) < 0.01);
}

/* area budgets give the paper's answers (section 4.2); calibrated (fit4 passes through
 * these four shapes), so a regression guard of the area model and the search. */
static void test_budget(void **state)
{
    (void)state;
    struct kura_energy e;
    kura_energy_default(&e);
    struct {
        double mm2;
        int nh, nw;
        double e_pj, a_mm2;
    } cases[] = {{3, 10, 10, 258.5, 2.868},
                 {4, 15, 15, 195.4, 3.828},
                 {5, 20, 15, 178.1, 4.535},
                 {6, 25, 20, 166.0, 5.874}};
    struct kura_budget_result b;
    for (size_t i = 0; i < 4; i++) {
        kura_budget(&e.power_fit4, &e.area_table1, e.f_hz, cases[i].mm2 * 1e6, SHAPES, 5, SHAPES, 5,
                    &b);
        assert_true(b.found);
        assert_int_equal(b.n_h, cases[i].nh);
        assert_int_equal(b.n_w, cases[i].nw);
        assert_true(fabs(b.e_px_pj - cases[i].e_pj) < 0.05);
        assert_true(fabs(b.area_um2 / 1e6 - cases[i].a_mm2) < 0.0005);
    }
    kura_budget(&e.power_fit4, &e.area_table1, e.f_hz, 2e6, SHAPES, 5, SHAPES, 5, &b);
    assert_false(b.found);
    /* the tight cases of docs/kura.md#power-area-and-energy: H20W10 0.75% over 4 mm², H20W20 0.8%
     * over 5 mm² */
    assert_true(kura_bilinear(&e.area_table1, 20, 10) > 4e6);
    assert_true(kura_bilinear(&e.area_table1, 20, 10) < 4.04e6);
    assert_true(kura_bilinear(&e.area_table1, 20, 20) > 5e6);
    assert_true(kura_bilinear(&e.area_table1, 20, 20) < 5.05e6);
}

/* Table 1 totals for H20W5. */
static void test_table1(void **state)
{
    (void)state;
    struct kura_energy e;
    kura_energy_default(&e);
    assert_true(fabs(kura_bilinear(&e.area_table1, 20, 5) - 3524861.0) < 0.5);
    assert_true(fabs(kura_bilinear(&e.power_table1, 20, 5) - 84.504) < 1e-9);
    /* docs/kura.md#power-area-and-energy cross-check: P_fit4(H20W5) = 86.05 mW */
    assert_true(fabs(kura_bilinear(&e.power_fit4, 20, 5) - 86.05) < 0.005);
}

/* system level at 96x96: H20W5 641.3 us, 5.880 nJ/px, the minimum; Rocket ratios. */
static void test_system(void **state)
{
    (void)state;
    struct kura_energy e;
    kura_energy_default(&e);
    struct kura_sys s, best = {0};
    kura_sys_eval(&e, 96, 96, 20, 5, &s);
    assert_true(fabs(s.t_us - 641.3) < 0.01);
    assert_true(fabs(s.e_px_nj - 5.880) < 0.005);
    /* paper section 4.3: 193x latency and 69.4x energy against Rocket-only; calibrated
     * (t_marsh solved for 641.3 us), a regression guard */
    assert_true(fabs(e.rocket_ms * 1e3 / s.t_us - 193.0) < 0.05);
    assert_true(fabs(e.rocket_ms * e.rocket_mw * 1e3 / (s.t_us * s.p_mw) - 69.4) < 0.05);
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 5; j++) {
            struct kura_sys t;
            kura_sys_eval(&e, 96, 96, SHAPES[i], SHAPES[j], &t);
            if (i + j == 0 || t.e_px_nj < best.e_px_nj)
                best = t;
        }
    assert_int_equal(best.n_h, 20);
    assert_int_equal(best.n_w, 5);
    /* docs/kura.md#dma-and-system-level derived values */
    kura_sys_eval(&e, 96, 96, 15, 5, &s);
    assert_true(fabs(s.t_us - 755.3) < 0.05 && fabs(s.e_px_nj - 6.049) < 0.001);
    kura_sys_eval(&e, 96, 96, 25, 5, &s);
    assert_true(fabs(s.t_us - 596.9) < 0.05 && fabs(s.e_px_nj - 6.166) < 0.001);
    kura_sys_eval(&e, 96, 96, 10, 5, &s);
    assert_true(fabs(s.t_us - 919.3) < 0.05 && fabs(s.e_px_nj - 6.296) < 0.001);
    kura_sys_eval(&e, 96, 96, 25, 25, &s);
    assert_true(fabs(s.t_us - 519.0) < 0.05 && fabs(s.e_px_nj - 11.02) < 0.005);
    /* calibration reproduces the shipped t_marsh at t_txn = 16, fails at 38 */
    struct errmsg em = {0};
    double shipped = e.t_marsh;
    assert_int_equal(kura_dma_calibrate(&e, &em), 0);
    assert_true(fabs(e.t_marsh - shipped) < 1e-12);
    e.t_txn = 38;
    assert_int_equal(kura_dma_calibrate(&e, &em), ERR_CONFIG);
    /* docs/kura.md#dma-and-system-level: with t_marsh re-solved, H20W5 is the minimum exactly for
     * t_txn = 13..25 */
    for (int t = 10; t <= 30; t++) {
        kura_energy_default(&e);
        e.t_txn = t;
        assert_int_equal(kura_dma_calibrate(&e, &em), 0);
        int bh = 0, bw = 0;
        double be = 0;
        for (int i = 0; i < 5; i++)
            for (int j = 0; j < 5; j++) {
                kura_sys_eval(&e, 96, 96, SHAPES[i], SHAPES[j], &s);
                if (!bh || s.e_px_nj < be) {
                    bh = s.n_h, bw = s.n_w, be = s.e_px_nj;
                }
            }
        int is_h20w5 = bh == 20 && bw == 5;
        assert_int_equal(is_h20w5, t >= 13 && t <= 25);
    }
}

/*
 * docs/kura.md#dma-and-system-level: with t_marsh held at the config value (no --calibrate-dma),
 * H20W5 stays the system-level minimum exactly for t_txn = 11..38; H15W5 wins just below, H25W5
 * just above.
 */
static void test_system_fixed_marsh(void **state)
{
    (void)state;
    struct kura_energy e;
    for (int t = 5; t <= 45; t++) {
        kura_energy_default(&e);
        double shipped = e.t_marsh;
        e.t_txn = t;
        int bh = 0, bw = 0;
        double be = 0;
        for (int i = 0; i < 5; i++)
            for (int j = 0; j < 5; j++) {
                struct kura_sys s;
                kura_sys_eval(&e, 96, 96, SHAPES[i], SHAPES[j], &s);
                if (!bh || s.e_px_nj < be) {
                    bh = s.n_h, bw = s.n_w, be = s.e_px_nj;
                }
            }
        assert_true(e.t_marsh == shipped); /* nothing re-solved it */
        int is_h20w5 = bh == 20 && bw == 5;
        if (is_h20w5 != (t >= 11 && t <= 38))
            fail_msg("t_txn = %d: minimum H%dW%d (%.4f nJ/px)", t, bh, bw, be);
        if (t == 10)
            assert_true(bh == 15 && bw == 5);
        if (t == 39)
            assert_true(bh == 25 && bw == 5);
    }
}

/* tiles and cycles per step of the 25 shapes at 96x96 (docs/kura.md#analytic-timing table). */
static void test_analytic_table(void **state)
{
    (void)state;
    static const int64_t want[5][5] = {{12405, 7210, 5755, 4620, 4105},
                                       {6205, 3610, 2885, 2320, 2065},
                                       {4345, 2530, 2024, 1630, 1453},
                                       {3105, 1810, 1450, 1170, 1045},
                                       {2485, 1450, 1163, 940, 841}};
    struct kura_analytic a;
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 5; j++) {
            kura_analytic_eval(96, 96, SHAPES[i], SHAPES[j], 100e6, &a);
            assert_int_equal(a.cycles_step, want[i][j]);
            assert_int_equal(a.c_tile, SHAPES[j] + 26);
        }
    kura_analytic_eval(96, 96, 20, 5, 100e6, &a);
    assert_int_equal(a.n_tiles, 100);
    /* paper section 3.3: T_px = f·N_h·N_w/C_tile, c_px = 1/N_h + 26/(N_h·N_w) */
    assert_true(fabs(a.t_px - 100e6 * 100 / 31.0) < 1e-3);
    assert_true(fabs(a.c_px - 0.31) < 1e-12);
    assert_true(fabs(a.utilization - 0.9216) < 1e-12);
    kura_analytic_eval(96, 96, 25, 25, 100e6, &a);
    assert_int_equal(a.n_tiles, 16);
    assert_int_equal(a.cycles_step, 841);
}

/* The shipped JSON equals the built-in defaults; bad keys are config errors. */
static void test_config_file(void **state)
{
    (void)state;
    struct kura_energy d, f;
    struct errmsg em = {0};
    kura_energy_default(&d);
    memset(&f, 0, sizeof f);
    kura_energy_default(&f);
    f.power_fit4.hw = f.area_table1.fixed = f.t_marsh = -1;
    assert_int_equal(kura_energy_load(&f, "configs/kura_energy.json", &em), 0);
    assert_memory_equal(&d.power_fit4, &f.power_fit4, sizeof d.power_fit4);
    assert_memory_equal(&d.power_table1, &f.power_table1, sizeof d.power_table1);
    assert_memory_equal(&d.area_table1, &f.area_table1, sizeof d.area_table1);
    assert_true(d.t_marsh == f.t_marsh && d.t_txn == f.t_txn && d.f_hz == f.f_hz);
    const char *bad = "/tmp/acceltrace_test_kura_energy_bad.json";
    FILE *fp = fopen(bad, "w");
    assert_non_null(fp);
    fputs("{\"power\": {\"fit4\": {\"hw\": 1, \"bogus\": 2}}}", fp);
    fclose(fp);
    assert_int_equal(kura_energy_load(&f, bad, &em), ERR_CONFIG);
    assert_non_null(strstr(em.text, "bogus"));
    remove(bad);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fit_paper_points),
        cmocka_unit_test(test_fit_noisy_grid),
        cmocka_unit_test(test_nw_opt),
        cmocka_unit_test(test_budget),
        cmocka_unit_test(test_table1),
        cmocka_unit_test(test_system),
        cmocka_unit_test(test_system_fixed_marsh),
        cmocka_unit_test(test_analytic_table),
        cmocka_unit_test(test_config_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
