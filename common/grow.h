/*
 * grow: the one growth rule of the project's dynamic arrays. An array of `cap` elements of
 * `elem` bytes that must hold `need` elements is reallocated (common/mem.h, so tests can
 * fail it) to max(need, 2 * cap, GROW_MIN) elements, with the byte size overflow-checked.
 * On failure the array and its capacity are left as they were, still owned by the caller.
 */
#ifndef ACCELTRACE_GROW_H
#define ACCELTRACE_GROW_H

#include <stddef.h>

/* The capacity of an array's first allocation (elements), unless `need` is larger. */
#define GROW_MIN 16

/*
 * Makes *p (an array of *cap elements of elem bytes, or NULL with *cap 0) hold at least
 * need elements: nothing when need <= *cap, else a reallocation that updates *p and *cap.
 * The new elements are not initialised. 0, or ERR_NOMEM (allocation failed) or ERR_LIMIT
 * (the byte size overflows size_t) with *p and *cap unchanged. Call it as
 * grow((void **)&array, &cap, n + 1, sizeof *array).
 */
int grow(void **p, size_t *cap, size_t need, size_t elem);

#endif
