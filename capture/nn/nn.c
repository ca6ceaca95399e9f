/*
 * nn: FP32 kernels. GEMMs through OpenBLAS; everything else is plain loops written so the
 * compiler can vectorise them while keeping a fixed accumulation order, or, for the softmax
 * exponential, eight-lane vectors (vec8.h) with the same per-lane arithmetic.
 */
#include "capture/nn/nn.h"
#include "capture/nn/vec8.h"
#include "common/hot.h"

#include <cblas.h>
#include <math.h>
#include <string.h>

/*
 * The elementwise hot loops (exp, softmax, GELU, the sparse attention row) are compiled
 * again for x86-64-v3 (AVX2) and v4 (AVX-512) with -O3 and picked at load time (common/hot.h),
 * as in capture/kura. The clones compute the same bits: no FMA contraction (-std=c11 keeps
 * -ffp-contract=off) and no reassociation (sums keep their written order). [decision: speed]
 * The exception is NN_HOT_FUSED, the masked-attention reference rows (nn_sddmm_row,
 * nn_attention_row_sparse): their v3 and v4 clones fuse each multiply-add (one rounding),
 * as the DiSC masked kernels in capture/disc/dit_attn.c do, and their default clone does
 * not; so reference and kernel agree bit for bit on any one CPU, and a CPU with FMA gives
 * other last bits than one without (as BLAS already does for the dense path).
 */
#define NN_HOT HOT_CLONES
#define NN_HOT_FUSED HOT_CLONES_FUSED

void nn_set_threads(int n)
{
    openblas_set_num_threads(n < 1 ? 1 : n);
}

