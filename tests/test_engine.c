/*
 * Tests of the one-pass replay engine (replay/engine, results, sweep) with the count test
 * model: one read of the trace for a 100-config sweep with the right result per config,
 * thread and batch independence, resume after torn writes, shards + merge, energy tables,
 * secondary tables, checkpoints (a SIGKILLed pass resumes from its last checkpoint), the
 * fallback batches of models without checkpoint hooks, the default batch from the memory
 * limit, trace_reader_seek, and engine_run_to with a config list and a caller's sink.
 * Trace contents come from capture/synth/synth_capture (seeded, deterministic).
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "capture/synth/synth_capture.h"
#include "common/io.h"
#include "common/mem.h"
#include "formats/jsonl.h"
#include "replay/engine.h"
#include "replay/model_registry.h"
#include "tests/helpers/test_helpers.h"
#include "traces/trace_reader.h"

static struct synth_capture_params tp;

/* In-memory source of the test trace. */
static void mem_source(struct record_source *s)
{
    size_t n = (size_t)tp.n_records;
    Acceltrace__Record **recs = calloc(n, sizeof *recs);
    Acceltrace__Record *rr = calloc(n, sizeof *rr);
    Acceltrace__TestRecord *tt = calloc(n, sizeof *tt);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(synth_capture_record(&tp, i, &rr[i], &tt[i]), 0);
        recs[i] = &rr[i];
    }
    Acceltrace__TraceHeader h;
    synth_capture_header(&tp, &h);
    assert_int_equal(record_source_mem(s, &h, recs, n), 0);
    for (size_t i = 0; i < n; i++)
        synth_capture_record_release(&tt[i]);
    free(recs);
    free(rr);
    free(tt);
}

/* Expected sum of value*scale over records with step >= min_step (independent loop). */
static void expected(int64_t scale, uint64_t min_step, double *sum, uint64_t *count)
{
    *sum = 0;
    *count = 0;
    for (uint64_t i = 0; i < tp.n_records; i++) {
        Acceltrace__Record r;
        Acceltrace__TestRecord t;
        assert_int_equal(synth_capture_record(&tp, i, &r, &t), 0);
        if (t.step >= min_step) {
            *sum += (double)t.value * (double)scale;
            (*count)++;
        }
        synth_capture_record_release(&t);
    }
}

static const char *grid100 =
    "{\"scale\": {\"range\": [1, 10, 1]}, \"min_step\": [0, 3, 7, 10, 20, 30, 40, 50, 60, 99]}";

static int run_model(const struct model_ops *m, struct record_source *src, const char *dir,
                     const char *grid, const struct engine_opts *o, struct engine_stats *st)
{
    assert_non_null(m);
    struct hw_config *base;
    assert_int_equal(hw_config_defaults(&base, m->schema), 0);
    struct sweep *sw;
    struct errmsg e = {0};
    int rc = grid ? sweep_parse(&sw, grid, "grid", base, &e) : sweep_single(&sw, base);
    assert_int_equal(rc, 0);
    struct results *res;
    rc = results_open(&res, dir, src->content_hash(src->ctx), "count", &e);
    if (rc)
        fail_msg("results_open: %s", errmsg_text(&e));
    rc = engine_run(m, src, sw, res, o, st, &e);
    if (rc)
        print_message("engine_run: %s\n", errmsg_text(&e));
    results_close(res);
    sweep_free(sw);
    hw_config_free(base);
    return rc;
}

static int run(struct record_source *src, const char *dir, const char *grid,
               const struct engine_opts *o, struct engine_stats *st)
{
    return run_model(model_registry_find("count"), src, dir, grid, o, st);
}

static void subdir(char *out, size_t n, const char *name)
{
    snprintf(out, n, "%s/%s", th_tmpdir(), name);
}

static void check_results(const char *dir, size_t n_expected)
{
    char p[512];
    snprintf(p, sizeof p, "%s/results.jsonl", dir);
    json_t *rows;
    struct errmsg e = {0};
    assert_int_equal(jsonl_load(&rows, p, NULL, &e), 0);
    assert_int_equal(json_array_size(rows), n_expected);
    for (size_t i = 0; i < json_array_size(rows); i++) {
        json_t *o = json_array_get(rows, i);
        json_t *c = json_object_get(o, "config");
        int64_t scale = json_integer_value(json_object_get(c, "scale"));
        uint64_t ms = (uint64_t)json_integer_value(json_object_get(c, "min_step"));
        double sum;
        uint64_t cnt;
        expected(scale, ms, &sum, &cnt);
        assert_int_equal(
            json_integer_value(json_object_get(json_object_get(o, "counts"), "records")), cnt);
        assert_true(json_real_value(json_object_get(json_object_get(o, "metrics"), "sum")) == sum);
        assert_int_equal(json_integer_value(json_object_get(o, "config_index")), i);
    }
    json_decref(rows);
}

/* Acceptance 1: 100 configs, one pass, right result each; bytes read equal a 1-config run. */
static void test_hundred_configs_one_pass(void **state)
{
    (void)state;
    struct record_source s1, s100;
    mem_source(&s1);
    mem_source(&s100);
    char d1[512], d100[512];
    subdir(d1, sizeof d1, "one");
    subdir(d100, sizeof d100, "hundred");
    struct engine_opts o;
    engine_opts_default(&o);
    o.quiet = true;
    struct engine_stats st1, st100;
    assert_int_equal(run(&s1, d1, NULL, &o, &st1), 0);
    assert_int_equal(run(&s100, d100, grid100, &o, &st100), 0);
    assert_int_equal(st100.configs_run, 100);
    assert_int_equal(st100.passes, 1);
    assert_int_equal(st100.records, tp.n_records);
    assert_true(st1.bytes_read > 0);
    assert_int_equal(st100.bytes_read, st1.bytes_read);
    check_results(d100, 100);
    record_source_close(&s1);
    record_source_close(&s100);
}

