/*
 * reproduce_runs: the DiSC and Salca runs of `acceltrace reproduce`. They sit in cli/ because
 * each runs a capture and replays it in-process, and only the top floor may include both
 * capture/ and replay/; the row table they fill is analysis/reproduce.h.
 */
#ifndef ACCELTRACE_REPRODUCE_RUNS_H
#define ACCELTRACE_REPRODUCE_RUNS_H

#include "analysis/reproduce.h"
#include "common/err.h"

/* DiSC and Salca; each appends its rows and Markdown sections. 0 or negative with e. (The
 * SA-Kura run needs no capture and is analysis/reproduce.h reproduce_kura.) */
int reproduce_disc(struct repro_table *t, const struct repro_opts *o, struct errmsg *e);
int reproduce_salca(struct repro_table *t, const struct repro_opts *o, struct errmsg *e);

#endif
