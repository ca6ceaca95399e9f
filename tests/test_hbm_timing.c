/*
 * test_hbm_timing: the timing mode of the HBM pseudo-channel model:
 * hand-computed small cases on the HBM2 preset, never faster than the zero-latency bound
 * (the fast mode's slots x t_tok), all tokens on one PC at N_sel token times, K and V in one
 * bank slower than the default layout, refresh adds time.
 * Randomized tests print their seed; ACCELTRACE_SEED overrides it.
 */
#include <inttypes.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/rng.h"
#include "replay/hbm_pc.h"
#include "replay/hbm_timing.h"
#include "tests/helpers/test_helpers.h"

static const struct hbm_pc_policy_cfg WIN128 = {HBM_PC_WINDOW, 16, 1, 128};
static const struct hbm_pc_policy_cfg INORD1 = {HBM_PC_INORDER, 16, 1, 0};
static const struct hbm_pc_policy_cfg BATCH = {HBM_PC_BATCH, 16, 1, 0};

/* Runs idx[0..n) under the mod map on 16 PCs. */
static struct hbm_timing_result run(const struct hbm_timing_cfg *c,
                                    const struct hbm_pc_policy_cfg *p, const uint32_t *idx,
                                    size_t n, uint64_t t0)
{
    struct hbm_pc_mapping m = {HBM_PC_MAP_MOD, 16, 0};
    uint16_t *pc = malloc((n ? n : 1) * sizeof *pc);
    assert_non_null(pc);
    hbm_pc_map_indices(&m, 0, 0, idx, n, pc);
    struct hbm_timing_work w = {0};
    assert_int_equal(hbm_timing_work_reserve(&w, n, 16), 0);
    struct hbm_timing_result r;
    hbm_timing_run(c, p, idx, pc, n, 16, t0, &w, &r);
    hbm_timing_work_release(&w);
    free(pc);
    return r;
}

static struct hbm_timing_cfg cfg_norefresh(void)
{
    struct hbm_timing_cfg c;
    hbm_timing_cfg_default(&c);
    c.refresh = false;
    c.occupancy = HBM_TIMING_OCC_DATA; /* the hand-computed cases below count until data */
    return c;
}

static void test_preset_and_check(void **state)
{
    (void)state;
    struct hbm_timing_cfg c;
    hbm_timing_cfg_default(&c);
    /* the HBM2 2000 Mbps values of the Ramulator comparison (JEDEC JESD235) */
    assert_string_equal(c.t.name, "hbm2");
    assert_int_equal(c.t.nRCD, 14);
    assert_int_equal(c.t.nRC, 48);
    assert_int_equal(c.t.nRFC, 350);
    assert_int_equal(c.t.nREFI, 3900);
    assert_int_equal(hbm_timing_check(&c, NULL), 0);
    /* 256 B per token = 8 reads of 32 B, 2 cycles each */
    assert_int_equal(hbm_timing_token_cycles(&c), 16);
    assert_int_equal(hbm_timing_ideal(&c, 17, 16), 32);
    struct hbm_timing_params p;
    assert_int_equal(hbm_timing_preset("hbm9", &p), ERR_USAGE);
    enum hbm_timing_layout l;
    assert_int_equal(hbm_timing_layout_parse("same_bank", &l), 0);
    assert_int_equal(l, HBM_TIMING_SAME_BANK);
    assert_int_equal(hbm_timing_layout_parse("x", &l), ERR_USAGE);
    c.token_bytes = 48; /* 24 B halves: not whole 32 B bursts */
    struct errmsg e = {0};
    assert_int_equal(hbm_timing_check(&c, &e), ERR_CONFIG);
    hbm_timing_cfg_default(&c);
    c.t.n_bg = 3;
    assert_int_equal(hbm_timing_check(&c, NULL), ERR_CONFIG);
}

