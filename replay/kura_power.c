/*
 * kura_power: eq. 10-13 of the SA-Kura paper, the coefficient table, the least-squares
 * fit and the area-budget search. See kura_power.h and docs/models.md (SA-Kura replay).
 */
#include "replay/kura_power.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/io.h"
#include "common/mem.h"

void kura_energy_default(struct kura_energy *e)
{
    memset(e, 0, sizeof *e);
    e->f_hz = 100e6; /* paper section 4: 100 MHz */
    /* fit4: eq. 11 solved exactly through the paper's four compute-only points
     * (docs/kura.md#power-area-and-energy). */
    e->power_fit4 = (struct kura_coeffs){0.19588743568595118, 0.50928282471230624,
                                         1.6787616354424371, 30.336367385412991};
    /* table1: Table 1 (H20W5) split per PE / per row / fixed (docs/kura.md#power-area-and-energy).
     */
    e->power_table1 = (struct kura_coeffs){0.2008, 0.0, 1.135, 41.724};
    e->area_table1 = (struct kura_coeffs){5051.18, 0.0, 65644.95, 1706844.0};
    /* DMA model (docs/kura.md#dma-and-system-level): t_marsh = 30725/9216 calibrates H20W5 at 96x96
     * to 64,130 cycles. */
    e->t_txn = 16.0;
    e->t_step = 0.0;
    e->t_marsh = 30725.0 / 9216.0;
    e->bus_bits = 128;
    e->word_bits = 32;
    /* Baselines [paper section 4.3]. */
    e->rocket_ms = 123.8;
    e->rocket_mw = 30.38;
    e->jetson_nj_px = 270.57;
    e->jetson_latency_ratio = 6.57;
}

/* Reads a number at obj[key] into *out when present; range [lo, hi]. */
static int get_num(json_t *obj, const char *path, const char *key, double lo, double hi,
                   double *out, struct errmsg *em)
{
    json_t *v = json_object_get(obj, key);
    if (!v)
        return 0;
    if (!json_is_number(v))
        return errmsg_set(em, ERR_CONFIG, "'%s.%s' must be a number", path, key);
    double x = json_number_value(v);
    if (!(x >= lo && x <= hi))
        return errmsg_set(em, ERR_CONFIG, "'%s.%s' = %g is out of range [%g, %g]", path, key, x, lo,
                          hi);
    *out = x;
    return 0;
}

/* Rejects keys of obj not in the NULL-terminated list. */
static int check_keys(json_t *obj, const char *path, const char *const *keys, struct errmsg *em)
{
    const char *k;
    json_t *v;
    json_object_foreach(obj, k, v)
    {
        (void)v;
        int ok = 0;
        for (size_t i = 0; keys[i]; i++)
            if (strcmp(k, keys[i]) == 0)
                ok = 1;
        if (!ok)
            return errmsg_set(em, ERR_CONFIG, "unknown key '%s.%s'", path, k);
    }
    return 0;
}

static int get_obj(json_t *parent, const char *path, const char *key, json_t **out,
                   struct errmsg *em)
{
    *out = json_object_get(parent, key);
    if (*out && !json_is_object(*out))
        return errmsg_set(em, ERR_CONFIG, "'%s.%s' must be an object", path, key);
    return 0;
}

static int get_coeffs(json_t *parent, const char *path, const char *key, struct kura_coeffs *c,
                      struct errmsg *em)
{
    static const char *const keys[] = {"hw", "w", "h", "fixed", NULL};
    json_t *o;
    char sub[128];
    int rc = get_obj(parent, path, key, &o, em);
    if (rc || !o)
        return rc;
    snprintf(sub, sizeof sub, "%s.%s", path, key);
    if ((rc = check_keys(o, sub, keys, em)))
        return rc;
    if ((rc = get_num(o, sub, "hw", 0, 1e12, &c->hw, em)) ||
        (rc = get_num(o, sub, "w", 0, 1e12, &c->w, em)) ||
        (rc = get_num(o, sub, "h", 0, 1e12, &c->h, em)) ||
        (rc = get_num(o, sub, "fixed", 0, 1e12, &c->fixed, em)))
        return rc;
    return 0;
}

