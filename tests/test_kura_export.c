/*
 * Tests of replay/kura_tiles: the section 7 RTL stimulus export (docs/kura.md#acceptance-checks
 *(the export check) and the ) and the check of stored KuraTiles against derived streams.
 *
 * The reference below reads only the exported hex files. It rebuilds each tile's halo
 * field from the columns in in.hex (ctrl bit1 starts a tile, bit0 marks a consumed
 * column), evaluates eq. 5-6 by direct window sums on it, and places the outputs at the
 * drain cycles s_k + 26 + d of 8.2, s_k = first column cycle + N_w. It must reproduce
 * out.hex line for line; lut.hex must reproduce sin_q for every code.
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

#include "common/io.h"
#include "common/mem.h"
#include "common/rng.h"
#include "formats/kura_fixed.h"
#include "replay/kura_sim.h"
#include "replay/kura_tiles.h"

/* A file as an array of lines (whitespace stripped). */
struct lines {
    char **v;
    size_t n;
};

static void read_lines(const char *dir, const char *name, struct lines *l)
{
    char path[512], buf[8192];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    l->v = NULL;
    l->n = 0;
    while (fgets(buf, sizeof buf, f)) {
        buf[strcspn(buf, "\r\n")] = 0;
        l->v = realloc(l->v, (l->n + 1) * sizeof *l->v);
        assert_non_null(l->v);
        l->v[l->n++] = strdup(buf);
    }
    fclose(f);
}

static void free_lines(struct lines *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
}

/* Hex digits [pos, pos+n) of s as a number. */
static uint32_t hexfield(const char *s, size_t pos, size_t n)
{
    char tmp[16];
    memcpy(tmp, s + pos, n);
    tmp[n] = 0;
    return (uint32_t)strtoul(tmp, NULL, 16);
}

static int64_t floor_shift(int64_t x, int k)
{
    /* floor(x / 2^k) by division, independent of kura_shr_floor */
    int64_t d = (int64_t)1 << k;
    int64_t qt = x / d;
    if ((x % d) != 0 && x < 0)
        qt--;
    return qt;
}

/* The hex-only reference: returns the expected out.hex lines (caller frees). */
static void reference_out(const struct lines *in, int n_w_hint, struct lines *out)
{
    size_t digits = strlen(in->v[0]);
    int nh = (int)((digits - 1) / 8) - 4;
    int lanes = nh + 4;
    size_t n_cyc = in->n;
    out->n = n_cyc;
    out->v = calloc(n_cyc, sizeof *out->v);
    assert_non_null(out->v);
    for (size_t t = 0; t < n_cyc; t++) {
        out->v[t] = malloc(1 + 8 * (size_t)nh + 1);
        memset(out->v[t], '0', 1 + 8 * (size_t)nh);
        out->v[t][1 + 8 * nh] = 0;
    }
    /* halo field of the current tile: field[m][k] = lane k of its m-th column */
    int maxcols = 4096;
    uint32_t *field = calloc((size_t)maxcols * lanes, sizeof *field);
    assert_non_null(field);
    int ncols = 0;
    size_t start = 0;
    int nw = n_w_hint;
    for (size_t t = 0; t <= n_cyc; t++) {
        uint32_t ctrl = t < n_cyc ? hexfield(in->v[t], 0, 1) : 2;
        if ((ctrl & 2) && ncols > 0) {
            /* finish the previous tile: N_w + 4 columns, outputs at s_k + 26 + d */
            assert_int_equal(ncols, nw + 4);
            size_t s_k = start + (size_t)nw;
            for (int d = 0; d < nw; d++) {
                size_t cyc = s_k + 26 + (size_t)d;
                assert_true(cyc < n_cyc);
                char *line = out->v[cyc];
                line[0] = '1';
                for (int i = 0; i < nh; i++) {
                    int32_t ssum = 0, csum = 0;
                    for (int dy = -2; dy <= 2; dy++)
                        for (int dx = -2; dx <= 2; dx++) {
                            if (!dx && !dy)
                                continue;
                            uint32_t wd = field[(size_t)(d + 2 + dx) * lanes + (i + 2 + dy)];
                            ssum += (int16_t)(wd >> 16);
                            csum += (int16_t)(wd & 0xFFFF);
                        }
                    uint32_t cw = field[(size_t)(d + 2) * lanes + (i + 2)];
                    int64_t raw = (int64_t)(int16_t)(cw & 0xFFFF) * ssum -
                                  (int64_t)(int16_t)(cw >> 16) * csum;
                    uint32_t o = (uint32_t)(int32_t)floor_shift(raw + 16384, 15);
                    char hx[9];
                    snprintf(hx, sizeof hx, "%08x", o);
                    memcpy(line + 1 + 8 * (size_t)(nh - 1 - i), hx, 8);
                }
            }
            ncols = 0;
        }
        if (t == n_cyc)
            break;
        if (ctrl & 2)
            start = t;
        if (ctrl & 1) {
            assert_true(ncols < maxcols);
            for (int k = 0; k < lanes; k++)
                field[(size_t)ncols * lanes + k] =
                    hexfield(in->v[t], 1 + 8 * (size_t)(lanes - 1 - k), 8);
            ncols++;
        }
    }
    free(field);
}

