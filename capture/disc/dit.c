/*
 * dit: PixArt-Sigma-style DiT forward pass with CTR caches and ST masks
 * (specs/disc.md 2.2, 3, 4). See dit.h for shapes and ownership.
 */
#include "capture/disc/dit.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "capture/disc/disc_spill.h"
#include "capture/nn/nn.h"
#include "capture/nn/safetensors.h"
#include "capture/nn/weightgen.h"
#include "common/mem.h"
#include "common/threads.h"

#define DIT_MAX_TENSORS 1024
#define DIT_SCORE_CHUNK_FLOATS (1u << 22) /* score rows computed at once: chunk * N floats */

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
    float *kvpack;      /* (2, N, dh): one head's K and V packed for the sparse paths */
    float *store;       /* (B, h, N, N) ST-target probability store, lazily */
    float *wscratch;    /* per-worker 2N floats */
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

/* ---- configurations (spec 2.1) ---- */

int dit_config_get(struct dit_config *c, const char *name, int image_px, struct errmsg *e)
{
    memset(c, 0, sizeof *c);
    c->patch = 2;
    c->c_in = 4;
    c->c_out = 8;
    if (!strcmp(name, "micro")) {
        c->depth = 2, c->hidden = 64, c->heads = 4, c->caption = 32, c->text_tokens = 16;
        c->image = 128, c->default_steps = 4;
    } else if (!strcmp(name, "tiny")) {
        c->depth = 12, c->hidden = 384, c->heads = 6, c->caption = 4096, c->text_tokens = 300;
        c->image = 512, c->default_steps = 20;
    } else if (!strcmp(name, "trained-small")) {
        /* shipped weights trained on photographs (docs/models.md#trained-small): no text
         * conditioning; its caption input is a null caption of 4 x 32 zeros */
        c->depth = 6, c->hidden = 256, c->heads = 4, c->caption = 32, c->text_tokens = 4;
        c->image = 256, c->default_steps = 20;
    } else if (!strcmp(name, "pixart-sigma-xl")) {
        c->depth = 28, c->hidden = 1152, c->heads = 16, c->caption = 4096;
        c->text_tokens = 300, c->image = 1024, c->default_steps = 20;
    } else if (!strcmp(name, "dit-xl-2")) {
        /* DiT-XL/2 (Peebles & Xie 2023, Table 1; facebookresearch/DiT models.py DiT_XL_2) */
        c->depth = 28, c->hidden = 1152, c->heads = 16, c->class_cond = true;
        c->classes = 1000, c->image = 256, c->default_steps = 20;
    } else if (!strcmp(name, "dit-micro")) {
        /* the DiT-XL/2 architecture at test size */
        c->depth = 2, c->hidden = 64, c->heads = 4, c->class_cond = true;
        c->classes = 1000, c->image = 128, c->default_steps = 4;
    } else {
        return errmsg_set(e, ERR_USAGE,
                          "unknown model '%s' (micro, tiny, trained-small, pixart-sigma-xl, "
                          "dit-micro or dit-xl-2)",
                          name);
    }
    snprintf(c->name, sizeof c->name, "%s", name);
    if (image_px) {
        bool xl = !strcmp(name, "pixart-sigma-xl"), dxl = !strcmp(name, "dit-xl-2");
        bool ok = xl    ? (image_px == 512 || image_px == 1024 || image_px == 2048)
                  : dxl ? (image_px == 256 || image_px == 512)
                        : (image_px > 0 && image_px % 16 == 0 && image_px <= 8192);
        if (!ok)
            return errmsg_set(e, ERR_USAGE,
                              xl    ? "image size %d not allowed for %s (512, 1024 or 2048)"
                              : dxl ? "image size %d not allowed for %s (256 or 512)"
                                    : "image size %d not allowed for %s (a multiple of 16)",
                              image_px, name);
        c->image = image_px;
    }
    c->head_dim = c->hidden / c->heads;
    c->ffn = 4 * c->hidden;
    c->lat = c->image / 8;
    c->grid = c->lat / c->patch;
    c->tokens = c->grid * c->grid;
    return 0;
}

uint64_t dit_param_count(const struct dit_config *c)
{
    uint64_t d = (uint64_t)c->hidden, p2 = (uint64_t)c->patch * c->patch;
    uint64_t n = d * c->c_in * p2 + d; /* patch embedding */
    if (c->class_cond) {
        /* DiT (docs/models.md#dit-xl2): t_embedder, y_embedder with the null class, blocks
         * of qkv + proj + fc1 + fc2 + adaLN (6d), final adaLN (2d) + linear. */
        n += d * 256 + d + d * d + d;
        n += ((uint64_t)c->classes + 1) * d;
        n += (18 * d * d + 15 * d) * (uint64_t)c->depth;
        n += 2 * d * d + 2 * d + p2 * c->c_out * d + p2 * c->c_out;
        return n;
    }
    n += d * 256 + d + d * d + d;                  /* timestep embedder */
    n += 6 * d * d + 6 * d;                        /* adaln_single.linear */
    n += d * (uint64_t)c->caption + d + d * d + d; /* caption projection */
    uint64_t blk = 6 * d + 8 * (d * d + d) + 2 * 4 * d * d + 4 * d + d;
    n += blk * (uint64_t)c->depth;
    n += 2 * d + p2 * c->c_out * d + p2 * c->c_out; /* final layer */
    return n;
}

/* ---- tensor table ---- */

/* The next tensor of the table, or NULL once the table holds an error (m->table_rc, kept
 * from the first failure so build_table checks once at the end). */
static float *add_tensor(struct dit_model *m, const char *name, int ndim, int64_t s0, int64_t s1,
                         int64_t s2, int64_t s3, enum wg_init init, double param, size_t fan_in,
                         size_t fan_out)
{
    if (m->table_rc)
        return NULL;
    struct dit_tensor *t = &m->t[m->n_t];
    snprintf(t->name, sizeof t->name, "%s", name);
    t->ndim = ndim;
    t->shape[0] = s0, t->shape[1] = s1, t->shape[2] = s2, t->shape[3] = s3;
    size_t n = 1;
    for (int i = 0; i < ndim; i++)
        n *= (size_t)t->shape[i];
    t->init = init, t->param = param, t->fan_in = fan_in, t->fan_out = fan_out;
    t->parts = 1;
    t->p = mem_alloc(n * sizeof(float));
    if (!t->p) {
        m->table_rc = ERR_NOMEM;
        return NULL;
    }
    m->n_t++;
    return t->p;
}

static size_t tensor_numel(const struct dit_tensor *t)
{
    size_t n = 1;
    for (int i = 0; i < t->ndim; i++)
        n *= (size_t)t->shape[i];
    return n;
}

/* Linear weight [out, in] + bias [out]: weights Xavier or N(0, 0.02^2), biases 0
 * (spec 2.3). Errors stay in m->table_rc. */
static void add_linear(struct dit_model *m, const char *base, int out, int in, bool xavier,
                       float **w, float **b)
{
    char n[96];
    snprintf(n, sizeof n, "%s.weight", base);
    *w = add_tensor(m, n, 2, out, in, 0, 0, xavier ? WG_XAVIER_UNIFORM : WG_NORMAL, 0.02,
                    (size_t)in, (size_t)out);
    snprintf(n, sizeof n, "%s.bias", base);
    *b = add_tensor(m, n, 1, out, 0, 0, 0, WG_ZEROS, 0, 0, 0);
}

/*
 * The DiT tensor table under the original facebookresearch/DiT names. Seeded init follows
 * DiT's initialize_weights (Xavier linears, N(0, 0.02^2) label table and timestep MLP, zero
 * biases) except that nothing is zero-initialised: adaLN-Zero zeroes every modulation and the
 * final linear, which would make eps = 0; the adaLN weights draw N(0, 0.02^2) instead.
 */
