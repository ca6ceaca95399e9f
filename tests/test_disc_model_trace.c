/*
 * Trace-level tests of the "disc" replay model (replay/disc_model.c) on synthetic disc
 * records built here: docs/disc.md#acceptance-checks and the closed-form check
 * (DiSC_Baseline on tiny with CTR and ST off = the docs/disc.md#cost-of-one-op dense count).
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

#include "common/io.h"
#include "common/mem.h"
#include "common/rng.h"
#include "formats/bitset.h"
#include "formats/csv.h"
#include "formats/disc_hash.h"
#include "replay/disc_model.h"
#include "replay/energy.h"
#include "replay/engine.h"
#include "replay/model.h"
#include "replay/results.h"
#include "replay/sweep.h"
#include "tests/helpers/test_helpers.h"

extern const struct model_ops model_disc_ops;

static uint64_t g_seed;
static char g_dir[256];

/* ---- synthetic traces ---- */

enum keep { KEEP_NONE, KEEP_ALL, KEEP_HALF };

struct synth_opts {
    const char *model; /* "micro" or "tiny" dims */
    uint32_t steps;
    bool ctr; /* CTR on: step k >= 1 prunes tokens i % 3 == k % 3 */
    bool st;  /* DiscMask records */
    bool lb;  /* lb_* fields filled */
    enum keep keep;
    bool halve; /* drop every second nonzero of each mask row (keeping one) */
};

struct synth {
    Acceltrace__DiscHeader dh;
    Acceltrace__TraceHeader hdr;
    Acceltrace__Record **recs;
    size_t n, cap;
    void **owned; /* every allocation, freed by synth_free */
    size_t n_owned, cap_owned;
    uint64_t masks_not_kept;
};

static void *own(struct synth *s, size_t n)
{
    if (s->n_owned == s->cap_owned) {
        s->cap_owned = s->cap_owned ? 2 * s->cap_owned : 256;
        s->owned = realloc(s->owned, s->cap_owned * sizeof *s->owned);
        assert_non_null(s->owned);
    }
    void *p = calloc(1, n ? n : 1);
    assert_non_null(p);
    s->owned[s->n_owned++] = p;
    return p;
}

static void push(struct synth *s, Acceltrace__Record *r)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 64;
        s->recs = realloc(s->recs, s->cap * sizeof *s->recs);
        assert_non_null(s->recs);
    }
    s->recs[s->n++] = r;
}

static bool kept_token(const struct synth_opts *o, uint32_t k, uint32_t i)
{
    return !o->ctr || k == 0 || i % 3 != k % 3;
}

