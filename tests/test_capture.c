/*
 * Tests of the capture interface (capture/capture.h) and its registry: every registered
 * capture has the required ops and a unique name; the driver's common header fields
 * (producer from common/version.h, SOURCE_DATE_EPOCH, reproducible mode, params hash,
 * the fixed header of the synthetic traces); capture_run with a small fake source: the
 * memory refusal comes before prepare and leaves nothing on disk, a failing run leaves no
 * trace and no .partial, a finished run gives a readable trace with every record.
 * Resumable captures: a run that dies (_exit in a child) after a checkpoint resumes to the
 * uninterrupted run's bytes; a workload without hooks, a checkpoint of other parameters, a
 * damaged checkpoint and a checkpoint whose workload part is bad are refused, naming the
 * file.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "capture/capture.h"
#include "capture/capture_registry.h"
#include "capture/synth/synth_capture.h"
#include "common/crc32c.h"
#include "common/sha256.h"
#include "common/version.h"
#include "tests/helpers/test_helpers.h"
#include "traces/trace_reader.h"
#include "traces/trace_writer.h"

static void test_registry(void **state)
{
    (void)state;
    const char *names[] = {"disc", "kura", "salca", "test"};
    assert_int_equal(capture_registry_count(), 4);
    for (size_t i = 0; i < 4; i++) {
        const struct capture_ops *o = capture_registry_find(names[i]);
        assert_non_null(o);
        assert_string_equal(o->name, names[i]);
        assert_non_null(o->summary);
        assert_non_null(o->mem_hint);
        assert_non_null(o->open);
        assert_non_null(o->mem_estimate);
        assert_non_null(o->header);
        assert_non_null(o->run);
        assert_non_null(o->close);
    }
    for (size_t i = 0; i < capture_registry_count(); i++)
        for (size_t j = i + 1; j < capture_registry_count(); j++)
            assert_string_not_equal(capture_registry_get(i)->name, capture_registry_get(j)->name);
    assert_null(capture_registry_get(capture_registry_count()));
    assert_null(capture_registry_find("nope"));
    assert_null(capture_registry_find(NULL));
}

/* ---- a fake source: n TestRecords, optionally failing after some ---- */

struct fake {
    uint64_t n, fail_after; /* fail_after 0: never */
    uint64_t need;
    bool no_source; /* the header names no source: capture_run must refuse */
    bool prepared;
    uint64_t emitted;
};

static int fake_open(void **inst, const void *params, struct errmsg *e)
{
    struct fake *f = calloc(1, sizeof *f);
    *inst = f;
    if (!f)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    *f = *(const struct fake *)params;
    return 0;
}

static uint64_t fake_estimate(const void *inst)
{
    return ((const struct fake *)inst)->need;
}

static int fake_prepare(void *inst, struct errmsg *e)
{
    (void)e;
    ((struct fake *)inst)->prepared = true;
    return 0;
}

static int fake_header(void *inst, Acceltrace__TraceHeader *h, struct errmsg *e)
{
    (void)e;
    h->params_json = "{\"a\":1}";
    h->model_json = "{\"m\":2}";
    h->seed = 7;
    if (!inst || !((struct fake *)inst)->no_source) {
        h->source = "synthetic";
        h->source_detail = "fake records";
    }
    return 0;
}

static int fake_run(void *inst, struct capture_sink *sink, struct errmsg *e)
{
    struct fake *f = inst;
    capture_progress_begin(sink, f->n);
    for (uint64_t i = 0; i < f->n; i++) {
        if (f->fail_after && i == f->fail_after)
            return errmsg_set(e, ERR_DATA, "fake failure at record %llu", (unsigned long long)i);
        Acceltrace__Record rec = ACCELTRACE__RECORD__INIT;
        Acceltrace__TestRecord t = ACCELTRACE__TEST_RECORD__INIT;
        t.step = (uint32_t)i;
        t.value = (int64_t)i * 3;
        rec.body_case = ACCELTRACE__RECORD__BODY_TEST;
        rec.test = &t;
        int rc = capture_emit(sink, &rec, NULL, e);
        if (rc)
            return rc;
        capture_progress_update(sink, i + 1);
    }
    f->emitted = sink->records;
    return 0;
}

static void fake_close(void *inst)
{
    free(inst);
}

static const struct capture_ops fake_ops = {
    .name = "fake",
    .summary = "test source",
    .mem_hint = "use fewer records",
    .open = fake_open,
    .mem_estimate = fake_estimate,
    .prepare = fake_prepare,
    .header = fake_header,
    .run = fake_run,
    .close = fake_close,
};