static int build_table_class(struct dit_model *m)
{
    const struct dit_config *c = &m->cfg;
    int d = c->hidden, p2 = c->patch * c->patch;
    m->t = mem_calloc((size_t)(16 + 10 * c->depth), sizeof *m->t);
    m->blk = mem_calloc((size_t)c->depth, sizeof *m->blk);
    if (!m->t || !m->blk)
        return ERR_NOMEM;
    m->patch_w = add_tensor(m, "x_embedder.proj.weight", 4, d, c->c_in, c->patch, c->patch,
                            WG_XAVIER_UNIFORM, 0, (size_t)(c->c_in * p2), (size_t)d);
    m->patch_b = add_tensor(m, "x_embedder.proj.bias", 1, d, 0, 0, 0, WG_ZEROS, 0, 0, 0);
    add_linear(m, "t_embedder.mlp.0", d, 256, false, &m->t1_w, &m->t1_b);
    add_linear(m, "t_embedder.mlp.2", d, d, false, &m->t2_w, &m->t2_b);
    m->y_table = add_tensor(m, "y_embedder.embedding_table.weight", 2, c->classes + 1, d, 0, 0,
                            WG_NORMAL, 0.02, 0, 0);
    for (int i = 0; i < c->depth && !m->table_rc; i++) {
        struct dit_block *b = &m->blk[i];
        char n[96];
        size_t dd = (size_t)d * d;
        snprintf(n, sizeof n, "blocks.%d.attn.qkv", i);
        add_linear(m, n, 3 * d, d, true, &b->q_w, &b->q_b);
        if (m->table_rc)
            break;
        m->t[m->n_t - 2].parts = m->t[m->n_t - 1].parts = 3;
        b->k_w = b->q_w + dd, b->v_w = b->q_w + 2 * dd;
        b->k_b = b->q_b + d, b->v_b = b->q_b + 2 * d;
        snprintf(n, sizeof n, "blocks.%d.attn.proj", i);
        add_linear(m, n, d, d, true, &b->o_w, &b->o_b);
        snprintf(n, sizeof n, "blocks.%d.mlp.fc1", i);
        add_linear(m, n, 4 * d, d, true, &b->f1_w, &b->f1_b);
        snprintf(n, sizeof n, "blocks.%d.mlp.fc2", i);
        add_linear(m, n, d, 4 * d, true, &b->f2_w, &b->f2_b);
        snprintf(n, sizeof n, "blocks.%d.adaLN_modulation.1", i);
        add_linear(m, n, 6 * d, d, false, &b->ada_w, &b->ada_b);
    }
    add_linear(m, "final_layer.adaLN_modulation.1", 2 * d, d, false, &m->fada_w, &m->fada_b);
    add_linear(m, "final_layer.linear", p2 * c->c_out, d, true, &m->out_w, &m->out_b);
    return m->table_rc;
}

static int build_table(struct dit_model *m)
{
    if (m->cfg.class_cond)
        return build_table_class(m);
    const struct dit_config *c = &m->cfg;
    int d = c->hidden, p2 = c->patch * c->patch;
    double tstd = 1.0 / sqrt((double)d); /* scale-shift tables N(0,1)/sqrt(d), spec 2.3 */
    m->t = mem_calloc((size_t)(16 + 22 * c->depth), sizeof *m->t);
    m->blk = mem_calloc((size_t)c->depth, sizeof *m->blk);
    if (!m->t || !m->blk)
        return ERR_NOMEM;
    m->patch_w = add_tensor(m, "pos_embed.proj.weight", 4, d, c->c_in, c->patch, c->patch,
                            WG_XAVIER_UNIFORM, 0, (size_t)(c->c_in * p2), (size_t)d);
    m->patch_b = add_tensor(m, "pos_embed.proj.bias", 1, d, 0, 0, 0, WG_ZEROS, 0, 0, 0);
    add_linear(m, "adaln_single.emb.timestep_embedder.linear_1", d, 256, false, &m->t1_w, &m->t1_b);
    add_linear(m, "adaln_single.emb.timestep_embedder.linear_2", d, d, false, &m->t2_w, &m->t2_b);
    add_linear(m, "adaln_single.linear", 6 * d, d, false, &m->ada_w, &m->ada_b);
    add_linear(m, "caption_projection.linear_1", d, c->caption, false, &m->c1_w, &m->c1_b);
    add_linear(m, "caption_projection.linear_2", d, d, false, &m->c2_w, &m->c2_b);
    for (int i = 0; i < c->depth && !m->table_rc; i++) {
        struct dit_block *b = &m->blk[i];
        char n[96];
        snprintf(n, sizeof n, "transformer_blocks.%d.scale_shift_table", i);
        b->sst = add_tensor(m, n, 2, 6, d, 0, 0, WG_NORMAL, tstd, 0, 0);
#define LIN(suffix, out, in, W, B)                                                                 \
    do {                                                                                           \
        snprintf(n, sizeof n, "transformer_blocks.%d.%s", i, suffix);                              \
        add_linear(m, n, out, in, true, &b->W, &b->B);                                             \
    } while (0)
        LIN("attn1.to_q", d, d, q_w, q_b);
        LIN("attn1.to_k", d, d, k_w, k_b);
        LIN("attn1.to_v", d, d, v_w, v_b);
        LIN("attn1.to_out.0", d, d, o_w, o_b);
        LIN("attn2.to_q", d, d, q2_w, q2_b);
        LIN("attn2.to_k", d, d, k2_w, k2_b);
        LIN("attn2.to_v", d, d, v2_w, v2_b);
        LIN("attn2.to_out.0", d, d, o2_w, o2_b);
        LIN("ff.net.0.proj", 4 * d, d, f1_w, f1_b);
        LIN("ff.net.2", d, 4 * d, f2_w, f2_b);
#undef LIN
    }
    m->final_sst = add_tensor(m, "scale_shift_table", 2, 2, d, 0, 0, WG_NORMAL, tstd, 0, 0);
    add_linear(m, "proj_out", p2 * c->c_out, d, true, &m->out_w, &m->out_b);
    return m->table_rc;
}

/* 2-D sin-cos positional embedding (spec 2.2 PE): x half then y half, each sin ++ cos. */
static void build_pe(struct dit_model *m)
{
    const struct dit_config *c = &m->cfg;
    int d = c->hidden, q = d / 4, G = c->grid;
    /* PixArt interpolates positions beyond a 32-patch base grid; DiT never does. */
    double s = !c->class_cond && (double)G / 32.0 > 1.0 ? (double)G / 32.0 : 1.0;
    for (int gy = 0; gy < G; gy++)
        for (int gx = 0; gx < G; gx++) {
            float *r = m->pe + ((size_t)gy * G + gx) * d;
            for (int half = 0; half < 2; half++) {
                double pos = (half == 0 ? gx : gy) / s;
                for (int j = 0; j < q; j++) {
                    double w = pow(10000.0, -(double)j / q);
                    r[half * (d / 2) + j] = (float)sin(pos * w);
                    r[half * (d / 2) + q + j] = (float)cos(pos * w);
                }
            }
        }
}

static int alloc_scratch(struct dit_model *m)
{
    const struct dit_config *c = &m->cfg;
    size_t N = (size_t)c->tokens, d = (size_t)c->hidden, p2 = (size_t)c->patch * c->patch;
    size_t chunk = DIT_SCORE_CHUNK_FLOATS / N;
    if (chunk < 1)
        chunk = 1;
    if (chunk > N)
        chunk = N;
    m->pe = mem_alloc(N * d * sizeof(float));
    m->xp = mem_alloc(N * c->c_in * p2 * sizeof(float));
    m->x0 = mem_alloc(N * d * sizeof(float));
    m->a = mem_alloc(2 * N * d * sizeof(float));
    m->kk = mem_alloc(2 * N * d * sizeof(float));
    m->vv = mem_alloc(2 * N * d * sizeof(float));
    m->q = mem_alloc(2 * N * d * sizeof(float));
    m->o = mem_alloc(2 * N * d * sizeof(float));
    m->hs = mem_alloc(N * d * sizeof(float));
    m->tmp = mem_alloc(N * d * sizeof(float));
    m->ff = mem_alloc(N * 4 * d * sizeof(float));
    m->scores = mem_alloc(chunk * (N > (size_t)c->text_tokens ? N : (size_t)c->text_tokens) *
                          sizeof(float));
    m->mod = mem_alloc(6 * d * sizeof(float));
    m->blockmod = mem_alloc(2 * 6 * d * sizeof(float));
    m->e = mem_alloc(2 * d * sizeof(float));
    m->fin = mem_alloc(N * p2 * c->c_out * sizeof(float));
    m->kvpack = mem_alloc(2 * N * (size_t)c->head_dim * sizeof(float));
    if (!m->pe || !m->xp || !m->x0 || !m->a || !m->kk || !m->vv || !m->q || !m->o || !m->hs ||
        !m->tmp || !m->ff || !m->scores || !m->mod || !m->blockmod || !m->e || !m->fin ||
        !m->kvpack)
        return ERR_NOMEM;
    build_pe(m);
    return 0;
}

static int model_alloc(struct dit_model **out, const struct dit_config *cfg, struct errmsg *e)
{
    struct dit_model *m = mem_calloc(1, sizeof *m);
    *out = NULL;
    if (!m)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    m->cfg = *cfg;
    int rc = build_table(m);
    if (!rc)
        rc = alloc_scratch(m);
    if (rc) {
        dit_model_free(m);
        return errmsg_set(e, rc, "out of memory for model '%s'", cfg->name);
    }
    *out = m;
    return 0;
}

