/*
 * results_folder: a results folder's lifetime (see results.h): the lock, the manifest,
 * resume (trimming each table to its complete groups and collecting the configs done),
 * and the helpers the other results_*.c share (results_impl.h).
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
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
#include "replay/results_impl.h"
#include "traces/trace_hash.h"

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

int res_done_add(struct results *r, const char *h)
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

char *res_path_join(const char *dir, const char *name, const char *ext)
{
    size_t n = strlen(dir) + strlen(name) + strlen(ext) + 3;
    char *p = mem_alloc(n);
    if (p)
        snprintf(p, n, "%s/%s%s", dir, name, ext);
    return p;
}

struct table *res_table_get(struct results *r, const char *name, struct errmsg *e)
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
    t->csv_path = res_path_join(r->dir, name, ".csv");
    t->jsonl_path = res_path_join(r->dir, name, ".jsonl");
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
int res_open_read(const char *path, FILE **f, struct errmsg *e)
{
    *f = fopen(path, "rb");
    if (!*f && errno != ENOENT)
        return errmsg_set(e, ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    return 0;
}

/* Key prefix "trace_hash,config_hash,config_index,model," of a row's CSV line. */
void res_key_prefix(char *out, size_t n, const char *th, const char *ch, json_int_t ci,
                    const char *md)
{
    snprintf(out, n, "%s,%s,%" JSON_INTEGER_FORMAT ",%s,", th, ch, ci, md);
}

/*
 * The state of trim_table while it streams a table's two files in step: the read
 * positions, what is kept so far, and the group of rows being read.
 */
struct trim {
    FILE *fj, *fc;
    char *jl, *cl;
    size_t jcap, ccap;
    bool ctorn;                                      /* the CSV file ends in a torn row */
    uint64_t cpos, ckeep, csv_rows, keep_bytes, pos; /* bytes read, kept; rows read */
    size_t line, kept_lines, bad_csv_line;           /* JSON lines read, kept; first bad key */
    /* the group being read: first line, config, rows expected and seen, whether kept */
    size_t g_first, g_lines;
    json_int_t g_rows, g_ci;
    char g_hash[80];
    bool g_open, g_keep, torn;
};

/*
 * One complete JSON line of a table (jl, jlen bytes) and its CSV row: checks the line's
 * keys and its place in its group, compares the CSV row's key columns, and keeps the group
 * when it completes (main table: adds its config to done).
 */
