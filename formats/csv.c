/*
 * csv: RFC 4180 writer and reader (see csv.h). Rows are assembled in a buffer and written
 * with one write(2) so an interrupted process leaves whole rows.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/grow.h"
#include "common/io.h"
#include "common/mem.h"
#include "formats/csv.h"

#define CSV_MAX_FILE_BYTES (1ULL << 30)

struct csv_writer {
    int fd;          /* -1 for memory */
    struct buf *mem; /* memory target (not owned) */
    struct buf row;  /* current row */
    bool first;      /* no field yet in this row */
    int err;         /* first error */
    int err_no;      /* errno of the first error (ENOSPC for a full disk) */
};

int csv_writer_open(struct csv_writer **out, const char *path, bool append, struct errmsg *e)
{
    *out = NULL;
    struct csv_writer *w = mem_calloc(1, sizeof *w);
    if (!w)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    w->fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC), 0644);
    if (w->fd < 0) {
        int en = errno;
        mem_free(w);
        return errmsg_set(e, ERR_IO, "cannot open '%s' for writing: %s", path, strerror(en));
    }
    buf_init(&w->row);
    w->first = true;
    *out = w;
    return 0;
}

int csv_writer_mem(struct csv_writer **out, struct buf *b)
{
    *out = NULL;
    struct csv_writer *w = mem_calloc(1, sizeof *w);
    if (!w)
        return ERR_NOMEM;
    w->fd = -1;
    w->mem = b;
    buf_init(&w->row);
    w->first = true;
    *out = w;
    return 0;
}

int csv_append_field(struct buf *b, const char *s)
{
    if (!s)
        s = "";
    bool quote = strpbrk(s, ",\"\r\n") != NULL;
    if (!quote)
        return buf_append(b, s, strlen(s));
    int rc = buf_append(b, "\"", 1);
    for (const char *p = s; !rc && *p; p++)
        rc = *p == '"' ? buf_append(b, "\"\"", 2) : buf_append(b, p, 1);
    if (!rc)
        rc = buf_append(b, "\"", 1);
    return rc;
}

int csv_str(struct csv_writer *w, const char *s)
{
    if (w->err)
        return w->err;
    int rc = 0;
    if (!w->first)
        rc = buf_append(&w->row, ",", 1);
    if (!rc)
        rc = csv_append_field(&w->row, s);
    w->first = false;
    if (rc)
        w->err = rc;
    return rc;
}

int csv_i64(struct csv_writer *w, int64_t v)
{
    char t[32];
    snprintf(t, sizeof t, "%" PRId64, v);
    return csv_str(w, t);
}

int csv_u64(struct csv_writer *w, uint64_t v)
{
    char t[32];
    snprintf(t, sizeof t, "%" PRIu64, v);
    return csv_str(w, t);
}

void csv_format_f64(double v, char *buf, size_t n)
{
    if (isnan(v)) {
        snprintf(buf, n, "nan");
        return;
    }
    if (isinf(v)) {
        snprintf(buf, n, v > 0 ? "inf" : "-inf");
        return;
    }
    /* Integral values print as integers ("2000", not "2e+03"). */
    if (v == trunc(v) && fabs(v) < 1e15) {
        snprintf(buf, n, "%.0f", v == 0 ? 0.0 : v);
        return;
    }
    /* Shortest %.*g that reads back to the same double: deterministic and readable. */
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, n, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            return;
    }
    snprintf(buf, n, "%.17g", v);
}

int csv_f64(struct csv_writer *w, double v)
{
    char t[40];
    csv_format_f64(v, t, sizeof t);
    return csv_str(w, t);
}

int csv_f64_fixed(struct csv_writer *w, double v, int decimals)
{
    char t[360]; /* %.*f of DBL_MAX with up to 40 decimals */
    if (decimals < 0 || decimals > 40)
        decimals = 40;
    snprintf(t, sizeof t, "%.*f", decimals, v);
    return csv_str(w, t);
}

static int write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t k = write(fd, c, n);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            return ERR_IO;
        }
        if (k == 0) { /* no progress and no error: call it a full disk */
            errno = ENOSPC;
            return ERR_IO;
        }
        c += k;
        n -= (size_t)k;
    }
    return 0;
}

