/*
 * disc_model: DiSC core-array replay (docs/models.md#disc): the replay-engine model "disc"
 * (replay/model.h) over a DiSC trace. The cost functions it applies are in disc_cost.c.
 */
#include "replay/disc_model.h"

#include <assert.h>
#include <jansson.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/io.h"
#include "common/mem.h"
#include "formats/bitset.h"
#include "formats/disc_hash.h"
#include "replay/energy.h"
#include "replay/model.h"
#include "traces/trace_disc.h"
/* ---------------------------------------------------------------------------------------
 * The replay-engine model "disc" (replay/model.h).
 */
#define DISC_MAX_STEPS 100000u
#define DISC_MAX_DEPTH 1024u
#define DISC_MAX_TOKENS (1u << 20)

static const struct hw_key disc_keys[] = {
    HW_KEY_FLOAT("clock_ghz", "GHz", 0.01, 100, 1.0, "core clock [paper]"),
    HW_KEY_INT("cores", "", 1, 65536, 38, "C_core, core count [paper]"),
    HW_KEY_INT("dpu_count", "", 2, 65536, 64, "P_dpu, DPUs per core, power of two [decision]"),
    HW_KEY_INT("dpu_lanes", "", 1, 65536, 64, "L_lane, MAC lanes per DPU [decision]"),
    HW_KEY_FLOAT("dpu_eta", "", 0.01, 1, 0.90, "fixed DPU efficiency [decision]"),
    HW_KEY_INT("vpu_simds", "", 2, 65536, 64, "S_vpu, SIMD engines per core, power of two"),
    /* calibrated: the smallest of 16, 24, 32, 48, 64 with DiSC_All >= DiSC_CTR at
     * pixart-sigma-xl 512 px (acceltrace reproduce; docs/models.md, VPU width); the
     * docs/disc.md#replay-configuration table has 16 */
    HW_KEY_INT("vpu_width", "", 1, 65536, 24,
               "W_vpu, FMA lanes per SIMD engine [calibrated: All >= CTR; docs/disc.md]"),
    HW_KEY_INT("vpu_bus_elems", "", 1, 65536, 16,
               "reduced output elements per cycle on the reduction bus [decision]"),
    HW_KEY_INT("vpu_cycles.norm_mod", "", 0, 1000, 3, "lane-cycles per element, LN+modulate"),
    HW_KEY_INT("vpu_cycles.residual", "", 0, 1000, 1, "lane-cycles per element, residual"),
    HW_KEY_INT("vpu_cycles.gate_residual", "", 0, 1000, 1, "lane-cycles, gate+residual"),
    HW_KEY_INT("vpu_cycles.softmax", "", 0, 1000, 4, "lane-cycles per element, softmax"),
    HW_KEY_INT("vpu_cycles.threshold", "", 0, 1000, 1, "lane-cycles, ST threshold compare"),
    HW_KEY_INT("vpu_cycles.renorm", "", 0, 1000, 1, "lane-cycles, ST renormalisation"),
    HW_KEY_INT("vpu_cycles.gelu", "", 0, 1000, 4, "lane-cycles per element, GELU"),
    HW_KEY_INT("vpu_cycles.ctr_diff", "", 0, 1000, 2, "lane-cycles, CTR latent difference"),
    HW_KEY_INT("vpu_cycles.sampler", "", 0, 1000, 8, "lane-cycles per latent element, sampler"),
    HW_KEY_INT("selector_width", "", 1, 65536, 64,
               "latent elements per cycle in the token selector [decision]"),
    HW_KEY_STRING("hash", "mul", "mod|mul|range", "SDDMM/SpMM placement hash [paper: mul]"),
    HW_KEY_INT("hash_k_odd", "", 1, 4294967295.0, 2654435761.0,
               "multiplicative-hash constant, odd (0x9E3779B1) [decision]"),
    HW_KEY_FLOAT("hbm_gbs", "GB/s", 1, 1e6, 2048, "HBM bandwidth, 8 HBM2 stacks [paper]"),
    HW_KEY_FLOAT("scratchpad_mib", "MiB", 0, 1e6, 40, "global scratchpad [paper 40 MB]"),
    HW_KEY_INT("elem_bytes", "B", 1, 8, 2, "E_b, bytes per operand (FP16) [derived]"),
    HW_KEY_BOOL("overlap_spmm_proj", 1, "SpMM overlaps the output projection [paper]"),
    HW_KEY_STRING("modes", "baseline,ctr,all", NULL,
                  "comma-separated modes to replay: baseline, ctr, all"),
    HW_KEY_BOOL("ops_table", 1, "write the per-op table ops.csv"),
    HW_KEY_STRING("energy_table", "", NULL,
                  "energy table for the in-model A100 comparison; \"\" = built-in "
                  "(= configs/disc-energy.json)"),
    HW_KEY_STRING("gpu", "a100-pcie-80gb",
                  "a100-pcie-80gb|a100-pcie-40gb|a100-sxm-80gb|h100-pcie|h100-sxm|h200",
                  "GPU baseline preset of speedup and energy (docs/models.md#gpu-baselines)"),
};

static bool is_pow2(int64_t x)
{
    return x >= 2 && (x & (x - 1)) == 0;
}

static int parse_modes(const char *s, bool modes[DISC_MODES])
{
    for (int m = 0; m < DISC_MODES; m++)
        modes[m] = false;
    int any = 0;
    while (s && *s) {
        const char *c = strchr(s, ',');
        size_t len = c ? (size_t)(c - s) : strlen(s);
        int found = -1;
        for (int m = 0; m < DISC_MODES; m++)
            if (strlen(disc_mode_name(m)) == len && !strncmp(s, disc_mode_name(m), len))
                found = m;
        if (found < 0)
            return -1;
        modes[found] = true;
        any = 1;
        s = c ? c + 1 : s + len;
    }
    return any ? 0 : -1;
}

