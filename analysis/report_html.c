/*
 * report_html: the HTML page of a report (analysis/report.h). One file with its style
 * inline and no script; every text read from a file goes through esc(). Text is appended
 * with plain buf_* statements: the buffer's error is sticky and the caller checks it once.
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "analysis/report_impl.h"
#include "common/io.h"
#include "common/mem.h"

#define IMG_INLINE_MAX (64u << 20)

static const char css[] =
    "body{font:15px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1400px;padding:0 24px 48px;"
    "color:#1d1d1f;background:#fff}"
    "h1{margin:24px 0 8px}h2{border-bottom:2px solid #ccc;padding-top:16px;margin-top:40px}"
    "h3{margin-top:28px}h4{margin:18px 0 6px}"
    "code{font:12px/1.3 ui-monospace,monospace;background:#f3f3f5;padding:1px 3px;"
    "border-radius:3px;word-break:break-all}"
    "table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ccd;padding:3px 7px;"
    "vertical-align:top;text-align:left}th{background:#eef0f4}"
    "td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}"
    "table.headline td.src,table.repro td.basis{font-size:12px;color:#444;max-width:420px}"
    ".st{display:inline-block;padding:1px 7px;border-radius:9px;font-size:12px;font-weight:600;"
    "white-space:nowrap}"
    ".st-pred{background:#d6f5d6;color:#135c13}.st-recomp{background:#fde9c4;color:#7a4b00}"
    ".st-calib{background:#fde3b0;color:#7a4b00}.st-input{background:#e4e4e8;color:#333}"
    ".st-nm{background:#f8d0d0;color:#8a1010}.st-unknown{background:#eee;color:#000}"
    ".legend{font-size:13px;margin:6px 0 12px;padding:0;list-style:none}"
    ".legend li{margin:2px 0}"
    ".figs{display:grid;grid-template-columns:repeat(auto-fill,minmax(440px,1fr));gap:18px}"
    "figure{margin:0;border:1px solid #dde;border-radius:6px;padding:8px;background:#fafafc}"
    "figure img{max-width:100%;height:auto;display:block;margin:0 auto}"
    "figcaption{font-size:13px;margin-top:6px}.prov{font-size:12px;color:#555;margin-top:4px}"
    /* long paths and parameter lists wrap inside their card instead of running past it */
    "figure,figcaption,.prov,p.data,summary,.setting{overflow-wrap:anywhere}"
    ".setting{font-size:12px;color:#555}"
    ".gallery{display:grid;grid-template-columns:repeat(auto-fill,minmax(150px,1fr));gap:10px}"
    ".gallery a{display:block;text-align:center;font-size:11px;color:#333;text-decoration:none;"
    "overflow-wrap:anywhere;word-break:break-all;min-width:0}"
    ".gallery "
    "img{width:100%;box-sizing:border-box;height:auto;image-rendering:pixelated;border:1px solid "
    "#ccd;"
    "background:#fff}"
    "details{margin:4px 0}summary{cursor:pointer}.scroll{overflow-x:auto;max-width:100%}"
    "table.preview{font-size:12px}nav ul{columns:3;font-size:14px}"
    ".pre{white-space:pre-wrap}.skipped{color:#555;font-size:13px}";

/* HTML-escaped text (also safe in attribute values). */
static void esc(struct buf *b, const char *s)
{
    for (; *s && !buf_err(b); s++) {
        switch (*s) {
        case '&':
            buf_printf(b, "&amp;");
            break;
        case '<':
            buf_printf(b, "&lt;");
            break;
        case '>':
            buf_printf(b, "&gt;");
            break;
        case '"':
            buf_printf(b, "&quot;");
            break;
        case '\'':
            buf_printf(b, "&#39;");
            break;
        default:
            buf_append(b, s, 1);
        }
    }
}

/* Escaped text with its long decimal fractions cut to 6 significant digits (table cells). */
static void esc_tidy(struct buf *b, const char *s)
{
    char t[2048];
    if (strlen(s) >= sizeof t) {
        esc(b, s);
        return;
    }
    rep_tidy_numbers(s, t, sizeof t);
    esc(b, t);
}