static void test_header_common(void **state)
{
    (void)state;
    struct capture_opts o;
    struct capture_header_store st;
    Acceltrace__TraceHeader h = ACCELTRACE__TRACE_HEADER__INIT;
    capture_opts_default(&o);
    o.command_line = "acceltrace capture fake";
    fake_header(NULL, &h, NULL);
    setenv("SOURCE_DATE_EPOCH", "1700000000", 1);
    capture_header_common(&fake_ops, &o, &h, &st);
    assert_string_equal(h.producer, ACCELTRACE_PRODUCER);
    assert_string_equal(h.producer, "acceltrace " ACCELTRACE_VERSION);
    assert_string_equal(h.workload, "fake");
    assert_string_equal(h.command_line, "acceltrace capture fake");
    assert_string_equal(h.utc_time, "2023-11-14T22:13:20Z");
    /* sha256 of '{"a":1}{"m":2}' (Python hashlib) */
    assert_string_equal(h.params_hash,
                        "4d56d0a0d65e2a069ce8ec6bbac1f5e1335d2dc8e2322489065fa2700e88039d");
    /* reproducible: no command line; SOURCE_DATE_EPOCH, else the epoch */
    o.reproducible = true;
    capture_header_common(&fake_ops, &o, &h, &st);
    assert_string_equal(h.command_line, "");
    assert_string_equal(h.utc_time, "2023-11-14T22:13:20Z");
    unsetenv("SOURCE_DATE_EPOCH");
    capture_header_common(&fake_ops, &o, &h, &st);
    assert_string_equal(h.utc_time, "1970-01-01T00:00:00Z");
    /* a given time wins outside reproducible mode */
    o.reproducible = false;
    o.utc_time = "2026-01-01T00:00:00Z";
    capture_header_common(&fake_ops, &o, &h, &st);
    assert_string_equal(h.utc_time, "2026-01-01T00:00:00Z");
    /* the synthetic traces: fixed producer, time and command line, no params hash */
    Acceltrace__TraceHeader s;
    struct synth_capture_params sp;
    synth_capture_params_default(&sp);
    setenv("SOURCE_DATE_EPOCH", "1700000000", 1);
    synth_capture_header(&sp, &s);
    unsetenv("SOURCE_DATE_EPOCH");
    assert_string_equal(s.producer, ACCELTRACE_PRODUCER_SYNTH);
    assert_string_equal(s.workload, "test");
    assert_string_equal(s.utc_time, "1970-01-01T00:00:00Z");
    assert_string_equal(s.command_line, "");
    assert_true(s.params_hash == NULL || s.params_hash[0] == '\0');
}

static void test_run_refuses_before_prepare(void **state)
{
    (void)state;
    char path[512], part[600];
    th_path(path, sizeof path, "big.atr");
    snprintf(part, sizeof part, "%s%s", path, TRACE_WRITER_TMP_SUFFIX);
    struct fake params = {.n = 5, .need = (uint64_t)3 << 30};
    struct capture_opts o;
    capture_opts_default(&o);
    o.mem_limit_bytes = (uint64_t)1 << 30;
    o.quiet = true;
    struct errmsg e = {0};
    void *inst = NULL;
    assert_int_equal(fake_ops.open(&inst, &params, &e), 0);
    assert_int_equal(capture_run(&fake_ops, inst, path, &o, &e), ERR_LIMIT);
    assert_non_null(strstr(errmsg_text(&e), "capture fake needs about"));
    assert_non_null(strstr(errmsg_text(&e), "use fewer records"));
    assert_false(((struct fake *)inst)->prepared);
    assert_false(th_exists(path));
    assert_false(th_exists(part));
    /* no limit: the same capture runs */
    o.mem_limit_bytes = 0;
    assert_int_equal(capture_run(&fake_ops, inst, path, &o, &e), 0);
    assert_true(((struct fake *)inst)->prepared);
    fake_ops.close(inst);
    unlink(path);
}

static void test_run_failure_leaves_nothing(void **state)
{
    (void)state;
    char path[512], part[600];
    th_path(path, sizeof path, "fail.atr");
    snprintf(part, sizeof part, "%s%s", path, TRACE_WRITER_TMP_SUFFIX);
    struct fake params = {.n = 10, .fail_after = 4};
    struct errmsg e = {0};
    void *inst = NULL;
    assert_int_equal(fake_ops.open(&inst, &params, &e), 0);
    struct capture_opts o;
    capture_opts_default(&o);
    o.quiet = true;
    assert_int_equal(capture_run(&fake_ops, inst, path, &o, &e), ERR_DATA);
    assert_string_equal(errmsg_text(&e), "fake failure at record 4");
    assert_false(th_exists(path));
    assert_false(th_exists(part));
    fake_ops.close(inst);
}

