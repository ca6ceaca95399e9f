/*
 * kura_tiles: KuraStep decoding, derived tile streams, KuraTiles checks and the RTL
 * stimulus export (docs/kura.md#tile-stream-export, docs/kura.md#replay). See kura_tiles.h.
 */
#include "replay/kura_tiles.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/buf.h"
#include "common/io.h"
#include "common/mem.h"
#include "replay/kura_power.h"
#include "traces/trace_reader.h"
#include "traces/trace_scan.h"

int kura_step_decode(const Acceltrace__KuraStep *ks, int hdr_h, int hdr_w,
                     struct kura_step_info *info, int16_t **q, struct errmsg *e)
{
    memset(info, 0, sizeof *info);
    *q = NULL;
    int h = ks->h ? (int)(ks->h > KURA_MAX_SIDE ? KURA_MAX_SIDE + 1 : ks->h) : hdr_h;
    int w = ks->w ? (int)(ks->w > KURA_MAX_SIDE ? KURA_MAX_SIDE + 1 : ks->w) : hdr_w;
    if (h < 1 || w < 1 || h > KURA_MAX_SIDE || w > KURA_MAX_SIDE)
        return errmsg_set(e, ERR_LIMIT, "kura step %d: map size %dx%d outside 1..%d", ks->step, h,
                          w, KURA_MAX_SIDE);
    size_t n = (size_t)h * w;
    if (ks->phase_q15.len != 2 * n)
        return errmsg_set(e, ERR_DATA, "kura step %d: phase_q15 holds %zu bytes, want %zu (%dx%d)",
                          ks->step, ks->phase_q15.len, 2 * n, h, w);
    info->h = h;
    info->w = w;
    info->step = ks->step;
    info->role = ks->role;
    info->c = ks->c;
    info->beta = ks->beta;
    info->sigma = ks->sigma;
    info->k = ks->k;
    info->kref = ks->kref;
    info->psi_ref = ks->psi_ref;
    if (ks->role == ACCELTRACE__KURA_ROLE__KURA_ROLE_REVERSE) {
        if (kura_regs_init(&info->regs, ks->k, ks->kref, ks->psi_ref) != 0)
            return errmsg_set(e, ERR_DATA,
                              "kura step %d: schedule K=%g K_ref=%g psi_ref=%g gives no int32 "
                              "registers",
                              ks->step, ks->k, ks->kref, ks->psi_ref);
        /* registers stored by the capture must be the ones the schedule gives
         * (docs/kura.md#fixed-point-drift) */
        if ((ks->g || ks->r_s || ks->r_c) &&
            (ks->g != info->regs.g || ks->r_s != info->regs.r_s || ks->r_c != info->regs.r_c))
            return errmsg_set(e, ERR_DATA,
                              "kura step %d: stored registers G=%d R_s=%d R_c=%d differ from "
                              "the schedule's %d %d %d",
                              ks->step, ks->g, ks->r_s, ks->r_c, info->regs.g, info->regs.r_s,
                              info->regs.r_c);
    }
    int16_t *m = mem_alloc(n * sizeof *m);
    if (!m)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    const uint8_t *b = ks->phase_q15.data;
    for (size_t i = 0; i < n; i++)
        m[i] = (int16_t)(uint16_t)(b[2 * i] | (b[2 * i + 1] << 8));
    *q = m;
    return 0;
}

int kura_tiles_derive(const int16_t *q, int h, int w, const struct kura_regs *regs, int n_h,
                      int n_w, struct kura_streams *st, int32_t *uq, int32_t *d, struct errmsg *e)
{
    struct kura_sim *sim = NULL;
    uint32_t *sc = NULL;
    int32_t *ref = NULL, *got = NULL, *dd = NULL;
    int rc;
    size_t n = (size_t)h * w;
    memset(st, 0, sizeof *st);
    rc = kura_streams_alloc(st, n_h, n_w, h, w);
    if (rc)
        return errmsg_set(e, rc, "cannot allocate the H%dW%d streams of a %dx%d map", n_h, n_w, h,
                          w);
    sc = mem_alloc(n * sizeof *sc);
    ref = mem_alloc(n * sizeof *ref);
    got = mem_alloc(n * sizeof *got);
    dd = d ? d : mem_alloc(n * sizeof *dd);
    if (!sc || !ref || !got || !dd) {
        rc = errmsg_set(e, ERR_NOMEM, "out of memory");
        goto fail;
    }
    kura_sc_map(q, h, w, sc);
    rc = kura_fixed_drift_map(q, h, w, regs, ref, dd, NULL);
    if (rc) {
        errmsg_set(e, rc, "fixed-point drift of a %dx%d map failed", h, w);
        goto fail;
    }
    if ((rc = kura_sim_new(&sim, n_h, n_w))) {
        errmsg_set(e, rc, "bad array shape H%dW%d", n_h, n_w);
        goto fail;
    }
    struct kura_sim_opts o = {.check = true, .streams = st};
    struct kura_sim_result res;
    if ((rc = kura_sim_run(sim, sc, h, w, ref, got, &o, &res, e)))
        goto fail;
    if (uq)
        memcpy(uq, got, n * sizeof *uq);
    goto done;
fail:
    kura_streams_release(st);
done:
    kura_sim_free(sim);
    mem_free(sc);
    mem_free(ref);
    mem_free(got);
    if (dd != d)
        mem_free(dd);
    return rc;
}

