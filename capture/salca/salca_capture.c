/*
 * salca_capture: the capture driver of specs/salca.md sections 3-8 (see the header).
 */
#include "capture/salca/salca_capture.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
#include "traces/trace_writer.h"

#define ALL_METHODS                                                                       \
    ((1u << SALCA_M_SALCA) | (1u << SALCA_M_STD_TOPK) | (1u << SALCA_M_PL_TOPK) |          \
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

int salca_variant_parse(const char *spec, uint32_t d, struct salca_variant *v,
                        struct errmsg *e)
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
                return errmsg_set(e, ERR_USAGE, "ablation %s '%s' must be a decimal in (0, 1]",
                                  key, val);
            if (!strcmp(key, "rho")) {
                v->rho = r;
            } else {
                if (((uint64_t)d * r.num) % r.den)
                    return errmsg_set(e, ERR_USAGE, "s_f %s times d = %u is not an integer",
                                      val, d);
                v->r = (uint32_t)((uint64_t)d * r.num / r.den);
            }
        } else {
            return errmsg_set(e, ERR_USAGE, "bad ablation item '%s=%s' (w_k 1-4, w_q 2-4 or "
                              "fp32, s_f, pool odd, rho)", key, val);
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
    float cov[MAX_NEEDLES];     /* share of each needle span's dense mass selected */
};

struct cap {
    const struct salca_capture_params *p;
    uint32_t L, H, G, d, r, n0, N, cap_tokens;
    struct salca_kv *kv;            /* (L*G) dense-run stores */
    struct salca_scratch *sc;       /* (threads) */
    struct thread_pool *pool;
    float *q;                       /* (L*H*d) queries of the step */
    struct job_res *jr;             /* (L*H*SALCA_NSLOT) */
    uint8_t *vheavy;                /* (variants, L*G, 256) heavy channels per variant */
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

/* Substituted run of one method (spec 7, top-1 agreement): per-method stores. */
struct subst {
    struct cap *c;
    int method;                     /* slot */
    struct salca_kv *kv;            /* (L*G) this run's own decode-time cache */
};

static void subst_hook(void *ctx, uint32_t l, const float *q, const float *k, const float *v,
                       float *out)
{
    struct subst *s = ctx;
    struct cap *c = s->c;
    struct salca_method_res res[SALCA_M_COUNT];
    for (uint32_t g = 0; g < c->G; g++)
        (void)salca_kv_append(&s->kv[l * c->G + g], k + (size_t)g * c->d,
                              v + (size_t)g * c->d);
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

static char *params_json(const struct salca_capture_params *p, const struct salca_task *t,
                         uint32_t N)
{
    json_t *o = json_object();
    const struct salca_synth_params *s = &p->synth;
    json_object_set_new(o, "source", json_string(p->model ? "model" : "synthetic"));
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
    json_object_set_new(o, "k_rule", json_string(p->sel.k_mode == SALCA_K_DYNAMIC ? "dynamic"
                                                                                 : "fixed"));
    json_object_set_new(o, "p_mass", json_real(p->sel.p_mass));
    json_object_set_new(o, "pool", json_integer(p->sel.pool));
    json_object_set_new(o, "threshold_cmp", json_string(p->sel.cmp == SALCA_CMP_GT ? "gt"
                                                                                  : "ge"));
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
    char *txt = json_dumps(o, JSON_SORT_KEYS | JSON_COMPACT);
    json_decref(o);
    return txt;
}

static char *model_json(const struct salca_capture_params *p, uint32_t L, uint32_t H,
                        uint32_t G, uint32_t d, const struct nn_llama *m)
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
    off += (size_t)snprintf(res->table + off, cap - off,
                            "%-10s %7s %8s %8s %8s %8s %9s %9s %6s %8s\n", "method", "jobs",
                            "recall", "rec_p5", "cosine", "cos_p5", "retention", "overshoot",
                            "top1", "needles");
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
                                x->name, (unsigned long long)x->jobs,
                                x->recall_mean, x->recall_p5, x->cosine_mean, x->cosine_p5,
                                100 * x->retention_mean, 100 * x->overshoot_mean, top1, nd);
    }
    for (uint32_t v = 0; v < p->n_variants && off < cap; v++)
        off += (size_t)snprintf(res->table + off, cap - off, "abl%u: salca with %s\n", 16 + v,
                                p->variant_text[v]);
}

