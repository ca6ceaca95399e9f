#include "common/err.h"

#include <stdio.h>
#include <string.h>

/* Indexed by -code: each row is keyed by its enum name, so a new code cannot shift the
 * texts of the others. */
static const char *const err_strings[ERR_COUNT_] = {
    [-ERR_OK] = "success",
    [-ERR_NOMEM] = "out of memory",
    [-ERR_IO] = "input/output error",
    [-ERR_DATA] = "corrupt input data",
    [-ERR_LIMIT] = "input exceeds a limit",
    [-ERR_FORMAT] = "unsupported format",
    [-ERR_CONFIG] = "bad configuration",
    [-ERR_USAGE] = "bad usage",
    [-ERR_NOTFOUND] = "not found",
    [-ERR_EXTERNAL] = "external program failed",
    [-ERR_INTERNAL] = "internal error",
    [-ERR_NOINPUT] = "input file cannot be opened",
};

const char *err_str(int code)
{
    if (code > 0 || -code >= ERR_COUNT_ || !err_strings[-code])
        return "unknown error";
    return err_strings[-code];
}

int err_exit_code(int code)
{
    switch (code) {
    case ERR_OK:
        return 0;
    case ERR_USAGE:
        return 2;
    case ERR_DATA:
    case ERR_LIMIT:
    case ERR_FORMAT:
    case ERR_CONFIG:
    case ERR_NOINPUT:
        return 3;
    default:
        return 1;
    }
}

int errmsg_vset(struct errmsg *e, int code, const char *fmt, va_list ap)
{
    if (e) {
        e->code = code;
        vsnprintf(e->text, sizeof e->text, fmt, ap);
    }
    return code;
}

int errmsg_set(struct errmsg *e, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    errmsg_vset(e, code, fmt, ap);
    va_end(ap);
    return code;
}

const char *errmsg_text(const struct errmsg *e)
{
    if (!e || !e->text[0])
        return err_str(e ? e->code : ERR_INTERNAL);
    return e->text;
}
