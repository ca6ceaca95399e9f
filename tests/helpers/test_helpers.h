/*
 * test_helpers: what the cmocka programs share (linked into every tests/test_*.c by the
 * Makefile's TEST_HELPER_SRC): one temporary folder per program, paths in it, whole-file
 * reads, writes and comparisons, and the seed of randomized tests.
 *
 * Include after <cmocka.h> (and its prerequisites). Helpers that say "asserts" fail the
 * current test through cmocka instead of returning an error. Nothing here is thread-safe.
 */
#ifndef ACCELTRACE_TEST_HELPERS_H
#define ACCELTRACE_TEST_HELPERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Makes the program's temporary folder $TMPDIR/acceltrace-TAG-XXXXXX (mkdtemp; /tmp when
 * TMPDIR is unset) and returns
 * its path (static storage, also th_tmpdir()); NULL when it cannot be made.
 */
const char *th_tmpdir_make(const char *tag);

/* The folder of th_tmpdir_make ("" before it). */
const char *th_tmpdir(void);

/* Removes the temporary folder and everything in it: 0, or -1 when something stayed. */
int th_tmpdir_remove(void);

/* cmocka group setup and teardown: th_tmpdir_make("test") and th_tmpdir_remove(). */
int th_group_setup(void **state);
int th_group_teardown(void **state);

/* "TMPDIR/name" into out (n bytes). */
void th_path(char *out, size_t n, const char *name);

/* "TMPDIR/name" in one of 8 rotating static buffers: valid until 8 more calls. */
const char *th_path_tmp(const char *name);

/*
 * The whole file at path, NUL-terminated (its length in *n when n is not NULL); caller
 * frees with free(). NULL when the file cannot be opened; a read error fails the test.
 */
char *th_slurp(const char *path, size_t *n);

/* Writes n bytes of data as the file at path (replacing it); asserts. */
void th_write_file(const char *path, const void *data, size_t n);

/* Whether path exists (stat). */
bool th_exists(const char *path);

/* Asserts that files a and b exist and hold the same bytes. */
void th_assert_same_file(const char *a, const char *b);

/*
 * The seed of a randomized test: $ACCELTRACE_SEED when set, else dflt; printed as
 * "seed N (set ACCELTRACE_SEED to change)" so a failing run can be repeated.
 */
uint64_t th_seed(uint64_t dflt);

#endif
