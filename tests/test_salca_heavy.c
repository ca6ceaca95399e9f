/*
 * Heavy-channel stability and Salca overshoot (docs/salca.md#figures plots 7 and 8):
 * the prefix ladder, the prefix top-r sets of salca_kv_finish_prefill on a hand-built K
 * whose channel ranking changes at known prefix lengths (ties: lower j), the Jaccard rows of
 * the heavy-stability analyzer, records without the ladder (older traces), malformed ladders, and
 * on a small real capture: the ladder of every SalcaPrefill, m = n0 equal to `heavy`, and
 * the overshoot histogram against a recount from the decoded SalcaSelect records.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "analysis/analyzer.h"
#include "analysis/conflicts.h"
#include "analysis/heavy_stability.h"
#include "analysis/overshoot.h"
#include "capture/salca/salca_capture.h"
#include "capture/salca/salca_kv.h"
#include "common/io.h"
#include "common/mem.h"
#include "formats/varint.h"
#include "tests/helpers/capture_helpers.h"
#include "tests/helpers/test_helpers.h"
#include "traces/trace_reader.h"

static void test_ladder(void **state)
{
    (void)state;
    uint32_t v[SALCA_PREFIX_MAX];
    assert_int_equal(salca_prefix_ladder(0, v), 0);
    assert_int_equal(salca_prefix_ladder(1, v), 1);
    assert_int_equal(v[0], 1);
    assert_int_equal(salca_prefix_ladder(64, v), 1);
    assert_int_equal(v[0], 64);
    assert_int_equal(salca_prefix_ladder(65, v), 2);
    assert_int_equal(v[0], 64);
    assert_int_equal(v[1], 65);
    static const uint32_t want[] = {64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768};
    assert_int_equal(salca_prefix_ladder(32768, v), 10);
    assert_memory_equal(v, want, sizeof want);
    assert_int_equal(salca_prefix_ladder(32769, v), 11);
    assert_int_equal(v[10], 32769);
    /* the largest n0: 64 * 2^0 .. 64 * 2^25, then n0 */
    assert_int_equal(salca_prefix_ladder(UINT32_MAX, v), 27);
    assert_int_equal(v[25], 64u << 25);
    assert_int_equal(v[26], UINT32_MAX);
}

/*
 * |K[i, j]| per channel (signs alternate with i, so only magnitudes may count):
 *   ch0 3 for i < 100, then 0        S(m) = 192, 300, 300, 300   at m = 64, 128, 256, 512
 *   ch1 2                            128, 256, 512, 1024
 *   ch2 1, ch6 1 (always tied)       64, 128, 256, 512
 *   ch3 0 for i < 128, then 5        0, 0, 640, 1920
 *   ch4 0.5                          32, 64, 128, 256
 *   ch5 0 for i < 200, then 4        0, 0, 224, 1248
 *   ch7 0
 * Top 3 (ties: lower j): m 64 and 128 {0, 1, 2} (2 wins its tie with 6), m 256 {0, 1, 3},
 * m 512 {1, 3, 5}.
 */
static void hand_built(struct salca_kv *kv)
{
    assert_int_equal(salca_kv_init(kv, 8, 3, 512, 16), 0);
    for (uint32_t i = 0; i < 512; i++) {
        float a[8] = {i < 100 ? 3.0f : 0.0f, 2, 1, i < 128 ? 0.0f : 5.0f, 0.5f,
                      i < 200 ? 0.0f : 4.0f, 1, 0};
        float k[8], v[8] = {0};
        for (int j = 0; j < 8; j++)
            k[j] = (i + (uint32_t)j) % 2 ? -a[j] : a[j];
        assert_int_equal(salca_kv_append(kv, k, v), 0);
    }
    salca_kv_finish_prefill(kv);
}

static const uint8_t want_sets[4][3] = {{0, 1, 2}, {0, 1, 2}, {0, 1, 3}, {1, 3, 5}};

