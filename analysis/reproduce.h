/*
 * reproduce: the papers' headline numbers beside ours (`acceltrace reproduce`,
 * docs/models.md). One row per paper number: what the paper reports (a value or a range),
 * what our code gives at the closest setting this machine runs, and how ours was obtained.
 *
 * Status vocabulary (the one used by the tests, README and docs/models.md):
 *   predicted    our model computes it from inputs not fitted to this number
 *   recomputed   the paper's own formula on the paper's own inputs (checks arithmetic and
 *                reading, not a model)
 *   calibrated   a parameter of ours was solved or fitted so this number comes out; the
 *                basis names the parameter
 *   input        it equals a setting we chose (e.g. the CTR target)
 *   not-modelled nothing of ours computes it; the basis says why
 * Each row also carries its origin: the code path that produced `ours` (a model run, the
 * paper's formula, a solver or fit, a setting, nothing). The status is chosen by the row's
 * author and the origin by the code that computed the number; repro_table_add refuses a row
 * whose two disagree (a solved number labelled predicted is a bug, ERR_INTERNAL), so a
 * label cannot claim more than the code did.
 *
 * Files (repro_table_write): DIR/reproduce.csv with the columns paper_id, quantity,
 * condition, paper_value, paper_lo, paper_hi, ours, unit, ratio, status, basis, command
 * (ratio = ours/paper_value, or ours over the midpoint of [paper_lo, paper_hi] when the
 * paper gives a range; empty when either side is missing) and DIR/reproduce.md (the same
 * rows as tables per paper, then the sections the runs appended). Both are written to a
 * temporary and renamed. DIR must be empty, missing, or a folder an earlier reproduce made
 * (it holds REPRO_MARKER); anything else is ERR_USAGE, so a results or source folder is
 * never overwritten.
 *
 * The runs (cli/reproduce_{disc,salca}.c, which sit above capture and replay both, and
 * analysis/reproduce_kura.c) call the capture drivers, replay models and solvers
 * in-process and write their traces under DIR/work. Nothing prints.
 * Ownership: the table owns its rows and text; release with repro_table_release.
 */
#ifndef ACCELTRACE_REPRODUCE_H
#define ACCELTRACE_REPRODUCE_H

#include <stdbool.h>
#include <stddef.h>

#include "analysis/analyzer.h"
#include "common/buf.h"
#include "common/err.h"

enum repro_status {
    REPRO_PREDICTED = 0,
    REPRO_RECOMPUTED = 1,
    REPRO_CALIBRATED = 2,
    REPRO_INPUT = 3,
    REPRO_NOT_MODELLED = 4,
};
#define REPRO_STATUS_COUNT 5

/* How `ours` was obtained; each origin admits exactly one status (repro_origin_status). */
enum repro_origin {
    REPRO_FROM_MODEL = 0,   /* a model run on inputs not fitted to this number: predicted */
    REPRO_FROM_FORMULA = 1, /* the paper's formula on the paper's inputs: recomputed */
    REPRO_FROM_SOLVER = 2,  /* a parameter solved or fitted for this number: calibrated */
    REPRO_FROM_SETTING = 3, /* equals a setting we chose: input */
    REPRO_FROM_NONE = 4,    /* not computed: not-modelled */
};

/* "predicted", "recomputed", "calibrated", "input", "not-modelled"; "?" otherwise. */
const char *repro_status_name(int status);
/* The status an origin admits. */
enum repro_status repro_origin_status(enum repro_origin o);

/* One paper number. Missing numbers are NAN. */
struct repro_row {
    char paper_id[16];   /* "disc", "salca", "kura" */
    char quantity[128];  /* what is measured, with the paper's place ("Fig. 18a ...") */
    char condition[400]; /* our setting and what differs from the paper's */
    double paper_value;  /* the paper's single value, or NAN */
    double paper_lo;     /* the paper's range, or NAN */
    double paper_hi;
    double ours;   /* NAN when not modelled */
    char unit[16]; /* "x", "%", "us", "nJ/px", "PEs", "1" ... */
    enum repro_status status;
    enum repro_origin origin;
    char basis[600];   /* why this status; for calibrated the parameter solved */
    char command[600]; /* the acceltrace command line(s) that recompute ours */
};

/* What made one run's data: its trace header's source and source_detail. */
struct repro_source {
    char paper_id[16];
    char data[160];    /* which data: "the DiSC capture (tiny, 512 px)" */
    char source[64];   /* the header's source: "seeded", "synthetic-calibrated", ... */
    char detail[1024]; /* its source_detail */
};
#define REPRO_MAX_SOURCES 16

