/*
 * results: results folders (see results.h). Every row is written as one CSV line and one
 * JSON line, each with a single write(2); rows never contain raw newlines (they are
 * replaced by spaces), so lines and rows correspond one to one, which is what resume and
 * merge rely on.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/mem.h"
#include "formats/csv.h"
#include "replay/results.h"

#define RES_MAX_FILE_BYTES (1ULL << 32)
#define RES_MAX_TABLES 32

/* ---- model_result ---- */

enum col_kind { COL_LABEL, COL_COUNT_U64, COL_COUNT_F64, COL_METRIC_F64, COL_METRIC_I64 };

struct res_col {
    char *name, *unit;
    enum col_kind kind;
    char *s;
    uint64_t u;
    int64_t i;
    double f;
};

struct res_row {
    char *table;
    struct res_col *cols;
    size_t n, cap;
};

struct model_result {
    struct res_row *rows;
    size_t n, cap;
};

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
    mem_free(res);
}

size_t model_result_rows(const struct model_result *res)
{
    return res->n;
}

static bool ident_ok(const char *s)
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
    if (!table)
        table = "results";
    if (!ident_ok(table))
        return ERR_USAGE;
    if (res->n == res->cap) {
        size_t nc = res->cap ? res->cap * 2 : 4;
        struct res_row *n = mem_realloc(res->rows, nc * sizeof *n);
        if (!n)
            return ERR_NOMEM;
        res->rows = n;
        res->cap = nc;
    }
    struct res_row *w = &res->rows[res->n];
    memset(w, 0, sizeof *w);
    if (!(w->table = mem_strdup(table)))
        return ERR_NOMEM;
    res->n++;
    return 0;
}

/* Appends a column to the current row; NULL with *rc = ERR_USAGE (no row, bad name) or
 * ERR_NOMEM. */
static struct res_col *add_col(struct model_result *res, const char *name, const char *unit,
                               enum col_kind kind, int *rc)
{
    *rc = ERR_USAGE;
    if (!res->n || !name || !*name || strpbrk(name, ",\"\n\r[] "))
        return NULL;
    *rc = ERR_NOMEM;
    struct res_row *w = &res->rows[res->n - 1];
    if (w->n == w->cap) {
        size_t nc = w->cap ? w->cap * 2 : 16;
        struct res_col *n = mem_realloc(w->cols, nc * sizeof *n);
        if (!n)
            return NULL;
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
        return NULL;
    }
    w->n++;
    return c;
}

