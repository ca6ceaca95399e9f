/*
 * kura_data: procedural data generators (docs/kura.md#data-generators) [decision].
 */
#include "capture/kura/kura_data.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/kura/kura_sde.h"
#include "common/mem.h"
#include "common/rng.h"
#include "common/threads.h"
#include "formats/kura_fixed.h"

struct param_def {
    const char *key;
    double def;
    int kind; /* 0 real, 1 positive real, 2 integer >= 0, 3 integer */
};

struct gen_def {
    const char *name;
    bool image;
    int n;
    struct param_def p[KURA_GEN_MAX_PARAMS];
};

/* Defaults of docs/kura.md#data-generators. Sizes of fingerprint/wood centres are fractions of H,
 * W. */
static const struct gen_def gens[KURA_GEN_COUNT_] = {
    [KURA_GEN_GRATING] =
        {"grating",
         true,
         4,
         {{"lambda", 8, 1}, {"phi0", M_PI / 6, 0}, {"amp", 6, 0}, {"period", 0, 0}}},
    [KURA_GEN_FINGERPRINT] = {"fingerprint",
                              true,
                              8,
                              {{"lambda", 7, 1},
                               {"sigma", 3, 1},
                               {"radius", 5, 2},
                               {"iters", 6, 2},
                               {"core_r", 0.40, 0},
                               {"core_c", 0.50, 0},
                               {"delta_r", 0.75, 0},
                               {"delta_c", 0.35, 0}}},
    [KURA_GEN_WOOD] =
        {"wood",
         true,
         5,
         {{"lambda", 6, 1}, {"r0", -0.3, 0}, {"c0", 0.5, 0}, {"e", 1, 0}, {"amp", 1.5, 0}}},
    [KURA_GEN_CONST] = {"const", false, 1, {{"theta", 0.7, 0}}},
    [KURA_GEN_RAMP] = {"ramp", false, 2, {{"nx", 1, 3}, {"ny", 0, 3}}},
    [KURA_GEN_UNIFORM] = {"uniform", false, 0, {{NULL, 0, 0}}},
};

const char *kura_data_name(enum kura_gen kind)
{
    return (unsigned)kind < KURA_GEN_COUNT_ ? gens[kind].name : "unknown";
}

const char *kura_data_names(void)
{
    return "fingerprint, grating, wood, const, ramp, uniform";
}

bool kura_data_is_image(enum kura_gen kind)
{
    return (unsigned)kind < KURA_GEN_COUNT_ && gens[kind].image;
}

int kura_data_parse(const char *name, const char *params, struct kura_data_spec *spec,
                    struct errmsg *e)
{
    memset(spec, 0, sizeof *spec);
    int kind = -1;
    for (int i = 0; i < KURA_GEN_COUNT_; i++)
        if (!strcmp(name, gens[i].name))
            kind = i;
    if (kind < 0)
        return errmsg_set(e, ERR_USAGE, "unknown data generator '%s' (%s)", name,
                          kura_data_names());
    spec->kind = (enum kura_gen)kind;
    const struct gen_def *g = &gens[kind];
    for (int i = 0; i < g->n; i++)
        spec->p[i] = g->p[i].def;
    if (!params || !*params)
        return 0;
    char *copy = mem_strdup(params);
    if (!copy)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    int rc = 0;
    char *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq) {
            rc = errmsg_set(e, ERR_USAGE, "data parameter '%s' is not key=value", tok);
            break;
        }
        *eq = '\0';
        int idx = -1;
        for (int i = 0; i < g->n; i++)
            if (!strcmp(tok, g->p[i].key))
                idx = i;
        if (idx < 0) {
            rc = errmsg_set(e, ERR_USAGE, "unknown parameter '%s' of data generator '%s'", tok,
                            g->name);
            break;
        }
        char *end;
        errno = 0;
        double v = strtod(eq + 1, &end);
        bool ok = !errno && end != eq + 1 && !*end && isfinite(v);
        int k = g->p[idx].kind;
        if (ok && k == 1)
            ok = v > 0;
        if (ok && (k == 2 || k == 3))
            ok = v == floor(v) && fabs(v) <= 1e6 && (k == 3 || v >= 0);
        if (ok && k == 2 && !strcmp(tok, "radius"))
            ok = v <= 50;
        if (ok && k == 2 && !strcmp(tok, "iters"))
            ok = v <= 1000;
        if (!ok) {
            rc = errmsg_set(e, ERR_USAGE, "bad value '%s' for data parameter '%s'", eq + 1, tok);
            break;
        }
        spec->p[idx] = v;
    }
    mem_free(copy);
    return rc;
}

