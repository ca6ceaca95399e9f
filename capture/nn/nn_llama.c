/*
 * nn_llama: Llama decoder of docs/salca.md#model-source on top of capture/nn (BLAS GEMMs,
 * RMSNorm, SiLU, causal attention) and the safetensors reader.
 */
#include "capture/nn/nn_llama.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "capture/nn/nn.h"
#include "capture/nn/safetensors.h"
#include "capture/nn/weightgen.h"
#include "common/io.h"
#include "common/mem.h"
#include "common/rng.h"

void nn_llama_config_tiny(struct nn_llama_config *c)
{
    /* docs/salca.md#model-source "tiny": F = 8D/3 rounded up to a multiple of 256 (Llama's rule) =
     * 1536 */
    *c = (struct nn_llama_config){.D = 512,
                                  .L = 4,
                                  .H = 4,
                                  .G = 2,
                                  .d = 128,
                                  .F = 1536,
                                  .V = 4096,
                                  .eps = 1e-5f,
                                  .rope_theta = 10000.0,
                                  .rope_factor = 1.0,
                                  .max_pos = 65536};
}

static int check_config(const struct nn_llama_config *c, struct errmsg *e)
{
    if (!c->D || !c->L || !c->H || !c->G || !c->d || !c->F || !c->V)
        return errmsg_set(e, ERR_CONFIG, "model config has a zero dimension");
    if (c->H % c->G)
        return errmsg_set(e, ERR_CONFIG,
                          "num_attention_heads %u is not a multiple of "
                          "num_key_value_heads %u",
                          c->H, c->G);
    if (c->d % 2 || c->d > 256)
        return errmsg_set(e, ERR_CONFIG, "head_dim %u must be even and <= 256", c->d);
    if (c->D > 65536 || c->F > 262144 || c->V > 1048576 || c->L > 1024 || c->H > 1024)
        return errmsg_set(e, ERR_LIMIT, "model config exceeds the supported sizes");
    return 0;
}

static size_t layer_floats(const struct nn_llama_config *c)
{
    size_t D = c->D, Hd = (size_t)c->H * c->d, Gd = (size_t)c->G * c->d, F = c->F;
    return 2 * D + Hd * D + 2 * Gd * D + D * Hd + 3 * F * D;
}

void nn_llama_free(struct nn_llama *m)
{
    if (!m)
        return;
    if (m->layers) {
        for (uint32_t l = 0; l < m->cfg.L; l++) {
            struct nn_llama_layer *y = &m->layers[l];
            mem_free(y->g_in);
            mem_free(y->g_post);
            mem_free(y->wq);
            mem_free(y->wk);
            mem_free(y->wv);
            mem_free(y->wo);
            mem_free(y->bq);
            mem_free(y->bk);
            mem_free(y->bv);
            mem_free(y->wgate);
            mem_free(y->wup);
            mem_free(y->wdown);
        }
    }
    mem_free(m->layers);
    mem_free(m->emb);
    mem_free(m->g_final);
    if (!m->tied)
        mem_free(m->lm);
    mem_free(m);
}

/* Allocates every tensor of the model (biases excepted). */
static int alloc_model(struct nn_llama *m)
{
    const struct nn_llama_config *c = &m->cfg;
    size_t D = c->D, Hd = (size_t)c->H * c->d, Gd = (size_t)c->G * c->d, F = c->F, V = c->V;
    m->layers = mem_calloc(c->L, sizeof *m->layers);
    m->emb = mem_alloc(V * D * sizeof(float));
    m->g_final = mem_alloc(D * sizeof(float));
    if (!m->layers || !m->emb || !m->g_final)
        return ERR_NOMEM;
    for (uint32_t l = 0; l < c->L; l++) {
        struct nn_llama_layer *y = &m->layers[l];
        y->g_in = mem_alloc(D * sizeof(float));
        y->g_post = mem_alloc(D * sizeof(float));
        y->wq = mem_alloc(Hd * D * sizeof(float));
        y->wk = mem_alloc(Gd * D * sizeof(float));
        y->wv = mem_alloc(Gd * D * sizeof(float));
        y->wo = mem_alloc(D * Hd * sizeof(float));
        y->wgate = mem_alloc(F * D * sizeof(float));
        y->wup = mem_alloc(F * D * sizeof(float));
        y->wdown = mem_alloc(D * F * sizeof(float));
        if (!y->g_in || !y->g_post || !y->wq || !y->wk || !y->wv || !y->wo || !y->wgate ||
            !y->wup || !y->wdown)
            return ERR_NOMEM;
    }
    return 0;
}