/* Writes one CSV row per (sample, method, layer) and one "all" row per method (spec 7
 * aggregates). Job j of the arrays is (t, l, h) = (j / (L H), (j / H) mod L, j mod H). */
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
            fprintf(f, "%u,%s,%s,%s,%llu,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f\n",
                    p->sample, task->info->name, name, layer,
                    (unsigned long long)k, rm, rmed, rp5, cm, cmed, cp5, k ? sr / k : 0,
                    k ? so / k : 0);
        }
    }
    mem_free(buf);
    if (fclose(f) != 0)
        return errmsg_set(e, ERR_IO, "cannot write '%s'", p->csv_path);
    return 0;
}

int salca_capture_run(const struct salca_capture_params *p, const char *out_path,
                      struct salca_capture_result *res, struct errmsg *e)
{
    double t_start = progress_now_s();
    memset(res, 0, sizeof *res);
    struct cap c = {.p = p};
    struct salca_task task = {0};
    struct salca_source *src = NULL;
    struct nn_llama *model = NULL;
    struct trace_writer *w = NULL;
    struct subst sub[SALCA_NSLOT] = {{0}};
    double *acc_recall[SALCA_NSLOT] = {0}, *acc_cos[SALCA_NSLOT] = {0};
    double *acc_ret[SALCA_NSLOT] = {0}, *acc_over[SALCA_NSLOT] = {0};
    double ret_sum[SALCA_NSLOT] = {0}, over_sum[SALCA_NSLOT] = {0};
    uint64_t agree[SALCA_NSLOT] = {0};
    double ldiff[SALCA_NSLOT] = {0}, runlen_sum[SALCA_NSLOT] = {0};
    float cov_min[SALCA_NSLOT][MAX_NEEDLES];
    double cov_sum[SALCA_NSLOT][MAX_NEEDLES] = {{0}};
    uint64_t cov_n[MAX_NEEDLES] = {0};
    char *pj = NULL, *mj = NULL;
    uint32_t *sub_tokens = NULL;
    int rc = 0;
    uint32_t threads = p->threads < 1 ? 1 : (uint32_t)p->threads;

    if (p->methods == 0 || (p->methods & ~ALL_METHODS))
        return errmsg_set(e, ERR_USAGE, "no valid method selected");
    if (p->sel.pool == 0 || p->sel.pool % 2 == 0)
        return errmsg_set(e, ERR_USAGE, "pool width %u must be odd", p->sel.pool);
    if (p->sel.rho.den == 0 || p->sel.rho.num == 0 || p->sel.rho.num > p->sel.rho.den)
        return errmsg_set(e, ERR_USAGE, "retention '%s' must be in (0, 1]", p->rho_text);
    if (p->quest_page == 0)
        return errmsg_set(e, ERR_USAGE, "quest page size must be positive");

    const struct salca_task_info *ti = salca_task_find(p->task);
    if (!ti)
        return errmsg_set(e, ERR_USAGE, "unknown task '%s'", p->task);

    /* model first: the task's token ids need its vocabulary */
    if (p->model) {
        if (p->checkpoint)
            rc = nn_llama_load(&model, p->checkpoint, e);
        else
            rc = nn_llama_new_tiny(&model, NULL, p->seed, p->tiny_outlier_pairs,
                                   (float)p->tiny_outlier_gain, e);
        if (rc)
            goto fail;
    }
    struct salca_task_params tp;
    salca_task_params_default(&tp);
    tp.seed = p->seed;
    tp.sample = p->sample;
    tp.length = p->length;
    tp.max_len = p->max_len;
    tp.max_new = p->max_new;
    tp.vocab = model ? model->cfg.V : 4096;
    tp.c_needle = p->synth.c_needle;
    rc = salca_task_generate(ti, &tp, &task, e);
    if (rc)
        goto fail;
    c.n0 = task.n0;
    c.N = p->steps >= 0 ? (uint32_t)p->steps : task.n_steps;
    if (model) {
        rc = salca_source_open_model(&src, model, &task, e);
        model = NULL; /* owned by the source now, even on failure */
    } else {
        struct nn_llama_config tiny;
        nn_llama_config_tiny(&tiny);
        rc = salca_source_open_synth(&src, &p->synth, p->layers ? p->layers : tiny.L,
                                     p->heads ? p->heads : tiny.H,
                                     p->kv_heads ? p->kv_heads : tiny.G,
                                     p->head_dim ? p->head_dim : tiny.d, p->seed, &task, e);
    }
    if (rc)
        goto fail;
    salca_source_dims(src, &c.L, &c.H, &c.G, &c.d);
    c.r = c.d / 2; /* r = s_f d, s_f = 1/2 (spec 2) */
    c.cap_tokens = c.n0 + c.N + 1;
    const struct nn_llama *mdl = salca_source_model(src);
    bool subst_on = mdl && p->top1;
    uint32_t n_methods = (uint32_t)__builtin_popcount(p->methods);

