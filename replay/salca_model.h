/*
 * salca_model: the trace-driven pipeline model of the Salca accelerator (docs/salca.md
 * section 10) and its replay-engine wrapper (model "salca", replay/model.h).
 *
 * Per job (step t, layer l, query head h, one selection method) the model computes four
 * stage times in compute cycles at f_CMP, with ceilings on exact rationals:
 *   P  relevance      max(ceil(n/p_pre), ceil(n·b_pre·f_CMP/(beta_pre·h_pre·bw·f_HBM)))
 *   Q  INT8 + pool + histogram   ceil(n/64)
 *   F  threshold + filter        4 + ceil(n/64)
 *   A  gather + attention        max(ceil(|S|/p_att), ceil(slots·t_slot/beta_att)),
 *      slots from replay/hbm_pc under the configured mapping and issue policy (the measured
 *      alpha), t_slot = b_att·f_CMP/(bw·f_HBM); alpha_mode global uses
 *      ceil(|S|·alpha·t_slot/(h_att·beta_att)). With beta_att derived (beta_derived) the
 *      job's beta_att is ideal/spread cycles of replay/hbm_timing on a perfectly spread
 *      job of the same size under the same policy; with hbm timing (hbm_timing) the
 *      memory part is the job's hbm_timing cycles x tCK x f_CMP (no beta_att: the
 *      timing holds the efficiency). docs/models.md "HBM timing mode".
 * plus a fill depth c_stage per stage. A layer's heads stream through P->Q->F->A with two
 * buffers between neighbours:
 *   start[k][j] = max(finish[k][j-1], finish[k-1][j], finish[k+1][j-2]),
 *   finish = start + T_k,
 * layers run in sequence (layer_gap cycles apart) unless no_layer_drain, steps in sequence.
 * The dense reference (variant dense, the paper's ASIC_D) has stage A only: all n tokens
 * striped over all chn PCs at beta_pre, dense_tokens_per_cycle tokens per cycle.
 *
 * The plain functions below work on index arrays and are what the model wrapper calls;
 * tests use them directly. Nothing prints.
 */
#ifndef ACCELTRACE_SALCA_MODEL_H
#define ACCELTRACE_SALCA_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "replay/hbm_pc.h"
#include "replay/hbm_timing.h"
#include "replay/salca_perf.h"

enum { SALCA_ST_P = 0, SALCA_ST_Q = 1, SALCA_ST_F = 2, SALCA_ST_A = 3, SALCA_STAGES = 4 };

/* Stage names "P", "Q", "F", "A". */
const char *salca_stage_name(int k);

enum salca_alpha_mode { SALCA_ALPHA_MEASURED = 0, SALCA_ALPHA_GLOBAL = 1 };

/* Resolved hardware parameters of one configuration. */
struct salca_pipe_params {
    bool dense;                 /* ASIC_D reference: stage A only, all tokens */
    uint32_t d, r;              /* head dimension, heavy channels r = s_f·d */
    uint32_t b_pre, b_att;      /* bits per key (pre) and per K-V pair (att) */
    uint32_t chn, h_pre, h_att; /* pseudo-channels: total, pre-compute, attention */
    uint32_t p_pre, p_att;      /* compute parallelism (keys per cycle) */
    struct salca_rat bw, f_hbm_ghz, f_cmp_ghz, beta_pre, beta_att, alpha;
    enum salca_alpha_mode alpha_mode;
    struct hbm_pc_mapping map; /* attention PCs (h_att; dense: chn) */
    struct hbm_pc_policy_cfg policy;
    uint32_t c_stage[SALCA_STAGES];  /* fill depths, cycles */
    uint32_t dense_tokens_per_cycle; /* ASIC_D compute width, 4 */
    uint32_t pool_w;                 /* max-pool width (activity counts) */
    uint64_t layer_gap;              /* cycles between layers */
    bool no_layer_drain;             /* stream a whole step as one sequence */
    bool hbm_timing;                 /* stage A's memory part from replay/hbm_timing */
    bool beta_derived;               /* beta_att per job from hbm_timing's spread job */
    struct hbm_timing_cfg hbm;       /* timing, layout, token bytes (0 = b_att/8), refresh */
    /* derived by salca_pipe_params_finish: */
    struct salca_rat x_pre;  /* b_pre·f_CMP/(beta_pre·h_pre·bw·f_HBM), cycles per key */
    struct salca_rat x_att;  /* t_slot/beta_att, cycles per slot */
    struct salca_rat x_glob; /* alpha·t_slot/(h_att·beta_att), cycles per token */
    struct salca_rat t_slot; /* b_att·f_CMP/(bw·f_HBM), cycles per token per PC */
    struct salca_rat x_dram; /* tCK·f_CMP: compute cycles per DRAM cycle (timing) */
};

/* The paper's final design (h 11/16, p 16/1, docs/salca.md#pipeline-model salca_final), measured
 * alpha with in-order issue D_f = 1 and the mod map. */
void salca_pipe_params_default(struct salca_pipe_params *p);

/* Validates p and computes the derived rationals. 0 or ERR_CONFIG with e set. */
int salca_pipe_params_finish(struct salca_pipe_params *p, struct errmsg *e);

