/*
 * disc_capture: the DiSC capture (docs/disc.md). Runs a DiT denoising loop with CTR
 * and ST executed for real, scores it against the dense run, and emits TraceHeader,
 * DiscStep, DiscMask and Summary records.
 *
 * One way in: the capture interface (capture/capture.h) through capture_disc_ops. An
 * instance is a struct disc_capture, made by open from a const struct disc_params *
 * (disc_params_default, then set fields; open validates and makes the memory plan, no
 * heavy allocation). To a file: capture_run. In-process (reproduce, tests): ops->prepare
 * (weights, text, --save-weights), ops->header, then ops->run onto the caller's own
 * struct capture_sink, whose append receives every record after the header. Progress is
 * the sink's (capture_progress_begin/update, label "disc capture" unless the caller sets
 * one). Afterwards the accessors below read the instance (disc_capture_result), and
 * ops->close frees it. The ops resume at sampler-step boundaries (checkpoint_save and
 * checkpoint_load, capture/disc/disc_ckpt.c; docs/trace-format.md#checkpoints).
 * The module never prints: warnings are collected in the result (st_short, ckpt_skipped).
 */
#ifndef ACCELTRACE_DISC_CAPTURE_H
#define ACCELTRACE_DISC_CAPTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "capture/capture.h"
#include "capture/disc/disc_flops.h"
#include "capture/disc/disc_memplan.h"
#include "capture/disc/dit_sampler.h"
#include "common/err.h"
#include "formats/disc_hash.h"
#include "formats/trace.pb-c.h"

enum disc_ctr_mode { DISC_CTR_OFF = 0, DISC_CTR_TAU = 1, DISC_CTR_TARGET = 2 };
enum disc_st_mode { DISC_ST_OFF = 0, DISC_ST_ALPHA = 1, DISC_ST_THETA = 2, DISC_ST_TARGET = 3 };

#define DISC_MAX_WEIGHT_FILES 16
#define DISC_CLASS_DEFAULT 207 /* ImageNet "golden retriever", DiT's sample.py example */

struct disc_params {
    char model[32]; /* micro | tiny | pixart-sigma-xl | dit-micro | dit-xl-2
                       (default tiny) */
    int image_size; /* pixels; 0 = the config's default */
    int steps;      /* K; 0 = the config's default */
    enum dit_sampler_kind sampler;
    bool cfg_on;      /* --cfg given */
    double cfg_scale; /* w */
    uint64_t seed;    /* latent seed (substream "latent") */
    const char *weight_files[DISC_MAX_WEIGHT_FILES];
    int n_weight_files;         /* 0 = seeded weights */
    uint64_t weight_seed;       /* seed:S (default 0) */
    const char *text_file;      /* NULL = seeded */
    uint64_t text_seed;         /* default 1 */
    const char *null_text_file; /* NULL = zeros */
    int class_label;            /* DiT configs: ImageNet class, default DISC_CLASS_DEFAULT;
                                   the CFG null class is the config's `classes` (1000) */
    enum disc_ctr_mode ctr;
    float ctr_tau;
    char ctr_target[16]; /* R as given (default "0.40") */
    enum disc_st_mode st;
    float st_alpha;              /* default 1.0 */
    const float *st_alpha_block; /* [L] per-block alpha_b for mode alpha; NULL = st_alpha */
    float st_theta;
    double st_target;
    int st_refresh;           /* K_r, default 2 */
    char keep_masks[256];     /* default "none" */
    bool compare_dense;       /* default on */
    const char *png_dir;      /* NULL = no images */
    double mem_limit_bytes;   /* default 16 GiB (for capture_opts.mem_limit_bytes); the memory
                                 plan spills what it must to fit (0 = no limit) */
    const char *spill_dir;    /* folder of the spill file (NULL = the current folder) */
    int threads;              /* 0 = threads_default() */
    const char *save_weights; /* capture_disc_ops prepare writes the weights here (F32) */
};

/* Defaults of docs/disc.md#sampler: tiny, dpm2m, CTR target 0.40, ST alpha 1.0, refresh 2, compare
 * on. */
void disc_params_default(struct disc_params *p);

/* Quality of one compared run (docs/disc.md#quality-and-flop-accounting). */
struct disc_quality {
    bool valid;
    double cosine, psnr;
    double *rel_err; /* [K] */
};