static int disc_check(const struct hw_config *cfg, struct errmsg *e)
{
    /* docs/disc.md#replay-configuration: the hashes and log2 S_vpu need powers of two */
    if (!is_pow2(hw_config_int(cfg, "dpu_count")))
        return errmsg_set(e, ERR_CONFIG, "dpu_count must be a power of two >= 2");
    if (!is_pow2(hw_config_int(cfg, "vpu_simds")))
        return errmsg_set(e, ERR_CONFIG, "vpu_simds must be a power of two >= 2");
    if ((hw_config_int(cfg, "hash_k_odd") & 1) == 0)
        return errmsg_set(e, ERR_CONFIG, "hash_k_odd must be odd");
    bool m[DISC_MODES];
    if (parse_modes(hw_config_str(cfg, "modes"), m) < 0)
        return errmsg_set(e, ERR_CONFIG, "modes must list baseline, ctr and/or all ('%s')",
                          hw_config_str(cfg, "modes"));
    return 0;
}

static const struct hw_schema disc_schema = {
    .model = "disc",
    .keys = disc_keys,
    .n_keys = sizeof disc_keys / sizeof disc_keys[0],
    .check = disc_check,
};

/* Per (step, block): ST statistics summed over batch and heads. */
struct disc_cell {
    double r_p, r_s;         /* known (recorded or recomputed) */
    uint64_t nnz;            /* all masks */
    double kept_rp, kept_rs; /* kept masks only, for the estimate */
    uint64_t kept_nnz;
    uint32_t masks, kept;
};

/* A mask whose R must be estimated (or recomputed once its step record arrives). */
struct disc_pending {
    uint32_t step, block;
    uint64_t nnz;
    uint8_t *bits; /* kept bits awaiting the step's token mask, or NULL */
    size_t bits_len;
};

struct disc_state {
    struct disc_hw hw;
    struct disc_energy en;
    struct gpu_hw gpu; /* the baseline GPU (GPU-side time: host_us 0) */
    bool modes[DISC_MODES];
    bool ops_table;
    struct disc_dims dm;
    uint32_t steps; /* K */
    bool st_on;
    /* where the configured statistics sit in the recorded lb arrays (-1: not recorded) */
    int lb_hash, lb_up, lb_us, lb_nu, lb_nh;
    struct disc_lb *lb; /* recount from kept bits (U = P_dpu, S_vpu), lazily */
    int lb_ip, lb_is;
    /* per step */
    bool *have_step;
    uint64_t *n_kept;
    bool *generated;
    uint8_t **token_mask;    /* [K] token bitsets (N bits), NULL before the record */
    struct disc_cell *cells; /* [K][L] */
    uint64_t n_masks;
    struct disc_pending *pend;
    size_t n_pend, cap_pend;
    uint64_t masks_estimated;
    struct model_sched_sink *sched; /* export timeline (model.h), or NULL */
};

static void disc_free(void *state)
{
    struct disc_state *s = state;
    if (!s)
        return;
    if (s->token_mask)
        for (uint32_t k = 0; k < s->steps; k++)
            mem_free(s->token_mask[k]);
    for (size_t i = 0; i < s->n_pend; i++)
        mem_free(s->pend[i].bits);
    mem_free(s->pend);
    mem_free(s->token_mask);
    mem_free(s->have_step);
    mem_free(s->n_kept);
    mem_free(s->generated);
    mem_free(s->cells);
    disc_lb_free(s->lb);
    mem_free(s);
}

static int find_u32(const uint32_t *v, size_t n, uint32_t x)
{
    for (size_t i = 0; i < n; i++)
        if (v[i] == x)
            return (int)i;
    return -1;
}

int disc_dims_from_header(const Acceltrace__TraceHeader *hdr, const char *trace_path,
                          struct disc_dims *dm, uint32_t *steps, struct errmsg *e)
{
    const Acceltrace__DiscHeader *dh = hdr ? hdr->disc : NULL;
    if (!dh)
        return errmsg_set(e, ERR_DATA, "trace has no disc header ('%s')", trace_path);
    memset(dm, 0, sizeof *dm);
    dm->depth = dh->depth, dm->d = dh->hidden, dm->h = dh->heads, dm->dh = dh->head_dim;
    dm->text = dh->text_tokens, dm->dc = dh->caption_width, dm->n = dh->tokens;
    dm->batch = dh->batch ? dh->batch : 1;
    dm->cin = dh->in_channels, dm->cout = dh->out_channels, dm->patch = dh->patch;
    dm->lat_h = dh->latent_h, dm->lat_w = dh->latent_w;
    dm->ctr_on = dh->ctr_mode && strcmp(dh->ctr_mode, "off") != 0 && dh->ctr_mode[0];
    dm->class_cond = disc_header_class_cond(hdr);
    *steps = dh->steps;
    if (dm->depth == 0 || dm->depth > DISC_MAX_DEPTH || dm->n == 0 || dm->n > DISC_MAX_TOKENS ||
        dm->h == 0 || dm->h > 4096 || dm->d == 0 || dm->d > 65536 || dm->dh == 0 ||
        dm->batch > 64 || *steps == 0 || *steps > DISC_MAX_STEPS || dm->patch == 0 ||
        dm->patch > 64 || dm->lat_h > 65536 || dm->lat_w > 65536 || dm->text > 65536 ||
        dm->dc > 65536 || dm->cin > 1024 || dm->cout > 1024)
        return errmsg_set(e, ERR_DATA, "disc header has impossible dimensions ('%s')", trace_path);
    return 0;
}

