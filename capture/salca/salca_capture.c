/*
 * salca_capture: the capture driver of specs/salca.md sections 3-8 (see the header).
 */
#include "capture/salca/salca_capture_impl.h"

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

/* ---- the capture: state and phases ---- */

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

/* Memory as a real KV cache plus the compressed copies (spec 3.3 last paragraph). */
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
    c->r = c->d / 2; /* r = s_f d, s_f = 1/2 (spec 2) */
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
 * channels from the same prefill sums (spec 5.1) and the header's JSON. */
static int salca_prepare(void *inst, struct errmsg *e)
{
    struct salca_capture *x = inst;
    const struct salca_capture_params *p = &x->p;
    struct cap *c = &x->c;
    int rc;
    /* the model's position limit (tiny: 65536, spec 3.2); the synthetic source has none */
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
        salca_params_json(p, &x->task, c->N,
                    p->calibrated && !p->model ? salca_calib_json(p, x->src, c->L, c->H, c->G) : NULL);
    x->mj = salca_model_json(p, c->L, c->H, c->G, c->d, x->mdl);
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
            /* heavy-set stability snapshots (spec 12 plot 7), r bytes per ladder entry */
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

/* Phase 4b, the substituted runs start from the dense prefill (spec 7). */
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
        rc = salca_emit_summary(x, sink, e);
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