int nn_llama_new_tiny(struct nn_llama **out, const struct nn_llama_config *cfg, uint64_t seed,
                      uint32_t outlier_pairs, float outlier_gain, struct errmsg *e)
{
    *out = NULL;
    struct nn_llama *m = mem_calloc(1, sizeof *m);
    if (!m)
        return errmsg_set(e, ERR_NOMEM, "out of memory for the tiny model");
    if (cfg)
        m->cfg = *cfg;
    else
        nn_llama_config_tiny(&m->cfg);
    int rc = check_config(&m->cfg, e);
    if (rc)
        goto fail;
    rc = alloc_model(m);
    if (rc) {
        errmsg_set(e, rc, "out of memory for the tiny model");
        goto fail;
    }
    const struct nn_llama_config *c = &m->cfg;
    size_t D = c->D, Hd = (size_t)c->H * c->d, Gd = (size_t)c->G * c->d, F = c->F, V = c->V;
    m->lm = mem_alloc(V * D * sizeof(float));
    if (!m->lm) {
        rc = errmsg_set(e, ERR_NOMEM, "out of memory for the tiny model");
        goto fail;
    }
    /* docs/salca.md#model-source: linear weights N(0, 0.02^2), norm weights 1 */
    wg_fill(m->emb, V * D, WG_NORMAL, 0.02, 0, 0, seed, "model.embed_tokens.weight");
    wg_fill(m->lm, V * D, WG_NORMAL, 0.02, 0, 0, seed, "lm_head.weight");
    wg_fill(m->g_final, D, WG_ONES, 0, 0, 0, seed, "model.norm.weight");
    char name[128];
    for (uint32_t l = 0; l < c->L; l++) {
        struct nn_llama_layer *y = &m->layers[l];
#define FILL(ptr, count, init, suffix)                                                             \
    do {                                                                                           \
        snprintf(name, sizeof name, "model.layers.%u.%s", l, suffix);                              \
        wg_fill(ptr, count, init, 0.02, 0, 0, seed, name);                                         \
    } while (0)
        FILL(y->g_in, D, WG_ONES, "input_layernorm.weight");
        FILL(y->g_post, D, WG_ONES, "post_attention_layernorm.weight");
        FILL(y->wq, Hd * D, WG_NORMAL, "self_attn.q_proj.weight");
        FILL(y->wk, Gd * D, WG_NORMAL, "self_attn.k_proj.weight");
        FILL(y->wv, Gd * D, WG_NORMAL, "self_attn.v_proj.weight");
        FILL(y->wo, D * Hd, WG_NORMAL, "self_attn.o_proj.weight");
        FILL(y->wgate, F * D, WG_NORMAL, "mlp.gate_proj.weight");
        FILL(y->wup, F * D, WG_NORMAL, "mlp.up_proj.weight");
        FILL(y->wdown, D * F, WG_NORMAL, "mlp.down_proj.weight");
#undef FILL
        /* planted outlier pairs (docs/salca.md#model-source tiny_outlier_pairs / tiny_outlier_gain)
         */
        uint32_t half = c->d / 2, lo = c->d / 4;
        if (outlier_pairs > half - lo)
            outlier_pairs = half - lo;
        for (uint32_t g = 0; g < c->G && outlier_gain != 1.0f; g++) {
            struct rng r;
            rng_stream(&r, seed, "tiny.outliers", l, g);
            bool taken[128] = {false};
            for (uint32_t a = 0; a < outlier_pairs; a++) {
                uint32_t j;
                do
                    j = lo + (uint32_t)rng_below(&r, half - lo);
                while (taken[j - lo]);
                taken[j - lo] = true;
                uint32_t rows[2] = {g * c->d + j, g * c->d + j + half};
                for (int b = 0; b < 2; b++)
                    for (size_t x = 0; x < D; x++)
                        y->wk[rows[b] * D + x] *= outlier_gain;
            }
        }
    }
    *out = m;
    return 0;
fail:
    nn_llama_free(m);
    return rc;
}

static int json_u32(json_t *root, const char *key, uint32_t *out, bool required, struct errmsg *e)
{
    json_t *v = json_object_get(root, key);
    if (!v || json_is_null(v)) {
        if (required)
            return errmsg_set(e, ERR_CONFIG, "config.json lacks '%s'", key);
        return 1;
    }
    if (!json_is_integer(v) || json_integer_value(v) < 0 ||
        json_integer_value(v) > (json_int_t)UINT32_MAX)
        return errmsg_set(e, ERR_CONFIG, "config.json key '%s' is not a valid integer", key);
    *out = (uint32_t)json_integer_value(v);
    return 0;
}

