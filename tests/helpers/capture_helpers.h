/*
 * capture_helpers: the tests' way into the salca and kura captures through the capture
 * interface (capture/capture.h): the ops from the registry, capture_run for a file, or the
 * ops' run onto a sink that hands each record to a callback.
 */
#ifndef ACCELTRACE_TESTS_CAPTURE_HELPERS_H
#define ACCELTRACE_TESTS_CAPTURE_HELPERS_H

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

/* capture kura with p, every record after the header to emit (no file): open, the memory
 * check of capture_run, prepare, run. res (may be NULL) receives the result, owned by the
 * caller (kura_result_release). 0 or an err, e set. */
int test_capture_kura(const struct kura_params *p, test_emit_fn emit, void *ctx,
                      struct kura_result *res, struct errmsg *e);

#endif
