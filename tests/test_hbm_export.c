/*
 * test_hbm_export: Ramulator 2 / DRAMsim3 request traces of the K/V gathers:
 * the address bit map round-trips; exported traces read back line by line,
 * every address decodes to the PC hbm_pc maps its token to and to the bank group, bank, row
 * and columns hbm_timing places its K or V half at, in the order hbm_timing reads them;
 * DRAMsim3 cycles follow the ideal issue rate. Randomized; the seed is printed and
 * ACCELTRACE_SEED overrides it.
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

#include "common/buf.h"
#include "common/io.h"
#include "common/rng.h"
#include "replay/hbm_export.h"
#include "replay/hbm_pc.h"
#include "replay/hbm_timing.h"
#include "tests/helpers/test_helpers.h"

static void test_bit_map(void **state)
{
    (void)state;
    struct hbm_timing_cfg c;
    hbm_timing_cfg_default(&c);
    struct hbm_export_map m;
    assert_int_equal(hbm_export_map_init(&m, &c, 16, NULL), 0);
    /* 32 B reads, 32 per 1 KiB row, 16 PCs, 4 bank groups x 4 banks (docs/models.md) */
    assert_int_equal(m.off_bits, 5);
    assert_int_equal(m.col_bits, 5);
    assert_int_equal(m.pc_bits, 4);
    assert_int_equal(m.bg_bits, 2);
    assert_int_equal(m.ba_bits, 2);
    /* PC 5, bank group 2, bank 3 (id 11), row 9, column 17:
     * ((((9 << 2 | 3) << 2 | 2) << 4 | 5) << 5 | 17) << 5 */
    uint64_t a = hbm_export_addr(&m, 5, 11, 9, 17);
    assert_int_equal(a, ((((((9ull << 2) | 3) << 2 | 2) << 4 | 5) << 5) | 17) << 5);
    uint32_t pc, bg, ba, col;
    uint64_t row;
    hbm_export_decode(&m, a, &pc, &bg, &ba, &row, &col);
    assert_int_equal(pc, 5);
    assert_int_equal(bg, 2);
    assert_int_equal(ba, 3);
    assert_int_equal(row, 9);
    assert_int_equal(col, 17);
    struct errmsg e = {0};
    assert_int_equal(hbm_export_map_init(&m, &c, 12, &e), ERR_CONFIG);
    assert_non_null(strstr(errmsg_text(&e), "h_att 12"));
    assert_int_equal(hbm_export_map_init(&m, &c, 1, NULL), ERR_CONFIG);
    enum hbm_export_format f;
    assert_int_equal(hbm_export_format_parse("dramsim3", &f), 0);
    assert_int_equal(f, HBM_EXPORT_DRAMSIM3);
    assert_int_equal(hbm_export_format_parse("ramulator2", &f), ERR_USAGE);
}

/* hbm3: a SID bit between the PC and the bank group (Ramulator 2.1's HBM3 levels
 * PseudoChannel, Sid, BankGroup, Bank, Row above the column); decode gives the bank group
 * over both SIDs, as the bank id holds it. The configs name HBM3 and every timing. */
static void test_bit_map_hbm3(void **state)
{
    (void)state;
    struct hbm_timing_cfg c;
    hbm_timing_cfg_default(&c);
    assert_int_equal(hbm_timing_preset("hbm3e", &c.t), 0);
    struct hbm_export_map m;
    assert_int_equal(hbm_export_map_init(&m, &c, 16, NULL), 0);
    assert_int_equal(m.sid_bits, 1);
    assert_int_equal(m.bg_bits, 2);
    /* PC 5, SID 1, bank group 2 (group 6 over both SIDs), bank 3: id 6 x 4 + 3 = 27 */
    uint64_t a = hbm_export_addr(&m, 5, 27, 9, 17);
    assert_int_equal(a, (((((((9ull << 2) | 3) << 2 | 2) << 1 | 1) << 4 | 5) << 5) | 17) << 5);
    uint32_t pc, bg, ba, col;
    uint64_t row;
    hbm_export_decode(&m, a, &pc, &bg, &ba, &row, &col);
    assert_int_equal(pc, 5);
    assert_int_equal(bg, 6);
    assert_int_equal(ba, 3);
    assert_int_equal(row, 9);
    assert_int_equal(col, 17);
    struct hbm_pc_mapping pm = {HBM_PC_MAP_MOD, 16, 0};
    struct buf b;
    buf_init(&b);
    struct sink k;
    sink_init_mem(&k, &b);
    assert_int_equal(hbm_export_ramulator_py(&k, &c, &pm, 16), 0);
    assert_int_equal(hbm_export_dramsim3_ini(&k, &c, 16), 0);
    uint8_t zero = 0;
    assert_int_equal(sink_write(&k, &zero, 1), 0);
    const char *buf = (const char *)b.data;
    /* half-clock ticks: 4 reads per tick is the peak of 16 PCs at one read per 2 clocks */
    assert_non_null(strstr(buf, "LoadStoreTrace(clock_ratio=4,"));
    assert_non_null(strstr(buf, "ramulator.dram.HBM3("));
    assert_non_null(strstr(buf, "nRCDRD=34, nRP=34, nRAS=70, nRC=104"));
    assert_non_null(strstr(buf, "nRFC=840, nREFI=9360"));
    assert_non_null(strstr(buf, "bankgroups = 8\nbanks_per_group = 4"));
    assert_non_null(strstr(buf, "tRCDRD = 34\n"));
    /* 1 KiB page: 64 DRAMsim3 HBM columns of 2 x 64 bits */
    assert_non_null(strstr(buf, "columns = 64\ndevice_width = 64\nBL = 4\n"));
    assert_non_null(strstr(buf, "channels = 16\n"));
    buf_release(&b);
}