/* The same through a real trace file: bytes read from the file do not grow with configs. */
static void test_trace_file_read_once(void **state)
{
    (void)state;
    char path[512], d1[512], d100[512];
    struct errmsg err = {0};
    snprintf(path, sizeof path, "%s/t.atr", th_tmpdir());
    assert_int_equal(synth_capture_write(path, &tp, &err), 0);
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    struct record_source s1, s100;
    struct errmsg e = {0};
    assert_int_equal(record_source_trace(&s1, path, 1, &e), 0);
    assert_int_equal(record_source_trace(&s100, path, 1, &e), 0);
    subdir(d1, sizeof d1, "f1");
    subdir(d100, sizeof d100, "f100");
    struct engine_opts o;
    engine_opts_default(&o);
    o.quiet = true;
    o.threads = 2;
    struct engine_stats st1, st100;
    assert_int_equal(run(&s1, d1, NULL, &o, &st1), 0);
    assert_int_equal(run(&s100, d100, grid100, &o, &st100), 0);
    print_message("trace %lld bytes; read %llu (1 config), %llu (100 configs)\n",
                  (long long)sb.st_size, (unsigned long long)st1.bytes_read,
                  (unsigned long long)st100.bytes_read);
    assert_int_equal(st100.bytes_read, st1.bytes_read);
    assert_true(st100.bytes_read <= (uint64_t)sb.st_size);
    assert_true(st100.bytes_read * 10 >= (uint64_t)sb.st_size * 9);
    check_results(d100, 100);
    record_source_close(&s1);
    record_source_close(&s100);
}

/* Threads and batches change nothing in the files. */
static void test_threads_batches_identical(void **state)
{
    (void)state;
    char a[512], b[512], pa[600], pb[600];
    subdir(a, sizeof a, "j1");
    subdir(b, sizeof b, "j2b7");
    struct record_source s;
    struct engine_opts o;
    engine_opts_default(&o);
    o.quiet = true;
    struct engine_stats st;
    mem_source(&s);
    assert_int_equal(run(&s, a, grid100, &o, &st), 0);
    record_source_close(&s);
    o.threads = 2;
    o.batch_configs = 7;
    o.group_records = 5;
    mem_source(&s);
    assert_int_equal(run(&s, b, grid100, &o, &st), 0);
    assert_int_equal(st.passes, 15);
    record_source_close(&s);
    snprintf(pa, sizeof pa, "%s/results.csv", a);
    snprintf(pb, sizeof pb, "%s/results.csv", b);
    th_assert_same_file(pa, pb);
    snprintf(pa, sizeof pa, "%s/results.jsonl", a);
    snprintf(pb, sizeof pb, "%s/results.jsonl", b);
    th_assert_same_file(pa, pb);
}

static void append_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "ab");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* Resume: a partial run plus torn lines, then a rerun, equals one uninterrupted run. */
static void test_resume_torn(void **state)
{
    (void)state;
    char full[512], part[512], pa[600], pb[600];
    subdir(full, sizeof full, "full");
    subdir(part, sizeof part, "part");
    struct record_source s;
    struct engine_opts o;
    engine_opts_default(&o);
    o.quiet = true;
    struct engine_stats st;
    mem_source(&s);
    assert_int_equal(run(&s, full, grid100, &o, &st), 0);
    /* first 37 configs only (as a shard would), then tear both files */
    o.shard_i = 1;
    o.shard_n = 3;
    assert_int_equal(run(&s, part, grid100, &o, &st), 0);
    assert_int_equal(st.configs_run, 33);
    snprintf(pa, sizeof pa, "%s/results.csv", part);
    append_text(pa, "deadbeef,cafe,33,count,val");
    snprintf(pa, sizeof pa, "%s/results.jsonl", part);
    append_text(pa, "{\"trace_hash\":\"x");
    o.shard_i = o.shard_n = 0;
    assert_int_equal(run(&s, part, grid100, &o, &st), 0);
    assert_int_equal(st.configs_skipped, 33);
    assert_int_equal(st.configs_run, 67);
    record_source_close(&s);
    snprintf(pa, sizeof pa, "%s/results.csv", full);
    snprintf(pb, sizeof pb, "%s/results.csv", part);
    th_assert_same_file(pa, pb);
    snprintf(pa, sizeof pa, "%s/results.jsonl", full);
    snprintf(pb, sizeof pb, "%s/results.jsonl", part);
    th_assert_same_file(pa, pb);
}

