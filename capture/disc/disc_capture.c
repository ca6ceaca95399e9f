/*
 * disc_capture: runs the DiT sampler with CTR and ST for real and writes the DiSC records
 * (docs/disc.md). See disc_capture.h for the call sequence.
 */
#include "capture/disc/disc_capture.h"
#include "capture/disc/disc_capture_impl.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/capture.h"
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

/* ---- metrics (docs/disc.md#quality-and-flop-accounting) ---- */

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
    /* docs/disc.md#model-configurations: digits, optionally a point and digits, then the unit (no
     * sign, exponent, hex or white space, which strtod alone would accept) */
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

static void disc_capture_free(struct disc_capture *c);

/* Validates p and makes the config and the memory plan (open). ERR_USAGE with a message. */
static int disc_capture_new(struct disc_capture **out, const struct disc_params *p,
                            struct errmsg *e)
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
    disc_runs_plan(c); /* for disc_capture_ckpt_bytes before the run */
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

uint64_t disc_capture_ckpt_bytes(const struct disc_capture *c)
{
    return CAPTURE_CKPT_OVERHEAD_BYTES + disc_ckpt_bytes(c);
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

void disc_result_release(struct disc_result *r)
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

static void disc_capture_free(struct disc_capture *c)
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
    disc_result_release(&c->res);
    mem_free(c->dense_traj);
    mem_free(c->ctr_traj);
    disc_resume_release(&c->rs);
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

void disc_header_shape(const struct dit_config *g, Acceltrace__DiscHeader *dh)
{
    dh->model = (char *)g->name;
    dh->depth = (uint32_t)g->depth;
    dh->hidden = (uint32_t)g->hidden;
    dh->heads = (uint32_t)g->heads;
    dh->head_dim = (uint32_t)g->head_dim;
    dh->ffn_hidden = (uint32_t)g->ffn;
    dh->patch = (uint32_t)g->patch;
    dh->in_channels = (uint32_t)g->c_in;
    dh->out_channels = (uint32_t)g->c_out;
    dh->caption_width = (uint32_t)g->caption;
    dh->text_tokens = (uint32_t)g->text_tokens;
    dh->image_size = (uint32_t)g->image;
    dh->latent_h = dh->latent_w = (uint32_t)g->lat;
    dh->grid_w = (uint32_t)g->grid;
    dh->tokens = (uint32_t)g->tokens;
    dh->parameters = dit_param_count(g);
}

/* The provenance fields of the header (trace.proto TraceHeader.source). */
static void disc_provenance(struct disc_capture *c, Acceltrace__TraceHeader *h)
{
    const struct disc_params *p = &c->p;
    size_t n = sizeof c->src_detail, o = 0;
    if (!p->n_weight_files) {
        h->source = "seeded";
        o += (size_t)snprintf(c->src_detail, n, "weights from the documented generator (%s)",
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
    disc_header_shape(g, &dh);
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

/* Loads weights and text (or generates them) and builds the header (prepare). ERR_DATA or
 * ERR_IO naming the file or tensor. */
static int disc_capture_load(struct disc_capture *c, struct errmsg *e)
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
    /* Text (docs/disc.md#inputs): file or N(0, 1) from substream "text" of the text seed. DiT: the
     * class label and the null class; the hashes are of the label as int32 little-endian. */
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
    /* Initial latent x_0 ~ N(0, I), substream "latent", (c, y, x) order (docs/disc.md#inputs). */
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

/* Writes the loaded weights as a safetensors file (dtype as enum st_dtype). */
static int disc_capture_save_weights(struct disc_capture *c, const char *path, int dtype,
                                     struct errmsg *e)
{
    if (!c->model)
        return errmsg_set(e, ERR_USAGE, "no model loaded");
    return dit_model_save(c->model, path, dtype, e);
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
    .checkpoint_save = disc_ckpt_save,
    .checkpoint_load = disc_ckpt_load,
};
