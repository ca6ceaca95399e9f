/*
 * reproduce: the row table, its label rule and its two files (analysis/reproduce.h).
 */
#include "analysis/reproduce.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/grow.h"
#include "common/io.h"
#include "common/mem.h"
#include "formats/csv.h"
#include "traces/trace_reader.h"

static const char *const status_names[REPRO_STATUS_COUNT] = {
    "predicted", "recomputed", "calibrated", "input", "not-modelled",
};

const char *repro_status_name(int status)
{
    return status >= 0 && status < REPRO_STATUS_COUNT ? status_names[status] : "?";
}

enum repro_status repro_origin_status(enum repro_origin o)
{
    switch (o) {
    case REPRO_FROM_MODEL:
        return REPRO_PREDICTED;
    case REPRO_FROM_FORMULA:
        return REPRO_RECOMPUTED;
    case REPRO_FROM_SOLVER:
        return REPRO_CALIBRATED;
    case REPRO_FROM_SETTING:
        return REPRO_INPUT;
    case REPRO_FROM_NONE:
    default:
        return REPRO_NOT_MODELLED;
    }
}

void repro_table_init(struct repro_table *t)
{
    memset(t, 0, sizeof *t);
    buf_init(&t->md);
}

void repro_table_release(struct repro_table *t)
{
    mem_free(t->rows);
    buf_release(&t->md);
    memset(t, 0, sizeof *t);
}

int repro_table_add(struct repro_table *t, const struct repro_row *r, struct errmsg *e)
{
    if (r->status != repro_origin_status(r->origin))
        return errmsg_set(e, ERR_INTERNAL,
                          "row '%s' of %s is labelled %s but its number came from a path that "
                          "makes it %s",
                          r->quantity, r->paper_id, repro_status_name((int)r->status),
                          repro_status_name((int)repro_origin_status(r->origin)));
    if ((r->status == REPRO_CALIBRATED || r->status == REPRO_NOT_MODELLED) && !r->basis[0])
        return errmsg_set(e, ERR_INTERNAL, "row '%s' of %s is %s without a basis", r->quantity,
                          r->paper_id, repro_status_name((int)r->status));
    if (r->status != REPRO_NOT_MODELLED && (isnan(r->ours) || !r->command[0]))
        return errmsg_set(e, ERR_INTERNAL, "row '%s' of %s has no value or no command", r->quantity,
                          r->paper_id);
    if (grow((void **)&t->rows, &t->cap, t->n + 1, sizeof *t->rows))
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    t->rows[t->n++] = *r;
    return 0;
}

int repro_put(struct repro_table *t, const char *paper_id, const char *quantity,
              const char *condition, double paper_value, double lo, double hi, double ours,
              const char *unit, enum repro_origin origin, enum repro_status status,
              const char *command, struct errmsg *e, const char *basis_fmt, ...)
{
    struct repro_row r;
    memset(&r, 0, sizeof r);
    snprintf(r.paper_id, sizeof r.paper_id, "%s", paper_id);
    snprintf(r.quantity, sizeof r.quantity, "%s", quantity);
    snprintf(r.condition, sizeof r.condition, "%s", condition ? condition : "");
    snprintf(r.unit, sizeof r.unit, "%s", unit);
    snprintf(r.command, sizeof r.command, "%s", command ? command : "");
    r.paper_value = paper_value;
    r.paper_lo = lo;
    r.paper_hi = hi;
    r.ours = ours;
    r.origin = origin;
    r.status = status;
    va_list ap;
    va_start(ap, basis_fmt);
    vsnprintf(r.basis, sizeof r.basis, basis_fmt, ap);
    va_end(ap);
    return repro_table_add(t, &r, e);
}

double repro_ratio(const struct repro_row *r)
{
    double ref = r->paper_value;
    if (isnan(ref) && !isnan(r->paper_lo) && !isnan(r->paper_hi))
        ref = 0.5 * (r->paper_lo + r->paper_hi);
    if (isnan(ref) || isnan(r->ours) || ref == 0)
        return NAN;
    return r->ours / ref;
}

/* ---------------------------------------------------------------------------------------
 * The folder.
 */