/* Shards 1/3, 2/3, 3/3 merged (given out of order) equal the unsharded run. */
static void test_shards_merge(void **state)
{
    (void)state;
    char full[512], sh[3][512], merged[512], pa[600], pb[600];
    subdir(full, sizeof full, "mfull");
    subdir(merged, sizeof merged, "merged");
    struct record_source s;
    struct engine_opts o;
    engine_opts_default(&o);
    o.quiet = true;
    struct engine_stats st;
    mem_source(&s);
    assert_int_equal(run(&s, full, grid100, &o, &st), 0);
    for (unsigned i = 0; i < 3; i++) {
        char name[32];
        snprintf(name, sizeof name, "shard%u", i + 1);
        subdir(sh[i], sizeof sh[i], name);
        o.shard_i = i + 1;
        o.shard_n = 3;
        assert_int_equal(run(&s, sh[i], grid100, &o, &st), 0);
    }
    record_source_close(&s);
    const char *dirs[] = {sh[2], sh[0], sh[1]};
    struct errmsg e = {0};
    assert_int_equal(results_merge(dirs, 3, merged, &e), 0);
    snprintf(pa, sizeof pa, "%s/results.csv", full);
    snprintf(pb, sizeof pb, "%s/results.csv", merged);
    th_assert_same_file(pa, pb);
    snprintf(pa, sizeof pa, "%s/results.jsonl", full);
    snprintf(pb, sizeof pb, "%s/results.jsonl", merged);
    th_assert_same_file(pa, pb);
    /* overlapping shards are refused */
    const char *dup[] = {sh[0], sh[0]};
    subdir(pb, sizeof pb, "dupmerge");
    assert_int_equal(results_merge(dup, 2, pb, &e), ERR_DATA);
}

/* A folder of another trace is refused; merge refuses mixed traces. */
static void test_mixed_traces_refused(void **state)
{
    (void)state;
    char a[512], b[512], m[512];
    subdir(a, sizeof a, "tr_a");
    subdir(b, sizeof b, "tr_b");
    subdir(m, sizeof m, "tr_m");
    struct record_source s;
    struct engine_opts o;
    engine_opts_default(&o);
    o.quiet = true;
    struct engine_stats st;
    mem_source(&s);
    assert_int_equal(run(&s, a, NULL, &o, &st), 0);
    record_source_close(&s);
    struct synth_capture_params keep = tp;
    tp.seed = 99;
    mem_source(&s);
    assert_int_equal(run(&s, b, NULL, &o, &st), 0);
    struct results *res;
    struct errmsg e = {0};
    /* reusing folder a for the other trace */
    assert_int_equal(results_open(&res, a, s.content_hash(s.ctx), "count", &e), ERR_USAGE);
    record_source_close(&s);
    tp = keep;
    const char *dirs[] = {a, b};
    assert_int_equal(results_merge(dirs, 2, m, &e), ERR_DATA);
    assert_non_null(strstr(errmsg_text(&e), "different traces"));
}

/* Energy table at replay equals a recomputation from results.csv. */
static void test_energy(void **state)
{
    (void)state;
    char dir[512], tab[600], csv[600], out[600];
    subdir(dir, sizeof dir, "energy");
    snprintf(tab, sizeof tab, "%s/e.json", th_tmpdir());
    FILE *f = fopen(tab, "w");
    fputs("{\"events\": [{\"count\": \"ops\", \"pj\": 2.5, \"component\": \"core\"},"
          "{\"count\": \"records\", \"pj\": 0.75, \"component\": \"io\"}],"
          "\"static\": [{\"time\": \"mean\", \"watts\": 0.001}]}",
          f);
    fclose(f);
    struct energy_table t;
    struct errmsg e = {0};
    assert_int_equal(energy_table_load(&t, tab, &e), 0);
    assert_int_equal(t.n_components, 3);
    struct record_source s;
    struct engine_opts o;
    engine_opts_default(&o);
    o.quiet = true;
    o.energy = &t;
    struct engine_stats st;
    mem_source(&s);
    assert_int_equal(run(&s, dir, "{\"ops_per_record\": [1, 3]}", &o, &st), 0);
    record_source_close(&s);
    snprintf(csv, sizeof csv, "%s/results.csv", dir);
    snprintf(out, sizeof out, "%s/re.csv", dir);
    assert_int_equal(energy_recompute_csv(csv, &t, out, &e), 0);
    th_assert_same_file(csv, out);
    /* value check on row 2 (ops_per_record 3): E = 1e-12 (2.5*3n + 0.75n) + 0.001*mean */
    size_t n;
    char *text = th_slurp(csv, &n);
    assert_non_null(strstr(text, "energy_core_j [J],energy_io_j [J],energy_static_j [J],"
                                 "energy_j [J]"));
    free(text);
    energy_table_release(&t);
    /* a bad table names the path */
    f = fopen(tab, "w");
    fputs("{\"events\": [{\"count\": \"ops\", \"pj\": \"x\"}]}", f);
    fclose(f);
    assert_int_equal(energy_table_load(&t, tab, &e), ERR_CONFIG);
    assert_non_null(strstr(errmsg_text(&e), "$.events[0]"));
}

/* A model with a secondary table and multi-row groups; a torn secondary table resumes. */
static int sec_new(void **s, const struct hw_config *c, const struct model_env *env,
                   struct errmsg *e)
{
    (void)env;
    (void)e;
    int64_t *v = calloc(2, sizeof *v);
    v[1] = hw_config_int(c, "scale");
    *s = v;
    return 0;
}
static int sec_consume(void *s, const struct model_record *r, struct errmsg *e)
{
    (void)e;
    ((int64_t *)s)[0] += r->rec->test->value;
    return 0;
}
static int sec_finish(void *s, struct model_result *res, struct errmsg *e)
{
    (void)e;
    int64_t *v = s;
    for (int k = 0; k < 3; k++) {
        result_row_begin(res, "ops");
        result_metric_i64(res, "op", "", k);
        result_count(res, "work", "op", (uint64_t)(k + 1) * (uint64_t)v[1]);
    }
    result_row_begin(res, NULL);
    result_label(res, "mode", "a");
    result_metric_i64(res, "total", "", v[0] * v[1]);
    result_row_begin(res, NULL);
    result_label(res, "mode", "b");
    result_metric_i64(res, "total", "", -v[0] * v[1]);
    return 0;
}
static void sec_free(void *s)
{
    free(s);
}