/*
 * One token (index 0, PC 0), every bank closed, kv_bg, no refresh:
 *   ACT K at 0; ACT V at 0 + nRRD = 4; K reads may start at nRCD = 14, V at 4 + 14 = 18.
 *   Reads K0 14, V0 18, then every nCCDS = 2 (bank group alternates): K1 20 ... V3 30.
 *   Data back at 30 + nCL 14 + nBL 2 = 46
 *   (= controller 0 + nRRD 4 + nRCD 14 + 6·nCCDS 12 + nCL 14 + nBL 2).
 */
static void test_one_token(void **state)
{
    (void)state;
    struct hbm_timing_cfg c = cfg_norefresh();
    uint32_t idx[1] = {0};
    struct hbm_timing_result r = run(&c, &WIN128, idx, 1, 0);
    assert_int_equal(r.cycles, 46);
    assert_int_equal(r.row_hits, 0);
    assert_int_equal(r.row_misses, 2);
    assert_int_equal(run(&c, &INORD1, idx, 1, 0).cycles, 46);
    assert_int_equal(run(&c, &BATCH, idx, 1, 0).cycles, 46);
    /* a controller latency adds itself */
    c.t.n_ctrl = 5;
    assert_int_equal(run(&c, &WIN128, idx, 1, 0).cycles, 51);
}

/*
 * Two tokens on PC 0 in the same banks, different rows: indices 0 and 1024 are positions
 * j = 0 and 64 of PC 0, chunks 0 and 8 (8 halves of 128 B per 1 KiB row), both bank-pair
 * slot 0, rows 0 and 1. Token A as in test_one_token (ACTs 0 and 4, last read 30, back at
 * 46). Token B (issued at cycle 1) is picked when A's last read issues (30):
 *   PRE K at max(ACT 0 + nRAS 34, last read 28 + nBL 2) = 34; PRE V at max(4 + 34, 30 + 2)
 *   = 38; ACT K at max(34 + nRP 14, 0 + nRC 48) = 48; ACT V at max(38 + 14, 4 + 48, 48 +
 *   nRRD 4) = 52; reads K0 at 48 + nRCD 14 = 62, V0 66, then every 2: V3 at 78.
 *   Back at 78 + 14 + 2 = 94 (= 46 + nRC 48 in effect: tRAS + tRP on the same bank).
 */
static void test_two_tokens_row_conflict(void **state)
{
    (void)state;
    struct hbm_timing_cfg c = cfg_norefresh();
    uint32_t idx[2] = {0, 1024};
    struct hbm_timing_result r = run(&c, &WIN128, idx, 2, 0);
    assert_int_equal(r.cycles, 94);
    assert_int_equal(r.row_misses, 4);
    assert_int_equal(r.row_hits, 0);
}

/*
 * Two tokens on PC 0 in the same rows (indices 0 and 16: positions 0 and 1, chunk 0):
 * B's rows are open, its reads follow A's at nCCDS: K0 32, ..., V3 46; back at 46 + 16 = 62
 * (one more token time t_tok = 16).
 */
static void test_two_tokens_row_hit(void **state)
{
    (void)state;
    struct hbm_timing_cfg c = cfg_norefresh();
    uint32_t idx[2] = {0, 16};
    struct hbm_timing_result r = run(&c, &WIN128, idx, 2, 0);
    assert_int_equal(r.cycles, 62);
    assert_int_equal(r.row_hits, 2);
    assert_int_equal(r.row_misses, 2);
    /* in order with D_f 1 the second token waits for the first's data: 46 + (46 - 0) with
     * B issued at 46 and its reads starting at 46 (rows open, 14 after the ACTs long past):
     * reads 46 .. 60, back at 60 + 16 = 76 */
    assert_int_equal(run(&c, &INORD1, idx, 2, 0).cycles, 76);
}

/*
 * Occupancy, in order D_f 1, two tokens on PC 0 in other banks, all closed: A = index 0
 * (chunk 0: bank groups 0/1, bank 0), B = index 128 (position 8, chunk 1: bank groups 2/3,
 * bank 0). A as in test_one_token (ACTs 0 and 4, first read 14, last 30, data back 46).
 * B enters when A stops counting and is picked when A's last read issued (30):
 *   data (46): ACT K 46, ACT V 50 (nRRD); reads K0 60, V0 64, K1 66, ..., V3 76; back 92.
 *   command (30): ACT K 30, ACT V 34; reads K0 44, V0 48, K1 50, ..., V3 60; back 76.
 *   request (14): ACT K 14, ACT V 18; reads from 32 (A's V3 30 + nCCDS) to 46; back 62,
 *   as with a window (B issued at cycle 1): A's first read frees the slot.
 */
