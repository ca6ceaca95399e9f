/*
 * gpu_model: the per-operator GPU model (docs/models.md#gpu-baselines).
 *
 * One model of a GPU running a network one kernel at a time, used three ways: standalone
 * (`acceltrace model gpu`), as the baseline inside the DiSC replay (and the Salca GPU
 * decode baseline), and by `acceltrace validate gpu` against measured end-to-end times.
 * Each kernel is priced by its class:
 *   - GEMM: tiles of 128 x 256 outputs (either orientation, the faster one; below 128 rows
 *     m rounded up to 16, the MMA height, by 256) spread over the SMs in waves (wave
 *     quantization), split-K when there are fewer tiles than SMs,
 *     each tile taking (K + gemm_k_fill) MACs-per-output at gemm_eff_max of an SM's peak;
 *     never faster than its bytes at eff_mem of the HBM bandwidth.
 *   - attention forward (FlashAttention-2 style): one CTA per 128 query rows per head,
 *     waves over the SMs, (N_k + attn_k_fill) key positions per CTA at attn_eff_max of an
 *     SM's peak, the head dimension rounded up to a multiple of 32 (the kernel's).
 *   - decode attention (FlashDecoding style): decode_fill_us (the call's fixed time) plus
 *     the K and V cache bytes at decode_eff of the HBM bandwidth, two kernels (split-KV and
 *     reduce).
 *   - element-wise: bytes at eff_mem of the HBM bandwidth.
 *   - launch: each kernel costs max(t + launch_us, host_us): the GPU-side gap between
 *     back-to-back kernels, or the host's dispatch time per op when the host is slower
 *     (eager frameworks; host_us 0 models CUDA graphs). The excess over t is the "launch"
 *     class.
 * Power is idle_w + (tdp_w - idle_w) x activity, activity the time-weighted fraction of
 * peak (FLOP/s or bytes/s, whichever the kernel is bound by); energy = power x time.
 * Everything is pure arithmetic on caller-owned structs; presets are compiled-in tables
 * whose every value names its source and status (gpu_preset_*).
 */
#ifndef ACCELTRACE_GPU_MODEL_H
#define ACCELTRACE_GPU_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Op classes of the time split; the per-class seconds sum to the total. */
enum gpu_op_class {
    GPU_OP_GEMM,
    GPU_OP_ATTENTION,
    GPU_OP_DECODE_ATTN,
    GPU_OP_ELEMENTWISE,
    GPU_OP_LAUNCH,
    GPU_OP_N
};

/* "gemm", "attention", "decode_attention", "elementwise", "launch". */
const char *gpu_op_class_name(enum gpu_op_class c);

/* One GPU. Units in the names; statuses and sources in the preset tables. */
struct gpu_hw {
    const char *name;      /* preset name, or "custom" */
    double sms;            /* streaming multiprocessors */
    double peak_tflops;    /* dense FP16/BF16 tensor peak, TFLOP/s */
    double hbm_gbs;        /* HBM bandwidth, GB/s */
    double eff_mem;        /* fraction of hbm_gbs a streaming kernel sustains */
    double launch_us;      /* GPU-side time per kernel when launches run ahead, us */
    double host_us;        /* host dispatch time per op in an eager framework, us */
    double gemm_eff_max;   /* fraction of an SM's peak a GEMM tile sustains */
    double gemm_k_fill;    /* per-tile fixed cost in K steps (prologue, epilogue) */
    double attn_eff_max;   /* fraction of an SM's peak an attention CTA sustains */
    double attn_k_fill;    /* per-CTA fixed cost in key positions */
    double decode_eff;     /* fraction of hbm_gbs decode attention sustains */
    double decode_fill_us; /* fixed time of a decode-attention call at any context, us */
    double idle_w;         /* board power at idle, W */
    double tdp_w;          /* board power limit, W */
    double elem_bytes;     /* bytes per operand (2: FP16/BF16) */
};

