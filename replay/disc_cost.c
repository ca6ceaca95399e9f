/*
 * disc_cost: the DiSC core array's cost functions (see disc_model.h; docs/models.md#disc):
 * the cycles and activity of each operation (DPU, VPU, SDDMM, softmax, SpMM), the operations
 * of one sampling step, energy, and the hardware and model presets. All pure: the replayed
 * model that feeds them a trace is disc_model.c.
 */
#include "replay/disc_model.h"

#include <assert.h>
#include <jansson.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "common/mem.h"
#include "formats/disc_hash.h"
#include "replay/energy.h"
#include "replay/model.h"

const char *const disc_vclass_names[DISC_VC_COUNT] = {
    "norm_mod", "residual", "gate_residual", "softmax", "threshold",
    "renorm",   "gelu",     "ctr_diff",      "sampler",
};

static const char *const mode_names[DISC_MODES] = {"baseline", "ctr", "all"};

const char *disc_mode_name(int mode)
{
    return mode >= 0 && mode < DISC_MODES ? mode_names[mode] : "?";
}

uint64_t disc_ceil(double x)
{
    /* ceil(x - 1e-9 x) so evaluation-order rounding cannot move it (docs/models.md) */
    if (!(x > 0))
        return 0;
    double c = ceil(x - 1e-9 * x);
    /* saturate: converting a double at or above 2^64 (or infinity) is undefined */
    return c >= 18446744073709551616.0 ? UINT64_MAX : (uint64_t)c;
}

double disc_bw_c(const struct disc_hw *hw)
{
    /* docs/disc.md#replay-configuration [derived]: bytes per cycle */
    return hw->hbm_gbs / hw->clock_ghz;
}

unsigned disc_log2u(uint64_t x)
{
    unsigned b = 0;
    while (x > 1) {
        x >>= 1;
        b++;
    }
    return b;
}

static void op_reset(struct disc_op *op)
{
    const char *name = op->name, *cls = op->cls;
    int block = op->block;
    memset(op, 0, sizeof *op);
    op->name = name;
    op->cls = cls;
    op->block = block;
}

void disc_op_dpu(const struct disc_hw *hw, uint64_t n_rep, uint64_t m, uint64_t ni, uint64_t no,
                 uint64_t bytes, struct disc_op *op)
{
    op_reset(op);
    op->unit = DISC_UNIT_DPU;
    const double bw = (double)bytes / disc_bw_c(hw);
    const uint64_t mac = n_rep * m * ni * no;
    if (mac == 0) {
        /* docs/disc.md#cost-of-one-op: no work costs ceil(bytes / BW_c) */
        op->cycles = disc_ceil(bw);
        op->mem_bound = true;
    } else {
        /* docs/disc.md#cost-of-one-op: fill loss only across DPUs, on whichever of N_o and M fills
         * better */
        const double p = hw->dpu_count;
        double fo = (double)no / (p * ceil((double)no / p));
        double fm = (double)m / (p * ceil((double)m / p));
        double fill = fmax(fo, fm);
        double comp = (double)mac / ((double)hw->cores * p * hw->dpu_lanes * fill * hw->dpu_eta);
        op->cycles = disc_ceil(fmax(comp, bw));
        op->mem_bound = bw > comp;
    }
    op->exposed = op->cycles;
    const uint64_t eb = (uint64_t)hw->elem_bytes;
    op->a.mac = mac;
    /* docs/disc.md#energy-a100-baseline-and-outputs: sram_rd E_b MAC (1 + 1/P_dpu) (the 1/P part
     * floored), wr E_b n_rep M N_o */
    op->a.sram_rd = eb * mac + eb * mac / (uint64_t)hw->dpu_count;
    op->a.sram_wr = eb * n_rep * m * no;
    op->a.hbm = bytes;
}