void kura_data_describe(const struct kura_data_spec *spec, size_t h, size_t w, char *out,
                        size_t out_len)
{
    (void)h;
    const struct gen_def *g = &gens[spec->kind];
    size_t used = 0;
    out[0] = '\0';
    for (int i = 0; i < g->n && used < out_len; i++) {
        double v = spec->p[i];
        if (spec->kind == KURA_GEN_GRATING && !strcmp(g->p[i].key, "period") && v == 0)
            v = (double)w; /* P = W by default */
        int n = snprintf(out + used, out_len - used, "%s%s=%.17g", i ? "," : "", g->p[i].key, v);
        if (n < 0)
            break;
        used += (size_t)n;
    }
}

/* ---- fingerprint: iterated oriented Gabor filtering ---- */

struct fp_ctx {
    size_t h, w;
    int rad;
    double lambda;
    const double *orient; /* (h, w) ridge angle O_p */
    const double *gauss;  /* (2R+1)^2 */
    const double *v;
    double *out;
};

static void fp_rows(void *vctx, size_t r0, size_t r1, int worker)
{
    (void)worker;
    struct fp_ctx *x = vctx;
    size_t h = x->h, w = x->w;
    int R = x->rad, side = 2 * R + 1;
    for (size_t r = r0; r < r1; r++) {
        for (size_t c = 0; c < w; c++) {
            double o = x->orient[r * w + c];
            double co = cos(o), so = sin(o);
            double acc = 0;
            for (int dy = -R; dy <= R; dy++) {
                size_t rr = (size_t)(((long long)r + dy) % (long long)h + (long long)h) % h;
                const double *vr = x->v + rr * w;
                for (int dx = -R; dx <= R; dx++) {
                    size_t cc = (size_t)(((long long)c + dx) % (long long)w + (long long)w) % w;
                    /* docs/kura.md#data-generators: k_p = exp(-(dx^2+dy^2)/(2 sg^2)) cos(2 pi (dy
                     * cos O - dx sin O)/lambda) */
                    double k = x->gauss[(dy + R) * side + (dx + R)] *
                               cos(2.0 * M_PI * (dy * co - dx * so) / x->lambda);
                    acc += k * vr[cc];
                }
            }
            x->out[r * w + c] = acc;
        }
    }
}

static int gen_fingerprint(const double *p, size_t h, size_t w, struct rng *rg, double *x,
                           struct thread_pool *pool)
{
    size_t n = h * w;
    int R = (int)p[2], iters = (int)p[3];
    int side = 2 * R + 1;
    double *orient = mem_alloc(n * sizeof(double));
    double *tmp = mem_alloc(n * sizeof(double));
    double *gauss = mem_alloc((size_t)side * side * sizeof(double));
    if (!orient || !tmp || !gauss) {
        mem_free(orient);
        mem_free(tmp);
        mem_free(gauss);
        return ERR_NOMEM;
    }
    double rc = p[4] * (double)h, cc = p[5] * (double)w;
    double rd = p[6] * (double)h, cd = p[7] * (double)w;
    for (size_t r = 0; r < h; r++)
        for (size_t c = 0; c < w; c++)
            /* zero-pole model, angle from +c toward +r (docs/kura.md#data-generators) */
            orient[r * w + c] = 0.5 * (atan2((double)r - rc, (double)c - cc) -
                                       atan2((double)r - rd, (double)c - cd));
    for (int dy = -R; dy <= R; dy++)
        for (int dx = -R; dx <= R; dx++)
            gauss[(dy + R) * side + (dx + R)] =
                exp(-(double)(dx * dx + dy * dy) / (2.0 * p[1] * p[1]));
    for (size_t i = 0; i < n; i++)
        x[i] = -1.0 + 2.0 * rng_uniform(rg); /* v ~ U[-1, 1], row-major */
    struct fp_ctx ctx = {h, w, R, p[0], orient, gauss, NULL, NULL};
    double *cur = x, *nxt = tmp;
    for (int it = 0; it < iters; it++) {
        ctx.v = cur;
        ctx.out = nxt;
        if (pool)
            pool_for(pool, h, fp_rows, &ctx);
        else
            fp_rows(&ctx, 0, h, 0);
        double mx = 0;
        for (size_t i = 0; i < n; i++)
            if (fabs(nxt[i]) > mx)
                mx = fabs(nxt[i]);
        for (size_t i = 0; i < n; i++)
            nxt[i] = mx > 0 ? nxt[i] / mx : 0.0;
        double *t = cur;
        cur = nxt;
        nxt = t;
    }
    if (cur != x)
        memcpy(x, cur, n * sizeof(double));
    mem_free(orient);
    mem_free(tmp);
    mem_free(gauss);
    return 0;
}

