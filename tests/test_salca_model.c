/*
 * test_salca_model: the Salca trace-driven pipeline model (docs/salca.md#pipeline-model):
 * acceptance test the pipeline check (double-buffered pipeline makespan, global-alpha stage times
 * equal the analytic T_pre/T_att of section 9 within one cycle), the stage formulas at the paper's
 * design point, the scheduler against a brute-force start/finish table, and the replay model
 * "salca" driven with selections generated in the test (records in memory and through the replay
 * engine), its configs and sweep file. Randomized tests print their seed; ACCELTRACE_SEED overrides
 * it.
 */
#include <inttypes.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/buf.h"
#include "common/io.h"
#include "common/mem.h"
#include "common/rng.h"
#include "formats/varint.h"
#include "replay/engine.h"
#include "replay/hw_config.h"
#include "replay/model.h"
#include "replay/model_registry.h"
#include "replay/results.h"
#include "replay/salca_model.h"
#include "replay/salca_perf.h"
#include "replay/sweep.h"
#include "tests/helpers/test_helpers.h"

static void params(struct salca_pipe_params *p)
{
    struct errmsg e = {0};
    salca_pipe_params_default(p);
    assert_int_equal(salca_pipe_params_finish(p, &e), 0);
}

static uint64_t sum4(const uint64_t T[4])
{
    return T[0] + T[1] + T[2] + T[3];
}

static uint64_t max4(const uint64_t T[4])
{
    uint64_t m = T[0];
    for (int k = 1; k < 4; k++)
        m = T[k] > m ? T[k] : m;
    return m;
}

/* Stage formulas at the final design (h 11/16, p 16/1), n = 32768. */
static void test_stage_times(void **state)
{
    (void)state;
    struct salca_pipe_params p;
    params(&p);
    /* t_slot = 2048·0.5/(128·1) = 8 cycles per token per PC [docs/salca.md#pipeline-model] */
    assert_int_equal(p.t_slot.num, 8);
    assert_int_equal(p.t_slot.den, 1);
    uint64_t T[4];
    /* P = max(32768/16, ceil(32768·160·0.5/(0.95·11·128))) = max(2048, 1960) */
    salca_pipe_job_times(&p, 32768, 1639, 103, T);
    assert_int_equal(T[SALCA_ST_P], 2048);
    assert_int_equal(T[SALCA_ST_Q], 512);
    assert_int_equal(T[SALCA_ST_F], 516);
    /* A = max(1639/1, ceil(103·8/0.55) = 1499) */
    assert_int_equal(T[SALCA_ST_A], 1639);
    /* in-order-like alpha: 224 slots -> ceil(224·8/0.55) = 3259 */
    salca_pipe_job_times(&p, 32768, 1639, 224, T);
    assert_int_equal(T[SALCA_ST_A], 3259);
    /* fill depths add */
    p.c_stage[SALCA_ST_Q] = 7;
    salca_pipe_job_times(&p, 32768, 1639, 224, T);
    assert_int_equal(T[SALCA_ST_Q], 519);
    /* dense (ASIC_D): max(ceil(n/4), ceil(ceil(n/32)·8/0.95)) = max(8192, 8624) */
    struct salca_pipe_params d;
    salca_pipe_params_default(&d);
    d.dense = true;
    struct errmsg e = {0};
    assert_int_equal(salca_pipe_params_finish(&d, &e), 0);
    salca_pipe_job_times(&d, 32768, 32768, 1024, T);
    assert_int_equal(T[SALCA_ST_P] + T[SALCA_ST_Q] + T[SALCA_ST_F], 0);
    assert_int_equal(T[SALCA_ST_A], 8624);
    /* activity: 256 B per selected token, 20 B per key [docs/salca.md#pipeline-model] */
    struct salca_activity a;
    salca_job_activity(&p, 32768, 1639, &a);
    assert_int_equal(a.hbm_pre_bytes, 32768 * 20);
    assert_int_equal(a.hbm_att_bytes, 1639 * 256);
    assert_int_equal(a.mac_3x2, 32768 * 64);
    assert_int_equal(a.mac_int8, 2 * 1639 * 128);
    assert_int_equal(a.pool_cmp, 32768 * 4);
    /* h_pre + h_att > chn is refused */
    salca_pipe_params_default(&p);
    p.h_pre = 17;
    assert_int_equal(salca_pipe_params_finish(&p, &e), ERR_CONFIG);
    assert_non_null(strstr(e.text, "17 + 16"));
}

