/*
 * salca_select: the token-selection steps of Salca (docs/salca.md#selection), the exact
 * top-k and Quest baselines (section 6) and the per-job metrics (section 7).
 *
 * Every function works on caller-provided arrays; none allocates except where stated,
 * none prints. Index lists are ascending uint32 token indices. Bit-exact steps (INT8
 * scores, pooling, histogram, K rule, threshold, filter) are compiled without FP
 * contraction.
 */
#ifndef ACCELTRACE_SALCA_SELECT_H
#define ACCELTRACE_SALCA_SELECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A decimal parameter held as the exact ratio num/den (docs/salca.md#k-rule). */
struct salca_ratio {
    uint64_t num;
    uint64_t den;
};

/*
 * Parses a plain decimal ("0.05", "1", "0.125", ".5") into an exact ratio reduced to
 * lowest terms. Rejects signs, exponents, empty text and more than 18 digits: ERR_USAGE.
 */
int salca_ratio_parse(const char *s, struct salca_ratio *out);

/* ceil(rho * n) in u64 as (n*num + den - 1) div den (docs/salca.md#k-rule). */
uint64_t salca_ratio_ceil_mul(struct salca_ratio rho, uint64_t n);

/* Fixed K rule: min(n, max(k_min, ceil(rho*n))) (docs/salca.md#k-rule). */
uint32_t salca_k_fixed(uint32_t n, struct salca_ratio rho, uint32_t k_min);

/*
 * Dynamic K rule (docs/salca.md#k-rule): W_b = H[b] exp(kappa (b - 255)) accumulated from bin 255
 * down; K_dyn = sum_{c>=b} H[c] for the highest b whose running sum reaches p_mass * sum W; returns
 * min(n, max(k_min, K_dyn)).
 */
uint32_t salca_k_dynamic(const uint32_t hist[256], uint32_t n, double kappa, double p_mass,
                         uint32_t k_min);

/*
 * INT8 scores (docs/salca.md#int8-scores): lo, hi = min, max of a[0..n); out_i = floor((a_i -
 * lo)*255/(hi-lo)
 * + 0.5) in double; all 255 when hi = lo. *lo_out, *hi_out (may be NULL) receive lo, hi.
 */
void salca_int8_scores(const float *a, uint32_t n, uint8_t *out, float *lo_out, float *hi_out);

/* Max-pool, stride 1, width w odd (docs/salca.md#max-pooling): out_i = max a_u over |u - i| <= w/2.
 */
void salca_maxpool_u8(const uint8_t *a, uint32_t n, uint32_t w, uint8_t *out);
/* The same on FP32 scores (Pl_TopK, docs/salca.md#baselines). */
void salca_maxpool_f32(const float *a, uint32_t n, uint32_t w, float *out);

/* 256-bin histogram of p[0..n) (docs/salca.md#histogram). */
void salca_histogram(const uint8_t *p, uint32_t n, uint32_t hist[256]);

enum salca_cmp { SALCA_CMP_GE = 0, SALCA_CMP_GT = 1 };

/*
 * Threshold bin (docs/salca.md#threshold): ge: T = max{b : sum_{c>=b} H[c] >= K}; gt: the same with
 * > K, and T = 0 when n <= K. K >= 1.
 */
uint32_t salca_threshold(const uint32_t hist[256], uint32_t n, uint32_t K, enum salca_cmp cmp);

/* Filter (docs/salca.md#filter): writes {i : p_i >= T} ascending to idx; returns the count. */
uint32_t salca_filter(const uint8_t *p, uint32_t n, uint32_t T, uint32_t *idx);

/*
 * Exact top-K of s[0..n) (ties: lower index first), by nth_element-style selection over
 * an index permutation; idx receives the K indices ascending. work holds n uint32.
 * Returns min(K, n).
 */
uint32_t salca_topk(const float *s, uint32_t n, uint32_t K, uint32_t *idx, uint32_t *work);

/*
 * The same result by sorting all n indices with qsort (the reference the benchmark
 * compares against). work holds n uint32.
 */
uint32_t salca_topk_qsort(const float *s, uint32_t n, uint32_t K, uint32_t *idx, uint32_t *work);

/* FP32 dot product of q and k (d entries): four partial sums over j mod 4, combined as
 * (s0 + s1) + (s2 + s3); a fixed order, so results never depend on the run. */
float salca_dot(const float *q, const float *k, uint32_t d);

/*
 * Quest upper bounds (docs/salca.md#baselines): for each page p, U_p = sum_j max(q_j M_pj, q_j
 * m_pj) with pmin/pmax [pages][d].
 */
void salca_quest_bounds(const float *q, const float *pmin, const float *pmax, uint32_t pages,
                        uint32_t d, float *u);

/*
 * Quest selection: the ceil(K/page) pages of largest bound (ties: lower page), expanded to
 * their tokens (last page may be partial: n tokens in all). idx receives the tokens
 * ascending; work holds 2*pages uint32. Returns |S|.
 */
uint32_t salca_quest_select(const float *u, uint32_t pages, uint32_t page, uint32_t n, uint32_t K,
                            uint32_t *idx, uint32_t *work);

/*
 * Softmax in FP32 of logits[0..m) in place (max subtracted, sum in double, divided in
 * FP32). Returns nothing; an empty input is a no-op.
 */
void salca_softmax(float *x, uint32_t m);

/*
 * INT8 attention on S (docs/salca.md#int8-attention): logit_i = sq*sk_i*(q8 . k8_i)/sqrt(d) (int32
 * dot), FP32 softmax over S, o = sum P_i sv_i v8_i. k8/v8 are [n][d] rows, sk/sv their scales.
 * scratch holds m floats. o receives d floats (0 when m = 0).
 */
void salca_attend_int8(const int8_t *q8, float sq, const int8_t *k8, const float *sk,
                       const int8_t *v8, const float *sv, uint32_t d, const uint32_t *S, uint32_t m,
                       float *o, float *scratch);

/*
 * FP32 attention on S: logits q.k_i/sqrt(d), FP32 softmax, o = sum P_i v_i. S may be NULL
 * for all of [0, m). scratch holds m floats.
 */
void salca_attend_f32(const float *q, const float *k, const float *v, uint32_t d, const uint32_t *S,
                      uint32_t m, float *o, float *scratch);

/* Cosine of a and b (d entries) in double; 1 if both are 0, 0 if one is (docs/salca.md#metrics). */
double salca_cosine(const float *a, const float *b, uint32_t d);

/* Number of maximal runs of consecutive indices in the ascending list idx[0..m). */
uint32_t salca_runs(const uint32_t *idx, uint32_t m);

/* Sum of P over S in double (attention-mass recall, docs/salca.md#metrics). */
double salca_recall(const float *P, const uint32_t *S, uint32_t m);

#endif