int csv_end_row(struct csv_writer *w)
{
    if (w->err)
        return w->err;
    int rc = buf_append(&w->row, "\n", 1);
    if (!rc)
        rc = w->fd >= 0 ? write_all(w->fd, w->row.data, w->row.len)
                        : buf_append(w->mem, w->row.data, w->row.len);
    buf_clear(&w->row);
    w->first = true;
    if (rc && !w->err) {
        w->err = rc;
        w->err_no = rc == ERR_NOMEM ? ENOMEM : errno;
    }
    return rc;
}

int csv_writer_errno(const struct csv_writer *w)
{
    return w && w->err ? w->err_no : 0;
}

int csv_writer_close(struct csv_writer *w)
{
    if (!w)
        return 0;
    int rc = w->err, en = w->err_no;
    if (w->fd >= 0 && close(w->fd) && !rc) {
        rc = ERR_IO;
        en = errno;
    }
    buf_release(&w->row);
    mem_free(w);
    if (rc)
        errno = en; /* the cause, for the caller's message (csv.h) */
    return rc;
}

/* ---- reader ---- */

void csv_table_release(struct csv_table *t)
{
    if (!t)
        return;
    if (t->header) {
        for (size_t i = 0; i < t->n_cols; i++)
            mem_free(t->header[i]);
        mem_free(t->header);
    }
    if (t->rows) {
        for (size_t r = 0; r < t->n_rows; r++) {
            if (!t->rows[r])
                continue;
            for (size_t i = 0; i < t->n_cols; i++)
                mem_free(t->rows[r][i]);
            mem_free(t->rows[r]);
        }
        mem_free(t->rows);
    }
    memset(t, 0, sizeof *t);
}

/*
 * Parses one record starting at *pos; fields are appended to a growing array. Returns 1
 * for a record, 0 at end, <0 on error. A record is complete only when it ends with '\n'.
 */
static int parse_record(const char *text, size_t len, size_t *pos, char ***fields, size_t *n_fields,
                        bool *complete)
{
    size_t p = *pos;
    if (p >= len)
        return 0;
    size_t cap = 0;
    *fields = NULL;
    *n_fields = 0;
    *complete = false;
    struct buf f;
    buf_init(&f);
    int rc = 0;
    for (;;) {
        buf_clear(&f);
        bool quoted = false;
        if (p < len && text[p] == '"') {
            quoted = true;
            p++;
            for (;;) {
                if (p >= len)
                    goto end_field; /* unterminated: torn */
                if (text[p] == '"') {
                    if (p + 1 < len && text[p + 1] == '"') {
                        rc = buf_append(&f, "\"", 1);
                        p += 2;
                    } else {
                        p++;
                        break;
                    }
                } else {
                    rc = buf_append(&f, text + p, 1);
                    p++;
                }
                if (rc)
                    goto fail;
            }
        }
        while (p < len && text[p] != ',' && text[p] != '\n' && text[p] != '\r') {
            if (quoted) {
                rc = ERR_DATA;
                goto fail;
            }
            if ((rc = buf_append(&f, text + p, 1)))
                goto fail;
            p++;
        }
    end_field:
        if ((rc = grow((void **)fields, &cap, *n_fields + 1, sizeof **fields)))
            goto fail;
        (*fields)[*n_fields] = mem_strdup(f.len ? (const char *)f.data : "");
        if (!(*fields)[*n_fields]) {
            rc = ERR_NOMEM;
            goto fail;
        }
        (*n_fields)++;
        if (p >= len)
            break;
        if (text[p] == ',') {
            p++;
            continue;
        }
        if (text[p] == '\r')
            p++;
        if (p < len && text[p] == '\n') {
            p++;
            *complete = true;
        }
        break;
    }
    *pos = p;
    buf_release(&f);
    return 1;
fail:
    buf_release(&f);
    for (size_t i = 0; i < *n_fields; i++)
        mem_free((*fields)[i]);
    mem_free(*fields);
    *fields = NULL;
    *n_fields = 0;
    return rc;
}

