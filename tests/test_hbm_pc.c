/*
 * test_hbm_pc: pseudo-channel mappings and issue policies (docs/salca.md#conflict-analyzer):
 * acceptance test the conflict policy check, the acceptance check (alpha = 1 for consecutive
 * tokens, all tokens on one PC, window never worse than in-order, equality with a brute-force
 * simulation on small random cases) and the mapping formulas.
 * Randomized tests print their seed; ACCELTRACE_SEED overrides it.
 */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/rng.h"
#include "replay/hbm_pc.h"
#include "tests/helpers/test_helpers.h"

static struct hbm_pc_work *work_new(size_t n)
{
    struct hbm_pc_work *w = calloc(1, sizeof *w);
    assert_non_null(w);
    assert_int_equal(hbm_pc_work_reserve(w, n), 0);
    return w;
}

static void work_free(struct hbm_pc_work *w)
{
    hbm_pc_work_release(w);
    free(w);
}

/* ---- brute-force reference simulations (literal readings of docs/salca.md#conflict-analyzer) ----
 */

static uint64_t bf_batch(const uint16_t *pc, size_t n, uint32_t h, uint32_t p_iss, uint64_t *occ,
                         size_t bins, uint64_t *conf)
{
    uint64_t slots = 0;
    for (size_t c = 0; c < n; c += p_iss) {
        uint32_t load[HBM_PC_MAX_PCS] = {0};
        size_t e = c + p_iss < n ? c + p_iss : n;
        uint32_t conflicts = 0;
        for (size_t k = c; k < e; k++) {
            for (size_t j = c; j < k; j++)
                if (pc[j] == pc[k]) {
                    conflicts++;
                    break;
                }
            load[pc[k]]++;
        }
        uint32_t mx = 0;
        for (uint32_t p = 0; p < h; p++)
            mx = load[p] > mx ? load[p] : mx;
        for (uint32_t s = 0; s < mx; s++)
            for (uint32_t p = 0; p < h; p++) {
                uint32_t v = load[p] > s ? load[p] - s : 0;
                occ[v < bins - 1 ? v : bins - 1]++;
            }
        slots += mx;
        conf[conflicts]++;
    }
    return slots;
}

static uint64_t bf_inorder(const uint16_t *pc, size_t n, uint32_t h, uint32_t p_iss, uint32_t depth,
                           uint64_t *occ, size_t bins)
{
    /* fifo[p] holds request ids; served[] marks retired requests. */
    size_t *fifo[HBM_PC_MAX_PCS];
    size_t len[HBM_PC_MAX_PCS] = {0};
    for (uint32_t p = 0; p < h; p++) {
        fifo[p] = calloc(n + 1, sizeof(size_t));
        assert_non_null(fifo[p]);
    }
    size_t next = 0, done = 0;
    uint64_t slots = 0;
    while (done < n) {
        slots++;
        for (uint32_t k = 0; k < p_iss && next < n; k++) {
            uint32_t p = pc[next];
            if (len[p] >= depth)
                break;
            fifo[p][len[p]++] = next++;
        }
        for (uint32_t p = 0; p < h; p++)
            occ[len[p] < bins - 1 ? len[p] : bins - 1]++;
        for (uint32_t p = 0; p < h; p++)
            if (len[p]) {
                memmove(fifo[p], fifo[p] + 1, (len[p] - 1) * sizeof(size_t));
                len[p]--;
                done++;
            }
    }
    for (uint32_t p = 0; p < h; p++)
        free(fifo[p]);
    return slots;
}

static uint64_t bf_window(const uint16_t *pc, size_t n, uint32_t h, uint32_t p_iss, uint32_t W,
                          uint64_t *occ, size_t bins)
{
    char *served = calloc(n + 1, 1);
    assert_non_null(served);
    size_t done = 0;
    uint64_t slots = 0;
    while (done < n) {
        slots++;
        /* The oldest W unserved requests; per PC its oldest one, in age order. */
        uint32_t cnt[HBM_PC_MAX_PCS] = {0};
        size_t pick[HBM_PC_MAX_PCS];
        uint32_t npick = 0;
        uint32_t seen = 0;
        for (size_t k = 0; k < n && seen < W; k++) {
            if (served[k])
                continue;
            seen++;
            if (cnt[pc[k]]++ == 0)
                pick[npick++] = k; /* already in age order */
        }
        for (uint32_t p = 0; p < h; p++)
            occ[cnt[p] < bins - 1 ? cnt[p] : bins - 1]++;
        if (npick > p_iss)
            npick = p_iss;
        for (uint32_t a = 0; a < npick; a++) {
            served[pick[a]] = 1;
            done++;
        }
    }
    free(served);
    return slots;
}