/* A relative URL: bytes outside [A-Za-z0-9._~/-] percent-encoded (so also HTML-safe). */
static void url(struct buf *b, const char *s)
{
    for (; *s && !buf_err(b); s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            strchr("._~/-", c))
            buf_append(b, s, 1);
        else
            buf_printf(b, "%%%02X", c);
    }
}

static void base64(struct buf *b, const unsigned char *p, size_t n)
{
    static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    if (buf_reserve(b, (n + 2) / 3 * 4 + 1))
        return;
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)p[i] << 16;
        if (i + 1 < n)
            v |= (unsigned)p[i + 1] << 8;
        if (i + 2 < n)
            v |= p[i + 2];
        char q[4] = {t[v >> 18 & 63], t[v >> 12 & 63], i + 1 < n ? t[v >> 6 & 63] : '=',
                     i + 2 < n ? t[v & 63] : '='};
        buf_append(b, q, 4);
    }
}

/* The src of an image: a data: URI (inline) or the relative link. */
static void img_src(const struct rep_doc *d, const struct rep_section *s, const char *rel,
                    struct buf *b)
{
    char link[PATH_MAX * 2];
    if (d->opts->inline_images) {
        char p[PATH_MAX];
        rep_join(s, rel, p, sizeof p);
        char *data = NULL;
        size_t len = 0;
        if (!io_read_file(p, IMG_INLINE_MAX, &data, &len, NULL)) {
            size_t l = strlen(rel);
            bool svg = l > 4 && !strcmp(rel + l - 4, ".svg");
            buf_printf(b, "data:image/%s;base64,", svg ? "svg+xml" : "png");
            base64(b, (const unsigned char *)data, len);
            mem_free(data);
            return;
        }
    }
    rep_link(d, s, rel, link, sizeof link);
    url(b, link);
}

static void href(const struct rep_doc *d, const struct rep_section *s, const char *rel,
                 struct buf *b)
{
    char link[PATH_MAX * 2];
    rep_link(d, s, rel, link, sizeof link);
    url(b, link);
}

static void status_span(struct buf *b, const char *st)
{
    buf_printf(b, "<span class=\"st %s\" title=\"", rep_status_class(st));
    esc(b, rep_status_meaning(st));
    buf_printf(b, "\">");
    esc(b, st);
    buf_printf(b, "</span>");
}

static void headlines(const struct rep_section *s, struct buf *b)
{
    buf_printf(b, "<h3>Headline numbers</h3>\n<table class=\"headline\" data-workload=\"");
    esc(b, s->label);
    buf_printf(b, "\">\n<tr><th>Quantity</th><th>Value</th><th>Unit</th><th>Range over the "
                  "sweep</th><th>Status</th><th>Where it comes from</th></tr>\n");
    for (size_t i = 0; i < s->n_heads; i++) {
        const struct rep_headline *h = &s->heads[i];
        buf_printf(b, "<tr><td>");
        esc(b, h->quantity);
        if (h->setting[0]) { /* which folder, hardware, trace and config the number is of */
            buf_printf(b, "<br><span class=\"setting\">");
            esc(b, h->setting);
            buf_printf(b, "</span>");
        }
        buf_printf(b, "</td><td class=\"num\">");
        esc(b, h->value);
        buf_printf(b, "</td><td>");
        esc(b, h->unit);
        buf_printf(b, "</td><td class=\"num\">");
        esc(b, h->range);
        buf_printf(b, "</td><td>");
        status_span(b, h->status);
        buf_printf(b, "</td><td class=\"src\"><code>");
        esc(b, h->source);
        buf_printf(b, "</code>");
        if (h->basis[0]) {
            buf_printf(b, "<br>");
            esc(b, h->basis);
        }
        buf_printf(b, "</td></tr>\n");
    }
    if (!s->n_heads)
        buf_printf(b, "<tr><td colspan=\"6\">no headline numbers: this folder holds no results "
                      "folder (manifest.json + results.csv), reproduce.csv or analyzer table "
                      "the report knows</td></tr>\n");
    buf_printf(b, "</table>\n");
}