/* one job takes sum T_k; J identical jobs take sum T_k + (J - 1)·max T_k. */
static void test_pipeline_double_buffered(void **state)
{
    (void)state;
    uint64_t seed = th_seed(11);
    struct rng r;
    rng_stream(&r, seed, "a17", 0, 0);
    for (int trial = 0; trial < 500; trial++) {
        uint64_t T[4];
        for (int k = 0; k < 4; k++)
            T[k] = rng_below(&r, 4) == 0 ? 0 : rng_below(&r, 5000);
        uint64_t t0 = rng_below(&r, 1000);
        struct salca_sched s;
        salca_sched_begin(&s, t0);
        assert_int_equal(salca_sched_end(&s), t0);
        uint64_t J = 1 + rng_below(&r, 40);
        for (uint64_t j = 0; j < J; j++) {
            salca_sched_push(&s, T);
            assert_int_equal(salca_sched_end(&s) - t0, sum4(T) + j * max4(T));
        }
    }
    /* with fill depths through the stage-time function */
    struct salca_pipe_params p;
    salca_pipe_params_default(&p);
    p.c_stage[0] = 3;
    p.c_stage[1] = 5;
    p.c_stage[2] = 7;
    p.c_stage[3] = 11;
    struct errmsg e = {0};
    assert_int_equal(salca_pipe_params_finish(&p, &e), 0);
    uint64_t T[4];
    salca_pipe_job_times(&p, 10000, 500, 40, T);
    struct salca_sched s;
    salca_sched_begin(&s, 0);
    for (int j = 0; j < 32; j++)
        salca_sched_push(&s, T);
    assert_int_equal(salca_sched_end(&s), sum4(T) + 31 * max4(T));
}

/* Brute force: the full start/finish table of the documented recursion for random jobs. */
static void test_sched_bruteforce(void **state)
{
    (void)state;
    uint64_t seed = th_seed(11);
    struct rng r;
    rng_stream(&r, seed, "sched_bf", 0, 0);
    enum { J = 30 };
    for (int trial = 0; trial < 300; trial++) {
        uint64_t T[J][4], F[J][4];
        struct salca_sched s;
        salca_sched_begin(&s, 0);
        uint64_t busy = 0, total = 0, maxbusy[4] = {0};
        for (int j = 0; j < J; j++) {
            for (int k = 0; k < 4; k++) {
                T[j][k] = rng_below(&r, 100);
                maxbusy[k] += T[j][k];
                total += T[j][k];
            }
            salca_sched_push(&s, T[j]);
            for (int k = 0; k < 4; k++) {
                uint64_t st = 0;
                if (j > 0 && F[j - 1][k] > st)
                    st = F[j - 1][k];
                if (k > 0 && F[j][k - 1] > st)
                    st = F[j][k - 1];
                if (j > 1 && k < 3 && F[j - 2][k + 1] > st)
                    st = F[j - 2][k + 1];
                F[j][k] = st + T[j][k];
            }
            assert_int_equal(salca_sched_end(&s), F[j][3]);
        }
        for (int k = 0; k < 4; k++)
            busy = maxbusy[k] > busy ? maxbusy[k] : busy;
        assert_true(salca_sched_end(&s) >= busy);
        assert_true(salca_sched_end(&s) <= total);
        /* a stage never runs two jobs at once and never overtakes */
        for (int j = 1; j < J; j++)
            for (int k = 0; k < 4; k++)
                assert_true(F[j][k] >= F[j - 1][k] + T[j][k]);
    }
}

/* global alpha 1.17, |S| = r_q·n, non-binding p: T_P, T_A equal section 9's T_pre and
 * T_att in fixed-PC mode with the same h within one cycle. */
