/*
 * test_helpers: see test_helpers.h.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "common/io.h"
#include "tests/helpers/test_helpers.h"

static char tmpdir[256];

const char *th_tmpdir_make(const char *tag)
{
    const char *base = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/acceltrace-%s-XXXXXX", base && *base ? base : "/tmp", tag);
    if (!mkdtemp(tmpdir)) {
        tmpdir[0] = 0;
        return NULL;
    }
    return tmpdir;
}

const char *th_tmpdir(void)
{
    return tmpdir;
}

int th_tmpdir_remove(void)
{
    if (!tmpdir[0])
        return 0;
    int rc = io_remove_tree(tmpdir) == 0 ? 0 : -1;
    tmpdir[0] = 0;
    return rc;
}

int th_group_setup(void **state)
{
    (void)state;
    return th_tmpdir_make("test") ? 0 : -1;
}

int th_group_teardown(void **state)
{
    (void)state;
    return th_tmpdir_remove();
}

void th_path(char *out, size_t n, const char *name)
{
    snprintf(out, n, "%s/%s", tmpdir, name);
}

const char *th_path_tmp(const char *name)
{
    static char buf[8][512];
    static int i;
    i = (i + 1) % 8;
    th_path(buf[i], sizeof buf[i], name);
    return buf[i];
}

char *th_slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    long len = ftell(f);
    assert_true(len >= 0);
    assert_int_equal(fseek(f, 0, SEEK_SET), 0);
    char *b = malloc((size_t)len + 1);
    assert_non_null(b);
    if (fread(b, 1, (size_t)len, f) != (size_t)len)
        fail_msg("cannot read '%s'", path);
    b[len] = 0;
    fclose(f);
    if (n)
        *n = (size_t)len;
    return b;
}

void th_write_file(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        fail_msg("cannot write '%s'", path);
    assert_int_equal(fwrite(data, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

bool th_exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

void th_assert_same_file(const char *a, const char *b)
{
    size_t na = 0, nb = 0;
    char *x = th_slurp(a, &na), *y = th_slurp(b, &nb);
    if (!x || !y)
        fail_msg("cannot open '%s'", x ? b : a);
    if (na != nb || memcmp(x, y, na))
        fail_msg("'%s' and '%s' differ (%zu vs %zu bytes)", a, b, na, nb);
    free(x);
    free(y);
}

uint64_t th_seed(uint64_t dflt)
{
    const char *s = getenv("ACCELTRACE_SEED");
    uint64_t seed = s && *s ? strtoull(s, NULL, 0) : dflt;
    printf("seed %llu (set ACCELTRACE_SEED to change)\n", (unsigned long long)seed);
    return seed;
}
