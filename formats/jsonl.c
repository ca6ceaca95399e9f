/*
 * jsonl: JSON-lines writer and reader (see jsonl.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/io.h"
#include "common/mem.h"
#include "formats/jsonl.h"

#define JSONL_MAX_FILE_BYTES (1ULL << 30)

struct jsonl_writer {
    int fd;
    int err;
};

int jsonl_writer_open(struct jsonl_writer **out, const char *path, bool append,
                      struct errmsg *e)
{
    *out = NULL;
    struct jsonl_writer *w = mem_calloc(1, sizeof *w);
    if (!w)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    w->fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC), 0644);
    if (w->fd < 0) {
        int en = errno;
        mem_free(w);
        return errmsg_set(e, ERR_IO, "cannot open '%s' for writing: %s", path, strerror(en));
    }
    *out = w;
    return 0;
}

int jsonl_write(struct jsonl_writer *w, const json_t *obj)
{
    if (w->err)
        return w->err;
    char *s = json_dumps(obj, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
    if (!s)
        return w->err = ERR_NOMEM;
    size_t n = strlen(s);
    /* One write for the line and its newline, so a kill leaves whole lines. */
    char *line = mem_alloc(n + 1);
    if (!line) {
        free(s);
        return w->err = ERR_NOMEM;
    }
    memcpy(line, s, n);
    line[n] = '\n';
    free(s);
    size_t off = 0;
    while (off < n + 1) {
        ssize_t k = write(w->fd, line + off, n + 1 - off);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            mem_free(line);
            return w->err = ERR_IO;
        }
        off += (size_t)k;
    }
    mem_free(line);
    return 0;
}

int jsonl_writer_close(struct jsonl_writer *w)
{
    if (!w)
        return 0;
    int rc = w->err;
    if (close(w->fd) && !rc)
        rc = ERR_IO;
    mem_free(w);
    return rc;
}

int jsonl_load(json_t **out, const char *path, size_t *valid_bytes, struct errmsg *e)
{
    *out = NULL;
    if (valid_bytes)
        *valid_bytes = 0;
    char *text;
    size_t n;
    int rc0 = io_read_file(path, JSONL_MAX_FILE_BYTES, &text, &n, e);
    if (rc0)
        return rc0;
    json_t *arr = json_array();
    int rc = 0;
    size_t pos = 0, line = 0;
    while (arr && pos < n) {
        char *nl = memchr(text + pos, '\n', n - pos);
        if (!nl)
            break; /* torn last line */
        line++;
        json_error_t je;
        json_t *o = json_loadb(text + pos, (size_t)(nl - (text + pos)), 0, &je);
        if (!o || !json_is_object(o)) {
            json_decref(o);
            rc = errmsg_set(e, ERR_DATA, "line is not a JSON object ('%s' line %zu)", path,
                            line);
            goto done;
        }
        json_array_append_new(arr, o);
        pos = (size_t)(nl - text) + 1;
    }
    if (!arr) {
        rc = errmsg_set(e, ERR_NOMEM, "out of memory");
        goto done;
    }
    if (valid_bytes)
        *valid_bytes = pos;
done:
    mem_free(text);
    if (rc)
        json_decref(arr);
    else
        *out = arr;
    return rc;
}