int nn_llama_parse_config(const char *text, struct nn_llama_config *c, struct errmsg *e)
{
    json_error_t jerr;
    json_t *root = json_loads(text, 0, &jerr);
    if (!root)
        return errmsg_set(e, ERR_CONFIG, "config.json is not valid JSON (line %d: %s)", jerr.line,
                          jerr.text);
    int rc = 0;
    memset(c, 0, sizeof *c);
    if (!json_is_object(root)) {
        rc = errmsg_set(e, ERR_CONFIG, "config.json is not a JSON object");
        goto done;
    }
    if ((rc = json_u32(root, "hidden_size", &c->D, true, e)) < 0 ||
        (rc = json_u32(root, "num_hidden_layers", &c->L, true, e)) < 0 ||
        (rc = json_u32(root, "num_attention_heads", &c->H, true, e)) < 0 ||
        (rc = json_u32(root, "intermediate_size", &c->F, true, e)) < 0 ||
        (rc = json_u32(root, "vocab_size", &c->V, true, e)) < 0)
        goto done;
    if (c->H == 0) {
        rc = errmsg_set(e, ERR_CONFIG, "config.json has num_attention_heads 0");
        goto done;
    }
    rc = json_u32(root, "num_key_value_heads", &c->G, false, e);
    if (rc < 0)
        goto done;
    if (rc == 1)
        c->G = c->H;
    rc = json_u32(root, "head_dim", &c->d, false, e);
    if (rc < 0)
        goto done;
    if (rc == 1)
        c->d = c->D / c->H;
    rc = 0;
    json_t *v = json_object_get(root, "rms_norm_eps");
    c->eps = json_is_number(v) ? (float)json_number_value(v) : 1e-6f;
    v = json_object_get(root, "rope_theta");
    c->rope_theta = json_is_number(v) ? json_number_value(v) : 10000.0;
    /* JSON numbers are finite, but 1e300 becomes an inf float eps */
    if (!(c->eps > 0 && c->eps < 1) || !(c->rope_theta > 1)) {
        rc = errmsg_set(e, ERR_CONFIG, "rms_norm_eps must be in (0, 1) and rope_theta above 1");
        goto done;
    }
    c->rope_factor = 1.0;
    v = json_object_get(root, "max_position_embeddings");
    c->max_pos =
        json_is_integer(v) && json_integer_value(v) > 0 ? (uint32_t)json_integer_value(v) : 65536;
    json_t *rs = json_object_get(root, "rope_scaling");
    if (rs && !json_is_null(rs)) {
        json_t *ty = json_object_get(rs, "type");
        if (!ty)
            ty = json_object_get(rs, "rope_type");
        const char *tn = json_is_string(ty) ? json_string_value(ty) : "?";
        if (strcmp(tn, "linear") != 0) {
            rc = errmsg_set(e, ERR_FORMAT, "unsupported rope_scaling type '%s'", tn);
            goto done;
        }
        json_t *f = json_object_get(rs, "factor");
        if (!json_is_number(f) || json_number_value(f) <= 0) {
            rc = errmsg_set(e, ERR_CONFIG, "rope_scaling 'linear' needs a positive factor");
            goto done;
        }
        c->rope_factor = json_number_value(f);
        /* a scaled model reaches factor times its trained positions */
        c->max_pos = (uint32_t)fmin(4294967295.0, c->max_pos * c->rope_factor);
    }
    rc = check_config(c, e);
done:
    json_decref(root);
    return rc;
}

/* A checkpoint's JSON side file (config, shard index), bounded at 64 MiB. */
static char *read_text(const char *path, struct errmsg *e)
{
    char *buf;
    size_t len;
    return io_read_file(path, (uint64_t)64 << 20, &buf, &len, e) ? NULL : buf;
}

/* The open shards of a checkpoint. */
struct shards {
    struct st_file *f[64];
    int n;
};

static void shards_close(struct shards *s)
{
    for (int i = 0; i < s->n; i++)
        st_close(s->f[i]);
    s->n = 0;
}

