/*
 * kura_sim: register-level SA-Kura simulation (docs/kura.md#cycle-accurate-array), activity (8.5),
 * streams (7). See kura_sim.h. The controller decodes each cycle into slot k = t / C_tile and phase
 * ph = t mod C_tile: ph < N_w is tile k's prefill (and tile k-1's drain, d = ph),
 * N_w <= ph < N_w + 25 the sweep, ph = N_w + 25 the combine.
 */
#include "replay/kura_sim.h"

#include <stdio.h>
#include <string.h>

#include "common/mem.h"
#include "formats/kura_fixed.h"
#include "replay/kura_power.h"

struct kura_sim {
    int n_h, n_w;
    uint32_t *wk;   /* (n_h, n_w) working pair W (SDB/CDB) */
    uint32_t *snap; /* (n_h, n_w) snapshot R (SRB/CRB) */
    uint32_t *ctr;  /* (n_h, n_w) captured centre SCB/CCB */
    int32_t *acc_s; /* (n_h, n_w) S */
    int32_t *acc_c; /* (n_h, n_w) C */
    int32_t *out;   /* (n_h, n_w) O */
    uint32_t *rb;   /* (4, n_w) Row Buffer */
    uint32_t *lane; /* (n_h + 4) Column Buffer injection lanes */
    uint32_t *col;  /* (n_h + 4) the halo column being injected */
    int32_t *rows;  /* (n_h + 4) image row of halo row k for the current tile */
    int32_t *cols;  /* (n_w + 4) image column of halo column m for the current tile */
};

void kura_sc_map(const int16_t *q, size_t h, size_t w, uint32_t *sc)
{
    for (size_t i = 0; i < h * w; i++)
        /* docs/kura.md#fixed-point-drift */
        sc[i] = kura_pack_sc(kura_sin_q(q[i]), kura_cos_q(q[i]));
}

uint64_t kura_bits_per_tile(int n_h, int n_w)
{
    /* docs/kura.md#switching-activity: N_w + 4 H-moves write W, R and the lanes; 20 V-moves write
     * W; one capture */
    uint64_t pe = (uint64_t)n_h * n_w;
    return 32u * ((uint64_t)(n_w + 4) * (2 * pe + n_h + 4) + 21 * pe);
}

int kura_streams_alloc(struct kura_streams *s, int n_h, int n_w, int h, int w)
{
    memset(s, 0, sizeof *s);
    if (n_h < 1 || n_w < 1 || h < 1 || w < 1)
        return ERR_USAGE;
    s->n_h = n_h;
    s->n_w = n_w;
    s->n_tiles = (int64_t)((h + n_h - 1) / n_h) * ((w + n_w - 1) / n_w);
    s->n_cyc = n_w + s->n_tiles * kura_c_tile(n_w);
    size_t in_words, out_words;
    if (!mem_mul((size_t)s->n_cyc, (size_t)n_h + 4, &in_words) ||
        !mem_mul((size_t)s->n_cyc, (size_t)n_h, &out_words) || in_words > ((size_t)1 << 30))
        return ERR_LIMIT;
    s->in_ctrl = mem_calloc((size_t)s->n_cyc, 1);
    s->out_ctrl = mem_calloc((size_t)s->n_cyc, 1);
    s->in_data = mem_calloc(in_words, sizeof *s->in_data);
    s->out_data = mem_calloc(out_words, sizeof *s->out_data);
    s->tile_r0 = mem_calloc((size_t)s->n_tiles, sizeof *s->tile_r0);
    s->tile_c0 = mem_calloc((size_t)s->n_tiles, sizeof *s->tile_c0);
    s->tile_cycle = mem_calloc((size_t)s->n_tiles, sizeof *s->tile_cycle);
    if (!s->in_ctrl || !s->out_ctrl || !s->in_data || !s->out_data || !s->tile_r0 || !s->tile_c0 ||
        !s->tile_cycle) {
        kura_streams_release(s);
        return ERR_NOMEM;
    }
    return 0;
}