static void test_occupancy_two_tokens(void **state)
{
    (void)state;
    struct hbm_timing_cfg c = cfg_norefresh();
    uint32_t idx[2] = {0, 128};
    struct hbm_timing_cfg d;
    hbm_timing_cfg_default(&d);
    assert_int_equal(d.occupancy, HBM_TIMING_OCC_REQUEST);
    assert_int_equal(c.occupancy, HBM_TIMING_OCC_DATA);
    assert_int_equal(run(&c, &INORD1, idx, 2, 0).cycles, 92);
    c.occupancy = HBM_TIMING_OCC_COMMAND;
    assert_int_equal(run(&c, &INORD1, idx, 2, 0).cycles, 76);
    c.occupancy = HBM_TIMING_OCC_REQUEST;
    assert_int_equal(run(&c, &INORD1, idx, 2, 0).cycles, 62);
    assert_int_equal(run(&c, &WIN128, idx, 2, 0).cycles, 62);
    enum hbm_timing_occupancy o;
    assert_int_equal(hbm_timing_occupancy_parse("command", &o), 0);
    assert_int_equal(o, HBM_TIMING_OCC_COMMAND);
    assert_string_equal(hbm_timing_occupancy_name(HBM_TIMING_OCC_REQUEST), "request");
    assert_int_equal(hbm_timing_occupancy_parse("queue", &o), ERR_USAGE);
    c.occupancy = (enum hbm_timing_occupancy)7;
    assert_int_equal(hbm_timing_check(&c, NULL), ERR_CONFIG);
}

/*
 * Layouts, one token: one_bg (K bank 0, V bank 1 of bank group 0): ACTs 0 and 4, reads at
 * nCCDL 4: K0 14, V0 18, K1 22, ..., V3 42; back at 42 + 16 = 58.
 * same_bank (K row 0, V row 1 of bank 0): ACT 0, K reads 14, 18, 22, 26 (nCCDL); PRE at
 * max(0 + nRAS 34, 26 + 2) = 34; ACT V at max(34 + nRP 14, 0 + nRC 48) = 48; V reads 62, 66,
 * 70, 74; back at 74 + 16 = 90.
 */
static void test_layouts_one_token(void **state)
{
    (void)state;
    struct hbm_timing_cfg c = cfg_norefresh();
    uint32_t idx[1] = {0};
    c.layout = HBM_TIMING_ONE_BG;
    assert_int_equal(run(&c, &WIN128, idx, 1, 0).cycles, 58);
    c.layout = HBM_TIMING_SAME_BANK;
    assert_int_equal(run(&c, &WIN128, idx, 1, 0).cycles, 90);
}

/*
 * Refresh: a job starting at absolute cycle 3900 = nREFI lands in the refresh window
 * [3900, 3900 + nRFC 350): ACT K moves to 350, ACT V 354, reads 364 .. 380, back at 396
 * (= 350 + 46). Without refresh the same job takes 46.
 */
static void test_refresh_one_token(void **state)
{
    (void)state;
    struct hbm_timing_cfg c;
    hbm_timing_cfg_default(&c);
    uint32_t idx[1] = {0};
    assert_int_equal(run(&c, &WIN128, idx, 1, 3900).cycles, 396);
    assert_int_equal(run(&c, &WIN128, idx, 1, 0).cycles, 46);
    c.refresh = false;
    assert_int_equal(run(&c, &WIN128, idx, 1, 3900).cycles, 46);
}

/* A sorted random selection of about n·rho out of [0, n). */
static size_t random_sel(uint64_t *st, uint32_t n, double rho, uint32_t *idx)
{
    size_t k = 0;
    for (uint32_t i = 0; i < n; i++)
        if ((double)(rng_mix64(++*st) >> 11) * 0x1p-53 < rho)
            idx[k++] = i;
    return k;
}

