/*
 * The op list of the "disc" and "gpu" replay models by model family
 * (replay/disc_model.c, replay/gpu_model.c; docs/models.md#dit-xl2): a class-conditional
 * DiT has an adaLN-Zero modulation per block and no cross-attention, PixArt has
 * cross-attention and one adaLN-single.
 *
 * The replayed MACs of a real capture are checked against the capture's own FLOP tallies
 * (capture/disc/disc_flops.c, the closed forms of docs/disc.md#quality-and-flop-accounting on the
 * recorded N_k): two independent codings of the same network, the replay's op list (predicted)
 * against the capture's class sums (recomputed). Run on a dit-micro and a PixArt micro capture made
 * in-process, in modes baseline (dense tally) and ctr (CTR tally). The DiT-XL/2 op list
 * at 256 and 512 px is checked against the multiply-adds of DiT's paper (Table 1), and the
 * DiSC time by unit (dpu_s, vpu_s, hbm_s, selector_s) against the total.
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

#include "capture/capture.h"
#include "capture/disc/disc_capture.h"
#include "capture/disc/disc_flops.h"
#include "common/mem.h"
#include "replay/disc_model.h"
#include "replay/gpu_model.h"
#include "replay/hw_config.h"
#include "replay/model.h"
#include "replay/results.h"
#include "tests/helpers/capture_helpers.h"

extern const struct model_ops model_disc_ops;
extern const struct model_ops model_gpu_ops;

/* What the hook saw: the per-step FLOP tallies of the DiscStep records. */
struct seen {
    const struct model_ops *m;
    void *st;
    uint64_t n_rec;
    double mac_dense, mac_ctr; /* half the MAC classes of flops_dense / flops_ctr */
    uint64_t ca_flops;         /* cross-attention classes of flops_dense */
    uint32_t steps;
    struct errmsg err;
};

/* The FLOP classes that are not multiply-adds (docs/disc.md#quality-and-flop-accounting: softmax,
 * GELU, vector ops). */
static bool mac_class(size_t c)
{
    return c != DISC_F_SA_SOFTMAX && c != DISC_F_CA_SOFTMAX && c != DISC_F_FFN_ACT &&
           c != DISC_F_VEC;
}

static int hook(void *ctx, const Acceltrace__Record *rec)
{
    struct seen *s = ctx;
    if (rec->body_case == ACCELTRACE__RECORD__BODY_DISC_STEP) {
        const Acceltrace__DiscStep *ds = rec->disc_step;
        assert_int_equal(ds->n_flops_dense, DISC_F_COUNT);
        for (size_t c = 0; c < DISC_F_COUNT; c++) {
            if (mac_class(c)) {
                s->mac_dense += (double)ds->flops_dense[c] / 2;
                s->mac_ctr += (double)ds->flops_ctr[c] / 2;
            }
            if (c >= DISC_F_CA_Q && c <= DISC_F_CA_PROJ)
                s->ca_flops += ds->flops_dense[c];
        }
        s->steps++;
    }
    struct model_record mr = {rec, NULL, s->n_rec++};
    return s->m->consume(s->st, &mr, &s->err);
}

