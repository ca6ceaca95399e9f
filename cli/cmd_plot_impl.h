/*
 * cmd_plot_impl: what cmd_plot.c (the verb, its options, row filters and checks) and
 * cmd_plot_generic.c (the generic figures) share. Private to cli/cmd_plot*.c.
 */
#ifndef ACCELTRACE_CMD_PLOT_IMPL_H
#define ACCELTRACE_CMD_PLOT_IMPL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define CMD_PLOT_VERB "plot"
#define CMD_PLOT_MAX_Y 64 /* --y and --where options, at most */

/* How the generic figures are drawn (the options of one plot run). */
struct plot_opts {
    const char *xkey, *series, *style, *facet;
    bool logx, logy;
    const char **where;
    size_t n_where;
};

/* A JSON value as text (strings unquoted); caller frees with mem_free. */
char *cmd_plot_value_text(const json_t *v);

/*
 * Refuses name (a --y, --x or --where key) that none of the objects of groups holds (the
 * members of row's groups[i]), with the closest name or the list of them: exit 2.
 */
int cmd_plot_unknown_name(const char *what, const char *name, size_t len, const json_t *row,
                          const char *const *groups, size_t n_groups);

/* True when one of row's groups holds member name (len bytes). */
bool cmd_plot_row_has(const json_t *row, const char *name, size_t len, const char *const *groups,
                      size_t n_groups);

/*
 * The generic figures of rows (a JSON array of result rows) for the counts or metrics ys
 * (all when n_ys is 0) into folder out; *n_png counts the PNGs written. 0 or a CLI exit
 * code (usage errors printed).
 */
int cmd_plot_generic(json_t *rows, const struct plot_opts *o, const char **ys, size_t n_ys,
                     const char *out, int *n_png);

#endif
