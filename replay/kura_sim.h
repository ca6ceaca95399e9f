/*
 * kura_sim: cycle-accurate simulation of the SA-Kura offset-sweep array (docs/kura.md
 * section 8.2) with operand switching activity (section 8.5) and the per-cycle interface
 * streams of the RTL stimulus export (section 7).
 *
 * One struct kura_sim holds the registers of one N_h x N_w array: per PE the working pair
 * W (the paper's SDB/CDB), the snapshot R (SRB/CRB), the captured centre SCB/CCB, the int32
 * accumulators S, C and the output O; the Row Buffer RB[4][N_w]; and the N_h + 4 Column
 * Buffer injection lanes. A (sin_q, cos_q) pair travels as one 32-bit word
 * (sin_q << 16) | (cos_q & 0xFFFF), the layout of in.hex and of KuraTiles.in_data.
 *
 * kura_sim_run simulates one drift step cycle by cycle: tile k occupies cycles
 * p_k = k(N_w + 26) .. p_k + N_w + 25 (prefill, 25-cycle sweep, combine) and drains its N_w
 * output columns while tile k + 1 prefills. With checks on, every sweep cycle asserts that
 * each PE's W holds the window sample of its centre, every drained output is compared with
 * the reference u_q, and the per-tile cycle counts are measured; a violation is
 * ERR_INTERNAL naming the tile, pixel and cycle. Maps are row-major, periodic.
 *
 * Ownership: kura_sim_new allocates, kura_sim_free frees; streams are caller-owned buffers
 * sized by kura_streams_alloc. Nothing prints.
 */
#ifndef ACCELTRACE_KURA_SIM_H
#define ACCELTRACE_KURA_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

/* Packs (sin_q, cos_q) into one lane word: sin in bits 31..16, cos in 15..0. */
static inline uint32_t kura_pack_sc(int32_t s, int32_t c)
{
    return ((uint32_t)(uint16_t)(int16_t)s << 16) | (uint32_t)(uint16_t)(int16_t)c;
}
static inline int32_t kura_word_sin(uint32_t wd)
{
    return (int16_t)(uint16_t)(wd >> 16);
}
static inline int32_t kura_word_cos(uint32_t wd)
{
    return (int16_t)(uint16_t)(wd & 0xFFFF);
}

/*
 * Fills sc (h·w words) with the packed (sin_q, cos_q) of every pixel of q: the Column
 * Buffer's front-end conversion, done once per step and shared by every array shape.
 */
void kura_sc_map(const int16_t *q, size_t h, size_t w, uint32_t *sc);

/* Per-cycle interface streams of one step (docs/kura.md#tile-stream-export; the KuraTiles layout).
 */
struct kura_streams {
    int n_h, n_w;
    int64_t n_tiles, n_cyc;
    uint8_t *in_ctrl;    /* (n_cyc) bit0 column consumed, bit1 first column of a tile */
    uint32_t *in_data;   /* (n_cyc, n_h + 4) lane words, 0 on idle cycles */
    uint8_t *out_ctrl;   /* (n_cyc) bit0 valid */
    int32_t *out_data;   /* (n_cyc, n_h) drained u_q of PE row i, 0 when invalid */
    int32_t *tile_r0;    /* (n_tiles) tile origin row */
    int32_t *tile_c0;    /* (n_tiles) tile origin column */
    int64_t *tile_cycle; /* (n_tiles) first (prefill) cycle p_k */
};

/* Allocates streams for an N_h x N_w array on an h x w map. 0, ERR_NOMEM or ERR_LIMIT. */
int kura_streams_alloc(struct kura_streams *s, int n_h, int n_w, int h, int w);
/* Frees the buffers of s (not s itself); safe on a zeroed struct. */
void kura_streams_release(struct kura_streams *s);

struct kura_sim;

/* New array of n_h x n_w PEs (1..4096 each). 0, ERR_USAGE or ERR_NOMEM. */
int kura_sim_new(struct kura_sim **out, int n_h, int n_w);
void kura_sim_free(struct kura_sim *s);

struct kura_sim_opts {
    bool check;                   /* 8.2 window asserts, per-tile cycles, outputs vs uq_ref */
    bool activity;                /* 8.5 toggle counting */
    uint64_t *tile_toggles;       /* optional (n_tiles): toggles owned by each tile */
    struct kura_streams *streams; /* optional: fill the section 7 streams */
};

struct kura_sim_result {
    int64_t n_tiles;
    int64_t n_cyc;           /* simulated cycles of the step = N_w + n(N_w + 26) */
    int64_t tile_cycles_min; /* measured per-tile cycles (8.2 checks) */
    int64_t tile_cycles_max;
    uint64_t pe_cycles;    /* N_h·N_w·n_cyc */
    uint64_t writes;       /* register writes counted by 8.5 (32 bits each) */
    uint64_t bits_written; /* 32·writes */
    uint64_t toggles;      /* Σ popcount(old XOR new) */
    uint64_t outputs;      /* drained outputs, padded ones included */
};

/*
 * Simulates one drift step of the h x w map whose packed front-end words are sc (from
 * kura_sc_map). uq_out (h·w, may be NULL) receives the drained u_q of the real pixels.
 * uq_ref (h·w) is required when opts->check. Registers start at zero. 0, ERR_USAGE (bad
 * sizes or missing uq_ref) or ERR_INTERNAL (a failed check, message in e).
 */
int kura_sim_run(struct kura_sim *s, const uint32_t *sc, int h, int w, const int32_t *uq_ref,
                 int32_t *uq_out, const struct kura_sim_opts *opts, struct kura_sim_result *res,
                 struct errmsg *e);

/* Bits written per tile by 8.5: 32·[(N_w + 4)(2·N_h·N_w + N_h + 4) + 21·N_h·N_w]. */
uint64_t kura_bits_per_tile(int n_h, int n_w);

#endif
