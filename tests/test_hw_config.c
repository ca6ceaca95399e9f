/*
 * Tests of replay/hw_config: schema validation with file, JSON path, line and column in
 * every error; extends; canonical JSON and hash stability; setters and getters; failed
 * allocations.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/io.h"
#include "common/mem.h"
#include "replay/hw_config.h"
#include "tests/helpers/test_helpers.h"

static int check_pow2(const struct hw_config *c, struct errmsg *e)
{
    int64_t v = hw_config_int(c, "units");
    if (v & (v - 1))
        return errmsg_set(e, ERR_CONFIG, "units must be a power of two, not %lld", (long long)v);
    return 0;
}

static const struct hw_key keys[] = {
    HW_KEY_INT("units", "", 1, 1024, 64, "units"),
    HW_KEY_FLOAT("clock_ghz", "GHz", 0.1, 10, 1.0, "clock"),
    HW_KEY_BOOL("overlap", 1, "overlap"),
    HW_KEY_STRING("hash", "mul", "mul|xor|mod", "hash"),
    HW_KEY_INT("vpu.width", "lanes", 1, 256, 16, "nested"),
    HW_KEY_FLOAT("vpu.cycles.softmax", "cycles", 0, 100, 4, "doubly nested"),
};

static const struct hw_schema schema = {"toy", keys, sizeof keys / sizeof keys[0], check_pow2};

static void write_file(const char *name, const char *text)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", th_tmpdir(), name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static int load(const char *name, struct hw_config **c, struct errmsg *e)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", th_tmpdir(), name);
    return hw_config_load(c, p, &schema, e);
}

static void expect_error(const char *text, const char *needle1, const char *needle2)
{
    struct hw_config *c = NULL;
    struct errmsg e = {0};
    int rc = hw_config_parse(&c, text, "x.json", &schema, &e);
    assert_int_equal(rc, ERR_CONFIG);
    assert_null(c);
    if (!strstr(e.text, needle1) || (needle2 && !strstr(e.text, needle2)))
        fail_msg("message '%s' lacks '%s' / '%s'", e.text, needle1, needle2 ? needle2 : "");
}

static void test_defaults_and_getters(void **state)
{
    (void)state;
    struct hw_config *c;
    assert_int_equal(hw_config_defaults(&c, &schema), 0);
    assert_int_equal(hw_config_int(c, "units"), 64);
    assert_true(hw_config_float(c, "clock_ghz") == 1.0);
    assert_true(hw_config_float(c, "units") == 64.0); /* ints read as floats too */
    assert_true(hw_config_bool(c, "overlap"));
    assert_string_equal(hw_config_str(c, "hash"), "mul");
    assert_int_equal(hw_config_int(c, "vpu.width"), 16);
    char t[64];
    hw_config_value_text(c, 1, t, sizeof t);
    assert_string_equal(t, "1");
    hw_config_free(c);
}

static void test_parse_nested_and_flat(void **state)
{
    (void)state;
    struct hw_config *a, *b;
    struct errmsg e = {0};
    assert_int_equal(hw_config_parse(&a,
                                     "{\"model\": \"toy\", \"units\": 32, \"vpu\": {\"width\": 8,"
                                     " \"cycles\": {\"softmax\": 2.5}}, \"hash\": \"xor\"}",
                                     "a", &schema, &e),
                     0);
    assert_int_equal(hw_config_int(a, "vpu.width"), 8);
    assert_true(hw_config_float(a, "vpu.cycles.softmax") == 2.5);
    /* the same values written flat, in another order, with other spacing: same hash */
    assert_int_equal(hw_config_parse(&b,
                                     "{\"hash\":\"xor\",\"vpu.cycles.softmax\":2.5,\n"
                                     "\"vpu.width\":8,\"units\":32}",
                                     "b", &schema, &e),
                     0);
    assert_string_equal(hw_config_canonical(a), hw_config_canonical(b));
    assert_string_equal(hw_config_hash(a), hw_config_hash(b));
    assert_int_equal(strlen(hw_config_hash(a)), 16);
    /* a changed value changes the hash */
    assert_int_equal(hw_config_set_json(b, "units", "16", "test", &e), 0);
    assert_string_not_equal(hw_config_hash(a), hw_config_hash(b));
    /* integers are accepted for floats */
    assert_int_equal(hw_config_set_json(b, "clock_ghz", "2", "test", &e), 0);
    assert_true(hw_config_float(b, "clock_ghz") == 2.0);
    hw_config_free(a);
    hw_config_free(b);
}

static void test_errors_name_path_line_column(void **state)
{
    (void)state;
    expect_error("{\n  \"units\": 32,\n  \"unit\": 1\n}", "unknown key 'unit'",
                 "at $.unit ('x.json' line 3 column 3)");
    expect_error("{\n  \"vpu\": {\n    \"widht\": 8\n  }\n}", "unknown key 'vpu.widht'",
                 "$.vpu.widht ('x.json' line 3 column 5)");
    expect_error("{\"units\": 2.5}", "expected integer, got number", "$.units");
    expect_error("{\"overlap\": \"yes\"}", "expected boolean, got string", "$.overlap");
    expect_error("{\"hash\": \"sha\"}", "not one of mul|xor|mod", "$.hash");
    expect_error("{\"units\": 2048}", "out of range [1, 1024]", "$.units");
    expect_error("{\"clock_ghz\": 0.01}", "out of range [0.1, 10]", "$.clock_ghz");
    expect_error("{\"units\": 48}", "power of two", NULL);
    expect_error("{\"units\": 32,\n \"hash\": }", "bad json", "line 2 column");
    expect_error("[1, 2]", "must be a JSON object", NULL);
    expect_error("{\"model\": \"other\"}", "config is for model 'other', not 'toy'", "$.model");
    expect_error("{\"units\": 1, \"units\": 2}", "bad json", "duplicate");
    expect_error("{\"vpu\": 3}", "unknown key 'vpu'", "$.vpu");
}

