/*
 * Tests of replay/sweep: lists, ranges (integer and float, no accumulated rounding), zips,
 * fixed values, cartesian order (last axis fastest), errors with grid path, shard slices,
 * exact integer range arithmetic and grid sizes computed before anything is expanded.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "common/mem.h"
#include "replay/sweep.h"

static const struct hw_key keys[] = {
    HW_KEY_INT("n_h", "", 1, 64, 5, "rows"),
    HW_KEY_INT("n_w", "", 1, 64, 5, "cols"),
    HW_KEY_FLOAT("f", "GHz", 0, 10, 1, "freq"),
    HW_KEY_STRING("hash", "mul", "mul|xor", "hash"),
    HW_KEY_BOOL("b", 0, "flag"),
    HW_KEY_INT("big", "", -9223372036854775808.0, 9223372036854775807.0, 0, "any int64"),
    HW_KEY_INT("big2", "", -9223372036854775808.0, 9223372036854775807.0, 0, "any int64"),
};
static const struct hw_schema schema = {"toy", keys, 7, NULL};

static struct sweep *parse(const char *text)
{
    struct hw_config *base;
    assert_int_equal(hw_config_defaults(&base, &schema), 0);
    struct sweep *s = NULL;
    struct errmsg e = {0};
    int rc = sweep_parse(&s, text, "grid.json", base, &e);
    if (rc)
        fail_msg("sweep_parse: %s", e.text);
    hw_config_free(base);
    return s;
}

static struct hw_config *cfg(struct sweep *s, size_t i)
{
    struct hw_config *c;
    struct errmsg e = {0};
    assert_int_equal(sweep_config(s, i, &c, &e), 0);
    return c;
}

static void test_product_order(void **state)
{
    (void)state;
    struct sweep *s =
        parse("{\"n_h\": [5, 10], \"hash\": \"xor\", \"n_w\": {\"range\": [4, 12, 4]}}");
    assert_int_equal(sweep_count(s), 6);
    assert_int_equal(sweep_axes(s), 3);
    const int want_h[] = {5, 5, 5, 10, 10, 10}, want_w[] = {4, 8, 12, 4, 8, 12};
    for (size_t i = 0; i < 6; i++) {
        struct hw_config *c = cfg(s, i);
        assert_int_equal(hw_config_int(c, "n_h"), want_h[i]);
        assert_int_equal(hw_config_int(c, "n_w"), want_w[i]);
        assert_string_equal(hw_config_str(c, "hash"), "xor");
        hw_config_free(c);
    }
    sweep_free(s);
}

static void test_float_range_exact(void **state)
{
    (void)state;
    struct sweep *s = parse("{\"f\": {\"range\": [0.5, 1.5, 0.1]}}");
    assert_int_equal(sweep_count(s), 11);
    for (size_t i = 0; i < 11; i++) {
        struct hw_config *c = cfg(s, i);
        /* a + i*step, no accumulation */
        assert_true(hw_config_float(c, "f") == 0.5 + (double)i * 0.1);
        hw_config_free(c);
    }
    sweep_free(s);
}

static void test_zip(void **state)
{
    (void)state;
    struct sweep *s = parse("{\"b\": [false, true], \"shape\": {\"zip\": {\"n_h\": [20, 15, 10],"
                            " \"n_w\": [5, 5, 10]}}}");
    assert_int_equal(sweep_count(s), 6);
    struct hw_config *c = cfg(s, 4);
    assert_true(hw_config_bool(c, "b"));
    assert_int_equal(hw_config_int(c, "n_h"), 15);
    assert_int_equal(hw_config_int(c, "n_w"), 5);
    /* distinct configs have distinct hashes */
    struct hw_config *d = cfg(s, 5);
    assert_string_not_equal(hw_config_hash(c), hw_config_hash(d));
    hw_config_free(c);
    hw_config_free(d);
    sweep_free(s);
}

static void expect_error(const char *text, int code, const char *needle)
{
    struct hw_config *base;
    assert_int_equal(hw_config_defaults(&base, &schema), 0);
    struct sweep *s = NULL;
    struct errmsg e = {0};
    assert_int_equal(sweep_parse(&s, text, "grid.json", base, &e), code);
    assert_null(s);
    if (!strstr(e.text, needle))
        fail_msg("'%s' lacks '%s'", e.text, needle);
    hw_config_free(base);
}

static void test_errors(void **state)
{
    (void)state;
    expect_error("{\"n_h\": [5, 100]}", ERR_CONFIG, "'grid.json' $.n_h[1] line 1 column 13");
    expect_error("{\"nope\": [1]}", ERR_CONFIG, "unknown key 'nope'");
    expect_error("{\"n_h\": {\"range\": [1, 8, 0.5]}}", ERR_CONFIG, "integer bounds");
    expect_error("{\"f\": {\"range\": [1, 0, 0.5]}}", ERR_CONFIG, "$.f.range[1]");
    expect_error("{\"f\": {\"range\": [0, 1]}}", ERR_CONFIG, "[first, last, step]");
    expect_error("{\"z\": {\"zip\": {\"n_h\": [1, 2], \"n_w\": [1]}}}", ERR_CONFIG,
                 "differ in length");
    expect_error("{\"hash\": {\"range\": [0, 1, 1]}}", ERR_CONFIG, "not a number");
    expect_error("{\"n_h\": []}", ERR_CONFIG, "empty list");
    expect_error("{\"n_h\": {\"bogus\": 1}}", ERR_CONFIG, "must be a list");
    expect_error("{\"f\": {\"range\": [0, 10, 1e-7]}}", ERR_CONFIG, "too many");
    expect_error("{\"n_h\": [1,", ERR_CONFIG, "bad json");
}

