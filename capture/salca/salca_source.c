/*
 * salca_source: synthetic (docs/salca.md#synthetic-source) and model (3.2) Q/K/V sources.
 */
#include "capture/salca/salca_source.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "capture/salca/salca_calibrated.h"
#include "capture/salca/salca_select.h"
#include "common/mem.h"
#include "common/rng.h"
#include "common/threads.h"

void salca_synth_params_default(struct salca_synth_params *p)
{
    /* docs/salca.md#synthetic-source table; origins in docs/models.md "Salca capture". logit_std
     * and c_needle are retuned by the recall calibration check as docs/salca.md directs (2.5 -> 5,
     * 8 -> 24): see docs/models.md */
    *p = (struct salca_synth_params){
        .heavy_pairs = 4,
        .heavy_band_lo = 0,
        .gain_median = 8.0,
        .gain_sigma = 0.5,
        .heavy_mean = 2.0,
        .head_spread = 0.3,
        .query_jitter = 0.2,
        .logit_std = 5.0,
        .sink_tokens = 4,
        .c_sink = 10.0,
        .c_loc = 4.0,
        .tau_loc = 64.0,
        .c_needle = 24.0,
        .early_layer_scale = 0.3,
        .early_layers = 2,
    };
}

struct syn_group {
    float gamma[256]; /* per-channel gain (1 off the heavy set) */
    float mu[256];    /* pre-RoPE mean (m_h * s_j on heavy channels) */
    float vg[256];    /* unit group direction */
    float abar;       /* group mean of a_q */
};

struct syn_head {
    float vh[256]; /* unit head direction */
    float aq;      /* query amplitude */
};

/* A query head of the calibrated source: its direction e (orthonormal to the other heads'
 * of the group), amplitudes and the model head it stands for. */
struct cal_head {
    float e[256];
    float aq;        /* query amplitude: the base keys give logits of std sigma along e */
    float kappa;     /* key scale of the planted profile along e (sqrt(d) / aq) */
    bool retrieval;  /* DuoAttention class of its KV head */
    uint32_t ml, mh; /* model layer and query head */
    const struct salca_calib_pattern *pt;
};

struct salca_source {
    bool model_src;
    uint32_t L, H, G, d;
    uint64_t seed;
    const struct salca_task *task;
    /* synthetic */
    struct salca_synth_params p;
    struct syn_group *grp; /* (L*G) */
    struct syn_head *head; /* (L*H) */
    /* calibrated (uses grp for the heavy channels of the base keys) */
    bool calib;
    struct salca_calib_params cp;
    struct cal_head *ch; /* (L*H) */
    /* model */
    struct nn_llama *model;
    float *scratch; /* (n0 + N + 1) floats for dense attention */
    uint32_t scratch_cap;
    struct salca_kv *kv;      /* stores of the running step (hook context) */
    float *q;                 /* query output of the running step */
    float *logits;            /* (V) */
    struct thread_pool *pool; /* the prefill's workers (salca_source_set_pool); NULL: one */
    float *rope;              /* (n0 x d) RoPE rows of the prompt, made by the first prefill */
};

static void unit(float *v, uint32_t d)
{
    double s = 0;
    for (uint32_t j = 0; j < d; j++)
        s += (double)v[j] * v[j];
    if (s <= 0)
        return;
    float inv = (float)(1.0 / sqrt(s));
    for (uint32_t j = 0; j < d; j++)
        v[j] *= inv;
}

/* unit(gamma * xi) with xi ~ N(0, I) from r. */
static void gamma_dir(struct rng *r, const float *gamma, uint32_t d, float *out)
{
    for (uint32_t j = 0; j < d; j++)
        out[j] = gamma[j] * (float)rng_normal(r);
    unit(out, d);
}

static double lambda_l(const struct salca_source *s, uint32_t l)
{
    /* docs/salca.md#synthetic-source lambda_l */
    return l < s->p.early_layers ? s->p.early_layer_scale : 1.0;
}

/* Relevance c_i of prompt token i (docs/salca.md#synthetic-source step 7: task profile + sink +
 * locality). */
static double relevance(const struct salca_source *s, uint32_t i)
{
    const struct salca_task *t = s->task;
    double c = t->c[i];
    if (i < s->p.sink_tokens)
        c += s->p.c_sink;
    c += s->p.c_loc * exp(-(double)(t->n0 - 1 - i) / s->p.tau_loc);
    return c;
}

/* RoPE cos/sin of one position for the d/2 pairs, exactly as nn_llama_rope computes them
 * (angle in double, rounded to FP32), so a table gives the same bits. */