void disc_op_vpu(const struct disc_hw *hw, uint64_t e, int vc, int n_in, uint64_t bytes,
                 struct disc_op *op)
{
    op_reset(op);
    op->unit = DISC_UNIT_VPU;
    const double bw = (double)bytes / disc_bw_c(hw);
    const uint64_t c = (uint64_t)hw->vpu_cycles[vc];
    /* docs/disc.md#cost-of-one-op: ceil(max(E c / (C S W), bytes / BW_c)) */
    double comp = (double)e * (double)c / ((double)hw->cores * hw->vpu_simds * hw->vpu_width);
    op->cycles = e == 0 ? disc_ceil(bw) : disc_ceil(fmax(comp, bw));
    op->mem_bound = e == 0 || bw > comp;
    op->exposed = op->cycles;
    const uint64_t eb = (uint64_t)hw->elem_bytes;
    op->a.vpu_op = e * c; /* docs/disc.md#energy-a100-baseline-and-outputs: E c */
    op->a.sram_rd = eb * e * (uint64_t)n_in;
    op->a.sram_wr = eb * e;
    op->a.hbm = bytes;
}

void disc_op_sddmm(const struct disc_hw *hw, double r_p, uint64_t nnz, uint64_t rows, uint32_t dh,
                   uint64_t bytes, struct disc_op *op)
{
    op_reset(op);
    op->unit = DISC_UNIT_DPU;
    const double bw = (double)bytes / disc_bw_c(hw);
    /* docs/disc.md#sparse-ops-ctr-traffic-and-overlap: R_P dh / (L_lane C_core); the most loaded
     * DPU of each row sets the pace */
    double comp = r_p * dh / ((double)hw->dpu_lanes * hw->cores);
    op->cycles = rows == 0 ? disc_ceil(bw) : disc_ceil(fmax(comp, bw));
    op->mem_bound = rows == 0 || bw > comp;
    op->exposed = op->cycles;
    const uint64_t eb = (uint64_t)hw->elem_bytes;
    op->a.mac = (uint64_t)dh * nnz; /* docs/disc.md#energy-a100-baseline-and-outputs */
    op->a.sram_rd = eb * dh * (nnz + rows);
    op->a.sram_wr = eb * nnz;
    op->a.hbm = bytes;
}

void disc_op_softmax_sparse(const struct disc_hw *hw, double r_s, uint64_t nnz, bool generated,
                            uint64_t dense_elems, uint64_t bytes, struct disc_op *op)
{
    op_reset(op);
    op->unit = DISC_UNIT_VPU;
    const double bw = (double)bytes / disc_bw_c(hw);
    const double cw = (double)hw->vpu_width * hw->cores;
    const uint64_t csm = (uint64_t)hw->vpu_cycles[DISC_VC_SOFTMAX];
    const uint64_t cth = (uint64_t)hw->vpu_cycles[DISC_VC_THRESHOLD];
    const uint64_t crn = (uint64_t)hw->vpu_cycles[DISC_VC_RENORM];
    double comp;
    if (generated) {
        /* docs/disc.md#sparse-ops-ctr-traffic-and-overlap: ((c_sm + c_th) Bh N_k N / S_vpu +
         * c_renorm R_S) / (W_vpu C_core) */
        comp = ((double)(csm + cth) * (double)dense_elems / hw->vpu_simds + (double)crn * r_s) / cw;
        op->a.vpu_op = (csm + cth) * dense_elems + crn * nnz;
    } else {
        /* docs/disc.md#sparse-ops-ctr-traffic-and-overlap: c_softmax R_S / (W_vpu C_core) */
        comp = (double)csm * r_s / cw;
        op->a.vpu_op = csm * nnz;
    }
    op->cycles = (nnz == 0 && dense_elems == 0) ? disc_ceil(bw) : disc_ceil(fmax(comp, bw));
    op->mem_bound = (nnz == 0 && dense_elems == 0) || bw > comp;
    op->exposed = op->cycles;
    const uint64_t eb = (uint64_t)hw->elem_bytes;
    op->a.sram_rd = eb * nnz;
    op->a.sram_wr = eb * nnz;
    op->a.hbm = bytes;
}