/* Named zip rows: sweep_name joins the names of every named zip in file order; keys are
 * set as without names; a grid without names has none; bad names name the grid path. */
static void test_names(void **state)
{
    (void)state;
    struct sweep *s = parse("{\"shape\": {\"zip\": {\"name\": [\"small\", \"big\"], "
                            "\"n_h\": [5, 20], \"n_w\": [4, 10]}},"
                            " \"f\": [1, 2, 3],"
                            " \"h\": {\"zip\": {\"hash\": [\"mul\", \"xor\"], "
                            "\"name\": [\"m\", \"x, \\\"q\\\"\"]}}}");
    assert_true(sweep_has_names(s));
    assert_int_equal(sweep_count(s), 12);
    assert_int_equal(sweep_axes(s), 3);
    char buf[128];
    const char *want[] = {"small, m", "small, x, \"q\"", "small, m", "small, x, \"q\"",
                          "small, m", "small, x, \"q\"", "big, m",   "big, x, \"q\"",
                          "big, m",   "big, x, \"q\"",   "big, m",   "big, x, \"q\""};
    for (size_t i = 0; i < 12; i++) {
        assert_int_equal(sweep_name(s, i, buf, sizeof buf), 0);
        assert_string_equal(buf, want[i]);
        struct hw_config *c = cfg(s, i);
        assert_int_equal(hw_config_int(c, "n_h"), i < 6 ? 5 : 20);
        assert_int_equal(hw_config_int(c, "n_w"), i < 6 ? 4 : 10);
        assert_string_equal(hw_config_str(c, "hash"), i % 2 ? "xor" : "mul");
        hw_config_free(c);
    }
    assert_int_equal(sweep_name(s, 12, buf, sizeof buf), ERR_USAGE);
    assert_int_equal(sweep_name(s, 7, buf, 6), ERR_LIMIT);
    sweep_free(s);
    /* the same grid without names: same configs, no names */
    s = parse("{\"shape\": {\"zip\": {\"n_h\": [5, 20], \"n_w\": [4, 10]}}, \"f\": [1, 2]}");
    assert_false(sweep_has_names(s));
    assert_int_equal(sweep_name(s, 3, buf, sizeof buf), 0);
    assert_string_equal(buf, "");
    sweep_free(s);
    expect_error("{\"z\": {\"zip\": {\"name\": [\"a\", 2], \"n_h\": [1, 2]}}}", ERR_CONFIG,
                 "control characters ('grid.json' $.z.zip.name[1] line 1 column 30)");
    expect_error("{\"z\": {\"zip\": {\"name\": [\"a\", \"a\"], \"n_h\": [1, 2]}}}", ERR_CONFIG,
                 "row name given twice");
    expect_error("{\"z\": {\"zip\": {\"name\": [\"a\", \"\"], \"n_h\": [1, 2]}}}", ERR_CONFIG,
                 "$.z.zip.name[1]");
    expect_error("{\"z\": {\"zip\": {\"name\": [\"a\\nb\"], \"n_h\": [1]}}}", ERR_CONFIG,
                 "without control characters");
    expect_error("{\"z\": {\"zip\": {\"name\": [\"a\", \"b\"], \"n_h\": [1]}}}", ERR_CONFIG,
                 "differ in length");
    expect_error("{\"z\": {\"zip\": {\"name\": [\"a\"]}}}", ERR_CONFIG, "sets no key");
    expect_error("{\"name\": [\"a\", \"b\"]}", ERR_CONFIG, "row names go in a zip");
    char long_name[200];
    snprintf(long_name, sizeof long_name,
             "{\"z\": {\"zip\": {\"name\": [\"%065d\"], \"n_h\": [1]}}}", 0);
    expect_error(long_name, ERR_CONFIG, "1 to 64 bytes");
    /* seven zips of 60-byte names join to 7 * 60 + 6 * 2 = 432 bytes: refused at load */
    char many[2048];
    size_t k = (size_t)snprintf(many, sizeof many, "{");
    for (int z = 0; z < 7; z++)
        k += (size_t)snprintf(many + k, sizeof many - k,
                              "%s\"z%d\": {\"zip\": {\"name\": [\"%060d\"], \"n_h\": [1]}}",
                              z ? ", " : "", z, z);
    snprintf(many + k, sizeof many - k, "}");
    expect_error(many, ERR_CONFIG, "join to up to 432 bytes, more than 400");
    /* a long named zip is checked for equal names in n log n: 50000 rows, the last one
     * repeating row 7's name */
    enum { N_LONG = 50000 };
    char *big = mem_alloc((size_t)N_LONG * 24 + 128);
    assert_non_null(big);
    size_t b = (size_t)sprintf(big, "{\"z\": {\"zip\": {\"name\": [");
    for (int j = 0; j < N_LONG; j++)
        b += (size_t)sprintf(big + b, "%s\"r%d\"", j ? "," : "", j == N_LONG - 1 ? 7 : j);
    b += (size_t)sprintf(big + b, "], \"f\": [");
    for (int j = 0; j < N_LONG; j++)
        b += (size_t)sprintf(big + b, "%s1", j ? "," : "");
    sprintf(big + b, "]}}}");
    expect_error(big, ERR_CONFIG,
                 "row name given twice in one zip ('grid.json' $.z.zip.name[49999]");
    mem_free(big);
}