static void legend(struct buf *b)
{
    static const char *const words[] = {"predicted", "recomputed", "calibrated", "input",
                                        "not-modelled"};
    buf_printf(b, "<ul class=\"legend\">");
    for (size_t i = 0; i < 5; i++) {
        buf_printf(b, "<li>");
        status_span(b, words[i]);
        buf_printf(b, " ");
        esc(b, rep_status_meaning(words[i]));
        buf_printf(b, "</li>");
    }
    buf_printf(b, "</ul>\n");
}

static const char *cell(const struct csv_table *t, size_t r, const char *col)
{
    long c = csv_table_col(t, col);
    return c >= 0 ? t->rows[r][c] : "";
}

static void repro_table(const struct rep_section *s, const struct rep_file *f, struct buf *b)
{
    const struct csv_table *t = &f->tab;
    buf_printf(b, "<h4>From <code>");
    esc(b, f->rel);
    buf_printf(b, "</code></h4>\n<div class=\"scroll\"><table class=\"repro\">\n<tr><th>Paper"
                  "</th><th>Quantity</th><th>Condition</th><th>Paper value</th><th>Ours</th>"
                  "<th>Unit</th><th>Ours / paper</th><th>Status</th><th>Basis and command</th>"
                  "</tr>\n");
    (void)s;
    for (size_t r = 0; r < t->n_rows; r++) {
        const char *pv = cell(t, r, "paper_value"), *lo = cell(t, r, "paper_lo"),
                   *hi = cell(t, r, "paper_hi");
        buf_printf(b, "<tr><td>");
        esc(b, cell(t, r, "paper_id"));
        buf_printf(b, "</td><td>");
        esc(b, cell(t, r, "quantity"));
        buf_printf(b, "</td><td>");
        esc(b, cell(t, r, "condition"));
        buf_printf(b, "</td><td class=\"num\">");
        if (pv[0]) {
            esc(b, pv);
        } else if (lo[0] || hi[0]) {
            esc(b, lo);
            buf_printf(b, " .. ");
            esc(b, hi);
        }
        buf_printf(b, "</td><td class=\"num\">");
        esc_tidy(b, cell(t, r, "ours"));
        buf_printf(b, "</td><td>");
        esc(b, cell(t, r, "unit"));
        buf_printf(b, "</td><td class=\"num\">");
        esc_tidy(b, cell(t, r, "ratio"));
        buf_printf(b, "</td><td>");
        status_span(b, cell(t, r, "status"));
        buf_printf(b, "</td><td class=\"basis\">");
        esc(b, cell(t, r, "basis"));
        if (cell(t, r, "command")[0]) {
            buf_printf(b, "<br><code>");
            esc(b, cell(t, r, "command"));
            buf_printf(b, "</code>");
        }
        buf_printf(b, "</td></tr>\n");
    }
    buf_printf(b, "</table></div>\n");
}

static bool is_repro(const struct rep_file *f)
{
    const char *n = strrchr(f->rel, '/');
    n = n ? n + 1 : f->rel;
    return f->kind == REP_TABLE && f->has_tab && !strcmp(n, "reproduce.csv");
}

static void prov(const struct rep_prov *p, struct buf *b)
{
    buf_printf(b, "<div class=\"prov\">");
    if (p->command[0]) {
        buf_printf(b, "command: <code>");
        esc(b, p->command);
        buf_printf(b, "</code>");
    } else {
        buf_printf(b, "command: not recorded (no manifest.json at or above the folder, no demo "
                      "step)");
    }
    if (p->data[0]) {
        buf_printf(b, " &middot; data: ");
        esc(b, p->data);
    }
    if (p->config_hash[0]) {
        buf_printf(b, " &middot; config hash <code>");
        esc(b, p->config_hash);
        buf_printf(b, "</code>");
    }
    if (p->trace_hash[0]) {
        buf_printf(b, " &middot; trace hash <code>");
        esc(b, p->trace_hash);
        buf_printf(b, "</code>");
    }
    if (p->from[0]) {
        buf_printf(b, " (from ");
        esc(b, p->from);
        buf_printf(b, ")");
    }
    buf_printf(b, "</div>");
}

