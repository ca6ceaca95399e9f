/*
 * hbm_pc: pseudo-channel mapping and issue policies of Salca's attention gathers
 * (docs/salca.md#conflict-analyzer; docs/models.md#salca-replay).
 */
#include "replay/hbm_pc.h"

#include <string.h>

#include "common/mem.h"
#include "common/rng.h"

int hbm_pc_map_parse(const char *s, enum hbm_pc_map *out)
{
    if (!s)
        return ERR_USAGE;
    if (!strcmp(s, "mod"))
        *out = HBM_PC_MAP_MOD;
    else if (!strcmp(s, "xor"))
        *out = HBM_PC_MAP_XOR;
    else if (!strcmp(s, "hash"))
        *out = HBM_PC_MAP_HASH;
    else
        return ERR_USAGE;
    return 0;
}

const char *hbm_pc_map_name(enum hbm_pc_map m)
{
    switch (m) {
    case HBM_PC_MAP_MOD:
        return "mod";
    case HBM_PC_MAP_XOR:
        return "xor";
    case HBM_PC_MAP_HASH:
        return "hash";
    }
    return "unknown";
}

int hbm_pc_policy_parse(const char *s, enum hbm_pc_policy *out)
{
    if (!s)
        return ERR_USAGE;
    if (!strcmp(s, "batch"))
        *out = HBM_PC_BATCH;
    else if (!strcmp(s, "inorder"))
        *out = HBM_PC_INORDER;
    else if (!strcmp(s, "window"))
        *out = HBM_PC_WINDOW;
    else
        return ERR_USAGE;
    return 0;
}

const char *hbm_pc_policy_name(enum hbm_pc_policy p)
{
    switch (p) {
    case HBM_PC_BATCH:
        return "batch";
    case HBM_PC_INORDER:
        return "inorder";
    case HBM_PC_WINDOW:
        return "window";
    }
    return "unknown";
}

int hbm_pc_mapping_check(const struct hbm_pc_mapping *m, struct errmsg *e)
{
    if (m->h_att < 1 || m->h_att > HBM_PC_MAX_PCS)
        return errmsg_set(e, ERR_CONFIG, "h_att %u outside [1, %d]", m->h_att, HBM_PC_MAX_PCS);
    if (m->map == HBM_PC_MAP_XOR && (m->h_att & (m->h_att - 1)))
        return errmsg_set(e, ERR_CONFIG, "map 'xor' needs h_att a power of two, not %u", m->h_att);
    if (m->map != HBM_PC_MAP_MOD && m->map != HBM_PC_MAP_XOR && m->map != HBM_PC_MAP_HASH)
        return errmsg_set(e, ERR_CONFIG, "unknown pseudo-channel map %d", (int)m->map);
    return 0;
}

/* seed_h = splitmix64(seed ^ (l << 16) ^ h) [docs/salca.md#conflict-analyzer]. */
static uint64_t job_seed(const struct hbm_pc_mapping *m, uint32_t l, uint32_t h)
{
    return rng_mix64(m->seed ^ ((uint64_t)l << 16) ^ (uint64_t)h);
}

uint32_t hbm_pc_of(const struct hbm_pc_mapping *m, uint32_t l, uint32_t h, uint64_t i)
{
    uint64_t ha = m->h_att;
    switch (m->map) {
    case HBM_PC_MAP_MOD:
        return (uint32_t)(i % ha);
    case HBM_PC_MAP_XOR:
        return (uint32_t)((i % ha) ^ ((i / ha) % ha) ^ (h % ha));
    case HBM_PC_MAP_HASH:
        return (uint32_t)(rng_mix64(i ^ job_seed(m, l, h)) % ha);
    }
    return 0;
}

void hbm_pc_map_indices(const struct hbm_pc_mapping *m, uint32_t l, uint32_t h, const uint32_t *idx,
                        size_t n, uint16_t *pc)
{
    uint64_t ha = m->h_att;
    switch (m->map) {
    case HBM_PC_MAP_MOD:
        if ((ha & (ha - 1)) == 0) {
            for (size_t k = 0; k < n; k++)
                pc[k] = (uint16_t)(idx[k] & (ha - 1));
        } else {
            for (size_t k = 0; k < n; k++)
                pc[k] = (uint16_t)(idx[k] % ha);
        }
        return;
    case HBM_PC_MAP_XOR: {
        uint64_t hm = h % ha;
        for (size_t k = 0; k < n; k++)
            pc[k] = (uint16_t)((idx[k] % ha) ^ ((idx[k] / ha) % ha) ^ hm);
        return;
    }
    case HBM_PC_MAP_HASH: {
        uint64_t s = job_seed(m, l, h);
        for (size_t k = 0; k < n; k++)
            pc[k] = (uint16_t)(rng_mix64((uint64_t)idx[k] ^ s) % ha);
        return;
    }
    }
}

