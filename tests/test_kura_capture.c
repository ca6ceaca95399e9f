/*
 * Tests of capture/kura/kura_capture without trace files (records through the emit
 * callback): record order and contents (docs/kura.md#trace-records), docs/kura.md#acceptance-checks
 * in the default capture, the determinism check same seed = same record bytes, other seed differs,
 * forced oracle checkpoints = same bytes, thread-count independence, and the other score sources.
 * for the other generators and schedules is in test_kura_recon.c.
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

#include "capture/kura/kura_capture.h"
#include "capture/kura/kura_sde.h"
#include "common/io.h"
#include "common/mem.h"
#include "common/sha256.h"
#include "formats/kura_fixed.h"
#include "tests/helpers/capture_helpers.h"

/* Collects what the capture emits: a hash of all packed records plus order checks. */
struct sink_ctx {
    struct sha256 h;
    int n_records;
    int n_tiles;
    int last_step;
    int roles[4];
    bool order_ok;
    size_t phase_len;
    bool errs_present, errs_absent;
    double max_step_err;
    double order_r_data;
};

static int sink(void *vctx, const Acceltrace__Record *rec)
{
    struct sink_ctx *x = vctx;
    size_t len = acceltrace__record__get_packed_size(rec);
    uint8_t *buf = mem_alloc(len ? len : 1);
    acceltrace__record__pack(rec, buf);
    sha256_update(&x->h, buf, len);
    mem_free(buf);
    x->n_records++;
    if (rec->body_case == ACCELTRACE__RECORD__BODY_KURA_STEP) {
        const Acceltrace__KuraStep *k = rec->kura_step;
        x->roles[k->role]++;
        x->phase_len = k->phase_q15.len;
        if (k->role == ACCELTRACE__KURA_ROLE__KURA_ROLE_DATA) {
            x->order_ok = x->n_records == 1 && k->step == -1;
            x->order_r_data = k->order_r;
        } else if (k->role == ACCELTRACE__KURA_ROLE__KURA_ROLE_REVERSE) {
            x->order_ok = x->order_ok && (x->last_step == -2 || k->step == x->last_step - 1) &&
                          k->c > 0 && k->sigma == sqrt(k->beta);
            if (k->drift_err) {
                x->errs_present = true;
                if (k->drift_err->max > x->max_step_err)
                    x->max_step_err = k->drift_err->max;
            } else {
                x->errs_absent = true;
            }
        } else if (k->role == ACCELTRACE__KURA_ROLE__KURA_ROLE_FINAL) {
            x->order_ok = x->order_ok && k->step == 0 && x->last_step == 1;
        }
        /* after DATA any first REVERSE step is accepted (-2), then they must count down */
        x->last_step = k->role == ACCELTRACE__KURA_ROLE__KURA_ROLE_DATA ? -2 : k->step;
    } else if (rec->body_case == ACCELTRACE__RECORD__BODY_KURA_TILES) {
        x->n_tiles++;
        x->order_ok = x->order_ok && rec->kura_tiles->step == x->last_step;
    }
    return 0;
}

static void run(const struct kura_params *p, struct kura_result *res, uint8_t digest[32],
                struct sink_ctx *out)
{
    struct sink_ctx x;
    memset(&x, 0, sizeof x);
    sha256_init(&x.h);
    struct errmsg e = {0};
    int rc = test_capture_kura(p, sink, &x, res, &e);
    if (rc)
        printf("capture failed: %s\n", errmsg_text(&e));
    assert_int_equal(rc, 0);
    sha256_final(&x.h, digest);
    if (out)
        *out = x;
}

static void base_params(struct kura_params *p)
{
    kura_params_default(p);
    p->quiet = true;
    p->threads = 1;
    p->reproducible = true; /* the Summary's wall time is 0 */
}

/* Default capture: record order, sizes, the drift error check per-step max <= 5.83e-6 rad, the
 * reconstruction check bound. */
static void test_default_capture(void **state)
{
    (void)state;
    struct kura_params p;
    base_params(&p);
    struct kura_result res;
    uint8_t d[32];
    struct sink_ctx x;
    run(&p, &res, d, &x);
    assert_int_equal(x.roles[1], 1);
    assert_int_equal(x.roles[2], 99);
    assert_int_equal(x.roles[3], 1);
    assert_int_equal(x.n_records, 102); /* 101 steps + summary */
    assert_int_equal(x.phase_len, 2 * 96 * 96);
    assert_true(x.errs_present && !x.errs_absent);
    assert_true(x.order_ok);
    /* every step's max <= 5.83e-6 rad in the default capture */
    assert_true(x.max_step_err <= 5.83e-6);
    assert_true(res.drift_err_max == x.max_step_err);
    assert_true(res.drift_err_max <= res.drift_bound_max);
    /* (t100): MAE <= 1.15 sqrt(beta_1) sqrt(2/pi) = 0.030558 */
    printf("default: recon MAE %.5f (bound %.5f, expected ~0.0266), max %.4f, drift err max "
           "%.3g mean %.3g, forward end R %.3f\n",
           res.recon_mae, res.recon_bound, res.recon_max, res.drift_err_max, res.drift_err_mean,
           res.forward_end_r);
    assert_true(res.recon_mae <= 0.030558);
    assert_true(res.recon_mae > 0.02); /* the last step's noise is really there */
    assert_false(res.checkpointed);
    kura_result_release(&res);
}

