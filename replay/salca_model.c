/*
 * salca_model: the replay model "salca" (replay/model.h; docs/models.md#salca-replay):
 * a Salca trace's jobs through the accelerator's pipeline, whose timing functions are in
 * salca_pipe.c.
 */
#include "replay/salca_model.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/grow.h"
#include "common/mem.h"
#include "common/rng.h"
#include "replay/energy.h"
#include "replay/hw_config.h"
#include "replay/model.h"
#include "traces/trace_salca.h"

__extension__ typedef unsigned __int128 salca_u128;

static const struct hw_key salca_keys[] = {
    HW_KEY_STRING(
        "variant", "salca", "salca|dense",
        "salca pipeline, or dense = the paper's ASIC_D reference [docs/salca.md#pipeline-model]"),
    HW_KEY_INT("d", "", 1, 4096, 128, "head dimension [derived, docs/salca.md#notation]"),
    HW_KEY_FLOAT("s_f", "", 0.001, 1, 0.5, "feature keep ratio [paper]"),
    HW_KEY_INT("w_k", "bits", 1, 16, 2, "key code width [paper]; ASIC_S_4: 4"),
    HW_KEY_INT("factor_bits", "bits", 0, 1024, 32, "per-key FP16 scale + zero [paper]"),
    HW_KEY_INT("chn", "", 1, 1024, 32, "HBM pseudo-channels, one HBM2 [paper]"),
    HW_KEY_INT("bw", "bits", 1, 65536, 128,
               "bits per PC per HBM cycle [derived, docs/salca.md#analytic-performance-model]"),
    HW_KEY_FLOAT("f_hbm_ghz", "GHz", 0.001, 100, 1.0, "HBM clock [paper]"),
    HW_KEY_FLOAT("f_cmp_ghz", "GHz", 0.001, 100, 0.5, "compute clock [paper]"),
    HW_KEY_INT("h_pre", "", 1, 1024, 11, "pre-compute PCs, final design [paper]"),
    HW_KEY_INT("h_att", "", 1, 1024, 16, "attention PCs, final design [paper]"),
    HW_KEY_INT("p_pre", "", 1, 65536, 16, "pre-compute keys per cycle [paper]"),
    HW_KEY_INT("p_att", "", 1, 65536, 1, "attention K-V pairs per cycle [paper]"),
    HW_KEY_FLOAT("beta_pre", "", 0.001, 1, 0.95, "HBM efficiency, sequential [paper]"),
    HW_KEY_FLOAT("beta_att", "", 0.001, 1, 0.55,
                 "HBM efficiency, attention; 0.55 is the paper's setting [paper]"),
    HW_KEY_STRING("beta_att_source", "input", "input|derived",
                  "input: beta_att as given; derived: per job ideal/spread cycles of the HBM "
                  "timing model at the configured policy [decision]"),
    HW_KEY_STRING(
        "alpha_mode", "measured", "measured|global",
        "alpha from the PC simulation, or one global alpha [docs/salca.md#pipeline-model]"),
    HW_KEY_FLOAT("alpha", "", 0.01, 1000, 1.17, "global alpha [paper]"),
    HW_KEY_STRING("map", "mod", "mod|xor|hash",
                  "token-to-PC mapping [docs/salca.md#conflict-analyzer]"),
    HW_KEY_INT("map_seed", "", 0, 9007199254740991.0, 0, "hash map seed [decision]"),
    HW_KEY_STRING("policy", "inorder", "batch|inorder|window",
                  "issue policy [docs/salca.md#conflict-analyzer]"),
    HW_KEY_INT("depth", "", 1, 1048576, 1, "in-order FIFO depth D_f [decision]"),
    HW_KEY_INT("window", "", 1, 16777216, 128, "reorder window W [paper: range 128]"),
    HW_KEY_INT("p_iss", "", 0, 4096, 0, "requests issued per slot; 0 = h_att [decision]"),
    HW_KEY_STRING("hbm.mode", "fast", "fast|timing",
                  "stage A memory time: fast = slots x t_slot / beta_att "
                  "[docs/salca.md#pipeline-model]; timing = "
                  "HBM timing model cycles (banks, rows, latency, refresh) [decision]"),
    HW_KEY_STRING("hbm.preset", "hbm2", "hbm2|hbm3|hbm3e",
                  "DRAM timing preset: hbm2 [JEDEC JESD235], hbm3 [Ramulator 2.1 HBM3_6400Mbps], "
                  "hbm3e [gem5 HBM_9600_8H_1x64]; docs/models.md#hbm-timing-mode"),
    HW_KEY_STRING("hbm.layout", "kv_bg", "kv_bg|one_bg|same_bank",
                  "K/V placement in a PC: K|V across bank groups, in one bank group, or K and "
                  "V arrays in one bank [decision]"),
    HW_KEY_INT("hbm.token_bytes", "B", 0, 65536, 0,
               "bytes per token per PC (K half, V half); 0 = b_att/8 [derived]"),
    HW_KEY_BOOL("hbm.refresh", 1, "model refresh (all-bank tRFC/tREFI) [JEDEC JESD235]"),
    HW_KEY_BOOL("hbm.refresh_per_bank", 0,
                "per-bank refresh tRFCpb/tREFIpb instead of all-bank (hbm3, hbm3e) [preset]"),
    HW_KEY_STRING("hbm.occupancy", "request", "request|command|data",
                  "a token counts against D_f / W until its data is back, its last or its "
                  "first read command [decision]"),
    HW_KEY_INT("c_stage.p", "cycles", 0, 1000000, 0, "fill depth of stage P [decision]"),
    HW_KEY_INT("c_stage.q", "cycles", 0, 1000000, 0, "fill depth of stage Q [decision]"),
    HW_KEY_INT("c_stage.f", "cycles", 0, 1000000, 0, "fill depth of stage F [decision]"),
    HW_KEY_INT("c_stage.a", "cycles", 0, 1000000, 0, "fill depth of stage A [decision]"),
    HW_KEY_INT("layer_gap", "cycles", 0, 1e12, 0, "cycles between layers [decision]"),
    HW_KEY_BOOL("no_layer_drain", 0, "stream a whole step as one sequence [decision]"),
    HW_KEY_INT("dense_tokens_per_cycle", "", 1, 65536, 4, "ASIC_D compute width [decision]"),
    HW_KEY_INT("pool_w", "", 1, 255, 5, "max-pool width for activity counts [decision]"),
    HW_KEY_INT("method", "", 0, 65535, 0, "SalcaSelect method replayed (0 salca)"),
    HW_KEY_FLOAT("retention", "", 0, 1, 0,
                 "0: the trace's selections; > 0: synthetic selections of this retention"),
    HW_KEY_STRING("synth_kind", "clustered", "uniform|clustered|needle",
                  "generator of the retention what-if"),
    HW_KEY_INT("synth_seed", "", 0, 9007199254740991.0, 1, "seed of the retention what-if"),
    HW_KEY_BOOL("steps_table", 1, "write the per-step table salca_steps.csv"),
    HW_KEY_STRING("energy_table", "", NULL,
                  "energy table for the in-model energy and the gain over dense; \"\" = "
                  "built-in (= configs/salca-energy.json)"),
};