static void rope_row(float *cs, uint32_t d, uint32_t pos)
{
    for (uint32_t j = 0; j < d / 2; j++) {
        double ang = (double)pos * pow(10000.0, -2.0 * j / d);
        cs[2 * j] = (float)cos(ang);
        cs[2 * j + 1] = (float)sin(ang);
    }
}

/* Base key x = gamma * (mu + eps), RoPE at its position (docs/salca.md#synthetic-source step 4;
 * theta 10000, f = 1) with the position's cos/sin row cs. */
static void base_key(const struct syn_group *gr, uint32_t d, struct rng *r, const float *cs,
                     float *kb)
{
    uint32_t half = d / 2;
    for (uint32_t j = 0; j < d; j++)
        kb[j] = gr->gamma[j] * (gr->mu[j] + (float)rng_normal(r));
    for (uint32_t j = 0; j < half; j++) {
        float c = cs[2 * j], sn = cs[2 * j + 1], a = kb[j], b = kb[j + half];
        kb[j] = a * c - b * sn;
        kb[j + half] = b * c + a * sn;
    }
}

/* The n0 base keys of group g of layer l into kb (n0 x d; cs: the RoPE rows of positions
 * 0..n0), and *rv the stream of their values (prompt_store), as both sources draw them. */
static void prompt_base(const struct salca_source *s, uint32_t l, uint32_t g, const float *cs,
                        float *kb, struct rng *rv)
{
    uint32_t d = s->d, n0 = s->task->n0;
    struct rng rk;
    rng_stream(&rk, s->seed, "syn.key", l, g);
    rng_stream(rv, s->seed, "syn.value", l, g);
    for (uint32_t i = 0; i < n0; i++)
        base_key(&s->grp[l * s->G + g], d, &rk, cs + (size_t)i * d, kb + (size_t)i * d);
}

/* Appends the n0 prompt keys kb (n0 x d), each with a value v ~ N(0, I) drawn from rv (v: d
 * floats of scratch), to st and ends its prefill (docs/salca.md#synthetic-source step 8). */
static int prompt_store(struct salca_kv *st, const float *kb, uint32_t n0, uint32_t d,
                        struct rng *rv, float *v, struct errmsg *e)
{
    int rc = 0;
    for (uint32_t i = 0; i < n0 && !rc; i++) {
        for (uint32_t j = 0; j < d; j++)
            v[j] = (float)rng_normal(rv);
        rc = salca_kv_append(st, kb + (size_t)i * d, v);
    }
    if (rc)
        return errmsg_set(e, rc, "KV store too small for the %u-token prompt", n0);
    salca_kv_finish_prefill(st);
    return 0;
}

/* Appends decode step t's key k with a value v ~ N(0, I) drawn from r (v: d floats of
 * scratch) to st. */
static int step_store(struct salca_kv *st, const float *k, uint32_t d, struct rng *r, float *v,
                      uint32_t t, struct errmsg *e)
{
    for (uint32_t j = 0; j < d; j++)
        v[j] = (float)rng_normal(r);
    int rc = salca_kv_append(st, k, v);
    return rc ? errmsg_set(e, rc, "KV store full at step %u", t) : 0;
}

/* A query qo = a_q unit(dirn + zeta dir) (docs/salca.md#synthetic-source step 6). */
static void make_query(float *qo, const float *dirn, double zeta, const float *dir, float aq,
                       uint32_t d)
{
    for (uint32_t j = 0; j < d; j++)
        qo[j] = dirn[j] + (float)zeta * dir[j];
    unit(qo, d);
    for (uint32_t j = 0; j < d; j++)
        qo[j] *= aq;
}

