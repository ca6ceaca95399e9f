/*
 * gpu_validate: predicts each measured end-to-end point of the validation set with the GPU
 * model (docs/models.md#gpu-baselines).
 */
#include "replay/gpu_validate.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/mem.h"
#include "formats/csv.h"
#include "replay/gpu_calibrate.h"
#include "replay/gpu_model.h"

void gpu_validation_release(struct gpu_validation *v)
{
    for (size_t i = 0; v->p && i < v->n; i++) {
        struct gpu_vpoint *q = &v->p[i];
        mem_free(q->id), mem_free(q->workload), mem_free(q->gpu);
        mem_free(q->condition), mem_free(q->unit), mem_free(q->source);
    }
    mem_free(v->p);
    memset(v, 0, sizeof *v);
}

static char *dup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = mem_alloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

/* A whole-number condition into *dst (absent: unchanged); false when malformed. */
static bool cond_u(const char *cond, const char *key, uint64_t max, uint64_t *dst)
{
    char v[64], *end;
    if (!gpu_cond_get(cond, key, v, sizeof v))
        return true;
    unsigned long long x = strtoull(v, &end, 10);
    if (end == v || *end || x > max)
        return false;
    *dst = x;
    return true;
}

/* Seconds per unit of a time, or NAN; *rate set when the unit is a rate (per second). */
static double unit_s(const char *unit, bool *rate)
{
    *rate = !strcmp(unit, "it/s") || !strcmp(unit, "tok/s");
    if (*rate)
        return 1;
    return !strcmp(unit, "s") ? 1 : !strcmp(unit, "ms") ? 1e-3 : !strcmp(unit, "us") ? 1e-6 : NAN;
}

