/*
 * salca_capture: the capture driver of docs/salca.md (see the header).
 */
#include "capture/salca/salca_capture.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture/nn/nn.h"
#include "capture/nn/nn_llama.h"
#include "capture/salca/salca_task.h"
#include "common/buf.h"
#include "common/mem.h"
#include "common/progress.h"
#include "common/sha256.h"
#include "common/threads.h"
#include "formats/trace.pb-c.h"
#include "formats/varint.h"
#include "traces/trace_salca.h"

#define ALL_METHODS                                                                                \
    ((1u << SALCA_M_SALCA) | (1u << SALCA_M_STD_TOPK) | (1u << SALCA_M_PL_TOPK) |                  \
     (1u << SALCA_M_FULL_FEAT) | (1u << SALCA_M_QUEST))
#define MAX_NEEDLES 8

/* Slot s runs in this capture: a selected built-in method or a configured variant. */
static bool slot_on(const struct salca_capture_params *p, int s)
{
    if (s < SALCA_M_DENSE)
        return (p->methods >> s) & 1u;
    return s >= SALCA_M_COUNT && (uint32_t)(s - SALCA_M_COUNT) < p->n_variants;
}

/* Method id of slot s in the trace: the enum for built-ins, 16 + k for variant k. */
static uint32_t slot_id(int s)
{
    return s < SALCA_M_COUNT ? (uint32_t)s : 16u + (uint32_t)(s - SALCA_M_COUNT);
}

static void slot_name(int s, char *out, size_t n)
{
    if (s < SALCA_M_COUNT)
        snprintf(out, n, "%s", salca_method_name(s));
    else
        snprintf(out, n, "abl%u", slot_id(s));
}