/* A header that names no source (provenance) is refused before anything is written. */
static void test_run_refuses_no_source(void **state)
{
    (void)state;
    char path[512];
    th_path(path, sizeof path, "nosrc.atr");
    struct fake params = {.n = 3, .no_source = true};
    struct errmsg e = {0};
    void *inst = NULL;
    assert_int_equal(fake_ops.open(&inst, &params, &e), 0);
    struct capture_opts o;
    capture_opts_default(&o);
    o.quiet = true;
    assert_int_equal(capture_run(&fake_ops, inst, path, &o, &e), ERR_INTERNAL);
    assert_non_null(strstr(e.text, "names no source"));
    assert_int_equal(((struct fake *)inst)->emitted, 0);
    fake_ops.close(inst);
    assert_int_not_equal(access(path, F_OK), 0);
}

static void test_run_writes_trace(void **state)
{
    (void)state;
    char path[512];
    th_path(path, sizeof path, "ok.atr");
    struct fake params = {.n = 25};
    struct errmsg e = {0};
    void *inst = NULL;
    assert_int_equal(fake_ops.open(&inst, &params, &e), 0);
    setenv("SOURCE_DATE_EPOCH", "1700000000", 1);
    progress_global_quiet = true; /* opts NULL: the defaults report progress */
    assert_int_equal(capture_run(&fake_ops, inst, path, NULL, &e), 0);
    progress_global_quiet = false;
    unsetenv("SOURCE_DATE_EPOCH");
    assert_int_equal(((struct fake *)inst)->emitted, 25);
    fake_ops.close(inst);
    struct trace_reader *r = NULL;
    struct errmsg err = {0};
    assert_int_equal(trace_reader_open(&r, path, NULL, &err), 0);
    const Acceltrace__TraceHeader *h = trace_reader_header(r);
    assert_string_equal(h->producer, ACCELTRACE_PRODUCER);
    assert_string_equal(h->workload, "fake");
    assert_string_equal(h->source, "synthetic");
    assert_string_equal(h->source_detail, "fake records");
    assert_string_equal(h->utc_time, "2023-11-14T22:13:20Z");
    assert_int_equal(h->seed, 7);
    Acceltrace__Record *rec;
    struct trace_key key;
    uint64_t n = 0;
    int rc;
    while ((rc = trace_reader_next(r, &rec, &key)) == 1) {
        assert_int_equal(rec->body_case, ACCELTRACE__RECORD__BODY_TEST);
        assert_int_equal(rec->test->value, (int64_t)n * 3);
        trace_record_free(rec);
        n++;
    }
    assert_int_equal(rc, 0);
    assert_int_equal(n, 25);
    trace_reader_free(r);
    unlink(path);
}

/* sha256 hex of a whole file. */
static void file_sha256(const char *path, char hex[65])
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    struct sha256 s;
    uint8_t buf[4096], d[32];
    size_t n;
    sha256_init(&s);
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        sha256_update(&s, buf, n);
    fclose(f);
    sha256_final(&s, d);
    sha256_to_hex(d, hex);
}

/*
 * The synthetic capture keeps its bytes across the move to capture/ and the driver: 40
 * default records in raw frames (level 0, no compressor in the bytes) through the registry
 * and capture_run, and through synth_capture_write, hash to the file that
 * `acceltrace capture test --records 40 --level 0` writes. The pinned digest was that of
 * the file written before the capture interface existed (934af567...) until the header
 * gained the provenance fields (source, source_detail), which changed the header frame
 * only; it is now that of the same records under the new header.
 */
static void test_synth_same_bytes(void **state)
{
    (void)state;
    const char *want = "0a6fdac4d0bf9708c85dd73af440e3674d4340503a97a26825e6e1a823d1712c";
    char a[512], b[512], hex[65];
    th_path(a, sizeof a, "s1.atr");
    th_path(b, sizeof b, "s2.atr");
    struct synth_capture_params p;
    synth_capture_params_default(&p);
    p.n_records = 40;
    p.zstd_level = 0;
    struct errmsg err = {0};
    assert_int_equal(synth_capture_write(a, &p, &err), 0);
    file_sha256(a, hex);
    assert_string_equal(hex, want);
    const struct capture_ops *ops = capture_registry_find("test");
    struct capture_opts o;
    capture_opts_default(&o);
    o.zstd_level = 0;
    o.quiet = true;
    o.command_line = "ignored by the fixed header";
    struct errmsg e = {0};
    void *inst = NULL;
    assert_int_equal(ops->open(&inst, &p, &e), 0);
    assert_int_equal(capture_run(ops, inst, b, &o, &e), 0);
    ops->close(inst);
    file_sha256(b, hex);
    assert_string_equal(hex, want);
    unlink(a);
    unlink(b);
}

