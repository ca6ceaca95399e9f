/*
 * kura_capture: the Kuramoto orientation-diffusion capture (docs/kura.md).
 *
 * Runs the forward pass from a procedural data map, then the reverse-time sampler with the
 * chosen drift (fixed point by default) and score source, and emits the trace records in
 * the order of docs/kura.md#trace-records: KuraStep DATA (step -1), for i = T-1..1 KuraStep REVERSE
 * (the map the drift reads) followed by its KuraTiles frames (one per requested shape),
 * KuraStep FINAL (step 0), then Summary. Records go to an emit callback, so the algorithm
 * is testable without a trace file; capture_kura_ops wires it to the capture driver.
 *
 * Randomness [decision]: substreams of common/rng derived from the seed: "kura/data" for
 * the generator, "kura/forward" (a = step i) for forward noise, "kura/terminal" for the
 * von Mises start, "kura/reverse" (a = step i) for reverse noise; normals drawn row-major.
 * A per-step substream is the state an oracle checkpoint needs, so recomputing a segment
 * gives the same bits. Results do not depend on the thread count.
 *
 * Bytes: everything that reaches the trace is a function of the parameters that enter
 * params_json (not of threads, PNG output, --oracle-mem or the output path). The header's
 * command line and UTC time and the Summary's wall time are the only other inputs;
 * kura_params.reproducible with capture_opts.reproducible fixes them
 * (docs/models.md#kuramoto-capture).
 */
#ifndef ACCELTRACE_KURA_CAPTURE_H
#define ACCELTRACE_KURA_CAPTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "capture/capture.h"
#include "capture/kura/kura_data.h"
#include "capture/kura/kura_drift.h"
#include "common/err.h"
#include "formats/trace.pb-c.h"

enum kura_score { KURA_SCORE_ORACLE = 0, KURA_SCORE_PRIOR, KURA_SCORE_NET, KURA_SCORE_NONE };
enum kura_start { KURA_START_VONMISES = 0, KURA_START_FORWARD };

#define KURA_MAX_TILE_SHAPES 16

struct kura_params {
    size_t h, w;     /* map size (>= 5 each) */
    char preset[16]; /* "t100" (default), "t300", "t1000" or "custom" */
    int t;           /* T */
    double c0, c_end, beta0, beta_end;
    struct kura_data_spec data;
    uint64_t seed;
    enum kura_score score;
    const char *weights_path; /* net only */
    enum kura_drift_mode drift;
    bool check_drift; /* default true */
    enum kura_start start;
    uint64_t oracle_mem_bytes; /* trajectory kept in memory up to this (default 1 GiB) */
    uint64_t mem_limit_bytes;  /* refuse to start above this estimate (default 8 GiB) */
    int threads;               /* 0 = threads_default() */
    const char *png_dir;       /* NULL = no images */
    int png_every;             /* every k-th reverse step (default 10) */
    int n_tile_shapes;
    uint32_t tile_nh[KURA_MAX_TILE_SHAPES], tile_nw[KURA_MAX_TILE_SHAPES];
    bool quiet;        /* no progress on stderr */
    bool reproducible; /* Summary wall time 0 (and capture_opts.reproducible) */
};

/* Metrics of a finished capture. theta0/theta_final are owned (kura_result_release). */
struct kura_result {
    double recon_mae, recon_max; /* circular error of theta_final vs theta^0 (rad) */
    double recon_bound;          /* the reconstruction check threshold (rad) */
    double forward_end_r;        /* order parameter of the forward end state */
    bool drift_checked;
    double drift_err_max, drift_err_mean; /* over all REVERSE steps (rad) */
    double drift_bound_max;               /* max_i X_i over the reverse steps (rad) */
    double wall_s;
    int reverse_steps;
    bool checkpointed; /* the oracle recomputed segments from checkpoints */
    size_t h, w;
    double *theta0, *theta_final; /* (h, w) */
    uint64_t tile_bytes;          /* bytes of KuraTiles payload arrays emitted */
};

/* Defaults: 96x96 fingerprint, t100, seed 1, oracle, fixed drift, check on, von Mises start. */
void kura_params_default(struct kura_params *p);

/*
 * Estimated peak bytes of a capture with p (docs/models.md#kuramoto-capture, memory): the
 * map-sized buffers of the sampler and both drift evaluators, the oracle trajectory or its
 * checkpoints, the data generator's scratch, one record in the writer, the tile streams,
 * PNG rows and, for --score net, twice the weights file (read, then unpacked). Arithmetic
 * on p (and a stat of the weights), saturating at UINT64_MAX; nothing is allocated.
 * The run refuses (ERR_LIMIT) above p->mem_limit_bytes before allocating anything
 * map-sized, as capture_run does above its own limit.
 */
uint64_t kura_capture_mem_estimate(const struct kura_params *p);

/* Sets the schedule fields from a preset name. ERR_USAGE with message. */
int kura_params_preset(struct kura_params *p, const char *name, struct errmsg *e);

void kura_result_release(struct kura_result *r);

/*
 * The capture interface (capture/capture.h): open takes a const struct kura_params *
 * (copied; ERR_USAGE for bad parameters), the memory check uses kura_capture_mem_estimate,
 * prepare creates png_dir, run emits every record after the header in docs/kura.md#trace-records
 * order onto the sink (the reverse steps are its checkpoint units). The driver's
 * capture_opts.reproducible should follow kura_params.reproducible (empty command line,
 * header time SOURCE_DATE_EPOCH or 1970).
 */
extern const struct capture_ops capture_kura_ops;

/* The result of the last run of a capture_kura_ops instance; owned by it. */
const struct kura_result *kura_capture_result(const void *inst);

/* Moves the result of the last run into *out (the caller releases it with
 * kura_result_release); the instance keeps an empty one. */
void kura_capture_take_result(void *inst, struct kura_result *out);

#endif
