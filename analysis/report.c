/*
 * report: the plain-text twin (Markdown) and report_write (see report.h). The Markdown file
 * has the HTML page's order and captions; its links are relative to its folder, which is
 * the HTML file's.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/report_impl.h"
#include "common/io.h"
#include "common/mem.h"

/* Markdown-safe text: no newlines, brackets, emphasis and table bars escaped. */
static void md_text(struct buf *b, const char *s)
{
    for (; *s && !buf_err(b); s++) {
        if (*s == '[' || *s == ']' || *s == '*' || *s == '_' || *s == '|' || *s == '`')
            buf_append(b, "\\", 1);
        buf_append(b, *s == '\n' ? " " : s, 1);
    }
}

/* Text in a code span: backticks and newlines replaced, bars escaped (tables). */
static void md_code(struct buf *b, const char *s)
{
    buf_append(b, "`", 1);
    for (; *s && !buf_err(b); s++) {
        if (*s == '|')
            buf_append(b, "\\", 1);
        buf_append(b, *s == '`' ? "'" : *s == '\n' ? " " : s, 1);
    }
    buf_append(b, "`", 1);
}

/* Link target: spaces and parentheses percent-encoded. */
static void md_link(const struct rep_doc *d, const struct rep_section *s, const char *rel,
                    struct buf *b)
{
    char link[PATH_MAX * 2];
    rep_link(d, s, rel, link, sizeof link);
    for (const char *p = link; *p && !buf_err(b); p++) {
        if (*p == ' ' || *p == '(' || *p == ')' || *p == '%')
            buf_printf(b, "%%%02X", (unsigned char)*p);
        else
            buf_append(b, p, 1);
    }
}

static const char *base_name(const char *rel)
{
    const char *n = strrchr(rel, '/');
    return n ? n + 1 : rel;
}

static void md_prov(struct buf *b, const struct rep_prov *p)
{
    buf_printf(b, "  command: ");
    if (p->command[0])
        md_code(b, p->command);
    else
        buf_printf(b, "not recorded");
    if (p->data[0]) {
        buf_printf(b, "; data: ");
        md_text(b, p->data);
    }
    if (p->config_hash[0]) {
        buf_printf(b, "; config hash ");
        md_code(b, p->config_hash);
    }
    if (p->trace_hash[0]) {
        buf_printf(b, "; trace hash ");
        md_code(b, p->trace_hash);
    }
    if (p->from[0]) {
        buf_printf(b, " (from ");
        md_text(b, p->from);
        buf_printf(b, ")");
    }
    buf_printf(b, "\n");
}

static void md_headlines(const struct rep_section *s, struct buf *b)
{
    buf_printf(b, "### Headline numbers\n\n| Quantity | Value | Unit | Range over the sweep | "
                  "Status | Where it comes from |\n|---|---|---|---|---|---|\n");
    for (size_t i = 0; i < s->n_heads; i++) {
        const struct rep_headline *h = &s->heads[i];
        buf_printf(b, "| ");
        md_text(b, h->quantity);
        if (h->setting[0]) {
            buf_printf(b, " (");
            md_text(b, h->setting);
            buf_printf(b, ")");
        }
        buf_printf(b, " | %s | ", h->value);
        md_text(b, h->unit);
        buf_printf(b, " | %s | %s | ", h->range, h->status);
        md_code(b, h->source);
        if (h->basis[0]) {
            buf_printf(b, "; ");
            md_text(b, h->basis);
        }
        buf_printf(b, " |\n");
    }
    if (!s->n_heads)
        buf_printf(b, "| no headline numbers: no results folder, reproduce.csv or known "
                      "analyzer table here | | | | | |\n");
    buf_printf(b, "\n");
}

static const char *cell(const struct csv_table *t, size_t r, const char *col)
{
    long c = csv_table_col(t, col);
    return c >= 0 ? t->rows[r][c] : "";
}

static bool is_repro(const struct rep_file *f)
{
    return f->kind == REP_TABLE && f->has_tab && !strcmp(base_name(f->rel), "reproduce.csv");
}

