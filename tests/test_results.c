/*
 * Tests of the result tables: formats/csv (quoting, shortest round-trip numbers, reader
 * with torn last rows), formats/jsonl, the model_result row API (names, tables, values),
 * results folders refusing changed columns, and merge refusing torn or overlapping shards;
 * the folder lock, resume refusing corrupt middle lines and saying what it drops, manifests
 * refusing changed runs, merge streaming in config order through temporaries.
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
#include <math.h>

#include "common/io.h"
#include "common/mem.h"
#include "formats/csv.h"
#include "formats/jsonl.h"
#include "replay/model_registry.h"
#include "replay/results.h"
#include "tests/helpers/test_helpers.h"

static void test_csv_format(void **state)
{
    (void)state;
    char b[40];
    csv_format_f64(0.1, b, sizeof b);
    assert_string_equal(b, "0.1");
    csv_format_f64(2000, b, sizeof b);
    assert_string_equal(b, "2000");
    csv_format_f64(-0.0, b, sizeof b);
    assert_string_equal(b, "0");
    csv_format_f64(1e20, b, sizeof b);
    assert_string_equal(b, "1e+20");
    csv_format_f64(1.0 / 3.0, b, sizeof b);
    assert_true(strtod(b, NULL) == 1.0 / 3.0);
    csv_format_f64(NAN, b, sizeof b);
    assert_string_equal(b, "nan");
    csv_format_f64(-INFINITY, b, sizeof b);
    assert_string_equal(b, "-inf");
    /* every double of a pseudo-random walk reads back exactly */
    double x = 0.7;
    for (int i = 0; i < 1000; i++) {
        x = x * 3.7 - floor(x * 3.7) + i * 1e-3;
        csv_format_f64(x * 1e-5, b, sizeof b);
        assert_true(strtod(b, NULL) == x * 1e-5);
    }
}

static void test_csv_write_read(void **state)
{
    (void)state;
    struct buf mem;
    buf_init(&mem);
    struct csv_writer *w;
    assert_int_equal(csv_writer_mem(&w, &mem), 0);
    csv_str(w, "name");
    csv_str(w, "note [text]");
    csv_end_row(w);
    csv_str(w, "a,b");
    csv_str(w, "say \"hi\"");
    csv_end_row(w);
    csv_i64(w, -5);
    csv_u64(w, 18446744073709551615ULL);
    csv_end_row(w);
    assert_int_equal(csv_writer_close(w), 0);
    const char *want = "name,note [text]\n\"a,b\",\"say \"\"hi\"\"\"\n-5,18446744073709551615\n";
    assert_int_equal(mem.len, strlen(want));
    assert_memory_equal(mem.data, want, mem.len);
    struct csv_table t;
    struct errmsg e = {0};
    /* a torn last row is dropped */
    buf_append(&mem, "x,y", 3);
    assert_int_equal(csv_table_parse(&t, (char *)mem.data, mem.len, "m", true, &e), 0);
    assert_int_equal(t.n_rows, 2);
    assert_string_equal(t.rows[0][0], "a,b");
    assert_string_equal(t.rows[0][1], "say \"hi\"");
    assert_int_equal(csv_table_col(&t, "note"), 1);
    assert_int_equal(csv_table_col(&t, "note [text]"), 1);
    assert_int_equal(csv_table_col(&t, "nope"), -1);
    csv_table_release(&t);
    /* kept when not dropping; a row of the wrong width is an error with its line */
    assert_int_equal(csv_table_parse(&t, "a,b\n1\n", 6, "m", false, &e), ERR_DATA);
    assert_non_null(strstr(e.text, "line 2"));
    char nm[32], un[32];
    csv_split_unit("e_px [pJ/px]", nm, sizeof nm, un, sizeof un);
    assert_string_equal(nm, "e_px");
    assert_string_equal(un, "pJ/px");
    buf_release(&mem);
}