static int params_from_config(const struct hw_config *cfg, struct salca_pipe_params *p,
                              struct errmsg *e)
{
    salca_pipe_params_default(p);
    p->dense = !strcmp(hw_config_str(cfg, "variant"), "dense");
    p->d = (uint32_t)hw_config_int(cfg, "d");
    struct salca_rat sf, t;
    if (salca_rat_of_double(hw_config_float(cfg, "s_f"), &sf) < 0)
        return errmsg_set(e, ERR_CONFIG, "s_f is not a decimal ratio");
    /* b_pre = w_k·d·s_f + 32 [paper]; r = s_f·d */
    if (salca_rat_mul(sf, salca_rat_int(p->d), &t) < 0 || t.den != 1)
        return errmsg_set(e, ERR_CONFIG, "s_f·d must be a whole number of channels");
    p->r = (uint32_t)t.num;
    p->b_pre = (uint32_t)(hw_config_int(cfg, "w_k") * t.num + hw_config_int(cfg, "factor_bits"));
    p->b_att = 16 * p->d; /* [paper] */
    p->chn = (uint32_t)hw_config_int(cfg, "chn");
    p->h_pre = (uint32_t)hw_config_int(cfg, "h_pre");
    p->h_att = (uint32_t)hw_config_int(cfg, "h_att");
    p->p_pre = (uint32_t)hw_config_int(cfg, "p_pre");
    p->p_att = (uint32_t)hw_config_int(cfg, "p_att");
    p->bw = salca_rat_int(hw_config_int(cfg, "bw"));
    if (salca_rat_of_double(hw_config_float(cfg, "f_hbm_ghz"), &p->f_hbm_ghz) < 0 ||
        salca_rat_of_double(hw_config_float(cfg, "f_cmp_ghz"), &p->f_cmp_ghz) < 0 ||
        salca_rat_of_double(hw_config_float(cfg, "beta_pre"), &p->beta_pre) < 0 ||
        salca_rat_of_double(hw_config_float(cfg, "beta_att"), &p->beta_att) < 0 ||
        salca_rat_of_double(hw_config_float(cfg, "alpha"), &p->alpha) < 0)
        return errmsg_set(e, ERR_CONFIG, "clocks, beta and alpha must be decimals");
    p->alpha_mode = strcmp(hw_config_str(cfg, "alpha_mode"), "global") ? SALCA_ALPHA_MEASURED
                                                                       : SALCA_ALPHA_GLOBAL;
    if (hbm_pc_map_parse(hw_config_str(cfg, "map"), &p->map.map) < 0 ||
        hbm_pc_policy_parse(hw_config_str(cfg, "policy"), &p->policy.policy) < 0)
        return errmsg_set(e, ERR_CONFIG, "bad map or policy");
    p->map.seed = (uint64_t)hw_config_int(cfg, "map_seed");
    p->policy.depth = (uint32_t)hw_config_int(cfg, "depth");
    p->policy.window = (uint32_t)hw_config_int(cfg, "window");
    p->policy.p_iss = (uint32_t)hw_config_int(cfg, "p_iss");
    p->c_stage[SALCA_ST_P] = (uint32_t)hw_config_int(cfg, "c_stage.p");
    p->c_stage[SALCA_ST_Q] = (uint32_t)hw_config_int(cfg, "c_stage.q");
    p->c_stage[SALCA_ST_F] = (uint32_t)hw_config_int(cfg, "c_stage.f");
    p->c_stage[SALCA_ST_A] = (uint32_t)hw_config_int(cfg, "c_stage.a");
    p->layer_gap = (uint64_t)hw_config_int(cfg, "layer_gap");
    p->no_layer_drain = hw_config_bool(cfg, "no_layer_drain");
    p->dense_tokens_per_cycle = (uint32_t)hw_config_int(cfg, "dense_tokens_per_cycle");
    p->pool_w = (uint32_t)hw_config_int(cfg, "pool_w");
    p->hbm_timing = !strcmp(hw_config_str(cfg, "hbm.mode"), "timing");
    p->beta_derived = !strcmp(hw_config_str(cfg, "beta_att_source"), "derived");
    if (hbm_timing_preset(hw_config_str(cfg, "hbm.preset"), &p->hbm.t) < 0 ||
        hbm_timing_layout_parse(hw_config_str(cfg, "hbm.layout"), &p->hbm.layout) < 0 ||
        hbm_timing_occupancy_parse(hw_config_str(cfg, "hbm.occupancy"), &p->hbm.occupancy) < 0)
        return errmsg_set(e, ERR_CONFIG, "bad hbm.preset, hbm.layout or hbm.occupancy");
    p->hbm.token_bytes = (uint32_t)hw_config_int(cfg, "hbm.token_bytes");
    p->hbm.refresh = hw_config_bool(cfg, "hbm.refresh");
    p->hbm.per_bank = hw_config_bool(cfg, "hbm.refresh_per_bank");
    return salca_pipe_params_finish(p, e);
}

