/*
 * salca_quant: the bit-exact number formats of Salca's selection (docs/salca.md sections
 * 5.2-5.4 and 5.11): portable IEEE binary16 rounding, the 2-bit asymmetric key record over
 * the heavy channels, the 3-bit symmetric query, the integer relevance and the symmetric
 * INT8 token quantizer used by attention on the selected set.
 *
 * Conventions (docs/salca.md#conventions): round(x) = floor(x + 0.5) in x's precision; every
 * formula is evaluated as written in FP32 with FP16 factors widened to FP32; the .c file is
 * compiled without floating-point contraction (a pragma in the file). Pure functions, no
 * allocation, no state.
 */
#ifndef ACCELTRACE_SALCA_QUANT_H
#define ACCELTRACE_SALCA_QUANT_H

#include <stddef.h>
#include <stdint.h>

/* Largest finite binary16 value; fp16 saturates to it instead of producing inf. */
#define SALCA_FP16_MAX 65504.0f

/*
 * FP32 -> binary16 bits: round to nearest even, subnormals kept, overflow and +-inf
 * saturated to +-65504 (docs/salca.md#conventions); NaN maps to the quiet NaN 0x7e00.
 */
uint16_t salca_fp16_bits(float x);
/* binary16 bits -> FP32 (exact). */
float salca_fp16_to_f32(uint16_t h);
/* fp16(x) as an FP32 value: salca_fp16_to_f32(salca_fp16_bits(x)). */
float salca_fp16_round(float x);

/* Bytes of one key record with r heavy channels: ceil(r/4) code bytes + 2 FP16 factors. */
static inline size_t salca_key_record_bytes(uint32_t r)
{
    return (size_t)((r + 3) / 4) + 4;
}

/*
 * Encodes the 2-bit asymmetric key record of key k (d channels) over the r heavy channels
 * heavy[0..r) (ascending), docs/salca.md#key-records: z = fp16(min), s = fp16((max - min)/3),
 * c_j = clamp(round((k_j - z)/s), 0, 3) (all 0 when s = 0). Layout: codes 4 per byte in
 * ascending channel order, the first in bits 0-1, then s and z as little-endian FP16.
 * rec must hold salca_key_record_bytes(r) bytes. *s_out and *z_out (may be NULL) receive
 * the widened factors.
 */
void salca_key_record_encode(const float *k, const uint8_t *heavy, uint32_t r, uint8_t *rec,
                             float *s_out, float *z_out);

/* Code of heavy channel m (0..r) of a record. */
static inline unsigned salca_key_record_code(const uint8_t *rec, uint32_t m)
{
    return (rec[m >> 2] >> (2 * (m & 3))) & 3u;
}

/* The factors s and z of a record (widened to FP32). */
void salca_key_record_factors(const uint8_t *rec, uint32_t r, float *s, float *z);

/* Dequantizes a record: out[m] = s*c_m + z for m < r (docs/salca.md#key-records). */
void salca_key_record_decode(const uint8_t *rec, uint32_t r, float *out);

/*
 * 3-bit symmetric query over the heavy channels (docs/salca.md#query-codes): s_q = max|q_j|/3,
 * q'_m = clamp(round(q_j/s_q), -3, 3), all 0 when s_q = 0. Returns s_q (kept only for the
 * dynamic K rule); qc[m] receives the code of heavy channel m.
 */
float salca_query_quant(const float *q, const uint8_t *heavy, uint32_t r, int8_t *qc);

/*
 * Per-query lookup tables of the integer relevance: for code byte b (r/4 of them) and
 * byte value x, lut[b*256 + x] = sum over the 4 codes of x of q'_{4b+m} * code_m. D_i is
 * then the sum of lut[b*256 + rec[b]] (exact integer arithmetic, docs/salca.md#relevance). lut
 * holds
 * ((r+3)/4)*256 int32. Returns Q = sum_m q'_m.
 */
int32_t salca_relevance_lut(const int8_t *qc, uint32_t r, int32_t *lut);

/* D_i of one record through the tables of salca_relevance_lut. */
static inline int32_t salca_relevance_dot(const int32_t *lut, const uint8_t *rec, uint32_t nb)
{
    int32_t acc = 0;
    for (uint32_t b = 0; b < nb; b++)
        acc += lut[b * 256 + rec[b]];
    return acc;
}

/*
 * Relevance score of n records (docs/salca.md#relevance): A_i = fp16(s_i*D_i + z_i*Q) in FP32.
 * recs: n records of rb bytes; s, z: the records' widened factors. out: n FP32 values,
 * each exactly representable in FP16.
 */
void salca_relevance(const int32_t *lut, int32_t Q, const uint8_t *recs, size_t rb, const float *s,
                     const float *z, uint32_t r, size_t n, float *out);

/*
 * Symmetric INT8 quantizer over all d values (docs/salca.md#int8-attention): sigma = max|x|/127
 * (FP32), x8 = clamp(round(x/sigma), -127, 127); all-zero x gives sigma = 0 and x8 = 0. Returns
 * sigma.
 */
float salca_int8_quant(const float *x, uint32_t d, int8_t *x8);

#endif