/* ---- selections ---- */

static size_t gen_random(struct rng *r, uint32_t *idx, size_t max_n, uint32_t universe)
{
    /* A random subset: each token kept with a random probability, in clustered runs. */
    size_t n = 0;
    double keep = 0.02 + 0.5 * rng_uniform(r);
    uint32_t i = 0;
    while (i < universe && n < max_n) {
        if (rng_uniform(r) < keep) {
            uint32_t run = 1 + (uint32_t)rng_below(r, 20);
            for (uint32_t k = 0; k < run && i < universe && n < max_n; k++)
                idx[n++] = i++;
        }
        i += 1 + (uint32_t)rng_below(r, 8);
    }
    return n;
}

#define BINS 64

static void test_conflicts_consecutive(void **state)
{
    (void)state;
    uint32_t hs[] = {4, 16, 32};
    struct hbm_pc_work *w = work_new(4096);
    for (size_t hi = 0; hi < 3; hi++) {
        uint32_t h = hs[hi];
        struct hbm_pc_mapping m = {HBM_PC_MAP_MOD, h, 0};
        for (uint32_t a = 0; a < 40; a += 13)
            for (uint32_t k = 1; k <= 9; k += 4) {
                uint32_t idx[4096];
                uint16_t pc[4096];
                size_t n = (size_t)k * h;
                for (size_t i = 0; i < n; i++)
                    idx[i] = a + (uint32_t)i;
                hbm_pc_map_indices(&m, 0, 0, idx, n, pc);
                uint64_t ideal = hbm_pc_ideal(n, h);
                assert_int_equal(ideal, k);
                /* alpha = 1.0 exactly: slots == ideal */
                assert_int_equal(hbm_pc_batch(pc, n, h, h, w, NULL, 0, NULL), ideal);
                for (uint32_t d = 1; d <= 8; d *= 2)
                    assert_int_equal(hbm_pc_inorder(pc, n, h, h, d, w, NULL, 0), ideal);
                for (uint32_t W = h; W <= 1024; W *= 2)
                    assert_int_equal(hbm_pc_window(pc, n, h, h, W, w, NULL, 0), ideal);
            }
    }
    work_free(w);
}

static void test_conflicts_one_pc(void **state)
{
    (void)state;
    struct hbm_pc_work *w = work_new(4096);
    uint32_t h = 16;
    struct hbm_pc_mapping m = {HBM_PC_MAP_MOD, h, 0};
    size_t ns[] = {1, 16, 17, 64, 100};
    for (size_t t = 0; t < 5; t++) {
        size_t n = ns[t];
        uint32_t idx[128];
        uint16_t pc[128];
        for (size_t i = 0; i < n; i++)
            idx[i] = 5 + (uint32_t)i * h; /* all == 5 (mod 16) */
        hbm_pc_map_indices(&m, 0, 0, idx, n, pc);
        for (uint32_t p_iss = 1; p_iss <= 32; p_iss *= 2) {
            assert_int_equal(hbm_pc_batch(pc, n, h, p_iss, w, NULL, 0, NULL), n);
            for (uint32_t d = 1; d <= 4; d++)
                assert_int_equal(hbm_pc_inorder(pc, n, h, p_iss, d, w, NULL, 0), n);
            for (uint32_t W = 1; W <= 256; W *= 4)
                assert_int_equal(hbm_pc_window(pc, n, h, p_iss, W, w, NULL, 0), n);
        }
        /* alpha = N_sel/ceil(N_sel/h_att): 17 tokens, 16 PCs -> 8.5 (the conflict policy check). */
        double alpha = (double)n / (double)hbm_pc_ideal(n, h);
        if (n == 17)
            assert_true(alpha == 8.5);
        if (n == 64)
            assert_true(alpha == 16.0);
    }
    work_free(w);
}

/* Window with W >= N_sel (and p_iss = h_att) takes exactly max per-PC load slots. */
static void test_conflicts_window_max_load(void **state)
{
    (void)state;
    uint64_t seed = th_seed(20261130);
    struct rng r;
    rng_stream(&r, seed, "window_max_load", 0, 0);
    struct hbm_pc_work *w = work_new(8192);
    static uint32_t idx[8192];
    static uint16_t pc[8192];
    for (int trial = 0; trial < 200; trial++) {
        uint32_t h = 1u << (1 + rng_below(&r, 5));
        enum hbm_pc_map map = (enum hbm_pc_map)rng_below(&r, 3);
        struct hbm_pc_mapping m = {map, h, seed};
        size_t n = gen_random(&r, idx, 2000, 20000);
        hbm_pc_map_indices(&m, (uint32_t)trial, 3, idx, n, pc);
        uint64_t mx = hbm_pc_max_load(pc, n, h);
        assert_int_equal(hbm_pc_window(pc, n, h, h, (uint32_t)(n ? n : 1), w, NULL, 0), mx);
        assert_int_equal(hbm_pc_window(pc, n, h, h, 8192, w, NULL, 0), mx);
    }
    work_free(w);
}

