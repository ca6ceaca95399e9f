/*
 * report: one self-contained HTML page (and its plain-text twin in Markdown) over the
 * workload folders of a results tree (`acceltrace report`, `acceltrace demo`).
 *
 * Which folders: each DIR given is either a collection or one workload folder. DIR is a
 * collection when at least one folder directly inside it carries the marker of a demo
 * workload (.acceltrace-demo) or of a reproduce run (.acceltrace-reproduce); its
 * workload folders are then exactly those marked children (sorted by name) and every other
 * child is left out and named in the report. Otherwise DIR itself is the one workload
 * folder. Inside a workload folder files are found to depth 4 (hidden names skipped);
 * nothing above or beside the folders given is read. Each --exclude GLOB (fnmatch) is
 * matched against the path relative to DIR and against the bare name; a matching folder is
 * not entered, a matching file is not listed.
 *
 * What each workload gets, in this order (the same in both files):
 *   1. headline numbers: for each results folder (manifest.json + results.csv) the rows
 *      counted and, for its model, the main metrics at config_index 0 with their range over
 *      the sweep; known analyzer outputs (alpha.csv, ...); each with its status word and the
 *      file, row and column it was read from (the table in report_known.c);
 *   2. ours vs paper: every reproduce.csv of the folder, status labels coloured, a legend;
 *   3. figures (*.png, *.svg) grouped by question, each with a caption saying what it shows
 *      (the known-figure table, else NAME.caption, else the gnuplot title) and the command,
 *      config hash and trace hash behind it (the nearest manifest.json at or above its
 *      folder, else the demo step that wrote the folder, as recorded in the demo marker);
 *      unknown figures under "Other figures" with their gnuplot title;
 *   4. galleries of raw images (a *.png without NAME.gp: masks, phase maps, pictures);
 *   5. tables (*.csv): size and columns, with the first 20 rows in a collapsible preview.
 * Everything read from files is HTML-escaped. Images are referenced by relative paths from
 * the HTML file's folder, or embedded as data: URIs with inline_images (one portable file).
 * The page has no script and loads nothing from the network. Both files are written to a
 * temporary, fsync'ed and renamed.
 */
#ifndef ACCELTRACE_REPORT_H
#define ACCELTRACE_REPORT_H

#include <stdbool.h>
#include <stddef.h>

#include "common/err.h"

struct report_opts {
    const char *const *dirs; /* (n_dirs) folders given */
    size_t n_dirs;
    const char *html_path;      /* NULL: dirs[0]/report.html */
    const char *md_path;        /* NULL: html_path with .html replaced by .md (or .md added) */
    const char *const *exclude; /* (n_exclude) fnmatch globs */
    size_t n_exclude;
    const char *title;    /* NULL: "acceltrace report" */
    const char *preamble; /* text shown under the title; lines "- x" become a list; or NULL */
    bool inline_images;   /* embed images as data: URIs */
};

struct report_stats {
    size_t workloads; /* workload folders covered */
    size_t figures;   /* figures and raw images */
    size_t tables;
    size_t headlines;  /* headline numbers */
    size_t repro_rows; /* rows of ours-vs-paper tables */
    char html_path[4096];
    char md_path[4096];
};

/*
 * Writes the report. 0, or: ERR_NOINPUT when a DIR cannot be read, ERR_USAGE when it is not
 * a folder, ERR_DATA when the folders hold no figure or table (nothing is written then),
 * ERR_IO, ERR_NOMEM; e names the folder or file. stats may be NULL.
 */
int report_write(const struct report_opts *opts, struct report_stats *stats, struct errmsg *e);

#endif
