/*
 * results_impl: what the parts of the results module share, private to replay/results*.c
 * (the public contract is results.h). results.c holds model_result and writes rows,
 * results_folder.c opens, locks, resumes and closes a folder and keeps its manifest,
 * results_energy.c rewrites energy columns, results_merge.c merges shard folders.
 * Every row is one CSV line and one JSON line (results.c), which resume, energy and merge
 * rely on.
 */
#ifndef ACCELTRACE_RESULTS_IMPL_H
#define ACCELTRACE_RESULTS_IMPL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/buf.h"
#include "common/err.h"
#include "replay/results.h"

#define RES_MAX_TABLES 32

/* ---- model_result (results.c) ---- */

enum col_kind { COL_LABEL, COL_COUNT_U64, COL_COUNT_F64, COL_METRIC_F64, COL_METRIC_I64 };

struct res_col {
    char *name, *unit;
    enum col_kind kind;
    char *s;
    uint64_t u;
    int64_t i;
    double f;
};

struct res_row {
    char *table;
    struct res_col *cols;
    size_t n, cap;
};

struct model_result {
    struct res_row *rows;
    size_t n, cap;
    /* The first error of a result_* call, sticky (model.h). Kept small (one is held per
     * instance of a batch, docs/models.md#memory-estimates-replay-engine-convention): the message
     * is allocated, and err_what is the fixed text used when that allocation fails. */
    int err;              /* 0 none, else a negative enum err */
    char *err_text;       /* its message, or NULL */
    const char *err_what; /* fixed fallback message */
};

/* ---- a results folder (results_folder.c) ---- */

struct table {
    char *name;
    char *csv_path, *jsonl_path;
    char *header; /* existing header line (no newline) or NULL for a new file */
    bool header_checked;
    int csv_fd, jsonl_fd;
};

struct results {
    char *dir;
    char *trace_hash, *model;
    struct table tables[RES_MAX_TABLES];
    size_t n_tables;
    /* done set: open addressing over config hashes */
    char **done;
    size_t done_cap, n_done;
    int lock_fd;               /* DIR/.lock, held exclusively until results_close */
    struct buf notes;          /* what opening dropped (NUL-terminated when len > 0) */
    const struct sweep *names; /* the caller's named sweep (results_set_names), or NULL */
};

/* Whether s is a table or column name: [a-z_][a-z0-9_]* (results.c). */
bool res_ident_ok(const char *s);

/* Adds config hash h to r's done set (no-op when there); 0 or ERR_NOMEM. */
int res_done_add(struct results *r, const char *h);

/* "DIR/NAMEEXT", allocated (mem_free), or NULL when out of memory. */
char *res_path_join(const char *dir, const char *name, const char *ext);

/* The table name of r, added (files not opened yet) when new; NULL with e set on error. */
struct table *res_table_get(struct results *r, const char *name, struct errmsg *e);

/* Opens path for reading; *f NULL when it does not exist; 0 or ERR_IO. */
int res_open_read(const char *path, FILE **f, struct errmsg *e);

/* Key prefix "trace_hash,config_hash,config_index,model," of a row's CSV line. */
void res_key_prefix(char *out, size_t n, const char *th, const char *ch, json_int_t ci,
                    const char *md);

/* Writes obj as DIR/manifest.json (temporary, fsync, rename); 0 or a negative err. */
int res_manifest_write(const char *dir, const json_t *obj, struct errmsg *e);

/* Reads DIR/manifest.json into *out (caller decrefs; NULL when there is none). */
int res_manifest_read(const char *dir, json_t **out, struct errmsg *e);

/* Fields of manifests `was` and `now` that differ, as "what (A<sep>B), ..." into out;
 * skip_shard for merge. Returns the number of differences. */
size_t res_manifest_diff(const json_t *was, const json_t *now, bool skip_shard, const char *sep,
                         char *out, size_t n);

/* Table names of a folder: "results" first, then every other *.jsonl (at most
 * RES_MAX_TABLES, each allocated: mem_free); *n set. */
int res_folder_tables(const char *dir, char **names, size_t *n, struct errmsg *e);

/*
 * The two temporaries (csv, jsonl) of a table being rewritten: res_tmp_pair_sync flushes
 * and fsyncs both before they are renamed over the table; res_tmp_pair_close closes them
 * (NULL is skipped) and returns rc, or the first close error when rc is 0.
 */
int res_tmp_pair_sync(FILE *oc, FILE *oj, const char *csv_tmp, const char *jsonl_tmp,
                      struct errmsg *e);
int res_tmp_pair_close(FILE *oc, FILE *oj, const char *csv_tmp, const char *jsonl_tmp, int rc,
                       struct errmsg *e);

/*
 * The rewrite of a folder's tables through those temporaries, for energy and merge:
 * res_tmp_names sets tmps[0] and tmps[1] to DIR/.NAME.csv.tmp and DIR/.NAME.jsonl.tmp
 * (allocated; 0 or ERR_NOMEM); once every table is written, res_tmp_rename puts the pair
 * tmps[2i], tmps[2i+1] of each table i of names[0..n) in place of DIR/NAME.csv and
 * DIR/NAME.jsonl, skipping a table whose wrote[i] is false (wrote NULL: none skipped;
 * 0 or ERR_IO); res_tmp_free unlinks and frees what is left of tmps[0..n) (NULL skipped).
 */
int res_tmp_names(const char *dir, const char *name, char **tmps, struct errmsg *e);
int res_tmp_rename(const char *dir, char *const *names, size_t n, char *const *tmps,
                   const bool *wrote, struct errmsg *e);
void res_tmp_free(char **tmps, size_t n);

#endif
