/*
 * test_hbm_salca: the HBM timing model inside the Salca pipeline
 * (docs/models.md "HBM timing mode", "In the pipeline"): stage A's memory part in the
 * timing mode and with beta_att derived, by hand on small numbers; the defaults keep the
 * paper's beta_att 0.55; hbm settings are checked only when used.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "replay/hbm_timing.h"
#include "replay/salca_model.h"

static void finish_ok(struct salca_pipe_params *p)
{
    struct errmsg e = {0};
    if (salca_pipe_params_finish(p, &e) != 0)
        fail_msg("%s", errmsg_text(&e));
}

/* Defaults: fast mode, beta_att input 0.55 (the paper's setting); the memory part is
 * ceil(slots·8/0.55) as before, and salca_pipe_job_times_mem with it gives the same A. */
static void test_defaults_unchanged(void **state)
{
    (void)state;
    struct salca_pipe_params p;
    salca_pipe_params_default(&p);
    assert_false(p.hbm_timing);
    assert_false(p.beta_derived);
    assert_int_equal(p.beta_att.num, 11);
    assert_int_equal(p.beta_att.den, 20);
    finish_ok(&p);
    /* 224 slots -> ceil(224·8/0.55) = 3259 (tests/test_salca_model.c) */
    assert_int_equal(salca_pipe_att_mem(&p, 1639, 224), 3259);
    uint64_t T[SALCA_STAGES], U[SALCA_STAGES];
    salca_pipe_job_times(&p, 32768, 1639, 224, T);
    salca_pipe_job_times_mem(&p, 32768, 1639, 3259, U);
    assert_memory_equal(T, U, sizeof T);
    /* compute bound: |S|/p_att = 1639 wins over a small memory part */
    salca_pipe_job_times_mem(&p, 32768, 1639, 100, U);
    assert_int_equal(U[SALCA_ST_A], 1639);
}

/*
 * Derived beta: slots·t_slot·spread/ideal. 103 slots, spread job 2000 DRAM cycles against an
 * ideal of 1648 (= 103·16): ceil(103·8·2000/1648) = 1000 (beta = 0.824); the same with
 * spread = ideal gives the zero-latency 824 (beta 1). Global alpha 1.17 over 16 PCs:
 * ceil(1639·1.17·8·2000/(16·1648)) = ceil(1163.8...) = 1164.
 */
static void test_derived_beta(void **state)
{
    (void)state;
    struct salca_pipe_params p;
    salca_pipe_params_default(&p);
    p.beta_derived = true;
    finish_ok(&p);
    assert_int_equal(p.hbm.token_bytes, 256); /* b_att/8 */
    assert_int_equal(salca_pipe_att_mem_derived(&p, 1639, 103, 2000, 1648), 1000);
    assert_int_equal(salca_pipe_att_mem_derived(&p, 1639, 103, 1648, 1648), 824);
    assert_int_equal(salca_pipe_att_mem_derived(&p, 0, 0, 0, 0), 0);
    p.alpha_mode = SALCA_ALPHA_GLOBAL;
    assert_int_equal(salca_pipe_att_mem_derived(&p, 1639, 0, 2000, 1648), 1164);
}

/* Timing mode: DRAM cycles at tCK 1 ns to compute cycles at 0.5 GHz: ceil(c/2). */
static void test_dram_to_cmp(void **state)
{
    (void)state;
    struct salca_pipe_params p;
    salca_pipe_params_default(&p);
    p.hbm_timing = true;
    finish_ok(&p);
    assert_int_equal(p.x_dram.num, 1);
    assert_int_equal(p.x_dram.den, 2);
    assert_int_equal(salca_pipe_dram_to_cmp(&p, 46), 23);
    assert_int_equal(salca_pipe_dram_to_cmp(&p, 47), 24);
}

/* hbm settings are checked when the timing model is used, not otherwise. */
static void test_hbm_checked_when_used(void **state)
{
    (void)state;
    struct salca_pipe_params p;
    salca_pipe_params_default(&p);
    p.hbm.token_bytes = 200; /* 100 B halves: not whole 32 B reads */
    finish_ok(&p);
    p.hbm_timing = true;
    struct errmsg e = {0};
    assert_int_equal(salca_pipe_params_finish(&p, &e), ERR_CONFIG);
    assert_non_null(strstr(errmsg_text(&e), "hbm.mode timing"));
    assert_non_null(strstr(errmsg_text(&e), "200 bytes"));
    /* d = 100: b_att/8 = 200 B per token; fine in the fast mode only */
    salca_pipe_params_default(&p);
    p.d = 100;
    p.b_att = 1600;
    finish_ok(&p);
    p.beta_derived = true;
    assert_int_equal(salca_pipe_params_finish(&p, &e), ERR_CONFIG);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults_unchanged),
        cmocka_unit_test(test_derived_beta),
        cmocka_unit_test(test_dram_to_cmp),
        cmocka_unit_test(test_hbm_checked_when_used),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