int kura_energy_load(struct kura_energy *e, const char *path, struct errmsg *em)
{
    static const char *const top_keys[] = {"comment", "f_hz",      "power", "area",
                                           "dma",     "baselines", NULL};
    static const char *const power_keys[] = {"fit4", "table1", NULL};
    static const char *const area_keys[] = {"table1", NULL};
    static const char *const dma_keys[] = {"t_txn",    "t_step",    "t_marsh",
                                           "bus_bits", "word_bits", NULL};
    static const char *const base_keys[] = {"rocket_ms", "rocket_mw", "jetson_nj_px",
                                            "jetson_latency_ratio", NULL};
    json_error_t jerr;
    int fd = io_open_input(path, NULL, em); /* regular files only: a FIFO would block */
    if (fd < 0)
        return fd;
    json_t *root = json_loadfd(fd, 0, &jerr);
    close(fd);
    json_t *o;
    int rc = 0;
    if (!root)
        return errmsg_set(em, ERR_CONFIG, "%s ('%s' line %d)", jerr.text, path, jerr.line);
    if (!json_is_object(root)) {
        rc = errmsg_set(em, ERR_CONFIG, "top level must be an object ('%s')", path);
        goto done;
    }
    if ((rc = check_keys(root, "$", top_keys, em)))
        goto done;
    if ((rc = get_num(root, "$", "f_hz", 1e3, 1e12, &e->f_hz, em)))
        goto done;
    if ((rc = get_obj(root, "$", "power", &o, em)))
        goto done;
    if (o && ((rc = check_keys(o, "$.power", power_keys, em)) ||
              (rc = get_coeffs(o, "$.power", "fit4", &e->power_fit4, em)) ||
              (rc = get_coeffs(o, "$.power", "table1", &e->power_table1, em))))
        goto done;
    if ((rc = get_obj(root, "$", "area", &o, em)))
        goto done;
    if (o && ((rc = check_keys(o, "$.area", area_keys, em)) ||
              (rc = get_coeffs(o, "$.area", "table1", &e->area_table1, em))))
        goto done;
    if ((rc = get_obj(root, "$", "dma", &o, em)))
        goto done;
    if (o) {
        double bb = e->bus_bits, wb = e->word_bits;
        if ((rc = check_keys(o, "$.dma", dma_keys, em)) ||
            (rc = get_num(o, "$.dma", "t_txn", 0, 1e6, &e->t_txn, em)) ||
            (rc = get_num(o, "$.dma", "t_step", 0, 1e12, &e->t_step, em)) ||
            (rc = get_num(o, "$.dma", "t_marsh", 0, 1e6, &e->t_marsh, em)) ||
            (rc = get_num(o, "$.dma", "bus_bits", 8, 4096, &bb, em)) ||
            (rc = get_num(o, "$.dma", "word_bits", 8, 64, &wb, em)))
            goto done;
        if (bb != floor(bb) || wb != floor(wb)) {
            rc = errmsg_set(em, ERR_CONFIG, "'$.dma.bus_bits' and 'word_bits' must be integers");
            goto done;
        }
        e->bus_bits = (int)bb;
        e->word_bits = (int)wb;
    }
    if ((rc = get_obj(root, "$", "baselines", &o, em)))
        goto done;
    if (o && ((rc = check_keys(o, "$.baselines", base_keys, em)) ||
              (rc = get_num(o, "$.baselines", "rocket_ms", 0, 1e12, &e->rocket_ms, em)) ||
              (rc = get_num(o, "$.baselines", "rocket_mw", 0, 1e12, &e->rocket_mw, em)) ||
              (rc = get_num(o, "$.baselines", "jetson_nj_px", 0, 1e12, &e->jetson_nj_px, em)) ||
              (rc = get_num(o, "$.baselines", "jetson_latency_ratio", 0, 1e12,
                            &e->jetson_latency_ratio, em))))
        goto done;
done:
    if (rc && em && strstr(em->text, path) == NULL) {
        char tmp[sizeof em->text];
        snprintf(tmp, sizeof tmp, "%s", em->text);
        errmsg_set(em, rc, "%.400s ('%.80s')", tmp, path);
    }
    json_decref(root);
    return rc;
}

