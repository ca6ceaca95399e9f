/*
 * test_export_scalesim: the SCALE-Sim topology of a hand-built DiT (PixArt layout with CFG,
 * and the class-conditional DiT layout): the rows and their summed M N K equal the closed
 * forms of the network's matrix products (docs/interop.md#scale-sim), M follows N_k of the
 * step asked for, the config carries the options, a step beyond the trace or without its
 * record is ERR_USAGE, and a failed allocation at any point returns an error and leaves no
 * file behind.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "analysis/export_peer.h"
#include "analysis/export_scalesim.h"
#include "common/io.h"
#include "common/mem.h"

static uint64_t n_kept[2] = {64, 40};
static bool seen[2] = {true, true};

/* A small PixArt-like network: 2 blocks, d 64, 4 heads of 16, 64 tokens, 16 text tokens. */
static void pixart(struct peer_dit *d, bool class_cond)
{
    memset(d, 0, sizeof *d);
    snprintf(d->model, sizeof d->model, "%s", class_cond ? "dit-test" : "pixart-test");
    d->dm = (struct disc_dims){.depth = 2,
                               .d = 64,
                               .h = 4,
                               .dh = 16,
                               .text = class_cond ? 0 : 16,
                               .dc = class_cond ? 0 : 32,
                               .n = 64,
                               .batch = 2,
                               .cin = 4,
                               .cout = 8,
                               .patch = 2,
                               .lat_h = 16,
                               .lat_w = 16,
                               .ctr_on = true,
                               .class_cond = class_cond};
    d->steps = 2;
    d->n_kept = n_kept;
    d->step_seen = seen;
}

/* Sum of M N K by the closed form of the products (docs/interop.md#scale-sim). */
static uint64_t macs_closed(const struct disc_dims *m, uint64_t nk, uint64_t *rows)
{
    const uint64_t d = m->d, n = m->n, b = m->batch, t = m->text, h = m->h, dh = m->dh;
    const uint64_t p2 = (uint64_t)m->patch * m->patch;
    uint64_t s = 256 * d + d * d + b * n * m->cin * p2 * d + b * n * d * p2 * m->cout;
    uint64_t r = 4;
    uint64_t blk = b * nk * d * d + b * n * 2 * d * d + b * h * 2 * nk * dh * n + b * nk * d * d +
                   b * nk * 8 * d * d;
    uint64_t rb = 5 + 2 * b * h;
    if (m->class_cond) {
        s += b * 2 * d * d;
        blk += b * 6 * d * d;
        rb += 1;
        r += 1;
    } else {
        s += 6 * d * d + b * t * m->dc * d + b * t * d * d;
        blk += 2 * b * nk * d * d + b * t * 2 * d * d + b * h * 2 * nk * dh * t;
        rb += 3 + 2 * b * h;
        r += 3;
    }
    *rows = r + m->depth * rb;
    return s + m->depth * blk;
}

static int count_lines(const char *path, const char *needle)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[512];
    int n = 0;
    while (fgets(line, sizeof line, f))
        n += !needle || strstr(line, needle) != NULL;
    fclose(f);
    return n;
}

