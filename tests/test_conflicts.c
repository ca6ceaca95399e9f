/*
 * test_conflicts: the channel-conflict analyzer (docs/salca.md):
 * totals and aggregates, SalcaSelect decoding through a real .atr trace
 * written by the test (uniform, clustered and needle selections), the method filter,
 * malformed lists, the synthetic generators, the CSV outputs, and the paper neighbourhood
 * of alpha for clustered selections at 5% retention of 32K tokens.
 * Randomized parts print their seed; ACCELTRACE_SEED overrides it.
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

#include "analysis/analyzer.h"
#include "analysis/conflicts.h"
#include "analysis/select_quality.h"
#include "common/buf.h"
#include "common/io.h"
#include "common/mem.h"
#include "common/rng.h"
#include "formats/varint.h"
#include "tests/helpers/test_helpers.h"
#include "traces/trace_reader.h"
#include "traces/trace_writer.h"

static size_t policy_index(const struct conflicts *c, const char *name)
{
    for (size_t i = 0; i < conflicts_n_policies(c); i++)
        if (!strcmp(conflicts_policy_name(c, i), name))
            return i;
    fail_msg("no policy %s", name);
    return 0;
}

static double alpha_of(const struct conflicts *c, int g, const char *name)
{
    struct conflicts_totals t;
    assert_int_equal(conflicts_totals(c, g, policy_index(c, name), &t), 0);
    return t.alpha;
}

static void test_consecutive_and_one_pc(void **state)
{
    (void)state;
    struct conflicts_opts o;
    conflicts_opts_default(&o);
    struct conflicts *c;
    struct errmsg e = {0};
    assert_int_equal(conflicts_new(&c, &o, &e), 0);
    uint32_t idx[256];
    /* 8 batches of 16 consecutive tokens per job: alpha = 1.0 exactly everywhere. */
    for (uint32_t j = 0; j < 4; j++) {
        for (uint32_t i = 0; i < 128; i++)
            idx[i] = 1000 * j + 7 + i;
        assert_int_equal(conflicts_add_job(c, "runs", j, 0, idx, 128, &e), 0);
    }
    for (size_t i = 0; i < conflicts_n_policies(c); i++) {
        struct conflicts_totals t;
        assert_int_equal(conflicts_totals(c, 0, i, &t), 0);
        assert_true(t.alpha == 1.0);
        assert_true(t.bound == 1.0);
        assert_int_equal(t.ideal, 32);
    }
    /* One PC: 17 tokens == 3 (mod 16): alpha = 17/ceil(17/16) = 8.5 for every policy. */
    for (uint32_t i = 0; i < 17; i++)
        idx[i] = 3 + 16 * i;
    assert_int_equal(conflicts_add_job(c, "one_pc", 0, 1, idx, 17, &e), 0);
    for (size_t i = 0; i < conflicts_n_policies(c); i++) {
        struct conflicts_totals t;
        assert_int_equal(conflicts_totals(c, 1, i, &t), 0);
        assert_true(t.alpha == 8.5);
        assert_true(t.alpha_job_max == 8.5);
    }
    assert_int_equal(conflicts_n_groups(c), 2);
    assert_string_equal(conflicts_group_name(c, 1), "one_pc");
    /* All groups: (32 + 17) slots over (32 + 2) ideal under every policy. */
    struct conflicts_totals t;
    assert_int_equal(conflicts_totals(c, -1, 0, &t), 0);
    assert_int_equal(t.slots, 49);
    assert_int_equal(t.ideal, 34);
    /* conflicts per batch (mod): 8·4 conflict-free batches and one batch of 16 with 15
     * conflicts plus one of 1 with 0 */
    const uint64_t *cb = conflicts_per_batch(c, HBM_PC_MAP_MOD);
    assert_non_null(cb);
    assert_int_equal(cb[0], 33);
    assert_int_equal(cb[15], 1);
    conflicts_free(c);
}

/* Writes a salca trace with `jobs` selections per method 0 and 1. Returns the idx lists
 * (concatenated) through the same generator for comparison. */