static int salca_check(const struct hw_config *cfg, struct errmsg *e)
{
    struct salca_pipe_params p;
    return params_from_config(cfg, &p, e);
}

static const struct hw_schema salca_schema = {
    .model = "salca",
    .keys = salca_keys,
    .n_keys = sizeof salca_keys / sizeof salca_keys[0],
    .check = salca_check,
};

/* Per decode step. */
struct salca_step {
    uint32_t t;
    uint64_t cycles, dense_cycles;
    uint64_t busy[SALCA_STAGES];
    uint64_t jobs, n_sel, n_ctx, slots, ideal, hbm_bytes;
    uint64_t att_mem; /* stage A's memory part (compute cycles), summed */
};

/* One pipeline: scheduler + clocks (the configured one and the dense shadow). */
struct pipe_run {
    struct salca_pipe_params p;
    struct salca_sched sch;
    uint64_t step_start;
};

struct salca_state {
    struct pipe_run run, dense;
    uint32_t method;
    double retention;
    enum salca_synth_kind synth_kind;
    uint64_t synth_seed;
    bool steps_table;
    struct hbm_pc_work work;
    struct hbm_timing_work twork; /* hbm.mode timing / beta_att_source derived */
    uint32_t *seq;                /* 0..seq_cap-1: the perfectly spread job */
    uint16_t *seq_pc;             /* its PCs, k mod h_att */
    size_t seq_cap;
    uint16_t *pc;
    uint32_t *syn;
    size_t pc_cap, syn_cap;
    bool any;
    uint32_t cur_t, cur_l;
    struct salca_step cur;
    struct salca_step *steps;
    size_t n_steps, cap_steps;
    struct salca_step tot;
    struct salca_activity act, dact; /* this config and the dense shadow */
    struct energy_table et;          /* loaded when energy_table is set */
    bool has_et;
    struct model_sched_sink *sched; /* export timeline (model.h), or NULL */
};

/* Decoded selection of one SalcaSelect, shared by every instance (prepare). */
struct salca_aux {
    size_t n;
    uint32_t idx[];
};

static void salca_free(void *state)
{
    struct salca_state *s = state;
    if (!s)
        return;
    hbm_pc_work_release(&s->work);
    hbm_timing_work_release(&s->twork);
    mem_free(s->seq);
    mem_free(s->seq_pc);
    if (s->has_et)
        energy_table_release(&s->et);
    mem_free(s->pc);
    mem_free(s->syn);
    mem_free(s->steps);
    mem_free(s);
}

static int salca_new(void **state, const struct hw_config *cfg, const struct model_env *env,
                     struct errmsg *e)
{
    *state = NULL;
    /* the pipeline schedule below runs the selections step by step; a layer-major capture
     * ends in step order (docs/models.md#salca-memory-plan), but its .partial (recovered)
     * or a trace from before that rewrite holds them layer by layer and would be scheduled
     * as one-layer steps, so it is refused rather than timed wrongly */
    const char *pj = env->hdr ? env->hdr->params_json : NULL;
    if (pj && strstr(pj, "\"record_order\":\"layer-major\""))
        return errmsg_set(e, ERR_DATA,
                          "'%s' is a layer-major salca capture (records per layer, then per "
                          "step): the salca model needs step order; capture it again (a "
                          "finished capture is rewritten in step order)",
                          env->trace_path ? env->trace_path : "trace");
    struct salca_state *s = mem_calloc(1, sizeof *s);
    if (!s)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    s->sched = env->sched;
    int rc = params_from_config(cfg, &s->run.p, e);
    if (rc < 0) {
        salca_free(s);
        return rc;
    }
    s->dense.p = s->run.p;
    s->dense.p.dense = true;
    if ((rc = salca_pipe_params_finish(&s->dense.p, e)) < 0) {
        salca_free(s);
        return rc;
    }
    s->method = (uint32_t)hw_config_int(cfg, "method");
    s->retention = hw_config_float(cfg, "retention");
    const char *k = hw_config_str(cfg, "synth_kind");
    if (salca_synth_parse(k, &s->synth_kind) < 0)
        s->synth_kind = SALCA_SYNTH_CLUSTERED;
    s->synth_seed = (uint64_t)hw_config_int(cfg, "synth_seed");
    s->steps_table = hw_config_bool(cfg, "steps_table");
    const char *et = hw_config_str(cfg, "energy_table");
    if (et && *et) {
        if ((rc = energy_table_load(&s->et, et, e)) < 0) {
            salca_free(s);
            return rc;
        }
        s->has_et = true;
    }
    salca_sched_begin(&s->run.sch, 0);
    salca_sched_begin(&s->dense.sch, 0);
    *state = s;
    return 0;
}

