/*
 * salca_pipe: the Salca accelerator's pipeline timing (see salca_model.h;
 * docs/models.md#salca-replay): the stage times of one job, the five-stage schedule, the
 * activity of a job, and the synthetic selections of replays without a selection in the
 * trace. Pure functions: the replayed model "salca" that drives them is salca_model.c.
 */
#include "replay/salca_model.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/mem.h"
#include "common/rng.h"

__extension__ typedef unsigned __int128 salca_u128;

const char *salca_stage_name(int k)
{
    static const char *const names[SALCA_STAGES] = {"P", "Q", "F", "A"};
    return k >= 0 && k < SALCA_STAGES ? names[k] : "?";
}

void salca_pipe_params_default(struct salca_pipe_params *p)
{
    memset(p, 0, sizeof *p);
    p->d = 128;      /* [derived] docs/salca.md#notation */
    p->r = 64;       /* s_f·d, s_f = 1/2 [paper] */
    p->b_pre = 160;  /* 2·d·s_f + 32 [paper] */
    p->b_att = 2048; /* 16·d [paper] */
    p->chn = 32;
    p->h_pre = 11; /* final design [paper] */
    p->h_att = 16;
    p->p_pre = 16;
    p->p_att = 1;
    p->bw = salca_rat_int(128);
    p->f_hbm_ghz = salca_rat_int(1);
    p->f_cmp_ghz = (struct salca_rat){1, 2};
    p->beta_pre = (struct salca_rat){19, 20};
    p->beta_att = (struct salca_rat){11, 20};
    p->alpha = (struct salca_rat){117, 100};
    p->alpha_mode = SALCA_ALPHA_MEASURED;
    p->map = (struct hbm_pc_mapping){HBM_PC_MAP_MOD, 16, 0};
    p->policy = (struct hbm_pc_policy_cfg){HBM_PC_INORDER, 16, 1, 128};
    p->dense_tokens_per_cycle = 4; /* ASIC_D [decision, docs/salca.md#pipeline-model] */
    p->pool_w = 5;
    hbm_timing_cfg_default(&p->hbm);
    p->hbm.token_bytes = 0; /* b_att/8 */
}