static void test_jsonl(void **state)
{
    (void)state;
    char p[512];
    snprintf(p, sizeof p, "%s/x.jsonl", th_tmpdir());
    struct jsonl_writer *w;
    struct errmsg e = {0};
    assert_int_equal(jsonl_writer_open(&w, p, false, &e), 0);
    json_t *o = json_pack("{s:i, s:f}", "a", 1, "b", 0.1);
    assert_int_equal(jsonl_write(w, o), 0);
    assert_int_equal(jsonl_write(w, o), 0);
    json_decref(o);
    assert_int_equal(jsonl_writer_close(w), 0);
    FILE *f = fopen(p, "a");
    fputs("{\"a\":", f);
    fclose(f);
    json_t *arr;
    size_t valid;
    assert_int_equal(jsonl_load(&arr, p, &valid, &e), 0);
    assert_int_equal(json_array_size(arr), 2);
    assert_int_equal(valid, 2 * strlen("{\"a\":1,\"b\":0.10000000000000001}\n"));
    json_decref(arr);
    f = fopen(p, "a");
    fputs("\n", f);
    fclose(f);
    assert_int_equal(jsonl_load(&arr, p, NULL, &e), ERR_DATA);
    assert_non_null(strstr(e.text, "line 3"));
}

static void test_model_result_api(void **state)
{
    (void)state;
    /* each misuse on its own result: the first error is sticky (model.h) */
    struct model_result *r = model_result_new();
    assert_int_equal(result_count(r, "x", "B", 1), ERR_USAGE); /* no row yet */
    model_result_free(r);
    r = model_result_new();
    assert_int_equal(result_row_begin(r, "Bad-Name"), ERR_USAGE);
    model_result_free(r);
    r = model_result_new();
    assert_int_equal(result_row_begin(r, NULL), 0);
    assert_int_equal(result_label(r, "mode", "a\nb"), 0);
    assert_int_equal(result_count(r, "hbm_bytes", "B", 12345678901234ULL), 0);
    assert_int_equal(result_metric(r, "seconds", "s", 0.25), 0);
    assert_int_equal(result_err(r, NULL), 0);
    assert_int_equal(result_metric(r, "bad,name", "s", 0.25), ERR_USAGE);
    assert_int_equal(model_result_rows(r), 1);
    double v;
    assert_int_equal(model_result_get(r, 0, "hbm_bytes", &v), 0);
    assert_true(v == 12345678901234.0);
    assert_int_equal(model_result_get(r, 0, "mode", &v), ERR_NOTFOUND);
    assert_int_equal(model_result_get(r, 1, "seconds", &v), ERR_NOTFOUND);
    model_result_free(r);
}

/* The first error of a row is kept: later result_* calls are no-ops returning it, and
 * result_err / results_append report it with its message. */
static void test_model_result_sticky_error(void **state)
{
    (void)state;
    struct errmsg e = {0};
    struct model_result *r = model_result_new();
    assert_int_equal(result_row_begin(r, NULL), 0);
    assert_int_equal(result_count(r, "cycles", "cycles", 7), 0);
    assert_int_equal(result_row_begin(r, "Ops"), ERR_USAGE); /* bad table name mid-way */
    /* later calls, valid or not, change nothing and return the first error */
    assert_int_equal(result_row_begin(r, "ops"), ERR_USAGE);
    assert_int_equal(result_count(r, "macs", "MAC", 1), ERR_USAGE);
    assert_int_equal(result_metric(r, "bad,name", "s", 1), ERR_USAGE);
    assert_int_equal(result_label(r, "mode", "ctr"), ERR_USAGE);
    assert_int_equal(result_metric_i64(r, "steps", "", 3), ERR_USAGE);
    assert_int_equal(result_count_f64(r, "avg", "B", 0.5), ERR_USAGE);
    assert_int_equal(model_result_rows(r), 1);
    double v;
    assert_int_equal(model_result_get(r, 0, "cycles", &v), 0);
    assert_true(v == 7.0);
    assert_int_equal(model_result_get(r, 0, "macs", &v), ERR_NOTFOUND);
    assert_int_equal(model_result_get(r, 0, "steps", &v), ERR_NOTFOUND);
    assert_int_equal(result_err(r, &e), ERR_USAGE);
    assert_int_equal(e.code, ERR_USAGE);
    assert_string_equal(e.text, "bad result table name 'Ops' (it must be [a-z0-9_]+)");
    /* the writer refuses a result holding an error, with that message */
    const struct model_ops *m = model_registry_find("count");
    struct hw_config *c;
    assert_int_equal(hw_config_defaults(&c, m->schema), 0);
    char dir[512];
    snprintf(dir, sizeof dir, "%s/sticky", th_tmpdir());
    struct results *res;
    assert_int_equal(results_open(&res, dir, "th", "count", &e), 0);
    memset(&e, 0, sizeof e);
    assert_int_equal(results_append(res, c, 0, r, NULL, &e), ERR_USAGE);
    assert_string_equal(e.text, "bad result table name 'Ops' (it must be [a-z0-9_]+)");
    assert_false(results_done(res, hw_config_hash(c)));
    results_close(res);
    hw_config_free(c);
    model_result_free(r);

    /* an allocation failure in the middle of a row (the hooks of common/mem.h) */
    r = model_result_new();
    assert_int_equal(result_row_begin(r, NULL), 0);
    assert_int_equal(result_label(r, "mode", "ctr"), 0);
    mem_fail_after(1); /* from the next allocation (column 3's name) on, all fail */
    int rc = result_count(r, "hbm_bytes", "B", 5);
    mem_fail_after(0);
    assert_int_equal(rc, ERR_NOMEM);
    assert_int_equal(result_count(r, "sram_bytes", "B", 6), ERR_NOMEM); /* no-op now */
    assert_int_equal(result_row_begin(r, "ops"), ERR_NOMEM);
    assert_int_equal(model_result_rows(r), 1);
    assert_int_equal(model_result_get(r, 0, "sram_bytes", &v), ERR_NOTFOUND);
    memset(&e, 0, sizeof e);
    assert_int_equal(result_err(r, &e), ERR_NOMEM);
    /* no memory was left for the detailed message either: the fixed one */
    assert_string_equal(e.text, "out of memory adding a result column");
    model_result_free(r);
}

