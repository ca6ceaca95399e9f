/*
 * results: the results folder of a replay (DESIGN.md section 5).
 *
 *   DIR/results.csv     one row per (config[, labels]): key columns, every config key,
 *                       then the model's labels, counts and metrics; header cells are
 *                       "name [unit]" ("name" when dimensionless)
 *   DIR/results.jsonl   the same rows as JSON objects {"trace_hash", "config_hash",
 *                       "config_index", "model", "config": {...}, "row": i, "rows": n,
 *                       "labels": {...}, "counts": {...}, "metrics": {...}, "units": {...}}
 *   DIR/<table>.csv/.jsonl  secondary tables a model adds (result_row_begin(res, "ops"))
 *
 * Key columns: trace_hash, config_hash, config_index, model. Rows of one config are
 * written as a group (secondary tables first, the main table last), each row appended and
 * flushed on its own. The main table's JSON lines are the record of what is done: a config
 * is done when all `rows` of its group are in results.jsonl. Opening an existing folder
 * (resume) drops torn or incomplete trailing groups from every file, so a rerun after a
 * SIGKILL appends exactly what is missing and the final files equal an uninterrupted run's
 * byte for byte (rows come in config_index order either way). A folder holding rows of a
 * different trace or model is refused (ERR_USAGE).
 *
 * struct model_result (replay/model.h) collects one config's rows before they are written.
 */
#ifndef ACCELTRACE_RESULTS_H
#define ACCELTRACE_RESULTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "replay/energy.h"
#include "replay/hw_config.h"
#include "replay/model.h"

struct results;

/*
 * Opens (creating) DIR for the rows of trace `trace_hash` and model `model`; existing rows
 * are checked and trimmed as above. 0 or negative with e set.
 */
int results_open(struct results **out, const char *dir, const char *trace_hash,
                 const char *model, struct errmsg *e);
/* True when config_hash's rows are all present. */
bool results_done(const struct results *r, const char *config_hash);
/* Number of configs done. */
size_t results_n_done(const struct results *r);

/*
 * Writes the rows of one config (energy applied first when `energy` is not NULL).
 * 0 or negative with e set (ERR_INTERNAL when a table's columns change between rows).
 */
int results_append(struct results *r, const struct hw_config *cfg, size_t config_index,
                   struct model_result *res, const struct energy_table *energy,
                   struct errmsg *e);
/* Closes the files; returns the first error. NULL is a no-op. */
int results_close(struct results *r);

/* A new, empty model_result (engine side). */
struct model_result *model_result_new(void);
void model_result_free(struct model_result *res);
/* Number of rows collected. */
size_t model_result_rows(const struct model_result *res);
/* Value of a count or metric column of row i by name; 0, or ERR_NOTFOUND. */
int model_result_get(const struct model_result *res, size_t row, const char *name, double *v);

/*
 * Joins results folders (shards) into out_dir: every table's rows sorted by config_index
 * (stable). Refuses mixed traces or models, differing headers and duplicate configs
 * (ERR_DATA naming the folders). 0 or negative with e set.
 */
int results_merge(const char *const *dirs, size_t n_dirs, const char *out_dir,
                  struct errmsg *e);

#endif