int dit_model_new_seeded(struct dit_model **out, const struct dit_config *cfg, uint64_t seed,
                         struct errmsg *e)
{
    int rc = model_alloc(out, cfg, e);
    if (rc)
        return rc;
    struct dit_model *m = *out;
    for (size_t i = 0; i < m->n_t; i++) {
        struct dit_tensor *t = &m->t[i];
        wg_fill(t->p, tensor_numel(t), t->init, t->param, t->fan_in, t->fan_out, seed, t->name);
    }
    return 0;
}

static struct dit_tensor *find_tensor(struct dit_model *m, const char *name)
{
    for (size_t i = 0; i < m->n_t; i++)
        if (!strcmp(m->t[i].name, name))
            return &m->t[i];
    return NULL;
}

/*
 * Maps an original PixArt name to the diffusers name (spec 2.3 table). parts > 1 for fused
 * tensors: out receives the name with "%s" standing for the part (q/k/v or k/v).
 */
static bool alias_name(const char *name, char *out, size_t cap, int *parts)
{
    static const struct {
        const char *from, *to;
        int parts;
    } flat[] = {
        {"x_embedder.proj.", "pos_embed.proj.", 1},
        {"t_embedder.mlp.0.", "adaln_single.emb.timestep_embedder.linear_1.", 1},
        {"t_embedder.mlp.2.", "adaln_single.emb.timestep_embedder.linear_2.", 1},
        {"t_block.1.", "adaln_single.linear.", 1},
        {"y_embedder.y_proj.fc1.", "caption_projection.linear_1.", 1},
        {"y_embedder.y_proj.fc2.", "caption_projection.linear_2.", 1},
        {"final_layer.linear.", "proj_out.", 1},
    };
    static const struct {
        const char *from, *to;
        int parts;
    } blk[] = {
        {"scale_shift_table", "scale_shift_table", 1},
        {"attn.qkv.", "attn1.to_%s.", 3},
        {"attn.proj.", "attn1.to_out.0.", 1},
        {"cross_attn.q_linear.", "attn2.to_q.", 1},
        {"cross_attn.kv_linear.", "attn2.to_%s.", 2},
        {"cross_attn.proj.", "attn2.to_out.0.", 1},
        {"mlp.fc1.", "ff.net.0.proj.", 1},
        {"mlp.fc2.", "ff.net.2.", 1},
    };
    *parts = 1;
    if (!strcmp(name, "final_layer.scale_shift_table")) {
        snprintf(out, cap, "scale_shift_table");
        return true;
    }
    for (size_t i = 0; i < sizeof flat / sizeof flat[0]; i++) {
        size_t l = strlen(flat[i].from);
        if (!strncmp(name, flat[i].from, l)) {
            snprintf(out, cap, "%s%s", flat[i].to, name + l);
            return true;
        }
    }
    int bi, used = 0;
    if (sscanf(name, "blocks.%d.%n", &bi, &used) == 1 && used > 0 && bi >= 0) {
        const char *rest = name + used;
        for (size_t i = 0; i < sizeof blk / sizeof blk[0]; i++) {
            size_t l = strlen(blk[i].from);
            if (!strncmp(rest, blk[i].from, l)) {
                snprintf(out, cap, "transformer_blocks.%d.%s%s", bi, blk[i].to, rest + l);
                *parts = blk[i].parts;
                return true;
            }
        }
    }
    return false;
}

static bool ignored_name(const char *n)
{
    return !strcmp(n, "pos_embed") || !strcmp(n, "pos_embed.pos_embed") ||
           !strcmp(n, "y_embedder.y_embedding") || !strcmp(n, "caption_projection.y_embedding");
}

static int load_one(struct dit_model *m, bool *loaded, const struct st_tensor_info *ti,
                    const char *file, struct errmsg *e)
{
    struct dit_tensor *t = find_tensor(m, ti->name);
    if (t) {
        size_t idx = (size_t)(t - m->t);
        if (loaded[idx])
            return errmsg_set(e, ERR_DATA, "tensor '%s' appears twice (again in '%s')", ti->name,
                              file);
        int rc = st_tensor_to_f32(ti, file, t->shape, t->ndim, t->p, e);
        if (rc)
            return rc;
        loaded[idx] = true;
        return 0;
    }
    char canon[160];
    int parts;
    if (!alias_name(ti->name, canon, sizeof canon, &parts))
        return errmsg_set(e, ERR_DATA, "unknown tensor '%s' in '%s'", ti->name, file);
    if (parts == 1) {
        t = find_tensor(m, canon);
        if (!t)
            return errmsg_set(e, ERR_DATA, "unknown tensor '%s' in '%s'", ti->name, file);
        size_t idx = (size_t)(t - m->t);
        if (loaded[idx])
            return errmsg_set(e, ERR_DATA, "tensor '%s' appears twice (alias '%s' in '%s')", canon,
                              ti->name, file);
        int rc = st_tensor_to_f32(ti, file, t->shape, t->ndim, t->p, e);
        if (rc)
            return rc;
        loaded[idx] = true;
        return 0;
    }
    /* Fused q/k/v or k/v: split along dim 0. */
    static const char *qkv[] = {"q", "k", "v"}, *kv[] = {"k", "v"};
    const char *const *pn = parts == 3 ? qkv : kv;
    struct dit_tensor *pt[3];
    for (int i = 0; i < parts; i++) {
        char nm[160];
        snprintf(nm, sizeof nm, canon, pn[i]);
        pt[i] = find_tensor(m, nm);
        if (!pt[i])
            return errmsg_set(e, ERR_DATA, "unknown tensor '%s' in '%s'", ti->name, file);
        if (loaded[pt[i] - m->t])
            return errmsg_set(e, ERR_DATA, "tensor '%s' appears twice (alias '%s' in '%s')",
                              pt[i]->name, ti->name, file);
    }
    int64_t shape[4];
    memcpy(shape, pt[0]->shape, sizeof shape);
    shape[0] *= parts;
    size_t per = tensor_numel(pt[0]);
    float *tmp = mem_alloc(per * (size_t)parts * sizeof(float));
    if (!tmp)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    int rc = st_tensor_to_f32(ti, file, shape, pt[0]->ndim, tmp, e);
    if (!rc)
        for (int i = 0; i < parts; i++) {
            memcpy(pt[i]->p, tmp + per * (size_t)i, per * sizeof(float));
            loaded[pt[i] - m->t] = true;
        }
    mem_free(tmp);
    return rc;
}

/*
 * Maps a diffusers DiTTransformer2DModel name to the original DiT name (docs/models.md
 * #dit-xl2). *part is the third of the fused qkv it fills (-1 for a whole tensor); *copy is
 * the block whose norm1.emb copy of the shared embedder it is (-1 otherwise).
 */
static bool alias_name_dit(const char *name, char *out, size_t cap, int *part, int *copy)
{
    static const struct {
        const char *from, *to;
    } flat[] = {
        {"pos_embed.proj.", "x_embedder.proj."},
        {"proj_out_1.", "final_layer.adaLN_modulation.1."},
        {"proj_out_2.", "final_layer.linear."},
    };
    static const struct {
        const char *from, *to;
        int part, shared;
    } blk[] = {
        {"norm1.emb.timestep_embedder.linear_1.", "t_embedder.mlp.0.", -1, 1},
        {"norm1.emb.timestep_embedder.linear_2.", "t_embedder.mlp.2.", -1, 1},
        {"norm1.emb.class_embedder.embedding_table.", "y_embedder.embedding_table.", -1, 1},
        {"norm1.linear.", "adaLN_modulation.1.", -1, 0},
        {"attn1.to_q.", "attn.qkv.", 0, 0},
        {"attn1.to_k.", "attn.qkv.", 1, 0},
        {"attn1.to_v.", "attn.qkv.", 2, 0},
        {"attn1.to_out.0.", "attn.proj.", -1, 0},
        {"ff.net.0.proj.", "mlp.fc1.", -1, 0},
        {"ff.net.2.", "mlp.fc2.", -1, 0},
    };
    *part = -1, *copy = -1;
    for (size_t i = 0; i < sizeof flat / sizeof flat[0]; i++) {
        size_t l = strlen(flat[i].from);
        if (!strncmp(name, flat[i].from, l)) {
            snprintf(out, cap, "%s%s", flat[i].to, name + l);
            return true;
        }
    }
    int bi, used = 0;
    if (sscanf(name, "transformer_blocks.%d.%n", &bi, &used) != 1 || used <= 0 || bi < 0)
        return false;
    const char *rest = name + used;
    for (size_t i = 0; i < sizeof blk / sizeof blk[0]; i++) {
        size_t l = strlen(blk[i].from);
        if (strncmp(rest, blk[i].from, l))
            continue;
        if (blk[i].shared) {
            snprintf(out, cap, "%s%s", blk[i].to, rest + l);
            *copy = bi;
        } else {
            snprintf(out, cap, "blocks.%d.%s%s", bi, blk[i].to, rest + l);
        }
        *part = blk[i].part;
        return true;
    }
    return false;
}