static void test_secondary_tables(void **state)
{
    (void)state;
    const struct model_ops *cm = model_registry_find("count");
    struct model_ops m = {.name = "count",
                          .workload = "test",
                          .schema = cm->schema,
                          .new = sec_new,
                          .consume = sec_consume,
                          .finish = sec_finish,
                          .free = sec_free};
    char full[512], part[512], pa[600], pb[600];
    subdir(full, sizeof full, "secfull");
    subdir(part, sizeof part, "secpart");
    struct record_source s;
    mem_source(&s);
    struct hw_config *base;
    assert_int_equal(hw_config_defaults(&base, cm->schema), 0);
    struct sweep *sw;
    struct errmsg e = {0};
    assert_int_equal(sweep_parse(&sw, "{\"scale\": {\"range\": [1, 12, 1]}}", "g", base, &e), 0);
    struct engine_opts o;
    engine_opts_default(&o);
    o.quiet = true;
    const char *dirs[] = {full, part};
    for (int d = 0; d < 2; d++) {
        struct results *res;
        if (d == 1) {
            /* part: first half, then tear ops.jsonl after a complete ops group of config 6 */
            assert_int_equal(results_open(&res, part, s.content_hash(s.ctx), "count", &e), 0);
            o.shard_i = 1;
            o.shard_n = 2;
            assert_int_equal(engine_run(&m, &s, sw, res, &o, NULL, &e), 0);
            results_close(res);
            snprintf(pa, sizeof pa, "%s/ops.jsonl", part);
            append_text(pa, "{\"trace_hash\":\"");
            o.shard_i = o.shard_n = 0;
        }
        assert_int_equal(results_open(&res, dirs[d], s.content_hash(s.ctx), "count", &e), 0);
        assert_int_equal(engine_run(&m, &s, sw, res, &o, NULL, &e), 0);
        results_close(res);
    }
    for (int k = 0; k < 2; k++) {
        const char *names[] = {"results", "ops"};
        for (int x = 0; x < 2; x++) {
            snprintf(pa, sizeof pa, "%s/%s.%s", full, names[k], x ? "jsonl" : "csv");
            snprintf(pb, sizeof pb, "%s/%s.%s", part, names[k], x ? "jsonl" : "csv");
            th_assert_same_file(pa, pb);
        }
    }
    size_t n;
    snprintf(pa, sizeof pa, "%s/ops.csv", full);
    char *text = th_slurp(pa, &n);
    int lines = 0;
    for (size_t i = 0; i < n; i++)
        lines += text[i] == '\n';
    assert_int_equal(lines, 1 + 12 * 3);
    free(text);
    sweep_free(sw);
    hw_config_free(base);
    record_source_close(&s);
}

/* A model failing on one config stops the run with a message naming the config; rows of
 * configs finished in earlier batches stay. A trace of another workload is refused. */
static int bad_new(void **s, const struct hw_config *c, const struct model_env *env,
                   struct errmsg *e)
{
    (void)env;
    (void)e;
    int64_t *v = calloc(1, sizeof *v);
    *v = hw_config_int(c, "scale");
    *s = v;
    return 0;
}
static int bad_consume(void *s, const struct model_record *r, struct errmsg *e)
{
    if (*(int64_t *)s == 5 && r->index == 17)
        return errmsg_set(e, ERR_DATA, "record 17 is not replayable");
    return 0;
}
static int bad_finish(void *s, struct model_result *res, struct errmsg *e)
{
    (void)e;
    result_row_begin(res, NULL);
    return result_metric_i64(res, "scale", "", *(int64_t *)s);
}

static void test_model_failure(void **state)
{
    (void)state;
    const struct model_ops *cm = model_registry_find("count");
    struct model_ops m = {.name = "count",
                          .workload = "test",
                          .schema = cm->schema,
                          .new = bad_new,
                          .consume = bad_consume,
                          .finish = bad_finish,
                          .free = sec_free};
    char dir[512];
    subdir(dir, sizeof dir, "fail");
    struct record_source s;
    mem_source(&s);
    struct hw_config *base;
    assert_int_equal(hw_config_defaults(&base, cm->schema), 0);
    struct sweep *sw;
    struct errmsg e = {0};
    assert_int_equal(sweep_parse(&sw, "{\"scale\": {\"range\": [1, 8, 1]}}", "g", base, &e), 0);
    struct engine_opts o;
    engine_opts_default(&o);
    o.quiet = true;
    o.batch_configs = 3;
    o.threads = 2;
    struct results *res;
    assert_int_equal(results_open(&res, dir, s.content_hash(s.ctx), "count", &e), 0);
    struct engine_stats st;
    assert_int_equal(engine_run(&m, &s, sw, res, &o, &st, &e), ERR_DATA);
    assert_non_null(strstr(e.text, "config 4"));
    assert_non_null(strstr(e.text, "record 17 is not replayable"));
    /* the engine names the source and the position, not the model */
    assert_non_null(strstr(e.text, "config 4 at record 17 (frame 18) of '(memory)'"));
    assert_int_equal(st.configs_run, 3);
    assert_int_equal(results_n_done(res), 3);
    results_close(res);
    /* the same through a trace file: its path */
    char path[512], fdir[512];
    snprintf(path, sizeof path, "%s/fail.atr", th_tmpdir());
    subdir(fdir, sizeof fdir, "fail_file");
    assert_int_equal(synth_capture_write(path, &tp, &e), 0);
    struct record_source fs;
    assert_int_equal(record_source_trace(&fs, path, 1, &e), 0);
    assert_int_equal(results_open(&res, fdir, fs.content_hash(fs.ctx), "count", &e), 0);
    assert_int_equal(engine_run(&m, &fs, sw, res, &o, &st, &e), ERR_DATA);
    char want[700];
    snprintf(want, sizeof want,
             "model 'count' fails on config 4 at record 17 (frame 18) of '%s': ", path);
    assert_non_null(strstr(e.text, want));
    results_close(res);
    record_source_close(&fs);
    /* another workload's trace */
    m.workload = "disc";
    assert_int_equal(results_open(&res, dir, s.content_hash(s.ctx), "count", &e), 0);
    assert_int_equal(engine_run(&m, &s, sw, res, &o, &st, &e), ERR_DATA);
    assert_non_null(strstr(e.text, "replays 'disc' traces"));
    results_close(res);
    sweep_free(sw);
    hw_config_free(base);
    record_source_close(&s);
}

