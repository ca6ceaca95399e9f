/*
 * test_gpu_model: the per-operator GPU model (replay/gpu_model.h, gpu_presets.c,
 * gpu_calibrate.c; docs/models.md#gpu-baselines): wave quantization of GEMMs and attention,
 * the bandwidth bounds, the launch rule, the time split summing to the total, request
 * checks, the presets' sources, and that every calibrated preset value is what the fit of
 * configs/gpu/calibration.csv gives.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/err.h"
#include "replay/gpu_calibrate.h"
#include "replay/gpu_model.h"

static struct gpu_hw preset(const char *name)
{
    struct gpu_hw hw;
    assert_int_equal(gpu_preset_get(name, &hw), 0);
    return hw;
}

/* A GEMM whose tiles fill one wave takes as long as any other one-wave GEMM of the same
 * K; one tile more starts a second wave. */
static void test_gemm_waves(void **state)
{
    (void)state;
    struct gpu_hw hw = preset("a100-pcie-80gb"); /* 108 SMs */
    /* m 1024 on 256-row tiles: 4 x (n / 128) tiles (the 256 x 128 orientation) */
    double t96 = gpu_gemm(&hw, 1024, 128 * 24, 8192, NULL);  /* 96 tiles */
    double t108 = gpu_gemm(&hw, 1024, 128 * 27, 8192, NULL); /* 108 tiles */
    double t112 = gpu_gemm(&hw, 1024, 128 * 28, 8192, NULL); /* 112 tiles: 2 waves */
    assert_true(fabs(t108 - t96) < 1e-12);
    assert_true(t112 > 1.8 * t108);
    /* a large square GEMM runs near gemm_eff_max of the peak, never above */
    double tb = gpu_gemm(&hw, 8192, 8192, 8192, NULL);
    double rate = 2.0 * 8192 * 8192 * 8192 / tb / (hw.peak_tflops * 1e12);
    assert_true(rate <= hw.gemm_eff_max);
    assert_true(rate > 0.85 * hw.gemm_eff_max);
}

/* A matrix-vector product is bound by its bytes at eff_mem of the bandwidth. */
static void test_gemv_memory_bound(void **state)
{
    (void)state;
    struct gpu_hw hw = preset("h100-sxm");
    struct gpu_acc a = {0};
    double t = gpu_gemm(&hw, 1, 4096, 4096, &a);
    double bytes = 2.0 * (4096 + 4096.0 * 4096 + 4096);
    assert_true(t >= bytes / (hw.hbm_gbs * 1e9 * hw.eff_mem));
    assert_true(fabs(a.bytes - bytes) < 1);
    assert_int_equal(a.kernels, 1);
}

/* Attention: per-CTA waves; at long sequences the rate approaches attn_eff_max of the peak
 * scaled by the head-dim padding (72 runs on the 96 kernel). */
static void test_attention(void **state)
{
    (void)state;
    struct gpu_hw hw = preset("h100-sxm");
    double prev = 0;
    for (uint64_t s = 512; s <= 16384; s *= 2) {
        double t = gpu_attention(&hw, 1, 16, s, s, 128, false, NULL);
        assert_true(t > prev);
        prev = t;
    }
    double t = gpu_attention(&hw, 1, 132, 128 * 64, 128 * 64, 72, false, NULL);
    double rate = 4.0 * 132 * 8192.0 * 8192 * 72 / t / (hw.peak_tflops * 1e12);
    assert_true(rate < hw.attn_eff_max * 72 / 96);
    assert_true(rate > 0.9 * hw.attn_eff_max * 72 / 96);
    /* causal does half the work */
    double tc = gpu_attention(&hw, 1, 132, 8192, 8192, 128, true, NULL);
    double tn = gpu_attention(&hw, 1, 132, 8192, 8192, 128, false, NULL);
    assert_true(tc < 0.6 * tn && tc > 0.4 * tn);
}

/*
 * Decode attention: the call's fixed time plus the cache bytes at decode_eff, plus the reduce
 * kernel and two launches.
 */
static void test_decode_attention(void **state)
{
    (void)state;
    struct gpu_hw hw = preset("a100-sxm-80gb");
    hw.host_us = 0;
    double t = gpu_decode_attention(&hw, 1, 32, 8, 131072, 128, NULL);
    double kv = 2.0 * 2 * 8 * 131072.0 * 128, q = 2.0 * 2 * 32 * 128;
    assert_true(hw.decode_fill_us > 0);
    double want = hw.decode_fill_us * 1e-6 + (kv + q) / (hw.hbm_gbs * 1e9 * hw.decode_eff) +
                  2.0 * 32 * 128 * 2 / (hw.hbm_gbs * 1e9 * hw.eff_mem) + 2 * hw.launch_us * 1e-6;
    assert_true(fabs(t - want) < 1e-9 * want);
}

