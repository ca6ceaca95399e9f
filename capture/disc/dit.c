/*
 * dit: the DiT configurations, seeded weights, text and class conditioning and the forward
 * pass (docs/disc.md#forward-pass, docs/disc.md#ctr-selection, docs/disc.md#st-masks); loading in
 * dit_load.c, the state in dit_state.c, the self-attention kernels in dit_attn.c. See dit.h for
 * shapes and ownership.
 */
#include "capture/disc/dit.h"
#include "capture/disc/dit_impl.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "capture/nn/nn.h"
#include "capture/nn/safetensors.h"
#include "capture/nn/weightgen.h"
#include "common/mem.h"
#include "common/threads.h"

/* ---- configurations (docs/disc.md#model-configurations) ---- */

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
        /* shipped weights trained on photographs
         * (docs/models.md#trained-small-shipped-weights-measured-not-paper-numbers): no text
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

size_t dit_tensor_numel(const struct dit_tensor *t)
{
    size_t n = 1;
    for (int i = 0; i < t->ndim; i++)
        n *= (size_t)t->shape[i];
    return n;
}

/* Linear weight [out, in] + bias [out]: weights Xavier or N(0, 0.02^2), biases 0
 * (docs/disc.md#weights). Errors stay in m->table_rc. */
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
    /* scale-shift tables N(0,1)/sqrt(d), docs/disc.md#weights */
    double tstd = 1.0 / sqrt((double)d);
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

/* 2-D sin-cos positional embedding (docs/disc.md#forward-pass PE): x half then y half, each sin ++
 * cos. */
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

int dit_model_alloc(struct dit_model **out, const struct dit_config *cfg, struct errmsg *e)
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
    int rc = dit_model_alloc(out, cfg, e);
    if (rc)
        return rc;
    struct dit_model *m = *out;
    for (size_t i = 0; i < m->n_t; i++) {
        struct dit_tensor *t = &m->t[i];
        wg_fill(t->p, dit_tensor_numel(t), t->init, t->param, t->fan_in, t->fan_out, seed, t->name);
    }
    return 0;
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
    mem_free(m->widx);
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
    /* Caption projection (docs/disc.md#forward-pass): y = Lc2(GELU_tanh(Lc1(text))). */
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

/* ---- forward ---- */

/* y = LN(x) * (1 + scale) + shift over rows (docs/disc.md#forward-pass; LN eps 1e-6, no affine). */
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

/* Timestep embedding temb(t) (docs/disc.md#forward-pass): cos ++ sin of t * 10000^(-i/128). */
static void timestep_embedding(double t, float *out)
{
    for (int i = 0; i < 128; i++) {
        double f = exp(-log(10000.0) * i / 128.0);
        out[i] = (float)cos(t * f);
        out[128 + i] = (float)sin(t * f);
    }
}

static void gelu_task(void *vctx, size_t begin, size_t end, int worker)
{
    struct dit_rows_ctx *c = vctx;
    (void)worker;
    nn_gelu_tanh(c->x + begin * (size_t)c->ld, (end - begin) * (size_t)c->ld);
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
 * (docs/disc.md#forward-pass; DiT: shift, scale = adaLN_modulation(SiLU(c_b))). */
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
        ln_modulate(dit_state_ff(s, c->depth - 1, b), m->a, N, d, shf, scf);
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
 * (no norm before it), into m->hs (docs/disc.md#ctr-selection). */
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
            dit_attn_dense(f->pool, rows, T, dh, m->tmp + r0 * d + (size_t)h * dh, d,
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
    if (s->st && f->st != DIT_ST_OFF && dit_ensure_wscratch(m, f->pool))
        return errmsg_set(&m->err, ERR_NOMEM, "out of memory");

    /* Timestep embedding and adaLN-single (docs/disc.md#forward-pass); DiT: c_b = temb +
     * y_emb[label_b]. */
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
        /* 1. A = LN-modulate(X) on all rows; K, V on all rows; Q on kept rows
         * (docs/disc.md#ctr-selection). */
        for (int b = 0; b < B; b++) {
            const float *bm = m->blockmod + (size_t)b * 6 * d;
            const float *sh1 = bm, *sc1 = bm + d;
            const float *in = blk == 0 ? m->x0 : dit_state_ff(s, blk - 1, b);
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
        int rc = dit_self_attention(m, s, blk, f);
        for (int b = 0; b < B && !rc && s->ff_spill; b++)
            if ((rc = dit_state_ff_load(s, blk, b, nk == N)) != 0)
                rc = errmsg_set(&m->err, rc, "%s", errmsg_text(&s->err));
        if (rc)
            return rc;
        for (int b = 0; b < B; b++) {
            const float *bm = m->blockmod + (size_t)b * 6 * d;
            const float *g1 = bm + 2 * d, *sh2 = bm + 3 * d, *sc2 = bm + 4 * d, *g2 = bm + 5 * d;
            const float *in = blk == 0 ? m->x0 : dit_state_ff(s, blk - 1, b);
            float *ffo = dit_state_ff(s, blk, b);
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
            struct dit_rows_ctx gc = {m->ff, 4 * d, 4 * d};
            dit_run_rows(f->pool, (size_t)nk, gelu_task, &gc);
            nn_linear(m->ff, nk, 4 * d, 4 * d, w->f2_w, w->f2_b, d, m->tmp, d);
            for (int r = 0; r < nk; r++) {
                int tok = kept ? kept[r] : r;
                residual(ffo + (size_t)tok * d, m->hs + (size_t)r * d, g2, m->tmp + (size_t)r * d,
                         d);
            }
        }
        for (int b = 0; b < B && s->ff_spill; b++)
            if ((rc = dit_state_ff_store(s, blk, b)) != 0)
                return errmsg_set(&m->err, rc, "%s", errmsg_text(&s->err));
    }

    final_layer(m, s, eps);
    return 0;
}