static void test_prefix_sets(void **state)
{
    (void)state;
    struct salca_kv kv;
    hand_built(&kv);
    assert_int_equal(kv.n_prefix, 4);
    static const uint32_t lens[] = {64, 128, 256, 512};
    for (int a = 0; a < 4; a++) {
        assert_int_equal(kv.prefix_len[a], lens[a]);
        assert_memory_equal(kv.prefix_heavy[a], want_sets[a], 3);
    }
    /* m = n0 is the final I_g, and the final sums are the m = 512 column above */
    assert_memory_equal(kv.heavy, kv.prefix_heavy[3], 3);
    assert_true(kv.chan_sum[3] == 1920.0 && kv.chan_sum[5] == 1248.0 && kv.chan_sum[0] == 300.0);
    /* a deep copy keeps the ladder */
    struct salca_kv cp;
    assert_int_equal(salca_kv_copy(&cp, &kv), 0);
    assert_int_equal(cp.n_prefix, 4);
    assert_memory_equal(cp.prefix_heavy, kv.prefix_heavy, sizeof kv.prefix_heavy);
    salca_kv_release(&cp);
    salca_kv_release(&kv);
}

/* A SalcaPrefill record as the capture writes it, from a store (buffers owned by caller). */
static void to_record(const struct salca_kv *kv, uint32_t l, uint32_t g,
                      Acceltrace__SalcaPrefill *pf, float *cs, uint8_t *ph)
{
    acceltrace__salca_prefill__init(pf);
    for (uint32_t j = 0; j < kv->d; j++)
        cs[j] = (float)kv->chan_sum[j];
    for (uint32_t a = 0; a < kv->n_prefix; a++)
        memcpy(ph + a * kv->r, kv->prefix_heavy[a], kv->r);
    pf->l = l;
    pf->g = g;
    pf->n0 = kv->n0;
    pf->heavy.data = (uint8_t *)kv->heavy;
    pf->heavy.len = kv->r;
    pf->n_chan_sum = kv->d;
    pf->chan_sum = cs;
    pf->n_prefix_len = kv->n_prefix;
    pf->prefix_len = (uint32_t *)kv->prefix_len;
    pf->prefix_heavy.data = ph;
    pf->prefix_heavy.len = (size_t)kv->n_prefix * kv->r;
}

static bool file_exists(const char *d, const char *name)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", d, name);
    struct stat st;
    return stat(p, &st) == 0 && st.st_size > 0;
}

static void test_jaccard_rows(void **state)
{
    (void)state;
    static const uint8_t a[] = {0, 1, 2}, b[] = {1, 3, 5}, c3[] = {0, 1, 3};
    assert_true(heavy_stability_jaccard(a, 3, b, 3) == 0.2);  /* 1 shared of 5 */
    assert_true(heavy_stability_jaccard(c3, 3, b, 3) == 0.5); /* 2 of 4 */
    assert_true(heavy_stability_jaccard(b, 3, b, 3) == 1.0);
    assert_true(heavy_stability_jaccard(NULL, 0, NULL, 0) == 1.0);

    struct salca_kv kv;
    hand_built(&kv);
    struct heavy_stability *c;
    struct errmsg e = {0};
    assert_int_equal(heavy_stability_new(&c, &e), 0);
    Acceltrace__SalcaPrefill pf;
    float cs[8];
    uint8_t ph[4 * 3];
    to_record(&kv, 1, 0, &pf, cs, ph);
    assert_int_equal(heavy_stability_add(c, &pf, &e), 0);
    pf.g = 1; /* a second KV head of layer 1 with the same sets */
    assert_int_equal(heavy_stability_add(c, &pf, &e), 0);
    /* layer 0: a head whose prefix sets already equal the final one */
    uint8_t same[4 * 3];
    for (int k = 0; k < 4; k++)
        memcpy(same + 3 * k, kv.heavy, 3);
    pf.l = 0;
    pf.g = 0;
    pf.prefix_heavy.data = same;
    assert_int_equal(heavy_stability_add(c, &pf, &e), 0);
    uint64_t bare = 9;
    assert_int_equal(heavy_stability_prefills(c, &bare), 3);
    assert_int_equal(bare, 0);
    assert_int_equal(heavy_stability_n_rows(c), 8);
    static const double want_j[4] = {0.2, 0.2, 0.5, 1.0};
    double mass_final = 1024.0 + 1920.0 + 1248.0;
    double want_mass[4] = {(300.0 + 1024 + 512) / mass_final, (300.0 + 1024 + 512) / mass_final,
                           (300.0 + 1024 + 1920) / mass_final, 1.0};
    for (size_t i = 0; i < 8; i++) {
        struct heavy_stability_row s;
        assert_int_equal(heavy_stability_row(c, i, &s), 0);
        assert_int_equal(s.layer, i / 4);
        assert_int_equal(s.prefix_len, 64u << (i % 4));
        assert_int_equal(s.sets, i < 4 ? 1 : 2);
        double wj = i < 4 ? 1.0 : want_j[i % 4];
        assert_true(fabs(s.jaccard_mean - wj) < 1e-12);
        assert_true(fabs(s.jaccard_min - wj) < 1e-12);
        assert_true(fabs(s.mass_kept_mean - (i < 4 ? 1.0 : want_mass[i % 4])) < 1e-12);
    }
    struct heavy_stability_row s;
    assert_int_equal(heavy_stability_row(c, 8, &s), ERR_USAGE);

    char out[300];
    snprintf(out, sizeof out, "%s/rows", th_tmpdir());
    bool rendered;
    assert_int_equal(heavy_stability_write(c, out, &rendered, &e), 0);
    assert_true(file_exists(out, "heavy_stability.csv"));
    assert_true(file_exists(out, "heavy_stability.gp"));
    assert_false(file_exists(out, "overshoot.csv")); /* no selections */
    char p[400], line[256];
    snprintf(p, sizeof p, "%s/heavy_stability.csv", out);
    FILE *f = fopen(p, "r");
    assert_non_null(f);
    assert_non_null(fgets(line, sizeof line, f));
    assert_string_equal(line, "layer,prefix_len_tokens,sets,jaccard_mean,jaccard_min,"
                              "s_mass_kept_mean\n");
    for (int k = 0; k < 5; k++)
        assert_non_null(fgets(line, sizeof line, f));
    assert_string_equal(line, "1,64,2,0.200000,0.200000,0.437977\n");
    fclose(f);
    heavy_stability_free(c);
    salca_kv_release(&kv);
}