/* 1 when dir holds nothing but "." and "..", 0 when it holds something, <0 on error. */
static int dir_is_empty(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int empty = 1;
    struct dirent *de;
    while ((de = readdir(d)))
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
            empty = 0;
            break;
        }
    closedir(d);
    return empty;
}

int repro_dir_prepare(const char *dir, struct errmsg *e)
{
    char marker[PATH_MAX], work[PATH_MAX];
    if (snprintf(marker, sizeof marker, "%s/" REPRO_MARKER, dir) >= (int)sizeof marker ||
        snprintf(work, sizeof work, "%s/work", dir) >= (int)sizeof work)
        return errmsg_set(e, ERR_USAGE, "output folder name too long ('%s')", dir);
    struct stat sb;
    if (!stat(dir, &sb)) {
        if (!S_ISDIR(sb.st_mode))
            return errmsg_set(e, ERR_USAGE, "'%s' exists and is not a folder", dir);
        int empty = dir_is_empty(dir);
        if (empty < 0)
            return errmsg_set(e, ERR_IO, "cannot read the folder '%s': %s", dir, strerror(errno));
        if (!empty && stat(marker, &sb))
            return errmsg_set(e, ERR_USAGE,
                              "'%s' is not empty and was not made by acceltrace reproduce; "
                              "choose an empty or new folder",
                              dir);
    } else if (mkdir(dir, 0755) && errno != EEXIST) {
        return errmsg_set(e, ERR_IO, "cannot create '%s': %s", dir, strerror(errno));
    }
    if (mkdir(work, 0755) && errno != EEXIST)
        return errmsg_set(e, ERR_IO, "cannot create '%s': %s", work, strerror(errno));
    FILE *f = fopen(marker, "w");
    if (!f)
        return errmsg_set(e, ERR_IO, "cannot create '%s': %s", marker, strerror(errno));
    bool bad = fputs("made by acceltrace reproduce; a later run rewrites this folder\n", f) < 0;
    if (fclose(f) || bad)
        return errmsg_set(e, ERR_IO, "cannot write '%s'", marker);
    return 0;
}

/* ---------------------------------------------------------------------------------------
 * The files.
 */

/* A number as the files show it: empty when missing, else 6 significant digits. */
static void num_text(double v, char *out, size_t n)
{
    if (isnan(v))
        out[0] = 0;
    else
        snprintf(out, n, "%.6g", v);
}

static int put_csv(const struct repro_table *t, struct buf *b)
{
    static const char *const cols[] = {"paper_id", "quantity", "condition", "paper_value",
                                       "paper_lo", "paper_hi", "ours",      "unit",
                                       "ratio",    "status",   "basis",     "command"};
    int rc = 0;
    for (size_t c = 0; c < sizeof cols / sizeof cols[0]; c++)
        rc |= buf_printf(b, "%s%s", c ? "," : "", cols[c]);
    rc |= buf_printf(b, "\n");
    for (size_t i = 0; i < t->n && !rc; i++) {
        const struct repro_row *r = &t->rows[i];
        char v[5][32];
        num_text(r->paper_value, v[0], sizeof v[0]);
        num_text(r->paper_lo, v[1], sizeof v[1]);
        num_text(r->paper_hi, v[2], sizeof v[2]);
        num_text(r->ours, v[3], sizeof v[3]);
        num_text(repro_ratio(r), v[4], sizeof v[4]);
        const char *f[12] = {
            r->paper_id, r->quantity, r->condition, v[0], v[1],
            v[2],        v[3],        r->unit,      v[4], repro_status_name((int)r->status),
            r->basis,    r->command};
        for (int c = 0; c < 12 && !rc; c++) {
            if (c)
                rc |= buf_printf(b, ",");
            rc |= csv_append_field(b, f[c]);
        }
        rc |= buf_printf(b, "\n");
    }
    return rc ? ERR_NOMEM : 0;
}