/* same seed same bytes; other seed differs; checkpoints and threads change nothing. */
static void test_determinism(void **state)
{
    (void)state;
    struct kura_params p;
    base_params(&p);
    p.h = 40;
    p.w = 36;
    p.n_tile_shapes = 1;
    p.tile_nh[0] = 20;
    p.tile_nw[0] = 5;
    struct kura_result r1, r2, r3, r4, r5;
    uint8_t d1[32], d2[32], d3[32], d4[32], d5[32];
    struct sink_ctx x;
    run(&p, &r1, d1, &x);
    assert_int_equal(x.n_tiles, 99);
    assert_true(x.order_ok);
    run(&p, &r2, d2, NULL);
    assert_memory_equal(d1, d2, 32);
    p.oracle_mem_bytes = 1000; /* force checkpoints */
    run(&p, &r3, d3, NULL);
    assert_true(r3.checkpointed);
    assert_memory_equal(d1, d3, 32);
    p.oracle_mem_bytes = (uint64_t)1 << 30;
    p.threads = 2;
    p.h = p.w = 72; /* large enough for the pool (>= 64x64) */
    p.n_tile_shapes = 0;
    p.preset[0] = 0;
    assert_int_equal(kura_params_preset(&p, "t100", NULL), 0);
    p.t = 6; /* short schedule: the point is threads vs no threads */
    run(&p, &r4, d4, NULL);
    p.threads = 1;
    run(&p, &r5, d5, NULL);
    assert_memory_equal(d4, d5, 32);
    kura_result_release(&r4);
    kura_result_release(&r5);
    p.h = 40;
    p.w = 36;
    p.t = 100;
    p.n_tile_shapes = 1;
    p.seed = 2;
    run(&p, &r4, d4, NULL);
    assert_memory_not_equal(d1, d4, 32);
    kura_result_release(&r1);
    kura_result_release(&r2);
    kura_result_release(&r3);
    kura_result_release(&r4);
}

/* Other score sources and drift modes run and behave as their definitions say. */
static void test_scores_and_modes(void **state)
{
    (void)state;
    struct kura_params p;
    base_params(&p);
    p.h = 32;
    p.w = 32;
    struct kura_result res;
    uint8_t d[32], d2[32];
    struct sink_ctx x;
    /* float drift: also within the reconstruction bound, errors still recorded */
    p.drift = KURA_DRIFT_FLOAT;
    run(&p, &res, d, &x);
    assert_true(res.recon_mae <= 0.030558);
    assert_true(x.errs_present);
    kura_result_release(&res);
    /* no check: no error fields */
    p.drift = KURA_DRIFT_FIXED;
    p.check_drift = false;
    run(&p, &res, d, &x);
    assert_true(x.errs_absent && !x.errs_present);
    kura_result_release(&res);
    /* prior: samples follow the terminal-like concentration around psi_ref = 0, not data */
    p.score = KURA_SCORE_PRIOR;
    run(&p, &res, d, NULL);
    assert_true(res.recon_mae > 0.3);
    kura_result_release(&res);
    /* none differs from prior */
    p.score = KURA_SCORE_NONE;
    run(&p, &res, d2, NULL);
    assert_memory_not_equal(d, d2, 32);
    kura_result_release(&res);
    /* bad parameters are usage errors */
    struct errmsg e = {0};
    p.h = 4;
    assert_int_equal(test_capture_kura(&p, sink, &x, NULL, &e), ERR_USAGE);
    p.h = 32;
    p.c_end = 2.0;
    assert_int_equal(test_capture_kura(&p, sink, &x, NULL, &e), ERR_USAGE);
    printf("rejected: %s\n", errmsg_text(&e));
}

static int null_sink(void *ctx, const Acceltrace__Record *rec)
{
    (void)ctx;
    (void)rec;
    return 0;
}

/* Memory estimate (docs/models.md "Memory (--mem-limit ...)"): per pixel 8 sampler maps, the
 * record map, two drift evaluators, the generator's 3 maps and the writer's 4 bytes (130 B)
 * plus the oracle trajectory ((T-1) 8 B) or, beyond --oracle-mem, its checkpoints; above
 * mem_limit_bytes the capture is refused before any map is allocated. */
