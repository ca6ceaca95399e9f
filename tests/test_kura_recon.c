/*
 * of docs/kura.md: forward then reverse with the oracle score
 * reconstructs the data: circular MAE <= 1.15 sqrt(beta_1) sqrt(2/pi) at 96x96 for the
 * grating, fingerprint and wood generators at t100, with --start forward, and for t300 and
 * t1000 (t1000 at 48x48 unless ACCELTRACE_SLOW=1).
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

#include "capture/kura/kura_capture.h"
#include "tests/helpers/capture_helpers.h"

static int sink(void *ctx, const Acceltrace__Record *rec)
{
    (void)ctx;
    (void)rec;
    return 0;
}

static void run(const struct kura_params *p, struct kura_result *res, uint8_t digest[32],
                void *unused)
{
    (void)digest;
    (void)unused;
    struct errmsg e = {0};
    int rc = test_capture_kura(p, sink, NULL, res, &e);
    if (rc)
        printf("capture failed: %s\n", errmsg_text(&e));
    assert_int_equal(rc, 0);
}

static void base_params(struct kura_params *p)
{
    kura_params_default(p);
    p->quiet = true;
    p->threads = 1;
    p->reproducible = true;
}

/* oracle reconstruction at 96x96 per generator, t100, and with --start forward. The
 * MAEs agree to ~1e-5 across generators: after the oracle re-centres, the error is the last
 * step's noise sigma_1 eps, and eps comes from the same seeded stream. */
static void test_recon_generators(void **state)
{
    (void)state;
    const char *gens[] = {"grating", "fingerprint", "wood"};
    for (int g = 0; g < 3; g++)
        for (int start = 0; start < (g == 1 ? 2 : 1); start++) { /* forward: fingerprint */
            struct kura_params p;
            base_params(&p);
            p.check_drift = false;
            p.start = start ? KURA_START_FORWARD : KURA_START_VONMISES;
            assert_int_equal(kura_data_parse(gens[g], NULL, &p.data, NULL), 0);
            struct kura_result res;
            uint8_t d[32];
            run(&p, &res, d, NULL);
            printf("the reconstruction check t100 %-11s start=%-8s MAE %.7f (<= 0.030558)\n",
                   gens[g], start ? "forward" : "vonmises", res.recon_mae);
            assert_true(res.recon_mae <= 0.030558);
            kura_result_release(&res);
        }
}

/* for t300 (<= 0.016764) and t1000 (<= 0.009836) with the fingerprint. */
static void test_recon_long_schedules(void **state)
{
    (void)state;
    const char *pre[] = {"t300", "t1000"};
    const double bound[] = {0.016764, 0.009836};
    for (int k = 0; k < 2; k++) {
        struct kura_params p;
        base_params(&p);
        p.check_drift = false;
        assert_int_equal(kura_params_preset(&p, pre[k], NULL), 0);
        if (k == 1 && !getenv("ACCELTRACE_SLOW")) {
            p.h = 48; /* the t1000 run at 96x96 takes seconds; ACCELTRACE_SLOW=1 runs it */
            p.w = 48;
        }
        struct kura_result res;
        uint8_t d[32];
        run(&p, &res, d, NULL);
        printf("the reconstruction check %s %zux%zu MAE %.5f (<= %.6f)\n", pre[k], p.h, p.w,
               res.recon_mae, bound[k]);
        assert_true(res.recon_mae <= bound[k]);
        kura_result_release(&res);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_recon_generators),
        cmocka_unit_test(test_recon_long_schedules),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