/* Every policy >= bound; window (W >= p_iss) <= inorder D_f = 1 and <= batch; equality
 * with the brute-force simulations, histograms included. */
static void test_bruteforce_and_bounds(void **state)
{
    (void)state;
    uint64_t seed = th_seed(20261130);
    struct rng r;
    rng_stream(&r, seed, "bruteforce", 0, 0);
    struct hbm_pc_work *w = work_new(1024);
    static uint32_t idx[1024];
    static uint16_t pc[1024];
    uint64_t sum_slots[3] = {0}, sum_ideal = 0, sum_max = 0;
    for (int trial = 0; trial < 400; trial++) {
        uint32_t h = 1 + (uint32_t)rng_below(&r, 16);
        if (rng_below(&r, 2))
            h = 1u << rng_below(&r, 5);
        enum hbm_pc_map map = (enum hbm_pc_map)rng_below(&r, 3);
        if (map == HBM_PC_MAP_XOR && (h & (h - 1)))
            map = HBM_PC_MAP_MOD;
        struct hbm_pc_mapping m = {map, h, seed};
        struct errmsg e = {0};
        assert_int_equal(hbm_pc_mapping_check(&m, &e), 0);
        size_t n = gen_random(&r, idx, 300, 3000);
        hbm_pc_map_indices(&m, 1, (uint32_t)trial, idx, n, pc);
        for (size_t k = 0; k < n; k++)
            assert_int_equal(pc[k], hbm_pc_of(&m, 1, (uint32_t)trial, idx[k]));
        uint32_t p_iss = rng_below(&r, 2) ? h : 1 + (uint32_t)rng_below(&r, 2 * h);
        uint32_t depth = 1 + (uint32_t)rng_below(&r, 4);
        uint32_t W = 1 + (uint32_t)rng_below(&r, 200);
        uint64_t ideal = hbm_pc_ideal(n, h), mx = hbm_pc_max_load(pc, n, h);

        uint64_t o1[BINS] = {0}, o2[BINS] = {0}, c1[64] = {0}, c2[64] = {0};
        uint64_t sb = hbm_pc_batch(pc, n, h, p_iss, w, o1, BINS, c1);
        assert_int_equal(sb, bf_batch(pc, n, h, p_iss, o2, BINS, c2));
        assert_memory_equal(o1, o2, sizeof o1);
        assert_memory_equal(c1, c2, sizeof c1);
        memset(c1, 0, sizeof c1);
        hbm_pc_batch_conflicts(pc, n, h, p_iss, w, c1);
        assert_memory_equal(c1, c2, sizeof c1);

        memset(o1, 0, sizeof o1);
        memset(o2, 0, sizeof o2);
        uint64_t si = hbm_pc_inorder(pc, n, h, p_iss, depth, w, o1, BINS);
        assert_int_equal(si, bf_inorder(pc, n, h, p_iss, depth, o2, BINS));
        assert_memory_equal(o1, o2, sizeof o1);

        memset(o1, 0, sizeof o1);
        memset(o2, 0, sizeof o2);
        uint64_t sw = hbm_pc_window(pc, n, h, p_iss, W, w, o1, BINS);
        assert_int_equal(sw, bf_window(pc, n, h, p_iss, W, o2, BINS));
        assert_memory_equal(o1, o2, sizeof o1);

        /* bound: no policy beats the most loaded PC, nor the issue width */
        assert_true(sb >= mx && si >= mx && sw >= mx);
        uint64_t by_width = ((uint64_t)n + p_iss - 1) / p_iss;
        assert_true(sb >= by_width && si >= by_width && sw >= by_width);
        /* window (W >= p_iss) never worse than in-order D_f = 1 nor than batch */
        uint32_t Wb = W < p_iss ? p_iss : W;
        uint64_t sw2 = hbm_pc_window(pc, n, h, p_iss, Wb, w, NULL, 0);
        assert_true(sw2 <= hbm_pc_inorder(pc, n, h, p_iss, 1, w, NULL, 0));
        assert_true(sw2 <= sb);
        /* deeper FIFOs: a window of at least h_att·D_f (and p_iss) requests covers every
         * request in-order issue can hold in flight; property-tested, not proven */
        uint32_t Wd = h * depth < p_iss ? p_iss : h * depth;
        assert_true(hbm_pc_window(pc, n, h, p_iss, Wd, w, NULL, 0) <= si);
        sum_slots[0] += sb;
        sum_slots[1] += si;
        sum_slots[2] += sw;
        sum_ideal += ideal;
        sum_max += mx;
    }
    /* aggregate alpha >= aggregate bound */
    for (int k = 0; k < 3; k++)
        assert_true(sum_slots[k] >= sum_max);
    printf("aggregate alpha batch %.3f inorder %.3f window %.3f bound %.3f\n",
           (double)sum_slots[0] / (double)sum_ideal, (double)sum_slots[1] / (double)sum_ideal,
           (double)sum_slots[2] / (double)sum_ideal, (double)sum_max / (double)sum_ideal);
    work_free(w);
}