static int shards_open(struct shards *s, const char *dir, struct errmsg *e)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    FILE *probe = fopen(path, "rb");
    if (!probe) {
        snprintf(path, sizeof path, "%s/model.safetensors", dir);
        s->n = 1;
        return st_open(&s->f[0], path, e);
    }
    fclose(probe);
    char *text = read_text(path, e);
    if (!text)
        return e ? e->code : ERR_IO;
    json_error_t jerr;
    json_t *root = json_loads(text, 0, &jerr);
    mem_free(text);
    json_t *wm = root ? json_object_get(root, "weight_map") : NULL;
    if (!json_is_object(wm)) {
        json_decref(root);
        return errmsg_set(e, ERR_DATA, "'%s' has no weight_map object", path);
    }
    int rc = 0;
    const char *key;
    json_t *val;
    json_object_foreach(wm, key, val)
    {
        if (!json_is_string(val)) {
            rc = errmsg_set(e, ERR_DATA, "weight_map entry '%s' in '%s' is not a file name", key,
                            path);
            break;
        }
        const char *file = json_string_value(val);
        if (strchr(file, '/') || strcmp(file, "..") == 0) {
            rc = errmsg_set(e, ERR_DATA, "shard name '%s' in '%s' is not a plain file name", file,
                            path);
            break;
        }
        char sp[4096];
        snprintf(sp, sizeof sp, "%s/%s", dir, file);
        bool have = false;
        for (int i = 0; i < s->n; i++)
            if (strcmp(st_path(s->f[i]), sp) == 0)
                have = true;
        if (have)
            continue;
        if (s->n == 64) {
            rc = errmsg_set(e, ERR_LIMIT, "more than 64 shards in '%s'", path);
            break;
        }
        rc = st_open(&s->f[s->n], sp, e);
        if (rc)
            break;
        s->n++;
    }
    json_decref(root);
    return rc;
}

static const struct st_tensor_info *shards_find(const struct shards *s, const char *name,
                                                const char **file)
{
    for (int i = 0; i < s->n; i++) {
        const struct st_tensor_info *t = st_find(s->f[i], name);
        if (t) {
            *file = st_path(s->f[i]);
            return t;
        }
    }
    return NULL;
}

static int load_tensor(const struct shards *s, const char *dir, const char *name, float *out,
                       int64_t d0, int64_t d1, int ndim, struct errmsg *e)
{
    const char *file = NULL;
    const struct st_tensor_info *t = shards_find(s, name, &file);
    if (!t)
        return errmsg_set(e, ERR_DATA, "missing tensor '%s' in checkpoint '%s'", name, dir);
    int64_t shape[2] = {d0, d1};
    return st_tensor_to_f32(t, file, shape, ndim, out, e);
}

/* Optional bias: loaded when present, else NULL. */
static int load_bias(const struct shards *s, const char *name, int64_t n, float **out,
                     struct errmsg *e)
{
    const char *file = NULL;
    const struct st_tensor_info *t = shards_find(s, name, &file);
    *out = NULL;
    if (!t)
        return 0;
    *out = mem_alloc((size_t)n * sizeof(float));
    if (!*out)
        return errmsg_set(e, ERR_NOMEM, "out of memory loading '%s'", name);
    return st_tensor_to_f32(t, file, &n, 1, *out, e);
}

