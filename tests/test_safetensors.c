/*
 * Tests of capture/nn/safetensors: F32/F16/BF16 files written by st_write read back (F32
 * exactly, F16/BF16 equal to the rounded values), half/bfloat16 conversions at known
 * points, and clear data errors naming the tensor for a wrong shape, a wrong dtype, a
 * truncated file, a bad header and a size mismatch.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <math.h>

#include "capture/nn/safetensors.h"
#include "common/io.h"
#include "tests/helpers/test_helpers.h"

static void write_bytes(const char *p, const void *d, size_t n)
{
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(d, 1, n, f), n);
    fclose(f);
}

static void test_conversions(void **state)
{
    (void)state;
    assert_int_equal(st_f32_to_f16(1.0f), 0x3c00);
    assert_int_equal(st_f32_to_f16(-2.0f), 0xc000);
    assert_int_equal(st_f32_to_f16(65504.0f), 0x7bff);
    assert_int_equal(st_f32_to_f16(1e6f), 0x7c00);
    assert_int_equal(st_f32_to_f16(5.9604645e-8f), 0x0001);      /* smallest subnormal */
    assert_int_equal(st_f32_to_f16(1.0f + 1.0f / 2048), 0x3c00); /* tie to even */
    assert_int_equal(st_f32_to_f16(1.0f + 3.0f / 2048), 0x3c02);
    assert_true(st_f16_to_f32(0x3555) == 0.333251953125f);
    assert_true(st_f16_to_f32(0x0001) == 5.9604645e-8f);
    assert_true(st_f16_to_f32(0x8000) == 0.0f && signbit(st_f16_to_f32(0x8000)));
    assert_int_equal(st_f32_to_bf16(1.0f), 0x3f80);
    assert_int_equal(st_f32_to_bf16(3.14159265f), 0x4049);
    assert_true(st_bf16_to_f32(0x4049) == 3.140625f);
    /* every f16 round-trips through f32 */
    for (uint32_t h = 0; h < 0x7c00; h++)
        assert_int_equal(st_f32_to_f16(st_f16_to_f32((uint16_t)h)), h);
}

static void test_roundtrip(void **state)
{
    (void)state;
    float a[6] = {1.0f, -0.5f, 0.1f, 3.3333f, 1e-3f, -7.25f}, b[3] = {2.0f, 0.0f, -1.0f};
    struct st_write_item it[2] = {{"layer.weight", a, 2, {2, 3}}, {"layer.bias", b, 1, {3}}};
    for (int dt = ST_F32; dt <= ST_BF16; dt++) {
        char p[256];
        th_path(p, sizeof p, "rt.safetensors");
        struct errmsg e = {0};
        assert_int_equal(st_write(p, it, 2, (enum st_dtype)dt, &e), 0);
        struct st_file *f;
        assert_int_equal(st_open(&f, p, &e), 0);
        assert_int_equal(st_count(f), 2);
        const struct st_tensor_info *t = st_find(f, "layer.weight");
        assert_non_null(t);
        assert_int_equal(t->dtype, dt);
        assert_int_equal(t->ndim, 2);
        assert_int_equal(t->shape[0], 2);
        assert_int_equal(t->shape[1], 3);
        float out[6];
        int64_t shape[2] = {2, 3};
        assert_int_equal(st_tensor_to_f32(t, p, shape, 2, out, &e), 0);
        for (int i = 0; i < 6; i++) {
            float want = dt == ST_F32   ? a[i]
                         : dt == ST_F16 ? st_f16_to_f32(st_f32_to_f16(a[i]))
                                        : st_bf16_to_f32(st_f32_to_bf16(a[i]));
            assert_true(out[i] == want);
        }
        /* wrong shape names the tensor */
        int64_t bad[2] = {3, 2};
        assert_int_equal(st_tensor_to_f32(t, p, bad, 2, out, &e), ERR_DATA);
        assert_non_null(strstr(e.text, "'layer.weight'"));
        assert_non_null(strstr(e.text, "shape [2,3], expected [3,2]"));
        assert_null(st_find(f, "missing"));
        st_close(f);
    }
}