static int16_t *uniform_map(int h, int w, uint64_t seed)
{
    struct rng r;
    rng_stream(&r, seed, "test-kura-export", 0, 0);
    int16_t *q = mem_alloc((size_t)h * w * sizeof *q);
    assert_non_null(q);
    for (int i = 0; i < h * w; i++)
        q[i] = (int16_t)(uint16_t)rng_below(&r, 65536);
    return q;
}

/* Exports a 13x11 map at one shape and checks counts and the hex-only reference (the export check).
 */
static void export_and_check(int nh, int nw, int want_cyc, int want_in, int want_out)
{
    char dir[] = "/tmp/acceltrace_kura_export_XXXXXX";
    assert_non_null(mkdtemp(dir));
    uint64_t seed = 9;
    printf("seed %llu shape %dx%d dir %s\n", (unsigned long long)seed, nh, nw, dir);
    int16_t *q = uniform_map(13, 11, seed);
    struct kura_step_info info = {.h = 13, .w = 11, .step = 99, .k = 0.03, .kref = 0.045};
    assert_int_equal(kura_regs_init(&info.regs, 0.03, 0.045, 0), 0);
    int32_t d[13 * 11];
    struct kura_streams st;
    struct errmsg e = {0};
    assert_int_equal(kura_tiles_derive(q, 13, 11, &info.regs, nh, nw, &st, NULL, d, &e), 0);
    assert_int_equal(kura_tiles_export(dir, &info, q, d, &st, "abc", &e), 0);
    struct lines in, out, ref, lut, ph, dr;
    read_lines(dir, "in.hex", &in);
    read_lines(dir, "out.hex", &out);
    read_lines(dir, "lut.hex", &lut);
    read_lines(dir, "phase.hex", &ph);
    read_lines(dir, "drift.hex", &dr);
    assert_int_equal(in.n, want_cyc);
    assert_int_equal(out.n, want_cyc);
    int n_in = 0, n_first = 0, n_out = 0;
    for (size_t t = 0; t < in.n; t++) {
        assert_int_equal(strlen(in.v[t]), 1 + 8 * (nh + 4));
        assert_int_equal(strlen(out.v[t]), 1 + 8 * nh);
        uint32_t c = hexfield(in.v[t], 0, 1);
        n_in += (c & 1) != 0;
        n_first += c == 3;
        n_out += hexfield(out.v[t], 0, 1) == 1;
    }
    assert_int_equal(n_in, want_in);
    assert_int_equal(n_first, (int)st.n_tiles);
    assert_int_equal(n_out, want_out);
    reference_out(&in, want_in / (int)st.n_tiles - 4, &ref);
    for (size_t t = 0; t < out.n; t++)
        if (strcmp(ref.v[t], out.v[t])) {
            print_error("cycle %zu: reference %s, out.hex %s\n", t, ref.v[t], out.v[t]);
            fail();
        }
    /* lut.hex reproduces sin_q over all 65,536 codes through the docs/kura.md#fixed-point-drift
     * addressing */
    assert_int_equal(lut.n, 4097);
    for (int code = 0; code < 65536; code++) {
        uint16_t u = (uint16_t)code;
        int quad = u >> 14, p = u & 0x3FFF;
        int pp = (quad == 1 || quad == 3) ? 16384 - p : p;
        int a = pp >> 2, f = pp & 3;
        int32_t la = (int16_t)hexfield(lut.v[a], 0, 4);
        int32_t v = la;
        if (f) {
            int32_t lb = (int16_t)hexfield(lut.v[a + 1], 0, 4);
            v = la + (int32_t)floor_shift(f * (lb - la) + 2, 2);
        }
        if (quad >= 2)
            v = -v;
        assert_int_equal(v, kura_sin_q((int16_t)u));
    }
    /* phase.hex and drift.hex hold q and d */
    assert_int_equal(ph.n, 13 * 11);
    assert_int_equal(dr.n, 13 * 11);
    for (int i = 0; i < 13 * 11; i++) {
        assert_int_equal((int16_t)hexfield(ph.v[i], 0, 4), q[i]);
        assert_int_equal((int32_t)hexfield(dr.v[i], 0, 8), d[i]);
    }
    char path[600];
    snprintf(path, sizeof path, "%s/meta.json", dir);
    assert_int_equal(access(path, R_OK), 0);
    snprintf(path, sizeof path, "%s/README.txt", dir);
    assert_int_equal(access(path, R_OK), 0);
    const char *names[] = {"in.hex",    "out.hex",   "lut.hex",   "phase.hex",
                           "drift.hex", "meta.json", "README.txt"};
    for (size_t i = 0; i < 7; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        remove(path);
    }
    rmdir(dir);
    free_lines(&in);
    free_lines(&out);
    free_lines(&ref);
    free_lines(&lut);
    free_lines(&ph);
    free_lines(&dr);
    kura_streams_release(&st);
    mem_free(q);
}

