/*
 * kura_model: the replay model "kura" of the SA-Kura array (docs/kura.md#replay). See kura_model.h.
 */
#include "replay/kura_model.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/grow.h"
#include "common/mem.h"
#include "replay/kura_analytic.h"
#include "replay/kura_dma.h"
#include "replay/kura_power.h"
#include "replay/kura_sim.h"
#include "replay/kura_tiles.h"
#include "replay/model.h"

/* ---- the replay model "kura" (replay/model.h) ---- */

static const struct hw_key kura_keys[] = {
    HW_KEY_INT("n_h", "PEs", 1, 4096, 20, "array rows N_h [paper: 5..25]"),
    HW_KEY_INT("n_w", "PEs", 1, 4096, 5, "array columns N_w [paper: 5..25]"),
    HW_KEY_BOOL("cycle_accurate", 0,
                "run the checked register-level simulation of every step "
                "(docs/kura.md#cycle-accurate-array)"),
    HW_KEY_BOOL("activity", 0,
                "count operand toggles on the PE inputs (docs/kura.md#switching-activity; implies "
                "cycle_accurate)"),
    HW_KEY_FLOAT("alpha_cal", "", 0, 1, 0.4744,
                 "reference toggle rate for p_hw' = p_hw(1 - phi + phi alpha/alpha_cal): "
                 "H20W5 over the default capture, by 'model kura --calibrate-activity' "
                 "(docs/kura.md#switching-activity)"),
    HW_KEY_FLOAT("phi", "", 0, 1, 1,
                 "switching fraction of p_hw (docs/kura.md#switching-activity, upper bound 1)"),
    HW_KEY_STRING("coeffs", "", NULL,
                  "coefficient table JSON (docs/kura.md#replay); empty = shipped "
                  "configs/kura_energy.json values"),
    HW_KEY_FLOAT(
        "t_txn", "cycles", -1, 1e6, -1,
        "DMA cycles per transaction; -1 = the table's (docs/kura.md#dma-and-system-level)"),
    HW_KEY_BOOL("calibrate_dma", 0,
                "re-solve t_marsh so H20W5 at 96x96 takes 64,130 cycles "
                "(docs/kura.md#dma-and-system-level)"),
};

static const struct hw_schema kura_schema = {
    .model = "kura",
    .keys = kura_keys,
    .n_keys = sizeof kura_keys / sizeof kura_keys[0],
    .check = NULL,
};

/* Per-record data computed once for every instance (prepare). */
struct kura_aux {
    struct kura_step_info info;
    int16_t *q;   /* (h, w) phase map */
    uint32_t *sc; /* (h, w) packed front-end words */
    int32_t *uq;  /* (h, w) reference u_q of the shared fixed-point drift */
    int32_t *d;   /* (h, w) its drift d (units pi 2^-31 rad) */
};

struct kura_shared {
    int h, w;                   /* from the header; 0 when absent */
    struct kura_step_info last; /* the last REVERSE step seen (for stored KuraTiles) */
    int16_t *last_q;            /* (h, w) its map, or NULL */
};

struct kura_step_row {
    int32_t step;
    uint64_t toggles, bits;
};

struct kura_state {
    int n_h, n_w;
    bool sim_on, act_on;
    double alpha_cal, phi;
    struct kura_energy en;
    struct kura_sim *sim;
    int32_t *uq_out; /* (h, w) drained map of the last simulated step */
    size_t uq_cap;
    int h, w; /* map size seen (all steps must agree) */
    uint64_t steps;
    uint64_t toggles, bits, writes, pe_cycles, sim_cycles;
    struct model_sched_sink *sched; /* export timeline (model.h), or NULL */
    double t_sched;                 /* cycles of the system schedule so far */
    struct kura_step_row *rows;
    size_t n_rows, cap_rows;
};

static int kura_shared_new(void **shared, const struct model_env *env, struct errmsg *e)
{
    struct kura_shared *s = mem_calloc(1, sizeof *s);
    if (!s)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    if (env->hdr && env->hdr->kura) {
        s->h = env->hdr->kura->h <= KURA_MAX_SIDE ? (int)env->hdr->kura->h : 0;
        s->w = env->hdr->kura->w <= KURA_MAX_SIDE ? (int)env->hdr->kura->w : 0;
    }
    *shared = s;
    return 0;
}