int csv_table_parse(struct csv_table *t, const char *text, size_t len, const char *name,
                    bool drop_torn, struct errmsg *e)
{
    memset(t, 0, sizeof *t);
    size_t pos = 0, line = 0, cap = 0;
    int rc;
    for (;;) {
        char **fields;
        size_t nf;
        bool complete;
        size_t start = pos;
        rc = parse_record(text, len, &pos, &fields, &nf, &complete);
        if (rc == 0)
            break;
        line++;
        if (rc < 0) {
            rc = errmsg_set(e, rc == ERR_NOMEM ? ERR_NOMEM : ERR_DATA,
                            "bad csv field ('%s' line %zu)", name, line);
            goto fail;
        }
        if (!complete && drop_torn) {
            for (size_t i = 0; i < nf; i++)
                mem_free(fields[i]);
            mem_free(fields);
            break;
        }
        (void)start;
        if (!t->header) {
            t->header = fields;
            t->n_cols = nf;
            continue;
        }
        if (nf != t->n_cols) {
            for (size_t i = 0; i < nf; i++)
                mem_free(fields[i]);
            mem_free(fields);
            rc = errmsg_set(e, ERR_DATA, "row has %zu fields, header has %zu ('%s' line %zu)", nf,
                            t->n_cols, name, line);
            goto fail;
        }
        if (grow((void **)&t->rows, &cap, t->n_rows + 1, sizeof *t->rows)) {
            for (size_t i = 0; i < nf; i++)
                mem_free(fields[i]);
            mem_free(fields);
            rc = errmsg_set(e, ERR_NOMEM, "out of memory");
            goto fail;
        }
        t->rows[t->n_rows++] = fields;
    }
    if (!t->header) {
        rc = errmsg_set(e, ERR_DATA, "no header line ('%s')", name);
        goto fail;
    }
    return 0;
fail:
    csv_table_release(t);
    return rc;
}

int csv_table_load(struct csv_table *t, const char *path, bool drop_torn, struct errmsg *e)
{
    memset(t, 0, sizeof *t);
    char *text;
    size_t got;
    int rc = io_read_file(path, CSV_MAX_FILE_BYTES, &text, &got, e);
    if (rc)
        return rc;
    rc = csv_table_parse(t, text, got, path, drop_torn, e);
    mem_free(text);
    return rc;
}

int csv_split_record(const char *line, size_t len, char ***fields, size_t *n)
{
    size_t pos = 0;
    bool complete;
    *fields = NULL;
    *n = 0;
    int rc = parse_record(line, len, &pos, fields, n, &complete);
    if (rc == 0)
        return ERR_DATA;
    if (rc < 0)
        return rc == ERR_NOMEM ? ERR_NOMEM : ERR_DATA;
    if (pos != len) {
        csv_fields_free(*fields, *n);
        *fields = NULL;
        *n = 0;
        return ERR_DATA;
    }
    return 0;
}

void csv_fields_free(char **fields, size_t n)
{
    for (size_t i = 0; fields && i < n; i++)
        mem_free(fields[i]);
    mem_free(fields);
}

void csv_split_unit(const char *cell, char *name, size_t name_n, char *unit, size_t unit_n)
{
    const char *b = strstr(cell, " [");
    size_t len = strlen(cell);
    if (b && len >= 2 && cell[len - 1] == ']') {
        snprintf(name, name_n, "%.*s", (int)(b - cell), cell);
        snprintf(unit, unit_n, "%.*s", (int)(cell + len - 1 - (b + 2)), b + 2);
    } else {
        snprintf(name, name_n, "%s", cell);
        if (unit_n)
            unit[0] = 0;
    }
}

long csv_table_col(const struct csv_table *t, const char *name)
{
    char nm[256], un[64];
    for (size_t i = 0; i < t->n_cols; i++) {
        if (!strcmp(t->header[i], name))
            return (long)i;
        csv_split_unit(t->header[i], nm, sizeof nm, un, sizeof un);
        if (!strcmp(nm, name))
            return (long)i;
    }
    return -1;
}
