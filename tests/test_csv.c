/*
 * Tests of formats/csv's fixed-decimal field (csv_f64_fixed, the analyzers' columns of a
 * promised precision) beside the shortest form of csv_f64, through a memory writer; and
 * the reason a failed write keeps (csv_writer_errno, errno after the close) on /dev/full.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/buf.h"
#include "formats/csv.h"

static void test_fixed(void **state)
{
    (void)state;
    struct buf b;
    buf_init(&b);
    struct csv_writer *w;
    assert_int_equal(csv_writer_mem(&w, &b), 0);
    assert_int_equal(csv_f64_fixed(w, 0.5, 6), 0);
    assert_int_equal(csv_f64_fixed(w, 2.0 / 3.0, 4), 0);
    assert_int_equal(csv_f64_fixed(w, 1.0e-9, 8), 0);
    assert_int_equal(csv_f64_fixed(w, -1.25, 0), 0); /* printf rounds half to even */
    assert_int_equal(csv_f64(w, 0.5), 0);
    assert_int_equal(csv_end_row(w), 0);
    assert_int_equal(csv_writer_close(w), 0);
    const char want[] = "0.500000,0.6667,0.00000000,-1,0.5\n";
    assert_int_equal(b.len, strlen(want));
    assert_memory_equal(b.data, want, b.len);
    buf_release(&b);
}

/* A write that fails keeps its reason: csv_writer_errno, and errno after the close. */
static void test_write_error_reason(void **state)
{
    (void)state;
    struct csv_writer *w;
    struct errmsg e = {0};
    if (csv_writer_open(&w, "/dev/full", false, &e) != 0)
        skip(); /* no /dev/full here */
    assert_int_equal(csv_writer_errno(w), 0);
    assert_int_equal(csv_str(w, "x"), 0);
    assert_int_equal(csv_end_row(w), ERR_IO);
    assert_int_equal(csv_writer_errno(w), ENOSPC);
    errno = 0;
    assert_int_equal(csv_writer_close(w), ERR_IO);
    assert_int_equal(errno, ENOSPC);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixed),
        cmocka_unit_test(test_write_error_reason),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