int nn_llama_load(struct nn_llama **out, const char *path, struct errmsg *e)
{
    *out = NULL;
    struct shards sh = {0};
    char cpath[4096];
    snprintf(cpath, sizeof cpath, "%s/config.json", path);
    char *text = read_text(cpath, e);
    if (!text)
        return e ? e->code : ERR_IO;
    struct nn_llama *m = mem_calloc(1, sizeof *m);
    int rc;
    if (!m) {
        mem_free(text);
        return errmsg_set(e, ERR_NOMEM, "out of memory loading '%s'", path);
    }
    rc = nn_llama_parse_config(text, &m->cfg, e);
    mem_free(text);
    if (rc)
        goto fail;
    rc = alloc_model(m);
    if (rc) {
        errmsg_set(e, rc, "out of memory loading '%s'", path);
        goto fail;
    }
    rc = shards_open(&sh, path, e);
    if (rc)
        goto fail;
    const struct nn_llama_config *c = &m->cfg;
    int64_t D = c->D, Hd = (int64_t)c->H * c->d, Gd = (int64_t)c->G * c->d, F = c->F, V = c->V;
    if ((rc = load_tensor(&sh, path, "model.embed_tokens.weight", m->emb, V, D, 2, e)) ||
        (rc = load_tensor(&sh, path, "model.norm.weight", m->g_final, D, 0, 1, e)))
        goto fail;
    const char *file = NULL;
    if (shards_find(&sh, "lm_head.weight", &file)) {
        m->lm = mem_alloc((size_t)V * D * sizeof(float));
        if (!m->lm) {
            rc = errmsg_set(e, ERR_NOMEM, "out of memory loading '%s'", path);
            goto fail;
        }
        if ((rc = load_tensor(&sh, path, "lm_head.weight", m->lm, V, D, 2, e)))
            goto fail;
    } else {
        m->lm = m->emb; /* docs/salca.md#model-source: absent lm_head is tied to E */
        m->tied = true;
    }
    char name[160];
    for (uint32_t l = 0; l < c->L; l++) {
        struct nn_llama_layer *y = &m->layers[l];
        struct {
            const char *suffix;
            float *dst;
            int64_t d0, d1;
            int ndim;
        } items[] = {
            {"input_layernorm.weight", y->g_in, D, 0, 1},
            {"post_attention_layernorm.weight", y->g_post, D, 0, 1},
            {"self_attn.q_proj.weight", y->wq, Hd, D, 2},
            {"self_attn.k_proj.weight", y->wk, Gd, D, 2},
            {"self_attn.v_proj.weight", y->wv, Gd, D, 2},
            {"self_attn.o_proj.weight", y->wo, D, Hd, 2},
            {"mlp.gate_proj.weight", y->wgate, F, D, 2},
            {"mlp.up_proj.weight", y->wup, F, D, 2},
            {"mlp.down_proj.weight", y->wdown, D, F, 2},
        };
        for (size_t a = 0; a < sizeof items / sizeof items[0]; a++) {
            snprintf(name, sizeof name, "model.layers.%u.%s", l, items[a].suffix);
            rc = load_tensor(&sh, path, name, items[a].dst, items[a].d0, items[a].d1, items[a].ndim,
                             e);
            if (rc)
                goto fail;
        }
        snprintf(name, sizeof name, "model.layers.%u.self_attn.q_proj.bias", l);
        if ((rc = load_bias(&sh, name, Hd, &y->bq, e)))
            goto fail;
        snprintf(name, sizeof name, "model.layers.%u.self_attn.k_proj.bias", l);
        if ((rc = load_bias(&sh, name, Gd, &y->bk, e)))
            goto fail;
        snprintf(name, sizeof name, "model.layers.%u.self_attn.v_proj.bias", l);
        if ((rc = load_bias(&sh, name, Gd, &y->bv, e)))
            goto fail;
    }
    shards_close(&sh);
    *out = m;
    return 0;
fail:
    shards_close(&sh);
    nn_llama_free(m);
    return rc;
}

int nn_llama_cache_init(struct nn_llama_cache *c, const struct nn_llama_config *cfg, uint32_t cap)
{
    memset(c, 0, sizeof *c);
    c->L = cfg->L;
    c->G = cfg->G;
    c->d = cfg->d;
    c->cap = cap;
    size_t n;
    if (!mem_mul((size_t)cfg->L * cfg->G * cfg->d, cap, &n))
        return ERR_LIMIT;
    c->k = mem_alloc(n * sizeof(float));
    c->v = mem_alloc(n * sizeof(float));
    if (!c->k || !c->v) {
        nn_llama_cache_release(c);
        return ERR_NOMEM;
    }
    return 0;
}

void nn_llama_cache_release(struct nn_llama_cache *c)
{
    mem_free(c->k);
    mem_free(c->v);
    memset(c, 0, sizeof *c);
}

static float *cache_row(const struct nn_llama_cache *c, float *base, uint32_t l, uint32_t g,
                        uint32_t pos)
{
    return base + (((size_t)l * c->G + g) * c->cap + pos) * c->d;
}

void nn_llama_rope(float *x, uint32_t d, double pos, double theta, double factor)
{
    uint32_t half = d / 2;
    double m = pos / factor; /* docs/salca.md#model-source: linear scaling divides positions by f */
    for (uint32_t j = 0; j < half; j++) {
        double ang = m * pow(theta, -2.0 * j / d);
        float c = (float)cos(ang), s = (float)sin(ang);
        float a = x[j], b = x[j + half];
        x[j] = a * c - b * s;
        x[j + half] = b * c + a * s;
    }
}

/* Applies RoPE to `heads` vectors of d floats at rows of stride ld, one position per row. */
static void rope_rows(const struct nn_llama_config *c, float *x, uint32_t rows, uint32_t heads,
                      size_t ld, uint32_t pos0)
{
    for (uint32_t r = 0; r < rows; r++)
        for (uint32_t h = 0; h < heads; h++)
            nn_llama_rope(x + r * ld + (size_t)h * c->d, c->d, (double)(pos0 + r), c->rope_theta,
                          c->rope_factor);
}

