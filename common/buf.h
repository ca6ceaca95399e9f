/*
 * buf: a growable byte buffer (data, len, cap). Owned by its user; buf_release frees the
 * storage. Appends grow geometrically and fail with ERR_NOMEM, leaving the buffer intact.
 *
 * The error is sticky (like SQLite's sqlite3_str): the first failing append or reserve is
 * kept in err, every later append/printf/reserve is a no-op returning it, and buf_err()
 * reads it, so a text builder calls buf_printf as plain statements and checks once at the
 * end. buf_clear and buf_release reset it.
 */
#ifndef ACCELTRACE_BUF_H
#define ACCELTRACE_BUF_H

#include <stddef.h>
#include <stdint.h>

struct buf {
    uint8_t *data;
    size_t len; /* bytes used */
    size_t cap; /* bytes allocated */
    int err;    /* first error of an append (ERR_NOMEM, ERR_INTERNAL); 0 none; sticky */
};

void buf_init(struct buf *b);
void buf_release(struct buf *b);
/* Ensures room for `extra` more bytes; 0 or ERR_NOMEM. */
int buf_reserve(struct buf *b, size_t extra);
int buf_append(struct buf *b, const void *p, size_t n);
/* Appends printf-formatted text (no NUL counted in len, but data stays NUL-terminated). */
int buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Empties b (keeps its storage) and forgets its error. */
void buf_clear(struct buf *b);
/* The first error of an append/printf/reserve on b since init/clear, or 0. */
int buf_err(const struct buf *b);

#endif