int repro_source_add(struct repro_table *t, const char *paper_id, const char *data,
                     const char *source, const char *detail, struct errmsg *e)
{
    if (!source || !source[0])
        return errmsg_set(e, ERR_INTERNAL, "%s data '%s' names no source", paper_id, data);
    if (t->n_src >= REPRO_MAX_SOURCES)
        return errmsg_set(e, ERR_INTERNAL, "more than %d data sources", REPRO_MAX_SOURCES);
    struct repro_source *s = &t->src[t->n_src++];
    snprintf(s->paper_id, sizeof s->paper_id, "%s", paper_id);
    snprintf(s->data, sizeof s->data, "%s", data);
    snprintf(s->source, sizeof s->source, "%s", source);
    snprintf(s->detail, sizeof s->detail, "%s", detail ? detail : "");
    return 0;
}

/* The trace starts: its header names the source. */
static int source_begin(void *self, const struct trace_scan_pos *pos, struct errmsg *e)
{
    const struct repro_source_pass *p = self;
    const Acceltrace__TraceHeader *h = trace_reader_header(pos->r);
    return repro_source_add(p->t, p->paper_id, p->data, h->source, h->source_detail, e);
}

const struct analyzer_ops repro_source_ops = {
    .name = "repro_source",
    .begin = source_begin,
};

static int put_sources_csv(const struct repro_table *t, struct buf *b)
{
    int rc = buf_printf(b, "paper_id,data,source,source_detail\n");
    for (size_t i = 0; i < t->n_src && !rc; i++) {
        const struct repro_source *s = &t->src[i];
        const char *f[4] = {s->paper_id, s->data, s->source, s->detail};
        for (int c = 0; c < 4 && !rc; c++)
            rc = (c ? buf_printf(b, ",") : 0) || csv_append_field(b, f[c]);
        rc = rc ? rc : buf_printf(b, "\n");
    }
    return rc ? ERR_NOMEM : 0;
}

/* A Markdown table cell: '|' escaped, newlines as spaces. */
static int md_cell(struct buf *b, const char *s)
{
    int rc = buf_printf(b, " ");
    for (; *s && !rc; s++)
        rc = *s == '|' ? buf_printf(b, "\\|") : buf_printf(b, "%c", *s == '\n' ? ' ' : *s);
    return rc ? rc : buf_printf(b, " |");
}

static int put_md_paper(const struct repro_table *t, const char *paper, struct buf *b)
{
    size_t n = 0;
    for (size_t i = 0; i < t->n; i++)
        n += !strcmp(t->rows[i].paper_id, paper);
    if (!n)
        return 0;
    int rc = buf_printf(b,
                        "\n## %s\n\n| quantity | condition | paper | ours | unit | ratio | "
                        "status | basis |\n|---|---|---|---|---|---|---|---|\n",
                        paper);
    for (size_t i = 0; i < t->n && !rc; i++) {
        const struct repro_row *r = &t->rows[i];
        if (strcmp(r->paper_id, paper))
            continue;
        char pv[80], ours[32], ratio[32], a[32], c[32];
        num_text(r->paper_value, pv, sizeof pv);
        if (!pv[0] && !isnan(r->paper_lo)) {
            num_text(r->paper_lo, a, sizeof a);
            num_text(r->paper_hi, c, sizeof c);
            snprintf(pv, sizeof pv, "%s-%s", a, c);
        }
        num_text(r->ours, ours, sizeof ours);
        num_text(repro_ratio(r), ratio, sizeof ratio);
        rc |= buf_printf(b, "|");
        const char *f[8] = {
            r->quantity, r->condition, pv, ours, r->unit, ratio, repro_status_name((int)r->status),
            r->basis};
        for (int k = 0; k < 8 && !rc; k++)
            rc |= md_cell(b, f[k]);
        rc |= buf_printf(b, "\n");
    }
    rc |= buf_printf(b, "\nCommands that recompute ours:\n\n");
    for (size_t i = 0; i < t->n && !rc; i++)
        if (!strcmp(t->rows[i].paper_id, paper) && t->rows[i].command[0])
            rc |= buf_printf(b, "- %s: `%s`\n", t->rows[i].quantity, t->rows[i].command);
    return rc ? ERR_NOMEM : 0;
}

