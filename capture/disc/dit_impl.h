/*
 * dit_impl: the layout shared by the DiT's source files (dit.c: configs, weights,
 * forward; dit_state.c: CTR caches, ST masks and their spill file; dit_attn.c: the
 * self-attention kernels). Not a public interface: only capture/disc/dit*.c include it.
 */
#ifndef ACCELTRACE_DIT_IMPL_H
#define ACCELTRACE_DIT_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "capture/disc/dit.h"
#include "capture/nn/weightgen.h"
#include "common/err.h"
#include "common/threads.h"

#define DIT_MAX_TENSORS 1024
#define DIT_SCORE_CHUNK_FLOATS (1u << 22) /* score rows computed at once: chunk * N floats */

struct disc_spill;

struct dit_tensor {
    char name[96];
    float *p;
    int ndim;
    int64_t shape[4];
    enum wg_init init;
    double param;
    size_t fan_in, fan_out;
    int parts; /* 3 for a fused qkv that diffusers names fill by thirds, else 1 */
};

struct dit_block {
    float *sst;                                                   /* (6, d) */
    float *q_w, *q_b, *k_w, *k_b, *v_w, *v_b, *o_w, *o_b;         /* attn1 */
    float *q2_w, *q2_b, *k2_w, *k2_b, *v2_w, *v2_b, *o2_w, *o2_b; /* attn2 */
    float *f1_w, *f1_b, *f2_w, *f2_b;                             /* (4d, d), (4d), (d, 4d), (d) */
    float *ada_w, *ada_b; /* DiT adaLN_modulation.1: (6d, d), (6d) */
};

struct dit_model {
    struct dit_config cfg;
    struct dit_tensor *t;
    size_t n_t;
    int table_rc; /* first error of building t (ERR_NOMEM; 0 none): add_tensor is a no-op after */
    struct dit_block *blk;
    float *patch_w, *patch_b, *t1_w, *t1_b, *t2_w, *t2_b, *ada_w, *ada_b;
    float *c1_w, *c1_b, *c2_w, *c2_b, *final_sst, *out_w, *out_b;
    float *y_table;         /* DiT: (classes + 1, d) class embedding, last row the null class */
    float *fada_w, *fada_b; /* DiT final_layer.adaLN_modulation.1: (2d, d), (2d) */
    int label[2];           /* DiT: class label per batch element */
    float *pe;              /* (N, d) */
    /* Text: caption projection and cross-attention K/V per batch element. */
    int n_batch;
    float *y;       /* (B, T, d) */
    float *tk, *tv; /* (L, B, T, d) */
    /* Scratch of one forward pass. */
    float *xp;          /* (N, C_in p^2) patches */
    float *x0;          /* (N, d) patch embedding + PE */
    float *a, *kk, *vv; /* (B, N, d) each */
    float *q, *o;       /* (B, N, d) each: Q of kept rows, attention output */
    float *hs, *tmp;    /* (N, d) each */
    float *ff;          /* (N, 4d) */
    float *scores;      /* chunk * N */
    float *store;       /* (B, h, N, N) ST-target probability store, lazily */
    float *wscratch;    /* per-worker (DIT_REUSE_ROWS + 1) * N floats */
    float *kvpack;      /* (2, N, dh): one head's K and V packed for the sparse paths */
    int32_t *widx;      /* per-worker mask rows' column lists and tile starts (dit_attn.c) */
    int wscratch_workers;
    float *mod;      /* 6d adaLN */
    float *blockmod; /* (2, 6d): per batch element */
    float *e;        /* (2, d): conditioning (PixArt: temb, shared; DiT: temb + y_b) */
    float *fin;      /* (N, p^2 C_out) */
    struct errmsg err;
};

struct dit_state {
    int n_batch;
    bool ctr, st;
    size_t words;
    /* Block outputs: (L, B, N, d) with CTR held; (2, B, N, d) without CTR or spilled (a
     * block never reads and writes the same storage). */
    float *cache_ff;
    bool ff_spill;
    uint8_t *ff_written; /* [L * B]: the spill file holds (block, batch) */
    /* ST masks: (B, L, h, N, words) held; one (h, N, words) group when spilled. */
    uint64_t *masks;
    bool mask_spill;
    int mres;           /* resident group batch * L + block; -1 none */
    bool mdirty;        /* the resident group differs from its spill copy */
    uint8_t *m_written; /* [B * L]: the spill file holds the group */
    struct disc_spill *spill;
    uint64_t ff_base; /* byte offset of the block-output region in the spill file */
    struct errmsg err;
    const struct dit_config *cfg;
};