/* Integer ranges count in exact 64-bit arithmetic: [-2^63, 2^63-1] in steps of 2^62 has 4
 * values (the double quotient rounds to 4.0, which gave 5 and a signed overflow at the
 * fifth value, sweep.c:185 before). */
static void test_int_range_extremes(void **state)
{
    (void)state;
    struct sweep *s = parse("{\"big\": {\"range\": [-9223372036854775808, 9223372036854775807, "
                            "4611686018427387904]}}");
    assert_int_equal(sweep_count(s), 4);
    const int64_t want[] = {INT64_MIN, -4611686018427387904LL, 0, 4611686018427387904LL};
    for (size_t i = 0; i < 4; i++) {
        struct hw_config *c = cfg(s, i);
        assert_true(hw_config_int(c, "big") == want[i]);
        hw_config_free(c);
    }
    sweep_free(s);
    s = parse("{\"big\": {\"range\": [9223372036854775000, 9223372036854775807, 500]}}");
    assert_int_equal(sweep_count(s), 2);
    struct hw_config *c = cfg(s, 1);
    assert_true(hw_config_int(c, "big") == 9223372036854775500LL);
    hw_config_free(c);
    sweep_free(s);
    s = parse("{\"n_h\": {\"range\": [1, 64, 9]}}");
    assert_int_equal(sweep_count(s), 8);
    c = cfg(s, 7);
    assert_int_equal(hw_config_int(c, "n_h"), 64);
    hw_config_free(c);
    sweep_free(s);
}

/* The size of a grid is computed from the shape of its axes before any value is expanded:
 * with only 64 allocations allowed, a 4.1e9-config grid is still refused as too large (not
 * out of memory) and the message gives the size; a 10^7-value range loads and its last
 * config is computed, not stored. */
static void test_size_before_expand(void **state)
{
    (void)state;
    struct hw_config *base;
    assert_int_equal(hw_config_defaults(&base, &schema), 0);
    struct sweep *s = NULL;
    struct errmsg e = {0};
    mem_fail_after(64);
    int rc = sweep_parse(&s,
                         "{\"n_w\": {\"range\": [1, 64, 1]}, \"f\": {\"range\": [0, 10, "
                         "0.00001]}, \"n_h\": {\"range\": [1, 64, 1]}}",
                         "grid.json", base, &e);
    mem_fail_after(0);
    assert_int_equal(rc, ERR_LIMIT);
    assert_null(s);
    if (!strstr(e.text, "grid expands to 4096004096 configs, more than 10000000"))
        fail_msg("message: %s", e.text);
    mem_fail_after(64);
    rc = sweep_parse(&s, "{\"f\": {\"range\": [0, 9.9999995, 1e-6]}}", "grid.json", base, &e);
    mem_fail_after(0);
    if (rc)
        fail_msg("sweep_parse: %s", e.text);
    assert_int_equal(sweep_count(s), 10000000);
    struct hw_config *c = cfg(s, 9999999);
    assert_true(hw_config_float(c, "f") == 0.0 + 9999999.0 * 1e-6);
    hw_config_free(c);
    sweep_free(s);
    /* a product past 2^64 is refused, not wrapped */
    expect_error("{\"big\": {\"range\": [0, 9999999, 1]}, \"big2\": {\"range\": [1, 9999999, "
                 "1]}, \"f\": {\"range\": [0, 9.999999, 1e-6]}}",
                 ERR_LIMIT, "grid expands to 1e+21 configs, more than 10000000");
    hw_config_free(base);
}

static void test_shards_cover(void **state)
{
    (void)state;
    for (size_t n = 0; n < 40; n++)
        for (unsigned k = 1; k <= 7; k++) {
            size_t next = 0;
            for (unsigned i = 1; i <= k; i++) {
                size_t b, e;
                sweep_shard(n, i, k, &b, &e);
                assert_int_equal(b, next);
                assert_true(e >= b);
                next = e;
            }
            assert_int_equal(next, n);
        }
    size_t b, e;
    sweep_shard(10, 0, 0, &b, &e);
    assert_int_equal(b, 0);
    assert_int_equal(e, 10);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_product_order),
        cmocka_unit_test(test_float_range_exact),
        cmocka_unit_test(test_zip),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_int_range_extremes),
        cmocka_unit_test(test_size_before_expand),
        cmocka_unit_test(test_shards_cover),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