static void test_extends(void **state)
{
    (void)state;
    char sub[300];
    snprintf(sub, sizeof sub, "%s/sub", th_tmpdir());
    assert_int_equal(io_mkdir_p(sub, 0755, NULL), 0);
    write_file("sub/base.json", "{\"model\": \"toy\", \"units\": 128, \"hash\": \"mod\"}");
    write_file("child.json", "{\"extends\": \"sub/base.json\", \"units\": 256}");
    write_file("grand.json", "{\"extends\": \"child.json\", \"overlap\": false}");
    struct hw_config *c;
    struct errmsg e = {0};
    assert_int_equal(load("grand.json", &c, &e), 0);
    assert_int_equal(hw_config_int(c, "units"), 256);
    assert_string_equal(hw_config_str(c, "hash"), "mod");
    assert_false(hw_config_bool(c, "overlap"));
    assert_non_null(strstr(hw_config_path(c), "grand.json"));
    hw_config_free(c);
    write_file("missing.json", "{\n\"extends\": \"nope.json\"}");
    assert_int_equal(load("missing.json", &c, &e), ERR_CONFIG);
    assert_non_null(strstr(e.text, "missing extends target"));
    assert_non_null(strstr(e.text, "nope.json"));
    assert_non_null(strstr(e.text, "$.extends"));
    assert_non_null(strstr(e.text, "line 2 column 1"));
    /* an error in the base names the base file */
    write_file("sub/badbase.json", "{\"units\": 0}");
    write_file("child2.json", "{\"extends\": \"sub/badbase.json\"}");
    assert_int_equal(load("child2.json", &c, &e), ERR_CONFIG);
    assert_non_null(strstr(e.text, "badbase.json"));
    /* cycles are errors */
    write_file("c1.json", "{\"extends\": \"c2.json\"}");
    write_file("c2.json", "{\"extends\": \"c1.json\"}");
    assert_int_equal(load("c1.json", &c, &e), ERR_CONFIG);
    assert_non_null(strstr(e.text, "cycle"));
}

static void test_set_json_origin(void **state)
{
    (void)state;
    struct hw_config *c;
    struct errmsg e = {0};
    assert_int_equal(hw_config_defaults(&c, &schema), 0);
    assert_int_equal(hw_config_set_json(c, "units", "\"x\"", "'g.json' $.units[1]", &e),
                     ERR_CONFIG);
    assert_non_null(strstr(e.text, "'g.json' $.units[1]"));
    assert_int_equal(hw_config_set_json(c, "nope", "1", "here", &e), ERR_CONFIG);
    /* set does not run the cross-key check; hw_config_check does */
    assert_int_equal(hw_config_set_json(c, "units", "48", "here", &e), 0);
    assert_int_equal(hw_config_check(c, &e), ERR_CONFIG);
    struct hw_config *d;
    assert_int_equal(hw_config_clone(&d, c), 0);
    assert_string_equal(hw_config_hash(c), hw_config_hash(d));
    hw_config_free(c);
    hw_config_free(d);
}

static void test_locate(void **state)
{
    (void)state;
    const char *text = "{\n \"a\": [1,\n  {\"b\": 2}]}";
    const char *path[] = {"a", NULL, "b"};
    size_t idx[] = {0, 1, 0};
    int line, col;
    assert_true(hw_json_locate(text, path, idx, 3, &line, &col));
    assert_int_equal(line, 3);
    assert_int_equal(col, 4);
    const char *k2[] = {"zz"};
    assert_false(hw_json_locate(text, k2, idx, 1, &line, &col));
}

static void test_alloc_failures(void **state)
{
    (void)state;
    for (long k = 1; k < 60; k++) {
        struct hw_config *c = NULL;
        struct errmsg e = {0};
        mem_fail_after(k);
        int rc = hw_config_parse(&c, "{\"units\": 32, \"hash\": \"xor\"}", "a", &schema, &e);
        if (!rc)
            (void)hw_config_hash(c);
        mem_fail_after(0);
        assert_true(rc == 0 || rc == ERR_NOMEM || rc == ERR_CONFIG);
        hw_config_free(c);
    }
}

int main(void)
{
    if (!th_tmpdir_make("hwcfg"))
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults_and_getters),
        cmocka_unit_test(test_parse_nested_and_flat),
        cmocka_unit_test(test_errors_name_path_line_column),
        cmocka_unit_test(test_extends),
        cmocka_unit_test(test_set_json_origin),
        cmocka_unit_test(test_locate),
        cmocka_unit_test(test_alloc_failures),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    if (th_tmpdir_remove() != 0)
        return 1;
    return rc;
}