static void add_bias(float *y, const float *b, uint32_t rows, uint32_t n)
{
    if (!b)
        return;
    for (uint32_t r = 0; r < rows; r++)
        for (uint32_t j = 0; j < n; j++)
            y[(size_t)r * n + j] += b[j];
}

/* MLP half of a block on rows of x (docs/salca.md#model-source): x += W_down (silu(W_gate b) * W_up
 * b). */
static void mlp(const struct nn_llama *m, const struct nn_llama_layer *y, float *x, uint32_t rows,
                float *a, float *g1, float *u1, float *t)
{
    const struct nn_llama_config *c = &m->cfg;
    nn_rmsnorm(x, a, (int)rows, (int)c->D, (int)c->D, c->eps, y->g_post);
    nn_linear(a, (int)rows, (int)c->D, (int)c->D, y->wgate, NULL, (int)c->F, g1, (int)c->F);
    nn_linear(a, (int)rows, (int)c->D, (int)c->D, y->wup, NULL, (int)c->F, u1, (int)c->F);
    size_t nf = (size_t)rows * c->F;
    nn_silu(g1, nf);
    for (size_t i = 0; i < nf; i++)
        g1[i] *= u1[i];
    nn_linear(g1, (int)rows, (int)c->F, (int)c->F, y->wdown, NULL, (int)c->D, t, (int)c->D);
    nn_add(x, t, (size_t)rows * c->D);
}

static void logits_of(const struct nn_llama *m, const float *x, float *a, float *logits)
{
    const struct nn_llama_config *c = &m->cfg;
    nn_rmsnorm(x, a, 1, (int)c->D, (int)c->D, c->eps, m->g_final);
    nn_linear(a, 1, (int)c->D, (int)c->D, m->lm, NULL, (int)c->V, logits, (int)c->V);
}

/* The activations of a forward pass over up to `rows` tokens (each buffer rows x its width)
 * and sc, n_sc floats of attention scores (none when 0). */
struct llama_work {
    float *x, *a, *t; /* (rows, D) residual stream, normed input, projection out */
    float *q, *o;     /* (rows, H d) queries, attention out */
    float *k, *v;     /* (rows, G d) keys, values */
    float *g1, *u1;   /* (rows, F) MLP gate, up */
    float *sc;        /* (n_sc) scores */
};

/* Allocates w; false when out of memory (what was allocated is freed by work_free). */
static bool work_alloc(struct llama_work *w, const struct nn_llama_config *c, size_t rows,
                       size_t n_sc)
{
    size_t D = c->D, Hd = (size_t)c->H * c->d, Gd = (size_t)c->G * c->d, F = c->F;
    *w = (struct llama_work){
        .x = mem_alloc(rows * D * sizeof(float)),
        .a = mem_alloc(rows * D * sizeof(float)),
        .t = mem_alloc(rows * D * sizeof(float)),
        .q = mem_alloc(rows * Hd * sizeof(float)),
        .o = mem_alloc(rows * Hd * sizeof(float)),
        .k = mem_alloc(rows * Gd * sizeof(float)),
        .v = mem_alloc(rows * Gd * sizeof(float)),
        .g1 = mem_alloc(rows * F * sizeof(float)),
        .u1 = mem_alloc(rows * F * sizeof(float)),
        .sc = n_sc ? mem_alloc(n_sc * sizeof(float)) : NULL,
    };
    return w->x && w->a && w->t && w->q && w->o && w->k && w->v && w->g1 && w->u1 &&
           (!n_sc || w->sc);
}

static void work_free(struct llama_work *w)
{
    mem_free(w->x);
    mem_free(w->a);
    mem_free(w->t);
    mem_free(w->q);
    mem_free(w->o);
    mem_free(w->k);
    mem_free(w->v);
    mem_free(w->g1);
    mem_free(w->u1);
    mem_free(w->sc);
}

/* Layer y's queries and keys (RoPE at positions pos0..) and values of the rows normed
 * inputs w->a, into w->q, w->k, w->v. */