static int put_md(const struct repro_table *t, const char *title, const char *preamble,
                  struct buf *b)
{
    int rc = buf_printf(b, "# %s\n\n", title);
    if (preamble)
        rc |= buf_printf(b, "%s\n", preamble);
    rc |= buf_printf(b, "\nStatus: predicted = our model from inputs not fitted to this number; "
                        "recomputed = the paper's formula on the paper's inputs (checks "
                        "arithmetic and reading, not a model); calibrated = a parameter of ours "
                        "was solved so this number comes out (basis names it); input = equals a "
                        "setting we chose; not-modelled = nothing of ours computes it. ratio = "
                        "ours / paper (midpoint of a range). Every row is in reproduce.csv with "
                        "its command.\n");
    rc |= buf_printf(b, "\n## Data sources\n\nWhat made each run's data (the trace header's "
                        "`source` and `source_detail`, as `acceltrace info` prints them; also "
                        "in sources.csv). Runs without a capture (solver lines, recomputed "
                        "rows) read only the papers' inputs.\n\n| paper | data | source | "
                        "detail |\n|---|---|---|---|\n");
    for (size_t i = 0; i < t->n_src && !rc; i++) {
        const struct repro_source *s = &t->src[i];
        rc |= buf_printf(b, "|");
        const char *f[4] = {s->paper_id, s->data, s->source, s->detail};
        for (int k = 0; k < 4 && !rc; k++)
            rc |= md_cell(b, f[k]);
        rc |= buf_printf(b, "\n");
    }
    if (!t->n_src)
        rc |= buf_printf(b, "| - | no capture in this run | - | - |\n");
    static const char *const papers[] = {"disc", "salca", "kura"};
    for (size_t p = 0; p < 3 && !rc; p++)
        rc = put_md_paper(t, papers[p], b);
    if (!rc && t->md.len)
        rc = buf_append(b, t->md.data, t->md.len);
    return rc ? ERR_NOMEM : 0;
}

/* Writes data to dir/name through dir/name.tmp, fsynced and renamed. */
static int write_atomic(const char *dir, const char *name, const struct buf *b, struct errmsg *e)
{
    char path[PATH_MAX], tmp[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path ||
        snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp)
        return errmsg_set(e, ERR_IO, "path too long in '%s'", dir);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return errmsg_set(e, ERR_IO, "cannot create '%s': %s", tmp, strerror(errno));
    size_t off = 0;
    while (off < b->len) {
        ssize_t w = write(fd, b->data + off, b->len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            int err = errno;
            close(fd);
            unlink(tmp);
            return errmsg_set(e, ERR_IO, "cannot write '%s': %s", tmp, strerror(err));
        }
        off += (size_t)w;
    }
    if (fsync(fd) || close(fd)) {
        unlink(tmp);
        return errmsg_set(e, ERR_IO, "cannot write '%s': %s", tmp, strerror(errno));
    }
    if (rename(tmp, path)) {
        int err = errno;
        unlink(tmp);
        return errmsg_set(e, ERR_IO, "cannot rename '%s' to '%s': %s", tmp, path, strerror(err));
    }
    return io_sync_parent_dir(path) ? errmsg_set(e, ERR_IO, "cannot sync the folder of '%s'", path)
                                    : 0;
}

int repro_write_file(const char *dir, const char *name, const struct buf *data, struct errmsg *e)
{
    return write_atomic(dir, name, data, e);
}

int repro_table_write(const struct repro_table *t, const char *dir, const char *title,
                      const char *preamble, struct errmsg *e)
{
    struct buf csv, md, src;
    buf_init(&csv);
    buf_init(&md);
    buf_init(&src);
    int rc = put_csv(t, &csv);
    rc = rc ? rc : put_md(t, title, preamble, &md);
    rc = rc ? rc : put_sources_csv(t, &src);
    if (rc)
        rc = errmsg_set(e, rc, "out of memory");
    rc = rc ? rc : write_atomic(dir, "reproduce.csv", &csv, e);
    rc = rc ? rc : write_atomic(dir, "sources.csv", &src, e);
    rc = rc ? rc : write_atomic(dir, "reproduce.md", &md, e);
    buf_release(&csv);
    buf_release(&md);
    buf_release(&src);
    return rc;
}