int salca_source_open_synth(struct salca_source **out, const struct salca_synth_params *p,
                            uint32_t L, uint32_t H, uint32_t G, uint32_t d, uint64_t seed,
                            const struct salca_task *task, struct errmsg *e)
{
    *out = NULL;
    if (!L || !H || !G || H % G || d < 8 || d > 256 || d % 2)
        return errmsg_set(e, ERR_USAGE,
                          "synthetic source needs L, H, G > 0, G dividing H "
                          "and an even head dim in [8, 256] (got %u, %u, %u, %u)",
                          L, H, G, d);
    uint32_t lo = p->heavy_band_lo ? p->heavy_band_lo : d / 4;
    if (lo >= d / 2 || p->heavy_pairs > d / 2 - lo)
        return errmsg_set(e, ERR_USAGE, "%u heavy pairs do not fit in [%u, %u)", p->heavy_pairs, lo,
                          d / 2);
    struct salca_source *s = mem_calloc(1, sizeof *s);
    if (!s)
        return errmsg_set(e, ERR_NOMEM, "out of memory for the synthetic source");
    s->L = L;
    s->H = H;
    s->G = G;
    s->d = d;
    s->seed = seed;
    s->task = task;
    s->p = *p;
    s->grp = mem_calloc((size_t)L * G, sizeof *s->grp);
    s->head = mem_calloc((size_t)L * H, sizeof *s->head);
    if (!s->grp || !s->head) {
        salca_source_free(s);
        return errmsg_set(e, ERR_NOMEM, "out of memory for the synthetic source");
    }
    uint32_t half = d / 2;
    for (uint32_t l = 0; l < L; l++) {
        for (uint32_t g = 0; g < G; g++) {
            struct syn_group *gr = &s->grp[l * G + g];
            struct rng r;
            rng_stream(&r, seed, "syn.struct", l, g);
            for (uint32_t j = 0; j < d; j++) {
                gr->gamma[j] = 1.0f;
                gr->mu[j] = 0.0f;
            }
            /* docs/salca.md#synthetic-source steps 1-3: P distinct pairs in [j_lo, d/2), shared
             * log-normal gain, fixed-sign means on both channels of a pair */
            bool taken[128] = {false};
            for (uint32_t a = 0; a < p->heavy_pairs; a++) {
                uint32_t j;
                do
                    j = lo + (uint32_t)rng_below(&r, half - lo);
                while (taken[j]);
                taken[j] = true;
                float gain = (float)exp(log(p->gain_median) + p->gain_sigma * rng_normal(&r));
                uint32_t ch[2] = {j, j + half};
                for (int b = 0; b < 2; b++) {
                    gr->gamma[ch[b]] = gain;
                    gr->mu[ch[b]] = (float)(p->heavy_mean * (rng_u64(&r) & 1 ? 1.0 : -1.0));
                }
            }
            gamma_dir(&r, gr->gamma, d, gr->vg); /* step 5: v_g = unit(gamma * xi) */
        }
        for (uint32_t h = 0; h < H; h++) {
            uint32_t g = h * G / H;
            const struct syn_group *gr = &s->grp[l * G + g];
            struct syn_head *hd = &s->head[l * H + h];
            struct rng r;
            rng_stream(&r, seed, "syn.head", l, h);
            float xi[256];
            gamma_dir(&r, gr->gamma, d, xi);
            for (uint32_t j = 0; j < d; j++) /* v_h = unit(v_g + eta unit(gamma * xi_h)) */
                hd->vh[j] = gr->vg[j] + (float)p->head_spread * xi[j];
            unit(hd->vh, d);
        }
    }
    *out = s;
    return 0;
}

int salca_source_open_model(struct salca_source **out, struct nn_llama *model,
                            const struct salca_task *task, struct errmsg *e)
{
    *out = NULL;
    struct salca_source *s = mem_calloc(1, sizeof *s);
    if (!s) {
        nn_llama_free(model);
        return errmsg_set(e, ERR_NOMEM, "out of memory for the model source");
    }
    s->model_src = true;
    s->model = model;
    s->task = task;
    s->L = model->cfg.L;
    s->H = model->cfg.H;
    s->G = model->cfg.G;
    s->d = model->cfg.d;
    s->scratch_cap = task->n0 + 4096;
    s->scratch = mem_alloc(s->scratch_cap * sizeof(float));
    s->logits = mem_alloc(model->cfg.V * sizeof(float));
    if (!s->scratch || !s->logits) {
        salca_source_free(s);
        return errmsg_set(e, ERR_NOMEM, "out of memory for the model source");
    }
    for (uint32_t i = 0; i < task->n0; i++)
        if (task->tokens[i] >= model->cfg.V) {
            salca_source_free(s);
            return errmsg_set(e, ERR_USAGE,
                              "task token id %u exceeds the model vocabulary "
                              "%u",
                              task->tokens[i], model->cfg.V);
        }
    *out = s;
    return 0;
}

void salca_source_set_pool(struct salca_source *s, struct thread_pool *pool)
{
    s->pool = pool;
}

void salca_source_free(struct salca_source *s)
{
    if (!s)
        return;
    mem_free(s->grp);
    mem_free(s->head);
    mem_free(s->ch);
    nn_llama_free(s->model);
    mem_free(s->scratch);
    mem_free(s->logits);
    mem_free(s->rope);
    mem_free(s);
}

void salca_source_dims(const struct salca_source *s, uint32_t *L, uint32_t *H, uint32_t *G,
                       uint32_t *d)
{
    *L = s->L;
    *H = s->H;
    *G = s->G;
    *d = s->d;
}

const float *salca_source_logits(const struct salca_source *s)
{
    return s->model_src ? s->logits : NULL;
}

const struct nn_llama *salca_source_model(const struct salca_source *s)
{
    return s->model_src ? s->model : NULL;
}

