/*
 * hbm_timing: DRAM timing of Salca's K/V gathers per pseudo-channel
 * (docs/models.md "HBM timing mode").
 */
#include "replay/hbm_timing.h"

#include <string.h>

#include "common/mem.h"

#define NEVER (-((int64_t)1 << 40)) /* "long ago": no constraint from an unused resource */
#define NONE UINT32_MAX

struct hbm_timing_pc {
    int64_t free_t;   /* when the PC picks its next token (its last read issued) */
    int64_t last_rd;  /* last read command */
    int64_t last_row; /* last command on the row bus (ACT or PRE) */
    int64_t last_act; /* last ACT (tRRD) */
    int64_t faw[4];   /* the last four ACTs, ring (tFAW) */
    uint32_t faw_i;   /* oldest entry of faw */
    uint32_t last_bg; /* bank group (over all SIDs) of last_rd */
    int64_t act_bg[HBM_TIMING_MAX_BANKS / 2]; /* last ACT per bank group (tRRD_L) */
    uint32_t head, tail;                      /* pending tokens, oldest first (NONE when empty) */
    uint32_t inflight;                        /* tokens issued and not back */
    int64_t row[HBM_TIMING_MAX_BANKS];        /* open row, -1 closed */
    int64_t act[HBM_TIMING_MAX_BANKS];        /* last ACT of the bank */
    int64_t rd[HBM_TIMING_MAX_BANKS];         /* last read of the bank */
};

/* The names of the layouts and occupancies, indexed by the enum. */
static const char *const layout_names[] = {[HBM_TIMING_KV_BG] = "kv_bg",
                                           [HBM_TIMING_ONE_BG] = "one_bg",
                                           [HBM_TIMING_SAME_BANK] = "same_bank"};
static const char *const occupancy_names[] = {[HBM_TIMING_OCC_DATA] = "data",
                                              [HBM_TIMING_OCC_COMMAND] = "command",
                                              [HBM_TIMING_OCC_REQUEST] = "request"};

/* The index of s in names[0..n), or ERR_USAGE (s NULL or none of them). */
static int name_index(const char *s, const char *const *names, size_t n)
{
    for (size_t i = 0; s && i < n; i++)
        if (!strcmp(s, names[i]))
            return (int)i;
    return ERR_USAGE;
}

int hbm_timing_layout_parse(const char *s, enum hbm_timing_layout *out)
{
    int i = name_index(s, layout_names, sizeof layout_names / sizeof layout_names[0]);
    if (i < 0)
        return i;
    *out = (enum hbm_timing_layout)i;
    return 0;
}

const char *hbm_timing_layout_name(enum hbm_timing_layout l)
{
    return (size_t)l < sizeof layout_names / sizeof layout_names[0] ? layout_names[l] : "unknown";
}

int hbm_timing_occupancy_parse(const char *s, enum hbm_timing_occupancy *out)
{
    int i = name_index(s, occupancy_names, sizeof occupancy_names / sizeof occupancy_names[0]);
    if (i < 0)
        return i;
    *out = (enum hbm_timing_occupancy)i;
    return 0;
}

/* Any other value reads as "data", the enum's 0. */
const char *hbm_timing_occupancy_name(enum hbm_timing_occupancy o)
{
    return (size_t)o < sizeof occupancy_names / sizeof occupancy_names[0] ? occupancy_names[o]
                                                                          : "data";
}