/* The timing mode never beats the fast mode's zero-latency slots (times t_tok), hence
 * neither the ideal nor the max-load bound, on random selections, every policy, layout and
 * occupancy. */
static void test_never_beats_zero_latency(void **state)
{
    (void)state;
    uint64_t st = th_seed(20261201);
    struct hbm_pc_mapping m = {HBM_PC_MAP_MOD, 16, 0};
    uint32_t *idx = malloc(8192 * sizeof *idx);
    uint16_t *pc = malloc(8192 * sizeof *pc);
    assert_non_null(idx);
    assert_non_null(pc);
    struct hbm_pc_work fw = {0};
    struct hbm_timing_work w = {0};
    assert_int_equal(hbm_pc_work_reserve(&fw, 8192), 0);
    assert_int_equal(hbm_timing_work_reserve(&w, 8192, 16), 0);
    const struct hbm_pc_policy_cfg pols[] = {
        {HBM_PC_BATCH, 16, 1, 0},   {HBM_PC_INORDER, 16, 1, 0},  {HBM_PC_INORDER, 16, 4, 0},
        {HBM_PC_WINDOW, 16, 1, 16}, {HBM_PC_WINDOW, 16, 1, 128}, {HBM_PC_WINDOW, 16, 1, 1024},
        {HBM_PC_INORDER, 4, 2, 0},  {HBM_PC_WINDOW, 5, 1, 64},
    };
    for (int rep = 0; rep < 40; rep++) {
        uint32_t n = 256 + (uint32_t)(rng_mix64(++st) % 8000);
        double rho = 0.01 + (double)(rng_mix64(++st) % 60) / 100.0;
        size_t k = random_sel(&st, n, rho, idx);
        m.map = (enum hbm_pc_map)(rep % 3);
        hbm_pc_map_indices(&m, 0, (uint32_t)rep, idx, k, pc);
        struct hbm_timing_cfg c;
        hbm_timing_cfg_default(&c);
        c.layout = (enum hbm_timing_layout)(rep % 3);
        c.occupancy = (enum hbm_timing_occupancy)((rep / 3) % 3);
        uint64_t ideal = hbm_timing_ideal(&c, k, 16);
        uint64_t bound = hbm_pc_max_load(pc, k, 16) * hbm_timing_token_cycles(&c);
        for (size_t p = 0; p < sizeof pols / sizeof pols[0]; p++) {
            uint64_t slots = hbm_pc_slots(&pols[p], pc, k, 16, &fw, NULL, 0);
            struct hbm_timing_result r;
            hbm_timing_run(&c, &pols[p], idx, pc, k, 16, (uint64_t)rep * 1000, &w, &r);
            assert_true(r.cycles >= ideal);
            assert_true(r.cycles >= bound);
            /* occupancy request lets a token leave D_f / W at its first read, so up to
             * one token per PC more is unserved than the fast mode's D_f / W allow: only
             * the ideal and max-load bounds hold there */
            if (c.occupancy != HBM_TIMING_OCC_REQUEST &&
                r.cycles < slots * hbm_timing_token_cycles(&c))
                fail_msg("rep %d policy %zu: %" PRIu64 " cycles < %" PRIu64 " slots x 16", rep, p,
                         r.cycles, slots);
            assert_int_equal(r.row_hits + r.row_misses, 2 * k);
        }
    }
    hbm_pc_work_release(&fw);
    hbm_timing_work_release(&w);
    free(idx);
    free(pc);
}

/* All N_sel tokens on PC 0 (indices 16k, consecutive positions): with a window that covers
 * the latency, N_sel token times plus one latency (the first token's 46 - 16 = 30 cycles,
 * and the row changes every 64 positions hidden by the other bank pairs). */