    /* memory as a real KV cache plus the compressed copies (spec 3.3 last paragraph) */
    uint64_t store = salca_kv_bytes(c.d, c.r, c.cap_tokens, p->quest_page);
    uint64_t need = store * c.L * c.G * (1 + (subst_on ? n_methods : 0)) +
                    (uint64_t)threads * c.cap_tokens * 64 + (uint64_t)c.n0 * c.d * 4;
    if (mdl)
        need += nn_llama_param_floats(&mdl->cfg) * 4ull +
                2ull * c.L * c.G * c.n0 * c.d * 4 + 256ull * c.n0 * 4;
    if (need > p->mem_limit_bytes) {
        rc = mem_budget_refuse(e, "capture salca", need, p->mem_limit_bytes,
                               "use a shorter --length or raise --mem-limit");
        goto fail;
    }
    /* the model's position limit (tiny: 65536, spec 3.2); the synthetic source has none */
    if (mdl && c.cap_tokens > mdl->cfg.max_pos + 1u) {
        rc = errmsg_set(e, ERR_USAGE, "context of %u tokens exceeds the model's maximum "
                        "position %u", c.cap_tokens - 1, mdl->cfg.max_pos);
        goto fail;
    }

    if (p->n_variants > SALCA_MAX_VARIANTS) {
        rc = errmsg_set(e, ERR_USAGE, "at most %d ablation variants", SALCA_MAX_VARIANTS);
        goto fail;
    }
    for (uint32_t v = 0; v < p->n_variants; v++)
        if ((rc = salca_variant_parse(p->variant_text[v], c.d, &c.var[v], e)))
            goto fail;
    c.kv = mem_calloc((size_t)c.L * c.G, sizeof *c.kv);
    c.sc = mem_calloc(threads, sizeof *c.sc);
    c.q = mem_alloc((size_t)c.L * c.H * c.d * sizeof(float));
    c.jr = mem_calloc((size_t)c.L * c.H * SALCA_NSLOT, sizeof *c.jr);
    if (!c.kv || !c.sc || !c.q || !c.jr) {
        rc = errmsg_set(e, ERR_NOMEM, "out of memory");
        goto fail;
    }
    for (uint32_t i = 0; i < c.L * c.G; i++)
        if ((rc = salca_kv_init(&c.kv[i], c.d, c.r, c.cap_tokens, p->quest_page))) {
            errmsg_set(e, rc, "cannot allocate the KV stores");
            goto fail;
        }
    for (uint32_t i = 0; i < threads; i++)
        if ((rc = salca_scratch_init(&c.sc[i], c.cap_tokens, c.d, c.r, p->quest_page))) {
            errmsg_set(e, rc, "cannot allocate the selection scratch");
            goto fail;
        }
    c.pool = pool_new((int)threads);
    if (!c.pool) {
        rc = errmsg_set(e, ERR_NOMEM, "cannot start %u threads", threads);
        goto fail;
    }
    for (uint32_t a = 0; a < task.n_spans && c.n_needles < MAX_NEEDLES; a++)
        if (task.spans[a].kind == SALCA_SPAN_NEEDLE || task.spans[a].kind == SALCA_SPAN_KEY)
            c.needles[c.n_needles++] = &task.spans[a];
    for (int m = 0; m < SALCA_NSLOT; m++)
        for (int a = 0; a < MAX_NEEDLES; a++)
            cov_min[m][a] = 1.0f;

