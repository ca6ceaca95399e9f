/*
 * export_chakra: the disc model's op sequence of a DiT run as a Chakra execution trace
 * (docs/interop.md#chakra), the graph format ASTRA-sim and the Chakra tools read.
 *
 * File layout (Chakra's protolib): a varint32 length then a protobuf GlobalMetadata, then
 * per node a varint32 length and a protobuf Node (Chakra's et_def.proto: id 1, name 2,
 * type 3 = COMP_NODE 4, data_deps 5 packed, duration_micros 7, attr 10 of AttributeProto:
 * name 1, double_val 3, double_list 4, int64_val 9, uint64_val 13, bool_val 27,
 * string_val 29). The encoder is written here (a few wire types), not generated.
 *
 * Nodes are the ops of replay/disc_model.c disc_step_ops for each sampler step in mode
 * baseline or ctr at the shipped hardware (disc_hw_default, the values of
 * configs/disc-a100-matched.json), in run order, each depending on the one before. The
 * step's kept tokens N_k (mode ctr) and the measured mask densities per head are inputs
 * of the trace; durations, cycles, HBM bytes and op counts are predicted by the model.
 * Chakra's duration_micros is an integer: the exact figure is the attr `duration_ns`.
 */
#ifndef ACCELTRACE_EXPORT_CHAKRA_H
#define ACCELTRACE_EXPORT_CHAKRA_H

#include <stdint.h>

#include "analysis/export_peer.h"
#include "common/err.h"

struct export_chakra_opts {
    const char *out_path;      /* the .et file written */
    int mode;                  /* DISC_MODE_BASELINE or DISC_MODE_CTR */
    uint32_t step_lo, step_hi; /* steps written, inclusive (step_hi clamped to K-1) */
};

struct export_chakra_stats {
    uint64_t nodes;         /* Node messages */
    uint64_t density_nodes; /* nodes that carry a mask_density list */
    uint64_t cycles;        /* summed exposed cycles of the nodes (predicted) */
    double seconds;         /* the same in seconds at the model's clock */
    uint64_t bytes;         /* file size */
};

/*
 * Writes o->out_path (temporary name, fsync, rename). 0; ERR_USAGE when step_lo is beyond
 * the trace's steps or mode is not baseline/ctr; ERR_IO / ERR_NOMEM naming the file.
 */
int export_chakra_write(const struct peer_dit *d, const struct export_chakra_opts *o,
                        struct export_chakra_stats *st, struct errmsg *e);

#endif