int result_label(struct model_result *res, const char *name, const char *value)
{
    int rc;
    struct res_col *c = add_col(res, name, "", COL_LABEL, &rc);
    if (!c)
        return rc;
    if (!(c->s = mem_strdup(value ? value : "")))
        return ERR_NOMEM;
    for (char *p = c->s; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    return 0;
}

int result_count(struct model_result *res, const char *name, const char *unit, uint64_t value)
{
    int rc;
    struct res_col *c = add_col(res, name, unit, COL_COUNT_U64, &rc);
    if (!c)
        return rc;
    c->u = value;
    c->f = (double)value;
    return 0;
}

int result_count_f64(struct model_result *res, const char *name, const char *unit, double value)
{
    int rc;
    struct res_col *c = add_col(res, name, unit, COL_COUNT_F64, &rc);
    if (!c)
        return rc;
    c->f = value;
    return 0;
}

int result_metric(struct model_result *res, const char *name, const char *unit, double value)
{
    int rc;
    struct res_col *c = add_col(res, name, unit, COL_METRIC_F64, &rc);
    if (!c)
        return rc;
    c->f = value;
    return 0;
}

int result_metric_i64(struct model_result *res, const char *name, const char *unit,
                      int64_t value)
{
    int rc;
    struct res_col *c = add_col(res, name, unit, COL_METRIC_I64, &rc);
    if (!c)
        return rc;
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

/* ---- files ---- */

struct table {
    char *name;
    char *csv_path, *jsonl_path;
    char *header;      /* existing header line (no newline) or NULL for a new file */
    bool header_checked;
    int csv_fd, jsonl_fd;
};

struct results {
    char *dir;
    char *trace_hash, *model;
    struct table tables[RES_MAX_TABLES];
    size_t n_tables;
    /* done set: open addressing over config hashes */
    char **done;
    size_t done_cap, n_done;
};

static uint64_t str_hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 1099511628211ULL;
    return h;
}

static int done_add(struct results *r, const char *h)
{
    if ((r->n_done + 1) * 2 > r->done_cap) {
        size_t nc = r->done_cap ? r->done_cap * 2 : 64;
        char **n = mem_calloc(nc, sizeof *n);
        if (!n)
            return ERR_NOMEM;
        for (size_t i = 0; i < r->done_cap; i++)
            if (r->done[i]) {
                size_t j = str_hash(r->done[i]) & (nc - 1);
                while (n[j])
                    j = (j + 1) & (nc - 1);
                n[j] = r->done[i];
            }
        mem_free(r->done);
        r->done = n;
        r->done_cap = nc;
    }
    size_t j = str_hash(h) & (r->done_cap - 1);
    while (r->done[j]) {
        if (!strcmp(r->done[j], h))
            return 0;
        j = (j + 1) & (r->done_cap - 1);
    }
    if (!(r->done[j] = mem_strdup(h)))
        return ERR_NOMEM;
    r->n_done++;
    return 0;
}

bool results_done(const struct results *r, const char *config_hash)
{
    if (!r->done_cap)
        return false;
    size_t j = str_hash(config_hash) & (r->done_cap - 1);
    while (r->done[j]) {
        if (!strcmp(r->done[j], config_hash))
            return true;
        j = (j + 1) & (r->done_cap - 1);
    }
    return false;
}

size_t results_n_done(const struct results *r)
{
    return r->n_done;
}

static int read_file(const char *path, char **out, size_t *len, struct errmsg *e)
{
    *out = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (errno == ENOENT)
            return 0;
        return errmsg_set(e, ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    }
    struct stat st;
    if (fstat(fileno(f), &st) || (uint64_t)st.st_size > RES_MAX_FILE_BYTES) {
        fclose(f);
        return errmsg_set(e, ERR_LIMIT, "file too large or unreadable ('%s')", path);
    }
    char *t = mem_alloc((size_t)st.st_size + 1);
    if (!t) {
        fclose(f);
        return errmsg_set(e, ERR_NOMEM, "out of memory reading '%s'", path);
    }
    size_t n = fread(t, 1, (size_t)st.st_size, f);
    fclose(f);
    t[n] = 0;
    *out = t;
    *len = n;
    return 0;
}

static char *path_join(const char *dir, const char *name, const char *ext)
{
    size_t n = strlen(dir) + strlen(name) + strlen(ext) + 3;
    char *p = mem_alloc(n);
    if (p)
        snprintf(p, n, "%s/%s%s", dir, name, ext);
    return p;
}

static int mkdir_p(const char *dir, struct errmsg *e)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s", dir);
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            mkdir(tmp, 0755);
            *p = '/';
        }
    if (mkdir(tmp, 0755) && errno != EEXIST)
        return errmsg_set(e, ERR_IO, "cannot create folder '%s': %s", dir, strerror(errno));
    return 0;
}

static struct table *table_get(struct results *r, const char *name, struct errmsg *e)
{
    for (size_t i = 0; i < r->n_tables; i++)
        if (!strcmp(r->tables[i].name, name))
            return &r->tables[i];
    if (r->n_tables == RES_MAX_TABLES) {
        errmsg_set(e, ERR_LIMIT, "more than %d result tables", RES_MAX_TABLES);
        return NULL;
    }
    struct table *t = &r->tables[r->n_tables];
    memset(t, 0, sizeof *t);
    t->csv_fd = t->jsonl_fd = -1;
    t->name = mem_strdup(name);
    t->csv_path = path_join(r->dir, name, ".csv");
    t->jsonl_path = path_join(r->dir, name, ".jsonl");
    if (!t->name || !t->csv_path || !t->jsonl_path) {
        mem_free(t->name);
        mem_free(t->csv_path);
        mem_free(t->jsonl_path);
        errmsg_set(e, ERR_NOMEM, "out of memory");
        return NULL;
    }
    r->n_tables++;
    return t;
}

/*
 * Trims one table: keeps the leading JSON lines that form complete groups and whose config
 * passes `keep` (main table: every complete group; others: configs done in the main
 * table), and the matching number of CSV rows. Main table: adds kept configs to done.
 */