static void kura_aux_free(void *shared, void *aux)
{
    (void)shared;
    struct kura_aux *a = aux;
    if (!a)
        return;
    mem_free(a->q);
    mem_free(a->sc);
    mem_free(a->uq);
    mem_free(a->d);
    mem_free(a);
}

static int kura_prepare(void *shared, const struct model_record *r, void **aux, struct errmsg *e)
{
    struct kura_shared *sh = shared;
    *aux = NULL;
    const Acceltrace__Record *rec = r->rec;
    if (rec->body_case == ACCELTRACE__RECORD__BODY_KURA_TILES) {
        /* stored tile streams must equal the derived ones (docs/design.md#data-flow,
         * docs/kura.md#trace-records); they follow the REVERSE step they belong to */
        const Acceltrace__KuraTiles *kt = rec->kura_tiles;
        struct kura_streams st;
        if (!sh->last_q || kt->step != sh->last.step)
            return errmsg_set(e, ERR_DATA, "stored tiles of step %d do not follow that step",
                              kt->step);
        if (kt->n_h < 1 || kt->n_w < 1 || kt->n_h > 4096 || kt->n_w > 4096)
            return errmsg_set(e, ERR_DATA, "stored tiles of step %d: bad shape %ux%u", kt->step,
                              kt->n_h, kt->n_w);
        int rc = kura_tiles_derive(sh->last_q, sh->last.h, sh->last.w, &sh->last.regs, (int)kt->n_h,
                                   (int)kt->n_w, &st, NULL, NULL, e);
        if (!rc)
            rc = kura_tiles_compare(&st, kt, e);
        kura_streams_release(&st);
        return rc;
    }
    if (rec->body_case != ACCELTRACE__RECORD__BODY_KURA_STEP ||
        rec->kura_step->role != ACCELTRACE__KURA_ROLE__KURA_ROLE_REVERSE)
        return 0;
    struct kura_aux *a = mem_calloc(1, sizeof *a);
    if (!a)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    int rc = kura_step_decode(rec->kura_step, sh->h, sh->w, &a->info, &a->q, e);
    if (rc)
        goto fail;
    size_t n = (size_t)a->info.h * a->info.w;
    a->sc = mem_alloc(n * sizeof *a->sc);
    a->uq = mem_alloc(n * sizeof *a->uq);
    a->d = mem_alloc(n * sizeof *a->d);
    if (!a->sc || !a->uq || !a->d) {
        rc = errmsg_set(e, ERR_NOMEM, "out of memory");
        goto fail;
    }
    kura_sc_map(a->q, (size_t)a->info.h, (size_t)a->info.w, a->sc); /* Column Buffer front end */
    rc = kura_fixed_drift_map(a->q, (size_t)a->info.h, (size_t)a->info.w, &a->info.regs, a->uq,
                              a->d, NULL);
    if (rc) {
        errmsg_set(e, rc, "fixed-point drift of step %d failed", a->info.step);
        goto fail;
    }
    size_t bytes = n * sizeof *a->q;
    int16_t *keep = mem_realloc(sh->last_q, bytes);
    if (!keep) {
        rc = errmsg_set(e, ERR_NOMEM, "out of memory");
        goto fail;
    }
    memcpy(keep, a->q, bytes);
    sh->last_q = keep;
    sh->last = a->info;
    *aux = a;
    return 0;
fail:
    kura_aux_free(shared, a);
    return rc;
}

static void kura_shared_free(void *shared)
{
    struct kura_shared *sh = shared;
    if (sh)
        mem_free(sh->last_q);
    mem_free(sh);
}

static void kura_free(void *state)
{
    struct kura_state *s = state;
    if (!s)
        return;
    kura_sim_free(s->sim);
    mem_free(s->uq_out);
    mem_free(s->rows);
    mem_free(s);
}