static int disc_new(void **state, const struct hw_config *cfg, const struct model_env *env,
                    struct errmsg *e)
{
    *state = NULL;
    const Acceltrace__TraceHeader *hdr = env->hdr;
    const Acceltrace__DiscHeader *dh = hdr ? hdr->disc : NULL;
    if (!dh)
        return errmsg_set(e, ERR_DATA, "trace has no disc header ('%s')", env->trace_path);
    int rc = disc_check(cfg, e);
    if (rc < 0)
        return rc;
    struct disc_state *s = mem_calloc(1, sizeof *s);
    if (!s)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    struct disc_hw *hw = &s->hw;
    disc_hw_default(hw);
    hw->clock_ghz = hw_config_float(cfg, "clock_ghz");
    hw->cores = (int)hw_config_int(cfg, "cores");
    hw->dpu_count = (int)hw_config_int(cfg, "dpu_count");
    hw->dpu_lanes = (int)hw_config_int(cfg, "dpu_lanes");
    hw->dpu_eta = hw_config_float(cfg, "dpu_eta");
    hw->vpu_simds = (int)hw_config_int(cfg, "vpu_simds");
    hw->vpu_width = (int)hw_config_int(cfg, "vpu_width");
    hw->vpu_bus_elems = (int)hw_config_int(cfg, "vpu_bus_elems");
    for (int c = 0; c < DISC_VC_COUNT; c++) {
        char key[64];
        snprintf(key, sizeof key, "vpu_cycles.%s", disc_vclass_names[c]);
        hw->vpu_cycles[c] = (int)hw_config_int(cfg, key);
    }
    hw->selector_width = (int)hw_config_int(cfg, "selector_width");
    hw->hash = disc_hash_from_name(hw_config_str(cfg, "hash"));
    hw->hash_k_odd = (uint32_t)hw_config_int(cfg, "hash_k_odd");
    hw->hbm_gbs = hw_config_float(cfg, "hbm_gbs");
    hw->scratchpad_mib = hw_config_float(cfg, "scratchpad_mib");
    hw->elem_bytes = (int)hw_config_int(cfg, "elem_bytes");
    hw->overlap_spmm_proj = hw_config_bool(cfg, "overlap_spmm_proj");
    if (parse_modes(hw_config_str(cfg, "modes"), s->modes) < 0) {
        rc = errmsg_set(e, ERR_CONFIG, "bad modes '%s'", hw_config_str(cfg, "modes"));
        goto fail;
    }
    s->ops_table = hw_config_bool(cfg, "ops_table");
    s->sched = env->sched;
    disc_energy_default(&s->en);
    const char *et = hw_config_str(cfg, "energy_table");
    if (et && *et && (rc = disc_energy_load(&s->en, et, e)) < 0)
        goto fail;
    if (gpu_preset_get(hw_config_str(cfg, "gpu"), &s->gpu)) {
        rc = errmsg_set(e, ERR_CONFIG, "unknown GPU preset '%s'", hw_config_str(cfg, "gpu"));
        goto fail;
    }
    s->gpu.host_us = 0; /* kernel time, as a profiler measures it */

    struct disc_dims *dm = &s->dm;
    if ((rc = disc_dims_from_header(hdr, env->trace_path, dm, &s->steps, e)) < 0)
        goto fail;
    s->st_on = dh->st_mode && dh->st_mode[0] && strcmp(dh->st_mode, "off") != 0;
    /* recorded load-balance sets (docs/disc.md#trace-records header;
     * docs/disc.md#sparse-ops-ctr-traffic-and-overlap "missing data" rule) */
    s->lb_nh = (int)dh->n_lb_hashes;
    s->lb_nu = (int)dh->n_lb_units;
    s->lb_hash = -1;
    for (size_t i = 0; i < dh->n_lb_hashes; i++)
        if (disc_hash_from_name(dh->lb_hashes[i]) == hw->hash)
            s->lb_hash = (int)i;
    if (hw->hash == DISC_HASH_MUL && dh->lb_k_odd != hw->hash_k_odd)
        s->lb_hash = -1;
    s->lb_up = find_u32(dh->lb_units, dh->n_lb_units, (uint32_t)hw->dpu_count);
    s->lb_us = find_u32(dh->lb_units, dh->n_lb_units, (uint32_t)hw->vpu_simds);
    s->lb_ip = s->lb_is = -1;

    const size_t k = s->steps;
    s->have_step = mem_calloc(k, sizeof *s->have_step);
    s->n_kept = mem_calloc(k, sizeof *s->n_kept);
    s->generated = mem_calloc(k, sizeof *s->generated);
    s->token_mask = mem_calloc(k, sizeof *s->token_mask);
    s->cells = mem_calloc(k * dm->depth, sizeof *s->cells);
    if (!s->have_step || !s->n_kept || !s->generated || !s->token_mask || !s->cells) {
        rc = errmsg_set(e, ERR_NOMEM, "out of memory");
        goto fail;
    }
    *state = s;
    return 0;
fail:
    disc_free(s);
    return rc;
}

/* R_P and R_S of kept mask bits over the computed rows of its step
 * (docs/disc.md#sparse-ops-ctr-traffic-and-overlap rule 1). */
static int recount(struct disc_state *s, uint32_t step, const uint8_t *bits, size_t len,
                   double *r_p, double *r_s, struct errmsg *e)
{
    const uint32_t n = s->dm.n;
    if (!s->lb) {
        unsigned b[2];
        int nb = 0;
        unsigned bp = disc_log2u((uint64_t)s->hw.dpu_count),
                 bs = disc_log2u((uint64_t)s->hw.vpu_simds);
        b[nb++] = bp;
        if (bs != bp)
            b[nb++] = bs;
        int rc = disc_lb_new(&s->lb, n, s->hw.hash_k_odd, b, nb);
        if (rc < 0)
            return errmsg_set(e, rc, "cannot count load balance (U = %d, %d)", s->hw.dpu_count,
                              s->hw.vpu_simds);
        s->lb_ip = 0;
        s->lb_is = bs == bp ? 0 : 1;
    }
    struct disc_lb_acc acc;
    enum trace_disc_fault fault;
    int rc = trace_disc_recount_mask(s->lb, n, bits, len, s->token_mask[step], NULL, &acc, &fault);
    if (fault == TRACE_DISC_BAD_BITS)
        return errmsg_set(e, ERR_DATA, "mask bits of step %u are not an N x N bitset", step);
    if (fault == TRACE_DISC_BAD_TOKEN_MASK)
        return errmsg_set(e, ERR_DATA, "bad token mask of step %u", step);
    if (rc < 0)
        return errmsg_set(e, rc, "out of memory");
    if (s->have_step[step] && acc.rows != s->n_kept[step])
        return errmsg_set(e, ERR_DATA,
                          "a kept mask of step %u counts %llu computed rows, its step keeps %llu",
                          step, (unsigned long long)acc.rows, (unsigned long long)s->n_kept[step]);
    *r_p = (double)acc.max_sum[s->hw.hash][s->lb_ip];
    *r_s = (double)acc.max_sum[s->hw.hash][s->lb_is];
    return 0;
}