/* A NaN or Inf weight is a data error naming the tensor and the element, in
 * every dtype; finite neighbours (and the largest finite values) still load. */
static void test_non_finite_refused(void **state)
{
    (void)state;
    const float bad_vals[3] = {NAN, INFINITY, -INFINITY};
    for (int dt = ST_F32; dt <= ST_BF16; dt++)
        for (int k = 0; k < 3; k++) {
            float a[6] = {1.0f, -0.5f, 0.25f, 3.0f, 1e-3f, -7.25f};
            a[2 + k] = bad_vals[k];
            float ok[2] = {dt == ST_F16 ? 65504.0f : 3.0e38f, -2.0f};
            struct st_write_item it[2] = {{"blk.0.w", a, 2, {2, 3}}, {"blk.0.b", ok, 1, {2}}};
            char p[256];
            th_path(p, sizeof p, "nan.safetensors");
            struct errmsg e = {0};
            assert_int_equal(st_write(p, it, 2, (enum st_dtype)dt, &e), 0);
            struct st_file *f;
            assert_int_equal(st_open(&f, p, &e), 0);
            float out[6];
            assert_int_equal(st_tensor_to_f32(st_find(f, "blk.0.w"), p, NULL, 0, out, &e),
                             ERR_DATA);
            assert_non_null(strstr(e.text, "'blk.0.w'"));
            assert_non_null(strstr(e.text, k == 0 ? "(nan)" : "(inf)"));
            char at[32];
            snprintf(at, sizeof at, "element %d", 2 + k);
            assert_non_null(strstr(e.text, at));
            assert_int_equal(st_tensor_to_f32(st_find(f, "blk.0.b"), p, NULL, 0, out, &e), 0);
            assert_true(isfinite(out[0]) && out[1] == -2.0f);
            st_close(f);
        }
}

/* A FIFO is refused at once (opening it would wait for a writer forever). */
static void test_fifo_refused(void **state)
{
    (void)state;
    char p[256];
    th_path(p, sizeof p, "fifo.safetensors");
    if (mkfifo(p, 0600) != 0)
        skip();
    struct st_file *f = NULL;
    struct errmsg e = {0};
    assert_int_equal(st_open(&f, p, &e), ERR_USAGE);
    assert_null(f);
    assert_non_null(strstr(e.text, "not a regular file"));
    assert_non_null(strstr(e.text, "fifo.safetensors"));
}

