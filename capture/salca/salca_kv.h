/*
 * salca_kv: the KV cache of one (layer, KV head) with every copy the selection methods
 * read, and the per-job selection driver (docs/salca.md).
 *
 * A struct salca_kv holds, for up to `cap` tokens: FP32 K and V (post-RoPE keys), the INT8
 * K and V of docs/salca.md#int8-attention with their per-token scales, the Quest page min/max
 * (docs/salca.md#baselines) and, once salca_kv_finish_prefill has fixed the heavy channels I_g
 * (docs/salca.md#heavy-channels), the 2-bit key records of docs/salca.md#key-records (plus their
 * widened FP16 factors). Tokens appended after the prefill are encoded with the same I_g (never
 * recomputed, docs/salca.md#heavy-channels).
 *
 * salca_job runs Dense, Salca and the baselines for one query against one store and
 * computes the metrics of docs/salca.md#metrics. It allocates nothing: all arrays come from a
 * struct salca_scratch sized for the largest n. Thread safety: distinct scratches may run
 * jobs on the same store concurrently (the store is only read).
 */
#ifndef ACCELTRACE_SALCA_KV_H
#define ACCELTRACE_SALCA_KV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "capture/salca/salca_select.h"
#include "traces/trace_salca.h"

/* Method ids: the fixed ids of formats/salca_records.proto, as traces/trace_salca.h has them. */
enum salca_method {
    SALCA_M_SALCA = TRACE_SALCA_M_SALCA,
    SALCA_M_STD_TOPK = TRACE_SALCA_M_STD_TOPK,
    SALCA_M_PL_TOPK = TRACE_SALCA_M_PL_TOPK,
    SALCA_M_FULL_FEAT = TRACE_SALCA_M_FULL_FEAT,
    SALCA_M_QUEST = TRACE_SALCA_M_QUEST,
    SALCA_M_DENSE = TRACE_SALCA_M_DENSE,
    SALCA_M_COUNT = TRACE_SALCA_N_METHODS
};

/* Name of a method id ("salca", "std_topk", ...) or NULL: trace_salca_method_name's table. */
const char *salca_method_name(int m);
/* Id of a method name, or -1: trace_salca_method_id. */
int salca_method_id(const char *name);

/* Prefix ladder of the heavy-stability record [decision,
 * docs/models.md#heavy-channel-stability-and-overshoot]: the first SALCA_PREFIX_MIN keys, doubling
 * while below n0, then n0 itself. */
#define SALCA_PREFIX_MIN 64
#define SALCA_PREFIX_MAX 28 /* 64 * 2^25 is the last power below 2^32, plus n0 */

/*
 * Writes the ladder for n0 prefill tokens into lens (ascending: 64, 128, ... < n0, then
 * n0; just n0 when n0 <= 64; nothing when n0 = 0) and returns its length.
 */
uint32_t salca_prefix_ladder(uint32_t n0, uint32_t lens[SALCA_PREFIX_MAX]);

struct salca_kv {
    uint32_t d;         /* head dimension */
    uint32_t r;         /* heavy channels kept (s_f * d) */
    uint32_t cap;       /* token capacity */
    uint32_t n;         /* tokens held */
    uint32_t n0;        /* prefill tokens (set by finish_prefill) */
    uint32_t page;      /* Quest page size (tokens) */
    size_t rb;          /* bytes per key record */
    float *k, *v;       /* (cap, d) FP32 */
    int8_t *k8, *v8;    /* (cap, d) INT8 (docs/salca.md#int8-attention) */
    float *sk, *sv;     /* (cap) INT8 scales */
    float *pmin, *pmax; /* (cap/page + 1, d) Quest page key min/max */
    bool heavy_ready;   /* I_g fixed */
    uint8_t heavy[256]; /* I_g ascending (r entries) */
    double *chan_sum;   /* (d) S_j over the prefill keys */
    uint8_t *krec;      /* (cap, rb) 2-bit key records */
    float *ks, *kz;     /* (cap) record factors s, z widened to FP32 */
    /* Heavy-channel stability (docs/salca.md#figures plot 7): the top-r set of the first
     * prefix_len[a] prefill keys, for the ladder of salca_prefix_ladder(n0) (set by
     * finish_prefill). */
    uint32_t n_prefix;                           /* ladder entries */
    uint32_t prefix_len[SALCA_PREFIX_MAX];       /* m (tokens), ascending; last = n0 */
    uint8_t prefix_heavy[SALCA_PREFIX_MAX][256]; /* r indices ascending per entry */
};

/* Allocates a store for cap tokens. r <= d <= 256, page >= 1. 0, ERR_NOMEM or ERR_USAGE. */
int salca_kv_init(struct salca_kv *kv, uint32_t d, uint32_t r, uint32_t cap, uint32_t page);
/* Frees the store's arrays (tolerates a zeroed or half-built store). */
void salca_kv_release(struct salca_kv *kv);
/* Deep copy of src into dst (dst initialized here). 0 or ERR_NOMEM. */
int salca_kv_copy(struct salca_kv *dst, const struct salca_kv *src);
/* Bytes the store of cap tokens allocates (for the memory limit). */
uint64_t salca_kv_bytes(uint32_t d, uint32_t r, uint32_t cap, uint32_t page);