static int kura_new(void **state, const struct hw_config *cfg, const struct model_env *env,
                    struct errmsg *e)
{
    struct kura_state *s = mem_calloc(1, sizeof *s);
    int rc;
    if (!s)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    s->sched = env->sched;
    s->n_h = (int)hw_config_int(cfg, "n_h");
    s->n_w = (int)hw_config_int(cfg, "n_w");
    s->act_on = hw_config_bool(cfg, "activity");
    s->sim_on = s->act_on || hw_config_bool(cfg, "cycle_accurate");
    s->alpha_cal = hw_config_float(cfg, "alpha_cal");
    s->phi = hw_config_float(cfg, "phi");
    kura_energy_default(&s->en);
    const char *coeffs = hw_config_str(cfg, "coeffs");
    if (coeffs && *coeffs && (rc = kura_energy_load(&s->en, coeffs, e)))
        goto fail;
    if (hw_config_float(cfg, "t_txn") >= 0)
        s->en.t_txn = hw_config_float(cfg, "t_txn");
    if (hw_config_bool(cfg, "calibrate_dma") && (rc = kura_dma_calibrate(&s->en, e)))
        goto fail;
    if (s->sim_on && (rc = kura_sim_new(&s->sim, s->n_h, s->n_w))) {
        errmsg_set(e, rc, "cannot build an H%dW%d array", s->n_h, s->n_w);
        goto fail;
    }
    *state = s;
    return 0;
fail:
    kura_free(s);
    return rc;
}

/* One slice of the system schedule at cycle t0 (f = en.f_hz). */
static int kura_slice(const struct kura_state *s, const char *track, const char *name,
                      const char *busy, int step, int64_t tile, double t0, double len, double bytes,
                      double util, struct errmsg *e)
{
    if (len <= 0)
        return 0;
    struct model_slice sl = {
        .group = "SA-Kura",
        .track = track,
        .name = name,
        .cls = name,
        .t_s = t0 / s->en.f_hz,
        .dur_s = len / s->en.f_hz,
        .step = step,
        .block = -1,
        .index = tile,
        .busy = busy,
        .bytes = bytes,
        .util = util,
    };
    return s->sched->slice(s->sched->ctx, &sl, e);
}

/*
 * Reports one drift step of the system level (replay/kura_dma.h) to the schedule hook:
 * host marshalling, then per tile its input DMA, the array sweep (C_tile; the first tile
 * also the exposed prefill of N_w cycles, docs/kura.md#analytic-timing) and its output DMA, all
 * serialized, then the per-step overhead. The array's slices sum to array_s, the DMA's to dma_s,
 * the host's to host_s.
 */
static int kura_sched_step(struct kura_state *s, int step, int h, int w, struct errmsg *e)
{
    struct kura_analytic an;
    struct kura_sys sy;
    kura_analytic_eval(h, w, s->n_h, s->n_w, s->en.f_hz, &an);
    kura_sys_eval(&s->en, h, w, s->n_h, s->n_w, &sy);
    int64_t d_in, d_out;
    kura_dma_tile_split(&s->en, s->n_h, s->n_w, &d_in, &d_out);
    const double wb = s->en.word_bits / 8.0;
    const double b_in = (double)(s->n_w + 4) * (s->n_h + 4) * wb;
    const double b_out = (double)s->n_w * s->n_h * wb;
    double t = s->t_sched;
    int rc = kura_slice(s, "host", "marshalling", "host_s", step, -1, t, sy.marsh_cycles, 0, -1, e);
    t += sy.marsh_cycles;
    for (int64_t k = 0; k < an.n_tiles && !rc; k++) {
        int r0, c0;
        kura_tile_origin(h, w, s->n_h, s->n_w, k, &r0, &c0);
        int rows = h - r0 < s->n_h ? h - r0 : s->n_h, cols = w - c0 < s->n_w ? w - c0 : s->n_w;
        double util = (double)rows * cols / ((double)s->n_h * s->n_w);
        rc = kura_slice(s, "DMA", "tile in", "dma_s", step, k, t, (double)d_in, b_in, -1, e);
        t += (double)d_in;
        if (!rc && k == 0) {
            rc = kura_slice(s, "array", "prefill", "array_s", step, k, t, s->n_w, 0, -1, e);
            t += s->n_w;
        }
        if (!rc)
            rc = kura_slice(s, "array", "tile", "array_s", step, k, t, (double)an.c_tile, 0, util,
                            e);
        t += (double)an.c_tile;
        if (!rc)
            rc = kura_slice(s, "DMA", "tile out", "dma_s", step, k, t, (double)d_out, b_out, -1, e);
        t += (double)d_out;
    }
    if (!rc)
        rc = kura_slice(s, "host", "step", "host_s", step, -1, t, s->en.t_step, 0, -1, e);
    s->t_sched = t + s->en.t_step;
    return rc;
}

