/*
 * capture_helpers: the tests' way into the salca, kura and disc captures through the capture
 * interface (capture/capture.h): the ops from the registry, capture_run for a file, or the
 * ops' run onto a sink that hands each record to a callback.
 */
#ifndef ACCELTRACE_TESTS_CAPTURE_HELPERS_H
#define ACCELTRACE_TESTS_CAPTURE_HELPERS_H

#include "capture/capture.h"
#include "capture/disc/disc_capture.h"
#include "capture/kura/kura_capture.h"
#include "capture/salca/salca_capture.h"
#include "common/err.h"

/* capture_run of capture salca with p into path (driver options from p's zstd_level,
 * mem_limit_bytes, quiet, command_line, utc_time); *res filled when the run got that far
 * (res may be NULL). 0 or the err of open or capture_run, e set. */
int test_capture_salca(const struct salca_capture_params *p, const char *path,
                       struct salca_capture_result *res, struct errmsg *e);

/* Receives each record after the header; 0 or a negative err to stop. */
typedef int (*test_emit_fn)(void *ctx, const Acceltrace__Record *rec);

/* What a test sink hands records to (storage behind test_emit_sink_init's sink). */
struct test_emit_sink {
    test_emit_fn emit; /* NULL: records are dropped */
    void *ctx;
};

/* A quiet capture sink whose append hands each record to emit(ctx, rec) (a non-zero return
 * stops the run with that err); es is its storage and must outlive it. */
void test_emit_sink_init(struct capture_sink *sink, struct test_emit_sink *es, test_emit_fn emit,
                         void *ctx);

/* Opens capture disc with p (capture_disc_ops.open). *out receives the instance, NULL when
 * open failed; close it with capture_disc_ops.close. 0 or open's err (ERR_USAGE), e set. */
int test_disc_open(const struct disc_params *p, struct disc_capture **out, struct errmsg *e);

/* Runs an opened capture disc without a file: prepare, header, then run onto a
 * test_emit_sink_init sink handing every record after the header to emit (NULL: none).
 * disc_capture_result(c) reads the result afterwards. 0 or the first err, e set. */
int test_disc_run(struct disc_capture *c, test_emit_fn emit, void *ctx, struct errmsg *e);

/* test_disc_open then test_disc_run; *out as for test_disc_open (set when open succeeded,
 * whatever the run returned). */
int test_capture_disc(const struct disc_params *p, test_emit_fn emit, void *ctx,
                      struct disc_capture **out, struct errmsg *e);

/* capture kura with p, every record after the header to emit (no file): open, the memory
 * check of capture_run, prepare, run. res (may be NULL) receives the result, owned by the
 * caller (kura_result_release). 0 or an err, e set. */
int test_capture_kura(const struct kura_params *p, test_emit_fn emit, void *ctx,
                      struct kura_result *res, struct errmsg *e);

#endif