/* A kernel costs max(t + launch_us, host_us); the excess is the launch class. */
static void test_launch_rule(void **state)
{
    (void)state;
    struct gpu_hw hw = preset("a100-pcie-80gb");
    hw.launch_us = 2, hw.host_us = 0;
    struct gpu_acc a = {0};
    double t = gpu_elementwise(&hw, 1000, 1, &a);
    assert_true(fabs(a.s[GPU_OP_LAUNCH] - 2e-6) < 1e-15);
    hw.host_us = 50; /* the host is slower than the kernel: its time counts */
    struct gpu_acc b = {0};
    double te = gpu_elementwise(&hw, 1000, 1, &b);
    assert_true(fabs(te - 50e-6) < 1e-15);
    assert_true(te > t);
    assert_true(fabs(gpu_acc_seconds(&b) - te) < 1e-15);
}

/* Every workload on every preset: the split sums to the total, power is in range. */
static void test_requests_sum(void **state)
{
    (void)state;
    for (size_t p = 0; p < gpu_preset_count(); p++) {
        struct gpu_hw hw = preset(gpu_preset_name(p));
        for (size_t w = 0; w < gpu_workload_count(); w++) {
            struct gpu_request r = {0};
            r.wl = gpu_workload_get(w);
            r.context = 32768, r.heads = 32, r.kv_heads = 8, r.head_dim = 128;
            r.part = GPU_PART_MODEL;
            struct gpu_estimate est;
            char msg[256];
            assert_int_equal(gpu_request_run(&hw, &r, &est, msg, sizeof msg), 0);
            double sum = 0;
            for (int c = 0; c < GPU_OP_N; c++)
                sum += est.acc.s[c];
            assert_true(est.seconds > 0);
            assert_true(fabs(sum - est.seconds) <= 1e-12 * est.seconds);
            assert_true(est.power_w >= hw.idle_w && est.power_w <= hw.tdp_w);
            assert_true(fabs(est.energy_j - est.power_w * est.seconds) < 1e-9 * est.energy_j);
        }
    }
}

/* Impossible requests are usage errors with a message. */
static void test_request_errors(void **state)
{
    (void)state;
    struct gpu_hw hw = preset("h200");
    struct gpu_estimate est;
    char msg[256];
    struct gpu_request r = {0};
    r.wl = gpu_workload_find("pixart-sigma-xl");
    r.image_px = 1000; /* not a multiple of 16 */
    assert_int_equal(gpu_request_run(&hw, &r, &est, msg, sizeof msg), ERR_USAGE);
    assert_non_null(strstr(msg, "multiple of 16"));
    r.wl = gpu_workload_find("llama-3-8b");
    r.context = 0;
    assert_int_equal(gpu_request_run(&hw, &r, &est, msg, sizeof msg), ERR_USAGE);
    r.wl = gpu_workload_find("decode-attention");
    r.context = 1024, r.heads = 32, r.kv_heads = 5, r.head_dim = 128;
    assert_int_equal(gpu_request_run(&hw, &r, &est, msg, sizeof msg), ERR_USAGE);
    assert_null(gpu_workload_find("nosuch"));
    assert_int_equal(gpu_preset_get("nosuch", &hw), ERR_USAGE);
}

/* CFG doubles the batch; the eager runtime only adds time. */
static void test_request_options(void **state)
{
    (void)state;
    struct gpu_hw hw = preset("a100-pcie-80gb");
    struct gpu_estimate a, b, c;
    char msg[256];
    struct gpu_request r = {0};
    r.wl = gpu_workload_find("dit-xl-2");
    r.steps = 10;
    assert_int_equal(gpu_request_run(&hw, &r, &a, msg, sizeof msg), 0);
    assert_int_equal(a.batch, 1);
    assert_int_equal(a.tokens, 256); /* 256 px: 32 x 32 latent, patch 2 */
    assert_true(fabs(a.seconds - 10 * a.per_unit_s) < 1e-12);
    r.cfg = true;
    assert_int_equal(gpu_request_run(&hw, &r, &b, msg, sizeof msg), 0);
    assert_int_equal(b.batch, 2);
    assert_true(b.seconds > a.seconds);
    r.eager = true;
    assert_int_equal(gpu_request_run(&hw, &r, &c, msg, sizeof msg), 0);
    assert_true(c.seconds >= b.seconds);
}