static int kura_consume(void *state, const struct model_record *r, struct errmsg *e)
{
    struct kura_state *s = state;
    const struct kura_aux *a = r->aux;
    if (!a)
        return 0;
    const struct kura_step_info *in = &a->info;
    if (s->steps && (in->h != s->h || in->w != s->w))
        return errmsg_set(e, ERR_DATA, "kura step %d has a %dx%d map, earlier steps %dx%d",
                          in->step, in->h, in->w, s->h, s->w);
    s->h = in->h;
    s->w = in->w;
    s->steps++;
    if (s->sched) {
        int src = kura_sched_step(s, in->step, in->h, in->w, e);
        if (src < 0)
            return src;
    }
    if (!s->sim_on)
        /* the analytic figures depend on the map size only (docs/kura.md#analytic-timing) */
        return 0;
    size_t n = (size_t)in->h * in->w;
    if (n > s->uq_cap) {
        int32_t *p = mem_realloc(s->uq_out, n * sizeof *p);
        if (!p)
            return errmsg_set(e, ERR_NOMEM, "out of memory");
        s->uq_out = p;
        s->uq_cap = n;
    }
    struct kura_sim_opts o = {.check = true, .activity = s->act_on};
    struct kura_sim_result res;
    int rc = kura_sim_run(s->sim, a->sc, in->h, in->w, a->uq, s->uq_out, &o, &res, e);
    if (rc)
        return rc;
    /* the drained map equals the shared fixed-point drift bit for bit
     * (docs/kura.md#cycle-accurate-array) */
    if (memcmp(s->uq_out, a->uq, n * sizeof *a->uq) != 0)
        return errmsg_set(e, ERR_INTERNAL, "H%dW%d step %d: drained map differs from the drift",
                          s->n_h, s->n_w, in->step);
    s->toggles += res.toggles;
    s->bits += res.bits_written;
    s->writes += res.writes;
    s->pe_cycles += res.pe_cycles;
    s->sim_cycles += (uint64_t)res.n_cyc;
    if (s->act_on) {
        if (grow((void **)&s->rows, &s->cap_rows, s->n_rows + 1, sizeof *s->rows))
            return errmsg_set(e, ERR_NOMEM, "out of memory");
        s->rows[s->n_rows++] = (struct kura_step_row){in->step, res.toggles, res.bits_written};
    }
    return 0;
}