void nn_sgemm(bool trans_b, int m, int n, int k, float alpha, const float *a, int lda,
              const float *b, int ldb, float beta, float *c, int ldc)
{
    if (m <= 0 || n <= 0)
        return;
    if (k <= 0) {
        for (int i = 0; i < m; i++)
            for (int j = 0; j < n; j++)
                c[(size_t)i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[(size_t)i * ldc + j];
        return;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a,
                lda, b, ldb, beta, c, ldc);
}

void nn_linear(const float *x, int m, int n_in, int ldx, const float *w, const float *bias,
               int n_out, float *y, int ldy)
{
    if (m <= 0)
        return;
    if (bias) {
        for (int i = 0; i < m; i++)
            memcpy(y + (size_t)i * ldy, bias, (size_t)n_out * sizeof(float));
        nn_sgemm(true, m, n_out, n_in, 1.0f, x, ldx, w, n_in, 1.0f, y, ldy);
    } else {
        nn_sgemm(true, m, n_out, n_in, 1.0f, x, ldx, w, n_in, 0.0f, y, ldy);
    }
}

/*
 * exp of eight floats, inputs already in [-87, 88]: Cephes expf (range reduction by ln 2
 * split in two constants, degree-6 polynomial, 2^n through the exponent bits), within 2 ulp
 * of expf. Each lane is the same scalar arithmetic, so a value never depends on its lane.
 */
static inline __attribute__((always_inline)) v8f exp8(v8f v)
{
    /* n = round(v / ln 2) lands in the low mantissa bits of 1.5 * 2^23 + n */
    v8f t = v * splat8(1.44269504088896341f) + splat8(12582912.0f);
    v8f nf = t - splat8(12582912.0f); /* round */
    v8f r = v - nf * splat8(0.693359375f) - nf * splat8(-2.12194440e-4f);
    v8f z = r * r;
    v8f p = ((((splat8(1.9875691500e-4f) * r + splat8(1.3981999507e-3f)) * r +
               splat8(8.3334519073e-3f)) *
                  r +
              splat8(4.1665795894e-2f)) *
                 r +
             splat8(1.6666665459e-1f)) *
                r +
            splat8(5.0000001201e-1f);
    p = p * z + r + splat8(1.0f);
    /* 2^n from those bits in unsigned arithmetic: a NaN input gives some finite or infinite
     * scale times p = NaN, so NaN in is NaN out; a float-to-int conversion of NaN would be
     * undefined and the signed multiply could overflow */
    v8u u = ((v8u)t - 0x4B400000u + 127u) << 23;
    return p * (v8f)u;
}

/* exp8 on n <= 8 floats in place (the tail of a row: the missing lanes are zeros) */
static inline __attribute__((always_inline)) void exp8_inplace(float *x, int n)
{
    if (n <= 0)
        return;
    v8f v = splat8(0.0f);
    memcpy(&v, x, (size_t)n * sizeof(float));
    v = exp8(v);
    memcpy(x, &v, (size_t)n * sizeof(float));
}

NN_HOT void nn_exp_clamped(float *x, size_t n)
{
    size_t i = 0;
    for (; i < n; i++) {
        float v = x[i] < -87.0f ? -87.0f : x[i];
        x[i] = v > 88.0f ? 88.0f : v;
    }
    for (i = 0; i + 8 <= n; i += 8)
        exp8_inplace(x + i, 8);
    exp8_inplace(x + i, (int)(n - i));
}

/* The maximum of n floats, eight running maxima (-INFINITY when n is 0). */
static inline __attribute__((always_inline)) float row_max(const float *row, size_t n)
{
    size_t n8 = n & ~(size_t)7;
    /* Eight independent running maxima: one chain would serialise on maxss latency. */
    float m0 = -INFINITY, m1 = -INFINITY, m2 = -INFINITY, m3 = -INFINITY;
    float m4 = -INFINITY, m5 = -INFINITY, m6 = -INFINITY, m7 = -INFINITY;
    for (size_t i = 0; i < n8; i += 8) {
        const float *v = row + i;
        m0 = v[0] > m0 ? v[0] : m0;
        m1 = v[1] > m1 ? v[1] : m1;
        m2 = v[2] > m2 ? v[2] : m2;
        m3 = v[3] > m3 ? v[3] : m3;
        m4 = v[4] > m4 ? v[4] : m4;
        m5 = v[5] > m5 ? v[5] : m5;
        m6 = v[6] > m6 ? v[6] : m6;
        m7 = v[7] > m7 ? v[7] : m7;
    }
    m0 = m1 > m0 ? m1 : m0;
    m2 = m3 > m2 ? m3 : m2;
    m4 = m5 > m4 ? m5 : m4;
    m6 = m7 > m6 ? m7 : m6;
    m0 = m2 > m0 ? m2 : m0;
    m4 = m6 > m4 ? m6 : m4;
    float mx = m4 > m0 ? m4 : m0;
    for (size_t i = n8; i < n; i++)
        mx = row[i] > mx ? row[i] : mx;
    return mx;
}

/* exp_sum_row's work after the maximum mx of the row (which the caller may have found
 * elsewhere: the maximum of a set of floats does not depend on the order it is taken in). */
static inline __attribute__((always_inline)) float exp_sum_from(float *row, size_t n, float mx)
{
    size_t n8 = n & ~(size_t)7;
    /* v - mx clamped below (a NaN stays NaN), its exponential and the sum (eight partial
     * sums, fixed order) in one pass over blocks of eight, so the row is read once */
    const v8f vmx = splat8(mx), lo = splat8(-87.0f);
    v8f s8 = splat8(0.0f);
    for (size_t i = 0; i < n8; i += 8) {
        v8f x = load8(row + i) - vmx;
        x = exp8(select8(x < lo, lo, x));
        memcpy(row + i, &x, sizeof x);
        s8 += x;
    }
    float sum = ((s8[0] + s8[4]) + (s8[1] + s8[5])) + ((s8[2] + s8[6]) + (s8[3] + s8[7]));
    for (size_t i = n8; i < n; i++) {
        float v = row[i] - mx;
        row[i] = v < -87.0f ? -87.0f : v;
    }
    exp8_inplace(row + n8, (int)(n - n8));
    for (size_t i = n8; i < n; i++)
        sum += row[i];
    return sum;
}

/*
 * The softmax weights of one row of n scores in place, unnormalised: the maximum (eight
 * running maxima), v - max clamped below at -87, the vectorised exp, and their sum (eight
 * partial sums over i mod 8 combined as ((0+4)+(1+5))+((2+6)+(3+7)), then the tail in
 * order). Returns the sum. Shared by the dense softmax and the sparse (list) softmax, so a
 * kept entry gets the same arithmetic in both.
 */
static inline __attribute__((always_inline)) float exp_sum_row(float *row, size_t n)
{
    return exp_sum_from(row, n, row_max(row, n));
}

NN_HOT void nn_softmax_rows(float *x, int rows, int cols, int ld)
{
    size_t n = (size_t)cols, n8 = n & ~(size_t)7;
    for (int r = 0; r < rows; r++) {
        float *row = x + (size_t)r * ld;
        float inv = 1.0f / exp_sum_row(row, n);
        for (size_t i = 0; i < n8; i += 8)
            for (int j = 0; j < 8; j++)
                row[i + j] *= inv;
        for (size_t i = n8; i < n; i++)
            row[i] *= inv;
    }
}

NN_HOT float nn_softmax_list(float *e, size_t cnt)
{
    return exp_sum_row(e, cnt);
}

NN_HOT float nn_softmax_list_max(float *e, size_t cnt, float mx)
{
    return exp_sum_from(e, cnt, mx);
}

void nn_layernorm(const float *x, float *y, int rows, int d, int ld, float eps, const float *gamma,
                  const float *beta)
{
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * ld;
        float *yr = y + (size_t)r * ld;
        double s = 0.0, s2 = 0.0;
        for (int j = 0; j < d; j++)
            s += xr[j];
        double mean = s / d;
        for (int j = 0; j < d; j++) {
            double t = xr[j] - mean;
            s2 += t * t;
        }
        float inv = (float)(1.0 / sqrt(s2 / d + (double)eps));
        float mf = (float)mean;
        for (int j = 0; j < d; j++) {
            float v = (xr[j] - mf) * inv;
            if (gamma)
                v *= gamma[j];
            if (beta)
                v += beta[j];
            yr[j] = v;
        }
    }
}