    uint64_t total_jobs = (uint64_t)c.N * c.L * c.H;
    for (int m = 0; m < SALCA_NSLOT; m++)
        if (slot_on(p, m)) {
            acc_recall[m] = mem_alloc((total_jobs + 1) * sizeof(double));
            acc_cos[m] = mem_alloc((total_jobs + 1) * sizeof(double));
            acc_ret[m] = mem_alloc((total_jobs + 1) * sizeof(double));
            acc_over[m] = mem_alloc((total_jobs + 1) * sizeof(double));
            if (!acc_recall[m] || !acc_cos[m] || !acc_ret[m] || !acc_over[m]) {
                rc = errmsg_set(e, ERR_NOMEM, "out of memory");
                goto fail;
            }
        }

    /* prefill */
    uint32_t token = 0;
    rc = salca_source_prefill(src, c.kv, &token, e);
    if (rc)
        goto fail;
    /* ablation variants: their own heavy channels from the same prefill sums (spec 5.1) */
    if (p->n_variants) {
        c.vheavy = mem_calloc((size_t)p->n_variants * c.L * c.G, 256);
        if (!c.vheavy) {
            rc = errmsg_set(e, ERR_NOMEM, "out of memory");
            goto fail;
        }
        for (uint32_t v = 0; v < p->n_variants; v++)
            for (uint32_t i = 0; i < c.L * c.G; i++)
                salca_heavy_select(c.kv[i].chan_sum, c.d, c.var[v].r,
                                   c.vheavy + ((size_t)v * c.L * c.G + i) * 256);
    }

