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
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/io.h"
#include "common/mem.h"
#include "formats/csv.h"
#include "replay/results.h"
#include "traces/trace_hash.h"

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
    /* The first error of a result_* call, sticky (model.h). Kept small (one is held per
     * instance of a batch, docs/models.md#memory-estimates-replay-engine-convention): the message
     * is allocated, and err_what is the fixed text used when that allocation fails. */
    int err;              /* 0 none, else a negative enum err */
    char *err_text;       /* its message, or NULL */
    const char *err_what; /* fixed fallback message */
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
    if (res->err)
        return res->err;
    if (!table)
        table = "results";
    if (!ident_ok(table))
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

/* ---- files ---- */

struct table {
    char *name;
    char *csv_path, *jsonl_path;
    char *header; /* existing header line (no newline) or NULL for a new file */
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
    int lock_fd;               /* DIR/.lock, held exclusively until results_close */
    struct buf notes;          /* what opening dropped (NUL-terminated when len > 0) */
    const struct sweep *names; /* the caller's named sweep (results_set_names), or NULL */
};

void results_set_names(struct results *r, const struct sweep *s)
{
    r->names = s && sweep_has_names(s) ? s : NULL;
}

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

static char *path_join(const char *dir, const char *name, const char *ext)
{
    size_t n = strlen(dir) + strlen(name) + strlen(ext) + 3;
    char *p = mem_alloc(n);
    if (p)
        snprintf(p, n, "%s/%s%s", dir, name, ext);
    return p;
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

/* Appends one "what was dropped" note to r->notes (kept NUL-terminated). */
static void note(struct results *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(struct results *r, const char *fmt, ...)
{
    char text[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    if ((r->notes.len && buf_append(&r->notes, "; ", 2)) ||
        buf_append(&r->notes, text, strlen(text)) || buf_append(&r->notes, "", 1))
        return;
    r->notes.len--;
}

/* Opens path for reading; *f NULL when it does not exist. */
static int open_read(const char *path, FILE **f, struct errmsg *e)
{
    *f = fopen(path, "rb");
    if (!*f && errno != ENOENT)
        return errmsg_set(e, ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    return 0;
}

/* Key prefix "trace_hash,config_hash,config_index,model," of a row's CSV line. */
static void key_prefix(char *out, size_t n, const char *th, const char *ch, json_int_t ci,
                       const char *md)
{
    snprintf(out, n, "%s,%s,%" JSON_INTEGER_FORMAT ",%s,", th, ch, ci, md);
}

/*
 * Trims one table, streaming both files in step. Keeps the leading JSON lines that form
 * complete groups (main table: every complete group; others: groups of configs done in
 * the main table) and as many CSV rows, whose key columns must equal their JSON lines'.
 * Only the tail may go: a torn last line, the one group in flight (incomplete, or not
 * done in the main table) and CSV rows past the JSON lines; anything else is ERR_DATA
 * naming file and line. Main table: adds kept configs to done.
 */
static int trim_table(struct results *r, struct table *t, bool is_main, struct errmsg *e)
{
    FILE *fj = NULL, *fc = NULL;
    char *jl = NULL, *cl = NULL;
    size_t jcap = 0, ccap = 0;
    int rc = open_read(t->jsonl_path, &fj, e);
    if (!rc)
        rc = open_read(t->csv_path, &fc, e);
    if (rc)
        goto done;
    ssize_t n = 0, jlen;
    bool ctorn = false;
    /* CSV header */
    uint64_t cpos = 0, ckeep = 0, csv_rows = 0, keep_bytes = 0, pos = 0;
    if (fc && (n = getline(&cl, &ccap, fc)) > 0 && cl[n - 1] == '\n') {
        if (!(t->header = mem_alloc((size_t)n))) {
            rc = errmsg_set(e, ERR_NOMEM, "out of memory");
            goto done;
        }
        memcpy(t->header, cl, (size_t)n - 1);
        t->header[n - 1] = 0;
        cpos = ckeep = (uint64_t)n;
    }
    size_t line = 0, kept_lines = 0, bad_csv_line = 0;
    /* the group being read: first line, config, rows expected and seen, whether kept */
    size_t g_first = 0, g_lines = 0;
    json_int_t g_rows = 0, g_ci = 0;
    char g_hash[80] = "";
    bool g_open = false, g_keep = false, torn = false;
    while (fj && (jlen = getline(&jl, &jcap, fj)) > 0) {
        line++;
        if (jl[jlen - 1] != '\n') {
            torn = true;
            break;
        }
        json_error_t je;
        json_t *o = json_loadb(jl, (size_t)jlen, 0, &je);
        const char *th = json_string_value(json_object_get(o, "trace_hash"));
        const char *ch = json_string_value(json_object_get(o, "config_hash"));
        const char *md = json_string_value(json_object_get(o, "model"));
        json_t *jr = json_object_get(o, "row"), *jn = json_object_get(o, "rows");
        json_t *jc = json_object_get(o, "config_index");
        if (!o || !th || !ch || !md || strlen(ch) >= sizeof g_hash || !json_is_integer(jr) ||
            !json_is_integer(jn) || !json_is_integer(jc) || json_integer_value(jn) < 1) {
            json_decref(o);
            rc = errmsg_set(e, ERR_DATA,
                            "corrupt row ('%s' line %zu): fix or remove it and the rows after "
                            "it, or use another -o folder",
                            t->jsonl_path, line);
            goto done;
        }
        if (strcmp(th, r->trace_hash) || strcmp(md, r->model)) {
            rc = errmsg_set(e, ERR_USAGE,
                            "results folder '%s' holds rows of trace %.16s model '%s', not "
                            "trace %.16s model '%s' (use another -o folder)",
                            r->dir, th, md, r->trace_hash, r->model);
            json_decref(o);
            goto done;
        }
        json_int_t row = json_integer_value(jr), rows = json_integer_value(jn);
        if (row == 0) {
            if (g_open) {
                json_decref(o);
                rc = errmsg_set(e, ERR_DATA,
                                "%s rows of config %" JSON_INTEGER_FORMAT
                                " ('%s' line %zu) are followed by more rows (line %zu): fix "
                                "the file or use another -o folder",
                                g_keep ? "incomplete" : "unfinished", g_ci, t->jsonl_path, g_first,
                                line);
                goto done;
            }
            snprintf(g_hash, sizeof g_hash, "%s", ch);
            g_rows = rows;
            g_ci = json_integer_value(jc);
            g_first = line;
            g_lines = 0;
            g_open = true;
            g_keep = is_main || results_done(r, ch);
        } else if (!g_open || strcmp(g_hash, ch) || rows != g_rows || row != (json_int_t)g_lines) {
            /* ch belongs to o: format the message before releasing it (fuzz_results) */
            rc = errmsg_set(e, ERR_DATA,
                            "row %" JSON_INTEGER_FORMAT " of config %s out of place ('%s' line "
                            "%zu): fix the file or use another -o folder",
                            row, ch, t->jsonl_path, line);
            json_decref(o);
            goto done;
        }
        /* the CSV row of this line, keys compared */
        char want[300];
        key_prefix(want, sizeof want, th, ch, json_integer_value(jc), md);
        json_decref(o);
        if (fc && t->header && (n = getline(&cl, &ccap, fc)) > 0 && cl[n - 1] == '\n') {
            csv_rows++;
            cpos += (uint64_t)n;
            if (!bad_csv_line && strncmp(cl, want, strlen(want)))
                bad_csv_line = line;
        } else if (fc && t->header && n > 0) {
            cpos += (uint64_t)n; /* torn last CSV row */
            ctorn = true;
        }
        g_lines++;
        pos += (uint64_t)jlen;
        if ((json_int_t)g_lines == g_rows) {
            if (g_keep) {
                keep_bytes = pos;
                kept_lines = line;
                if (csv_rows == line)
                    ckeep = cpos;
                g_open = false;
                if (is_main && (rc = done_add(r, g_hash))) {
                    rc = errmsg_set(e, rc, "out of memory");
                    goto done;
                }
            }
            /* a complete group not done in the main table stays open: nothing may follow */
        }
    }
    if (fj && ferror(fj)) {
        rc = errmsg_set(e, ERR_IO, "cannot read '%s': %s", t->jsonl_path, strerror(errno));
        goto done;
    }
    if (kept_lines && !fc) {
        rc = errmsg_set(e, ERR_DATA, "'%s' is missing but '%s' has rows", t->csv_path,
                        t->jsonl_path);
        goto done;
    }
    if (csv_rows < kept_lines) {
        rc = errmsg_set(e, ERR_DATA,
                        "'%s' has %" PRIu64 " rows, '%s' %zu: fix the files or use "
                        "another -o folder",
                        t->csv_path, csv_rows, t->jsonl_path, kept_lines);
        goto done;
    }
    if (bad_csv_line && bad_csv_line <= kept_lines) {
        rc = errmsg_set(e, ERR_DATA,
                        "row keys of '%s' line %zu differ from '%s' line %zu: fix the files or "
                        "use another -o folder",
                        t->csv_path, bad_csv_line + 1, t->jsonl_path, bad_csv_line);
        goto done;
    }
    /* what goes: say it */
    if (g_open)
        note(r, "'%s': %zu row(s) of config %" JSON_INTEGER_FORMAT " (lines %zu-%zu, %s)",
             t->jsonl_path, g_lines, g_ci, g_first, g_first + g_lines - 1,
             g_keep ? "incomplete group" : "config not in results.jsonl");
    if (torn)
        note(r, "'%s': a torn last line (line %zu)", t->jsonl_path, line);
    if (fc) {
        /* count the CSV rows past the kept ones */
        uint64_t extra = csv_rows - kept_lines, total = 0;
        struct stat st;
        if (!fstat(fileno(fc), &st))
            total = (uint64_t)st.st_size;
        while (t->header && !ctorn && (n = getline(&cl, &ccap, fc)) > 0) {
            if (cl[n - 1] == '\n')
                extra++;
            else
                ctorn = true;
        }
        if (!t->header && total) {
            note(r, "'%s': a torn header line", t->csv_path);
        } else {
            if (extra)
                note(r, "'%s': %" PRIu64 " row(s) from line %zu on", t->csv_path, extra,
                     kept_lines + 2);
            if (ctorn)
                note(r, "'%s': a torn last line", t->csv_path);
        }
        if (ckeep != total && truncate(t->csv_path, (off_t)ckeep)) {
            rc = errmsg_set(e, ERR_IO, "cannot truncate '%s': %s", t->csv_path, strerror(errno));
            goto done;
        }
    }
    if (fj) {
        struct stat st;
        if (!fstat(fileno(fj), &st) && (uint64_t)st.st_size != keep_bytes &&
            truncate(t->jsonl_path, (off_t)keep_bytes)) {
            rc = errmsg_set(e, ERR_IO, "cannot truncate '%s': %s", t->jsonl_path, strerror(errno));
            goto done;
        }
    }
done:
    free(jl);
    free(cl);
    if (fj)
        fclose(fj);
    if (fc)
        fclose(fc);
    return rc;
}

/* ---- lock ---- */

int results_lock(const char *dir, bool exclusive, const char *verb, int *fd, struct errmsg *e)
{
    *fd = -1;
    int rc = exclusive ? io_mkdir_p(dir, 0755, e) : 0;
    if (rc)
        return rc;
    char *p = path_join(dir, ".lock", "");
    if (!p)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    int f = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (f < 0 && !exclusive && (errno == EACCES || errno == EROFS)) {
        /* a folder this user cannot write: nobody writes it through us; read unlocked */
        f = open(p, O_RDONLY | O_CLOEXEC);
        if (f < 0)
            goto done;
    }
    if (f < 0) {
        rc = errmsg_set(e, ERR_IO, "cannot open lock '%s': %s", p, strerror(errno));
        goto done;
    }
    if (flock(f, (exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB)) {
        int err = errno;
        /* the holder writes "PID VERB" just after taking the lock: give it up to 100 ms */
        char holder[128] = "";
        for (int tries = 0; tries < 50 && err == EWOULDBLOCK; tries++) {
            ssize_t k = pread(f, holder, sizeof holder - 1, 0);
            holder[k > 0 ? k : 0] = 0;
            if (strchr(holder, '\n'))
                break;
            nanosleep(&(struct timespec){0, 2000000}, NULL);
        }
        holder[strcspn(holder, "\n")] = 0;
        close(f);
        if (err != EWOULDBLOCK) {
            rc = errmsg_set(e, ERR_IO, "cannot lock '%s': %s", p, strerror(err));
            goto done;
        }
        unsigned long pid = 0;
        char who[64] = "";
        if (sscanf(holder, "%lu %63s", &pid, who) == 2)
            rc = errmsg_set(e, ERR_USAGE,
                            "results folder '%s' is in use by another writer (pid %lu, "
                            "acceltrace %s): wait for it or use another folder",
                            dir, pid, who);
        else
            rc = errmsg_set(e, ERR_USAGE,
                            "results folder '%s' is in use by another writer: wait for it or "
                            "use another folder",
                            dir);
        goto done;
    }
    if (exclusive) {
        char text[96];
        int len = snprintf(text, sizeof text, "%ld %s\n", (long)getpid(), verb ? verb : "?");
        /* informational only: the flock is the lock */
        if (ftruncate(f, 0) || pwrite(f, text, (size_t)len, 0) != len) {
            rc = errmsg_set(e, ERR_IO, "cannot write lock '%s': %s", p, strerror(errno));
            close(f);
            goto done;
        }
    }
    *fd = f;
done:
    mem_free(p);
    return rc;
}

void results_unlock(int fd)
{
    if (fd >= 0)
        close(fd);
}

/* ---- manifest ---- */

int results_hash_json_file(const char *path, char out[RESULTS_HASH_HEX], struct errmsg *e)
{
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je);
    if (!root && je.line < 1)
        return errmsg_set(e, ERR_NOINPUT, "cannot read '%s': %s", path, je.text);
    if (!root)
        return errmsg_set(e, ERR_CONFIG, "bad JSON: %s ('%s' line %d column %d)", je.text, path,
                          je.line, je.column);
    char *text = json_dumps(root, JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(17));
    json_decref(root);
    if (!text)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    struct trace_hash h;
    int rc = trace_hash_init(&h, TRACE_HASH_XXH3_128);
    if (!rc) {
        trace_hash_update(&h, text, strlen(text));
        trace_hash_hex(&h, out);
        trace_hash_release(&h);
    }
    free(text);
    return rc ? errmsg_set(e, rc, "cannot hash '%s'", path) : 0;
}

/* json string or null */
static json_t *str_or_null(const char *s)
{
    return s ? json_string(s) : json_null();
}

static json_t *manifest_json(const struct results_manifest *m)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    json_object_set_new(o, "format", json_integer(1));
    json_object_set_new(o, "version", str_or_null(m->version));
    json_object_set_new(o, "model", str_or_null(m->model));
    json_object_set_new(o, "trace_hash", str_or_null(m->trace_hash));
    json_object_set_new(o, "config_hash", str_or_null(m->config_hash));
    json_object_set_new(o, "grid_hash", str_or_null(m->grid_hash));
    json_object_set_new(o, "n_configs", json_integer((json_int_t)m->n_configs));
    json_object_set_new(o, "energy_hash", str_or_null(m->energy_hash));
    json_object_set_new(o, "energy_table", str_or_null(m->energy_path));
    json_object_set_new(o, "shard", str_or_null(m->shard));
    json_object_set_new(o, "command", str_or_null(m->command));
    if (m->trace_source && m->trace_source[0])
        json_object_set_new(o, "trace_source", json_string(m->trace_source));
    if (m->trace_source_detail && m->trace_source_detail[0])
        json_object_set_new(o, "trace_source_detail", json_string(m->trace_source_detail));
    if (m->trace_path && m->trace_path[0])
        json_object_set_new(o, "trace_path", json_string(m->trace_path));
    return o;
}

/* Writes obj to DIR/manifest.json through a temporary, fsync and rename. */
static int manifest_write(const char *dir, const json_t *obj, struct errmsg *e)
{
    char *p = path_join(dir, "manifest.json", ""), *tmp = path_join(dir, ".manifest.json", ".tmp");
    char *text = json_dumps(obj, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    int rc = 0, fd = -1;
    if (!p || !tmp || !text) {
        rc = errmsg_set(e, ERR_NOMEM, "out of memory");
        goto done;
    }
    size_t len = strlen(text);
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0 || write(fd, text, len) != (ssize_t)len || write(fd, "\n", 1) != 1 || fsync(fd)) {
        rc = errmsg_set(e, ERR_IO, "cannot write '%s': %s", tmp, strerror(errno));
        goto done;
    }
    if (close(fd)) {
        fd = -1;
        rc = errmsg_set(e, ERR_IO, "cannot write '%s': %s", tmp, strerror(errno));
        goto done;
    }
    fd = -1;
    if (rename(tmp, p))
        rc = errmsg_set(e, ERR_IO, "cannot rename '%s' to '%s': %s", tmp, p, strerror(errno));
done:
    if (fd >= 0)
        close(fd);
    if (rc && tmp)
        unlink(tmp);
    free(text);
    mem_free(p);
    mem_free(tmp);
    return rc;
}

/* Reads DIR/manifest.json; *out NULL when there is none. */
static int manifest_read(const char *dir, json_t **out, struct errmsg *e)
{
    *out = NULL;
    char *p = path_join(dir, "manifest.json", "");
    if (!p)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    int rc = 0;
    json_error_t je;
    if (access(p, F_OK) == 0) {
        *out = json_load_file(p, JSON_PRESERVE_ORDER, &je);
        if (!*out || !json_is_object(*out)) {
            json_decref(*out);
            *out = NULL;
            rc = errmsg_set(e, ERR_DATA, "bad manifest: %s ('%s' line %d)", je.text, p, je.line);
        }
    }
    mem_free(p);
    return rc;
}

int results_write_output_manifest(const char *dir, const struct results_output_manifest *m,
                                  struct errmsg *e)
{
    json_t *have = NULL, *o = NULL, *in = NULL;
    int rc = manifest_read(dir, &have, e);
    if (rc == ERR_DATA)
        rc = 0; /* a damaged manifest of ours is replaced */
    if (rc || (have && !json_object_get(have, "kind")))
        goto done;
    if (!(o = json_object()) || !(in = json_array())) {
        rc = errmsg_set(e, ERR_NOMEM, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < m->n_inputs; i++)
        json_array_append_new(in, json_string(m->inputs[i]));
    json_object_set_new(o, "format", json_integer(1));
    json_object_set_new(o, "kind", str_or_null(m->kind));
    json_object_set_new(o, "version", str_or_null(m->version));
    json_object_set_new(o, "command", str_or_null(m->command));
    json_object_set(o, "inputs", in);
    json_object_set_new(o, "trace_hash", str_or_null(m->trace_hash));
    json_object_set_new(o, "config_hash", str_or_null(m->config_hash));
    if (m->trace_source && m->trace_source[0])
        json_object_set_new(o, "trace_source", json_string(m->trace_source));
    if (m->trace_source_detail && m->trace_source_detail[0])
        json_object_set_new(o, "trace_source_detail", json_string(m->trace_source_detail));
    rc = manifest_write(dir, o, e);
done:
    json_decref(in);
    json_decref(o);
    json_decref(have);
    return rc;
}

static const char *jstr(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

/* Compared fields: key, words for messages. */
static const char *const manifest_keys[][2] = {
    {"version", "tool version"},     {"model", "model"},
    {"trace_hash", "trace"},         {"config_hash", "base config (--hw)"},
    {"grid_hash", "sweep grid"},     {"n_configs", "number of configs"},
    {"energy_hash", "energy table"}, {"shard", "shard"},
};

/*
 * Fields of manifests `was` and `now` that differ, as "what (A<sep>B), ..." into out;
 * skip_shard for merge. Returns the number of differences.
 */
static size_t manifest_diff(const json_t *was, const json_t *now, bool skip_shard, const char *sep,
                            char *out, size_t n)
{
    size_t k = 0, used = 0;
    out[0] = 0;
    for (size_t i = 0; i < sizeof manifest_keys / sizeof manifest_keys[0]; i++) {
        const char *key = manifest_keys[i][0];
        if (skip_shard && !strcmp(key, "shard"))
            continue;
        json_t *a = json_object_get(was, key), *b = json_object_get(now, key);
        if (json_equal(a, b) || (!a && json_is_null(b)) || (json_is_null(a) && !b))
            continue;
        char va[96], vb[96];
        const json_t *v[2] = {a, b};
        char *dst[2] = {va, vb};
        for (int j = 0; j < 2; j++) {
            if (json_is_string(v[j]))
                snprintf(dst[j], sizeof va, "%.16s", json_string_value(v[j]));
            else if (json_is_integer(v[j]))
                snprintf(dst[j], sizeof va, "%" JSON_INTEGER_FORMAT, json_integer_value(v[j]));
            else
                snprintf(dst[j], sizeof va, "none");
        }
        if (!strcmp(key, "energy_hash")) {
            const char *pa = jstr(was, "energy_table"), *pb = jstr(now, "energy_table");
            if (json_is_string(a) && pa)
                snprintf(va, sizeof va, "'%.90s'", pa);
            if (json_is_string(b) && pb)
                snprintf(vb, sizeof vb, "'%.90s'", pb);
            if (!strcmp(va, vb))
                snprintf(vb, sizeof vb, "changed");
        }
        int w = snprintf(out + used, n - used, "%s%s (%s%s%s)", k ? ", " : "", manifest_keys[i][1],
                         va, sep, vb);
        if (w > 0 && (size_t)w < n - used)
            used += (size_t)w;
        k++;
    }
    return k;
}

int results_trace_hash(const char *dir, char *out, size_t n, struct errmsg *e)
{
    out[0] = 0;
    json_t *m = NULL;
    int rc = manifest_read(dir, &m, e);
    if (rc)
        return rc;
    if (m && jstr(m, "trace_hash")) {
        snprintf(out, n, "%s", jstr(m, "trace_hash"));
        json_decref(m);
        return 0;
    }
    json_decref(m);
    char *p = path_join(dir, "results", ".jsonl");
    FILE *f = NULL;
    char *l = NULL;
    size_t cap = 0;
    if (!p)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    if ((rc = open_read(p, &f, e)))
        goto done;
    ssize_t k = f ? getline(&l, &cap, f) : -1;
    if (k <= 0) {
        rc = errmsg_set(e, ERR_NOTFOUND, "no rows in '%s'", p);
        goto done;
    }
    json_error_t je;
    json_t *o = json_loadb(l, (size_t)k, 0, &je);
    const char *th = jstr(o, "trace_hash");
    if (th)
        snprintf(out, n, "%s", th);
    else
        rc = errmsg_set(e, ERR_DATA, "no trace_hash in '%s' line 1", p);
    json_decref(o);
done:
    if (f)
        fclose(f);
    free(l);
    mem_free(p);
    return rc;
}

/* Opens r: lock, manifest check (m may be NULL), trim. */
static int results_open_impl(struct results **out, const char *dir, const char *trace_hash,
                             const char *model, const struct results_manifest *m, struct errmsg *e)
{
    *out = NULL;
    int rc = io_mkdir_p(dir, 0755, e);
    if (rc)
        return rc;
    json_t *have = NULL, *want = NULL;
    struct results *r = mem_calloc(1, sizeof *r);
    if (!r)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    r->lock_fd = -1;
    buf_init(&r->notes);
    r->dir = mem_strdup(dir);
    r->trace_hash = mem_strdup(trace_hash);
    r->model = mem_strdup(model);
    if (!r->dir || !r->trace_hash || !r->model) {
        rc = errmsg_set(e, ERR_NOMEM, "out of memory");
        goto fail;
    }
    /* the lock first: nothing below may touch a folder another writer holds */
    if ((rc = results_lock(dir, true, "replay", &r->lock_fd, e)))
        goto fail;
    struct table *mt = table_get(r, "results", e);
    if (!mt) {
        rc = e->code;
        goto fail;
    }
    if (m) {
        if ((rc = manifest_read(dir, &have, e)))
            goto fail;
        if (!(want = manifest_json(m))) {
            rc = errmsg_set(e, ERR_NOMEM, "out of memory");
            goto fail;
        }
        char diff[400];
        if (have && manifest_diff(have, want, false, ", now ", diff, sizeof diff)) {
            bool energy_only = !strncmp(diff, "energy table", 12) && !strstr(diff, "), ");
            rc = errmsg_set(e, ERR_USAGE,
                            "results folder '%s' was made by another run: %s; use another -o "
                            "folder%s",
                            dir, diff,
                            energy_only && m->energy_path
                                ? " (or apply the table to its rows: acceltrace energy DIR "
                                  "--table E.json)"
                                : "");
            goto fail;
        }
        struct stat st;
        if (!have && !stat(mt->jsonl_path, &st) && st.st_size > 0) {
            rc = errmsg_set(e, ERR_USAGE,
                            "results folder '%s' has rows but no manifest.json (written by an "
                            "older acceltrace?): use another -o folder",
                            dir);
            goto fail;
        }
    }
    if ((rc = trim_table(r, mt, true, e)))
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
    if (m && !have && (rc = manifest_write(dir, want, e)))
        goto fail;
    json_decref(have);
    json_decref(want);
    *out = r;
    return 0;
fail:
    json_decref(have);
    json_decref(want);
    results_close(r);
    return rc;
}

int results_open(struct results **out, const char *dir, const char *trace_hash, const char *model,
                 struct errmsg *e)
{
    return results_open_impl(out, dir, trace_hash, model, NULL, e);
}

int results_open_manifest(struct results **out, const char *dir, const struct results_manifest *m,
                          struct errmsg *e)
{
    if (!m->trace_hash || !m->model)
        return errmsg_set(e, ERR_INTERNAL, "manifest without trace or model");
    return results_open_impl(out, dir, m->trace_hash, m->model, m, e);
}

const char *results_dropped(const struct results *r)
{
    return r->notes.len ? (const char *)r->notes.data : NULL;
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
    buf_release(&r->notes);
    results_unlock(r->lock_fd);
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

/* ---- energy ---- */

/* A CSV row's cells by column, for energy_compute: the last column of that name wins (the
 * model's columns come after the config keys). */
struct erow {
    char **names;  /* header names without units (n) */
    bool *drop;    /* energy columns being replaced (n) */
    char **fields; /* (n) */
    size_t n;
};

static int erow_lookup(void *ctx, const char *name, double *v)
{
    const struct erow *w = ctx;
    for (size_t i = w->n; i-- > 4;) {
        if (w->drop[i] || strcmp(w->names[i], name))
            continue;
        char *end;
        if (!w->fields[i][0])
            return ERR_NOTFOUND;
        *v = strtod(w->fields[i], &end);
        return *end ? ERR_NOTFOUND : 0;
    }
    return ERR_NOTFOUND;
}

/* Drops the energy keys (units "J") from a JSON line's metrics and units. */
static void json_drop_energy(json_t *o)
{
    json_t *jm = json_object_get(o, "metrics"), *ju = json_object_get(o, "units");
    const char *k;
    json_t *v;
    void *tmp;
    json_object_foreach_safe(jm, tmp, k, v)
    {
        if (energy_is_column(k, json_string_value(json_object_get(ju, k)))) {
            json_object_del(ju, k);
            json_object_del(jm, k);
        }
    }
}

/*
 * The two temporaries (csv, jsonl) of a table being rewritten: tmp_pair_sync flushes and
 * fsyncs both before they are renamed over the table; tmp_pair_close closes them (NULL is
 * skipped) and returns rc, or the first close error when rc is 0.
 */
static int tmp_pair_sync(FILE *oc, FILE *oj, const char *csv_tmp, const char *jsonl_tmp,
                         struct errmsg *e)
{
    if (fflush(oc) || fsync(fileno(oc)))
        return errmsg_set(e, ERR_IO, "cannot write '%s': %s", csv_tmp, strerror(errno));
    if (fflush(oj) || fsync(fileno(oj)))
        return errmsg_set(e, ERR_IO, "cannot write '%s': %s", jsonl_tmp, strerror(errno));
    return 0;
}

static int tmp_pair_close(FILE *oc, FILE *oj, const char *csv_tmp, const char *jsonl_tmp, int rc,
                          struct errmsg *e)
{
    if (oc && fclose(oc) && !rc)
        rc = errmsg_set(e, ERR_IO, "cannot write '%s'", csv_tmp);
    if (oj && fclose(oj) && !rc)
        rc = errmsg_set(e, ERR_IO, "cannot write '%s'", jsonl_tmp);
    return rc;
}

/* Rewrites one table of dir into temporaries csv_tmp/jsonl_tmp. */
static int energy_table_rewrite(const char *dir, const char *table, const struct energy_table *t,
                                const char *csv_tmp, const char *jsonl_tmp, size_t *n_rows,
                                struct errmsg *e)
{
    char *cp = path_join(dir, table, ".csv"), *jp = path_join(dir, table, ".jsonl");
    FILE *fc = NULL, *fj = NULL, *oc = NULL, *oj = NULL;
    char *cl = NULL, *jl = NULL;
    size_t ccap = 0, jcap = 0, line = 0;
    char **hdr = NULL, **fields = NULL;
    size_t n_cols = 0, nf = 0;
    struct erow w = {0};
    double *comp = mem_calloc(t->n_components + 1, sizeof *comp);
    struct buf out;
    buf_init(&out);
    int rc = 0;
    if (!cp || !jp || !comp) {
        rc = errmsg_set(e, ERR_NOMEM, "out of memory");
        goto done;
    }
    if ((rc = open_read(cp, &fc, e)) || (rc = open_read(jp, &fj, e)))
        goto done;
    if (!fc || !fj) {
        rc = errmsg_set(e, ERR_DATA, "'%s' lacks %s.csv or %s.jsonl", dir, table, table);
        goto done;
    }
    ssize_t n = getline(&cl, &ccap, fc);
    if (n <= 0 || cl[n - 1] != '\n' || csv_split_record(cl, (size_t)n, &hdr, &n_cols) ||
        n_cols < 4) {
        rc = errmsg_set(e, ERR_DATA, "bad header line ('%s' line 1)", cp);
        goto done;
    }
    w.n = n_cols;
    w.names = mem_calloc(n_cols, sizeof *w.names);
    w.drop = mem_calloc(n_cols, sizeof *w.drop);
    if (!w.names || !w.drop) {
        rc = errmsg_set(e, ERR_NOMEM, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < n_cols; i++) {
        char name[256], unit[64];
        csv_split_unit(hdr[i], name, sizeof name, unit, sizeof unit);
        if (!(w.names[i] = mem_strdup(name))) {
            rc = errmsg_set(e, ERR_NOMEM, "out of memory");
            goto done;
        }
        w.drop[i] = i >= 4 && energy_is_column(name, unit);
    }
    oc = fopen(csv_tmp, "wb");
    oj = fopen(jsonl_tmp, "wb");
    if (!oc || !oj) {
        rc = errmsg_set(e, ERR_IO, "cannot write '%s': %s", oc ? jsonl_tmp : csv_tmp,
                        strerror(errno));
        goto done;
    }
    /* A table whose header lacks a count the energy table names gets no energy columns,
     * as replay --energy leaves such rows (results.c apply_energy). */
    bool cols = true;
    for (size_t k = 0; k < t->n_events && cols; k++) {
        bool found = false;
        for (size_t i = 4; i < n_cols && !found; i++)
            found = !w.drop[i] && !strcmp(w.names[i], t->events[k].count);
        cols = found;
    }
    /* header: kept cells, then the table's */
    char cell[300];
    for (size_t i = 0, k = 0; i < n_cols && !rc; i++)
        if (!w.drop[i] && !(rc = buf_append(&out, ",", k++ ? 1 : 0)))
            rc = csv_append_field(&out, hdr[i]);
    for (size_t c = 0; cols && c <= t->n_components && !rc; c++) {
        if (c < t->n_components)
            snprintf(cell, sizeof cell, "energy_%s_j [J]", t->components[c]);
        else
            snprintf(cell, sizeof cell, "energy_j [J]");
        if (!(rc = buf_append(&out, ",", 1)))
            rc = csv_append_field(&out, cell);
    }
    if (rc || (rc = buf_append(&out, "\n", 1)) || fwrite(out.data, 1, out.len, oc) != out.len) {
        rc = errmsg_set(e, rc ? rc : ERR_IO, "cannot write '%s'", csv_tmp);
        goto done;
    }
    ssize_t jn;
    while ((jn = getline(&jl, &jcap, fj)) > 0) {
        line++;
        n = getline(&cl, &ccap, fc);
        if (jl[jn - 1] != '\n' || n <= 0 || cl[n - 1] != '\n') {
            rc = errmsg_set(e, ERR_DATA,
                            "torn or missing row ('%s' line %zu, '%s' line %zu): resume the "
                            "replay first",
                            jp, line, cp, line + 1);
            goto done;
        }
        json_error_t je;
        json_t *o = json_loadb(jl, (size_t)jn, 0, &je);
        const char *th = json_string_value(json_object_get(o, "trace_hash"));
        const char *ch = json_string_value(json_object_get(o, "config_hash"));
        const char *md = json_string_value(json_object_get(o, "model"));
        json_t *jc = json_object_get(o, "config_index");
        char want[300];
        if (th && ch && md && json_is_integer(jc))
            key_prefix(want, sizeof want, th, ch, json_integer_value(jc), md);
        if (!th || !ch || !md || !json_is_integer(jc) ||
            !json_is_object(json_object_get(o, "metrics")) ||
            !json_is_object(json_object_get(o, "units"))) {
            json_decref(o);
            rc = errmsg_set(e, ERR_DATA, "corrupt row ('%s' line %zu)", jp, line);
            goto done;
        }
        if (strncmp(cl, want, strlen(want)) || csv_split_record(cl, (size_t)n, &fields, &nf) ||
            nf != n_cols) {
            json_decref(o);
            rc = errmsg_set(e, ERR_DATA, "row of '%s' line %zu differs from '%s' line %zu", cp,
                            line + 1, jp, line);
            goto done;
        }
        w.fields = fields;
        double total = 0;
        bool have = energy_compute(t, erow_lookup, &w, comp, &total) == 0;
        buf_clear(&out);
        for (size_t i = 0, k = 0; i < n_cols && !rc; i++)
            if (!w.drop[i] && !(rc = buf_append(&out, ",", k++ ? 1 : 0)))
                rc = csv_append_field(&out, fields[i]);
        json_drop_energy(o);
        json_t *jm = json_object_get(o, "metrics"), *ju = json_object_get(o, "units");
        for (size_t c = 0; cols && c <= t->n_components && !rc; c++) {
            double v = c < t->n_components ? comp[c] : total;
            if (c < t->n_components)
                snprintf(cell, sizeof cell, "energy_%s_j", t->components[c]);
            else
                snprintf(cell, sizeof cell, "energy_j");
            rc = buf_append(&out, ",", 1);
            if (!rc && have) {
                char num[40];
                csv_format_f64(v, num, sizeof num);
                rc = csv_append_field(&out, num);
                json_object_set_new(jm, cell, isfinite(v) ? json_real(v) : json_null());
                json_object_set_new(ju, cell, json_string("J"));
            }
        }
        char *js =
            rc ? NULL : json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
        json_decref(o);
        csv_fields_free(fields, nf);
        fields = NULL;
        if (!rc && !js)
            rc = ERR_NOMEM;
        if (!rc)
            rc = buf_append(&out, "\n", 1);
        if (rc || fwrite(out.data, 1, out.len, oc) != out.len || fputs(js, oj) < 0 ||
            fputc('\n', oj) < 0) {
            free(js);
            rc = errmsg_set(e, rc ? rc : ERR_IO, "cannot write '%s' or '%s'", csv_tmp, jsonl_tmp);
            goto done;
        }
        free(js);
    }
    if (getline(&cl, &ccap, fc) > 0) {
        rc = errmsg_set(e, ERR_DATA,
                        "'%s' has rows past '%s' (line %zu on): resume the replay "
                        "first",
                        cp, jp, line + 2);
        goto done;
    }
    if ((rc = tmp_pair_sync(oc, oj, csv_tmp, jsonl_tmp, e)))
        goto done;
    *n_rows += line;
done:
    rc = tmp_pair_close(oc, oj, csv_tmp, jsonl_tmp, rc, e);
    if (fc)
        fclose(fc);
    if (fj)
        fclose(fj);
    free(cl);
    free(jl);
    csv_fields_free(hdr, n_cols);
    csv_fields_free(fields, nf);
    for (size_t i = 0; w.names && i < w.n; i++)
        mem_free(w.names[i]);
    mem_free(w.names);
    mem_free(w.drop);
    mem_free(comp);
    buf_release(&out);
    mem_free(cp);
    mem_free(jp);
    return rc;
}

/* Table names of a folder: "results" first, then every other *.jsonl; *n set. */
static int folder_tables(const char *dir, char **names, size_t *n, struct errmsg *e)
{
    *n = 0;
    if (!(names[(*n)++] = mem_strdup("results")))
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    DIR *dh = opendir(dir);
    if (!dh) {
        /* a named input folder that is not there is bad input (exit 3), a file named as the
         * folder a usage error (exit 2); anything else an I/O failure */
        int en = errno;
        int code = en == ENOENT ? ERR_NOINPUT : en == ENOTDIR ? ERR_USAGE : ERR_IO;
        return errmsg_set(e, code, "cannot open folder '%s': %s", dir, strerror(en));
    }
    struct dirent *de;
    int rc = 0;
    while (!rc && (de = readdir(dh))) {
        size_t k = strlen(de->d_name);
        if (k <= 6 || strcmp(de->d_name + k - 6, ".jsonl"))
            continue;
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)(k - 6), de->d_name);
        if (!ident_ok(name))
            continue;
        bool seen = false;
        for (size_t i = 0; i < *n && !seen; i++)
            seen = !strcmp(names[i], name);
        if (seen)
            continue;
        if (*n == RES_MAX_TABLES)
            rc =
                errmsg_set(e, ERR_LIMIT, "more than %d result tables in '%s'", RES_MAX_TABLES, dir);
        else if (!(names[(*n)++] = mem_strdup(name)))
            rc = errmsg_set(e, ERR_NOMEM, "out of memory");
    }
    closedir(dh);
    return rc;
}

int results_energy(const char *dir, const struct energy_table *t, const char *energy_hash,
                   size_t *n_rows, struct errmsg *e)
{
    size_t rows = 0, n_names = 0;
    char *names[RES_MAX_TABLES] = {0};
    char *tmps[2 * RES_MAX_TABLES] = {0};
    json_t *man = NULL;
    int fd = -1;
    int rc = results_lock(dir, true, "energy", &fd, e);
    if (rc)
        return rc;
    if ((rc = manifest_read(dir, &man, e)) || (rc = folder_tables(dir, names, &n_names, e)))
        goto done;
    for (size_t i = 0; i < n_names; i++) {
        char base[300];
        snprintf(base, sizeof base, ".%s", names[i]);
        tmps[2 * i] = path_join(dir, base, ".csv.tmp");
        tmps[2 * i + 1] = path_join(dir, base, ".jsonl.tmp");
        if (!tmps[2 * i] || !tmps[2 * i + 1]) {
            rc = errmsg_set(e, ERR_NOMEM, "out of memory");
            goto done;
        }
        if ((rc = energy_table_rewrite(dir, names[i], t, tmps[2 * i], tmps[2 * i + 1], &rows, e)))
            goto done;
    }
    /* every table rewritten: put them in place */
    for (size_t i = 0; i < n_names; i++) {
        char *cp = path_join(dir, names[i], ".csv"), *jp = path_join(dir, names[i], ".jsonl");
        if (!cp || !jp || rename(tmps[2 * i], cp) || rename(tmps[2 * i + 1], jp))
            rc = errmsg_set(e, ERR_IO, "cannot rename into '%s': %s", dir, strerror(errno));
        mem_free(cp);
        mem_free(jp);
        if (rc)
            goto done;
    }
    if (man) {
        json_object_set_new(man, "energy_hash", json_string(energy_hash));
        json_object_set_new(man, "energy_table", json_string(t->path ? t->path : ""));
        if ((rc = manifest_write(dir, man, e)))
            goto done;
    }
    if (n_rows)
        *n_rows = rows;
done:
    for (size_t i = 0; i < 2 * RES_MAX_TABLES; i++) {
        if (tmps[i])
            unlink(tmps[i]);
        mem_free(tmps[i]);
    }
    for (size_t i = 0; i < n_names; i++)
        mem_free(names[i]);
    json_decref(man);
    results_unlock(fd);
    return rc;
}

/* ---- merge ---- */

/* One input folder's read position in one table. */
struct mcur {
    FILE *fc, *fj;
    char *cl, *jl; /* current lines, with their newline */
    size_t ccap, jcap;
    ssize_t clen, jlen;
    size_t line;            /* JSON line number of jl */
    json_int_t ci, last_ci; /* config_index of jl; of the line before (-1 at start) */
    bool eof;
    char *cp, *jp;
};

static void mcur_release(struct mcur *c)
{
    if (c->fc)
        fclose(c->fc);
    if (c->fj)
        fclose(c->fj);
    free(c->cl);
    free(c->jl);
    mem_free(c->cp);
    mem_free(c->jp);
}

/* Reads the next row of c (both files); checks it against trace/model seen so far. */
static int mcur_next(struct mcur *c, const char *dir, char *trace_hash, size_t th_n, char *model,
                     size_t md_n, struct errmsg *e)
{
    c->jlen = getline(&c->jl, &c->jcap, c->fj);
    c->clen = getline(&c->cl, &c->ccap, c->fc);
    if (c->jlen <= 0 && c->clen <= 0) {
        c->eof = true;
        return 0;
    }
    c->line++;
    if ((c->jlen > 0 && c->jl[c->jlen - 1] != '\n') || (c->clen > 0 && c->cl[c->clen - 1] != '\n'))
        return errmsg_set(e, ERR_DATA, "torn last line in '%s' (rerun that shard)",
                          c->jlen > 0 && c->jl[c->jlen - 1] != '\n' ? c->jp : c->cp);
    if (c->jlen <= 0 || c->clen <= 0)
        return errmsg_set(e, ERR_DATA, "'%s' and '%s' differ in rows (line %zu)", c->cp, c->jp,
                          c->line);
    json_error_t je;
    json_t *o = json_loadb(c->jl, (size_t)c->jlen, 0, &je);
    const char *th = json_string_value(json_object_get(o, "trace_hash"));
    const char *ch = json_string_value(json_object_get(o, "config_hash"));
    const char *md = json_string_value(json_object_get(o, "model"));
    json_t *ci = json_object_get(o, "config_index");
    int rc = 0;
    char want[300];
    if (!th || !ch || !md || !json_is_integer(ci) || json_integer_value(ci) < 0) {
        rc = errmsg_set(e, ERR_DATA, "bad row ('%s' line %zu)", c->jp, c->line);
        goto done;
    }
    if (!trace_hash[0]) {
        snprintf(trace_hash, th_n, "%s", th);
        snprintf(model, md_n, "%s", md);
    } else if (strcmp(trace_hash, th) || strcmp(model, md)) {
        rc = errmsg_set(e, ERR_DATA,
                        "refusing to merge rows of different traces or models: '%s' has "
                        "trace %.16s model '%s', others trace %.16s model '%s'",
                        dir, th, md, trace_hash, model);
        goto done;
    }
    key_prefix(want, sizeof want, th, ch, json_integer_value(ci), md);
    if (strncmp(c->cl, want, strlen(want))) {
        rc = errmsg_set(e, ERR_DATA, "row of '%s' line %zu differs from '%s' line %zu", c->cp,
                        c->line + 1, c->jp, c->line);
        goto done;
    }
    c->last_ci = c->ci;
    c->ci = json_integer_value(ci);
    if (c->ci < c->last_ci)
        rc = errmsg_set(e, ERR_DATA, "rows of '%s' are not in config order (line %zu)", c->jp,
                        c->line);
done:
    json_decref(o);
    return rc;
}

/* Merges one table across dirs into the temporaries csv_tmp and jsonl_tmp. */
static int merge_table(const char *const *dirs, size_t n_dirs, const char *table,
                       const char *csv_tmp, const char *jsonl_tmp, char *trace_hash, size_t th_n,
                       char *model, size_t md_n, bool *wrote, struct errmsg *e)
{
    *wrote = false;
    struct mcur *cur = mem_calloc(n_dirs, sizeof *cur);
    char *header = NULL;
    size_t first = 0;
    FILE *oc = NULL, *oj = NULL;
    int rc = 0;
    if (!cur)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    for (size_t d = 0; d < n_dirs; d++) {
        struct mcur *c = &cur[d];
        c->ci = c->last_ci = -1;
        c->cp = path_join(dirs[d], table, ".csv");
        c->jp = path_join(dirs[d], table, ".jsonl");
        if (!c->cp || !c->jp) {
            rc = errmsg_set(e, ERR_NOMEM, "out of memory");
            goto done;
        }
        if ((rc = open_read(c->cp, &c->fc, e)) || (rc = open_read(c->jp, &c->fj, e)))
            goto done;
        if (!c->fc && !c->fj) {
            c->eof = true;
            if (!strcmp(table, "results")) {
                rc = errmsg_set(e, ERR_DATA, "no results in '%s'", dirs[d]);
                goto done;
            }
            continue;
        }
        if (!c->fc || !c->fj) {
            rc = errmsg_set(e, ERR_DATA, "'%s' lacks %s.csv or %s.jsonl", dirs[d], table, table);
            goto done;
        }
        c->clen = getline(&c->cl, &c->ccap, c->fc);
        if (c->clen <= 0 || c->cl[c->clen - 1] != '\n') {
            rc = errmsg_set(e, ERR_DATA, "no header line in '%s'", c->cp);
            goto done;
        }
        if (!header) {
            if (!(header = mem_strdup(c->cl))) {
                rc = errmsg_set(e, ERR_NOMEM, "out of memory");
                goto done;
            }
            first = d;
        } else if (strcmp(header, c->cl)) {
            rc = errmsg_set(e, ERR_DATA, "'%s' has other columns than '%s'", c->cp, cur[first].cp);
            goto done;
        }
        if ((rc = mcur_next(c, dirs[d], trace_hash, th_n, model, md_n, e)))
            goto done;
    }
    if (!header)
        goto done;
    oc = fopen(csv_tmp, "wb");
    oj = fopen(jsonl_tmp, "wb");
    if (!oc || !oj || fputs(header, oc) < 0) {
        rc = errmsg_set(e, ERR_IO, "cannot write '%s': %s", oc ? jsonl_tmp : csv_tmp,
                        strerror(errno));
        goto done;
    }
    for (;;) {
        /* the folder whose next config is the lowest; the same config twice is refused */
        size_t best = n_dirs;
        for (size_t d = 0; d < n_dirs; d++) {
            if (cur[d].eof)
                continue;
            if (best < n_dirs && cur[d].ci == cur[best].ci) {
                rc = errmsg_set(e, ERR_DATA,
                                "config %" JSON_INTEGER_FORMAT " appears in both '%s' and '%s'",
                                cur[d].ci, dirs[best], dirs[d]);
                goto done;
            }
            if (best == n_dirs || cur[d].ci < cur[best].ci)
                best = d;
        }
        if (best == n_dirs)
            break;
        struct mcur *c = &cur[best];
        json_int_t ci = c->ci;
        while (!c->eof && c->ci == ci) {
            if (fwrite(c->cl, 1, (size_t)c->clen, oc) != (size_t)c->clen ||
                fwrite(c->jl, 1, (size_t)c->jlen, oj) != (size_t)c->jlen) {
                rc = errmsg_set(e, ERR_IO, "cannot write '%s': %s", csv_tmp, strerror(errno));
                goto done;
            }
            if ((rc = mcur_next(c, dirs[best], trace_hash, th_n, model, md_n, e)))
                goto done;
        }
    }
    if ((rc = tmp_pair_sync(oc, oj, csv_tmp, jsonl_tmp, e)))
        goto done;
    *wrote = true;
done:
    rc = tmp_pair_close(oc, oj, csv_tmp, jsonl_tmp, rc, e);
    if (rc)
        *wrote = false;
    for (size_t d = 0; d < n_dirs; d++)
        mcur_release(&cur[d]);
    mem_free(cur);
    mem_free(header);
    return rc;
}

int results_merge(const char *const *dirs, size_t n_dirs, const char *out_dir, struct errmsg *e)
{
    if (!n_dirs)
        return errmsg_set(e, ERR_USAGE, "no folders to merge");
    int out_fd = -1;
    int *in_fd = mem_calloc(n_dirs, sizeof *in_fd);
    json_t **man = mem_calloc(n_dirs, sizeof *man);
    char *names[RES_MAX_TABLES] = {0}, *tmps[2 * RES_MAX_TABLES] = {0};
    bool wrote[RES_MAX_TABLES] = {0};
    size_t n_names = 0;
    int rc = 0;
    if (!in_fd || !man) {
        rc = errmsg_set(e, ERR_NOMEM, "out of memory");
        goto done;
    }
    for (size_t d = 0; d < n_dirs; d++)
        in_fd[d] = -1;
    /* inputs first: a missing folder is not created by its lock */
    for (size_t d = 0; d < n_dirs; d++) {
        size_t k = 0;
        char *dn[RES_MAX_TABLES] = {0};
        rc = folder_tables(dirs[d], dn, &k, e);
        for (size_t i = 0; i < k; i++) {
            bool seen = false;
            for (size_t j = 0; j < n_names && !seen; j++)
                seen = !strcmp(names[j], dn[i]);
            if (!seen && n_names < RES_MAX_TABLES && !rc) {
                names[n_names++] = dn[i];
                dn[i] = NULL;
            }
            mem_free(dn[i]);
        }
        if (rc || (rc = results_lock(dirs[d], false, "merge", &in_fd[d], e)) ||
            (rc = manifest_read(dirs[d], &man[d], e)))
            goto done;
    }
    if ((rc = results_lock(out_dir, true, "merge", &out_fd, e)))
        goto done;
    /* manifests: every folder from the same run (shards aside) */
    bool all_man = true;
    for (size_t d = 0; d < n_dirs; d++)
        all_man = all_man && man[d];
    char diff[400];
    for (size_t d = 1; all_man && d < n_dirs; d++)
        if (manifest_diff(man[d], man[0], true, " vs ", diff, sizeof diff)) {
            rc = errmsg_set(e, ERR_DATA,
                            "refusing to merge folders of different traces or runs: '%s' "
                            "differs from '%s' in %s",
                            dirs[d], dirs[0], diff);
            goto done;
        }
    char trace_hash[128] = "", model[128] = "";
    for (size_t i = 0; i < n_names; i++) {
        char base[300];
        snprintf(base, sizeof base, ".%s", names[i]);
        tmps[2 * i] = path_join(out_dir, base, ".csv.tmp");
        tmps[2 * i + 1] = path_join(out_dir, base, ".jsonl.tmp");
        if (!tmps[2 * i] || !tmps[2 * i + 1]) {
            rc = errmsg_set(e, ERR_NOMEM, "out of memory");
            goto done;
        }
        if ((rc = merge_table(dirs, n_dirs, names[i], tmps[2 * i], tmps[2 * i + 1], trace_hash,
                              sizeof trace_hash, model, sizeof model, &wrote[i], e)))
            goto done;
    }
    /* an output folder with rows of another run is not overwritten: tables would mix */
    char *op = path_join(out_dir, "results", ".jsonl");
    struct stat ost;
    if (!op) {
        rc = errmsg_set(e, ERR_NOMEM, "out of memory");
        goto done;
    }
    bool has_rows = !stat(op, &ost) && S_ISREG(ost.st_mode) && ost.st_size > 0;
    mem_free(op);
    if (has_rows) {
        json_t *om = NULL;
        if ((rc = manifest_read(out_dir, &om, e)))
            goto done;
        bool other =
            !om || !all_man || manifest_diff(om, man[0], true, ", now ", diff, sizeof diff);
        if (other && om && all_man)
            rc = errmsg_set(e, ERR_USAGE,
                            "merge output '%s' holds rows of another run: %s; use another -o "
                            "folder",
                            out_dir, diff);
        else if (other)
            rc = errmsg_set(e, ERR_USAGE,
                            "merge output '%s' holds rows without a manifest to compare: use "
                            "another -o folder",
                            out_dir);
        json_decref(om);
        if (rc)
            goto done;
    }
    /* every table merged: put them in place (a failure above left the old files) */
    for (size_t i = 0; i < n_names; i++) {
        if (!wrote[i])
            continue;
        char *cp = path_join(out_dir, names[i], ".csv"),
             *jp = path_join(out_dir, names[i], ".jsonl");
        if (!cp || !jp || rename(tmps[2 * i], cp) || rename(tmps[2 * i + 1], jp))
            rc = errmsg_set(e, ERR_IO, "cannot rename into '%s': %s", out_dir, strerror(errno));
        mem_free(cp);
        mem_free(jp);
        if (rc)
            goto done;
    }
    if (all_man) {
        json_object_set_new(man[0], "shard", json_null());
        json_object_set_new(man[0], "command", json_string("acceltrace merge"));
        rc = manifest_write(out_dir, man[0], e);
    }
done:
    for (size_t i = 0; i < 2 * RES_MAX_TABLES; i++) {
        if (tmps[i])
            unlink(tmps[i]);
        mem_free(tmps[i]);
    }
    for (size_t i = 0; i < n_names; i++)
        mem_free(names[i]);
    for (size_t d = 0; in_fd && d < n_dirs; d++)
        results_unlock(in_fd[d]);
    for (size_t d = 0; man && d < n_dirs; d++)
        json_decref(man[d]);
    mem_free(in_fd);
    mem_free(man);
    results_unlock(out_fd);
    return rc;
}