/* The standard deviation of dir . kb_i over the n0 base keys kb (n0 x d). */
static double along_sd(const float *dir, const float *kb, uint32_t n0, uint32_t d)
{
    double m1 = 0, m2 = 0;
    for (uint32_t i = 0; i < n0; i++) {
        double y = salca_dot(dir, kb + (size_t)i * d, d);
        m1 += y;
        m2 += y * y;
    }
    m1 /= n0;
    return sqrt(fmax(m2 / n0 - m1 * m1, 1e-30));
}

/* Prompt of group g of layer l, synthetic source: base keys (kb: n0 x d of scratch), the
 * heads' a_q and the group's abar, the relevance plant, then the store st. */
static int synth_group(struct salca_source *s, uint32_t l, uint32_t g, const float *cs, float *kb,
                       struct salca_kv *st, struct errmsg *e)
{
    uint32_t d = s->d, n0 = s->task->n0;
    float rsd = sqrtf((float)d), v[256];
    struct syn_group *gr = &s->grp[l * s->G + g];
    struct rng rv;
    prompt_base(s, l, g, cs, kb, &rv);
    /* docs/salca.md#synthetic-source step 6: a_q so that a_q v_h.kb_i/sqrt(d) has std sigma_L */
    double asum = 0;
    uint32_t nh = 0;
    for (uint32_t h = 0; h < s->H; h++) {
        if (h * s->G / s->H != g)
            continue;
        struct syn_head *hd = &s->head[l * s->H + h];
        hd->aq = (float)(s->p.logit_std * sqrt((double)d) / along_sd(hd->vh, kb, n0, d));
        asum += hd->aq;
        nh++;
    }
    gr->abar = (float)(asum / nh);
    /* step 7: k_i = kb_i + c_i lambda_l (sqrt(d)/abar) v_g; step 8: v ~ N(0, I) */
    float lam = (float)lambda_l(s, l);
    for (uint32_t i = 0; i < n0; i++) {
        float *k = kb + (size_t)i * d;
        float w = (float)relevance(s, i) * lam * (rsd / gr->abar);
        for (uint32_t j = 0; j < d; j++)
            k[j] += w * gr->vg[j];
    }
    return prompt_store(st, kb, n0, d, &rv, v, e);
}

static int synth_step(struct salca_source *s, uint32_t t, uint32_t l_lo, uint32_t l_hi,
                      struct salca_kv *kv, float *q, struct errmsg *e)
{
    uint32_t d = s->d, pos = s->task->n0 + t;
    float rsd = sqrtf((float)d);
    float k[256], v[256], dir[256], cs[256];
    rope_row(cs, d, pos);
    for (uint32_t l = l_lo; l < l_hi; l++) {
        float lam = (float)lambda_l(s, l);
        for (uint32_t g = 0; g < s->G; g++) {
            const struct syn_group *gr = &s->grp[l * s->G + g];
            struct rng r;
            rng_stream(&r, s->seed, "syn.step.kv", (uint64_t)l * s->G + g, t);
            base_key(gr, d, &r, cs, k);
            /* generated tokens get c = c_loc (docs/salca.md#synthetic-source step 7) */
            float w = (float)s->p.c_loc * lam * (rsd / gr->abar);
            for (uint32_t j = 0; j < d; j++)
                k[j] += w * gr->vg[j];
            int rc = step_store(&kv[(l - l_lo) * s->G + g], k, d, &r, v, t, e);
            if (rc)
                return rc;
        }
        for (uint32_t h = 0; h < s->H; h++) {
            const struct syn_head *hd = &s->head[l * s->H + h];
            const struct syn_group *gr = &s->grp[l * s->G + h * s->G / s->H];
            struct rng r;
            rng_stream(&r, s->seed, "syn.query", (uint64_t)l * s->H + h, t);
            gamma_dir(&r, gr->gamma, d, dir);
            float *qo = q + ((size_t)(l - l_lo) * s->H + h) * d;
            /* docs/salca.md#synthetic-source step 6: q = a_q unit(v_h + zeta unit(gamma * xi_t)) */
            make_query(qo, hd->vh, s->p.query_jitter, dir, hd->aq, d);
        }
    }
    return 0;
}

/* Gram-Schmidt of v against the m unit vectors b[0..m); false when nothing is left. */
static bool orth_unit(float *v, float (*b)[256], uint32_t m, uint32_t d)
{
    for (uint32_t a = 0; a < m; a++) {
        double dot = salca_dot(v, b[a], d);
        for (uint32_t j = 0; j < d; j++)
            v[j] -= (float)dot * b[a][j];
    }
    double n2 = salca_dot(v, v, d);
    if (!(n2 > 1e-12))
        return false;
    unit(v, d);
    return true;
}