    /* header */
    pj = params_json(p, &task, c.N);
    mj = model_json(p, c.L, c.H, c.G, c.d, mdl);
    if (!pj || !mj) {
        rc = errmsg_set(e, ERR_NOMEM, "out of memory");
        goto fail;
    }
    {
        Acceltrace__TraceHeader hdr = ACCELTRACE__TRACE_HEADER__INIT;
        Acceltrace__SalcaHeader sh = ACCELTRACE__SALCA_HEADER__INIT;
        Acceltrace__SalcaSynthParams sy = ACCELTRACE__SALCA_SYNTH_PARAMS__INIT;
        Acceltrace__SalcaMethodInfo mi[SALCA_NSLOT], *mip[SALCA_NSLOT];
        Acceltrace__SalcaSpan *spans = mem_calloc(task.n_spans + 1, sizeof *spans);
        Acceltrace__SalcaSpan **spp = mem_calloc(task.n_spans + 1, sizeof *spp);
        if (!spans || !spp) {
            mem_free(spans);
            mem_free(spp);
            rc = errmsg_set(e, ERR_NOMEM, "out of memory");
            goto fail;
        }
        char hash[65], prod[64];
        struct sha256 sh256;
        uint8_t dg[32];
        sha256_init(&sh256);
        sha256_update(&sh256, pj, strlen(pj));
        sha256_update(&sh256, mj, strlen(mj));
        sha256_final(&sh256, dg);
        sha256_to_hex(dg, hash);
        snprintf(prod, sizeof prod, "acceltrace 0.1.0");
        hdr.producer = prod;
        hdr.workload = "salca";
        hdr.params_json = pj;
        hdr.model_json = mj;
        hdr.seed = p->seed;
        hdr.command_line = (char *)(p->command_line ? p->command_line : "");
        hdr.utc_time = (char *)(p->utc_time ? p->utc_time : "");
        hdr.params_hash = hash;
        sh.source = p->model ? "model" : "synthetic";
        sh.checkpoint = (char *)(p->checkpoint ? p->checkpoint : "");
        sh.tiny_seed = p->seed;
        sh.n_layers = c.L;
        sh.n_heads = c.H;
        sh.n_kv_heads = c.G;
        sh.head_dim = c.d;
        sh.s_f_num = 1;
        sh.s_f_den = 2;
        sh.r = c.r;
        sh.pool = p->sel.pool;
        sh.k_mode = p->sel.k_mode == SALCA_K_DYNAMIC ? "dynamic" : "fixed";
        sh.rho = (char *)p->rho_text;
        sh.rho_num = p->sel.rho.num;
        sh.rho_den = p->sel.rho.den;
        sh.k_min = p->sel.k_min;
        sh.p_mass = p->sel.p_mass;
        sh.threshold_cmp = p->sel.cmp == SALCA_CMP_GT ? "gt" : "ge";
        sh.attn_precision = p->sel.attn_fp32 ? "fp32" : "int8";
        sh.task_family = (char *)salca_family_name(ti->family);
        sh.task_name = (char *)ti->name;
        sh.sample = p->sample;
        sh.n_raw = task.n_raw;
        sh.n0 = task.n0;
        sh.n_steps = c.N;
        sh.max_ctx = p->max_len;
        sh.truncated_tokens = task.truncated;
        sh.lost_spans = task.lost_spans;
        size_t nm = 0;
        for (int m = 0; m < SALCA_NSLOT; m++) {
            if (!slot_on(p, m))
                continue;
            acceltrace__salca_method_info__init(&mi[nm]);
            mi[nm].id = slot_id(m);
            mi[nm].name = (char *)(m < SALCA_M_COUNT ? salca_method_name(m) : "salca");
            mi[nm].params = (char *)(m < SALCA_M_COUNT ? "" : p->variant_text[m - SALCA_M_COUNT]);
            mip[nm] = &mi[nm];
            nm++;
        }
        sh.n_methods = nm;
        sh.methods = mip;
        if (!mdl) {
            const struct salca_synth_params *s = &p->synth;
            sy.heavy_pairs = s->heavy_pairs;
            sy.heavy_band_lo = s->heavy_band_lo ? s->heavy_band_lo : c.d / 4;
            sy.gain_median = s->gain_median;
            sy.gain_sigma = s->gain_sigma;
            sy.heavy_mean = s->heavy_mean;
            sy.head_spread = s->head_spread;
            sy.query_jitter = s->query_jitter;
            sy.logit_std = s->logit_std;
            sy.sink_tokens = s->sink_tokens;
            sy.c_sink = s->c_sink;
            sy.c_loc = s->c_loc;
            sy.tau_loc = s->tau_loc;
            sy.c_needle = s->c_needle;
            sy.early_layer_scale = s->early_layer_scale;
            sy.early_layers = s->early_layers;
            sh.synth = &sy;
        }
        for (uint32_t a = 0; a < task.n_spans; a++) {
            acceltrace__salca_span__init(&spans[a]);
            spans[a].start = task.spans[a].start;
            spans[a].len = task.spans[a].len;
            spans[a].kind = task.spans[a].kind;
            spp[a] = &spans[a];
        }
        sh.n_spans = task.n_spans;
        sh.spans = spp;
        sh.rope_theta = mdl ? mdl->cfg.rope_theta : 10000.0;
        sh.rope_factor = mdl ? mdl->cfg.rope_factor : 1.0;
        sh.quest_page = p->quest_page;
        sh.no_hist = p->no_hist;
        hdr.salca = &sh;
        struct trace_writer_opts wo;
        trace_writer_opts_default(&wo);
        wo.zstd_level = p->zstd_level;
        char et[512] = "";
        rc = trace_writer_open(&w, out_path, &wo, &hdr, et, sizeof et);
        mem_free(spans);
        mem_free(spp);
        if (rc) {
            errmsg_set(e, rc, "%s", et);
            goto fail;
        }
    }

    /* prefill records */
    for (uint32_t l = 0; l < c.L && !rc; l++)
        for (uint32_t g = 0; g < c.G && !rc; g++) {
            const struct salca_kv *kv = &c.kv[l * c.G + g];
            float cs[256];
            for (uint32_t j = 0; j < c.d; j++)
                cs[j] = (float)kv->chan_sum[j];
            Acceltrace__SalcaPrefill pf = ACCELTRACE__SALCA_PREFILL__INIT;
            pf.l = l;
            pf.g = g;
            pf.n0 = c.n0;
            pf.heavy.data = (uint8_t *)kv->heavy;
            pf.heavy.len = c.r;
            pf.n_chan_sum = c.d;
            pf.chan_sum = cs;
            /* heavy-set stability snapshots (spec 12 plot 7), r bytes per ladder entry */
            uint8_t ph[SALCA_PREFIX_MAX * 256];
            for (uint32_t a = 0; a < kv->n_prefix; a++)
                memcpy(ph + (size_t)a * c.r, kv->prefix_heavy[a], c.r);
            pf.n_prefix_len = kv->n_prefix;
            pf.prefix_len = (uint32_t *)kv->prefix_len;
            pf.prefix_heavy.data = ph;
            pf.prefix_heavy.len = (size_t)kv->n_prefix * c.r;
            Acceltrace__Record rec = ACCELTRACE__RECORD__INIT;
            rec.body_case = ACCELTRACE__RECORD__BODY_SALCA_PREFILL;
            rec.salca_prefill = &pf;
            rc = trace_writer_append(w, &rec, NULL);
        }
    if (rc) {
        errmsg_set(e, rc, "%s", trace_writer_errmsg(w));
        goto fail;
    }