void disc_op_spmm(const struct disc_hw *hw, double r_s, uint64_t nnz, uint64_t rows, uint32_t dh,
                  uint64_t bytes, struct disc_op *op)
{
    op_reset(op);
    op->unit = DISC_UNIT_VPU;
    const double bw = (double)bytes / disc_bw_c(hw);
    if (rows == 0) {
        op->cycles = disc_ceil(bw);
        op->mem_bound = true;
    } else {
        /* docs/disc.md#sparse-ops-ctr-traffic-and-overlap: (R_S dh / W_vpu + rows dh / bus) /
         * C_core, + log2 S_vpu after ceil */
        double comp =
            (r_s * dh / hw->vpu_width + (double)rows * dh / hw->vpu_bus_elems) / hw->cores;
        op->cycles = disc_ceil(fmax(comp, bw)) + disc_log2u((uint64_t)hw->vpu_simds);
        op->mem_bound = bw > comp;
    }
    op->exposed = op->cycles;
    const uint64_t eb = (uint64_t)hw->elem_bytes;
    op->a.vpu_op = (uint64_t)dh * nnz; /* docs/disc.md#energy-a100-baseline-and-outputs */
    op->a.sram_rd = eb * nnz * (1 + (uint64_t)dh);
    op->a.sram_wr = eb * rows * dh;
    op->a.bus = rows * dh * (uint64_t)hw->vpu_simds;
    op->a.hbm = bytes;
}

const char *const disc_time_unit_names[DISC_T_UNITS] = {"dpu", "vpu", "hbm", "selector"};

void disc_op_time_split(const struct disc_op *op, uint64_t *t)
{
    /* the selector's cycles first (ctr_select: the VPU difference, then the selector); the
     * overlap (exposed < cycles) only ever shortens sa_o, which has no selector part */
    uint64_t sel = op->sel_cycles < op->exposed ? op->sel_cycles : op->exposed;
    t[DISC_T_SELECTOR] += sel;
    uint64_t rest = op->exposed - sel;
    t[op->mem_bound ? DISC_T_HBM : op->unit == DISC_UNIT_DPU ? DISC_T_DPU : DISC_T_VPU] += rest;
}

size_t disc_step_ops_max(uint32_t depth)
{
    return 12 + 20 * (size_t)depth;
}

/* Op list builder for one step. */
struct builder {
    const struct disc_hw *hw;
    double spad; /* scratchpad bytes */
    uint64_t eb;
    struct disc_op *ops;
    size_t n, cap;
};

static struct disc_op *next_op(struct builder *b, const char *name, const char *cls, int block)
{
    if (b->n >= b->cap)
        return NULL;
    struct disc_op *op = &b->ops[b->n++];
    memset(op, 0, sizeof *op);
    op->name = name;
    op->cls = cls;
    op->block = block;
    return op;
}

/* Linear op (M, N_i, N_o) with weights; extra = CTR cache traffic (docs/disc.md#replay-model). */
static void lin(struct builder *b, const char *name, int block, uint64_t m, uint64_t ni,
                uint64_t no, uint64_t extra)
{
    struct disc_op *op = next_op(b, name, "linear", block);
    if (!op)
        return;
    uint64_t weights = b->eb * (ni * no + no); /* docs/disc.md#cost-of-one-op: read once per pass */
    uint64_t act = b->eb * m * (ni + no);      /* docs/disc.md#cost-of-one-op activation bytes */
    uint64_t spill = (double)act > b->spad ? act : 0;
    disc_op_dpu(b->hw, 1, m, ni, no, weights + spill + extra, op);
    op->a.gspm = act;
}

static void vec(struct builder *b, const char *name, int block, uint64_t e, int vc, uint64_t extra)
{
    struct disc_op *op = next_op(b, name, "vector", block);
    if (!op)
        return;
    int n_in = (vc == DISC_VC_RESIDUAL || vc == DISC_VC_GATE_RESIDUAL) ? 2 : 1;
    uint64_t act = b->eb * e * (uint64_t)(n_in + 1); /* docs/disc.md#cost-of-one-op */
    uint64_t spill = (double)act > b->spad ? act : 0;
    disc_op_vpu(b->hw, e, vc, n_in, spill + extra, op);
    op->a.gspm = act;
}

