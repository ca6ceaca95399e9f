/*
 * salca_capture: `acceltrace capture salca`: generates a task, runs a Q/K/V source through
 * prefill and N decode steps, runs Salca and the baselines on every (step, layer, query
 * head), scores them against dense attention and writes a .atr trace
 * (docs/salca.md):
 *   header (TraceHeader.salca), SalcaPrefill per (l, g), per step: SalcaSelect per
 *   (l, h, method) in that order, SalcaToken (model source), then one Summary.
 * It runs under the capture driver (capture/capture.h) as capture_salca_ops: open loads the
 * model and generates the task (the memory estimate needs both), prepare allocates the
 * stores and runs the prefill, the header holds the generated task's lengths. It never
 * prints: progress goes through the driver (stderr), the summary table is returned as text.
 */
#ifndef ACCELTRACE_SALCA_CAPTURE_H
#define ACCELTRACE_SALCA_CAPTURE_H

#include <stdbool.h>
#include <stdint.h>

#include "capture/capture.h"
#include "capture/salca/salca_kv.h"
#include "capture/salca/salca_source.h"
#include "common/err.h"

/* Ablation variants per run; they take method ids 16, 17, ... (docs/salca.md#baselines). */
#define SALCA_MAX_VARIANTS 8
/* Result slots: the built-in methods (enum salca_method), then the variants. */
#define SALCA_NSLOT (SALCA_M_COUNT + SALCA_MAX_VARIANTS)

struct salca_capture_params {
    bool model;             /* source: model (true) or synthetic */
    bool calibrated;        /* with !model: the calibrated source (salca_calibrated.h) */
    const char *checkpoint; /* model checkpoint dir; NULL: built-in tiny */
    uint64_t seed;          /* task, synthetic source and tiny weights */
    const char *task;       /* task or family name */
    uint32_t sample;
    uint32_t length;                            /* 0: LongBench-style draw + truncation */
    uint32_t max_len;                           /* --max-ctx (31500) */
    uint32_t max_new;                           /* 128 */
    int32_t steps;                              /* -1: the task's N */
    uint32_t layers, heads, kv_heads, head_dim; /* synthetic dims (0: tiny's) */
    char rho_text[32];                          /* --retention as given */
    struct salca_sel_params sel;
    uint32_t methods;                          /* mask of 1 << enum salca_method */
    uint32_t n_variants;                       /* ablation variants (<= SALCA_MAX_VARIANTS) */
    char variant_text[SALCA_MAX_VARIANTS][64]; /* "w_k=4,w_q=fp32" (salca_variant_parse) */
    bool no_hist;
    /* the layer-major memory plan even when every layer fits (synthetic and calibrated
     * sources; docs/models.md#salca-memory-plan) */
    bool layer_major;
    bool top1;                /* model: substituted runs for top-1 agreement */
    int threads;              /* worker threads (>= 1) */
    uint64_t mem_limit_bytes; /* 8 GiB; 0: no limit (as capture_opts) */
    struct salca_synth_params synth;
    struct salca_calib_params calib; /* the calibrated source's parameters */
    uint32_t tiny_outlier_pairs;     /* 4 */
    double tiny_outlier_gain;        /* 8 */
    uint32_t quest_page;             /* 16 */
    uint32_t quest_dense_layers;     /* Quest keeps every token in layers below this (0) */
    /* For the caller's capture_opts (the ops do not read them): */
    int zstd_level;           /* 3 */
    bool quiet;               /* no progress */
    const char *command_line; /* for the header (may be NULL) */
    const char *utc_time;     /* for the header (NULL: "") */
    const char *csv_path;     /* per-(sample, method, layer) aggregates; NULL: none */
};

/* Defaults: calibrated source, narrativeqa, length 32768, 64 steps,
 * retention 0.05, K_min 64, pool 5, ge, INT8 attention, all methods. */
void salca_capture_params_default(struct salca_capture_params *p);

/* Per-method aggregates (docs/salca.md#metrics). */
struct salca_capture_method {
    bool run;
    uint32_t id;   /* method id in the trace */
    char name[16]; /* "salca", ..., or "abl16" for variant id 16 */
    uint64_t jobs;
    double recall_mean, recall_median, recall_p5;
    double cosine_mean, cosine_median, cosine_p5;
    double recall_min, cosine_min;
    double retention_mean, overshoot_mean;
    double top1;       /* -1 without substituted runs */
    double logit_diff; /* max |logit - dense logit| / max |dense logit| */
    uint32_t spans_total, spans_recalled;
    double span_coverage_min; /* smallest share of a needle span's dense mass kept */
    double span_mass_mean;    /* smallest per-span mean share (the recall criterion) */
};

struct salca_capture_result {
    struct salca_capture_method m[SALCA_NSLOT]; /* by slot: enum salca_method, then variants */
    uint32_t n0, steps, L, H, G, d;
    uint64_t n_raw, selects, sel_bytes;
    double wall_seconds;
    char table[4096]; /* printed summary table */
};

/*
 * Parses an ablation spec "key=value,..." with keys w_k (1-4), w_q (2-4 or fp32), s_f
 * (decimal, s_f * d channels), pool (odd) and rho (decimal in (0, 1]) into v, for head
 * dimension d (r defaults to d/2, w_k 2, w_q 3). ERR_USAGE with a message on bad input.
 */
int salca_variant_parse(const char *spec, uint32_t d, struct salca_variant *v, struct errmsg *e);

/* The memory plan of an opened capture (docs/models.md "Salca memory plan"): what it holds,
 * in which precision, and whether the resident part fits --mem-limit. Arithmetic on the
 * shape only; open fills it after choosing the step-major or the layer-major plan. */
struct salca_mem_item {
    const char *name;      /* "kv stores", ... */
    const char *precision; /* "f32 + int8", ... */
    uint64_t total_bytes;  /* every layer's worth */
    uint64_t held_bytes;   /* resident under the chosen plan */
    const char *where;     /* "memory", "memory, one layer at a time", ... */
};

#define SALCA_MEM_ITEMS 6

struct salca_mem_plan {
    struct salca_mem_item item[SALCA_MEM_ITEMS];
    int n_items;
    bool layer_major;     /* the chosen plan */
    uint64_t held_bytes;  /* the estimate of the chosen plan: the sum of held_bytes */
    uint64_t all_bytes;   /* the estimate with every layer's stores held (step-major) */
    uint64_t limit_bytes; /* --mem-limit, 0 = none */
    bool fits;            /* held_bytes <= limit_bytes (always with no limit) */
};

/* The plan of an instance of capture_salca_ops after open; owned by it. */
const struct salca_mem_plan *salca_capture_mem_plan(const void *inst);

/* The ops of `capture salca`; open takes a const struct salca_capture_params * (copied;
 * its strings must outlive the instance). */
extern const struct capture_ops capture_salca_ops;

/* The result of a capture_salca_ops instance after capture_run; owned by it. */
const struct salca_capture_result *salca_capture_result(const void *inst);

#endif
