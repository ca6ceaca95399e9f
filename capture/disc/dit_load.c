/*
 * dit_load: DiT weights from safetensors files (see dit_model_new_files in dit.h): the
 * diffusers and original PixArt names, the original DiT names and their diffusers aliases.
 */
#include <stdio.h>
#include <string.h>

#include "capture/disc/dit.h"
#include "capture/disc/dit_impl.h"
#include "capture/nn/safetensors.h"
#include "common/mem.h"

static struct dit_tensor *find_tensor(struct dit_model *m, const char *name)
{
    for (size_t i = 0; i < m->n_t; i++)
        if (!strcmp(m->t[i].name, name))
            return &m->t[i];
    return NULL;
}

/* One name prefix of a checkpoint and what it stands for in the other naming. parts: of a
 * fused PixArt tensor (alias_name); part and shared: of a diffusers DiT name (alias_name_dit). */
struct alias {
    const char *from, *to;
    int parts, part, shared;
};

/* The row of t[0..n) whose `from` starts name, or NULL. */
static const struct alias *alias_find(const struct alias *t, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (!strncmp(name, t[i].from, strlen(t[i].from)))
            return &t[i];
    return NULL;
}

/*
 * Maps an original PixArt name to the diffusers name (docs/disc.md#weights table). parts > 1 for
 * fused tensors: out receives the name with "%s" standing for the part (q/k/v or k/v).
 */
static bool alias_name(const char *name, char *out, size_t cap, int *parts)
{
    static const struct alias flat[] = {
        {"x_embedder.proj.", "pos_embed.proj.", 1, -1, 0},
        {"t_embedder.mlp.0.", "adaln_single.emb.timestep_embedder.linear_1.", 1, -1, 0},
        {"t_embedder.mlp.2.", "adaln_single.emb.timestep_embedder.linear_2.", 1, -1, 0},
        {"t_block.1.", "adaln_single.linear.", 1, -1, 0},
        {"y_embedder.y_proj.fc1.", "caption_projection.linear_1.", 1, -1, 0},
        {"y_embedder.y_proj.fc2.", "caption_projection.linear_2.", 1, -1, 0},
        {"final_layer.linear.", "proj_out.", 1, -1, 0},
    };
    static const struct alias blk[] = {
        {"scale_shift_table", "scale_shift_table", 1, -1, 0},
        {"attn.qkv.", "attn1.to_%s.", 3, -1, 0},
        {"attn.proj.", "attn1.to_out.0.", 1, -1, 0},
        {"cross_attn.q_linear.", "attn2.to_q.", 1, -1, 0},
        {"cross_attn.kv_linear.", "attn2.to_%s.", 2, -1, 0},
        {"cross_attn.proj.", "attn2.to_out.0.", 1, -1, 0},
        {"mlp.fc1.", "ff.net.0.proj.", 1, -1, 0},
        {"mlp.fc2.", "ff.net.2.", 1, -1, 0},
    };
    *parts = 1;
    if (!strcmp(name, "final_layer.scale_shift_table")) {
        snprintf(out, cap, "scale_shift_table");
        return true;
    }
    const struct alias *a = alias_find(flat, sizeof flat / sizeof flat[0], name);
    if (a) {
        snprintf(out, cap, "%s%s", a->to, name + strlen(a->from));
        return true;
    }
    int bi, used = 0;
    if (sscanf(name, "blocks.%d.%n", &bi, &used) != 1 || used <= 0 || bi < 0)
        return false;
    const char *rest = name + used;
    if (!(a = alias_find(blk, sizeof blk / sizeof blk[0], rest)))
        return false;
    snprintf(out, cap, "transformer_blocks.%d.%s%s", bi, a->to, rest + strlen(a->from));
    *parts = a->parts;
    return true;
}

static bool ignored_name(const char *n)
{
    return !strcmp(n, "pos_embed") || !strcmp(n, "pos_embed.pos_embed") ||
           !strcmp(n, "y_embedder.y_embedding") || !strcmp(n, "caption_projection.y_embedding");
}