double kura_bilinear(const struct kura_coeffs *c, int n_h, int n_w)
{
    /* paper eq. 10 (power) and eq. 13 (area) */
    return c->hw * n_h * n_w + c->w * n_w + c->h * n_h + c->fixed;
}

int64_t kura_c_tile(int n_w)
{
    return (int64_t)n_w + KURA_M * KURA_M + 1; /* paper eq. 9 */
}

double kura_epx_pj(const struct kura_coeffs *p, int n_h, int n_w, double f_hz)
{
    /* paper eq. 11; mW·s = 1e-3 J, so pJ = 1e9·P[mW]·C_tile/(N_h·N_w·f) */
    return 1e9 * kura_bilinear(p, n_h, n_w) * (double)kura_c_tile(n_w) / ((double)n_h * n_w * f_hz);
}

double kura_nw_opt(const struct kura_coeffs *p, int n_h)
{
    /* paper eq. 12 with M² + 1 = 26 */
    return sqrt(KURA_SWEEP_CYCLES * (p->h + p->fixed / n_h) / (p->hw + p->w / n_h));
}

/* Design row of a point (coefficient order hw, w, h, fixed). */
static void design_row(enum kura_fit_kind kind, int n_h, int n_w, double f_hz, double row[4])
{
    if (kind == KURA_FIT_EPX_PJ) {
        double s = 1e9 * (double)kura_c_tile(n_w) / f_hz;
        row[0] = s;
        row[1] = s / n_h;
        row[2] = s / n_w;
        row[3] = s / ((double)n_h * n_w);
    } else {
        row[0] = (double)n_h * n_w;
        row[1] = n_w;
        row[2] = n_h;
        row[3] = 1.0;
    }
}

double kura_fit_predict(const struct kura_coeffs *c, enum kura_fit_kind kind, int n_h, int n_w,
                        double f_hz)
{
    double row[4];
    design_row(kind, n_h, n_w, f_hz, row);
    return row[0] * c->hw + row[1] * c->w + row[2] * c->h + row[3] * c->fixed;
}

