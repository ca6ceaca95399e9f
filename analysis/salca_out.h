/*
 * salca_out: the output steps shared by the analyzers of Salca traces (analysis/
 * conflicts.h, select_quality.h, overshoot.h, heavy_stability.h): a CSV table opened in a
 * folder and closed with its write error named, and a plot written and freed. Every error
 * goes into the caller's struct errmsg; nothing prints.
 */
#ifndef ACCELTRACE_SALCA_OUT_H
#define ACCELTRACE_SALCA_OUT_H

#include <stdbool.h>

#include "analysis/plot.h"
#include "common/err.h"
#include "formats/csv.h"

/* Opens DIR/NAME for a CSV table (the caller closes it with salca_out_csv_close).
 * 0 or ERR_IO/ERR_NOMEM with e set. */
int salca_out_csv_open(const char *dir, const char *name, struct csv_writer **w, struct errmsg *e);

/* Closes a table of salca_out_csv_open: 0, or ERR_IO with e set ("cannot write
 * 'DIR/NAME': reason") when any write failed. */
int salca_out_csv_close(struct csv_writer *w, const char *dir, const char *name, struct errmsg *e);

/* Writes p into dir and frees it; *rendered becomes false when gnuplot made no image (it
 * is never set true). 0 or <0 with e set ("plot 'DIR': ..."). */
int salca_out_plot(struct plot *p, const char *dir, bool *rendered, struct errmsg *e);

#endif
