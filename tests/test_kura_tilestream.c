/*
 * Tests of capture/kura/kura_tilestream (tile streams of docs/kura.md#tile-stream-export): the
 * counts of (a 13x11 map at 4x3 and 20x5: 467 and 98 cycles, 112 and 27 valid input lines with n of
 * them first-column lines, 48 and 15 valid outputs), and a reconstruction that reads only the input
 * stream, rebuilds every tile's halo, computes u~_q from it and must match the output stream; plus
 * shapes up to 32x32 on a 37x23 map.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "capture/kura/kura_tilestream.h"
#include "common/mem.h"
#include "common/rng.h"
#include "formats/kura_fixed.h"

static void random_map(size_t h, size_t w, uint64_t seed, int16_t **q, int32_t **uq)
{
    struct rng r;
    rng_stream(&r, seed, "tiles", h, w);
    *q = mem_alloc(h * w * 2);
    *uq = mem_alloc(h * w * 4);
    for (size_t i = 0; i < h * w; i++)
        (*q)[i] = (int16_t)(uint16_t)rng_below(&r, 65536);
    struct kura_regs g;
    kura_regs_init(&g, 0.03, 0.045, 0);
    assert_int_equal(kura_fixed_drift_map(*q, h, w, &g, *uq, NULL, NULL), 0);
}

/* Rebuilds every tile from the input stream and checks the output stream against it. */
static void check_stream(const struct kura_tilestream *t)
{
    uint32_t nh = t->n_h, nw = t->n_w, lanes = nh + 4;
    int32_t *hs = mem_alloc((size_t)lanes * (nw + 4) * 4),
            *hc = mem_alloc((size_t)lanes * (nw + 4) * 4);
    int tile = -1;
    uint32_t col = 0;
    uint64_t outs = 0;
    for (uint32_t cyc = 0; cyc < t->n_cyc; cyc++) {
        uint8_t ctrl = t->in_ctrl[cyc];
        assert_true((ctrl & ~3u) == 0);
        if (ctrl & 2u) {
            tile++;
            col = 0;
        }
        if (ctrl & 1u) {
            assert_true(tile >= 0 && col < nw + 4);
            for (uint32_t k = 0; k < lanes; k++) {
                uint32_t v = t->in_data[(size_t)cyc * lanes + k];
                hs[k * (nw + 4) + col] = (int16_t)(uint16_t)(v >> 16);
                hc[k * (nw + 4) + col] = (int16_t)(uint16_t)(v & 0xFFFF);
            }
            col++;
            if (col == nw + 4) {
                /* this tile's outputs drain from s_k + 26 = tile (nw + 26) + nw + 26 */
                uint64_t s = (uint64_t)tile * (nw + 26) + nw;
                assert_true(cyc == s + 19); /* last halo column at sweep t = 19 */
                for (uint32_t d = 0; d < nw; d++) {
                    uint64_t oc = s + 26 + d;
                    assert_true(oc < t->n_cyc);
                    assert_int_equal(t->out_ctrl[oc], 1);
                    for (uint32_t i = 0; i < nh; i++) {
                        int32_t S = 0, C = 0;
                        for (int dy = 0; dy < 5; dy++)
                            for (int dx = 0; dx < 5; dx++) {
                                if (dy == 2 && dx == 2)
                                    continue;
                                S += hs[(i + dy) * (nw + 4) + d + dx];
                                C += hc[(i + dy) * (nw + 4) + d + dx];
                            }
                        int32_t sc = hs[(i + 2) * (nw + 4) + d + 2];
                        int32_t cc = hc[(i + 2) * (nw + 4) + d + 2];
                        int64_t raw = (int64_t)cc * S - (int64_t)sc * C;
                        assert_int_equal(t->out_data[oc * nh + i], kura_u_q(raw));
                    }
                    outs++;
                }
            }
        }
    }
    assert_int_equal(tile + 1, (int)t->n_tiles);
    assert_int_equal(outs, (uint64_t)t->n_tiles * nw);
    mem_free(hs);
    mem_free(hc);
}

static void counts(const struct kura_tilestream *t, uint32_t *vin, uint32_t *first, uint32_t *vout)
{
    *vin = *first = *vout = 0;
    for (uint32_t c = 0; c < t->n_cyc; c++) {
        *vin += t->in_ctrl[c] & 1u;
        *first += t->in_ctrl[c] == 3;
        *vout += t->out_ctrl[c] & 1u;
        if (!(t->in_ctrl[c] & 1u))
            for (uint32_t k = 0; k < t->n_h + 4; k++)
                assert_int_equal(t->in_data[(size_t)c * (t->n_h + 4) + k], 0);
        if (!(t->out_ctrl[c] & 1u))
            for (uint32_t k = 0; k < t->n_h; k++)
                assert_int_equal(t->out_data[(size_t)c * t->n_h + k], 0);
    }
}

/* counts of docs/kura.md#acceptance-checks on a 13x11 map. */
static void test_export_counts(void **state)
{
    (void)state;
    int16_t *q;
    int32_t *uq;
    random_map(13, 11, 1, &q, &uq);
    const uint32_t shp[2][2] = {{4, 3}, {20, 5}};
    const uint32_t ncyc[2] = {467, 98}, nin[2] = {112, 27}, nout[2] = {48, 15}, ntl[2] = {16, 3};
    for (int k = 0; k < 2; k++) {
        struct kura_tilestream t;
        assert_int_equal(kura_tilestream_build(&t, q, uq, 13, 11, shp[k][0], shp[k][1]), 0);
        assert_int_equal(t.n_cyc, ncyc[k]);
        assert_int_equal(t.n_tiles, ntl[k]);
        uint32_t vin, first, vout;
        counts(&t, &vin, &first, &vout);
        assert_int_equal(vin, nin[k]);
        assert_int_equal(first, t.n_tiles);
        assert_int_equal(vout, nout[k]);
        check_stream(&t);
        kura_tilestream_release(&t);
    }
    mem_free(q);
    mem_free(uq);
}

/* Every shape 1..32 squared on a 37x23 map (every 3rd to stay quick): streams consistent. */
static void test_many_shapes(void **state)
{
    (void)state;
    int16_t *q;
    int32_t *uq;
    random_map(37, 23, 2, &q, &uq);
    for (uint32_t nh = 1; nh <= 32; nh += 3)
        for (uint32_t nw = 1; nw <= 32; nw += 3) {
            struct kura_tilestream t;
            assert_int_equal(kura_tilestream_build(&t, q, uq, 37, 23, nh, nw), 0);
            uint64_t n = (uint64_t)((37 + nh - 1) / nh) * ((23 + nw - 1) / nw);
            assert_int_equal(t.n_cyc, nw + n * (nw + 26));
            check_stream(&t);
            kura_tilestream_release(&t);
        }
    mem_free(q);
    mem_free(uq);
}

static void test_parse_shape(void **state)
{
    (void)state;
    uint32_t a, b;
    assert_int_equal(kura_tilestream_parse_shape("20x5", &a, &b), 0);
    assert_true(a == 20 && b == 5);
    assert_int_not_equal(kura_tilestream_parse_shape("0x5", &a, &b), 0);
    assert_int_not_equal(kura_tilestream_parse_shape("20x", &a, &b), 0);
    assert_int_not_equal(kura_tilestream_parse_shape("20x5x", &a, &b), 0);
    assert_int_not_equal(kura_tilestream_parse_shape("2000x5", &a, &b), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_export_counts),
        cmocka_unit_test(test_many_shapes),
        cmocka_unit_test(test_parse_shape),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