static void test_pipeline_matches_analytic(void **state)
{
    (void)state;
    uint32_t hs[][2] = {{16, 16}, {11, 16}, {8, 24}, {20, 8}};
    for (size_t c = 0; c < 4; c++) {
        struct salca_pipe_params p;
        salca_pipe_params_default(&p);
        p.h_pre = hs[c][0];
        p.h_att = hs[c][1];
        p.p_pre = 60000;
        p.p_att = 60000;
        p.alpha_mode = SALCA_ALPHA_GLOBAL;
        struct errmsg e = {0};
        assert_int_equal(salca_pipe_params_finish(&p, &e), 0);
        struct salca_perf_in in;
        salca_perf_in_paper(&in);
        in.h_pre = hs[c][0];
        in.h_att = hs[c][1];
        struct salca_perf_out *o = mem_alloc(sizeof *o);
        assert_non_null(o);
        assert_int_equal(salca_perf_solve(&in, o, &e), 0);
        double m_pre = salca_rat_d(o->fixed_m_pre), m_att = salca_rat_d(o->fixed_m_att);
        for (uint64_t n = 1000; n <= 64000; n += 7919) {
            uint64_t sel = n / 20; /* r_q = 5% */
            if (n % 20)
                continue;
            uint64_t T[4];
            salca_pipe_job_times(&p, n, sel, 0, T);
            double t_pre = (double)n * salca_perf_t_pre_per_n(&in, m_pre);
            double t_att = (double)n * salca_perf_t_att_per_n(&in, m_att, 0.05, 1.17);
            assert_true(fabs((double)T[SALCA_ST_P] - t_pre) <= 1.0);
            assert_true(fabs((double)T[SALCA_ST_A] - t_att) <= 1.0);
        }
        for (uint64_t n = 20; n <= 64000; n += 20 * 397) {
            uint64_t T[4];
            salca_pipe_job_times(&p, n, n / 20, 0, T);
            double t_pre = (double)n * salca_perf_t_pre_per_n(&in, m_pre);
            double t_att = (double)n * salca_perf_t_att_per_n(&in, m_att, 0.05, 1.17);
            assert_true(fabs((double)T[SALCA_ST_P] - t_pre) <= 1.0);
            assert_true(fabs((double)T[SALCA_ST_A] - t_att) <= 1.0);
        }
        mem_free(o);
    }
}

/* ---- the replay model, fed records built in the test ---- */

struct recs {
    Acceltrace__Record *r[512];
    size_t n;
};

static void add_select(struct recs *rs, uint32_t t, uint32_t l, uint32_t h, uint32_t method,
                       uint32_t n_ctx, const uint32_t *idx, size_t cnt)
{
    Acceltrace__Record *rec = calloc(1, sizeof *rec);
    Acceltrace__SalcaSelect *s = calloc(1, sizeof *s);
    assert_non_null(rec);
    assert_non_null(s);
    acceltrace__record__init(rec);
    acceltrace__salca_select__init(s);
    struct buf b;
    buf_init(&b);
    assert_int_equal(varint_encode_indices(&b, idx, cnt), 0);
    s->t = t;
    s->l = l;
    s->h = h;
    s->method = method;
    s->n_ctx = n_ctx;
    s->count = (uint32_t)cnt;
    s->sel.data = b.data; /* owned by the record now */
    s->sel.len = b.len;
    rec->body_case = ACCELTRACE__RECORD__BODY_SALCA_SELECT;
    rec->salca_select = s;
    assert_true(rs->n < 512);
    rs->r[rs->n++] = rec;
}

static void recs_free(struct recs *rs)
{
    for (size_t i = 0; i < rs->n; i++) {
        free(rs->r[i]->salca_select->sel.data);
        free(rs->r[i]->salca_select);
        free(rs->r[i]);
    }
    rs->n = 0;
}

static struct model_result *run_model(const char *json, struct recs *rs)
{
    const struct model_ops *m = model_registry_find("salca");
    assert_non_null(m);
    struct hw_config *cfg = NULL;
    struct errmsg e = {0};
    int rc = hw_config_parse(&cfg, json, "test", m->schema, &e);
    if (rc)
        fail_msg("config: %s", e.text);
    void *st = NULL;
    struct model_env env = {0};
    assert_int_equal(m->new (&st, cfg, &env, &e), 0);
    for (size_t i = 0; i < rs->n; i++) {
        struct model_record mr = {rs->r[i], NULL, i};
        void *aux = NULL;
        assert_int_equal(m->prepare(NULL, &mr, &aux, &e), 0);
        mr.aux = aux;
        assert_int_equal(m->consume(st, &mr, &e), 0);
        m->aux_free(NULL, aux);
    }
    struct model_result *res = model_result_new();
    assert_non_null(res);
    assert_int_equal(m->finish(st, res, &e), 0);
    m->free(st);
    hw_config_free(cfg);
    return res;
}