void kura_streams_release(struct kura_streams *s)
{
    mem_free(s->in_ctrl);
    mem_free(s->in_data);
    mem_free(s->out_ctrl);
    mem_free(s->out_data);
    mem_free(s->tile_r0);
    mem_free(s->tile_c0);
    mem_free(s->tile_cycle);
    memset(s, 0, sizeof *s);
}

int kura_sim_new(struct kura_sim **out, int n_h, int n_w)
{
    *out = NULL;
    if (n_h < 1 || n_w < 1 || n_h > 4096 || n_w > 4096)
        return ERR_USAGE;
    struct kura_sim *s = mem_calloc(1, sizeof *s);
    if (!s)
        return ERR_NOMEM;
    size_t pe = (size_t)n_h * n_w;
    s->n_h = n_h;
    s->n_w = n_w;
    s->wk = mem_calloc(pe, sizeof *s->wk);
    s->snap = mem_calloc(pe, sizeof *s->snap);
    s->ctr = mem_calloc(pe, sizeof *s->ctr);
    s->acc_s = mem_calloc(pe, sizeof *s->acc_s);
    s->acc_c = mem_calloc(pe, sizeof *s->acc_c);
    s->out = mem_calloc(pe, sizeof *s->out);
    s->rb = mem_calloc(4 * (size_t)n_w, sizeof *s->rb);
    s->lane = mem_calloc((size_t)n_h + 4, sizeof *s->lane);
    s->col = mem_calloc((size_t)n_h + 4, sizeof *s->col);
    s->rows = mem_calloc((size_t)n_h + 4, sizeof *s->rows);
    s->cols = mem_calloc((size_t)n_w + 4, sizeof *s->cols);
    if (!s->wk || !s->snap || !s->ctr || !s->acc_s || !s->acc_c || !s->out || !s->rb || !s->lane ||
        !s->col || !s->rows || !s->cols) {
        kura_sim_free(s);
        return ERR_NOMEM;
    }
    *out = s;
    return 0;
}

void kura_sim_free(struct kura_sim *s)
{
    if (!s)
        return;
    mem_free(s->wk);
    mem_free(s->snap);
    mem_free(s->ctr);
    mem_free(s->acc_s);
    mem_free(s->acc_c);
    mem_free(s->out);
    mem_free(s->rb);
    mem_free(s->lane);
    mem_free(s->col);
    mem_free(s->rows);
    mem_free(s->cols);
    mem_free(s);
}

static int imod(int64_t x, int m)
{
    int64_t r = x % m;
    return (int)(r < 0 ? r + m : r);
}

/* Activity accumulator of one run (8.5). */
struct act {
    bool on;
    uint64_t writes, toggles;
};

/* Bits set in x (SWAR; inline, since without -mpopcnt the builtin is a library call). */
static inline uint32_t popcount32(uint32_t x)
{
    x = x - ((x >> 1) & 0x55555555u);
    x = (x & 0x33333333u) + ((x >> 2) & 0x33333333u);
    x = (x + (x >> 4)) & 0x0F0F0F0Fu;
    return (x * 0x01010101u) >> 24;
}

/* Writes v into *reg, counting the write and its toggled bits. */
static inline void wr(struct act *a, uint32_t *reg, uint32_t v)
{
    if (a->on) {
        a->writes++;
        a->toggles += popcount32(*reg ^ v);
    }
    *reg = v;
}

/* H-move with halo column s->col (docs/kura.md#cycle-accurate-array), at the end of a cycle. */
static void h_move(struct kura_sim *s, struct act *a)
{
    int nh = s->n_h, nw = s->n_w;
    for (int k = 0; k < nh + 4; k++)
        wr(a, &s->lane[k], s->col[k]); /* lane k takes col[k] (8.5) */
    for (int i = 0; i < nh; i++) {
        uint32_t *wrow = &s->wk[(size_t)i * nw];
        const uint32_t *rrow = &s->snap[(size_t)i * nw];
        for (int j = 0; j < nw - 1; j++)
            wr(a, &wrow[j], rrow[j + 1]);
        wr(a, &wrow[nw - 1], s->lane[i]);
    }
    for (int v = 0; v < 4; v++) {
        uint32_t *rbrow = &s->rb[(size_t)v * nw];
        memmove(rbrow, rbrow + 1, (size_t)(nw - 1) * sizeof *rbrow);
        rbrow[nw - 1] = s->lane[nh + v];
    }
    /* R holds the post-move W (docs/kura.md#cycle-accurate-array) */
    for (size_t p = 0; p < (size_t)nh * nw; p++)
        wr(a, &s->snap[p], s->wk[p]);
}