int salca_source_open_calib(struct salca_source **out, const struct salca_calib_params *p,
                            uint32_t L, uint32_t H, uint32_t G, uint32_t d, uint64_t seed,
                            const struct salca_task *task, struct errmsg *e)
{
    *out = NULL;
    int rc = salca_calib_check_dims(L, H, G, e);
    if (rc)
        return rc;
    /* the base keys keep the synthetic source's heavy RoPE pairs (docs/salca.md#synthetic-source
     * steps 1-4) */
    struct salca_synth_params sp;
    salca_synth_params_default(&sp);
    sp.query_jitter = p->query_jitter;
    struct salca_source *s;
    if ((rc = salca_source_open_synth(&s, &sp, L, H, G, d, seed, task, e)))
        return rc;
    s->calib = true;
    s->cp = *p;
    s->ch = mem_calloc((size_t)L * H, sizeof *s->ch);
    if (!s->ch) {
        salca_source_free(s);
        return errmsg_set(e, ERR_NOMEM, "out of memory for the calibrated source");
    }
    uint32_t hpg = H / G;
    for (uint32_t l = 0; l < L; l++)
        for (uint32_t g = 0; g < G; g++) {
            const struct syn_group *gr = &s->grp[l * G + g];
            struct rng r;
            rng_stream(&r, seed, "cal.dirs", l, g);
            float basis[4][256];
            uint32_t nb = 0;
            /* e_h per head, gamma-weighted (the structure lives on the heavy channels, as
             * the synthetic source's v_g) and orthonormal in the group */
            for (uint32_t k = 0; k < hpg; k++) {
                do
                    gamma_dir(&r, gr->gamma, d, basis[nb]);
                while (!orth_unit(basis[nb], basis, nb, d));
                nb++;
            }
            for (uint32_t a = 0; a < hpg; a++) {
                uint32_t h = g * hpg + a;
                struct cal_head *c = &s->ch[l * H + h];
                memcpy(c->e, basis[a], sizeof c->e);
                c->ml = salca_calib_model_layer(l, L);
                c->mh = salca_calib_model_q(h, H, G);
                c->retrieval =
                    salca_calib_retrieval(c->ml, salca_calib_model_kv(g, G), p->retrieval_frac);
                c->pt = salca_calib_pattern(c->ml, c->mh);
            }
        }
    *out = s;
    return 0;
}

/* Planted boosts B_h(i) of the prompt for calibrated head c (logit units; docs/models.md,
 * "Calibrated Salca source"): sinks and the local band for every head; streaming heads add
 * their recent window, retrieval heads their pattern's vertical keys and slash band and the
 * task's spans. Boosts combine by max. */
static void cal_profile(const struct salca_source *s, const struct cal_head *c, uint32_t l,
                        uint32_t h, float *b)
{
    const struct salca_calib_params *p = &s->cp;
    const struct salca_task *t = s->task;
    uint32_t n0 = t->n0;
    for (uint32_t i = 0; i < n0; i++)
        b[i] = 0.0f;
    double cp = salca_calib_boost(c->pt, p);
    uint32_t band = c->retrieval ? c->pt->slash : p->stream_window;
    float cband = (float)(c->retrieval ? cp : p->c_local);
    for (uint32_t a = 0; a < band && a < n0; a++)
        b[n0 - 1 - a] = cband;
    if (c->retrieval) {
        /* vertical keys: vertical_size per search_tokens of prompt, uniform positions */
        uint64_t nv = (uint64_t)c->pt->vertical * n0 / p->search_tokens;
        struct rng r;
        rng_stream(&r, s->seed, "cal.vertical", l, h);
        for (uint64_t k = 0; k < nv; k++) {
            uint32_t i = (uint32_t)rng_below(&r, n0);
            b[i] = fmaxf(b[i], (float)cp);
        }
        for (uint32_t i = 0; i < n0; i++)
            b[i] = fmaxf(b[i], t->c[i]);
    }
    for (uint32_t a = 0; a < p->local_tokens && a < n0; a++)
        b[n0 - 1 - a] = fmaxf(b[n0 - 1 - a], (float)p->c_local);
    for (uint32_t i = 0; i < p->sink_tokens && i < n0; i++)
        b[i] = fmaxf(b[i], (float)p->c_sink);
}

/* Prompt of group g of layer l, calibrated source: base keys (kb: n0 x d of scratch), each
 * head's a_q, kappa and boosts (bst: n0 x H/G of scratch), the plant, then the store st. */