static int kura_finish(void *state, struct model_result *res, struct errmsg *e)
{
    struct kura_state *s = state;
    struct kura_analytic an;
    struct kura_sys sy;
    char shape[32];
    int h = s->h ? s->h : 1, w = s->w ? s->w : 1;
    const struct kura_energy *en = &s->en;
    kura_analytic_eval(h, w, s->n_h, s->n_w, en->f_hz, &an);
    kura_sys_eval(en, h, w, s->n_h, s->n_w, &sy);
    double px = (double)h * w;
    double p_fit = kura_bilinear(&en->power_fit4, s->n_h, s->n_w);
    double alpha = s->bits ? (double)s->toggles / (double)s->bits : NAN;
    /* docs/kura.md#switching-activity: p_hw' = p_hw (1 - phi + phi alpha/alpha_cal) */
    struct kura_coeffs scaled = en->power_fit4;
    double ratio = s->alpha_cal > 0 ? alpha / s->alpha_cal : NAN;
    scaled.hw = en->power_fit4.hw * (1 - s->phi + s->phi * ratio);
    snprintf(shape, sizeof shape, "H%dW%d", s->n_h, s->n_w);
    /* no shape label in the main table: n_h and n_w are config columns already, and a
     * label would split every plot series per config */
    result_row_begin(res, NULL);
    result_count(res, "steps", "steps", s->steps);
    result_count(res, "cycles", "cycles", s->steps * (uint64_t)an.cycles_step);
    result_count(res, "tiles", "tiles", s->steps * (uint64_t)an.n_tiles);
    result_count(res, "sim_cycles", "cycles", s->sim_cycles);
    result_count(res, "pe_cycles", "cycles", s->pe_cycles);
    result_count(res, "bits_written", "bit", s->bits);
    result_count(res, "toggles", "bit", s->toggles);
    result_metric_i64(res, "h", "px", h);
    result_metric_i64(res, "w", "px", w);
    result_metric_i64(res, "c_tile", "cycles", an.c_tile);
    result_metric_i64(res, "cycles_step", "cycles", an.cycles_step);
    result_metric(res, "step_s", "s", an.step_us * 1e-6);
    result_metric(res, "t_px", "px/s", an.t_px);
    result_metric(res, "c_px", "cycles/px", an.c_px);
    result_metric(res, "c_px_eff", "cycles/px", an.c_px_eff);
    result_metric(res, "utilization", "1", an.utilization);
    result_metric(res, "p_mw", "mW", p_fit);
    result_metric(res, "e_px_pj", "pJ/px", kura_epx_pj(&en->power_fit4, s->n_h, s->n_w, en->f_hz));
    result_metric(res, "e_px_eff_pj", "pJ/px",
                  1e9 * p_fit * (double)an.cycles_step / (en->f_hz * px));
    result_metric(res, "nw_opt", "PEs", kura_nw_opt(&en->power_fit4, s->n_h));
    result_metric(res, "area_mm2", "mm2", sy.area_um2 / 1e6);
    result_metric(res, "sys_cycles_step", "cycles", sy.cycles_sys);
    result_metric(res, "sys_step_s", "s", sy.t_us * 1e-6);
    result_metric(res, "sys_p_mw", "mW", sy.p_mw);
    result_metric(res, "sys_e_px_nj", "nJ/px", sy.e_px_nj);
    result_metric(res, "sys_energy_j", "J", (double)s->steps * sy.p_mw * 1e-3 * sy.t_us * 1e-6);
    result_metric(res, "alpha", "1", alpha);
    result_metric(res, "alpha_ratio", "1", ratio);
    result_metric(res, "e_px_act_pj", "pJ/px", kura_epx_pj(&scaled, s->n_h, s->n_w, en->f_hz));
    /* the system level's time by unit over all steps (kura_dma.h; the timeline's tracks) */
    result_metric(res, "array_s", "s", (double)s->steps * (double)an.cycles_step / en->f_hz);
    result_metric(res, "dma_s", "s", (double)s->steps * (double)sy.dma_step / en->f_hz);
    result_metric(res, "host_s", "s", (double)s->steps * (sy.marsh_cycles + en->t_step) / en->f_hz);
    for (size_t i = 0; i < s->n_rows; i++) {
        const struct kura_step_row *sr = &s->rows[i];
        double a = sr->bits ? (double)sr->toggles / (double)sr->bits : NAN;
        result_row_begin(res, "kura_steps");
        result_label(res, "shape", shape);
        result_metric_i64(res, "step", "", sr->step);
        result_count(res, "toggles", "bit", sr->toggles);
        result_count(res, "bits_written", "bit", sr->bits);
        result_metric(res, "toggles_per_px", "bit/px", (double)sr->toggles / px);
        result_metric(res, "alpha", "1", a);
        result_metric(res, "alpha_ratio", "1", s->alpha_cal > 0 ? a / s->alpha_cal : NAN);
    }
    return result_err(res, e);
}

/*
 * Checkpoint hooks (model.h). An instance keeps its map size, counters and per-step rows
 * (the array's registers start at zero every step, kura_sim.h); the shared state keeps the
 * last REVERSE step, which stored tiles after a checkpoint are checked against.
 */
static int kura_save(const void *state, struct sink *k, struct errmsg *e)
{
    const struct kura_state *s = state;
    uint64_t v[8] = {(uint64_t)(int64_t)s->h,
                     (uint64_t)(int64_t)s->w,
                     s->steps,
                     s->toggles,
                     s->bits,
                     s->writes,
                     s->pe_cycles,
                     s->sim_cycles};
    uint64_t n = s->n_rows;
    int rc = sink_write(k, v, sizeof v);
    rc = rc ? rc : sink_write(k, &n, sizeof n);
    rc = rc ? rc : sink_write(k, s->rows, s->n_rows * sizeof *s->rows);
    return rc ? errmsg_set(e, rc, "out of memory") : 0;
}