/* Captures `model` in-process (4 steps, CTR and ST on) into the disc model; fills s and res. */
static void capture_replay(const char *model, struct seen *s, struct model_result *res,
                           bool *class_cond)
{
    struct errmsg e = {0};
    struct disc_params p;
    disc_params_default(&p);
    snprintf(p.model, sizeof p.model, "%s", model);
    p.steps = 4;
    p.compare_dense = false;
    p.threads = 1;
    struct disc_capture *cap = NULL;
    assert_int_equal(test_disc_open(&p, &cap, &e), 0);
    assert_int_equal(capture_disc_ops.prepare(cap, &e), 0);
    Acceltrace__TraceHeader hdr;
    acceltrace__trace_header__init(&hdr);
    assert_int_equal(capture_disc_ops.header(cap, &hdr, &e), 0);
    struct capture_opts co;
    capture_opts_default(&co);
    struct capture_header_store store;
    capture_header_common(&capture_disc_ops, &co, &hdr, &store);
    *class_cond = disc_header_class_cond(&hdr);
    struct hw_config *cfg = NULL;
    assert_int_equal(hw_config_defaults(&cfg, model_disc_ops.schema), 0);
    assert_int_equal(hw_config_set_json(cfg, "ops_table", "false", "test", &e), 0);
    struct model_env env = {&hdr, "(memory)", NULL, NULL};
    s->m = &model_disc_ops;
    assert_int_equal(model_disc_ops.new(&s->st, cfg, &env, &e), 0);
    struct test_emit_sink es;
    struct capture_sink sink;
    test_emit_sink_init(&sink, &es, hook, s);
    int rc = capture_disc_ops.run(cap, &sink, &e);
    if (rc)
        fail_msg("capture %s: %s / %s", model, e.text, s->err.text);
    assert_int_equal(model_disc_ops.finish(s->st, res, &e), 0);
    model_disc_ops.free(s->st);
    hw_config_free(cfg);
    capture_disc_ops.close(cap);
}

static double row(const struct model_result *res, size_t r, const char *name)
{
    double v = NAN;
    assert_int_equal(model_result_get(res, r, name, &v), 0);
    return v;
}

/* Replayed MACs (rows baseline, ctr) = the capture's tallies, exactly. */
static void check_family(const char *model, bool want_dit)
{
    struct seen s;
    memset(&s, 0, sizeof s);
    struct model_result *res = model_result_new();
    assert_non_null(res);
    bool dit = false;
    capture_replay(model, &s, res, &dit);
    assert_int_equal(dit, want_dit);
    assert_int_equal(s.steps, 4);
    assert_true(s.mac_dense > 0 && s.mac_ctr < s.mac_dense); /* CTR pruned some tokens */
    printf("%s: replayed MAC %.0f (dense) %.0f (ctr), tallies %.0f %.0f\n", model,
           row(res, 0, "mac"), row(res, 1, "mac"), s.mac_dense, s.mac_ctr);
    assert_true(row(res, 0, "mac") == s.mac_dense);
    assert_true(row(res, 1, "mac") == s.mac_ctr);
    /* the DiSC time by unit sums to the exposed time; the selector runs only with CTR */
    for (size_t m = 0; m < 3; m++) {
        double sum = row(res, m, "dpu_s") + row(res, m, "vpu_s") + row(res, m, "hbm_s") +
                     row(res, m, "selector_s");
        assert_true(fabs(sum - row(res, m, "seconds")) <= 1e-12 * row(res, m, "seconds"));
        assert_true(row(res, m, "dpu_s") > 0 && row(res, m, "vpu_s") > 0);
        assert_int_equal(row(res, m, "selector_s") > 0, m > 0);
    }
    /* DiT has no cross-attention; PixArt's is counted */
    assert_int_equal(s.ca_flops == 0, want_dit);
    model_result_free(res);
}

static void test_dit_micro_macs(void **state)
{
    (void)state;
    check_family("dit-micro", true);
}

static void test_pixart_micro_macs(void **state)
{
    (void)state;
    check_family("micro", false);
}

/* Sum of the MACs of one baseline step of dims dm; *ca: whether any ca_* op is there. */
static uint64_t step_macs(const struct disc_dims *dm, bool *ca, size_t *n_ada)
{
    struct disc_hw hw;
    disc_hw_default(&hw);
    size_t cap = disc_step_ops_max(dm->depth);
    struct disc_op *ops = mem_calloc(cap, sizeof *ops);
    assert_non_null(ops);
    struct disc_step_in in = {0};
    size_t n = disc_step_ops(&hw, dm, DISC_MODE_BASELINE, &in, ops, cap);
    uint64_t mac = 0;
    *ca = false;
    *n_ada = 0;
    for (size_t i = 0; i < n; i++) {
        mac += ops[i].a.mac;
        *ca |= !strncmp(ops[i].name, "ca_", 3);
        *n_ada += !strcmp(ops[i].name, "ada") || !strcmp(ops[i].name, "final_ada");
    }
    mem_free(ops);
    return mac;
}

