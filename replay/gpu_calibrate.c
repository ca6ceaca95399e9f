/*
 * gpu_calibrate: grid-search fit of the GPU model's calibrated parameters to the
 * per-operator calibration set (docs/models.md#gpu-baselines).
 */
#include "replay/gpu_calibrate.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/mem.h"
#include "formats/csv.h"

const char *gpu_preset_family(const char *preset)
{
    if (!preset || gpu_preset_title(preset) == NULL)
        return NULL;
    return !strncmp(preset, "a100", 4) ? "ampere" : "hopper";
}

bool gpu_cond_get(const char *cond, const char *key, char *buf, size_t n)
{
    size_t kl = strlen(key);
    for (const char *p = cond; p && *p;) {
        const char *end = strchr(p, ';');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        while (len && *p == ' ')
            p++, len--;
        if (len > kl && !strncmp(p, key, kl) && p[kl] == '=') {
            size_t vl = len - kl - 1;
            if (vl >= n)
                vl = n - 1;
            memcpy(buf, p + kl + 1, vl);
            buf[vl] = 0;
            return true;
        }
        p = end ? end + 1 : NULL;
    }
    return false;
}

/* A numeric condition value, or NAN. */
static double cond_num(const char *cond, const char *key)
{
    char v[64], *end;
    if (!gpu_cond_get(cond, key, v, sizeof v))
        return NAN;
    double x = strtod(v, &end);
    return end != v && *end == 0 && isfinite(x) ? x : NAN;
}

enum fit_kind { FIT_GEMM, FIT_ATTN, FIT_DECODE };

/* One usable calibration row. */
struct cal_row {
    enum fit_kind kind;
    struct gpu_hw hw; /* the row's GPU preset */
    double a[6];      /* gemm m n k; attention b h s d causal; decode b h kv ctx d */
    double measured;  /* TFLOP/s (gemm, attention) or seconds (decode) */
};

/* Model value of a row in the measured unit. */
static double row_model(const struct cal_row *r, const struct gpu_hw *hw)
{
    const double *a = r->a;
    if (r->kind == FIT_GEMM) {
        double t = gpu_gemm(hw, (uint64_t)a[0], (uint64_t)a[1], (uint64_t)a[2], NULL);
        return 2 * a[0] * a[1] * a[2] / t / 1e12;
    }
    if (r->kind == FIT_ATTN) {
        bool causal = a[4] > 0;
        double t = gpu_attention(hw, (uint64_t)a[0], (uint64_t)a[1], (uint64_t)a[2], (uint64_t)a[2],
                                 (uint64_t)a[3], causal, NULL);
        double flop = 4 * a[0] * a[1] * a[2] * a[2] * a[3] * (causal ? 0.5 : 1);
        return flop / t / 1e12;
    }
    return gpu_decode_attention(hw, (uint64_t)a[0], (uint64_t)a[1], (uint64_t)a[2], (uint64_t)a[3],
                                (uint64_t)a[4], NULL);
}

/* Parses a CSV row into *r; 1 usable, 0 not a fitting row, <0 error. */
static int parse_row(char **f, const long *col, const char *family, bool fwd_bwd, struct cal_row *r)
{
    const char *gpu = f[col[0]], *op = f[col[1]], *cond = f[col[2]], *unit = f[col[4]];
    const char *fam = gpu_preset_family(gpu);
    if (!fam || strcmp(fam, family))
        return 0;
    char *end;
    double v = strtod(f[col[3]], &end);
    if (end == f[col[3]] || *end || !(v > 0))
        return ERR_DATA;
    memset(r, 0, sizeof *r);
    gpu_preset_get(gpu, &r->hw);
    r->hw.host_us = 0;
    char s[64];
    if (!strcmp(op, "gemm")) {
        if (gpu_cond_get(cond, "best_of_shape_search", s, sizeof s) && !strcmp(s, "1"))
            return 0; /* these set gemm_eff_max */
        r->kind = FIT_GEMM;
        r->a[0] = cond_num(cond, "m"), r->a[1] = cond_num(cond, "n"), r->a[2] = cond_num(cond, "k");
    } else if (!strcmp(op, "attention_fwd")) {
        if (!gpu_cond_get(cond, "impl", s, sizeof s) || strcmp(s, "fa2"))
            return 0; /* FlashAttention-2 only */
        if (gpu_cond_get(cond, "pass", s, sizeof s) != fwd_bwd)
            return 0; /* forward only, or forward + backward when asked */
        r->kind = FIT_ATTN;
        r->a[0] = cond_num(cond, "batch"), r->a[1] = cond_num(cond, "heads");
        r->a[2] = cond_num(cond, "seqlen"), r->a[3] = cond_num(cond, "head_dim");
        r->a[4] = cond_num(cond, "causal");
    } else if (!strcmp(op, "decode_attention")) {
        r->kind = FIT_DECODE;
        r->a[0] = cond_num(cond, "batch"), r->a[1] = cond_num(cond, "heads");
        r->a[2] = cond_num(cond, "kv_heads"), r->a[3] = cond_num(cond, "context");
        r->a[4] = cond_num(cond, "head_dim");
        v *= !strcmp(unit, "us") ? 1e-6 : !strcmp(unit, "ms") ? 1e-3 : !strcmp(unit, "s") ? 1 : NAN;
    } else {
        return 0;
    }
    for (int i = 0; i < (r->kind == FIT_GEMM ? 3 : 5); i++)
        if (!(r->a[i] >= 0 && r->a[i] < 1e9) || (i != 4 && !(r->a[i] >= 1)))
            return ERR_DATA;
    if (r->kind != FIT_DECODE && strcmp(unit, "TFLOP/s"))
        return ERR_DATA;
    if (!isfinite(v))
        return ERR_DATA;
    r->measured = v;
    return 1;
}

