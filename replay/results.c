/*
 * results: results folders (see results.h). Every row is written as one CSV line and one
 * JSON line, each with a single write(2); rows never contain raw newlines (they are
 * replaced by spaces), so lines and rows correspond one to one, which is what resume and
 * merge rely on.
 *
 * This file: model_result (the rows a model fills) and writing them (results_append);
 * results_impl.h says where the rest of the module lives.
 */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/mem.h"
#include "formats/csv.h"
#include "replay/results.h"
#include "replay/results_impl.h"

/* ---- model_result ---- */

struct model_result *model_result_new(void)
{
    return mem_calloc(1, sizeof(struct model_result));
}

void model_result_free(struct model_result *res)
{
    if (!res)
        return;
    for (size_t r = 0; r < res->n; r++) {
        struct res_row *w = &res->rows[r];
        for (size_t c = 0; c < w->n; c++) {
            mem_free(w->cols[c].name);
            mem_free(w->cols[c].unit);
            mem_free(w->cols[c].s);
        }
        mem_free(w->cols);
        mem_free(w->table);
    }
    mem_free(res->rows);
    mem_free(res->err_text);
    mem_free(res);
}

size_t model_result_rows(const struct model_result *res)
{
    return res->n;
}

int result_err(const struct model_result *res, struct errmsg *e)
{
    if (res->err)
        errmsg_set(e, res->err, "%s", res->err_text ? res->err_text : res->err_what);
    return res->err;
}

/*
 * Records the first error of res (later ones are dropped) and returns the sticky code:
 * the formatted message, or the fixed text `what` when there is no memory to keep it.
 */