static int trim_line(struct results *r, struct table *t, bool is_main, struct trim *s, ssize_t jlen,
                     struct errmsg *e)
{
    json_error_t je;
    json_t *o = json_loadb(s->jl, (size_t)jlen, 0, &je);
    const char *th = json_string_value(json_object_get(o, "trace_hash"));
    const char *ch = json_string_value(json_object_get(o, "config_hash"));
    const char *md = json_string_value(json_object_get(o, "model"));
    json_t *jr = json_object_get(o, "row"), *jn = json_object_get(o, "rows");
    json_t *jc = json_object_get(o, "config_index");
    int rc = 0;
    if (!o || !th || !ch || !md || strlen(ch) >= sizeof s->g_hash || !json_is_integer(jr) ||
        !json_is_integer(jn) || !json_is_integer(jc) || json_integer_value(jn) < 1) {
        rc = errmsg_set(e, ERR_DATA,
                        "corrupt row ('%s' line %zu): fix or remove it and the rows after "
                        "it, or use another -o folder",
                        t->jsonl_path, s->line);
        goto fail;
    }
    if (strcmp(th, r->trace_hash) || strcmp(md, r->model)) {
        rc = errmsg_set(e, ERR_USAGE,
                        "results folder '%s' holds rows of trace %.16s model '%s', not "
                        "trace %.16s model '%s' (use another -o folder)",
                        r->dir, th, md, r->trace_hash, r->model);
        goto fail;
    }
    json_int_t row = json_integer_value(jr), rows = json_integer_value(jn);
    if (row == 0) {
        if (s->g_open) {
            rc = errmsg_set(e, ERR_DATA,
                            "%s rows of config %" JSON_INTEGER_FORMAT
                            " ('%s' line %zu) are followed by more rows (line %zu): fix "
                            "the file or use another -o folder",
                            s->g_keep ? "incomplete" : "unfinished", s->g_ci, t->jsonl_path,
                            s->g_first, s->line);
            goto fail;
        }
        snprintf(s->g_hash, sizeof s->g_hash, "%s", ch);
        s->g_rows = rows;
        s->g_ci = json_integer_value(jc);
        s->g_first = s->line;
        s->g_lines = 0;
        s->g_open = true;
        s->g_keep = is_main || results_done(r, ch);
    } else if (!s->g_open || strcmp(s->g_hash, ch) || rows != s->g_rows ||
               row != (json_int_t)s->g_lines) {
        /* ch belongs to o: the message is formatted before o is released (fuzz_results) */
        rc = errmsg_set(e, ERR_DATA,
                        "row %" JSON_INTEGER_FORMAT " of config %s out of place ('%s' line "
                        "%zu): fix the file or use another -o folder",
                        row, ch, t->jsonl_path, s->line);
        goto fail;
    }
    /* the CSV row of this line, keys compared */
    char want[300];
    res_key_prefix(want, sizeof want, th, ch, json_integer_value(jc), md);
    json_decref(o);
    o = NULL;
    ssize_t n = 0;
    if (s->fc && t->header && (n = getline(&s->cl, &s->ccap, s->fc)) > 0 && s->cl[n - 1] == '\n') {
        s->csv_rows++;
        s->cpos += (uint64_t)n;
        if (!s->bad_csv_line && strncmp(s->cl, want, strlen(want)))
            s->bad_csv_line = s->line;
    } else if (s->fc && t->header && n > 0) {
        s->cpos += (uint64_t)n; /* torn last CSV row */
        s->ctorn = true;
    }
    s->g_lines++;
    s->pos += (uint64_t)jlen;
    /* a complete group not done in the main table stays open: nothing may follow */
    if ((json_int_t)s->g_lines == s->g_rows && s->g_keep) {
        s->keep_bytes = s->pos;
        s->kept_lines = s->line;
        if (s->csv_rows == s->line)
            s->ckeep = s->cpos;
        s->g_open = false;
        if (is_main && (rc = res_done_add(r, s->g_hash)))
            rc = errmsg_set(e, rc, "out of memory");
    }
fail:
    json_decref(o);
    return rc;
}

/* After the JSON lines: the kept rows must have their CSV rows, with the same keys. */
static int trim_check(const struct table *t, const struct trim *s, struct errmsg *e)
{
    if (s->fj && ferror(s->fj))
        return errmsg_set(e, ERR_IO, "cannot read '%s': %s", t->jsonl_path, strerror(errno));
    if (s->kept_lines && !s->fc)
        return errmsg_set(e, ERR_DATA, "'%s' is missing but '%s' has rows", t->csv_path,
                          t->jsonl_path);
    if (s->csv_rows < s->kept_lines)
        return errmsg_set(e, ERR_DATA,
                          "'%s' has %" PRIu64 " rows, '%s' %zu: fix the files or use "
                          "another -o folder",
                          t->csv_path, s->csv_rows, t->jsonl_path, s->kept_lines);
    if (s->bad_csv_line && s->bad_csv_line <= s->kept_lines)
        return errmsg_set(e, ERR_DATA,
                          "row keys of '%s' line %zu differ from '%s' line %zu: fix the files "
                          "or use another -o folder",
                          t->csv_path, s->bad_csv_line + 1, t->jsonl_path, s->bad_csv_line);
    return 0;
}

