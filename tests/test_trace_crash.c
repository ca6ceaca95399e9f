/*
 * Crash safety: a writer child killed with SIGKILL after N frames
 * leaves NAME.atr.partial; trace_recover turns it into a trace that verifies and holds
 * exactly the frames completed before the kill.
 *
 * Lock-step runs: the child appends one frame, reports it through a pipe and waits for the
 * parent's go-ahead; after N reports the parent kills it, so exactly N frames are complete.
 * Free runs: the child appends as fast as it can and reports each frame; the parent kills
 * it after N reports, so at least N frames are complete, and every recovered frame must be
 * the next record of the sequence (a prefix, no torn frame).
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/io.h"
#include "tests/helpers/test_helpers.h"
#include "traces/trace_reader.h"
#include "traces/trace_recover.h"
#include "traces/trace_verify.h"
#include "traces/trace_writer.h"

static void child(const char *path, int report_fd, int go_fd, bool lockstep)
{
    struct trace_writer_opts o;
    trace_writer_opts_default(&o);
    o.flush_bytes = 0; /* every frame reaches the file when append returns */
    Acceltrace__TraceHeader h = ACCELTRACE__TRACE_HEADER__INIT;
    h.workload = "test";
    struct trace_writer *w;
    struct errmsg err = {0};
    if (trace_writer_open(&w, path, &o, &h, &err))
        _exit(10);
    uint8_t blob[3000];
    char c = 1;
    if (lockstep && (write(report_fd, &c, 1) != 1 || read(go_fd, &c, 1) != 1))
        _exit(0); /* header written; wait for the go-ahead */
    for (uint32_t i = 0;; i++) {
        Acceltrace__TestRecord t = ACCELTRACE__TEST_RECORD__INIT;
        t.step = i;
        t.value = (int64_t)i * 7919;
        for (size_t k = 0; k < sizeof blob; k++)
            blob[k] = (uint8_t)((i * 31 + k * (k % 7)) & 0xff);
        t.blob.data = blob;
        t.blob.len = 100 + (i * 37) % 2900;
        Acceltrace__Record rec = ACCELTRACE__RECORD__INIT;
        rec.body_case = ACCELTRACE__RECORD__BODY_TEST;
        rec.test = &t;
        if (trace_writer_append(w, &rec, NULL))
            _exit(11);
        if (write(report_fd, &c, 1) != 1)
            _exit(12);
        if (lockstep && read(go_fd, &c, 1) != 1)
            _exit(0);
        if (i > 1000000)
            _exit(13);
    }
}

static void run(int n, bool lockstep)
{
    char path[512], partial[600], out[600];
    snprintf(path, sizeof path, "%s/crash%d%s.atr", th_tmpdir(), n, lockstep ? "l" : "f");
    snprintf(partial, sizeof partial, "%s.partial", path);
    snprintf(out, sizeof out, "%s/recovered%d%s.atr", th_tmpdir(), n, lockstep ? "l" : "f");
    int rep[2], go[2];
    assert_int_equal(pipe(rep), 0);
    assert_int_equal(pipe(go), 0);
    fflush(stdout);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(rep[0]);
        close(go[1]);
        child(path, rep[1], go[0], lockstep);
        _exit(0);
    }
    close(rep[1]);
    close(go[0]);
    char c = 1;
    if (lockstep) /* the header frame is written */
        assert_int_equal(read(rep[0], &c, 1), 1);
    for (int i = 0; i < n; i++) {
        if (lockstep)
            assert_int_equal(write(go[1], &c, 1), 1);
        assert_int_equal(read(rep[0], &c, 1), 1);
    }
    kill(pid, SIGKILL);
    int st;
    waitpid(pid, &st, 0);
    close(rep[0]);
    close(go[1]);
    assert_true(WIFSIGNALED(st));
    assert_int_equal(access(partial, F_OK), 0);
    assert_int_not_equal(access(path, F_OK), 0);

    struct trace_recover_result res;
    struct errmsg e = {0, ""};
    int rc = trace_recover(partial, out, &res, &e);
    if (rc)
        fail_msg("recover failed: %s", e.text);
    struct trace_verify_result vr;
    assert_int_equal(trace_verify(out, NULL, &vr, &e), 0);
    printf("%s N=%d: recovered %llu frames (%llu bytes kept, %llu dropped)\n",
           lockstep ? "lock-step" : "free run", n, (unsigned long long)res.frames - 1,
           (unsigned long long)res.kept_bytes, (unsigned long long)res.dropped_bytes);
    if (lockstep)
        assert_int_equal(res.frames, (uint64_t)n + 1); /* + the header frame */
    else
        assert_true(res.frames >= (uint64_t)n + 1);
    struct trace_reader *r;
    struct errmsg err = {0};
    assert_int_equal(trace_reader_open(&r, out, NULL, &err), 0);
    Acceltrace__Record *rec;
    uint32_t i = 0;
    while ((rc = trace_reader_next(r, &rec, NULL)) == 1) {
        assert_int_equal(rec->test->step, i);
        assert_int_equal(rec->test->value, (int64_t)i * 7919);
        assert_int_equal(rec->test->blob.len, 100 + (i * 37) % 2900);
        trace_record_free(rec);
        i++;
    }
    assert_int_equal(rc, 0);
    assert_int_equal(i + 1, res.frames);
    trace_reader_free(r);
}

static void test_lockstep(void **state)
{
    (void)state;
    static const int ns[] = {0, 1, 2, 7, 50, 300};
    for (size_t k = 0; k < sizeof ns / sizeof *ns; k++)
        run(ns[k], true);
}

static void test_free_run(void **state)
{
    (void)state;
    static const int ns[] = {1, 10, 100, 1000};
    for (size_t k = 0; k < sizeof ns / sizeof *ns; k++)
        run(ns[k], false);
}

int main(void)
{
    if (!th_tmpdir_make("crash"))
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lockstep),
        cmocka_unit_test(test_free_run),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    if (th_tmpdir_remove() != 0)
        fprintf(stderr, "cannot remove the temporary folder\n");
    return rc;
}
