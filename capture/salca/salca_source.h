/*
 * salca_source: the Q/K/V sources of docs/salca.md#tensor-sources behind one interface.
 *
 *   synthetic  the statistical KV generator of 3.3 (heavy RoPE pairs with log-normal gains,
 *              persistent offsets, sinks, locality, task relevance planted along a group
 *              direction); every (purpose, layer, head) draws from its own substream.
 *   calibrated the per-head structure of Llama-3.1-8B (capture/salca/salca_calibrated):
 *              DuoAttention retrieval/streaming heads, MInference vertical/slash budgets,
 *              sinks and a local band, planted along orthonormal per-head directions on
 *              base keys with the synthetic source's heavy channels.
 *   model      the Llama decoder of 3.2 (capture/nn/nn_llama): dense prefill, then greedy
 *              decoding on dense logits; the dense trajectory is the reference.
 *
 * Use: open, prefill(kv) once (fills the L*G stores and fixes their heavy channels), then
 * step(t) for t = 0..N-1: appends the new token's key and value to every store (so n =
 * n0 + t + 1) and writes the post-RoPE queries q[(l*H + h)*d + j]. The source does not own
 * the stores. A source handle keeps no error state; functions return 0 or a negative
 * enum err with the message in the errmsg given.
 */
#ifndef ACCELTRACE_SALCA_SOURCE_H
#define ACCELTRACE_SALCA_SOURCE_H

#include <stdbool.h>
#include <stdint.h>

#include "capture/nn/nn_llama.h"
#include "capture/salca/salca_calibrated.h"
#include "capture/salca/salca_kv.h"
#include "capture/salca/salca_task.h"
#include "common/err.h"

/* Synthetic source parameters; defaults and their origins in docs/salca.md#synthetic-source
 * (docs/models.md). */
struct salca_synth_params {
    uint32_t heavy_pairs;     /* P: 4 */
    uint32_t heavy_band_lo;   /* j_lo: 0 means d/4 */
    double gain_median;       /* 8 */
    double gain_sigma;        /* 0.5 */
    double heavy_mean;        /* m_h: 2 */
    double head_spread;       /* eta: 0.3 */
    double query_jitter;      /* zeta: 0.2 */
    double logit_std;         /* sigma_L: 5 (2.5 before the recall calibration) */
    uint32_t sink_tokens;     /* 4 */
    double c_sink;            /* 10 */
    double c_loc;             /* 4 */
    double tau_loc;           /* 64 */
    double c_needle;          /* 24 (8 before the recall calibration) */
    double early_layer_scale; /* lambda for l < early_layers: 0.3 */
    uint32_t early_layers;    /* 2 */
};

void salca_synth_params_default(struct salca_synth_params *p);

struct salca_source;
struct thread_pool;

/*
 * Opens the synthetic source for L layers, H query heads, G KV heads, head dim d (<= 256)
 * over the task's prompt. The task must outlive the source.
 */
int salca_source_open_synth(struct salca_source **out, const struct salca_synth_params *p,
                            uint32_t L, uint32_t H, uint32_t G, uint32_t d, uint64_t seed,
                            const struct salca_task *task, struct errmsg *e);

/*
 * Opens the calibrated source for L layers, H query heads, G KV heads (a subset of
 * Llama-3.1-8B's heads, salca_calibrated.h), head dim d. The task must outlive the source;
 * for retrieval heads its relevance profile c (needles at the task's c_needle) is planted.
 */
int salca_source_open_calib(struct salca_source **out, const struct salca_calib_params *p,
                            uint32_t L, uint32_t H, uint32_t G, uint32_t d, uint64_t seed,
                            const struct salca_task *task, struct errmsg *e);

/* Whether the source is the calibrated one. */
bool salca_source_is_calibrated(const struct salca_source *s);

/* Calibrated source: whether capture head (l, h) is a retrieval head; *pattern (may be
 * NULL) receives its MInference budget code 'A'..'E'. Other sources: false and '-'. */
bool salca_source_head_retrieval(const struct salca_source *s, uint32_t l, uint32_t h,
                                 char *pattern);

/* Opens the model source; takes ownership of model. The task must outlive the source. */
int salca_source_open_model(struct salca_source **out, struct nn_llama *model,
                            const struct salca_task *task, struct errmsg *e);

/* The prompt's K/V generation of the synthetic and calibrated sources runs its (layer, KV
 * head) groups on pool's workers (NULL, the default: on the caller); the stores come out
 * the same for any pool. The pool must outlive the source's prefills and not be running a
 * pool_for of its own when one starts. */
void salca_source_set_pool(struct salca_source *s, struct thread_pool *pool);
void salca_source_free(struct salca_source *s);

/* Dimensions of the source. */
void salca_source_dims(const struct salca_source *s, uint32_t *L, uint32_t *H, uint32_t *G,
                       uint32_t *d);

/* Dense logits of the last prefill or step (model source; V floats), else NULL. */
const float *salca_source_logits(const struct salca_source *s);

/* The model of a model source, else NULL. */
const struct nn_llama *salca_source_model(const struct salca_source *s);

/*
 * The planted heavy channels of KV head (l, g), for tests of the heavy-channel check: synthetic
 * source, the channels of its P heavy pairs; model source, the k_proj rows whose norm exceeds four
 * times the median row norm of the head (the tiny model's planted outliers). chan has d
 * entries. Returns the number of planted channels.
 */
uint32_t salca_source_planted(const struct salca_source *s, uint32_t l, uint32_t g, bool *chan);

/*
 * Prefill: appends the n0 prompt keys and values to kv[l*G + g] (initialized, empty,
 * capacity >= n0 + N) and finishes their prefill (heavy channels, docs/salca.md#heavy-channels).
 * For the model source *first_token receives the greedy token after the prompt (may be NULL).
 */
int salca_source_prefill(struct salca_source *s, struct salca_kv *kv, uint32_t *first_token,
                         struct errmsg *e);

/*
 * Decode step t: appends the new token's key/value to every store and writes the queries
 * (L*H*d floats). For the model source, `token` is the input token of the step (the
 * previous greedy token) and *next_token receives the dense greedy token of this step.
 */
int salca_source_step(struct salca_source *s, uint32_t t, uint32_t token, struct salca_kv *kv,
                      float *q, uint32_t *next_token, struct errmsg *e);

/*
 * The synthetic and calibrated sources generate each layer from its own random streams, so
 * layers [l_lo, l_hi) can be generated alone, with the same values as in the whole-model
 * calls: kv holds (l_hi - l_lo) * G stores (store (l - l_lo) * G + g) and q (l_hi - l_lo) * H * d
 * floats. This is what lets a capture hold one layer's K/V at a time (docs/models.md,
 * "Salca memory plan"). The model source: ERR_INTERNAL.
 */
int salca_source_prefill_layers(struct salca_source *s, uint32_t l_lo, uint32_t l_hi,
                                struct salca_kv *kv, struct errmsg *e);
int salca_source_step_layers(struct salca_source *s, uint32_t t, uint32_t l_lo, uint32_t l_hi,
                             struct salca_kv *kv, float *q, struct errmsg *e);

#endif