static void synth_build(struct synth *s, const struct synth_opts *o)
{
    memset(s, 0, sizeof *s);
    struct disc_dims dm;
    disc_dims_preset(&dm, o->model);
    Acceltrace__DiscHeader *dh = &s->dh;
    acceltrace__disc_header__init(dh);
    dh->model = (char *)o->model;
    dh->depth = dm.depth, dh->hidden = dm.d, dh->heads = dm.h, dh->head_dim = dm.dh;
    dh->ffn_hidden = 4 * dm.d, dh->patch = dm.patch, dh->in_channels = dm.cin;
    dh->out_channels = dm.cout, dh->caption_width = dm.dc, dh->text_tokens = dm.text;
    dh->latent_h = dm.lat_h, dh->latent_w = dm.lat_w, dh->grid_w = dm.lat_w / dm.patch;
    dh->tokens = dm.n, dh->steps = o->steps, dh->batch = 1, dh->st_refresh = 2;
    dh->ctr_mode = o->ctr ? "target" : "off";
    dh->st_mode = o->st ? "alpha" : "off";
    static char *hashes[3] = {"mod", "mul", "range"};
    static uint32_t units[5] = {8, 16, 32, 64, 128};
    dh->n_lb_hashes = 3, dh->lb_hashes = hashes, dh->lb_k_odd = DISC_HASH_K_ODD;
    dh->n_lb_units = 5, dh->lb_units = units, dh->lb_bins = 20;
    acceltrace__trace_header__init(&s->hdr);
    s->hdr.producer = "test_disc_model_trace";
    s->hdr.workload = "disc";
    s->hdr.disc = dh;

    const uint32_t n = dm.n;
    struct disc_lb *lb = NULL;
    assert_int_equal(disc_lb_new_std(&lb, n, DISC_HASH_K_ODD), 0);
    struct bitset m, tm;
    assert_int_equal(bitset_init(&m, n, n), 0);
    assert_int_equal(bitset_init(&tm, 1, n), 0);
    size_t mbytes;
    assert_true(bitset_bytes_for(n, n, &mbytes));
    struct rng r;
    rng_stream(&r, g_seed, "disc_model_trace", 0, 0);
    for (uint32_t k = 0; k < o->steps; k++) {
        bitset_zero(&tm);
        uint32_t nk = 0;
        for (uint32_t i = 0; i < n; i++)
            if (kept_token(o, k, i)) {
                bitset_set(&tm, 0, i);
                nk++;
            }
        /* masks of the step first, then the step record (capture's order is free) */
        for (uint32_t b = 0; o->st && b < dm.depth; b++)
            for (uint32_t h = 0; h < dm.h; h++) {
                double dens = 0.25 + 0.1 * (double)((k + b + h) % 4);
                bitset_zero(&m);
                for (uint32_t i = 0; i < n; i++) {
                    uint32_t c = 0;
                    for (uint32_t j = 0; j < n; j++)
                        if (rng_uniform(&r) < dens || j == i)
                            if (!o->halve || c++ % 2 == 0)
                                bitset_set(&m, i, j);
                }
                struct disc_lb_acc acc;
                disc_lb_acc_init(&acc, lb);
                assert_int_equal(
                    disc_lb_mask(lb, m.words, n, m.words_per_row, tm.words, NULL, &acc), 0);
                Acceltrace__DiscMask *dmk = own(s, sizeof *dmk);
                acceltrace__disc_mask__init(dmk);
                dmk->step = k, dmk->block = b, dmk->head = h, dmk->generated = k % 2 == 0;
                dmk->rows = nk, dmk->nnz = acc.nnz, dmk->n_cols = n;
                dmk->sparsity = 1 - (double)acc.nnz / ((double)nk * n);
                if (o->lb) {
                    dmk->n_lb_max = dmk->n_lb_std = 15;
                    dmk->lb_max = own(s, 15 * sizeof *dmk->lb_max);
                    dmk->lb_std = own(s, 15 * sizeof *dmk->lb_std);
                    for (int hh = 0; hh < 3; hh++)
                        for (int u = 0; u < 5; u++) {
                            dmk->lb_max[hh * 5 + u] = acc.max_sum[hh][u];
                            dmk->lb_std[hh * 5 + u] = acc.std_sum[hh][u];
                        }
                }
                if (o->keep == KEEP_ALL || (o->keep == KEEP_HALF && h % 2 == 0)) {
                    dmk->bits.data = own(s, mbytes);
                    dmk->bits.len = mbytes;
                    bitset_to_bytes(&m, dmk->bits.data, mbytes);
                    dmk->kept = true;
                } else {
                    s->masks_not_kept++;
                }
                Acceltrace__Record *rec = own(s, sizeof *rec);
                acceltrace__record__init(rec);
                rec->body_case = ACCELTRACE__RECORD__BODY_DISC_MASK;
                rec->disc_mask = dmk;
                push(s, rec);
            }
        Acceltrace__DiscStep *st = own(s, sizeof *st);
        acceltrace__disc_step__init(st);
        st->k = k, st->n_kept = nk, st->prune_ratio = 1 - (double)nk / n;
        st->st_generated = o->st && k % 2 == 0;
        st->token_mask.len = bitset_words_per_row(n) * 8;
        st->token_mask.data = own(s, st->token_mask.len);
        bitset_to_bytes(&tm, st->token_mask.data, st->token_mask.len);
        Acceltrace__Record *rec = own(s, sizeof *rec);
        acceltrace__record__init(rec);
        rec->body_case = ACCELTRACE__RECORD__BODY_DISC_STEP;
        rec->disc_step = st;
        push(s, rec);
    }
    bitset_release(&m);
    bitset_release(&tm);
    disc_lb_free(lb);
}