void nn_rmsnorm(const float *x, float *y, int rows, int d, int ld, float eps, const float *gamma)
{
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * ld;
        float *yr = y + (size_t)r * ld;
        double s2 = 0.0;
        for (int j = 0; j < d; j++)
            s2 += (double)xr[j] * xr[j];
        float inv = (float)(1.0 / sqrt(s2 / d + (double)eps));
        for (int j = 0; j < d; j++)
            yr[j] = gamma ? xr[j] * inv * gamma[j] : xr[j] * inv;
    }
}

NN_HOT void nn_gelu_tanh(float *x, size_t n)
{
    /* 0.5 x (1 + tanh(u)) = x e / (e + 1) with e = exp(2u), u = sqrt(2/pi)(x + 0.044715 x^3);
     * exponentials in blocks through the vectorised exp. */
    const float c2 = 2.0f * 0.7978845608028654f;
    float e[256];
    for (size_t i0 = 0; i0 < n; i0 += 256) {
        size_t m = n - i0 < 256 ? n - i0 : 256;
        for (size_t i = 0; i < m; i++) {
            float v = x[i0 + i];
            e[i] = c2 * (v + 0.044715f * v * v * v);
        }
        nn_exp_clamped(e, m);
        for (size_t i = 0; i < m; i++) {
            /* x e overflows for x >= 2 once e nears the clamp (x >~ 12): there GELU is x */
            float p = x[i0 + i] * e[i];
            x[i0 + i] = isinf(p) && !isinf(x[i0 + i]) ? x[i0 + i] : p / (e[i] + 1.0f);
        }
    }
}

void nn_silu(float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] = x[i] / (1.0f + expf(-x[i]));
}

void nn_add(float *y, const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        y[i] += x[i];
}

void nn_rope(float *x, int n_tok, int n_heads, int dh, int ld, const int64_t *pos, double base,
             enum nn_rope_style style)
{
    int half = dh / 2;
    for (int r = 0; r < n_tok; r++) {
        double p = pos ? (double)pos[r] : (double)r;
        for (int i = 0; i < half; i++) {
            double ang = p * pow(base, -2.0 * i / dh);
            float c = (float)cos(ang), s = (float)sin(ang);
            for (int h = 0; h < n_heads; h++) {
                float *v = x + (size_t)r * ld + (size_t)h * dh;
                int i0 = style == NN_ROPE_HALF ? i : 2 * i;
                int i1 = style == NN_ROPE_HALF ? i + half : 2 * i + 1;
                float a = v[i0], b = v[i1];
                v[i0] = a * c - b * s;
                v[i1] = a * s + b * c;
            }
        }
    }
}

/* Eight partial sums (vectorisable; fixed order, so results are reproducible). Always
 * inlined, so it takes its caller's contraction: plain in nn_dot, fused in nn_sddmm_row. */
static inline __attribute__((always_inline)) float dot8(const float *a, const float *b, int n)
{
    float s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++)
            s[j] += a[i + j] * b[i + j];
    float t = ((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) + (s[3] + s[7]));
    for (; i < n; i++)
        t += a[i] * b[i];
    return t;
}

NN_HOT float nn_dot(const float *a, const float *b, int n)
{
    return dot8(a, b, n);
}

