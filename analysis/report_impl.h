/*
 * report_impl: what the report modules share (analysis/report.c, report_scan.c,
 * report_known.c, report_html.c, report_md.c). Not a public header.
 *
 * report_scan builds a struct rep_doc from the folders given: one struct rep_section per
 * workload folder, each with its files (figures, raw images, tables), the provenance of
 * each figure and its headline numbers; its reproduce.csv tables are among its files. The two
 * writers render the same doc in the same order: headlines, ours vs paper, figures by question (the
 * order of rep_questions), galleries, tables.
 */
#ifndef ACCELTRACE_REPORT_IMPL_H
#define ACCELTRACE_REPORT_IMPL_H

#include <stdbool.h>
#include <stddef.h>

#include "analysis/report.h"
#include "common/buf.h"
#include "common/err.h"
#include "formats/csv.h"

#define REP_MAX_DEPTH 4
#define REP_MAX_FILES 20000
#define REP_PREVIEW_ROWS 20
#define REP_TABLE_MAX_BYTES (16u << 20) /* larger tables are listed, not loaded */

enum rep_kind {
    REP_FIGURE = 0, /* an image with a gnuplot script NAME.gp beside it, or a known name */
    REP_IMAGE = 1,  /* an image without a script: a raw bitmap, shown in a gallery */
    REP_TABLE = 2,  /* a *.csv */
};

/* What made a file: the nearest manifest.json or the demo step that wrote its folder. */
struct rep_prov {
    char command[1600]; /* the command line, "" when not recorded */
    char config_hash[72];
    char trace_hash[72];
    char data[640]; /* what made the trace's data: its header's source (detail), or "" */
    char from[512]; /* where this was read: "test/replay/manifest.json", "demo step" */
};

struct rep_file {
    char *rel;     /* path relative to the section folder */
    int kind;      /* enum rep_kind */
    int question;  /* index into rep_questions (figures); gallery index (images) */
    char *caption; /* one line, never NULL after the scan */
    char *title;   /* the .gp title or "" */
    struct rep_prov prov;
    bool has_tab;         /* tables: tab holds the loaded rows */
    struct csv_table tab; /* tables up to REP_TABLE_MAX_BYTES */
};

struct rep_headline {
    char quantity[200];
    char setting[640]; /* what the number is of: folder, hardware, trace, swept settings */
    char value[48];
    char range[96]; /* "lo .. hi over N configs", or "" */
    char unit[32];
    char status[32]; /* predicted, recomputed, calibrated, input, not-modelled */
    char basis[400];
    char source[600]; /* file, row and column the value was read from */
};

struct rep_section {
    char *path;   /* the folder as opened (DIR or DIR/child) */
    char *abs;    /* the same, absolute (realpath) */
    char *prefix; /* "" or "child/": the section's path relative to its DIR, for --exclude */
    char *label;  /* the heading: DIR as given, or DIR/child */
    struct rep_file *files;
    size_t n_files, cap_files;
    struct rep_headline *heads;
    size_t n_heads, cap_heads;
};

/* The header fields the report reads from one trace: read once per report run. */
struct rep_trace_head {
    char *path;      /* the key: realpath of the trace, or the path as given */
    bool opened;     /* the trace opened (the fields below are from its header) */
    bool has_header; /* it had a header */
    char *source;    /* header source, detail and capture parameters; NULL when absent */
    char *detail;
    char *params_json;
};

/* The headers read so far in one report run (rep_doc.traces), in first-read order. */
struct rep_trace_cache {
    struct rep_trace_head *v;
    size_t n, cap;
};

/*
 * The header fields of the trace at path, read from the file the first time this run asks
 * for it (the path is resolved with realpath, so two spellings of one file share an
 * entry). A trace that does not open gives an entry with opened false. NULL only when out
 * of memory. The entry stays owned by c and valid until the next call.
 */
const struct rep_trace_head *rep_trace_head(struct rep_trace_cache *c, const char *path);
/* Frees every entry of c. */
void rep_trace_cache_release(struct rep_trace_cache *c);

struct rep_doc {
    const struct report_opts *opts;
    struct rep_trace_cache traces; /* trace headers read by the provenance and headlines */
    char out_dir[4096];            /* the folder of the HTML file, absolute */
    struct rep_section *secs;
    size_t n_secs, cap_secs;
    struct buf skipped; /* "a, b" folders not covered, and why */
};

/* Questions figures are grouped by, in report order; the last is "Other figures". */
extern const char *const rep_questions[];
size_t rep_question_count(void);

/* Galleries of raw images: title and what they show. */
struct rep_gallery {
    const char *pattern; /* fnmatch on the base name without extension */
    const char *title;
    const char *caption;
};
extern const struct rep_gallery rep_galleries[];
size_t rep_gallery_count(void);

/*
 * Looks up a figure's base name (no folder, no extension) in the table of known figures:
 * the question index and the caption (what the figure shows). Unknown names get the last
 * question ("Other figures") and caption NULL.
 */
void rep_known_figure(const char *base, int *question, const char **caption);
/* Gallery index of a raw image's base name (the last entry matches everything). */
int rep_known_gallery(const char *base);
/* True when base matches a named gallery (not the catch-all last one). */
bool rep_in_named_gallery(const char *base);

/*
 * Headline numbers of section s from the results folders and analyzer outputs its files
 * name (the table in report_known.c). Numbers that cannot be read are left out; 0 or
 * ERR_NOMEM. Trace headers are read through tc.
 */
int rep_headlines(struct rep_section *s, struct rep_trace_cache *tc);

/* Builds doc from opts (report_scan.c); frees with rep_doc_release. 0 or an error in e. */
/*
 * The distinct data sources (rep_prov.data, first-seen order) of section s's files joined
 * by "; " into out (cut to n), or a "not recorded" sentence when none names one.
 */
void rep_data_sources(const struct rep_section *s, char *out, size_t n);

int rep_doc_build(struct rep_doc *doc, const struct report_opts *opts, struct errmsg *e);
void rep_doc_release(struct rep_doc *doc);

/* Section path joined with a file's rel: "DIR/rel" into out. */
void rep_join(const struct rep_section *s, const char *rel, char *out, size_t n);
/* The path of file rel of s relative to the report's folder (for links), into out. */
void rep_link(const struct rep_doc *d, const struct rep_section *s, const char *rel, char *out,
              size_t n);

/* The writers: the whole page into b (sticky errors, checked by the caller). */
void rep_html(const struct rep_doc *d, struct buf *b);
void rep_md(const struct rep_doc *d, struct buf *b);

/*
 * s with every decimal fraction of more than 6 significant digits ("0.40000000000000002",
 * "57.06523167235511") printed with 6 ("0.4", "57.0652"), into out (n bytes). Whole
 * numbers, hashes and words are left as they are. Shared by both writers.
 */
void rep_tidy_numbers(const char *s, char *out, size_t n);

/* Shared by both writers: the status class of a status word ("predicted" -> "st-pred"). */
const char *rep_status_class(const char *status);
/* Legend text of a status word. */
const char *rep_status_meaning(const char *status);

#endif
