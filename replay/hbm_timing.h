/*
 * hbm_timing: the timing mode of the HBM pseudo-channel model (docs/models.md
 * "HBM timing mode"). hbm_pc counts service slots of zero-latency PCs; this module replays
 * the same K/V gathers against per-PC DRAM timing: stack IDs (SIDs) x bank groups x banks
 * with one open row each, column reads spaced by nCCDS (other bank group of the SID), nCCDL
 * (same bank group) or nCCDR (other SID), ACT/PRE bounded by tRCD, tRP, tRAS, tRC, tRRD,
 * tRRD_L (same bank group), tFAW and tRTP (read to PRE), a read latency (controller + CL +
 * burst) during which a token stays in flight, and all-bank refresh (tRFC every tREFI) or
 * per-bank refresh (bank b busy tRFCpb from j·tREFIpb, j = b mod banks, j >= 1). Presets
 * hbm2, hbm3, hbm3e (docs/models.md#hbm-timing-mode). Bank groups are numbered over all
 * SIDs, SID-major (group g is in SID g / n_bg); the layouts below see n_sid x n_bg groups.
 *
 * Units: every time is in DRAM clock cycles (tCK). A token is token_bytes on its PC (half
 * K, half V), read as bursts of burst_bytes. Token i of a job sits at position j = i/h_att
 * of its PC (the PC itself comes from hbm_pc's map); layouts place K and V of j:
 *   kv_bg     (default): chunk c = j/(page/half) holds the halves of page/half consecutive
 *             positions; K in bank group 2s, V in 2s+1, s = c mod (n_bg/2), bank
 *             (c / (n_bg/2)) mod n_banks, row c / (n_bg/2 · n_banks); K and V bursts
 *             interleave, so consecutive reads change bank group (nCCDS).
 *   one_bg    : both halves in bank group c mod n_bg, K in bank 2s, V in 2s+1,
 *             s = (c / n_bg) mod (n_banks/2), row c / (n_bg · n_banks/2) (reads at nCCDL).
 *   same_bank : separate K and V arrays in one bank, bank c mod (n_bg · n_banks), K row
 *             2·(c / (n_bg · n_banks)), V the next row: two activations per token.
 * Issue (in index order, p_iss tokens per token time t_tok = bursts · nBL) and policies
 * follow hbm_pc, with occupancy counted in tokens in flight (issued, data not yet back):
 *   inorder D_f: a token issues when its PC holds fewer than D_f tokens in flight (a full
 *                FIFO stops issue); each PC serves its FIFO first come first served.
 *   window W   : a token issues when fewer than W tokens are in flight; each PC serves its
 *                queue first-ready first-come-first-served (FR-FCFS: the oldest token whose
 *                rows are open, else the oldest).
 *   batch      : p_iss tokens at a time; the next batch issues when the last one is back.
 * A PC picks its next token when its previous token's last read issued; the picked token's
 * PRE/ACT may start as early as its arrival + n_ctrl (the controller looks ahead into its
 * queue), in pick order on the PC's row command bus. A token leaves the in-flight count at
 * its first read command (occupancy request, default: a controller read buffer of D_f x 8
 * request slots per PC whose entries leave as their commands issue, the semantics of
 * Ramulator 2's read_buffer_size, measured in docs/models.md "HBM timing mode"), at its last
 * read command (occupancy command) or when its data is back (occupancy data: a front end
 * that counts tokens until their data returns). Refresh: a command that falls
 * in [m·tREFI, m·tREFI + tRFC) (m >= 1, absolute time t0 + t) moves to the window's end and rows
 * opened before the refresh are closed after it; per-bank refresh does the same for the
 * commands of the refreshing bank only, and FR-FCFS then passes over tokens whose banks
 * are refreshing.
 *
 * Nothing here allocates except hbm_timing_work_reserve; nothing prints.
 */
#ifndef ACCELTRACE_HBM_TIMING_H
#define ACCELTRACE_HBM_TIMING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "replay/hbm_pc.h"

#define HBM_TIMING_MAX_BANKS 64 /* bank groups x banks per PC */

enum hbm_timing_layout {
    HBM_TIMING_KV_BG = 0,     /* K | V across two bank groups (default) */
    HBM_TIMING_ONE_BG = 1,    /* K | V in one bank group, two banks */
    HBM_TIMING_SAME_BANK = 2, /* K and V arrays in one bank, two rows */
};

/* "kv_bg" | "one_bg" | "same_bank" -> layout; 0 or ERR_USAGE. */
int hbm_timing_layout_parse(const char *s, enum hbm_timing_layout *out);
const char *hbm_timing_layout_name(enum hbm_timing_layout l);

/* DRAM timing of one pseudo-channel; every n* field in cycles of tck_ns. Presets and the
 * source of every value: docs/models.md#hbm-timing-mode ("Presets"). */
struct hbm_timing_params {
    char name[16];
    double tck_ns;          /* clock period */
    double gbps;            /* data rate per DQ pin, Gb/s */
    uint32_t dq_bits;       /* DQ width of a PC */
    uint32_t pcs_per_stack; /* pseudo-channels of one stack */
    uint32_t n_sid;         /* stack IDs per PC (8-high HBM3: 2); each has n_bg x n_banks */
    uint32_t n_bg, n_banks; /* bank groups per SID, banks per group */
    uint32_t page_bytes;    /* row (page) size per PC */
    uint32_t burst_bytes;   /* bytes of one read (bus width x burst length) */
    uint32_t nBL;           /* data-bus cycles of one read */
    uint32_t nCCDS, nCCDL;  /* read to read, other / same bank group (same SID) */
    uint32_t nCCDR;         /* read to read, other SID */
    uint32_t nRCD, nCL, nRP, nRAS, nRC;
    uint32_t nRRD, nRRDL; /* ACT to ACT, any bank / same bank group */
    uint32_t nFAW;
    uint32_t nRTP;            /* read to PRE of its bank */
    uint32_t nRFC, nREFI;     /* all-bank refresh: busy nRFC every nREFI */
    uint32_t nRFCpb, nREFIpb; /* per-bank refresh (0: the part has none): one bank busy nRFCpb,
                               * the next bank nREFIpb later */
    uint32_t n_ctrl;          /* controller latency before the first command */
};

