/*
 * disc_plots_impl: what the two files of analysis/disc_plots share (disc_plots.c: results
 * views and disc_plots_write; disc_plots_trace.c: the capture views of traces). Not for
 * use outside them.
 */
#ifndef ACCELTRACE_DISC_PLOTS_IMPL_H
#define ACCELTRACE_DISC_PLOTS_IMPL_H

#include <stdbool.h>
#include <stddef.h>

#include "analysis/analyzer.h"
#include "analysis/plot.h"
#include "common/err.h"

struct trace_reader;

/* Writes and frees p; *rendered (may be NULL) false when gnuplot made no PNG. 0 or <0. */
int disc_plots_finish(struct plot *p, const char *dir, bool *rendered, struct errmsg *e);

/* A small CSV beside each plot: header then rows of category, series..., values
 * (v: (ns, nc)). 0 or ERR_IO with e set. */
int disc_plots_bars_csv(const char *dir, const char *name, const char *const *cats, size_t nc,
                        const char *const *series, size_t ns, const double *v, struct errmsg *e);

/* The capture views of traces[0..n) into out (disc_plots_trace.c), extra[0..n_extra)
 * riding along the pass over traces[0], read from first when not NULL (taken over, freed
 * also on failure). 0 or <0 with e set. */
int disc_plots_traces(const char *const *traces, size_t n, struct trace_reader *first,
                      const struct analyzer *extra, size_t n_extra, const char *out, bool *rendered,
                      struct errmsg *e);

#endif