static void cell_add_known(struct disc_cell *c, double r_p, double r_s, uint64_t nnz, bool kept)
{
    c->r_p += r_p;
    c->r_s += r_s;
    if (kept) {
        c->kept_rp += r_p;
        c->kept_rs += r_s;
        c->kept_nnz += nnz;
        c->kept++;
    }
}

static int push_pending(struct disc_state *s, uint32_t step, uint32_t block, uint64_t nnz,
                        const uint8_t *bits, size_t len, struct errmsg *e)
{
    if (s->n_pend == s->cap_pend) {
        size_t nc = s->cap_pend ? 2 * s->cap_pend : 64, bytes;
        if (!mem_mul(nc, sizeof *s->pend, &bytes))
            return errmsg_set(e, ERR_NOMEM, "out of memory");
        struct disc_pending *p = mem_realloc(s->pend, bytes);
        if (!p)
            return errmsg_set(e, ERR_NOMEM, "out of memory");
        s->pend = p;
        s->cap_pend = nc;
    }
    struct disc_pending *p = &s->pend[s->n_pend];
    memset(p, 0, sizeof *p);
    p->step = step, p->block = block, p->nnz = nnz;
    if (bits) {
        p->bits = mem_alloc(len ? len : 1);
        if (!p->bits)
            return errmsg_set(e, ERR_NOMEM, "out of memory");
        memcpy(p->bits, bits, len);
        p->bits_len = len;
    }
    s->n_pend++;
    return 0;
}

static int consume_step(struct disc_state *s, const Acceltrace__DiscStep *st, struct errmsg *e)
{
    if (st->k >= s->steps)
        return errmsg_set(e, ERR_DATA, "disc step %u beyond the header's %u steps", st->k,
                          s->steps);
    if (st->n_kept > s->dm.n)
        return errmsg_set(e, ERR_DATA, "step %u keeps %u of %u tokens", st->k, st->n_kept, s->dm.n);
    s->have_step[st->k] = true;
    s->n_kept[st->k] = st->n_kept;
    s->generated[st->k] = st->st_generated;
    size_t want = (size_t)bitset_words_per_row(s->dm.n) * 8;
    if (st->token_mask.len == want && !s->token_mask[st->k]) {
        s->token_mask[st->k] = mem_alloc(want);
        if (!s->token_mask[st->k])
            return errmsg_set(e, ERR_NOMEM, "out of memory");
        memcpy(s->token_mask[st->k], st->token_mask.data, want);
    }
    return 0;
}

static int consume_mask(struct disc_state *s, const Acceltrace__DiscMask *m, struct errmsg *e)
{
    if (m->step >= s->steps || m->block >= s->dm.depth || m->head >= s->dm.h ||
        m->batch >= s->dm.batch)
        return errmsg_set(e, ERR_DATA,
                          "disc mask (step %u, batch %u, block %u, head %u) outside the "
                          "header's dimensions",
                          m->step, m->batch, m->block, m->head);
    struct disc_cell *c = &s->cells[(size_t)m->step * s->dm.depth + m->block];
    c->nnz += m->nnz;
    c->masks++;
    s->n_masks++;
    if (m->generated)
        s->generated[m->step] = true;
    const bool kept = m->bits.len > 0;
    const size_t nlb = (size_t)s->lb_nh * (size_t)s->lb_nu;
    if (s->lb_hash >= 0 && s->lb_up >= 0 && s->lb_us >= 0 && nlb > 0 && m->n_lb_max == nlb) {
        /* docs/disc.md#sparse-ops-ctr-traffic-and-overlap: R_P, R_S = recorded lb_max of the
         * configured hash at U = P, S */
        double r_p = (double)m->lb_max[(size_t)s->lb_hash * s->lb_nu + s->lb_up];
        double r_s = (double)m->lb_max[(size_t)s->lb_hash * s->lb_nu + s->lb_us];
        cell_add_known(c, r_p, r_s, m->nnz, kept);
        return 0;
    }
    if (kept && s->token_mask[m->step]) {
        double r_p, r_s;
        int rc = recount(s, m->step, m->bits.data, m->bits.len, &r_p, &r_s, e);
        if (rc < 0)
            return rc;
        cell_add_known(c, r_p, r_s, m->nnz, true);
        return 0;
    }
    /* kept: wait for the step's token mask; not kept: estimate at finish (rule 2) */
    return push_pending(s, m->step, m->block, m->nnz, kept ? m->bits.data : NULL, m->bits.len, e);
}

static int disc_consume(void *state, const struct model_record *r, struct errmsg *e)
{
    struct disc_state *s = state;
    switch (r->rec->body_case) {
    case ACCELTRACE__RECORD__BODY_DISC_STEP:
        return consume_step(s, r->rec->disc_step, e);
    case ACCELTRACE__RECORD__BODY_DISC_MASK:
        return consume_mask(s, r->rec->disc_mask, e);
    default:
        return 0;
    }
}

/* docs/disc.md#sparse-ops-ctr-traffic-and-overlap "missing load-balance data": kept masks first,
 * then rho estimates. */