/* The request of a point's condition; 0, or ERR_DATA with what in msg. */
static int request_of(const char *cond, const struct gpu_workload *w, struct gpu_request *r,
                      bool *per_step, char *msg, size_t n)
{
    memset(r, 0, sizeof *r);
    r->wl = w;
    r->part = GPU_PART_MODEL;
    uint64_t px = 0, steps = 0, batch = 0, cfg = 0, text = 0, ctx = 0, h = 0, g = 0, d = 0;
    bool ok = cond_u(cond, "image_size", 1 << 20, &px) && cond_u(cond, "steps", 100000, &steps) &&
              cond_u(cond, "batch", 4096, &batch) && cond_u(cond, "cfg", 1, &cfg) &&
              cond_u(cond, "text_tokens", 65536, &text) &&
              cond_u(cond, "context", 1ull << 24, &ctx) && cond_u(cond, "heads", 4096, &h) &&
              cond_u(cond, "kv_heads", 4096, &g) && cond_u(cond, "head_dim", 1024, &d);
    if (!ok) {
        snprintf(msg, n, "a malformed number in condition '%s'", cond);
        return ERR_DATA;
    }
    r->image_px = (uint32_t)px, r->steps = (uint32_t)steps, r->batch = (uint32_t)batch;
    r->cfg = cfg == 1, r->text_tokens = (uint32_t)text, r->context = ctx;
    r->heads = (uint32_t)h, r->kv_heads = (uint32_t)g, r->head_dim = (uint32_t)d;
    char v[64];
    if (gpu_cond_get(cond, "part", v, sizeof v) && w->kind == GPU_WL_LLM) {
        if (!strcmp(v, "attention"))
            r->part = GPU_PART_ATTENTION;
        else if (!strcmp(v, "layer"))
            r->part = GPU_PART_LAYER;
    }
    r->eager = gpu_cond_get(cond, "runtime", v, sizeof v) && !strcmp(v, "eager");
    *per_step = gpu_cond_get(cond, "per", v, sizeof v) && !strcmp(v, "step");
    return 0;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Predicts point q (its own line number for messages). */
static int predict(struct gpu_vpoint *q, const char *path, size_t line, struct errmsg *e)
{
    const struct gpu_workload *w = gpu_workload_find(q->workload);
    struct gpu_hw hw;
    if (!w)
        return errmsg_set(e, ERR_DATA, "'%s' line %zu: unknown workload '%s'", path, line,
                          q->workload);
    if (gpu_preset_get(q->gpu, &hw))
        return errmsg_set(e, ERR_DATA, "'%s' line %zu: unknown GPU preset '%s'", path, line,
                          q->gpu);
    bool rate = false;
    const double us = unit_s(q->unit, &rate);
    if (!isfinite(us) || !(q->measured > 0))
        return errmsg_set(e, ERR_DATA, "'%s' line %zu: measured '%g %s' is not a time", path, line,
                          q->measured, q->unit);
    struct gpu_request r;
    bool per_step = false;
    char msg[256];
    int rc = request_of(q->condition, w, &r, &per_step, msg, sizeof msg);
    struct gpu_estimate est;
    if (!rc)
        rc = gpu_request_run(&hw, &r, &est, msg, sizeof msg);
    if (rc)
        return errmsg_set(e, ERR_DATA, "'%s' line %zu: %s", path, line, msg);
    /* a rate (it/s, tok/s) is one per step or token; the error is of the times */
    const double s = per_step || rate ? est.per_unit_s : est.seconds;
    q->predicted = rate ? 1 / s : s / us;
    q->error = rate ? q->measured / q->predicted - 1 : q->predicted / q->measured - 1;
    q->diffusion = w->kind == GPU_WL_DIT;
    return 0;
}

int gpu_validation_run(const char *path, struct gpu_validation *v, struct errmsg *e)
{
    memset(v, 0, sizeof *v);
    struct csv_table t;
    int rc = csv_table_load(&t, path, false, e);
    if (rc)
        return rc;
    static const char *const names[6] = {"id", "workload", "gpu", "condition", "measured", "unit"};
    long col[7];
    double *abs_err = NULL;
    for (int i = 0; i < 6; i++)
        if ((col[i] = csv_table_col(&t, names[i])) < 0) {
            rc = errmsg_set(e, ERR_DATA, "'%s' has no column '%s'", path, names[i]);
            goto fail;
        }
    col[6] = csv_table_col(&t, "source");
    v->p = mem_calloc(t.n_rows ? t.n_rows : 1, sizeof *v->p);
    abs_err = mem_calloc(t.n_rows ? t.n_rows : 1, sizeof *abs_err);
    if (!v->p || !abs_err) {
        rc = errmsg_set(e, ERR_NOMEM, "out of memory");
        goto fail;
    }
    for (size_t i = 0; i < t.n_rows; i++, v->n++) {
        char **f = t.rows[i];
        struct gpu_vpoint *q = &v->p[i];
        q->id = dup(f[col[0]]), q->workload = dup(f[col[1]]), q->gpu = dup(f[col[2]]);
        q->condition = dup(f[col[3]]), q->unit = dup(f[col[5]]);
        q->source = dup(col[6] >= 0 ? f[col[6]] : "");
        if (!q->id || !q->workload || !q->gpu || !q->condition || !q->unit || !q->source) {
            rc = errmsg_set(e, ERR_NOMEM, "out of memory");
            v->n++;
            goto fail;
        }
        char *end;
        q->measured = strtod(f[col[4]], &end);
        if (end == f[col[4]] || *end)
            q->measured = NAN;
        if ((rc = predict(q, path, i + 2, e))) {
            v->n++;
            goto fail;
        }
        abs_err[i] = fabs(q->error);
    }
    if (v->n) {
        qsort(abs_err, v->n, sizeof *abs_err, cmp_d);
        v->median_abs =
            v->n % 2 ? abs_err[v->n / 2] : 0.5 * (abs_err[v->n / 2 - 1] + abs_err[v->n / 2]);
        v->max_abs = abs_err[v->n - 1];
    }
fail:
    mem_free(abs_err);
    csv_table_release(&t);
    if (rc)
        gpu_validation_release(v);
    return rc;
}