/* A finish hook that drops its result_* errors: the row builder keeps the first one
 * (model.h) and the engine returns it with its message, naming the config. */
static int careless_finish(void *s, struct model_result *res, struct errmsg *e)
{
    (void)e;
    result_row_begin(res, NULL);
    result_metric_i64(res, "scale", "", *(int64_t *)s);
    if (*(int64_t *)s == 2)
        result_metric(res, "bad name", "", 1); /* a space: refused, and sticky */
    result_metric(res, "after", "", 2);
    return 0;
}

static void test_result_error_reaches_engine(void **state)
{
    (void)state;
    const struct model_ops *cm = model_registry_find("count");
    struct model_ops m = {.name = "count",
                          .workload = "test",
                          .schema = cm->schema,
                          .new = bad_new,
                          .consume = bad_consume, /* fails only for scale 5 */
                          .finish = careless_finish,
                          .free = sec_free};
    char dir[512];
    subdir(dir, sizeof dir, "careless");
    struct record_source s;
    mem_source(&s);
    struct hw_config *base;
    assert_int_equal(hw_config_defaults(&base, cm->schema), 0);
    struct sweep *sw;
    struct errmsg e = {0};
    assert_int_equal(sweep_parse(&sw, "{\"scale\": {\"range\": [1, 3, 1]}}", "g", base, &e), 0);
    struct engine_opts o;
    engine_opts_default(&o);
    o.quiet = true;
    o.threads = 1;
    struct results *res;
    assert_int_equal(results_open(&res, dir, s.content_hash(s.ctx), "count", &e), 0);
    assert_int_equal(engine_run(&m, &s, sw, res, &o, NULL, &e), ERR_USAGE);
    /* scale 2, 0-based index 1; finish fails after the last record */
    assert_non_null(strstr(e.text, "fails on config 1 at the end of '(memory)':"));
    assert_non_null(strstr(e.text, "bad result column name 'bad name'"));
    results_close(res);
    sweep_free(sw);
    hw_config_free(base);
    record_source_close(&s);
}

/* A failing allocation anywhere in a run returns an error, never crashes or leaks. */
static void test_alloc_failures(void **state)
{
    (void)state;
    char dir[512];
    for (long k = 1; k < 400; k += 7) {
        snprintf(dir, sizeof dir, "%s/af%ld", th_tmpdir(), k);
        struct record_source s;
        mem_source(&s);
        struct engine_opts o;
        engine_opts_default(&o);
        o.quiet = true;
        const struct model_ops *m = model_registry_find("count");
        struct hw_config *base;
        assert_int_equal(hw_config_defaults(&base, m->schema), 0);
        struct sweep *sw;
        struct errmsg e = {0};
        assert_int_equal(sweep_parse(&sw, "{\"scale\": [1, 2, 3]}", "g", base, &e), 0);
        struct results *res = NULL;
        mem_fail_after(k);
        int rc = results_open(&res, dir, s.content_hash(s.ctx), "count", &e);
        if (!rc)
            rc = engine_run(m, &s, sw, res, &o, NULL, &e);
        mem_fail_after(0);
        assert_true(rc == 0 || rc == ERR_NOMEM || rc == ERR_IO);
        results_close(res);
        sweep_free(sw);
        hw_config_free(base);
        record_source_close(&s);
    }
}

/* ---- checkpoints ---- */

/* The count model, killed (SIGKILL) when it is handed record kill_at; it notes the first
 * record it sees. One thread only (the globals are not shared between threads). */
static uint64_t kill_at = UINT64_MAX;
static uint64_t first_seen = UINT64_MAX;

static int kill_consume(void *s, const struct model_record *r, struct errmsg *e)
{
    if (r->index == kill_at)
        raise(SIGKILL);
    if (r->index < first_seen)
        first_seen = r->index;
    return model_registry_find("count")->consume(s, r, e);
}

static size_t count_lines(const char *path)
{
    size_t n = 0, len;
    char *t = th_slurp(path, &len);
    for (size_t i = 0; t && i < len; i++)
        n += t[i] == '\n';
    free(t);
    return n;
}

static bool exists(const char *dir, const char *name)
{
    char p[700];
    struct stat sb;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return stat(p, &sb) == 0;
}

static void assert_same_results(const char *a, const char *b)
{
    char pa[700], pb[700];
    snprintf(pa, sizeof pa, "%s/results.csv", a);
    snprintf(pb, sizeof pb, "%s/results.csv", b);
    th_assert_same_file(pa, pb);
    snprintf(pa, sizeof pa, "%s/results.jsonl", a);
    snprintf(pb, sizeof pb, "%s/results.jsonl", b);
    th_assert_same_file(pa, pb);
}

