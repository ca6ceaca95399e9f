/*
 * kura_tilestream: tile streams of docs/kura.md#tile-stream-export (schedule of section 8.2).
 */
#include "capture/kura/kura_tilestream.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/mem.h"
#include "formats/kura_fixed.h"

static size_t wrap_idx(long long v, size_t n)
{
    long long m = v % (long long)n;
    return (size_t)(m < 0 ? m + (long long)n : m);
}

int kura_tilestream_build(struct kura_tilestream *t, const int16_t *q, const int32_t *u_q, size_t h,
                          size_t w, uint32_t n_h, uint32_t n_w)
{
    memset(t, 0, sizeof *t);
    if (h < 1 || w < 1 || n_h < 1 || n_w < 1 || n_h > 1024 || n_w > 1024 || h > (1u << 20) ||
        w > (1u << 20))
        return ERR_USAGE;
    uint64_t n_ty = (h + n_h - 1) / n_h, n_tx = (w + n_w - 1) / n_w;
    uint64_t n = n_ty * n_tx;
    uint64_t n_cyc = n_w + n * (uint64_t)(n_w + 26); /* docs/kura.md#tile-stream-export */
    if (n_cyc > (1u << 30) / (n_h + 4))
        return ERR_USAGE;
    t->n_h = n_h;
    t->n_w = n_w;
    t->n_tiles = (uint32_t)n;
    t->n_cyc = (uint32_t)n_cyc;
    size_t lanes_in = n_h + 4;
    t->in_ctrl = mem_calloc(n_cyc, 1);
    t->out_ctrl = mem_calloc(n_cyc, 1);
    t->in_data = mem_calloc(n_cyc * lanes_in, sizeof(uint32_t));
    t->out_data = mem_calloc(n_cyc * n_h, sizeof(int32_t));
    if (!t->in_ctrl || !t->out_ctrl || !t->in_data || !t->out_data) {
        kura_tilestream_release(t);
        return ERR_NOMEM;
    }
    for (uint64_t k = 0; k < n; k++) {
        long long r0 = (long long)((k / n_tx) * n_h), c0 = (long long)((k % n_tx) * n_w);
        uint64_t p = k * (n_w + 26), s = p + n_w;
        /* halo columns m = 0..N_w+3 and the cycle whose end-of-cycle H-move consumes each */
        for (uint32_t m = 0; m < n_w + 4; m++) {
            uint64_t cyc = m < n_w ? p + m : s + 5 * (m - n_w) + 4;
            t->in_ctrl[cyc] = m == 0 ? 0x3 : 0x1;
            uint32_t *lane = t->in_data + cyc * lanes_in;
            size_t cc = wrap_idx(c0 - 2 + m, w);
            for (size_t kk = 0; kk < lanes_in; kk++) {
                size_t rr = wrap_idx(r0 - 2 + (long long)kk, h);
                int16_t qv = q[rr * w + cc];
                lane[kk] = ((uint32_t)(uint16_t)kura_sin_q(qv) << 16) | (uint16_t)kura_cos_q(qv);
            }
        }
        /* drain: cycle s + 26 + d emits image column c0 + d */
        for (uint32_t d = 0; d < n_w; d++) {
            uint64_t cyc = s + 26 + d;
            t->out_ctrl[cyc] = 0x1;
            if (!u_q)
                continue;
            size_t cc = wrap_idx(c0 + d, w);
            int32_t *lane = t->out_data + cyc * n_h;
            for (uint32_t i = 0; i < n_h; i++)
                lane[i] = u_q[wrap_idx(r0 + i, h) * w + cc];
        }
    }
    return 0;
}

void kura_tilestream_release(struct kura_tilestream *t)
{
    mem_free(t->in_ctrl);
    mem_free(t->out_ctrl);
    mem_free(t->in_data);
    mem_free(t->out_data);
    memset(t, 0, sizeof *t);
}

int kura_tilestream_parse_shape(const char *s, uint32_t *n_h, uint32_t *n_w)
{
    char *end;
    errno = 0;
    long a = strtol(s, &end, 10);
    if (errno || end == s || (*end != 'x' && *end != 'X') || a < 1 || a > 1024)
        return ERR_USAGE;
    const char *b0 = end + 1;
    long b = strtol(b0, &end, 10);
    if (errno || end == b0 || *end || b < 1 || b > 1024)
        return ERR_USAGE;
    *n_h = (uint32_t)a;
    *n_w = (uint32_t)b;
    return 0;
}
