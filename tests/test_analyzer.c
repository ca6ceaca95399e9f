/*
 * Tests of analysis/analyzer: several analyzers fed from one reader pass see every record
 * in file order, in list order; a record one of them takes is still seen by the later
 * ones; the first error of a hook stops the pass; finish runs in list order and stops at
 * the first error; a record hook returning ANALYZER_STOP ends the pass early;
 * analyzer_free releases through the free hook. The trace is
 * capture/synth/synth_capture (seeded).
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

#include "analysis/analyzer.h"
#include "capture/synth/synth_capture.h"

static char path[256];
static struct synth_capture_params tp;

/* A call log shared by the analyzers of a test: "b0 r0 r1 ..." style. */
static char log_text[8192];

static void log_add(const char *fmt, int who, uint64_t n)
{
    size_t len = strlen(log_text);
    snprintf(log_text + len, sizeof log_text - len, fmt, who, (unsigned long long)n);
}

struct counter {
    int id;
    uint64_t records;
    int64_t sum;               /* of TestRecord.value */
    uint64_t take_at, fail_at; /* UINT64_MAX: never */
    uint64_t stop_at;          /* ANALYZER_STOP at this record; 0: never */
    int fail_finish, freed;
    Acceltrace__Record *taken;
};

static int c_begin(void *self, const struct trace_scan_pos *pos, struct errmsg *e)
{
    (void)e;
    struct counter *c = self;
    log_add("b%d.%llu ", c->id, pos->record);
    return 0;
}

static int c_record(void *self, const struct trace_scan_pos *pos, Acceltrace__Record **rec,
                    struct errmsg *e)
{
    struct counter *c = self;
    assert_non_null(*rec);
    c->records++;
    c->sum += (*rec)->test->value;
    if (pos->record < 3)
        log_add("r%d.%llu ", c->id, pos->record);
    if (pos->record == c->fail_at)
        return errmsg_set(e, ERR_DATA, "analyzer %d refuses record %llu", c->id,
                          (unsigned long long)pos->record);
    if (pos->record == c->take_at) {
        c->taken = *rec;
        *rec = NULL;
    }
    return c->stop_at && pos->record == c->stop_at ? ANALYZER_STOP : 0;
}

static int c_end(void *self, const struct trace_scan_pos *pos, struct errmsg *e)
{
    (void)e;
    struct counter *c = self;
    log_add("e%d.%llu ", c->id, pos->record);
    return 0;
}

static int c_finish(void *self, struct errmsg *e)
{
    struct counter *c = self;
    log_add("f%d ", c->id, 0);
    return c->fail_finish ? errmsg_set(e, ERR_IO, "analyzer %d cannot write", c->id) : 0;
}

static void c_free(void *self)
{
    struct counter *c = self;
    c->freed++;
    trace_record_free(c->taken);
    c->taken = NULL;
}

static const struct analyzer_ops counter_ops = {"counter", c_begin,  c_record,
                                                c_end,     c_finish, c_free};

static int64_t expected_sum(void)
{
    int64_t s = 0;
    for (uint64_t i = 0; i < tp.n_records; i++) {
        Acceltrace__Record r;
        Acceltrace__TestRecord t;
        assert_int_equal(synth_capture_record(&tp, i, &r, &t), 0);
        s += t.value;
        synth_capture_record_release(&t);
    }
    return s;
}

static void test_one_pass_two_analyzers(void **state)
{
    (void)state;
    log_text[0] = 0;
    struct counter a = {.id = 1, .take_at = 2, .fail_at = UINT64_MAX};
    struct counter b = {.id = 2, .take_at = UINT64_MAX, .fail_at = UINT64_MAX};
    struct analyzer an[2] = {{&counter_ops, &a}, {&counter_ops, &b}};
    struct errmsg e = {0};
    assert_int_equal(analyzer_run(path, an, 2, NULL, &e), 0);
    assert_int_equal(analyzer_finish(an, 2, &e), 0);
    assert_string_equal(log_text, "b1.0 b2.0 r1.0 r2.0 r1.1 r2.1 r1.2 r2.2 e1.40 e2.40 f1 f2 ");
    int64_t want = expected_sum();
    assert_int_equal(a.records, tp.n_records);
    assert_int_equal(b.records, tp.n_records); /* record 2 too, after a took it */
    assert_true(a.sum == want && b.sum == want);
    assert_non_null(a.taken);
    analyzer_free(&an[0]);
    analyzer_free(&an[1]);
    assert_int_equal(a.freed, 1);
    assert_int_equal(b.freed, 1);
    assert_null(an[0].self);
    analyzer_free(&an[0]); /* released: a no-op */
    assert_int_equal(a.freed, 1);
}

