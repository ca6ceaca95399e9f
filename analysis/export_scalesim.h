/*
 * export_scalesim: the GEMMs of one DiT sampler step as a SCALE-Sim v2 topology in GEMM
 * mode ("Layer,M,N,K," rows; the simulator multiplies an M x K operand by a K x N one) and
 * the run config (.cfg) of the systolic array to simulate them on
 * (docs/interop.md#scale-sim).
 *
 * The rows are the matrix products of the step in the order the disc replay model runs
 * them (replay/disc_model.c disc_step_ops): the embeddings, per block the adaLN
 * modulation (DiT family), the self-attention projections, one QK^T and one PV product
 * per (batch element, head), the output projection, PixArt's cross-attention, the FFN,
 * then the final layer. Token-wise products have M = B N_k: N_k the kept tokens of CTR at
 * the step asked for (an input of the trace), or N for the dense network. Attention stays
 * dense (SCALE-Sim v2 has no sparse operands); the measured mask densities go out through
 * export_chakra. The array, dataflow and SRAM sizes of the .cfg are options of the export,
 * not a model of the DiSC hardware.
 */
#ifndef ACCELTRACE_EXPORT_SCALESIM_H
#define ACCELTRACE_EXPORT_SCALESIM_H

#include <stdint.h>

#include "analysis/export_peer.h"
#include "common/err.h"

struct export_scalesim_opts {
    const char *csv_path; /* topology file written */
    const char *cfg_path; /* config file written */
    const char *run_name; /* [general] run_name (SCALE-Sim's output folder name) */
    int64_t step;         /* step whose N_k sets M; -1: dense (N tokens) */
    uint32_t rows, cols;  /* ArrayHeight, ArrayWidth (PEs) */
    const char *dataflow; /* "os", "ws" or "is" */
    uint32_t sram_kb;     /* each of the ifmap, filter and ofmap SRAMs, kB */
};

struct export_scalesim_stats {
    uint64_t layers;  /* topology rows */
    uint64_t macs;    /* sum of M N K over the rows */
    uint64_t tokens;  /* the N_k (or N) used for M */
    uint64_t skipped; /* products with a zero dimension (N_k = 0), not written */
};

/*
 * Writes o->csv_path and o->cfg_path (each through a temporary name, fsync, rename) for
 * the network of d. 0; ERR_USAGE when o->step is beyond the trace's steps or the step has
 * no DiscStep record; ERR_IO / ERR_NOMEM naming the file.
 */
int export_scalesim_write(const struct peer_dit *d, const struct export_scalesim_opts *o,
                          struct export_scalesim_stats *st, struct errmsg *e);

#endif