/* Preset by name ("hbm2", "hbm3", "hbm3e"; values and sources in the .c file and
 * docs/models.md). 0 or ERR_USAGE for an unknown name. */
int hbm_timing_preset(const char *name, struct hbm_timing_params *out);
/* Names of the presets, NULL-terminated. */
const char *const *hbm_timing_preset_names(void);
/* Banks of one PC: n_sid x n_bg x n_banks. */
uint32_t hbm_timing_banks(const struct hbm_timing_params *t);
/* Peak read bandwidth of one PC, GB/s: dq_bits x gbps / 8. */
double hbm_timing_pc_peak_gbs(const struct hbm_timing_params *t);

/* When a token stops counting against D_f / W. */
enum hbm_timing_occupancy {
    HBM_TIMING_OCC_DATA = 0,    /* until its data is back */
    HBM_TIMING_OCC_COMMAND = 1, /* until its last read command issued */
    HBM_TIMING_OCC_REQUEST = 2, /* until its first read command issued (default) */
};

/* "data" | "command" | "request" -> occupancy; 0 or ERR_USAGE. */
int hbm_timing_occupancy_parse(const char *s, enum hbm_timing_occupancy *out);
const char *hbm_timing_occupancy_name(enum hbm_timing_occupancy o);

/* A timing configuration: device timing, layout, token size and refresh. */
struct hbm_timing_cfg {
    struct hbm_timing_params t;
    enum hbm_timing_layout layout;
    uint32_t token_bytes; /* bytes per token per PC, K half then V half (256) */
    bool refresh;         /* model refresh (all-bank, or per-bank with per_bank) */
    bool per_bank;        /* per-bank refresh (REFpb, nRFCpb every nREFIpb) instead of
                           * all-bank; needs a preset with nREFIpb > 0 */
    enum hbm_timing_occupancy occupancy;
};

/* Defaults: preset hbm2, layout kv_bg, 256 B per token, refresh on, occupancy request. */
void hbm_timing_cfg_default(struct hbm_timing_cfg *c);

/* Checks a configuration (even bank groups and banks, token halves a whole number of
 * bursts that divide a page, ...). 0 or ERR_CONFIG with e set (e may be NULL). */
int hbm_timing_check(const struct hbm_timing_cfg *c, struct errmsg *e);

/* t_tok = bursts per token x nBL: the data-bus cycles of one token on its PC. */
uint64_t hbm_timing_token_cycles(const struct hbm_timing_cfg *c);
/* ceil(n/h_att) x t_tok: the zero-latency time of a perfectly spread job. */
uint64_t hbm_timing_ideal(const struct hbm_timing_cfg *c, size_t n, uint32_t h_att);

/*
 * Where the K (half 0) or V (half 1) part of position j of a PC lies under c's layout:
 * bank id (bank group x n_banks + bank), row, and the column of its first burst (in bursts
 * of burst_bytes from the row's start; the half's bursts follow at col + 1, ...). c checked.
 */
void hbm_timing_place(const struct hbm_timing_cfg *c, uint64_t j, uint32_t half, uint32_t *bank,
                      int64_t *row, uint32_t *col);

/* Scratch state of a simulation, reused across jobs. Zero-init, then reserve. */
struct hbm_timing_work {
    size_t cap;               /* tokens the per-token arrays hold */
    uint32_t pcs;             /* PCs the per-PC state holds */
    uint32_t *next;           /* per token: next pending token of its PC (list links) */
    uint32_t *prev;           /* per token: previous pending token of its PC */
    int64_t *arr;             /* per token: issue (arrival) cycle */
    uint64_t *heap;           /* completion events (cycle << 10 | pc), cap entries */
    struct hbm_timing_pc *pc; /* per-PC state (opaque; pcs entries) */
};

/* Ensures room for n tokens over h_att PCs; 0 or ERR_NOMEM. */
int hbm_timing_work_reserve(struct hbm_timing_work *w, size_t n, uint32_t h_att);
void hbm_timing_work_release(struct hbm_timing_work *w);

/* Result of one job. Row accesses count the K and the V half of every token apart. */
struct hbm_timing_result {
    uint64_t cycles;     /* last data back, from the job's start (all banks closed) */
    uint64_t row_hits;   /* halves whose row was open */
    uint64_t row_misses; /* halves that needed an ACT (closed bank or another row open) */
};

/*
 * Replays one job: tokens idx[0..n) (ascending, as selected) on PCs pc[0..n) (< h_att,
 * from hbm_pc_map_indices) under pol (p_iss >= 1, depth >= 1, window >= 1), starting at
 * absolute cycle t0 (the refresh phase). w reserved for (n, h_att); c checked. Fills *r.
 */
void hbm_timing_run(const struct hbm_timing_cfg *c, const struct hbm_pc_policy_cfg *pol,
                    const uint32_t *idx, const uint16_t *pc, size_t n, uint32_t h_att, uint64_t t0,
                    struct hbm_timing_work *w, struct hbm_timing_result *r);

#endif