struct repro_table {
    struct repro_row *rows;
    size_t n, cap;
    struct buf md; /* extra Markdown sections, appended after the row tables */
    struct repro_source src[REPRO_MAX_SOURCES];
    size_t n_src;
};

void repro_table_init(struct repro_table *t);
void repro_table_release(struct repro_table *t);

/*
 * Appends a copy of r. ERR_INTERNAL (with the quantity named) when the status is not the
 * one its origin admits, when a calibrated or not-modelled row has an empty basis, when a
 * row has no command (except not-modelled ones) or when ours is missing on a row that is not
 * not-modelled. ERR_NOMEM. 0 on success.
 */
int repro_table_add(struct repro_table *t, const struct repro_row *r, struct errmsg *e);

/*
 * Records what made a run's data (shown in reproduce.md "Data sources" and written to
 * DIR/sources.csv: paper_id, data, source, source_detail). source NULL or "" is
 * ERR_INTERNAL (every capture names its source); more than REPRO_MAX_SOURCES is
 * ERR_INTERNAL. Strings are truncated to their fields.
 */
int repro_source_add(struct repro_table *t, const char *paper_id, const char *data,
                     const char *source, const char *detail, struct errmsg *e);

/*
 * The analyzer (analysis/analyzer.h) that records the source of a trace from its header
 * (repro_source_add with the header's source and source_detail) in the pass that reads the
 * trace for the rows, so the trace is read once: run {&repro_source_ops, &pass} beside the
 * row's analyzers. Its begin hook fails as repro_source_add does.
 */
struct repro_source_pass {
    struct repro_table *t;
    const char *paper_id, *data;
};
extern const struct analyzer_ops repro_source_ops;

/* ours/paper_value, or ours over the range midpoint; NAN when either is missing. */
double repro_ratio(const struct repro_row *r);

/* File name of the marker that makes a folder a reproduce folder. */
#define REPRO_MARKER ".acceltrace-reproduce"

/*
 * Makes dir ready for a run: creates it (and dir/work) when missing and writes the
 * marker. ERR_USAGE when dir exists, is not empty and has no marker (or is not a folder);
 * ERR_IO otherwise. 0 on success.
 */
int repro_dir_prepare(const char *dir, struct errmsg *e);

/*
 * Writes dir/reproduce.csv, dir/sources.csv and dir/reproduce.md (title: the first Markdown line;
 * preamble may be NULL) through temporaries renamed into place. 0, ERR_IO or ERR_NOMEM.
 */
int repro_table_write(const struct repro_table *t, const char *dir, const char *title,
                      const char *preamble, struct errmsg *e);

/* Writes data to dir/name through a temporary, fsynced and renamed. 0 or ERR_IO. */
int repro_write_file(const char *dir, const char *name, const struct buf *data, struct errmsg *e);

/* What a run is asked for. */
struct repro_opts {
    bool quick;       /* the `--quick` settings (each run says which) */
    const char *work; /* folder for traces (DIR/work) */
    const char *root; /* repository root, for configs/ ("." when run from it) */
    int threads;      /* capture threads; 0 = the default */
    const char *dir;  /* the output folder DIR, for figures and their CSVs; NULL: none */
    bool quiet;       /* no progress of the captures on stderr (-q) */
    /* `--full`: DiSC is also captured at 1k (and at 2k with paper_scale) instead of replaying
     * the 512 px statistics scaled to those sizes */
    bool full;
    bool paper_scale; /* `--paper-scale`: the 2k capture too (implies full) */
};

/* The SA-Kura run (solvers and fits only, no capture): appends its rows and sections. 0 or
 * negative with e. The DiSC and Salca runs are in cli/reproduce_runs.h. */
int reproduce_kura(struct repro_table *t, const struct repro_opts *o, struct errmsg *e);

/*
 * Row builder used by the runs: fills a row (strings truncated to their fields, NANs for
 * missing numbers left to the caller) and adds it. fmt args build `basis`.
 */
int repro_put(struct repro_table *t, const char *paper_id, const char *quantity,
              const char *condition, double paper_value, double lo, double hi, double ours,
              const char *unit, enum repro_origin origin, enum repro_status status,
              const char *command, struct errmsg *e, const char *basis_fmt, ...)
    __attribute__((format(printf, 14, 15)));

#endif