static void write_trace(const char *path, enum salca_synth_kind kind, uint32_t n, uint32_t L,
                        uint32_t H, uint64_t seed, const char *family)
{
    Acceltrace__TraceHeader hdr = ACCELTRACE__TRACE_HEADER__INIT;
    Acceltrace__SalcaHeader sh = ACCELTRACE__SALCA_HEADER__INIT;
    hdr.producer = "test_conflicts";
    hdr.workload = "salca";
    hdr.salca = &sh;
    sh.task_family = (char *)family;
    sh.n_layers = L;
    sh.n_heads = H;
    sh.n0 = n - 1;
    struct trace_writer *w = NULL;
    struct errmsg err = {0};
    assert_int_equal(trace_writer_open(&w, path, NULL, &hdr, &err), 0);
    uint32_t *idx = malloc(n * sizeof *idx);
    assert_non_null(idx);
    for (uint32_t l = 0; l < L; l++)
        for (uint32_t h = 0; h < H; h++)
            for (uint32_t m = 0; m < 2; m++) {
                size_t cnt;
                assert_int_equal(
                    salca_synth_selection(kind, n, m ? 0.2 : 0.05, seed, l, h, idx, &cnt), 0);
                struct buf b;
                buf_init(&b);
                assert_int_equal(varint_encode_indices(&b, idx, cnt), 0);
                Acceltrace__SalcaSelect s = ACCELTRACE__SALCA_SELECT__INIT;
                s.t = 0;
                s.l = l;
                s.h = h;
                s.method = m;
                s.n_ctx = n;
                s.count = (uint32_t)cnt;
                s.sel.data = b.data;
                s.sel.len = b.len;
                Acceltrace__Record rec = ACCELTRACE__RECORD__INIT;
                rec.body_case = ACCELTRACE__RECORD__BODY_SALCA_SELECT;
                rec.salca_select = &s;
                struct trace_key key = {0, (int32_t)l, (int32_t)h};
                assert_int_equal(trace_writer_append(w, &rec, &key), 0);
                buf_release(&b);
            }
    free(idx);
    assert_int_equal(trace_writer_finish(w), 0);
    trace_writer_free(w);
}

/* One pass over the trace at path feeds c and (when not NULL) q, the series label being
 * the trace's task family. */
static void feed_trace(struct conflicts *c, struct select_quality *q, const char *path)
{
    struct analyzer an[2];
    struct errmsg err = {0};
    conflicts_analyzer(c, "family", NULL, NULL, &an[0]);
    if (q)
        select_quality_analyzer(q, "family", NULL, NULL, &an[1]);
    if (analyzer_run(path, an, q ? 2 : 1, NULL, &err) != 0)
        fail_msg("%s", errmsg_text(&err));
}

/* Trace round trip: the analyzer fed from the .atr equals the analyzer fed the lists
 * directly; method filter; window never worse than in-order; alpha >= bound. */