/* A copy of a shared embedder tensor read before block 0's, compared at the end. */
struct dit_pending {
    struct dit_tensor *t;
    float *p;
    char name[160], file[512];
};

/* Compares a norm1.emb copy with the loaded shared tensor. */
static int check_copy(const struct dit_tensor *t, const float *p, const char *name,
                      const char *file, struct errmsg *e)
{
    if (memcmp(t->p, p, tensor_numel(t) * sizeof(float)))
        return errmsg_set(e, ERR_DATA,
                          "tensor '%s' in '%s' differs from block 0's copy (the model has one "
                          "timestep and class embedder)",
                          name, file);
    return 0;
}

/* One tensor of a DiT checkpoint (original or diffusers name); loaded[] holds part bits. */
static int load_one_class(struct dit_model *m, uint8_t *loaded, const struct st_tensor_info *ti,
                          const char *file, struct dit_pending **pend, size_t *n_pend,
                          struct errmsg *e)
{
    char canon[160];
    int part = -1, copy = -1;
    struct dit_tensor *t = find_tensor(m, ti->name);
    if (!t) {
        if (!alias_name_dit(ti->name, canon, sizeof canon, &part, &copy) ||
            !(t = find_tensor(m, canon)))
            return errmsg_set(e, ERR_DATA, "unknown tensor '%s' in '%s'", ti->name, file);
        if (part >= 0 && t->parts != 3)
            return errmsg_set(e, ERR_DATA, "unknown tensor '%s' in '%s'", ti->name, file);
    }
    size_t idx = (size_t)(t - m->t);
    uint8_t full = (uint8_t)((1u << t->parts) - 1), bits = part >= 0 ? (uint8_t)(1u << part) : full;
    int64_t shape[4];
    memcpy(shape, t->shape, sizeof shape);
    size_t n = tensor_numel(t);
    if (part >= 0) {
        shape[0] /= 3;
        n /= 3;
    }
    if (copy > 0) {
        float *tmp = mem_alloc(n * sizeof(float));
        if (!tmp)
            return errmsg_set(e, ERR_NOMEM, "out of memory");
        int rc = st_tensor_to_f32(ti, file, shape, t->ndim, tmp, e);
        if (!rc && loaded[idx] == full)
            rc = check_copy(t, tmp, ti->name, file, e);
        else if (!rc) {
            struct dit_pending *np = mem_realloc(*pend, (*n_pend + 1) * sizeof *np);
            if (!np) {
                rc = errmsg_set(e, ERR_NOMEM, "out of memory");
            } else {
                *pend = np;
                np[*n_pend].t = t;
                np[*n_pend].p = tmp;
                snprintf(np[*n_pend].name, sizeof np[*n_pend].name, "%s", ti->name);
                snprintf(np[*n_pend].file, sizeof np[*n_pend].file, "%s", file);
                (*n_pend)++;
                return 0;
            }
        }
        mem_free(tmp);
        return rc;
    }
    if (loaded[idx] & bits)
        return errmsg_set(e, ERR_DATA, "tensor '%s' appears twice (again as '%s' in '%s')", t->name,
                          ti->name, file);
    int rc =
        st_tensor_to_f32(ti, file, shape, t->ndim, t->p + (part >= 0 ? n * (size_t)part : 0), e);
    if (rc)
        return rc;
    loaded[idx] |= bits;
    return 0;
}

/* dit_model_new_files for DiT configs. */
static int new_files_class(struct dit_model *m, const char *const *paths, int n_paths,
                           struct errmsg *e)
{
    struct dit_pending *pend = NULL;
    size_t n_pend = 0;
    int rc = 0;
    uint8_t *loaded = mem_calloc(m->n_t, sizeof *loaded);
    if (!loaded) {
        rc = errmsg_set(e, ERR_NOMEM, "out of memory");
        goto fail;
    }
    for (int f = 0; f < n_paths; f++) {
        struct st_file *sf;
        rc = st_open(&sf, paths[f], e);
        if (rc)
            goto fail;
        for (size_t i = 0; i < st_count(sf) && !rc; i++) {
            const struct st_tensor_info *ti = st_at(sf, i);
            if (!ignored_name(ti->name))
                rc = load_one_class(m, loaded, ti, paths[f], &pend, &n_pend, e);
        }
        st_close(sf);
        if (rc)
            goto fail;
    }
    for (size_t i = 0; i < m->n_t; i++)
        if (loaded[i] != (1u << m->t[i].parts) - 1) {
            rc = errmsg_set(e, ERR_DATA, "missing tensor '%s'%s in '%s'%s", m->t[i].name,
                            loaded[i] ? " (part of it)" : "", n_paths ? paths[0] : "",
                            n_paths > 1 ? " and other shards" : "");
            goto fail;
        }
    for (size_t i = 0; i < n_pend && !rc; i++)
        rc = check_copy(pend[i].t, pend[i].p, pend[i].name, pend[i].file, e);
fail:
    for (size_t i = 0; i < n_pend; i++)
        mem_free(pend[i].p);
    mem_free(pend);
    mem_free(loaded);
    return rc;
}

int dit_model_new_files(struct dit_model **out, const struct dit_config *cfg,
                        const char *const *paths, int n_paths, struct errmsg *e)
{
    int rc = model_alloc(out, cfg, e);
    if (rc)
        return rc;
    struct dit_model *m = *out;
    if (cfg->class_cond) {
        rc = new_files_class(m, paths, n_paths, e);
        if (rc) {
            dit_model_free(m);
            *out = NULL;
        }
        return rc;
    }
    bool *loaded = mem_calloc(m->n_t, sizeof *loaded);
    if (!loaded) {
        rc = errmsg_set(e, ERR_NOMEM, "out of memory");
        goto fail;
    }
    for (int f = 0; f < n_paths; f++) {
        struct st_file *sf;
        rc = st_open(&sf, paths[f], e);
        if (rc)
            goto fail;
        for (size_t i = 0; i < st_count(sf) && !rc; i++) {
            const struct st_tensor_info *ti = st_at(sf, i);
            if (!ignored_name(ti->name))
                rc = load_one(m, loaded, ti, paths[f], e);
        }
        st_close(sf);
        if (rc)
            goto fail;
    }
    for (size_t i = 0; i < m->n_t; i++)
        if (!loaded[i]) {
            rc = errmsg_set(e, ERR_DATA, "missing tensor '%s' in '%s'%s", m->t[i].name,
                            n_paths ? paths[0] : "", n_paths > 1 ? " and other shards" : "");
            goto fail;
        }
    mem_free(loaded);
    return 0;
fail:
    mem_free(loaded);
    dit_model_free(m);
    *out = NULL;
    return rc;
}

void dit_model_free(struct dit_model *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n_t; i++)
        mem_free(m->t[i].p);
    mem_free(m->t);
    mem_free(m->blk);
    float *bufs[] = {m->pe,  m->y,        m->tk,     m->tv,    m->xp,       m->x0,
                     m->a,   m->kk,       m->vv,     m->q,     m->o,        m->hs,
                     m->tmp, m->ff,       m->scores, m->store, m->wscratch, m->kvpack,
                     m->mod, m->blockmod, m->e,      m->fin};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        mem_free(bufs[i]);
    mem_free(m);
}

const struct dit_config *dit_model_config(const struct dit_model *m)
{
    return &m->cfg;
}

const char *dit_model_errmsg(const struct dit_model *m)
{
    return errmsg_text(&m->err);
}

size_t dit_model_tensor_count(const struct dit_model *m)
{
    return m->n_t;
}

const char *dit_model_tensor(const struct dit_model *m, size_t i, float **data, int *ndim,
                             int64_t shape[4])
{
    if (i >= m->n_t)
        return NULL;
    *data = m->t[i].p;
    *ndim = m->t[i].ndim;
    memcpy(shape, m->t[i].shape, 4 * sizeof(int64_t));
    return m->t[i].name;
}

