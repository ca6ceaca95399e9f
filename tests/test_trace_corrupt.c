/*
 * Corruption sweep of the container (issue acceptance 4): the golden trace
 * tests/golden/ok/small.atr truncated at every byte offset, and with every single bit
 * flipped in turn, is opened, streamed, searched through the index and verified from
 * memory. Nothing may crash, hang or leak (run under ASan by `make asan`); verify must
 * reject every damaged copy with a message naming the file, a frame number and an offset
 * (except flips of the minor version, which give valid traces of another minor).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/io.h"
#include "traces/trace_reader.h"
#include "traces/trace_verify.h"

#define GOLDEN "tests/golden/ok/small.atr"

static uint8_t *golden;
static size_t golden_len;

static int load(void **state)
{
    (void)state;
    FILE *f = fopen(GOLDEN, "rb");
    if (!f)
        return -1;
    fseek(f, 0, SEEK_END);
    golden_len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    golden = malloc(golden_len);
    if (!golden || fread(golden, 1, golden_len, f) != golden_len) {
        fclose(f);
        return -1;
    }
    fclose(f);
    return 0;
}

static int unload(void **state)
{
    (void)state;
    free(golden);
    return 0;
}

/* Reads everything the API offers; returns the number of records streamed. */
static int exercise(const uint8_t *data, size_t n, int threads)
{
    struct src s;
    src_init_mem(&s, data, n);
    struct trace_reader_opts o;
    trace_reader_opts_default(&o);
    o.threads = threads;
    struct trace_reader *r;
    char err[512];
    int count = 0;
    if (trace_reader_open_src(&r, &s, "golden", &o, err, sizeof err) != 0)
        return -1;
    Acceltrace__Record *rec;
    int rc;
    while ((rc = trace_reader_next(r, &rec, NULL)) == 1) {
        count++;
        trace_record_free(rec);
    }
    assert_true(rc <= 0);
    for (int step = 0; step < 4; step++) {
        if (trace_reader_find(r, ACCELTRACE__RECORD__BODY_TEST, step, 0, 1, &rec) == 1)
            trace_record_free(rec);
    }
    (void)trace_reader_content_hash(r);
    trace_reader_free(r);
    return count;
}

static void expect_verify_error(const uint8_t *data, size_t n, const char *what, size_t pos)
{
    struct src s;
    src_init_mem(&s, data, n);
    struct errmsg e = {0, ""};
    int rc = trace_verify_src(&s, "golden", NULL, NULL, &e);
    if (rc == 0)
        fail_msg("verify accepted the trace with %s at %zu", what, pos);
    /* the message names the file and an offset; frame errors also the frame number */
    if (!strstr(e.text, "'golden'") || !strstr(e.text, "offset"))
        fail_msg("message without file/offset for %s at %zu: %s", what, pos, e.text);
    bool preamble = strstr(e.text, "magic") || strstr(e.text, "preamble") ||
                    strstr(e.text, "format") || strstr(e.text, "flags");
    if (!preamble && !strstr(e.text, " frame "))
        fail_msg("message without frame number for %s at %zu: %s", what, pos, e.text);
}

static void test_golden_is_intact(void **state)
{
    (void)state;
    struct src s;
    src_init_mem(&s, golden, golden_len);
    struct errmsg e = {0, ""};
    assert_int_equal(trace_verify_src(&s, "golden", NULL, NULL, &e), 0);
    assert_int_equal(exercise(golden, golden_len, 1), 12);
    printf("golden trace: %zu bytes\n", golden_len);
}

static void test_truncate_every_offset(void **state)
{
    (void)state;
    for (size_t cut = 0; cut < golden_len; cut++) {
        uint8_t *copy = malloc(cut ? cut : 1); /* exact size, so ASan sees overreads */
        assert_non_null(copy);
        memcpy(copy, golden, cut);
        int n = exercise(copy, cut, cut % 2 ? 2 : 1);
        assert_true(n <= 12);
        expect_verify_error(copy, cut, "truncation", cut);
        free(copy);
    }
}

static void test_flip_every_bit(void **state)
{
    (void)state;
    uint8_t *copy = malloc(golden_len);
    assert_non_null(copy);
    for (size_t bit = 0; bit < golden_len * 8; bit++) {
        memcpy(copy, golden, golden_len);
        copy[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        int n = exercise(copy, golden_len, 1);
        if (bit / 8 == 10 || bit / 8 == 11) {
            /* the minor version: DESIGN.md section 3, "a reader accepts any minor of its
             * major", so these copies are valid traces of another minor version */
            struct src s;
            src_init_mem(&s, copy, golden_len);
            assert_int_equal(trace_verify_src(&s, "golden", NULL, NULL, NULL), 0);
            assert_int_equal(n, 12);
            continue;
        }
        assert_true(n <= 12);
        expect_verify_error(copy, golden_len, "a flipped bit", bit);
    }
    free(copy);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden_is_intact),
        cmocka_unit_test(test_truncate_every_offset),
        cmocka_unit_test(test_flip_every_bit),
    };
    return cmocka_run_group_tests(tests, load, unload);
}
