/*
 * report: DIR/report.md (see report.h).
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/report.h"
#include "common/buf.h"
#include "common/io.h"
#include "common/mem.h"
#include "formats/csv.h"

#define REPORT_MAX_DEPTH 4
#define REPORT_MAX_FILES 20000

struct entry {
    char *rel;  /* path relative to the root */
    int figure; /* 1 png, 0 csv */
};

struct walk {
    struct entry *v;
    size_t n, cap;
    int err;
};

static void add(struct walk *w, const char *rel, int figure)
{
    if (w->err || w->n >= REPORT_MAX_FILES)
        return;
    if (w->n == w->cap) {
        size_t nc = w->cap ? w->cap * 2 : 64;
        struct entry *n = mem_realloc(w->v, nc * sizeof *n);
        if (!n) {
            w->err = ERR_NOMEM;
            return;
        }
        w->v = n;
        w->cap = nc;
    }
    if (!(w->v[w->n].rel = mem_strdup(rel))) {
        w->err = ERR_NOMEM;
        return;
    }
    w->v[w->n++].figure = figure;
}

static bool ends(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

static void walk_dir(struct walk *w, const char *root, const char *rel, int depth)
{
    char path[4096];
    snprintf(path, sizeof path, "%s%s%s", root, rel[0] ? "/" : "", rel);
    DIR *d = opendir(path);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        char r[4096], full[4096 + 256];
        snprintf(r, sizeof r, "%s%s%s", rel, rel[0] ? "/" : "", de->d_name);
        snprintf(full, sizeof full, "%s/%s", root, r);
        struct stat st;
        if (stat(full, &st))
            continue;
        if (S_ISDIR(st.st_mode)) {
            if (depth < REPORT_MAX_DEPTH)
                walk_dir(w, root, r, depth + 1);
        } else if (!S_ISREG(st.st_mode)) {
            continue; /* a FIFO named like a table would block the caption reader */
        } else if (ends(de->d_name, ".png")) {
            add(w, r, 1);
        } else if (ends(de->d_name, ".csv")) {
            add(w, r, 0);
        }
    }
    closedir(d);
}

static int cmp_entry(const void *a, const void *b)
{
    const struct entry *x = a, *y = b;
    return strcmp(x->rel, y->rel);
}

/* A caption source opened for reading, or NULL: regular files only (io_open_input), so a
 * FIFO called NAME.caption cannot block the report. */
static FILE *open_text(const char *path)
{
    int fd = io_open_input(path, NULL, NULL);
    if (fd < 0)
        return NULL;
    FILE *f = fdopen(fd, "r");
    if (!f)
        close(fd);
    return f;
}

/* First line of a file into out; false if unreadable. */
static bool first_line(const char *path, char *out, size_t n)
{
    FILE *f = open_text(path);
    if (!f)
        return false;
    bool ok = fgets(out, (int)n, f) != NULL;
    fclose(f);
    if (ok)
        out[strcspn(out, "\r\n")] = 0;
    return ok && out[0];
}

/* Title from a gnuplot script: 'set title "..."' or 'multiplot ... title "..."'. */
static bool gp_title(const char *path, char *out, size_t n)
{
    FILE *f = open_text(path);
    if (!f)
        return false;
    char line[1024];
    bool found = false;
    while (!found && fgets(line, sizeof line, f)) {
        const char *t = NULL;
        if (!strncmp(line, "set title \"", 11))
            t = line + 11;
        else if (!strncmp(line, "set multiplot", 13) && (t = strstr(line, " title \"")))
            t += 8;
        if (!t || *t == '"')
            continue;
        size_t k = 0;
        for (; *t && *t != '"' && k + 1 < n; t++) {
            if (*t == '\\' && t[1])
                t++;
            out[k++] = *t;
        }
        out[k] = 0;
        found = k > 0;
        if (!strncmp(line, "set multiplot", 13))
            break;
    }
    fclose(f);
    return found;
}

static void strip_ext(const char *rel, char *out, size_t n)
{
    snprintf(out, n, "%s", rel);
    char *dot = strrchr(out, '.');
    if (dot)
        *dot = 0;
}

static void caption(const char *root, const struct entry *en, char *out, size_t n)
{
    char base[4096], p[4096 + 512];
    strip_ext(en->rel, base, sizeof base);
    snprintf(p, sizeof p, "%s/%s.caption", root, base);
    if (first_line(p, out, n))
        return;
    if (en->figure) {
        snprintf(p, sizeof p, "%s/%s.gp", root, base);
        if (gp_title(p, out, n))
            return;
        const char *slash = strrchr(base, '/');
        snprintf(out, n, "image %s", slash ? slash + 1 : base);
        return;
    }
    snprintf(p, sizeof p, "%s/%s", root, en->rel);
    struct csv_table t;
    struct errmsg e = {0};
    if (csv_table_load(&t, p, true, &e)) {
        snprintf(out, n, "table (unreadable: %s)", errmsg_text(&e));
        return;
    }
    size_t k = (size_t)snprintf(out, n, "table of %zu rows x %zu columns:", t.n_rows, t.n_cols);
    /* skip key columns of results tables in the listing */
    size_t shown = 0;
    for (size_t c = 0; c < t.n_cols && shown < 6 && k < n; c++) {
        if (!strcmp(t.header[c], "trace_hash") || !strcmp(t.header[c], "config_hash") ||
            !strcmp(t.header[c], "config_index"))
            continue;
        k += (size_t)snprintf(out + k, n - k, "%s %s", shown ? "," : "", t.header[c]);
        shown++;
    }
    if (shown < t.n_cols && k < n)
        snprintf(out + k, n - k, ", ...");
    csv_table_release(&t);
}