/* One kernel as booked, for a timeline (struct gpu_acc's hook). */
struct gpu_kernel {
    enum gpu_op_class cls; /* its class (never GPU_OP_LAUNCH) */
    const char *name;      /* "gemm 2048x1152x1152", "attention 2x16x1024x1024x72", ... */
    double work_s;         /* its execution time (in the class) */
    double launch_s;       /* the launch gap that follows it (class launch) */
    double bytes;          /* HBM bytes it moves */
    double util;           /* fraction of the peak it is bound by */
    int64_t block;         /* transformer block or layer, -1 outside the blocks */
};

/* Time and activity accumulated over kernels. */
struct gpu_acc {
    double s[GPU_OP_N]; /* seconds by class */
    double act_s;       /* sum over kernels of seconds x fraction of peak */
    double flop;        /* FLOPs executed (counted at the workload's shapes) */
    double bytes;       /* HBM bytes moved (model estimate) */
    uint64_t kernels;   /* kernels launched */
    /* Optional: called for every kernel booked into this acc, in launch order (a workload
     * step then walks every block instead of scaling one); NULL for none. */
    void (*kernel)(void *ctx, const struct gpu_kernel *k);
    void *kernel_ctx;
    int64_t block; /* set by the workload for the hook: the block being booked, or -1 */
};

/* Sum of acc->s. */
double gpu_acc_seconds(const struct gpu_acc *acc);
/* Average board power over acc (idle + dynamic x activity), W; idle_w when empty. */
double gpu_acc_power_w(const struct gpu_hw *hw, const struct gpu_acc *acc);
/* a += k b. */
void gpu_acc_add(struct gpu_acc *a, const struct gpu_acc *b, double k);

/* Kernels. Each returns its seconds (launch included) and adds to acc when not NULL. */
double gpu_gemm(const struct gpu_hw *hw, uint64_t m, uint64_t n, uint64_t k, struct gpu_acc *acc);
/* Fused attention forward: b x h heads, n_q queries over n_k keys, head dim dh. */
double gpu_attention(const struct gpu_hw *hw, uint64_t b, uint64_t h, uint64_t n_q, uint64_t n_k,
                     uint64_t dh, bool causal, struct gpu_acc *acc);
/* Decode attention of one new token per sequence: b sequences, h query heads sharing
 * kv_h K/V heads (grouped-query), ctx cached positions, head dim dh. */
double gpu_decode_attention(const struct gpu_hw *hw, uint64_t b, uint64_t h, uint64_t kv_h,
                            uint64_t ctx, uint64_t dh, struct gpu_acc *acc);
/* A memory-bound kernel moving `bytes` at eff_mem (a scan, a gather-free select). */
double gpu_stream(const struct gpu_hw *hw, double bytes, struct gpu_acc *acc);
/* Element-wise kernel over e elements reading n_in operands and writing one. */
double gpu_elementwise(const struct gpu_hw *hw, uint64_t e, int n_in, struct gpu_acc *acc);

/* ---- presets ------------------------------------------------------------------------ */

/* One preset value with where it comes from. */
struct gpu_preset_value {
    const char *key; /* struct gpu_hw field name: "sms", "peak_tflops", ... */
    double value;    /* in the field's unit */
    const char
        *status; /* "input" (datasheet), "cited", "cited-derived", "calibrated", "decision" */
    const char *source; /* reference: docs/models.md#gpu-baselines row */
};

/* Number of presets and the i-th name ("a100-pcie-80gb", ...); NULL past the end. */
size_t gpu_preset_count(void);
const char *gpu_preset_name(size_t i);
/* One-line description of preset name ("A100 80 GB PCIe"), or NULL. */
const char *gpu_preset_title(const char *name);
/* Fills *hw from preset name; 0, or ERR_USAGE when unknown. */
int gpu_preset_get(const char *name, struct gpu_hw *hw);
/* The values of preset name with their sources; *n set; NULL when unknown. */
const struct gpu_preset_value *gpu_preset_values(const char *name, size_t *n);
/* Sets field key of hw to v; false when key is not a field. */
bool gpu_hw_set(struct gpu_hw *hw, const char *key, double v);
/* "a100-pcie-80gb|a100-pcie-40gb|..." for config choices. */
const char *gpu_preset_choices(void);

