/*
 * Tests of formats/npz on golden files made by numpy 1.24 (tests/golden/ok/npz_*.npz must
 * read back, tests/golden/bad/npz_*.npz must fail with the named error):
 *   np.savez("npz_stored.npz", a=np.array([[True, False, True], [False, False, True]]),
 *            b=np.array([-3, 70000, -(2**40)], np.int64))
 *   np.savez_compressed("npz_deflated.npz", c=np.arange(-5, 300, dtype=">i2"),
 *                       u=np.array([0, 255, 7], np.uint8))
 *   np.savez("npz_fortran.npz", f=np.asfortranarray(np.ones((2, 3), np.int32)))
 *   np.savez("npz_floats.npz", x=np.ones(3))
 *   npz_corrupt.npz: npz_deflated.npz with one byte of c's deflate stream flipped;
 *   npz_truncated.npz: the first 300 bytes of npz_stored.npz.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/err.h"
#include "formats/npz.h"

#define OK "tests/golden/ok/"
#define BAD "tests/golden/bad/"

static void test_stored(void **state)
{
    (void)state;
    struct errmsg e = {0};
    struct npz_array *a = NULL;
    assert_int_equal(npz_array_open(&a, OK "npz_stored.npz", "a", &e), 0);
    assert_int_equal(npz_array_ndim(a), 2);
    assert_int_equal(npz_array_shape(a)[0], 2);
    assert_int_equal(npz_array_shape(a)[1], 3);
    assert_true(npz_array_is_bool(a));
    int64_t v[6];
    assert_int_equal(npz_array_read(a, v, 4, &e), 0);
    assert_int_equal(npz_array_read(a, v + 4, 2, &e), 0);
    const int64_t want[6] = {1, 0, 1, 0, 0, 1};
    assert_memory_equal(v, want, sizeof want);
    assert_int_equal(npz_array_read(a, v, 1, &e), ERR_DATA); /* past the end */
    npz_array_close(a);
    assert_int_equal(npz_array_open(&a, OK "npz_stored.npz", "b", &e), 0);
    assert_string_equal(npz_array_dtype(a), "<i8");
    assert_int_equal(npz_array_read(a, v, 3, &e), 0);
    assert_true(v[0] == -3 && v[1] == 70000 && v[2] == -((int64_t)1 << 40));
    char s[64];
    npz_shape_text(npz_array_shape(a), npz_array_ndim(a), s, sizeof s);
    assert_string_equal(s, "(3,)");
    npz_array_close(a);
}

static void test_deflated(void **state)
{
    (void)state;
    struct errmsg e = {0};
    struct npz_array *a = NULL;
    assert_int_equal(npz_array_open(&a, OK "npz_deflated.npz", "c", &e), 0);
    assert_string_equal(npz_array_dtype(a), ">i2");
    assert_int_equal(npz_array_count(a), 305);
    int64_t v[305];
    for (size_t i = 0; i < 305; i += 61) /* in pieces, as the importer reads rows */
        assert_int_equal(npz_array_read(a, v + i, 61, &e), 0);
    for (int i = 0; i < 305; i++)
        assert_int_equal(v[i], i - 5);
    npz_array_close(a);
    assert_int_equal(npz_array_open(&a, OK "npz_deflated.npz", "u", &e), 0);
    assert_int_equal(npz_array_read(a, v, 3, &e), 0);
    assert_true(v[0] == 0 && v[1] == 255 && v[2] == 7);
    npz_array_close(a);
}

/* path/name must fail with code and a message holding `what`. */
static void fails(const char *path, const char *name, int code, const char *what)
{
    struct errmsg e = {0};
    struct npz_array *a = NULL;
    int rc = npz_array_open(&a, path, name, &e);
    if (!rc) { /* the damage may only show while reading */
        int64_t v[400];
        uint64_t n = npz_array_count(a);
        rc = npz_array_read(a, v, n < 400 ? (size_t)n : 400, &e);
        npz_array_close(a);
    }
    if (rc != code || !strstr(errmsg_text(&e), what))
        fail_msg("%s/%s: %d '%s' (want %d '%s')", path, name, rc, errmsg_text(&e), code, what);
}

static void test_bad(void **state)
{
    (void)state;
    fails(OK "npz_stored.npz", "masks", ERR_NOTFOUND, "has no array 'masks'");
    fails(BAD "npz_missing.npz", "a", ERR_NOINPUT, "cannot open");
    fails(BAD "npz_fortran.npz", "f", ERR_FORMAT, "Fortran order");
    fails(BAD "npz_floats.npz", "x", ERR_FORMAT, "dtype '<f8'");
    fails(BAD "npz_corrupt.npz", "c", ERR_DATA, "of '" BAD "npz_corrupt.npz'");
    fails(BAD "npz_truncated.npz", "a", ERR_DATA, "not a zip archive");
    fails("tests/test_npz.c", "a", ERR_DATA, "not a zip archive");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stored),
        cmocka_unit_test(test_deflated),
        cmocka_unit_test(test_bad),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
