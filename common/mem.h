/*
 * mem: allocation through hooks, and overflow-checked size arithmetic.
 *
 * All project code allocates with mem_alloc/mem_calloc/mem_realloc/mem_free so that tests
 * can fail the Nth allocation (mem_fail_after) and check that every error path cleans up.
 * mem_free(NULL) is a no-op. Sizes computed from file data go through mem_mul/mem_add first.
 */
#ifndef ACCELTRACE_MEM_H
#define ACCELTRACE_MEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

void *mem_alloc(size_t n);
void *mem_calloc(size_t count, size_t size);
void *mem_realloc(void *p, size_t n);
void mem_free(void *p);
char *mem_strdup(const char *s);

/*
 * Test hook: the n-th allocation from now (1-based) and every later one fail until
 * mem_fail_after(0) disarms it. Thread-safe counter.
 */
void mem_fail_after(long n);

/* *out = a * b (resp. a + b); false on overflow. */
bool mem_mul(size_t a, size_t b, size_t *out);
bool mem_add(size_t a, size_t b, size_t *out);

/*
 * Memory budgets (--mem-limit of every capture and replay). mem_parse_size reads a size:
 * a decimal number (fractions allowed) with an optional unit, B, KB/MB/GB/TB (powers of
 * 1000) or K/M/G/T and KiB/MiB/GiB/TiB (powers of 1024); 0 or ERR_USAGE (empty, negative,
 * not finite, unknown unit, above 2^63 bytes).
 */
int mem_parse_size(const char *s, uint64_t *bytes);

/*
 * Writes "N GiB" / "N MiB" / "N KiB" / "N B" (3 significant digits) for a byte count into
 * buf of n bytes; returns buf.
 */
char *mem_size_text(uint64_t bytes, char *buf, size_t n);

/*
 * The one refusal of an estimate above the limit, shared by every loader and long job:
 * sets e (when not NULL) to ERR_LIMIT with
 *   "<what> needs about <need>, above --mem-limit <limit>; <hint>"
 * (the hint says what to change, e.g. "use a smaller --size or raise --mem-limit") and
 * returns ERR_LIMIT.
 */
int mem_budget_refuse(struct errmsg *e, const char *what, uint64_t need_bytes, uint64_t limit_bytes,
                      const char *hint);

#endif