static void synth_free(struct synth *s)
{
    for (size_t i = 0; i < s->n_owned; i++)
        free(s->owned[i]);
    free(s->owned);
    free(s->recs);
}

/* ---- running the model directly ---- */

static struct hw_config *config(const char *modes, bool ops)
{
    struct hw_config *c = NULL;
    struct errmsg e = {0};
    assert_int_equal(hw_config_defaults(&c, model_disc_ops.schema), 0);
    char v[64];
    snprintf(v, sizeof v, "\"%s\"", modes);
    assert_int_equal(hw_config_set_json(c, "modes", v, "test", &e), 0);
    assert_int_equal(hw_config_set_json(c, "ops_table", ops ? "true" : "false", "test", &e), 0);
    return c;
}

/* Replays s with cfg; returns the result (caller frees) or NULL with *rc set. */
static struct model_result *replay(const struct synth *s, const struct hw_config *cfg, int *rc,
                                   struct errmsg *e)
{
    const struct model_ops *m = &model_disc_ops;
    struct model_env env = {&s->hdr, "(memory)", NULL, NULL};
    void *st = NULL;
    struct model_result *res = model_result_new();
    assert_non_null(res);
    *rc = m->new (&st, cfg, &env, e);
    for (size_t i = 0; *rc == 0 && i < s->n; i++) {
        struct model_record mr = {s->recs[i], NULL, i};
        *rc = m->consume(st, &mr, e);
    }
    if (*rc == 0)
        *rc = m->finish(st, res, e);
    m->free(st);
    if (*rc < 0) {
        model_result_free(res);
        return NULL;
    }
    return res;
}

static double get(const struct model_result *r, size_t row, const char *name)
{
    double v = NAN;
    if (model_result_get(r, row, name, &v) < 0)
        fail_msg("no column %s in row %zu", name, row);
    return v;
}

static const char *const cols[] = {"cycles",         "hidden_cycles", "mac",        "vpu_op",
                                   "sram_rd_bytes",  "sram_wr_bytes", "gspm_bytes", "hbm_bytes",
                                   "bus_elems",      "seconds",       "model_j",    "speedup",
                                   "masks_estimated"};

static void assert_rows_equal(const struct model_result *a, size_t ra, const struct model_result *b,
                              size_t rb)
{
    for (size_t i = 0; i < sizeof cols / sizeof cols[0]; i++) {
        double x = get(a, ra, cols[i]), y = get(b, rb, cols[i]);
        if (!(x == y))
            fail_msg("%s: %.17g != %.17g", cols[i], x, y);
    }
}

/* Issue acceptance 3: with CTR and ST off, DiSC_Baseline on tiny = the closed-form count
 * (the tiny baseline check: 296,035 cycles per step), through the whole model. */
static void test_tiny_closed_form(void **state)
{
    (void)state;
    struct synth_opts o = {.model = "tiny", .steps = 3};
    struct synth s;
    synth_build(&s, &o);
    struct hw_config *cfg = config("baseline,ctr", false);
    struct errmsg e = {0};
    /* the tiny baseline check is stated at the docs/disc.md#replay-configuration table's 64x16 VPU;
     * the default vpu_width is now the calibrated 24 (docs/models.md, VPU width), so the test names
     * the documented width */
    assert_int_equal(hw_config_set_json(cfg, "vpu_width", "16", "test", &e), 0);
    int rc;
    struct model_result *r = replay(&s, cfg, &rc, &e);
    if (!r)
        fail_msg("%s", e.text);
    assert_int_equal(model_result_rows(r), 2);
    assert_true(get(r, 0, "cycles") == 3 * 296035.0);
    assert_rows_equal(r, 0, r, 1);
    assert_true(get(r, 0, "speedup") > 0);
    model_result_free(r);
    hw_config_free(cfg);
    synth_free(&s);
}

