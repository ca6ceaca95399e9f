/*
 * salca_perf: the Salca paper's analytic performance model as a solver (docs/salca.md
 * section 9, paper section 4 "performance model").
 *
 * Inputs are held as exact rationals (0.95 = 19/20) so that every comparison and every
 * ceil()/floor() is exact; printed reals are the rationals converted to double. The solver
 * computes, in this order: bits per key and per K-V pair, the HBM bandwidth, the Pareto
 * front of (m_pre, m_att) under the bandwidth and pseudo-channel (PC) constraints, the
 * design point (largest m_att on the front whose minimum retention r_min <= r_q), the
 * fixed-PC view of the design's PCs, the compute ceilings p' and utilizations u, the final
 * design for a user's (p_pre, p_att) and the 4-bit baseline ASIC_S_4 in fixed-PC mode.
 *
 * Units: b_* bits; m_* keys (pre) or K-V pairs (att) fetched per compute cycle; h_* PCs;
 * bw bits per PC per HBM cycle; frequencies GHz, so bandwidths come out in bits/ns.
 * Everything is plain arithmetic on caller-owned structs; nothing prints.
 */
#ifndef ACCELTRACE_SALCA_PERF_H
#define ACCELTRACE_SALCA_PERF_H

#include <stdbool.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/err.h"

/* An exact rational num/den, den > 0, reduced. */
struct salca_rat {
    int64_t num;
    int64_t den;
};

/*
 * Parses decimal text ("0.95", "16", "1e-3" is not accepted, "-0.5" is) into an exact
 * rational. Returns 0 or ERR_USAGE (malformed text or more than 18 significant digits).
 */
int salca_rat_parse(const char *s, struct salca_rat *out);

/* A double (a config value) as the exact decimal rational of its text to 9 decimals
 * ("0.95" -> 19/20). Returns 0 or ERR_USAGE as salca_rat_parse. */
int salca_rat_of_double(double v, struct salca_rat *out);

/* Arithmetic on rationals; each returns 0 or ERR_LIMIT on 64-bit overflow (or a zero
 * divisor), with the result reduced. */
int salca_rat_mul(struct salca_rat a, struct salca_rat b, struct salca_rat *out);
int salca_rat_div(struct salca_rat a, struct salca_rat b, struct salca_rat *out);
int salca_rat_add(struct salca_rat a, struct salca_rat b, struct salca_rat *out);
int salca_rat_sub(struct salca_rat a, struct salca_rat b, struct salca_rat *out);
/* -1, 0, 1 as a <, =, > b (exact, 128-bit cross products). */
int salca_rat_cmp(struct salca_rat a, struct salca_rat b);
/* floor and ceil of a rational (exact). */
int64_t salca_rat_floor(struct salca_rat a);
int64_t salca_rat_ceil(struct salca_rat a);
/* The rational a as a double (for printing). */
double salca_rat_d(struct salca_rat a);
/* The integer v as a rational. */
struct salca_rat salca_rat_int(int64_t v);

/* Solver inputs (docs/salca.md#analytic-performance-model); defaults from salca_perf_in_paper. */
struct salca_perf_in {
    struct salca_rat d;             /* head dimension, 128 [derived] */
    struct salca_rat s_f;           /* feature keep ratio, 1/2 [paper] */
    struct salca_rat w_k;           /* key bit width, 2 [paper] */
    struct salca_rat factor_bits;   /* bits of the two FP16 factors per key, 32 [paper] */
    struct salca_rat chn;           /* HBM pseudo-channels, 32 [paper] */
    struct salca_rat bw;            /* bits per PC per HBM cycle, 128 [derived] */
    struct salca_rat f_hbm_ghz;     /* HBM clock, 1 GHz [paper] */
    struct salca_rat f_cmp_ghz;     /* compute clock, 0.5 GHz [paper] */
    struct salca_rat alpha;         /* channel-conflict factor, 1.17 [paper] */
    struct salca_rat alpha_inorder; /* in-order conflict factor, 2.18 [paper] */
    struct salca_rat beta_pre;      /* HBM efficiency, sequential, 0.95 [paper] */
    struct salca_rat beta_att;      /* HBM efficiency, attention gathers, 0.55 [paper] */
    struct salca_rat r_q;           /* target retention, 0.05 [paper] */
    int64_t p_pre, p_att;           /* compute parallelism; 0 = not given */
    int64_t h_pre, h_att;           /* fixed PCs for the fixed-PC view; 0 = design point's */
};