static void test_mem_estimate(void **state)
{
    (void)state;
    struct kura_params p;
    base_params(&p);
    assert_true(p.mem_limit_bytes == (uint64_t)8 << 30);
    const uint64_t base = 10u << 20, n = 96 * 96;
    assert_true(kura_capture_mem_estimate(&p) == base + n * (130 + 99 * 8));
    p.oracle_mem_bytes = 1000; /* checkpoints: seg 10, 10 checkpoints, 2 scratch maps */
    assert_true(kura_capture_mem_estimate(&p) == base + n * (130 + (98 / 10 + 1 + 10 + 2) * 8));
    p.oracle_mem_bytes = (uint64_t)1 << 30;
    p.score = KURA_SCORE_PRIOR;
    assert_true(kura_capture_mem_estimate(&p) == base + n * 130);
    p.score = KURA_SCORE_ORACLE;
    p.h = p.w = 16384;
    uint64_t big = kura_capture_mem_estimate(&p);
    assert_true(big > (uint64_t)70 << 30 && big < (uint64_t)80 << 30);
    /* refused with the common message, allocating nothing map-sized: every allocation from
     * the 8th on fails, and the refusal still says ERR_LIMIT */
    struct errmsg e = {0};
    mem_fail_after(8);
    int rc = test_capture_kura(&p, null_sink, NULL, NULL, &e);
    mem_fail_after(0);
    assert_int_equal(rc, ERR_LIMIT);
    if (!strstr(e.text, "capture kura of a 16384x16384 map over 100 steps needs about 76.5 GiB, "
                        "above --mem-limit 8 GiB; use a smaller --size"))
        fail_msg("message: %s", e.text);
    p.h = p.w = 96;
    p.mem_limit_bytes = 1u << 20;
    assert_int_equal(test_capture_kura(&p, null_sink, NULL, NULL, &e), ERR_LIMIT);
}

/* Allocation failures at every point of a small capture (with tiles, oracle checkpoints
 * and PNGs off) end in ERR_NOMEM with a message and no leak (ASan checks the leaks). */
static void test_alloc_failures(void **state)
{
    (void)state;
    struct kura_params p;
    base_params(&p);
    p.h = 9;
    p.w = 8;
    p.t = 6;
    p.n_tile_shapes = 1;
    p.tile_nh[0] = 4;
    p.tile_nw[0] = 3;
    p.oracle_mem_bytes = 100; /* checkpoints */
    int failures = 0;
    for (long k = 1; k < 10000; k++) {
        struct errmsg e = {0};
        struct kura_result res;
        mem_fail_after(k);
        int rc = test_capture_kura(&p, null_sink, NULL, &res, &e);
        mem_fail_after(0);
        if (rc == 0) {
            kura_result_release(&res);
            break;
        }
        assert_int_equal(rc, ERR_NOMEM);
        assert_true(errmsg_text(&e)[0] != '\0');
        failures++;
    }
    printf("%d allocation points failed cleanly\n", failures);
    assert_true(failures > 10);
}

/* The image folder is made with its parents (io_mkdir_p); one that cannot be made is an I/O
 * error naming it, from the ops run through test_capture_kura and from the driver's prepare, which
 * refuses before any trace file exists. */
static void test_png_folders(void **state)
{
    (void)state;
    char root[64], nested[96], file[96], bad[128], path[160], want[192];
    snprintf(root, sizeof root, "/tmp/acceltrace-test-kura-%ld", (long)getpid());
    assert_int_equal(io_mkdir_p(root, 0755, NULL), 0);
    struct kura_params p;
    base_params(&p);
    p.h = 9;
    p.w = 8;
    p.t = 6;
    snprintf(nested, sizeof nested, "%s/a/b", root);
    p.png_dir = nested;
    struct errmsg e = {0};
    int rc = test_capture_kura(&p, null_sink, NULL, NULL, &e);
    if (rc)
        fail_msg("capture with images in '%s': %s", nested, errmsg_text(&e));
    struct stat st;
    snprintf(path, sizeof path, "%s/data.png", nested);
    assert_int_equal(stat(path, &st), 0);

    snprintf(file, sizeof file, "%s/file", root); /* a file where a folder should be */
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fclose(f);
    snprintf(bad, sizeof bad, "%s/png", file);
    snprintf(want, sizeof want, "cannot create folder '%s'", bad);
    p.png_dir = bad;
    /* a file named as a folder: the command line's mistake (usage) */
    assert_int_equal(test_capture_kura(&p, null_sink, NULL, NULL, &e), ERR_USAGE);
    if (!strstr(errmsg_text(&e), want))
        fail_msg("message: %s", errmsg_text(&e));

    void *inst = NULL;
    struct capture_opts o;
    capture_opts_default(&o);
    o.quiet = true;
    snprintf(path, sizeof path, "%s/k.atr", root);
    assert_int_equal(capture_kura_ops.open(&inst, &p, &e), 0);
    assert_int_equal(capture_run(&capture_kura_ops, inst, path, &o, &e), ERR_USAGE);
    capture_kura_ops.close(inst);
    if (!strstr(errmsg_text(&e), want))
        fail_msg("message: %s", errmsg_text(&e));
    assert_int_not_equal(stat(path, &st), 0);
    snprintf(path, sizeof path, "%s/k.atr.partial", root);
    assert_int_not_equal(stat(path, &st), 0);
    assert_int_equal(io_remove_tree(root), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_capture),  cmocka_unit_test(test_determinism),
        cmocka_unit_test(test_scores_and_modes), cmocka_unit_test(test_alloc_failures),
        cmocka_unit_test(test_mem_estimate),     cmocka_unit_test(test_png_folders),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