static int calib_group(struct salca_source *s, uint32_t l, uint32_t g, const float *cs, float *kb,
                       float *bst, struct salca_kv *st, struct errmsg *e)
{
    uint32_t d = s->d, n0 = s->task->n0, hpg = s->H / s->G;
    float v[256];
    struct rng rv;
    prompt_base(s, l, g, cs, kb, &rv);
    for (uint32_t a = 0; a < hpg; a++) {
        uint32_t h = g * hpg + a;
        struct cal_head *c = &s->ch[l * s->H + h];
        /* a_q: the base keys' logits along e have std sigma (docs/salca.md#synthetic-source
         * step 6); kappa = sqrt(d) / a_q: a profile value B adds B logits */
        c->aq = (float)(fmax(s->cp.logit_std, 1e-3) * sqrt((double)d) / along_sd(c->e, kb, n0, d));
        c->kappa = (float)(sqrt((double)d) / c->aq);
        cal_profile(s, c, l, h, bst + (size_t)a * n0);
    }
    for (uint32_t i = 0; i < n0; i++) {
        float *k = kb + (size_t)i * d;
        for (uint32_t a = 0; a < hpg; a++) {
            const struct cal_head *c = &s->ch[l * s->H + g * hpg + a];
            float w = c->kappa * bst[(size_t)a * n0 + i];
            for (uint32_t j = 0; j < d && w != 0.0f; j++)
                k[j] += w * c->e[j];
        }
    }
    return prompt_store(st, kb, n0, d, &rv, v, e);
}

/* The prefill of layers [l_lo, l_hi): one job per (layer, group) on the source's pool, each
 * worker with its own scratch. Every group draws from its own streams and writes only its
 * store and its heads' constants, so the result does not depend on the thread count. */
struct prefill_ctx {
    struct salca_source *s;
    uint32_t l_lo;
    struct salca_kv *kv;
    float *cs;          /* (n0 x d) RoPE rows */
    float *kb;          /* (workers x n0 x d) base keys */
    float *bst;         /* (workers x n0 x H/G) calibrated boosts */
    int *rc;            /* (workers) the first error of each worker */
    size_t *at;         /* (workers) its job */
    struct errmsg *err; /* (workers) */
};

static void rope_task(void *vctx, size_t b, size_t end, int worker)
{
    (void)worker;
    struct prefill_ctx *x = vctx;
    for (size_t i = b; i < end; i++)
        rope_row(x->cs + i * x->s->d, x->s->d, (uint32_t)i);
}

static void prefill_task(void *vctx, size_t b, size_t end, int worker)
{
    struct prefill_ctx *x = vctx;
    struct salca_source *s = x->s;
    size_t nd = (size_t)s->task->n0 * s->d;
    float *kb = x->kb + (size_t)worker * nd;
    float *bst = x->bst ? x->bst + (size_t)worker * s->task->n0 * (s->H / s->G) : NULL;
    for (size_t j = b; j < end && !x->rc[worker]; j++) {
        uint32_t l = x->l_lo + (uint32_t)(j / s->G), g = (uint32_t)(j % s->G);
        struct salca_kv *st = &x->kv[j];
        int rc = s->calib ? calib_group(s, l, g, x->cs, kb, bst, st, &x->err[worker])
                          : synth_group(s, l, g, x->cs, kb, st, &x->err[worker]);
        if (rc) {
            x->rc[worker] = rc;
            x->at[worker] = j;
        }
    }
}

static int prefill_layers(struct salca_source *s, uint32_t l_lo, uint32_t l_hi, struct salca_kv *kv,
                          struct errmsg *e)
{
    int nw = s->pool ? pool_size(s->pool) : 1;
    size_t n0 = s->task->n0, d = s->d, hpg = s->H / s->G;
    struct prefill_ctx x = {.s = s, .l_lo = l_lo, .kv = kv};
    /* one RoPE table for every (l, g), made once: the angles depend on the position only,
     * and the layer-major plan generates the layers one call at a time */
    bool new_rope = !s->rope;
    if (new_rope)
        s->rope = mem_alloc(n0 * d * sizeof(float));
    x.cs = s->rope;
    x.kb = mem_alloc((size_t)nw * n0 * d * sizeof(float));
    x.bst = s->calib ? mem_alloc((size_t)nw * n0 * hpg * sizeof(float)) : NULL;
    x.rc = mem_calloc((size_t)nw, sizeof *x.rc);
    x.at = mem_calloc((size_t)nw, sizeof *x.at);
    x.err = mem_calloc((size_t)nw, sizeof *x.err);
    int rc = 0;
    if (!x.cs || !x.kb || (s->calib && !x.bst) || !x.rc || !x.at || !x.err)
        rc = errmsg_set(e, ERR_NOMEM, "out of memory in the prompt's K/V generation");
    if (!rc) {
        if (new_rope && s->pool)
            pool_for(s->pool, n0, rope_task, &x);
        else if (new_rope)
            rope_task(&x, 0, n0, 0);
        size_t jobs = (size_t)(l_hi - l_lo) * s->G;
        if (s->pool)
            pool_for(s->pool, jobs, prefill_task, &x);
        else
            prefill_task(&x, 0, jobs, 0);
        /* the error of the first job that failed, as one thread would have stopped there */
        int first = -1;
        for (int w = 0; w < nw; w++)
            if (x.rc[w] && (first < 0 || x.at[w] < x.at[first]))
                first = w;
        if (first >= 0)
            rc = errmsg_set(e, x.rc[first], "%s", errmsg_text(&x.err[first]));
    }
    mem_free(x.kb);
    mem_free(x.bst);
    mem_free(x.rc);
    mem_free(x.at);
    mem_free(x.err);
    return rc;
}