/* Records of older traces (no ladder) are counted and leave no rows; malformed ladders are
 * data errors. */
static void test_bare_and_bad(void **state)
{
    (void)state;
    struct salca_kv kv;
    hand_built(&kv);
    struct heavy_stability *c;
    struct errmsg e = {0};
    assert_int_equal(heavy_stability_new(&c, &e), 0);
    Acceltrace__SalcaPrefill pf;
    float cs[8];
    uint8_t ph[4 * 3];
    to_record(&kv, 0, 0, &pf, cs, ph);
    Acceltrace__SalcaPrefill old = pf;
    old.n_prefix_len = 0;
    old.prefix_len = NULL;
    old.prefix_heavy.len = 0;
    old.prefix_heavy.data = NULL;
    assert_int_equal(heavy_stability_add(c, &old, &e), 0);
    uint64_t bare = 0;
    assert_int_equal(heavy_stability_prefills(c, &bare), 1);
    assert_int_equal(bare, 1);
    assert_int_equal(heavy_stability_n_rows(c), 0);
    char out[300];
    snprintf(out, sizeof out, "%s/bare", th_tmpdir());
    assert_int_equal(heavy_stability_write(c, out, NULL, &e), 0);
    assert_false(file_exists(out, "heavy_stability.csv"));
    assert_false(file_exists(out, "heavy_stability.gp"));

    Acceltrace__SalcaPrefill bad = pf;
    bad.prefix_heavy.len = 11; /* not r bytes per entry */
    assert_int_equal(heavy_stability_add(c, &bad, &e), ERR_DATA);
    assert_non_null(strstr(errmsg_text(&e), "r bytes per prefix length"));
    bad = pf;
    uint32_t lens[4] = {64, 256, 128, 512};
    bad.prefix_len = lens;
    assert_int_equal(heavy_stability_add(c, &bad, &e), ERR_DATA);
    lens[1] = 128;
    lens[2] = 256;
    lens[3] = 513; /* beyond n0 */
    assert_int_equal(heavy_stability_add(c, &bad, &e), ERR_DATA);
    bad = pf;
    uint8_t dup[12];
    memcpy(dup, ph, 12);
    dup[1] = dup[0]; /* a repeated channel */
    bad.prefix_heavy.data = dup;
    assert_int_equal(heavy_stability_add(c, &bad, &e), ERR_DATA);
    assert_non_null(strstr(errmsg_text(&e), "layer 0 kv head 0"));
    assert_int_equal(heavy_stability_n_rows(c), 0);
    heavy_stability_free(c);
    salca_kv_release(&kv);
}

/* The reference of test_capture_overshoot: checks each SalcaPrefill's ladder and recounts
 * the overshoot of method 0 from the decoded selections (|S| from the index list, not the
 * count field). */
struct recount {
    uint64_t bins[OVERSHOOT_BINS_PER_N + 1], n_rec, above, prefills;
    double sum;
    uint32_t *idx; /* (4096) */
};