/* ---- workloads ---------------------------------------------------------------------- */

/* A diffusion transformer's shape (DiT and PixArt families). */
struct gpu_dit_dims {
    uint32_t depth, d, h, dh; /* blocks, hidden, heads, head dim */
    uint32_t text, dc;        /* text tokens, caption width (PixArt; 0 for DiT) */
    uint32_t n, batch;        /* image tokens, batch (CFG doubles it) */
    uint32_t cin, cout, patch, lat_h, lat_w;
    bool class_cond; /* DiT family: adaLN-Zero per block, no cross-attention */
};

/* One denoising step of the transformer (dense, one kernel per op, fused attention). */
void gpu_dit_step(const struct gpu_hw *hw, const struct gpu_dit_dims *dm, struct gpu_acc *acc);

/* A decoder-only LLM's shape (Llama family). */
struct gpu_llm_dims {
    uint32_t layers, d, heads, kv_heads, head_dim, ffn, vocab;
};

/* How much of a decode step: one layer's attention, one layer, or the whole model. */
enum gpu_llm_part { GPU_PART_ATTENTION, GPU_PART_LAYER, GPU_PART_MODEL };

/* One decode token per sequence at context ctx for batch b. */
void gpu_llm_decode(const struct gpu_hw *hw, const struct gpu_llm_dims *dm, uint64_t ctx,
                    uint64_t b, enum gpu_llm_part part, struct gpu_acc *acc);

/* Named workloads of `model gpu` and `validate gpu`. */
enum gpu_workload_kind { GPU_WL_DIT, GPU_WL_LLM, GPU_WL_DECODE_ATTN };

struct gpu_workload {
    const char *name;
    enum gpu_workload_kind kind;
    struct gpu_dit_dims dit;   /* GPU_WL_DIT: n, batch, lat_* set by gpu_request_run */
    struct gpu_llm_dims llm;   /* GPU_WL_LLM */
    uint32_t default_text;     /* text tokens when not given (PixArt) */
    uint32_t default_steps;    /* sampler steps when not given */
    uint32_t default_image_px; /* image size when not given */
    const char *title;         /* with its source: docs/models.md#gpu-baselines */
};

size_t gpu_workload_count(void);
const struct gpu_workload *gpu_workload_get(size_t i);
const struct gpu_workload *gpu_workload_find(const char *name);

/* A request: the workload and the conditions (0 = the workload's default). */
struct gpu_request {
    const struct gpu_workload *wl;
    uint32_t image_px, text_tokens, steps, batch;
    bool cfg;                           /* classifier-free guidance: batch x 2 */
    uint64_t context;                   /* decode context (LLM, decode-attention) */
    enum gpu_llm_part part;             /* LLM */
    uint32_t heads, kv_heads, head_dim; /* decode-attention */
    bool eager;                         /* host dispatch per op (host_us) counts */
};

/* What a request costs. */
struct gpu_estimate {
    double seconds;     /* whole request (S steps, or one token) */
    double per_unit_s;  /* per step (DiT) or per token (LLM, decode-attention) */
    double energy_j;    /* power x seconds */
    double power_w;     /* average board power */
    struct gpu_acc acc; /* the whole request, by class */
    uint32_t steps;     /* steps used (DiT), 1 otherwise */
    uint32_t batch;     /* batch used (after CFG) */
    uint64_t tokens;    /* image tokens (DiT) */
};

/*
 * Checks r against its workload (image size a positive multiple of 16, context >= 1,
 * heads divisible by kv_heads, sizes bounded) and prices it. 0, or ERR_USAGE with msg
 * (n bytes) saying what is wrong.
 */
int gpu_request_run(const struct gpu_hw *hw, const struct gpu_request *r, struct gpu_estimate *out,
                    char *msg, size_t n);

#endif
