/*
 * salca_calibrated: the per-head attention structure of a real model that the calibrated
 * Q/K/V source plants (docs/models.md, "Calibrated Salca source").
 *
 * The model is Llama-3.1-8B-Instruct (32 layers, 32 query heads, 8 KV heads, d 128). Two
 * published per-head tables are carried as derived figures (not the files):
 *   - DuoAttention's learned retrieval gates, one per (layer, KV head) (Xiao et al. 2024,
 *     mit-han-lab/duo-attention, attn_patterns/Meta-Llama-3.1-8B-Instruct/.../
 *     full_attention_heads.tsv), in thousandths;
 *   - MInference's offline pattern per (layer, query head) (Jiang et al. 2024,
 *     microsoft/MInference, minference/configs/Llama_3.1_8B_Instruct_128k_kv_out_v32_fit_o_
 *     best_pattern.json), one of five vertical/slash budgets.
 * A KV head is a retrieval head when its gate ranks in the top retrieval_frac of the 256
 * (DuoAttention's deployment by target sparsity); its query heads then attend sinks, the
 * local band, their pattern's vertical keys and slash band, and the task's spans. The other
 * heads are streaming heads: sinks and a recent window only.
 *
 * A capture of L layers, G KV heads and H query heads takes a subset of the model's heads:
 * layer l is model layer l * 32 / L, KV head g is model KV head g * 8 / G, query head h of
 * group g (hpg = H / G <= 4 per group) is model query head 4 * mg + (h % hpg) * 4 / hpg.
 * Everything here is a pure function of its arguments; nothing allocates or prints.
 */
#ifndef ACCELTRACE_SALCA_CALIBRATED_H
#define ACCELTRACE_SALCA_CALIBRATED_H

#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"

#define SALCA_CAL_LAYERS 32  /* Llama-3.1-8B */
#define SALCA_CAL_KV_HEADS 8 /* GQA groups */
#define SALCA_CAL_Q_HEADS 32 /* query heads */
#define SALCA_CAL_HEAD_DIM 128

/* Parameters of the calibrated source (defaults and their origins in docs/models.md). */
struct salca_calib_params {
    double retrieval_frac; /* share of KV heads that are retrieval heads: 0.5 (DuoAttention,
                              GQA Llama-3-8B results) */
    double logit_std;      /* background logit std sigma (1; input) */
    uint32_t sink_tokens;  /* attention sinks: 4 (StreamingLLM) */
    /* sink logit boost: 10 (input; docs/salca.md#synthetic-source c_sink) */
    double c_sink;
    uint32_t local_tokens;  /* band every head keeps: 100 (MInference's kept diagonals) */
    double c_local;         /* its boost: 10 (input, = c_sink) */
    uint32_t stream_window; /* streaming heads' recent window: 256 (DuoAttention recent) */
    uint32_t search_tokens; /* prompt length the budgets refer to: 30000 (MInference) */
    /* the task's needle relevance: 8 (docs/salca.md#synthetic-source before the recall calibration
     * check) */
    double c_needle;
    double query_jitter; /* zeta: 0.2 (docs/salca.md#synthetic-source) */
};

void salca_calib_params_default(struct salca_calib_params *p);

/* MInference's five vertical/slash budgets (the stored pairs) and their kept mass. */
struct salca_calib_pattern {
    char code;         /* 'A'..'E' */
    uint32_t vertical; /* vertical_size: key columns kept */
    uint32_t slash;    /* slash_size: diagonals kept (block-sparse: its stored 6096) */
    double mass;       /* median fourth value of the heads of this budget (share of mass) */
};

/*
 * The logit boost of a key the pattern keeps, over a background of logit std sigma, such
 * that the kept keys (share b = (vertical + slash) / search_tokens of the prompt) hold the
 * pattern's mass m: m / (1 - m) = b / (1 - b) * exp(c - sigma^2 / 2), so
 * c = logit(m) - logit(b) + sigma^2 / 2 (docs/models.md, "Calibrated Salca source").
 */
double salca_calib_boost(const struct salca_calib_pattern *pt, const struct salca_calib_params *p);

/* The pattern of model (layer ml, query head mh). */
const struct salca_calib_pattern *salca_calib_pattern(uint32_t ml, uint32_t mh);

/* DuoAttention gate of model (layer ml, KV head mg), in [0, 1]. */
double salca_calib_gate(uint32_t ml, uint32_t mg);

/* Whether model KV head (ml, mg) is a retrieval head at this retrieval fraction (rank of
 * its gate among the 256, ties to the lower index). */
bool salca_calib_retrieval(uint32_t ml, uint32_t mg, double retrieval_frac);

/* Checks that L, H, G map onto the model (L <= 32, G <= 8, G | H, H / G <= 4). */
int salca_calib_check_dims(uint32_t L, uint32_t H, uint32_t G, struct errmsg *e);

/* Model layer, KV head and query head of capture (l, g, h) (see above). */
uint32_t salca_calib_model_layer(uint32_t l, uint32_t L);
uint32_t salca_calib_model_kv(uint32_t g, uint32_t G);
uint32_t salca_calib_model_q(uint32_t h, uint32_t H, uint32_t G);

/* Provenance of the carried tables: repository@commit:path, separated by "; ". */
extern const char salca_calib_sources[];

#endif
