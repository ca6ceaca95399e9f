/*
 * Tests of capture/nn kernels against naive double-precision references: linear/GEMM,
 * softmax, LayerNorm, RMSNorm, GELU (tanh form), RoPE, dense attention, masked attention
 * (all-ones mask equals dense within 1e-5 of max|O|: docs/disc.md#acceptance-checks (the ST
 * all-ones check)), row subsets and the causal limit, plus the seeded weight generator (substreams
 * by name). Random inputs come from common/rng with the printed seed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <math.h>

#include "capture/nn/nn.h"
#include "capture/nn/weightgen.h"
#include "common/rng.h"

#define SEED 20261130u

static void fill(float *x, size_t n, uint64_t seed, const char *name)
{
    struct rng r;
    rng_stream(&r, seed, name, 0, 0);
    for (size_t i = 0; i < n; i++)
        x[i] = (float)rng_normal(&r);
}

static void test_linear(void **state)
{
    (void)state;
    int m = 7, in = 13, out = 5, ldx = 16, ldy = 9;
    float x[7 * 16], w[5 * 13], b[5], y[7 * 9];
    fill(x, sizeof x / 4, SEED, "x");
    fill(w, sizeof w / 4, SEED, "w");
    fill(b, 5, SEED, "b");
    nn_set_threads(1);
    nn_linear(x, m, in, ldx, w, b, out, y, ldy);
    for (int i = 0; i < m; i++)
        for (int o = 0; o < out; o++) {
            double s = b[o];
            for (int k = 0; k < in; k++)
                s += (double)x[i * ldx + k] * w[o * in + k];
            assert_true(fabs(s - y[i * ldy + o]) < 1e-5 * (1 + fabs(s)));
        }
    /* no bias, trans_b = false GEMM */
    float c[7 * 5];
    nn_sgemm(false, m, out, in, 2.0f, x, ldx, w, out, 0.0f, c, out);
    double s = 0;
    for (int k = 0; k < in; k++)
        s += (double)x[3 * ldx + k] * w[k * out + 2];
    assert_true(fabs(2 * s - c[3 * out + 2]) < 1e-4);
}

static void test_softmax_norms_gelu(void **state)
{
    (void)state;
    float x[3 * 10], y[3 * 10], g[10];
    fill(x, 30, SEED, "sm");
    fill(g, 10, SEED, "g");
    memcpy(y, x, sizeof x);
    nn_softmax_rows(y, 3, 10, 10);
    for (int r = 0; r < 3; r++) {
        double mx = -1e30, z = 0, sum = 0;
        for (int j = 0; j < 10; j++)
            mx = fmax(mx, x[r * 10 + j]);
        for (int j = 0; j < 10; j++)
            z += exp(x[r * 10 + j] - mx);
        for (int j = 0; j < 10; j++) {
            assert_true(fabs(exp(x[r * 10 + j] - mx) / z - y[r * 10 + j]) < 1e-6);
            sum += y[r * 10 + j];
        }
        assert_true(fabs(sum - 1) < 1e-6);
    }
    nn_layernorm(x, y, 3, 10, 10, 1e-6f, g, NULL);
    for (int r = 0; r < 3; r++) {
        double mu = 0, var = 0;
        for (int j = 0; j < 10; j++)
            mu += x[r * 10 + j] / 10.0;
        for (int j = 0; j < 10; j++)
            var += (x[r * 10 + j] - mu) * (x[r * 10 + j] - mu) / 10.0;
        for (int j = 0; j < 10; j++)
            assert_true(fabs((x[r * 10 + j] - mu) / sqrt(var + 1e-6) * g[j] - y[r * 10 + j]) <
                        1e-5);
    }
    nn_rmsnorm(x, y, 3, 10, 10, 1e-5f, NULL);
    double ms = 0;
    for (int j = 0; j < 10; j++)
        ms += (double)x[j] * x[j] / 10.0;
    assert_true(fabs(x[4] / sqrt(ms + 1e-5) - y[4]) < 1e-5);
    /* GELU tanh form (PixArt): known values */
    float v[4] = {0.0f, 1.0f, -1.0f, 3.0f};
    nn_gelu_tanh(v, 4);
    assert_true(fabsf(v[0]) < 1e-7f);
    assert_true(fabsf(v[1] - 0.8411920f) < 1e-6f);
    assert_true(fabsf(v[2] + 0.1588080f) < 1e-6f);
    assert_true(fabsf(v[3] - 2.9963627f) < 1e-6f);
    float s1 = 1.0f;
    nn_silu(&s1, 1);
    assert_true(fabsf(s1 - 0.7310586f) < 1e-6f);
}

