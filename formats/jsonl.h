/*
 * jsonl: JSON-lines output (one compact JSON object per line) through jansson. Each
 * jsonl_write dumps the object in insertion order, reals with 17 significant digits, and
 * writes the line with one write(2), so a killed process leaves whole lines plus at most a
 * torn last one (jsonl_load drops it).
 */
#ifndef ACCELTRACE_JSONL_H
#define ACCELTRACE_JSONL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

struct jsonl_writer;

/* Opens path for writing (append keeps content). 0 or ERR_IO with e set. */
int jsonl_writer_open(struct jsonl_writer **out, const char *path, bool append, struct errmsg *e);
/* Writes obj as one line. 0, ERR_NOMEM or ERR_IO. */
int jsonl_write(struct jsonl_writer *w, const json_t *obj);
/* Closes (NULL is a no-op); returns the first error seen. */
int jsonl_writer_close(struct jsonl_writer *w);

/*
 * Reads every complete line of a JSON-lines file as a JSON array of objects (caller owns,
 * json_decref). A last line without newline is dropped (torn append). A line that is not
 * a JSON object is ERR_DATA naming the file and line. *valid_bytes (may be NULL) receives
 * the length of the whole-line prefix.
 */
int jsonl_load(json_t **out, const char *path, size_t *valid_bytes, struct errmsg *e);

/*
 * Memory jansson takes per byte of a results line once parsed (objects, keys, reals),
 * measured on replay results rows: docs/performance.md "Results files".
 */
#define JSONL_MEM_PER_TEXT_BYTE 11

/* A row filter of jsonl_load_filtered: true keeps obj (borrowed). */
typedef bool (*jsonl_keep_fn)(const json_t *obj, void *ctx);

/*
 * jsonl_load streamed line by line, so memory follows what is kept, not the file's size:
 * only the objects keep(obj, ctx) accepts (all when keep is NULL) go into the array, and
 * the text of the kept lines may not exceed max_kept_bytes (0: no limit; ERR_LIMIT naming
 * the file and line). A jansson object takes about JSONL_MEM_PER_TEXT_BYTE bytes of memory
 * per byte of its line, so a caller with a memory budget B passes B /
 * JSONL_MEM_PER_TEXT_BYTE. Only regular files are read (io_open_input). Errors and torn
 * last line as jsonl_load; *valid_bytes counts every whole line, kept or not.
 */
int jsonl_load_filtered(json_t **out, const char *path, jsonl_keep_fn keep, void *ctx,
                        uint64_t max_kept_bytes, size_t *valid_bytes, struct errmsg *e);

#endif
