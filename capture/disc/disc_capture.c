/*
 * disc_capture: runs the DiT sampler with CTR and ST for real and writes the DiSC records
 * (specs/disc.md 2-6). See disc_capture.h for the call sequence.
 */
#include "capture/disc/disc_capture.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/disc/disc_ctr.h"
#include "capture/disc/disc_inputs.h"
#include "capture/disc/disc_keep.h"
#include "capture/disc/disc_models.h"
#include "capture/disc/disc_png.h"
#include "capture/disc/dit.h"
#include "capture/nn/nn.h"
#include "common/mem.h"
#include "common/progress.h"
#include "common/rng.h"
#include "common/sha256.h"
#include "common/threads.h"
#include "formats/disc_hash.h"

struct disc_capture {
    struct disc_params p;
    struct dit_config cfg;
    int K, B;
    double mem_est;
    struct disc_mem_plan plan;
    uint64_t tgt_num;
    int tgt_frac;
    uint64_t n_prune;
    struct disc_keep keep;
    struct dit_model *model;
    float *text;   /* (B, T, D_c) */
    float *x_init; /* (C_in, H, W) */
    struct dit_schedule sched;
    struct thread_pool *pool;
    struct disc_lb *lb;
    disc_record_fn hook;
    void *hook_ctx;
    bool progress;
    bool loaded;
    /* header storage */
    Acceltrace__TraceHeader hdr;
    Acceltrace__DiscHeader dh;
    char *params_json, *model_json;
    char weights_source[64], text_source[512], text_sha[65];
    char null_source[512], null_sha[65];
    char src_detail[2048];
    char *wfiles[DISC_MAX_WEIGHT_FILES], *wsha[DISC_MAX_WEIGHT_FILES];
    char shipped_path[4096], shipped_sha[65]; /* disc_models: trained-small's own weights */
    char *lb_names[DISC_HASH_KINDS], *flop_names[DISC_F_COUNT];
    uint32_t lb_units[DISC_LB_STD_UNITS];
    struct disc_result res;
};

void disc_params_default(struct disc_params *p)
{
    memset(p, 0, sizeof *p);
    snprintf(p->model, sizeof p->model, "tiny");
    p->sampler = DIT_SAMPLER_DPM2M;
    p->text_seed = 1;
    p->class_label = DISC_CLASS_DEFAULT;
    p->ctr = DISC_CTR_TARGET;
    snprintf(p->ctr_target, sizeof p->ctr_target, "0.40");
    p->st = DISC_ST_ALPHA;
    p->st_alpha = 1.0f;
    p->st_refresh = 2;
    snprintf(p->keep_masks, sizeof p->keep_masks, "none");
    p->compare_dense = true;
    p->mem_limit_bytes = 16.0 * 1073741824.0;
}

/* ---- metrics (spec 5) ---- */

double disc_cosine(const float *x, const float *ref, size_t n)
{
    double xy = 0.0, xx = 0.0, yy = 0.0;
    for (size_t i = 0; i < n; i++) {
        xy += (double)x[i] * ref[i];
        xx += (double)x[i] * x[i];
        yy += (double)ref[i] * ref[i];
    }
    return xy / sqrt(xx * yy);
}

double disc_psnr(const float *x, const float *ref, size_t n)
{
    double mn = INFINITY, mx = -INFINITY, se = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)x[i] - ref[i];
        se += d * d;
        mn = ref[i] < mn ? ref[i] : mn;
        mx = ref[i] > mx ? ref[i] : mx;
    }
    if (se == 0.0)
        return INFINITY;
    double mse = se / (double)n;
    return 10.0 * log10((mx - mn) * (mx - mn) / mse);
}

double disc_rel_err(const float *x, const float *ref, size_t n)
{
    double e = 0.0, r = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)x[i] - ref[i];
        e += d * d;
        r += (double)ref[i] * ref[i];
    }
    return sqrt(e) / sqrt(r);
}