static void test_rope(void **state)
{
    (void)state;
    /* 2 tokens, 2 heads, dh = 4; position 0 is the identity, norms are preserved. */
    float x[2 * 8], y[2 * 8];
    fill(x, 16, SEED, "rope");
    memcpy(y, x, sizeof x);
    int64_t pos[2] = {0, 5};
    nn_rope(y, 2, 2, 4, 8, pos, 10000.0, NN_ROPE_HALF);
    for (int i = 0; i < 8; i++)
        assert_true(y[i] == x[i]);
    /* token 1, head 0, pair (0, 2) rotated by 5 rad; pair (1, 3) by 5 * 10000^(-1/2). */
    double a = 5.0;
    assert_true(fabs(y[8] - (x[8] * cos(a) - x[10] * sin(a))) < 1e-5);
    assert_true(fabs(y[10] - (x[8] * sin(a) + x[10] * cos(a))) < 1e-5);
    double b = 5.0 * pow(10000.0, -0.5);
    assert_true(fabs(y[9] - (x[9] * cos(b) - x[11] * sin(b))) < 1e-5);
    memcpy(y, x, sizeof x);
    nn_rope(y, 2, 2, 4, 8, pos, 10000.0, NN_ROPE_PAIRS);
    assert_true(fabs(y[8] - (x[8] * cos(a) - x[9] * sin(a))) < 1e-5);
}

/* Naive attention of one head in double; mask row tok of `mask` when given. */
static void naive_attn(const float *q, const float *k, const float *v, int nq, int nk, int dh,
                       int ld, const uint64_t *mask, size_t words, const int32_t *rows, double *o)
{
    double scale = 1.0 / sqrt((double)dh);
    for (int r = 0; r < nq; r++) {
        int tok = rows ? rows[r] : r;
        double mx = -1e300, s[256], z = 0;
        for (int j = 0; j < nk; j++) {
            bool on = !mask || ((mask[(size_t)tok * words + j / 64] >> (j % 64)) & 1);
            s[j] = -INFINITY;
            if (!on)
                continue;
            double d = 0;
            for (int c = 0; c < dh; c++)
                d += (double)q[r * ld + c] * k[j * ld + c];
            s[j] = d * scale;
            mx = fmax(mx, s[j]);
        }
        for (int c = 0; c < dh; c++)
            o[r * dh + c] = 0;
        for (int j = 0; j < nk; j++)
            if (isfinite(s[j]))
                z += exp(s[j] - mx);
        for (int j = 0; j < nk; j++)
            if (isfinite(s[j]))
                for (int c = 0; c < dh; c++)
                    o[r * dh + c] += exp(s[j] - mx) / z * v[j * ld + c];
    }
}