NN_HOT_FUSED size_t nn_sddmm_row(const float *q, const float *k, int ldk, int dh,
                                 const uint64_t *mask_row, int n_k, float scale, float *s)
{
    size_t words = ((size_t)n_k + 63) / 64, cnt = 0;
    for (size_t w = 0; w < words; w++) {
        uint64_t bits = mask_row[w];
        while (bits) {
            int j = (int)(w * 64 + (size_t)__builtin_ctzll(bits));
            bits &= bits - 1;
            if (j >= n_k)
                break;
            s[j] = scale * dot8(q, k + (size_t)j * ldk, dh);
            cnt++;
        }
    }
    return cnt;
}

/* o[0..n) += e * v[0..n), in blocks of eight so the compiler's SLP pass vectorises it. */
static inline __attribute__((always_inline)) void axpy(float *restrict o, float e,
                                                       const float *restrict v, int n)
{
    int c = 0;
    for (; c + 8 <= n; c += 8) {
        o[c + 0] += e * v[c + 0];
        o[c + 1] += e * v[c + 1];
        o[c + 2] += e * v[c + 2];
        o[c + 3] += e * v[c + 3];
        o[c + 4] += e * v[c + 4];
        o[c + 5] += e * v[c + 5];
        o[c + 6] += e * v[c + 6];
        o[c + 7] += e * v[c + 7];
    }
    for (; c < n; c++)
        o[c] += e * v[c];
}

NN_HOT_FUSED size_t nn_attention_row_sparse(float *s, const uint64_t *mask_row, int n_k,
                                            const float *v, int ldv, int dh, float *o)
{
    size_t words = ((size_t)n_k + 63) / 64;
    size_t cnt = 0;
    /* the set entries' scores to the front of s, in ascending column order (cnt <= j) */
    for (size_t w = 0; w < words; w++) {
        uint64_t bits = mask_row[w];
        while (bits) {
            int j = (int)(w * 64 + (size_t)__builtin_ctzll(bits));
            bits &= bits - 1;
            if (j >= n_k)
                break;
            s[cnt++] = s[j];
        }
    }
    for (int c = 0; c < dh; c++)
        o[c] = 0.0f;
    if (cnt == 0)
        return 0;
    float sum = nn_softmax_list(s, cnt); /* a call, so its exp is not contracted here */
    size_t t = 0;
    for (size_t w = 0; w < words; w++) {
        uint64_t bits = mask_row[w];
        while (bits) {
            int j = (int)(w * 64 + (size_t)__builtin_ctzll(bits));
            bits &= bits - 1;
            if (j >= n_k)
                break;
            axpy(o, s[t++], v + (size_t)j * ldv, dh);
        }
    }
    float inv = 1.0f / sum;
    for (int c = 0; c < dh; c++)
        o[c] *= inv;
    return cnt;
}

static void attention_dense(const struct nn_attn *a)
{
    float *s = a->scratch;
    nn_sgemm(true, a->n_q, a->n_k, a->dh, a->scale, a->q, a->ldq, a->k, a->ldk, 0.0f, s, a->n_k);
    if (a->causal_offset >= 0) {
        for (int r = 0; r < a->n_q; r++)
            for (int j = r + a->causal_offset + 1; j < a->n_k; j++)
                s[(size_t)r * a->n_k + j] = -INFINITY;
    }
    nn_softmax_rows(s, a->n_q, a->n_k, a->n_k);
    nn_sgemm(false, a->n_q, a->dh, a->n_k, 1.0f, s, a->n_k, a->v, a->ldv, 0.0f, a->o, a->ldo);
}

void nn_attention(const struct nn_attn *a)
{
    if (!a->mask) {
        attention_dense(a);
        return;
    }
    float *s = a->scratch;
    uint64_t causal_buf[64];
    size_t words = a->mask_words;
    for (int r = 0; r < a->n_q; r++) {
        size_t mr = a->mask_rows ? (size_t)a->mask_rows[r] : (size_t)r;
        const uint64_t *row = a->mask + mr * words;
        const float *qr = a->q + (size_t)r * a->ldq;
        if (a->causal_offset >= 0 && words <= 64) {
            /* Clear keys after the causal limit in a local copy of the row. */
            int lim = r + a->causal_offset + 1;
            for (size_t w = 0; w < words; w++) {
                int lo = (int)(w * 64);
                uint64_t keep = lim >= lo + 64 ? ~0ull
                                : lim <= lo    ? 0ull
                                               : ((1ull << (lim - lo)) - 1);
                causal_buf[w] = row[w] & keep;
            }
            row = causal_buf;
        }
        nn_sddmm_row(qr, a->k, a->ldk, a->dh, row, a->n_k, a->scale, s);
        nn_attention_row_sparse(s, row, a->n_k, a->v, a->ldv, a->dh, a->o + (size_t)r * a->ldo);
    }
}