static void md_repro(const struct rep_section *s, struct buf *b)
{
    size_t nr = 0;
    for (size_t i = 0; i < s->n_files; i++)
        nr += is_repro(&s->files[i]);
    if (!nr)
        return;
    static const char *const words[] = {"predicted", "recomputed", "calibrated", "input",
                                        "not-modelled"};
    buf_printf(b, "### Ours vs paper\n\n");
    for (size_t w = 0; w < 5; w++)
        buf_printf(b, "- %s: %s\n", words[w], rep_status_meaning(words[w]));
    for (size_t i = 0; i < s->n_files; i++) {
        if (!is_repro(&s->files[i]))
            continue;
        const struct csv_table *t = &s->files[i].tab;
        buf_printf(b, "\n#### From ");
        md_code(b, s->files[i].rel);
        buf_printf(b, "\n\n| Paper | Quantity | Condition | Paper value | Ours | Unit | Ours / "
                      "paper | Status | Basis |\n|---|---|---|---|---|---|---|---|---|\n");
        for (size_t r = 0; r < t->n_rows; r++) {
            const char *pv = cell(t, r, "paper_value");
            buf_printf(b, "| %s | ", cell(t, r, "paper_id"));
            md_text(b, cell(t, r, "quantity"));
            buf_printf(b, " | ");
            md_text(b, cell(t, r, "condition"));
            if (pv[0])
                buf_printf(b, " | %s", pv);
            else
                buf_printf(b, " | %s .. %s", cell(t, r, "paper_lo"), cell(t, r, "paper_hi"));
            char ours[64], ratio[64];
            rep_tidy_numbers(cell(t, r, "ours"), ours, sizeof ours);
            rep_tidy_numbers(cell(t, r, "ratio"), ratio, sizeof ratio);
            buf_printf(b, " | %s | ", ours);
            md_text(b, cell(t, r, "unit"));
            buf_printf(b, " | %s | %s | ", ratio, cell(t, r, "status"));
            md_text(b, cell(t, r, "basis"));
            buf_printf(b, " |\n");
        }
    }
    buf_printf(b, "\n");
}

/* "[text](link)" to the file rel of section s, text escaped. */
static void md_anchor(const struct rep_doc *d, const struct rep_section *s, const char *text,
                      const char *rel, struct buf *b)
{
    buf_printf(b, "[");
    md_text(b, text);
    buf_printf(b, "](");
    md_link(d, s, rel, b);
    buf_printf(b, ")");
}

/* A list item "- KIND [name](link): caption" of a figure or table. */
static void md_item(const struct rep_doc *d, const struct rep_section *s, const char *kind,
                    const struct rep_file *f, struct buf *b)
{
    buf_printf(b, "- %s ", kind);
    md_anchor(d, s, base_name(f->rel), f->rel, b);
    buf_printf(b, ": ");
    md_text(b, f->caption);
    buf_printf(b, "\n");
}

static void md_section(const struct rep_doc *d, const struct rep_section *s, struct buf *b)
{
    buf_printf(b, "\n## ");
    md_text(b, s->label);
    buf_printf(b, "\n\n");
    char data[4096];
    rep_data_sources(s, data, sizeof data);
    buf_printf(b, "Data: ");
    md_text(b, data);
    buf_printf(b, "\n\n");
    md_headlines(s, b);
    md_repro(s, b);
    for (size_t q = 0; q < rep_question_count(); q++) {
        bool head = false;
        for (size_t i = 0; i < s->n_files; i++) {
            const struct rep_file *f = &s->files[i];
            if (f->kind != REP_FIGURE || f->question != (int)q)
                continue;
            if (!head)
                buf_printf(b, "### %s\n\n", rep_questions[q]);
            head = true;
            md_item(d, s, "Figure", f, b);
            if (f->title[0] && strcmp(f->title, f->caption)) {
                buf_printf(b, "  plot title: ");
                md_text(b, f->title);
                buf_printf(b, "\n");
            }
            md_prov(b, &f->prov);
            buf_printf(b, "\n  !");
            md_anchor(d, s, f->caption, f->rel, b);
            buf_printf(b, "\n\n");
        }
    }
    bool images = false;
    for (size_t g = 0; g < rep_gallery_count(); g++) {
        bool head = false;
        for (size_t i = 0; i < s->n_files; i++) {
            const struct rep_file *f = &s->files[i];
            if (f->kind != REP_IMAGE || f->question != (int)g)
                continue;
            if (!images)
                buf_printf(b, "### Images\n\n");
            if (!head) {
                buf_printf(b, "#### Gallery: %s\n\n", rep_galleries[g].title);
                md_text(b, rep_galleries[g].caption);
                buf_printf(b, "\n");
                md_prov(b, &f->prov);
                buf_printf(b, "\n");
            }
            images = head = true;
            buf_printf(b, "- Image ");
            md_anchor(d, s, f->rel, f->rel, b);
            buf_printf(b, "\n");
        }
        if (head)
            buf_printf(b, "\n");
    }
    bool tables = false;
    for (size_t i = 0; i < s->n_files; i++) {
        const struct rep_file *f = &s->files[i];
        if (f->kind != REP_TABLE)
            continue;
        if (!tables)
            buf_printf(b, "### Tables\n\n");
        tables = true;
        md_item(d, s, "Table", f, b);
    }
}