/* baseline on any trace = ctr on a --ctr-off trace (ST on or off); mode all without
 * DiscMask records is a data error. */
static void test_baseline_equals_ctr_off_trace(void **state)
{
    (void)state;
    struct hw_config *cfg = config("baseline,ctr,all", false);
    struct errmsg e = {0};
    int rc;
    for (int st = 0; st < 2; st++) {
        struct synth_opts oa = {.model = "micro", .steps = 4, .ctr = true, .st = st, .lb = true};
        struct synth_opts ob = oa;
        ob.ctr = false;
        struct synth a, b;
        synth_build(&a, &oa);
        synth_build(&b, &ob);
        struct hw_config *c2 = st ? cfg : config("baseline,ctr", false);
        struct model_result *ra = replay(&a, c2, &rc, &e);
        struct model_result *rb = replay(&b, c2, &rc, &e);
        assert_non_null(ra);
        assert_non_null(rb);
        assert_rows_equal(ra, 0, rb, 1); /* baseline(A) = ctr(B) */
        assert_rows_equal(rb, 0, rb, 1); /* baseline(B) = ctr(B) */
        /* CTR on really changes mode ctr: fewer MACs, cache traffic in HBM */
        assert_true(get(ra, 1, "mac") < get(ra, 0, "mac"));
        assert_true(get(ra, 1, "hbm_bytes") > get(ra, 0, "hbm_bytes"));
        if (st) /* ST lowers the MACs of mode all below mode ctr */
            assert_true(get(ra, 2, "mac") < get(ra, 1, "mac"));
        model_result_free(ra);
        model_result_free(rb);
        if (!st) {
            struct model_result *rx = replay(&a, cfg, &rc, &e);
            assert_null(rx);
            assert_int_equal(rc, ERR_DATA);
            hw_config_free(c2);
        }
        synth_free(&a);
        synth_free(&b);
    }
    hw_config_free(cfg);
}

/* every mask kept and the lb fields removed replays identically; with half the masks
 * kept, masks_estimated is the number missing. */
static void test_missing_statistics(void **state)
{
    (void)state;
    struct hw_config *cfg = config("baseline,ctr,all", false);
    struct errmsg e = {0};
    int rc;
    struct synth_opts o1 = {.model = "micro", .steps = 4, .ctr = true, .st = true, .lb = true};
    struct synth_opts o2 = o1, o3 = o1;
    o2.lb = false, o2.keep = KEEP_ALL;
    o3.lb = false, o3.keep = KEEP_HALF;
    struct synth a, b, c;
    synth_build(&a, &o1);
    synth_build(&b, &o2);
    synth_build(&c, &o3);
    struct model_result *ra = replay(&a, cfg, &rc, &e);
    struct model_result *rb = replay(&b, cfg, &rc, &e);
    struct model_result *rc3 = replay(&c, cfg, &rc, &e);
    if (!ra || !rb || !rc3)
        fail_msg("%s", e.text);
    for (size_t row = 0; row < 3; row++)
        assert_rows_equal(ra, row, rb, row);
    assert_true(get(rc3, 2, "masks_estimated") == (double)c.masks_not_kept);
    assert_true(c.masks_not_kept == 4 * 2 * 2); /* K x L x odd heads */
    /* an estimate is close to the truth (same step and block, similar densities) */
    double ca = get(ra, 2, "cycles"), cc = get(rc3, 2, "cycles");
    assert_true(fabs(ca - cc) / ca < 0.05);
    /* a config outside the recorded set (U = 256) recounts kept masks: b has all kept */
    struct hw_config *c256 = config("all", false);
    assert_int_equal(hw_config_set_json(c256, "dpu_count", "256", "test", &e), 0);
    struct model_result *r256 = replay(&b, c256, &rc, &e);
    assert_non_null(r256);
    assert_true(get(r256, 0, "masks_estimated") == 0);
    struct model_result *r256a = replay(&a, c256, &rc, &e); /* a has no kept masks */
    assert_null(r256a);
    assert_int_equal(rc, ERR_DATA);
    model_result_free(r256);
    hw_config_free(c256);
    model_result_free(ra);
    model_result_free(rb);
    model_result_free(rc3);
    synth_free(&a);
    synth_free(&b);
    synth_free(&c);
    hw_config_free(cfg);
}

