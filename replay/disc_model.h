/*
 * disc_model: the DiSC core-array replay model (docs/disc.md#replay-model; docs/models.md#disc).
 *
 * C_core cores, each with P_dpu DPUs of L_lane MAC lanes, a VPU of S_vpu SIMD engines of
 * W_vpu FMA lanes with a reduction bus, and a token selector; HBM of BW_c bytes per cycle.
 * Per sampler step the op sequence of docs/disc.md#cost-of-one-op runs one op after another; each
 * op costs DPU: ceil(max(MAC / (C P L fill eta), bytes / BW_c)) VPU: ceil(max(E c / (C S W), bytes
 * / BW_c)) and in mode `all` the self-attention becomes SDDMM (DPU, hash-placed), sparse softmax
 * and SpMM (VPU + reduction bus) whose cost is set by the per-row most loaded unit summed over rows
 * (R_P at U = P_dpu, R_S at U = S_vpu: the DiscMask lb_max fields,
 * docs/disc.md#sparse-ops-ctr-traffic-and-overlap). The SpMM overlaps the output projection. Every
 * op also reports activity counts (MACs, VPU lane-ops, SRAM, scratchpad, HBM bytes, bus elements)
 * that an energy table turns into joules (docs/disc.md#energy-a100-baseline-and-outputs), so energy
 * can be recomputed from ops.csv without replaying.
 *
 * The pure functions (disc_op_*, disc_step_ops, disc_energy_*) never fail and never
 * allocate; the model registered as "disc" (model_disc_ops) wraps them for the replay
 * engine: it reads the trace header, DiscStep and DiscMask records, estimates the load
 * balance of masks whose statistics are missing (docs/disc.md#sparse-ops-ctr-traffic-and-overlap
 * rule) and reports one results row per mode plus the ops table. Ownership: plain caller-owned
 * structs throughout.
 */
#ifndef ACCELTRACE_DISC_MODEL_H
#define ACCELTRACE_DISC_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "replay/gpu_model.h"

struct Acceltrace__TraceHeader;

/* Lane-cycles per element of each VPU class (docs/disc.md#replay-configuration vpu_cycles), in this
 * order. */
enum disc_vclass {
    DISC_VC_NORM_MOD,
    DISC_VC_RESIDUAL,
    DISC_VC_GATE_RESIDUAL,
    DISC_VC_SOFTMAX,
    DISC_VC_THRESHOLD,
    DISC_VC_RENORM,
    DISC_VC_GELU,
    DISC_VC_CTR_DIFF,
    DISC_VC_SAMPLER,
    DISC_VC_COUNT
};
extern const char *const disc_vclass_names[DISC_VC_COUNT];

/* The hardware of docs/disc.md#replay-configuration (configs/disc-a100-matched.json). */
struct disc_hw {
    double clock_ghz;              /* core clock, GHz */
    int cores;                     /* C_core */
    int dpu_count;                 /* P_dpu per core, power of two >= 2 */
    int dpu_lanes;                 /* L_lane MAC lanes per DPU */
    double dpu_eta;                /* fixed DPU efficiency eta */
    int vpu_simds;                 /* S_vpu SIMD engines per core, power of two >= 2 */
    int vpu_width;                 /* W_vpu FMA lanes per engine */
    int vpu_bus_elems;             /* reduced output elements per cycle on the bus */
    int vpu_cycles[DISC_VC_COUNT]; /* lane-cycles per element */
    int selector_width;            /* latent elements per cycle in the token selector */
    int hash;                      /* enum disc_hash_kind for SDDMM/SpMM placement */
    uint32_t hash_k_odd;           /* multiplicative constant */
    double hbm_gbs;                /* HBM bandwidth, GB/s */
    double scratchpad_mib;         /* global scratchpad, MiB */
    int elem_bytes;                /* E_b, bytes per operand */
    bool overlap_spmm_proj;        /* SpMM overlaps sa_o (max rule) */
};

/* Energy per event (configs/disc-energy.json), pJ, and static power in W
 * (docs/disc.md#energy-a100-baseline-and-outputs). */
struct disc_energy {
    double e_mac, e_vpu_op, e_sram_rd, e_sram_wr, e_gspm, e_hbm, e_bus; /* pJ (per B) */
    double p_static_w;
};