static int recount_record(void *self, const struct trace_scan_pos *pos, Acceltrace__Record **recp,
                          struct errmsg *e)
{
    (void)pos;
    (void)e;
    struct recount *rc = self;
    const Acceltrace__Record *rec = *recp;
    if (rec->body_case == ACCELTRACE__RECORD__BODY_SALCA_PREFILL) {
        const Acceltrace__SalcaPrefill *pf = rec->salca_prefill;
        uint32_t lad[SALCA_PREFIX_MAX];
        uint32_t nl = salca_prefix_ladder(2000, lad);
        assert_int_equal(pf->n_prefix_len, nl);
        assert_memory_equal(pf->prefix_len, lad, nl * sizeof *lad);
        assert_int_equal(pf->prefix_heavy.len, (size_t)nl * 64);
        assert_memory_equal(pf->prefix_heavy.data + (size_t)(nl - 1) * 64, pf->heavy.data, 64);
        rc->prefills++;
    } else if (rec->body_case == ACCELTRACE__RECORD__BODY_SALCA_SELECT &&
               rec->salca_select->method == 0) {
        const Acceltrace__SalcaSelect *s = rec->salca_select;
        size_t got = 0;
        assert_int_equal(
            varint_decode_indices(s->sel.data, s->sel.len, s->n_ctx, rc->idx, 4096, &got), 0);
        double x = ((double)got - (double)s->k) / (double)s->n_ctx;
        /* one division, so a bin edge hit exactly stays exact */
        rc->bins[(size_t)floor(((double)got - (double)s->k) * OVERSHOOT_BINS_PER_N /
                               (double)s->n_ctx)]++;
        rc->sum += x;
        rc->above += x > 0.0019;
        rc->n_rec++;
    }
    return 0;
}

static const struct analyzer_ops recount_ops = {.name = "recount", .record = recount_record};

/*
 * A small capture: every SalcaPrefill carries the ladder with m = n0 equal to heavy, and
 * the overshoot histogram, mean and count above 0.19% equal a recount from the decoded
 * selections of method 0 (|S| from the index list, not the count field).
 */
static void test_capture_overshoot(void **state)
{
    (void)state;
    struct salca_capture_params p;
    salca_capture_params_default(&p);
    p.calibrated = false; /* written for the synthetic source's selections */
    p.length = 2000;
    p.steps = 4;
    p.layers = 2;
    p.threads = 2;
    p.quiet = true;
    p.utc_time = "2026-01-01T00:00:00Z";
    char path[512];
    snprintf(path, sizeof path, "%s/cap.atr", th_tmpdir());
    struct errmsg e = {0};
    struct salca_capture_result res;
    if (test_capture_salca(&p, path, &res, &e))
        fail_msg("capture failed: %s", errmsg_text(&e));

    struct conflicts_opts o;
    conflicts_opts_default(&o);
    o.method = 1; /* the overshoot keeps Salca's records whatever method is analyzed */
    struct conflicts *c;
    struct overshoot *ovs;
    struct heavy_stability *hs;
    assert_int_equal(conflicts_new(&c, &o, &e), 0);
    assert_int_equal(overshoot_new(&ovs, &e), 0);
    assert_int_equal(heavy_stability_new(&hs, &e), 0);
    /* one pass feeds the three analyzers and the recount */
    struct recount rc = {.idx = malloc(4096 * sizeof(uint32_t))};
    assert_non_null(rc.idx);
    struct analyzer an[4];
    conflicts_analyzer(c, "family", NULL, NULL, &an[0]);
    overshoot_analyzer(ovs, NULL, NULL, &an[1]);
    heavy_stability_analyzer(hs, NULL, NULL, &an[2]);
    an[3] = (struct analyzer){&recount_ops, &rc};
    if (analyzer_run(path, an, 4, NULL, &e) != 0)
        fail_msg("%s", errmsg_text(&e));
    free(rc.idx);
    assert_int_equal(rc.prefills, 2 * 2);
    assert_int_equal(rc.n_rec, 4 * 2 * 4); /* steps x layers x heads */
    struct overshoot_stats ov;
    overshoot_stats(ovs, &ov);
    assert_int_equal(ov.records, rc.n_rec);
    assert_int_equal(ov.above_paper, rc.above);
    assert_true(fabs(ov.mean - rc.sum / (double)rc.n_rec) < 1e-12);
    assert_true(ov.n_bins >= 1 && rc.bins[ov.n_bins - 1] > 0);
    for (size_t b = 0; b <= OVERSHOOT_BINS_PER_N; b++)
        assert_int_equal(b < ov.n_bins ? ov.bins[b] : 0, rc.bins[b]);
    /* the summary's Salca overshoot mean is the same quantity */
    assert_true(fabs(ov.mean - res.m[SALCA_M_SALCA].overshoot_mean) < 1e-12);
    printf("overshoot: %llu records, mean %.4f%% of n, %llu above 0.19%%\n",
           (unsigned long long)rc.n_rec, 100 * ov.mean, (unsigned long long)rc.above);
    /* the last ladder entry (m = n0) overlaps itself fully */
    size_t ns = heavy_stability_n_rows(hs);
    assert_int_equal(ns, 2 * 6); /* 64 .. 1024 and 2000, per layer */
    for (size_t i = 0; i < ns; i++) {
        struct heavy_stability_row s;
        assert_int_equal(heavy_stability_row(hs, i, &s), 0);
        assert_int_equal(s.sets, 2);
        if (s.prefix_len == 2000)
            assert_true(s.jaccard_min == 1.0);
    }
    char out[300];
    snprintf(out, sizeof out, "%s/cap", th_tmpdir());
    assert_int_equal(conflicts_write(c, out, NULL, &e), 0);
    assert_int_equal(overshoot_write(ovs, out, NULL, &e), 0);
    assert_int_equal(heavy_stability_write(hs, out, NULL, &e), 0);
    assert_true(file_exists(out, "overshoot.csv"));
    assert_true(file_exists(out, "overshoot.dat"));
    assert_true(file_exists(out, "heavy_stability.csv"));
    conflicts_free(c);
    overshoot_free(ovs);
    heavy_stability_free(hs);
}