static struct model_result *one_row(const char *metric, double v)
{
    struct model_result *r = model_result_new();
    result_row_begin(r, NULL);
    result_metric(r, metric, "", v);
    return r;
}

static void test_changed_columns_refused(void **state)
{
    (void)state;
    const struct model_ops *m = model_registry_find("count");
    struct hw_config *c;
    assert_int_equal(hw_config_defaults(&c, m->schema), 0);
    char dir[512];
    snprintf(dir, sizeof dir, "%s/cols", th_tmpdir());
    struct results *res;
    struct errmsg e = {0};
    assert_int_equal(results_open(&res, dir, "th", "count", &e), 0);
    struct model_result *r = one_row("a", 1);
    assert_int_equal(results_append(res, c, 0, r, NULL, &e), 0);
    model_result_free(r);
    assert_true(results_done(res, hw_config_hash(c)));
    /* a second config whose row has other columns: internal error, nothing written */
    assert_int_equal(hw_config_set_json(c, "scale", "2", "t", &e), 0);
    r = one_row("b", 1);
    assert_int_equal(results_append(res, c, 1, r, NULL, &e), ERR_INTERNAL);
    model_result_free(r);
    /* no main row at all */
    r = model_result_new();
    result_row_begin(r, "side");
    result_metric(r, "a", "", 1);
    assert_int_equal(results_append(res, c, 1, r, NULL, &e), ERR_INTERNAL);
    model_result_free(r);
    results_close(res);
    /* reopening with other columns (another model version) is a usage error */
    assert_int_equal(results_open(&res, dir, "th", "count", &e), 0);
    assert_int_equal(results_n_done(res), 1);
    r = one_row("zzz", 1);
    assert_int_equal(results_append(res, c, 1, r, NULL, &e), ERR_USAGE);
    assert_non_null(strstr(e.text, "use another -o folder"));
    model_result_free(r);
    results_close(res);
    hw_config_free(c);
}

static void test_merge_torn_refused(void **state)
{
    (void)state;
    const struct model_ops *m = model_registry_find("count");
    struct hw_config *c;
    assert_int_equal(hw_config_defaults(&c, m->schema), 0);
    char a[512], b[512], o[512], p[600];
    snprintf(a, sizeof a, "%s/ma", th_tmpdir());
    snprintf(b, sizeof b, "%s/mb", th_tmpdir());
    snprintf(o, sizeof o, "%s/mo", th_tmpdir());
    struct errmsg e = {0};
    const char *dirs[] = {a, b};
    for (int d = 0; d < 2; d++) {
        struct results *res;
        assert_int_equal(results_open(&res, dirs[d], "th", "count", &e), 0);
        char v[16];
        snprintf(v, sizeof v, "%d", d + 1);
        hw_config_set_json(c, "scale", v, "t", &e);
        struct model_result *r = one_row("a", d);
        assert_int_equal(results_append(res, c, (size_t)d, r, NULL, &e), 0);
        model_result_free(r);
        results_close(res);
    }
    assert_int_equal(results_merge(dirs, 2, o, &e), 0);
    snprintf(p, sizeof p, "%s/results.jsonl", b);
    FILE *f = fopen(p, "a");
    fputs("{\"torn", f);
    fclose(f);
    assert_int_equal(results_merge(dirs, 2, o, &e), ERR_DATA);
    assert_non_null(strstr(e.text, "torn"));
    hw_config_free(c);
}