static void figure(const struct rep_doc *d, const struct rep_section *s, const struct rep_file *f,
                   struct buf *b)
{
    const char *name = strrchr(f->rel, '/');
    name = name ? name + 1 : f->rel;
    buf_printf(b, "<figure><a href=\"");
    href(d, s, f->rel, b);
    buf_printf(b, "\"><img src=\"");
    img_src(d, s, f->rel, b);
    buf_printf(b, "\" alt=\"");
    esc(b, f->caption);
    buf_printf(b, "\"></a>\n<figcaption><b>");
    esc(b, name);
    buf_printf(b, "</b>: ");
    esc(b, f->caption);
    if (f->title[0] && strcmp(f->title, f->caption)) {
        buf_printf(b, "<br>plot title: ");
        esc(b, f->title);
    }
    prov(&f->prov, b);
    buf_printf(b, "</figcaption></figure>\n");
}

static void gallery(const struct rep_doc *d, const struct rep_section *s, int g, struct buf *b)
{
    size_t n = 0;
    for (size_t i = 0; i < s->n_files; i++)
        n += s->files[i].kind == REP_IMAGE && s->files[i].question == g;
    if (!n)
        return;
    buf_printf(b, "<h4>Gallery: ");
    esc(b, rep_galleries[g].title);
    buf_printf(b, " (%zu)</h4>\n<p>", n);
    esc(b, rep_galleries[g].caption);
    const struct rep_prov *p = NULL;
    for (size_t i = 0; i < s->n_files && !p; i++)
        if (s->files[i].kind == REP_IMAGE && s->files[i].question == g)
            p = &s->files[i].prov;
    buf_printf(b, "</p>");
    prov(p, b);
    buf_printf(b, "\n<div class=\"gallery\">\n");
    for (size_t i = 0; i < s->n_files; i++) {
        const struct rep_file *f = &s->files[i];
        if (f->kind != REP_IMAGE || f->question != g)
            continue;
        buf_printf(b, "<a href=\"");
        href(d, s, f->rel, b);
        buf_printf(b, "\"><img src=\"");
        img_src(d, s, f->rel, b);
        buf_printf(b, "\" alt=\"");
        esc(b, f->rel);
        buf_printf(b, "\">");
        esc(b, f->rel);
        buf_printf(b, "</a>\n");
    }
    buf_printf(b, "</div>\n");
}

static void preview(const struct rep_doc *d, const struct rep_section *s, const struct rep_file *f,
                    struct buf *b)
{
    buf_printf(b, "<details><summary><a href=\"");
    href(d, s, f->rel, b);
    buf_printf(b, "\"><code>");
    esc(b, f->rel);
    buf_printf(b, "</code></a>: ");
    esc(b, f->caption);
    buf_printf(b, "</summary>\n");
    if (f->has_tab) {
        const struct csv_table *t = &f->tab;
        buf_printf(b, "<div class=\"scroll\"><table class=\"preview\"><tr>");
        for (size_t c = 0; c < t->n_cols; c++) {
            buf_printf(b, "<th>");
            esc(b, t->header[c]);
            buf_printf(b, "</th>");
        }
        buf_printf(b, "</tr>\n");
        for (size_t r = 0; r < t->n_rows && r < REP_PREVIEW_ROWS; r++) {
            buf_printf(b, "<tr>");
            for (size_t c = 0; c < t->n_cols; c++) {
                buf_printf(b, "<td>");
                esc_tidy(b, t->rows[r][c]);
                buf_printf(b, "</td>");
            }
            buf_printf(b, "</tr>\n");
        }
        buf_printf(b, "</table></div>");
        if (t->n_rows > REP_PREVIEW_ROWS)
            buf_printf(b, "<p>first %d of %zu rows</p>", REP_PREVIEW_ROWS, t->n_rows);
    }
    buf_printf(b, "</details>\n");
}