/* Allocation failures while adding prefill and Salca records end in ERR_NOMEM, never a
 * crash or a leak (the ASan build checks leaks). */
static void test_alloc_failures(void **state)
{
    (void)state;
    struct salca_kv kv;
    hand_built(&kv);
    Acceltrace__SalcaPrefill pf;
    float cs[8];
    uint8_t ph[4 * 3], sel[] = {0, 0, 0}; /* indices 0, 1, 2 */
    to_record(&kv, 0, 0, &pf, cs, ph);
    Acceltrace__SalcaSelect s = ACCELTRACE__SALCA_SELECT__INIT;
    s.n_ctx = 100;
    s.k = 2;
    s.count = 3;
    s.sel.data = sel;
    s.sel.len = 3;
    int ok = 0, failed = 0;
    for (long k = 1; k < 1000 && ok == 0; k++) {
        struct conflicts_opts o;
        conflicts_opts_default(&o);
        struct conflicts *c = NULL;
        struct errmsg e = {0};
        mem_fail_after(k);
        struct overshoot *ovs = NULL;
        struct heavy_stability *hs = NULL;
        int rc = conflicts_new(&c, &o, &e);
        if (rc == 0)
            rc = overshoot_new(&ovs, &e);
        if (rc == 0)
            rc = heavy_stability_new(&hs, &e);
        if (rc == 0)
            rc = heavy_stability_add(hs, &pf, &e);
        if (rc == 0)
            rc = overshoot_add(ovs, &s, &e);
        if (rc == 0)
            rc = conflicts_add_select(c, "g", &s, &e);
        mem_fail_after(0);
        if (rc == 0) {
            ok++;
            struct overshoot_stats ov;
            overshoot_stats(ovs, &ov);
            assert_int_equal(ov.records, 1);
            assert_int_equal(ov.n_bins, 1 + 2000 / 100); /* 1 of 100 = 1% of n */
            assert_int_equal(heavy_stability_n_rows(hs), 4);
        } else {
            assert_int_equal(rc, ERR_NOMEM);
            failed++;
        }
        conflicts_free(c);
        overshoot_free(ovs);
        heavy_stability_free(hs);
    }
    assert_true(failed > 0 && ok > 0);
    salca_kv_release(&kv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ladder),
        cmocka_unit_test(test_prefix_sets),
        cmocka_unit_test(test_jaccard_rows),
        cmocka_unit_test(test_bare_and_bad),
        cmocka_unit_test(test_capture_overshoot),
        cmocka_unit_test(test_alloc_failures),
    };
    return cmocka_run_group_tests(tests, th_group_setup, th_group_teardown);
}