/* PixArt's cross-attention of one block over the T text tokens (docs/disc.md#cost-of-one-op). */
static void cross_attention(struct builder *b, const struct disc_dims *dm, int bl, uint64_t nk,
                            uint64_t ctr_write)
{
    const uint64_t eb = b->eb, d = dm->d, t = dm->text, bb = dm->batch, dh = dm->dh;
    const uint64_t bh = bb * dm->h;
    lin(b, "ca_q", bl, bb * nk, d, d, 0);
    lin(b, "ca_kv", bl, bb * t, d, 2 * d, 0);
    const uint64_t rd = eb * bb * (nk + 2 * t) * d, wr = eb * bb * nk * d;
    const bool spill = (double)(rd + wr) > b->spad;
    struct disc_op *qk = next_op(b, "ca_qk", "attention", bl);
    struct disc_op *sm = next_op(b, "ca_softmax", "softmax", bl);
    struct disc_op *pv = next_op(b, "ca_pv", "attention", bl);
    if (!qk || !sm || !pv)
        return;
    disc_op_dpu(b->hw, bh, nk, dh, t, spill ? rd : 0, qk);
    disc_op_vpu(b->hw, bh * nk * t, DISC_VC_SOFTMAX, 1, 0, sm);
    disc_op_dpu(b->hw, bh, nk, t, dh, spill ? wr : 0, pv);
    qk->a.gspm = rd;
    pv->a.gspm = wr;
    lin(b, "ca_o", bl, bb * nk, d, d, 0);
    vec(b, "ca_res", bl, bb * nk * d, DISC_VC_RESIDUAL, ctr_write);
}

