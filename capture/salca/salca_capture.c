/*
 * salca_capture: the capture driver of docs/salca.md (see the header).
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

static void plan_item(struct salca_mem_plan *pl, const char *name, const char *precision,
                      uint64_t total, uint64_t held, const char *where)
{
    if (pl->n_items < SALCA_MEM_ITEMS)
        pl->item[pl->n_items++] = (struct salca_mem_item){name, precision, total, held, where};
    pl->held_bytes += held;
    pl->all_bytes += total;
}

/* The memory plan: a real KV cache plus the compressed copies (docs/salca.md#synthetic-source
 * last paragraph), every layer's or, in the layer-major plan, one layer's; the scratch, the
 * aggregates, the RoPE table and the base keys are the same in both plans. */
static void make_plan(struct salca_capture *x)
{
    const struct cap *c = &x->c;
    struct salca_mem_plan *pl = &x->plan;
    *pl =
        (struct salca_mem_plan){.layer_major = c->layer_major, .limit_bytes = x->p.mem_limit_bytes};
    uint32_t n_methods = (uint32_t)__builtin_popcount(x->p.methods);
    uint64_t n_slots = n_methods + x->p.n_variants;
    uint64_t store = salca_kv_bytes(c->d, c->r, c->cap_tokens, x->p.quest_page) * c->G *
                     (1 + (x->subst_on ? n_methods : 0));
    plan_item(pl, "kv stores", "f32 + int8", store * c->L, store * (c->layer_major ? 1 : c->L),
              c->layer_major ? "memory, one layer at a time" : "memory");
    uint64_t step = (uint64_t)x->threads * c->cap_tokens * 64 + (uint64_t)c->n0 * c->d * 4;
    plan_item(pl, "selection scratch, query", "mixed", step, step, "memory");
    /* recall, cosine, retention, overshoot and run length of every job and slot */
    uint64_t agg = (uint64_t)c->N * c->L * c->H * 5 * 8 * n_slots;
    plan_item(pl, "job aggregates", "f64", agg, agg, "memory");
    if (!x->mdl) { /* the RoPE table (kept for the run), each worker's base keys and boosts */
        uint64_t pre = (1ull + x->threads) * c->n0 * c->d * 4 +
                       (uint64_t)x->threads * c->n0 * (c->H / c->G) * 4;
        plan_item(pl, "rope table, base keys", "f32", pre, pre, "memory");
    } else {
        uint64_t w = nn_llama_param_floats(&x->mdl->cfg) * 4ull;
        uint64_t act = 2ull * c->L * c->G * c->n0 * c->d * 4 + 256ull * c->n0 * 4;
        plan_item(pl, "model weights", "f32", w, w, "memory");
        plan_item(pl, "model prefill activations", "f32", act, act, "memory");
    }
    pl->fits = !pl->limit_bytes || pl->held_bytes <= pl->limit_bytes;
    x->need = pl->held_bytes;
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
    c->n_l = c->L;
    make_plan(x);
    /* the layer-major plan when asked for, or when every layer's stores would not fit the
     * memory limit; the model source runs its layers in sequence and cannot
     * (docs/models.md#salca-memory-plan) */
    if (!x->mdl && (x->p.layer_major || (x->p.mem_limit_bytes && x->need > x->p.mem_limit_bytes))) {
        c->layer_major = true;
        c->n_l = 1;
        make_plan(x);
    }
    return 0;
}

const struct salca_mem_plan *salca_capture_mem_plan(const void *inst)
{
    return &((const struct salca_capture *)inst)->plan;
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
    c->kv = mem_calloc((size_t)c->n_l * c->G, sizeof *c->kv);
    c->sc = mem_calloc(x->threads, sizeof *c->sc);
    c->q = mem_alloc((size_t)c->n_l * c->H * c->d * sizeof(float));
    c->jr = mem_calloc((size_t)c->n_l * c->H * SALCA_NSLOT, sizeof *c->jr);
    if (!c->kv || !c->sc || !c->q || !c->jr)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    for (uint32_t i = 0; i < c->G * c->n_l && !c->layer_major; i++)
        if ((rc = salca_kv_init(&c->kv[i], c->d, c->r, c->cap_tokens, p->quest_page)))
            return errmsg_set(e, rc, "cannot allocate the KV stores");
    for (uint32_t i = 0; i < x->threads; i++)
        if ((rc = salca_scratch_init(&c->sc[i], c->cap_tokens, c->d, c->r, p->quest_page)))
            return errmsg_set(e, rc, "cannot allocate the selection scratch");
    c->pool = pool_new((int)x->threads);
    if (!c->pool)
        return errmsg_set(e, ERR_NOMEM, "cannot start %u threads", x->threads);
    salca_source_set_pool(x->src, c->pool);
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
            ac->runlen[m] = mem_alloc((total_jobs + 1) * sizeof(double));
            if (!ac->recall[m] || !ac->cos[m] || !ac->ret[m] || !ac->over[m] || !ac->runlen[m])
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
    /* the layer-major plan generates each layer in run() */
    if (!c->layer_major && (rc = salca_source_prefill(x->src, c->kv, &x->token, e)))
        return rc;
    if (p->n_variants) {
        c->vheavy = mem_calloc((size_t)p->n_variants * c->L * c->G, 256);
        if (!c->vheavy)
            return errmsg_set(e, ERR_NOMEM, "out of memory");
        for (uint32_t v = 0; v < p->n_variants && !c->layer_major; v++)
            for (uint32_t i = 0; i < c->L * c->G; i++)
                salca_heavy_select(c->kv[i].chan_sum, c->d, c->var[v].r,
                                   c->vheavy + ((size_t)v * c->L * c->G + i) * 256);
    }
    json_t *cal = p->calibrated && !p->model ? salca_calib_json(p, x->src, c->L, c->H, c->G) : NULL;
    if (c->layer_major)
        x->pj_final =
            salca_params_json(p, &x->task, c->N, SALCA_PJ_LAYER_MAJOR_FINAL, json_incref(cal));
    x->pj =
        salca_params_json(p, &x->task, c->N,
                          c->layer_major ? SALCA_PJ_LAYER_MAJOR_PARTIAL : SALCA_PJ_STEP_MAJOR, cal);
    x->mj = salca_model_json(p, c->L, c->H, c->G, c->d, x->mdl);
    if (!x->pj || !x->mj || (c->layer_major && !x->pj_final))
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
        mem_free(x->acc.runlen[m]);
        mem_free(x->acc.cos[m]);
    }
    if (c->kv)
        for (uint32_t i = 0; i < c->n_l * c->G; i++)
            salca_kv_release(&c->kv[i]);
    if (c->sc)
        for (uint32_t i = 0; i < x->threads; i++)
            salca_scratch_release(&c->sc[i]);
    if (c->jr)
        for (size_t i = 0; i < (size_t)c->n_l * c->H * SALCA_NSLOT; i++)
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
    free(x->pj_final);
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
    .checkpoint_save = salca_ckpt_save,
    .checkpoint_load = salca_ckpt_load,
    .final_order = salca_final_order,
};
