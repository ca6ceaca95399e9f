/*
 * disc_flops: FLOP tallies of the DiT per op class (docs/disc.md#quality-and-flop-accounting; the
 * Fig. 17 breakdown). A MAC is 2 FLOP, biases are not counted; per-element costs: softmax 5,
 * threshold 1, GELU 8, LN+modulate 7, gate+residual 2, residual 1, ST renormalisation 2
 * per kept entry. Counts are exact 64-bit integers. Class-conditional DiT configs have no
 * cross-attention (the ca_* classes stay 0, no residual after it) and count their per-block
 * adaLN modulations in embed (docs/models.md#dit-xl2).
 */
#ifndef ACCELTRACE_DISC_FLOPS_H
#define ACCELTRACE_DISC_FLOPS_H

#include <stdbool.h>
#include <stdint.h>

#include "capture/disc/dit.h"

enum disc_flop_class {
    DISC_F_SA_QKV,
    DISC_F_SA_QK,
    DISC_F_SA_SOFTMAX,
    DISC_F_SA_PV,
    DISC_F_SA_PROJ,
    DISC_F_CA_Q,
    DISC_F_CA_KV,
    DISC_F_CA_QK,
    DISC_F_CA_SOFTMAX,
    DISC_F_CA_PV,
    DISC_F_CA_PROJ,
    DISC_F_FFN_UP,
    DISC_F_FFN_ACT,
    DISC_F_FFN_DOWN,
    DISC_F_VEC,
    DISC_F_EMBED,
    DISC_F_COUNT
};

/* Class names in array order ("sa_qkv", ..., "embed"). */
const char *disc_flop_name(int cls);

/* ST accounting of one block for the "all" tally. */
enum disc_flop_st { DISC_FLOP_ST_OFF = 0, DISC_FLOP_ST_GEN = 1, DISC_FLOP_ST_REUSE = 2 };

/*
 * Adds one step's tallies (all blocks, B batch elements) to dense, ctr and all (each
 * DISC_F_COUNT entries, not cleared): dense with N_k = N and no ST; ctr with n_kept and
 * dense attention; all with n_kept and, when st != OFF, nnz_block[b] = the block's nnz
 * summed over heads and batch elements.
 */
void disc_flops_step(const struct dit_config *c, int B, uint64_t n_kept, enum disc_flop_st st,
                     const uint64_t *nnz_block, uint64_t *dense, uint64_t *ctr, uint64_t *all);

/* Sum of the classes. */
uint64_t disc_flops_total(const uint64_t *f);

#endif