/* Whether the counters loaded into s agree with each other and with its config. */
static bool kura_state_ok(const struct kura_state *s)
{
    if (s->steps == 0)
        return s->h == 0 && s->w == 0 && s->n_rows == 0 && !s->toggles && !s->bits && !s->writes &&
               !s->pe_cycles && !s->sim_cycles;
    if (s->h < 1 || s->w < 1)
        return false;
    if (!s->sim_on)
        return s->n_rows == 0 && !s->toggles && !s->bits && !s->writes && !s->pe_cycles &&
               !s->sim_cycles;
    if (s->n_rows != (s->act_on ? s->steps : 0))
        return false;
    uint64_t toggles = 0, bits = 0;
    for (size_t i = 0; i < s->n_rows; i++)
        toggles += s->rows[i].toggles, bits += s->rows[i].bits;
    return !s->act_on || (toggles == s->toggles && bits == s->bits);
}

/*
 * Every value is checked before it is used (docs/models.md#checkpoints-replay-engine-convention):
 * the map size within KURA_MAX_SIDE and set once a step was seen, no counters without the
 * simulation, one row per step with activity and the totals the sums of the rows.
 */
static int kura_load(void *state, struct model_ckpt_in *in, struct errmsg *e)
{
    struct kura_state *s = state;
    uint64_t v[8], n = 0;
    int rc = model_ckpt_get(in, v, sizeof v);
    rc = rc ? rc : model_ckpt_get(in, &n, sizeof n);
    if (!rc &&
        (n > (in->len - in->pos) / sizeof *s->rows || (int64_t)v[0] < 0 ||
         (int64_t)v[0] > KURA_MAX_SIDE || (int64_t)v[1] < 0 || (int64_t)v[1] > KURA_MAX_SIDE))
        rc = ERR_DATA;
    if (rc)
        return errmsg_set(e, rc, "bad kura state at byte %zu: truncated or map size out of range",
                          in->pos);
    s->h = (int)(int64_t)v[0], s->w = (int)(int64_t)v[1], s->steps = v[2];
    s->toggles = v[3], s->bits = v[4], s->writes = v[5], s->pe_cycles = v[6];
    s->sim_cycles = v[7];
    if (n) {
        void *p;
        if ((rc = model_ckpt_get_alloc(in, &p, (size_t)n * sizeof *s->rows)))
            return errmsg_set(e, rc, "cannot read kura step rows");
        mem_free(s->rows);
        s->rows = p;
        s->n_rows = s->cap_rows = (size_t)n;
    }
    if (!kura_state_ok(s))
        return errmsg_set(e, ERR_DATA,
                          "bad kura state: %llu steps of a %dx%d map, %zu rows and the "
                          "counters disagree",
                          (unsigned long long)s->steps, s->h, s->w, s->n_rows);
    return 0;
}

static int kura_shared_save(const void *shared, struct sink *k, struct errmsg *e)
{
    const struct kura_shared *sh = shared;
    uint8_t have = sh->last_q != NULL;
    int rc = sink_write(k, &have, 1);
    rc = rc ? rc : sink_write(k, &sh->last, sizeof sh->last);
    if (!rc && have)
        rc = sink_write(k, sh->last_q, (size_t)sh->last.h * sh->last.w * sizeof *sh->last_q);
    return rc ? errmsg_set(e, rc, "out of memory") : 0;
}

/*
 * The last REVERSE step: its flag 0 or 1, its map size within KURA_MAX_SIDE (none without
 * a map), its schedule values finite and its registers those kura_regs_init gives them,
 * so the tiles derived from it run on the values a capture could hold.
 */
