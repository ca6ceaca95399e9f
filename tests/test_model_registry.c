/*
 * Tests of replay/model_registry's memory estimates (model.h "Memory estimates"): every
 * registered model has an estimate_bytes hook, the estimates follow the documented
 * formulas where a test can see them (rows, map pixels, PE count), and
 * model_estimate_sweep sums small sweeps exactly and samples large ones without building
 * them (a 10^6-config grid is estimated from MODEL_ESTIMATE_EXACT_MAX configs).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "replay/model_registry.h"

static struct hw_config *defaults(const char *model)
{
    const struct model_ops *m = model_registry_find(model);
    assert_non_null(m);
    struct hw_config *c;
    assert_int_equal(hw_config_defaults(&c, m->schema), 0);
    return c;
}

static void set(struct hw_config *c, const char *key, const char *json)
{
    struct errmsg e = {0};
    if (hw_config_set_json(c, key, json, NULL, &e))
        fail_msg("set %s: %s", key, e.text);
}

static void test_every_model_has_a_hook(void **state)
{
    (void)state;
    for (size_t i = 0; i < model_registry_count(); i++) {
        const struct model_ops *m = model_registry_get(i);
        if (!m->estimate_bytes)
            fail_msg("model '%s' has no estimate_bytes hook", m->name);
        struct hw_config *c = defaults(m->name);
        uint64_t b = model_estimate_bytes(m, c, NULL);
        assert_true(b > MODEL_INSTANCE_OVERHEAD_BYTES);
        assert_true(b < (64u << 20)); /* defaults on the default capture: small */
        hw_config_free(c);
    }
}

/* count: the state and one 5-column row; split_rows adds exactly one more row. */
static void test_count_rows(void **state)
{
    (void)state;
    const struct model_ops *m = model_registry_find("count");
    struct hw_config *c = defaults("count");
    uint64_t one = model_estimate_bytes(m, c, NULL);
    assert_true(one >= MODEL_INSTANCE_OVERHEAD_BYTES + MODEL_RESULT_ROW_BYTES(5));
    assert_true(one <= MODEL_INSTANCE_OVERHEAD_BYTES + MODEL_RESULT_ROW_BYTES(5) + 256);
    set(c, "split_rows", "true");
    assert_int_equal(model_estimate_bytes(m, c, NULL) - one, MODEL_RESULT_ROW_BYTES(5));
    hw_config_free(c);
}

/* kura: the analytic model does not grow with the map; the simulated array holds the
 * drained map (4 B per pixel) and 24 B per PE. */
static void test_kura_scales(void **state)
{
    (void)state;
    const struct model_ops *m = model_registry_find("kura");
    Acceltrace__TraceHeader hdr = ACCELTRACE__TRACE_HEADER__INIT;
    Acceltrace__KuraHeader kh = ACCELTRACE__KURA_HEADER__INIT;
    hdr.kura = &kh;
    kh.t = 100;
    struct hw_config *c = defaults("kura");
    set(c, "activity", "false");
    set(c, "cycle_accurate", "false");
    kh.h = kh.w = 96;
    uint64_t a96 = model_estimate_bytes(m, c, &hdr);
    kh.h = kh.w = 1024;
    assert_int_equal(model_estimate_bytes(m, c, &hdr), a96);
    set(c, "cycle_accurate", "true");
    uint64_t s1024 = model_estimate_bytes(m, c, &hdr);
    kh.h = kh.w = 96;
    uint64_t s96 = model_estimate_bytes(m, c, &hdr);
    assert_int_equal(s1024 - s96, 4ull * (1024 * 1024 - 96 * 96));
    set(c, "n_h", "10");
    set(c, "n_w", "5");
    uint64_t h10w5 = model_estimate_bytes(m, c, &hdr);
    set(c, "n_h", "20");
    /* 50 more PEs of 24 B and 10 more rows of lane, col and rows words (12 B) */
    assert_int_equal(model_estimate_bytes(m, c, &hdr) - h10w5, 24 * 50 + 12 * 10);
    hw_config_free(c);
}