size_t disc_step_ops(const struct disc_hw *hw, const struct disc_dims *dm, int mode,
                     const struct disc_step_in *in, struct disc_op *ops, size_t cap)
{
    struct builder b = {hw, hw->scratchpad_mib * 1048576.0, (uint64_t)hw->elem_bytes, ops, 0, cap};
    const uint64_t eb = b.eb, d = dm->d, n = dm->n, t = dm->text, bb = dm->batch;
    const uint64_t h = dm->h, dh = dm->dh, bh = bb * h;
    const uint64_t nk = mode == DISC_MODE_BASELINE ? n : in->n_kept;
    const bool ctr = dm->ctr_on && mode != DISC_MODE_BASELINE;
    const bool st = mode == DISC_MODE_ALL && in->st;
    const uint64_t lat = (uint64_t)dm->cin * dm->lat_h * dm->lat_w;
    /* docs/disc.md#sparse-ops-ctr-traffic-and-overlap */
    const uint64_t mask_bytes = bh * nk * ((n + 63) / 64) * 8;
    const uint64_t ctr_read = ctr ? eb * bb * (n - nk) * d : 0; /* pruned rows of cache_ff */
    const uint64_t ctr_write = ctr ? eb * bb * nk * d : 0;

    /* 1. token selector (docs/disc.md#cost-of-one-op item 1) */
    if (ctr && in->k >= 1) {
        struct disc_op *op = next_op(&b, "ctr_select", "select", -1);
        if (op) {
            uint64_t act = eb * lat * 2;
            disc_op_vpu(hw, lat, DISC_VC_CTR_DIFF, 1, (double)act > b.spad ? act : 0, op);
            op->sel_cycles = disc_ceil((double)lat / ((double)hw->cores * hw->selector_width));
            op->cycles += op->sel_cycles;
            op->exposed = op->cycles;
            /* docs/disc.md#energy-a100-baseline-and-outputs: one vpu_op per latent element */
            op->a.vpu_op += lat;
            op->a.gspm = act;
        }
    }
    /* 2. embeddings (docs/disc.md#cost-of-one-op item 2) */
    lin(&b, "t_embed1", -1, 1, 256, d, 0);
    lin(&b, "t_embed2", -1, 1, d, d, 0);
    if (dm->class_cond) {
        /* DiT: c_b = t_emb + Y[label_b], a table lookup and an add per batch element */
        vec(&b, "y_embed", -1, bb * d, DISC_VC_RESIDUAL, 0);
    } else {
        lin(&b, "t_embed3", -1, 1, d, 6 * d, 0);
        lin(&b, "caption1", -1, bb * t, dm->dc, d, 0);
        vec(&b, "caption_gelu", -1, bb * t * d, DISC_VC_GELU, 0);
        lin(&b, "caption2", -1, bb * t, d, d, 0);
    }
    lin(&b, "patch", -1, bb * n, (uint64_t)dm->cin * dm->patch * dm->patch, d, 0);
    vec(&b, "patch_pe", -1, bb * n * d, DISC_VC_RESIDUAL, 0);

    /* 3. blocks */
    for (uint32_t blk = 0; blk < dm->depth; blk++) {
        const int bl = (int)blk;
        const struct disc_block_st *sb = st ? &in->st[blk] : NULL;
        if (dm->class_cond) /* adaLN-Zero: this block's 6d modulation of SiLU(c_b) */
            lin(&b, "ada", bl, bb, d, 6 * d, 0);
        vec(&b, "sa_norm", bl, bb * n * d, DISC_VC_NORM_MOD, 0);
        lin(&b, "sa_q", bl, bb * nk, d, d, 0);
        lin(&b, "sa_kv", bl, bb * n, d, 2 * d, blk >= 1 ? ctr_read : 0);
        /* self-attention: one op for spill, reads on qk and write on pv
         * (docs/disc.md#cost-of-one-op) */
        uint64_t rd = eb * bb * (nk + 2 * n) * d, wr = eb * bb * nk * d;
        bool spill = (double)(rd + wr) > b.spad;
        uint64_t rows = bh * nk;
        struct disc_op *qk = next_op(&b, "sa_qk", "attention", bl);
        struct disc_op *sm = next_op(&b, "sa_softmax", "softmax", bl);
        struct disc_op *pv = next_op(&b, "sa_pv", "attention", bl);
        if (!qk || !sm || !pv)
            break;
        if (!sb) {
            disc_op_dpu(hw, bh, nk, dh, n, spill ? rd : 0, qk);
            disc_op_vpu(hw, bh * nk * n, DISC_VC_SOFTMAX, 1, 0, sm);
            disc_op_dpu(hw, bh, nk, n, dh, spill ? wr : 0, pv);
        } else if (in->generated) {
            disc_op_dpu(hw, bh, nk, dh, n, spill ? rd : 0, qk);
            disc_op_softmax_sparse(hw, sb->r_s, sb->nnz, true, bh * nk * n, mask_bytes, sm);
            disc_op_spmm(hw, sb->r_s, sb->nnz, rows, (uint32_t)dh, spill ? wr : 0, pv);
            pv->cls = "spmm";
        } else {
            disc_op_sddmm(hw, sb->r_p, sb->nnz, rows, (uint32_t)dh, mask_bytes + (spill ? rd : 0),
                          qk);
            qk->cls = "sddmm";
            disc_op_softmax_sparse(hw, sb->r_s, sb->nnz, false, 0, 0, sm);
            disc_op_spmm(hw, sb->r_s, sb->nnz, rows, (uint32_t)dh, spill ? wr : 0, pv);
            pv->cls = "spmm";
        }
        qk->a.gspm = rd;
        pv->a.gspm = wr;
        size_t i_o = b.n;
        lin(&b, "sa_o", bl, bb * nk, d, d, 0);
        if (sb && hw->overlap_spmm_proj && i_o < b.n) {
            /* docs/disc.md#sparse-ops-ctr-traffic-and-overlap: SpMM overlaps sa_o; the pair costs
             * max(t_pv, t_o) */
            struct disc_op *o = &b.ops[i_o];
            o->exposed = o->cycles > pv->cycles ? o->cycles - pv->cycles : 0;
        }
        vec(&b, "sa_res", bl, bb * nk * d, DISC_VC_GATE_RESIDUAL, ctr_write);
        if (!dm->class_cond)
            cross_attention(&b, dm, bl, nk, ctr_write);
        vec(&b, "ff_norm", bl, bb * nk * d, DISC_VC_NORM_MOD, 0);

        lin(&b, "ff_up", bl, bb * nk, d, 4 * d, 0);
        vec(&b, "ff_gelu", bl, 4 * bb * nk * d, DISC_VC_GELU, 0);
        lin(&b, "ff_down", bl, bb * nk, 4 * d, d, 0);
        vec(&b, "ff_res", bl, bb * nk * d, DISC_VC_GATE_RESIDUAL, ctr_write);
    }
    /* 4. final layer and sampler */
    if (dm->class_cond) /* DiT's final adaLN modulation (2d) */
        lin(&b, "final_ada", -1, bb, d, 2 * d, 0);
    vec(&b, "final_norm", -1, bb * n * d, DISC_VC_NORM_MOD, ctr_read);
    lin(&b, "final_out", -1, bb * n, d, (uint64_t)dm->patch * dm->patch * dm->cout, 0);
    vec(&b, "sampler", -1, lat, DISC_VC_SAMPLER, 0);
    return b.n;
}