static int resolve_pending(struct disc_state *s, struct errmsg *e)
{
    const uint32_t L = s->dm.depth;
    for (size_t i = 0; i < s->n_pend; i++) {
        struct disc_pending *p = &s->pend[i];
        if (!p->bits)
            continue;
        double r_p, r_s;
        int rc = recount(s, p->step, p->bits, p->bits_len, &r_p, &r_s, e);
        if (rc < 0)
            return rc;
        cell_add_known(&s->cells[(size_t)p->step * L + p->block], r_p, r_s, p->nnz, true);
    }
    /* trace-wide and per-step pools for the fallbacks */
    double all_rp = 0, all_rs = 0, all_nnz = 0;
    for (size_t i = 0; i < (size_t)s->steps * L; i++) {
        all_rp += s->cells[i].kept_rp;
        all_rs += s->cells[i].kept_rs;
        all_nnz += (double)s->cells[i].kept_nnz;
    }
    for (size_t i = 0; i < s->n_pend; i++) {
        struct disc_pending *p = &s->pend[i];
        if (p->bits)
            continue;
        const struct disc_cell *c = &s->cells[(size_t)p->step * L + p->block];
        double rp = 0, rs = 0, nz = 0;
        if (c->kept_nnz > 0) { /* same step and block */
            rp = c->kept_rp, rs = c->kept_rs, nz = (double)c->kept_nnz;
        } else {
            for (uint32_t b = 0; b < L; b++) { /* same step */
                const struct disc_cell *cb = &s->cells[(size_t)p->step * L + b];
                rp += cb->kept_rp, rs += cb->kept_rs, nz += (double)cb->kept_nnz;
            }
            if (nz == 0)
                rp = all_rp, rs = all_rs, nz = all_nnz; /* whole trace */
        }
        if (nz == 0)
            return errmsg_set(e, ERR_DATA,
                              "no load-balance data for hash %s at U = %d/%d and no kept "
                              "masks to compute it from",
                              disc_hash_name(s->hw.hash), s->hw.dpu_count, s->hw.vpu_simds);
        struct disc_cell *cw = &s->cells[(size_t)p->step * L + p->block];
        /* docs/disc.md#sparse-ops-ctr-traffic-and-overlap rule 2: R = nnz rho */
        cw->r_p += (double)p->nnz * (rp / nz);
        cw->r_s += (double)p->nnz * (rs / nz);
        s->masks_estimated++;
    }
    return 0;
}

static void act_add(struct disc_act *t, const struct disc_act *a)
{
    t->mac += a->mac, t->vpu_op += a->vpu_op, t->sram_rd += a->sram_rd;
    t->sram_wr += a->sram_wr, t->gspm += a->gspm, t->hbm += a->hbm, t->bus += a->bus;
}

/* The activity counts of a row; errors stay in res (model.h). */
static void put_counts(struct model_result *res, const struct disc_act *a)
{
    result_count(res, "mac", "MAC", a->mac);
    result_count(res, "vpu_op", "op", a->vpu_op);
    result_count(res, "sram_rd_bytes", "B", a->sram_rd);
    result_count(res, "sram_wr_bytes", "B", a->sram_wr);
    result_count(res, "gspm_bytes", "B", a->gspm);
    result_count(res, "hbm_bytes", "B", a->hbm);
    result_count(res, "bus_elems", "elem", a->bus);
}

/* Timeline tracks of a DiSC mode: the time-by-unit split of disc_op_time_split (one track
 * per results column dpu_s, vpu_s, hbm_s, selector_s) plus the part of sa_o that the SpMM
 * hides (hidden_cycles). */
static const char *const disc_track_names[DISC_T_UNITS + 1] = {
    "DPU array", "VPU", "HBM (memory-bound ops)", "token selector", "DPU array under SpMM"};
static const char *const disc_track_busy[DISC_T_UNITS + 1] = {
    "dpu_s", "vpu_s", "hbm_s", "selector_s", "hidden_cycles / clock"};

/* One slice of op on track u, cycles [c0, c0 + len) of the mode's run. */
static int disc_slice(const struct disc_state *s, const char *group, int u,
                      const struct disc_op *op, uint32_t k, size_t i, uint64_t c0, uint64_t len,
                      bool with_bytes, struct errmsg *e)
{
    if (!len)
        return 0;
    const struct disc_hw *hw = &s->hw;
    const double hz = hw->clock_ghz * 1e9;
    double util = -1;
    if (op->cycles && u != DISC_T_SELECTOR) {
        double lanes = op->unit == DISC_UNIT_DPU
                           ? (double)hw->cores * hw->dpu_count * hw->dpu_lanes
                           : (double)hw->cores * hw->vpu_simds * hw->vpu_width;
        double work = op->unit == DISC_UNIT_DPU ? (double)op->a.mac : (double)op->a.vpu_op;
        util = work / ((double)op->cycles * lanes);
    }
    struct model_slice sl = {
        .group = group,
        .track = disc_track_names[u],
        .name = op->name,
        .cls = u == DISC_T_SELECTOR ? "select" : op->cls,
        .t_s = (double)c0 / hz,
        .dur_s = (double)len / hz,
        .step = k,
        .block = op->block,
        .index = (int64_t)i,
        .busy = disc_track_busy[u],
        .bytes = with_bytes ? (double)op->a.hbm : 0,
        .util = util,
    };
    return s->sched->slice(s->sched->ctx, &sl, e);
}

/*
 * Reports the ops of one step to the schedule hook as the step's cycle count places them:
 * ops run one after another from *t (cycles), each on the unit disc_op_time_split charges
 * (ctr_select: the VPU difference, then the selector); a sa_o overlapped by the SpMM starts
 * with it, its hidden cycles on their own track and its exposed ones after the SpMM.
 */
static int disc_sched_step(const struct disc_state *s, int mode, uint32_t k,
                           const struct disc_op *ops, size_t n, uint64_t *t, struct errmsg *e)
{
    char group[48];
    snprintf(group, sizeof group, "DiSC mode %s", disc_mode_name(mode));
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        const struct disc_op *op = &ops[i];
        uint64_t split[DISC_T_UNITS] = {0};
        disc_op_time_split(op, split);
        int u = op->mem_bound ? DISC_T_HBM : op->unit == DISC_UNIT_DPU ? DISC_T_DPU : DISC_T_VPU;
        uint64_t hidden = op->cycles - op->exposed;
        if (hidden && i > 0) /* started with the op before it (the SpMM) */
            rc = disc_slice(s, group, DISC_T_UNITS, op, k, i, *t - ops[i - 1].exposed, hidden,
                            false, e);
        if (!rc)
            rc = disc_slice(s, group, u, op, k, i, *t, split[u], true, e);
        *t += split[u];
        if (!rc)
            rc = disc_slice(s, group, DISC_T_SELECTOR, op, k, i, *t, split[DISC_T_SELECTOR], false,
                            e);
        *t += split[DISC_T_SELECTOR];
    }
    return rc;
}

/* The GPU baseline's kernels as timeline slices (gpu_sched_run). */
struct gpu_sched {
    const struct disc_state *s;
    char group[64];
    double t_s;   /* where the next kernel starts */
    int64_t step; /* sampler step */
    int rc;       /* the first failing slice's error */
    struct errmsg *e;
};

