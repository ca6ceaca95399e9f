/*
 * trace_hash: the trace content hash. XXH3-128 digests against known answers (the empty
 * input as `xxh128sum` prints it, and values from Debian's python3-xxhash 3.2.0), the same
 * digest however the bytes are split into updates, SHA-256 for older traces (FIPS 180-2
 * vector), and recognising the algorithm of a stored hex hash.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "traces/trace_hash.h"

static void hex_of(enum trace_hash_alg alg, const void *p, size_t n, char out[TRACE_HASH_HEX_MAX])
{
    struct trace_hash h;
    assert_int_equal(trace_hash_init(&h, alg), 0);
    trace_hash_update(&h, p, n);
    trace_hash_hex(&h, out);
    trace_hash_release(&h);
}

/* bytes (i * 131 + 7) mod 256: the pattern the python3-xxhash values below were taken on */
static void pattern(uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(i * 131 + 7);
}

static void test_xxh3_known(void **state)
{
    (void)state;
    char hex[TRACE_HASH_HEX_MAX];
    hex_of(TRACE_HASH_XXH3_128, "", 0, hex);
    assert_string_equal(hex, "99aa06d3014798d86001c324468d497f");
    hex_of(TRACE_HASH_XXH3_128, "abc", 3, hex);
    assert_string_equal(hex, "06b05ab6733a618578af5f94892f3950");
    static uint8_t buf[5000];
    pattern(buf, sizeof buf);
    hex_of(TRACE_HASH_XXH3_128, buf, sizeof buf, hex);
    assert_string_equal(hex, "61bedb627e4a5fdfe4007929540f095c");
    assert_string_equal(trace_hash_name(TRACE_HASH_XXH3_128), "xxh3-128");
}

/* Chunked updates (across the 64-byte stripe and 1024-byte block edges) give one digest. */
static void test_xxh3_streaming(void **state)
{
    (void)state;
    static uint8_t buf[5000];
    pattern(buf, sizeof buf);
    static const size_t cuts[] = {1, 7, 56, 64, 65, 255, 256, 1023, 1024, 1500};
    struct trace_hash h;
    assert_int_equal(trace_hash_init(&h, TRACE_HASH_XXH3_128), 0);
    size_t off = 0;
    char mid[TRACE_HASH_HEX_MAX], hex[TRACE_HASH_HEX_MAX];
    for (size_t k = 0; off < sizeof buf; k++) {
        size_t n = cuts[k % (sizeof cuts / sizeof *cuts)];
        if (n > sizeof buf - off)
            n = sizeof buf - off;
        trace_hash_update(&h, buf + off, n);
        off += n;
        if (off == 8)                /* after the cuts of 1 and 7 bytes */
            trace_hash_hex(&h, mid); /* a digest in between does not end the stream */
        trace_hash_update(&h, buf, 0);
    }
    trace_hash_hex(&h, hex);
    assert_string_equal(hex, "61bedb627e4a5fdfe4007929540f095c");
    trace_hash_release(&h);
    assert_string_equal(mid, "6a86a3bda6af4e3d61ddbe7f31a6100d");
    trace_hash_release(&h); /* released twice: still safe */
}

/* Older traces: the same stream through SHA-256. */
static void test_sha256_legacy(void **state)
{
    (void)state;
    char hex[TRACE_HASH_HEX_MAX];
    struct trace_hash h;
    assert_int_equal(trace_hash_init(&h, TRACE_HASH_SHA256), 0);
    trace_hash_update(&h, "a", 1);
    trace_hash_hex(&h, hex); /* mid-stream digest, then more bytes */
    trace_hash_update(&h, "bc", 2);
    trace_hash_hex(&h, hex);
    trace_hash_release(&h);
    assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    assert_string_equal(trace_hash_name(TRACE_HASH_SHA256), "sha256");
}

static void test_alg_of(void **state)
{
    (void)state;
    enum trace_hash_alg a = TRACE_HASH_SHA256;
    assert_true(trace_hash_alg_of("99aa06d3014798d86001c324468d497f", &a));
    assert_int_equal(a, TRACE_HASH_XXH3_128);
    assert_true(
        trace_hash_alg_of("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", &a));
    assert_int_equal(a, TRACE_HASH_SHA256);
    a = TRACE_HASH_XXH3_128;
    assert_false(trace_hash_alg_of("99aa06d3014798d86001c324468d497", &a));   /* 31 */
    assert_false(trace_hash_alg_of("99aa06d3014798d86001c324468d497f0", &a)); /* 33 */
    assert_false(trace_hash_alg_of("99AA06D3014798D86001C324468D497F", &a));  /* upper case */
    assert_false(trace_hash_alg_of("99aa06d3014798d86001c324468d497g", &a));
    assert_false(trace_hash_alg_of("", &a));
    assert_false(trace_hash_alg_of(NULL, &a));
    assert_int_equal(a, TRACE_HASH_XXH3_128); /* untouched */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_xxh3_known),
        cmocka_unit_test(test_xxh3_streaming),
        cmocka_unit_test(test_sha256_legacy),
        cmocka_unit_test(test_alg_of),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
