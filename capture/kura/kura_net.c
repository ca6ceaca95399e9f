/*
 * kura_net: score network kura-score-v1 (docs/kura.md#score-network) [decision].
 */
#include "capture/kura/kura_net.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/nn/nn.h"
#include "capture/nn/safetensors.h"
#include "common/io.h"
#include "common/mem.h"
#include "common/sha256.h"

#define NET_MAX_FILE ((uint64_t)1 << 30) /* 1 GiB of weights at most */

struct kura_net {
    int c, l, g, e, t;      /* channels, blocks, groups, emb_dim, steps */
    float *in_w, *in_b;     /* [C,2,3,3], [C] */
    float *norm_w, *norm_b; /* (L, C) */
    float *emb_w, *emb_b;   /* (L, C, E), (L, C) */
    float *conv_w, *conv_b; /* (L, C, C, 3, 3), (L, C) */
    float *out_w, *out_b;   /* [2,C,3,3], [2] */
    char *meta_json;
    char sha[65];
};

void kura_net_free(struct kura_net *n)
{
    if (!n)
        return;
    mem_free(n->in_w);
    mem_free(n->in_b);
    mem_free(n->norm_w);
    mem_free(n->norm_b);
    mem_free(n->emb_w);
    mem_free(n->emb_b);
    mem_free(n->conv_w);
    mem_free(n->conv_b);
    mem_free(n->out_w);
    mem_free(n->out_b);
    free(n->meta_json); /* from jansson's json_dumps */
    mem_free(n);
}

const char *kura_net_metadata_json(const struct kura_net *n)
{
    return n->meta_json;
}

const char *kura_net_sha256(const struct kura_net *n)
{
    return n->sha;
}

/* Integer metadata value (decimal string) in [lo, hi]. */
static int meta_int(json_t *meta, const char *key, long lo, long hi, int *out, const char *path,
                    struct errmsg *e)
{
    json_t *v = json_object_get(meta, key);
    const char *s = json_is_string(v) ? json_string_value(v) : NULL;
    char *end;
    errno = 0;
    long x = s ? strtol(s, &end, 10) : 0;
    if (!s || errno || end == s || *end || x < lo || x > hi)
        return errmsg_set(e, ERR_DATA, "bad or missing metadata '%s' in '%s'", key, path);
    *out = (int)x;
    return 0;
}

/* Copies tensor name (F32 only, exact shape) into a new float array. */
static int load_tensor(const struct st_file *f, const char *path, const char *name,
                       const int64_t *shape, int ndim, float **out, struct errmsg *e)
{
    const struct st_tensor_info *t = st_find(f, name);
    if (!t)
        return errmsg_set(e, ERR_DATA, "missing tensor '%s' in '%s'", name, path);
    if (t->dtype != ST_F32)
        return errmsg_set(e, ERR_DATA, "tensor '%s' in '%s' is %s, not F32", name, path,
                          t->dtype_name);
    bool ok = t->ndim == ndim;
    for (int i = 0; ok && i < ndim; i++)
        ok = t->shape[i] == shape[i];
    if (!ok)
        return errmsg_set(e, ERR_DATA, "tensor '%s' in '%s' has the wrong shape", name, path);
    float *dst = mem_alloc((size_t)(t->numel ? t->numel : 1) * sizeof(float));
    if (!dst)
        return errmsg_set(e, ERR_NOMEM, "out of memory for tensor '%s'", name);
    int rc = st_tensor_to_f32(t, path, shape, ndim, dst, e);
    if (rc) {
        mem_free(dst);
        return rc;
    }
    *out = dst;
    return 0;
}