static int trim_table(struct results *r, struct table *t, bool is_main, struct errmsg *e)
{
    char *text = NULL, *csv = NULL;
    size_t len, clen;
    int rc = read_file(t->jsonl_path, &text, &len, e);
    if (rc)
        return rc;
    size_t pos = 0, keep_bytes = 0, kept_lines = 0, lines = 0, group_lines = 0;
    char group_hash[80] = "";
    json_int_t group_rows = 0;
    while (text && pos < len) {
        char *nl = memchr(text + pos, '\n', len - pos);
        if (!nl)
            break;
        json_error_t je;
        json_t *o = json_loadb(text + pos, (size_t)(nl - (text + pos)), 0, &je);
        const char *th = json_string_value(json_object_get(o, "trace_hash"));
        const char *ch = json_string_value(json_object_get(o, "config_hash"));
        const char *md = json_string_value(json_object_get(o, "model"));
        json_t *jr = json_object_get(o, "row"), *jn = json_object_get(o, "rows");
        if (!o || !th || !ch || !md || !json_is_integer(jr) || !json_is_integer(jn)) {
            json_decref(o);
            break; /* a torn or foreign line ends the usable prefix */
        }
        if (strcmp(th, r->trace_hash) || strcmp(md, r->model)) {
            rc = errmsg_set(e, ERR_USAGE,
                            "results folder '%s' holds rows of trace %.16s model '%s', not "
                            "trace %.16s model '%s' (use another -o folder)",
                            r->dir, th, md, r->trace_hash, r->model);
            json_decref(o);
            goto done;
        }
        if (!is_main && !results_done(r, ch)) {
            json_decref(o);
            break;
        }
        if (json_integer_value(jr) == 0) {
            snprintf(group_hash, sizeof group_hash, "%s", ch);
            group_rows = json_integer_value(jn);
            group_lines = 0;
        } else if (strcmp(group_hash, ch) || json_integer_value(jn) != group_rows) {
            json_decref(o);
            break;
        }
        group_lines++;
        lines++;
        pos = (size_t)(nl - text) + 1;
        if ((json_int_t)group_lines == group_rows) {
            keep_bytes = pos;
            kept_lines = lines;
            if (is_main && (rc = done_add(r, ch))) {
                json_decref(o);
                rc = errmsg_set(e, rc, "out of memory");
                goto done;
            }
        }
        json_decref(o);
    }
    if (text && keep_bytes != len && truncate(t->jsonl_path, (off_t)keep_bytes)) {
        rc = errmsg_set(e, ERR_IO, "cannot truncate '%s': %s", t->jsonl_path, strerror(errno));
        goto done;
    }
    /* CSV: header + kept_lines rows. */
    if ((rc = read_file(t->csv_path, &csv, &clen, e)))
        goto done;
    if (!csv) {
        if (kept_lines) {
            rc = errmsg_set(e, ERR_DATA, "'%s' is missing but '%s' has rows", t->csv_path,
                            t->jsonl_path);
            goto done;
        }
        goto done;
    }
    size_t cpos = 0, cl = 0, ckeep = 0;
    while (cpos < clen) {
        char *nl = memchr(csv + cpos, '\n', clen - cpos);
        if (!nl)
            break;
        if (cl == 0) {
            size_t hl = (size_t)(nl - csv);
            if (!(t->header = mem_alloc(hl + 1))) {
                rc = errmsg_set(e, ERR_NOMEM, "out of memory");
                goto done;
            }
            memcpy(t->header, csv, hl);
            t->header[hl] = 0;
        }
        cpos = (size_t)(nl - csv) + 1;
        if (cl <= kept_lines)
            ckeep = cpos;
        cl++;
        if (cl > kept_lines)
            break;
    }
    if (cl < kept_lines + 1) {
        rc = errmsg_set(e, ERR_DATA, "'%s' has fewer rows than '%s'", t->csv_path,
                        t->jsonl_path);
        goto done;
    }
    if (!kept_lines && !t->header)
        ckeep = 0;
    if (ckeep != clen && truncate(t->csv_path, (off_t)ckeep)) {
        rc = errmsg_set(e, ERR_IO, "cannot truncate '%s': %s", t->csv_path, strerror(errno));
        goto done;
    }
done:
    mem_free(text);
    mem_free(csv);
    return rc;
}