struct disc_result {
    int K, L, B;
    size_t n_latent;     /* C_in H W */
    float *latent;       /* x_K of the main run */
    float *latent_dense; /* x_K of the dense run (NULL without compare) */
    float *traj;         /* (K, n_latent): x_{k+1} of the main run */
    struct disc_quality q_main, q_ctr;
    double mean_prune_ratio;
    double sparsity, sparsity_gen, sparsity_reuse;
    double *sparsity_block; /* [L] */
    float *alpha;           /* [L] effective alpha_b (ST alpha/target) */
    float *theta;           /* [L] effective theta */
    bool *st_short;         /* [L] --st-target fell short: alpha_b = N */
    int n_st_short;
    uint64_t flops_dense[DISC_F_COUNT], flops_ctr[DISC_F_COUNT], flops_all[DISC_F_COUNT];
    uint64_t masks_written, masks_kept;
    uint32_t *n_kept; /* [K] */
    double wall_s;
    uint64_t spill_bytes; /* largest spill file of the runs (0: nothing spilled) */
    /* sampler steps whose checkpoint was not written: its folder had too little free space
     * (the first time: ckpt_need_bytes needed, ckpt_free_bytes free); a warning */
    uint64_t ckpt_skipped, ckpt_need_bytes, ckpt_free_bytes;
};

/* An instance of capture_disc_ops (opaque). */
struct disc_capture;

/* The memory estimate in bytes: the resident part of the memory plan (disc_memplan.h). */
double disc_capture_mem_estimate(const struct disc_capture *c);
/* Bytes of the largest checkpoint file of c (docs/trace-format.md#checkpoints), from the
 * layout: the free space each checkpoint needs beside the output. Streamed, it costs no
 * memory beyond a fixed 1 MiB buffer. */
uint64_t disc_capture_ckpt_bytes(const struct disc_capture *c);
/* The memory plan made by open under p->mem_limit_bytes. */
const struct disc_mem_plan *disc_capture_mem_plan(const struct disc_capture *c);
/* The model configuration (valid after open). */
const struct dit_config *disc_capture_config(const struct disc_capture *c);

/* The ops of `capture disc` (capture/capture.h); an instance is a struct disc_capture,
 * open's params a const struct disc_params * (copied; the strings it points to must
 * outlive the instance). */
extern const struct capture_ops capture_disc_ops;

/* The result (after run); owned by c. */
const struct disc_result *disc_capture_result(const struct disc_capture *c);

/* Metrics of docs/disc.md#quality-and-flop-accounting in double, sums in element order: cosine,
 * PSNR (+inf at MSE 0), and relative L2 error of x against the reference ref. */
double disc_cosine(const float *x, const float *ref, size_t n);
double disc_psnr(const float *x, const float *ref, size_t n);
double disc_rel_err(const float *x, const float *ref, size_t n);

/* Parses a --mem-limit value (decimal number + optional B, KB, MB, GB, KiB, MiB, GiB). */
int disc_parse_mem(const char *s, double *bytes);

/* The shape fields of a DiscHeader from the model config g (model name, widths, patch,
 * channels, caption, text tokens, image and latent size, tokens, parameter count). The
 * strings point into g. */
void disc_header_shape(const struct dit_config *g, Acceltrace__DiscHeader *dh);

/* The lb_* and bin_* fields of a DiscMask record (formats/disc_records.proto) from one
 * mask's sums; the record points into *buf, which must outlive it. Used by the DiT capture
 * and the structured source alike. */
#define DISC_MASK_LB_N (DISC_HASH_KINDS * DISC_LB_STD_UNITS) /* [3][5] */
struct disc_mask_lb_buf {
    uint64_t lbmax[DISC_MASK_LB_N], bnnz[DISC_LB_BINS], bmax[DISC_LB_BINS * DISC_MASK_LB_N];
    double lbstd[DISC_MASK_LB_N], bstd[DISC_LB_BINS * DISC_MASK_LB_N];
    uint32_t brows[DISC_LB_BINS];
};
void disc_mask_set_lb(Acceltrace__DiscMask *m, const struct disc_lb_acc *a,
                      struct disc_mask_lb_buf *buf);

#endif