static void test_attention(void **state)
{
    (void)state;
    enum { N = 64, DH = 16, LD = 32 };
    static float q[N * LD], k[N * LD], v[N * LD], o1[N * LD], o2[N * LD], scratch[N * N];
    static double ref[N * DH];
    static uint64_t ones[N], half[N];
    printf("seed %u\n", SEED);
    fill(q, N * LD, SEED, "q");
    fill(k, N * LD, SEED, "k");
    fill(v, N * LD, SEED, "v");
    struct rng r;
    rng_stream(&r, SEED, "mask", 0, 0);
    for (int i = 0; i < N; i++) {
        ones[i] = ~0ull;
        half[i] = rng_u64(&r) | (1ull << i); /* never empty */
    }
    nn_set_threads(1);
    struct nn_attn a = {.n_q = N,
                        .n_k = N,
                        .dh = DH,
                        .q = q,
                        .ldq = LD,
                        .k = k,
                        .ldk = LD,
                        .v = v,
                        .ldv = LD,
                        .o = o1,
                        .ldo = LD,
                        .scale = 1.0f / sqrtf((float)DH),
                        .causal_offset = -1,
                        .scratch = scratch};
    nn_attention(&a);
    naive_attn(q, k, v, N, N, DH, LD, NULL, 1, NULL, ref);
    double mx = 0;
    for (int i = 0; i < N; i++)
        for (int c = 0; c < DH; c++) {
            assert_true(fabs(ref[i * DH + c] - o1[i * LD + c]) < 1e-5);
            mx = fmax(mx, fabs(o1[i * LD + c]));
        }
    /* All-ones mask: the sparse path equals the dense path within 1e-5 max|O| (the ST all-ones
     * check, docs/disc.md#acceptance-checks). */
    a.mask = ones;
    a.mask_words = 1;
    a.o = o2;
    nn_attention(&a);
    for (int i = 0; i < N; i++)
        for (int c = 0; c < DH; c++)
            assert_true(fabs(o1[i * LD + c] - o2[i * LD + c]) <= 1e-5 * mx);
    /* Random mask with a row subset: query r uses mask row rows[r]. */
    int32_t rows[5] = {3, 9, 10, 40, 63};
    float qs[5 * LD];
    for (int r2 = 0; r2 < 5; r2++)
        memcpy(qs + r2 * LD, q + rows[r2] * LD, LD * sizeof(float));
    a.q = qs;
    a.n_q = 5;
    a.mask = half;
    a.mask_rows = rows;
    nn_attention(&a);
    naive_attn(qs, k, v, 5, N, DH, LD, half, 1, rows, ref);
    for (int i = 0; i < 5; i++)
        for (int c = 0; c < DH; c++)
            assert_true(fabs(ref[i * DH + c] - o2[i * LD + c]) < 1e-5);
    /* Causal limit, dense path: query r sees keys <= r. */
    a.q = q;
    a.n_q = N;
    a.mask = NULL;
    a.mask_rows = NULL;
    a.causal_offset = 0;
    nn_attention(&a);
    uint64_t tri[N];
    for (int i = 0; i < N; i++)
        tri[i] = i == 63 ? ~0ull : ((1ull << (i + 1)) - 1);
    naive_attn(q, k, v, N, N, DH, LD, tri, 1, NULL, ref);
    for (int i = 0; i < N; i++)
        for (int c = 0; c < DH; c++)
            assert_true(fabs(ref[i * DH + c] - o2[i * LD + c]) < 1e-5);
}

/* The exp kernel is NaN-safe (NaN in, NaN out, no undefined behaviour: the old
 * float-to-int conversion of NaN and its signed multiply trip UBSan) at every position of
 * the 8-wide body and the tail; +-inf clamp to the ends; finite values stay within 2 ulp. */
static void test_exp_nan_safe(void **state)
{
    (void)state;
    float x[17];
    for (size_t n = 1; n <= 17; n++)
        for (size_t at = 0; at < n; at++) {
            for (size_t i = 0; i < n; i++)
                x[i] = (float)i * 0.5f - 4.0f;
            x[at] = (at % 2) ? -NAN : NAN;
            nn_exp_clamped(x, n);
            for (size_t i = 0; i < n; i++) {
                if (i == at) {
                    assert_true(isnan(x[i]));
                    continue;
                }
                double want = exp((double)((float)i * 0.5f - 4.0f));
                assert_true(fabs(x[i] - want) <= 2.5e-7 * want);
            }
        }
    float e[4] = {INFINITY, -INFINITY, 1e30f, -1e30f};
    nn_exp_clamped(e, 4);
    assert_true(fabs(e[0] - exp(88.0)) <= 2.5e-7 * exp(88.0));
    assert_true(fabs(e[1] - exp(-87.0)) <= 2.5e-7 * exp(-87.0));
    assert_true(e[2] == e[0] && e[3] == e[1]);
    /* a dense sweep of the clamp range against double exp */
    static float s[20001];
    for (int i = 0; i <= 20000; i++)
        s[i] = -87.0f + 175.0f * (float)i / 20000.0f;
    nn_exp_clamped(s, 20001);
    for (int i = 0; i <= 20000; i++) {
        double want = exp((double)(-87.0f + 175.0f * (float)i / 20000.0f));
        assert_true(isfinite(s[i]) && fabs(s[i] - want) <= 2.5e-7 * want);
    }
}