static int res_fail(struct model_result *res, int code, const char *what, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int res_fail(struct model_result *res, int code, const char *what, const char *fmt, ...)
{
    if (res->err)
        return res->err;
    char t[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t, sizeof t, fmt, ap);
    va_end(ap);
    res->err = code;
    res->err_what = what;
    res->err_text = mem_strdup(t);
    return code;
}

bool res_ident_ok(const char *s)
{
    if (!s || !*s)
        return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_'))
            return false;
    return true;
}

int result_row_begin(struct model_result *res, const char *table)
{
    if (res->err)
        return res->err;
    if (!table)
        table = "results";
    if (!res_ident_ok(table))
        return res_fail(res, ERR_USAGE, "bad result table name",
                        "bad result table name '%s' (it must be [a-z0-9_]+)", table);
    if (res->n == res->cap) {
        size_t nc = res->cap ? res->cap * 2 : 4;
        struct res_row *n = mem_realloc(res->rows, nc * sizeof *n);
        if (!n)
            return res_fail(res, ERR_NOMEM, "out of memory starting a result row",
                            "out of memory starting row %zu of table '%s'", res->n + 1, table);
        res->rows = n;
        res->cap = nc;
    }
    struct res_row *w = &res->rows[res->n];
    memset(w, 0, sizeof *w);
    if (!(w->table = mem_strdup(table)))
        return res_fail(res, ERR_NOMEM, "out of memory starting a result row",
                        "out of memory starting row %zu of table '%s'", res->n + 1, table);
    res->n++;
    return 0;
}

/* Appends a column to the current row; NULL once res holds an error (this call's:
 * ERR_USAGE for no row or a bad name, ERR_NOMEM, or an earlier one). */
static struct res_col *add_col(struct model_result *res, const char *name, const char *unit,
                               enum col_kind kind)
{
    if (res->err)
        return NULL;
    if (!name || !*name || strpbrk(name, ",\"\n\r[] ")) {
        res_fail(res, ERR_USAGE, "bad result column name", "bad result column name '%s'",
                 name ? name : "(null)");
        return NULL;
    }
    if (!res->n) {
        res_fail(res, ERR_USAGE, "result column before any row",
                 "result column '%s' before any row", name);
        return NULL;
    }
    struct res_row *w = &res->rows[res->n - 1];
    if (w->n == w->cap) {
        size_t nc = w->cap ? w->cap * 2 : 16;
        struct res_col *n = mem_realloc(w->cols, nc * sizeof *n);
        if (!n)
            goto nomem;
        w->cols = n;
        w->cap = nc;
    }
    struct res_col *c = &w->cols[w->n];
    memset(c, 0, sizeof *c);
    c->name = mem_strdup(name);
    c->unit = mem_strdup(unit ? unit : "");
    c->kind = kind;
    if (!c->name || !c->unit) {
        mem_free(c->name);
        mem_free(c->unit);
        goto nomem;
    }
    w->n++;
    return c;
nomem:
    res_fail(res, ERR_NOMEM, "out of memory adding a result column",
             "out of memory adding column '%s' to row %zu of table '%s'", name, res->n, w->table);
    return NULL;
}

int result_label(struct model_result *res, const char *name, const char *value)
{
    struct res_col *c = add_col(res, name, "", COL_LABEL);
    if (!c)
        return res->err;
    if (!(c->s = mem_strdup(value ? value : ""))) {
        /* the column stays with an empty value; the row is dropped with the error */
        return res_fail(res, ERR_NOMEM, "out of memory setting a result label",
                        "out of memory setting label '%s' of table '%s'", name,
                        res->rows[res->n - 1].table);
    }
    for (char *p = c->s; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    return 0;
}

int result_count(struct model_result *res, const char *name, const char *unit, uint64_t value)
{
    struct res_col *c = add_col(res, name, unit, COL_COUNT_U64);
    if (!c)
        return res->err;
    c->u = value;
    c->f = (double)value;
    return 0;
}

int result_count_f64(struct model_result *res, const char *name, const char *unit, double value)
{
    struct res_col *c = add_col(res, name, unit, COL_COUNT_F64);
    if (!c)
        return res->err;
    c->f = value;
    return 0;
}

int result_metric(struct model_result *res, const char *name, const char *unit, double value)
{
    struct res_col *c = add_col(res, name, unit, COL_METRIC_F64);
    if (!c)
        return res->err;
    c->f = value;
    return 0;
}

int result_metric_i64(struct model_result *res, const char *name, const char *unit, int64_t value)
{
    struct res_col *c = add_col(res, name, unit, COL_METRIC_I64);
    if (!c)
        return res->err;
    c->i = value;
    c->f = (double)value;
    return 0;
}

int model_result_get(const struct model_result *res, size_t row, const char *name, double *v)
{
    if (row >= res->n)
        return ERR_NOTFOUND;
    const struct res_row *w = &res->rows[row];
    for (size_t c = 0; c < w->n; c++)
        if (w->cols[c].kind != COL_LABEL && !strcmp(w->cols[c].name, name)) {
            *v = w->cols[c].f;
            return 0;
        }
    return ERR_NOTFOUND;
}

static int write_line(int fd, const struct buf *b)
{
    size_t off = 0;
    while (off < b->len) {
        ssize_t k = write(fd, b->data + off, b->len - off);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            return ERR_IO;
        }
        off += (size_t)k;
    }
    return 0;
}

static void cell_name(char *out, size_t n, const char *name, const char *unit)
{
    if (unit && *unit)
        snprintf(out, n, "%s [%s]", name, unit);
    else
        snprintf(out, n, "%s", name);
}

/* Header line of a table for cfg and row w (no newline); a "name" column after the key
 * columns when the sweep names its rows. */
static int make_header(struct buf *b, const struct hw_config *cfg, const struct res_row *w,
                       bool named)
{
    static const char *const keys[] = {"trace_hash", "config_hash", "config_index", "model"};
    int rc = 0;
    char cell[300];
    for (size_t i = 0; i < 4 && !rc; i++)
        rc = buf_printf(b, "%s%s", i ? "," : "", keys[i]);
    if (named && !rc)
        rc = buf_append(b, ",name", 5);
    const struct hw_schema *s = hw_config_schema(cfg);
    for (size_t i = 0; i < s->n_keys && !rc; i++) {
        cell_name(cell, sizeof cell, s->keys[i].key, s->keys[i].unit);
        rc = buf_append(b, ",", 1);
        if (!rc)
            rc = csv_append_field(b, cell);
    }
    for (size_t c = 0; c < w->n && !rc; c++) {
        cell_name(cell, sizeof cell, w->cols[c].name, w->cols[c].unit);
        rc = buf_append(b, ",", 1);
        if (!rc)
            rc = csv_append_field(b, cell);
    }
    return rc;
}

static void col_text(const struct res_col *c, char *out, size_t n)
{
    switch (c->kind) {
    case COL_LABEL:
        snprintf(out, n, "%s", c->s);
        break;
    case COL_COUNT_U64:
        snprintf(out, n, "%" PRIu64, c->u);
        break;
    case COL_METRIC_I64:
        snprintf(out, n, "%" PRId64, c->i);
        break;
    default:
        csv_format_f64(c->f, out, n);
        break;
    }
}

static json_t *col_json(const struct res_col *c)
{
    switch (c->kind) {
    case COL_LABEL:
        return json_string(c->s);
    case COL_COUNT_U64:
        return c->u <= (uint64_t)INT64_MAX ? json_integer((json_int_t)c->u) : json_real(c->f);
    case COL_METRIC_I64:
        return json_integer((json_int_t)c->i);
    default:
        /* JSON has no NaN/inf: write null. */
        return isfinite(c->f) ? json_real(c->f) : json_null();
    }
}

static int lookup_row(void *ctx, const char *name, double *v)
{
    const struct res_row *w = ctx;
    for (size_t c = 0; c < w->n; c++)
        if (w->cols[c].kind != COL_LABEL && !strcmp(w->cols[c].name, name)) {
            *v = w->cols[c].f;
            return 0;
        }
    return ERR_NOTFOUND;
}

/* Appends energy columns to row w when it has every column the table names. */
static int apply_energy(struct model_result *res, size_t row, const struct energy_table *t)
{
    struct res_row *w = &res->rows[row];
    double comp[64], total;
    if (t->n_components > 64)
        return ERR_LIMIT;
    if (energy_compute(t, lookup_row, w, comp, &total))
        return 0;
    /* add_col works on the last row: move this row's columns temporarily. */
    struct model_result one = {.rows = w, .n = 1, .cap = 1};
    char name[300];
    for (size_t c = 0; c < t->n_components; c++) {
        snprintf(name, sizeof name, "energy_%s_j", t->components[c]);
        result_metric(&one, name, "J", comp[c]);
    }
    result_metric(&one, "energy_j", "J", total);
    mem_free(one.err_text); /* only its code is reported (results_append) */
    return one.err ? ERR_NOMEM : 0;
}

/* Writes rows of one table for one config. */
static int write_group(struct results *r, struct table *t, const struct hw_config *cfg,
                       size_t config_index, const struct model_result *res, struct errmsg *e)
{
    size_t n_rows = 0;
    for (size_t i = 0; i < res->n; i++)
        n_rows += !strcmp(res->rows[i].table, t->name);
    struct buf line, hdr;
    buf_init(&line);
    buf_init(&hdr);
    int rc = 0;
    size_t k = 0;
    const struct hw_schema *s = hw_config_schema(cfg);
    char cell[512], row_name[SWEEP_NAME_TOTAL_MAX + 1] = "";
    if (r->names && sweep_name(r->names, config_index, row_name, sizeof row_name)) {
        buf_release(&line);
        buf_release(&hdr);
        return errmsg_set(e, ERR_INTERNAL, "no name for config %zu of the sweep", config_index);
    }
    /* The config's values as JSON, parsed once for all rows of the group. */
    json_error_t je;
    json_t *canon = json_loads(hw_config_canonical(cfg), 0, &je);
    if (!canon) {
        buf_release(&line);
        buf_release(&hdr);
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < res->n && !rc; i++) {
        const struct res_row *w = &res->rows[i];
        if (strcmp(w->table, t->name))
            continue;
        buf_clear(&hdr);
        if ((rc = make_header(&hdr, cfg, w, r->names != NULL)))
            break;
        if (t->csv_fd < 0) {
            bool fresh = !t->header;
            t->csv_fd = open(t->csv_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
            t->jsonl_fd = open(t->jsonl_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
            if (t->csv_fd < 0 || t->jsonl_fd < 0) {
                rc = errmsg_set(e, ERR_IO, "cannot open '%s' for appending: %s", t->csv_path,
                                strerror(errno));
                break;
            }
            if (fresh) {
                buf_clear(&line);
                if ((rc = buf_append(&line, hdr.data, hdr.len)) ||
                    (rc = buf_append(&line, "\n", 1)) || (rc = write_line(t->csv_fd, &line)))
                    break;
                if (!(t->header = mem_alloc(hdr.len + 1))) {
                    rc = ERR_NOMEM;
                    break;
                }
                memcpy(t->header, hdr.data, hdr.len);
                t->header[hdr.len] = 0;
            }
        }
        if (strlen(t->header) != hdr.len || memcmp(t->header, hdr.data, hdr.len)) {
            rc = errmsg_set(e, t->header_checked ? ERR_INTERNAL : ERR_USAGE,
                            "columns of '%s' differ from this run's (%s)", t->csv_path,
                            t->header_checked ? "a model changed its columns between rows"
                                              : "use another -o folder");
            break;
        }
        t->header_checked = true;
        /* CSV line */
        buf_clear(&line);
        rc = buf_printf(&line, "%s,%s,%zu,%s", r->trace_hash, hw_config_hash(cfg), config_index,
                        r->model);
        if (r->names && !rc && !(rc = buf_append(&line, ",", 1)))
            rc = csv_append_field(&line, row_name);
        for (size_t c = 0; c < s->n_keys && !rc; c++) {
            hw_config_value_text(cfg, c, cell, sizeof cell);
            for (char *p = cell; *p; p++)
                if (*p == '\n' || *p == '\r')
                    *p = ' ';
            if (!(rc = buf_append(&line, ",", 1)))
                rc = csv_append_field(&line, cell);
        }
        for (size_t c = 0; c < w->n && !rc; c++) {
            col_text(&w->cols[c], cell, sizeof cell);
            if (!(rc = buf_append(&line, ",", 1)))
                rc = csv_append_field(&line, cell);
        }
        if (!rc)
            rc = buf_append(&line, "\n", 1);
        if (!rc && (rc = write_line(t->csv_fd, &line)))
            rc = errmsg_set(e, rc, "cannot write '%s': %s", t->csv_path, strerror(errno));
        if (rc)
            break;
        /* JSON line */
        json_t *o = json_object(), *jc = json_object(), *jl = json_object(), *jk = json_object(),
               *jm = json_object(), *ju = json_object();
        if (!o || !jc || !jl || !jk || !jm || !ju) {
            json_decref(o);
            json_decref(jc);
            json_decref(jl);
            json_decref(jk);
            json_decref(jm);
            json_decref(ju);
            rc = ERR_NOMEM;
            break;
        }
        json_object_set_new(o, "trace_hash", json_string(r->trace_hash));
        json_object_set_new(o, "config_hash", json_string(hw_config_hash(cfg)));
        json_object_set_new(o, "config_index", json_integer((json_int_t)config_index));
        json_object_set_new(o, "model", json_string(r->model));
        if (r->names)
            json_object_set_new(o, "name", json_string(row_name));
        json_object_set_new(o, "row", json_integer((json_int_t)k));
        json_object_set_new(o, "rows", json_integer((json_int_t)n_rows));
        for (size_t c = 0; c < s->n_keys; c++)
            json_object_set(jc, s->keys[c].key, json_object_get(canon, s->keys[c].key));
        for (size_t c = 0; c < w->n; c++) {
            const struct res_col *col = &w->cols[c];
            json_t *dst = col->kind == COL_LABEL                                       ? jl
                          : (col->kind == COL_COUNT_U64 || col->kind == COL_COUNT_F64) ? jk
                                                                                       : jm;
            json_object_set_new(dst, col->name, col_json(col));
            if (col->unit[0])
                json_object_set_new(ju, col->name, json_string(col->unit));
        }
        json_object_set_new(o, "config", jc);
        json_object_set_new(o, "labels", jl);
        json_object_set_new(o, "counts", jk);
        json_object_set_new(o, "metrics", jm);
        json_object_set_new(o, "units", ju);
        char *js = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
        json_decref(o);
        if (!js) {
            rc = ERR_NOMEM;
            break;
        }
        buf_clear(&line);
        rc = buf_append(&line, js, strlen(js));
        free(js);
        if (!rc)
            rc = buf_append(&line, "\n", 1);
        if (!rc && (rc = write_line(t->jsonl_fd, &line)))
            rc = errmsg_set(e, rc, "cannot write '%s': %s", t->jsonl_path, strerror(errno));
        k++;
    }
    if (rc && !e->code)
        errmsg_set(e, rc, "cannot write results: %s", err_str(rc));
    json_decref(canon);
    buf_release(&line);
    buf_release(&hdr);
    return rc;
}

int results_append(struct results *r, const struct hw_config *cfg, size_t config_index,
                   struct model_result *res, const struct energy_table *energy, struct errmsg *e)
{
    int rc = 0;
    e->code = 0;
    if (result_err(res, e)) /* a half-built result is never written */
        return e->code;
    size_t n_main = 0;
    for (size_t i = 0; i < res->n; i++)
        n_main += !strcmp(res->rows[i].table, "results");
    if (!n_main)
        return errmsg_set(e, ERR_INTERNAL, "model '%s' reported no results row", r->model);
    if (energy)
        for (size_t i = 0; i < res->n; i++)
            if ((rc = apply_energy(res, i, energy)))
                return errmsg_set(e, rc, "cannot apply energy table: %s", err_str(rc));
    /* Secondary tables first (in order of first appearance), the main table last. */
    for (size_t i = 0; i < res->n; i++) {
        const char *tn = res->rows[i].table;
        bool seen = !strcmp(tn, "results");
        for (size_t j = 0; j < i && !seen; j++)
            seen = !strcmp(res->rows[j].table, tn);
        if (seen)
            continue;
        struct table *t = res_table_get(r, tn, e);
        if (!t)
            return e->code;
        if ((rc = write_group(r, t, cfg, config_index, res, e)))
            return rc;
    }
    struct table *m = res_table_get(r, "results", e);
    if (!m)
        return e->code;
    if ((rc = write_group(r, m, cfg, config_index, res, e)))
        return rc;
    if ((rc = res_done_add(r, hw_config_hash(cfg))))
        return errmsg_set(e, rc, "out of memory");
    return 0;
}