int hbm_pc_work_reserve(struct hbm_pc_work *w, size_t n)
{
    if (n <= w->cap)
        return 0;
    size_t cap = w->cap ? w->cap : 1024;
    while (cap < n) {
        if (!mem_mul(cap, 2, &cap))
            return ERR_NOMEM;
    }
    size_t bytes;
    if (!mem_mul(cap, sizeof *w->next_same, &bytes))
        return ERR_NOMEM;
    uint32_t *p = mem_realloc(w->next_same, bytes);
    if (!p)
        return ERR_NOMEM;
    w->next_same = p;
    w->cap = cap;
    return 0;
}

void hbm_pc_work_release(struct hbm_pc_work *w)
{
    mem_free(w->next_same);
    w->next_same = NULL;
    w->cap = 0;
}

uint64_t hbm_pc_ideal(size_t n, uint32_t h_att)
{
    /* ceil(N_sel/h_att) [docs/salca.md#conflict-analyzer] */
    return ((uint64_t)n + h_att - 1) / h_att;
}

uint64_t hbm_pc_max_load(const uint16_t *pc, size_t n, uint32_t h_att)
{
    uint32_t cnt[HBM_PC_MAX_PCS];
    memset(cnt, 0, sizeof cnt[0] * h_att);
    uint32_t mx = 0;
    for (size_t k = 0; k < n; k++) {
        uint32_t c = ++cnt[pc[k]];
        if (c > mx)
            mx = c;
    }
    return mx;
}

static inline void occ_add(uint64_t *occ, size_t bins, uint64_t v, uint64_t times)
{
    occ[v < bins - 1 ? v : bins - 1] += times;
}

uint64_t hbm_pc_batch(const uint16_t *pc, size_t n, uint32_t h_att, uint32_t p_iss,
                      struct hbm_pc_work *w, uint64_t *occ, size_t occ_bins, uint64_t *conf)
{
    uint64_t slots = 0;
    memset(w->cnt, 0, sizeof w->cnt[0] * h_att);
    for (size_t c = 0; c < n; c += p_iss) {
        size_t len = n - c < p_iss ? n - c : p_iss;
        uint32_t distinct = 0, mx = 0;
        for (size_t k = c; k < c + len; k++) {
            uint32_t p = pc[k];
            if (w->cnt[p]++ == 0)
                w->cand[distinct++] = p;
            if (w->cnt[p] > mx)
                mx = w->cnt[p];
        }
        /* a batch lasts as long as its most loaded PC [docs/salca.md#conflict-analyzer] */
        slots += mx;
        if (conf)
            conf[len - distinct]++;
        if (occ) {
            /* Slot s of the batch: PC p still holds max(0, load_p - s). */
            occ_add(occ, occ_bins, 0, (uint64_t)mx * (h_att - distinct));
            for (uint32_t d = 0; d < distinct; d++) {
                uint32_t load = w->cnt[w->cand[d]];
                for (uint32_t v = 1; v <= load; v++)
                    occ_add(occ, occ_bins, v, 1);
                occ_add(occ, occ_bins, 0, mx - load);
            }
        }
        for (uint32_t d = 0; d < distinct; d++)
            w->cnt[w->cand[d]] = 0;
    }
    return slots;
}

void hbm_pc_batch_conflicts(const uint16_t *pc, size_t n, uint32_t h_att, uint32_t p_iss,
                            struct hbm_pc_work *w, uint64_t *conf)
{
    memset(w->cnt, 0, sizeof w->cnt[0] * h_att);
    for (size_t c = 0; c < n; c += p_iss) {
        size_t len = n - c < p_iss ? n - c : p_iss;
        uint32_t distinct = 0;
        for (size_t k = c; k < c + len; k++) {
            uint32_t p = pc[k];
            if (w->cnt[p]++ == 0)
                w->cand[distinct++] = p;
        }
        conf[len - distinct]++;
        for (uint32_t d = 0; d < distinct; d++)
            w->cnt[w->cand[d]] = 0;
    }
}