static double get(struct model_result *res, size_t row, const char *name)
{
    double v = -1;
    if (model_result_get(res, row, name, &v) != 0)
        fail_msg("no column %s", name);
    return v;
}

/* Two steps x two layers x four heads of clustered selections; the model's cycles equal
 * the plain functions' schedule, HBM bytes and alpha are exact, other methods ignored. */
static void test_model_records(void **state)
{
    (void)state;
    uint64_t seed = th_seed(11);
    struct recs rs = {0};
    static uint32_t idx[8192];
    struct salca_pipe_params p, d;
    params(&p);
    salca_pipe_params_default(&d);
    d.dense = true;
    struct errmsg e = {0};
    assert_int_equal(salca_pipe_params_finish(&d, &e), 0);
    struct salca_sched s, sd;
    salca_sched_begin(&s, 0);
    salca_sched_begin(&sd, 0);
    uint64_t hbm = 0, slots = 0, ideal = 0, cyc_step[2] = {0, 0}, start = 0, dstart = 0;
    uint64_t dense_total = 0;
    struct hbm_pc_work w = {0};
    assert_int_equal(hbm_pc_work_reserve(&w, 8192), 0);
    static uint16_t pc[8192];
    for (uint32_t t = 0; t < 2; t++) {
        for (uint32_t l = 0; l < 2; l++) {
            if (l > 0) {
                salca_sched_begin(&s, salca_sched_end(&s));
                salca_sched_begin(&sd, salca_sched_end(&sd));
            }
            for (uint32_t h = 0; h < 4; h++) {
                uint32_t n = 4000 + t;
                size_t cnt;
                assert_int_equal(salca_synth_selection(1, n, 0.05, seed, l, h, idx, &cnt), 0);
                add_select(&rs, t, l, h, 0, n, idx, cnt);
                add_select(&rs, t, l, h, 1, n, idx, cnt / 2); /* another method */
                hbm_pc_map_indices(&p.map, l, h, idx, cnt, pc);
                uint64_t sl = hbm_pc_inorder(pc, cnt, 16, 16, 1, &w, NULL, 0);
                uint64_t T[4];
                salca_pipe_job_times(&p, n, cnt, sl, T);
                salca_sched_push(&s, T);
                salca_pipe_job_times(&d, n, n, hbm_pc_ideal(n, 32), T);
                salca_sched_push(&sd, T);
                hbm += (uint64_t)n * 20 + 256 * cnt;
                slots += sl;
                ideal += hbm_pc_ideal(cnt, 16);
            }
        }
        cyc_step[t] = salca_sched_end(&s) - start;
        start = salca_sched_end(&s);
        dense_total += salca_sched_end(&sd) - dstart;
        dstart = salca_sched_end(&sd);
        salca_sched_begin(&s, start);
        salca_sched_begin(&sd, dstart);
    }
    hbm_pc_work_release(&w);
    struct model_result *res = run_model("{\"model\": \"salca\"}", &rs);
    assert_int_equal(model_result_rows(res), 3); /* 2 step rows + main */
    /* main row is last; step rows first (secondary table) or in insertion order: find it */
    size_t main_row = 2;
    double steps;
    if (model_result_get(res, 0, "steps", &steps) == 0)
        main_row = 0;
    assert_true(get(res, main_row, "cycles") == (double)(cyc_step[0] + cyc_step[1]));
    assert_true(get(res, main_row, "hbm_bytes") == (double)hbm);
    assert_true(get(res, main_row, "jobs") == 16);
    assert_true(fabs(get(res, main_row, "alpha_measured") - (double)slots / (double)ideal) < 1e-12);
    assert_true(get(res, main_row, "dense_cycles") == (double)dense_total);
    assert_true(get(res, main_row, "steps") == 2);
    double secs = (double)(cyc_step[0] + cyc_step[1]) / 0.5e9;
    assert_true(fabs(get(res, main_row, "tokens_per_s") - 2 / secs) < 1e-6 * (2 / secs));
    double u = get(res, main_row, "util_p");
    assert_true(u > 0 && u <= 1);
    /* in-model energy = counts x the built-in table (configs/salca-energy.json values) */
    double ej =
        1e-12 * (31.2 * get(res, main_row, "hbm_bytes") + 0.03 * get(res, main_row, "mac_3x2") +
                 0.03 * get(res, main_row, "cmp8_ops") + 0.03 * get(res, main_row, "hist_updates") +
                 0.23 * get(res, main_row, "mac_int8") + 2.0 * get(res, main_row, "exp_ops"));
    assert_true(fabs(get(res, main_row, "model_energy_j") - ej) <= 1e-9 * ej);
    assert_true(get(res, main_row, "energy_gain_vs_dense") > 1);
    model_result_free(res);
    /* the shipped table gives the same energy */
    res = run_model("{\"model\": \"salca\", \"energy_table\": \"configs/salca-energy.json\", "
                    "\"steps_table\": false}",
                    &rs);
    assert_true(fabs(get(res, 0, "model_energy_j") - ej) <= 1e-9 * ej);
    model_result_free(res);

    /* no_layer_drain: identical jobs in two layers stream as one sequence */
    recs_free(&rs);
    for (uint32_t i = 0; i < 64; i++)
        idx[i] = 100 + i;
    for (uint32_t l = 0; l < 2; l++)
        for (uint32_t h = 0; h < 5; h++)
            add_select(&rs, 0, l, h, 0, 2000, idx, 64);
    uint64_t T[4];
    salca_pipe_job_times(&p, 2000, 64, 4, T);
    res =
        run_model("{\"model\": \"salca\", \"no_layer_drain\": true, \"steps_table\": false}", &rs);
    assert_int_equal(model_result_rows(res), 1);
    assert_true(get(res, 0, "cycles") == (double)(sum4(T) + 9 * max4(T)));
    assert_true(get(res, 0, "alpha_measured") == 1.0); /* 64 consecutive tokens */
    model_result_free(res);
    res = run_model("{\"model\": \"salca\", \"layer_gap\": 100, \"steps_table\": false}", &rs);
    assert_true(get(res, 0, "cycles") == (double)(2 * (sum4(T) + 4 * max4(T)) + 100));
    model_result_free(res);
    /* the dense variant: stage A only */
    res = run_model("{\"model\": \"salca\", \"variant\": \"dense\", \"steps_table\": false}", &rs);
    salca_pipe_job_times(&d, 2000, 2000, hbm_pc_ideal(2000, 32), T);
    assert_true(get(res, 0, "cycles") == (double)(2 * 5 * T[SALCA_ST_A]));
    assert_true(get(res, 0, "busy_p") == 0);
    assert_true(get(res, 0, "speedup_vs_dense") == 1.0);
    model_result_free(res);
    /* retention what-if replaces the selections */
    res = run_model("{\"model\": \"salca\", \"retention\": 0.1, \"steps_table\": false}", &rs);
    assert_true(fabs(get(res, 0, "retention_actual") - 0.1) < 0.01);
    model_result_free(res);
    recs_free(&rs);
}

