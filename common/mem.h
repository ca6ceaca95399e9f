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

#endif