/* Config checks of docs/disc.md#replay-configuration: powers of two, odd constant. */
static void test_config_checks(void **state)
{
    (void)state;
    struct hw_config *c = config("all", false);
    struct errmsg e = {0};
    const char *bad[4][2] = {{"dpu_count", "48"},
                             {"vpu_simds", "24"},
                             {"hash_k_odd", "2654435760"},
                             {"modes", "\"fast\""}};
    for (int i = 0; i < 4; i++) {
        struct hw_config *c2 = config("all", false);
        assert_int_equal(hw_config_set_json(c2, bad[i][0], bad[i][1], "test", &e), 0);
        assert_int_equal(hw_config_check(c2, &e), ERR_CONFIG);
        /* the model refuses it too */
        struct synth_opts o = {.model = "micro", .steps = 1};
        struct synth s;
        synth_build(&s, &o);
        int rc;
        assert_null(replay(&s, c2, &rc, &e));
        assert_int_equal(rc, ERR_CONFIG);
        synth_free(&s);
        hw_config_free(c2);
    }
    assert_int_equal(hw_config_check(c, &e), 0);
    hw_config_free(c);
    struct hw_config *f = NULL;
    assert_int_equal(hw_config_load(&f, "configs/disc-a100-matched.json", NULL, &e), 0);
    struct hw_config *d = NULL;
    assert_int_equal(hw_config_defaults(&d, model_disc_ops.schema), 0);
    /* the shipped config is the schema default */
    assert_string_equal(hw_config_hash(f), hw_config_hash(d));
    hw_config_free(f);
    hw_config_free(d);
}

/* Issue acceptance 3 at model level: halving every mask's density never increases the
 * cycles of any op (SDDMM, softmax, SpMM; dense ops are unchanged), for every hash. */
static void test_halving_density(void **state)
{
    (void)state;
    const char *hashes[3] = {"\"mod\"", "\"mul\"", "\"range\""};
    struct synth_opts o = {.model = "micro", .steps = 4, .ctr = true, .st = true, .lb = true};
    struct synth_opts oh = o;
    oh.halve = true;
    struct synth a, b;
    synth_build(&a, &o);
    synth_build(&b, &oh);
    for (int h = 0; h < 3; h++) {
        struct hw_config *cfg = config("all", true);
        struct errmsg e = {0};
        assert_int_equal(hw_config_set_json(cfg, "hash", hashes[h], "test", &e), 0);
        /* one core and 8 units: with micro's N = 64 keys and 64 units every row's busiest
         * unit holds about one nonzero whatever the density, so nothing could change */
        assert_int_equal(hw_config_set_json(cfg, "cores", "1", "test", &e), 0);
        assert_int_equal(hw_config_set_json(cfg, "dpu_count", "8", "test", &e), 0);
        assert_int_equal(hw_config_set_json(cfg, "vpu_simds", "8", "test", &e), 0);
        int rc;
        struct model_result *ra = replay(&a, cfg, &rc, &e);
        struct model_result *rb = replay(&b, cfg, &rc, &e);
        assert_non_null(ra);
        assert_non_null(rb);
        size_t n = model_result_rows(ra);
        assert_int_equal(n, model_result_rows(rb));
        int lower = 0;
        for (size_t i = 0; i + 1 < n; i++) { /* the last row is the results row */
            double ca = get(ra, i, "cycles"), cb = get(rb, i, "cycles");
            assert_true(cb <= ca);
            lower += cb < ca;
        }
        printf("hash %d: %d of %zu ops faster; mac %.0f -> %.0f, cycles %.0f -> %.0f\n", h, lower,
               n - 1, get(ra, n - 1, "mac"), get(rb, n - 1, "mac"), get(ra, n - 1, "cycles"),
               get(rb, n - 1, "cycles"));
        assert_true(lower > 0);
        assert_true(get(rb, n - 1, "cycles") < get(ra, n - 1, "cycles"));
        model_result_free(ra);
        model_result_free(rb);
        hw_config_free(cfg);
    }
    synth_free(&a);
    synth_free(&b);
}