/*
 * Stage times of one job (docs/salca.md#pipeline-model): n keys in context, n_sel selected tokens
 * and `slots` PC slots from the issue policy (ignored in global alpha mode and for dense, where the
 * slots are ceil(n/chn)). T receives P, Q, F, A including c_stage.
 */
void salca_pipe_job_times(const struct salca_pipe_params *p, uint64_t n, uint64_t n_sel,
                          uint64_t slots, uint64_t T[SALCA_STAGES]);

/* The memory part of stage A that salca_pipe_job_times uses (compute cycles): ceil(slots ·
 * x_att), or ceil(|S| · x_glob) in global alpha mode. */
uint64_t salca_pipe_att_mem(const struct salca_pipe_params *p, uint64_t n_sel, uint64_t slots);

/* As salca_pipe_job_times (not dense) with stage A's memory part given: A = max(ceil(|S| /
 * p_att), att_mem) + c_stage (the timing mode and derived beta_att, salca_model.h top). */
void salca_pipe_job_times_mem(const struct salca_pipe_params *p, uint64_t n, uint64_t n_sel,
                              uint64_t att_mem, uint64_t T[SALCA_STAGES]);

/* Derived beta_att's memory part: salca_pipe_att_mem with beta_att = ideal_cycles /
 * spread_cycles (hbm_timing cycles): ceil(slots · t_slot · spread / ideal), global alpha
 * ceil(|S| · alpha · t_slot · spread / (h_att · ideal)); 0 when ideal is 0. */
uint64_t salca_pipe_att_mem_derived(const struct salca_pipe_params *p, uint64_t n_sel,
                                    uint64_t slots, uint64_t spread_cycles, uint64_t ideal_cycles);

/* hbm_timing cycles as compute cycles: ceil(cycles · x_dram). */
uint64_t salca_pipe_dram_to_cmp(const struct salca_pipe_params *p, uint64_t cycles);

/* Activity counts of one job (docs/salca.md#pipeline-model "activity counts"). */
struct salca_activity {
    uint64_t hbm_pre_bytes; /* n·b_pre/8 */
    uint64_t hbm_att_bytes; /* |S|·b_att/8 = 256·|S| at d = 128 */
    uint64_t mac_3x2;       /* n·r */
    uint64_t mac_int8;      /* 2·|S|·d */
    uint64_t exps;          /* |S| */
    uint64_t pool_cmp;      /* n·(w - 1) */
    uint64_t hist_upd;      /* n */
    uint64_t filter_cmp;    /* n */
};
void salca_job_activity(const struct salca_pipe_params *p, uint64_t n, uint64_t n_sel,
                        struct salca_activity *a);

/*
 * The double-buffered stage scheduler. A sequence starts at t0 (salca_sched_begin); each
 * pushed job gets start/finish times by the recursion above; end() is the finish of the
 * last job at the last stage (t0 for an empty sequence).
 */
struct salca_sched {
    uint64_t t0;
    uint64_t fin1[SALCA_STAGES]; /* finish of job j-1 per stage */
    uint64_t fin2[SALCA_STAGES]; /* finish of job j-2 per stage */
    uint64_t jobs;
};
void salca_sched_begin(struct salca_sched *s, uint64_t t0);
void salca_sched_push(struct salca_sched *s, const uint64_t T[SALCA_STAGES]);
/* As salca_sched_push, also writing each stage's start time of the job to start (cycles). */
void salca_sched_push_at(struct salca_sched *s, const uint64_t T[SALCA_STAGES],
                         uint64_t start[SALCA_STAGES]);
uint64_t salca_sched_end(const struct salca_sched *s);

/* Kinds of synthetic selection (salca_synth_selection; the model's synth_kind key and
 * `analyze conflicts --synthetic`). */
enum salca_synth_kind {
    SALCA_SYNTH_UNIFORM = 0,   /* K distinct indices uniformly at random */
    SALCA_SYNTH_CLUSTERED = 1, /* runs of pooled width around random peaks */
    SALCA_SYNTH_NEEDLE = 2,    /* sinks + recent window + a few long spans + scatter */
};

/* "uniform" | "clustered" | "needle" into *out; 0 or ERR_USAGE. */
int salca_synth_parse(const char *s, enum salca_synth_kind *out);

/*
 * Synthetic selections (tests, benchmarks, the `retention` what-if of the model, and
 * analysis/conflicts): writes a sorted selection of about k = ceil(retention·n) indices of
 * [0, n) into idx (capacity n), *count its size. Uniform: exactly k, selection sampling.
 * Clustered: 4 sinks, the last 16 tokens, then peaks each selecting [p - 2, p + 2], the
 * reach of the default pool width 5, docs/salca.md#max-pooling, until k are covered. Needle: 4
 * sinks, the last 64 tokens, two 64-token spans, then clustered peaks. Deterministic in (seed, a,
 * b). 0, ERR_USAGE (n = 0, retention outside (0, 1], bad kind) or ERR_NOMEM.
 */
int salca_synth_selection(enum salca_synth_kind kind, uint32_t n, double retention, uint64_t seed,
                          uint64_t a, uint64_t b, uint32_t *idx, size_t *count);

#endif