int dit_model_save(const struct dit_model *m, const char *path, int dtype, struct errmsg *e)
{
    struct st_write_item *it = mem_calloc(m->n_t, sizeof *it);
    if (!it)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < m->n_t; i++) {
        it[i].name = m->t[i].name;
        it[i].data = m->t[i].p;
        it[i].ndim = m->t[i].ndim;
        for (int k = 0; k < m->t[i].ndim; k++)
            it[i].shape[k] = m->t[i].shape[k];
    }
    int rc = st_write(path, it, m->n_t, (enum st_dtype)dtype, e);
    mem_free(it);
    return rc;
}

int dit_model_set_text(struct dit_model *m, int n_batch, int b, const float *text)
{
    const struct dit_config *c = &m->cfg;
    size_t T = (size_t)c->text_tokens, d = (size_t)c->hidden, L = (size_t)c->depth;
    if (n_batch < 1 || n_batch > 2 || b < 0 || b >= n_batch)
        return errmsg_set(&m->err, ERR_USAGE, "bad batch %d of %d", b, n_batch);
    if (c->class_cond)
        return errmsg_set(&m->err, ERR_USAGE, "model '%s' is class-conditional (no text)", c->name);
    if (m->n_batch != n_batch) {
        mem_free(m->y), mem_free(m->tk), mem_free(m->tv);
        m->y = mem_calloc((size_t)n_batch * T * d, sizeof(float));
        m->tk = mem_calloc(L * (size_t)n_batch * T * d, sizeof(float));
        m->tv = mem_calloc(L * (size_t)n_batch * T * d, sizeof(float));
        m->n_batch = n_batch;
        if (!m->y || !m->tk || !m->tv) {
            m->n_batch = 0;
            return errmsg_set(&m->err, ERR_NOMEM, "out of memory for the text embedding");
        }
    }
    float *h = mem_alloc(T * d * sizeof(float));
    if (!h)
        return errmsg_set(&m->err, ERR_NOMEM, "out of memory");
    float *y = m->y + (size_t)b * T * d;
    /* Caption projection (spec 2.2): y = Lc2(GELU_tanh(Lc1(text))). */
    nn_linear(text, (int)T, c->caption, c->caption, m->c1_w, m->c1_b, (int)d, h, (int)d);
    nn_gelu_tanh(h, T * d);
    nn_linear(h, (int)T, (int)d, (int)d, m->c2_w, m->c2_b, (int)d, y, (int)d);
    mem_free(h);
    for (size_t l = 0; l < L; l++) {
        size_t off = (l * (size_t)n_batch + (size_t)b) * T * d;
        nn_linear(y, (int)T, (int)d, (int)d, m->blk[l].k2_w, m->blk[l].k2_b, (int)d, m->tk + off,
                  (int)d);
        nn_linear(y, (int)T, (int)d, (int)d, m->blk[l].v2_w, m->blk[l].v2_b, (int)d, m->tv + off,
                  (int)d);
    }
    return 0;
}

int dit_model_set_class(struct dit_model *m, int n_batch, int b, int label)
{
    const struct dit_config *c = &m->cfg;
    if (!c->class_cond)
        return errmsg_set(&m->err, ERR_USAGE, "model '%s' is text-conditioned (no class label)",
                          c->name);
    if (n_batch < 1 || n_batch > 2 || b < 0 || b >= n_batch)
        return errmsg_set(&m->err, ERR_USAGE, "bad batch %d of %d", b, n_batch);
    if (label < 0 || label > c->classes)
        return errmsg_set(&m->err, ERR_USAGE, "class label %d out of range (0..%d, %d = null)",
                          label, c->classes, c->classes);
    m->n_batch = n_batch;
    m->label[b] = label;
    return 0;
}

/* ---- state ---- */

size_t dit_mask_words(const struct dit_config *cfg)
{
    return ((size_t)cfg->tokens + 63) / 64;
}

/* Sets n_rows mask rows to all ones (a row never generated, spec 4); padding bits zero. */
static void mask_fill_ones(uint64_t *rows, size_t n_rows, size_t words, size_t N)
{
    uint64_t last = N % 64 ? (1ull << (N % 64)) - 1 : ~0ull;
    for (size_t r = 0; r < n_rows; r++) {
        for (size_t w = 0; w + 1 < words; w++)
            rows[r * words + w] = ~0ull;
        rows[r * words + words - 1] = last;
    }
}

static size_t mask_group_words(const struct dit_state *s)
{
    return (size_t)s->cfg->heads * s->cfg->tokens * s->words;
}

int dit_state_open(struct dit_state **out, const struct dit_model *m, int n_batch,
                   const struct dit_state_opts *o, struct errmsg *e)
{
    const struct dit_config *c = &m->cfg;
    struct dit_state *s = mem_calloc(1, sizeof *s);
    int rc = ERR_NOMEM;
    *out = NULL;
    if (!s)
        return errmsg_set(e, ERR_NOMEM, "out of memory for the sampler state");
    s->cfg = &m->cfg;
    s->n_batch = n_batch;
    s->ctr = o->ctr;
    s->st = o->st;
    s->ff_spill = o->ctr && o->spill_ctr;
    s->mask_spill = o->st && o->spill_masks;
    s->mres = -1;
    s->words = dit_mask_words(c);
    size_t N = (size_t)c->tokens, d = (size_t)c->hidden, L = (size_t)c->depth;
    size_t nblk = o->ctr && !s->ff_spill ? L : 2;
    s->cache_ff = mem_calloc(nblk * (size_t)n_batch * N * d, sizeof(float));
    if (!s->cache_ff)
        goto fail;
    if (o->st) {
        size_t groups = s->mask_spill ? 1 : (size_t)n_batch * L;
        s->masks = mem_alloc(groups * mask_group_words(s) * sizeof(uint64_t));
        if (!s->masks)
            goto fail;
        mask_fill_ones(s->masks, groups * c->heads * N, s->words, N);
    }
    if (s->mask_spill || s->ff_spill) {
        s->m_written = mem_calloc(L * (size_t)n_batch, 1);
        s->ff_written = mem_calloc(L * (size_t)n_batch, 1);
        if (!s->m_written || !s->ff_written)
            goto fail;
        if ((rc = disc_spill_open(&s->spill, o->spill_dir, e)) != 0)
            goto fail;
        s->ff_base =
            s->mask_spill ? (uint64_t)n_batch * L * mask_group_words(s) * sizeof(uint64_t) : 0;
    }
    *out = s;
    return 0;
fail:
    dit_state_free(s);
    if (rc == ERR_NOMEM)
        errmsg_set(e, ERR_NOMEM, "out of memory for the sampler state");
    return rc;
}

int dit_state_new(struct dit_state **out, const struct dit_model *m, int n_batch, bool ctr, bool st)
{
    struct dit_state_opts o = {.ctr = ctr, .st = st};
    return dit_state_open(out, m, n_batch, &o, NULL);
}

void dit_state_free(struct dit_state *s)
{
    if (!s)
        return;
    mem_free(s->cache_ff);
    mem_free(s->masks);
    mem_free(s->m_written);
    mem_free(s->ff_written);
    disc_spill_close(s->spill);
    mem_free(s);
}

const char *dit_state_errmsg(const struct dit_state *s)
{
    return errmsg_text(&s->err);
}

uint64_t dit_state_spill_bytes(const struct dit_state *s)
{
    return disc_spill_bytes(s->spill);
}

/* Makes the masks of (batch, block) resident: the held group is written back when it
 * changed, the wanted one read (or all ones when never written). 0 or ERR_IO. */
static int mask_group(struct dit_state *s, int batch, int block, uint64_t **out)
{
    int g = batch * s->cfg->depth + block;
    size_t gw = mask_group_words(s);
    if (!s->mask_spill) {
        *out = s->masks + (size_t)g * gw;
        return 0;
    }
    if (s->mres != g) {
        size_t gb = gw * sizeof(uint64_t);
        int rc;
        if (s->mres >= 0 && s->mdirty) {
            rc = disc_spill_write(s->spill, (uint64_t)s->mres * gb, s->masks, gb, &s->err);
            if (rc)
                return rc;
            s->m_written[s->mres] = 1;
        }
        s->mdirty = false;
        s->mres = -1;
        if (s->m_written[g]) {
            if ((rc = disc_spill_read(s->spill, (uint64_t)g * gb, s->masks, gb, &s->err)) != 0)
                return rc;
        } else {
            mask_fill_ones(s->masks, (size_t)s->cfg->heads * s->cfg->tokens, s->words,
                           (size_t)s->cfg->tokens);
        }
        s->mres = g;
    }
    *out = s->masks;
    return 0;
}

