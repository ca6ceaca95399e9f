/*
 * buf: a growable byte buffer (data, len, cap). Owned by its user; buf_release frees the
 * storage. Appends grow geometrically and fail with ERR_NOMEM, leaving the buffer intact.
 */
#ifndef ACCELTRACE_BUF_H
#define ACCELTRACE_BUF_H

#include <stddef.h>
#include <stdint.h>

struct buf {
    uint8_t *data;
    size_t len;  /* bytes used */
    size_t cap;  /* bytes allocated */
};

void buf_init(struct buf *b);
void buf_release(struct buf *b);
/* Ensures room for `extra` more bytes; 0 or ERR_NOMEM. */
int buf_reserve(struct buf *b, size_t extra);
int buf_append(struct buf *b, const void *p, size_t n);
/* Appends printf-formatted text (no NUL counted in len, but data stays NUL-terminated). */
int buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void buf_clear(struct buf *b);

#endif