/* One tensor of a PixArt checkpoint (diffusers or original name); loaded[] holds 1 per
 * tensor read. */
static int load_one(struct dit_model *m, uint8_t *loaded, const struct st_tensor_info *ti,
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
        loaded[idx] = 1;
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
        loaded[idx] = 1;
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
    size_t per = dit_tensor_numel(pt[0]);
    float *tmp = mem_alloc(per * (size_t)parts * sizeof(float));
    if (!tmp)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    int rc = st_tensor_to_f32(ti, file, shape, pt[0]->ndim, tmp, e);
    if (!rc)
        for (int i = 0; i < parts; i++) {
            memcpy(pt[i]->p, tmp + per * (size_t)i, per * sizeof(float));
            loaded[pt[i] - m->t] = 1;
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
    static const struct alias flat[] = {
        {"pos_embed.proj.", "x_embedder.proj.", 1, -1, 0},
        {"proj_out_1.", "final_layer.adaLN_modulation.1.", 1, -1, 0},
        {"proj_out_2.", "final_layer.linear.", 1, -1, 0},
    };
    static const struct alias blk[] = {
        {"norm1.emb.timestep_embedder.linear_1.", "t_embedder.mlp.0.", 1, -1, 1},
        {"norm1.emb.timestep_embedder.linear_2.", "t_embedder.mlp.2.", 1, -1, 1},
        {"norm1.emb.class_embedder.embedding_table.", "y_embedder.embedding_table.", 1, -1, 1},
        {"norm1.linear.", "adaLN_modulation.1.", 1, -1, 0},
        {"attn1.to_q.", "attn.qkv.", 1, 0, 0},
        {"attn1.to_k.", "attn.qkv.", 1, 1, 0},
        {"attn1.to_v.", "attn.qkv.", 1, 2, 0},
        {"attn1.to_out.0.", "attn.proj.", 1, -1, 0},
        {"ff.net.0.proj.", "mlp.fc1.", 1, -1, 0},
        {"ff.net.2.", "mlp.fc2.", 1, -1, 0},
    };
    *part = -1, *copy = -1;
    const struct alias *a = alias_find(flat, sizeof flat / sizeof flat[0], name);
    if (a) {
        snprintf(out, cap, "%s%s", a->to, name + strlen(a->from));
        return true;
    }
    int bi, used = 0;
    if (sscanf(name, "transformer_blocks.%d.%n", &bi, &used) != 1 || used <= 0 || bi < 0)
        return false;
    const char *rest = name + used;
    if (!(a = alias_find(blk, sizeof blk / sizeof blk[0], rest)))
        return false;
    if (a->shared) {
        snprintf(out, cap, "%s%s", a->to, rest + strlen(a->from));
        *copy = bi;
    } else {
        snprintf(out, cap, "blocks.%d.%s%s", bi, a->to, rest + strlen(a->from));
    }
    *part = a->part;
    return true;
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
    if (memcmp(t->p, p, dit_tensor_numel(t) * sizeof(float)))
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
    size_t n = dit_tensor_numel(t);
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

/* Reads every tensor of the files into m: load_one_class for DiT configs (class_cond), else
 * load_one; then a tensor not (wholly) read is an error, and the copies of the shared
 * embedders are compared. */
static int load_files(struct dit_model *m, const char *const *paths, int n_paths, bool class_cond,
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
            if (ignored_name(ti->name))
                continue;
            rc = class_cond ? load_one_class(m, loaded, ti, paths[f], &pend, &n_pend, e)
                            : load_one(m, loaded, ti, paths[f], e);
        }
        st_close(sf);
        if (rc)
            goto fail;
    }
    for (size_t i = 0; i < m->n_t; i++)
        if (loaded[i] != (class_cond ? (1u << m->t[i].parts) - 1 : 1u)) {
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
    int rc = dit_model_alloc(out, cfg, e);
    if (rc)
        return rc;
    rc = load_files(*out, paths, n_paths, cfg->class_cond, e);
    if (rc) {
        dit_model_free(*out);
        *out = NULL;
    }
    return rc;
}