/* Runs the kill model on trace `path` into dir in a child that dies at record `at`. */
static void killed_run(const char *path, const char *dir, const struct engine_opts *o, uint64_t at)
{
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct model_ops km = *model_registry_find("count");
        km.consume = kill_consume;
        kill_at = at;
        struct record_source s;
        struct errmsg e = {0};
        if (record_source_trace(&s, path, 1, &e))
            _exit(2);
        run_model(&km, &s, dir, grid100, o, NULL);
        _exit(3); /* not reached: the model kills the process */
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGKILL);
}

static void ckpt_opts(struct engine_opts *o, const char *dir)
{
    engine_opts_default(o);
    o->quiet = true;
    o->threads = 1;
    o->group_records = 10;
    o->checkpoint_dir = dir;
    o->checkpoint_s = 0; /* by record count only: deterministic positions */
    o->checkpoint_records = 100;
}

/*
 * A single pass SIGKILLed at record 705 of 1000 left a checkpoint after record 700 and no
 * rows; the rerun loads it, reads the trace from there (trace_reader_seek) and ends with
 * the files of an uninterrupted run, the checkpoint removed.
 */
static void test_checkpoint_kill_resume(void **state)
{
    (void)state;
    char path[512], full[512], part[512];
    struct errmsg err = {0};
    snprintf(path, sizeof path, "%s/ck.atr", th_tmpdir());
    assert_int_equal(synth_capture_write(path, &tp, &err), 0);
    subdir(full, sizeof full, "ckfull");
    subdir(part, sizeof part, "ckpart");
    struct record_source s;
    struct errmsg e = {0};
    struct engine_opts o;
    struct engine_stats st;
    engine_opts_default(&o);
    o.quiet = true;
    assert_int_equal(record_source_trace(&s, path, 1, &e), 0);
    assert_int_equal(run(&s, full, grid100, &o, &st), 0);
    record_source_close(&s);

    ckpt_opts(&o, part);
    killed_run(path, part, &o, 705);
    assert_true(exists(part, "replay.ckpt"));
    assert_false(exists(part, "replay.ckpt.tmp"));
    char pj[700];
    snprintf(pj, sizeof pj, "%s/results.jsonl", part);
    assert_int_equal(count_lines(pj), 0);

    /* as a kill while a checkpoint was written leaves it: removed by the finished rerun */
    char tmp[700];
    snprintf(tmp, sizeof tmp, "%s/replay.ckpt.tmp", part);
    FILE *tf = fopen(tmp, "wb");
    assert_non_null(tf);
    fputs("ATCKPT01 cut", tf);
    fclose(tf);
    struct model_ops km = *model_registry_find("count");
    km.consume = kill_consume;
    kill_at = first_seen = UINT64_MAX;
    assert_int_equal(record_source_trace(&s, path, 1, &e), 0);
    assert_int_equal(run_model(&km, &s, part, grid100, &o, &st), 0);
    record_source_close(&s);
    assert_string_equal(st.note, "");
    assert_int_equal(st.resumed_records, 700);
    assert_int_equal(first_seen, 700);
    assert_int_equal(st.records, 300);
    assert_int_equal(st.passes, 1);
    assert_int_equal(st.configs_run, 100);
    assert_false(exists(part, "replay.ckpt"));
    assert_false(exists(part, "replay.ckpt.tmp"));
    assert_same_results(full, part);
    check_results(part, 100);
}

/* A damaged checkpoint is ignored with a note and the pass starts over. */
static void test_checkpoint_damaged_ignored(void **state)
{
    (void)state;
    char path[512], full[512], part[512], ck[700];
    snprintf(path, sizeof path, "%s/ck.atr", th_tmpdir()); /* from test_checkpoint_kill_resume */
    subdir(full, sizeof full, "ckfull");
    subdir(part, sizeof part, "ckbad");
    struct engine_opts o;
    struct engine_stats st;
    ckpt_opts(&o, part);
    killed_run(path, part, &o, 333);
    snprintf(ck, sizeof ck, "%s/replay.ckpt", part);
    FILE *f = fopen(ck, "r+b");
    assert_non_null(f);
    fseek(f, 40, SEEK_SET);
    int c = fgetc(f);
    fseek(f, 40, SEEK_SET);
    fputc(c ^ 0x10, f);
    fclose(f);
    struct record_source s;
    struct errmsg e = {0};
    assert_int_equal(record_source_trace(&s, path, 1, &e), 0);
    assert_int_equal(run(&s, part, grid100, &o, &st), 0);
    record_source_close(&s);
    assert_non_null(strstr(st.note, "bad checksum"));
    assert_int_equal(st.resumed_records, 0);
    assert_int_equal(st.records, 1000);
    assert_false(exists(part, "replay.ckpt"));
    assert_same_results(full, part);

    /* a checkpoint of other configs (the grid changed): ignored, the pass starts over */
    subdir(part, sizeof part, "ckother");
    ckpt_opts(&o, part);
    killed_run(path, part, &o, 333);
    assert_int_equal(record_source_trace(&s, path, 1, &e), 0);
    assert_int_equal(run(&s, part, "{\"scale\": [3, 4]}", &o, &st), 0);
    record_source_close(&s);
    assert_non_null(strstr(st.note, "not the ones left to replay"));
    assert_int_equal(st.resumed_records, 0);
    assert_int_equal(st.configs_run, 2);
    assert_false(exists(part, "replay.ckpt"));

    /* a checkpoint of another build (its model states may be laid out otherwise): ignored */
    subdir(part, sizeof part, "ckbuild");
    ckpt_opts(&o, part);
    o.build_id = "build-a";
    killed_run(path, part, &o, 333);
    o.build_id = "build-b";
    assert_int_equal(record_source_trace(&s, path, 1, &e), 0);
    assert_int_equal(run(&s, part, grid100, &o, &st), 0);
    record_source_close(&s);
    assert_non_null(strstr(st.note, "another build"));
    assert_int_equal(st.resumed_records, 0);
    assert_int_equal(st.records, 1000);
    assert_same_results(full, part);
}