/* V-move v = 1..4 (docs/kura.md#cycle-accurate-array). */
static void v_move(struct kura_sim *s, int v, struct act *a)
{
    int nh = s->n_h, nw = s->n_w;
    for (int i = 0; i < nh - 1; i++)
        for (int j = 0; j < nw; j++)
            wr(a, &s->wk[(size_t)i * nw + j], s->wk[(size_t)(i + 1) * nw + j]);
    for (int j = 0; j < nw; j++)
        wr(a, &s->wk[(size_t)(nh - 1) * nw + j], s->rb[(size_t)(v - 1) * nw + j]);
}

/* Loads halo column m of the current tile into s->col (the Column Buffer's pop). */
static void fetch_col(struct kura_sim *s, const uint32_t *sc, int w, int m)
{
    int c = s->cols[m];
    for (int k = 0; k < s->n_h + 4; k++)
        s->col[k] = sc[(size_t)s->rows[k] * w + c];
}

/* All registers (and the recorded streams) are zero at the start of a step (8.2, 8.5). */
static void reset_step(struct kura_sim *s, struct kura_streams *st, int64_t n_cyc)
{
    int nh = s->n_h, nw = s->n_w;
    size_t pe = (size_t)nh * nw;
    memset(s->wk, 0, pe * sizeof *s->wk);
    memset(s->snap, 0, pe * sizeof *s->snap);
    memset(s->ctr, 0, pe * sizeof *s->ctr);
    memset(s->acc_s, 0, pe * sizeof *s->acc_s);
    memset(s->acc_c, 0, pe * sizeof *s->acc_c);
    memset(s->out, 0, pe * sizeof *s->out);
    memset(s->rb, 0, 4 * (size_t)nw * sizeof *s->rb);
    memset(s->lane, 0, ((size_t)nh + 4) * sizeof *s->lane);
    if (st) {
        memset(st->in_ctrl, 0, (size_t)n_cyc);
        memset(st->out_ctrl, 0, (size_t)n_cyc);
        memset(st->in_data, 0, (size_t)n_cyc * (nh + 4) * sizeof *st->in_data);
        memset(st->out_data, 0, (size_t)n_cyc * nh * sizeof *st->out_data);
    }
}

/* One drain cycle: where it is (map size, pixel column, tile, cycle) and the maps. */
struct drain {
    int h, w;  /* map (pixels) */
    int r0, c; /* first row of the drained tile; the pixel column drained this cycle */
    int64_t k; /* the tile drained */
    int64_t t; /* the cycle */
    const int32_t *uq_ref;
    int32_t *uq_out;
};

/*
 * Drains one column of O (the previous tile's u_q, overlapped with the next tile's
 * prefill, 8.2 step 4): checks it against the reference when asked, stores and records
 * it, and shifts O left. ERR_INTERNAL on a drained value that differs.
 */