/* Model dimensions of the trace (docs/disc.md#model-configurations notation). */
struct disc_dims {
    uint32_t depth; /* L */
    uint32_t d;     /* hidden */
    uint32_t h;     /* heads */
    uint32_t dh;    /* head dim */
    uint32_t text;  /* T */
    uint32_t dc;    /* caption width D_c */
    uint32_t n;     /* tokens N */
    uint32_t batch; /* B */
    uint32_t cin, cout, patch;
    uint32_t lat_h, lat_w; /* latent H, W */
    bool ctr_on;           /* the trace has CTR on (caches, selector) */
    bool class_cond;       /* DiT family (class-conditional, adaLN-Zero, no cross-attention;
                              docs/models.md#dit-xl2); false: PixArt */
};

enum disc_mode { DISC_MODE_BASELINE = 0, DISC_MODE_CTR = 1, DISC_MODE_ALL = 2 };
#define DISC_MODES 3
const char *disc_mode_name(int mode);

/* floor(log2(x)), 0 for x <= 1: the depth of a reduction tree over x units (DPUs, SIMD
 * engines; powers of two in a checked config). */
unsigned disc_log2u(uint64_t x);

/* Activity counts of one op (docs/disc.md#energy-a100-baseline-and-outputs table). */
struct disc_act {
    uint64_t mac;     /* MACs on DPU lanes */
    uint64_t vpu_op;  /* VPU lane-ops (element-wise, softmax, SpMM FMA, selector) */
    uint64_t sram_rd; /* bytes read from core SRAM */
    uint64_t sram_wr; /* bytes written to core SRAM */
    uint64_t gspm;    /* global scratchpad bytes */
    uint64_t hbm;     /* HBM bytes */
    uint64_t bus;     /* reduction-bus elements */
};

enum disc_unit { DISC_UNIT_DPU = 0, DISC_UNIT_VPU = 1 };

/* One op of a step. */
struct disc_op {
    const char *name;    /* "sa_qk" ... (static) */
    const char *cls;     /* "linear", "attention", "vector", "softmax", "sddmm", "spmm",
                            "select" (static) */
    int unit;            /* enum disc_unit */
    int block;           /* -1 for per-step ops */
    uint64_t cycles;     /* cost of the op alone */
    uint64_t exposed;    /* cycles it adds to the step (overlap hides the rest) */
    bool mem_bound;      /* HBM bytes, not the unit's work, set the cycles (or no work) */
    uint64_t sel_cycles; /* of cycles, the token selector's (ctr_select only) */
    struct disc_act a;
};

/*
 * Where a step's exposed cycles go (the DiSC time by unit): compute-bound DPU ops,
 * compute-bound VPU ops (element-wise, softmax, SpMM with its reduction bus), ops whose
 * HBM traffic set the pace (either unit) and the token selector. The four sum to the
 * exposed cycles; cycles hidden by the SpMM/projection overlap are not in any of them.
 */
enum disc_time_unit { DISC_T_DPU, DISC_T_VPU, DISC_T_HBM, DISC_T_SELECTOR, DISC_T_UNITS };
extern const char *const disc_time_unit_names[DISC_T_UNITS]; /* "dpu", "vpu", "hbm", "selector" */

/* Adds op's exposed cycles to t[DISC_T_UNITS] by unit. */
void disc_op_time_split(const struct disc_op *op, uint64_t *t);

/* ST statistics of one block at one step, summed over batch elements and heads. */
struct disc_block_st {
    double r_p;   /* sum over rows of the max DPU count (hash, U = P_dpu) */
    double r_s;   /* same at U = S_vpu */
    uint64_t nnz; /* nonzeros over computed rows */
};

/* What one step of the trace tells the model. */
struct disc_step_in {
    uint32_t k;                     /* step index */
    uint64_t n_kept;                /* N_k (ignored in mode baseline) */
    bool generated;                 /* ST generation step */
    const struct disc_block_st *st; /* [depth] for mode all, else NULL */
};

/* Replay ceiling: ceil(x - 1e-9 x); 0 for x <= 0 or NaN, UINT64_MAX at or above 2^64. */
uint64_t disc_ceil(double x);

/* HBM bytes per cycle BW_c = hbm_gbs / clock_ghz. */
double disc_bw_c(const struct disc_hw *hw);

/*
 * Dense DPU op: n_rep repetitions of (m x ni)(ni x no) with `bytes` of HBM traffic
 * (docs/disc.md#cost-of-one-op). Fills cycles, exposed and the activity counts mac/sram (not
 * gspm/hbm).
 */
void disc_op_dpu(const struct disc_hw *hw, uint64_t n_rep, uint64_t m, uint64_t ni, uint64_t no,
                 uint64_t bytes, struct disc_op *op);
/* VPU element-wise op: e elements of class vc reading n_in operands (docs/disc.md#cost-of-one-op).
 */
