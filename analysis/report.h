/*
 * report: DIR/report.md, an index of a results tree (DESIGN.md section 6). Every figure
 * (*.png) and table (*.csv) under DIR (depth <= 4, sorted by path) gets one link with a
 * one-line caption, grouped by folder. Captions, in order of preference: the first line of
 * NAME.caption next to the file; for a figure, the title in NAME.gp; for a table, its size
 * and first columns. Links are relative to DIR, so the folder can be moved.
 */
#ifndef ACCELTRACE_REPORT_H
#define ACCELTRACE_REPORT_H

#include <stddef.h>

#include "common/err.h"

struct report_stats {
    size_t figures;
    size_t tables;
};

/*
 * Writes DIR/report.md with the given title and an optional preamble paragraph (may be
 * NULL). 0 or ERR_IO/ERR_NOMEM with e set; ERR_NOINPUT when DIR cannot be read, ERR_USAGE
 * when it is not a folder, ERR_DATA when it holds no figure or table (no report.md is
 * written then). Only regular files are listed. stats may be NULL.
 */
int report_write(const char *dir, const char *title, const char *preamble,
                 struct report_stats *stats, struct errmsg *e);

#endif