uint64_t hbm_pc_inorder(const uint16_t *pc, size_t n, uint32_t h_att, uint32_t p_iss,
                        uint32_t depth, struct hbm_pc_work *w, uint64_t *occ, size_t occ_bins)
{
    uint64_t slots = 0;
    size_t nxt = 0, inflight = 0;
    memset(w->cnt, 0, sizeof w->cnt[0] * h_att);
    while (nxt < n || inflight > 0) {
        slots++;
        /* Issue in order; a full FIFO stops issue for this slot [docs/salca.md#conflict-analyzer].
         */
        for (uint32_t k = 0; k < p_iss && nxt < n; k++) {
            uint32_t p = pc[nxt];
            if (w->cnt[p] >= depth)
                break;
            w->cnt[p]++;
            inflight++;
            nxt++;
        }
        if (occ)
            for (uint32_t p = 0; p < h_att; p++)
                occ_add(occ, occ_bins, w->cnt[p], 1);
        /* Every non-empty FIFO retires one request. */
        for (uint32_t p = 0; p < h_att; p++)
            if (w->cnt[p]) {
                w->cnt[p]--;
                inflight--;
            }
    }
    return slots;
}

uint64_t hbm_pc_window(const uint16_t *pc, size_t n, uint32_t h_att, uint32_t p_iss,
                       uint32_t window, struct hbm_pc_work *w, uint64_t *occ, size_t occ_bins)
{
    if (n == 0)
        return 0;
    /* Per PC, requests are served in index order (the window is a prefix of the unserved
     * requests, so a PC's oldest windowed request is its oldest unserved one): link each
     * request to the next one on its PC. */
    uint32_t *next_same = w->next_same;
    for (uint32_t p = 0; p < h_att; p++) {
        w->last[p] = (uint32_t)n;
        w->cnt[p] = 0;
    }
    for (size_t k = n; k-- > 0;) {
        next_same[k] = w->last[pc[k]];
        w->last[pc[k]] = (uint32_t)k;
    }
    for (uint32_t p = 0; p < h_att; p++)
        w->head[p] = w->last[p];
    size_t nxt = 0, inwin = 0;
    uint64_t slots = 0;
    while (inwin < window && nxt < n) {
        w->cnt[pc[nxt++]]++;
        inwin++;
    }
    while (inwin > 0) {
        slots++;
        uint32_t nc = 0;
        for (uint32_t p = 0; p < h_att; p++) {
            if (occ)
                occ_add(occ, occ_bins, w->cnt[p], 1);
            if (w->cnt[p])
                w->cand[nc++] = p;
        }
        if (nc > p_iss) {
            /* Oldest heads first: insertion sort of the candidates by head index. */
            for (uint32_t a = 1; a < nc; a++) {
                uint32_t p = w->cand[a], hp = w->head[p], b = a;
                while (b > 0 && w->head[w->cand[b - 1]] > hp) {
                    w->cand[b] = w->cand[b - 1];
                    b--;
                }
                w->cand[b] = p;
            }
            nc = p_iss;
        }
        for (uint32_t a = 0; a < nc; a++) {
            uint32_t p = w->cand[a];
            w->head[p] = next_same[w->head[p]];
            w->cnt[p]--;
        }
        inwin -= nc;
        while (inwin < window && nxt < n) {
            w->cnt[pc[nxt++]]++;
            inwin++;
        }
    }
    return slots;
}

uint64_t hbm_pc_slots(const struct hbm_pc_policy_cfg *cfg, const uint16_t *pc, size_t n,
                      uint32_t h_att, struct hbm_pc_work *w, uint64_t *occ, size_t occ_bins)
{
    switch (cfg->policy) {
    case HBM_PC_BATCH:
        return hbm_pc_batch(pc, n, h_att, cfg->p_iss, w, occ, occ_bins, NULL);
    case HBM_PC_INORDER:
        return hbm_pc_inorder(pc, n, h_att, cfg->p_iss, cfg->depth, w, occ, occ_bins);
    case HBM_PC_WINDOW:
        return hbm_pc_window(pc, n, h_att, cfg->p_iss, cfg->window, w, occ, occ_bins);
    }
    return 0;
}