static void layer_qkv(const struct nn_llama_config *c, const struct nn_llama_layer *y,
                      struct llama_work *w, uint32_t rows, uint32_t pos0)
{
    size_t D = c->D, Hd = (size_t)c->H * c->d, Gd = (size_t)c->G * c->d;
    nn_linear(w->a, (int)rows, (int)D, (int)D, y->wq, NULL, (int)Hd, w->q, (int)Hd);
    nn_linear(w->a, (int)rows, (int)D, (int)D, y->wk, NULL, (int)Gd, w->k, (int)Gd);
    nn_linear(w->a, (int)rows, (int)D, (int)D, y->wv, NULL, (int)Gd, w->v, (int)Gd);
    add_bias(w->q, y->bq, rows, (uint32_t)Hd);
    add_bias(w->k, y->bk, rows, (uint32_t)Gd);
    add_bias(w->v, y->bv, rows, (uint32_t)Gd);
    rope_rows(c, w->q, rows, c->H, Hd, pos0);
    rope_rows(c, w->k, rows, c->G, Gd, pos0);
}

/* The rest of layer y after attention: output projection of w->o, residual, MLP. */
static void layer_out(const struct nn_llama *m, const struct nn_llama_layer *y,
                      struct llama_work *w, uint32_t rows)
{
    size_t D = m->cfg.D, Hd = (size_t)m->cfg.H * m->cfg.d;
    nn_linear(w->o, (int)rows, (int)Hd, (int)Hd, y->wo, NULL, (int)D, w->t, (int)D);
    nn_add(w->x, w->t, (size_t)rows * D);
    mlp(m, y, w->x, rows, w->a, w->g1, w->u1, w->t);
}

int nn_llama_prefill(const struct nn_llama *m, struct nn_llama_cache *cache, const uint32_t *tokens,
                     uint32_t count, uint32_t chunk, float *logits, struct errmsg *e)
{
    const struct nn_llama_config *c = &m->cfg;
    if (chunk == 0)
        chunk = 256;
    if ((uint64_t)cache->n + count > cache->cap || (uint64_t)cache->n + count > c->max_pos)
        return errmsg_set(e, ERR_LIMIT,
                          "prefill of %u tokens exceeds the cache (%u of %u "
                          "used) or the maximum position %u",
                          count, cache->n, cache->cap, c->max_pos);
    for (uint32_t i = 0; i < count; i++)
        if (tokens[i] >= c->V)
            return errmsg_set(e, ERR_DATA, "token id %u at %u is outside the vocabulary (%u)",
                              tokens[i], i, c->V);
    size_t D = c->D, Hd = (size_t)c->H * c->d, Gd = (size_t)c->G * c->d;
    size_t C = chunk;
    struct llama_work w;
    float *x, *a, *q, *o, *k, *v, *sc;
    int rc = 0;
    if (!work_alloc(&w, c, C, C * ((size_t)cache->n + count))) {
        rc = errmsg_set(e, ERR_NOMEM, "out of memory in the model prefill");
        goto done;
    }
    x = w.x, a = w.a, q = w.q, o = w.o, k = w.k, v = w.v, sc = w.sc;
    for (uint32_t p0 = 0; p0 < count; p0 += chunk) {
        uint32_t rows = count - p0 < chunk ? count - p0 : chunk;
        uint32_t pos0 = cache->n;
        for (uint32_t r = 0; r < rows; r++)
            memcpy(x + r * D, m->emb + (size_t)tokens[p0 + r] * D, D * sizeof(float));
        for (uint32_t l = 0; l < c->L; l++) {
            const struct nn_llama_layer *y = &m->layers[l];
            nn_rmsnorm(x, a, (int)rows, (int)D, (int)D, c->eps, y->g_in);
            layer_qkv(c, y, &w, rows, pos0);
            for (uint32_t r = 0; r < rows; r++)
                for (uint32_t g = 0; g < c->G; g++) {
                    memcpy(cache_row(cache, cache->k, l, g, pos0 + r), k + r * Gd + g * c->d,
                           c->d * sizeof(float));
                    memcpy(cache_row(cache, cache->v, l, g, pos0 + r), v + r * Gd + g * c->d,
                           c->d * sizeof(float));
                }
            for (uint32_t h = 0; h < c->H; h++) {
                uint32_t g = h * c->G / c->H; /* docs/salca.md#notation: HF repeat_kv order */
                struct nn_attn at = {
                    .n_q = (int)rows,
                    .n_k = (int)(pos0 + rows),
                    .dh = (int)c->d,
                    .q = q + (size_t)h * c->d,
                    .ldq = (int)Hd,
                    .k = cache_row(cache, cache->k, l, g, 0),
                    .ldk = (int)c->d,
                    .v = cache_row(cache, cache->v, l, g, 0),
                    .ldv = (int)c->d,
                    .o = o + (size_t)h * c->d,
                    .ldo = (int)Hd,
                    .scale = 1.0f / sqrtf((float)c->d),
                    .causal_offset = (int)pos0,
                    .scratch = sc,
                };
                nn_attention(&at);
            }
            layer_out(m, y, &w, rows);
        }
        cache->n += rows;
        if (logits && p0 + rows == count)
            logits_of(m, x + (size_t)(rows - 1) * D, a, logits);
    }
done:
    work_free(&w);
    return rc;
}