static int drain_column(struct kura_sim *s, const struct drain *d, const struct kura_sim_opts *opts,
                        struct kura_sim_result *res, struct errmsg *e)
{
    int nh = s->n_h, nw = s->n_w, h = d->h, w = d->w;
    struct kura_streams *st = opts->streams;
    for (int i = 0; i < nh; i++) {
        int32_t o = s->out[(size_t)i * nw];
        int r = d->r0 + i, c = d->c;
        if (opts->check) {
            int32_t want = d->uq_ref[(size_t)imod(r, h) * w + imod(c, w)];
            if (o != want)
                return errmsg_set(e, ERR_INTERNAL,
                                  "H%dW%d tile %lld pixel (%d, %d) cycle %lld: drained "
                                  "u_q %d, fixed-point drift %d",
                                  nh, nw, (long long)d->k, r, c, (long long)d->t, o, want);
        }
        if (d->uq_out && r < h && c < w)
            d->uq_out[(size_t)r * w + c] = o;
        if (st)
            st->out_data[(size_t)d->t * nh + i] = o;
        res->outputs++;
    }
    if (st)
        st->out_ctrl[d->t] = 1;
    for (int i = 0; i < nh; i++) {
        int32_t *orow = &s->out[(size_t)i * nw];
        memmove(orow, orow + 1, (size_t)(nw - 1) * sizeof *orow);
        orow[nw - 1] = 0;
    }
    return 0;
}