/* Appends one token's key and value (d floats each). ERR_LIMIT when full. */
int salca_kv_append(struct salca_kv *kv, const float *k, const float *v);

/*
 * End of prefill (docs/salca.md#heavy-channels): S_j = sum |K[i, j]| over the tokens held (in
 * double), I_g = the r largest (ties: lower j) stored ascending, and key records for all held
 * tokens. In the same pass over the keys it snapshots the running sums at every ladder length m and
 * keeps their top-r sets (prefix_len, prefix_heavy); the sums are accumulated in the same order, so
 * the entry m = n0 equals heavy.
 */
void salca_kv_finish_prefill(struct salca_kv *kv);

/* Heavy-channel selection alone: the r largest of sum[0..d) (ties: lower j), ascending. */
void salca_heavy_select(const double *sum, uint32_t d, uint32_t r, uint8_t *heavy);

/* K rule; its names are trace_salca_k_mode_name's ("fixed", "dynamic"). */
enum salca_k_mode { SALCA_K_FIXED = TRACE_SALCA_K_FIXED, SALCA_K_DYNAMIC = TRACE_SALCA_K_DYNAMIC };

struct salca_sel_params {
    uint32_t pool; /* max-pool width w (odd) */
    enum salca_k_mode k_mode;
    struct salca_ratio rho;   /* target retention */
    uint32_t k_min;           /* K floor */
    double p_mass;            /* dynamic K mass */
    enum salca_cmp cmp;       /* threshold comparison */
    bool attn_fp32;           /* attention on S in FP32 instead of INT8 */
    uint32_t quest_min_pages; /* Quest keeps at least this many pages (0) */
    bool quest_all;           /* Quest keeps every page (a dense layer, docs/salca.md#baselines) */
};

/* Result of one method in one job. */
struct salca_method_res {
    uint32_t K, T, count; /* target K, threshold bin, |S| */
    uint32_t runs;
    double recall, cosine, overlap;
    bool has_hist;
    uint32_t hist[256];
    uint32_t *idx; /* |S| ascending indices (points into the scratch) */
    float *o;      /* attention output, d floats (points into the scratch) */
};

/* Per-worker arrays sized for n_max tokens. */
struct salca_scratch {
    uint32_t n_max, d, r;
    uint32_t *vidx; /* (n_max) selection of an ablation variant */
    float *vo;      /* (d) its attention output */
    float *a, *s, *sp, *P, *tmp, *u;
    uint8_t *a8, *p8;
    uint32_t *work, *mark;
    uint32_t *idx[SALCA_M_COUNT];
    float *o[SALCA_M_COUNT];
    int32_t *lut;
    int8_t *qc, *q8;
};

int salca_scratch_init(struct salca_scratch *sc, uint32_t n_max, uint32_t d, uint32_t r,
                       uint32_t page);
void salca_scratch_release(struct salca_scratch *sc);

/*
 * Runs one job: query q (d floats, post-RoPE) against the store's n tokens, for every
 * method whose bit (1u << id) is in mask. Dense is always computed when `metrics` is true
 * (recall, cosine and overlap need it); Salca's K is computed in every case and used by
 * all methods (docs/salca.md#baselines). res[id] is filled for the methods run. The store must have
 * finished its prefill.
 */
void salca_job(const struct salca_kv *kv, const float *q, const struct salca_sel_params *p,
               uint32_t mask, bool metrics, struct salca_scratch *sc,
               struct salca_method_res res[SALCA_M_COUNT]);

/*
 * An ablation variant of Salca (docs/salca.md#baselines: w_k, w_q, s_f, w, rho), run with its own
 * method id. Keys are re-encoded from the FP32 cache with w_k-bit asymmetric codes (levels 0..2^w_k
 * - 1, s = fp16((max - min)/(2^w_k - 1))) over the variant's r heavy channels; the query uses
 * w_q-bit symmetric codes (levels +-(2^(w_q-1) - 1)) or FP32 (w_q = 0). With w_k 2, w_q 3
 * and r = d/2 the variant reproduces Salca bit for bit.
 */
struct salca_variant {
    uint32_t w_k;           /* key bits, 1..4 */
    uint32_t w_q;           /* query bits, 2..4; 0 = FP32 */
    uint32_t r;             /* heavy channels (s_f * d) */
    uint32_t pool;          /* max-pool width; 0 = the run's */
    struct salca_ratio rho; /* retention; num 0 = the run's */
};

/*
 * Runs variant v for query q on the store; heavy = the variant's r heavy channels
 * (salca_heavy_select on kv->chan_sum). With metrics, `dense` must be the Dense result of
 * salca_job on the same query and scratch just before (P, the Std_TopK marks and the dense
 * output are reused). out->idx and out->o point into the scratch (vidx, vo).
 */
void salca_variant_job(const struct salca_kv *kv, const uint8_t *heavy, const float *q,
                       const struct salca_variant *v, const struct salca_sel_params *p,
                       bool metrics, struct salca_scratch *sc, const struct salca_method_res *dense,
                       struct salca_method_res *out);

#endif