/* Parses one line at *p: ramulator "LD 0x<hex>\n", dramsim3 "0x<hex> READ <dec>\n".
 * Advances *p; false on any deviation. */
static bool parse_line(const char **p, const char *end, enum hbm_export_format f, uint64_t *addr,
                       uint64_t *cycle)
{
    const char *s = *p;
    if (f == HBM_EXPORT_RAMULATOR) {
        if (end - s < 3 || memcmp(s, "LD ", 3))
            return false;
        s += 3;
    }
    if (end - s < 3 || s[0] != '0' || s[1] != 'x')
        return false;
    s += 2;
    uint64_t a = 0;
    int nd = 0;
    for (; s < end && ((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')); s++, nd++)
        a = a * 16 + (uint64_t)(*s <= '9' ? *s - '0' : *s - 'a' + 10);
    if (nd == 0 || nd > 16 || (nd > 1 && s[-nd] == '0'))
        return false;
    *addr = a;
    *cycle = 0;
    if (f == HBM_EXPORT_DRAMSIM3) {
        if (end - s < 7 || memcmp(s, " READ ", 6))
            return false;
        s += 6;
        nd = 0;
        uint64_t c = 0;
        for (; s < end && *s >= '0' && *s <= '9'; s++, nd++)
            c = c * 10 + (uint64_t)(*s - '0');
        if (nd == 0)
            return false;
        *cycle = c;
    }
    if (s >= end || *s != '\n')
        return false;
    *p = s + 1;
    return true;
}

/* Exports jobs of random selections under every map, layout and format into memory, reads
 * every line back and checks it against hbm_pc / hbm_timing_place. */
static void test_read_back(void **state)
{
    (void)state;
    uint64_t st = th_seed(20261202);
    enum { N_CTX = 20000 };
    uint32_t *idx = malloc(N_CTX * sizeof *idx);
    assert_non_null(idx);
    for (int rep = 0; rep < 18; rep++) {
        struct hbm_pc_mapping pm = {(enum hbm_pc_map)(rep % 3), rep % 2 ? 16 : 8, st};
        struct hbm_timing_cfg c;
        hbm_timing_cfg_default(&c);
        c.layout = (enum hbm_timing_layout)((rep / 3) % 3);
        enum hbm_export_format f = (enum hbm_export_format)((rep / 9) % 2);
        struct hbm_export_map m;
        assert_int_equal(hbm_export_map_init(&m, &c, pm.h_att, NULL), 0);
        struct buf b;
        buf_init(&b);
        struct sink k;
        sink_init_mem(&k, &b);
        struct hbm_export *x = NULL;
        assert_int_equal(hbm_export_new(&x, &k, f, &c, &pm, 0, NULL), 0);
        /* two jobs: (l, h) = (1, rep) and (2, rep + 1) */
        size_t n[2];
        uint32_t *sel[2];
        for (int j = 0; j < 2; j++) {
            double rho = 0.02 + (double)(rng_mix64(++st) % 30) / 100.0;
            size_t cnt = 0;
            for (uint32_t i = 0; i < N_CTX; i++)
                if ((double)(rng_mix64(++st) >> 11) * 0x1p-53 < rho)
                    idx[cnt++] = i;
            sel[j] = malloc((cnt ? cnt : 1) * sizeof *sel[j]);
            assert_non_null(sel[j]);
            memcpy(sel[j], idx, cnt * sizeof *idx);
            n[j] = cnt;
            assert_int_equal(hbm_export_job(x, 1 + (uint32_t)j, (uint32_t)(rep + j), sel[j], cnt),
                             0);
        }
        assert_int_equal(hbm_export_finish(x), 0);
        uint32_t per_tok = c.token_bytes / c.t.burst_bytes, bursts = per_tok / 2;
        assert_int_equal(hbm_export_requests(x), (n[0] + n[1]) * per_tok);
        assert_int_equal(hbm_export_bytes(x), b.len);
        const char *p = (const char *)b.data, *end = p + b.len;
        uint64_t tok = 0;
        for (int j = 0; j < 2; j++)
            for (size_t t = 0; t < n[j]; t++, tok++) {
                uint32_t want_pc = hbm_pc_of(&pm, 1 + (uint32_t)j, (uint32_t)(rep + j), sel[j][t]);
                uint64_t pos = sel[j][t] / pm.h_att;
                uint32_t bank[2], col0[2];
                int64_t row[2];
                for (uint32_t h = 0; h < 2; h++)
                    hbm_timing_place(&c, pos, h, &bank[h], &row[h], &col0[h]);
                for (uint32_t r = 0; r < per_tok; r++) {
                    uint64_t addr, cyc;
                    if (!parse_line(&p, end, f, &addr, &cyc))
                        fail_msg("rep %d: bad line %" PRIu64, rep, tok * per_tok + r + 1);
                    /* K0 V0 K1 V1 ... in two banks; K0 K1 ... V0 V1 ... in one */
                    uint32_t h = bank[0] != bank[1] ? r & 1 : r / bursts;
                    uint32_t burst = bank[0] != bank[1] ? r / 2 : r % bursts;
                    uint32_t pc, bg, ba, col;
                    uint64_t rw;
                    hbm_export_decode(&m, addr, &pc, &bg, &ba, &rw, &col);
                    assert_int_equal(addr & 31, 0);
                    if (pc != want_pc)
                        fail_msg("rep %d token %" PRIu64 ": PC %u, hbm_pc says %u", rep, tok, pc,
                                 want_pc);
                    assert_int_equal(bg, bank[h] / c.t.n_banks);
                    assert_int_equal(ba, bank[h] % c.t.n_banks);
                    assert_int_equal(rw, (uint64_t)row[h]);
                    assert_int_equal(col, col0[h] + burst);
                    /* the ideal front end: p_iss = h_att tokens per 16 cycles */
                    if (f == HBM_EXPORT_DRAMSIM3)
                        assert_int_equal(cyc, tok * 16 / pm.h_att);
                }
                /* kv_bg: K in an even bank group, V in the odd one next to it */
                if (c.layout == HBM_TIMING_KV_BG)
                    assert_int_equal(bank[1] / c.t.n_banks, bank[0] / c.t.n_banks + 1);
                if (c.layout == HBM_TIMING_SAME_BANK)
                    assert_int_equal(row[1], row[0] + 1);
            }
        assert_true(p == end);
        hbm_export_free(x);
        free(sel[0]);
        free(sel[1]);
        buf_release(&b);
    }
    free(idx);
}

/* The README names the bit map and both simulators. */
static void test_readme(void **state)
{
    (void)state;
    struct hbm_timing_cfg c;
    hbm_timing_cfg_default(&c);
    struct hbm_pc_mapping pm = {HBM_PC_MAP_XOR, 16, 0};
    struct buf b;
    buf_init(&b);
    struct sink k;
    sink_init_mem(&k, &b);
    const char *names[] = {"ramulator.trace", NULL};
    assert_int_equal(hbm_export_readme(&k, &c, &pm, 0, names), 0);
    assert_int_equal(buf_append(&b, "", 1), 0);
    const char *t = (const char *)b.data;
    assert_non_null(strstr(t, "| 10-13 | pseudo-channel p"));
    assert_non_null(strstr(t, "interleave_bits=5"));
    assert_non_null(strstr(t, "robabgrachco"));
    assert_non_null(strstr(t, "--map xor"));
    assert_non_null(strstr(t, "`ramulator.trace`"));
    buf_release(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bit_map),
        cmocka_unit_test(test_bit_map_hbm3),
        cmocka_unit_test(test_read_back),
        cmocka_unit_test(test_readme),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