static void act_add(struct salca_activity *t, const struct salca_activity *a)
{
    t->hbm_pre_bytes += a->hbm_pre_bytes;
    t->hbm_att_bytes += a->hbm_att_bytes;
    t->mac_3x2 += a->mac_3x2;
    t->mac_int8 += a->mac_int8;
    t->exps += a->exps;
    t->pool_cmp += a->pool_cmp;
    t->hist_upd += a->hist_upd;
    t->filter_cmp += a->filter_cmp;
}

/* Count columns by name, for energy tables (the names of the results row). */
static int act_lookup(void *ctx, const char *name, double *v)
{
    const struct salca_activity *a = ctx;
    if (!strcmp(name, "hbm_bytes"))
        *v = (double)(a->hbm_pre_bytes + a->hbm_att_bytes);
    else if (!strcmp(name, "hbm_pre_bytes"))
        *v = (double)a->hbm_pre_bytes;
    else if (!strcmp(name, "hbm_att_bytes"))
        *v = (double)a->hbm_att_bytes;
    else if (!strcmp(name, "mac_3x2"))
        *v = (double)a->mac_3x2;
    else if (!strcmp(name, "mac_int8"))
        *v = (double)a->mac_int8;
    else if (!strcmp(name, "exp_ops"))
        *v = (double)a->exps;
    else if (!strcmp(name, "cmp8_ops"))
        *v = (double)(a->pool_cmp + a->filter_cmp);
    else if (!strcmp(name, "hist_updates"))
        *v = (double)a->hist_upd;
    else
        return ERR_NOTFOUND;
    return 0;
}

/* Energy of activity counts in J: the table when given, else replay/energy's built-in
 * "salca" (the placeholders of configs/salca-energy.json [decision, docs/salca.md#pipeline-model]).
 */
static int act_energy(const struct salca_state *s, const struct salca_activity *a, double *j)
{
    const struct energy_table *t = s->has_et ? &s->et : energy_table_builtin("salca");
    double comp[64];
    if (t->n_components > 64)
        return ERR_LIMIT;
    return energy_compute(t, act_lookup, (void *)a, comp, j);
}

static void step_add(struct salca_step *a, const struct salca_step *b)
{
    a->cycles += b->cycles;
    a->dense_cycles += b->dense_cycles;
    for (int k = 0; k < SALCA_STAGES; k++)
        a->busy[k] += b->busy[k];
    a->jobs += b->jobs;
    a->n_sel += b->n_sel;
    a->n_ctx += b->n_ctx;
    a->slots += b->slots;
    a->ideal += b->ideal;
    a->hbm_bytes += b->hbm_bytes;
    a->att_mem += b->att_mem;
}

/* Ends the current step: drains both pipelines and records the step. */
static int close_step(struct salca_state *s)
{
    uint64_t end = salca_sched_end(&s->run.sch), dend = salca_sched_end(&s->dense.sch);
    s->cur.cycles = end - s->run.step_start;
    s->cur.dense_cycles = dend - s->dense.step_start;
    step_add(&s->tot, &s->cur);
    if (grow((void **)&s->steps, &s->cap_steps, s->n_steps + 1, sizeof *s->steps))
        return ERR_NOMEM;
    s->steps[s->n_steps++] = s->cur;
    s->run.step_start = end;
    s->dense.step_start = dend;
    salca_sched_begin(&s->run.sch, end);
    salca_sched_begin(&s->dense.sch, dend);
    memset(&s->cur, 0, sizeof s->cur);
    return 0;
}

static int salca_prepare(void *shared, const struct model_record *r, void **aux, struct errmsg *e)
{
    (void)shared;
    *aux = NULL;
    const Acceltrace__Record *rec = r->rec;
    if (rec->body_case != ACCELTRACE__RECORD__BODY_SALCA_SELECT)
        return 0;
    const Acceltrace__SalcaSelect *s = rec->salca_select;
    int rc = trace_salca_select_check(s, e);
    if (rc < 0)
        return rc;
    struct salca_aux *a = mem_alloc(sizeof *a + (size_t)s->count * sizeof(uint32_t));
    if (!a)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    size_t got = 0;
    if ((rc = trace_salca_select_decode(s, a->idx, &got, e)) < 0) {
        mem_free(a);
        return rc;
    }
    a->n = got;
    *aux = a;
    return 0;
}

static void salca_aux_free(void *shared, void *aux)
{
    (void)shared;
    mem_free(aux);
}

static int reserve_pc(struct salca_state *s, size_t n)
{
    if (hbm_pc_work_reserve(&s->work, n) < 0)
        return ERR_NOMEM;
    if (n > s->pc_cap) {
        uint16_t *p = mem_realloc(s->pc, n * sizeof *p);
        if (!p)
            return ERR_NOMEM;
        s->pc = p;
        s->pc_cap = n;
    }
    return 0;
}

/*
 * Stage A's memory part of one job (PCs in s->pc) from replay/hbm_timing: hbm.mode timing
 * takes the job's cycles; beta_att_source derived takes slots·t_slot/beta with beta =
 * ideal/spread cycles of a perfectly spread job of the same size (docs/models.md "HBM
 * timing mode"). The job starts, for the refresh phase, where the previous job's stage A
 * ended (DRAM cycles).
 */