    /* substituted runs start from the dense prefill (spec 7) */
    if (subst_on) {
        sub_tokens = mem_calloc(SALCA_NSLOT, sizeof *sub_tokens);
        if (!sub_tokens) {
            rc = errmsg_set(e, ERR_NOMEM, "out of memory");
            goto fail;
        }
        for (int m = 0; m < SALCA_NSLOT; m++) {
            if (!slot_on(p, m))
                continue;
            sub[m].c = &c;
            sub[m].method = m;
            sub[m].kv = mem_calloc((size_t)c.L * c.G, sizeof *sub[m].kv);
            if (!sub[m].kv) {
                rc = errmsg_set(e, ERR_NOMEM, "out of memory");
                goto fail;
            }
            for (uint32_t i = 0; i < c.L * c.G; i++)
                if ((rc = salca_kv_copy(&sub[m].kv[i], &c.kv[i]))) {
                    errmsg_set(e, rc, "out of memory for the substituted runs");
                    goto fail;
                }
        }
    }

    struct progress pr;
    progress_init(&pr, "salca capture", c.N, p->quiet);
    uint64_t jobs_done = 0;
    float *logits = mdl ? mem_alloc(mdl->cfg.V * sizeof(float)) : NULL;
    if (mdl && !logits) {
        rc = errmsg_set(e, ERR_NOMEM, "out of memory");
        goto fail;
    }
    for (uint32_t t = 0; t < c.N && !rc; t++) {
        uint32_t next = 0;
        rc = salca_source_step(src, t, token, c.kv, c.q, &next, e);
        if (rc)
            break;
        c.enc_err = 0;
        pool_for(c.pool, (size_t)c.L * c.H, job_worker, &c);
        if (c.enc_err) {
            rc = errmsg_set(e, c.enc_err, "cannot encode a selection");
            break;
        }
        uint32_t n = c.n0 + t + 1;
        for (uint32_t l = 0; l < c.L && !rc; l++)
            for (uint32_t h = 0; h < c.H && !rc; h++) {
                size_t j = (size_t)l * c.H + h;
                for (int m = 0; m < SALCA_NSLOT && !rc; m++) {
                    if (!slot_on(p, m))
                        continue;
                    struct job_res *x = &c.jr[j * SALCA_NSLOT + m];
                    Acceltrace__SalcaSelect s = ACCELTRACE__SALCA_SELECT__INIT;
                    s.t = t;
                    s.l = l;
                    s.h = h;
                    s.g = h * c.G / c.H;
                    s.method = slot_id(m);
                    s.n_ctx = n;
                    s.k = x->K;
                    s.threshold = x->T;
                    s.count = x->count;
                    s.sel.data = x->sel.data;
                    s.sel.len = x->sel.len;
                    s.recall = x->recall;
                    s.cosine = x->cosine;
                    s.overshoot = (int64_t)x->count - (int64_t)x->K;
                    s.runs = x->runs;
                    s.overlap = x->overlap;
                    if (x->has_hist) {
                        s.n_hist = 256;
                        s.hist = x->hist;
                    }
                    Acceltrace__Record rec = ACCELTRACE__RECORD__INIT;
                    rec.body_case = ACCELTRACE__RECORD__BODY_SALCA_SELECT;
                    rec.salca_select = &s;
                    rc = trace_writer_append(w, &rec, NULL);
                    if (rc) {
                        errmsg_set(e, rc, "%s", trace_writer_errmsg(w));
                        break;
                    }
                    res->selects++;
                    res->sel_bytes += x->sel.len;
                    acc_recall[m][jobs_done] = x->recall;
                    acc_cos[m][jobs_done] = x->cosine;
                    ret_sum[m] += (double)x->count / n;
                    over_sum[m] += ((double)x->count - x->K) / n;
                    acc_ret[m][jobs_done] = (double)x->count / n;
                    runlen_sum[m] += x->runs ? (double)x->count / x->runs : 0.0;
                    acc_over[m][jobs_done] = ((double)x->count - x->K) / n;
                    bool counted = mdl || l >= p->synth.early_layers;
                    for (uint32_t a = 0; a < c.n_needles && counted; a++) {
                        if (x->cov[a] < cov_min[m][a])
                            cov_min[m][a] = x->cov[a];
                        cov_sum[m][a] += x->cov[a];
                    }
                }
                if (mdl || l >= p->synth.early_layers)
                    for (uint32_t a = 0; a < c.n_needles; a++)
                        cov_n[a]++;
                jobs_done++;
            }
        if (rc)
            break;
        if (subst_on) {
            Acceltrace__SalcaToken tk = ACCELTRACE__SALCA_TOKEN__INIT;
            uint32_t ids[SALCA_NSLOT], toks[SALCA_NSLOT];
            size_t k = 0;
            for (int m = 0; m < SALCA_NSLOT && !rc; m++) {
                if (!slot_on(p, m))
                    continue;
                /* teacher-forced: the dense input token, the method's own cache */
                rc = nn_llama_decode(mdl, NULL, c.n0 + t, token, subst_hook, &sub[m], logits,
                                     e);
                ids[k] = slot_id(m);
                toks[k] = rc ? 0 : nn_llama_argmax(logits, mdl->cfg.V);
                const float *dl = salca_source_logits(src);
                double md = 0, mx = 0;
                for (uint32_t i = 0; i < mdl->cfg.V && !rc; i++) {
                    md = fmax(md, fabs((double)logits[i] - dl[i]));
                    mx = fmax(mx, fabs((double)dl[i]));
                }
                if (mx > 0 && md / mx > ldiff[m])
                    ldiff[m] = md / mx;
                agree[m] += toks[k] == next;
                k++;
            }
            if (rc)
                break;
            tk.t = t;
            tk.dense_token = next;
            tk.n_methods = k;
            tk.methods = ids;
            tk.n_tokens = k;
            tk.tokens = toks;
            Acceltrace__Record rec = ACCELTRACE__RECORD__INIT;
            rec.body_case = ACCELTRACE__RECORD__BODY_SALCA_TOKEN;
            rec.salca_token = &tk;
            rc = trace_writer_append(w, &rec, NULL);
            if (rc) {
                errmsg_set(e, rc, "%s", trace_writer_errmsg(w));
                break;
            }
        }
        token = next;
        progress_update(&pr, t + 1);
    }
    mem_free(logits);
    progress_finish(&pr);
    if (rc)
        goto fail;