int kura_sim_run(struct kura_sim *s, const uint32_t *sc, int h, int w, const int32_t *uq_ref,
                 int32_t *uq_out, const struct kura_sim_opts *opts, struct kura_sim_result *res,
                 struct errmsg *e)
{
    static const struct kura_sim_opts none = {0};
    if (!opts)
        opts = &none;
    memset(res, 0, sizeof *res);
    if (h < 1 || w < 1 || !sc)
        return errmsg_set(e, ERR_USAGE, "bad map size %dx%d", h, w);
    if (opts->check && !uq_ref)
        return errmsg_set(e, ERR_USAGE, "checks need the reference u_q map");
    int nh = s->n_h, nw = s->n_w;
    size_t pe = (size_t)nh * nw;
    int tiles_x = (w + nw - 1) / nw;
    int64_t n = (int64_t)((h + nh - 1) / nh) * tiles_x;
    int64_t ct = kura_c_tile(nw); /* paper eq. 9 */
    int64_t n_cyc = nw + n * ct;
    struct kura_streams *st = opts->streams;
    if (st && (st->n_h != nh || st->n_w != nw || st->n_cyc != n_cyc))
        return errmsg_set(e, ERR_USAGE, "streams were sized for another shape or map");
    struct act a = {opts->activity, 0, 0};
    reset_step(s, st, n_cyc);
    int64_t prev_sweep = -1, last_drain = -1;
    res->tile_cycles_min = INT64_MAX;
    res->tile_cycles_max = 0;
    int dr0 = 0, dc0 = 0; /* origin of the tile being drained */
    int r0 = 0, c0 = 0;   /* origin of the tile in prefill/sweep */
    uint64_t tog_mark = 0;
    for (int64_t t = 0; t < n_cyc; t++) {
        int64_t k = t / ct;
        int64_t ph = t % ct;
        /* drain of tile k-1 overlapped with the prefill of tile k (8.2 step 4) */
        if (k >= 1 && ph < nw) {
            struct drain dn = {h, w, dr0, dc0 + (int)ph, k - 1, t, uq_ref, uq_out};
            int rc = drain_column(s, &dn, opts, res, e);
            if (rc)
                return rc;
            last_drain = t;
        }
        if (k >= n)
            continue;
        if (ph == 0) {
            /* tile k starts: the controller points the Column Buffer at its halo field */
            if (opts->tile_toggles && k >= 1)
                opts->tile_toggles[k - 1] = a.toggles - tog_mark;
            tog_mark = a.toggles;
            r0 = (int)(k / tiles_x) * nh;
            c0 = (int)(k % tiles_x) * nw;
            for (int q = 0; q < nh + 4; q++)
                s->rows[q] = imod((int64_t)r0 - 2 + q, h);
            for (int m = 0; m < nw + 4; m++)
                s->cols[m] = imod((int64_t)c0 - 2 + m, w);
            if (st) {
                st->tile_r0[k] = r0;
                st->tile_c0[k] = c0;
                st->tile_cycle[k] = t;
            }
        }
        if (ph < nw) {
            /* 8.2 step 1: prefill, H-move with halo column m = ph */
            fetch_col(s, sc, w, (int)ph);
            if (st) {
                st->in_ctrl[t] = ph == 0 ? 3 : 1;
                memcpy(&st->in_data[(size_t)t * (nh + 4)], s->col, ((size_t)nh + 4) * 4);
            }
            h_move(s, &a);
            continue;
        }
        if (ph < nw + 25) {
            int ts = (int)(ph - nw);
            int dx = ts / 5 - 2, dy = ts % 5 - 2;
            if (ts == 0) {
                /* per-tile cycles = s_{k+1} - s_k (8.2 checks) */
                if (prev_sweep >= 0) {
                    int64_t tc = t - prev_sweep;
                    res->tile_cycles_min = tc < res->tile_cycles_min ? tc : res->tile_cycles_min;
                    res->tile_cycles_max = tc > res->tile_cycles_max ? tc : res->tile_cycles_max;
                }
                prev_sweep = t;
            }
            if (opts->check) {
                for (int i = 0; i < nh; i++) {
                    const uint32_t *srow = &sc[(size_t)s->rows[i + 2 + dy] * w];
                    for (int j = 0; j < nw; j++)
                        if (s->wk[(size_t)i * nw + j] != srow[s->cols[j + 2 + dx]])
                            return errmsg_set(e, ERR_INTERNAL,
                                              "H%dW%d tile %lld PE (%d, %d) cycle %lld offset "
                                              "(%d, %d): W does not hold pixel (%d, %d)",
                                              nh, nw, (long long)k, i, j, (long long)t, dx, dy,
                                              r0 + i + dy, c0 + j + dx);
                }
            }
            if (ts == 12) {
                /* centre capture: SCB/CCB <- W (8.2 step 2) */
                for (size_t p = 0; p < pe; p++)
                    wr(&a, &s->ctr[p], s->wk[p]);
            } else {
                for (size_t p = 0; p < pe; p++) {
                    s->acc_s[p] += kura_word_sin(s->wk[p]);
                    s->acc_c[p] += kura_word_cos(s->wk[p]);
                }
            }
            if (ts % 5 < 4) {
                v_move(s, ts % 5 + 1, &a);
            } else if (ts < 24) {
                int m = nw + ts / 5;
                fetch_col(s, sc, w, m);
                if (st) {
                    st->in_ctrl[t] = 1;
                    memcpy(&st->in_data[(size_t)t * (nh + 4)], s->col, ((size_t)nh + 4) * 4);
                }
                h_move(s, &a);
            }
            continue;
        }
        /* 8.2 step 3: combine, O <- (CCB·S - SCB·C + 2^14) >> 15 (paper eq. 6), S, C <- 0 */
        for (size_t p = 0; p < pe; p++) {
            int64_t raw = (int64_t)kura_word_cos(s->ctr[p]) * s->acc_s[p] -
                          (int64_t)kura_word_sin(s->ctr[p]) * s->acc_c[p];
            s->out[p] = kura_u_q(raw);
            s->acc_s[p] = 0;
            s->acc_c[p] = 0;
        }
        dr0 = r0;
        dc0 = c0;
    }
    if (opts->tile_toggles && n >= 1)
        opts->tile_toggles[n - 1] = a.toggles - tog_mark;
    /* the last tile: (last drain cycle + 1) - s_{n-1} */
    int64_t tc = last_drain + 1 - prev_sweep;
    res->tile_cycles_min = tc < res->tile_cycles_min ? tc : res->tile_cycles_min;
    res->tile_cycles_max = tc > res->tile_cycles_max ? tc : res->tile_cycles_max;
    if (opts->check && (res->tile_cycles_min != ct || res->tile_cycles_max != ct))
        return errmsg_set(e, ERR_INTERNAL, "H%dW%d per-tile cycles %lld..%lld, want %lld", nh, nw,
                          (long long)res->tile_cycles_min, (long long)res->tile_cycles_max,
                          (long long)ct);
    res->n_tiles = n;
    res->n_cyc = n_cyc;
    res->pe_cycles = (uint64_t)pe * (uint64_t)n_cyc;
    res->writes = a.writes;
    res->bits_written = 32 * a.writes;
    res->toggles = a.toggles;
    return 0;
}