static int timing_mem(struct salca_state *s, const uint32_t *idx, size_t n, uint64_t slots,
                      uint64_t *mem)
{
    const struct salca_pipe_params *p = &s->run.p;
    uint32_t ha = p->map.h_att;
    if (hbm_timing_work_reserve(&s->twork, n, ha) < 0)
        return ERR_NOMEM;
    uint64_t t0 = 0;
    if (p->x_dram.num > 0)
        t0 = (uint64_t)((salca_u128)s->run.sch.fin1[SALCA_ST_A] * (uint64_t)p->x_dram.den /
                        (uint64_t)p->x_dram.num);
    struct hbm_timing_result r;
    if (p->hbm_timing) {
        hbm_timing_run(&p->hbm, &p->policy, idx, s->pc, n, ha, t0, &s->twork, &r);
        *mem = salca_pipe_dram_to_cmp(p, r.cycles);
        return 0;
    }
    if (n > s->seq_cap) {
        uint32_t *q = mem_realloc(s->seq, n * sizeof *q);
        if (q)
            s->seq = q;
        uint16_t *qp = q ? mem_realloc(s->seq_pc, n * sizeof *qp) : NULL;
        if (!qp)
            return ERR_NOMEM;
        s->seq_pc = qp;
        for (size_t k = s->seq_cap; k < n; k++) {
            s->seq[k] = (uint32_t)k;
            s->seq_pc[k] = (uint16_t)(k % ha);
        }
        s->seq_cap = n;
    }
    hbm_timing_run(&p->hbm, &p->policy, s->seq, s->seq_pc, n, ha, t0, &s->twork, &r);
    *mem = salca_pipe_att_mem_derived(p, n, slots, r.cycles, hbm_timing_ideal(&p->hbm, n, ha));
    return 0;
}

/*
 * Reports one job's four stages to the schedule hook where the double-buffered scheduler
 * placed them (start[k], T[k] cycles at f_CMP): one track per stage, whose slices sum to
 * the results' busy_p .. busy_a. The dense reference goes to a group of its own.
 */
static int salca_sched_job(const struct salca_state *s, bool dense,
                           const Acceltrace__SalcaSelect *sel, const uint64_t start[SALCA_STAGES],
                           const uint64_t T[SALCA_STAGES], const struct salca_activity *a,
                           struct errmsg *e)
{
    static const char *const tracks[SALCA_STAGES] = {
        "stage P (relevance)", "stage Q (INT8, pool, histogram)", "stage F (threshold, filter)",
        "stage A (gather, attention)"};
    static const char *const busy[SALCA_STAGES] = {"busy_p / f_cmp", "busy_q / f_cmp",
                                                   "busy_f / f_cmp", "busy_a / f_cmp"};
    const struct pipe_run *run = dense ? &s->dense : &s->run;
    const double hz = salca_rat_d(run->p.f_cmp_ghz) * 1e9;
    char name[64];
    snprintf(name, sizeof name, "step %u layer %u head %u", sel->t, sel->l, sel->h);
    int rc = 0;
    for (int k = 0; k < SALCA_STAGES && !rc; k++) {
        if (!T[k])
            continue;
        struct model_slice sl = {
            .group = dense ? "Salca dense reference" : "Salca",
            .track = tracks[k],
            .name = name,
            .cls = salca_stage_name(k),
            .t_s = (double)start[k] / hz,
            .dur_s = (double)T[k] / hz,
            .step = sel->t,
            .block = sel->l,
            .index = sel->h,
            .busy = dense ? NULL : busy[k],
            .bytes = k == SALCA_ST_P   ? (double)a->hbm_pre_bytes
                     : k == SALCA_ST_A ? (double)a->hbm_att_bytes
                                       : 0,
            .util = -1,
        };
        rc = s->sched->slice(s->sched->ctx, &sl, e);
    }
    return rc;
}