static void test_weightgen(void **state)
{
    (void)state;
    float a[1000], b[1000];
    wg_fill(a, 1000, WG_XAVIER_UNIFORM, 0, 384, 1152, 0, "transformer_blocks.0.attn1.to_q.weight");
    double bound = sqrt(6.0 / (384 + 1152)), mx = 0, mean = 0;
    for (int i = 0; i < 1000; i++) {
        mx = fmax(mx, fabs(a[i]));
        mean += a[i] / 1000.0;
    }
    assert_true(mx <= bound);
    assert_true(mx > 0.95 * bound);
    assert_true(fabs(mean) < 0.1 * bound);
    /* Same name, same values; another name, other values (substreams by name). */
    wg_fill(b, 1000, WG_XAVIER_UNIFORM, 0, 384, 1152, 0, "transformer_blocks.0.attn1.to_q.weight");
    assert_memory_equal(a, b, sizeof a);
    wg_fill(b, 1000, WG_XAVIER_UNIFORM, 0, 384, 1152, 0, "transformer_blocks.0.attn1.to_k.weight");
    assert_true(memcmp(a, b, sizeof a) != 0);
    wg_fill(b, 1000, WG_NORMAL, 0.02, 0, 0, 7, "adaln_single.linear.weight");
    double var = 0;
    for (int i = 0; i < 1000; i++)
        var += (double)b[i] * b[i] / 1000.0;
    assert_true(fabs(sqrt(var) - 0.02) < 0.002);
    wg_fill(b, 10, WG_ZEROS, 0, 0, 0, 0, "x");
    for (int i = 0; i < 10; i++)
        assert_true(b[i] == 0.0f);
}

/* The softmax weight of a score does not depend on its position: the 8-wide body and the
 * scalar tail compute the same bits, so a row of one repeated pattern of period 8 gives the
 * same weight at every position of the pattern, in the body and in the tail (rows of 1-40
 * scores); nn_softmax_list_max with the row's maximum equals nn_softmax_list. */
static void test_softmax_lanes(void **state)
{
    (void)state;
    const float pat[8] = {0.25f, -3.5f, 1.75f, -90.0f, 0.0f, 2.5f, -0.125f, 6.0f};
    float a[40], b[40];
    for (size_t n = 1; n <= 40; n++) {
        float mx = -INFINITY;
        for (size_t i = 0; i < n; i++) {
            a[i] = b[i] = pat[i % 8];
            mx = a[i] > mx ? a[i] : mx;
        }
        float sa = nn_softmax_list(a, n), sb = nn_softmax_list_max(b, n, mx);
        assert_true(sa == sb && sa > 0.0f);
        for (size_t i = 0; i < n; i++) {
            assert_true(a[i] == b[i]);
            assert_true(a[i] == a[i % 8]);
        }
        /* the pattern's -90 is clamped to 87 below the maximum before its exponential */
        if (n > 3)
            assert_true(a[3] > 0.0f && a[3] < 1e-30f);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_linear),        cmocka_unit_test(test_softmax_norms_gelu),
        cmocka_unit_test(test_rope),          cmocka_unit_test(test_attention),
        cmocka_unit_test(test_weightgen),     cmocka_unit_test(test_exp_nan_safe),
        cmocka_unit_test(test_softmax_lanes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