static void test_one_pc(void **state)
{
    (void)state;
    struct hbm_timing_cfg c = cfg_norefresh();
    enum { N = 1000 };
    uint32_t *idx = malloc(N * sizeof *idx);
    assert_non_null(idx);
    for (uint32_t k = 0; k < N; k++)
        idx[k] = 16 * k;
    struct hbm_timing_result r = run(&c, &WIN128, idx, N, 0);
    printf("one PC: %" PRIu64 " cycles for %d tokens\n", r.cycles, N);
    assert_true(r.cycles >= (uint64_t)N * 16);
    assert_true(r.cycles <= (uint64_t)N * 16 + 46);
    /* time over ideal: N·16 / (ceil(N/16)·16) = 1000/63 = 15.87, as the fast mode's slots */
    double toi = (double)r.cycles / (double)hbm_timing_ideal(&c, N, 16);
    assert_true(toi > 15.87 && toi < 15.87 + 0.05);
    free(idx);
}

/* K and V in one bank (two activations per token) is slower than K | V across bank groups,
 * in order and with a window (the reference: 1.3-1.5x at D_f 1 in Ramulator). */
static void test_same_bank_slower(void **state)
{
    (void)state;
    uint64_t st = th_seed(20261201) ^ 7;
    uint32_t *idx = malloc(32768 * sizeof *idx);
    assert_non_null(idx);
    size_t k = random_sel(&st, 32768, 0.05, idx);
    struct hbm_timing_cfg a, b;
    hbm_timing_cfg_default(&a);
    b = a;
    b.layout = HBM_TIMING_SAME_BANK;
    const struct hbm_pc_policy_cfg *pols[] = {&INORD1, &WIN128, &BATCH};
    for (int p = 0; p < 3; p++) {
        uint64_t ca = run(&a, pols[p], idx, k, 0).cycles, cb = run(&b, pols[p], idx, k, 0).cycles;
        printf("policy %d: kv_bg %" PRIu64 ", same_bank %" PRIu64 "\n", p, ca, cb);
        assert_true(cb > ca);
    }
    free(idx);
}

/* Refresh adds time on a job longer than tREFI (about nRFC/nREFI = 9%). */
static void test_refresh_adds(void **state)
{
    (void)state;
    uint64_t st = th_seed(20261201) ^ 11;
    uint32_t *idx = malloc(65536 * sizeof *idx);
    assert_non_null(idx);
    size_t k = random_sel(&st, 65536, 0.1, idx);
    struct hbm_timing_cfg on, off = cfg_norefresh();
    hbm_timing_cfg_default(&on);
    uint64_t con = run(&on, &WIN128, idx, k, 0).cycles, coff = run(&off, &WIN128, idx, k, 0).cycles;
    printf("refresh on %" PRIu64 ", off %" PRIu64 "\n", con, coff);
    assert_true(coff > 3900); /* at least one refresh window */
    assert_true(con > coff);
    assert_true((double)con < 1.25 * (double)coff);
    free(idx);
}

/* An empty job takes no time. */
static void test_empty(void **state)
{
    (void)state;
    struct hbm_timing_cfg c;
    hbm_timing_cfg_default(&c);
    struct hbm_timing_result r = run(&c, &WIN128, NULL, 0, 0);
    assert_int_equal(r.cycles, 0);
    assert_int_equal(r.row_hits + r.row_misses, 0);
}

/* ---- hbm3 / hbm3e presets (docs/models.md#hbm-timing-mode, "Presets") ---- */

static struct hbm_timing_cfg cfg_preset(const char *name)
{
    struct hbm_timing_cfg c = cfg_norefresh();
    assert_int_equal(hbm_timing_preset(name, &c.t), 0);
    assert_int_equal(hbm_timing_check(&c, NULL), 0);
    return c;
}

/* One token on hbm3, by hand: ACT K at 0, ACT V at nRRD 4, K0 at nRCD 31, V0 at 35, six
 * more reads at nCCDS 2 (K and V in bank groups of one SID), then CL 20 + nBL 2: 69. */