/* The shipped configs load, the sweep expands, and the engine runs them in one pass. */
static void test_configs_and_engine(void **state)
{
    (void)state;
    const struct model_ops *m = model_registry_find("salca");
    assert_non_null(m);
    struct hw_config *cfg = NULL;
    struct errmsg e = {0};
    if (hw_config_load(&cfg, "configs/salca-hbm2.json", NULL, &e) != 0)
        fail_msg("%s", e.text);
    assert_int_equal(hw_config_int(cfg, "h_pre"), 11);
    struct sweep *sw = NULL;
    if (sweep_load(&sw, "configs/salca-sweep.json", cfg, &e) != 0)
        fail_msg("%s", e.text);
    struct energy_table et = {0};
    if (energy_table_load(&et, "configs/salca-energy.json", &e) != 0)
        fail_msg("%s", e.text);

    struct recs rs = {0};
    static uint32_t idx[16384];
    for (uint32_t l = 0; l < 2; l++)
        for (uint32_t h = 0; h < 4; h++) {
            size_t cnt;
            assert_int_equal(salca_synth_selection(1, 16384, 0.05, 3, l, h, idx, &cnt), 0);
            add_select(&rs, 0, l, h, 0, 16384, idx, cnt);
        }
    Acceltrace__TraceHeader hdr = ACCELTRACE__TRACE_HEADER__INIT;
    hdr.workload = "salca";
    struct record_source src = {0};
    assert_int_equal(record_source_mem(&src, &hdr, rs.r, rs.n), 0);
    char dir[] = "/tmp/test_salca_model_XXXXXX";
    assert_non_null(mkdtemp(dir));
    struct results *res = NULL;
    assert_int_equal(results_open(&res, dir, src.content_hash(src.ctx), "salca", &e), 0);
    struct engine_opts o;
    engine_opts_default(&o);
    o.quiet = true;
    o.energy = &et;
    struct engine_stats stats;
    if (engine_run(m, &src, sw, res, &o, &stats, &e) != 0)
        fail_msg("%s", e.text);
    assert_int_equal(stats.passes, 1);
    assert_int_equal(stats.configs_run, 4 * 4 * 4);
    assert_int_equal(results_close(res), 0);
    char path[200];
    snprintf(path, sizeof path, "%s/results.csv", dir);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[8192];
    assert_non_null(fgets(line, sizeof line, f));
    assert_non_null(strstr(line, "speedup_vs_dense"));
    assert_non_null(strstr(line, "energy_j"));
    int rows = 0;
    while (fgets(line, sizeof line, f))
        rows++;
    fclose(f);
    assert_int_equal(rows, 64);
    record_source_close(&src);
    energy_table_release(&et);
    sweep_free(sw);
    hw_config_free(cfg);
    recs_free(&rs);
    assert_int_equal(io_remove_tree(dir), 0);
}