/* Sum of squared log ratios over rows of kind with the two values set (key2 may be NULL). */
static double sse(const struct cal_row *rows, size_t n, enum fit_kind kind, const char *k1,
                  double v1, const char *k2, double v2, size_t *used)
{
    double s = 0;
    *used = 0;
    for (size_t i = 0; i < n; i++) {
        if (rows[i].kind != kind)
            continue;
        struct gpu_hw hw = rows[i].hw;
        gpu_hw_set(&hw, k1, v1);
        if (k2)
            gpu_hw_set(&hw, k2, v2);
        double l = log(row_model(&rows[i], &hw) / rows[i].measured);
        s += l * l;
        (*used)++;
    }
    return s;
}

/* 1-D or 2-D grid search; fills p (and p2 when k2). */
static void grid(const struct cal_row *rows, size_t n, enum fit_kind kind, struct gpu_fit_param *p,
                 double lo, double hi, double step, struct gpu_fit_param *p2, double lo2,
                 double hi2, double step2)
{
    double best = INFINITY, b1 = NAN, b2 = NAN;
    size_t used = 0;
    for (double x = lo; x <= hi + 1e-9; x += step)
        for (double y = p2 ? lo2 : 0; y <= (p2 ? hi2 : 0) + 1e-9; y += p2 ? step2 : 1) {
            double s = sse(rows, n, kind, p->key, x, p2 ? p2->key : NULL, y, &used);
            if (used && s < best)
                best = s, b1 = x, b2 = y;
        }
    p->rows = used;
    p->value = used ? b1 : NAN;
    p->rms_log = used ? sqrt(best / (double)used) : NAN;
    if (p2)
        *p2 = (struct gpu_fit_param){p2->key, used ? b2 : NAN, p->rms_log, used};
}

int gpu_calibrate(const char *path, const char *preset, struct gpu_fit *out, struct errmsg *e)
{
    const char *family = gpu_preset_family(preset);
    if (!family)
        return errmsg_set(e, ERR_USAGE, "unknown GPU preset '%s'", preset ? preset : "");
    memset(out, 0, sizeof *out);
    out->family = family;
    static const char *const keys[GPU_FIT_PARAMS] = {"gemm_k_fill", "attn_eff_max", "attn_k_fill",
                                                     "decode_eff", "decode_fill_us"};
    for (int i = 0; i < GPU_FIT_PARAMS; i++)
        out->p[i] = (struct gpu_fit_param){keys[i], NAN, NAN, 0};
    struct csv_table t;
    int rc = csv_table_load(&t, path, false, e);
    if (rc)
        return rc;
    static const char *const names[5] = {"gpu", "op", "condition", "measured", "unit"};
    long col[5];
    struct cal_row *rows = NULL;
    size_t n = 0;
    for (int i = 0; i < 5; i++)
        if ((col[i] = csv_table_col(&t, names[i])) < 0) {
            rc = errmsg_set(e, ERR_DATA, "'%s' has no column '%s'", path, names[i]);
            goto fail;
        }
    rows = mem_calloc(t.n_rows ? t.n_rows : 1, sizeof *rows);
    if (!rows) {
        rc = errmsg_set(e, ERR_NOMEM, "out of memory");
        goto fail;
    }
    for (size_t i = 0; i < t.n_rows; i++) {
        int r = parse_row(t.rows[i], col, family, false, &rows[n]);
        if (r < 0) {
            rc = errmsg_set(e, ERR_DATA, "'%s' line %zu: unusable %s row (condition '%s')", path,
                            i + 2, t.rows[i][col[1]], t.rows[i][col[2]]);
            goto fail;
        }
        n += (size_t)r;
    }
    grid(rows, n, FIT_GEMM, &out->p[0], 0, 4096, 8, NULL, 0, 0, 0);
    grid(rows, n, FIT_DECODE, &out->p[3], 0.1, 1.0, 0.005, &out->p[4], 0, 40, 0.1);
    grid(rows, n, FIT_ATTN, &out->p[1], 0.2, 1.0, 0.005, &out->p[2], 0, 2048, 16);
    if (!out->p[1].rows) { /* no forward rows: forward + backward as the forward's rate
                            * (rows is reused: the other fits are done) */
        size_t m = 0;
        for (size_t i = 0; i < t.n_rows; i++)
            if (parse_row(t.rows[i], col, family, true, &rows[m]) == 1 && rows[m].kind == FIT_ATTN)
                m++;
        grid(rows, m, FIT_ATTN, &out->p[1], 0.2, 1.0, 0.005, &out->p[2], 0, 2048, 16);
        out->attn_fwd_bwd = out->p[1].rows > 0;
    }
fail:
    mem_free(rows);
    csv_table_release(&t);
    return rc;
}