/*
 * The report text is built as plain buf_* statements: the buffer's error is sticky
 * (common/buf.h) and report_write checks buf_err() once at the end.
 */

/* Markdown-safe caption: no newlines, brackets escaped. */
static void md_text(struct buf *b, const char *s)
{
    for (; *s && !buf_err(b); s++) {
        if (*s == '[' || *s == ']' || *s == '*' || *s == '_' || *s == '|')
            buf_append(b, "\\", 1);
        buf_append(b, *s == '\n' ? " " : s, 1);
    }
}

/* Link target: spaces and parentheses percent-encoded. */
static void md_link(struct buf *b, const char *rel)
{
    for (const char *s = rel; *s && !buf_err(b); s++) {
        if (*s == ' ' || *s == '(' || *s == ')')
            buf_printf(b, "%%%02X", (unsigned char)*s);
        else
            buf_append(b, s, 1);
    }
}

int report_write(const char *dir, const char *title, const char *preamble,
                 struct report_stats *stats, struct errmsg *e)
{
    struct walk w = {0};
    struct buf b;
    buf_init(&b);
    int rc;
    struct stat dst;
    if (stat(dir, &dst) != 0) {
        rc = errmsg_set(e, ERR_NOINPUT, "cannot open folder '%s': %s", dir, strerror(errno));
        goto done;
    }
    if (!S_ISDIR(dst.st_mode)) {
        rc = errmsg_set(e, ERR_USAGE, "'%s' is not a folder", dir);
        goto done;
    }
    walk_dir(&w, dir, "", 0);
    rc = w.err;
    if (rc) {
        rc = errmsg_set(e, rc, "out of memory listing '%s'", dir);
        goto done;
    }
    /* an empty index would read as a finished report of nothing (issue 17); and qsort
     * must not see the NULL array of an empty walk */
    if (w.n == 0) {
        rc = errmsg_set(e, ERR_DATA,
                        "nothing to report: no figures (*.png) or tables (*.csv) "
                        "under '%s'",
                        dir);
        goto done;
    }
    qsort(w.v, w.n, sizeof *w.v, cmp_entry);
    size_t nf = 0, nt = 0;
    for (size_t i = 0; i < w.n; i++)
        nf += w.v[i].figure, nt += !w.v[i].figure;
    buf_printf(&b, "# %s\n\n", title ? title : "acceltrace report");
    if (preamble)
        buf_printf(&b, "%s\n\n", preamble);
    buf_printf(&b, "%zu figures and %zu tables.\n", nf, nt);
    char cur[4096] = "\x01";
    for (size_t i = 0; i < w.n && !buf_err(&b); i++) {
        const struct entry *en = &w.v[i];
        char folder[4096];
        snprintf(folder, sizeof folder, "%s", en->rel);
        char *slash = strrchr(folder, '/');
        if (slash)
            *slash = 0;
        else
            snprintf(folder, sizeof folder, ".");
        if (strcmp(folder, cur)) {
            snprintf(cur, sizeof cur, "%s", folder);
            buf_printf(&b, "\n## %s\n\n", strcmp(folder, ".") ? folder : "(top)");
        }
        char cap[8192];
        caption(dir, en, cap, sizeof cap);
        const char *name = strrchr(en->rel, '/');
        name = name ? name + 1 : en->rel;
        if (en->figure) {
            buf_printf(&b, "- Figure [");
            md_text(&b, name);
            buf_printf(&b, "](");
            md_link(&b, en->rel);
            buf_printf(&b, "): ");
            md_text(&b, cap);
            buf_printf(&b, "\n\n  ![");
            md_text(&b, cap);
            buf_printf(&b, "](");
            md_link(&b, en->rel);
            buf_printf(&b, ")\n");
        } else {
            buf_printf(&b, "- Table [");
            md_text(&b, name);
            buf_printf(&b, "](");
            md_link(&b, en->rel);
            buf_printf(&b, "): ");
            md_text(&b, cap);
            buf_append(&b, "\n", 1);
        }
    }
    rc = buf_err(&b);
    if (rc) {
        rc = errmsg_set(e, rc, "out of memory writing the report");
        goto done;
    }
    char path[4096], tmp[4200];
    snprintf(path, sizeof path, "%s/report.md", dir);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        rc = errmsg_set(e, ERR_IO, "cannot create '%s': %s", tmp, strerror(errno));
        goto done;
    }
    size_t wr = fwrite(b.data, 1, b.len, f);
    if (fclose(f) || wr != b.len || rename(tmp, path)) {
        rc = errmsg_set(e, ERR_IO, "cannot write '%s'", path);
        remove(tmp);
        goto done;
    }
    if (stats) {
        stats->figures = nf;
        stats->tables = nt;
    }
done:
    for (size_t i = 0; i < w.n; i++)
        mem_free(w.v[i].rel);
    mem_free(w.v);
    buf_release(&b);
    return rc;
}