int salca_pipe_params_finish(struct salca_pipe_params *p, struct errmsg *e)
{
    int rc;
    if (p->d < 1 || p->b_pre < 1 || p->b_att < 1 || p->chn < 1 || p->p_pre < 1 || p->p_att < 1 ||
        p->dense_tokens_per_cycle < 1)
        return errmsg_set(e, ERR_CONFIG, "d, bit counts, chn, p_pre, p_att must be positive");
    if (p->bw.num <= 0 || p->f_hbm_ghz.num <= 0 || p->f_cmp_ghz.num <= 0 || p->beta_pre.num <= 0 ||
        p->beta_att.num <= 0 || p->alpha.num <= 0)
        return errmsg_set(e, ERR_CONFIG, "bw, clocks, beta and alpha must be positive");
    if (!p->dense) {
        if (p->h_pre < 1 || p->h_att < 1)
            return errmsg_set(e, ERR_CONFIG, "h_pre and h_att must be positive");
        if (p->h_pre + p->h_att > p->chn)
            return errmsg_set(e, ERR_CONFIG,
                              "h_pre + h_att = %u + %u exceeds chn = %u pseudo-channels", p->h_pre,
                              p->h_att, p->chn);
        p->map.h_att = p->h_att;
    } else {
        /* ASIC_D stripes every token over all chn PCs [decision, docs/salca.md#pipeline-model]. */
        p->map.h_att = p->chn;
        p->map.map = HBM_PC_MAP_MOD;
    }
    if ((rc = hbm_pc_mapping_check(&p->map, e)) < 0)
        return rc;
    if (p->policy.p_iss == 0)
        p->policy.p_iss = p->map.h_att;
    if (p->policy.depth < 1 || p->policy.window < 1)
        return errmsg_set(e, ERR_CONFIG, "FIFO depth and window must be at least 1");
    struct salca_rat t, bwf;
    /* t_slot = b_att·f_CMP/(bw·f_HBM): cycles one PC needs per K-V pair
     * [docs/salca.md#pipeline-model]. */
    if ((rc = salca_rat_mul(p->bw, p->f_hbm_ghz, &bwf)) < 0 ||
        (rc = salca_rat_mul(salca_rat_int(p->b_att), p->f_cmp_ghz, &t)) < 0 ||
        (rc = salca_rat_div(t, bwf, &p->t_slot)) < 0 ||
        (rc = salca_rat_div(p->t_slot, p->beta_att, &p->x_att)) < 0)
        goto overflow;
    /* x_pre = b_pre·f_CMP/(beta_pre·h_pre·bw·f_HBM) (paper T_pre = n/(beta_pre·m_pre) with
     * m_pre = h_pre·bw·f_HBM/(b_pre·f_CMP)). */
    uint32_t hp = p->dense ? p->chn : p->h_pre;
    if ((rc = salca_rat_mul(salca_rat_int(p->b_pre), p->f_cmp_ghz, &t)) < 0 ||
        (rc = salca_rat_div(t, bwf, &t)) < 0 || (rc = salca_rat_div(t, p->beta_pre, &t)) < 0 ||
        (rc = salca_rat_div(t, salca_rat_int(hp), &p->x_pre)) < 0)
        goto overflow;
    /* global: alpha·t_slot/(h_att·beta_att) (paper T_att = n·r·alpha/(beta_att·m_att)). */
    if ((rc = salca_rat_mul(p->alpha, p->x_att, &t)) < 0 ||
        (rc = salca_rat_div(t, salca_rat_int(p->map.h_att), &p->x_glob)) < 0)
        goto overflow;
    if (!p->dense && (p->hbm_timing || p->beta_derived)) {
        /* the timing model's token: one K-V pair of b_att bits per PC unless set */
        if (p->hbm.token_bytes == 0)
            p->hbm.token_bytes = p->b_att / 8;
        struct errmsg te = {0};
        if ((rc = hbm_timing_check(&p->hbm, &te)) < 0)
            return errmsg_set(e, rc,
                              "hbm.* keys with hbm.mode timing or beta_att_source derived: %s",
                              errmsg_text(&te));
        if ((rc = salca_rat_of_double(p->hbm.t.tck_ns, &t)) < 0 ||
            (rc = salca_rat_mul(t, p->f_cmp_ghz, &p->x_dram)) < 0)
            goto overflow;
    }
    return 0;
overflow:
    return errmsg_set(e, ERR_CONFIG, "parameters too large for exact arithmetic");
}

/* ceil(v·x) for a non-negative rational x, exact. */
static uint64_t ceil_mul(uint64_t v, struct salca_rat x)
{
    salca_u128 num = (salca_u128)v * (uint64_t)x.num;
    salca_u128 q = num / (uint64_t)x.den;
    if (num % (uint64_t)x.den)
        q++;
    return q > UINT64_MAX ? UINT64_MAX : (uint64_t)q;
}

static uint64_t ceil_div(uint64_t a, uint64_t b)
{
    return a / b + (a % b != 0);
}

