#include "common/err.h"

#include <stdio.h>
#include <string.h>

static const char *const err_strings[ERR_COUNT_] = {
    [0] = "success",
    [1] = "out of memory",
    [2] = "input/output error",
    [3] = "corrupt input data",
    [4] = "input exceeds a limit",
    [5] = "unsupported format",
    [6] = "bad configuration",
    [7] = "bad usage",
    [8] = "not found",
    [9] = "external program failed",
    [10] = "internal error",
    [11] = "input file cannot be opened",
};

const char *err_str(int code)
{
    if (code > 0 || -code >= ERR_COUNT_)
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