static void test_hbm3_one_token(void **state)
{
    (void)state;
    struct hbm_timing_cfg c = cfg_preset("hbm3");
    assert_int_equal(hbm_timing_banks(&c.t), 32);
    assert_int_equal(hbm_timing_token_cycles(&c), 16);
    uint32_t idx[] = {0};
    assert_int_equal(run(&c, &INORD1, idx, 1, 0).cycles, 4 + 31 + 6 * 2 + 20 + 2);
    /* hbm3e: nRRD 8 + nRCD 34 + 6 nCCDS + CL 44 + nBL 2 */
    struct hbm_timing_cfg e = cfg_preset("hbm3e");
    assert_int_equal(run(&e, &INORD1, idx, 1, 0).cycles, 8 + 34 + 6 * 2 + 44 + 2);
}

/* tCCDR applies between reads of two SIDs only: position 16 (chunk 2) lies in SID 1,
 * position 8 (chunk 1) in SID 0 beside position 0. */
static void test_hbm3_sid_gap(void **state)
{
    (void)state;
    struct hbm_timing_cfg c = cfg_preset("hbm3"), w = c;
    w.t.nCCDR = 40;
    uint32_t other_sid[] = {0, 16 * 16}, same_sid[] = {0, 8 * 16};
    uint32_t bank, col;
    int64_t row;
    hbm_timing_place(&c, 16, 0, &bank, &row, &col);
    assert_int_equal(bank / (c.t.n_bg * c.t.n_banks), 1);
    hbm_timing_place(&c, 8, 1, &bank, &row, &col);
    assert_int_equal(bank / (c.t.n_bg * c.t.n_banks), 0);
    assert_true(run(&w, &WIN128, other_sid, 2, 0).cycles >
                run(&c, &WIN128, other_sid, 2, 0).cycles);
    assert_int_equal(run(&w, &WIN128, same_sid, 2, 0).cycles,
                     run(&c, &WIN128, same_sid, 2, 0).cycles);
}

/* tRRD_L spaces the two ACTs of one_bg (K and V in one bank group), not of kv_bg. */
static void test_hbm3_rrd_l(void **state)
{
    (void)state;
    struct hbm_timing_cfg c = cfg_preset("hbm3");
    uint32_t idx[] = {0};
    struct hbm_timing_cfg l = c;
    l.t.nRRDL = 30;
    assert_int_equal(run(&l, &INORD1, idx, 1, 0).cycles, run(&c, &INORD1, idx, 1, 0).cycles);
    c.layout = l.layout = HBM_TIMING_ONE_BG;
    /* ACT V at nRRDL after ACT K: V0 at 30 + 31, then 6 more reads at nCCDL 4, CL + nBL */
    assert_int_equal(run(&l, &INORD1, idx, 1, 0).cycles, 30 + 31 + 6 * 4 + 20 + 2);
}

/* tRTP delays the PRE of a row conflict: two tokens in the same banks, another row. */
static void test_hbm3_rtp(void **state)
{
    (void)state;
    struct hbm_timing_cfg c = cfg_preset("hbm3"), l = c;
    l.t.nRTP = 60;
    /* position 128 = chunk 16: the banks of position 0, row 1 */
    uint32_t idx[] = {0, 128 * 16}, bank0, bank1, col;
    int64_t row0, row1;
    hbm_timing_place(&c, 0, 0, &bank0, &row0, &col);
    hbm_timing_place(&c, 128, 0, &bank1, &row1, &col);
    assert_int_equal(bank0, bank1);
    assert_int_equal(row1, row0 + 1);
    uint64_t a = run(&c, &INORD1, idx, 2, 0).cycles, b = run(&l, &INORD1, idx, 2, 0).cycles;
    /* D_f 1, data occupancy: the second token starts when the first one's data is back (69);
     * K's PRE waits for max(69, tRAS from its ACT at 0, its last read at 45 + tRTP): 69 with
     * tRTP 9, 105 with tRTP 60 */
    assert_int_equal(b - a, (45 + 60) - 69);
}

/* Per-bank refresh: a job starting at bank 0's refresh (t0 = 32 x nREFIpb) waits nRFCpb
 * for K's ACT; bank 4 (V) is not refreshing, so the token is 69 + 320 cycles. All-bank
 * refresh at t0 = nREFI delays both ACTs by nRFC. */
