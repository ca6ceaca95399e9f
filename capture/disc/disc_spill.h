/*
 * disc_spill: the spill file of a DiSC capture, a scratch file of fixed-offset regions that
 * holds what the memory plan moves off the resident set (ST masks of the blocks not being
 * computed, CTR block outputs of the other blocks; docs/models.md#disc-memory-plan).
 *
 * The file is created with a unique name in a given folder and unlinked at once, so it
 * occupies disk only while the handle is open and never outlives the process, even on a
 * crash. Reads and writes are positioned (pread/pwrite) and complete or fail with ERR_IO
 * and a message naming the folder. The handle owns its descriptor; free with
 * disc_spill_close.
 */
#ifndef ACCELTRACE_DISC_SPILL_H
#define ACCELTRACE_DISC_SPILL_H

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

struct disc_spill;

/* Creates the spill file in folder dir (NULL or "" = the current folder). ERR_IO with a
 * message naming dir when it cannot be created; ERR_NOMEM. */
int disc_spill_open(struct disc_spill **out, const char *dir, struct errmsg *e);

/* Writes n bytes of p at byte offset off. 0 or ERR_IO (e.g. the disk is full). */
int disc_spill_write(struct disc_spill *s, uint64_t off, const void *p, size_t n, struct errmsg *e);

/* Reads n bytes at byte offset off into p; a short file is ERR_IO. */
int disc_spill_read(struct disc_spill *s, uint64_t off, void *p, size_t n, struct errmsg *e);

/* The highest byte offset written so far (the file's size). */
uint64_t disc_spill_bytes(const struct disc_spill *s);

/* Bytes moved to and from the file so far. */
uint64_t disc_spill_written(const struct disc_spill *s);
uint64_t disc_spill_read_bytes(const struct disc_spill *s);

/* Closes (and so deletes) the file; NULL is a no-op. */
void disc_spill_close(struct disc_spill *s);

#endif