/* DiT-XL/2 at 256 px: 118,621,421,568 multiply-adds per forward (docs/models.md#dit-xl2;
 * DiT paper Table 1: 118.6 Gflops, counted as multiply-adds); 512 px: 524.6 G (Table 4). */
static void test_dit_xl2_paper_macs(void **state)
{
    (void)state;
    struct disc_dims dm;
    disc_dims_preset(&dm, "dit-xl-2");
    assert_true(dm.class_cond);
    assert_int_equal(dm.n, 256);
    bool ca = true;
    size_t n_ada = 0;
    uint64_t mac = step_macs(&dm, &ca, &n_ada);
    assert_false(ca);
    assert_int_equal(n_ada, 29); /* 28 blocks + the final layer */
    assert_true(mac == 118621421568ull);
    dm.lat_h = dm.lat_w = 64;
    dm.n = 1024;
    mac = step_macs(&dm, &ca, &n_ada);
    assert_true(fabs((double)mac / 1e9 - 524.6) < 0.15);
    /* the same shapes as PixArt (cross-attention, one adaLN-single) count more */
    dm.class_cond = false;
    dm.text = 300, dm.dc = 4096;
    assert_true(step_macs(&dm, &ca, &n_ada) > mac);
    assert_true(ca);
    assert_int_equal(n_ada, 0);
}

/* The GPU baseline follows the family too: kernels per step and the header rule. */
static void test_gpu_family(void **state)
{
    (void)state;
    struct gpu_hw hw;
    assert_int_equal(gpu_preset_get("a100-pcie-80gb", &hw), 0);
    struct disc_dims dm;
    disc_dims_preset(&dm, "dit-xl-2");
    struct gpu_dit_dims ad;
    disc_dims_gpu(&dm, &ad);
    struct gpu_acc dit = {0}, pix = {0};
    gpu_dit_step(&hw, &ad, &dit);
    /* DiT: 5 kernels before the blocks, 19 per block (adaLN-Zero, fused qkv), 4 after */
    assert_int_equal(dit.kernels, 5 + 19 * 28 + 4);
    ad.class_cond = false;
    ad.text = 300, ad.dc = 4096;
    gpu_dit_step(&hw, &ad, &pix);
    /* PixArt: caption MLP and adaLN-single before, 27 per block (q, k, v, cross-attention) */
    assert_int_equal(pix.kernels, 8 + 27 * 28 + 3);
    assert_true(gpu_acc_seconds(&pix) > gpu_acc_seconds(&dit));
    /* header rule: model_json family first, else no text means DiT */
    Acceltrace__TraceHeader h;
    Acceltrace__DiscHeader dh;
    acceltrace__trace_header__init(&h);
    acceltrace__disc_header__init(&dh);
    assert_false(disc_header_class_cond(NULL));
    assert_false(disc_header_class_cond(&h));
    h.disc = &dh;
    assert_true(disc_header_class_cond(&h)); /* no text, no family */
    dh.caption_width = 4096, dh.text_tokens = 300;
    assert_false(disc_header_class_cond(&h));
    h.model_json = "{\"family\":\"dit\"}";
    assert_true(disc_header_class_cond(&h));
    h.model_json = "{\"family\":\"pixart\"}";
    dh.caption_width = 0, dh.text_tokens = 0;
    assert_false(disc_header_class_cond(&h));
    h.model_json = "not json";
    assert_true(disc_header_class_cond(&h));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dit_micro_macs),
        cmocka_unit_test(test_pixart_micro_macs),
        cmocka_unit_test(test_dit_xl2_paper_macs),
        cmocka_unit_test(test_gpu_family),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