static void test_trace_round_trip(void **state)
{
    (void)state;
    uint64_t seed = th_seed(7);
    char dir[] = "/tmp/test_conflicts_XXXXXX";
    assert_non_null(mkdtemp(dir));
    const char *fam[3] = {"uniform", "clustered", "needle"};
    char path[3][256];
    for (int k = 0; k < 3; k++) {
        snprintf(path[k], sizeof path[k], "%s/%s.atr", dir, fam[k]);
        write_trace(path[k], (enum salca_synth_kind)k, 4096, 2, 4, seed, fam[k]);
    }
    struct conflicts_opts o;
    conflicts_opts_default(&o);
    struct conflicts *a, *b;
    struct errmsg e = {0};
    assert_int_equal(conflicts_new(&a, &o, &e), 0);
    assert_int_equal(conflicts_new(&b, &o, &e), 0);
    struct select_quality *q = NULL;
    assert_int_equal(select_quality_new(&q, o.method, &e), 0);
    uint32_t *idx = malloc(4096 * sizeof *idx);
    assert_non_null(idx);
    for (int k = 0; k < 3; k++) {
        feed_trace(a, q, path[k]);
        for (uint32_t l = 0; l < 2; l++)
            for (uint32_t h = 0; h < 4; h++) {
                size_t cnt;
                assert_int_equal(salca_synth_selection((enum salca_synth_kind)k, 4096, 0.05, seed,
                                                       l, h, idx, &cnt),
                                 0);
                assert_int_equal(conflicts_add_job(b, fam[k], l, h, idx, cnt, &e), 0);
            }
    }
    free(idx);
    assert_int_equal(conflicts_n_groups(a), 3);
    /* quality rows: every method is kept, per (group, method, rho) */
    assert_int_equal(select_quality_n_rows(q), 6);
    size_t w128 = policy_index(a, "window_128"), in1 = policy_index(a, "inorder_d1");
    for (int g = -1; g < 3; g++)
        for (size_t i = 0; i < conflicts_n_policies(a); i++) {
            struct conflicts_totals ta, tb;
            assert_int_equal(conflicts_totals(a, g, i, &ta), 0);
            assert_int_equal(conflicts_totals(b, g, i, &tb), 0);
            assert_int_equal(ta.jobs, g < 0 ? 24 : 8); /* method 1 filtered out */
            assert_int_equal(ta.slots, tb.slots);
            assert_int_equal(ta.ideal, tb.ideal);
            assert_true(ta.alpha >= ta.bound);
        }
    for (int g = -1; g < 3; g++) {
        struct conflicts_totals tw, ti;
        conflicts_totals(a, g, w128, &tw);
        conflicts_totals(a, g, in1, &ti);
        assert_true(tw.slots <= ti.slots);
    }
    for (size_t i = 0; i < conflicts_n_policies(a); i++)
        assert_memory_equal(conflicts_occupancy(a, i), conflicts_occupancy(b, i),
                            CONFLICTS_OCC_BINS * sizeof(uint64_t));

    /* Outputs. */
    char out[300];
    snprintf(out, sizeof out, "%s/out", dir);
    bool rendered;
    assert_int_equal(conflicts_write(a, out, &rendered, &e), 0);
    assert_int_equal(select_quality_write(q, out, &rendered, &e), 0);
    const char *files[] = {"alpha.csv",
                           "alpha_layers.csv",
                           "alpha_vs_window.csv",
                           "conflict_occupancy.csv",
                           "conflict_per_batch.csv",
                           "recall_vs_retention.csv",
                           "cosine_vs_retention.csv"};
    for (size_t f = 0; f < 7; f++) {
        char p[400];
        snprintf(p, sizeof p, "%s/%s", out, files[f]);
        FILE *fp = fopen(p, "r");
        assert_non_null(fp);
        char line[1024];
        assert_non_null(fgets(line, sizeof line, fp));
        if (f == 2)
            assert_non_null(strstr(line, "alpha_clustered"));
        if (f == 6)
            assert_non_null(strstr(line, ",cosine_mean,cosine_p5"));
        fclose(fp);
    }
    /* the folder comes from io_mkdir_p: below a file it cannot be made, and says so */
    char bad[320], want[360];
    snprintf(bad, sizeof bad, "%s/out", path[0]);
    snprintf(want, sizeof want, "cannot create folder '%s'", bad);
    assert_int_equal(conflicts_write(a, bad, &rendered, &e), ERR_USAGE); /* a file as a folder */
    if (!strstr(errmsg_text(&e), want))
        fail_msg("message: %s", errmsg_text(&e));
    conflicts_free(a);
    select_quality_free(q);
    conflicts_free(b);
    /* method "all" counts both methods */
    o.method = -1;
    assert_int_equal(conflicts_new(&a, &o, &e), 0);
    feed_trace(a, NULL, path[0]);
    struct conflicts_totals t;
    conflicts_totals(a, -1, 0, &t);
    assert_int_equal(t.jobs, 16);
    conflicts_free(a);
    assert_int_equal(io_remove_tree(dir), 0);
}