static void section(const struct rep_doc *d, size_t si, struct buf *b)
{
    const struct rep_section *s = &d->secs[si];
    buf_printf(b, "<section class=\"workload\" id=\"w%zu\">\n<h2>", si);
    esc(b, s->label);
    buf_printf(b, "</h2>\n");
    char data[4096];
    rep_data_sources(s, data, sizeof data);
    buf_printf(b, "<p class=\"data\">Data: ");
    esc(b, data);
    buf_printf(b, "</p>\n");
    headlines(s, b);
    size_t nr = 0;
    for (size_t i = 0; i < s->n_files; i++)
        nr += is_repro(&s->files[i]);
    if (nr) {
        buf_printf(b, "<h3>Ours vs paper</h3>\n");
        legend(b);
        for (size_t i = 0; i < s->n_files; i++)
            if (is_repro(&s->files[i]))
                repro_table(s, &s->files[i], b);
    }
    for (size_t q = 0; q < rep_question_count(); q++) {
        size_t n = 0;
        for (size_t i = 0; i < s->n_files; i++)
            n += s->files[i].kind == REP_FIGURE && s->files[i].question == (int)q;
        if (!n)
            continue;
        buf_printf(b, "<h3>");
        esc(b, rep_questions[q]);
        buf_printf(b, "</h3>\n<div class=\"figs\">\n");
        for (size_t i = 0; i < s->n_files; i++)
            if (s->files[i].kind == REP_FIGURE && s->files[i].question == (int)q)
                figure(d, s, &s->files[i], b);
        buf_printf(b, "</div>\n");
    }
    size_t ni = 0, nt = 0;
    for (size_t i = 0; i < s->n_files; i++)
        ni += s->files[i].kind == REP_IMAGE, nt += s->files[i].kind == REP_TABLE;
    if (ni) {
        buf_printf(b, "<h3>Images</h3>\n");
        for (size_t g = 0; g < rep_gallery_count(); g++)
            gallery(d, s, (int)g, b);
    }
    if (nt) {
        buf_printf(b, "<h3>Tables (%zu)</h3>\n", nt);
        for (size_t i = 0; i < s->n_files; i++)
            if (s->files[i].kind == REP_TABLE)
                preview(d, s, &s->files[i], b);
    }
    buf_printf(b, "</section>\n");
}

/* The preamble: lines "- x" become a list, other lines paragraphs. */
static void preamble(const char *text, struct buf *b)
{
    bool list = false;
    for (const char *p = text; *p;) {
        size_t l = strcspn(p, "\n");
        char line[4096];
        snprintf(line, sizeof line, "%.*s", (int)(l < sizeof line ? l : sizeof line - 1), p);
        bool item = !strncmp(line, "- ", 2);
        if (item && !list)
            buf_printf(b, "<ul>\n");
        if (!item && list)
            buf_printf(b, "</ul>\n");
        list = item;
        if (item) {
            buf_printf(b, "<li>");
            esc(b, line + 2);
            buf_printf(b, "</li>\n");
        } else if (line[0]) {
            buf_printf(b, "<p class=\"pre\">");
            esc(b, line);
            buf_printf(b, "</p>\n");
        }
        p += l;
        if (*p)
            p++;
    }
    if (list)
        buf_printf(b, "</ul>\n");
}

void rep_html(const struct rep_doc *d, struct buf *b)
{
    const char *title = d->opts->title ? d->opts->title : "acceltrace report";
    buf_printf(b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                  "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
                  "<title>");
    esc(b, title);
    buf_printf(b, "</title>\n<style>%s</style>\n</head>\n<body>\n<h1>", css);
    esc(b, title);
    buf_printf(b, "</h1>\n");
    if (d->opts->preamble)
        preamble(d->opts->preamble, b);
    buf_printf(b, "<nav><ul>\n");
    for (size_t i = 0; i < d->n_secs; i++) {
        buf_printf(b, "<li><a href=\"#w%zu\">", i);
        esc(b, d->secs[i].label);
        buf_printf(b, "</a></li>\n");
    }
    buf_printf(b, "</ul></nav>\n");
    for (size_t i = 0; i < d->n_secs; i++)
        section(d, i, b);
    if (d->skipped.len) {
        buf_printf(b, "<p class=\"skipped\">Not covered: ");
        esc(b, (const char *)d->skipped.data);
        buf_printf(b, "</p>\n");
    }
    buf_printf(b, "</body>\n</html>\n");
}