/* Says what goes (results_dropped) and truncates both files to what is kept. */
static int trim_cut(struct results *r, const struct table *t, struct trim *s, struct errmsg *e)
{
    if (s->g_open)
        note(r, "'%s': %zu row(s) of config %" JSON_INTEGER_FORMAT " (lines %zu-%zu, %s)",
             t->jsonl_path, s->g_lines, s->g_ci, s->g_first, s->g_first + s->g_lines - 1,
             s->g_keep ? "incomplete group" : "config not in results.jsonl");
    if (s->torn)
        note(r, "'%s': a torn last line (line %zu)", t->jsonl_path, s->line);
    if (s->fc) {
        /* count the CSV rows past the kept ones */
        uint64_t extra = s->csv_rows - s->kept_lines, total = 0;
        struct stat st;
        ssize_t n;
        if (!fstat(fileno(s->fc), &st))
            total = (uint64_t)st.st_size;
        while (t->header && !s->ctorn && (n = getline(&s->cl, &s->ccap, s->fc)) > 0) {
            if (s->cl[n - 1] == '\n')
                extra++;
            else
                s->ctorn = true;
        }
        if (!t->header && total) {
            note(r, "'%s': a torn header line", t->csv_path);
        } else {
            if (extra)
                note(r, "'%s': %" PRIu64 " row(s) from line %zu on", t->csv_path, extra,
                     s->kept_lines + 2);
            if (s->ctorn)
                note(r, "'%s': a torn last line", t->csv_path);
        }
        if (s->ckeep != total && truncate(t->csv_path, (off_t)s->ckeep))
            return errmsg_set(e, ERR_IO, "cannot truncate '%s': %s", t->csv_path, strerror(errno));
    }
    if (s->fj) {
        struct stat st;
        if (!fstat(fileno(s->fj), &st) && (uint64_t)st.st_size != s->keep_bytes &&
            truncate(t->jsonl_path, (off_t)s->keep_bytes))
            return errmsg_set(e, ERR_IO, "cannot truncate '%s': %s", t->jsonl_path,
                              strerror(errno));
    }
    return 0;
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
    struct trim s = {0};
    int rc = res_open_read(t->jsonl_path, &s.fj, e);
    if (!rc)
        rc = res_open_read(t->csv_path, &s.fc, e);
    if (rc)
        goto done;
    /* CSV header */
    ssize_t n;
    if (s.fc && (n = getline(&s.cl, &s.ccap, s.fc)) > 0 && s.cl[n - 1] == '\n') {
        if (!(t->header = mem_alloc((size_t)n))) {
            rc = errmsg_set(e, ERR_NOMEM, "out of memory");
            goto done;
        }
        memcpy(t->header, s.cl, (size_t)n - 1);
        t->header[n - 1] = 0;
        s.cpos = s.ckeep = (uint64_t)n;
    }
    ssize_t jlen;
    while (s.fj && (jlen = getline(&s.jl, &s.jcap, s.fj)) > 0) {
        s.line++;
        if (s.jl[jlen - 1] != '\n') {
            s.torn = true;
            break;
        }
        if ((rc = trim_line(r, t, is_main, &s, jlen, e)))
            goto done;
    }
    if (!(rc = trim_check(t, &s, e)))
        rc = trim_cut(r, t, &s, e);
done:
    free(s.jl);
    free(s.cl);
    if (s.fj)
        fclose(s.fj);
    if (s.fc)
        fclose(s.fc);
    return rc;
}

/* ---- lock ---- */