/* Every preset value names its status (the project's vocabulary) and a source. */
static void test_preset_sources(void **state)
{
    (void)state;
    static const char *const keys[] = {
        "sms",        "peak_tflops",    "hbm_gbs",     "eff_mem",      "launch_us",
        "host_us",    "gemm_eff_max",   "gemm_k_fill", "attn_eff_max", "attn_k_fill",
        "decode_eff", "decode_fill_us", "idle_w",      "tdp_w",        "elem_bytes"};
    static const char *const st[] = {"input", "cited", "cited-derived", "calibrated", "decision"};
    for (size_t p = 0; p < gpu_preset_count(); p++) {
        size_t n = 0;
        const struct gpu_preset_value *v = gpu_preset_values(gpu_preset_name(p), &n);
        assert_int_equal(n, sizeof keys / sizeof keys[0]);
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
            size_t i = 0;
            while (i < n && strcmp(v[i].key, keys[k]))
                i++;
            assert_true(i < n);
            bool ok = false;
            for (size_t s = 0; s < sizeof st / sizeof st[0]; s++)
                ok = ok || !strcmp(v[i].status, st[s]);
            assert_true(ok);
            assert_true(strlen(v[i].source) > 8);
            assert_true(v[i].value > 0 || !strcmp(v[i].key, "host_us"));
        }
    }
}

/*
 * The calibrated values of every preset are the fit of the calibration set (to the fit's
 * grid step), or, for a family without rows for a value, the other family's fit
 * (cited-derived in the preset); a value no row covers is cited-derived from another
 * measurement.
 */
static void test_calibration_matches(void **state)
{
    (void)state;
    static const double step[GPU_FIT_PARAMS] = {8, 0.005, 16, 0.005, 0.1};
    struct gpu_fit fit[2];
    struct errmsg e = {0};
    const char *fam_preset[2] = {"a100-pcie-80gb", "h100-sxm"};
    for (int f = 0; f < 2; f++)
        assert_int_equal(gpu_calibrate("configs/gpu/calibration.csv", fam_preset[f], &fit[f], &e),
                         0);
    /* decode attention: the 4 H100 SXM FlashAttention-2 paged decode rows (c157-c160) fit
     * to a few percent with the call's fixed time; Ampere has none and takes the Hopper fit */
    assert_int_equal(fit[1].p[3].rows, 4);
    assert_int_equal(fit[1].p[4].rows, 4);
    assert_true(fit[1].p[4].rms_log < 0.05);
    assert_true(fit[1].p[4].value > 5 && fit[1].p[4].value < 20);
    assert_int_equal(fit[0].p[4].rows, 0);
    for (size_t p = 0; p < gpu_preset_count(); p++) {
        const char *name = gpu_preset_name(p);
        int f = !strcmp(gpu_preset_family(name), "hopper");
        size_t n = 0;
        const struct gpu_preset_value *v = gpu_preset_values(name, &n);
        for (int k = 0; k < GPU_FIT_PARAMS; k++) {
            const struct gpu_fit_param *q = &fit[f].p[k];
            if (!q->rows)
                q = &fit[!f].p[k]; /* carried over from the other family */
            if (!q->rows) {        /* no rows at all: derived from another measurement */
                for (size_t i = 0; i < n; i++)
                    if (!strcmp(v[i].key, q->key))
                        assert_string_equal(v[i].status, "cited-derived");
                continue;
            }
            for (size_t i = 0; i < n; i++)
                if (!strcmp(v[i].key, q->key)) {
                    if (fabs(v[i].value - q->value) > step[k] / 2 + 1e-9)
                        fail_msg("%s %s: preset %g, fit %g", name, q->key, v[i].value, q->value);
                    assert_string_equal(v[i].status,
                                        q == &fit[f].p[k] ? "calibrated" : "cited-derived");
                }
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gemm_waves),     cmocka_unit_test(test_gemv_memory_bound),
        cmocka_unit_test(test_attention),      cmocka_unit_test(test_decode_attention),
        cmocka_unit_test(test_launch_rule),    cmocka_unit_test(test_requests_sum),
        cmocka_unit_test(test_request_errors), cmocka_unit_test(test_request_options),
        cmocka_unit_test(test_preset_sources), cmocka_unit_test(test_calibration_matches),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