int disc_parse_mem(const char *s, double *bytes)
{
    /* spec 2.1: digits, optionally a point and digits, then the unit (no sign, exponent,
     * hex or white space, which strtod alone would accept) */
    const char *q = s;
    while (*q >= '0' && *q <= '9')
        q++;
    bool int_digits = q > s;
    if (*q == '.') {
        const char *f = ++q;
        while (*q >= '0' && *q <= '9')
            q++;
        if (q == f)
            return ERR_USAGE;
    }
    if (!int_digits)
        return ERR_USAGE;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end != q || errno || !(v >= 0) || isinf(v))
        return ERR_USAGE;
    static const struct {
        const char *u;
        double f;
    } units[] = {{"", 1},     {"B", 1},        {"KB", 1e3},        {"MB", 1e6},
                 {"GB", 1e9}, {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (!strcmp(end, units[i].u)) {
            *bytes = v * units[i].f;
            return 0;
        }
    return ERR_USAGE;
}

/* ---- setup ---- */

int disc_capture_new(struct disc_capture **out, const struct disc_params *p, struct errmsg *e)
{
    int rc;
    struct disc_capture *c = mem_calloc(1, sizeof *c);
    *out = NULL;
    if (!c)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    c->p = *p;
    rc = dit_config_get(&c->cfg, p->model, p->image_size, e);
    if (rc)
        goto fail;
    c->K = p->steps ? p->steps : c->cfg.default_steps;
    if (c->K < 1 || c->K > 1000) {
        rc = errmsg_set(e, ERR_USAGE, "steps %d out of range (1..1000)", c->K);
        goto fail;
    }
    c->B = p->cfg_on ? 2 : 1;
    if (c->cfg.class_cond && (p->text_file || p->null_text_file)) {
        rc = errmsg_set(e, ERR_USAGE,
                        "model '%s' is class-conditional: use a class label, not "
                        "--text or --null-text",
                        c->cfg.name);
        goto fail;
    }
    if (c->cfg.class_cond && (p->class_label < 0 || p->class_label >= c->cfg.classes)) {
        rc = errmsg_set(e, ERR_USAGE, "class label %d out of range (0..%d)", p->class_label,
                        c->cfg.classes - 1);
        goto fail;
    }
    if (p->ctr == DISC_CTR_TARGET) {
        rc = disc_ctr_parse_target(p->ctr_target, &c->tgt_num, &c->tgt_frac, e);
        if (rc)
            goto fail;
        c->n_prune = disc_ctr_n_prune(c->tgt_num, c->tgt_frac, (uint64_t)c->cfg.tokens);
    }
    if (p->ctr == DISC_CTR_TAU && !(p->ctr_tau >= 0.0f && isfinite(p->ctr_tau))) {
        rc = errmsg_set(e, ERR_USAGE, "--ctr-tau must be a finite number >= 0");
        goto fail;
    }
    if (p->st == DISC_ST_TARGET && !(p->st_target >= 0.0 && p->st_target <= 1.0)) {
        rc = errmsg_set(e, ERR_USAGE, "--st-target must lie in [0, 1]");
        goto fail;
    }
    if (p->st == DISC_ST_ALPHA && !(p->st_alpha >= 0.0f && isfinite(p->st_alpha))) {
        rc = errmsg_set(e, ERR_USAGE, "--st-alpha must be a finite number >= 0");
        goto fail;
    }
    if (p->st == DISC_ST_THETA && !(p->st_theta >= 0.0f && p->st_theta <= 1.0f)) {
        rc = errmsg_set(e, ERR_USAGE, "--st-theta must lie in [0, 1]");
        goto fail;
    }
    if (p->st_refresh < 1) {
        rc = errmsg_set(e, ERR_USAGE, "--st-refresh must be >= 1");
        goto fail;
    }
    rc = disc_keep_parse(&c->keep, p->keep_masks, c->cfg.depth, c->cfg.heads, c->K, c->B, e);
    if (rc)
        goto fail;
    /* The memory plan (docs/models.md#disc-memory-plan): the estimate is its held part. */
    struct disc_mem_shape sh = {.n_batch = c->B,
                                .steps = c->K,
                                .threads = p->threads > 0 ? p->threads : threads_default(),
                                .ctr = p->ctr != DISC_CTR_OFF,
                                .st = p->st != DISC_ST_OFF,
                                .st_target = p->st == DISC_ST_TARGET,
                                .compare = p->compare_dense,
                                .keep_any = strcmp(p->keep_masks, "none") != 0};
    disc_mem_plan_make(&c->plan, &c->cfg, &sh, p->mem_limit_bytes);
    c->mem_est = c->plan.held_bytes;
    *out = c;
    return 0;
fail:
    disc_capture_free(c);
    return rc;
}

double disc_capture_mem_estimate(const struct disc_capture *c)
{
    return c->mem_est;
}

const struct disc_mem_plan *disc_capture_mem_plan(const struct disc_capture *c)
{
    return &c->plan;
}

const struct dit_config *disc_capture_config(const struct disc_capture *c)
{
    return &c->cfg;
}

const struct disc_result *disc_capture_result(const struct disc_capture *c)
{
    return &c->res;
}

void disc_capture_set_hook(struct disc_capture *c, disc_record_fn fn, void *ctx)
{
    c->hook = fn;
    c->hook_ctx = ctx;
}

void disc_capture_set_progress(struct disc_capture *c, bool show)
{
    c->progress = show;
}

static void result_release(struct disc_result *r)
{
    mem_free(r->latent);
    mem_free(r->latent_dense);
    mem_free(r->traj);
    mem_free(r->q_main.rel_err);
    mem_free(r->q_ctr.rel_err);
    mem_free(r->sparsity_block);
    mem_free(r->alpha);
    mem_free(r->theta);
    mem_free(r->st_short);
    mem_free(r->n_kept);
}

void disc_capture_free(struct disc_capture *c)
{
    if (!c)
        return;
    disc_keep_release(&c->keep);
    dit_model_free(c->model);
    mem_free(c->text);
    mem_free(c->x_init);
    mem_free(c->sched.t);
    mem_free(c->sched.alpha);
    mem_free(c->sched.sigma);
    mem_free(c->sched.lambda);
    if (c->pool)
        pool_free(c->pool);
    disc_lb_free(c->lb);
    free(c->params_json); /* jansson's malloc */
    free(c->model_json);
    for (int i = 0; i < DISC_MAX_WEIGHT_FILES; i++) {
        mem_free(c->wfiles[i]);
        mem_free(c->wsha[i]);
    }
    result_release(&c->res);
    mem_free(c);
}

static const char *ctr_mode_name(enum disc_ctr_mode m)
{
    return m == DISC_CTR_OFF ? "off" : m == DISC_CTR_TAU ? "tau" : "target";
}

static const char *st_mode_name(enum disc_st_mode m)
{
    static const char *n[] = {"off", "alpha", "theta", "target"};
    return n[m];
}

/* The provenance fields of the header (trace.proto TraceHeader.source). */
static void disc_provenance(struct disc_capture *c, Acceltrace__TraceHeader *h)
{
    const struct disc_params *p = &c->p;
    size_t n = sizeof c->src_detail, o = 0;
    if (!p->n_weight_files) {
        h->source = "seeded";
        o += (size_t)snprintf(c->src_detail, n, "weights from the spec generator (%s)",
                              c->weights_source);
    } else {
        h->source = c->shipped_sha[0] ? "trained-small" : "checkpoint";
        for (int i = 0; i < p->n_weight_files && o < n; i++)
            o += (size_t)snprintf(c->src_detail + o, n - o, "%s%s sha256 %s", i ? "; " : "",
                                  c->wfiles[i], c->wsha[i]);
    }
    if (o < n)
        snprintf(c->src_detail + o, n - o, "; text %s", c->text_source);
    h->source_detail = c->src_detail;
}

static int build_header(struct disc_capture *c, struct errmsg *e)
{
    const struct disc_params *p = &c->p;
    const struct dit_config *g = &c->cfg;
    json_t *pj = json_object(), *mj = json_object(), *wf = json_array();
    json_object_set_new(pj, "model", json_string(g->name));
    json_object_set_new(pj, "image_size", json_integer(g->image));
    json_object_set_new(pj, "steps", json_integer(c->K));
    json_object_set_new(pj, "sampler",
                        json_string(p->sampler == DIT_SAMPLER_DDIM ? "ddim" : "dpm2m"));
    json_object_set_new(pj, "cfg", p->cfg_on ? json_real(p->cfg_scale) : json_null());
    json_object_set_new(pj, "seed", json_integer((json_int_t)p->seed));
    for (int i = 0; i < p->n_weight_files; i++)
        json_array_append_new(wf, json_string(p->weight_files[i]));
    json_object_set_new(pj, "weights", p->n_weight_files ? wf : json_string(c->weights_source));
    if (!p->n_weight_files)
        json_decref(wf);
    json_object_set_new(pj, "text", json_string(c->text_source));
    json_object_set_new(pj, "null_text", json_string(c->null_source));
    if (g->class_cond)
        json_object_set_new(pj, "class", json_integer(p->class_label));
    json_object_set_new(pj, "ctr", json_string(ctr_mode_name(p->ctr)));
    if (p->ctr == DISC_CTR_TAU)
        json_object_set_new(pj, "ctr_tau", json_real(p->ctr_tau));
    if (p->ctr == DISC_CTR_TARGET)
        json_object_set_new(pj, "ctr_target", json_string(p->ctr_target));
    json_object_set_new(pj, "st", json_string(st_mode_name(p->st)));
    if (p->st == DISC_ST_ALPHA)
        json_object_set_new(pj, "st_alpha", json_real(p->st_alpha));
    if (p->st == DISC_ST_THETA)
        json_object_set_new(pj, "st_theta", json_real(p->st_theta));
    if (p->st == DISC_ST_TARGET)
        json_object_set_new(pj, "st_target", json_real(p->st_target));
    json_object_set_new(pj, "st_refresh", json_integer(p->st_refresh));
    json_object_set_new(pj, "keep_masks", json_string(p->keep_masks));
    json_object_set_new(pj, "compare_dense", json_boolean(p->compare_dense));
    json_object_set_new(mj, "name", json_string(g->name));
    json_object_set_new(mj, "depth", json_integer(g->depth));
    json_object_set_new(mj, "hidden", json_integer(g->hidden));
    json_object_set_new(mj, "heads", json_integer(g->heads));
    json_object_set_new(mj, "patch", json_integer(g->patch));
    json_object_set_new(mj, "in_channels", json_integer(g->c_in));
    json_object_set_new(mj, "out_channels", json_integer(g->c_out));
    json_object_set_new(mj, "caption_width", json_integer(g->caption));
    json_object_set_new(mj, "text_tokens", json_integer(g->text_tokens));
    json_object_set_new(mj, "image_size", json_integer(g->image));
    json_object_set_new(mj, "tokens", json_integer(g->tokens));
    json_object_set_new(mj, "family", json_string(g->class_cond ? "dit" : "pixart"));
    if (g->class_cond) {
        json_object_set_new(mj, "classes", json_integer(g->classes));
        json_object_set_new(mj, "conditioning", json_string("adaln-zero"));
        json_object_set_new(mj, "cross_attention", json_false());
    }
    c->params_json = json_dumps(pj, JSON_COMPACT | JSON_SORT_KEYS);
    c->model_json = json_dumps(mj, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(pj);
    json_decref(mj);
    if (!c->params_json || !c->model_json)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    /* producer, workload, command line, time and params hash: capture_header_common */
    Acceltrace__TraceHeader h = ACCELTRACE__TRACE_HEADER__INIT;
    Acceltrace__DiscHeader dh = ACCELTRACE__DISC_HEADER__INIT;
    h.params_json = c->params_json;
    h.model_json = c->model_json;
    h.seed = p->seed;
    dh.model = (char *)g->name;
    dh.depth = (uint32_t)g->depth;
    dh.hidden = (uint32_t)g->hidden;
    dh.heads = (uint32_t)g->heads;
    dh.head_dim = (uint32_t)g->head_dim;
    dh.ffn_hidden = (uint32_t)g->ffn;
    dh.patch = (uint32_t)g->patch;
    dh.in_channels = (uint32_t)g->c_in;
    dh.out_channels = (uint32_t)g->c_out;
    dh.caption_width = (uint32_t)g->caption;
    dh.text_tokens = (uint32_t)g->text_tokens;
    dh.image_size = (uint32_t)g->image;
    dh.latent_h = dh.latent_w = (uint32_t)g->lat;
    dh.grid_w = (uint32_t)g->grid;
    dh.tokens = (uint32_t)g->tokens;
    dh.parameters = dit_param_count(g);
    /* provenance: "trained-small" for the shipped weights (path and sha256 in weight_files
     * and weight_sha256), "file" for --weights FILE, "seed:S" for seeded weights */
    dh.weights_source = c->shipped_sha[0]   ? (char *)g->name
                        : p->n_weight_files ? "file"
                                            : c->weights_source;
    dh.weights_seeded = p->n_weight_files == 0;
    dh.n_weight_files = dh.n_weight_sha256 = (size_t)p->n_weight_files;
    dh.weight_files = c->wfiles;
    dh.weight_sha256 = c->wsha;
    dh.text_source = c->text_source;
    dh.text_sha256 = c->text_sha;
    dh.null_text_source = c->null_source;
    dh.null_text_sha256 = c->null_sha;
    dh.seed = p->seed;
    dh.sampler = p->sampler == DIT_SAMPLER_DDIM ? "ddim" : "dpm2m";
    dh.steps = (uint32_t)c->K;
    dh.cfg_scale = p->cfg_on ? p->cfg_scale : 0.0;
    dh.batch = (uint32_t)c->B;
    dh.n_timesteps = (size_t)c->K;
    dh.timesteps = c->sched.t;
    dh.n_alphas = dh.n_sigmas = (size_t)c->K + 1;
    dh.alphas = c->sched.alpha;
    dh.sigmas = c->sched.sigma;
    dh.ctr_mode = (char *)ctr_mode_name(p->ctr);
    dh.ctr_tau = p->ctr == DISC_CTR_TAU ? p->ctr_tau : 0.0f;
    dh.ctr_target = p->ctr == DISC_CTR_TARGET ? c->p.ctr_target : "";
    dh.st_mode = (char *)st_mode_name(p->st);
    dh.st_alpha = p->st == DISC_ST_ALPHA ? p->st_alpha : 0.0f;
    dh.st_theta = p->st == DISC_ST_THETA ? p->st_theta : 0.0f;
    dh.st_target = p->st == DISC_ST_TARGET ? p->st_target : 0.0;
    dh.st_refresh = (uint32_t)p->st_refresh;
    dh.keep_masks = c->p.keep_masks;
    for (int i = 0; i < DISC_HASH_KINDS; i++)
        c->lb_names[i] = (char *)disc_hash_name(i);
    dh.n_lb_hashes = DISC_HASH_KINDS;
    dh.lb_hashes = c->lb_names;
    dh.lb_k_odd = DISC_HASH_K_ODD;
    for (int i = 0; i < DISC_LB_STD_UNITS; i++)
        c->lb_units[i] = 1u << (DISC_LB_STD_BMIN + i);
    dh.n_lb_units = DISC_LB_STD_UNITS;
    dh.lb_units = c->lb_units;
    dh.lb_bins = DISC_LB_BINS;
    for (int i = 0; i < DISC_F_COUNT; i++)
        c->flop_names[i] = (char *)disc_flop_name(i);
    dh.n_flop_classes = DISC_F_COUNT;
    dh.flop_classes = c->flop_names;
    dh.compare_dense = p->compare_dense;
    c->dh = dh;
    c->hdr = h;
    c->hdr.disc = &c->dh;
    disc_provenance(c, &c->hdr);
    return 0;
}

/* A model with shipped weights (disc_models.h) and no --weights FILE loads them; their
 * sha256 is checked against the one recorded beside them once hashed below (ERR_DATA). */
static int shipped_weights(struct disc_capture *c, struct errmsg *e)
{
    struct disc_params *p = &c->p;
    if (p->n_weight_files || !disc_model_shipped(c->cfg.name))
        return 0;
    int rc =
        disc_model_find(c->cfg.name, c->shipped_path, sizeof c->shipped_path, c->shipped_sha, e);
    if (rc)
        return rc;
    p->weight_files[0] = c->shipped_path;
    p->n_weight_files = 1;
    return 0;
}

int disc_capture_load(struct disc_capture *c, struct errmsg *e)
{
    const struct disc_params *p = &c->p;
    const struct dit_config *g = &c->cfg;
    int rc;
    size_t T = (size_t)g->text_tokens, Dc = (size_t)g->caption;
    size_t n_lat = (size_t)g->c_in * g->lat * g->lat;
    int threads = p->threads > 0 ? p->threads : threads_default();
    nn_set_threads(threads);
    c->pool = pool_new(threads);
    if (!c->pool)
        return errmsg_set(e, ERR_NOMEM, "cannot start %d threads", threads);
    rc = disc_lb_new_std(&c->lb, (uint64_t)g->tokens, DISC_HASH_K_ODD);
    if (rc)
        return errmsg_set(e, rc, "cannot set up the load-balance counters");
    rc = shipped_weights(c, e);
    if (rc)
        return rc;
    if (p->n_weight_files) {
        rc = dit_model_new_files(&c->model, g, p->weight_files, p->n_weight_files, e);
        if (rc)
            return rc;
        for (int i = 0; i < p->n_weight_files; i++) {
            c->wfiles[i] = mem_strdup(p->weight_files[i]);
            c->wsha[i] = mem_alloc(65);
            if (!c->wfiles[i] || !c->wsha[i])
                return errmsg_set(e, ERR_NOMEM, "out of memory");
            rc = sha256_file(p->weight_files[i], c->wsha[i], e);
            if (rc)
                return rc;
        }
        if (c->shipped_sha[0] && strcmp(c->wsha[0], c->shipped_sha))
            return errmsg_set(e, ERR_DATA,
                              "'%s' has sha256 %s, but %s.sha256 records %s (the shipped "
                              "weights were changed; make train-dit rebuilds them)",
                              c->wfiles[0], c->wsha[0], c->wfiles[0], c->shipped_sha);
    } else {
        rc = dit_model_new_seeded(&c->model, g, p->weight_seed, e);
        if (rc)
            return rc;
        snprintf(c->weights_source, sizeof c->weights_source, "seed:%llu",
                 (unsigned long long)p->weight_seed);
    }
    /* DiT configs have no text (T = 0): one float keeps the allocation non-empty. */
    c->text = mem_calloc((size_t)c->B * T * Dc + 1, sizeof(float));
    c->x_init = mem_alloc(n_lat * sizeof(float));
    c->sched.t = mem_alloc((size_t)c->K * sizeof(uint32_t));
    c->sched.alpha = mem_alloc(((size_t)c->K + 1) * sizeof(double));
    c->sched.sigma = mem_alloc(((size_t)c->K + 1) * sizeof(double));
    c->sched.lambda = mem_alloc(((size_t)c->K + 1) * sizeof(double));
    if (!c->text || !c->x_init || !c->sched.t || !c->sched.alpha || !c->sched.sigma ||
        !c->sched.lambda)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    dit_schedule_fill(&c->sched, c->K);
    /* Text (spec 2.4): file or N(0, 1) from substream "text" of the text seed. DiT: the class
     * label and the null class; the hashes are of the label as int32 little-endian. */
    if (g->class_cond) {
        int32_t lab[2] = {p->class_label, g->classes};
        snprintf(c->text_source, sizeof c->text_source, "class:%d", lab[0]);
        sha256_hex(&lab[0], sizeof lab[0], c->text_sha);
        if (c->B == 2) {
            snprintf(c->null_source, sizeof c->null_source, "class:%d", lab[1]);
            sha256_hex(&lab[1], sizeof lab[1], c->null_sha);
        }
        for (int b = 0; b < c->B; b++) {
            rc = dit_model_set_class(c->model, c->B, b, lab[b]);
            if (rc)
                return errmsg_set(e, rc, "%s", dit_model_errmsg(c->model));
        }
    } else if (!p->text_file && disc_model_shipped(g->name)) {
        /* no text conditioning: the null caption the model was trained on (zeros) */
        snprintf(c->text_source, sizeof c->text_source, "zeros (%s null caption)", g->name);
    } else if (p->text_file) {
        rc = disc_text_load(p->text_file, (int)T, (int)Dc, c->text, e);
        if (rc)
            return rc;
        snprintf(c->text_source, sizeof c->text_source, "%s", p->text_file);
    } else {
        struct rng r;
        rng_stream(&r, p->text_seed, "text", 0, 0);
        for (size_t i = 0; i < T * Dc; i++)
            c->text[i] = (float)rng_normal(&r);
        snprintf(c->text_source, sizeof c->text_source, "seed:%llu",
                 (unsigned long long)p->text_seed);
    }
    if (!g->class_cond)
        sha256_hex(c->text, T * Dc * sizeof(float), c->text_sha);
    if (c->B == 2 && !g->class_cond) {
        float *nt = c->text + T * Dc;
        if (p->null_text_file) {
            rc = disc_text_load(p->null_text_file, (int)T, (int)Dc, nt, e);
            if (rc)
                return rc;
            snprintf(c->null_source, sizeof c->null_source, "%s", p->null_text_file);
        } else {
            snprintf(c->null_source, sizeof c->null_source, "zeros");
        }
        sha256_hex(nt, T * Dc * sizeof(float), c->null_sha);
    }
    for (int b = 0; b < c->B && !g->class_cond; b++) {
        rc = dit_model_set_text(c->model, c->B, b, c->text + (size_t)b * T * Dc);
        if (rc)
            return errmsg_set(e, rc, "%s", dit_model_errmsg(c->model));
    }
    /* Initial latent x_0 ~ N(0, I), substream "latent", (c, y, x) order (spec 2.4). */
    struct rng r;
    rng_stream(&r, p->seed, "latent", 0, 0);
    for (size_t i = 0; i < n_lat; i++)
        c->x_init[i] = (float)rng_normal(&r);
    rc = build_header(c, e);
    if (rc)
        return rc;
    c->loaded = true;
    return 0;
}

int disc_capture_save_weights(struct disc_capture *c, const char *path, int dtype, struct errmsg *e)
{
    if (!c->model)
        return errmsg_set(e, ERR_USAGE, "no model loaded");
    return dit_model_save(c->model, path, dtype, e);
}

/* ---- one sampler run ---- */

struct run {
    struct disc_capture *c;
    struct dit_state *st;
    bool ctr, st_on, main;
    size_t n; /* latent elements */
    float *prev, *d, *dsort, *epsb;
    int32_t *kept;
    uint64_t *tokmask;
    float *theta; /* [L] */
    /* current step */
    int nk;
    float tau;
    double diff_mean, diff_rms, diff_max;
    float dp50, dp90, dp99, dmax;
    bool gen;
    const float *dense_traj;
    struct capture_sink *sink; /* NULL: records go to the hook only */
    struct errmsg *e;
    struct disc_lb_acc *acc; /* [B][L][h] */
    uint64_t *nnz_block;     /* [L] */
    /* pooled sparsity */
    double sum_nnz, sum_cells, gen_nnz, gen_cells, reuse_nnz, reuse_cells;
    double *blk_nnz, *blk_cells;
    double prune_sum;
    int prune_cnt;
    struct progress *prog;
    uint64_t prog_base;
};

static int emit(struct run *r, const Acceltrace__Record *rec, const struct trace_key *key)
{
    if (r->sink) {
        int rc = capture_emit(r->sink, rec, key, r->e);
        if (rc)
            return rc;
    }
    if (r->c->hook) {
        int rc = r->c->hook(r->c->hook_ctx, rec, key);
        if (rc)
            return errmsg_set(r->e, rc, "record hook failed");
    }
    return 0;
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

static int eps_cb(void *vr, int k, uint32_t t, const float *x, float *eps)
{
    struct run *r = vr;
    struct disc_capture *c = r->c;
    const struct dit_config *g = &c->cfg;
    int N = g->tokens, L = g->depth;
    size_t words = ((size_t)N + 63) / 64;
    /* CTR selection (spec 3): step 0 keeps all; else d_i = max |x_k - x_{k-1}| per token. */
    r->tau = NAN;
    r->diff_mean = r->diff_rms = r->diff_max = NAN;
    r->dp50 = r->dp90 = r->dp99 = r->dmax = NAN;
    r->nk = N;
    if (k > 0) {
        disc_ctr_token_max(x, r->prev, g->c_in, g->lat, g->patch, r->d);
        disc_ctr_diff_stats(x, r->prev, r->n, &r->diff_mean, &r->diff_rms, &r->diff_max);
        memcpy(r->dsort, r->d, (size_t)N * sizeof(float));
        qsort(r->dsort, (size_t)N, sizeof(float), cmp_float);
        r->dp50 = disc_ctr_quantile(r->dsort, (size_t)N, 50);
        r->dp90 = disc_ctr_quantile(r->dsort, (size_t)N, 90);
        r->dp99 = disc_ctr_quantile(r->dsort, (size_t)N, 99);
        r->dmax = r->dsort[N - 1];
        if (r->ctr) {
            r->tau = c->p.ctr == DISC_CTR_TAU ? c->p.ctr_tau
                                              : disc_ctr_tau_for_prune(r->d, (size_t)N, c->n_prune);
            r->nk = disc_ctr_select(r->d, (size_t)N, r->tau, r->kept, r->tokmask);
        }
    }
    if (r->nk == N) {
        for (int i = 0; i < N; i++)
            r->kept[i] = i;
        memset(r->tokmask, 0, words * sizeof(uint64_t));
        for (int i = 0; i < N; i++)
            r->tokmask[i >> 6] |= 1ull << (i & 63);
    }
    memcpy(r->prev, x, r->n * sizeof(float));
    /* ST schedule (spec 4): generate when k mod K_r = 0, else reuse. */
    r->gen = r->st_on && k % c->p.st_refresh == 0;
    struct dit_fwd f = {.t = (double)t,
                        .kept = r->kept,
                        .n_kept = r->nk,
                        .st = !r->st_on ? DIT_ST_OFF
                              : r->gen  ? DIT_ST_GENERATE
                                        : DIT_ST_REUSE,
                        .theta = r->theta,
                        .st_target = -1.0,
                        .pool = c->pool};
    if (r->st_on && c->p.st == DISC_ST_TARGET && k == 0) {
        f.st_target = c->p.st_target;
        f.alpha_out = c->res.alpha;
        f.theta_out = r->theta;
        f.short_out = c->res.st_short;
        for (int b = 0; b < L; b++)
            c->res.st_short[b] = false;
    }
    int rc = dit_forward(c->model, r->st, x, &f, r->epsb);
    if (rc)
        return errmsg_set(r->e, rc, "%s", dit_model_errmsg(c->model));
    if (c->B == 2) {
        /* CFG (spec 2.5): eps = eps_u + w (eps_c - eps_u), batch 0 = cond, 1 = null. */
        float w = (float)c->p.cfg_scale;
        const float *ec = r->epsb, *eu = r->epsb + r->n;
        for (size_t i = 0; i < r->n; i++)
            eps[i] = eu[i] + w * (ec[i] - eu[i]);
    } else {
        memcpy(eps, r->epsb, r->n * sizeof(float));
    }
    return 0;
}

void disc_mask_set_lb(Acceltrace__DiscMask *m, const struct disc_lb_acc *a,
                      struct disc_mask_lb_buf *buf)
{
    for (int hsh = 0; hsh < DISC_HASH_KINDS; hsh++)
        for (int u = 0; u < DISC_LB_STD_UNITS; u++) {
            buf->lbmax[hsh * DISC_LB_STD_UNITS + u] = a->max_sum[hsh][u];
            buf->lbstd[hsh * DISC_LB_STD_UNITS + u] = a->std_sum[hsh][u];
        }
    for (int bin = 0; bin < DISC_LB_BINS; bin++) {
        buf->brows[bin] = a->bin_rows[bin];
        buf->bnnz[bin] = a->bin_nnz[bin];
        for (int hsh = 0; hsh < DISC_HASH_KINDS; hsh++)
            for (int u = 0; u < DISC_LB_STD_UNITS; u++) {
                size_t i = ((size_t)bin * DISC_HASH_KINDS + hsh) * DISC_LB_STD_UNITS + u;
                buf->bmax[i] = a->bin_max[bin][hsh][u];
                buf->bstd[i] = a->bin_std[bin][hsh][u];
            }
    }
    m->n_lb_max = m->n_lb_std = DISC_MASK_LB_N;
    m->lb_max = buf->lbmax;
    m->lb_std = buf->lbstd;
    m->n_bin_rows = m->n_bin_nnz = DISC_LB_BINS;
    m->bin_rows = buf->brows;
    m->bin_nnz = buf->bnnz;
    m->n_bin_max = m->n_bin_std = (size_t)DISC_LB_BINS * DISC_MASK_LB_N;
    m->bin_max = buf->bmax;
    m->bin_std = buf->bstd;
}

/* Mask statistics over the computed rows (spec 4, 8) and the FLOPs of step k. */
static int step_stats(struct run *r, uint64_t *fd, uint64_t *fc, uint64_t *fa)
{
    struct disc_capture *c = r->c;
    const struct dit_config *g = &c->cfg;
    int N = g->tokens, L = g->depth, H = g->heads, B = c->B;
    size_t words = ((size_t)N + 63) / 64;
    for (int b = 0; b < L; b++)
        r->nnz_block[b] = 0;
    if (r->st_on) {
        const uint64_t *filter = r->nk == N ? NULL : r->tokmask;
        for (int bb = 0; bb < B; bb++)
            for (int blk = 0; blk < L; blk++)
                for (int h = 0; h < H; h++) {
                    struct disc_lb_acc *a = &r->acc[((size_t)bb * L + blk) * H + h];
                    disc_lb_acc_init(a, c->lb);
                    if (r->nk > 0) {
                        const uint64_t *mk = dit_state_mask(r->st, bb, blk, h);
                        if (!mk)
                            return errmsg_set(r->e, ERR_IO, "%s", dit_state_errmsg(r->st));
                        int rc = disc_lb_mask(c->lb, mk, (uint32_t)N, words, filter, c->pool, a);
                        if (rc)
                            return errmsg_set(r->e, rc, "out of memory");
                    }
                    r->nnz_block[blk] += a->nnz;
                }
    }
    disc_flops_step(g, B, (uint64_t)r->nk,
                    !r->st_on ? DISC_FLOP_ST_OFF
                    : r->gen  ? DISC_FLOP_ST_GEN
                              : DISC_FLOP_ST_REUSE,
                    r->nnz_block, fd, fc, fa);
    for (int i = 0; i < DISC_F_COUNT; i++) {
        c->res.flops_dense[i] += fd[i];
        c->res.flops_ctr[i] += fc[i];
        c->res.flops_all[i] += fa[i];
    }
    return 0;
}

/* The DiscStep record of step k (spec 6) and its token-mask image. */
static int emit_step_record(struct run *r, int k, const float *xn, uint64_t *fd, uint64_t *fc,
                            uint64_t *fa)
{
    struct disc_capture *c = r->c;
    const struct dit_config *g = &c->cfg;
    int N = g->tokens;
    size_t words = ((size_t)N + 63) / 64;
    Acceltrace__DiscStep s = ACCELTRACE__DISC_STEP__INIT;
    s.k = (uint32_t)k;
    s.t = c->sched.t[k];
    s.tau = r->tau;
    s.n_kept = (uint32_t)r->nk;
    s.prune_ratio = 1.0 - (double)r->nk / N;
    uint8_t *tm = mem_alloc(words * 8);
    if (!tm)
        return errmsg_set(r->e, ERR_NOMEM, "out of memory");
    for (size_t w = 0; w < words; w++)
        for (int i = 0; i < 8; i++)
            tm[w * 8 + (size_t)i] = (uint8_t)(r->tokmask[w] >> (8 * i));
    s.token_mask.data = tm;
    s.token_mask.len = words * 8;
    s.diff_mean = r->diff_mean;
    s.diff_rms = r->diff_rms;
    s.diff_max = r->diff_max;
    s.d_p50 = r->dp50;
    s.d_p90 = r->dp90;
    s.d_p99 = r->dp99;
    s.d_max = r->dmax;
    s.n_flops_dense = s.n_flops_ctr = s.n_flops_all = DISC_F_COUNT;
    s.flops_dense = fd;
    s.flops_ctr = fc;
    s.flops_all = fa;
    s.rel_err = r->dense_traj ? disc_rel_err(xn, r->dense_traj + (size_t)k * r->n, r->n) : NAN;
    s.st_generated = r->gen;
    Acceltrace__Record rec = ACCELTRACE__RECORD__INIT;
    rec.body_case = ACCELTRACE__RECORD__BODY_DISC_STEP;
    rec.disc_step = &s;
    struct trace_key key = {k, -1, -1};
    int rc = emit(r, &rec, &key);
    if (!rc && c->p.png_dir)
        rc = disc_png_token_mask(c->p.png_dir, k, r->tokmask, g->grid, r->e);
    mem_free(tm);
    return rc;
}

/* The kept bits of mask mk in m (row counts and packed rows; buffers allocated once into
 * *row_nnz and *bits), and its image. */
static int keep_mask_bits(struct run *r, int k, int bb, int blk, int h, const uint64_t *mk,
                          Acceltrace__DiscMask *m, uint32_t **row_nnz, uint8_t **bits)
{
    struct disc_capture *c = r->c;
    int N = c->cfg.tokens;
    size_t words = ((size_t)N + 63) / 64;
    if (!*row_nnz) {
        *row_nnz = mem_alloc((size_t)N * sizeof(uint32_t));
        *bits = mem_alloc((size_t)N * words * 8);
        if (!*row_nnz || !*bits)
            return errmsg_set(r->e, ERR_NOMEM, "out of memory");
    }
    for (int i = 0; i < N; i++) {
        uint32_t cnt = 0;
        for (size_t w = 0; w < words; w++) {
            uint64_t v = mk[(size_t)i * words + w];
            cnt += (uint32_t)__builtin_popcountll(v);
            for (int q = 0; q < 8; q++)
                (*bits)[((size_t)i * words + w) * 8 + (size_t)q] = (uint8_t)(v >> (8 * q));
        }
        (*row_nnz)[i] = cnt;
    }
    m->kept = true;
    m->n_row_nnz = (size_t)N;
    m->row_nnz = *row_nnz;
    m->bits.data = *bits;
    m->bits.len = (size_t)N * words * 8;
    c->res.masks_kept++;
    if (c->p.png_dir)
        return disc_png_attn_mask(c->p.png_dir, k, bb, blk, h, mk, N, r->e);
    return 0;
}

/* The DiscMask records of step k, one per (batch, block, head), and the pooled sparsity. */
static int emit_mask_records(struct run *r, int k)
{
    struct disc_capture *c = r->c;
    const struct dit_config *g = &c->cfg;
    int N = g->tokens, L = g->depth, H = g->heads, B = c->B;
    struct disc_mask_lb_buf lb;
    uint32_t *row_nnz = NULL;
    uint8_t *bits = NULL;
    int rc = 0;
    for (int bb = 0; bb < B && !rc; bb++)
        for (int blk = 0; blk < L && !rc; blk++)
            for (int h = 0; h < H && !rc; h++) {
                const struct disc_lb_acc *a = &r->acc[((size_t)bb * L + blk) * H + h];
                Acceltrace__DiscMask m = ACCELTRACE__DISC_MASK__INIT;
                m.step = (uint32_t)k;
                m.batch = (uint32_t)bb;
                m.block = (uint32_t)blk;
                m.head = (uint32_t)h;
                m.generated = r->gen;
                m.rows = (uint32_t)r->nk;
                m.nnz = a->nnz;
                m.sparsity = r->nk ? 1.0 - (double)a->nnz / ((double)r->nk * N) : NAN;
                m.theta = r->theta[blk];
                m.n_cols = (uint32_t)N;
                disc_mask_set_lb(&m, a, &lb);
                double cells = (double)r->nk * N;
                r->sum_nnz += (double)a->nnz;
                r->sum_cells += cells;
                r->blk_nnz[blk] += (double)a->nnz;
                r->blk_cells[blk] += cells;
                if (r->gen)
                    r->gen_nnz += (double)a->nnz, r->gen_cells += cells;
                else
                    r->reuse_nnz += (double)a->nnz, r->reuse_cells += cells;
                const uint64_t *mk = dit_state_mask(r->st, bb, blk, h);
                if (!mk) {
                    rc = errmsg_set(r->e, ERR_IO, "%s", dit_state_errmsg(r->st));
                    break;
                }
                if (disc_keep_has(&c->keep, k, bb, blk, h)) {
                    rc = keep_mask_bits(r, k, bb, blk, h, mk, &m, &row_nnz, &bits);
                    if (rc == ERR_NOMEM)
                        break;
                }
                Acceltrace__Record mr = ACCELTRACE__RECORD__INIT;
                mr.body_case = ACCELTRACE__RECORD__BODY_DISC_MASK;
                mr.disc_mask = &m;
                /* the keys trace_record_key derives (docs/trace-format.md): with CFG the
                 * two batch elements of a (step, block, head) share one key */
                struct trace_key mkey = {k, blk, h};
                if (!rc)
                    rc = emit(r, &mr, &mkey);
                c->res.masks_written++;
            }
    mem_free(row_nnz);
    mem_free(bits);
    return rc;
}

/* After step k of a run: progress, and for the main run the step's statistics and its
 * DiscStep and DiscMask records. */
static int post_cb(void *vr, int k, const float *xn)
{
    struct run *r = vr;
    struct disc_capture *c = r->c;
    int N = c->cfg.tokens;
    if (r->prog)
        progress_update(r->prog, r->prog_base + (uint64_t)k + 1);
    if (!r->main)
        return 0;
    c->res.n_kept[k] = (uint32_t)r->nk;
    if (k > 0) {
        r->prune_sum += 1.0 - (double)r->nk / N;
        r->prune_cnt++;
    }
    uint64_t fd[DISC_F_COUNT] = {0}, fc[DISC_F_COUNT] = {0}, fa[DISC_F_COUNT] = {0};
    int rc = step_stats(r, fd, fc, fa);
    if (!rc)
        rc = emit_step_record(r, k, xn, fd, fc, fa);
    if (rc || !r->st_on)
        return rc;
    return emit_mask_records(r, k);
}

static void run_release(struct run *r)
{
    dit_state_free(r->st);
    mem_free(r->prev);
    mem_free(r->d);
    mem_free(r->dsort);
    mem_free(r->epsb);
    mem_free(r->kept);
    mem_free(r->tokmask);
    mem_free(r->theta);
    mem_free(r->acc);
    mem_free(r->nnz_block);
    mem_free(r->blk_nnz);
    mem_free(r->blk_cells);
}

/* One sampler run; x receives x_K and traj (K, n) the trajectory. */
static int one_run(struct disc_capture *c, bool ctr, bool st, bool main_run,
                   const float *dense_traj, struct capture_sink *sink, float *x, float *traj,
                   struct progress *prog, uint64_t prog_base, struct errmsg *e)
{
    const struct dit_config *g = &c->cfg;
    int N = g->tokens, L = g->depth, H = g->heads;
    struct run r;
    memset(&r, 0, sizeof r);
    r.c = c;
    r.ctr = ctr;
    r.st_on = st;
    r.main = main_run;
    r.n = (size_t)g->c_in * g->lat * g->lat;
    r.dense_traj = dense_traj;
    r.sink = sink;
    r.e = e;
    r.prog = prog;
    r.prog_base = prog_base;
    struct dit_state_opts so = {.ctr = ctr,
                                .st = st,
                                .spill_masks = c->plan.spill_masks,
                                .spill_ctr = c->plan.spill_ctr,
                                .spill_dir = c->p.spill_dir};
    int rc = dit_state_open(&r.st, c->model, c->B, &so, e);
    if (rc) {
        run_release(&r);
        return rc;
    }
    size_t words = ((size_t)N + 63) / 64;
    r.prev = mem_alloc(r.n * sizeof(float));
    r.d = mem_alloc((size_t)N * sizeof(float));
    r.dsort = mem_alloc((size_t)N * sizeof(float));
    r.epsb = mem_alloc((size_t)c->B * r.n * sizeof(float));
    r.kept = mem_alloc((size_t)N * sizeof(int32_t));
    r.tokmask = mem_alloc(words * sizeof(uint64_t));
    r.theta = mem_calloc((size_t)L, sizeof(float));
    r.acc = main_run && st ? mem_alloc((size_t)c->B * L * H * sizeof *r.acc) : NULL;
    r.nnz_block = mem_calloc((size_t)L, sizeof(uint64_t));
    r.blk_nnz = mem_calloc((size_t)L, sizeof(double));
    r.blk_cells = mem_calloc((size_t)L, sizeof(double));
    if (rc || !r.prev || !r.d || !r.dsort || !r.epsb || !r.kept || !r.tokmask || !r.theta ||
        (main_run && st && !r.acc) || !r.nnz_block || !r.blk_nnz || !r.blk_cells) {
        rc = errmsg_set(e, ERR_NOMEM, "out of memory for the sampler run");
        goto done;
    }
    /* Effective theta per block (spec 4): alpha/N in FP32, or the absolute theta. */
    for (int b = 0; b < L; b++) {
        if (c->p.st == DISC_ST_ALPHA) {
            float a = c->p.st_alpha_block ? c->p.st_alpha_block[b] : c->p.st_alpha;
            r.theta[b] = a / (float)N;
            c->res.alpha[b] = a;
        } else if (c->p.st == DISC_ST_THETA) {
            r.theta[b] = c->p.st_theta;
            c->res.alpha[b] = NAN;
        }
    }
    memcpy(x, c->x_init, r.n * sizeof(float));
    rc = dit_sample(c->p.sampler, &c->sched, x, r.n, eps_cb, post_cb, &r, traj);
    if (rc)
        goto done;
    if (main_run) {
        struct disc_result *res = &c->res;
        res->mean_prune_ratio = r.prune_cnt ? r.prune_sum / r.prune_cnt : NAN;
        res->sparsity = r.sum_cells > 0 ? 1.0 - r.sum_nnz / r.sum_cells : NAN;
        res->sparsity_gen = r.gen_cells > 0 ? 1.0 - r.gen_nnz / r.gen_cells : NAN;
        res->sparsity_reuse = r.reuse_cells > 0 ? 1.0 - r.reuse_nnz / r.reuse_cells : NAN;
        for (int b = 0; b < L; b++) {
            res->sparsity_block[b] = r.blk_cells[b] > 0 ? 1.0 - r.blk_nnz[b] / r.blk_cells[b] : NAN;
            res->theta[b] = st ? r.theta[b] : NAN;
        }
    }
done:
    if (r.st && dit_state_spill_bytes(r.st) > c->res.spill_bytes)
        c->res.spill_bytes = dit_state_spill_bytes(r.st);
    run_release(&r);
    return rc;
}

static int write_summary(struct disc_capture *c, struct capture_sink *sink, struct errmsg *e)
{
    struct disc_result *res = &c->res;
    const struct dit_config *g = &c->cfg;
    Acceltrace__DiscSummary s = ACCELTRACE__DISC_SUMMARY__INIT;
    Acceltrace__DiscQuality qm = ACCELTRACE__DISC_QUALITY__INIT,
                            qc = ACCELTRACE__DISC_QUALITY__INIT;
    Acceltrace__DiscQuality *qs[2];
    size_t nq = 0;
    if (res->q_ctr.valid) {
        qc.run = "ctr";
        qc.cosine = res->q_ctr.cosine;
        qc.psnr = res->q_ctr.psnr;
        qc.n_rel_err = (size_t)c->K;
        qc.rel_err = res->q_ctr.rel_err;
        qs[nq++] = &qc;
    }
    if (res->q_main.valid) {
        qm.run = "main";
        qm.cosine = res->q_main.cosine;
        qm.psnr = res->q_main.psnr;
        qm.n_rel_err = (size_t)c->K;
        qm.rel_err = res->q_main.rel_err;
        qs[nq++] = &qm;
    }
    s.n_quality = nq;
    s.quality = qs;
    s.mean_prune_ratio = res->mean_prune_ratio;
    s.sparsity = res->sparsity;
    s.n_sparsity_per_block = (size_t)g->depth;
    s.sparsity_per_block = res->sparsity_block;
    s.sparsity_generation = res->sparsity_gen;
    s.sparsity_reuse = res->sparsity_reuse;
    s.n_alpha_per_block = c->p.st == DISC_ST_OFF ? 0 : (size_t)g->depth;
    s.alpha_per_block = res->alpha;
    s.n_flops_dense = s.n_flops_ctr = s.n_flops_all = DISC_F_COUNT;
    s.flops_dense = res->flops_dense;
    s.flops_ctr = res->flops_ctr;
    s.flops_all = res->flops_all;
    double fd = (double)disc_flops_total(res->flops_dense);
    double fc = (double)disc_flops_total(res->flops_ctr);
    double fa = (double)disc_flops_total(res->flops_all);
    double sd = 0, sc = 0, sa = 0;
    for (int i = DISC_F_SA_QKV; i <= DISC_F_SA_PROJ; i++) {
        sd += (double)res->flops_dense[i];
        sc += (double)res->flops_ctr[i];
        sa += (double)res->flops_all[i];
    }
    /* Fig. 17 quantities (spec 5). */
    s.reduction_ctr = 1.0 - fc / fd;
    s.reduction_st = (fc - fa) / fd;
    s.sa_reduction_ctr = 1.0 - sc / sd;
    s.sa_reduction_st = (sc - sa) / sd;
    s.sa_share = sd / fd;
    s.n_latent = res->n_latent;
    s.latent = res->latent;
    s.n_latent_dense = res->latent_dense ? res->n_latent : 0;
    s.latent_dense = res->latent_dense;
    s.masks_written = res->masks_written;
    s.masks_kept = res->masks_kept;
    Acceltrace__Summary sm = ACCELTRACE__SUMMARY__INIT;
    sm.workload = (char *)capture_disc_ops.name;
    /* wall_seconds stays 0: no DiSC record holds wall-clock time (spec 6). */
    sm.disc = &s;
    Acceltrace__Record rec = ACCELTRACE__RECORD__INIT;
    rec.body_case = ACCELTRACE__RECORD__BODY_SUMMARY;
    rec.summary = &sm;
    struct run r;
    memset(&r, 0, sizeof r);
    r.c = c;
    r.sink = sink;
    r.e = e;
    return emit(&r, &rec, NULL);
}

static int score(struct disc_quality *q, const float *traj, const float *dense_traj, size_t n,
                 int K)
{
    q->rel_err = mem_alloc((size_t)K * sizeof(double));
    if (!q->rel_err)
        return ERR_NOMEM;
    for (int k = 0; k < K; k++)
        q->rel_err[k] = disc_rel_err(traj + (size_t)k * n, dense_traj + (size_t)k * n, n);
    const float *xa = traj + (size_t)(K - 1) * n, *xb = dense_traj + (size_t)(K - 1) * n;
    q->cosine = disc_cosine(xa, xb, n);
    q->psnr = disc_psnr(xa, xb, n);
    q->valid = true;
    return 0;
}

int disc_capture_run(struct disc_capture *c, struct capture_sink *sink, struct errmsg *e)
{
    const struct disc_params *p = &c->p;
    const struct dit_config *g = &c->cfg;
    struct disc_result *res = &c->res;
    int rc = 0, K = c->K, L = g->depth;
    size_t n = (size_t)g->c_in * g->lat * g->lat;
    float *x = NULL, *dense_traj = NULL, *ctr_traj = NULL;
    if (!c->loaded)
        return errmsg_set(e, ERR_USAGE, "capture not loaded");
    double t0 = progress_now_s();
    result_release(res);
    memset(res, 0, sizeof *res);
    res->K = K, res->L = L, res->B = c->B, res->n_latent = n;
    res->latent = mem_alloc(n * sizeof(float));
    res->traj = mem_alloc((size_t)K * n * sizeof(float));
    res->sparsity_block = mem_alloc((size_t)L * sizeof(double));
    res->alpha = mem_calloc((size_t)L, sizeof(float));
    res->theta = mem_calloc((size_t)L, sizeof(float));
    res->st_short = mem_calloc((size_t)L, sizeof(bool));
    res->n_kept = mem_calloc((size_t)K, sizeof(uint32_t));
    x = mem_alloc(n * sizeof(float));
    if (!res->latent || !res->traj || !res->sparsity_block || !res->alpha || !res->theta ||
        !res->st_short || !res->n_kept || !x) {
        rc = errmsg_set(e, ERR_NOMEM, "out of memory");
        goto done;
    }
    bool ctr = p->ctr != DISC_CTR_OFF, st = p->st != DISC_ST_OFF;
    bool ctr_run = p->compare_dense && ctr && st;
    int runs = 1 + (p->compare_dense ? 1 : 0) + (ctr_run ? 1 : 0);
    struct progress own, *prog = &own;
    if (sink) { /* the driver's reporter */
        capture_progress_begin(sink, (uint64_t)runs * K);
        prog = &sink->progress;
    } else {
        progress_init(&own, "disc capture", (uint64_t)runs * K, !c->progress);
    }
    uint64_t base = 0;
    if (p->compare_dense) {
        dense_traj = mem_alloc((size_t)K * n * sizeof(float));
        res->latent_dense = mem_alloc(n * sizeof(float));
        if (!dense_traj || !res->latent_dense) {
            rc = errmsg_set(e, ERR_NOMEM, "out of memory");
            goto done;
        }
        rc = one_run(c, false, false, false, NULL, NULL, res->latent_dense, dense_traj, prog, base,
                     e);
        if (rc)
            goto done;
        base += (uint64_t)K;
    }
    if (ctr_run) {
        ctr_traj = mem_alloc((size_t)K * n * sizeof(float));
        if (!ctr_traj) {
            rc = errmsg_set(e, ERR_NOMEM, "out of memory");
            goto done;
        }
        rc = one_run(c, true, false, false, NULL, NULL, x, ctr_traj, prog, base, e);
        if (rc)
            goto done;
        base += (uint64_t)K;
        if ((rc = score(&res->q_ctr, ctr_traj, dense_traj, n, K)) != 0)
            goto done;
    }
    rc = one_run(c, ctr, st, true, dense_traj, sink, res->latent, res->traj, prog, base, e);
    if (rc)
        goto done;
    if (sink)
        capture_progress_end(sink);
    else
        progress_finish(&own);
    if (p->compare_dense && (rc = score(&res->q_main, res->traj, dense_traj, n, K)) != 0)
        goto done;
    for (int b = 0; b < L; b++)
        res->n_st_short += res->st_short[b];
    if (p->png_dir) {
        rc = disc_png_latent(p->png_dir, "latent", res->latent, g->c_in, g->lat, e);
        if (!rc && res->latent_dense)
            rc = disc_png_latent(p->png_dir, "latent_dense", res->latent_dense, g->c_in, g->lat, e);
        if (rc)
            goto done;
    }
    res->wall_s = progress_now_s() - t0;
    rc = write_summary(c, sink, e);
done:
    mem_free(x);
    mem_free(dense_traj);
    mem_free(ctr_traj);
    return rc;
}

/* ---- the capture interface ---- */

static int disc_open(void **inst, const void *params, struct errmsg *e)
{
    struct disc_capture *c = NULL;
    int rc = disc_capture_new(&c, params, e);
    *inst = c;
    return rc;
}

static uint64_t disc_estimate(const void *inst)
{
    double b = ceil(((const struct disc_capture *)inst)->mem_est);
    return b < 1.8e19 ? (uint64_t)b : UINT64_MAX;
}

static void disc_what(const void *inst, char *what, size_t n)
{
    const struct dit_config *g = &((const struct disc_capture *)inst)->cfg;
    snprintf(what, n, "capture disc of %s at %d px", g->name, g->image);
}

/* Loads weights and text, then writes --save-weights before the trace is created. */
static int disc_prepare(void *inst, struct errmsg *e)
{
    struct disc_capture *c = inst;
    int rc = disc_capture_load(c, e);
    if (!rc && c->p.save_weights)
        rc = disc_capture_save_weights(c, c->p.save_weights, 0, e);
    return rc;
}

static int disc_header(void *inst, Acceltrace__TraceHeader *hdr, struct errmsg *e)
{
    struct disc_capture *c = inst;
    if (!c->loaded)
        return errmsg_set(e, ERR_USAGE, "capture not loaded");
    *hdr = c->hdr; /* the common fields are still unset: capture_header_common fills them */
    return 0;
}

static int disc_run(void *inst, struct capture_sink *sink, struct errmsg *e)
{
    return disc_capture_run(inst, sink, e);
}

static void disc_close(void *inst)
{
    disc_capture_free(inst);
}

const struct capture_ops capture_disc_ops = {
    .name = "disc",
    .summary = "DiT denoising with CTR and ST executed for real (DiSC)",
    .mem_hint = "use a smaller --image-size or raise --mem-limit",
    .open = disc_open,
    .mem_estimate = disc_estimate,
    .mem_what = disc_what,
    .prepare = disc_prepare,
    .header = disc_header,
    .run = disc_run,
    .close = disc_close,
};