static void test_hbm3_refresh(void **state)
{
    (void)state;
    struct hbm_timing_cfg c = cfg_preset("hbm3");
    uint32_t idx[] = {0};
    c.refresh = true;
    assert_int_equal(run(&c, &INORD1, idx, 1, 6240).cycles, 69 + 560);
    c.per_bank = true;
    assert_int_equal(hbm_timing_check(&c, NULL), 0);
    assert_int_equal(run(&c, &INORD1, idx, 1, 32 * 195).cycles, 69 + 320);
    assert_int_equal(run(&c, &INORD1, idx, 1, 0).cycles, 69); /* no refresh at 0 */
    /* windows overlap (nRFCpb 320 > nREFIpb 195): at 33 x 195 bank 0 still refreshes for
     * 125 cycles; once it is done (bank 1 refreshing) bank 0 does not wait */
    assert_int_equal(run(&c, &INORD1, idx, 1, 33 * 195).cycles, 69 + 125);
    assert_int_equal(run(&c, &INORD1, idx, 1, 32 * 195 + 320).cycles, 69);
    /* hbm2 has no per-bank refresh */
    struct hbm_timing_cfg h;
    hbm_timing_cfg_default(&h);
    h.per_bank = true;
    assert_int_equal(hbm_timing_check(&h, NULL), ERR_CONFIG);
}

/*
 * A perfectly spread stream (tokens 0..N-1, mod map, 16 PCs, window 1024) reaches each
 * part's sustained read bandwidth: peak = dq_bits x Gb/s / 8 per PC (the sources' data rate
 * and width) times 1 - tRFC/tREFI (the refresh duty cycle of the same source), within the
 * Salca paper's sequential HBM efficiency beta_pre = 0.95; never above the peak.
 */
static void test_spread_bandwidth(void **state)
{
    (void)state;
    static const struct hbm_pc_policy_cfg WIN1024 = {HBM_PC_WINDOW, 16, 1, 1024};
    const char *const *names = hbm_timing_preset_names();
    size_t n = 16 * 4000;
    uint32_t *idx = malloc(n * sizeof *idx);
    assert_non_null(idx);
    for (size_t i = 0; i < n; i++)
        idx[i] = (uint32_t)i;
    for (size_t k = 0; names[k]; k++) {
        struct hbm_timing_cfg c;
        hbm_timing_cfg_default(&c);
        assert_int_equal(hbm_timing_preset(names[k], &c.t), 0);
        struct hbm_timing_result r = run(&c, &WIN1024, idx, n, 0);
        double bytes_pc = (double)(n / 16) * c.token_bytes;
        double gbs = bytes_pc / ((double)r.cycles * c.t.tck_ns);
        double peak = hbm_timing_pc_peak_gbs(&c.t);
        double sustained = peak * (1.0 - (double)c.t.nRFC / c.t.nREFI);
        printf("%s: spread stream %.2f GB/s per PC, peak %.2f, sustained %.2f (%.3f)\n", names[k],
               gbs, peak, sustained, gbs / sustained);
        /* the data bus: one read of burst_bytes per nBL cycles is the peak */
        assert_true(fabs(c.t.burst_bytes / (c.t.nBL * c.t.tck_ns) - peak) < 1e-6 * peak);
        assert_true(gbs <= peak);
        assert_true(gbs >= 0.95 * sustained);
        /* refresh off: the whole peak within 0.95 */
        c.refresh = false;
        r = run(&c, &WIN1024, idx, n, 0);
        gbs = bytes_pc / ((double)r.cycles * c.t.tck_ns);
        assert_true(gbs <= peak && gbs >= 0.95 * peak);
    }
    free(idx);
}