/* A model with its tensor table and scratch, weights unset (dit.c). 0 or an err in e. */
int dit_model_alloc(struct dit_model **out, const struct dit_config *cfg, struct errmsg *e);
/* Elements of tensor t. */
size_t dit_tensor_numel(const struct dit_tensor *t);

/* Makes the ST masks of (batch, block) resident and points *out at its h masks (h, N,
 * words). 0 or ERR_IO with the message in the state. */
int dit_state_mask_group(struct dit_state *s, int batch, int block, uint64_t **out);

/* Block-output buffer of (blk, b): the cache of the block with CTR held, else a ring slot. */
float *dit_state_ff(struct dit_state *s, int blk, int b);
/* Spilled block outputs: the previous step's outputs of (blk, b) into the held slot
 * (nothing when all_kept: every row is recomputed); the slot back to the spill file. */
int dit_state_ff_load(struct dit_state *s, int blk, int b, bool all_kept);
int dit_state_ff_store(struct dit_state *s, int blk, int b);

/* Rows of a (rows, cols) array with leading dimension ld, for a pool task. */
struct dit_rows_ctx {
    float *x;
    int cols, ld;
};

/* fn over rows [0, n) on the pool (inline with no pool or one row). */
void dit_run_rows(struct thread_pool *pool, size_t n, pool_fn fn, void *ctx);

/* Dense attention of one head (see dit_attn.c). */
void dit_attn_dense(struct thread_pool *pool, int rows, int n_k, int dh, const float *q, int ldq,
                    const float *k, int ldk, const float *v, int ldv, float *o, int ldo,
                    float scale, float *scratch);

/* How the ST kernels turn a mask row into its column list: the CPU's best path (the
 * default), or a slower one for tests: AVX2 (skipping AVX-512), or the portable byte table. */
enum dit_list_path { DIT_LIST_BEST, DIT_LIST_AVX512, DIT_LIST_AVX2, DIT_LIST_BYTES };
/* Sets the path (process-wide; not while a kernel runs) and returns the one taken on this
 * CPU. */
enum dit_list_path dit_set_list_path(enum dit_list_path path);

/* Query rows the reuse kernel takes together, so a column tile of K and V stays in cache
 * while they all use it (dit_attn.c; 16 measured 2-4% slower at 512 px and 64 no faster,
 * docs/performance.md). */
#define DIT_REUSE_ROWS 32

/* Per-worker scratch of the row kernels for N tokens, in 4-byte elements:
 * (DIT_REUSE_ROWS + 1) * N floats (a probability row, the rows' scores) and
 * DIT_REUSE_ROWS * (N + N/64 + 2) + 16 column indices and tile starts. The memory plan
 * counts it from here. */
size_t dit_wscratch_elems(size_t N);

/* That scratch for each of the pool's workers (kept while large enough). 0 or ERR_NOMEM. */
int dit_ensure_wscratch(struct dit_model *m, struct thread_pool *pool);

/* The ST reuse path of one batch entry of a block, all heads: rows query rows (token kept[r],
 * or r without kept) of each head against its K and V under its mask rows (see
 * dit_attn.c). Each head's K and V are packed into kp and vp first (on the pool, as one
 * pool_for with the kernel). */
struct dit_reuse_ctx {
    struct dit_model *m; /* its per-worker scratch (dit_ensure_wscratch first) */
    const int32_t *kept;
    const uint64_t *mask; /* (heads, N, words) */
    size_t words;
    const float *q, *k, *v; /* head h at offset h * dh, row stride d */
    float *o;               /* head h at offset h * dh, row stride d */
    int d, dh, N, heads;
    float scale;
    float *kp, *vp; /* N * dh floats each */
};
void dit_attn_reuse(struct thread_pool *pool, const struct dit_reuse_ctx *g, size_t rows);

/* Self-attention core of block blk (docs/disc.md#forward-pass, docs/disc.md#st-masks): Q (B, nk, d)
 * in m->q, K and V (B, N, d) in m->kk / m->vv; output (B, nk, d) in m->o. 0 or an err in m->err. */
int dit_self_attention(struct dit_model *m, struct dit_state *s, int blk, const struct dit_fwd *f);

#endif