int kura_data_generate(const struct kura_data_spec *spec, size_t h, size_t w, uint64_t seed,
                       double *theta, double *x, struct thread_pool *pool, struct errmsg *e)
{
    if (h < 1 || w < 1)
        return errmsg_set(e, ERR_USAGE, "map size %zux%zu is empty", h, w);
    size_t n;
    if (!mem_mul(h, w, &n))
        return errmsg_set(e, ERR_USAGE, "map size %zux%zu too large", h, w);
    struct rng rg;
    rng_stream(&rg, seed, "kura/data", 0, 0);
    const double *p = spec->p;
    double *img = x;
    double *own = NULL;
    if (kura_data_is_image(spec->kind) && !img) {
        own = mem_alloc(n * sizeof(double));
        if (!own)
            return errmsg_set(e, ERR_NOMEM, "out of memory for the data image");
        img = own;
    }
    int rc = 0;
    switch (spec->kind) {
    case KURA_GEN_GRATING: {
        double P = p[3] > 0 ? p[3] : (double)w;
        double cf = cos(p[1]), sf = sin(p[1]);
        for (size_t r = 0; r < h; r++)
            for (size_t c = 0; c < w; c++) {
                double rho = (double)c * cf + (double)r * sf +
                             p[2] * sin(2.0 * M_PI * ((double)r * cf - (double)c * sf) / P);
                img[r * w + c] = cos(2.0 * M_PI * rho / p[0]);
            }
        break;
    }
    case KURA_GEN_FINGERPRINT:
        rc = gen_fingerprint(p, h, w, &rg, img, pool);
        break;
    case KURA_GEN_WOOD: {
        double al[3], ph[3];
        for (int k = 0; k < 3; k++) { /* drawn alpha_1, phi_1, alpha_2, ... */
            al[k] = 2.0 * M_PI * rng_uniform(&rg);
            ph[k] = 2.0 * M_PI * rng_uniform(&rg);
        }
        double r0 = p[1] * (double)h, c0 = p[2] * (double)w;
        for (size_t r = 0; r < h; r++)
            for (size_t c = 0; c < w; c++) {
                double dc = (double)c - c0, dr = p[3] * ((double)r - r0);
                double d = sqrt(dc * dc + dr * dr), t = 0;
                for (int k = 1; k <= 3; k++)
                    t += ldexp(1.0, -k) *
                         sin(2.0 * M_PI * ldexp(1.0, k) *
                                 ((double)c * cos(al[k - 1]) + (double)r * sin(al[k - 1])) /
                                 (double)w +
                             ph[k - 1]);
                img[r * w + c] = sin(2.0 * M_PI * d / p[0] + p[4] * t);
            }
        break;
    }
    case KURA_GEN_CONST:
        for (size_t i = 0; i < n; i++)
            theta[i] = kura_wrap(p[0]);
        break;
    case KURA_GEN_RAMP:
        for (size_t r = 0; r < h; r++)
            for (size_t c = 0; c < w; c++)
                theta[r * w + c] = kura_wrap(
                    2.0 * M_PI * (p[0] * (double)c / (double)w + p[1] * (double)r / (double)h));
        break;
    case KURA_GEN_UNIFORM:
        for (size_t i = 0; i < n; i++)
            theta[i] = -M_PI + 2.0 * M_PI * rng_uniform(&rg);
        break;
    default:
        rc = ERR_INTERNAL;
    }
    if (rc == 0 && kura_data_is_image(spec->kind)) {
        for (size_t i = 0; i < n; i++) {
            double v = img[i];
            img[i] = v < -1.0 ? -1.0 : v > 1.0 ? 1.0 : v;
            theta[i] = kura_x_to_theta(img[i]);
        }
    } else if (rc == 0 && x) {
        for (size_t i = 0; i < n; i++)
            x[i] = kura_theta_to_x(theta[i]);
    }
    mem_free(own);
    if (rc == ERR_NOMEM)
        return errmsg_set(e, rc, "out of memory in data generator '%s'",
                          kura_data_name(spec->kind));
    if (rc)
        return errmsg_set(e, rc, "data generator failed");
    return 0;
}