static int kura_shared_load(void *shared, struct model_ckpt_in *in, struct errmsg *e)
{
    struct kura_shared *sh = shared;
    bool have = false;
    const char *why = "truncated";
    int rc = model_ckpt_get_bools(in, &have, 1);
    if (rc)
        why = "the map flag is not 0 or 1";
    rc = rc ? rc : model_ckpt_get(in, &sh->last, sizeof sh->last);
    const struct kura_step_info *l = &sh->last;
    struct kura_regs regs;
    if (!rc && (l->h < 0 || l->h > KURA_MAX_SIDE || l->w < 0 || l->w > KURA_MAX_SIDE ||
                (have && (l->h < 1 || l->w < 1)) || (!have && (l->h || l->w)))) {
        why = "map size out of range";
        rc = ERR_DATA;
    }
    if (!rc && have &&
        (kura_regs_init(&regs, l->k, l->kref, l->psi_ref) || regs.g != l->regs.g ||
         regs.r_s != l->regs.r_s || regs.r_c != l->regs.r_c)) {
        why = "registers that its schedule values do not give";
        rc = ERR_DATA;
    }
    if (!rc && have) {
        void *p;
        why = "truncated";
        rc = model_ckpt_get_alloc(in, &p, (size_t)l->h * l->w * sizeof *sh->last_q);
        if (!rc) {
            mem_free(sh->last_q);
            sh->last_q = p;
        }
    }
    return rc ? errmsg_set(e, rc, "bad shared kura state at byte %zu: %s", in->pos, why) : 0;
}

/*
 * Memory estimate (model.h; docs/models.md#memory-estimates-replay-engine-convention). Analytic
 * configs hold the state and one row of 36 columns. A simulated array adds its PE registers (6
 * words of 4 bytes per PE, kura_sim.c), the row/column buffers and the drained u_q map (4 bytes per
 * pixel); activity adds one step row (24 bytes, capacity doubled) and one 7-column row of
 * kura_steps per REVERSE step. Without a header: a 96x96 t100 capture.
 */
static uint64_t kura_estimate(const struct hw_config *cfg, const Acceltrace__TraceHeader *hdr)
{
    const Acceltrace__KuraHeader *kh = hdr ? hdr->kura : NULL;
    uint64_t px = kh ? (uint64_t)kh->h * kh->w : 96 * 96;
    uint64_t steps = kh ? (kh->t > 1 ? kh->t - 1 : 1) : 99;
    uint64_t nh = (uint64_t)hw_config_int(cfg, "n_h"), nw = (uint64_t)hw_config_int(cfg, "n_w");
    bool act = hw_config_bool(cfg, "activity");
    bool sim = act || hw_config_bool(cfg, "cycle_accurate");
    uint64_t b = sizeof(struct kura_state) + MODEL_RESULT_ROW_BYTES(36);
    if (sim)
        b += 24 * nh * nw + 16 * nw + 12 * (nh + 4) + 4 * (nw + 4) + 256 + 4 * px;
    if (act)
        b += steps * (2 * sizeof(struct kura_step_row) + MODEL_RESULT_ROW_BYTES(7));
    return b;
}

/* Pass estimate (model.h): the shared last REVERSE map (2 bytes per pixel); per record in
 * flight the decoded KuraStep's Q1.15 map and prepare's aux (q, sc, uq, d: 2 + 4 + 4 + 4
 * bytes per pixel), 16 bytes per pixel in all. Stored KuraTiles records are not counted.
 * Without a header: 96x96. */
static void kura_estimate_pass(const Acceltrace__TraceHeader *hdr, uint64_t *shared_bytes,
                               uint64_t *per_record_bytes)
{
    const Acceltrace__KuraHeader *kh = hdr ? hdr->kura : NULL;
    uint64_t px = kh ? (uint64_t)kh->h * kh->w : 96 * 96;
    *shared_bytes = sizeof(struct kura_shared) + 2 * px;
    *per_record_bytes = sizeof(struct kura_aux) + 16 * px + 1024;
}

const struct model_ops model_kura_ops = {
    .name = "kura",
    .workload = "kura",
    .summary = "SA-Kura systolic drift array: eq. 9 timing, cycle-accurate sim, activity, "
               "power/area/energy, DMA",
    .schema = &kura_schema,
    .default_config = "configs/kura-h20w5.json",
    .default_energy_table = NULL,
    .new = kura_new,
    .consume = kura_consume,
    .finish = kura_finish,
    .free = kura_free,
    .estimate_bytes = kura_estimate,
    .estimate_pass = kura_estimate_pass,
    .shared_new = kura_shared_new,
    .prepare = kura_prepare,
    .aux_free = kura_aux_free,
    .shared_free = kura_shared_free,
    .save = kura_save,
    .load = kura_load,
    .shared_save = kura_shared_save,
    .shared_load = kura_shared_load,
};
