/*
 * a100_model: the A100 roofline baseline of the DiSC replay (specs/disc.md section 7.4).
 *
 * Always dense. One kernel per op of spec 7.2 except ctr_select, with qk, softmax and pv
 * fused into one attention kernel for self- and for cross-attention. Each kernel costs
 *   t = max(FLOP / (peak eff), bytes / (hbm eff_mem)) + launch_us
 * with eff = eff_linear for linear ops, eff_attn for attention and memory only for
 * element-wise ops; energy = power_w t. Pure arithmetic on caller-owned structs; the model
 * registered as "a100" (model_a100_ops) replays a disc trace's steps with it.
 */
#ifndef ACCELTRACE_A100_MODEL_H
#define ACCELTRACE_A100_MODEL_H

#include <stdbool.h>
#include <stdint.h>

struct Acceltrace__TraceHeader;

/* configs/a100.json */
struct a100_hw {
    double peak_tflops; /* FP16 dense, TFLOP/s [paper] */
    double hbm_gbs;     /* GB/s [paper] */
    double eff_linear;  /* fraction of peak for GEMMs [decision] */
    double eff_attn;    /* fraction of peak for fused attention [cited-derived] */
    double eff_mem;     /* fraction of HBM bandwidth [cited] */
    double launch_us;   /* per kernel, µs [cited] */
    double power_w;     /* board power while busy, W [decision] */
    int elem_bytes;     /* bytes per operand [decision] */
};

void a100_hw_default(struct a100_hw *hw);

/* Linear kernel (m x ni)(ni x no) + bias: seconds. */
double a100_linear_s(const struct a100_hw *hw, uint64_t m, uint64_t ni, uint64_t no);
/* Fused attention: mac = MAC_qk + MAC_pv, elems = Q + K + V + O elements: seconds. */
double a100_attention_s(const struct a100_hw *hw, uint64_t mac, uint64_t elems);
/* Element-wise kernel over e elements reading n_in operands: seconds. */
double a100_elementwise_s(const struct a100_hw *hw, uint64_t e, int n_in);

/* Dimensions the A100 step needs (a subset of struct disc_dims). class_cond: the DiT
 * family's op list (adaLN-Zero modulation per block, no cross-attention). */
struct a100_dims {
    uint32_t depth, d, h, dh, text, dc, n, batch, cin, cout, patch, lat_h, lat_w;
    bool class_cond;
};

/*
 * Whether a disc trace holds a class-conditional DiT (docs/models.md#dit-xl2): the header's
 * model_json names `"family": "dit"`; a header without a family is DiT when it has no text
 * (caption_width and text_tokens 0), else PixArt. hdr may be NULL (false).
 */
bool a100_header_class_cond(const struct Acceltrace__TraceHeader *hdr);

/*
 * One dense step's A100 time by term (issue 13 item 4): each kernel's roofline time goes to
 * its class (linear, fused attention, element-wise) and, for linear and attention, to the
 * compute- or memory-bound term by which side of the max won; launch_s = kernels x
 * launch_us. The terms sum to total_s (= a100_step_s).
 */
struct a100_split {
    double linear_compute_s, linear_memory_s; /* GEMMs */
    double attn_compute_s, attn_memory_s;     /* fused attention */
    double elementwise_s;                     /* norms, residuals, GELU, sampler: memory */
    double launch_s;                          /* kernels x launch_us */
    double total_s;
    uint64_t kernels;
};

/* Seconds of one dense sampler step (the spec 7.2 op list at N_k = N) and its kernels. */
double a100_step_s(const struct a100_hw *hw, const struct a100_dims *dm, uint64_t *kernels);
/* The same step split by term into *out. */
void a100_step_split(const struct a100_hw *hw, const struct a100_dims *dm, struct a100_split *out);

#endif