/* One point of the Pareto front: the largest m_pre for this m_att. */
struct salca_perf_front {
    int64_t m_att;
    int64_t m_pre;
    int64_t h_pre, h_att;   /* ceilings of the real PC counts */
    struct salca_rat r_min; /* beta_att·m_att/(beta_pre·m_pre·alpha) */
};

#define SALCA_PERF_MAX_FRONT 4096

/* Everything the solver derives (docs/salca.md#analytic-performance-model table and further keys).
 */
struct salca_perf_out {
    int64_t b_pre, b_att;             /* bits per key (pre-compute) / per K-V pair (attention) */
    struct salca_rat hbm_bits_per_ns; /* bw·chn·f_HBM */
    struct salca_rat cyc_ratio;       /* f_CMP/(bw·f_HBM): PCs per bit per compute cycle */
    size_t n_front;
    struct salca_perf_front front[SALCA_PERF_MAX_FRONT];
    /* design point */
    size_t design_idx;     /* index into front */
    bool design_meets_r_q; /* false: no front point reaches r_q; smallest r_min used */
    struct salca_rat design_h_pre_real, design_h_att_real;
    struct salca_rat design_b_req; /* bits/ns */
    /* fixed-PC view */
    int64_t fixed_h_pre, fixed_h_att;
    struct salca_rat fixed_m_pre, fixed_m_att, fixed_r_min;
    /* compute ceilings at the design point */
    int64_t p_prime_pre, p_prime_att;
    struct salca_rat u_pre, u_att, m_att_beta_att, m_pre_beta_pre;
    /* final design (only when has_final) */
    bool has_final;
    int64_t p_pre, p_att;
    int64_t final_m_pre, final_m_att, final_h_pre, final_h_att;
    int64_t final_h_pre_direct, final_h_att_direct;
    struct salca_rat final_b_req, final_r_min;
    /* ASIC_S_4 (w_k 4, s_f 1) in fixed-PC mode with the fixed view's PCs */
    int64_t asic_b_pre;
    struct salca_rat asic_m_pre, asic_r_min, asic_r_min_int;
    int64_t asic_m_pre_int;
    struct salca_rat conflict_gain; /* alpha_inorder/alpha */
};

/* Fills in with the paper's inputs (docs/salca.md#analytic-performance-model) and no p, no fixed h.
 */
void salca_perf_in_paper(struct salca_perf_in *in);

/*
 * Solves the model. Returns 0, or a negative enum err with e set: ERR_USAGE for inputs
 * outside their domain (non-positive values, non-integer bit counts, p outside [1, p']),
 * ERR_CONFIG when the integer-m final design violates the bandwidth or PC constraint (the
 * message names the constraint, its numbers and (m_pre, m_att)) or when the front is empty,
 * ERR_LIMIT on arithmetic overflow.
 */
int salca_perf_solve(const struct salca_perf_in *in, struct salca_perf_out *out, struct errmsg *e);

/*
 * Appends the key=value lines of out to b: first the docs/salca.md#analytic-performance-model table
 * lines in its order (bit counts, p, integer m and h with %d; every other value with %.4f), then
 * further keys (real PC counts, units). 0 or ERR_NOMEM.
 */
int salca_perf_format(const struct salca_perf_out *out, struct buf *b);

/*
 * The paper's T_pre and T_att per token of context (compute cycles per key of n):
 * T_pre/n = 1/(beta_pre·m_pre), T_att/n = r·alpha/(beta_att·m_att) (paper section 4).
 */
double salca_perf_t_pre_per_n(const struct salca_perf_in *in, double m_pre);
double salca_perf_t_att_per_n(const struct salca_perf_in *in, double m_att, double r, double alpha);

#endif
