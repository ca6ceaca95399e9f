/*
 * Tests of traces/trace_reorder: a trace rewritten in a comparator's order holds every
 * record once, in that order (ties in file order), with the edited header, its own index
 * and a content hash that checks; a sealed .partial is a valid input; the input is never
 * its output; a trace without an index and a damaged frame are refused naming the file.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/helpers/test_helpers.h"
#include "traces/trace_reader.h"
#include "traces/trace_reorder.h"
#include "traces/trace_verify.h"
#include "traces/trace_writer.h"

enum { STEPS = 4, LAYERS = 3, DUPS = 2 };

/* Writes STEPS x LAYERS x DUPS test records layer first (value = order written), sealed
 * (left as path.partial, the writer returned in *wout) or finished. */
static void write_layer_major(const char *path, int level, struct trace_writer **wout)
{
    struct errmsg err = {0};
    Acceltrace__TraceHeader h = ACCELTRACE__TRACE_HEADER__INIT;
    h.producer = "acceltrace test";
    h.workload = "test";
    h.params_json = "{\"order\":\"layer\"}";
    struct trace_writer_opts o;
    trace_writer_opts_default(&o);
    o.zstd_level = level;
    struct trace_writer *w;
    assert_int_equal(trace_writer_open(&w, path, &o, &h, &err), 0);
    int64_t v = 0;
    for (int l = 0; l < LAYERS; l++)
        for (int s = 0; s < STEPS; s++)
            for (int d = 0; d < DUPS; d++) {
                Acceltrace__TestRecord t = ACCELTRACE__TEST_RECORD__INIT;
                t.step = (uint32_t)s;
                t.layer = l;
                t.head = 0;
                t.value = v++;
                Acceltrace__Record rec = ACCELTRACE__RECORD__INIT;
                rec.body_case = ACCELTRACE__RECORD__BODY_TEST;
                rec.test = &t;
                assert_int_equal(trace_writer_append(w, &rec, NULL), 0);
            }
    if (wout) {
        assert_int_equal(trace_writer_seal(w), 0);
        *wout = w;
        return;
    }
    assert_int_equal(trace_writer_finish(w), 0);
    trace_writer_free(w);
}

/* Step first, then layer; the DUPS records of one (step, layer) compare equal. */
static int by_step(const struct trace_reorder_entry *a, const struct trace_reorder_entry *b,
                   void *ctx)
{
    int *calls = ctx;
    (*calls)++;
    if (a->key.step != b->key.step)
        return a->key.step < b->key.step ? -1 : 1;
    return (a->key.layer > b->key.layer) - (a->key.layer < b->key.layer);
}

static int edit(Acceltrace__TraceHeader *hdr, void *ctx, struct errmsg *e)
{
    (void)ctx;
    (void)e;
    hdr->params_json = "{\"order\":\"step\"}";
    return 0;
}

/* Reads out_path back in full (content hash checked at the end) and checks the order. */
static void check_step_order(const char *out_path)
{
    struct errmsg err = {0};
    struct trace_reader *r;
    assert_int_equal(trace_reader_open(&r, out_path, NULL, &err), 0);
    assert_string_equal(trace_reader_header(r)->params_json, "{\"order\":\"step\"}");
    Acceltrace__Record *rec;
    int n = 0;
    for (int s = 0; s < STEPS; s++)
        for (int l = 0; l < LAYERS; l++)
            for (int d = 0; d < DUPS; d++) {
                assert_int_equal(trace_reader_next(r, &rec, NULL), 1);
                assert_int_equal(rec->body_case, ACCELTRACE__RECORD__BODY_TEST);
                assert_int_equal(rec->test->step, s);
                assert_int_equal(rec->test->layer, l);
                /* the value is the order written: layer-major, ties in file order */
                assert_int_equal(rec->test->value, (l * STEPS + s) * DUPS + d);
                trace_record_free(rec);
                n++;
            }
    assert_int_equal(trace_reader_next(r, &rec, NULL), 0); /* hash checked here */
    assert_int_equal(n, STEPS * LAYERS * DUPS);
    const Acceltrace__TraceIndex *ix = trace_reader_index(r);
    assert_non_null(ix);
    assert_int_equal(ix->n_entries, 1 + STEPS * LAYERS * DUPS);
    assert_int_equal(ix->entries[1]->step, 0);
    assert_int_equal(ix->entries[2 * DUPS + 1]->layer, 2);
    /* random access finds by the new index */
    assert_int_equal(trace_reader_find(r, ACCELTRACE__RECORD__BODY_TEST, 3, 1, 0, &rec), 1);
    assert_int_equal(rec->test->value, (1 * STEPS + 3) * DUPS);
    trace_record_free(rec);
    trace_reader_free(r);
    struct trace_verify_result vr;
    assert_int_equal(trace_verify(out_path, NULL, &vr, &err), 0);
    assert_true(vr.index_ok);
}