static int salca_consume(void *state, const struct model_record *r, struct errmsg *e)
{
    struct salca_state *s = state;
    const Acceltrace__Record *rec = r->rec;
    if (rec->body_case != ACCELTRACE__RECORD__BODY_SALCA_SELECT)
        return 0;
    const Acceltrace__SalcaSelect *sel = rec->salca_select;
    if (sel->method != s->method)
        return 0;
    const struct salca_aux *aux = r->aux;
    if (!aux)
        return errmsg_set(e, ERR_INTERNAL, "selection was not decoded");
    const uint32_t *idx = aux->idx;
    size_t n_sel = aux->n;
    uint64_t n = sel->n_ctx;
    if (s->retention > 0) {
        /* What-if retention: a synthetic selection of the same context [decision]. */
        if (n > s->syn_cap) {
            uint32_t *p = mem_realloc(s->syn, n * sizeof *p);
            if (!p)
                return errmsg_set(e, ERR_NOMEM, "out of memory");
            s->syn = p;
            s->syn_cap = n;
        }
        int rc = salca_synth_selection(s->synth_kind, (uint32_t)n, s->retention, s->synth_seed,
                                       ((uint64_t)sel->t << 32) | sel->l, sel->h, s->syn, &n_sel);
        if (rc < 0)
            return errmsg_set(e, rc, "cannot make a synthetic selection");
        idx = s->syn;
    }
    int rc;
    if (!s->any) {
        s->any = true;
        s->cur_t = sel->t;
        s->cur_l = sel->l;
        s->cur.t = sel->t;
    } else if (sel->t != s->cur_t) {
        if ((rc = close_step(s)) < 0)
            return errmsg_set(e, rc, "out of memory");
        s->cur_t = sel->t;
        s->cur_l = sel->l;
        s->cur.t = sel->t;
    } else if (sel->l != s->cur_l) {
        /* Layers run in sequence: the next starts when this one drained [decision]. */
        s->cur_l = sel->l;
        if (!s->run.p.no_layer_drain) {
            salca_sched_begin(&s->run.sch, salca_sched_end(&s->run.sch) + s->run.p.layer_gap);
            salca_sched_begin(&s->dense.sch, salca_sched_end(&s->dense.sch) + s->dense.p.layer_gap);
        }
    }
    const struct salca_pipe_params *p = &s->run.p;
    uint64_t slots = 0, ideal = hbm_pc_ideal(n_sel, p->map.h_att);
    if (!p->dense) {
        if ((rc = reserve_pc(s, n_sel)) < 0)
            return errmsg_set(e, rc, "out of memory");
        hbm_pc_map_indices(&p->map, sel->l, sel->h, idx, n_sel, s->pc);
        slots = hbm_pc_slots(&p->policy, s->pc, n_sel, p->map.h_att, &s->work, NULL, 0);
    } else {
        ideal = slots = hbm_pc_ideal(n, p->chn); /* sequential striping: alpha = 1 */
    }
    uint64_t T[SALCA_STAGES], TD[SALCA_STAGES];
    uint64_t att_mem = salca_pipe_att_mem(p, n_sel, slots);
    if (!p->dense && (p->hbm_timing || p->beta_derived)) {
        if ((rc = timing_mem(s, idx, n_sel, slots, &att_mem)) < 0)
            return errmsg_set(e, rc, "out of memory");
        salca_pipe_job_times_mem(p, n, n_sel, att_mem, T);
    } else {
        salca_pipe_job_times(p, n, n_sel, slots, T);
    }
    uint64_t at[SALCA_STAGES], dat[SALCA_STAGES];
    salca_sched_push_at(&s->run.sch, T, at);
    salca_pipe_job_times(&s->dense.p, n, n, hbm_pc_ideal(n, p->chn), TD);
    salca_sched_push_at(&s->dense.sch, TD, dat);
    for (int k = 0; k < SALCA_STAGES; k++)
        s->cur.busy[k] += T[k];
    struct salca_activity a, da;
    salca_job_activity(p, n, n_sel, &a);
    act_add(&s->act, &a);
    salca_job_activity(&s->dense.p, n, n, &da);
    act_add(&s->dact, &da);
    if (s->sched && ((rc = salca_sched_job(s, false, sel, at, T, &a, e)) < 0 ||
                     (rc = salca_sched_job(s, true, sel, dat, TD, &da, e)) < 0))
        return rc;
    s->cur.jobs++;
    s->cur.n_sel += n_sel;
    s->cur.n_ctx += n;
    s->cur.slots += slots;
    s->cur.ideal += ideal;
    s->cur.hbm_bytes += a.hbm_pre_bytes + a.hbm_att_bytes;
    s->cur.att_mem += p->dense ? 0 : att_mem;
    return 0;
}

static int bottleneck(const uint64_t busy[SALCA_STAGES])
{
    int b = 0;
    for (int k = 1; k < SALCA_STAGES; k++)
        if (busy[k] > busy[b])
            b = k;
    return b;
}