/*
 * Models without save/load fall back to ENGINE_FALLBACK_PASSES batches when checkpoints
 * are asked for; the default batch follows the memory limit; neither changes the files.
 */
static void test_fallback_and_memory_batches(void **state)
{
    (void)state;
    char full[512], a[512], b[512], c[512];
    subdir(full, sizeof full, "bfull");
    subdir(a, sizeof a, "bnohooks");
    subdir(b, sizeof b, "bmem");
    subdir(c, sizeof c, "bdefault");
    struct record_source s;
    struct engine_opts o;
    struct engine_stats st;
    engine_opts_default(&o);
    o.quiet = true;
    mem_source(&s);
    assert_int_equal(run(&s, full, grid100, &o, &st), 0);
    assert_int_equal(st.passes, 1);
    assert_int_equal(st.batch_configs, 100);

    struct model_ops nh = *model_registry_find("count");
    nh.save = NULL;
    nh.load = NULL;
    o.checkpoint_dir = a;
    assert_int_equal(run_model(&nh, &s, a, grid100, &o, &st), 0);
    assert_int_equal(st.passes, ENGINE_FALLBACK_PASSES);
    assert_int_equal(st.batch_configs, 25);
    assert_int_equal(st.checkpoints, 0);
    assert_same_results(full, a);

    /* a limit of 10.5 times the per-instance estimate holds 10 instances per pass */
    const struct model_ops *cm = model_registry_find("count");
    struct hw_config *cfg;
    assert_int_equal(hw_config_defaults(&cfg, cm->schema), 0);
    o.checkpoint_dir = NULL;
    o.mem_limit_bytes = 21 * model_estimate_bytes(cm, cfg, s.header(s.ctx)) / 2;
    hw_config_free(cfg);
    assert_int_equal(run(&s, b, grid100, &o, &st), 0);
    assert_int_equal(st.batch_configs, 10);
    assert_int_equal(st.passes, 10);
    assert_same_results(full, b);

    /* with hooks, checkpoints on and the default limit: one pass, checkpoints written */
    o.mem_limit_bytes = 0;
    o.checkpoint_dir = c;
    o.checkpoint_s = 0;
    o.checkpoint_records = 200;
    o.group_records = 50; /* checkpoints fall at group ends */
    assert_int_equal(run(&s, c, grid100, &o, &st), 0);
    assert_int_equal(st.passes, 1);
    assert_int_equal(st.checkpoints, 4); /* after 200, 400, 600, 800 of 1000 records */
    assert_false(exists(c, "replay.ckpt"));
    assert_same_results(full, c);
    record_source_close(&s);
}

/* stop_after_s 0 stops at every checkpoint; the chain of reruns ends with the same files. */
static void test_stop_at_checkpoint_chain(void **state)
{
    (void)state;
    char full[512], d[512];
    subdir(full, sizeof full, "bfull"); /* from test_fallback_and_memory_batches */
    subdir(d, sizeof d, "chain");
    struct engine_opts o;
    struct engine_stats st;
    ckpt_opts(&o, d);
    o.checkpoint_records = 300;
    o.stop_after_s = 0;
    struct record_source s;
    mem_source(&s);
    size_t runs = 0;
    do {
        assert_int_equal(run(&s, d, grid100, &o, &st), 0);
        runs++;
        assert_int_equal(st.resumed_records, runs == 1 ? 0 : 300 * (runs - 1));
    } while (st.stopped && runs < 10);
    record_source_close(&s);
    assert_int_equal(runs, 4); /* stops after 300, 600, 900; the 4th run finishes */
    assert_false(exists(d, "replay.ckpt"));
    assert_same_results(full, d);
}

/* Seek to where an earlier reader stood: the same records follow, in both modes. */
static void test_reader_seek(void **state)
{
    (void)state;
    char path[512];
    struct errmsg err = {0};
    snprintf(path, sizeof path, "%s/ck.atr", th_tmpdir());
    for (int hashing = 0; hashing < 2; hashing++) {
        struct trace_reader_opts ro;
        trace_reader_opts_default(&ro);
        ro.compute_hash = hashing;
        struct trace_reader *r, *q;
        assert_int_equal(trace_reader_open(&r, path, &ro, &err), 0);
        Acceltrace__Record *rec;
        for (int i = 0; i < 37; i++) {
            assert_int_equal(trace_reader_next(r, &rec, NULL), 1);
            trace_record_free(rec);
        }
        uint64_t off = trace_reader_offset(r);
        assert_int_equal(trace_reader_open(&q, path, &ro, &err), 0);
        assert_int_equal(trace_reader_seek(q, off + 1, 38), ERR_DATA);
        trace_reader_free(q);
        assert_int_equal(trace_reader_open(&q, path, &ro, &err), 0);
        assert_int_equal(trace_reader_seek(q, off, 38), 0);
        for (int i = 37; i < (int)tp.n_records; i++) {
            Acceltrace__Record *a, *b;
            assert_int_equal(trace_reader_next(r, &a, NULL), 1);
            assert_int_equal(trace_reader_next(q, &b, NULL), 1);
            assert_int_equal(a->test->step, b->test->step);
            assert_int_equal(a->test->value, b->test->value);
            trace_record_free(a);
            trace_record_free(b);
        }
        assert_int_equal(trace_reader_next(q, &rec, NULL), 0);
        if (hashing) /* the skipped frames were hashed too: the end-of-stream check held */
            assert_string_equal(trace_reader_computed_hash(q), trace_reader_content_hash(q));
        assert_int_equal(trace_reader_seek(q, off, 38), ERR_USAGE);
        trace_reader_free(q);
        trace_reader_free(r);
    }
}

