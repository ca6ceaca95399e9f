/*
 * dit: a PixArt-Sigma-style diffusion transformer (docs/disc.md#model-and-sampler) with CTR and ST
 * executed for real (sections 3-4).
 *
 * Shapes: latent x (C_in, H, W) row-major; tokens N = (H/p)(W/p), token i = gy*G + gx;
 * activations (N, d) row-major; text (T, D_c). Linear weights are [out, in].
 * Two families share the forward pass: the text-conditioned PixArt configs (adaLN-single,
 * cross-attention to the caption) and the class-conditional DiT configs (Peebles & Xie 2023,
 * docs/models.md#dit-xl2: per-block adaLN-Zero modulation of c = temb(t) + y_emb[label], no
 * cross-attention, no text). DiT models keep the original facebookresearch/DiT tensor names
 * and accept the diffusers DiTTransformer2DModel names as aliases.
 * A struct dit_model owns its FP32 weights (seeded or loaded from safetensors, with the
 * public diffusers tensor names) and the per-run caption activations. A struct dit_state
 * owns what persists between steps of one sampler run: the CTR cache of block outputs (one
 * (N, d) F32 array per block and batch element; the outputs of self- and cross-attention
 * are never read again once the block output is cached, so they are not kept) and ST masks
 * (one N x N bitset per batch element, block and head, rows padded to 64-bit words). Either
 * may live in a spill file with a bounded part held (struct dit_state_opts). Models never
 * print; errors go to the model's errmsg.
 */
#ifndef ACCELTRACE_DIT_H
#define ACCELTRACE_DIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/err.h"

struct thread_pool;

/* Dimensions (docs/disc.md#model-configurations). */
struct dit_config {
    char name[32];
    int depth;       /* L */
    int hidden;      /* d */
    int heads;       /* h */
    int head_dim;    /* dh = d / h */
    int ffn;         /* 4d */
    int patch;       /* p */
    int c_in, c_out; /* 4, 8 */
    int caption;     /* D_c (0 for class-conditional configs) */
    int text_tokens; /* T (0 for class-conditional configs) */
    bool class_cond; /* DiT family: class label conditioning, no cross-attention */
    int classes;     /* number of classes (1000); the null class for CFG is `classes` */
    int image;       /* pixels, square */
    int lat;         /* H = W = image / 8 */
    int grid;        /* G = lat / p */
    int tokens;      /* N = G * G */
    int default_steps;
};

/*
 * Fills cfg for model name ("micro", "tiny", "pixart-sigma-xl", "dit-micro", "dit-xl-2") at
 * image size image_px (0 = the config's default). ERR_USAGE with a message for an unknown
 * name or a size the config does not allow (multiple of 16 for micro, tiny and dit-micro;
 * 512, 1024, 2048 for pixart-sigma-xl; 256, 512 for dit-xl-2).
 */
int dit_config_get(struct dit_config *cfg, const char *name, int image_px, struct errmsg *e);

/* Parameter count of cfg (docs/disc.md#model-configurations [derived]: 610,856,096 for
 * pixart-sigma-xl; 674,834,720 learned parameters for dit-xl-2, the fixed sin-cos pos_embed of N*d
 * not counted). */
uint64_t dit_param_count(const struct dit_config *cfg);

struct dit_model;

/* New model with seeded weights (docs/disc.md#weights init, substreams by diffusers name; DiT
 * configs by original DiT name, docs/models.md#dit-xl2). */
int dit_model_new_seeded(struct dit_model **out, const struct dit_config *cfg, uint64_t seed,
                         struct errmsg *e);

/*
 * New model from safetensors files (shards). Every tensor must be present with its shape;
 * F32/F16/BF16 are converted; original PixArt names are aliases (fused qkv / kv split
 * along dim 0); pos_embed, pos_embed.pos_embed, y_embedder.y_embedding and
 * caption_projection.y_embedding are ignored; any other unknown name is an error. Errors
 * are ERR_DATA naming the tensor and file (ERR_IO when a file cannot be opened).
 * DiT configs: the original names are canonical; diffusers names are aliases (to_q/to_k/to_v
 * fill thirds of the fused attn.qkv, every block's norm1.emb copy of the shared timestep and
 * class embedder must equal block 0's, proj_out_1/proj_out_2 are the final layer).
 */
int dit_model_new_files(struct dit_model **out, const struct dit_config *cfg,
                        const char *const *paths, int n_paths, struct errmsg *e);

void dit_model_free(struct dit_model *m);
const struct dit_config *dit_model_config(const struct dit_model *m);

/* Number of named tensors and the i-th (diffusers name, data, shape). */
size_t dit_model_tensor_count(const struct dit_model *m);
const char *dit_model_tensor(const struct dit_model *m, size_t i, float **data, int *ndim,
                             int64_t shape[4]);

/* Writes every tensor under its canonical name (diffusers for PixArt configs, original DiT
 * names for DiT configs) to a safetensors file (0 = F32, 1 = F16, 2 = BF16, as enum st_dtype). */
int dit_model_save(const struct dit_model *m, const char *path, int dtype, struct errmsg *e);