static int salca_finish(void *state, struct model_result *res, struct errmsg *e)
{
    struct salca_state *s = state;
    int rc = 0;
    if (s->any && (rc = close_step(s)) < 0)
        return errmsg_set(e, rc, "out of memory");
    const struct salca_step *t = &s->tot;
    double f_hz = salca_rat_d(s->run.p.f_cmp_ghz) * 1e9;
    double secs = (double)t->cycles / f_hz;
    double mk = t->cycles ? (double)t->cycles : 1;
    static const char *const util_names[SALCA_STAGES] = {"util_p", "util_q", "util_f", "util_a"};
    static const char *const busy_names[SALCA_STAGES] = {"busy_p", "busy_q", "busy_f", "busy_a"};
    result_row_begin(res, NULL);
    result_label(res, "bottleneck", salca_stage_name(bottleneck(t->busy)));
    result_count(res, "cycles", "cycles", t->cycles);
    for (int k = 0; k < SALCA_STAGES; k++)
        result_count(res, busy_names[k], "cycles", t->busy[k]);
    result_count(res, "hbm_bytes", "B", s->act.hbm_pre_bytes + s->act.hbm_att_bytes);
    result_count(res, "hbm_pre_bytes", "B", s->act.hbm_pre_bytes);
    result_count(res, "hbm_att_bytes", "B", s->act.hbm_att_bytes);
    result_count(res, "mac_3x2", "MAC", s->act.mac_3x2);
    result_count(res, "mac_int8", "MAC", s->act.mac_int8);
    result_count(res, "exp_ops", "op", s->act.exps);
    result_count(res, "cmp8_ops", "op", s->act.pool_cmp + s->act.filter_cmp);
    result_count(res, "hist_updates", "op", s->act.hist_upd);
    result_count(res, "pc_slots", "slots", t->slots);
    result_count(res, "pc_ideal_slots", "slots", t->ideal);
    result_count(res, "jobs", "", t->jobs);
    result_count(res, "selected_tokens", "", t->n_sel);
    result_count(res, "context_tokens", "", t->n_ctx);
    result_metric_i64(res, "steps", "", (int64_t)s->n_steps);
    result_metric(res, "seconds", "s", secs);
    result_metric(res, "tokens_per_s", "tok/s", secs > 0 ? (double)s->n_steps / secs : 0);
    result_metric(res, "alpha_measured", "1", t->ideal ? (double)t->slots / (double)t->ideal : 0);
    /* stage A's memory part and the beta_att it amounts to against the fast slots:
     * sum(slots·t_slot)/sum(att_mem) (beta_att itself up to rounding when beta_att_source
     * is input and hbm.mode fast; docs/models.md "HBM timing mode") */
    result_count(res, "att_mem_cycles", "cycles", t->att_mem);
    result_metric(res, "beta_att_used", "1",
                  t->att_mem ? (double)t->slots * salca_rat_d(s->run.p.t_slot) / (double)t->att_mem
                             : 0);
    result_metric(res, "retention_actual", "1", t->n_ctx ? (double)t->n_sel / (double)t->n_ctx : 0);
    for (int k = 0; k < SALCA_STAGES; k++)
        result_metric(res, util_names[k], "1", (double)t->busy[k] / mk);
    result_metric(res, "dense_cycles", "cycles", (double)t->dense_cycles);
    result_metric(res, "speedup_vs_dense", "1",
                  t->cycles ? (double)t->dense_cycles / (double)t->cycles : 0);
    double ej = 0, dj = 0;
    int erc = act_energy(s, &s->act, &ej);
    if (erc == 0)
        erc = act_energy(s, &s->dact, &dj);
    if (erc < 0)
        return errmsg_set(e, ERR_CONFIG, "energy table '%s' names a count the model lacks",
                          s->et.path ? s->et.path : "");
    result_metric(res, "model_energy_j", "J", ej);
    result_metric(res, "dense_energy_j", "J", dj);
    result_metric(res, "energy_gain_vs_dense", "1", ej > 0 ? dj / ej : 0);
    if (!s->steps_table)
        return result_err(res, e);
    for (size_t i = 0; i < s->n_steps; i++) {
        const struct salca_step *st = &s->steps[i];
        double c = st->cycles ? (double)st->cycles : 1;
        result_row_begin(res, "salca_steps");
        result_label(res, "bottleneck", salca_stage_name(bottleneck(st->busy)));
        result_metric_i64(res, "step", "", st->t);
        result_count(res, "cycles", "cycles", st->cycles);
        for (int k = 0; k < SALCA_STAGES; k++)
            result_count(res, busy_names[k], "cycles", st->busy[k]);
        result_count(res, "hbm_bytes", "B", st->hbm_bytes);
        result_count(res, "jobs", "", st->jobs);
        for (int k = 0; k < SALCA_STAGES; k++)
            result_metric(res, util_names[k], "1", (double)st->busy[k] / c);
        result_metric(res, "tokens_per_s", "tok/s", f_hz / c);
        result_metric(res, "alpha_measured", "1",
                      st->ideal ? (double)st->slots / (double)st->ideal : 0);
        result_metric(res, "retention_actual", "1",
                      st->n_ctx ? (double)st->n_sel / (double)st->n_ctx : 0);
        result_metric(res, "speedup_vs_dense", "1", (double)st->dense_cycles / c);
    }
    return result_err(res, e);
}

/*
 * Checkpoint hooks (model.h): the two schedulers and their step starts, the open step and
 * every closed one, the totals and activity. The scratch buffers (work, pc, syn) hold
 * nothing between records.
 */
static int salca_save(const void *state, struct sink *k, struct errmsg *e)
{
    const struct salca_state *s = state;
    uint8_t any = s->any;
    uint64_t n = s->n_steps;
    int rc = sink_write(k, &s->run.sch, sizeof s->run.sch);
    rc = rc ? rc : sink_write(k, &s->run.step_start, sizeof s->run.step_start);
    rc = rc ? rc : sink_write(k, &s->dense.sch, sizeof s->dense.sch);
    rc = rc ? rc : sink_write(k, &s->dense.step_start, sizeof s->dense.step_start);
    rc = rc ? rc : sink_write(k, &any, 1);
    rc = rc ? rc : sink_write(k, &s->cur_t, sizeof s->cur_t);
    rc = rc ? rc : sink_write(k, &s->cur_l, sizeof s->cur_l);
    rc = rc ? rc : sink_write(k, &s->cur, sizeof s->cur);
    rc = rc ? rc : sink_write(k, &s->tot, sizeof s->tot);
    rc = rc ? rc : sink_write(k, &s->act, sizeof s->act);
    rc = rc ? rc : sink_write(k, &s->dact, sizeof s->dact);
    rc = rc ? rc : sink_write(k, &n, sizeof n);
    rc = rc ? rc : sink_write(k, s->steps, s->n_steps * sizeof *s->steps);
    return rc ? errmsg_set(e, rc, "out of memory") : 0;
}

/* Whether two steps hold the same sums (t aside). */
static bool step_sums_equal(const struct salca_step *a, const struct salca_step *b)
{
    bool eq = a->cycles == b->cycles && a->dense_cycles == b->dense_cycles && a->jobs == b->jobs &&
              a->n_sel == b->n_sel && a->n_ctx == b->n_ctx && a->slots == b->slots &&
              a->ideal == b->ideal && a->hbm_bytes == b->hbm_bytes && a->att_mem == b->att_mem;
    for (int k = 0; k < SALCA_STAGES; k++)
        eq = eq && a->busy[k] == b->busy[k];
    return eq;
}

/*
 * Every value is checked before it is used (docs/models.md#checkpoints-replay-engine-convention):
 * the step flag 0 or 1, no steps nor open step before the first selection, the open step's number
 * the current one, and the totals equal to the sum of the closed steps.
 */