static void test_bad_selects(void **state)
{
    (void)state;
    struct conflicts_opts o;
    conflicts_opts_default(&o);
    struct conflicts *c;
    struct errmsg e = {0};
    assert_int_equal(conflicts_new(&c, &o, &e), 0);
    Acceltrace__SalcaSelect s = ACCELTRACE__SALCA_SELECT__INIT;
    uint8_t bytes[] = {5, 0, 0, 0x80}; /* 5, 6, 7, then a truncated varint */
    s.n_ctx = 100;
    s.count = 3;
    s.sel.data = bytes;
    s.sel.len = 3;
    assert_int_equal(conflicts_add_select(c, NULL, &s, &e), 0);
    s.sel.len = 4; /* truncated varint */
    s.count = 4;
    assert_int_equal(conflicts_add_select(c, NULL, &s, &e), ERR_DATA);
    assert_non_null(strstr(errmsg_text(&e), "bad selection list"));
    s.sel.len = 3;
    s.count = 2; /* more indices than count */
    assert_int_equal(conflicts_add_select(c, NULL, &s, &e), ERR_DATA);
    s.count = 3;
    s.n_ctx = 7; /* index 7 >= n_ctx */
    assert_int_equal(conflicts_add_select(c, NULL, &s, &e), ERR_DATA);
    s.n_ctx = 2; /* count > n_ctx */
    assert_int_equal(conflicts_add_select(c, NULL, &s, &e), ERR_DATA);
    s.n_ctx = CONFLICTS_MAX_CTX + 1;
    assert_int_equal(conflicts_add_select(c, NULL, &s, &e), ERR_LIMIT);
    s.method = 3; /* other method: ignored */
    assert_int_equal(conflicts_add_select(c, NULL, &s, &e), 0);
    struct conflicts_totals t;
    conflicts_totals(c, -1, 0, &t);
    assert_int_equal(t.jobs, 1);
    assert_int_equal(t.tokens, 3);
    assert_int_equal(conflicts_add_job(c, NULL, CONFLICTS_MAX_LAYERS, 0, NULL, 0, &e), ERR_LIMIT);
    conflicts_free(c);
    /* bad options */
    o.map.map = HBM_PC_MAP_XOR;
    o.map.h_att = 12;
    assert_int_equal(conflicts_new(&c, &o, &e), ERR_CONFIG);
    assert_null(c);
}

static void test_synth(void **state)
{
    (void)state;
    uint64_t seed = th_seed(7);
    static uint32_t idx[32768];
    for (int k = 0; k < 3; k++)
        for (uint32_t n = 1; n < 40000; n = n * 3 + 7) {
            size_t cnt;
            assert_int_equal(
                salca_synth_selection((enum salca_synth_kind)k, n, 0.05, seed, 1, 2, idx, &cnt), 0);
            size_t want = (size_t)ceil(0.05 * n);
            assert_true(cnt >= want);
            if (k == SALCA_SYNTH_UNIFORM)
                assert_int_equal(cnt, want);
            else {
                /* fixed parts: 4 sinks + the last 16 (clustered) or 64 tokens and two
                 * 64-token spans (needle); then each peak adds at most 5 */
                size_t fixed = k == SALCA_SYNTH_CLUSTERED ? 20 : 4 + 64 + 128;
                assert_true(cnt <= (want + 4 > fixed ? want + 4 : fixed));
            }
            for (size_t i = 1; i < cnt; i++)
                assert_true(idx[i] > idx[i - 1]);
            if (cnt)
                assert_true(idx[cnt - 1] < n);
            if (n > 32768)
                break;
        }
    size_t cnt;
    assert_int_equal(salca_synth_selection(SALCA_SYNTH_CLUSTERED, 100, 1.0, seed, 0, 0, idx, &cnt),
                     0);
    assert_int_equal(cnt, 100);
    assert_int_equal(salca_synth_selection(SALCA_SYNTH_CLUSTERED, 100, 0.0, seed, 0, 0, idx, &cnt),
                     ERR_USAGE);
    enum salca_synth_kind kk;
    assert_int_equal(salca_synth_parse("needle", &kk), 0);
    assert_int_equal(kk, SALCA_SYNTH_NEEDLE);
}