/*
 * Sets the text conditioning for batch element b (0 = cond, 1 = null for CFG): text is
 * (T, D_c) FP32. Computes the caption projection y_b = Lc2(GELU(Lc1(text))) and the
 * cross-attention K/V of every block once (constant over steps). n_batch is 1 or 2.
 */
int dit_model_set_text(struct dit_model *m, int n_batch, int b, const float *text);

/*
 * Class-conditional configs: sets the class label of batch element b (0 = cond, 1 = the null
 * class `classes` for CFG). label in [0, classes]; ERR_USAGE otherwise or for a text config
 * (whose conditioning is dit_model_set_text, which in turn refuses class configs).
 */
int dit_model_set_class(struct dit_model *m, int n_batch, int b, int label);

/* ST behaviour of one forward pass. */
enum dit_st_mode { DIT_ST_OFF = 0, DIT_ST_GENERATE = 1, DIT_ST_REUSE = 2 };

/* Per-run state (CTR caches, ST masks); see the top comment. */
struct dit_state;

/* What a state holds and where (docs/models.md#disc-memory-plan). */
struct dit_state_opts {
    bool ctr;              /* allocate CTR block-output caches (else n_kept must be N) */
    bool st;               /* allocate ST masks, initialised all ones */
    bool spill_masks;      /* ST masks live in the spill file; one (batch, block) group held */
    bool spill_ctr;        /* CTR block outputs live in the spill file; two blocks held */
    const char *spill_dir; /* folder of the spill file (NULL = the current folder) */
};

/*
 * New state for n_batch batch elements as o says. A spill file, when one is asked for, is
 * created in o->spill_dir and deleted when the state is freed. 0, ERR_NOMEM or ERR_IO with
 * the message in e.
 */
int dit_state_open(struct dit_state **out, const struct dit_model *m, int n_batch,
                   const struct dit_state_opts *o, struct errmsg *e);

/* dit_state_open with everything held: ctr and st as given, no spill file. */
int dit_state_new(struct dit_state **out, const struct dit_model *m, int n_batch, bool ctr,
                  bool st);
void dit_state_free(struct dit_state *s);

/*
 * ST mask of (batch, block, head): N rows of dit_mask_words() words. With spilled masks the
 * pointer stays valid until the next call for another (batch, block) or the next forward;
 * NULL when the spill file cannot be read or written (dit_state_errmsg says why).
 */
uint64_t *dit_state_mask(struct dit_state *s, int batch, int block, int head);
size_t dit_mask_words(const struct dit_config *cfg);

/* The state's error message (spill file I/O). */
const char *dit_state_errmsg(const struct dit_state *s);

/* Bytes of the state's spill file so far (0 without one). */
uint64_t dit_state_spill_bytes(const struct dit_state *s);

/*
 * What persists between steps, for a checkpoint of a sampler run: with CTR the block
 * outputs (L, B, N, d) FP32, with ST the masks (B, L, h, N, words) u64, in host byte order
 * and this order whatever is held or spilled (a never-written spilled part is written as
 * the fresh state has it: zeros, all-ones masks). dit_state_save_bytes is its size for a
 * state of cfg, n_batch, ctr and st. Save: 0 or ERR_IO (the spill file or f failed, message
 * in e); a large state goes to f a mask group or block output at a time. Load reads the same into a
 * fresh state of the same shape: 0, ERR_DATA at a short read (e not set: the caller names the file
 * and offset) or ERR_IO.
 */
uint64_t dit_state_save_bytes(const struct dit_config *cfg, int n_batch, bool ctr, bool st);
int dit_state_save(struct dit_state *s, FILE *f, struct errmsg *e);
int dit_state_load(struct dit_state *s, FILE *f, struct errmsg *e);

/* Controls of one forward pass. */
struct dit_fwd {
    double t;            /* timestep t_k */
    const int32_t *kept; /* ascending token indices of S_k */
    int n_kept;          /* N_k; kept may be NULL when n_kept = N */
    enum dit_st_mode st;
    const float *theta; /* [L] effective theta per block (generate) */
    /* ST target: when st_target >= 0 at a generation step, alpha_b is chosen per block
     * (docs/disc.md#st-masks) and written to alpha_out[b], theta to theta_out[b]; short_out[b] =
     * true when even alpha = N falls short. */
    double st_target;
    float *alpha_out;
    float *theta_out;
    bool *short_out;
    struct thread_pool *pool; /* optional, for per-row sparse work */
};

/*
 * One forward pass on latent x (C_in, H, W), shared by all batch elements; eps receives
 * n_batch latents (C_in, H, W) (variance channels discarded). With CTR caches the pruned
 * rows come from the caches; without them n_kept must be N. 0 or a negative err.
 */
int dit_forward(struct dit_model *m, struct dit_state *s, const float *x, const struct dit_fwd *f,
                float *eps);

/*
 * ST mask generation for one computed row (docs/disc.md#st-masks): P = softmax(s) over n scores
 * (scaled), bit j of mask_row set when P_j >= theta; an empty row keeps its argmax (the lowest j on
 * ties). p is scratch of n floats. Returns the row's nnz (>= 1).
 */
size_t dit_st_generate_row(const float *s, int n, float theta, uint64_t *mask_row, float *p);

/* The model's error message. */
const char *dit_model_errmsg(const struct dit_model *m);

#endif