static void test_mappings(void **state)
{
    (void)state;
    struct hbm_pc_mapping m = {HBM_PC_MAP_XOR, 16, 7};
    /* xor: (i mod 16) ^ (floor(i/16) mod 16) ^ (h mod 16) */
    assert_int_equal(hbm_pc_of(&m, 0, 0, 0), 0);
    assert_int_equal(hbm_pc_of(&m, 0, 0, 17), 1 ^ 1);
    assert_int_equal(hbm_pc_of(&m, 0, 3, 35), 3 ^ 2 ^ 3);
    assert_int_equal(hbm_pc_of(&m, 0, 19, 256 + 5), 5 ^ 0 ^ 3);
    /* a row of 16 consecutive tokens stays conflict-free under xor */
    uint32_t seen = 0;
    for (uint32_t i = 48; i < 64; i++)
        seen |= 1u << hbm_pc_of(&m, 2, 5, i);
    assert_int_equal(seen, 0xffff);
    /* hash: splitmix64(i ^ seed_h) mod h_att, seed_h = splitmix64(seed ^ (l << 16) ^ h) */
    m.map = HBM_PC_MAP_HASH;
    uint64_t sh = rng_mix64(7 ^ (3ull << 16) ^ 9);
    assert_int_equal(hbm_pc_of(&m, 3, 9, 1234), rng_mix64(1234 ^ sh) % 16);
    m.map = HBM_PC_MAP_MOD;
    m.h_att = 11;
    assert_int_equal(hbm_pc_of(&m, 0, 0, 100), 100 % 11);
    struct errmsg e = {0};
    m.map = HBM_PC_MAP_XOR;
    assert_int_equal(hbm_pc_mapping_check(&m, &e), ERR_CONFIG);
    m.h_att = 0;
    m.map = HBM_PC_MAP_MOD;
    assert_int_equal(hbm_pc_mapping_check(&m, &e), ERR_CONFIG);
    enum hbm_pc_map mp;
    assert_int_equal(hbm_pc_map_parse("hash", &mp), 0);
    assert_int_equal(mp, HBM_PC_MAP_HASH);
    assert_int_equal(hbm_pc_map_parse("bad", &mp), ERR_USAGE);
    enum hbm_pc_policy pol;
    assert_int_equal(hbm_pc_policy_parse("window", &pol), 0);
    assert_string_equal(hbm_pc_policy_name(pol), "window");
}

/* A small hand-checked case: PCs 0 0 1 0 2, h_att 4, p_iss 4. */
static void test_hand_case(void **state)
{
    (void)state;
    const uint16_t pc[] = {0, 0, 1, 0, 2};
    struct hbm_pc_work *w = work_new(16);
    /* batch: {0,0,1,0} lasts 3 slots, {2} 1 slot */
    assert_int_equal(hbm_pc_batch(pc, 5, 4, 4, w, NULL, 0, NULL), 4);
    /* inorder D_f=1: slot1 issues 0 (second 0 stalls); slot2 0,1 (third 0 stalls);
     * slot3 0,2 -> 3 slots */
    assert_int_equal(hbm_pc_inorder(pc, 5, 4, 4, 1, w, NULL, 0), 3);
    /* window 5: PC0 needs 3 slots, others in parallel -> 3 */
    assert_int_equal(hbm_pc_window(pc, 5, 4, 4, 5, w, NULL, 0), 3);
    /* window 1: strictly serial -> 5 */
    assert_int_equal(hbm_pc_window(pc, 5, 4, 4, 1, w, NULL, 0), 5);
    work_free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hand_case),
        cmocka_unit_test(test_mappings),
        cmocka_unit_test(test_conflicts_consecutive),
        cmocka_unit_test(test_conflicts_one_pc),
        cmocka_unit_test(test_conflicts_window_max_load),
        cmocka_unit_test(test_bruteforce_and_bounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