static int salca_load(void *state, struct model_ckpt_in *in, struct errmsg *e)
{
    struct salca_state *s = state;
    bool any = false;
    uint64_t n = 0;
    const char *why = "truncated";
    int rc = model_ckpt_get(in, &s->run.sch, sizeof s->run.sch);
    rc = rc ? rc : model_ckpt_get(in, &s->run.step_start, sizeof s->run.step_start);
    rc = rc ? rc : model_ckpt_get(in, &s->dense.sch, sizeof s->dense.sch);
    rc = rc ? rc : model_ckpt_get(in, &s->dense.step_start, sizeof s->dense.step_start);
    if (!rc && (rc = model_ckpt_get_bools(in, &any, 1)))
        why = "the step flag is not 0 or 1";
    rc = rc ? rc : model_ckpt_get(in, &s->cur_t, sizeof s->cur_t);
    rc = rc ? rc : model_ckpt_get(in, &s->cur_l, sizeof s->cur_l);
    rc = rc ? rc : model_ckpt_get(in, &s->cur, sizeof s->cur);
    rc = rc ? rc : model_ckpt_get(in, &s->tot, sizeof s->tot);
    rc = rc ? rc : model_ckpt_get(in, &s->act, sizeof s->act);
    rc = rc ? rc : model_ckpt_get(in, &s->dact, sizeof s->dact);
    rc = rc ? rc : model_ckpt_get(in, &n, sizeof n);
    if (!rc && n > (in->len - in->pos) / sizeof *s->steps)
        rc = ERR_DATA;
    static const struct salca_step zero;
    if (!rc && (any ? s->cur.t != s->cur_t : n || !step_sums_equal(&s->cur, &zero))) {
        why = "the open step disagrees with the step flag";
        rc = ERR_DATA;
    }
    if (rc)
        return errmsg_set(e, rc, "bad salca state at byte %zu: %s", in->pos, why);
    s->any = any;
    if (n) {
        void *p;
        if ((rc = model_ckpt_get_alloc(in, &p, (size_t)n * sizeof *s->steps)))
            return errmsg_set(e, rc, "cannot read salca steps");
        mem_free(s->steps);
        s->steps = p;
        s->n_steps = s->cap_steps = (size_t)n;
    }
    struct salca_step sum = {0};
    for (size_t i = 0; i < s->n_steps; i++)
        step_add(&sum, &s->steps[i]);
    if (!step_sums_equal(&sum, &s->tot))
        return errmsg_set(e, ERR_DATA,
                          "bad salca state: the totals are not the sum of the %zu steps",
                          s->n_steps);
    return 0;
}

/*
 * Memory estimate (model.h; docs/models.md#memory-estimates-replay-engine-convention): the state,
 * one step record per decode step (capacity doubled), the per-selection PC and synonym arrays of
 * the largest context (2 + 4 bytes per token, context = n0 + N + 1), one row of 40 columns and,
 * with steps_table, one row of 20 columns per step. Without a header: the tiny synthetic capture's
 * 4096 tokens and 64 steps.
 */
static uint64_t salca_estimate(const struct hw_config *cfg, const Acceltrace__TraceHeader *hdr)
{
    const Acceltrace__SalcaHeader *sh = hdr ? hdr->salca : NULL;
    uint64_t steps = sh ? sh->n_steps : 64;
    uint64_t ctx = sh ? (uint64_t)sh->n0 + sh->n_steps + 1 : 4096;
    uint64_t b = sizeof(struct salca_state) + 2 * steps * sizeof(struct salca_step) + 6 * ctx +
                 MODEL_RESULT_ROW_BYTES(40);
    if (hw_config_bool(cfg, "steps_table"))
        b += steps * MODEL_RESULT_ROW_BYTES(20);
    /* HBM timing (hbm.mode timing or derived beta_att): per token of the largest context
     * 24 bytes of hbm_timing_work and 6 of the spread job, capacities doubled, and about
     * 2 KiB of bank state per attention PC */
    if (strcmp(hw_config_str(cfg, "hbm.mode"), "fast") ||
        !strcmp(hw_config_str(cfg, "beta_att_source"), "derived"))
        b += 2 * 30 * ctx + 2048 * (uint64_t)hw_config_int(cfg, "h_att");
    return b;
}

/* Pass estimate (model.h): nothing shared; per SalcaSelect in flight its varint selection
 * (2 bytes per token on average) and prepare's decoded indices (4 bytes), over the largest
 * context n0 + N + 1, plus 1 KiB. Without a header: 4096 tokens. */
static void salca_estimate_pass(const Acceltrace__TraceHeader *hdr, uint64_t *shared_bytes,
                                uint64_t *per_record_bytes)
{
    const Acceltrace__SalcaHeader *sh = hdr ? hdr->salca : NULL;
    uint64_t ctx = sh ? (uint64_t)sh->n0 + sh->n_steps + 1 : 4096;
    *shared_bytes = 0;
    *per_record_bytes = 6 * ctx + 1024;
}

const struct model_ops model_salca_ops = {
    .name = "salca",
    .workload = "salca",
    .summary = "Salca pipeline (P/Q/F/A, double-buffered) with measured HBM PC conflicts",
    .schema = &salca_schema,
    .default_config = "configs/salca-hbm2.json",
    .default_energy_table = "configs/salca-energy.json",
    .new = salca_new,
    .consume = salca_consume,
    .finish = salca_finish,
    .free = salca_free,
    .estimate_bytes = salca_estimate,
    .estimate_pass = salca_estimate_pass,
    .save = salca_save,
    .load = salca_load,
    .prepare = salca_prepare,
    .aux_free = salca_aux_free,
};