int results_lock(const char *dir, bool exclusive, const char *verb, int *fd, struct errmsg *e)
{
    *fd = -1;
    int rc = exclusive ? io_mkdir_p(dir, 0755, e) : 0;
    if (rc)
        return rc;
    char *p = res_path_join(dir, ".lock", "");
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
int res_manifest_write(const char *dir, const json_t *obj, struct errmsg *e)
{
    char *p = res_path_join(dir, "manifest.json", ""),
         *tmp = res_path_join(dir, ".manifest.json", ".tmp");
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
int res_manifest_read(const char *dir, json_t **out, struct errmsg *e)
{
    *out = NULL;
    char *p = res_path_join(dir, "manifest.json", "");
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
    int rc = res_manifest_read(dir, &have, e);
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
    rc = res_manifest_write(dir, o, e);
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
size_t res_manifest_diff(const json_t *was, const json_t *now, bool skip_shard, const char *sep,
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
    int rc = res_manifest_read(dir, &m, e);
    if (rc)
        return rc;
    if (m && jstr(m, "trace_hash")) {
        snprintf(out, n, "%s", jstr(m, "trace_hash"));
        json_decref(m);
        return 0;
    }
    json_decref(m);
    char *p = res_path_join(dir, "results", ".jsonl");
    FILE *f = NULL;
    char *l = NULL;
    size_t cap = 0;
    if (!p)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    if ((rc = res_open_read(p, &f, e)))
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
    struct table *mt = res_table_get(r, "results", e);
    if (!mt) {
        rc = e->code;
        goto fail;
    }
    if (m) {
        if ((rc = res_manifest_read(dir, &have, e)))
            goto fail;
        if (!(want = manifest_json(m))) {
            rc = errmsg_set(e, ERR_NOMEM, "out of memory");
            goto fail;
        }
        char diff[400];
        if (have && res_manifest_diff(have, want, false, ", now ", diff, sizeof diff)) {
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
            if (!strcmp(name, "results") || !res_ident_ok(name))
                continue;
            struct table *t = res_table_get(r, name, e);
            if (!t || (rc = trim_table(r, t, false, e))) {
                if (!t)
                    rc = e->code;
                closedir(d);
                goto fail;
            }
        }
        closedir(d);
    }
    if (m && !have && (rc = res_manifest_write(dir, want, e)))
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

/*
 * The two temporaries (csv, jsonl) of a table being rewritten: tmp_pair_sync flushes and
 * fsyncs both before they are renamed over the table; tmp_pair_close closes them (NULL is
 * skipped) and returns rc, or the first close error when rc is 0.
 */
int res_tmp_pair_sync(FILE *oc, FILE *oj, const char *csv_tmp, const char *jsonl_tmp,
                      struct errmsg *e)
{
    if (fflush(oc) || fsync(fileno(oc)))
        return errmsg_set(e, ERR_IO, "cannot write '%s': %s", csv_tmp, strerror(errno));
    if (fflush(oj) || fsync(fileno(oj)))
        return errmsg_set(e, ERR_IO, "cannot write '%s': %s", jsonl_tmp, strerror(errno));
    return 0;
}

int res_tmp_pair_close(FILE *oc, FILE *oj, const char *csv_tmp, const char *jsonl_tmp, int rc,
                       struct errmsg *e)
{
    if (oc && fclose(oc) && !rc)
        rc = errmsg_set(e, ERR_IO, "cannot write '%s'", csv_tmp);
    if (oj && fclose(oj) && !rc)
        rc = errmsg_set(e, ERR_IO, "cannot write '%s'", jsonl_tmp);
    return rc;
}

/* Table names of a folder: "results" first, then every other *.jsonl; *n set. */
int res_folder_tables(const char *dir, char **names, size_t *n, struct errmsg *e)
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
        if (!res_ident_ok(name))
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

int res_tmp_names(const char *dir, const char *name, char **tmps, struct errmsg *e)
{
    char base[300];
    snprintf(base, sizeof base, ".%s", name);
    tmps[0] = res_path_join(dir, base, ".csv.tmp");
    tmps[1] = res_path_join(dir, base, ".jsonl.tmp");
    if (!tmps[0] || !tmps[1])
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    return 0;
}

int res_tmp_rename(const char *dir, char *const *names, size_t n, char *const *tmps,
                   const bool *wrote, struct errmsg *e)
{
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        if (wrote && !wrote[i])
            continue;
        char *cp = res_path_join(dir, names[i], ".csv"),
             *jp = res_path_join(dir, names[i], ".jsonl");
        if (!cp || !jp || rename(tmps[2 * i], cp) || rename(tmps[2 * i + 1], jp))
            rc = errmsg_set(e, ERR_IO, "cannot rename into '%s': %s", dir, strerror(errno));
        mem_free(cp);
        mem_free(jp);
    }
    return rc;
}

void res_tmp_free(char **tmps, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (tmps[i])
            unlink(tmps[i]);
        mem_free(tmps[i]);
        tmps[i] = NULL;
    }
}