static uint64_t max64(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

void salca_pipe_job_times(const struct salca_pipe_params *p, uint64_t n, uint64_t n_sel,
                          uint64_t slots, uint64_t T[SALCA_STAGES])
{
    if (p->dense) {
        /* ASIC_D: stage A only; all n tokens over chn PCs at beta_pre (sequential), at
         * dense_tokens_per_cycle tokens per cycle [docs/salca.md#pipeline-model, decision]. */
        struct salca_rat x;
        if (salca_rat_div(p->t_slot, p->beta_pre, &x) < 0)
            x = p->x_att;
        T[SALCA_ST_P] = T[SALCA_ST_Q] = T[SALCA_ST_F] = 0;
        T[SALCA_ST_A] =
            max64(ceil_div(n, p->dense_tokens_per_cycle), ceil_mul(ceil_div(n, p->chn), x)) +
            p->c_stage[SALCA_ST_A];
        return;
    }
    /* P: max(ceil(n/p_pre), ceil(n·x_pre)) [docs/salca.md#pipeline-model; paper T_pre]. */
    T[SALCA_ST_P] = max64(ceil_div(n, p->p_pre), ceil_mul(n, p->x_pre)) + p->c_stage[SALCA_ST_P];
    /* Q: ceil(n/64); F: 4 + ceil(n/64): 64-way datapath, T_Q + T_F ~ 2n/64 [paper]. */
    T[SALCA_ST_Q] = ceil_div(n, 64) + p->c_stage[SALCA_ST_Q];
    T[SALCA_ST_F] = 4 + ceil_div(n, 64) + p->c_stage[SALCA_ST_F];
    T[SALCA_ST_A] = max64(ceil_div(n_sel, p->p_att), salca_pipe_att_mem(p, n_sel, slots)) +
                    p->c_stage[SALCA_ST_A];
}

uint64_t salca_pipe_att_mem(const struct salca_pipe_params *p, uint64_t n_sel, uint64_t slots)
{
    /* ceil(slots·t_slot/beta_att) [docs/salca.md#pipeline-model]; global alpha:
     * ceil(|S|·alpha·t_slot/(h_att·beta_att)) [paper T_att]. */
    return p->alpha_mode == SALCA_ALPHA_GLOBAL ? ceil_mul(n_sel, p->x_glob)
                                               : ceil_mul(slots, p->x_att);
}

void salca_pipe_job_times_mem(const struct salca_pipe_params *p, uint64_t n, uint64_t n_sel,
                              uint64_t att_mem, uint64_t T[SALCA_STAGES])
{
    salca_pipe_job_times(p, n, n_sel, 0, T);
    if (p->dense)
        return;
    T[SALCA_ST_A] = max64(ceil_div(n_sel, p->p_att), att_mem) + p->c_stage[SALCA_ST_A];
}

uint64_t salca_pipe_att_mem_derived(const struct salca_pipe_params *p, uint64_t n_sel,
                                    uint64_t slots, uint64_t spread_cycles, uint64_t ideal_cycles)
{
    /* slots·t_slot/beta, beta = ideal/spread; global alpha: |S|·alpha·t_slot/(h_att·beta)
     * [docs/models.md "HBM timing mode"] */
    if (ideal_cycles == 0)
        return 0;
    salca_u128 num = (salca_u128)spread_cycles * (uint64_t)p->t_slot.num;
    salca_u128 den = (salca_u128)ideal_cycles * (uint64_t)p->t_slot.den;
    if (p->alpha_mode == SALCA_ALPHA_GLOBAL) {
        num *= (salca_u128)n_sel * (uint64_t)p->alpha.num;
        den *= (salca_u128)p->map.h_att * (uint64_t)p->alpha.den;
    } else {
        num *= slots;
    }
    salca_u128 q = num / den + (num % den != 0);
    return q > UINT64_MAX ? UINT64_MAX : (uint64_t)q;
}

uint64_t salca_pipe_dram_to_cmp(const struct salca_pipe_params *p, uint64_t cycles)
{
    return p->x_dram.den ? ceil_mul(cycles, p->x_dram) : cycles;
}

void salca_job_activity(const struct salca_pipe_params *p, uint64_t n, uint64_t n_sel,
                        struct salca_activity *a)
{
    memset(a, 0, sizeof *a);
    if (p->dense) {
        a->hbm_att_bytes = n * (p->b_att / 8);
        a->mac_int8 = 2 * n * p->d;
        a->exps = n;
        return;
    }
    /* docs/salca.md#pipeline-model "HBM bytes" and "activity counts" */
    a->hbm_pre_bytes = ceil_div(n * p->b_pre, 8);
    a->hbm_att_bytes = ceil_div(n_sel * p->b_att, 8);
    a->mac_3x2 = n * p->r;
    a->mac_int8 = 2 * n_sel * p->d;
    a->exps = n_sel;
    a->pool_cmp = n * (p->pool_w > 0 ? p->pool_w - 1 : 0);
    a->hist_upd = n;
    a->filter_cmp = n;
}

void salca_sched_begin(struct salca_sched *s, uint64_t t0)
{
    s->t0 = t0;
    s->jobs = 0;
    for (int k = 0; k < SALCA_STAGES; k++)
        s->fin1[k] = s->fin2[k] = t0;
}

void salca_sched_push(struct salca_sched *s, const uint64_t T[SALCA_STAGES])
{
    uint64_t start[SALCA_STAGES];
    salca_sched_push_at(s, T, start);
}

void salca_sched_push_at(struct salca_sched *s, const uint64_t T[SALCA_STAGES],
                         uint64_t start[SALCA_STAGES])
{
    uint64_t fin[SALCA_STAGES];
    uint64_t prev = s->t0; /* job available at the sequence start */
    for (int k = 0; k < SALCA_STAGES; k++) {
        /* start[k][j] = max(finish[k][j-1], finish[k-1][j], finish[k+1][j-2]): two buffers
         * between neighbouring stages [docs/salca.md#pipeline-model, decision]. */
        uint64_t st = max64(s->fin1[k], prev);
        if (k + 1 < SALCA_STAGES)
            st = max64(st, s->fin2[k + 1]);
        start[k] = st;
        fin[k] = st + T[k];
        prev = fin[k];
    }
    for (int k = 0; k < SALCA_STAGES; k++) {
        s->fin2[k] = s->fin1[k];
        s->fin1[k] = fin[k];
    }
    s->jobs++;
}

uint64_t salca_sched_end(const struct salca_sched *s)
{
    return s->jobs ? s->fin1[SALCA_STAGES - 1] : s->t0;
}

/* ---- synthetic selections ---- */

static size_t mark(uint8_t *sel, uint32_t n, int64_t lo, int64_t hi)
{
    size_t added = 0;
    if (lo < 0)
        lo = 0;
    if (hi > (int64_t)n)
        hi = n;
    for (int64_t i = lo; i < hi; i++)
        if (!sel[i]) {
            sel[i] = 1;
            added++;
        }
    return added;
}

int salca_synth_parse(const char *s, enum salca_synth_kind *out)
{
    static const char *const names[] = {"uniform", "clustered", "needle"};
    for (int k = 0; s && k < 3; k++)
        if (!strcmp(s, names[k])) {
            *out = (enum salca_synth_kind)k;
            return 0;
        }
    return ERR_USAGE;
}

int salca_synth_selection(enum salca_synth_kind kind, uint32_t n, double retention, uint64_t seed,
                          uint64_t a, uint64_t b, uint32_t *idx, size_t *count)
{
    *count = 0;
    if (n == 0 || !(retention > 0) || retention > 1 || (int)kind < 0 || (int)kind > 2)
        return ERR_USAGE;
    size_t k = (size_t)ceil(retention * (double)n);
    if (k > n)
        k = n;
    struct rng r;
    rng_stream(&r, seed, "salca_synth_selection", a, b);
    if (kind == SALCA_SYNTH_UNIFORM) {
        /* Selection sampling (Knuth's algorithm S): exactly k, sorted, O(n). */
        size_t got = 0;
        for (uint32_t i = 0; i < n && got < k; i++)
            if ((double)(n - i) * rng_uniform(&r) < (double)(k - got))
                idx[got++] = i;
        *count = got;
        return 0;
    }
    uint8_t *sel = mem_calloc(n, 1);
    if (!sel)
        return ERR_NOMEM;
    size_t have = 0;
    if (k >= n) {
        have = mark(sel, n, 0, n);
    } else if (kind == SALCA_SYNTH_NEEDLE) {
        have += mark(sel, n, 0, 4);               /* sinks */
        have += mark(sel, n, (int64_t)n - 64, n); /* recent tokens */
        for (int s = 0; s < 2 && have < k; s++) { /* two needle spans of 64 */
            int64_t st = (int64_t)rng_below(&r, n);
            have += mark(sel, n, st, st + 64);
        }
    } else {
        have += mark(sel, n, 0, 4);               /* sinks (StreamingLLM's 4) */
        have += mark(sel, n, (int64_t)n - 16, n); /* locality at the end */
    }
    /* Peaks: pool width 5 selects [p - 2, p + 2] around each one (docs/salca.md#max-pooling, w =
     * 5). */
    while (have < k) {
        int64_t p = (int64_t)rng_below(&r, n);
        have += mark(sel, n, p - 2, p + 3);
    }
    size_t got = 0;
    for (uint32_t i = 0; i < n; i++)
        if (sel[i])
            idx[got++] = i;
    mem_free(sel);
    *count = got;
    return 0;
}