static void test_finished_input(void **state)
{
    (void)state;
    for (int level = 0; level <= 3; level += 3) {
        char in[512], out[512];
        th_path(in, sizeof in, "lm.atr");
        th_path(out, sizeof out, "sm.atr");
        write_layer_major(in, level, NULL);
        int calls = 0;
        struct trace_reorder_opts o = {
            .cmp = by_step, .ctx = &calls, .edit_header = edit, .zstd_level = level};
        struct errmsg err = {0};
        assert_int_equal(trace_reorder(in, out, &o, &err), 0);
        assert_true(calls > 0);
        check_step_order(out);
        assert_false(th_exists(th_path_tmp("sm.atr.partial")));
        /* the input is never the output, nor its temporary */
        assert_int_equal(trace_reorder(in, in, &o, &err), ERR_USAGE);
        assert_non_null(strstr(err.text, "lm.atr"));
        o.tmp_path = in;
        assert_int_equal(trace_reorder(in, out, &o, &err), ERR_USAGE);
        unlink(in);
        unlink(out);
    }
}

/* The capture driver's case: the sealed .partial as input, a temporary of its own. */
static void test_sealed_partial(void **state)
{
    (void)state;
    char path[400], part[512], tmp[512];
    th_path(path, sizeof path, "run.atr");
    snprintf(part, sizeof part, "%s.partial", path);
    snprintf(tmp, sizeof tmp, "%s.reordering", path);
    struct trace_writer *w;
    write_layer_major(path, 3, &w);
    /* sealed: no more appends */
    Acceltrace__TestRecord t = ACCELTRACE__TEST_RECORD__INIT;
    Acceltrace__Record rec = ACCELTRACE__RECORD__INIT;
    rec.body_case = ACCELTRACE__RECORD__BODY_TEST;
    rec.test = &t;
    assert_int_equal(trace_writer_append(w, &rec, NULL), ERR_USAGE);
    int calls = 0;
    struct trace_reorder_opts o = {
        .cmp = by_step, .ctx = &calls, .edit_header = edit, .tmp_path = tmp, .zstd_level = 3};
    struct errmsg err = {0};
    assert_int_equal(trace_reorder(part, path, &o, &err), 0);
    trace_writer_free(w); /* unfinished: removes the .partial */
    assert_false(th_exists(part));
    assert_false(th_exists(tmp));
    check_step_order(path);
    unlink(path);
}

/* Refusals: no index (a .partial as a killed writer leaves it), a damaged frame. */
static void test_refusals(void **state)
{
    (void)state;
    char in[400], out[400], part[512];
    th_path(in, sizeof in, "bad.atr");
    th_path(out, sizeof out, "bad-out.atr");
    snprintf(part, sizeof part, "%s.partial", in);
    write_layer_major(in, 0, NULL);
    size_t n;
    char *bytes = th_slurp(in, &n);
    /* without its index frame and trailer: the first frames only */
    th_write_file(part, bytes, 400);
    int calls = 0;
    struct trace_reorder_opts o = {.cmp = by_step, .ctx = &calls};
    struct errmsg err = {0};
    assert_true(trace_reorder(part, out, &o, &err) < 0);
    assert_non_null(strstr(err.text, "bad.atr.partial"));
    assert_false(th_exists(out));
    /* a flipped payload byte of the last record frame (raw codec): its crc fails */
    struct trace_reader *r;
    assert_int_equal(trace_reader_open(&r, in, NULL, &err), 0);
    const Acceltrace__TraceIndex *ix = trace_reader_index(r);
    assert_non_null(ix);
    uint64_t off = ix->entries[ix->n_entries - 1]->offset + 12;
    trace_reader_free(r);
    bytes[off] ^= 0x5a;
    th_write_file(in, bytes, n);
    assert_int_equal(trace_reorder(in, out, &o, &err), ERR_DATA);
    assert_non_null(strstr(err.text, "bad checksum"));
    assert_non_null(strstr(err.text, "bad.atr"));
    assert_false(th_exists(out));
    assert_false(th_exists(th_path_tmp("bad-out.atr.partial")));
    free(bytes);
    unlink(in);
    unlink(part);
}

int main(void)
{
    if (!th_tmpdir_make("trace-reorder"))
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_finished_input),
        cmocka_unit_test(test_sealed_partial),
        cmocka_unit_test(test_refusals),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    if (th_tmpdir_remove() != 0)
        fprintf(stderr, "cannot remove the temporary folder\n");
    return rc;
}
