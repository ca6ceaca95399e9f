/*
 * jsonl: JSON-lines writer and reader (see jsonl.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
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

int jsonl_writer_open(struct jsonl_writer **out, const char *path, bool append, struct errmsg *e)
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

int jsonl_load_filtered(json_t **out, const char *path, jsonl_keep_fn keep, void *ctx,
                        uint64_t max_kept_bytes, size_t *valid_bytes, struct errmsg *e)
{
    *out = NULL;
    if (valid_bytes)
        *valid_bytes = 0;
    int fd = io_open_input(path, NULL, e);
    if (fd < 0)
        return fd;
    FILE *f = fdopen(fd, "r");
    if (!f) {
        close(fd);
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    }
    json_t *arr = json_array();
    char *text = NULL;
    size_t cap = 0, pos = 0, line = 0;
    uint64_t kept_bytes = 0;
    ssize_t n;
    int rc = 0;
    if (!arr) {
        rc = errmsg_set(e, ERR_NOMEM, "out of memory");
        goto done;
    }
    while ((n = getline(&text, &cap, f)) > 0) {
        if (text[n - 1] != '\n')
            break; /* torn last line */
        line++;
        json_error_t je;
        json_t *o = json_loadb(text, (size_t)n - 1, 0, &je);
        if (!o || !json_is_object(o)) {
            json_decref(o);
            rc = errmsg_set(e, ERR_DATA, "line is not a JSON object ('%s' line %zu)", path, line);
            goto done;
        }
        pos += (size_t)n;
        if (keep && !keep(o, ctx)) {
            json_decref(o);
            continue;
        }
        kept_bytes += (uint64_t)n;
        if (max_kept_bytes && kept_bytes > max_kept_bytes) {
            json_decref(o);
            rc = errmsg_set(e, ERR_LIMIT,
                            "the rows kept from '%s' exceed %" PRIu64 " bytes of text at line %zu",
                            path, max_kept_bytes, line);
            goto done;
        }
        if (json_array_append_new(arr, o)) {
            rc = errmsg_set(e, ERR_NOMEM, "out of memory");
            goto done;
        }
    }
    if (ferror(f)) {
        rc = errmsg_set(e, ERR_IO, "cannot read '%s': %s", path, strerror(errno));
        goto done;
    }
    if (valid_bytes)
        *valid_bytes = pos;
done:
    free(text); /* getline's buffer comes from malloc */
    fclose(f);
    if (rc)
        json_decref(arr);
    else
        *out = arr;
    return rc;
}

int jsonl_load(json_t **out, const char *path, size_t *valid_bytes, struct errmsg *e)
{
    return jsonl_load_filtered(out, path, NULL, NULL, JSONL_MAX_FILE_BYTES, valid_bytes, e);
}
