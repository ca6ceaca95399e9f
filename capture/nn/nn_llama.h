/*
 * nn_llama: a pre-norm Llama-architecture decoder (docs/salca.md#model-source): RMSNorm,
 * RoPE (rotate_half, optional linear scaling), grouped-query attention with a KV cache,
 * SwiGLU MLP, FP32 throughout, GEMMs through capture/nn (BLAS).
 *
 * Weights come from the built-in seeded `tiny` config (nn_llama_new_tiny) or from a
 * Hugging Face Llama checkpoint directory (config.json + model.safetensors or a sharded
 * model.safetensors.index.json) with the tensor names of the documented table. Linear weights
 * are [out, in] (y = W x). Query head h reads KV head floor(h*G/H) (HF repeat_kv order).
 *
 * The cache (struct nn_llama_cache) holds post-RoPE keys and values per (layer, KV head):
 * k[((l*G + g)*cap + pos)*d + j]. Decoding can hand every layer's attention to a caller
 * hook (the capture replaces attention outputs by sparse ones, docs/salca.md#metrics); the hook
 * then owns the KV history and the model's cache may be NULL.
 *
 * Ownership: nn_llama_new_tiny / nn_llama_load return a model freed with nn_llama_free.
 * Functions return 0 or a negative enum err with a message in the errmsg given.
 */
#ifndef ACCELTRACE_NN_LLAMA_H
#define ACCELTRACE_NN_LLAMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

struct nn_llama_config {
    uint32_t D;         /* hidden_size */
    uint32_t L;         /* num_hidden_layers */
    uint32_t H;         /* num_attention_heads */
    uint32_t G;         /* num_key_value_heads */
    uint32_t d;         /* head_dim */
    uint32_t F;         /* intermediate_size */
    uint32_t V;         /* vocab_size */
    float eps;          /* rms_norm_eps */
    double rope_theta;  /* RoPE base (10000) */
    double rope_factor; /* linear rope_scaling factor f (1 = none) */
    uint32_t max_pos;   /* maximum position (65536 for tiny) */
};

/* The built-in tiny config (docs/salca.md#model-source): L 4, D 512, H 4, G 2, d 128, V 4096, F
 * 1536. */
void nn_llama_config_tiny(struct nn_llama_config *c);

struct nn_llama_layer {
    float *g_in, *g_post;       /* (D) RMSNorm gains */
    float *wq, *wk, *wv, *wo;   /* (H*d, D), (G*d, D), (G*d, D), (D, H*d) */
    float *bq, *bk, *bv;        /* optional biases or NULL */
    float *wgate, *wup, *wdown; /* (F, D), (F, D), (D, F) */
};

struct nn_llama {
    struct nn_llama_config cfg;
    float *emb;                    /* (V, D) */
    struct nn_llama_layer *layers; /* (L) */
    float *g_final;                /* (D) */
    float *lm;                     /* (V, D); == emb when tied */
    bool tied;
};

/*
 * Builds the tiny model from seed (capture/nn weightgen, one substream per HF tensor name):
 * linear weights N(0, 0.02^2), norm gains 1, untied lm_head; then per (l, g) scales k_proj
 * rows j and j + d/2 of outlier_pairs distinct pairs j in [d/4, d/2) by outlier_gain
 * (docs/salca.md#model-source; 0 pairs or gain 1 disables). cfg may be NULL for the tiny config.
 */
int nn_llama_new_tiny(struct nn_llama **out, const struct nn_llama_config *cfg, uint64_t seed,
                      uint32_t outlier_pairs, float outlier_gain, struct errmsg *e);

/*
 * Loads a checkpoint: path is a directory holding config.json and model.safetensors (or
 * model.safetensors.index.json with its shards). Every tensor of the documented table must be
 * present with its shape (lm_head absent: tied to the embedding); a mismatch or a missing
 * tensor is ERR_DATA naming it; an unsupported rope_scaling type is ERR_FORMAT naming it.
 */
int nn_llama_load(struct nn_llama **out, const char *path, struct errmsg *e);

/*
 * Parses config.json text into c (docs/salca.md#model-source field list; absent num_key_value_heads
 * = H, absent head_dim = D/H, rope_scaling null or linear). ERR_CONFIG/ERR_FORMAT with message.
 */
int nn_llama_parse_config(const char *json_text, struct nn_llama_config *c, struct errmsg *e);

void nn_llama_free(struct nn_llama *m);

/* KV cache for cap positions. */
struct nn_llama_cache {
    uint32_t L, G, d, cap, n; /* n = positions filled */
    float *k, *v;             /* (L, G, cap, d) post-RoPE keys, values */
};

int nn_llama_cache_init(struct nn_llama_cache *c, const struct nn_llama_config *cfg, uint32_t cap);
void nn_llama_cache_release(struct nn_llama_cache *c);

/*
 * RoPE of docs/salca.md#model-source on one head vector x (d floats), rotate_half layout, at
 * position pos/factor: (x_j, x_{j+d/2}) turns by (pos/factor) * theta^(-2j/d). Angles in double.
 */
void nn_llama_rope(float *x, uint32_t d, double pos, double theta, double factor);

/*
 * Runs count tokens at positions cache->n .. cache->n + count - 1 through the model in
 * chunks of `chunk` tokens (0: 256), appending their keys and values to the cache, and
 * writes the logits of the last token (V floats) when logits is not NULL.
 * ERR_LIMIT when the cache or max_pos would overflow.
 */
int nn_llama_prefill(const struct nn_llama *m, struct nn_llama_cache *cache, const uint32_t *tokens,
                     uint32_t count, uint32_t chunk, float *logits, struct errmsg *e);

/*
 * Attention hook for one decode step and layer l: q (H, d) post-RoPE queries, k, v (G, d)
 * the new token's post-RoPE key and value; writes out (H, d), the attention output per
 * head before o_proj.
 */
typedef void (*nn_llama_attn_fn)(void *ctx, uint32_t l, const float *q, const float *k,
                                 const float *v, float *out);

/*
 * Decodes one token at position pos and writes its logits (V floats). With attn == NULL,
 * attention is dense over the cache (the token's key and value are appended first; pos
 * must equal cache->n). With a hook, the hook computes every layer's attention and the
 * cache (may be NULL) is not touched.
 */
int nn_llama_decode(const struct nn_llama *m, struct nn_llama_cache *cache, uint32_t pos,
                    uint32_t token, nn_llama_attn_fn attn, void *ctx, float *logits,
                    struct errmsg *e);

/* Number of FP32 parameters of a model with config c (untied lm_head). */
size_t nn_llama_param_floats(const struct nn_llama_config *c);

/* Index of the largest logit (ties: lowest id). */
uint32_t nn_llama_argmax(const float *logits, uint32_t V);

#endif