/* 13x11 at 4x3 (467 lines, 112 valid in, 48 valid out) and at 20x5 (98, 27, 15). */
static void test_export_r9(void **state)
{
    (void)state;
    export_and_check(4, 3, 467, 112, 48);
    export_and_check(20, 5, 98, 27, 15);
    export_and_check(1, 1, 1 + 143 * 27, 143 * 5, 143);
}

/* Stored KuraTiles equal to the derived streams pass; any flipped bit is a data error. */
static void test_stored_tiles(void **state)
{
    (void)state;
    int16_t *q = uniform_map(13, 11, 3);
    struct kura_regs regs;
    assert_int_equal(kura_regs_init(&regs, 0.01, 0.015, 0), 0);
    struct kura_streams st;
    struct errmsg e = {0};
    assert_int_equal(kura_tiles_derive(q, 13, 11, &regs, 4, 3, &st, NULL, NULL, &e), 0);
    size_t nc = (size_t)st.n_cyc;
    uint8_t *ind = malloc(nc * 8 * 4), *outd = malloc(nc * 4 * 4);
    assert_true(ind && outd);
    for (size_t i = 0; i < nc * 8; i++)
        for (int b = 0; b < 4; b++)
            ind[4 * i + b] = (uint8_t)(st.in_data[i] >> (8 * b));
    for (size_t i = 0; i < nc * 4; i++)
        for (int b = 0; b < 4; b++)
            outd[4 * i + b] = (uint8_t)((uint32_t)st.out_data[i] >> (8 * b));
    Acceltrace__KuraTiles kt = ACCELTRACE__KURA_TILES__INIT;
    kt.step = 5;
    kt.n_h = 4;
    kt.n_w = 3;
    kt.n_tiles = (uint32_t)st.n_tiles;
    kt.n_cyc = (uint32_t)st.n_cyc;
    kt.in_ctrl.data = st.in_ctrl;
    kt.in_ctrl.len = nc;
    kt.out_ctrl.data = st.out_ctrl;
    kt.out_ctrl.len = nc;
    kt.in_data.data = ind;
    kt.in_data.len = nc * 32;
    kt.out_data.data = outd;
    kt.out_data.len = nc * 16;
    assert_int_equal(kura_tiles_compare(&st, &kt, &e), 0);
    outd[16 * 200 + 5] ^= 4;
    assert_int_equal(kura_tiles_compare(&st, &kt, &e), ERR_DATA);
    assert_non_null(strstr(e.text, "cycle 200"));
    outd[16 * 200 + 5] ^= 4;
    kt.n_cyc++;
    assert_int_equal(kura_tiles_compare(&st, &kt, &e), ERR_DATA);
    free(ind);
    free(outd);
    kura_streams_release(&st);
    mem_free(q);
}