/* The value of field f of preset t (the names of the docs/models.md preset table). */
static bool preset_field(const struct hbm_timing_params *t, const char *f, double *v)
{
    const struct {
        const char *name;
        double v;
    } fields[] = {
        {"tCK", t->tck_ns},        {"Gb/s", t->gbps},       {"dq_bits", t->dq_bits},
        {"PCs", t->pcs_per_stack}, {"SIDs", t->n_sid},      {"bank groups", t->n_bg},
        {"banks", t->n_banks},     {"page", t->page_bytes}, {"burst", t->burst_bytes},
        {"nBL", t->nBL},           {"nCCDS", t->nCCDS},     {"nCCDL", t->nCCDL},
        {"nCCDR", t->nCCDR},       {"nRCD", t->nRCD},       {"nCL", t->nCL},
        {"nRP", t->nRP},           {"nRAS", t->nRAS},       {"nRC", t->nRC},
        {"nRRD", t->nRRD},         {"nRRDL", t->nRRDL},     {"nFAW", t->nFAW},
        {"nRTP", t->nRTP},         {"nRFC", t->nRFC},       {"nREFI", t->nREFI},
        {"nRFCpb", t->nRFCpb},     {"nREFIpb", t->nREFIpb}, {"n_ctrl", t->n_ctrl},
    };
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        if (!strcmp(f, fields[i].name)) {
            *v = fields[i].v;
            return true;
        }
    return false;
}

/*
 * docs/models.md's preset table (rows "| `FIELD` | hbm2 | hbm3 | hbm3e | ..." between the
 * markers <!-- hbm-presets --> and <!-- /hbm-presets -->) holds the numbers of the preset
 * table in replay/hbm_timing.c: every field once, every value equal (tCK to 4 decimals).
 * make test runs from the repository root; ACCELTRACE_DOCS names another docs folder.
 */
static void test_presets_match_docs(void **state)
{
    (void)state;
    const char *dir = getenv("ACCELTRACE_DOCS") ? getenv("ACCELTRACE_DOCS") : "docs";
    char path[4096], line[1024];
    snprintf(path, sizeof path, "%s/models.md", dir);
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "cannot open '%s'\n", path);
        fail();
    }
    const char *pn[3] = {"hbm2", "hbm3", "hbm3e"};
    struct hbm_timing_params t[3];
    for (int k = 0; k < 3; k++)
        assert_int_equal(hbm_timing_preset(pn[k], &t[k]), 0);
    bool in = false;
    int rows = 0;
    while (fgets(line, sizeof line, f)) {
        if (strstr(line, "<!-- hbm-presets -->"))
            in = true;
        else if (strstr(line, "<!-- /hbm-presets -->"))
            in = false;
        if (!in || strncmp(line, "| `", 3))
            continue;
        char name[64];
        double v[3];
        int used = 0;
        assert_int_equal(
            sscanf(line, "| `%63[^`]` | %lf | %lf | %lf |%n", name, &v[0], &v[1], &v[2], &used), 4);
        for (int k = 0; k < 3; k++) {
            double want = 0;
            if (!preset_field(&t[k], name, &want)) {
                fprintf(stderr, "unknown field '%s' in %s\n", name, path);
                fail();
            }
            double tol = !strcmp(name, "tCK") ? 5e-5 : 1e-9;
            if (fabs(v[k] - want) > tol) {
                fprintf(stderr, "%s: %s %g in %s, %g in the preset\n", pn[k], name, v[k], path,
                        want);
                fail();
            }
        }
        rows++;
    }
    fclose(f);
    assert_int_equal(rows, 27); /* every field of preset_field, once */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_preset_and_check),
        cmocka_unit_test(test_one_token),
        cmocka_unit_test(test_two_tokens_row_conflict),
        cmocka_unit_test(test_two_tokens_row_hit),
        cmocka_unit_test(test_occupancy_two_tokens),
        cmocka_unit_test(test_layouts_one_token),
        cmocka_unit_test(test_refresh_one_token),
        cmocka_unit_test(test_never_beats_zero_latency),
        cmocka_unit_test(test_one_pc),
        cmocka_unit_test(test_same_bank_slower),
        cmocka_unit_test(test_refresh_adds),
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_hbm3_one_token),
        cmocka_unit_test(test_hbm3_sid_gap),
        cmocka_unit_test(test_hbm3_rrd_l),
        cmocka_unit_test(test_hbm3_rtp),
        cmocka_unit_test(test_hbm3_refresh),
        cmocka_unit_test(test_spread_bandwidth),
        cmocka_unit_test(test_presets_match_docs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