/*
 * Issue acceptance 5: clustered selections at 5% retention of 32K tokens land near the
 * paper's in-order 2.18 and window-128 1.17 (Salca paper, Fig. 10 text: "reduced HBM
 * channel conflict rate from 2.18 to 1.17"). Neighbourhood: +-25% (the paper's policy and
 * selections are not published; docs/models.md reports the exact values and settings).
 */
static void test_paper_neighbourhood(void **state)
{
    (void)state;
    uint64_t seed = 1;
    printf("seed %" PRIu64 "\n", seed);
    static uint32_t idx[32768];
    const char *maps[] = {"mod", "xor", "hash"};
    for (int m = 0; m < 3; m++) {
        struct conflicts_opts o;
        conflicts_opts_default(&o);
        o.map.map = (enum hbm_pc_map)m;
        struct conflicts *c;
        struct errmsg e = {0};
        assert_int_equal(conflicts_new(&c, &o, &e), 0);
        for (uint32_t l = 0; l < 4; l++)
            for (uint32_t h = 0; h < 8; h++) {
                size_t cnt;
                assert_int_equal(salca_synth_selection(SALCA_SYNTH_CLUSTERED, 32768, 0.05, seed, l,
                                                       h, idx, &cnt),
                                 0);
                assert_int_equal(conflicts_add_job(c, NULL, l, h, idx, cnt, &e), 0);
            }
        double ain = alpha_of(c, -1, "inorder_d1"), aw = alpha_of(c, -1, "window_128");
        printf("map %s: batch %.3f inorder_d1 %.3f inorder_d2 %.3f inorder_d4 %.3f "
               "window_128 %.3f gain %.3f\n",
               maps[m], alpha_of(c, -1, "batch"), ain, alpha_of(c, -1, "inorder_d2"),
               alpha_of(c, -1, "inorder_d4"), aw, ain / aw);
        if (m != HBM_PC_MAP_HASH) {
            assert_true(fabs(ain - 2.18) <= 0.25 * 2.18);
            assert_true(fabs(aw - 1.17) <= 0.25 * 1.17);
        }
        conflicts_free(c);
    }
}

/* Allocation failures anywhere in new/add end in ERR_NOMEM, never a crash or a leak
 * (the ASan build checks leaks). Failing the k-th and every later allocation, k grows until
 * the run needs fewer than k allocations and succeeds. */
static void test_alloc_failures(void **state)
{
    (void)state;
    static uint32_t idx[4096];
    size_t cnt;
    assert_int_equal(salca_synth_selection(SALCA_SYNTH_CLUSTERED, 4096, 0.05, 1, 0, 0, idx, &cnt),
                     0);
    int ok = 0, failed = 0;
    for (long k = 1; k < 100000 && ok == 0; k++) {
        struct conflicts_opts o;
        conflicts_opts_default(&o);
        o.per_job = true;
        struct conflicts *c = NULL;
        struct errmsg e = {0};
        mem_fail_after(k);
        int rc = conflicts_new(&c, &o, &e);
        if (rc == 0)
            rc = conflicts_add_job(c, "g", 0, 0, idx, cnt, &e);
        if (rc == 0)
            rc = conflicts_add_job(c, "h", 1, 2, idx, cnt, &e);
        mem_fail_after(0);
        if (rc == 0)
            ok++;
        else {
            assert_int_equal(rc, ERR_NOMEM);
            failed++;
        }
        conflicts_free(c);
    }
    printf("allocation failures: %d failed cleanly, %d succeeded\n", failed, ok);
    assert_true(failed > 0 && ok > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_consecutive_and_one_pc),
        cmocka_unit_test(test_bad_selects),
        cmocka_unit_test(test_synth),
        cmocka_unit_test(test_trace_round_trip),
        cmocka_unit_test(test_paper_neighbourhood),
        cmocka_unit_test(test_alloc_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