/* A sink the test owns: results kept by config index; done() for one hash; a failure. */
struct keep_sink {
    struct model_result *res[4];
    size_t calls, order[4];
    const char *done_hash; /* this config needs no replay */
    int fail_at;           /* rows() fails at this call (-1: never) */
};

static bool keep_done(void *ctx, const char *hash)
{
    const struct keep_sink *k = ctx;
    return k->done_hash && !strcmp(hash, k->done_hash);
}

static int keep_rows(void *ctx, const struct hw_config *cfg, size_t i, struct model_result **r,
                     const struct energy_table *energy, struct errmsg *e)
{
    (void)cfg;
    (void)energy;
    struct keep_sink *k = ctx;
    if ((int)k->calls == k->fail_at)
        return errmsg_set(e, ERR_IO, "sink refuses config %zu", i);
    k->order[k->calls++] = i;
    k->res[i] = *r; /* taken: the engine must not free it */
    *r = NULL;
    return 0;
}

/* engine_run_to: an explicit config list, one pass, each result to the sink in config
 * order; done() skips a config; a sink error stops the run with its message. */
static void test_sink_config_list(void **state)
{
    (void)state;
    const struct model_ops *m = model_registry_find("count");
    static const char *const json[3] = {
        "{\"model\": \"count\", \"scale\": 2}",
        "{\"model\": \"count\", \"scale\": 5, \"min_step\": 7}",
        "{\"model\": \"count\", \"scale\": 3}",
    };
    static const int64_t scale[3] = {2, 5, 3};
    static const uint64_t min_step[3] = {0, 7, 0};
    struct hw_config *cfg[3];
    struct errmsg e = {0};
    for (int i = 0; i < 3; i++)
        assert_int_equal(hw_config_parse(&cfg[i], json[i], "list", m->schema, &e), 0);
    const struct engine_configs configs = {NULL, cfg, 3};
    struct engine_opts o;
    engine_opts_default(&o);
    o.quiet = true;
    for (int round = 0; round < 3; round++) {
        struct keep_sink k = {.fail_at = -1};
        if (round == 1)
            k.done_hash = hw_config_hash(cfg[1]);
        if (round == 2)
            k.fail_at = 1;
        struct engine_sink sink = {&k, keep_done, keep_rows};
        struct record_source s;
        mem_source(&s);
        struct engine_stats st;
        int rc = engine_run_to(m, &s, &configs, &sink, &o, &st, &e);
        record_source_close(&s);
        if (round == 2) {
            assert_int_equal(rc, ERR_IO);
            assert_non_null(strstr(errmsg_text(&e), "sink refuses config"));
            assert_int_equal(k.calls, 1);
        } else {
            assert_int_equal(rc, 0);
            assert_int_equal(st.passes, 1);
            assert_int_equal(st.configs_skipped, round == 1 ? 1 : 0);
            assert_int_equal(k.calls, round == 1 ? 2 : 3);
            for (size_t c = 1; c < k.calls; c++) /* config order */
                assert_true(k.order[c] > k.order[c - 1]);
            for (int i = 0; i < 3; i++) {
                if (round == 1 && i == 1) {
                    assert_null(k.res[i]);
                    continue;
                }
                double sum, recs, want;
                uint64_t cnt;
                expected(scale[i], min_step[i], &want, &cnt);
                assert_non_null(k.res[i]);
                assert_int_equal(model_result_get(k.res[i], 0, "sum", &sum), 0);
                assert_int_equal(model_result_get(k.res[i], 0, "records", &recs), 0);
                assert_true(sum == want);
                assert_true(recs == (double)cnt);
            }
        }
        for (int i = 0; i < 3; i++)
            model_result_free(k.res[i]);
    }
    for (int i = 0; i < 3; i++)
        hw_config_free(cfg[i]);
}

int main(void)
{
    if (!th_tmpdir_make("engine"))
        return 1;
    synth_capture_params_default(&tp);
    tp.n_records = 1000;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hundred_configs_one_pass),
        cmocka_unit_test(test_trace_file_read_once),
        cmocka_unit_test(test_threads_batches_identical),
        cmocka_unit_test(test_resume_torn),
        cmocka_unit_test(test_shards_merge),
        cmocka_unit_test(test_mixed_traces_refused),
        cmocka_unit_test(test_energy),
        cmocka_unit_test(test_secondary_tables),
        cmocka_unit_test(test_model_failure),
        cmocka_unit_test(test_result_error_reaches_engine),
        cmocka_unit_test(test_alloc_failures),
        cmocka_unit_test(test_checkpoint_kill_resume),
        cmocka_unit_test(test_checkpoint_damaged_ignored),
        cmocka_unit_test(test_fallback_and_memory_batches),
        cmocka_unit_test(test_stop_at_checkpoint_chain),
        cmocka_unit_test(test_reader_seek),
        cmocka_unit_test(test_sink_config_list),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    if (rc == 0 && th_tmpdir_remove() != 0)
        return 1;
    return rc;
}