static void test_first_error_stops(void **state)
{
    (void)state;
    log_text[0] = 0;
    struct counter a = {.id = 1, .take_at = UINT64_MAX, .fail_at = 1};
    struct counter b = {.id = 2, .take_at = UINT64_MAX, .fail_at = UINT64_MAX};
    struct analyzer an[2] = {{&counter_ops, &a}, {&counter_ops, &b}};
    struct errmsg e = {0};
    assert_int_equal(analyzer_run(path, an, 2, NULL, &e), ERR_DATA);
    assert_string_equal(e.text, "analyzer 1 refuses record 1");
    assert_string_equal(log_text, "b1.0 b2.0 r1.0 r2.0 r1.1 ");
    assert_int_equal(b.records, 1);

    log_text[0] = 0;
    a.fail_finish = 1;
    assert_int_equal(analyzer_finish(an, 2, &e), ERR_IO);
    assert_string_equal(e.text, "analyzer 1 cannot write");
    assert_string_equal(log_text, "f1 ");
}

/* A record hook that needs no more records ends the pass: the later analyzers still see
 * that record, no end hook runs, the pass returns 0 and the reader is left after it. */
static void test_stop_early(void **state)
{
    (void)state;
    log_text[0] = 0;
    struct counter a = {.id = 1, .take_at = UINT64_MAX, .fail_at = UINT64_MAX, .stop_at = 1};
    struct counter b = {.id = 2, .take_at = UINT64_MAX, .fail_at = UINT64_MAX};
    struct analyzer an[2] = {{&counter_ops, &a}, {&counter_ops, &b}};
    struct errmsg e = {0};
    assert_int_equal(analyzer_run(path, an, 2, NULL, &e), 0);
    assert_string_equal(log_text, "b1.0 b2.0 r1.0 r2.0 r1.1 r2.1 ");
    assert_int_equal(a.records, 2);
    assert_int_equal(b.records, 2);
    /* the stop of the later analyzer counts as well */
    log_text[0] = 0;
    a.stop_at = 0;
    b.stop_at = 2;
    a.records = b.records = 0;
    assert_int_equal(analyzer_run(path, an, 2, NULL, &e), 0);
    assert_int_equal(a.records, 3);
    assert_int_equal(b.records, 3);
}

static void test_reader_kept(void **state)
{
    (void)state;
    struct trace_reader *r = NULL;
    struct errmsg text = {0};
    assert_int_equal(trace_reader_open(&r, path, NULL, &text), 0);
    struct counter a = {.id = 1, .take_at = UINT64_MAX, .fail_at = UINT64_MAX};
    struct analyzer an = {&counter_ops, &a};
    struct errmsg e = {0};
    log_text[0] = 0;
    assert_int_equal(analyzer_run_reader(r, path, &an, 1, NULL, &e), 0);
    assert_int_equal(a.records, tp.n_records);
    assert_string_equal(trace_reader_header(r)->workload, "test");
    trace_reader_free(r);
}

int main(void)
{
    snprintf(path, sizeof path, "/tmp/acceltrace-test-analyzer-%ld.atr", (long)getpid());
    synth_capture_params_default(&tp);
    tp.n_records = 40;
    struct errmsg err = {0};
    if (synth_capture_write(path, &tp, &err) != 0) {
        fprintf(stderr, "cannot write the test trace: %s\n", err.text);
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_pass_two_analyzers),
        cmocka_unit_test(test_first_error_stops),
        cmocka_unit_test(test_stop_early),
        cmocka_unit_test(test_reader_kept),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    unlink(path);
    return rc;
}