uint64_t *dit_state_mask(struct dit_state *s, int batch, int block, int head)
{
    uint64_t *grp;
    if (mask_group(s, batch, block, &grp))
        return NULL;
    return grp + (size_t)head * s->cfg->tokens * s->words;
}

/* ---- forward ---- */

/* y = LN(x) * (1 + scale) + shift over rows (spec 2.2; LN eps 1e-6, no affine). */
static void ln_modulate(const float *x, float *y, int rows, int d, const float *shift,
                        const float *scale)
{
    nn_layernorm(x, y, rows, d, d, 1e-6f, NULL, NULL);
    for (int r = 0; r < rows; r++) {
        float *yr = y + (size_t)r * d;
        for (int j = 0; j < d; j++)
            yr[j] = yr[j] * (1.0f + scale[j]) + shift[j];
    }
}

/* Timestep embedding temb(t) (spec 2.2): cos ++ sin of t * 10000^(-i/128). */
static void timestep_embedding(double t, float *out)
{
    for (int i = 0; i < 128; i++) {
        double f = exp(-log(10000.0) * i / 128.0);
        out[i] = (float)cos(t * f);
        out[128 + i] = (float)sin(t * f);
    }
}

struct gen_ctx {
    struct dit_model *m;
    const float *s; /* chunk rows of scaled scores, N each */
    int row0;       /* first row of the chunk (index into kept) */
    const int32_t *kept;
    uint64_t *mask;
    size_t words;
    float theta;
    const float *v; /* (N, dh) packed */
    float *o;       /* (n_kept, d) at head offset */
    int d, dh, N;
};

size_t dit_st_generate_row(const float *s, int n, float theta, uint64_t *mask_row, float *p)
{
    size_t words = ((size_t)n + 63) / 64, nnz = 0;
    memcpy(p, s, (size_t)n * sizeof(float));
    nn_softmax_rows(p, 1, n, n);
    memset(mask_row, 0, words * sizeof(uint64_t));
    int am = 0;
    for (int j = 0; j < n; j++) {
        if (p[j] >= theta) {
            mask_row[j >> 6] |= 1ull << (j & 63);
            nnz++;
        }
        if (p[j] > p[am])
            am = j; /* strict: the lowest j wins ties */
    }
    if (!nnz) {
        mask_row[am >> 6] |= 1ull << (am & 63);
        nnz = 1;
    }
    return nnz;
}

/* Generation rows (spec 4): the mask row from P, then the renormalised PV over it from the
 * scores. */
static void gen_rows(void *vctx, size_t begin, size_t end, int worker)
{
    struct gen_ctx *g = vctx;
    float *p = g->m->wscratch + (size_t)worker * 2 * (size_t)g->N;
    for (size_t r = begin; r < end; r++) {
        const float *s = g->s + r * (size_t)g->N;
        int row = g->row0 + (int)r;
        int tok = g->kept ? g->kept[row] : row;
        uint64_t *mr = g->mask + (size_t)tok * g->words;
        dit_st_generate_row(s, g->N, g->theta, mr, p);
        nn_attention_row_sparse(s, mr, g->N, g->v, g->dh, g->dh, g->o + (size_t)row * g->d);
    }
}

struct reuse_ctx {
    struct dit_model *m;
    const int32_t *kept;
    const uint64_t *mask;
    size_t words;
    const float *q;     /* at head offset, row stride d */
    const float *k, *v; /* (N, dh) packed */
    float *o;
    int d, dh, N;
    float scale;
};

/* Reuse rows (spec 4): s_ij only where M_ij = 1 (SDDMM), sparse softmax, SpMM. */
static void reuse_rows(void *vctx, size_t begin, size_t end, int worker)
{
    struct reuse_ctx *g = vctx;
    float *s = g->m->wscratch + (size_t)worker * 2 * (size_t)g->N;
    for (size_t r = begin; r < end; r++) {
        int tok = g->kept ? g->kept[r] : (int)r;
        const uint64_t *mr = g->mask + (size_t)tok * g->words;
        const float *qr = g->q + r * (size_t)g->d;
        nn_sddmm_row(qr, g->k, g->dh, g->dh, mr, g->N, g->scale, s);
        nn_attention_row_sparse(s, mr, g->N, g->v, g->dh, g->dh, g->o + r * (size_t)g->d);
    }
}

static void run_rows(struct thread_pool *pool, size_t n, pool_fn fn, void *ctx)
{
    if (pool && pool_size(pool) > 1 && n > 1)
        pool_for(pool, n, fn, ctx);
    else
        fn(ctx, 0, n, 0);
}

struct rows_ctx {
    float *x;
    int cols, ld;
};

static void softmax_task(void *vctx, size_t begin, size_t end, int worker)
{
    struct rows_ctx *c = vctx;
    (void)worker;
    nn_softmax_rows(c->x + begin * (size_t)c->ld, (int)(end - begin), c->cols, c->ld);
}

static void gelu_task(void *vctx, size_t begin, size_t end, int worker)
{
    struct rows_ctx *c = vctx;
    (void)worker;
    nn_gelu_tanh(c->x + begin * (size_t)c->ld, (end - begin) * (size_t)c->ld);
}

/*
 * Dense attention of one head for `rows` queries against n_k keys, as nn_attention (same
 * kernels and order) but with the softmax rows split over the pool: S = scale Q K^T by
 * BLAS, softmax per row, O = P V by BLAS. scratch holds rows * n_k floats.
 */
static void attn_dense(struct thread_pool *pool, int rows, int n_k, int dh, const float *q, int ldq,
                       const float *k, int ldk, const float *v, int ldv, float *o, int ldo,
                       float scale, float *scratch)
{
    nn_sgemm(true, rows, n_k, dh, scale, q, ldq, k, ldk, 0.0f, scratch, n_k);
    struct rows_ctx c = {scratch, n_k, n_k};
    run_rows(pool, (size_t)rows, softmax_task, &c);
    nn_sgemm(false, rows, dh, n_k, 1.0f, scratch, n_k, v, ldv, 0.0f, o, ldo);
}

static int ensure_wscratch(struct dit_model *m, struct thread_pool *pool)
{
    int w = pool ? pool_size(pool) : 1;
    if (m->wscratch && m->wscratch_workers >= w)
        return 0;
    mem_free(m->wscratch);
    m->wscratch = mem_alloc((size_t)w * 2 * (size_t)m->cfg.tokens * sizeof(float));
    m->wscratch_workers = m->wscratch ? w : 0;
    return m->wscratch ? 0 : ERR_NOMEM;
}

/* Pooled nnz over rows of the probability store for theta = alpha/N, after the argmax
 * rule (spec 4, --st-target). */
static uint64_t store_nnz(const float *store, size_t rows, int N, float theta)
{
    uint64_t nnz = 0;
    for (size_t r = 0; r < rows; r++) {
        const float *p = store + r * (size_t)N;
        uint64_t c = 0;
        for (int j = 0; j < N; j++)
            c += p[j] >= theta;
        nnz += c ? c : 1;
    }
    return nnz;
}

static float bits_to_float(uint32_t b)
{
    float f;
    memcpy(&f, &b, 4);
    return f;
}

static uint32_t float_to_bits(float f)
{
    uint32_t b;
    memcpy(&b, &f, 4);
    return b;
}

/* Self-attention core of one block for every batch element and head (spec 2.2 and 4):
 * Q (B, nk, d) in m->q, K and V (B, N, d) in m->kk / m->vv; output (B, nk, d) in m->o. */