int results_open(struct results **out, const char *dir, const char *trace_hash,
                 const char *model, struct errmsg *e)
{
    *out = NULL;
    int rc = mkdir_p(dir, e);
    if (rc)
        return rc;
    struct results *r = mem_calloc(1, sizeof *r);
    if (!r)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    r->dir = mem_strdup(dir);
    r->trace_hash = mem_strdup(trace_hash);
    r->model = mem_strdup(model);
    if (!r->dir || !r->trace_hash || !r->model) {
        rc = errmsg_set(e, ERR_NOMEM, "out of memory");
        goto fail;
    }
    struct table *m = table_get(r, "results", e);
    if (!m) {
        rc = e->code;
        goto fail;
    }
    if ((rc = trim_table(r, m, true, e)))
        goto fail;
    /* Secondary tables: every other *.jsonl in the folder. */
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *de;
        while ((de = readdir(d))) {
            size_t n = strlen(de->d_name);
            if (n <= 6 || strcmp(de->d_name + n - 6, ".jsonl"))
                continue;
            char name[256];
            snprintf(name, sizeof name, "%.*s", (int)(n - 6), de->d_name);
            if (!strcmp(name, "results") || !ident_ok(name))
                continue;
            struct table *t = table_get(r, name, e);
            if (!t || (rc = trim_table(r, t, false, e))) {
                if (!t)
                    rc = e->code;
                closedir(d);
                goto fail;
            }
        }
        closedir(d);
    }
    *out = r;
    return 0;
fail:
    results_close(r);
    return rc;
}

int results_close(struct results *r)
{
    if (!r)
        return 0;
    int rc = 0;
    for (size_t i = 0; i < r->n_tables; i++) {
        struct table *t = &r->tables[i];
        if (t->csv_fd >= 0 && close(t->csv_fd))
            rc = ERR_IO;
        if (t->jsonl_fd >= 0 && close(t->jsonl_fd))
            rc = ERR_IO;
        mem_free(t->name);
        mem_free(t->csv_path);
        mem_free(t->jsonl_path);
        mem_free(t->header);
    }
    for (size_t i = 0; i < r->done_cap; i++)
        mem_free(r->done[i]);
    mem_free(r->done);
    mem_free(r->dir);
    mem_free(r->trace_hash);
    mem_free(r->model);
    mem_free(r);
    return rc;
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

/* Header line of a table for cfg and row w (no newline). */
static int make_header(struct buf *b, const struct hw_config *cfg, const struct res_row *w)
{
    static const char *const keys[] = {"trace_hash", "config_hash", "config_index", "model"};
    int rc = 0;
    char cell[300];
    for (size_t i = 0; i < 4 && !rc; i++)
        rc = buf_printf(b, "%s%s", i ? "," : "", keys[i]);
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
    case COL_LABEL: snprintf(out, n, "%s", c->s); break;
    case COL_COUNT_U64: snprintf(out, n, "%" PRIu64, c->u); break;
    case COL_METRIC_I64: snprintf(out, n, "%" PRId64, c->i); break;
    default: csv_format_f64(c->f, out, n); break;
    }
}