/* Malformed input is a data error with a message, never a crash. */
static void test_bad_records(void **state)
{
    (void)state;
    struct hw_config *cfg = config("baseline,ctr,all", false);
    struct errmsg e = {0};
    int rc;
    struct synth_opts o = {.model = "micro", .steps = 2, .ctr = true, .st = true, .keep = KEEP_ALL};
    struct synth s;
    synth_build(&s, &o);
    /* kept bits of the wrong size */
    for (size_t i = 0; i < s.n; i++)
        if (s.recs[i]->body_case == ACCELTRACE__RECORD__BODY_DISC_MASK) {
            s.recs[i]->disc_mask->bits.len -= 8;
            break;
        }
    assert_null(replay(&s, cfg, &rc, &e));
    assert_int_equal(rc, ERR_DATA);
    assert_non_null(strstr(e.text, "bitset"));
    synth_free(&s);
    /* a mask outside the header's blocks, a step beyond K, impossible dimensions */
    for (int t = 0; t < 3; t++) {
        synth_build(&s, &o);
        for (size_t i = 0; i < s.n; i++) {
            Acceltrace__Record *r = s.recs[i];
            if (t == 0 && r->body_case == ACCELTRACE__RECORD__BODY_DISC_MASK)
                r->disc_mask->block = 99;
            if (t == 1 && r->body_case == ACCELTRACE__RECORD__BODY_DISC_STEP)
                r->disc_step->k = 7;
        }
        if (t == 2)
            s.dh.depth = 0;
        memset(&e, 0, sizeof e);
        assert_null(replay(&s, cfg, &rc, &e));
        assert_int_equal(rc, ERR_DATA);
        assert_true(e.text[0] != 0);
        synth_free(&s);
    }
    /* a trace without a disc header */
    synth_build(&s, &o);
    s.hdr.disc = NULL;
    assert_null(replay(&s, cfg, &rc, &e));
    assert_int_equal(rc, ERR_DATA);
    synth_free(&s);
    hw_config_free(cfg);
}

/* ---- the energy recompute check through the engine and results files ---- */

static void run_engine(const struct synth *s, const char *dir, const struct energy_table *t)
{
    struct record_source src;
    assert_int_equal(record_source_mem(&src, &s->hdr, s->recs, s->n), 0);
    struct errmsg e = {0};
    struct hw_config *cfg = config("baseline,ctr,all", true);
    struct sweep *sw = NULL;
    assert_int_equal(sweep_single(&sw, cfg), 0);
    struct results *res = NULL;
    if (results_open(&res, dir, src.content_hash(src.ctx), "disc", &e) < 0)
        fail_msg("%s", e.text);
    struct engine_opts eo;
    engine_opts_default(&eo);
    eo.energy = t;
    eo.quiet = true;
    if (engine_run(&model_disc_ops, &src, sw, res, &eo, NULL, &e) < 0)
        fail_msg("%s", e.text);
    assert_int_equal(results_close(res), 0);
    sweep_free(sw);
    hw_config_free(cfg);
    record_source_close(&src);
}

