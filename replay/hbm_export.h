/*
 * hbm_export: Salca's K/V gather streams as request traces for cycle-level DRAM simulators
 * (docs/models.md "HBM timing mode"), so that the timing mode
 * (replay/hbm_timing) can be checked against Ramulator 2 and DRAMsim3 on any selection.
 *
 * A job (layer l, head h, ascending token indices) becomes, token by token in index order,
 * the reads the timing mode issues for it: token i lies on PC p = hbm_pc_of(map, l, h, i) at
 * position j = i / h_att; its K and V halves are placed by hbm_timing_place; each half is
 * half / burst_bytes reads of burst_bytes at consecutive columns. Order of a token's reads
 * as hbm_timing serves them: K0 V0 K1 V1 ... when K and V are in two banks (kv_bg, one_bg),
 * K0 K1 ... V0 V1 ... when they share one (same_bank).
 *
 * Physical address of one read, from bit 0 up (widths for the default hbm2 preset, 256 B
 * tokens, h_att 16 in brackets):
 *   byte within the burst  log2(burst_bytes)        [5]   always 0
 *   column (burst index)   log2(page/burst_bytes)   [5]
 *   pseudo-channel p       log2(h_att)              [4]
 *   stack ID (SID)         log2(n_sid)              [0; 1 for hbm3 and hbm3e]
 *   bank group in the SID  log2(n_bg)               [2]
 *   bank in the group      log2(n_banks)            [2]
 *   row                    the remaining bits
 * Ramulator 2 (its HBM2 standard for hbm2, HBM3 for hbm3 and hbm3e; h_att/2 channels of 2
 * PCs, CacheLineInterleave with interleave_bits = column bits, RoBaRaCoCh) decodes this as
 * channel = p mod (h_att/2), pseudo-channel = p / (h_att/2), then SID (HBM3), bank group,
 * bank, row; DRAMsim3 with h_att channels of dq_bits and address_mapping robabgrachco
 * decodes channel = p (SIDs as further bank groups: DRAMsim3 has no SID). Every field width
 * must be a power of two (h_att >= 2, n_sid, n_bg, n_banks, page/burst, burst).
 *
 * Line formats (one read per line, no header: both readers take every line as a request):
 *   ramulator : "LD 0x<hex address>"                (Ramulator 2 LoadStoreTrace)
 *   dramsim3  : "0x<hex address> READ <cycle>"      (DRAMsim3 trace CPU)
 * The DRAMsim3 cycle is the issue cycle of the token in an ideal front end that issues p_iss
 * tokens per t_tok DRAM cycles, counting tokens over all jobs exported so far:
 * cycle = floor(k · t_tok / p_iss) for the k-th token (k from 0).
 *
 * The writer appends to a caller-owned struct sink (common/io.h) through its own buffer;
 * hbm_export_finish flushes. Nothing prints.
 */
#ifndef ACCELTRACE_HBM_EXPORT_H
#define ACCELTRACE_HBM_EXPORT_H

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "common/io.h"
#include "replay/hbm_pc.h"
#include "replay/hbm_timing.h"

enum hbm_export_format { HBM_EXPORT_RAMULATOR = 0, HBM_EXPORT_DRAMSIM3 = 1 };

/* "ramulator" | "dramsim3" -> format; 0 or ERR_USAGE. */
int hbm_export_format_parse(const char *s, enum hbm_export_format *out);
const char *hbm_export_format_name(enum hbm_export_format f);

/* Field widths of the address bit map above, in bits. */
struct hbm_export_map {
    uint32_t off_bits; /* byte within a burst */
    uint32_t col_bits; /* burst column within a page */
    uint32_t pc_bits;  /* pseudo-channel */
    uint32_t sid_bits; /* stack ID (0 for one SID) */
    uint32_t bg_bits;  /* bank group */
    uint32_t ba_bits;  /* bank within the group */
};

/*
 * The bit map of timing configuration c (checked) over h_att PCs. 0, or ERR_CONFIG with e
 * set (e may be NULL) when a field is not a power of two or h_att < 2.
 */
int hbm_export_map_init(struct hbm_export_map *m, const struct hbm_timing_cfg *c, uint32_t h_att,
                        struct errmsg *e);

/* Address of the read of column col of (row, bank id = bg · n_banks + bank) on PC pc. */
uint64_t hbm_export_addr(const struct hbm_export_map *m, uint32_t pc, uint32_t bank_id,
                         uint64_t row, uint32_t col);

/* Inverse of hbm_export_addr: the fields of addr (bank group and bank apart; *bg is the
 * bank group over all SIDs, sid x n_bg + group, as in the bank id). */
void hbm_export_decode(const struct hbm_export_map *m, uint64_t addr, uint32_t *pc, uint32_t *bg,
                       uint32_t *bank, uint64_t *row, uint32_t *col);

struct hbm_export;

/*
 * A writer of format f to sink k (not owned; the caller opens and closes it) for timing
 * configuration c and PC mapping pm (both checked and copied), p_iss tokens per t_tok.
 * 0 with *out set (free with hbm_export_free), ERR_CONFIG (bit map, e set) or ERR_NOMEM.
 */
int hbm_export_new(struct hbm_export **out, struct sink *k, enum hbm_export_format f,
                   const struct hbm_timing_cfg *c, const struct hbm_pc_mapping *pm, uint32_t p_iss,
                   struct errmsg *e);

/* Appends the reads of job (l, h): idx[0..n) ascending. 0 or ERR_IO. */
int hbm_export_job(struct hbm_export *x, uint32_t l, uint32_t h, const uint32_t *idx, size_t n);

/* Reads (lines) and bytes written so far, buffered ones included. */
uint64_t hbm_export_requests(const struct hbm_export *x);
uint64_t hbm_export_bytes(const struct hbm_export *x);

/* Writes what is buffered to the sink; 0 or ERR_IO. The sink stays open. */
int hbm_export_finish(struct hbm_export *x);
/* Frees the writer (not the sink); NULL is a no-op. */
void hbm_export_free(struct hbm_export *x);

/*
 * A DRAMsim3 configuration (.ini) for c over h_att PCs: one DRAMsim3 channel per PC, the
 * preset's organization and timing (SIDs folded into bank groups), open page,
 * robabgrachco. 0 or ERR_IO / ERR_CONFIG.
 */
int hbm_export_dramsim3_ini(struct sink *k, const struct hbm_timing_cfg *c, uint32_t h_att);

/*
 * A Ramulator 2.1 Python configuration for c over pm (the README's, as a file that runs
 * against ramulator.trace in the same folder). 0 or ERR_IO / ERR_CONFIG.
 */
int hbm_export_ramulator_py(struct sink *k, const struct hbm_timing_cfg *c,
                            const struct hbm_pc_mapping *pm, uint32_t p_iss);

/*
 * A README (Markdown) for a folder of exported traces: the bit map with c's widths, how to
 * run each simulator on them and how to compare with hbm_time.csv. trace_names: the file
 * names written (NULL-terminated). 0 or ERR_IO.
 */
int hbm_export_readme(struct sink *k, const struct hbm_timing_cfg *c,
                      const struct hbm_pc_mapping *pm, uint32_t p_iss,
                      const char *const *trace_names);

#endif