static void gpu_sched_kernel(void *ctx, const struct gpu_kernel *k)
{
    struct gpu_sched *g = ctx;
    static const char *const tracks[GPU_OP_N] = {
        "GPU GEMM", "GPU attention", "GPU decode attention", "GPU element-wise", "GPU launch gaps"};
    static const char *const busy[GPU_OP_N] = {"gpu_gemm_s", "gpu_attention_s",
                                               "gpu_decode_attention_s", "gpu_elementwise_s",
                                               "gpu_launch_s"};
    struct model_slice sl = {
        .group = g->group,
        .track = tracks[k->cls],
        .name = k->name,
        .cls = gpu_op_class_name(k->cls),
        .t_s = g->t_s,
        .dur_s = k->work_s,
        .step = g->step,
        .block = k->block,
        .index = -1,
        .busy = busy[k->cls],
        .bytes = k->bytes,
        .util = k->util,
    };
    if (!g->rc && k->work_s > 0)
        g->rc = g->s->sched->slice(g->s->sched->ctx, &sl, g->e);
    g->t_s += k->work_s;
    sl.track = tracks[GPU_OP_LAUNCH], sl.cls = "launch", sl.busy = busy[GPU_OP_LAUNCH];
    sl.t_s = g->t_s, sl.dur_s = k->launch_s, sl.bytes = 0, sl.util = 0;
    if (!g->rc && k->launch_s > 0)
        g->rc = g->s->sched->slice(g->s->sched->ctx, &sl, g->e);
    g->t_s += k->launch_s;
}

/*
 * The GPU baseline of the run as its own timeline group ("GPU PRESET"): every kernel of
 * every step in launch order, on a track per op class, so each track sums to the results'
 * gpu_<class>_s (docs/models.md#gpu-baselines).
 */
static int gpu_sched_run(const struct disc_state *s, const struct gpu_dit_dims *ad,
                         struct errmsg *e)
{
    struct gpu_sched g = {.s = s, .e = e};
    snprintf(g.group, sizeof g.group, "GPU %s", s->gpu.name ? s->gpu.name : "baseline");
    for (uint32_t k = 0; k < s->steps && !g.rc; k++) {
        struct gpu_acc acc = {0};
        acc.kernel = gpu_sched_kernel, acc.kernel_ctx = &g, acc.block = -1;
        g.step = k;
        gpu_dit_step(&s->gpu, ad, &acc);
    }
    return g.rc;
}

static int disc_finish(void *state, struct model_result *res, struct errmsg *e)
{
    struct disc_state *s = state;
    const struct disc_dims *dm = &s->dm;
    const uint32_t L = dm->depth;
    int rc = resolve_pending(s, e);
    if (rc < 0)
        return rc;
    if (s->modes[DISC_MODE_ALL] && s->n_masks == 0)
        return errmsg_set(e, ERR_DATA, "mode all needs DiscMask records and the trace has none");
    for (uint32_t k = 0; k < s->steps; k++)
        if (!s->have_step[k])
            return errmsg_set(e, ERR_DATA, "the trace has no DiscStep record for step %u", k);
    const size_t cap = disc_step_ops_max(L);
    struct disc_op *ops = mem_calloc(cap, sizeof *ops);
    struct disc_block_st *st = mem_calloc(L, sizeof *st);
    if (!ops || !st) {
        rc = errmsg_set(e, ERR_NOMEM, "out of memory");
        goto out;
    }
    struct gpu_dit_dims ad;
    disc_dims_gpu(dm, &ad);
    struct gpu_acc gstep = {0}, gall = {0};
    gpu_dit_step(&s->gpu, &ad, &gstep);
    gpu_acc_add(&gall, &gstep, s->steps);
    const double gpu_s = gpu_acc_seconds(&gall);
    const double gpu_j = gpu_s * gpu_acc_power_w(&s->gpu, &gall);
    if (s->sched && (rc = gpu_sched_run(s, &ad, e)) < 0)
        goto out;
    const double hz = s->hw.clock_ghz * 1e9;
    for (int mode = 0; mode < DISC_MODES; mode++) {
        if (!s->modes[mode])
            continue;
        struct disc_act tot = {0};
        uint64_t cycles = 0, hidden = 0, by_unit[DISC_T_UNITS] = {0}, t_sched = 0;
        for (uint32_t k = 0; k < s->steps; k++) {
            for (uint32_t b = 0; b < L; b++) {
                const struct disc_cell *c = &s->cells[(size_t)k * L + b];
                st[b].r_p = c->r_p, st[b].r_s = c->r_s, st[b].nnz = c->nnz;
            }
            struct disc_step_in in = {k, s->n_kept[k], s->generated[k],
                                      mode == DISC_MODE_ALL ? st : NULL};
            size_t n = disc_step_ops(&s->hw, dm, mode, &in, ops, cap);
            if (s->sched && (rc = disc_sched_step(s, mode, k, ops, n, &t_sched, e)) < 0)
                goto out;
            for (size_t i = 0; i < n; i++) {
                const struct disc_op *op = &ops[i];
                cycles += op->exposed;
                hidden += op->cycles - op->exposed;
                disc_op_time_split(op, by_unit);
                act_add(&tot, &op->a);
                if (!s->ops_table)
                    continue;
                result_row_begin(res, "ops");
                result_label(res, "mode", disc_mode_name(mode));
                result_metric_i64(res, "step", "", k);
                result_metric_i64(res, "block", "", op->block);
                result_label(res, "op", op->name);
                result_label(res, "unit", op->unit == DISC_UNIT_DPU ? "dpu" : "vpu");
                result_label(res, "class", op->cls);
                result_label(res, "bound", op->mem_bound ? "hbm" : "unit");
                result_count(res, "cycles", "cycles", op->cycles);
                result_count(res, "exposed_cycles", "cycles", op->exposed);
                put_counts(res, &op->a);
                result_metric(res, "seconds", "s", (double)op->exposed / hz);
            }
        }
        const double secs = (double)cycles / hz;
        struct disc_energy_parts ep;
        disc_energy_eval(&s->en, &tot, secs, &ep);
        const double dpu_lanes = (double)s->hw.cores * s->hw.dpu_count * s->hw.dpu_lanes;
        const double vpu_lanes = (double)s->hw.cores * s->hw.vpu_simds * s->hw.vpu_width;
        result_row_begin(res, NULL);
        result_label(res, "mode", disc_mode_name(mode));
        result_count(res, "cycles", "cycles", cycles);
        result_count(res, "hidden_cycles", "cycles", hidden);
        put_counts(res, &tot);
        result_metric(res, "seconds", "s", secs);
        result_metric(res, "dpu_util", "1",
                      cycles ? (double)tot.mac / ((double)cycles * dpu_lanes) : 0);
        result_metric(res, "vpu_util", "1",
                      cycles ? (double)tot.vpu_op / ((double)cycles * vpu_lanes) : 0);
        result_metric(res, "model_j", "J", ep.total);
        result_metric(res, "model_hbm_j", "J", ep.hbm);
        result_metric(res, "model_static_j", "J", ep.stat);
        result_metric(res, "gpu_seconds", "s", gpu_s);
        result_metric(res, "gpu_j", "J", gpu_j);
        for (int c = 0; c < GPU_OP_N; c++) { /* the baseline's time by op class */
            char col[48];
            snprintf(col, sizeof col, "gpu_%s_s", gpu_op_class_name((enum gpu_op_class)c));
            result_metric(res, col, "s", gall.s[c]);
        }
        result_metric(res, "speedup", "1", secs > 0 ? gpu_s / secs : 0);
        result_metric(res, "reduction_vs_gpu", "1", 1 - ep.total / gpu_j);
        result_metric_i64(res, "masks_estimated", "", (int64_t)s->masks_estimated);
        result_metric_i64(res, "steps", "", s->steps);
        for (int u = 0; u < DISC_T_UNITS; u++) { /* the time by unit: dpu_s ... selector_s */
            char col[32];
            snprintf(col, sizeof col, "%s_s", disc_time_unit_names[u]);
            result_metric(res, col, "s", (double)by_unit[u] / hz);
        }
    }
    rc = result_err(res, e);
out:
    mem_free(ops);
    mem_free(st);
    return rc;
}