/* ---- resumable captures ---- */

/* The synthetic capture, but the process ends (_exit, as a kill) at record die_at. */
static uint64_t die_at;
static int (*real_append)(void *, const Acceltrace__Record *, const struct trace_key *,
                          struct errmsg *);

static int dying_append(void *ctx, const Acceltrace__Record *rec, const struct trace_key *key,
                        struct errmsg *e)
{
    static uint64_t n;
    if (++n > die_at)
        _exit(0);
    return real_append(ctx, rec, key, e);
}

static int dying_run(void *inst, struct capture_sink *sink, struct errmsg *e)
{
    real_append = sink->append;
    sink->append = dying_append;
    return capture_registry_find("test")->run(inst, sink, e);
}

/* Runs the test capture of n records into path; die > 0: in a child that dies there. */
static int run_synth(const char *path, uint64_t n, uint64_t die, bool resume, struct errmsg *e)
{
    struct capture_ops ops = *capture_registry_find("test");
    struct synth_capture_params p;
    synth_capture_params_default(&p);
    p.n_records = n;
    struct capture_opts o;
    capture_opts_default(&o);
    o.quiet = true;
    o.resume = resume;
    o.checkpoint_interval_s = 0; /* a checkpoint at every record */
    if (die) {
        pid_t pid = fork();
        if (pid == 0) {
            die_at = die;
            ops.run = dying_run;
            void *inst = NULL;
            if (ops.open(&inst, &p, e) == 0)
                (void)capture_run(&ops, inst, path, &o, e);
            _exit(1); /* it should have died first */
        }
        int st = 0;
        waitpid(pid, &st, 0);
        return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : ERR_INTERNAL;
    }
    void *inst = NULL;
    int rc = ops.open(&inst, &p, e);
    if (!rc)
        rc = capture_run(&ops, inst, path, &o, e);
    ops.close(inst);
    return rc;
}

static void test_resume_same_bytes(void **state)
{
    (void)state;
    char ref[512], path[512], part[560], ckpt[560], h1[65], h2[65];
    th_path(ref, sizeof ref, "ref.atr");
    th_path(path, sizeof path, "res.atr");
    snprintf(part, sizeof part, "%s.partial", path);
    snprintf(ckpt, sizeof ckpt, "%s.ckpt", path);
    struct errmsg e = {0};
    assert_int_equal(run_synth(ref, 300, 0, false, &e), 0);
    assert_int_equal(run_synth(path, 300, 120, false, &e), 0);
    assert_true(th_exists(part));
    assert_true(th_exists(ckpt));
    uint64_t unit = 0;
    assert_int_equal(capture_checkpoint_unit(path, &unit, &e), 0);
    assert_int_equal(unit, 120); /* records 0..119 appended; the 121st died */
    /* dies again later, then finishes */
    assert_int_equal(run_synth(path, 300, 100, true, &e), 0);
    assert_int_equal(capture_checkpoint_unit(path, &unit, &e), 0);
    assert_int_equal(unit, 220);
    assert_int_equal(run_synth(path, 300, 0, true, &e), 0);
    assert_false(th_exists(part));
    assert_false(th_exists(ckpt));
    file_sha256(ref, h1);
    file_sha256(path, h2);
    assert_string_equal(h1, h2);
    /* --resume without a checkpoint starts fresh */
    assert_int_equal(run_synth(path, 300, 0, true, &e), 0);
    file_sha256(path, h2);
    assert_string_equal(h1, h2);
    unlink(ref);
    unlink(path);
}

static void test_resume_without_hooks(void **state)
{
    (void)state;
    char path[512];
    th_path(path, sizeof path, "nohooks.atr");
    struct fake params = {.n = 3};
    struct errmsg e = {0};
    void *inst = NULL;
    assert_int_equal(fake_ops.open(&inst, &params, &e), 0);
    struct capture_opts o;
    capture_opts_default(&o);
    o.quiet = true;
    o.resume = true;
    assert_int_equal(capture_run(&fake_ops, inst, path, &o, &e), ERR_USAGE);
    assert_string_equal(e.text, "capture fake cannot resume");
    assert_false(((struct fake *)inst)->prepared);
    fake_ops.close(inst);
    assert_false(th_exists(path));
}

