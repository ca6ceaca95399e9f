/*
 * Tests of traces/trace_scan, the one streaming pass outside the engine: hook order and
 * positions, a hook taking a record, errors of a hook and of the open stopping the pass,
 * and the pass over a reader the caller keeps. The trace is capture/synth/synth_capture (seeded).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "capture/synth/synth_capture.h"
#include "traces/trace_scan.h"

static char path[256];
static struct synth_capture_params tp;

struct seen {
    int begins, ends;
    uint64_t records, end_pos;
    int64_t last_value; /* TestRecord.value of the record handed last */
    bool in_order;
    uint64_t take_at, fail_at; /* UINT64_MAX: never */
    int refuse;                /* begin returns ERR_DATA */
    Acceltrace__Record *taken;
};

static int s_begin(void *ctx, const struct trace_scan_pos *pos, struct errmsg *e)
{
    struct seen *s = ctx;
    s->begins++;
    assert_int_equal(pos->record, 0);
    assert_string_equal(trace_reader_header(pos->r)->workload, "test");
    return s->refuse ? errmsg_set(e, ERR_DATA, "not for me ('%s')", pos->path) : 0;
}

static int s_record(void *ctx, const struct trace_scan_pos *pos, Acceltrace__Record **rec,
                    struct errmsg *e)
{
    struct seen *s = ctx;
    if (pos->record != s->records)
        s->in_order = false;
    /* the record is the trace's record number pos->record */
    Acceltrace__Record want;
    Acceltrace__TestRecord t;
    assert_int_equal(synth_capture_record(&tp, pos->record, &want, &t), 0);
    assert_int_equal((*rec)->body_case, ACCELTRACE__RECORD__BODY_TEST);
    if ((*rec)->test->value != t.value)
        s->in_order = false;
    synth_capture_record_release(&t);
    s->records++;
    if (pos->record == s->fail_at)
        return errmsg_set(e, ERR_DATA, "record %llu is bad", (unsigned long long)pos->record);
    if (pos->record == s->take_at) {
        s->taken = *rec;
        *rec = NULL;
    }
    return 0;
}

static int s_end(void *ctx, const struct trace_scan_pos *pos, struct errmsg *e)
{
    (void)e;
    struct seen *s = ctx;
    s->ends++;
    s->end_pos = pos->record;
    return 0;
}

static const struct trace_scan_hooks hooks = {s_begin, s_record, s_end};

static struct seen fresh(void)
{
    return (struct seen){.in_order = true, .take_at = UINT64_MAX, .fail_at = UINT64_MAX};
}

static void test_pass(void **state)
{
    (void)state;
    struct errmsg e = {0};
    struct seen s = fresh();
    s.take_at = 7;
    assert_int_equal(trace_scan_file(path, NULL, &hooks, &s, &e), 0);
    assert_int_equal(s.begins, 1);
    assert_int_equal(s.ends, 1);
    assert_int_equal(s.records, tp.n_records);
    assert_int_equal(s.end_pos, tp.n_records);
    assert_true(s.in_order);
    /* the taken record outlives the pass and belongs to the taker */
    assert_non_null(s.taken);
    Acceltrace__Record want;
    Acceltrace__TestRecord t;
    assert_int_equal(synth_capture_record(&tp, 7, &want, &t), 0);
    assert_int_equal(s.taken->test->value, t.value);
    synth_capture_record_release(&t);
    trace_record_free(s.taken);
}

static void test_errors(void **state)
{
    (void)state;
    struct errmsg e = {0};
    struct seen s = fresh();
    s.fail_at = 5;
    assert_int_equal(trace_scan_file(path, NULL, &hooks, &s, &e), ERR_DATA);
    assert_string_equal(e.text, "record 5 is bad");
    assert_int_equal(s.records, 6);
    assert_int_equal(s.ends, 0);

    s = fresh();
    s.refuse = 1;
    assert_int_equal(trace_scan_file(path, NULL, &hooks, &s, &e), ERR_DATA);
    assert_non_null(strstr(e.text, "not for me"));
    assert_int_equal(s.records, 0);

    s = fresh();
    char missing[300];
    snprintf(missing, sizeof missing, "%s.none", path);
    assert_true(trace_scan_file(missing, NULL, &hooks, &s, &e) < 0);
    assert_non_null(strstr(e.text, ".none"));
    assert_int_equal(s.begins, 0);
}

static void test_reader_kept(void **state)
{
    (void)state;
    struct trace_reader *r = NULL;
    struct errmsg text = {0};
    assert_int_equal(trace_reader_open(&r, path, NULL, &text), 0);
    struct errmsg e = {0};
    struct seen s = fresh();
    assert_int_equal(trace_scan_reader(r, path, NULL, &hooks, &s, &e), 0);
    assert_int_equal(s.records, tp.n_records);
    /* still open: its header and content hash stay the caller's */
    assert_string_equal(trace_reader_header(r)->workload, "test");
    assert_non_null(trace_reader_content_hash(r));
    trace_reader_free(r);
}

int main(void)
{
    snprintf(path, sizeof path, "/tmp/acceltrace-test-trace-scan-%ld.atr", (long)getpid());
    synth_capture_params_default(&tp);
    tp.n_records = 40;
    struct errmsg err = {0};
    if (synth_capture_write(path, &tp, &err) != 0) {
        fprintf(stderr, "cannot write the test trace: %s\n", err.text);
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pass),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_reader_kept),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    unlink(path);
    return rc;
}
