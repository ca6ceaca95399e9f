/*
 * export_peer: what the exports into peer tools' own formats (export_scalesim,
 * export_chakra) read from a disc trace, in one analyzer pass (analysis/analyzer.h), and the
 * file writer they share (docs/interop.md#peer-tools).
 *
 * From the header: the DiT's dimensions (replay/disc_model.h disc_dims_from_header, bounded)
 * and the sampler steps K. From each DiscStep: the kept tokens N_k of CTR and whether ST
 * generated masks at the step. From each DiscMask: nnz and the cells it covers (rows x
 * n_cols), summed over the batch elements per (step, block, head), so that
 * peer_dit_density is the measured mask density of that head: an input figure of the
 * trace, never recomputed from bits. Nothing here is predicted.
 *
 * Ownership: struct peer_dit is the caller's storage; peer_dit_read fills it and
 * peer_dit_release frees what it allocated (a zeroed or half-filled one included).
 */
#ifndef ACCELTRACE_EXPORT_PEER_H
#define ACCELTRACE_EXPORT_PEER_H

#include <stdbool.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/err.h"
#include "replay/disc_model.h"

struct peer_dit {
    char model[64];       /* DiscHeader model ("micro", "pixart-sigma-xl", ...) */
    char trace_hash[130]; /* content hash of the trace */
    struct disc_dims dm;  /* the network (B = dm.batch) */
    uint32_t steps;       /* K sampler steps of the header */
    bool ctr_on, st_on;   /* the header's ctr_mode / st_mode are not "off" */
    uint64_t *n_kept;     /* [steps] N_k per step (N when the step record is missing) */
    bool *step_seen;      /* [steps] a DiscStep record was read */
    bool *generated;      /* [steps] ST generated masks at the step */
    uint64_t *nnz;        /* [steps][depth][heads] nonzeros over the batch elements */
    uint64_t *cells;      /* [steps][depth][heads] sum of rows x n_cols, same masks */
    uint64_t masks;       /* DiscMask records read */
};

/*
 * Reads the disc trace at path once through analyzer_run and fills d (zeroed first).
 * 0; ERR_DATA naming path when the trace is not a disc trace, its header has impossible
 * dimensions, or a record points outside them; reader errors as analyzer_run gives them.
 */
int peer_dit_read(const char *path, struct peer_dit *d, struct errmsg *e);

/* Frees the arrays of d (NULL or half-filled tolerated) and zeroes it. */
void peer_dit_release(struct peer_dit *d);

/* Measured mask density nnz / (rows x n_cols) of (step k, block b, head h); NaN when the
 * trace has no mask of it (ST off, or the step not recorded). */
double peer_dit_density(const struct peer_dit *d, uint32_t k, uint32_t b, uint32_t h);

/*
 * Writes the bytes of b to path through path.tmp, fsync and rename (the parent folder is
 * created if missing); nothing is left at path.tmp on failure. 0, ERR_NOMEM when b had an
 * append error, or ERR_IO naming the file.
 */
int peer_write_file(const char *path, const struct buf *b, struct errmsg *e);

#endif