int kura_tiles_compare(const struct kura_streams *st, const Acceltrace__KuraTiles *kt,
                       struct errmsg *e)
{
    if ((int)kt->n_h != st->n_h || (int)kt->n_w != st->n_w || kt->n_tiles != st->n_tiles ||
        kt->n_cyc != st->n_cyc)
        return errmsg_set(e, ERR_DATA,
                          "stored tiles of step %d: H%uW%u with %u tiles and %u cycles, derived "
                          "%lld tiles and %lld cycles",
                          kt->step, kt->n_h, kt->n_w, kt->n_tiles, kt->n_cyc,
                          (long long)st->n_tiles, (long long)st->n_cyc);
    size_t nc = (size_t)st->n_cyc, li = (size_t)st->n_h + 4, lo = (size_t)st->n_h;
    if (kt->in_ctrl.len != nc || kt->out_ctrl.len != nc || kt->in_data.len != nc * li * 4 ||
        kt->out_data.len != nc * lo * 4)
        return errmsg_set(e, ERR_DATA,
                          "stored tiles of step %d H%dW%d: stream lengths do not "
                          "match %zu cycles",
                          kt->step, st->n_h, st->n_w, nc);
    for (size_t t = 0; t < nc; t++) {
        int bad = kt->in_ctrl.data[t] != st->in_ctrl[t] || kt->out_ctrl.data[t] != st->out_ctrl[t];
        for (size_t k = 0; k < li && !bad; k++) {
            const uint8_t *p = kt->in_data.data + 4 * (t * li + k);
            uint32_t v =
                (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
            bad = v != st->in_data[t * li + k];
        }
        for (size_t i = 0; i < lo && !bad; i++) {
            const uint8_t *p = kt->out_data.data + 4 * (t * lo + i);
            uint32_t v =
                (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
            bad = v != (uint32_t)st->out_data[t * lo + i];
        }
        if (bad)
            return errmsg_set(e, ERR_DATA,
                              "stored tiles of step %d H%dW%d differ from the derived streams "
                              "at cycle %zu",
                              kt->step, st->n_h, st->n_w, t);
    }
    return 0;
}

/* The word layouts of section 7: one table feeds meta.json and README.txt. */
struct layout_row {
    const char *file;
    const char *field;
    const char *bits; /* printf format over N_h (some rows) */
    const char *meaning;
};

static const struct layout_row LAYOUT[] = {
    {"in.hex", "ctrl", "[4+32*(N_h+4)-1 : 32*(N_h+4)]",
     "bit0 = a column is consumed (end-of-cycle H-move), bit1 = first column of a tile, "
     "bits 2-3 = 0"},
    {"in.hex", "lane k sin_q", "[32k+31 : 32k+16]",
     "sin_q (int16) of halo row k = 0..N_h+3 (image row r0-2+k); k < N_h feeds PE row k, "
     "k >= N_h feeds Row Buffer row k-N_h"},
    {"in.hex", "lane k cos_q", "[32k+15 : 32k]", "cos_q (int16) of halo row k"},
    {"out.hex", "ctrl", "[4+32*N_h-1 : 32*N_h]",
     "bit0 = valid (drain cycle s_k + 26 + d, image column c0 + d, padded columns included)"},
    {"out.hex", "row i", "[32i+31 : 32i]",
     "drained O(i,0) of PE row i = u_q (int32, LSB 2^-15) for i = 0..N_h-1"},
    {"lut.hex", "L[k]", "[15 : 0]", "quarter-wave LUT entry k = 0..4096 (int16)"},
    {"phase.hex", "q", "[15 : 0]", "Q1.15 phase of pixel r*W + c, row-major (int16)"},
    {"drift.hex", "d", "[31 : 0]",
     "fixed-point drift d of pixel r*W + c (int32, units pi*2^-31 rad)"},
};

#define N_LAYOUT (sizeof LAYOUT / sizeof LAYOUT[0])

/* Writes b to dir/name. */
static int write_file(const char *dir, const char *name, const struct buf *b, struct errmsg *e)
{
    char path[4096];
    struct sink k;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int rc = sink_open_file(&k, path, e);
    if (rc)
        return rc;
    rc = sink_write(&k, b->data, b->len);
    int en = rc ? errno : 0;
    int rc2 = sink_close(&k);
    if (rc2 && !en)
        en = errno;
    if (rc || rc2)
        return errmsg_set(e, rc ? rc : rc2, "cannot write '%s': %s", path, strerror(en ? en : EIO));
    return 0;
}

static int put_hex(struct buf *b, uint32_t v, int digits)
{
    static const char hx[] = "0123456789abcdef";
    char s[8];
    for (int i = 0; i < digits; i++)
        s[i] = hx[(v >> (4 * (digits - 1 - i))) & 0xF];
    return buf_append(b, s, (size_t)digits);
}

static int gen_streams_hex(struct buf *in, struct buf *out, const struct kura_streams *st)
{
    int rc = 0;
    int li = st->n_h + 4, lo = st->n_h;
    for (int64_t t = 0; t < st->n_cyc && !rc; t++) {
        /* one word per line, most significant digit first: ctrl, then lane N_h+3 .. 0 */
        rc = put_hex(in, st->in_ctrl[t], 1);
        for (int k = li - 1; k >= 0 && !rc; k--)
            rc = put_hex(in, st->in_data[(size_t)t * li + k], 8);
        if (!rc)
            rc = buf_append(in, "\n", 1);
        if (!rc)
            rc = put_hex(out, st->out_ctrl[t], 1);
        for (int i = lo - 1; i >= 0 && !rc; i--)
            rc = put_hex(out, (uint32_t)st->out_data[(size_t)t * lo + i], 8);
        if (!rc)
            rc = buf_append(out, "\n", 1);
    }
    return rc;
}

static int gen_readme(struct buf *b, const struct kura_step_info *info,
                      const struct kura_streams *st)
{
    int rc = buf_printf(
        b,
        "SA-Kura RTL stimulus (docs/kura.md#tile-stream-export), generated by acceltrace\n"
        "\n"
        "Map %dx%d, reverse step %d, array N_h x N_w = %d x %d, %lld tiles, %lld cycles.\n"
        "Registers: G = %d, R_s = %d, R_c = %d.\n"
        "\n"
        "Every file is $readmemh text: one hex word per line, most significant digit first.\n"
        "in.hex and out.hex have one line per cycle t = 0..N_cyc-1, N_cyc = N_w + n(N_w + 26).\n"
        "Tile k (origin (r0, c0) in meta.json, row-major, tx fastest) prefills at cycles\n"
        "p_k = k(N_w + 26) .. p_k + N_w - 1, sweeps 25 cycles from s_k = p_k + N_w (offset\n"
        "(dx, dy) = (t/5 - 2, t%%5 - 2), centre at t = 12, H-moves at t = 4, 9, 14, 19),\n"
        "combines at s_k + 25 and drains at s_k + 26 + d, d < N_w, under the next prefill.\n"
        "A column sits on the line of the cycle whose end-of-cycle H-move consumes it.\n"
        "Image indices are periodic: (r mod H, c mod W). Data bits are 0 on invalid cycles.\n"
        "\n"
        "in.hex:  %d bits (%d hex digits) per word\n"
        "out.hex: %d bits (%d hex digits) per word\n"
        "lut.hex: 4097 words of 4 digits; phase.hex: H*W words of 4 digits;\n"
        "drift.hex: H*W words of 8 digits\n"
        "\n"
        "Word layouts:\n",
        info->h, info->w, info->step, st->n_h, st->n_w, (long long)st->n_tiles,
        (long long)st->n_cyc, info->regs.g, info->regs.r_s, info->regs.r_c, 4 + 32 * (st->n_h + 4),
        1 + 8 * (st->n_h + 4), 4 + 32 * st->n_h, 1 + 8 * st->n_h);
    for (size_t i = 0; i < N_LAYOUT && !rc; i++)
        rc = buf_printf(b, "  %-9s %-14s %-30s %s\n", LAYOUT[i].file, LAYOUT[i].field,
                        LAYOUT[i].bits, LAYOUT[i].meaning);
    return rc;
}

static json_t *gen_meta(const struct kura_step_info *info, const struct kura_streams *st,
                        const char *trace_hash)
{
    json_t *m = json_object(), *tiles = json_array(), *lay = json_array();
    json_t *sched = json_object(), *regs = json_object();
    if (!m || !tiles || !lay || !sched || !regs)
        goto fail;
    json_object_set_new(m, "format", json_string("acceltrace kura tiles 1"));
    json_object_set_new(m, "H", json_integer(info->h));
    json_object_set_new(m, "W", json_integer(info->w));
    json_object_set_new(m, "N_h", json_integer(st->n_h));
    json_object_set_new(m, "N_w", json_integer(st->n_w));
    json_object_set_new(m, "step", json_integer(info->step));
    json_object_set_new(sched, "c", json_real(info->c));
    json_object_set_new(sched, "beta", json_real(info->beta));
    json_object_set_new(sched, "sigma", json_real(info->sigma));
    json_object_set_new(sched, "K", json_real(info->k));
    json_object_set_new(sched, "K_ref", json_real(info->kref));
    json_object_set_new(sched, "psi_ref", json_real(info->psi_ref));
    json_object_set_new(m, "schedule", sched);
    json_object_set_new(regs, "G", json_integer(info->regs.g));
    json_object_set_new(regs, "R_s", json_integer(info->regs.r_s));
    json_object_set_new(regs, "R_c", json_integer(info->regs.r_c));
    json_object_set_new(m, "registers", regs);
    json_object_set_new(m, "n_tiles", json_integer(st->n_tiles));
    json_object_set_new(m, "N_cyc", json_integer(st->n_cyc));
    json_object_set_new(m, "C_tile", json_integer(kura_c_tile(st->n_w)));
    for (int64_t k = 0; k < st->n_tiles; k++) {
        json_t *t = json_pack("{s:I,s:i,s:i,s:I}", "k", (json_int_t)k, "r0", st->tile_r0[k], "c0",
                              st->tile_c0[k], "first_cycle", (json_int_t)st->tile_cycle[k]);
        if (!t || json_array_append_new(tiles, t))
            goto fail;
    }
    json_object_set_new(m, "tiles", tiles);
    tiles = NULL;
    for (size_t i = 0; i < N_LAYOUT; i++) {
        json_t *r = json_pack("{s:s,s:s,s:s,s:s}", "file", LAYOUT[i].file, "field", LAYOUT[i].field,
                              "bits", LAYOUT[i].bits, "meaning", LAYOUT[i].meaning);
        if (!r || json_array_append_new(lay, r))
            goto fail;
    }
    json_object_set_new(m, "word_bits",
                        json_pack("{s:i,s:i,s:i,s:i,s:i}", "in", 4 + 32 * (st->n_h + 4), "out",
                                  4 + 32 * st->n_h, "lut", 16, "phase", 16, "drift", 32));
    json_object_set_new(m, "layout", lay);
    lay = NULL;
    json_object_set_new(m, "trace_hash", json_string(trace_hash ? trace_hash : ""));
    return m;
fail:
    json_decref(m);
    json_decref(tiles);
    json_decref(lay);
    return NULL;
}

int kura_tiles_export(const char *dir, const struct kura_step_info *info, const int16_t *q,
                      const int32_t *d, const struct kura_streams *st, const char *trace_hash,
                      struct errmsg *e)
{
    struct buf in, out, lut, ph, dr, rd;
    json_t *meta = NULL;
    char *js = NULL;
    int rc = 0;
    buf_init(&in);
    buf_init(&out);
    buf_init(&lut);
    buf_init(&ph);
    buf_init(&dr);
    buf_init(&rd);
    if ((rc = io_mkdir_p(dir, 0755, e)))
        return rc;
    const int16_t *L = kura_lut();
    size_t n = (size_t)info->h * info->w;
    if ((rc = gen_streams_hex(&in, &out, st)))
        goto nomem;
    for (int k = 0; k < KURA_LUT_N && !rc; k++)
        if (!(rc = put_hex(&lut, (uint16_t)L[k], 4)))
            rc = buf_append(&lut, "\n", 1);
    for (size_t i = 0; i < n && !rc; i++) {
        if (!(rc = put_hex(&ph, (uint16_t)q[i], 4)))
            rc = buf_append(&ph, "\n", 1);
        if (!rc && !(rc = put_hex(&dr, (uint32_t)d[i], 8)))
            rc = buf_append(&dr, "\n", 1);
    }
    if (rc || (rc = gen_readme(&rd, info, st)))
        goto nomem;
    meta = gen_meta(info, st, trace_hash);
    js = meta ? json_dumps(meta, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
    if (!js)
        goto nomem;
    struct buf mj = {0};
    buf_init(&mj);
    if ((rc = buf_printf(&mj, "%s\n", js))) {
        buf_release(&mj);
        goto nomem;
    }
    rc = write_file(dir, "meta.json", &mj, e);
    buf_release(&mj);
    if (rc || (rc = write_file(dir, "in.hex", &in, e)) ||
        (rc = write_file(dir, "out.hex", &out, e)) || (rc = write_file(dir, "lut.hex", &lut, e)) ||
        (rc = write_file(dir, "phase.hex", &ph, e)) ||
        (rc = write_file(dir, "drift.hex", &dr, e)) || (rc = write_file(dir, "README.txt", &rd, e)))
        goto done;
    goto done; /* every file written */
nomem:
    rc = errmsg_set(e, ERR_NOMEM, "out of memory");
done:
    free(js);
    json_decref(meta);
    buf_release(&in);
    buf_release(&out);
    buf_release(&lut);
    buf_release(&ph);
    buf_release(&dr);
    buf_release(&rd);
    return rc;
}

/* The calibration pass (traces/trace_scan: below analysis/, so no analyzer). */
struct cal_pass {
    int n_h, n_w;
    int hh, hw; /* map size of the header (0: unknown) */
    struct kura_sim *sim;
    int16_t *q;
    uint32_t *sc;
    size_t sc_n;
    uint64_t tog, bits, steps;
};

static int cal_begin(void *ctx, const struct trace_scan_pos *pos, struct errmsg *e)
{
    struct cal_pass *c = ctx;
    const Acceltrace__TraceHeader *hdr = trace_reader_header(pos->r);
    if (!hdr || !hdr->workload || strcmp(hdr->workload, "kura") || !hdr->kura)
        return errmsg_set(e, ERR_DATA, "not a kura trace ('%s')", pos->path);
    int rc = kura_sim_new(&c->sim, c->n_h, c->n_w);
    if (rc)
        return errmsg_set(e, rc, "bad array shape H%dW%d", c->n_h, c->n_w);
    c->hh = hdr->kura->h <= KURA_MAX_SIDE ? (int)hdr->kura->h : 0;
    c->hw = hdr->kura->w <= KURA_MAX_SIDE ? (int)hdr->kura->w : 0;
    return 0;
}

static int cal_record(void *ctx, const struct trace_scan_pos *pos, Acceltrace__Record **rec,
                      struct errmsg *e)
{
    (void)pos;
    struct cal_pass *c = ctx;
    if ((*rec)->body_case != ACCELTRACE__RECORD__BODY_KURA_STEP ||
        (*rec)->kura_step->role != ACCELTRACE__KURA_ROLE__KURA_ROLE_REVERSE)
        return 0;
    struct kura_step_info info;
    int rc = kura_step_decode((*rec)->kura_step, c->hh, c->hw, &info, &c->q, e);
    if (rc)
        return rc;
    size_t n = (size_t)info.h * info.w;
    if (n > c->sc_n) {
        uint32_t *p = mem_realloc(c->sc, n * sizeof *p);
        if (!p)
            return errmsg_set(e, ERR_NOMEM, "out of memory");
        c->sc = p;
        c->sc_n = n;
    }
    kura_sc_map(c->q, (size_t)info.h, (size_t)info.w, c->sc);
    struct kura_sim_opts o = {.activity = true};
    struct kura_sim_result res;
    if ((rc = kura_sim_run(c->sim, c->sc, info.h, info.w, NULL, NULL, &o, &res, e)))
        return rc;
    c->tog += res.toggles;
    c->bits += res.bits_written;
    c->steps++;
    mem_free(c->q);
    c->q = NULL;
    return 0;
}

int kura_activity_calibrate(const char *path, int n_h, int n_w, double *alpha, uint64_t *steps,
                            struct errmsg *e)
{
    struct cal_pass c = {.n_h = n_h, .n_w = n_w};
    const struct trace_scan_hooks hooks = {cal_begin, cal_record, NULL};
    *alpha = 0;
    *steps = 0;
    int rc = trace_scan_file(path, NULL, &hooks, &c, e);
    if (rc == 0 && !c.bits)
        rc = errmsg_set(e, ERR_DATA, "no reverse step in '%s'", path);
    if (rc == 0) {
        *steps = c.steps;
        *alpha = (double)c.tog /
                 (double)c.bits; /* docs/kura.md#switching-activity: Σ toggles / Σ bits */
    }
    mem_free(c.q);
    mem_free(c.sc);
    kura_sim_free(c.sim);
    return rc;
}
