/*
 * hbm_pc: the HBM pseudo-channel (PC) mapping of Salca's K/V gathers and the issue
 * policies that turn one job's selected tokens into PC service slots
 * (docs/salca.md#conflict-analyzer; the resulting alpha is the paper's conflict factor in T_att).
 *
 * A job is one (step, layer, query head) selection: ascending token indices i. Each token's
 * K/V pair lives on one of h_att attention PCs (att_base + map(i)); a PC serves one token
 * per slot. Mappings:
 *   mod  : i mod h_att
 *   xor  : (i mod h_att) ^ (floor(i/h_att) mod h_att) ^ (h mod h_att)   (h_att a power of 2)
 *   hash : splitmix64(i ^ seed_h) mod h_att, seed_h = splitmix64(seed ^ (l << 16) ^ h)
 * Policies, with issue width p_iss requests per slot:
 *   batch   : batches of p_iss requests in index order; a batch lasts as many slots as its
 *             most loaded PC; the next batch waits.
 *   inorder : per slot, issue up to p_iss requests in order; a request enters its PC's FIFO
 *             when that holds fewer than depth, else issue stops for the slot; then every
 *             non-empty FIFO retires one.
 *   window  : per slot, among the oldest W unserved requests every PC retires its oldest,
 *             at most p_iss per slot (oldest first); the window then refills in order.
 * Every simulation is exact and O(n + slots·h_att). PCs here are relative to att_base
 * (0..h_att-1); att_base only shifts PC numbers in reports.
 *
 * Occupancy histograms count, for every slot and every PC, the requests issued to (inorder:
 * after the slot's issue, before its retire; batch: of the current batch) or windowed at
 * (window: after the refill) the PC and not yet served; bin k counts samples of occupancy
 * k, the last bin everything >= its index.
 *
 * Nothing here allocates except hbm_pc_work_reserve; nothing prints.
 */
#ifndef ACCELTRACE_HBM_PC_H
#define ACCELTRACE_HBM_PC_H

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

#define HBM_PC_MAX_PCS 1024

enum hbm_pc_map { HBM_PC_MAP_MOD = 0, HBM_PC_MAP_XOR = 1, HBM_PC_MAP_HASH = 2 };
enum hbm_pc_policy { HBM_PC_BATCH = 0, HBM_PC_INORDER = 1, HBM_PC_WINDOW = 2 };

/* "mod" | "xor" | "hash" -> map; 0 or ERR_USAGE. */
int hbm_pc_map_parse(const char *s, enum hbm_pc_map *out);
const char *hbm_pc_map_name(enum hbm_pc_map m);
/* "batch" | "inorder" | "window" -> policy; 0 or ERR_USAGE. */
int hbm_pc_policy_parse(const char *s, enum hbm_pc_policy *out);
const char *hbm_pc_policy_name(enum hbm_pc_policy p);

/* A mapping: kind, h_att PCs (1..HBM_PC_MAX_PCS) and the hash seed. */
struct hbm_pc_mapping {
    enum hbm_pc_map map;
    uint32_t h_att;
    uint64_t seed;
};

/*
 * Checks a mapping: h_att in [1, HBM_PC_MAX_PCS], xor needs a power of two.
 * 0 or ERR_CONFIG with e set.
 */
int hbm_pc_mapping_check(const struct hbm_pc_mapping *m, struct errmsg *e);

/* PC (0..h_att-1, relative to att_base) of token i of job (l, h). */
uint32_t hbm_pc_of(const struct hbm_pc_mapping *m, uint32_t l, uint32_t h, uint64_t i);

/* Maps idx[0..n) of job (l, h) to pc[0..n). */
void hbm_pc_map_indices(const struct hbm_pc_mapping *m, uint32_t l, uint32_t h, const uint32_t *idx,
                        size_t n, uint16_t *pc);

/* Scratch memory of the simulations, reused across jobs. Zero-init, then reserve. */
struct hbm_pc_work {
    uint32_t *next_same;           /* per request: next request on the same PC (or n) */
    size_t cap;                    /* requests next_same holds */
    uint32_t head[HBM_PC_MAX_PCS]; /* per PC: oldest unserved request */
    uint32_t cnt[HBM_PC_MAX_PCS];  /* per PC: occupancy */
    uint32_t last[HBM_PC_MAX_PCS]; /* per PC: scratch */
    uint32_t cand[HBM_PC_MAX_PCS]; /* candidate PCs of a slot */
};

/* Ensures room for n requests; 0 or ERR_NOMEM. */
int hbm_pc_work_reserve(struct hbm_pc_work *w, size_t n);
void hbm_pc_work_release(struct hbm_pc_work *w);

/* Per-PC loads: the largest number of requests on one PC (the ideal of any policy with
 * unbounded look-ahead and p_iss >= h_att). */
uint64_t hbm_pc_max_load(const uint16_t *pc, size_t n, uint32_t h_att);

/* ceil(n/h_att): the slots a perfectly spread job needs (docs/salca.md#conflict-analyzer "ideal").
 */
uint64_t hbm_pc_ideal(size_t n, uint32_t h_att);

/*
 * Slot counts of one job under each policy. occ (may be NULL) is an occupancy histogram of
 * occ_bins >= 2 bins that the call adds to. For batch, conf (may be NULL) is a histogram of
 * p_iss bins: conflicts per batch (requests whose PC already occurs earlier in the batch).
 * p_iss >= 1, depth >= 1, window >= 1; pc values < h_att; w reserved for n.
 */
uint64_t hbm_pc_batch(const uint16_t *pc, size_t n, uint32_t h_att, uint32_t p_iss,
                      struct hbm_pc_work *w, uint64_t *occ, size_t occ_bins, uint64_t *conf);
uint64_t hbm_pc_inorder(const uint16_t *pc, size_t n, uint32_t h_att, uint32_t p_iss,
                        uint32_t depth, struct hbm_pc_work *w, uint64_t *occ, size_t occ_bins);
uint64_t hbm_pc_window(const uint16_t *pc, size_t n, uint32_t h_att, uint32_t p_iss,
                       uint32_t window, struct hbm_pc_work *w, uint64_t *occ, size_t occ_bins);

/* Conflicts per batch of p_iss requests in index order, added to conf[0..p_iss) (the
 * mapping's own statistic, independent of the policy). */
void hbm_pc_batch_conflicts(const uint16_t *pc, size_t n, uint32_t h_att, uint32_t p_iss,
                            struct hbm_pc_work *w, uint64_t *conf);

/* One policy with its parameters. */
struct hbm_pc_policy_cfg {
    enum hbm_pc_policy policy;
    uint32_t p_iss;  /* requests issued per slot (default h_att) */
    uint32_t depth;  /* inorder FIFO depth D_f (default 1) */
    uint32_t window; /* window size W (default 128) */
};

/* Slots of one job under cfg (dispatches to the functions above). */
uint64_t hbm_pc_slots(const struct hbm_pc_policy_cfg *cfg, const uint16_t *pc, size_t n,
                      uint32_t h_att, struct hbm_pc_work *w, uint64_t *occ, size_t occ_bins);

#endif