void disc_energy_eval(const struct disc_energy *en, const struct disc_act *a, double seconds,
                      struct disc_energy_parts *o)
{
    /* docs/disc.md#energy-a100-baseline-and-outputs: energy = sum count e_event + p_static t (pJ ->
     * J) */
    o->mac = 1e-12 * (double)a->mac * en->e_mac;
    o->vpu = 1e-12 * (double)a->vpu_op * en->e_vpu_op;
    o->sram = 1e-12 * ((double)a->sram_rd * en->e_sram_rd + (double)a->sram_wr * en->e_sram_wr);
    o->gspm = 1e-12 * (double)a->gspm * en->e_gspm;
    o->hbm = 1e-12 * (double)a->hbm * en->e_hbm;
    o->bus = 1e-12 * (double)a->bus * en->e_bus;
    o->stat = en->p_static_w * seconds;
    o->total = o->mac + o->vpu + o->sram + o->gspm + o->hbm + o->bus + o->stat;
}

void disc_hw_default(struct disc_hw *hw)
{
    memset(hw, 0, sizeof *hw);
    hw->clock_ghz = 1.0;
    hw->cores = 38;
    hw->dpu_count = 64;
    hw->dpu_lanes = 64;
    hw->dpu_eta = 0.90;
    hw->vpu_simds = 64;
    /* calibrated (schema key vpu_width); the docs/disc.md#replay-configuration table has 16 */
    hw->vpu_width = 24;
    hw->vpu_bus_elems = 16;
    const int cyc[DISC_VC_COUNT] = {3, 1, 1, 4, 1, 1, 4, 2, 8};
    memcpy(hw->vpu_cycles, cyc, sizeof cyc);
    hw->selector_width = 64;
    hw->hash = DISC_HASH_MUL;
    hw->hash_k_odd = DISC_HASH_K_ODD;
    hw->hbm_gbs = 2048;
    hw->scratchpad_mib = 40;
    hw->elem_bytes = 2;
    hw->overlap_spmm_proj = true;
}

/*
 * Sets the fields of en that table t names (sum of the pJ of each count named; the static
 * terms' watts when t lists any) and keeps the others. ERR_CONFIG for a count the DiSC
 * model does not make, e set naming t->path.
 */
static int energy_from_table(struct disc_energy *en, const struct energy_table *t, struct errmsg *e)
{
    static const struct {
        const char *count;
        size_t off;
    } fields[] = {
        {"mac", offsetof(struct disc_energy, e_mac)},
        {"vpu_op", offsetof(struct disc_energy, e_vpu_op)},
        {"sram_rd_bytes", offsetof(struct disc_energy, e_sram_rd)},
        {"sram_wr_bytes", offsetof(struct disc_energy, e_sram_wr)},
        {"gspm_bytes", offsetof(struct disc_energy, e_gspm)},
        {"hbm_bytes", offsetof(struct disc_energy, e_hbm)},
        {"bus_elems", offsetof(struct disc_energy, e_bus)},
    };
    enum { N_FIELDS = sizeof fields / sizeof fields[0] };
    bool seen[N_FIELDS] = {false};
    double w = 0;
    for (size_t i = 0; i < t->n_events; i++) {
        const struct energy_event *ev = &t->events[i];
        if (ev->is_static) {
            w += ev->pj;
            continue;
        }
        size_t f = 0;
        while (f < N_FIELDS && strcmp(fields[f].count, ev->count))
            f++;
        if (f == N_FIELDS)
            return errmsg_set(e, ERR_CONFIG, "unknown count '%s' at $.events[%zu] ('%s')",
                              ev->count, i, t->path);
        double *v = (double *)((char *)en + fields[f].off);
        *v = seen[f] ? *v + ev->pj : ev->pj;
        seen[f] = true;
    }
    if (t->static_listed)
        en->p_static_w = w;
    return 0;
}