/* Dense attention of one decode step for layer l over the cache (token already appended). */
static void dense_attn(const struct nn_llama *m, const struct nn_llama_cache *cache, uint32_t l,
                       const float *q, float *out, float *sc)
{
    const struct nn_llama_config *c = &m->cfg;
    uint32_t n = cache->n;
    float scale = 1.0f / sqrtf((float)c->d);
    for (uint32_t h = 0; h < c->H; h++) {
        uint32_t g = h * c->G / c->H;
        const float *qh = q + (size_t)h * c->d;
        const float *kb = cache_row(cache, cache->k, l, g, 0);
        const float *vb = cache_row(cache, cache->v, l, g, 0);
        for (uint32_t i = 0; i < n; i++)
            sc[i] = nn_dot(qh, kb + (size_t)i * c->d, (int)c->d) * scale;
        nn_softmax_rows(sc, 1, (int)n, (int)n);
        float *oh = out + (size_t)h * c->d;
        memset(oh, 0, c->d * sizeof(float));
        for (uint32_t i = 0; i < n; i++)
            for (uint32_t j = 0; j < c->d; j++)
                oh[j] += sc[i] * vb[(size_t)i * c->d + j];
    }
}

int nn_llama_decode(const struct nn_llama *m, struct nn_llama_cache *cache, uint32_t pos,
                    uint32_t token, nn_llama_attn_fn attn, void *ctx, float *logits,
                    struct errmsg *e)
{
    const struct nn_llama_config *c = &m->cfg;
    if (token >= c->V)
        return errmsg_set(e, ERR_DATA, "token id %u is outside the vocabulary (%u)", token, c->V);
    if (pos >= c->max_pos)
        return errmsg_set(e, ERR_LIMIT, "position %u exceeds the model's maximum %u", pos,
                          c->max_pos);
    if (!attn && (!cache || cache->n != pos || cache->n >= cache->cap))
        return errmsg_set(e, ERR_LIMIT, "decode at position %u does not fit the cache", pos);
    size_t D = c->D;
    struct llama_work w;
    int rc = 0;
    if (!work_alloc(&w, c, 1, attn ? 0 : (size_t)cache->n + 1)) {
        rc = errmsg_set(e, ERR_NOMEM, "out of memory in the model decode");
        goto done;
    }
    float *x = w.x, *a = w.a, *q = w.q, *o = w.o, *k = w.k, *v = w.v;
    memcpy(x, m->emb + (size_t)token * D, D * sizeof(float));
    for (uint32_t l = 0; l < c->L; l++) {
        const struct nn_llama_layer *y = &m->layers[l];
        nn_rmsnorm(x, a, 1, (int)D, (int)D, c->eps, y->g_in);
        layer_qkv(c, y, &w, 1, pos);
        if (attn) {
            attn(ctx, l, q, k, v, o);
        } else {
            for (uint32_t g = 0; g < c->G; g++) {
                memcpy(cache_row(cache, cache->k, l, g, pos), k + g * c->d, c->d * sizeof(float));
                memcpy(cache_row(cache, cache->v, l, g, pos), v + g * c->d, c->d * sizeof(float));
            }
            cache->n = pos + 1; /* visible to this layer's attention */
            dense_attn(m, cache, l, q, o, w.sc);
            cache->n = pos;
        }
        layer_out(m, y, &w, 1);
    }
    if (!attn)
        cache->n = pos + 1;
    logits_of(m, x, a, logits);
done:
    work_free(&w);
    return rc;
}

uint32_t nn_llama_argmax(const float *logits, uint32_t V)
{
    uint32_t best = 0;
    for (uint32_t i = 1; i < V; i++)
        if (logits[i] > logits[best])
            best = i; /* strict >: ties go to the lowest id (docs/salca.md#model-source) */
    return best;
}

size_t nn_llama_param_floats(const struct nn_llama_config *c)
{
    return (size_t)c->L * layer_floats(c) + 2 * (size_t)c->V * c->D + c->D;
}