int salca_variant_parse(const char *spec, uint32_t d, struct salca_variant *v, struct errmsg *e)
{
    *v = (struct salca_variant){.w_k = 2, .w_q = 3, .r = d / 2};
    char buf[128];
    if (strlen(spec) >= sizeof buf)
        return errmsg_set(e, ERR_USAGE, "ablation '%s' is too long", spec);
    strcpy(buf, spec);
    char *save = NULL;
    for (char *kv = strtok_r(buf, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(kv, '=');
        if (!eq)
            return errmsg_set(e, ERR_USAGE, "ablation item '%s' is not key=value", kv);
        *eq = 0;
        const char *key = kv, *val = eq + 1;
        char *end;
        unsigned long x = strtoul(val, &end, 10);
        bool isnum = *val && !*end;
        if (!strcmp(key, "w_k") && isnum && x >= 1 && x <= 4) {
            v->w_k = (uint32_t)x;
        } else if (!strcmp(key, "w_q") && !strcmp(val, "fp32")) {
            v->w_q = 0;
        } else if (!strcmp(key, "w_q") && isnum && x >= 2 && x <= 4) {
            v->w_q = (uint32_t)x;
        } else if (!strcmp(key, "pool") && isnum && x % 2 == 1 && x <= 1001) {
            v->pool = (uint32_t)x;
        } else if (!strcmp(key, "s_f") || !strcmp(key, "rho")) {
            struct salca_ratio r;
            if (salca_ratio_parse(val, &r) || r.num == 0 || r.num > r.den)
                return errmsg_set(e, ERR_USAGE, "ablation %s '%s' must be a decimal in (0, 1]", key,
                                  val);
            if (!strcmp(key, "rho")) {
                v->rho = r;
            } else {
                if (((uint64_t)d * r.num) % r.den)
                    return errmsg_set(e, ERR_USAGE, "s_f %s times d = %u is not an integer", val,
                                      d);
                v->r = (uint32_t)((uint64_t)d * r.num / r.den);
            }
        } else {
            return errmsg_set(e, ERR_USAGE,
                              "bad ablation item '%s=%s' (w_k 1-4, w_q 2-4 or "
                              "fp32, s_f, pool odd, rho)",
                              key, val);
        }
    }
    return 0;
}

void salca_capture_params_default(struct salca_capture_params *p)
{
    memset(p, 0, sizeof *p);
    p->seed = 1;
    p->task = "narrativeqa";
    p->length = 32768;
    p->max_len = 31500;
    p->max_new = 128;
    p->steps = 64;
    p->calibrated = true; /* the default source (docs/models.md "Calibrated Salca source") */
    snprintf(p->rho_text, sizeof p->rho_text, "0.05");
    p->sel.pool = 5;
    p->sel.k_mode = SALCA_K_FIXED;
    p->sel.rho = (struct salca_ratio){1, 20};
    p->sel.k_min = 64;
    p->sel.p_mass = 0.95;
    p->sel.cmp = SALCA_CMP_GE;
    p->methods = ALL_METHODS;
    p->top1 = true;
    p->threads = 1;
    p->mem_limit_bytes = 8ull << 30;
    salca_synth_params_default(&p->synth);
    salca_calib_params_default(&p->calib);
    p->tiny_outlier_pairs = 4;
    p->tiny_outlier_gain = 8.0;
    p->quest_page = 16;
    p->zstd_level = 3;
}

/* Result of one (job, method) kept until the step's records are written. */
struct job_res {
    uint32_t K, T, count, runs;
    double recall, cosine, overlap;
    bool has_hist;
    uint32_t hist[256];
    struct buf sel;
    float cov[MAX_NEEDLES]; /* share of each needle span's dense mass selected */
};

struct cap {
    const struct salca_capture_params *p;
    uint32_t L, H, G, d, r, n0, N, cap_tokens;
    struct salca_kv *kv;      /* (L*G) dense-run stores */
    struct salca_scratch *sc; /* (threads) */
    struct thread_pool *pool;
    float *q;           /* (L*H*d) queries of the step */
    struct job_res *jr; /* (L*H*SALCA_NSLOT) */
    uint8_t *vheavy;    /* (variants, L*G, 256) heavy channels per variant */
    struct salca_variant var[SALCA_MAX_VARIANTS];
    const struct salca_span *needles[MAX_NEEDLES];
    uint32_t n_needles;
    int enc_err;
};

/* Lower bound of x in the ascending idx[0..m). */
static uint32_t lower_bound(const uint32_t *idx, uint32_t m, uint32_t x)
{
    uint32_t lo = 0, hi = m;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (idx[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void job_worker(void *ctx, size_t begin, size_t end, int worker)
{
    struct cap *c = ctx;
    struct salca_method_res res[SALCA_M_COUNT], vres;
    for (size_t j = begin; j < end; j++) {
        uint32_t l = (uint32_t)(j / c->H), h = (uint32_t)(j % c->H);
        const struct salca_kv *kv = &c->kv[l * c->G + h * c->G / c->H];
        const float *q = c->q + j * c->d;
        struct salca_sel_params sp = c->p->sel;
        sp.quest_all = l < c->p->quest_dense_layers;
        salca_job(kv, q, &sp, c->p->methods, true, &c->sc[worker], res);
        for (int m = 0; m < SALCA_NSLOT; m++) {
            if (!slot_on(c->p, m))
                continue;
            struct job_res *x = &c->jr[j * SALCA_NSLOT + m];
            const struct salca_method_res *y = &res[m < SALCA_M_COUNT ? m : 0];
            if (m >= SALCA_M_COUNT) {
                uint32_t vi = (uint32_t)(m - SALCA_M_COUNT), gi = l * c->G + h * c->G / c->H;
                salca_variant_job(kv, c->vheavy + ((size_t)vi * c->L * c->G + gi) * 256, q,
                                  &c->var[vi], &c->p->sel, true, &c->sc[worker],
                                  &res[SALCA_M_DENSE], &vres);
                y = &vres;
            }
            x->K = y->K;
            x->T = y->T;
            x->count = y->count;
            x->runs = y->runs;
            x->recall = y->recall;
            x->cosine = y->cosine;
            x->overlap = y->overlap;
            x->has_hist = y->has_hist && !c->p->no_hist;
            if (x->has_hist)
                memcpy(x->hist, y->hist, sizeof x->hist);
            buf_clear(&x->sel);
            int rc = varint_encode_indices(&x->sel, y->idx, y->count);
            if (rc)
                c->enc_err = rc;
            /* needle recall: the share of the span's dense attention mass that S keeps */
            const float *P = c->sc[worker].P;
            for (uint32_t a = 0; a < c->n_needles; a++) {
                const struct salca_span *s = c->needles[a];
                uint32_t b0 = lower_bound(y->idx, y->count, s->start);
                uint32_t b1 = lower_bound(y->idx, y->count, s->start + s->len);
                double in = 0, all = 0;
                for (uint32_t b = b0; b < b1; b++)
                    in += P[y->idx[b]];
                for (uint32_t i = s->start; i < s->start + s->len; i++)
                    all += P[i];
                x->cov[a] = all > 0 ? (float)(in / all) : 1.0f;
            }
        }
    }
}

/* Substituted run of one method (docs/salca.md#metrics, top-1 agreement): per-method stores. */
struct subst {
    struct cap *c;
    int method;          /* slot */
    struct salca_kv *kv; /* (L*G) this run's own decode-time cache */
};

static void subst_hook(void *ctx, uint32_t l, const float *q, const float *k, const float *v,
                       float *out)
{
    struct subst *s = ctx;
    struct cap *c = s->c;
    struct salca_method_res res[SALCA_M_COUNT];
    for (uint32_t g = 0; g < c->G; g++)
        (void)salca_kv_append(&s->kv[l * c->G + g], k + (size_t)g * c->d, v + (size_t)g * c->d);
    for (uint32_t h = 0; h < c->H; h++) {
        uint32_t gi = l * c->G + h * c->G / c->H;
        const struct salca_kv *kv = &s->kv[gi];
        const float *qh = q + (size_t)h * c->d;
        if (s->method < SALCA_M_COUNT) {
            struct salca_sel_params sp = c->p->sel;
            sp.quest_all = l < c->p->quest_dense_layers;
            salca_job(kv, qh, &sp, 1u << s->method, false, &c->sc[0], res);
            memcpy(out + (size_t)h * c->d, res[s->method].o, c->d * sizeof(float));
        } else {
            struct salca_method_res vres;
            uint32_t vi = (uint32_t)(s->method - SALCA_M_COUNT);
            salca_variant_job(kv, c->vheavy + ((size_t)vi * c->L * c->G + gi) * 256, qh,
                              &c->var[vi], &c->p->sel, false, &c->sc[0], NULL, &vres);
            memcpy(out + (size_t)h * c->d, vres.o, c->d * sizeof(float));
        }
    }
}

/* Name of a K rule in params_json and the header: the trace's own (traces/trace_salca). */
static const char *k_rule_name(enum salca_k_mode m)
{
    return trace_salca_k_mode_name((enum trace_salca_k_mode)m);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void stats(double *v, uint64_t n, double *mean, double *median, double *p5)
{
    if (n == 0) {
        *mean = *median = *p5 = 0;
        return;
    }
    double s = 0;
    for (uint64_t i = 0; i < n; i++)
        s += v[i];
    *mean = s / (double)n;
    qsort(v, n, sizeof *v, cmp_double);
    *median = v[(n - 1) / 2];
    *p5 = v[(uint64_t)floor(0.05 * (double)(n - 1))];
}

/* The calibrated source's parameters and its per-head map (head_class: 'R' retrieval or
 * 'S' streaming per capture (l, h), row-major; head_pattern: the MInference budget code). */
static json_t *calib_json(const struct salca_capture_params *p, const struct salca_source *src,
                          uint32_t L, uint32_t H, uint32_t G)
{
    const struct salca_calib_params *c = &p->calib;
    json_t *o = json_object();
    json_object_set_new(o, "model", json_string("Llama-3.1-8B-Instruct"));
    json_object_set_new(o, "data", json_string(salca_calib_sources));
    json_object_set_new(o, "retrieval_frac", json_real(c->retrieval_frac));
    json_object_set_new(o, "logit_std", json_real(c->logit_std));
    json_object_set_new(o, "sink_tokens", json_integer(c->sink_tokens));
    json_object_set_new(o, "c_sink", json_real(c->c_sink));
    json_object_set_new(o, "local_tokens", json_integer(c->local_tokens));
    json_object_set_new(o, "c_local", json_real(c->c_local));
    json_object_set_new(o, "stream_window", json_integer(c->stream_window));
    json_object_set_new(o, "search_tokens", json_integer(c->search_tokens));
    json_object_set_new(o, "c_needle", json_real(c->c_needle));
    json_object_set_new(o, "query_jitter", json_real(c->query_jitter));
    /* the base keys' heavy structure (docs/salca.md#synthetic-source defaults) */
    struct salca_synth_params bk;
    salca_synth_params_default(&bk);
    json_object_set_new(o, "base_heavy_pairs", json_integer(bk.heavy_pairs));
    json_object_set_new(o, "base_gain_median", json_real(bk.gain_median));
    json_object_set_new(o, "base_gain_sigma", json_real(bk.gain_sigma));
    json_object_set_new(o, "base_heavy_mean", json_real(bk.heavy_mean));
    json_t *ml = json_array(), *mh = json_array(), *boost = json_object();
    for (uint32_t l = 0; l < L; l++)
        json_array_append_new(ml, json_integer(salca_calib_model_layer(l, L)));
    for (uint32_t h = 0; h < H; h++)
        json_array_append_new(mh, json_integer(salca_calib_model_q(h, H, G)));
    json_object_set_new(o, "model_layers", ml);
    json_object_set_new(o, "model_q_heads", mh);
    char *cls = mem_alloc((size_t)L * H + 1), *pat = mem_alloc((size_t)L * H + 1);
    for (uint32_t i = 0; cls && pat && i < L * H; i++) {
        cls[i] = salca_source_head_retrieval(src, i / H, i % H, &pat[i]) ? 'R' : 'S';
        char key[2] = {pat[i], 0};
        const struct salca_calib_pattern *pt = salca_calib_pattern(
            salca_calib_model_layer(i / H, L), salca_calib_model_q(i % H, H, G));
        json_object_set_new(boost, key, json_real(salca_calib_boost(pt, c)));
    }
    if (cls && pat) {
        cls[L * H] = pat[L * H] = 0;
        json_object_set_new(o, "head_class", json_string(cls));
        json_object_set_new(o, "head_pattern", json_string(pat));
    }
    json_object_set_new(o, "pattern_boost", boost);
    mem_free(cls);
    mem_free(pat);
    return o;
}

static char *params_json(const struct salca_capture_params *p, const struct salca_task *t,
                         uint32_t N, json_t *cal)
{
    json_t *o = json_object();
    const struct salca_synth_params *s = &p->synth;
    json_object_set_new(o, "source",
                        json_string(p->model        ? "model"
                                    : p->calibrated ? "calibrated"
                                                    : "synthetic"));
    json_object_set_new(o, "checkpoint", json_string(p->checkpoint ? p->checkpoint : ""));
    json_object_set_new(o, "seed", json_integer((json_int_t)p->seed));
    json_object_set_new(o, "task", json_string(t->info->name));
    json_object_set_new(o, "sample", json_integer(p->sample));
    json_object_set_new(o, "length", json_integer(p->length));
    json_object_set_new(o, "max_ctx", json_integer(p->max_len));
    json_object_set_new(o, "max_new", json_integer(p->max_new));
    json_object_set_new(o, "steps", json_integer(N));
    json_object_set_new(o, "retention", json_string(p->rho_text));
    json_object_set_new(o, "k_min", json_integer(p->sel.k_min));
    json_object_set_new(o, "k_rule", json_string(k_rule_name(p->sel.k_mode)));
    json_object_set_new(o, "p_mass", json_real(p->sel.p_mass));
    json_object_set_new(o, "pool", json_integer(p->sel.pool));
    json_object_set_new(o, "threshold_cmp", json_string(p->sel.cmp == SALCA_CMP_GT ? "gt" : "ge"));
    json_object_set_new(o, "attn_precision", json_string(p->sel.attn_fp32 ? "fp32" : "int8"));
    json_object_set_new(o, "methods", json_integer(p->methods));
    json_object_set_new(o, "no_hist", json_boolean(p->no_hist));
    json_object_set_new(o, "top1", json_boolean(p->top1));
    json_object_set_new(o, "quest_page", json_integer(p->quest_page));
    json_object_set_new(o, "quest_dense_layers", json_integer(p->quest_dense_layers));
    json_object_set_new(o, "quest_min_pages", json_integer(p->sel.quest_min_pages));
    json_object_set_new(o, "tiny_outlier_pairs", json_integer(p->tiny_outlier_pairs));
    json_object_set_new(o, "tiny_outlier_gain", json_real(p->tiny_outlier_gain));
    json_t *sy = json_object();
    json_object_set_new(sy, "heavy_pairs", json_integer(s->heavy_pairs));
    json_object_set_new(sy, "heavy_band_lo", json_integer(s->heavy_band_lo));
    json_object_set_new(sy, "gain_median", json_real(s->gain_median));
    json_object_set_new(sy, "gain_sigma", json_real(s->gain_sigma));
    json_object_set_new(sy, "heavy_mean", json_real(s->heavy_mean));
    json_object_set_new(sy, "head_spread", json_real(s->head_spread));
    json_object_set_new(sy, "query_jitter", json_real(s->query_jitter));
    json_object_set_new(sy, "logit_std", json_real(s->logit_std));
    json_object_set_new(sy, "sink_tokens", json_integer(s->sink_tokens));
    json_object_set_new(sy, "c_sink", json_real(s->c_sink));
    json_object_set_new(sy, "c_loc", json_real(s->c_loc));
    json_object_set_new(sy, "tau_loc", json_real(s->tau_loc));
    json_object_set_new(sy, "c_needle", json_real(s->c_needle));
    json_object_set_new(sy, "early_layer_scale", json_real(s->early_layer_scale));
    json_object_set_new(sy, "early_layers", json_integer(s->early_layers));
    json_object_set_new(o, "synthetic", sy);
    if (cal)
        json_object_set_new(o, "calibrated", cal);
    char *txt = json_dumps(o, JSON_SORT_KEYS | JSON_COMPACT);
    json_decref(o);
    return txt;
}

static char *model_json(const struct salca_capture_params *p, uint32_t L, uint32_t H, uint32_t G,
                        uint32_t d, const struct nn_llama *m)
{
    json_t *o = json_object();
    json_object_set_new(o, "L", json_integer(L));
    json_object_set_new(o, "H", json_integer(H));
    json_object_set_new(o, "G", json_integer(G));
    json_object_set_new(o, "d", json_integer(d));
    if (m) {
        json_object_set_new(o, "D", json_integer(m->cfg.D));
        json_object_set_new(o, "F", json_integer(m->cfg.F));
        json_object_set_new(o, "V", json_integer(m->cfg.V));
        json_object_set_new(o, "rope_theta", json_real(m->cfg.rope_theta));
        json_object_set_new(o, "rope_factor", json_real(m->cfg.rope_factor));
        json_object_set_new(o, "name", json_string(p->checkpoint ? p->checkpoint : "tiny"));
    } else {
        json_object_set_new(o, "name", json_string("synthetic"));
    }
    char *txt = json_dumps(o, JSON_SORT_KEYS | JSON_COMPACT);
    json_decref(o);
    return txt;
}

static void fill_table(struct salca_capture_result *res, const struct salca_capture_params *p)
{
    size_t off = 0, cap = sizeof res->table;
    off +=
        (size_t)snprintf(res->table + off, cap - off, "%-10s %7s %8s %8s %8s %8s %9s %9s %6s %8s\n",
                         "method", "jobs", "recall", "rec_p5", "cosine", "cos_p5", "retention",
                         "overshoot", "top1", "needles");
    for (int m = 0; m < SALCA_NSLOT && off < cap; m++) {
        const struct salca_capture_method *x = &res->m[m];
        if (!x->run)
            continue;
        char top1[16], nd[24];
        if (x->top1 >= 0)
            snprintf(top1, sizeof top1, "%.3f", x->top1);
        else
            snprintf(top1, sizeof top1, "-");
        if (x->spans_total)
            snprintf(nd, sizeof nd, "%u/%u", x->spans_recalled, x->spans_total);
        else
            snprintf(nd, sizeof nd, "-");
        off += (size_t)snprintf(res->table + off, cap - off,
                                "%-10s %7llu %8.4f %8.4f %8.4f %8.4f %8.3f%% %8.3f%% %6s %8s\n",
                                x->name, (unsigned long long)x->jobs, x->recall_mean, x->recall_p5,
                                x->cosine_mean, x->cosine_p5, 100 * x->retention_mean,
                                100 * x->overshoot_mean, top1, nd);
    }
    for (uint32_t v = 0; v < p->n_variants && off < cap; v++)
        off += (size_t)snprintf(res->table + off, cap - off, "abl%u: salca with %s\n", 16 + v,
                                p->variant_text[v]);
}

/* Writes one CSV row per (sample, method, layer) and one "all" row per method
 * (docs/salca.md#metrics aggregates). Job j of the arrays is (t, l, h) = (j / (L H), (j / H) mod L,
 * j mod H). */
static int write_csv(const struct salca_capture_params *p, const struct salca_task *task,
                     const struct cap *c, uint64_t jobs, double *const *rec, double *const *cos,
                     double *const *ret, double *const *over, struct errmsg *e)
{
    FILE *f = fopen(p->csv_path, "w");
    if (!f)
        return errmsg_set(e, ERR_IO, "cannot create '%s'", p->csv_path);
    double *buf = mem_alloc((jobs + 1) * 4 * sizeof(double));
    if (!buf) {
        fclose(f);
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    }
    fprintf(f, "sample,task,method,layer,jobs,recall_mean,recall_median,recall_p5,"
               "cosine_mean,cosine_median,cosine_p5,retention_mean,overshoot_mean\n");
    for (int m = 0; m < SALCA_NSLOT; m++) {
        if (!slot_on(p, m))
            continue;
        for (int64_t l = 0; l <= (int64_t)c->L; l++) { /* l == L: every layer */
            uint64_t k = 0;
            double *r = buf, *co = buf + jobs + 1, sr = 0, so = 0;
            for (uint64_t j = 0; j < jobs; j++) {
                if (l < (int64_t)c->L && (int64_t)((j / c->H) % c->L) != l)
                    continue;
                r[k] = rec[m][j];
                co[k] = cos[m][j];
                sr += ret[m][j];
                so += over[m][j];
                k++;
            }
            double rm, rmed, rp5, cm, cmed, cp5;
            stats(r, k, &rm, &rmed, &rp5);
            stats(co, k, &cm, &cmed, &cp5);
            char layer[24];
            if (l < (int64_t)c->L)
                snprintf(layer, sizeof layer, "%lld", (long long)l);
            else
                snprintf(layer, sizeof layer, "all");
            char name[16];
            slot_name(m, name, sizeof name);
            fprintf(f, "%u,%s,%s,%s,%llu,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f\n", p->sample,
                    task->info->name, name, layer, (unsigned long long)k, rm, rmed, rp5, cm, cmed,
                    cp5, k ? sr / k : 0, k ? so / k : 0);
        }
    }
    mem_free(buf);
    if (fclose(f) != 0)
        return errmsg_set(e, ERR_IO, "cannot write '%s'", p->csv_path);
    return 0;
}

/* ---- the capture: state and phases ---- */

/* Per-slot aggregates over the jobs (docs/salca.md#metrics). */
struct salca_acc {
    double *recall[SALCA_NSLOT], *cos[SALCA_NSLOT]; /* (N L H) per job */
    double *ret[SALCA_NSLOT], *over[SALCA_NSLOT];   /* (N L H) per job */
    double ret_sum[SALCA_NSLOT], over_sum[SALCA_NSLOT];
    uint64_t agree[SALCA_NSLOT]; /* substituted runs' top-1 agreements */
    double ldiff[SALCA_NSLOT], runlen_sum[SALCA_NSLOT];
    float cov_min[SALCA_NSLOT][MAX_NEEDLES];
    double cov_sum[SALCA_NSLOT][MAX_NEEDLES];
    uint64_t cov_n[MAX_NEEDLES];
    uint64_t jobs_done;
};

/* Storage behind the SalcaHeader. */
struct salca_hdr_store {
    Acceltrace__SalcaHeader sh;
    Acceltrace__SalcaSynthParams sy;
    Acceltrace__SalcaMethodInfo mi[SALCA_NSLOT], *mip[SALCA_NSLOT];
    Acceltrace__SalcaSpan *spans, **spp;
    char src_detail[1024];
};

/* One capture (capture_salca_ops instance). */
struct salca_capture {
    struct salca_capture_params p;
    double t_start;
    struct cap c;
    const struct salca_task_info *ti;
    struct salca_task task;
    struct salca_source *src;
    const struct nn_llama *mdl; /* the source's model; NULL for synthetic */
    bool subst_on;              /* substituted runs for top-1 agreement */
    uint32_t threads;
    uint64_t need; /* memory estimate (bytes) */
    struct subst sub[SALCA_NSLOT];
    struct salca_acc acc;
    uint32_t token; /* the next decode input token */
    char *pj, *mj;  /* params and model JSON (jansson's malloc) */
    struct salca_hdr_store hs;
    struct salca_capture_result res;
};

const struct salca_capture_result *salca_capture_result(const void *inst)
{
    return &((const struct salca_capture *)inst)->res;
}

/* The parameter checks that need no task or model. */
static int check_params(const struct salca_capture_params *p, struct errmsg *e)
{
    if (p->methods == 0 || (p->methods & ~ALL_METHODS))
        return errmsg_set(e, ERR_USAGE, "no valid method selected");
    if (p->sel.pool == 0 || p->sel.pool % 2 == 0)
        return errmsg_set(e, ERR_USAGE, "pool width %u must be odd", p->sel.pool);
    if (p->sel.rho.den == 0 || p->sel.rho.num == 0 || p->sel.rho.num > p->sel.rho.den)
        return errmsg_set(e, ERR_USAGE, "retention '%s' must be in (0, 1]", p->rho_text);
    if (p->quest_page == 0)
        return errmsg_set(e, ERR_USAGE, "quest page size must be positive");
    return 0;
}

/* Phase 1, the source: the model first (the task's token ids need its vocabulary), the
 * task, then the Q/K/V source and its dims. */
static int open_source(struct salca_capture *x, struct errmsg *e)
{
    const struct salca_capture_params *p = &x->p;
    struct nn_llama *model = NULL;
    int rc = 0;
    if (p->model) {
        if (p->checkpoint)
            rc = nn_llama_load(&model, p->checkpoint, e);
        else
            rc = nn_llama_new_tiny(&model, NULL, p->seed, p->tiny_outlier_pairs,
                                   (float)p->tiny_outlier_gain, e);
        if (rc)
            return rc;
    }
    struct salca_task_params tp;
    salca_task_params_default(&tp);
    tp.seed = p->seed;
    tp.sample = p->sample;
    tp.length = p->length;
    tp.max_len = p->max_len;
    tp.max_new = p->max_new;
    tp.vocab = model ? model->cfg.V : 4096;
    tp.c_needle = p->calibrated && !model ? p->calib.c_needle : p->synth.c_needle;
    rc = salca_task_generate(x->ti, &tp, &x->task, e);
    if (rc) {
        nn_llama_free(model);
        return rc;
    }
    x->c.n0 = x->task.n0;
    x->c.N = p->steps >= 0 ? (uint32_t)p->steps : x->task.n_steps;
    if (model) {
        rc = salca_source_open_model(&x->src, model, &x->task, e); /* owns model, even failed */
    } else if (p->calibrated) {
        struct nn_llama_config tiny;
        nn_llama_config_tiny(&tiny);
        rc = salca_source_open_calib(&x->src, &p->calib, p->layers ? p->layers : tiny.L,
                                     p->heads ? p->heads : tiny.H,
                                     p->kv_heads ? p->kv_heads : tiny.G,
                                     p->head_dim ? p->head_dim : tiny.d, p->seed, &x->task, e);
    } else {
        struct nn_llama_config tiny;
        nn_llama_config_tiny(&tiny);
        rc = salca_source_open_synth(&x->src, &p->synth, p->layers ? p->layers : tiny.L,
                                     p->heads ? p->heads : tiny.H,
                                     p->kv_heads ? p->kv_heads : tiny.G,
                                     p->head_dim ? p->head_dim : tiny.d, p->seed, &x->task, e);
    }
    return rc;
}

/* Memory as a real KV cache plus the compressed copies (docs/salca.md#synthetic-source last
 * paragraph). */
static uint64_t estimate(const struct salca_capture *x)
{
    const struct cap *c = &x->c;
    uint32_t n_methods = (uint32_t)__builtin_popcount(x->p.methods);
    uint64_t store = salca_kv_bytes(c->d, c->r, c->cap_tokens, x->p.quest_page);
    uint64_t need = store * c->L * c->G * (1 + (x->subst_on ? n_methods : 0)) +
                    (uint64_t)x->threads * c->cap_tokens * 64 + (uint64_t)c->n0 * c->d * 4;
    if (x->mdl)
        need += nn_llama_param_floats(&x->mdl->cfg) * 4ull + 2ull * c->L * c->G * c->n0 * c->d * 4 +
                256ull * c->n0 * 4;
    return need;
}

static void salca_close(void *inst);

static int salca_open(void **inst, const void *params, struct errmsg *e)
{
    struct salca_capture *x = mem_calloc(1, sizeof *x);
    *inst = x;
    if (!x)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    x->t_start = progress_now_s();
    x->p = *(const struct salca_capture_params *)params;
    x->c.p = &x->p;
    x->threads = x->p.threads < 1 ? 1 : (uint32_t)x->p.threads;
    int rc = check_params(&x->p, e);
    if (rc)
        return rc;
    x->ti = salca_task_find(x->p.task);
    if (!x->ti)
        return errmsg_set(e, ERR_USAGE, "unknown task '%s'", x->p.task);
    if ((rc = open_source(x, e)))
        return rc;
    struct cap *c = &x->c;
    salca_source_dims(x->src, &c->L, &c->H, &c->G, &c->d);
    c->r = c->d / 2; /* r = s_f d, s_f = 1/2 (docs/salca.md#notation) */
    c->cap_tokens = c->n0 + c->N + 1;
    x->mdl = salca_source_model(x->src);
    x->subst_on = x->mdl && x->p.top1;
    x->need = estimate(x);
    return 0;
}

static uint64_t salca_estimate(const void *inst)
{
    return ((const struct salca_capture *)inst)->need;
}

/* Phase 2a, the run's state: KV stores, scratch, queries, job results, pool, needles and
 * the per-slot accumulators. */
static int alloc_state(struct salca_capture *x, struct errmsg *e)
{
    const struct salca_capture_params *p = &x->p;
    struct cap *c = &x->c;
    int rc;
    c->kv = mem_calloc((size_t)c->L * c->G, sizeof *c->kv);
    c->sc = mem_calloc(x->threads, sizeof *c->sc);
    c->q = mem_alloc((size_t)c->L * c->H * c->d * sizeof(float));
    c->jr = mem_calloc((size_t)c->L * c->H * SALCA_NSLOT, sizeof *c->jr);
    if (!c->kv || !c->sc || !c->q || !c->jr)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    for (uint32_t i = 0; i < c->L * c->G; i++)
        if ((rc = salca_kv_init(&c->kv[i], c->d, c->r, c->cap_tokens, p->quest_page)))
            return errmsg_set(e, rc, "cannot allocate the KV stores");
    for (uint32_t i = 0; i < x->threads; i++)
        if ((rc = salca_scratch_init(&c->sc[i], c->cap_tokens, c->d, c->r, p->quest_page)))
            return errmsg_set(e, rc, "cannot allocate the selection scratch");
    c->pool = pool_new((int)x->threads);
    if (!c->pool)
        return errmsg_set(e, ERR_NOMEM, "cannot start %u threads", x->threads);
    for (uint32_t a = 0; a < x->task.n_spans && c->n_needles < MAX_NEEDLES; a++)
        if (x->task.spans[a].kind == SALCA_SPAN_NEEDLE || x->task.spans[a].kind == SALCA_SPAN_KEY)
            c->needles[c->n_needles++] = &x->task.spans[a];
    struct salca_acc *ac = &x->acc;
    for (int m = 0; m < SALCA_NSLOT; m++)
        for (int a = 0; a < MAX_NEEDLES; a++)
            ac->cov_min[m][a] = 1.0f;
    uint64_t total_jobs = (uint64_t)c->N * c->L * c->H;
    for (int m = 0; m < SALCA_NSLOT; m++)
        if (slot_on(p, m)) {
            ac->recall[m] = mem_alloc((total_jobs + 1) * sizeof(double));
            ac->cos[m] = mem_alloc((total_jobs + 1) * sizeof(double));
            ac->ret[m] = mem_alloc((total_jobs + 1) * sizeof(double));
            ac->over[m] = mem_alloc((total_jobs + 1) * sizeof(double));
            if (!ac->recall[m] || !ac->cos[m] || !ac->ret[m] || !ac->over[m])
                return errmsg_set(e, ERR_NOMEM, "out of memory");
        }
    return 0;
}

/* Phase 2: checks that need the dims, the state, the prefill, the variants' own heavy
 * channels from the same prefill sums (docs/salca.md#heavy-channels) and the header's JSON. */
static int salca_prepare(void *inst, struct errmsg *e)
{
    struct salca_capture *x = inst;
    const struct salca_capture_params *p = &x->p;
    struct cap *c = &x->c;
    int rc;
    /* the model's position limit (tiny: 65536, docs/salca.md#model-source); the synthetic source
     * has none */
    if (x->mdl && c->cap_tokens > x->mdl->cfg.max_pos + 1u)
        return errmsg_set(e, ERR_USAGE,
                          "context of %u tokens exceeds the model's maximum "
                          "position %u",
                          c->cap_tokens - 1, x->mdl->cfg.max_pos);
    if (p->n_variants > SALCA_MAX_VARIANTS)
        return errmsg_set(e, ERR_USAGE, "at most %d ablation variants", SALCA_MAX_VARIANTS);
    for (uint32_t v = 0; v < p->n_variants; v++)
        if ((rc = salca_variant_parse(p->variant_text[v], c->d, &c->var[v], e)))
            return rc;
    if ((rc = alloc_state(x, e)))
        return rc;
    if ((rc = salca_source_prefill(x->src, c->kv, &x->token, e)))
        return rc;
    if (p->n_variants) {
        c->vheavy = mem_calloc((size_t)p->n_variants * c->L * c->G, 256);
        if (!c->vheavy)
            return errmsg_set(e, ERR_NOMEM, "out of memory");
        for (uint32_t v = 0; v < p->n_variants; v++)
            for (uint32_t i = 0; i < c->L * c->G; i++)
                salca_heavy_select(c->kv[i].chan_sum, c->d, c->var[v].r,
                                   c->vheavy + ((size_t)v * c->L * c->G + i) * 256);
    }
    x->pj =
        params_json(p, &x->task, c->N,
                    p->calibrated && !p->model ? calib_json(p, x->src, c->L, c->H, c->G) : NULL);
    x->mj = model_json(p, c->L, c->H, c->G, c->d, x->mdl);
    if (!x->pj || !x->mj)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    return 0;
}

/* The SalcaHeader's methods, synthetic parameters and spans. */
static void header_lists(struct salca_capture *x, Acceltrace__SalcaHeader *sh)
{
    const struct salca_capture_params *p = &x->p;
    struct salca_hdr_store *hs = &x->hs;
    size_t nm = 0;
    for (int m = 0; m < SALCA_NSLOT; m++) {
        if (!slot_on(p, m))
            continue;
        acceltrace__salca_method_info__init(&hs->mi[nm]);
        hs->mi[nm].id = slot_id(m);
        hs->mi[nm].name = (char *)(m < SALCA_M_COUNT ? salca_method_name(m) : "salca");
        hs->mi[nm].params = (char *)(m < SALCA_M_COUNT ? "" : p->variant_text[m - SALCA_M_COUNT]);
        hs->mip[nm] = &hs->mi[nm];
        nm++;
    }
    sh->n_methods = nm;
    sh->methods = hs->mip;
    if (!x->mdl && !p->calibrated) {
        const struct salca_synth_params *s = &p->synth;
        Acceltrace__SalcaSynthParams *sy = &hs->sy;
        acceltrace__salca_synth_params__init(sy);
        sy->heavy_pairs = s->heavy_pairs;
        sy->heavy_band_lo = s->heavy_band_lo ? s->heavy_band_lo : x->c.d / 4;
        sy->gain_median = s->gain_median;
        sy->gain_sigma = s->gain_sigma;
        sy->heavy_mean = s->heavy_mean;
        sy->head_spread = s->head_spread;
        sy->query_jitter = s->query_jitter;
        sy->logit_std = s->logit_std;
        sy->sink_tokens = s->sink_tokens;
        sy->c_sink = s->c_sink;
        sy->c_loc = s->c_loc;
        sy->tau_loc = s->tau_loc;
        sy->c_needle = s->c_needle;
        sy->early_layer_scale = s->early_layer_scale;
        sy->early_layers = s->early_layers;
        sh->synth = sy;
    }
    for (uint32_t a = 0; a < x->task.n_spans; a++) {
        acceltrace__salca_span__init(&hs->spans[a]);
        hs->spans[a].start = x->task.spans[a].start;
        hs->spans[a].len = x->task.spans[a].len;
        hs->spans[a].kind = x->task.spans[a].kind;
        hs->spp[a] = &hs->spans[a];
    }
    sh->n_spans = x->task.n_spans;
    sh->spans = hs->spp;
}

/* Phase 3, the header (TraceHeader.salca; the common fields come from the driver). */
/* The provenance fields of the header (trace.proto TraceHeader.source). */
static void salca_provenance(struct salca_capture *x, Acceltrace__TraceHeader *hdr)
{
    const struct salca_capture_params *p = &x->p;
    char *d = x->hs.src_detail;
    size_t n = sizeof x->hs.src_detail;
    if (!p->model && p->calibrated) {
        const struct salca_calib_params *cp = &p->calib;
        hdr->source = "synthetic-calibrated";
        snprintf(d, n,
                 "calibrated Q/K/V source (capture/salca/salca_calibrated): Llama-3.1-8B-Instruct "
                 "per-head structure, retrieval_frac %g, sinks %u (c %g), local %u (c %g), "
                 "stream window %u, logit std %g, c_needle %g, seed %llu, task %s; derived from "
                 "%s",
                 cp->retrieval_frac, cp->sink_tokens, cp->c_sink, cp->local_tokens, cp->c_local,
                 cp->stream_window, cp->logit_std, cp->c_needle, (unsigned long long)p->seed,
                 x->ti->name, salca_calib_sources);
    } else if (!p->model) {
        hdr->source = "synthetic";
        snprintf(d, n, "synthetic Q/K/V source (capture/salca/salca_source), seed %llu, task %s",
                 (unsigned long long)p->seed, x->ti->name);
    } else if (!p->checkpoint) {
        hdr->source = "seeded";
        snprintf(d, n, "tiny Llama with weights from the generator, seed %llu, task %s",
                 (unsigned long long)p->seed, x->ti->name);
    } else {
        /* the checkpoint is a directory (nn_llama_load): digest the files that define it */
        static const char *const files[] = {"config.json", "model.safetensors",
                                            "model.safetensors.index.json"};
        hdr->source = "checkpoint";
        size_t o = (size_t)snprintf(d, n, "%s (task %s)", p->checkpoint, x->ti->name);
        for (size_t i = 0; i < sizeof files / sizeof files[0] && o < n; i++) {
            char path[4096], hex[65];
            snprintf(path, sizeof path, "%s/%s", p->checkpoint, files[i]);
            struct errmsg ign = {0};
            if (access(path, R_OK) || sha256_file(path, hex, &ign))
                continue;
            o += (size_t)snprintf(d + o, n - o, "; %s sha256 %s", files[i], hex);
        }
    }
    hdr->source_detail = d;
}

static int salca_header(void *inst, Acceltrace__TraceHeader *hdr, struct errmsg *e)
{
    struct salca_capture *x = inst;
    const struct salca_capture_params *p = &x->p;
    const struct cap *c = &x->c;
    struct salca_hdr_store *hs = &x->hs;
    mem_free(hs->spans);
    mem_free(hs->spp);
    hs->spans = mem_calloc(x->task.n_spans + 1, sizeof *hs->spans);
    hs->spp = mem_calloc(x->task.n_spans + 1, sizeof *hs->spp);
    if (!hs->spans || !hs->spp)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    Acceltrace__SalcaHeader *sh = &hs->sh;
    acceltrace__salca_header__init(sh);
    hdr->params_json = x->pj;
    hdr->model_json = x->mj;
    hdr->seed = p->seed;
    sh->source = p->model ? "model" : p->calibrated ? "calibrated" : "synthetic";
    sh->checkpoint = (char *)(p->checkpoint ? p->checkpoint : "");
    sh->tiny_seed = p->seed;
    sh->n_layers = c->L;
    sh->n_heads = c->H;
    sh->n_kv_heads = c->G;
    sh->head_dim = c->d;
    sh->s_f_num = 1;
    sh->s_f_den = 2;
    sh->r = c->r;
    sh->pool = p->sel.pool;
    sh->k_mode = (char *)k_rule_name(p->sel.k_mode);
    sh->rho = (char *)p->rho_text;
    sh->rho_num = p->sel.rho.num;
    sh->rho_den = p->sel.rho.den;
    sh->k_min = p->sel.k_min;
    sh->p_mass = p->sel.p_mass;
    sh->threshold_cmp = p->sel.cmp == SALCA_CMP_GT ? "gt" : "ge";
    sh->attn_precision = p->sel.attn_fp32 ? "fp32" : "int8";
    sh->task_family = (char *)salca_family_name(x->ti->family);
    sh->task_name = (char *)x->ti->name;
    sh->sample = p->sample;
    sh->n_raw = x->task.n_raw;
    sh->n0 = x->task.n0;
    sh->n_steps = c->N;
    sh->max_ctx = p->max_len;
    sh->truncated_tokens = x->task.truncated;
    sh->lost_spans = x->task.lost_spans;
    header_lists(x, sh);
    sh->rope_theta = x->mdl ? x->mdl->cfg.rope_theta : 10000.0;
    sh->rope_factor = x->mdl ? x->mdl->cfg.rope_factor : 1.0;
    sh->quest_page = p->quest_page;
    sh->no_hist = p->no_hist;
    hdr->salca = sh;
    salca_provenance(x, hdr);
    return 0;
}

/* Phase 4a, the SalcaPrefill records, one per (l, g). */
static int emit_prefill(struct salca_capture *x, struct capture_sink *sink, struct errmsg *e)
{
    const struct cap *c = &x->c;
    int rc = 0;
    for (uint32_t l = 0; l < c->L && !rc; l++)
        for (uint32_t g = 0; g < c->G && !rc; g++) {
            const struct salca_kv *kv = &c->kv[l * c->G + g];
            float cs[256];
            for (uint32_t j = 0; j < c->d; j++)
                cs[j] = (float)kv->chan_sum[j];
            Acceltrace__SalcaPrefill pf = ACCELTRACE__SALCA_PREFILL__INIT;
            pf.l = l;
            pf.g = g;
            pf.n0 = c->n0;
            pf.heavy.data = (uint8_t *)kv->heavy;
            pf.heavy.len = c->r;
            pf.n_chan_sum = c->d;
            pf.chan_sum = cs;
            /* heavy-set stability snapshots (docs/salca.md#figures plot 7), r bytes per ladder
             * entry */
            uint8_t ph[SALCA_PREFIX_MAX * 256];
            for (uint32_t a = 0; a < kv->n_prefix; a++)
                memcpy(ph + (size_t)a * c->r, kv->prefix_heavy[a], c->r);
            pf.n_prefix_len = kv->n_prefix;
            pf.prefix_len = (uint32_t *)kv->prefix_len;
            pf.prefix_heavy.data = ph;
            pf.prefix_heavy.len = (size_t)kv->n_prefix * c->r;
            Acceltrace__Record rec = ACCELTRACE__RECORD__INIT;
            rec.body_case = ACCELTRACE__RECORD__BODY_SALCA_PREFILL;
            rec.salca_prefill = &pf;
            rc = capture_emit(sink, &rec, NULL, e);
        }
    return rc;
}

/* Phase 4b, the substituted runs start from the dense prefill (docs/salca.md#metrics). */
static int subst_setup(struct salca_capture *x, struct errmsg *e)
{
    struct cap *c = &x->c;
    for (int m = 0; m < SALCA_NSLOT; m++) {
        if (!slot_on(&x->p, m))
            continue;
        x->sub[m].c = c;
        x->sub[m].method = m;
        x->sub[m].kv = mem_calloc((size_t)c->L * c->G, sizeof *x->sub[m].kv);
        if (!x->sub[m].kv)
            return errmsg_set(e, ERR_NOMEM, "out of memory");
        for (uint32_t i = 0; i < c->L * c->G; i++) {
            int rc = salca_kv_copy(&x->sub[m].kv[i], &c->kv[i]);
            if (rc)
                return errmsg_set(e, rc, "out of memory for the substituted runs");
        }
    }
    return 0;
}

/* Adds job result r of slot m (layer l, context n) to the aggregates at job index j. */
static void acc_add(struct salca_capture *x, int m, uint32_t l, uint32_t n, uint64_t j,
                    const struct job_res *r)
{
    struct salca_acc *a = &x->acc;
    a->recall[m][j] = r->recall;
    a->cos[m][j] = r->cosine;
    a->ret_sum[m] += (double)r->count / n;
    a->over_sum[m] += ((double)r->count - r->K) / n;
    a->ret[m][j] = (double)r->count / n;
    a->runlen_sum[m] += r->runs ? (double)r->count / r->runs : 0.0;
    a->over[m][j] = ((double)r->count - r->K) / n;
    bool counted = x->mdl || l >= x->p.synth.early_layers;
    for (uint32_t i = 0; i < x->c.n_needles && counted; i++) {
        if (r->cov[i] < a->cov_min[m][i])
            a->cov_min[m][i] = r->cov[i];
        a->cov_sum[m][i] += r->cov[i];
    }
}

/* Phase 4c, the SalcaSelect records of decode step t, per (l, h, method) in that order. */
static int emit_selects(struct salca_capture *x, uint32_t t, struct capture_sink *sink,
                        struct errmsg *e)
{
    const struct cap *c = &x->c;
    uint32_t n = c->n0 + t + 1;
    int rc = 0;
    for (uint32_t l = 0; l < c->L && !rc; l++)
        for (uint32_t h = 0; h < c->H && !rc; h++) {
            size_t j = (size_t)l * c->H + h;
            for (int m = 0; m < SALCA_NSLOT && !rc; m++) {
                if (!slot_on(&x->p, m))
                    continue;
                struct job_res *r = &c->jr[j * SALCA_NSLOT + m];
                Acceltrace__SalcaSelect s = ACCELTRACE__SALCA_SELECT__INIT;
                s.t = t;
                s.l = l;
                s.h = h;
                s.g = h * c->G / c->H;
                s.method = slot_id(m);
                s.n_ctx = n;
                s.k = r->K;
                s.threshold = r->T;
                s.count = r->count;
                s.sel.data = r->sel.data;
                s.sel.len = r->sel.len;
                s.recall = r->recall;
                s.cosine = r->cosine;
                s.overshoot = (int64_t)r->count - (int64_t)r->K;
                s.runs = r->runs;
                s.overlap = r->overlap;
                if (r->has_hist) {
                    s.n_hist = 256;
                    s.hist = r->hist;
                }
                Acceltrace__Record rec = ACCELTRACE__RECORD__INIT;
                rec.body_case = ACCELTRACE__RECORD__BODY_SALCA_SELECT;
                rec.salca_select = &s;
                if ((rc = capture_emit(sink, &rec, NULL, e)))
                    break;
                x->res.selects++;
                x->res.sel_bytes += r->sel.len;
                acc_add(x, m, l, n, x->acc.jobs_done, r);
            }
            if (x->mdl || l >= x->p.synth.early_layers)
                for (uint32_t a = 0; a < c->n_needles; a++)
                    x->acc.cov_n[a]++;
            x->acc.jobs_done++;
        }
    return rc;
}

/* Phase 4d, the substituted runs of step t (teacher-forced: the dense input token, each
 * method's own cache) and their SalcaToken record; next is the dense run's token. */
static int emit_token(struct salca_capture *x, uint32_t t, uint32_t next, float *logits,
                      struct capture_sink *sink, struct errmsg *e)
{
    const struct nn_llama *mdl = x->mdl;
    Acceltrace__SalcaToken tk = ACCELTRACE__SALCA_TOKEN__INIT;
    uint32_t ids[SALCA_NSLOT], toks[SALCA_NSLOT];
    size_t k = 0;
    int rc = 0;
    for (int m = 0; m < SALCA_NSLOT && !rc; m++) {
        if (!slot_on(&x->p, m))
            continue;
        rc = nn_llama_decode(mdl, NULL, x->c.n0 + t, x->token, subst_hook, &x->sub[m], logits, e);
        ids[k] = slot_id(m);
        toks[k] = rc ? 0 : nn_llama_argmax(logits, mdl->cfg.V);
        const float *dl = salca_source_logits(x->src);
        double md = 0, mx = 0;
        for (uint32_t i = 0; i < mdl->cfg.V && !rc; i++) {
            md = fmax(md, fabs((double)logits[i] - dl[i]));
            mx = fmax(mx, fabs((double)dl[i]));
        }
        if (mx > 0 && md / mx > x->acc.ldiff[m])
            x->acc.ldiff[m] = md / mx;
        x->acc.agree[m] += toks[k] == next;
        k++;
    }
    if (rc)
        return rc;
    tk.t = t;
    tk.dense_token = next;
    tk.n_methods = k;
    tk.methods = ids;
    tk.n_tokens = k;
    tk.tokens = toks;
    Acceltrace__Record rec = ACCELTRACE__RECORD__INIT;
    rec.body_case = ACCELTRACE__RECORD__BODY_SALCA_TOKEN;
    rec.salca_token = &tk;
    return capture_emit(sink, &rec, NULL, e);
}

/* Phase 4, the decode steps: source step, the selection jobs on the pool, their records
 * and the substituted runs. */
static int decode_steps(struct salca_capture *x, struct capture_sink *sink, struct errmsg *e)
{
    struct cap *c = &x->c;
    int rc = 0;
    capture_progress_begin(sink, c->N);
    float *logits = x->mdl ? mem_alloc(x->mdl->cfg.V * sizeof(float)) : NULL;
    if (x->mdl && !logits)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    for (uint32_t t = 0; t < c->N && !rc; t++) {
        uint32_t next = 0;
        if ((rc = salca_source_step(x->src, t, x->token, c->kv, c->q, &next, e)))
            break;
        c->enc_err = 0;
        pool_for(c->pool, (size_t)c->L * c->H, job_worker, c);
        if (c->enc_err) {
            rc = errmsg_set(e, c->enc_err, "cannot encode a selection");
            break;
        }
        if ((rc = emit_selects(x, t, sink, e)))
            break;
        if (x->subst_on && (rc = emit_token(x, t, next, logits, sink, e)))
            break;
        x->token = next;
        capture_progress_update(sink, t + 1);
    }
    mem_free(logits);
    capture_progress_end(sink);
    return rc;
}

/* Phase 5a, one slot's aggregates into the result and its SalcaMethodSummary. */
static void summarize_slot(struct salca_capture *x, int m, Acceltrace__SalcaMethodSummary *ms)
{
    struct salca_acc *a = &x->acc;
    const struct cap *c = &x->c;
    uint64_t jobs = a->jobs_done;
    struct salca_capture_method *r = &x->res.m[m];
    r->run = true;
    r->id = slot_id(m);
    slot_name(m, r->name, sizeof r->name);
    r->jobs = jobs;
    stats(a->recall[m], jobs, &r->recall_mean, &r->recall_median, &r->recall_p5);
    stats(a->cos[m], jobs, &r->cosine_mean, &r->cosine_median, &r->cosine_p5);
    r->recall_min = jobs ? a->recall[m][0] : 0; /* sorted by stats() */
    r->cosine_min = jobs ? a->cos[m][0] : 0;
    r->retention_mean = jobs ? a->ret_sum[m] / jobs : 0;
    r->overshoot_mean = jobs ? a->over_sum[m] / jobs : 0;
    r->top1 = x->subst_on && c->N ? (double)a->agree[m] / c->N : -1.0;
    r->logit_diff = x->subst_on ? a->ldiff[m] : -1.0;
    r->spans_total = c->n_needles;
    r->span_coverage_min = 1.0;
    r->span_mass_mean = 1.0;
    for (uint32_t i = 0; i < c->n_needles; i++) {
        /* a needle span counts as recalled when the jobs keep on average >= 90% of its
         * dense attention mass (layers >= early_layers for synthetic) */
        double mean = a->cov_n[i] ? a->cov_sum[m][i] / a->cov_n[i] : 1.0;
        r->spans_recalled += mean >= 0.9;
        if (mean < r->span_mass_mean)
            r->span_mass_mean = mean;
        if (a->cov_min[m][i] < r->span_coverage_min)
            r->span_coverage_min = a->cov_min[m][i];
    }
    acceltrace__salca_method_summary__init(ms);
    ms->method = slot_id(m);
    ms->name = r->name;
    ms->jobs = r->jobs;
    ms->recall_mean = r->recall_mean;
    ms->recall_median = r->recall_median;
    ms->recall_p5 = r->recall_p5;
    ms->cosine_mean = r->cosine_mean;
    ms->cosine_median = r->cosine_median;
    ms->cosine_p5 = r->cosine_p5;
    ms->retention_mean = r->retention_mean;
    ms->overshoot_mean = r->overshoot_mean;
    ms->top1_agreement = r->top1;
    ms->spans_total = r->spans_total;
    ms->spans_recalled = r->spans_recalled;
    ms->runs_mean_len = jobs ? a->runlen_sum[m] / jobs : 0.0;
}

/* Phase 5, the summary (docs/salca.md#metrics aggregates): the CSV, the result and the Summary
 * record. */
static int emit_summary(struct salca_capture *x, struct capture_sink *sink, struct errmsg *e)
{
    struct salca_capture_result *res = &x->res;
    const struct cap *c = &x->c;
    res->n0 = c->n0;
    res->n_raw = x->task.n_raw;
    res->steps = c->N;
    res->L = c->L;
    res->H = c->H;
    res->G = c->G;
    res->d = c->d;
    if (x->p.csv_path) {
        int rc = write_csv(&x->p, &x->task, c, x->acc.jobs_done, x->acc.recall, x->acc.cos,
                           x->acc.ret, x->acc.over, e);
        if (rc)
            return rc;
    }
    Acceltrace__SalcaMethodSummary ms[SALCA_NSLOT], *msp[SALCA_NSLOT];
    size_t nm = 0;
    for (int m = 0; m < SALCA_NSLOT; m++) {
        if (!slot_on(&x->p, m))
            continue;
        summarize_slot(x, m, &ms[nm]);
        msp[nm] = &ms[nm];
        nm++;
    }
    fill_table(res, &x->p);
    res->wall_seconds = progress_now_s() - x->t_start;
    Acceltrace__SalcaSummary ss = ACCELTRACE__SALCA_SUMMARY__INIT;
    ss.n_methods = nm;
    ss.methods = msp;
    ss.selects = res->selects;
    ss.sel_bytes = res->sel_bytes;
    ss.table = res->table;
    Acceltrace__Summary sm = ACCELTRACE__SUMMARY__INIT;
    sm.workload = (char *)capture_salca_ops.name;
    /* wall time stays out of the record so equal runs give equal bytes (the determinism check) */
    sm.wall_seconds = 0;
    sm.salca = &ss;
    Acceltrace__Record rec = ACCELTRACE__RECORD__INIT;
    rec.body_case = ACCELTRACE__RECORD__BODY_SUMMARY;
    rec.summary = &sm;
    return capture_emit(sink, &rec, NULL, e);
}

/* The records after the header: prefill, per step selects and token, then the summary. */
static int salca_run(void *inst, struct capture_sink *sink, struct errmsg *e)
{
    struct salca_capture *x = inst;
    int rc = emit_prefill(x, sink, e);
    if (!rc && x->subst_on)
        rc = subst_setup(x, e);
    if (!rc)
        rc = decode_steps(x, sink, e);
    if (!rc)
        rc = emit_summary(x, sink, e);
    return rc;
}

static void salca_close(void *inst)
{
    struct salca_capture *x = inst;
    if (!x)
        return;
    struct cap *c = &x->c;
    for (int m = 0; m < SALCA_NSLOT; m++) {
        if (x->sub[m].kv) {
            for (uint32_t i = 0; i < c->L * c->G; i++)
                salca_kv_release(&x->sub[m].kv[i]);
            mem_free(x->sub[m].kv);
        }
        mem_free(x->acc.recall[m]);
        mem_free(x->acc.ret[m]);
        mem_free(x->acc.over[m]);
        mem_free(x->acc.cos[m]);
    }
    if (c->kv)
        for (uint32_t i = 0; i < c->L * c->G; i++)
            salca_kv_release(&c->kv[i]);
    if (c->sc)
        for (uint32_t i = 0; i < x->threads; i++)
            salca_scratch_release(&c->sc[i]);
    if (c->jr)
        for (size_t i = 0; i < (size_t)c->L * c->H * SALCA_NSLOT; i++)
            buf_release(&c->jr[i].sel);
    mem_free(c->kv);
    mem_free(c->vheavy);
    mem_free(c->sc);
    mem_free(c->q);
    mem_free(c->jr);
    pool_free(c->pool);
    salca_source_free(x->src);
    salca_task_release(&x->task);
    free(x->pj); /* jansson's json_dumps uses malloc */
    free(x->mj);
    mem_free(x->hs.spans);
    mem_free(x->hs.spp);
    mem_free(x);
}

const struct capture_ops capture_salca_ops = {
    .name = "salca",
    .summary = "long-context decode with Salca token selection and baselines",
    .mem_hint = "use a shorter --length or raise --mem-limit",
    .open = salca_open,
    .mem_estimate = salca_estimate,
    .prepare = salca_prepare,
    .header = salca_header,
    .run = salca_run,
    .close = salca_close,
};

int salca_capture_run(const struct salca_capture_params *p, const char *out_path,
                      struct salca_capture_result *res, struct errmsg *e)
{
    memset(res, 0, sizeof *res);
    struct capture_opts o;
    capture_opts_default(&o);
    o.zstd_level = p->zstd_level;
    o.mem_limit_bytes = p->mem_limit_bytes;
    o.quiet = p->quiet;
    o.command_line = p->command_line;
    o.utc_time = p->utc_time ? p->utc_time : "";
    void *inst = NULL;
    int rc = capture_salca_ops.open(&inst, p, e);
    if (!rc)
        rc = capture_run(&capture_salca_ops, inst, out_path, &o, e);
    if (inst)
        *res = *salca_capture_result(inst);
    capture_salca_ops.close(inst);
    return rc;
}