static int self_attention(struct dit_model *m, struct dit_state *s, int blk,
                          const struct dit_fwd *f)
{
    const struct dit_config *c = &m->cfg;
    int N = c->tokens, d = c->hidden, H = c->heads, dh = c->head_dim, nk = f->n_kept;
    int B = s->n_batch;
    size_t bstride = (size_t)N * d;
    float scale = (float)(1.0 / sqrt((double)dh));
    size_t chunk = DIT_SCORE_CHUNK_FLOATS / (size_t)N;
    if (chunk < 1)
        chunk = 1;
    if (nk == 0)
        return 0;
    bool st = s->st && f->st != DIT_ST_OFF;
    float theta = st && f->theta ? f->theta[blk] : 0.0f;
    if (st && f->st == DIT_ST_GENERATE && f->st_target >= 0.0) {
        /* Pass 1: P of every computed row of every (batch, head) of this block. */
        size_t rows = (size_t)B * H * nk;
        if (!m->store) {
            m->store = mem_alloc((size_t)B * H * (size_t)N * N * sizeof(float));
            if (!m->store)
                return errmsg_set(&m->err, ERR_NOMEM, "out of memory for the st-target store");
        }
        for (int b = 0; b < B; b++)
            for (int h = 0; h < H; h++) {
                float *p = m->store + ((size_t)b * H + h) * (size_t)nk * N;
                nn_sgemm(true, nk, N, dh, scale, m->q + b * bstride + (size_t)h * dh, d,
                         m->kk + b * bstride + (size_t)h * dh, d, 0.0f, p, N);
                nn_softmax_rows(p, nk, N, N);
            }
        /* The smallest FP32 alpha in [0, N] whose pooled sparsity reaches the target, by
         * bisection on the bit pattern (spec 4); sparsity in double. */
        float fN = (float)N;
        double total = (double)rows * N;
        uint32_t lo = 0, hi = float_to_bits(fN);
        if (1.0 - (double)store_nnz(m->store, rows, N, fN / fN) / total < f->st_target) {
            lo = hi;
            if (f->short_out)
                f->short_out[blk] = true;
        } else {
            while (lo < hi) {
                uint32_t mid = lo + (hi - lo) / 2;
                uint64_t nnz = store_nnz(m->store, rows, N, bits_to_float(mid) / fN);
                if (1.0 - (double)nnz / total >= f->st_target)
                    hi = mid;
                else
                    lo = mid + 1;
            }
        }
        float alpha = bits_to_float(lo);
        theta = alpha / fN;
        if (f->alpha_out)
            f->alpha_out[blk] = alpha;
        if (f->theta_out)
            f->theta_out[blk] = theta;
    }
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < H; h++) {
            const float *qh = m->q + b * bstride + (size_t)h * dh;
            const float *kh = m->kk + b * bstride + (size_t)h * dh;
            const float *vh = m->vv + b * bstride + (size_t)h * dh;
            float *oh = m->o + b * bstride + (size_t)h * dh;
            if (!st) {
                for (size_t r0 = 0; r0 < (size_t)nk; r0 += chunk) {
                    int rows = (int)((size_t)nk - r0 < chunk ? (size_t)nk - r0 : chunk);
                    attn_dense(f->pool, rows, N, dh, qh + r0 * d, d, kh, d, vh, d, oh + r0 * d, d,
                               scale, m->scores);
                }
                continue;
            }
            /* Pack this head's K and V rows (dh floats each) so the per-entry SDDMM/SpMM
             * reads stay in cache; values and order are unchanged. */
            float *kp = m->kvpack, *vp = m->kvpack + (size_t)N * dh;
            for (int j = 0; j < N; j++) {
                memcpy(kp + (size_t)j * dh, kh + (size_t)j * d, (size_t)dh * sizeof(float));
                memcpy(vp + (size_t)j * dh, vh + (size_t)j * d, (size_t)dh * sizeof(float));
            }
            uint64_t *grp;
            int rc = mask_group(s, b, blk, &grp);
            if (rc)
                return errmsg_set(&m->err, rc, "%s", errmsg_text(&s->err));
            uint64_t *mask = grp + (size_t)h * N * s->words;
            if (f->st == DIT_ST_GENERATE) {
                s->mdirty = true;
                for (size_t r0 = 0; r0 < (size_t)nk; r0 += chunk) {
                    int rows = (int)((size_t)nk - r0 < chunk ? (size_t)nk - r0 : chunk);
                    nn_sgemm(true, rows, N, dh, scale, qh + r0 * d, d, kh, d, 0.0f, m->scores, N);
                    struct gen_ctx g = {m,     m->scores, (int)r0, f->kept, mask, s->words,
                                        theta, vp,        oh,      d,       dh,   N};
                    run_rows(f->pool, (size_t)rows, gen_rows, &g);
                }
            } else {
                struct reuse_ctx g = {m, f->kept, mask, s->words, qh, kp, vp, oh, d, dh, N, scale};
                run_rows(f->pool, (size_t)nk, reuse_rows, &g);
            }
        }
    }
    return 0;
}

static float *buf_ff(struct dit_state *s, int blk, int b)
{
    const struct dit_config *c = s->cfg;
    size_t i = s->ctr && !s->ff_spill ? (size_t)blk : (size_t)(blk % 2);
    return s->cache_ff + (i * s->n_batch + b) * (size_t)c->tokens * c->hidden;
}

/* Spilled block outputs: the previous step's outputs of (blk, b), needed for the rows this
 * step prunes, into the held slot (zeros when never written, as a fresh cache). */
static int ff_load(struct dit_state *s, int blk, int b, bool all_kept)
{
    size_t n = (size_t)s->cfg->tokens * s->cfg->hidden;
    size_t i = (size_t)blk * s->n_batch + b;
    float *slot = buf_ff(s, blk, b);
    if (all_kept)
        return 0; /* every row is recomputed */
    if (!s->ff_written[i]) {
        memset(slot, 0, n * sizeof(float));
        return 0;
    }
    return disc_spill_read(s->spill, s->ff_base + i * n * sizeof(float), slot, n * sizeof(float),
                           &s->err);
}

static int ff_store(struct dit_state *s, int blk, int b)
{
    size_t n = (size_t)s->cfg->tokens * s->cfg->hidden;
    size_t i = (size_t)blk * s->n_batch + b;
    int rc = disc_spill_write(s->spill, s->ff_base + i * n * sizeof(float), buf_ff(s, blk, b),
                              n * sizeof(float), &s->err);
    if (!rc)
        s->ff_written[i] = 1;
    return rc;
}

/* out[j] = x[j] + g[j] * y[j] (gate + residual) or x[j] + y[j] when g is NULL. */
static void residual(float *out, const float *x, const float *g, const float *y, int d)
{
    if (g)
        for (int j = 0; j < d; j++)
            out[j] = x[j] + g[j] * y[j];
    else
        for (int j = 0; j < d; j++)
            out[j] = x[j] + y[j];
}

/* The final layer on all tokens of every batch element and the unpatchify into eps
 * (spec 2.2; DiT: shift, scale = adaLN_modulation(SiLU(c_b))). */
static void final_layer(struct dit_model *m, struct dit_state *s, float *eps)
{
    const struct dit_config *c = &m->cfg;
    int N = c->tokens, d = c->hidden, p = c->patch, G = c->grid, Wl = c->lat, B = s->n_batch;
    int pout = p * p * c->c_out;
    float h1[4096]; /* d <= 1152 for every config of dit_config_get */
    float *shf = m->blockmod, *scf = m->blockmod + d;
    size_t lat = (size_t)c->c_in * Wl * Wl;
    for (int b = 0; b < B; b++) {
        if (c->class_cond) {
            /* DiT final layer: shift, scale = adaLN_modulation(SiLU(c_b)) */
            for (int j = 0; j < d; j++)
                h1[j] = m->e[(size_t)b * d + j];
            nn_silu(h1, (size_t)d);
            nn_linear(h1, 1, d, d, m->fada_w, m->fada_b, 2 * d, m->blockmod, 2 * d);
        } else {
            for (int j = 0; j < d; j++) {
                shf[j] = m->final_sst[j] + m->e[j];
                scf[j] = m->final_sst[d + j] + m->e[j];
            }
        }
        ln_modulate(buf_ff(s, c->depth - 1, b), m->a, N, d, shf, scf);
        nn_linear(m->a, N, d, d, m->out_w, m->out_b, pout, m->fin, pout);
        float *eb = eps + (size_t)b * lat;
        for (int gy = 0; gy < G; gy++)
            for (int gx = 0; gx < G; gx++) {
                const float *orow = m->fin + ((size_t)gy * G + gx) * pout;
                for (int ch = 0; ch < c->c_in; ch++)
                    for (int u = 0; u < p; u++)
                        for (int v = 0; v < p; v++)
                            eb[((size_t)ch * Wl + gy * p + u) * Wl + gx * p + v] =
                                orow[(u * p + v) * c->c_out + ch];
            }
    }
}

/* Cross-attention of block blk for batch element b on the kept rows of m->hs, text K/V
 * (no norm before it), into m->hs (spec 3a). */
