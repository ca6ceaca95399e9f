/*
 * energy: energy tables applied to activity counts (docs/design.md#data-flow: models emit
 * counts; energy is a separate table, so it can be recomputed without replaying).
 *
 * Convention (docs/models.md "Energy tables"): a JSON file
 *
 *   {
 *     "doc": "placeholders until per-event data exists [decision]",
 *     "events": [
 *       {"count": "mac",           "pj": 0.6,  "component": "mac"},
 *       {"count": "sram_rd_bytes", "pj": 0.6,  "component": "sram"},
 *       {"count": "hbm_bytes",     "pj": 31.2, "component": "hbm"}
 *     ],
 *     "static": [{"time": "seconds", "watts": 8.0, "component": "static"}]
 *   }
 *
 * "count" names a count column of a results row, "pj" is picojoules per unit of that
 * count; "time" names a metric in seconds and "watts" a constant power. Applying a table to
 * a row that has every named column gives energy_<component>_j per component (components in
 * order of first appearance) and energy_j, the sum, all in joules:
 *   E_c = 1e-12 * sum(count * pj) + sum(watts * seconds)   (decision)
 * Rows missing any named column are left without energy columns.
 */
#ifndef ACCELTRACE_ENERGY_H
#define ACCELTRACE_ENERGY_H

#include <stdbool.h>
#include <stddef.h>

#include "common/err.h"

struct energy_event {
    char *count;     /* count column name */
    char *component; /* component name */
    double pj;       /* pJ per unit (events) or W (static terms) */
    int is_static;   /* 1: watts * time metric `count` in seconds */
};

struct energy_table {
    char *path;
    size_t n_events;
    struct energy_event *events; /* "events" in file order, then "static" */
    size_t n_components;
    char **components;  /* order of first appearance */
    bool static_listed; /* the file has a "static" list (possibly empty) */
};

/* Loads a table; 0 or ERR_CONFIG (file + JSON path)/ERR_IO/ERR_NOMEM with e set. */
int energy_table_load(struct energy_table *t, const char *path, struct errmsg *e);
void energy_table_release(struct energy_table *t);

/*
 * The built-in table NAME, for a model whose config names no table: "disc" and "salca"
 * hold the values of the shipped configs/disc-energy.json and configs/salca-energy.json
 * (the same events, pJ and static terms, in file order), compiled in so the models run
 * without the files. Models use the total only, so every event of a built-in table is in
 * one component, "model", which also sums the events in table order (decision). Static
 * storage, never released; NULL for any other name. A test checks each against its file.
 */
const struct energy_table *energy_table_builtin(const char *name);

/*
 * Computes the energy of one row given a lookup of column values by name. lookup returns
 * 0 and *v when the column exists, negative otherwise. comp_j receives n_components values
 * (J) and *total_j their sum. 0, or ERR_NOTFOUND when a named column is missing.
 */
int energy_compute(const struct energy_table *t,
                   int (*lookup)(void *ctx, const char *name, double *v), void *ctx, double *comp_j,
                   double *total_j);

/*
 * True for the columns a table writes (energy_j, energy_<component>_j, unit J), which
 * recomputing replaces; false for every other column, such as a model's
 * energy_gain_vs_dense. unit may be NULL (no unit).
 */
bool energy_is_column(const char *name, const char *unit);

/*
 * Refuses a table that fits none of the rows of the results CSV at path: 0 when the table
 * has no rows or one row has every count and time column the table names; ERR_DATA naming
 * the first such column the rows lack otherwise (a table of another model would drop every
 * energy column). energy_recompute_csv makes the same check.
 */
int energy_check_csv(const struct energy_table *t, const char *path, struct errmsg *e);

/*
 * Recomputes the energy columns of a results CSV (results.csv, ops.csv) with a table:
 * its energy columns (energy_is_column) are dropped, new ones appended after the last
 * column, rows without the named counts get empty energy cells. Writes out_path (may
 * equal in_path: written to a temporary and renamed); only the CSV: a results folder's
 * .csv and .jsonl change together through results_energy (replay/results.h). 0 or
 * negative with e set (ERR_DATA, nothing written, when the table fits no row).
 */
int energy_recompute_csv(const char *in_path, const struct energy_table *t, const char *out_path,
                         struct errmsg *e);

#endif
