/*
 * csv: RFC 4180 tables for results and analyzer outputs. A writer appends rows to a file
 * (or a memory buffer) and flushes each finished row with one write(2), so a killed
 * process leaves only whole rows (and at most one torn last row, which readers drop).
 * Fields are quoted when they hold a comma, quote, CR or LF. Numbers are printed
 * deterministically: integers in decimal, doubles in the shortest form that reads back to
 * the same double (csv_format_f64), NaN as "nan", infinities as "inf"/"-inf".
 *
 * A reader loads a whole table (header + rows of strings) with bounded sizes;
 * csv_split_record splits one line for readers that stream.
 */
#ifndef ACCELTRACE_CSV_H
#define ACCELTRACE_CSV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/err.h"

struct csv_writer;

/*
 * Opens path for writing; append keeps existing content (a header is then the caller's
 * business). 0 or ERR_IO with e set.
 */
int csv_writer_open(struct csv_writer **out, const char *path, bool append, struct errmsg *e);
/* A writer into a memory buffer the caller owns. */
int csv_writer_mem(struct csv_writer **out, struct buf *b);

/* Fields of the current row. */
int csv_str(struct csv_writer *w, const char *s);
int csv_i64(struct csv_writer *w, int64_t v);
int csv_u64(struct csv_writer *w, uint64_t v);
int csv_f64(struct csv_writer *w, double v);
/* A double with a fixed number of decimals, as printf's "%.*f" writes it (tables whose
 * columns promise a precision, e.g. 0.500000). */
int csv_f64_fixed(struct csv_writer *w, double v, int decimals);
/* Ends the row and writes it out (one write call). 0 or ERR_IO. */
int csv_end_row(struct csv_writer *w);
/* The errno of w's first error (ENOSPC when the disk filled), 0 when none: the reason a
 * caller's "cannot write 'PATH': REASON" names. */
int csv_writer_errno(const struct csv_writer *w);
/* Closes (NULL is a no-op); returns the first error seen, with errno set to its cause
 * (csv_writer_errno, or close's) so the caller can print strerror(errno). */
int csv_writer_close(struct csv_writer *w);

/* Shortest round-trip text of a double ("0.1", "1e+20", "nan"); buf >= 32 bytes. */
void csv_format_f64(double v, char *buf, size_t n);

/* Appends s to b as one CSV field (quoted when needed). */
int csv_append_field(struct buf *b, const char *s);

/* A loaded table: n_cols names, n_rows rows of n_cols strings (all owned by the table). */
struct csv_table {
    size_t n_cols, n_rows;
    char **header; /* (n_cols) */
    char ***rows;  /* (n_rows, n_cols) */
};

/*
 * Reads a CSV file with a header line. Rows must have n_cols fields (ERR_DATA naming the
 * line otherwise); a last line without a newline is dropped when drop_torn (a torn append).
 * Files over 1 GiB are ERR_LIMIT. 0 or negative with e set.
 */
int csv_table_load(struct csv_table *t, const char *path, bool drop_torn, struct errmsg *e);
/* Same from memory (name for messages). */
int csv_table_parse(struct csv_table *t, const char *text, size_t len, const char *name,
                    bool drop_torn, struct errmsg *e);
void csv_table_release(struct csv_table *t);
/* Index of the column named `name` (exact, or the name before " [unit]"), or -1. */
long csv_table_col(const struct csv_table *t, const char *name);

/*
 * Splits one CSV record (a line, its newline optional) into fields, for readers that
 * stream a file line by line. *fields (caller frees with csv_fields_free) gets *n fields.
 * 0, ERR_DATA (bad quoting, or more than one record) or ERR_NOMEM.
 */
int csv_split_record(const char *line, size_t len, char ***fields, size_t *n);
void csv_fields_free(char **fields, size_t n);

/* Parses one header cell "name [unit]" into name and unit (unit "" when none). */
void csv_split_unit(const char *cell, char *name, size_t name_n, char *unit, size_t unit_n);

#endif