static json_t *col_json(const struct res_col *c)
{
    switch (c->kind) {
    case COL_LABEL: return json_string(c->s);
    case COL_COUNT_U64:
        return c->u <= (uint64_t)INT64_MAX ? json_integer((json_int_t)c->u) : json_real(c->f);
    case COL_METRIC_I64: return json_integer((json_int_t)c->i);
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
    struct model_result one = {w, 1, 1};
    char name[300];
    for (size_t c = 0; c < t->n_components; c++) {
        snprintf(name, sizeof name, "energy_%s_j", t->components[c]);
        if (result_metric(&one, name, "J", comp[c]))
            return ERR_NOMEM;
    }
    return result_metric(&one, "energy_j", "J", total);
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
    char cell[512];
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
        if ((rc = make_header(&hdr, cfg, w)))
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
        json_object_set_new(o, "row", json_integer((json_int_t)k));
        json_object_set_new(o, "rows", json_integer((json_int_t)n_rows));
        for (size_t c = 0; c < s->n_keys; c++)
            json_object_set(jc, s->keys[c].key, json_object_get(canon, s->keys[c].key));
        for (size_t c = 0; c < w->n; c++) {
            const struct res_col *col = &w->cols[c];
            json_t *dst = col->kind == COL_LABEL ? jl
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
                   struct model_result *res, const struct energy_table *energy,
                   struct errmsg *e)
{
    int rc = 0;
    e->code = 0;
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
        struct table *t = table_get(r, tn, e);
        if (!t)
            return e->code;
        if ((rc = write_group(r, t, cfg, config_index, res, e)))
            return rc;
    }
    struct table *m = table_get(r, "results", e);
    if (!m)
        return e->code;
    if ((rc = write_group(r, m, cfg, config_index, res, e)))
        return rc;
    if ((rc = done_add(r, hw_config_hash(cfg))))
        return errmsg_set(e, rc, "out of memory");
    return 0;
}

/* ---- merge ---- */

struct mline {
    size_t config_index;
    size_t seq;       /* order of reading, for a stable sort */
    size_t dir;       /* folder it came from */
    char *csv, *jsonl; /* lines with newline */
};

static int mline_cmp(const void *a, const void *b)
{
    const struct mline *x = a, *y = b;
    if (x->config_index != y->config_index)
        return x->config_index < y->config_index ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Splits text into lines (with their newline); a torn last line is an error. */
static int split_lines(char *text, size_t len, char ***lines, size_t *n, const char *path,
                       struct errmsg *e)
{
    *lines = NULL;
    *n = 0;
    size_t cap = 0;
    size_t pos = 0;
    while (pos < len) {
        char *nl = memchr(text + pos, '\n', len - pos);
        if (!nl)
            return errmsg_set(e, ERR_DATA, "torn last line in '%s' (rerun that shard)", path);
        if (*n == cap) {
            cap = cap ? cap * 2 : 256;
            char **nn = mem_realloc(*lines, cap * sizeof *nn);
            if (!nn)
                return errmsg_set(e, ERR_NOMEM, "out of memory");
            *lines = nn;
        }
        (*lines)[(*n)++] = text + pos;
        pos = (size_t)(nl - text) + 1;
    }
    return 0;
}

static size_t line_len(const char *l)
{
    return (size_t)(strchr(l, '\n') - l) + 1;
}

/* Merges one table across dirs into out_dir. */
static int merge_table(const char *const *dirs, size_t n_dirs, const char *table,
                       const char *out_dir, char *trace_hash, size_t th_n, char *model,
                       size_t md_n, struct errmsg *e)
{
    struct mline *ml = NULL;
    size_t n_ml = 0, cap_ml = 0, seq = 0;
    char *header = NULL;
    char **texts = mem_calloc(2 * n_dirs + 1, sizeof *texts);
    int rc = 0;
    if (!texts)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    for (size_t d = 0; d < n_dirs; d++) {
        char *cp = path_join(dirs[d], table, ".csv"), *jp = path_join(dirs[d], table, ".jsonl");
        size_t clen = 0, jlen = 0;
        char **cl = NULL, **jl = NULL;
        size_t ncl = 0, njl = 0;
        if (!cp || !jp) {
            rc = errmsg_set(e, ERR_NOMEM, "out of memory");
            goto next;
        }
        if ((rc = read_file(cp, &texts[2 * d], &clen, e)) ||
            (rc = read_file(jp, &texts[2 * d + 1], &jlen, e)))
            goto next;
        if (!texts[2 * d] && !texts[2 * d + 1]) {
            if (!strcmp(table, "results"))
                rc = errmsg_set(e, ERR_DATA, "no results in '%s'", dirs[d]);
            goto next;
        }
        if (!texts[2 * d] || !texts[2 * d + 1]) {
            rc = errmsg_set(e, ERR_DATA, "'%s' lacks %s.csv or %s.jsonl", dirs[d], table, table);
            goto next;
        }
        if ((rc = split_lines(texts[2 * d], clen, &cl, &ncl, cp, e)) ||
            (rc = split_lines(texts[2 * d + 1], jlen, &jl, &njl, jp, e)))
            goto next;
        if (ncl != njl + 1) {
            rc = errmsg_set(e, ERR_DATA, "'%s' and '%s' differ in rows", cp, jp);
            goto next;
        }
        if (!header)
            header = cl[0];
        else if (line_len(header) != line_len(cl[0]) || memcmp(header, cl[0], line_len(header))) {
            rc = errmsg_set(e, ERR_DATA, "'%s' has other columns than the first folder", cp);
            goto next;
        }
        for (size_t i = 0; i < njl; i++) {
            json_error_t je;
            json_t *o = json_loadb(jl[i], line_len(jl[i]), 0, &je);
            const char *th = json_string_value(json_object_get(o, "trace_hash"));
            const char *md = json_string_value(json_object_get(o, "model"));
            json_t *ci = json_object_get(o, "config_index");
            if (!th || !md || !json_is_integer(ci)) {
                json_decref(o);
                rc = errmsg_set(e, ERR_DATA, "bad row ('%s' line %zu)", jp, i + 1);
                goto next;
            }
            if (!trace_hash[0]) {
                snprintf(trace_hash, th_n, "%s", th);
                snprintf(model, md_n, "%s", md);
            } else if (strcmp(trace_hash, th) || strcmp(model, md)) {
                rc = errmsg_set(e, ERR_DATA,
                                "refusing to merge rows of different traces or models: '%s' has "
                                "trace %.16s model '%s', others trace %.16s model '%s'",
                                dirs[d], th, md, trace_hash, model);
                json_decref(o);
                goto next;
            }
            if (n_ml == cap_ml) {
                cap_ml = cap_ml ? cap_ml * 2 : 256;
                struct mline *nm = mem_realloc(ml, cap_ml * sizeof *nm);
                if (!nm) {
                    json_decref(o);
                    rc = errmsg_set(e, ERR_NOMEM, "out of memory");
                    goto next;
                }
                ml = nm;
            }
            ml[n_ml++] = (struct mline){(size_t)json_integer_value(ci), seq++, d, cl[i + 1], jl[i]};
            json_decref(o);
        }
    next:
        mem_free(cp);
        mem_free(jp);
        mem_free(cl);
        mem_free(jl);
        if (rc)
            goto done;
    }
    if (!header)
        goto done;
    qsort(ml, n_ml, sizeof *ml, mline_cmp);
    /* The same config from two folders: duplicates are refused (overlapping shards). */
    for (size_t i = 1; i < n_ml; i++)
        if (ml[i].config_index == ml[i - 1].config_index && ml[i].dir != ml[i - 1].dir) {
            rc = errmsg_set(e, ERR_DATA, "config %zu appears in both '%s' and '%s'",
                            ml[i].config_index, dirs[ml[i - 1].dir], dirs[ml[i].dir]);
            goto done;
        }
    char *cp = path_join(out_dir, table, ".csv"), *jp = path_join(out_dir, table, ".jsonl");
    FILE *fc = cp ? fopen(cp, "wb") : NULL, *fj = jp ? fopen(jp, "wb") : NULL;
    if (!fc || !fj) {
        rc = errmsg_set(e, ERR_IO, "cannot write '%s': %s", cp ? cp : out_dir, strerror(errno));
    } else {
        fwrite(header, 1, line_len(header), fc);
        for (size_t i = 0; i < n_ml; i++) {
            fwrite(ml[i].csv, 1, line_len(ml[i].csv), fc);
            fwrite(ml[i].jsonl, 1, line_len(ml[i].jsonl), fj);
        }
    }
    if (fc && fclose(fc) && !rc)
        rc = errmsg_set(e, ERR_IO, "cannot write '%s'", cp);
    if (fj && fclose(fj) && !rc)
        rc = errmsg_set(e, ERR_IO, "cannot write '%s'", jp);
    mem_free(cp);
    mem_free(jp);
done:
    for (size_t i = 0; i < 2 * n_dirs; i++)
        mem_free(texts[i]);
    mem_free(texts);
    mem_free(ml);
    return rc;
}

int results_merge(const char *const *dirs, size_t n_dirs, const char *out_dir,
                  struct errmsg *e)
{
    if (!n_dirs)
        return errmsg_set(e, ERR_USAGE, "no folders to merge");
    int rc = mkdir_p(out_dir, e);
    if (rc)
        return rc;
    /* Table names: every *.jsonl of every folder. */
    char *names[RES_MAX_TABLES];
    size_t n_names = 0;
    names[n_names++] = mem_strdup("results");
    for (size_t d = 0; d < n_dirs; d++) {
        DIR *dh = opendir(dirs[d]);
        if (!dh) {
            rc = errmsg_set(e, ERR_IO, "cannot open folder '%s': %s", dirs[d], strerror(errno));
            goto done;
        }
        struct dirent *de;
        while ((de = readdir(dh))) {
            size_t n = strlen(de->d_name);
            if (n <= 6 || strcmp(de->d_name + n - 6, ".jsonl"))
                continue;
            char name[256];
            snprintf(name, sizeof name, "%.*s", (int)(n - 6), de->d_name);
            if (!ident_ok(name))
                continue;
            bool seen = false;
            for (size_t i = 0; i < n_names && !seen; i++)
                seen = names[i] && !strcmp(names[i], name);
            if (!seen && n_names < RES_MAX_TABLES)
                names[n_names++] = mem_strdup(name);
        }
        closedir(dh);
    }
    char trace_hash[128] = "", model[128] = "";
    for (size_t i = 0; i < n_names && !rc; i++) {
        if (!names[i]) {
            rc = errmsg_set(e, ERR_NOMEM, "out of memory");
            break;
        }
        rc = merge_table(dirs, n_dirs, names[i], out_dir, trace_hash, sizeof trace_hash, model,
                         sizeof model, e);
    }
done:
    for (size_t i = 0; i < n_names; i++)
        mem_free(names[i]);
    return rc;
}