void rep_md(const struct rep_doc *d, struct buf *b)
{
    buf_printf(b, "# %s\n\n", d->opts->title ? d->opts->title : "acceltrace report");
    if (d->opts->preamble)
        buf_printf(b, "%s\n\n", d->opts->preamble);
    size_t nf = 0, nt = 0;
    for (size_t i = 0; i < d->n_secs; i++)
        for (size_t k = 0; k < d->secs[i].n_files; k++)
            nf += d->secs[i].files[k].kind != REP_TABLE,
                nt += d->secs[i].files[k].kind == REP_TABLE;
    buf_printf(b, "%zu workload folder(s), %zu figures and %zu tables.\n", d->n_secs, nf, nt);
    for (size_t i = 0; i < d->n_secs; i++)
        md_section(d, &d->secs[i], b);
    if (d->skipped.len) {
        buf_printf(b, "\nNot covered: ");
        md_text(b, (const char *)d->skipped.data);
        buf_printf(b, "\n");
    }
}

/* path <- b through path.tmp, fsync and rename. */
static int write_atomic(const char *path, const struct buf *b, struct errmsg *e)
{
    char tmp[PATH_MAX + 8];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    struct sink k;
    int rc = sink_open_file(&k, tmp, e);
    if (rc)
        return rc;
    rc = sink_write(&k, b->data, b->len);
    if (!rc)
        rc = sink_sync(&k);
    int crc = sink_close(&k);
    if (rc || crc || rename(tmp, path)) {
        int err = errno;
        remove(tmp);
        return errmsg_set(e, ERR_IO, "cannot write '%s': %s", path, strerror(err));
    }
    io_sync_parent_dir(path);
    return 0;
}

/* Renders d into b (cleared first) and writes it to path (write_atomic). */
static int write_doc(void (*render)(const struct rep_doc *d, struct buf *b),
                     const struct rep_doc *d, struct buf *b, const char *path, struct errmsg *e)
{
    buf_clear(b);
    render(d, b);
    int rc = buf_err(b);
    if (rc)
        return errmsg_set(e, rc, "out of memory writing the report");
    return write_atomic(path, b, e);
}

int report_write(const struct report_opts *opts_in, struct report_stats *stats, struct errmsg *e)
{
    struct report_opts o = *opts_in;
    char html[PATH_MAX], md[PATH_MAX];
    if (!o.n_dirs)
        return errmsg_set(e, ERR_USAGE, "no folder to report");
    if (!o.html_path) {
        snprintf(html, sizeof html, "%s/report.html", o.dirs[0]);
        o.html_path = html;
    }
    if (!o.md_path) {
        size_t l = strlen(o.html_path);
        if (l > 5 && !strcmp(o.html_path + l - 5, ".html"))
            snprintf(md, sizeof md, "%.*s.md", (int)(l - 5), o.html_path);
        else
            snprintf(md, sizeof md, "%s.md", o.html_path);
        o.md_path = md;
    }
    struct rep_doc d;
    struct buf b;
    buf_init(&b);
    int rc = rep_doc_build(&d, &o, e);
    if (rc)
        goto done;
    size_t nf = 0, nt = 0, nh = 0, nr = 0;
    for (size_t i = 0; i < d.n_secs; i++) {
        nh += d.secs[i].n_heads;
        for (size_t k = 0; k < d.secs[i].n_files; k++) {
            const struct rep_file *f = &d.secs[i].files[k];
            nf += f->kind != REP_TABLE;
            nt += f->kind == REP_TABLE;
            nr += is_repro(f) ? f->tab.n_rows : 0;
        }
    }
    /* an empty report would read as a finished report of nothing */
    if (!nf && !nt) {
        rc = errmsg_set(e, ERR_DATA,
                        "nothing to report: no figures (*.png, *.svg) or tables (*.csv) "
                        "under '%s'%s",
                        o.dirs[0], o.n_dirs > 1 ? " and the other folders given" : "");
        goto done;
    }
    if ((rc = write_doc(rep_html, &d, &b, o.html_path, e)) != 0 ||
        (rc = write_doc(rep_md, &d, &b, o.md_path, e)) != 0)
        goto done;
    if (stats) {
        memset(stats, 0, sizeof *stats);
        stats->workloads = d.n_secs;
        stats->figures = nf;
        stats->tables = nt;
        stats->headlines = nh;
        stats->repro_rows = nr;
        snprintf(stats->html_path, sizeof stats->html_path, "%s", o.html_path);
        snprintf(stats->md_path, sizeof stats->md_path, "%s", o.md_path);
    }
done:
    rep_doc_release(&d);
    buf_release(&b);
    return rc;
}