/* Writes configs scale=1..n (config_index 0..n-1) into dir through results_open. */
static void write_configs(const char *dir, size_t from, size_t n)
{
    const struct model_ops *m = model_registry_find("count");
    struct hw_config *c;
    assert_int_equal(hw_config_defaults(&c, m->schema), 0);
    struct results *res;
    struct errmsg e = {0};
    assert_int_equal(results_open(&res, dir, "th", "count", &e), 0);
    for (size_t i = from; i < from + n; i++) {
        char v[24];
        snprintf(v, sizeof v, "%zu", i + 1);
        assert_int_equal(hw_config_set_json(c, "scale", v, "t", &e), 0);
        struct model_result *r = one_row("a", (double)i);
        assert_int_equal(results_append(res, c, i, r, NULL, &e), 0);
        model_result_free(r);
    }
    assert_int_equal(results_close(res), 0);
    hw_config_free(c);
}

/* Replaces line `line` (1-based) of path with text. */
static void replace_line(const char *path, size_t line, const char *text)
{
    char *all;
    size_t n;
    struct errmsg e = {0};
    assert_int_equal(io_read_file(path, 1 << 20, &all, &n, &e), 0);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    size_t l = 1;
    for (size_t i = 0; i < n; i++) {
        if (l == line) {
            fputs(text, f);
            while (i < n && all[i] != '\n')
                i++;
            if (i < n)
                fputc('\n', f);
            l++;
            continue;
        }
        fputc(all[i], f);
        if (all[i] == '\n')
            l++;
    }
    fclose(f);
    mem_free(all);
}

/* A second writer of an open folder is refused naming the folder and the holder. */
static void test_lock_second_writer_refused(void **state)
{
    (void)state;
    char dir[512], want[600];
    snprintf(dir, sizeof dir, "%s/lock", th_tmpdir());
    struct results *a, *b;
    struct errmsg e = {0};
    assert_int_equal(results_open(&a, dir, "th", "count", &e), 0);
    assert_int_equal(results_open(&b, dir, "th", "count", &e), ERR_USAGE);
    snprintf(want, sizeof want,
             "results folder '%s' is in use by another writer (pid %ld, "
             "acceltrace replay)",
             dir, (long)getpid());
    assert_non_null(strstr(e.text, want));
    int fd;
    assert_int_equal(results_lock(dir, false, "merge", &fd, &e), ERR_USAGE); /* readers too */
    results_close(a);
    assert_int_equal(results_lock(dir, false, "merge", &fd, &e), 0);
    results_unlock(fd);
    assert_int_equal(results_open(&b, dir, "th", "count", &e), 0);
    results_close(b);
}

/* A corrupt line with rows after it is refused (file and line); a torn tail is dropped
 * and reported. */
static void test_resume_corrupt_and_torn(void **state)
{
    (void)state;
    char dir[512], p[600], c[600];
    snprintf(dir, sizeof dir, "%s/resume", th_tmpdir());
    snprintf(p, sizeof p, "%s/results.jsonl", dir);
    snprintf(c, sizeof c, "%s/results.csv", dir);
    write_configs(dir, 0, 4);
    replace_line(p, 2, "{\"trace_hash\": 1}");
    struct results *res;
    struct errmsg e = {0};
    assert_int_equal(results_open(&res, dir, "th", "count", &e), ERR_DATA);
    char want[1400];
    snprintf(want, sizeof want, "corrupt row ('%s' line 2)", p);
    assert_non_null(strstr(e.text, want));
    /* the file was not trimmed */
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    assert_true(st.st_size > 100);
    /* only the last line damaged, without newline: dropped, and said */
    io_remove_tree(dir);
    write_configs(dir, 0, 4);
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(truncate(p, st.st_size - 5), 0);
    assert_int_equal(results_open(&res, dir, "th", "count", &e), 0);
    assert_int_equal(results_n_done(res), 3);
    assert_non_null(results_dropped(res));
    snprintf(want, sizeof want, "'%s': a torn last line (line 4); '%s': 1 row(s) from line 5 on", p,
             c);
    assert_string_equal(results_dropped(res), want);
    results_close(res);
    /* a CSV row whose keys are not its JSON line's */
    replace_line(c, 3, "th,0000000000000000,1,count,x");
    assert_int_equal(results_open(&res, dir, "th", "count", &e), ERR_DATA);
    assert_non_null(strstr(e.text, "line 3 differ from"));
    io_remove_tree(dir);
}

