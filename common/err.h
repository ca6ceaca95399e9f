/*
 * err: the one table of error codes of acceltrace and their strings.
 *
 * Every fallible function returns 0 on success or a negative `enum err`. Long-lived
 * handles also keep a human message (struct errmsg) that names the file and position;
 * err_str() gives the generic text for a code. Only cli/ turns codes into exit status,
 * through err_exit_code().
 */
#ifndef ACCELTRACE_ERR_H
#define ACCELTRACE_ERR_H

#include <stdarg.h>
#include <stddef.h>

enum err {
    ERR_OK = 0,
    ERR_NOMEM = -1,     /* allocation failed */
    ERR_IO = -2,        /* read/write/open failed (errno-level) */
    ERR_DATA = -3,      /* input data is corrupt, truncated or inconsistent */
    ERR_LIMIT = -4,     /* input exceeds a configured bound (sizes, counts) */
    ERR_FORMAT = -5,    /* unsupported version or unknown construct */
    ERR_CONFIG = -6,    /* bad configuration file, key, type or value */
    ERR_USAGE = -7,     /* bad command-line usage or impossible parameter */
    ERR_NOTFOUND = -8,  /* a requested item does not exist */
    ERR_EXTERNAL = -9,  /* an external program or library failed */
    ERR_INTERNAL = -10, /* broken internal invariant (a bug) */
    ERR_NOINPUT = -11,  /* a named input file (trace, weights, config) cannot be opened */
    ERR_COUNT_ = 12
};

/* Generic text of a code ("corrupt input data"); never NULL. */
const char *err_str(int code);

/*
 * Exit status for a code, as docs/design.md#command-line-conventions: 0 ok, 2 usage, 3 bad input
 * data or config (a named input file that cannot be opened counts as bad input), 1 for everything
 * else.
 */
int err_exit_code(int code);

/* A handle's last error: code and message (lowercase, no final period). */
struct errmsg {
    int code;
    char text[512];
};

/* Sets e (when not NULL) to code and the formatted message; returns code. */
int errmsg_set(struct errmsg *e, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int errmsg_vset(struct errmsg *e, int code, const char *fmt, va_list ap);

/* Message text of e, or err_str(code) when none was set. */
const char *errmsg_text(const struct errmsg *e);

#endif
