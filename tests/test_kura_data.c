/*
 * Tests of capture/kura/kura_data: the generator check of docs/kura.md (generators are
 * deterministic per seed and finite, image generators stay in [-1, 1]), parameter parsing, and
 * thread-count independence. The PNG hues of the generator check are tested with formats/kura_png
 * (test_kura_png).
 */
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

#include "capture/kura/kura_data.h"
#include "capture/kura/kura_sde.h"
#include "common/mem.h"
#include "common/threads.h"

static const char *names[] = {"grating", "fingerprint", "wood", "const", "ramp", "uniform"};

/* deterministic, finite, in range; seeds matter exactly where randomness is used. */
static void test_generators(void **state)
{
    (void)state;
    size_t h = 40, w = 33, n = h * w;
    struct thread_pool *pool = pool_new(2);
    for (int g = 0; g < 6; g++) {
        struct kura_data_spec spec;
        assert_int_equal(kura_data_parse(names[g], NULL, &spec, NULL), 0);
        double *t1 = mem_alloc(n * 8), *t2 = mem_alloc(n * 8), *t3 = mem_alloc(n * 8);
        double *x1 = mem_alloc(n * 8);
        assert_int_equal(kura_data_generate(&spec, h, w, 5, t1, x1, NULL, NULL), 0);
        assert_int_equal(kura_data_generate(&spec, h, w, 5, t2, NULL, pool, NULL), 0);
        assert_int_equal(kura_data_generate(&spec, h, w, 6, t3, NULL, NULL, NULL), 0);
        assert_memory_equal(t1, t2, n * 8); /* same seed (and any thread count): same map */
        bool differs = memcmp(t1, t3, n * 8) != 0;
        bool random = spec.kind == KURA_GEN_FINGERPRINT || spec.kind == KURA_GEN_WOOD ||
                      spec.kind == KURA_GEN_UNIFORM;
        assert_true(differs == random);
        double lo = 1e9, hi = -1e9;
        for (size_t i = 0; i < n; i++) {
            assert_true(isfinite(t1[i]) && isfinite(x1[i]));
            assert_true(t1[i] >= -M_PI && t1[i] < M_PI);
            assert_true(x1[i] >= -1.0 && x1[i] <= 1.0);
            if (kura_data_is_image(spec.kind))
                assert_true(t1[i] == kura_x_to_theta(x1[i]));
            lo = fmin(lo, x1[i]);
            hi = fmax(hi, x1[i]);
        }
        if (kura_data_is_image(spec.kind)) /* a real image spans most of [-1, 1] */
            assert_true(hi - lo > 1.0);
        printf("%-12s x in [%.3f, %.3f]\n", names[g], lo, hi);
        mem_free(t1);
        mem_free(t2);
        mem_free(t3);
        mem_free(x1);
    }
    pool_free(pool);
}

/* Fingerprint normalization: max |x| = 1 after the iterations (v <- v'/max|v'|). */
static void test_fingerprint_normalized(void **state)
{
    (void)state;
    struct kura_data_spec spec;
    assert_int_equal(kura_data_parse("fingerprint", "iters=3,radius=4", &spec, NULL), 0);
    size_t h = 24, w = 30, n = h * w;
    double *t = mem_alloc(n * 8), *x = mem_alloc(n * 8);
    assert_int_equal(kura_data_generate(&spec, h, w, 9, t, x, NULL, NULL), 0);
    double mx = 0;
    for (size_t i = 0; i < n; i++)
        mx = fmax(mx, fabs(x[i]));
    assert_true(fabs(mx - 1.0) < 1e-15);
    mem_free(t);
    mem_free(x);
}

/* Grating formula at one pixel (docs/kura.md#data-generators). */
static void test_grating_formula(void **state)
{
    (void)state;
    struct kura_data_spec spec;
    assert_int_equal(kura_data_parse("grating", NULL, &spec, NULL), 0);
    size_t h = 10, w = 12;
    double t[120], x[120];
    assert_int_equal(kura_data_generate(&spec, h, w, 1, t, x, NULL, NULL), 0);
    double r = 3, c = 7, f0 = M_PI / 6;
    double rho = c * cos(f0) + r * sin(f0) + 6 * sin(2 * M_PI * (r * cos(f0) - c * sin(f0)) / 12);
    assert_true(fabs(x[3 * 12 + 7] - cos(2 * M_PI * rho / 8)) < 1e-12);
}

static void test_params(void **state)
{
    (void)state;
    struct kura_data_spec spec;
    struct errmsg e = {0};
    assert_int_equal(kura_data_parse("fingerprint", "lambda=9,iters=2", &spec, &e), 0);
    char buf[512];
    kura_data_describe(&spec, 96, 96, buf, sizeof buf);
    assert_non_null(strstr(buf, "lambda=9,sigma=3,radius=5,iters=2,core_r=0.4"));
    assert_int_equal(kura_data_parse("grating", NULL, &spec, &e), 0);
    kura_data_describe(&spec, 50, 70, buf, sizeof buf);
    assert_non_null(strstr(buf, "period=70")); /* P = W filled in */
    assert_int_equal(kura_data_parse("nope", NULL, &spec, &e), ERR_USAGE);
    assert_int_equal(kura_data_parse("ramp", "nx=1.5", &spec, &e), ERR_USAGE);
    assert_int_equal(kura_data_parse("wood", "bogus=1", &spec, &e), ERR_USAGE);
    assert_non_null(strstr(errmsg_text(&e), "bogus"));
    assert_int_equal(kura_data_parse("fingerprint", "lambda=-1", &spec, &e), ERR_USAGE);
    assert_int_equal(kura_data_parse("const", "theta", &spec, &e), ERR_USAGE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_generators),
        cmocka_unit_test(test_fingerprint_normalized),
        cmocka_unit_test(test_grating_formula),
        cmocka_unit_test(test_params),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
