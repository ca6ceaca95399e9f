/*
 * kura_tilestream: the per-cycle tile streams of one Q1.15 phase map for an N_h x N_w SA-Kura
 * array, in the layout of docs/kura.md#tile-stream-export (the interface of the section 8.2
 * schedule), as stored in KuraTiles records.
 *
 * Tiles are N_h x N_w with origin (ty N_h, tx N_w), row-major with tx fastest; n =
 * ceil(H/N_h) ceil(W/N_w); tile k prefills at p_k = k(N_w + 26) and sweeps from
 * s_k = p_k + N_w; N_cyc = N_w + n(N_w + 26).
 *   in:  per cycle a ctrl byte (bit0 column consumed, bit1 first column of a tile) and
 *        N_h + 4 lanes, lane k = (sin_q << 16) | (cos_q & 0xFFFF) of image pixel
 *        (r0 - 2 + k, c0 - 2 + m) for halo column m; 0 on idle cycles. Columns 0..N_w-1
 *        are consumed at p_k + m, columns N_w..N_w+3 at sweep cycles s_k + 4, 9, 14, 19.
 *   out: per cycle a ctrl byte (bit0 valid) and N_h int32 lanes: u~_q of pixel
 *        (r0 + i, c0 + d) on drain cycle s_k + 26 + d (periodic extension for padding).
 * All pixel indexing is periodic. The builder allocates; kura_tilestream_release frees.
 */
#ifndef ACCELTRACE_KURA_TILESTREAM_H
#define ACCELTRACE_KURA_TILESTREAM_H

#include <stddef.h>
#include <stdint.h>

struct kura_tilestream {
    uint32_t n_h, n_w, n_tiles, n_cyc;
    uint8_t *in_ctrl;  /* (n_cyc) */
    uint32_t *in_data; /* (n_cyc, n_h + 4) */
    uint8_t *out_ctrl; /* (n_cyc) */
    int32_t *out_data; /* (n_cyc, n_h) */
};

/*
 * Builds the streams of the map q (h x w) with drained outputs u_q (h x w, may be NULL:
 * out_data then stays 0). 0, ERR_USAGE (zero or too large sizes), ERR_NOMEM.
 */
int kura_tilestream_build(struct kura_tilestream *t, const int16_t *q, const int32_t *u_q, size_t h,
                          size_t w, uint32_t n_h, uint32_t n_w);

void kura_tilestream_release(struct kura_tilestream *t);

/* Parses "20x5" into n_h, n_w (1..1024 each). 0 or ERR_USAGE. */
int kura_tilestream_parse_shape(const char *s, uint32_t *n_h, uint32_t *n_w);

#endif