/* Reads the whole file into a malloc'd buffer. */
static uint8_t *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc(*n);
    assert_non_null(b);
    assert_int_equal(fread(b, 1, *n, f), *n);
    fclose(f);
    return b;
}

static void spit(const char *path, const uint8_t *b, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(b, 1, n, f), n);
    fclose(f);
}

static void test_resume_refusals(void **state)
{
    (void)state;
    char path[512], part[560], ckpt[560];
    th_path(path, sizeof path, "bad.atr");
    snprintf(part, sizeof part, "%s.partial", path);
    snprintf(ckpt, sizeof ckpt, "%s.ckpt", path);
    struct errmsg e = {0};
    assert_int_equal(run_synth(path, 200, 50, false, &e), 0);
    size_t n;
    uint8_t *good = slurp(ckpt, &n);
    assert_true(n > 124);
    /* other parameters: refused naming both params hashes, nothing touched */
    assert_int_equal(run_synth(path, 201, 0, true, &e), ERR_USAGE);
    assert_non_null(strstr(e.text, ckpt));
    char hash[65];
    memcpy(hash, good + 16, 64);
    hash[64] = 0;
    assert_non_null(strstr(e.text, hash));
    assert_non_null(strstr(e.text, "this run"));
    assert_true(th_exists(part));
    /* the file ends with the workload's part: its length at offset 112 says so */
    assert_int_equal(good[112] | good[113] << 8, (int)(n - 120));
    /* a damaged byte: the checksum names the file and its offset */
    uint8_t *bad = malloc(n + 8);
    memcpy(bad, good, n);
    bad[n - 1] ^= 0x40;
    spit(ckpt, bad, n);
    assert_int_equal(run_synth(path, 200, 0, true, &e), ERR_DATA);
    assert_non_null(strstr(e.text, "bad checksum"));
    assert_non_null(strstr(e.text, ckpt));
    assert_non_null(strstr(e.text, "offset 12"));
    /* a truncated file: shorter than the fixed part, then one byte short */
    spit(ckpt, good, 60);
    assert_int_equal(run_synth(path, 200, 0, true, &e), ERR_DATA);
    assert_non_null(strstr(e.text, ckpt));
    assert_non_null(strstr(e.text, "offset 0"));
    spit(ckpt, good, n - 1);
    assert_int_equal(run_synth(path, 200, 0, true, &e), ERR_DATA);
    assert_non_null(strstr(e.text, "truncated or too long"));
    assert_non_null(strstr(e.text, "offset 112"));
    /* too long: bytes after the workload's part */
    memcpy(bad, good, n);
    memset(bad + n, 0, 8);
    spit(ckpt, bad, n + 8);
    assert_int_equal(run_synth(path, 200, 0, true, &e), ERR_DATA);
    assert_non_null(strstr(e.text, "truncated or too long"));
    assert_non_null(strstr(e.text, ckpt));
    /* the workload's part bad under a valid checksum: its version word (offset 120) */
    memcpy(bad, good, n);
    bad[120] = 9;
    uint32_t crc = crc32c_update(0, bad, 12);
    crc = crc32c_update(crc, bad + 16, n - 16);
    for (int i = 0; i < 4; i++)
        bad[12 + (size_t)i] = (uint8_t)(crc >> (8 * i));
    spit(ckpt, bad, n);
    assert_int_equal(run_synth(path, 200, 0, true, &e), ERR_DATA);
    assert_non_null(strstr(e.text, ckpt));
    assert_non_null(strstr(e.text, "offset 120"));
    assert_true(th_exists(part)); /* a refused resume leaves the .partial for recover */
    /* the good checkpoint resumes */
    spit(ckpt, good, n);
    assert_int_equal(run_synth(path, 200, 0, true, &e), 0);
    assert_false(th_exists(ckpt));
    free(good);
    free(bad);
    unlink(path);
}

int main(void)
{
    if (!th_tmpdir_make("capture"))
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_registry),
        cmocka_unit_test(test_header_common),
        cmocka_unit_test(test_run_refuses_before_prepare),
        cmocka_unit_test(test_run_failure_leaves_nothing),
        cmocka_unit_test(test_run_refuses_no_source),
        cmocka_unit_test(test_run_writes_trace),
        cmocka_unit_test(test_synth_same_bytes),
        cmocka_unit_test(test_resume_same_bytes),
        cmocka_unit_test(test_resume_without_hooks),
        cmocka_unit_test(test_resume_refusals),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    if (th_tmpdir_remove() != 0)
        return 1;
    return rc;
}