/* KuraStep decoding bounds sizes and checks stored registers. */
static void test_step_decode(void **state)
{
    (void)state;
    uint8_t bytes[2 * 6 * 5];
    for (int i = 0; i < 30; i++) {
        bytes[2 * i] = (uint8_t)(i * 37);
        bytes[2 * i + 1] = (uint8_t)(0x80 | i);
    }
    Acceltrace__KuraStep ks = ACCELTRACE__KURA_STEP__INIT;
    ks.step = 42;
    ks.role = ACCELTRACE__KURA_ROLE__KURA_ROLE_REVERSE;
    ks.k = 0.03;
    ks.kref = 0.045;
    ks.h = 6;
    ks.w = 5;
    ks.phase_q15.data = bytes;
    ks.phase_q15.len = sizeof bytes;
    struct kura_step_info info;
    int16_t *q = NULL;
    struct errmsg e = {0};
    assert_int_equal(kura_step_decode(&ks, 0, 0, &info, &q, &e), 0);
    assert_int_equal(q[1], (int16_t)(uint16_t)(37 | (0x81 << 8)));
    /* docs/kura.md#fixed-point-drift: at t100 step 99, G = 820278 and R_c = 30760437 */
    assert_int_equal(info.regs.g, 820278);
    assert_int_equal(info.regs.r_c, 30760437);
    mem_free(q);
    ks.g = 820279;
    ks.r_c = 30760437;
    assert_int_equal(kura_step_decode(&ks, 0, 0, &info, &q, &e), ERR_DATA);
    ks.g = 0;
    ks.r_c = 0;
    ks.phase_q15.len--;
    assert_int_equal(kura_step_decode(&ks, 0, 0, &info, &q, &e), ERR_DATA);
    ks.h = 100000;
    assert_int_equal(kura_step_decode(&ks, 0, 0, &info, &q, &e), ERR_LIMIT);
    assert_null(q);
}

/* Every allocation failure in derive and export is reported as ERR_NOMEM and cleaned up. */
static void test_alloc_failures(void **state)
{
    (void)state;
    int16_t *q = uniform_map(13, 11, 4);
    struct kura_step_info info = {.h = 13, .w = 11, .step = 1};
    assert_int_equal(kura_regs_init(&info.regs, 0.03, 0.045, 0), 0);
    int32_t d[13 * 11];
    char dir[] = "/tmp/acceltrace_kura_export_XXXXXX";
    assert_non_null(mkdtemp(dir));
    int ok = 0;
    for (long n = 1; n < 200 && !ok; n++) {
        struct kura_streams st;
        struct errmsg e = {0};
        mem_fail_after(n);
        int rc = kura_tiles_derive(q, 13, 11, &info.regs, 4, 3, &st, NULL, d, &e);
        if (rc == 0) {
            rc = kura_tiles_export(dir, &info, q, d, &st, "h", &e);
            kura_streams_release(&st);
            ok = rc == 0;
        }
        mem_fail_after(0);
        if (!ok)
            assert_int_equal(rc, ERR_NOMEM);
    }
    assert_true(ok);
    assert_int_equal(io_remove_tree(dir), 0);
    mem_free(q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_export_r9),
        cmocka_unit_test(test_stored_tiles),
        cmocka_unit_test(test_step_decode),
        cmocka_unit_test(test_alloc_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