/* Decode step t of the calibrated source: the new token is local to every head (boost
 * c_local; the band is counted from the prompt end, exact while t < local_tokens) and each
 * query is a_q unit(e_h + zeta j), j orthogonal to the group's e (no cross-talk). */
static int calib_step(struct salca_source *s, uint32_t t, uint32_t l_lo, uint32_t l_hi,
                      struct salca_kv *kv, float *q, struct errmsg *e)
{
    uint32_t d = s->d, pos = s->task->n0 + t, hpg = s->H / s->G;
    float k[256], v[256], dir[256], cs[256];
    rope_row(cs, d, pos);
    for (uint32_t l = l_lo; l < l_hi; l++) {
        for (uint32_t g = 0; g < s->G; g++) {
            const struct syn_group *gr = &s->grp[l * s->G + g];
            struct rng r;
            rng_stream(&r, s->seed, "syn.step.kv", (uint64_t)l * s->G + g, t);
            base_key(gr, d, &r, cs, k);
            for (uint32_t a = 0; a < hpg; a++) {
                const struct cal_head *c = &s->ch[l * s->H + g * hpg + a];
                float w = c->kappa * (float)s->cp.c_local;
                for (uint32_t j = 0; j < d; j++)
                    k[j] += w * c->e[j];
            }
            int rc = step_store(&kv[(l - l_lo) * s->G + g], k, d, &r, v, t, e);
            if (rc)
                return rc;
        }
        for (uint32_t h = 0; h < s->H; h++) {
            const struct cal_head *c = &s->ch[l * s->H + h];
            const struct syn_group *gr = &s->grp[l * s->G + h / hpg];
            struct rng r;
            rng_stream(&r, s->seed, "syn.query", (uint64_t)l * s->H + h, t);
            gamma_dir(&r, gr->gamma, d, dir);
            for (uint32_t a = 0; a < hpg; a++) {
                const float *ea = s->ch[l * s->H + (h / hpg) * hpg + a].e;
                double dot = salca_dot(dir, ea, d);
                for (uint32_t j = 0; j < d; j++)
                    dir[j] -= (float)dot * ea[j];
            }
            float *qo = q + ((size_t)(l - l_lo) * s->H + h) * d;
            make_query(qo, c->e, s->cp.query_jitter, dir, c->aq, d);
        }
    }
    return 0;
}

bool salca_source_head_retrieval(const struct salca_source *s, uint32_t l, uint32_t h,
                                 char *pattern)
{
    if (!s->calib) {
        if (pattern)
            *pattern = '-';
        return false;
    }
    const struct cal_head *c = &s->ch[l * s->H + h];
    if (pattern)
        *pattern = c->pt->code;
    return c->retrieval;
}

bool salca_source_is_calibrated(const struct salca_source *s)
{
    return s->calib;
}

/* Dense decode hook of the model source: appends the new token to the stores, records the
 * queries and attends densely in FP32 over every key (the reference trajectory,
 * docs/salca.md#model-source). */
static void dense_hook(void *ctx, uint32_t l, const float *q, const float *k, const float *v,
                       float *out)
{
    struct salca_source *s = ctx;
    uint32_t d = s->d;
    for (uint32_t g = 0; g < s->G; g++)
        (void)salca_kv_append(&s->kv[l * s->G + g], k + (size_t)g * d, v + (size_t)g * d);
    memcpy(s->q + (size_t)l * s->H * d, q, (size_t)s->H * d * sizeof(float));
    for (uint32_t h = 0; h < s->H; h++) {
        const struct salca_kv *st = &s->kv[l * s->G + h * s->G / s->H];
        salca_attend_f32(q + (size_t)h * d, st->k, st->v, d, NULL, st->n, out + (size_t)h * d,
                         s->scratch);
    }
}