/*
 * Checkpoint hooks (model.h): the per-step arrays, the token masks seen, the cells, the
 * mask count and the pending masks with their kept bits. The recount tables (lb) depend on
 * the config only and are rebuilt on first use.
 */
static int disc_save(const void *state, struct sink *k, struct errmsg *e)
{
    const struct disc_state *s = state;
    const size_t K = s->steps, L = s->dm.depth;
    const size_t want = (size_t)bitset_words_per_row(s->dm.n) * 8;
    int rc = sink_write(k, s->have_step, K * sizeof *s->have_step);
    rc = rc ? rc : sink_write(k, s->n_kept, K * sizeof *s->n_kept);
    rc = rc ? rc : sink_write(k, s->generated, K * sizeof *s->generated);
    for (size_t i = 0; i < K && !rc; i++) {
        uint8_t have = s->token_mask[i] != NULL;
        rc = sink_write(k, &have, 1);
        if (!rc && have)
            rc = sink_write(k, s->token_mask[i], want);
    }
    uint64_t n_pend = s->n_pend;
    rc = rc ? rc : sink_write(k, s->cells, K * L * sizeof *s->cells);
    rc = rc ? rc : sink_write(k, &s->n_masks, sizeof s->n_masks);
    rc = rc ? rc : sink_write(k, &n_pend, sizeof n_pend);
    for (size_t i = 0; i < s->n_pend && !rc; i++) {
        const struct disc_pending *p = &s->pend[i];
        uint64_t v[4] = {p->step, p->block, p->nnz, p->bits ? (uint64_t)p->bits_len + 1 : 0};
        rc = sink_write(k, v, sizeof v);
        if (!rc && p->bits)
            rc = sink_write(k, p->bits, p->bits_len);
    }
    return rc ? errmsg_set(e, rc, "out of memory") : 0;
}

/* Largest float a checkpointed sum may hold: every count a double holds exactly (2^53);
 * a real trace's sums stay far below it [decision;
 * docs/models.md#checkpoints-replay-engine-convention]. */
#define DISC_CKPT_MAX_SUM 9007199254740992.0

/* Checks one loaded cell: sums finite, in range, kept part within the whole. */
static bool cell_ok(const struct disc_cell *c)
{
    return model_ckpt_in_range(c->r_p, 0, DISC_CKPT_MAX_SUM) &&
           model_ckpt_in_range(c->r_s, 0, DISC_CKPT_MAX_SUM) &&
           model_ckpt_in_range(c->kept_rp, 0, DISC_CKPT_MAX_SUM) &&
           model_ckpt_in_range(c->kept_rs, 0, DISC_CKPT_MAX_SUM) && c->kept <= c->masks &&
           c->kept_nnz <= c->nnz;
}

/* The per-step arrays and token masks of a checkpoint (disc_load). 0 or ERR_DATA (*why). */
static int load_steps(struct disc_state *s, struct model_ckpt_in *in, const char **why)
{
    const size_t K = s->steps;
    const size_t want = (size_t)bitset_words_per_row(s->dm.n) * 8;
    *why = "a step flag is not 0 or 1";
    int rc = model_ckpt_get_bools(in, s->have_step, K);
    if (!rc) {
        *why = "truncated";
        rc = model_ckpt_get(in, s->n_kept, K * sizeof *s->n_kept);
    }
    for (size_t i = 0; i < K && !rc; i++)
        if (s->n_kept[i] > s->dm.n) {
            *why = "a step keeps more tokens than the header has";
            rc = ERR_DATA;
        }
    if (!rc && (rc = model_ckpt_get_bools(in, s->generated, K)))
        *why = "a step flag is not 0 or 1";
    for (size_t i = 0; i < K && !rc; i++) {
        bool have = false;
        *why = "a token-mask flag is not 0 or 1";
        rc = model_ckpt_get_bools(in, &have, 1);
        void *tm = NULL;
        if (!rc && have) {
            *why = "truncated";
            if (!(rc = model_ckpt_get_alloc(in, &tm, want)))
                s->token_mask[i] = tm;
        }
    }
    return rc;
}

