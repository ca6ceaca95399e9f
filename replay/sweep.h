/*
 * sweep: expands a grid file into hardware configs (docs/design.md#replay-and-sweeps).
 *
 * A grid is a JSON object whose members, in file order, are the axes of a cartesian
 * product (the last axis varies fastest):
 *
 *   {
 *     "dpu_count": [16, 32, 64],                        list of values
 *     "clock_ghz": {"range": [0.5, 1.5, 0.25]},          a, a+step, ... up to b inclusive
 *     "shape": {"zip": {"n_h": [5, 10], "n_w": [20, 10]}} keys that vary together
 *     "hash": "mul"                                      one fixed value
 *   }
 *
 * A zip may name its rows with a member "name": {"zip": {"name": ["small", "big"],
 * "n_h": [5, 10], ...}}: a list of strings as long as the other lists, each 1 to 64 bytes
 * without control characters, no two equal. The name of config i (sweep_name) is the names
 * of its rows of every named zip, in file order, joined by ", " (at most
 * SWEEP_NAME_TOTAL_MAX bytes, checked at load from the longest names); results carry it as a
 * `name` column, plots use it in legends (README.md, "Named sweep rows"). A grid without
 * names expands exactly as before.
 *
 * Keys are schema keys of the base config's model (dotted for nested keys). A member
 * named "doc" is a comment. Each value is validated like a config value (unknown key, wrong
 * type, out of range: ERR_CONFIG naming the grid file and the JSON path, e.g.
 * "$.clock_ghz.range[1]"). Range values are a + i*step (no accumulated rounding) for
 * i = 0 .. floor((b - a)/step + 1e-9); integer keys need integer a, b, step and count
 * exactly ((b - a)/step + 1 in unsigned 64-bit arithmetic, no overflow for any int64
 * bounds). The number of configs is computed from the shape of every axis before any
 * value is expanded, and ranges are never expanded (sweep_config computes value i; only
 * a range's first and last values are validated, the schema's checks being a type and an
 * interval), so a grid's memory is that of its lists, whatever its ranges.
 * Expanded config i is the base config with axis values applied; its index is stable for
 * a given grid, which is what --shard slices and what merge sorts by.
 */
#ifndef ACCELTRACE_SWEEP_H
#define ACCELTRACE_SWEEP_H

#include <stdbool.h>
#include <stddef.h>

#include "common/err.h"
#include "replay/hw_config.h"

struct sweep;

/* Loads a grid file against a base config (copied). 0 or ERR_CONFIG/ERR_IO/ERR_NOMEM. */
int sweep_load(struct sweep **out, const char *grid_path, const struct hw_config *base,
               struct errmsg *e);
/* Same from JSON text (name for messages). */
int sweep_parse(struct sweep **out, const char *json_text, const char *name,
                const struct hw_config *base, struct errmsg *e);
/* A one-config sweep of the base config alone (no grid). */
int sweep_single(struct sweep **out, const struct hw_config *base);
void sweep_free(struct sweep *s);

/* Number of configs (product of axis lengths, overflow-checked; a grid above 10^7 is
 * ERR_LIMIT at load, "grid expands to N configs, more than 10000000 ('g.json')"). */
size_t sweep_count(const struct sweep *s);
/* Number of axes and the keys they set (for listing). */
size_t sweep_axes(const struct sweep *s);

/* The longest name of one zip row, the text between the names of two zips, and the
 * longest name of a config (a grid whose names could join to more is refused at load). */
#define SWEEP_NAME_MAX 64
#define SWEEP_NAME_SEP ", "
#define SWEEP_NAME_TOTAL_MAX 400

/* True when some zip of the grid names its rows. */
bool sweep_has_names(const struct sweep *s);
/*
 * The name of config i (see above) into buf of n bytes; "" when the grid names no rows.
 * 0, ERR_USAGE (i out of range) or ERR_LIMIT (buf too small).
 */
int sweep_name(const struct sweep *s, size_t i, char *buf, size_t n);

/* Builds config i (0-based); caller frees with hw_config_free. 0 or negative with e set
 * (ERR_CONFIG when the schema's cross-key check rejects the combination). */
int sweep_config(const struct sweep *s, size_t i, struct hw_config **out, struct errmsg *e);

/*
 * Slice I of N (1-based, as --shard I/N): configs [n*(I-1)/N, n*I/N). Sets *begin, *end.
 */
void sweep_shard(size_t n, unsigned shard_i, unsigned shard_n, size_t *begin, size_t *end);

#endif
