/*
 * nn: FP32 tensor kernels shared by the capture models (DiT for DiSC, Llama for Salca).
 *
 * Layout conventions (llama2.c style): every matrix is row-major with an explicit leading
 * dimension (elements between consecutive rows), so heads can be addressed in place inside
 * a (tokens, d) activation. Linear layers store W as [out, in] (PyTorch / safetensors order)
 * and compute y = x W^T + b. GEMMs go through OpenBLAS cblas_sgemm; the thread count of
 * BLAS is set globally with nn_set_threads. The kernels never allocate except where a
 * function says so, never print, and return nothing: shapes are the caller's invariant.
 * Determinism: for a fixed BLAS thread count, the same inputs give the same bits.
 */
#ifndef ACCELTRACE_NN_H
#define ACCELTRACE_NN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Sets the OpenBLAS thread count (>= 1). Tests use 1 so results are bit-reproducible. */
void nn_set_threads(int n);

/*
 * C (m, n) = alpha * A (m, k) * op(B) + beta * C, op(B) = B^T with B stored (n, k) when
 * trans_b, else B stored (k, n). lda/ldb/ldc are row strides in elements. m, n or k = 0
 * is allowed (k = 0 scales C by beta).
 */
void nn_sgemm(bool trans_b, int m, int n, int k, float alpha, const float *a, int lda,
              const float *b, int ldb, float beta, float *c, int ldc);

/*
 * Linear layer: y (m, n_out) = x (m, n_in) W^T + bias, W stored [n_out, n_in] row-major,
 * bias (n_out) or NULL. ldx/ldy are row strides of x and y.
 */
void nn_linear(const float *x, int m, int n_in, int ldx, const float *w, const float *bias,
               int n_out, float *y, int ldy);

/* Row-wise softmax in place over `cols` entries of each of `rows` rows (stride ld),
 * subtracting the row max first; exponentials by nn_exp_clamped (entries more than 87
 * below the max get e^-87 ~ 1.6e-38 instead of 0). */
void nn_softmax_rows(float *x, int rows, int cols, int ld);

/*
 * LayerNorm over the last dimension: y = (x - mean)/sqrt(var + eps) * gamma + beta, with the
 * population variance accumulated in double. gamma/beta may be NULL (no affine; PixArt's
 * elementwise_affine=False). x and y may alias. Rows have stride ld in both.
 */
void nn_layernorm(const float *x, float *y, int rows, int d, int ld, float eps, const float *gamma,
                  const float *beta);

/* RMSNorm (Llama): y = x / sqrt(mean(x^2) + eps) * gamma; gamma may be NULL. */
void nn_rmsnorm(const float *x, float *y, int rows, int d, int ld, float eps, const float *gamma);

/* exp in place after clamping to [-87, 88]: a vectorised Cephes polynomial within 2 ulp of
 * expf, deterministic (no FMA contraction in ISO C mode). +-inf clamp to the ends; NaN
 * in gives NaN out, with no undefined behaviour on the way. */
void nn_exp_clamped(float *x, size_t n);

/* GELU, tanh form 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3))) (PixArt, docs/disc.md#forward-pass),
 * evaluated as x e/(e + 1), e = exp(2 sqrt(2/pi)(x + 0.044715x^3)). */
void nn_gelu_tanh(float *x, size_t n);

/* SiLU x * sigmoid(x), in place. */
void nn_silu(float *x, size_t n);

/* y[i] += x[i] (residual add). */
void nn_add(float *y, const float *x, size_t n);

/* RoPE pairing: NN_ROPE_HALF rotates (i, i + dh/2) (Hugging Face Llama); NN_ROPE_PAIRS
 * rotates (2i, 2i + 1) (original Meta / GPT-NeoX interleaved). */
enum nn_rope_style { NN_ROPE_HALF = 0, NN_ROPE_PAIRS = 1 };

/*
 * Rotary position embedding in place on x (n_tok, n_heads * dh) with row stride ld; token
 * r has position pos[r] (or r when pos is NULL). Frequencies theta_i = base^(-2i/dh),
 * angles computed in double.
 */
void nn_rope(float *x, int n_tok, int n_heads, int dh, int ld, const int64_t *pos, double base,
             enum nn_rope_style style);

/*
 * One attention head: O (n_q, dh) = softmax(scale * Q K^T [+ mask]) V.
 *   q (n_q, dh) stride ldq; k, v (n_k, dh) strides ldk, ldv; o (n_q, dh) stride ldo.
 *   mask: optional bitset, one row of mask_words 64-bit words per query token, LSB-first;
 *         bit j of row r set = key j is attended. Without a mask every key is attended.
 *   mask_rows: optional row subset; query r of q uses mask row mask_rows[r] (its token
 *         index). NULL: query r uses mask row r.
 *   causal_offset: when >= 0, query r may attend keys j <= r + causal_offset only (in
 *         addition to the mask); -1 disables.
 * Without a mask the scores go through two BLAS GEMMs on `scratch` (n_q * n_k floats);
 * with a mask only set entries are computed (SDDMM + sparse softmax + SpMM), scratch needs
 * n_k floats. A masked row with no set bit yields O = 0. Softmax subtracts the max over the
 * attended entries. scratch must not alias the operands.
 */
struct nn_attn {
    int n_q, n_k, dh;
    const float *q;
    int ldq;
    const float *k;
    int ldk;
    const float *v;
    int ldv;
    float *o;
    int ldo;
    float scale;
    const uint64_t *mask;
    size_t mask_words;
    const int32_t *mask_rows;
    int causal_offset;
    float *scratch;
};

/* Runs one head as described above. */
void nn_attention(const struct nn_attn *a);

/*
 * Sparse attention for one query row given its score row already computed on the set
 * entries of mask_row (other entries of s are ignored): o (dh) = sum_j w_j v_j with w the
 * softmax over set entries, weights by nn_softmax_list on the set entries in ascending
 * column order, each output column summed in that order, then scaled by 1/sum. s is
 * overwritten (the front holds the weights). Returns the number of set entries.
 */
size_t nn_attention_row_sparse(float *s, const uint64_t *mask_row, int n_k, const float *v, int ldv,
                               int dh, float *o);

/*
 * The unnormalised softmax weights of a list of cnt > 0 scores, in place, with the
 * arithmetic of nn_softmax_rows (max subtracted, clamped below at -87, the vectorised exp);
 * returns their sum (eight partial sums over the list position mod 8 in a fixed order).
 */
float nn_softmax_list(float *e, size_t cnt);

/* nn_softmax_list when the caller already knows mx, the maximum of the cnt scores (the
 * same bits: a maximum does not depend on the order it is taken in). */
float nn_softmax_list_max(float *e, size_t cnt, float mx);

/* Dot product of n floats in float, eight interleaved partial sums combined in a fixed
 * order (SDDMM element). */
float nn_dot(const float *a, const float *b, int n);

/*
 * SDDMM row: s[j] = scale * nn_dot(q, k_j, dh) for every set bit j < n_k of mask_row
 * (k_j = k + j*ldk); other entries of s are left alone. Returns the number computed.
 */
size_t nn_sddmm_row(const float *q, const float *k, int ldk, int dh, const uint64_t *mask_row,
                    int n_k, float scale, float *s);

#endif