static int model_prefill(struct salca_source *s, struct salca_kv *kv, uint32_t *first,
                         struct errmsg *e)
{
    const struct nn_llama *m = s->model;
    uint32_t n0 = s->task->n0, d = s->d;
    struct nn_llama_cache cache;
    int rc = nn_llama_cache_init(&cache, &m->cfg, n0);
    if (rc)
        return errmsg_set(e, rc, "out of memory for the %u-token prefill cache", n0);
    rc = nn_llama_prefill(m, &cache, s->task->tokens, n0, 0, s->logits, e);
    for (uint32_t l = 0; l < s->L && !rc; l++)
        for (uint32_t g = 0; g < s->G && !rc; g++) {
            struct salca_kv *st = &kv[l * s->G + g];
            for (uint32_t i = 0; i < n0 && !rc; i++) {
                size_t off = (((size_t)l * s->G + g) * cache.cap + i) * d;
                rc = salca_kv_append(st, cache.k + off, cache.v + off);
            }
            if (rc)
                rc = errmsg_set(e, rc, "KV store too small for the %u-token prompt", n0);
            else
                salca_kv_finish_prefill(st);
        }
    nn_llama_cache_release(&cache);
    if (!rc && first)
        *first = nn_llama_argmax(s->logits, m->cfg.V);
    return rc;
}

int salca_source_prefill(struct salca_source *s, struct salca_kv *kv, uint32_t *first_token,
                         struct errmsg *e)
{
    if (s->model_src)
        return model_prefill(s, kv, first_token, e);
    if (first_token)
        *first_token = 0;
    return prefill_layers(s, 0, s->L, kv, e);
}

int salca_source_prefill_layers(struct salca_source *s, uint32_t l_lo, uint32_t l_hi,
                                struct salca_kv *kv, struct errmsg *e)
{
    if (s->model_src || l_lo >= l_hi || l_hi > s->L)
        return errmsg_set(e, ERR_INTERNAL, "layers %u..%u of this source cannot be generated alone",
                          l_lo, l_hi);
    return prefill_layers(s, l_lo, l_hi, kv, e);
}

int salca_source_step_layers(struct salca_source *s, uint32_t t, uint32_t l_lo, uint32_t l_hi,
                             struct salca_kv *kv, float *q, struct errmsg *e)
{
    if (s->model_src || l_lo >= l_hi || l_hi > s->L)
        return errmsg_set(e, ERR_INTERNAL, "layers %u..%u of this source cannot be generated alone",
                          l_lo, l_hi);
    return s->calib ? calib_step(s, t, l_lo, l_hi, kv, q, e)
                    : synth_step(s, t, l_lo, l_hi, kv, q, e);
}

int salca_source_step(struct salca_source *s, uint32_t t, uint32_t token, struct salca_kv *kv,
                      float *q, uint32_t *next_token, struct errmsg *e)
{
    if (!s->model_src) {
        if (next_token)
            *next_token = 0;
        return s->calib ? calib_step(s, t, 0, s->L, kv, q, e) : synth_step(s, t, 0, s->L, kv, q, e);
    }
    uint32_t pos = s->task->n0 + t;
    if (pos + 1 > s->scratch_cap)
        return errmsg_set(e, ERR_LIMIT, "decode step %u exceeds the attention scratch", t);
    s->kv = kv;
    s->q = q;
    int rc = nn_llama_decode(s->model, NULL, pos, token, dense_hook, s, s->logits, e);
    s->kv = NULL;
    s->q = NULL;
    if (!rc && next_token)
        *next_token = nn_llama_argmax(s->logits, s->model->cfg.V);
    return rc;
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

uint32_t salca_source_planted(const struct salca_source *s, uint32_t l, uint32_t g, bool *chan)
{
    uint32_t d = s->d, cnt = 0;
    if (!s->model_src) {
        const struct syn_group *gr = &s->grp[l * s->G + g];
        for (uint32_t j = 0; j < d; j++)
            cnt += chan[j] = gr->gamma[j] != 1.0f;
        return cnt;
    }
    const struct nn_llama_config *c = &s->model->cfg;
    const float *wk = s->model->layers[l].wk + (size_t)g * d * c->D;
    float norms[256], sorted[256];
    for (uint32_t j = 0; j < d; j++) {
        double acc = 0;
        for (uint32_t x = 0; x < c->D; x++)
            acc += (double)wk[(size_t)j * c->D + x] * wk[(size_t)j * c->D + x];
        norms[j] = sorted[j] = (float)sqrt(acc);
    }
    qsort(sorted, d, sizeof sorted[0], cmp_float);
    float med = sorted[d / 2];
    for (uint32_t j = 0; j < d; j++)
        cnt += chan[j] = norms[j] > 4.0f * med;
    return cnt;
}