static void test_errors(void **state)
{
    (void)state;
    char p[256];
    struct errmsg e = {0};
    struct st_file *f;
    th_path(p, sizeof p, "bad.safetensors");
    /* wrong dtype */
    const char *h1 = "{\"w\":{\"dtype\":\"I64\",\"shape\":[2],\"data_offsets\":[0,16]}}";
    uint8_t buf[512] = {0};
    uint64_t hl = strlen(h1);
    memcpy(buf, &hl, 8);
    memcpy(buf + 8, h1, hl);
    write_bytes(p, buf, 8 + hl + 16);
    assert_int_equal(st_open(&f, p, &e), 0);
    float out[4];
    assert_int_equal(st_tensor_to_f32(st_find(f, "w"), p, NULL, 0, out, &e), ERR_DATA);
    assert_non_null(strstr(e.text, "tensor 'w'"));
    assert_non_null(strstr(e.text, "I64"));
    st_close(f);
    /* truncated: data shorter than the offsets */
    const char *h2 = "{\"big.weight\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}";
    hl = strlen(h2);
    memcpy(buf, &hl, 8);
    memcpy(buf + 8, h2, hl);
    write_bytes(p, buf, 8 + hl + 10);
    assert_int_equal(st_open(&f, p, &e), ERR_DATA);
    assert_null(f);
    assert_non_null(strstr(e.text, "'big.weight'"));
    assert_non_null(strstr(e.text, "truncated"));
    /* header length beyond the file */
    hl = 1000;
    memcpy(buf, &hl, 8);
    write_bytes(p, buf, 40);
    assert_int_equal(st_open(&f, p, &e), ERR_DATA);
    /* bad JSON */
    const char *h3 = "{\"a\":";
    hl = strlen(h3);
    memcpy(buf, &hl, 8);
    memcpy(buf + 8, h3, hl);
    write_bytes(p, buf, 8 + hl);
    assert_int_equal(st_open(&f, p, &e), ERR_DATA);
    assert_non_null(strstr(e.text, "JSON"));
    /* byte count not matching the shape */
    const char *h4 = "{\"x\":{\"dtype\":\"F16\",\"shape\":[3],\"data_offsets\":[0,8]}}";
    hl = strlen(h4);
    memcpy(buf, &hl, 8);
    memcpy(buf + 8, h4, hl);
    write_bytes(p, buf, 8 + hl + 8);
    assert_int_equal(st_open(&f, p, &e), ERR_DATA);
    assert_non_null(strstr(e.text, "'x'"));
    /* too short and missing files */
    write_bytes(p, buf, 4);
    assert_int_equal(st_open(&f, p, &e), ERR_DATA);
    th_path(p, sizeof p, "none.safetensors");
    assert_int_equal(st_open(&f, p, &e), ERR_NOINPUT);
}

/* Mutated and truncated copies of a valid file never crash the reader: st_open either
 * fails with a message or every tensor converts (bounds were checked). Seed printed. */
static void test_mutations(void **state)
{
    (void)state;
    float a[12];
    for (int i = 0; i < 12; i++)
        a[i] = (float)i - 5.5f;
    struct st_write_item it[2] = {{"blocks.0.w", a, 2, {3, 4}}, {"b", a, 1, {5}}};
    char p[256], q[256];
    th_path(p, sizeof p, "base.safetensors");
    th_path(q, sizeof q, "mut.safetensors");
    struct errmsg e = {0};
    assert_int_equal(st_write(p, it, 2, ST_F16, &e), 0);
    FILE *f = fopen(p, "rb");
    unsigned char base[1024];
    size_t n = fread(base, 1, sizeof base, f);
    fclose(f);
    uint64_t seed = 77;
    printf("mutation seed %llu, %zu-byte file\n", (unsigned long long)seed, n);
    unsigned char buf[1024];
    for (int round = 0; round < 400; round++) {
        memcpy(buf, base, n);
        size_t len = n;
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        int kind = (int)(seed >> 60) & 3;
        size_t pos = (size_t)(seed >> 20) % n;
        if (kind == 0)
            len = pos; /* truncate */
        else if (kind == 1)
            buf[pos] ^= (unsigned char)(1u << ((seed >> 8) & 7));
        else if (kind == 2)
            buf[pos] = (unsigned char)"0123456789[]{},:\"-eE."[(seed >> 12) % 19];
        else
            buf[(seed >> 24) % 8] = (unsigned char)(seed >> 32); /* header length */
        write_bytes(q, buf, len);
        struct st_file *sf = NULL;
        if (st_open(&sf, q, &e) == 0) {
            for (size_t i = 0; i < st_count(sf); i++) {
                const struct st_tensor_info *t = st_at(sf, i);
                float out[64];
                if (t->numel <= 64)
                    (void)st_tensor_to_f32(t, q, NULL, 0, out, &e);
            }
            st_close(sf);
        } else {
            assert_true(e.text[0] != 0);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conversions),
        cmocka_unit_test(test_roundtrip),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_mutations),
        cmocka_unit_test(test_non_finite_refused),
        cmocka_unit_test(test_fifo_refused),
    };
    return cmocka_run_group_tests(tests, th_group_setup, th_group_teardown);
}