/*
 * Presets; docs/models.md#hbm-timing-mode ("Presets") lists every value with its source and
 * tests/test_hbm_timing.c checks that table against this one. Cycles are ceil(ns / tCK) of
 * the source's nanoseconds where the source gives nanoseconds.
 *
 * hbm2: HBM2 2000 Mbps (tCK 1 ns), 8 Gb, JEDEC JESD235 values of the Ramulator 2.1
 * HBM2_2000Mbps check (docs/models.md): pseudo-channel mode, 64-bit PC, BL4 -> 32 B per read
 * over nBL 2; 4 bank groups x 4 banks; 1 KiB page. nRRDL = nRRD, nRTP = nBL and no per-bank
 * refresh: the values the hbm2 checks were made with (that table has no tRRD_L or tRTP).
 *
 * hbm3: Ramulator 2.1 (commit c5b1c3a) HBM3 preset: timing HBM3_6400Mbps (tCK 0.625 ns),
 * organization HBM3_16Gb_8hi (32-bit PC, BL8 -> 32 B per read over nBL 2, 2 SIDs x 4 bank
 * groups x 4 banks, 1 KiB page); nRFC from its JESD238 table (8 Gb per channel: 350 ns),
 * nREFIpb = tREFI / 32 banks.
 *
 * hbm3e: gem5 HBM_9600_8H_1x64 (commit d3fa10a, JESD238B.01 tables cited there) at
 * tCK 1/2.4 GHz: tRCD 14, tRP 14, tCL 18, tRAS 29, tRC = tRAS + tRP, tRRD 3, tRRD_L 4,
 * tFAW 12, tCCD_L 2.5, tRTP 7.5, tRFC 350, tREFI 3900, tRFCpb 200 ns; organization, nCCDS
 * and nCCDR as hbm3 (the JESD238 protocol; gem5 models no SID).
 *
 * n_ctrl 0 everywhere: no controller pipeline beyond the DRAM timing [decision].
 */
static const struct hbm_timing_params presets[] = {
    {.name = "hbm2",
     .tck_ns = 1.0,
     .gbps = 2.0,
     .dq_bits = 64,
     .pcs_per_stack = 16,
     .n_sid = 1,
     .n_bg = 4,
     .n_banks = 4,
     .page_bytes = 1024,
     .burst_bytes = 32,
     .nBL = 2,
     .nCCDS = 2,
     .nCCDL = 4,
     .nCCDR = 2,
     .nRCD = 14,
     .nCL = 14,
     .nRP = 14,
     .nRAS = 34,
     .nRC = 48,
     .nRRD = 4,
     .nRRDL = 4,
     .nFAW = 15,
     .nRTP = 2,
     .nRFC = 350,
     .nREFI = 3900,
     .nRFCpb = 0,
     .nREFIpb = 0,
     .n_ctrl = 0},
    {.name = "hbm3",
     .tck_ns = 0.625,
     .gbps = 6.4,
     .dq_bits = 32,
     .pcs_per_stack = 32,
     .n_sid = 2,
     .n_bg = 4,
     .n_banks = 4,
     .page_bytes = 1024,
     .burst_bytes = 32,
     .nBL = 2,
     .nCCDS = 2,
     .nCCDL = 4,
     .nCCDR = 3,
     .nRCD = 31,
     .nCL = 20,
     .nRP = 26,
     .nRAS = 45,
     .nRC = 72,
     .nRRD = 4,
     .nRRDL = 5,
     .nFAW = 24,
     .nRTP = 9,
     .nRFC = 560,
     .nREFI = 6240,
     .nRFCpb = 320,
     .nREFIpb = 195,
     .n_ctrl = 0},
    {.name = "hbm3e",
     .tck_ns = 1.0 / 2.4,
     .gbps = 9.6,
     .dq_bits = 32,
     .pcs_per_stack = 32,
     .n_sid = 2,
     .n_bg = 4,
     .n_banks = 4,
     .page_bytes = 1024,
     .burst_bytes = 32,
     .nBL = 2,
     .nCCDS = 2,
     .nCCDL = 6,
     .nCCDR = 3,
     .nRCD = 34,
     .nCL = 44,
     .nRP = 34,
     .nRAS = 70,
     .nRC = 104,
     .nRRD = 8,
     .nRRDL = 10,
     .nFAW = 29,
     .nRTP = 18,
     .nRFC = 840,
     .nREFI = 9360,
     .nRFCpb = 480,
     .nREFIpb = 293,
     .n_ctrl = 0},
};

static const char *const preset_names[] = {"hbm2", "hbm3", "hbm3e", NULL};

int hbm_timing_preset(const char *name, struct hbm_timing_params *out)
{
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
        if (name && !strcmp(name, presets[i].name)) {
            *out = presets[i];
            return 0;
        }
    return ERR_USAGE;
}

const char *const *hbm_timing_preset_names(void)
{
    return preset_names;
}

uint32_t hbm_timing_banks(const struct hbm_timing_params *t)
{
    return t->n_sid * t->n_bg * t->n_banks;
}

double hbm_timing_pc_peak_gbs(const struct hbm_timing_params *t)
{
    return t->dq_bits * t->gbps / 8.0;
}