static void run(bool class_cond)
{
    char dir[] = "/tmp/test_export_scalesim.XXXXXX";
    assert_non_null(mkdtemp(dir));
    char csv[128], cfg[128];
    snprintf(csv, sizeof csv, "%s/t.csv", dir);
    snprintf(cfg, sizeof cfg, "%s/t.cfg", dir);
    struct peer_dit d;
    pixart(&d, class_cond);
    struct export_scalesim_opts o = {csv, cfg, "t", 1, 16, 8, "os", 32};
    struct export_scalesim_stats st;
    struct errmsg e = {0};
    assert_int_equal(export_scalesim_write(&d, &o, &st, &e), 0);
    uint64_t rows, macs = macs_closed(&d.dm, 40, &rows);
    assert_int_equal(st.tokens, 40);
    assert_int_equal(st.macs, macs);
    assert_int_equal(st.layers, rows);
    assert_int_equal(count_lines(csv, NULL), rows + 1);
    assert_int_equal(count_lines(csv, "b1.sa_q,80,64,64,"), 1); /* M = B N_k */
    assert_int_equal(count_lines(csv, "b0.sa_qk.x1.h3,40,64,16,"), 1);
    assert_int_equal(count_lines(csv, "b0.sa_pv.x0.h0,40,16,64,"), 1);
    assert_int_equal(count_lines(csv, "ada,"), class_cond ? 3 : 0);
    assert_int_equal(count_lines(csv, ".ca_"), class_cond ? 0 : 2 * (3 + 2 * 2 * 4));
    assert_int_equal(count_lines(cfg, "ArrayHeight:    16"), 1);
    assert_int_equal(count_lines(cfg, "ArrayWidth:     8"), 1);
    assert_int_equal(count_lines(cfg, "Dataflow : os"), 1);
    assert_int_equal(count_lines(cfg, "IfmapSramSzkB:   32"), 1);
    assert_int_equal(count_lines(cfg, "FilterSramSzkB:  32"), 1);
    assert_int_equal(count_lines(cfg, "OfmapSramSzkB:   32"), 1);

    o.step = -1; /* dense: M = B N */
    assert_int_equal(export_scalesim_write(&d, &o, &st, &e), 0);
    assert_int_equal(st.macs, macs_closed(&d.dm, 64, &rows));
    assert_int_equal(count_lines(csv, "b1.sa_q,128,64,64,"), 1);

    o.step = 2;
    assert_int_equal(export_scalesim_write(&d, &o, &st, &e), ERR_USAGE);
    assert_non_null(strstr(errmsg_text(&e), "beyond"));
    seen[1] = false;
    o.step = 1;
    assert_int_equal(export_scalesim_write(&d, &o, &st, &e), ERR_USAGE);
    seen[1] = true;

    /* every allocation failure: an error, no temporary left */
    unlink(csv);
    unlink(cfg);
    int failed = 0;
    for (long k = 1; k < 40; k++) {
        mem_fail_after(k);
        int rc = export_scalesim_write(&d, &o, &st, &e);
        mem_fail_after(0);
        char tmp[160];
        snprintf(tmp, sizeof tmp, "%s.tmp", csv);
        assert_int_equal(access(tmp, F_OK), -1);
        snprintf(tmp, sizeof tmp, "%s.tmp", cfg);
        assert_int_equal(access(tmp, F_OK), -1);
        if (rc == 0)
            break;
        assert_int_equal(rc, ERR_NOMEM);
        failed++;
        unlink(csv);
    }
    assert_true(failed > 0);
    assert_int_equal(io_remove_tree(dir), 0);
}

static void test_pixart(void **state)
{
    (void)state;
    run(false);
}

static void test_dit(void **state)
{
    (void)state;
    run(true);
}

/* peer_dit_density: nnz over cells per (step, block, head); NaN without a mask. */
static void test_density(void **state)
{
    (void)state;
    struct peer_dit d;
    pixart(&d, false);
    uint64_t nnz[2 * 2 * 4] = {0}, cells[2 * 2 * 4] = {0};
    nnz[(1 * 2 + 1) * 4 + 3] = 30;
    cells[(1 * 2 + 1) * 4 + 3] = 120;
    d.nnz = nnz;
    d.cells = cells;
    assert_true(peer_dit_density(&d, 1, 1, 3) == 0.25);
    assert_true(peer_dit_density(&d, 0, 1, 3) != peer_dit_density(&d, 0, 1, 3)); /* NaN */
    assert_true(peer_dit_density(&d, 2, 0, 0) != peer_dit_density(&d, 2, 0, 0));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pixart),
        cmocka_unit_test(test_dit),
        cmocka_unit_test(test_density),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
