/*
 * kura_net: the score network `kura-score-v1` of docs/kura.md#score-network [decision],
 * loaded from a safetensors file (capture/nn/safetensors) and evaluated in float32.
 *
 *   x = (cos theta, sin theta); h = conv(x, in_conv);
 *   per block l: h += conv(GELU(GN(h) norm.weight + norm.bias + emb.weight SiLU(e_i)
 *                + emb.bias), blocks.l.conv);
 *   (a, b) = conv(h, out_conv); s = -a sin theta + b cos theta   (rad^-1)
 * conv is 3x3 cross-correlation with circular padding; GN uses the biased variance over
 * each group's channels and all pixels, eps 1e-5; GELU is the erf form; e_i is the
 * sinusoidal step embedding (e_k = sin(i w_k), e_{k+E/2} = cos(i w_k), w_k = 10000^(-2k/E)).
 *
 * Every validation failure (metadata, missing/extra/mis-shaped/non-F32 tensor, T_train != T)
 * is ERR_DATA with a message naming the file and the tensor or key. The net owns copies
 * of all weights; kura_net_free releases them.
 */
#ifndef ACCELTRACE_KURA_NET_H
#define ACCELTRACE_KURA_NET_H

#include <stddef.h>

#include "common/err.h"

struct kura_net;

/*
 * Loads and validates path for a schedule of t steps. On failure *out is NULL and e holds
 * the message (ERR_IO, ERR_DATA, ERR_NOMEM).
 */
int kura_net_load(struct kura_net **out, const char *path, int t, struct errmsg *e);

void kura_net_free(struct kura_net *n);

/* The file's __metadata__ as canonical JSON (sorted keys); owned by the net. */
const char *kura_net_metadata_json(const struct kura_net *n);

/* sha256 hex of the weights file; owned by the net. */
const char *kura_net_sha256(const struct kura_net *n);

/*
 * s (h x w, rad^-1) = network score of theta at step i. Allocates scratch per call.
 * 0 or ERR_NOMEM.
 */
int kura_net_score(struct kura_net *n, const double *theta, size_t h, size_t w, int step,
                   double *s);

#endif