void hbm_timing_cfg_default(struct hbm_timing_cfg *c)
{
    memset(c, 0, sizeof *c);
    c->t = presets[0];
    c->layout = HBM_TIMING_KV_BG;
    c->token_bytes = 256; /* K 128 B + V 128 B per token */
    c->refresh = true;
    c->occupancy = HBM_TIMING_OCC_REQUEST; /* Ramulator 2's read buffer (docs/models.md) */
}

int hbm_timing_check(const struct hbm_timing_cfg *c, struct errmsg *e)
{
    const struct hbm_timing_params *t = &c->t;
    if (t->n_bg < 2 || t->n_bg % 2 || t->n_banks < 2 || t->n_banks % 2 || t->n_sid < 1 ||
        t->n_sid > 8 || hbm_timing_banks(t) > HBM_TIMING_MAX_BANKS)
        return errmsg_set(e, ERR_CONFIG,
                          "SIDs %u x bank groups %u x banks %u: groups and banks even, >= 2, at "
                          "most %d banks",
                          t->n_sid, t->n_bg, t->n_banks, HBM_TIMING_MAX_BANKS);
    uint32_t half = c->token_bytes / 2;
    if (t->burst_bytes == 0 || c->token_bytes % 2 || half == 0 || half % t->burst_bytes ||
        half > t->page_bytes || t->page_bytes % half)
        return errmsg_set(e, ERR_CONFIG,
                          "token of %u bytes: halves must be whole %u-byte bursts dividing a "
                          "%u-byte page",
                          c->token_bytes, t->burst_bytes, t->page_bytes);
    if (half / t->burst_bytes > 1024)
        return errmsg_set(e, ERR_CONFIG, "token of %u bytes: more than 2048 bursts",
                          c->token_bytes);
    if (t->nBL == 0 || t->nCCDS == 0 || t->nCCDL == 0 || t->nCCDR == 0 || t->nREFI == 0 ||
        t->nRFC >= t->nREFI || t->nREFI > 1u << 24 || t->tck_ns <= 0)
        return errmsg_set(e, ERR_CONFIG,
                          "timing '%s': tCK > 0, nBL, nCCDS, nCCDL, nCCDR >= 1, nRFC < nREFI",
                          t->name);
    if (c->refresh && c->per_bank &&
        (t->nREFIpb == 0 || t->nRFCpb == 0 ||
         (uint64_t)t->nREFIpb * hbm_timing_banks(t) > 1u << 24))
        return errmsg_set(e, ERR_CONFIG, "timing '%s' has no per-bank refresh (nREFIpb 0)",
                          t->name);
    if (c->layout != HBM_TIMING_KV_BG && c->layout != HBM_TIMING_ONE_BG &&
        c->layout != HBM_TIMING_SAME_BANK)
        return errmsg_set(e, ERR_CONFIG, "unknown layout %d", (int)c->layout);
    if (c->occupancy != HBM_TIMING_OCC_DATA && c->occupancy != HBM_TIMING_OCC_COMMAND &&
        c->occupancy != HBM_TIMING_OCC_REQUEST)
        return errmsg_set(e, ERR_CONFIG, "unknown occupancy %d", (int)c->occupancy);
    return 0;
}

uint64_t hbm_timing_token_cycles(const struct hbm_timing_cfg *c)
{
    return (uint64_t)(c->token_bytes / c->t.burst_bytes) * c->t.nBL;
}

uint64_t hbm_timing_ideal(const struct hbm_timing_cfg *c, size_t n, uint32_t h_att)
{
    return hbm_pc_ideal(n, h_att) * hbm_timing_token_cycles(c);
}

int hbm_timing_work_reserve(struct hbm_timing_work *w, size_t n, uint32_t h_att)
{
    if (h_att > w->pcs) {
        struct hbm_timing_pc *p = mem_realloc(w->pc, (size_t)h_att * sizeof *p);
        if (!p)
            return ERR_NOMEM;
        w->pc = p;
        w->pcs = h_att;
    }
    if (n <= w->cap)
        return 0;
    size_t cap = w->cap ? w->cap : 1024;
    while (cap < n)
        if (!mem_mul(cap, 2, &cap))
            return ERR_NOMEM;
    size_t b32, b64;
    if (!mem_mul(cap, sizeof(uint32_t), &b32) || !mem_mul(cap, sizeof(uint64_t), &b64))
        return ERR_NOMEM;
    uint32_t *nx = mem_realloc(w->next, b32);
    if (nx)
        w->next = nx;
    uint32_t *pv = nx ? mem_realloc(w->prev, b32) : NULL;
    if (pv)
        w->prev = pv;
    int64_t *ar = pv ? mem_realloc(w->arr, b64) : NULL;
    if (ar)
        w->arr = ar;
    uint64_t *hp = ar ? mem_realloc(w->heap, b64) : NULL;
    if (!hp)
        return ERR_NOMEM; /* grown arrays stay owned by w; cap unchanged */
    w->heap = hp;
    w->cap = cap;
    return 0;
}