static void test_energy_recompute(void **state)
{
    (void)state;
    struct synth_opts o = {.model = "micro", .steps = 3, .ctr = true, .st = true, .lb = true};
    struct synth s;
    synth_build(&s, &o);
    char t2[400], d1[400], d2[400], p1[500], p2[500], pr[500];
    snprintf(t2, sizeof t2, "%s/energy2.json", g_dir);
    FILE *f = fopen(t2, "w");
    assert_non_null(f);
    fputs("{\"events\": [{\"count\": \"mac\", \"pj\": 0.31, \"component\": \"mac\"},"
          "{\"count\": \"vpu_op\", \"pj\": 1.7, \"component\": \"vpu\"},"
          "{\"count\": \"sram_rd_bytes\", \"pj\": 0.2, \"component\": \"sram\"},"
          "{\"count\": \"sram_wr_bytes\", \"pj\": 0.3, \"component\": \"sram\"},"
          "{\"count\": \"gspm_bytes\", \"pj\": 1.1, \"component\": \"gspm\"},"
          "{\"count\": \"hbm_bytes\", \"pj\": 20, \"component\": \"hbm\"},"
          "{\"count\": \"bus_elems\", \"pj\": 0.25, \"component\": \"bus\"}],"
          "\"static\": [{\"time\": \"seconds\", \"watts\": 3.5, \"component\": \"static\"}]}",
          f);
    fclose(f);
    struct errmsg e = {0};
    struct energy_table e1, e2;
    memset(&e1, 0, sizeof e1);
    memset(&e2, 0, sizeof e2);
    assert_int_equal(energy_table_load(&e1, "configs/disc-energy.json", &e), 0);
    assert_int_equal(energy_table_load(&e2, t2, &e), 0);
    snprintf(d1, sizeof d1, "%s/r1", g_dir);
    snprintf(d2, sizeof d2, "%s/r2", g_dir);
    run_engine(&s, d1, &e1);
    run_engine(&s, d2, &e2);
    snprintf(p1, sizeof p1, "%s/ops.csv", d1);
    snprintf(p2, sizeof p2, "%s/ops.csv", d2);
    snprintf(pr, sizeof pr, "%s/ops_recomputed.csv", g_dir);
    if (energy_recompute_csv(p1, &e2, pr, &e) < 0)
        fail_msg("%s", e.text);
    struct csv_table a, b;
    assert_int_equal(csv_table_load(&a, p2, false, &e), 0);
    assert_int_equal(csv_table_load(&b, pr, false, &e), 0);
    assert_int_equal(a.n_rows, b.n_rows);
    assert_true(a.n_rows > 100);
    long ca = csv_table_col(&a, "energy_j"), cb = csv_table_col(&b, "energy_j");
    assert_true(ca >= 0 && cb >= 0);
    double sum = 0;
    for (size_t i = 0; i < a.n_rows; i++) {
        double x = strtod(a.rows[i][ca], NULL), y = strtod(b.rows[i][cb], NULL);
        assert_true(fabs(x - y) <= 1e-12 * fabs(x));
        sum += x;
    }
    assert_true(sum > 0);
    csv_table_release(&a);
    csv_table_release(&b);
    energy_table_release(&e1);
    energy_table_release(&e2);
    synth_free(&s);
}

static int setup(void **state)
{
    (void)state;
    g_seed = th_seed(11);
    snprintf(g_dir, sizeof g_dir, "/tmp/test_disc_model_trace.%d", (int)getpid());
    return io_mkdir_p(g_dir, 0777, NULL) ? -1 : 0;
}

static int teardown(void **state)
{
    (void)state;
    (void)io_remove_tree(g_dir);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tiny_closed_form),
        cmocka_unit_test(test_baseline_equals_ctr_off_trace),
        cmocka_unit_test(test_missing_statistics),
        cmocka_unit_test(test_config_checks),
        cmocka_unit_test(test_bad_records),
        cmocka_unit_test(test_halving_density),
        cmocka_unit_test(test_energy_recompute),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