int kura_fit(const struct kura_fit_point *pts, size_t n, enum kura_fit_kind kind, double f_hz,
             struct kura_fit_result *out, double *residuals, struct errmsg *em)
{
    double *a = NULL, *b = NULL;
    double col_norm[4];
    double x[4];
    int rc = 0;
    memset(out, 0, sizeof *out);
    if (n < 4)
        return errmsg_set(em, ERR_DATA, "a fit needs at least 4 points, got %zu", n);
    if (n > 1000000)
        return errmsg_set(em, ERR_LIMIT, "too many fit points (%zu)", n);
    for (size_t i = 0; i < n; i++)
        if (pts[i].n_h < 1 || pts[i].n_w < 1 || !isfinite(pts[i].y))
            return errmsg_set(em, ERR_DATA, "bad fit point %zu (n_h=%d n_w=%d)", i + 1, pts[i].n_h,
                              pts[i].n_w);
    a = mem_alloc(n * 4 * sizeof *a);
    b = mem_alloc(n * sizeof *b);
    if (!a || !b) {
        rc = errmsg_set(em, ERR_NOMEM, "out of memory");
        goto fail;
    }
    /* Column scaling keeps the rank test meaningful for any units. */
    for (int j = 0; j < 4; j++)
        col_norm[j] = 0;
    for (size_t i = 0; i < n; i++) {
        design_row(kind, pts[i].n_h, pts[i].n_w, f_hz, &a[i * 4]);
        b[i] = pts[i].y;
        for (int j = 0; j < 4; j++)
            col_norm[j] += a[i * 4 + j] * a[i * 4 + j];
    }
    for (int j = 0; j < 4; j++) {
        col_norm[j] = sqrt(col_norm[j]);
        for (size_t i = 0; i < n; i++)
            a[i * 4 + j] /= col_norm[j];
    }
    /* Householder QR (Golub & Van Loan alg. 5.2.1), applied to b as we go. */
    for (int k = 0; k < 4; k++) {
        double norm = 0;
        for (size_t i = k; i < n; i++)
            norm += a[i * 4 + k] * a[i * 4 + k];
        norm = sqrt(norm);
        if (norm < 1e-10) {
            rc = errmsg_set(em, ERR_DATA, "the fit points have rank < 4 (shapes too alike)");
            goto fail;
        }
        double alpha = a[k * 4 + k] > 0 ? -norm : norm;
        /* v = x - alpha e1, stored in column k below the diagonal */
        a[k * 4 + k] -= alpha;
        double vnorm2 = 0;
        for (size_t i = k; i < n; i++)
            vnorm2 += a[i * 4 + k] * a[i * 4 + k];
        for (int j = k + 1; j < 4; j++) {
            double s = 0;
            for (size_t i = k; i < n; i++)
                s += a[i * 4 + k] * a[i * 4 + j];
            s = 2 * s / vnorm2;
            for (size_t i = k; i < n; i++)
                a[i * 4 + j] -= s * a[i * 4 + k];
        }
        double s = 0;
        for (size_t i = k; i < n; i++)
            s += a[i * 4 + k] * b[i];
        s = 2 * s / vnorm2;
        for (size_t i = k; i < n; i++)
            b[i] -= s * a[i * 4 + k];
        a[k * 4 + k] = alpha; /* R diagonal */
    }
    double rmax = 0;
    for (int k = 0; k < 4; k++)
        rmax = fmax(rmax, fabs(a[k * 4 + k]));
    for (int k = 0; k < 4; k++)
        if (fabs(a[k * 4 + k]) < 1e-9 * rmax) {
            rc = errmsg_set(em, ERR_DATA, "the fit points have rank < 4 (shapes too alike)");
            goto fail;
        }
    for (int k = 3; k >= 0; k--) {
        double s = b[k];
        for (int j = k + 1; j < 4; j++)
            s -= a[k * 4 + j] * x[j];
        x[k] = s / a[k * 4 + k];
    }
    for (int j = 0; j < 4; j++)
        x[j] /= col_norm[j];
    out->c = (struct kura_coeffs){x[0], x[1], x[2], x[3]};
    double mean = 0, ss_tot = 0, ss_res = 0;
    for (size_t i = 0; i < n; i++)
        mean += pts[i].y;
    mean /= (double)n;
    for (size_t i = 0; i < n; i++) {
        double r = pts[i].y - kura_fit_predict(&out->c, kind, pts[i].n_h, pts[i].n_w, f_hz);
        if (residuals)
            residuals[i] = r;
        ss_res += r * r;
        ss_tot += (pts[i].y - mean) * (pts[i].y - mean);
    }
    out->ss_res = ss_res;
    out->r2 = ss_tot > 0 ? 1.0 - ss_res / ss_tot : 1.0;
fail:
    mem_free(a);
    mem_free(b);
    return rc;
}

void kura_budget(const struct kura_coeffs *power, const struct kura_coeffs *area, double f_hz,
                 double budget_um2, const int *hs, size_t n_hs, const int *ws, size_t n_ws,
                 struct kura_budget_result *out)
{
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < n_hs; i++)
        for (size_t j = 0; j < n_ws; j++) {
            double a = kura_bilinear(area, hs[i], ws[j]);
            if (!out->min_n_h || a < out->min_area_um2) {
                out->min_n_h = hs[i];
                out->min_n_w = ws[j];
                out->min_area_um2 = a;
            }
            if (a > budget_um2)
                continue;
            double e = kura_epx_pj(power, hs[i], ws[j], f_hz);
            if (!out->found || e < out->e_px_pj || (e == out->e_px_pj && a < out->area_um2)) {
                out->found = 1;
                out->n_h = hs[i];
                out->n_w = ws[j];
                out->e_px_pj = e;
                out->area_um2 = a;
            }
        }
}