void disc_energy_default(struct disc_energy *en)
{
    /* docs/disc.md#replay-configuration energy table [decision; placeholders]: replay/energy's
     * built-in "disc" */
    memset(en, 0, sizeof *en);
    int rc = energy_from_table(en, energy_table_builtin("disc"), NULL);
    assert(rc == 0); /* the built-in table names only the counts above */
    (void)rc;
}

int disc_energy_load(struct disc_energy *en, const char *path, struct errmsg *e)
{
    /* The replay engine's energy-table layout and checks (replay/energy.h). */
    struct energy_table t;
    int rc = energy_table_load(&t, path, e);
    if (rc)
        return rc;
    rc = energy_from_table(en, &t, e);
    energy_table_release(&t);
    return rc;
}

void disc_dims_gpu(const struct disc_dims *dm, struct gpu_dit_dims *out)
{
    const struct gpu_dit_dims ad = {dm->depth, dm->d,     dm->h,     dm->dh,        dm->text,
                                    dm->dc,    dm->n,     dm->batch, dm->cin,       dm->cout,
                                    dm->patch, dm->lat_h, dm->lat_w, dm->class_cond};
    *out = ad;
}

bool disc_header_class_cond(const Acceltrace__TraceHeader *hdr)
{
    const Acceltrace__DiscHeader *dh = hdr ? hdr->disc : NULL;
    if (!dh)
        return false;
    bool dit = dh->caption_width == 0 && dh->text_tokens == 0; /* no family: no text */
    json_t *mj = hdr->model_json && *hdr->model_json ? json_loads(hdr->model_json, 0, NULL) : NULL;
    const char *fam = json_string_value(json_object_get(mj, "family"));
    if (fam)
        dit = !strcmp(fam, "dit"); /* capture/disc writes "dit" or "pixart" */
    json_decref(mj);
    return dit;
}

void disc_dims_preset(struct disc_dims *dm, const char *model)
{
    memset(dm, 0, sizeof *dm);
    dm->batch = 1;
    dm->cin = 4;
    dm->cout = 8;
    dm->patch = 2;
    dm->ctr_on = true;
    if (model && !strcmp(model, "micro")) {
        dm->depth = 2, dm->d = 64, dm->h = 4, dm->dh = 16, dm->dc = 32, dm->text = 16;
        dm->lat_h = dm->lat_w = 16;
    } else if (model && !strcmp(model, "pixart-sigma-xl")) {
        dm->depth = 28, dm->d = 1152, dm->h = 16, dm->dh = 72, dm->dc = 4096, dm->text = 300;
        dm->lat_h = dm->lat_w = 128;
    } else if (model && !strcmp(model, "dit-xl-2")) { /* 256 px, docs/models.md#dit-xl2 */
        dm->depth = 28, dm->d = 1152, dm->h = 16, dm->dh = 72, dm->class_cond = true;
        dm->lat_h = dm->lat_w = 32;
    } else if (model && !strcmp(model, "dit-micro")) { /* 128 px */
        dm->depth = 2, dm->d = 64, dm->h = 4, dm->dh = 16, dm->class_cond = true;
        dm->lat_h = dm->lat_w = 16;
    } else { /* tiny */
        dm->depth = 12, dm->d = 384, dm->h = 6, dm->dh = 64, dm->dc = 4096, dm->text = 300;
        dm->lat_h = dm->lat_w = 64;
    }
    dm->n = (dm->lat_h / dm->patch) * (dm->lat_w / dm->patch);
}