    /* summary (spec 7 aggregates) */
    res->n0 = c.n0;
    res->n_raw = task.n_raw;
    res->steps = c.N;
    res->L = c.L;
    res->H = c.H;
    res->G = c.G;
    res->d = c.d;
    if (p->csv_path) {
        rc = write_csv(p, &task, &c, jobs_done, acc_recall, acc_cos, acc_ret, acc_over, e);
        if (rc)
            goto fail;
    }
    {
        Acceltrace__SalcaMethodSummary ms[SALCA_NSLOT], *msp[SALCA_NSLOT];
        size_t nm = 0;
        for (int m = 0; m < SALCA_NSLOT; m++) {
            if (!slot_on(p, m))
                continue;
            struct salca_capture_method *x = &res->m[m];
            x->run = true;
            x->id = slot_id(m);
            slot_name(m, x->name, sizeof x->name);
            x->jobs = jobs_done;
            stats(acc_recall[m], jobs_done, &x->recall_mean, &x->recall_median,
                  &x->recall_p5);
            stats(acc_cos[m], jobs_done, &x->cosine_mean, &x->cosine_median, &x->cosine_p5);
            x->recall_min = jobs_done ? acc_recall[m][0] : 0; /* sorted by stats() */
            x->cosine_min = jobs_done ? acc_cos[m][0] : 0;
            x->retention_mean = jobs_done ? ret_sum[m] / jobs_done : 0;
            x->overshoot_mean = jobs_done ? over_sum[m] / jobs_done : 0;
            x->top1 = subst_on && c.N ? (double)agree[m] / c.N : -1.0;
            x->logit_diff = subst_on ? ldiff[m] : -1.0;
            x->spans_total = c.n_needles;
            x->span_coverage_min = 1.0;
            x->span_mass_mean = 1.0;
            for (uint32_t a = 0; a < c.n_needles; a++) {
                /* a needle span counts as recalled when the jobs keep on average >= 90% of
                 * its dense attention mass (layers >= early_layers for synthetic) */
                double mean = cov_n[a] ? cov_sum[m][a] / cov_n[a] : 1.0;
                x->spans_recalled += mean >= 0.9;
                if (mean < x->span_mass_mean)
                    x->span_mass_mean = mean;
                if (cov_min[m][a] < x->span_coverage_min)
                    x->span_coverage_min = cov_min[m][a];
            }
            acceltrace__salca_method_summary__init(&ms[nm]);
            ms[nm].method = slot_id(m);
            ms[nm].name = x->name;
            ms[nm].jobs = x->jobs;
            ms[nm].recall_mean = x->recall_mean;
            ms[nm].recall_median = x->recall_median;
            ms[nm].recall_p5 = x->recall_p5;
            ms[nm].cosine_mean = x->cosine_mean;
            ms[nm].cosine_median = x->cosine_median;
            ms[nm].cosine_p5 = x->cosine_p5;
            ms[nm].retention_mean = x->retention_mean;
            ms[nm].overshoot_mean = x->overshoot_mean;
            ms[nm].top1_agreement = x->top1;
            ms[nm].spans_total = x->spans_total;
            ms[nm].spans_recalled = x->spans_recalled;
            ms[nm].runs_mean_len = jobs_done ? runlen_sum[m] / jobs_done : 0.0;
            msp[nm] = &ms[nm];
            nm++;
        }
        fill_table(res, p);
        res->wall_seconds = progress_now_s() - t_start;
        Acceltrace__SalcaSummary ss = ACCELTRACE__SALCA_SUMMARY__INIT;
        ss.n_methods = nm;
        ss.methods = msp;
        ss.selects = res->selects;
        ss.sel_bytes = res->sel_bytes;
        ss.table = res->table;
        Acceltrace__Summary sm = ACCELTRACE__SUMMARY__INIT;
        sm.workload = "salca";
        /* wall time stays out of the record so equal runs give equal bytes (A14) */
        sm.wall_seconds = 0;
        sm.salca = &ss;
        Acceltrace__Record rec = ACCELTRACE__RECORD__INIT;
        rec.body_case = ACCELTRACE__RECORD__BODY_SUMMARY;
        rec.summary = &sm;
        rc = trace_writer_append(w, &rec, NULL);
        if (!rc)
            rc = trace_writer_finish(w);
        if (rc) {
            errmsg_set(e, rc, "%s", trace_writer_errmsg(w));
            goto fail;
        }
    }

fail:
    trace_writer_free(w);
    for (int m = 0; m < SALCA_NSLOT; m++) {
        if (sub[m].kv) {
            for (uint32_t i = 0; i < c.L * c.G; i++)
                salca_kv_release(&sub[m].kv[i]);
            mem_free(sub[m].kv);
        }
        mem_free(acc_recall[m]);
        mem_free(acc_ret[m]);
        mem_free(acc_over[m]);
        mem_free(acc_cos[m]);
    }
    mem_free(sub_tokens);
    if (c.kv)
        for (uint32_t i = 0; i < c.L * c.G; i++)
            salca_kv_release(&c.kv[i]);
    if (c.sc)
        for (uint32_t i = 0; i < threads; i++)
            salca_scratch_release(&c.sc[i]);
    if (c.jr)
        for (size_t i = 0; i < (size_t)c.L * c.H * SALCA_NSLOT; i++)
            buf_release(&c.jr[i].sel);
    mem_free(c.kv);
    mem_free(c.vheavy);
    mem_free(c.sc);
    mem_free(c.q);
    mem_free(c.jr);
    pool_free(c.pool);
    salca_source_free(src);
    nn_llama_free(model);
    salca_task_release(&task);
    free(pj); /* jansson's json_dumps uses malloc */
    free(mj);
    return rc;
}