void hbm_timing_work_release(struct hbm_timing_work *w)
{
    mem_free(w->next);
    mem_free(w->prev);
    mem_free(w->arr);
    mem_free(w->heap);
    mem_free(w->pc);
    memset(w, 0, sizeof *w);
}

/* ---- completion heap (min by cycle; pc in the low 10 bits) ---- */

static void heap_push(uint64_t *h, size_t *n, uint64_t v)
{
    size_t i = (*n)++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (h[p] <= v)
            break;
        h[i] = h[p];
        i = p;
    }
    h[i] = v;
}

static uint64_t heap_pop(uint64_t *h, size_t *n)
{
    uint64_t top = h[0], v = h[--*n];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1;
        if (l >= *n)
            break;
        if (l + 1 < *n && h[l + 1] < h[l])
            l++;
        if (h[l] >= v)
            break;
        h[i] = h[l];
        i = l;
    }
    if (*n)
        h[i] = v;
    return top;
}

/* ---- one simulation ---- */

struct sim {
    const struct hbm_timing_cfg *c;
    const struct hbm_timing_params *t;
    int64_t t0;
    uint32_t per_row; /* token halves per page */
    uint32_t nb;      /* banks per PC */
    uint64_t hits, misses;
};

static int64_t max64(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

/* Moves t out of a refresh window of bank b (absolute time t0 + t): all-bank windows
 * [m·tREFI, m·tREFI + tRFC), m >= 1; per-bank windows of bank b [j·tREFIpb, + tRFCpb) for
 * j >= 1, j = b mod banks (the banks in turn). */
static int64_t refresh_adj(const struct sim *s, uint32_t b, int64_t t)
{
    if (!s->c->refresh)
        return t;
    int64_t a = s->t0 + t, len, off;
    if (s->c->per_bank) {
        int64_t p = s->t->nREFIpb, x = a - (int64_t)b * p, np = p * s->nb;
        if (x < 0 || (b == 0 && x < np))
            return t;
        off = x % np;
        len = s->t->nRFCpb;
    } else {
        int64_t refi = s->t->nREFI;
        if (a < refi)
            return t;
        off = a % refi;
        len = s->t->nRFC;
    }
    return off < len ? t + (len - off) : t;
}

/* Refresh epoch of bank b at local time t: the refreshes of b begun by then (rows opened in
 * an earlier epoch are closed). */
static int64_t epoch(const struct sim *s, uint32_t b, int64_t t)
{
    if (!s->c->refresh)
        return 0;
    int64_t a = s->t0 + t;
    if (s->c->per_bank) {
        int64_t p = s->t->nREFIpb, x = a - (int64_t)b * p, np = p * s->nb;
        return x < 0 ? 0 : x / np + (b == 0 ? 0 : 1);
    }
    return a / (int64_t)s->t->nREFI;
}

/* Bank id (bg · n_banks + bank) and row of the K (half 0) or V (half 1) part of position j
 * (layouts in hbm_timing.h). */
static void place(const struct sim *s, uint64_t j, uint32_t half, uint32_t *bank, int64_t *row)
{
    const struct hbm_timing_params *t = s->t;
    uint64_t c = j / s->per_row;
    uint32_t n_bg = t->n_sid * t->n_bg; /* bank groups over all SIDs, SID-major */
    uint32_t pairs_bg = n_bg / 2, pairs_b = t->n_banks / 2, nb = n_bg * t->n_banks;
    switch (s->c->layout) {
    case HBM_TIMING_KV_BG: {
        uint64_t sl = c % ((uint64_t)pairs_bg * t->n_banks);
        uint32_t bg = 2 * (uint32_t)(sl % pairs_bg) + half;
        *bank = bg * t->n_banks + (uint32_t)(sl / pairs_bg);
        *row = (int64_t)(c / ((uint64_t)pairs_bg * t->n_banks));
        return;
    }
    case HBM_TIMING_ONE_BG: {
        uint64_t sl = c % ((uint64_t)n_bg * pairs_b);
        uint32_t bg = (uint32_t)(sl % n_bg);
        *bank = bg * t->n_banks + 2 * (uint32_t)(sl / n_bg) + half;
        *row = (int64_t)(c / ((uint64_t)n_bg * pairs_b));
        return;
    }
    case HBM_TIMING_SAME_BANK:
        *bank = (uint32_t)(c % nb);
        *row = (int64_t)(2 * (c / nb) + half);
        return;
    }
    *bank = 0;
    *row = 0;
}

void hbm_timing_place(const struct hbm_timing_cfg *c, uint64_t j, uint32_t half, uint32_t *bank,
                      int64_t *row, uint32_t *col)
{
    uint32_t hb = c->token_bytes / 2;
    struct sim s = {c, &c->t, 0, c->t.page_bytes / hb, hbm_timing_banks(&c->t), 0, 0};
    place(&s, j, half, bank, row);
    *col = (uint32_t)(j % s.per_row) * (hb / c->t.burst_bytes);
}

/* Whether bank b of q has row open at local time t (refresh closes rows). */
static bool row_open(const struct sim *s, const struct hbm_timing_pc *q, uint32_t b, int64_t row,
                     int64_t t)
{
    return q->row[b] == row && epoch(s, b, q->act[b]) == epoch(s, b, t);
}

/* PRE of bank b when another row is open: the earliest cycle >= ts it can issue
 * (tRAS after its ACT, one burst after its last read), on the row bus; or ts when the bank
 * needs none. Counts the access as hit or miss. Returns -1 on a row hit. */
static int64_t precharge(struct sim *s, struct hbm_timing_pc *q, uint32_t b, int64_t row,
                         int64_t ts)
{
    if (row_open(s, q, b, row, ts)) {
        s->hits++;
        return -1;
    }
    s->misses++;
    if (q->row[b] < 0 || epoch(s, b, q->act[b]) != epoch(s, b, ts))
        return ts;                                  /* closed (or closed by a refresh): no PRE */
    int64_t tp = max64(ts, q->act[b] + s->t->nRAS); /* tRAS */
    tp = max64(tp, q->rd[b] + s->t->nRTP);          /* tRTP after the bank's last read */
    tp = refresh_adj(s, b, max64(tp, q->last_row + 1)); /* one row command per cycle */
    q->last_row = tp;
    return tp + s->t->nRP; /* tRP before the ACT */
}

/* ACT of bank b no earlier than ta; returns the cycle its reads may start (ACT + tRCD). */
static int64_t activate(struct sim *s, struct hbm_timing_pc *q, uint32_t b, int64_t row, int64_t ta)
{
    const struct hbm_timing_params *t = s->t;
    ta = max64(ta, q->act[b] + t->nRC); /* tRC, same bank */
    uint32_t g = b / t->n_banks;
    ta = max64(ta, q->last_act + t->nRRD);      /* tRRD(_S), any bank of the PC */
    ta = max64(ta, q->act_bg[g] + t->nRRDL);    /* tRRD_L, same bank group */
    ta = max64(ta, q->faw[q->faw_i] + t->nFAW); /* at most 4 ACTs per tFAW */
    ta = max64(ta, q->last_row + 1);
    ta = refresh_adj(s, b, ta);
    q->act[b] = ta;
    q->act_bg[g] = ta;
    q->row[b] = row;
    q->last_act = ta;
    q->last_row = ta;
    q->faw[q->faw_i] = ta;
    q->faw_i = (q->faw_i + 1) % 4;
    return ta + t->nRCD;
}

/* One read of bank b no earlier than ready; nCCDL (same bank group), nCCDS (other group of
 * the same SID) or nCCDR (other SID) after the PC's last read. */
static void read_burst(struct sim *s, struct hbm_timing_pc *q, uint32_t b, int64_t ready)
{
    const struct hbm_timing_params *t = s->t;
    uint32_t bg = b / t->n_banks;
    uint32_t gap = bg == q->last_bg                                             ? t->nCCDL
                   : q->last_bg != NONE && bg / t->n_bg != q->last_bg / t->n_bg ? t->nCCDR
                                                                                : t->nCCDS;
    int64_t r = max64(ready, q->last_rd + gap);
    r = refresh_adj(s, b, r);
    q->last_rd = r;
    q->last_bg = bg;
    q->rd[b] = r;
}

/* Serves token of position j on PC q from cycle ts; returns the cycle its data is back and
 * sets *first_rd to its first read command. */
static int64_t serve(struct sim *s, struct hbm_timing_pc *q, uint64_t j, int64_t ts,
                     int64_t *first_rd)
{
    const struct hbm_timing_params *t = s->t;
    uint32_t bursts = s->c->token_bytes / 2 / t->burst_bytes;
    uint32_t bank[2];
    int64_t row[2], ready[2];
    place(s, j, 0, &bank[0], &row[0]);
    place(s, j, 1, &bank[1], &row[1]);
    if (bank[0] == bank[1]) {
        /* same_bank: K's row, its reads, then V's row */
        for (int h = 0; h < 2; h++) {
            int64_t ta = precharge(s, q, bank[h], row[h], ts);
            ready[h] =
                ta < 0 ? max64(ts, q->act[bank[h]] + t->nRCD) : activate(s, q, bank[h], row[h], ta);
            for (uint32_t k = 0; k < bursts; k++) {
                read_burst(s, q, bank[h], ready[h]);
                if (h == 0 && k == 0)
                    *first_rd = q->last_rd;
            }
        }
    } else {
        /* both PREs, then both ACTs, then the reads K, V, K, V, ... */
        int64_t ta[2];
        for (int h = 0; h < 2; h++)
            ta[h] = precharge(s, q, bank[h], row[h], ts);
        for (int h = 0; h < 2; h++)
            ready[h] = ta[h] < 0 ? max64(ts, q->act[bank[h]] + t->nRCD)
                                 : activate(s, q, bank[h], row[h], ta[h]);
        for (uint32_t k = 0; k < 2 * bursts; k++) {
            read_burst(s, q, bank[k & 1], ready[k & 1]);
            if (k == 0)
                *first_rd = q->last_rd;
        }
    }
    q->free_t = q->last_rd;
    return q->last_rd + t->nCL + t->nBL; /* read latency CL, then the burst */
}

static void pc_reset(struct hbm_timing_pc *q, uint32_t nb)
{
    q->free_t = 0;
    q->last_rd = q->last_row = q->last_act = NEVER;
    for (int k = 0; k < 4; k++)
        q->faw[k] = NEVER;
    for (uint32_t k = 0; k < HBM_TIMING_MAX_BANKS / 2; k++)
        q->act_bg[k] = NEVER;
    q->faw_i = 0;
    q->last_bg = NONE;
    q->head = q->tail = NONE;
    q->inflight = 0;
    for (uint32_t b = 0; b < nb; b++) {
        q->row[b] = -1;
        q->act[b] = NEVER;
        q->rd[b] = NEVER;
    }
}

/* Picks the PC's next pending token: FR-FCFS (oldest with its rows open, else the oldest)
 * or, with fcfs, the oldest; FR-FCFS under per-bank refresh passes over tokens whose banks
 * are refreshing now. Unlinks it. */
static uint32_t pick(struct sim *s, struct hbm_timing_pc *q, struct hbm_timing_work *w,
                     const uint32_t *idx, uint32_t h_att, bool fcfs, int64_t now)
{
    uint32_t k = q->head, first_free = NONE;
    bool hit = false, pb = s->c->refresh && s->c->per_bank;
    for (uint32_t x = q->head; !fcfs && x != NONE; x = w->next[x]) {
        uint64_t j = idx[x] / h_att;
        uint32_t b0, b1;
        int64_t r0, r1;
        place(s, j, 0, &b0, &r0);
        place(s, j, 1, &b1, &r1);
        /* per-bank refresh: a token whose bank is refreshing now waits behind the others */
        if (pb && (refresh_adj(s, b0, now) != now || refresh_adj(s, b1, now) != now))
            continue;
        if (b0 != b1 && row_open(s, q, b0, r0, now) && row_open(s, q, b1, r1, now)) {
            k = x;
            hit = true;
            break;
        }
        if (first_free == NONE)
            first_free = x;
    }
    if (!hit && first_free != NONE)
        k = first_free;
    uint32_t p = w->prev[k], nx = w->next[k];
    if (p == NONE)
        q->head = nx;
    else
        w->next[p] = nx;
    if (nx == NONE)
        q->tail = p;
    else
        w->prev[nx] = p;
    return k;
}

void hbm_timing_run(const struct hbm_timing_cfg *c, const struct hbm_pc_policy_cfg *pol,
                    const uint32_t *idx, const uint16_t *pc, size_t n, uint32_t h_att, uint64_t t0,
                    struct hbm_timing_work *w, struct hbm_timing_result *r)
{
    uint32_t nb = hbm_timing_banks(&c->t);
    struct sim s = {c, &c->t, (int64_t)t0, c->t.page_bytes / (c->token_bytes / 2), nb, 0, 0};
    for (uint32_t p = 0; p < h_att; p++)
        pc_reset(&w->pc[p], nb);
    int64_t t_tok = (int64_t)hbm_timing_token_cycles(c), p_iss = pol->p_iss;
    int64_t t = 0, issue_q = 0, end = 0; /* issue_q: next issue cycle x p_iss */
    size_t nxt = 0, done = 0, inflight = 0, hn = 0, batch_end = 0;
    bool fcfs = pol->policy == HBM_PC_INORDER;
    while (done < n) {
        /* retire the tokens whose data is back */
        while (hn && (int64_t)(w->heap[0] >> 10) <= t) {
            uint64_t e = heap_pop(w->heap, &hn);
            w->pc[e & 1023].inflight--;
            inflight--;
            done++;
        }
        /* issue in index order, p_iss per t_tok cycles, within the policy's limits */
        bool blocked = false;
        while (nxt < n && issue_q <= t * p_iss) {
            struct hbm_timing_pc *q = &w->pc[pc[nxt]];
            if (pol->policy == HBM_PC_INORDER && q->inflight >= pol->depth)
                blocked = true;
            else if (pol->policy == HBM_PC_WINDOW && inflight >= pol->window)
                blocked = true;
            else if (pol->policy == HBM_PC_BATCH && nxt >= batch_end) {
                if (inflight == 0)
                    batch_end = nxt + (size_t)p_iss;
                else
                    blocked = true;
            }
            if (blocked)
                break;
            uint32_t k = (uint32_t)nxt++;
            w->arr[k] = t;
            w->next[k] = NONE;
            w->prev[k] = q->tail;
            if (q->tail == NONE)
                q->head = k;
            else
                w->next[q->tail] = k;
            q->tail = k;
            q->inflight++;
            inflight++;
            issue_q = max64(issue_q, t * p_iss) + t_tok;
        }
        /* every free PC with a pending token serves one */
        int64_t t_next = INT64_MAX;
        for (uint32_t p = 0; p < h_att; p++) {
            struct hbm_timing_pc *q = &w->pc[p];
            if (q->head == NONE)
                continue;
            if (q->free_t <= t) {
                uint32_t k = pick(&s, q, w, idx, h_att, fcfs, t);
                int64_t ts = max64(w->arr[k] + c->t.n_ctrl, 0);
                int64_t first_rd = 0;
                int64_t done_t = serve(&s, q, idx[k] / h_att, ts, &first_rd);
                if (done_t > end)
                    end = done_t;
                /* the token stops counting at its data, its last or its first read command */
                int64_t rel = c->occupancy == HBM_TIMING_OCC_COMMAND   ? q->last_rd
                              : c->occupancy == HBM_TIMING_OCC_REQUEST ? first_rd
                                                                       : done_t;
                heap_push(w->heap, &hn, ((uint64_t)rel << 10) | p);
            }
            if (q->head != NONE && q->free_t < t_next)
                t_next = q->free_t;
        }
        if (hn && (int64_t)(w->heap[0] >> 10) < t_next)
            t_next = (int64_t)(w->heap[0] >> 10);
        if (nxt < n && !blocked) {
            int64_t ti = (issue_q + p_iss - 1) / p_iss;
            if (ti < t_next)
                t_next = ti;
        }
        if (t_next <= t)
            t_next = t + 1;
        t = t_next;
        if (done >= n)
            break;
    }
    r->cycles = (uint64_t)end;
    r->row_hits = s.hits;
    r->row_misses = s.misses;
}