/* Allocation failures in new/prepare/consume/finish end in ERR_NOMEM, never a crash or a
 * leak (ASan build); k grows until the run needs fewer than k allocations. */
static void test_alloc_failures(void **state)
{
    (void)state;
    struct recs rs = {0};
    static uint32_t idx[4096];
    for (uint32_t t = 0; t < 3; t++)
        for (uint32_t l = 0; l < 2; l++)
            for (uint32_t h = 0; h < 2; h++) {
                size_t cnt;
                assert_int_equal(salca_synth_selection(1, 4096, 0.05, 5, l, h, idx, &cnt), 0);
                add_select(&rs, t, l, h, 0, 4096, idx, cnt);
            }
    const struct model_ops *m = model_registry_find("salca");
    struct hw_config *cfg = NULL;
    struct errmsg e = {0};
    assert_int_equal(
        hw_config_parse(&cfg, "{\"model\": \"salca\", \"retention\": 0.1}", "t", m->schema, &e), 0);
    int ok = 0, failed = 0;
    for (long k = 1; k < 100000 && ok == 0; k++) {
        struct model_result *res = model_result_new();
        assert_non_null(res);
        void *st = NULL;
        struct model_env env = {0};
        mem_fail_after(k);
        int rc = m->new (&st, cfg, &env, &e);
        for (size_t i = 0; i < rs.n && rc == 0; i++) {
            struct model_record mr = {rs.r[i], NULL, i};
            void *aux = NULL;
            rc = m->prepare(NULL, &mr, &aux, &e);
            mr.aux = aux;
            if (rc == 0)
                rc = m->consume(st, &mr, &e);
            m->aux_free(NULL, aux);
        }
        if (rc == 0)
            rc = m->finish(st, res, &e);
        mem_fail_after(0);
        if (rc == 0) {
            ok++;
        } else {
            assert_int_equal(rc, ERR_NOMEM);
            failed++;
        }
        m->free(st);
        model_result_free(res);
    }
    printf("allocation failures: %d failed cleanly, %d succeeded\n", failed, ok);
    assert_true(failed > 0 && ok == 1);
    hw_config_free(cfg);
    recs_free(&rs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stage_times),      cmocka_unit_test(test_pipeline_double_buffered),
        cmocka_unit_test(test_sched_bruteforce), cmocka_unit_test(test_pipeline_matches_analytic),
        cmocka_unit_test(test_model_records),    cmocka_unit_test(test_configs_and_engine),
        cmocka_unit_test(test_alloc_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