/* A rerun whose manifest differs is refused naming the field, before anything is touched. */
static void test_manifest_refuses_changes(void **state)
{
    (void)state;
    char dir[512];
    snprintf(dir, sizeof dir, "%s/manifest", th_tmpdir());
    struct results_manifest m = {.version = "1",
                                 .model = "count",
                                 .trace_hash = "th",
                                 .config_hash = "c1",
                                 .grid_hash = "g1",
                                 .n_configs = 100};
    struct results *res;
    struct errmsg e = {0};
    assert_int_equal(results_open_manifest(&res, dir, &m, &e), 0);
    results_close(res);
    assert_int_equal(results_open_manifest(&res, dir, &m, &e), 0);
    results_close(res);
    struct results_manifest m2 = m;
    m2.grid_hash = "g2";
    m2.n_configs = 64;
    assert_int_equal(results_open_manifest(&res, dir, &m2, &e), ERR_USAGE);
    assert_non_null(strstr(e.text, "sweep grid (g1, now g2), number of configs (100, now 64)"));
    m2 = m;
    m2.energy_hash = "e1";
    m2.energy_path = "E.json";
    assert_int_equal(results_open_manifest(&res, dir, &m2, &e), ERR_USAGE);
    assert_non_null(strstr(e.text, "energy table (none, now 'E.json')"));
    assert_non_null(strstr(e.text, "acceltrace energy DIR --table E.json"));
    io_remove_tree(dir);
}

/* Merge streams folders in config order: rows out of order are refused, a failed merge
 * leaves the previous output and no temporaries. */
static void test_merge_order_and_temporaries(void **state)
{
    (void)state;
    char a[512], b[512], o[512], p[600];
    snprintf(a, sizeof a, "%s/oa", th_tmpdir());
    snprintf(b, sizeof b, "%s/ob", th_tmpdir());
    snprintf(o, sizeof o, "%s/oo", th_tmpdir());
    write_configs(a, 0, 3);
    write_configs(b, 3, 3);
    const char *dirs[] = {b, a};
    struct errmsg e = {0};
    assert_int_equal(results_merge(dirs, 2, o, &e), 0);
    snprintf(p, sizeof p, "%s/results.jsonl", o);
    char *all;
    size_t n;
    assert_int_equal(io_read_file(p, 1 << 20, &all, &n, &e), 0);
    const char *q = all;
    for (int i = 0; i < 6; i++) { /* config_index 0..5 in order */
        char key[40];
        snprintf(key, sizeof key, "\"config_index\":%d,", i);
        q = strstr(q, key);
        assert_non_null(q);
    }
    mem_free(all);
    /* b written again out of order (config 5 before 3): refused, output unchanged */
    io_remove_tree(b);
    write_configs(b, 5, 1);
    write_configs(b, 3, 1);
    struct stat before, after;
    assert_int_equal(stat(p, &before), 0);
    assert_int_equal(results_merge(dirs, 2, o, &e), ERR_DATA);
    assert_non_null(strstr(e.text, "not in config order"));
    assert_int_equal(stat(p, &after), 0);
    assert_int_equal(before.st_size, after.st_size);
    snprintf(p, sizeof p, "%s/.results.csv.tmp", o);
    assert_int_equal(access(p, F_OK), -1);
    /* energy columns: a model's energy_* metric is not one */
    assert_true(energy_is_column("energy_j", "J"));
    assert_true(energy_is_column("energy_hbm_j", "J"));
    assert_false(energy_is_column("energy_gain_vs_dense", "1"));
    assert_false(energy_is_column("energy_j", NULL));
    io_remove_tree(a);
    io_remove_tree(b);
    io_remove_tree(o);
}

int main(void)
{
    if (!th_tmpdir_make("results"))
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_csv_format),
        cmocka_unit_test(test_csv_write_read),
        cmocka_unit_test(test_jsonl),
        cmocka_unit_test(test_model_result_api),
        cmocka_unit_test(test_model_result_sticky_error),
        cmocka_unit_test(test_changed_columns_refused),
        cmocka_unit_test(test_merge_torn_refused),
        cmocka_unit_test(test_lock_second_writer_refused),
        cmocka_unit_test(test_resume_corrupt_and_torn),
        cmocka_unit_test(test_manifest_refuses_changes),
        cmocka_unit_test(test_merge_order_and_temporaries),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    if (th_tmpdir_remove() != 0)
        return 1;
    return rc;
}