int kura_net_load(struct kura_net **out, const char *path, int t, struct errmsg *e)
{
    *out = NULL;
    uint8_t *file = NULL;
    size_t flen = 0;
    struct st_file *st = NULL;
    json_t *root = NULL;
    struct kura_net *n = mem_calloc(1, sizeof *n);
    if (!n)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    char *ftext = NULL;
    int rc = io_read_file(path, NET_MAX_FILE, &ftext, &flen, e);
    if (rc)
        goto fail;
    file = (uint8_t *)ftext;
    sha256_hex(file, flen, n->sha);
    /* safetensors: u64 LE header length, then the JSON header (bounded) */
    uint64_t hl = 0;
    if (flen >= 8)
        for (int i = 7; i >= 0; i--)
            hl = (hl << 8) | file[i];
    if (flen < 8 || hl > flen - 8 || hl > ST_MAX_HEADER) {
        rc = errmsg_set(e, ERR_DATA, "'%s' is not a safetensors file", path);
        goto fail;
    }
    root = json_loadb((const char *)file + 8, (size_t)hl, 0, NULL);
    json_t *meta = root ? json_object_get(root, "__metadata__") : NULL;
    if (!json_is_object(meta)) {
        rc = errmsg_set(e, ERR_DATA, "no __metadata__ in '%s'", path);
        goto fail;
    }
    json_t *arch = json_object_get(meta, "arch");
    if (!json_is_string(arch) || strcmp(json_string_value(arch), "kura-score-v1")) {
        rc = errmsg_set(e, ERR_DATA, "metadata 'arch' of '%s' is not kura-score-v1", path);
        goto fail;
    }
    if ((rc = meta_int(meta, "channels", 1, 1024, &n->c, path, e)) ||
        (rc = meta_int(meta, "blocks", 0, 64, &n->l, path, e)) ||
        (rc = meta_int(meta, "groups", 1, 1024, &n->g, path, e)) ||
        (rc = meta_int(meta, "emb_dim", 2, 4096, &n->e, path, e)) ||
        (rc = meta_int(meta, "steps", 3, 1000000, &n->t, path, e)))
        goto fail;
    if (n->c % n->g || n->e % 2) {
        rc = errmsg_set(e, ERR_DATA, "metadata of '%s': channels %% groups or emb_dim odd", path);
        goto fail;
    }
    if (n->t != t) {
        rc = errmsg_set(e, ERR_DATA, "weights '%s' trained for %d steps, schedule has %d", path,
                        n->t, t);
        goto fail;
    }
    n->meta_json = json_dumps(meta, JSON_SORT_KEYS | JSON_COMPACT);
    if (!n->meta_json) {
        rc = errmsg_set(e, ERR_NOMEM, "out of memory");
        goto fail;
    }
    struct errmsg se = {0};
    rc = st_open(&st, path, &se);
    if (rc) {
        rc = errmsg_set(e, rc == ERR_IO ? ERR_IO : ERR_DATA, "%s", errmsg_text(&se));
        goto fail;
    }
    int C = n->c, L = n->l, E = n->e;
    for (size_t i = 0; i < st_count(st); i++) { /* any unknown name is an extra tensor */
        const char *nm = st_at(st, i)->name;
        bool known = !strcmp(nm, "in_conv.weight") || !strcmp(nm, "in_conv.bias") ||
                     !strcmp(nm, "out_conv.weight") || !strcmp(nm, "out_conv.bias");
        int bl;
        char rest[32];
        if (!known && sscanf(nm, "blocks.%d.%31s", &bl, rest) == 2 && bl >= 0 && bl < L) {
            char canon[64];
            snprintf(canon, sizeof canon, "blocks.%d.%s", bl, rest);
            known =
                !strcmp(canon, nm) && (!strcmp(rest, "norm.weight") || !strcmp(rest, "norm.bias") ||
                                       !strcmp(rest, "emb.weight") || !strcmp(rest, "emb.bias") ||
                                       !strcmp(rest, "conv.weight") || !strcmp(rest, "conv.bias"));
        }
        if (!known) {
            rc = errmsg_set(e, ERR_DATA, "unexpected tensor '%s' in '%s'", nm, path);
            goto fail;
        }
    }
    int64_t s_in_w[4] = {C, 2, 3, 3}, s_c[1] = {C}, s_out_w[4] = {2, C, 3, 3}, s_2[1] = {2};
    if ((rc = load_tensor(st, path, "in_conv.weight", s_in_w, 4, &n->in_w, e)) ||
        (rc = load_tensor(st, path, "in_conv.bias", s_c, 1, &n->in_b, e)) ||
        (rc = load_tensor(st, path, "out_conv.weight", s_out_w, 4, &n->out_w, e)) ||
        (rc = load_tensor(st, path, "out_conv.bias", s_2, 1, &n->out_b, e)))
        goto fail;
    size_t Lc = (size_t)(L ? L : 1);
    n->norm_w = mem_alloc(Lc * C * sizeof(float));
    n->norm_b = mem_alloc(Lc * C * sizeof(float));
    n->emb_w = mem_alloc(Lc * C * E * sizeof(float));
    n->emb_b = mem_alloc(Lc * C * sizeof(float));
    n->conv_w = mem_alloc(Lc * C * C * 9 * sizeof(float));
    n->conv_b = mem_alloc(Lc * C * sizeof(float));
    if (!n->norm_w || !n->norm_b || !n->emb_w || !n->emb_b || !n->conv_w || !n->conv_b) {
        rc = errmsg_set(e, ERR_NOMEM, "out of memory for weights");
        goto fail;
    }
    for (int l = 0; l < L; l++) {
        struct {
            const char *suffix;
            int64_t shape[4];
            int ndim;
            float *dst;
            size_t count;
        } parts[6] = {
            {"norm.weight", {C}, 1, n->norm_w + (size_t)l * C, (size_t)C},
            {"norm.bias", {C}, 1, n->norm_b + (size_t)l * C, (size_t)C},
            {"emb.weight", {C, E}, 2, n->emb_w + (size_t)l * C * E, (size_t)C * E},
            {"emb.bias", {C}, 1, n->emb_b + (size_t)l * C, (size_t)C},
            {"conv.weight", {C, C, 3, 3}, 4, n->conv_w + (size_t)l * C * C * 9, (size_t)C * C * 9},
            {"conv.bias", {C}, 1, n->conv_b + (size_t)l * C, (size_t)C},
        };
        for (int k = 0; k < 6; k++) {
            char name[64];
            snprintf(name, sizeof name, "blocks.%d.%s", l, parts[k].suffix);
            float *tmp = NULL;
            rc = load_tensor(st, path, name, parts[k].shape, parts[k].ndim, &tmp, e);
            if (rc)
                goto fail;
            memcpy(parts[k].dst, tmp, parts[k].count * sizeof(float));
            mem_free(tmp);
        }
    }
    st_close(st);
    json_decref(root);
    mem_free(file);
    *out = n;
    return 0;
fail:
    st_close(st);
    json_decref(root);
    mem_free(file);
    kura_net_free(n);
    return rc;
}