static void cross_attention(struct dit_model *m, struct dit_state *s, const struct dit_fwd *f,
                            int blk, int b, size_t chunk_ca, float scale)
{
    const struct dit_config *c = &m->cfg;
    const struct dit_block *w = &m->blk[blk];
    int d = c->hidden, H = c->heads, dh = c->head_dim, T = c->text_tokens, N = c->tokens;
    int B = s->n_batch, nk = f->n_kept;
    size_t bstride = (size_t)N * d;
    float *o = m->o + b * bstride;
    nn_linear(m->hs, nk, d, d, w->q2_w, w->q2_b, d, m->tmp, d);
    size_t toff = ((size_t)blk * B + b) * (size_t)T * d;
    for (int h = 0; h < H; h++)
        for (size_t r0 = 0; r0 < (size_t)nk; r0 += chunk_ca) {
            size_t left = (size_t)nk - r0;
            int rows = (int)(left < chunk_ca ? left : chunk_ca);
            attn_dense(f->pool, rows, T, dh, m->tmp + r0 * d + (size_t)h * dh, d,
                       m->tk + toff + (size_t)h * dh, d, m->tv + toff + (size_t)h * dh, d,
                       o + r0 * d + (size_t)h * dh, d, scale, m->scores);
        }
    nn_linear(o, nk, d, d, w->o2_w, w->o2_b, d, m->tmp, d);
    for (int r = 0; r < nk; r++) {
        float *hr = m->hs + (size_t)r * d;
        residual(hr, hr, NULL, m->tmp + (size_t)r * d, d);
    }
}

int dit_forward(struct dit_model *m, struct dit_state *s, const float *x, const struct dit_fwd *f,
                float *eps)
{
    const struct dit_config *c = &m->cfg;
    int N = c->tokens, d = c->hidden, dh = c->head_dim, T = c->text_tokens;
    int p = c->patch, G = c->grid, Wl = c->lat, B = s->n_batch, nk = f->n_kept;
    int pin = c->c_in * p * p;
    const int32_t *kept = nk == N ? NULL : f->kept;
    size_t bstride = (size_t)N * d;
    if (nk < 0 || nk > N || (nk < N && !f->kept))
        return errmsg_set(&m->err, ERR_USAGE, "bad kept token set (%d of %d)", nk, N);
    if (nk < N && !s->ctr)
        return errmsg_set(&m->err, ERR_USAGE, "token pruning needs CTR caches");
    if (m->n_batch != B)
        return errmsg_set(&m->err, ERR_USAGE, "text not set for %d batch elements", B);
    if (s->st && f->st != DIT_ST_OFF && ensure_wscratch(m, f->pool))
        return errmsg_set(&m->err, ERR_NOMEM, "out of memory");

    /* Timestep embedding and adaLN-single (spec 2.2); DiT: c_b = temb + y_emb[label_b]. */
    float temb[256], h1[4096]; /* d <= 1152 for every config of dit_config_get */
    timestep_embedding(f->t, temb);
    nn_linear(temb, 1, 256, 256, m->t1_w, m->t1_b, d, h1, d);
    nn_silu(h1, (size_t)d);
    nn_linear(h1, 1, d, d, m->t2_w, m->t2_b, d, m->e, d);
    if (c->class_cond) {
        for (int b = B - 1; b >= 0; b--) {
            const float *y = m->y_table + (size_t)m->label[b] * d;
            for (int j = 0; j < d; j++)
                m->e[(size_t)b * d + j] = m->e[j] + y[j];
        }
    } else {
        memcpy(h1, m->e, (size_t)d * sizeof(float));
        nn_silu(h1, (size_t)d);
        nn_linear(h1, 1, d, d, m->ada_w, m->ada_b, 6 * d, m->mod, 6 * d);
    }

    /* Patch embedding + PE: patch columns in (c, u, v) order, as Wp [d, C_in, p, p]. */
    for (int gy = 0; gy < G; gy++)
        for (int gx = 0; gx < G; gx++) {
            float *r = m->xp + ((size_t)gy * G + gx) * pin;
            for (int ch = 0; ch < c->c_in; ch++)
                for (int u = 0; u < p; u++)
                    for (int v = 0; v < p; v++)
                        r[(ch * p + u) * p + v] =
                            x[((size_t)ch * Wl + gy * p + u) * Wl + gx * p + v];
        }
    nn_linear(m->xp, N, pin, pin, m->patch_w, m->patch_b, d, m->x0, d);
    nn_add(m->x0, m->pe, bstride);

    size_t chunk_ca = DIT_SCORE_CHUNK_FLOATS / (size_t)N;
    if (chunk_ca < 1)
        chunk_ca = 1;
    if (T > 0)
        chunk_ca = chunk_ca * (size_t)(N > T ? N : T) / (size_t)T;
    float scale = (float)(1.0 / sqrt((double)dh));

    for (int blk = 0; blk < c->depth; blk++) {
        const struct dit_block *w = &m->blk[blk];
        /* Per batch element: shift, scale, gate (attention) then shift, scale, gate (FFN);
         * PixArt: scale_shift_table + adaLN-single, DiT: adaLN_modulation(SiLU(c_b)). */
        for (int b = 0; b < B; b++) {
            float *bm = m->blockmod + (size_t)b * 6 * d;
            if (c->class_cond) {
                for (int j = 0; j < d; j++)
                    h1[j] = m->e[(size_t)b * d + j];
                nn_silu(h1, (size_t)d);
                nn_linear(h1, 1, d, d, w->ada_w, w->ada_b, 6 * d, bm, 6 * d);
            } else {
                for (int j = 0; j < 6 * d; j++)
                    bm[j] = w->sst[j] + m->mod[j];
            }
        }
        /* 1. A = LN-modulate(X) on all rows; K, V on all rows; Q on kept rows (spec 3). */
        for (int b = 0; b < B; b++) {
            const float *bm = m->blockmod + (size_t)b * 6 * d;
            const float *sh1 = bm, *sc1 = bm + d;
            const float *in = blk == 0 ? m->x0 : buf_ff(s, blk - 1, b);
            float *a = m->a + b * bstride;
            ln_modulate(in, a, N, d, sh1, sc1);
            nn_linear(a, N, d, d, w->k_w, w->k_b, d, m->kk + b * bstride, d);
            nn_linear(a, N, d, d, w->v_w, w->v_b, d, m->vv + b * bstride, d);
            const float *qa = a;
            if (kept) {
                for (int r = 0; r < nk; r++)
                    memcpy(m->tmp + (size_t)r * d, a + (size_t)kept[r] * d,
                           (size_t)d * sizeof(float));
                qa = m->tmp;
            }
            nn_linear(qa, nk, d, d, w->q_w, w->q_b, d, m->q + b * bstride, d);
        }
        int rc = self_attention(m, s, blk, f);
        for (int b = 0; b < B && !rc && s->ff_spill; b++)
            if ((rc = ff_load(s, blk, b, nk == N)) != 0)
                rc = errmsg_set(&m->err, rc, "%s", errmsg_text(&s->err));
        if (rc)
            return rc;
        for (int b = 0; b < B; b++) {
            const float *bm = m->blockmod + (size_t)b * 6 * d;
            const float *g1 = bm + 2 * d, *sh2 = bm + 3 * d, *sc2 = bm + 4 * d, *g2 = bm + 5 * d;
            const float *in = blk == 0 ? m->x0 : buf_ff(s, blk - 1, b);
            float *ffo = buf_ff(s, blk, b);
            float *o = m->o + b * bstride;
            /* 2. H[S] = X[S] + g1 * to_out(Attn) (the method's cache of H is never read
             * again: a pruned row's block output comes from the block-output cache). */
            nn_linear(o, nk, d, d, w->o_w, w->o_b, d, m->tmp, d);
            for (int r = 0; r < nk; r++) {
                int tok = kept ? kept[r] : r;
                residual(m->hs + (size_t)r * d, in + (size_t)tok * d, g1, m->tmp + (size_t)r * d,
                         d);
            }
            /* 3a. Cross-attention on the kept rows, text K/V (no norm before it); DiT blocks
             * go straight to the FFN. */
            if (!c->class_cond)
                cross_attention(m, s, f, blk, b, chunk_ca, scale);
            /* 3b. FFN on the kept rows: F = LN-modulate(H); X = H + g2 * FFN(F). */
            ln_modulate(m->hs, m->tmp, nk, d, sh2, sc2);
            nn_linear(m->tmp, nk, d, d, w->f1_w, w->f1_b, 4 * d, m->ff, 4 * d);
            struct rows_ctx gc = {m->ff, 4 * d, 4 * d};
            run_rows(f->pool, (size_t)nk, gelu_task, &gc);
            nn_linear(m->ff, nk, 4 * d, 4 * d, w->f2_w, w->f2_b, d, m->tmp, d);
            for (int r = 0; r < nk; r++) {
                int tok = kept ? kept[r] : r;
                residual(ffo + (size_t)tok * d, m->hs + (size_t)r * d, g2, m->tmp + (size_t)r * d,
                         d);
            }
        }
        for (int b = 0; b < B && s->ff_spill; b++)
            if ((rc = ff_store(s, blk, b)) != 0)
                return errmsg_set(&m->err, rc, "%s", errmsg_text(&s->err));
    }

    final_layer(m, s, eps);
    return 0;
}