/* What a pass holds once: kura's shared map (2 B per pixel) and per record in flight its
 * map and aux (16 B per pixel); a model without the hook counts the default per record. */
static void test_pass_bytes(void **state)
{
    (void)state;
    const struct model_ops *m = model_registry_find("kura");
    Acceltrace__TraceHeader hdr = ACCELTRACE__TRACE_HEADER__INIT;
    Acceltrace__KuraHeader kh = ACCELTRACE__KURA_HEADER__INIT;
    hdr.kura = &kh;
    kh.t = 100;
    kh.h = kh.w = 96;
    uint64_t small = model_estimate_pass_bytes(m, &hdr, 64);
    kh.h = kh.w = 1024;
    uint64_t big = model_estimate_pass_bytes(m, &hdr, 64);
    assert_int_equal(big - small, (2ull + 64 * 16) * (1024 * 1024 - 96 * 96));
    /* each record more in flight costs the same: one map and its aux */
    uint64_t one = model_estimate_pass_bytes(m, &hdr, 2) - model_estimate_pass_bytes(m, &hdr, 1);
    assert_true(one >= 16ull * 1024 * 1024 && one < 16ull * 1024 * 1024 + 4096);
    assert_int_equal(model_estimate_pass_bytes(m, &hdr, 65) - big, one);
    const struct model_ops *a = model_registry_find("gpu");
    assert_null(a->estimate_pass);
    assert_int_equal(model_estimate_pass_bytes(a, NULL, 64), 64ull * MODEL_RECORD_DEFAULT_BYTES);
}

/* Small sweeps are summed config by config; a 10^6 grid is sampled and scaled. */
static void test_sweep_estimate(void **state)
{
    (void)state;
    const struct model_ops *m = model_registry_find("count");
    struct hw_config *base = defaults("count");
    uint64_t one = model_estimate_bytes(m, base, NULL);
    struct errmsg e = {0};
    struct sweep *sw;
    assert_int_equal(sweep_parse(&sw, "{\"scale\": [1, 2, 3], \"split_rows\": [false, true]}",
                                 "g.json", base, &e),
                     0);
    struct model_estimate est;
    assert_int_equal(model_estimate_sweep(m, sw, 0, sweep_count(sw), NULL, &est, &e), 0);
    assert_int_equal(est.n_configs, 6);
    assert_int_equal(est.n_measured, 6);
    assert_false(est.sampled);
    assert_int_equal(est.total_bytes, 6 * one + 3 * MODEL_RESULT_ROW_BYTES(5));
    assert_int_equal(est.max_instance_bytes, one + MODEL_RESULT_ROW_BYTES(5));
    /* a slice: configs [3, 5) are scale 2 split and scale 3 plain */
    assert_int_equal(model_estimate_sweep(m, sw, 3, 5, NULL, &est, &e), 0);
    assert_int_equal(est.total_bytes, 2 * one + MODEL_RESULT_ROW_BYTES(5));
    sweep_free(sw);
    assert_int_equal(
        sweep_parse(&sw, "{\"scale\": {\"range\": [1, 1000000, 1]}}", "g.json", base, &e), 0);
    assert_int_equal(model_estimate_sweep(m, sw, 0, sweep_count(sw), NULL, &est, &e), 0);
    assert_true(est.sampled);
    assert_int_equal(est.n_measured, MODEL_ESTIMATE_EXACT_MAX);
    assert_int_equal(est.n_configs, 1000000);
    assert_int_equal(est.total_bytes, 1000000 * one); /* identical instances scale exactly */
    sweep_free(sw);
    hw_config_free(base);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_model_has_a_hook),
        cmocka_unit_test(test_count_rows),
        cmocka_unit_test(test_kura_scales),
        cmocka_unit_test(test_pass_bytes),
        cmocka_unit_test(test_sweep_estimate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