/* out (cout, hw) = 3x3 circular conv of in (cin, h, w) by wt [cout, cin, 3, 3] + bias. */
static void conv3x3(const float *in, int cin, size_t h, size_t w, const float *wt,
                    const float *bias, int cout, float *out, float *col)
{
    size_t hw = h * w;
    for (int i = 0; i < cin; i++)
        for (int ky = 0; ky < 3; ky++)
            for (int kx = 0; kx < 3; kx++) {
                float *dst = col + ((size_t)i * 9 + (size_t)ky * 3 + kx) * hw;
                const float *src = in + (size_t)i * hw;
                for (size_t r = 0; r < h; r++) {
                    size_t rr = (r + h + (size_t)ky - 1) % h;
                    for (size_t c = 0; c < w; c++)
                        dst[r * w + c] = src[rr * w + (c + w + (size_t)kx - 1) % w];
                }
            }
    for (int o = 0; o < cout; o++)
        for (size_t p = 0; p < hw; p++)
            out[(size_t)o * hw + p] = bias[o];
    nn_sgemm(false, cout, (int)hw, cin * 9, 1.0f, wt, cin * 9, col, (int)hw, 1.0f, out, (int)hw);
}

int kura_net_score(struct kura_net *n, const double *theta, size_t h, size_t w, int step, double *s)
{
    size_t hw = h * w;
    int C = n->c, E = n->e;
    size_t cmax = (size_t)(C > 2 ? C : 2);
    float *x = mem_alloc(2 * hw * sizeof(float));
    float *hb = mem_alloc((size_t)C * hw * sizeof(float));
    float *tb = mem_alloc(cmax * hw * sizeof(float));
    float *ub = mem_alloc(cmax * hw * sizeof(float));
    float *col = mem_alloc(cmax * 9 * hw * sizeof(float));
    float *emb = mem_alloc((size_t)E * sizeof(float));
    float *embv = mem_alloc((size_t)C * sizeof(float));
    int rc = ERR_NOMEM;
    if (!x || !hb || !tb || !ub || !col || !emb || !embv)
        goto done;
    for (size_t p = 0; p < hw; p++) {
        x[p] = (float)cos(theta[p]);
        x[hw + p] = (float)sin(theta[p]);
    }
    /* step embedding, then SiLU (docs/kura.md#score-network) */
    for (int k = 0; k < E / 2; k++) {
        double om = pow(10000.0, -2.0 * k / E);
        emb[k] = (float)sin(step * om);
        emb[k + E / 2] = (float)cos(step * om);
    }
    for (int k = 0; k < E; k++)
        emb[k] = emb[k] / (1.0f + expf(-emb[k]));
    conv3x3(x, 2, h, w, n->in_w, n->in_b, C, hb, col);
    int cg = C / n->g;
    for (int l = 0; l < n->l; l++) {
        const float *ew = n->emb_w + (size_t)l * C * E;
        for (int c = 0; c < C; c++) {
            float acc = n->emb_b[(size_t)l * C + c];
            for (int k = 0; k < E; k++)
                acc += ew[(size_t)c * E + k] * emb[k];
            embv[c] = acc;
        }
        for (int g = 0; g < n->g; g++) {
            const float *src = hb + (size_t)g * cg * hw;
            size_t cnt = (size_t)cg * hw;
            double sum = 0, sq = 0;
            for (size_t i = 0; i < cnt; i++)
                sum += src[i];
            double mean = sum / (double)cnt;
            for (size_t i = 0; i < cnt; i++)
                sq += (src[i] - mean) * (src[i] - mean);
            float inv = (float)(1.0 / sqrt(sq / (double)cnt + 1e-5));
            float fm = (float)mean;
            for (int cc = 0; cc < cg; cc++) {
                int c = g * cg + cc;
                float a = n->norm_w[(size_t)l * C + c], b = n->norm_b[(size_t)l * C + c] + embv[c];
                const float *sr = hb + (size_t)c * hw;
                float *dst = tb + (size_t)c * hw;
                for (size_t p = 0; p < hw; p++) {
                    float v = (sr[p] - fm) * inv * a + b;
                    dst[p] = 0.5f * v * (1.0f + erff(v * (float)M_SQRT1_2)); /* exact GELU */
                }
            }
        }
        conv3x3(tb, C, h, w, n->conv_w + (size_t)l * C * C * 9, n->conv_b + (size_t)l * C, C, ub,
                col);
        for (size_t i = 0; i < (size_t)C * hw; i++)
            hb[i] += ub[i];
    }
    conv3x3(hb, C, h, w, n->out_w, n->out_b, 2, ub, col);
    for (size_t p = 0; p < hw; p++)
        s[p] = (double)(-ub[p] * x[hw + p] + ub[hw + p] * x[p]);
    rc = 0;
done:
    mem_free(x);
    mem_free(hb);
    mem_free(tb);
    mem_free(ub);
    mem_free(col);
    mem_free(emb);
    mem_free(embv);
    return rc;
}