/*
 * Every value is checked before it is used (docs/models.md#checkpoints-replay-engine-convention):
 * flags 0 or 1, kept tokens within the header's, cell sums finite and in [0, 2^53] with their kept
 * part within them, the mask count equal to the cells' and the pending masks within it and within
 * the header's steps and blocks.
 */
static int disc_load(void *state, struct model_ckpt_in *in, struct errmsg *e)
{
    struct disc_state *s = state;
    const size_t K = s->steps, L = s->dm.depth;
    const char *why = "truncated";
    int rc = load_steps(s, in, &why);
    uint64_t n_pend = 0, masks = 0;
    if (!rc)
        why = "truncated";
    rc = rc ? rc : model_ckpt_get(in, s->cells, K * L * sizeof *s->cells);
    for (size_t i = 0; i < K * L && !rc; i++) {
        masks += s->cells[i].masks;
        if (!cell_ok(&s->cells[i])) {
            why = "a cell sum is out of range";
            rc = ERR_DATA;
        }
    }
    rc = rc ? rc : model_ckpt_get(in, &s->n_masks, sizeof s->n_masks);
    rc = rc ? rc : model_ckpt_get(in, &n_pend, sizeof n_pend);
    if (!rc && (s->n_masks != masks || n_pend > s->n_masks)) {
        why = "the mask counts disagree";
        rc = ERR_DATA;
    }
    for (uint64_t i = 0; i < n_pend && !rc; i++) {
        uint64_t v[4];
        if ((rc = model_ckpt_get(in, v, sizeof v)))
            break;
        if (v[0] >= K || v[1] >= L || (v[3] && v[3] - 1 > in->len - in->pos)) {
            why = "a pending mask is outside the header's dimensions";
            rc = ERR_DATA;
            break;
        }
        const uint8_t *bits = v[3] ? in->data + in->pos : NULL;
        size_t len = v[3] ? (size_t)(v[3] - 1) : 0;
        if ((rc = push_pending(s, (uint32_t)v[0], (uint32_t)v[1], v[2], bits, len, e)))
            return rc;
        in->pos += len;
    }
    return rc ? errmsg_set(e, rc, "bad disc state at byte %zu: %s", in->pos, why) : 0;
}

/*
 * Memory estimate (model.h; docs/models.md#memory-estimates-replay-engine-convention): the state;
 * per step its flags, kept count, token-mask pointer and token bitset (N bits in 64-bit words); per
 * (step, block) a cell; a pending record (32 bytes, capacity doubled) per mask of the
 * trace (steps x depth x heads x batch), the worst case when no mask carries recorded
 * load-balance data; at finish the op list and one row of 30 columns per mode, and with
 * ops_table a 21-column row per op of every step and mode. Kept mask bits that wait for
 * their step record are not counted (the capture writes the step first). Without a
 * header: the micro model's 20 steps, 12 blocks, 6 heads and 256 tokens.
 */
static uint64_t disc_estimate(const struct hw_config *cfg, const Acceltrace__TraceHeader *hdr)
{
    const Acceltrace__DiscHeader *dh = hdr ? hdr->disc : NULL;
    uint64_t k = dh ? dh->steps : 20, L = dh ? dh->depth : 12, h = dh ? dh->heads : 6;
    uint64_t n = dh ? dh->tokens : 256, batch = dh && dh->batch ? dh->batch : 1;
    if (L > DISC_MAX_DEPTH)
        L = DISC_MAX_DEPTH; /* new() refuses such headers; keep the arithmetic bounded */
    bool modes[DISC_MODES];
    uint64_t n_modes = 0;
    if (parse_modes(hw_config_str(cfg, "modes"), modes) >= 0)
        for (int m = 0; m < DISC_MODES; m++)
            n_modes += modes[m];
    uint64_t ops = disc_step_ops_max((uint32_t)L);
    uint64_t b = sizeof(struct disc_state) +
                 k * (2 * sizeof(bool) + sizeof(uint64_t) + sizeof(uint8_t *) + (n + 63) / 64 * 8) +
                 k * L * sizeof(struct disc_cell) +
                 2 * k * L * h * batch * sizeof(struct disc_pending) +
                 ops * sizeof(struct disc_op) + n_modes * MODEL_RESULT_ROW_BYTES(30);
    if (hw_config_bool(cfg, "ops_table"))
        b += n_modes * k * ops * MODEL_RESULT_ROW_BYTES(21);
    return b;
}

/* Pass estimate (model.h): one kept mask's bits (N x N bits) counted once as the largest
 * record unless the header's keep_masks is "none"; per record in flight a token mask (N
 * bits) and 2 KiB of counts and load-balance sums. Without a header: 256 tokens. */
static void disc_estimate_pass(const Acceltrace__TraceHeader *hdr, uint64_t *shared_bytes,
                               uint64_t *per_record_bytes)
{
    const Acceltrace__DiscHeader *dh = hdr ? hdr->disc : NULL;
    uint64_t n = dh ? dh->tokens : 256;
    if (n > DISC_MAX_TOKENS)
        n = DISC_MAX_TOKENS;
    bool kept = !dh || !dh->keep_masks || strcmp(dh->keep_masks, "none") != 0;
    *shared_bytes = kept ? n * ((n + 63) / 64 * 8) : 0;
    *per_record_bytes = (n + 63) / 64 * 8 + 2048;
}

const struct model_ops model_disc_ops = {
    .name = "disc",
    .workload = "disc",
    .summary = "DiSC core array (DPU/VPU/selector, hash-placed SDDMM/SpMM) vs an A100 roofline",
    .schema = &disc_schema,
    .default_config = "configs/disc-a100-matched.json",
    .default_energy_table = "configs/disc-energy.json",
    .new = disc_new,
    .consume = disc_consume,
    .finish = disc_finish,
    .free = disc_free,
    .estimate_bytes = disc_estimate,
    .estimate_pass = disc_estimate_pass,
    .save = disc_save,
    .load = disc_load,
};
