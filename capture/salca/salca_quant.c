/*
 * salca_quant: bit-exact quantizers of docs/salca.md#selection, docs/salca.md#int8-attention.
 * Contraction of a*b + c into an FMA would change results, so it is disabled for this file
 * (docs/salca.md#conventions: bit-exact paths are compiled with -ffp-contract=off).
 */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#else
#pragma GCC optimize("fp-contract=off")
#endif

#include "capture/salca/salca_quant.h"

#include <math.h>
#include <string.h>

uint16_t salca_fp16_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u)
        return 0x7e00u; /* NaN */
    if (a == 0x7f800000u)
        return (uint16_t)(sign | 0x7bffu); /* +-inf saturates (docs/salca.md#conventions) */
    int e = (int)(a >> 23) - 127 + 15;
    uint32_t mant = a & 0x7fffffu;
    if (e >= 31)
        return (uint16_t)(sign | 0x7bffu);
    if (e <= 0) {
        /* Subnormal half (or zero): value = m * 2^-24. */
        if (e < -10)
            return sign; /* below 2^-25: rounds to zero */
        mant |= 0x800000u;
        unsigned shift = (unsigned)(14 - e);
        uint32_t h = mant >> shift;
        uint32_t rem = mant & ((1u << shift) - 1);
        uint32_t half = 1u << (shift - 1);
        if (rem > half || (rem == half && (h & 1)))
            h++;
        return (uint16_t)(sign | h);
    }
    uint32_t h = ((uint32_t)e << 10) | (mant >> 13);
    uint32_t rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1)))
        h++;
    if (h >= 0x7c00u)
        h = 0x7bffu; /* rounding overflowed: saturate */
    return (uint16_t)(sign | h);
}

float salca_fp16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu;
    uint32_t m = h & 0x3ffu;
    uint32_t u;
    if (e == 0) {
        if (m == 0) {
            u = sign;
        } else {
            /* subnormal: m * 2^-24 is exact in FP32 */
            float f = (float)m * 0x1p-24f;
            return sign ? -f : f;
        }
    } else if (e == 31) {
        u = sign | 0x7f800000u | (m << 13);
    } else {
        u = sign | ((e - 15 + 127) << 23) | (m << 13);
    }
    float f;
    memcpy(&f, &u, 4);
    return f;
}

float salca_fp16_round(float x)
{
    return salca_fp16_to_f32(salca_fp16_bits(x));
}

void salca_key_record_encode(const float *k, const uint8_t *heavy, uint32_t r, uint8_t *rec,
                             float *s_out, float *z_out)
{
    size_t nb = (r + 3) / 4;
    float mn = k[heavy[0]], mx = k[heavy[0]];
    for (uint32_t m = 1; m < r; m++) {
        float x = k[heavy[m]];
        if (x < mn)
            mn = x;
        if (x > mx)
            mx = x;
    }
    /* docs/salca.md#key-records: z = fp16(min k_j), s = fp16((max k_j - min k_j)/3) */
    uint16_t zb = salca_fp16_bits(mn);
    uint16_t sb = salca_fp16_bits((mx - mn) / 3.0f);
    float z = salca_fp16_to_f32(zb), s = salca_fp16_to_f32(sb);
    memset(rec, 0, nb);
    if (s != 0.0f) {
        for (uint32_t m = 0; m < r; m++) {
            float t = (k[heavy[m]] - z) / s;
            float c = floorf(t + 0.5f);
            unsigned ci = c <= 0.0f ? 0u : c >= 3.0f ? 3u : (unsigned)c;
            rec[m >> 2] |= (uint8_t)(ci << (2 * (m & 3)));
        }
    }
    rec[nb] = (uint8_t)(sb & 0xff);
    rec[nb + 1] = (uint8_t)(sb >> 8);
    rec[nb + 2] = (uint8_t)(zb & 0xff);
    rec[nb + 3] = (uint8_t)(zb >> 8);
    if (s_out)
        *s_out = s;
    if (z_out)
        *z_out = z;
}

void salca_key_record_factors(const uint8_t *rec, uint32_t r, float *s, float *z)
{
    size_t nb = (r + 3) / 4;
    *s = salca_fp16_to_f32((uint16_t)(rec[nb] | (rec[nb + 1] << 8)));
    *z = salca_fp16_to_f32((uint16_t)(rec[nb + 2] | (rec[nb + 3] << 8)));
}

void salca_key_record_decode(const uint8_t *rec, uint32_t r, float *out)
{
    float s, z;
    salca_key_record_factors(rec, r, &s, &z);
    for (uint32_t m = 0; m < r; m++)
        out[m] = s * (float)salca_key_record_code(rec, m) + z;
}

float salca_query_quant(const float *q, const uint8_t *heavy, uint32_t r, int8_t *qc)
{
    float amax = 0.0f;
    for (uint32_t m = 0; m < r; m++) {
        float a = fabsf(q[heavy[m]]);
        if (a > amax)
            amax = a;
    }
    float sq = amax / 3.0f; /* docs/salca.md#query-codes */
    for (uint32_t m = 0; m < r; m++) {
        if (sq == 0.0f) {
            qc[m] = 0;
            continue;
        }
        float c = floorf(q[heavy[m]] / sq + 0.5f);
        qc[m] = (int8_t)(c <= -3.0f ? -3 : c >= 3.0f ? 3 : (int)c);
    }
    return sq;
}

int32_t salca_relevance_lut(const int8_t *qc, uint32_t r, int32_t *lut)
{
    uint32_t nb = (r + 3) / 4;
    int32_t Q = 0;
    for (uint32_t m = 0; m < r; m++)
        Q += qc[m];
    for (uint32_t b = 0; b < nb; b++) {
        int32_t w[4];
        for (unsigned m = 0; m < 4; m++)
            w[m] = (4 * b + m < r) ? qc[4 * b + m] : 0;
        for (unsigned x = 0; x < 256; x++) {
            int32_t acc = 0;
            for (unsigned m = 0; m < 4; m++)
                acc += w[m] * (int32_t)((x >> (2 * m)) & 3u);
            lut[b * 256 + x] = acc;
        }
    }
    return Q;
}

void salca_relevance(const int32_t *lut, int32_t Q, const uint8_t *recs, size_t rb, const float *s,
                     const float *z, uint32_t r, size_t n, float *out)
{
    uint32_t nb = (r + 3) / 4;
    float qf = (float)Q;
    for (size_t i = 0; i < n; i++) {
        int32_t D = salca_relevance_dot(lut, recs + i * rb, nb);
        /* docs/salca.md#relevance: A_i = s_i*D_i + z_i*Q in FP32, rounded to FP16 */
        float a = s[i] * (float)D + z[i] * qf;
        out[i] = salca_fp16_round(a);
    }
}

float salca_int8_quant(const float *x, uint32_t d, int8_t *x8)
{
    float amax = 0.0f;
    for (uint32_t j = 0; j < d; j++) {
        float a = fabsf(x[j]);
        if (a > amax)
            amax = a;
    }
    float sg = amax / 127.0f; /* docs/salca.md#int8-attention */
    for (uint32_t j = 0; j < d; j++) {
        if (sg == 0.0f) {
            x8[j] = 0;
            continue;
        }
        float c = floorf(x[j] / sg + 0.5f);
        x8[j] = (int8_t)(c <= -127.0f ? -127 : c >= 127.0f ? 127 : (int)c);
    }
    return sg;
}
