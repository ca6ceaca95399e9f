/*
 * test_reproduce: the row table of `acceltrace reproduce` (analysis/reproduce.h). The label
 * rule: a row's status must be the one its origin (the code path that computed it) admits,
 * so a number whose parameter was solved for it cannot be labelled predicted; calibrated and
 * not-modelled rows need a basis. Also the ratio, the two files and the folder rule. The
 * SA-Kura run (analytic, instant) is checked for solver-labelled rows.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "analysis/reproduce.h"
#include "common/io.h"
#include "common/mem.h"

static int put(struct repro_table *t, enum repro_origin o, enum repro_status s, const char *basis,
               struct errmsg *e)
{
    return repro_put(t, "kura", "q", "c", 1.0, NAN, NAN, 2.0, "x", o, s, "acceltrace x", e, "%s",
                     basis);
}

static void test_label_rule(void **state)
{
    (void)state;
    struct repro_table t;
    struct errmsg e = {0};
    repro_table_init(&t);
    /* a solved number may only be calibrated */
    assert_int_equal(put(&t, REPRO_FROM_SOLVER, REPRO_PREDICTED, "t_marsh", &e), ERR_INTERNAL);
    assert_non_null(strstr(e.text, "labelled predicted"));
    assert_int_equal(put(&t, REPRO_FROM_SOLVER, REPRO_RECOMPUTED, "t_marsh", &e), ERR_INTERNAL);
    assert_int_equal(put(&t, REPRO_FROM_SOLVER, REPRO_CALIBRATED, "t_marsh", &e), 0);
    /* calibrated needs the parameter named */
    assert_int_equal(put(&t, REPRO_FROM_SOLVER, REPRO_CALIBRATED, "", &e), ERR_INTERNAL);
    /* each origin admits exactly one status */
    for (int o = 0; o < 5; o++)
        for (int s = 0; s < REPRO_STATUS_COUNT; s++) {
            int rc = repro_put(&t, "disc", "q", "c", 1, NAN, NAN, s == REPRO_NOT_MODELLED ? NAN : 1,
                               "x", (enum repro_origin)o, (enum repro_status)s,
                               s == REPRO_NOT_MODELLED ? "" : "cmd", &e, "basis");
            assert_int_equal(rc == 0, (int)repro_origin_status((enum repro_origin)o) == s);
        }
    /* a modelled row needs a value */
    assert_int_equal(repro_put(&t, "disc", "q", "c", 1, NAN, NAN, NAN, "x", REPRO_FROM_MODEL,
                               REPRO_PREDICTED, "cmd", &e, "b"),
                     ERR_INTERNAL);
    assert_string_equal(repro_status_name(REPRO_NOT_MODELLED), "not-modelled");
    assert_string_equal(repro_status_name(99), "?");
    repro_table_release(&t);
}

static void test_ratio(void **state)
{
    (void)state;
    struct repro_row r;
    memset(&r, 0, sizeof r);
    r.paper_value = 2.0, r.paper_lo = NAN, r.paper_hi = NAN, r.ours = 3.0;
    assert_true(fabs(repro_ratio(&r) - 1.5) < 1e-12);
    r.paper_value = NAN, r.paper_lo = 2.0, r.paper_hi = 4.0; /* midpoint 3 */
    assert_true(fabs(repro_ratio(&r) - 1.0) < 1e-12);
    r.paper_lo = NAN;
    assert_true(isnan(repro_ratio(&r)));
}

/* The SA-Kura rows: 641.3 us comes out of the t_marsh solve, so it is calibrated. */
static void test_kura_rows(void **state)
{
    (void)state;
    struct repro_table t;
    struct errmsg e = {0};
    struct repro_opts o = {
        .quick = true, .work = "/nonexistent", .root = ".", .threads = 1, .quiet = true};
    repro_table_init(&t);
    assert_int_equal(reproduce_kura(&t, &o, &e), 0);
    int seen = 0;
    for (size_t i = 0; i < t.n; i++) {
        const struct repro_row *r = &t.rows[i];
        assert_int_not_equal(r->status, REPRO_PREDICTED); /* every kura headline is solved */
        if (strstr(r->quantity, "system latency")) {
            assert_int_equal(r->status, REPRO_CALIBRATED);
            assert_non_null(strstr(r->basis, "t_marsh"));
            assert_true(fabs(r->ours - 641.3) < 1e-9);
            seen++;
        }
        if (strstr(r->quantity, "within 4 mm2")) {
            assert_true(fabs(r->ours - 225) < 1e-9); /* H15W15 */
            seen++;
        }
    }
    assert_int_equal(seen, 2);
    repro_table_release(&t);
}

static void test_files_and_folder(void **state)
{
    (void)state;
    char dir[] = "/tmp/test_reproduce_XXXXXX";
    assert_non_null(mkdtemp(dir));
    struct repro_table t;
    struct errmsg e = {0};
    repro_table_init(&t);
    assert_int_equal(repro_put(&t, "salca", "a, \"quoted\" | piped", "c", 2.18, NAN, NAN, 1.6, "1",
                               REPRO_FROM_MODEL, REPRO_PREDICTED, "acceltrace y", &e, "b"),
                     0);
    assert_int_equal(repro_dir_prepare(dir, &e), 0);
    assert_int_equal(repro_table_write(&t, dir, "T", NULL, &e), 0);
    char path[256], *text = NULL;
    size_t len = 0;
    snprintf(path, sizeof path, "%s/reproduce.csv", dir);
    assert_int_equal(io_read_file(path, 1 << 20, &text, &len, &e), 0);
    assert_non_null(strstr(text, "paper_id,quantity,condition,paper_value,paper_lo,paper_hi,"
                                 "ours,unit,ratio,status,basis,command\n"));
    assert_non_null(strstr(text, "\"a, \"\"quoted\"\" | piped\""));
    assert_non_null(strstr(text, ",predicted,"));
    mem_free(text);
    snprintf(path, sizeof path, "%s/reproduce.md", dir);
    assert_int_equal(io_read_file(path, 1 << 20, &text, &len, &e), 0);
    assert_non_null(strstr(text, "a, \"quoted\" \\| piped"));
    mem_free(text);
    /* a rerun into the same folder is fine; a foreign non-empty folder is refused */
    assert_int_equal(repro_dir_prepare(dir, &e), 0);
    snprintf(path, sizeof path, "%s/foreign", dir);
    assert_int_equal(mkdir(path, 0755), 0);
    char keep[300];
    snprintf(keep, sizeof keep, "%s/notes.txt", path);
    FILE *f = fopen(keep, "w");
    assert_non_null(f);
    fclose(f);
    assert_int_equal(repro_dir_prepare(path, &e), ERR_USAGE);
    assert_non_null(strstr(e.text, "not made by acceltrace reproduce"));
    repro_table_release(&t);
    assert_int_equal(io_remove_tree(dir), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_label_rule),
        cmocka_unit_test(test_ratio),
        cmocka_unit_test(test_kura_rows),
        cmocka_unit_test(test_files_and_folder),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