void disc_op_vpu(const struct disc_hw *hw, uint64_t e, int vc, int n_in, uint64_t bytes,
                 struct disc_op *op);
/* SDDMM of a reuse step (docs/disc.md#sparse-ops-ctr-traffic-and-overlap): R_P dh / (L C), not
 * derated by eta. */
void disc_op_sddmm(const struct disc_hw *hw, double r_p, uint64_t nnz, uint64_t rows, uint32_t dh,
                   uint64_t bytes, struct disc_op *op);
/* Sparse softmax (docs/disc.md#sparse-ops-ctr-traffic-and-overlap); generated: also thresholds the
 * dense rows (dense_elems). */
void disc_op_softmax_sparse(const struct disc_hw *hw, double r_s, uint64_t nnz, bool generated,
                            uint64_t dense_elems, uint64_t bytes, struct disc_op *op);
/* SpMM on the VPU with the reduction bus (docs/disc.md#sparse-ops-ctr-traffic-and-overlap): + log2
 * S_vpu after the ceiling. */
void disc_op_spmm(const struct disc_hw *hw, double r_s, uint64_t nnz, uint64_t rows, uint32_t dh,
                  uint64_t bytes, struct disc_op *op);

/* Upper bound on ops of one step for `depth` blocks. */
size_t disc_step_ops_max(uint32_t depth);

/*
 * The op sequence of one step (docs/disc.md#replay-model) in mode `mode`. For the DiT family
 * (dm->class_cond) the embeddings are the timestep MLP and the class-embedding add, each
 * block starts with its adaLN-Zero modulation linear (B x d -> 6d) and has no
 * cross-attention, and the final layer has its own modulation (d -> 2d); the rest is
 * PixArt's sequence (docs/models.md#dit-xl2). written to ops (capacity
 * cap >= disc_step_ops_max). Returns the number of ops. Mode all needs in->st.
 */
size_t disc_step_ops(const struct disc_hw *hw, const struct disc_dims *dm, int mode,
                     const struct disc_step_in *in, struct disc_op *ops, size_t cap);

/* Energy in joules of activity counts a plus static power over `seconds`
 * (docs/disc.md#energy-a100-baseline-and-outputs). */
struct disc_energy_parts {
    double mac, vpu, sram, gspm, hbm, bus, stat, total; /* J */
};
void disc_energy_eval(const struct disc_energy *en, const struct disc_act *a, double seconds,
                      struct disc_energy_parts *out);

/* Shipped defaults (identical to configs/disc-a100-matched.json / disc-energy.json; the
 * energy values are replay/energy's built-in table "disc"). */
void disc_hw_default(struct disc_hw *hw);
void disc_energy_default(struct disc_energy *en);

/*
 * Loads an energy table of replay/energy.h (energy_table_load, its layout and checks) into
 * en: the pJ of the counts mac, vpu_op, sram_rd_bytes, sram_wr_bytes, gspm_bytes,
 * hbm_bytes, bus_elems (summed when a count is named twice) and, when the table has a
 * "static" list, the sum of its watts as p_static_w; fields the table does not name keep
 * their value. Another count is ERR_CONFIG. 0 or negative with e set.
 */
int disc_energy_load(struct disc_energy *en, const char *path, struct errmsg *e);

/* The GPU baseline's dimensions of dm (the same model and shape). */
void disc_dims_gpu(const struct disc_dims *dm, struct gpu_dit_dims *out);

/*
 * Whether a disc trace holds a class-conditional DiT (docs/models.md#dit-xl2): the header's
 * model_json names `"family": "dit"`; a header without a family is DiT when it has no text
 * (caption_width and text_tokens 0), else PixArt. hdr may be NULL (false).
 */
bool disc_header_class_cond(const struct Acceltrace__TraceHeader *hdr);

/*
 * The network's dimensions from a disc trace header, bounded (depth, tokens, heads, widths,
 * batch, patch, latent and text sizes) before use; *steps the sampler steps. 0, or
 * ERR_DATA when the header is missing or impossible (e names trace_path).
 */
int disc_dims_from_header(const struct Acceltrace__TraceHeader *hdr, const char *trace_path,
                          struct disc_dims *dm, uint32_t *steps, struct errmsg *e);

/* Fills the tiny / micro / pixart-sigma-xl / dit-micro / dit-xl-2 dimensions
 * (docs/disc.md#model-configurations and docs/models.md#dit-xl2 at each model's default image size;
 * B = 1, CTR on). */
void disc_dims_preset(struct disc_dims *dm, const char *model);

#endif
