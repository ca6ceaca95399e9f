/*
 * salca_ckpt: the checkpoint hooks of `capture salca` (docs/trace-format.md#checkpoints).
 * A unit is a decode step (step-major plan) or a (layer, step) pair (layer-major plan).
 * The K/V stores are not saved: the sources are deterministic, so a resumed run generates
 * them again (salca_decode.c replay_steps). What is saved is what the records so far left
 * behind: the per-job aggregates and counters, and the model source's next input token.
 *
 * Layout (host byte order, after the driver's fixed part):
 *   u32 version 2, u32 L, H, N, slot mask, layer_major, n_needles
 *   u64 unit, jobs done, selections, selection bytes; u32 token
 *   per slot on: f64 ldiff; u64 agree;
 *                f32 cov_min[MAX_NEEDLES]; f64 cov_sum[MAX_NEEDLES];
 *                f64 recall[jobs], cosine[jobs], retention[jobs], overshoot[jobs],
 *                    run length[jobs]
 * (Version 1 kept sums of retention, overshoot and run length instead of the run lengths:
 * the means are now summed in the step-major job order whatever the plan, so a layer-major
 * capture's Summary equals a step-major one's.)
 *   u64 cov_n[MAX_NEEDLES]
 */
#include <stdio.h>
#include <string.h>

#include "capture/salca/salca_capture_impl.h"

#define SALCA_CKPT_VERSION 2u

/* The slots on, one bit each. */
static uint32_t slot_mask(const struct salca_capture_params *p)
{
    uint32_t m = 0;
    for (int s = 0; s < SALCA_NSLOT; s++)
        if (slot_on(p, s))
            m |= 1u << s;
    return m;
}

/* Jobs the aggregates hold once units [0, unit) are done. */
static uint64_t jobs_at(const struct cap *c, uint64_t unit)
{
    return unit * c->H * (c->layer_major ? 1 : c->L);
}

static bool put(FILE *f, const void *p, size_t size, size_t n)
{
    return n == 0 || fwrite(p, size, n, f) == n;
}

int salca_ckpt_save(void *inst, uint64_t unit, FILE *f, struct errmsg *e)
{
    const struct salca_capture *x = inst;
    const struct cap *c = &x->c;
    const struct salca_acc *a = &x->acc;
    uint32_t head[7] = {SALCA_CKPT_VERSION, c->L,           c->H,        c->N,
                        slot_mask(&x->p),   c->layer_major, c->n_needles};
    uint64_t counts[4] = {unit, a->jobs_done, x->res.selects, x->res.sel_bytes};
    bool ok = put(f, head, 4, 7) && put(f, counts, 8, 4) && put(f, &x->token, 4, 1);
    for (int m = 0; m < SALCA_NSLOT && ok; m++) {
        if (!slot_on(&x->p, m))
            continue;
        ok = put(f, &a->ldiff[m], 8, 1) && put(f, &a->agree[m], 8, 1) &&
             put(f, a->cov_min[m], 4, MAX_NEEDLES) && put(f, a->cov_sum[m], 8, MAX_NEEDLES) &&
             put(f, a->recall[m], 8, a->jobs_done) && put(f, a->cos[m], 8, a->jobs_done) &&
             put(f, a->ret[m], 8, a->jobs_done) && put(f, a->over[m], 8, a->jobs_done) &&
             put(f, a->runlen[m], 8, a->jobs_done);
    }
    if (ok)
        ok = put(f, a->cov_n, 8, MAX_NEEDLES);
    return ok ? 0 : errmsg_set(e, ERR_NOMEM, "out of memory for a checkpoint");
}

/* Reads n items of size bytes; false at a short read. */
static bool get(FILE *f, void *p, size_t size, size_t n)
{
    return n == 0 || fread(p, size, n, f) == n;
}

int salca_ckpt_load(void *inst, uint64_t unit, FILE *f, const char *path, struct errmsg *e)
{
    struct salca_capture *x = inst;
    const struct cap *c = &x->c;
    struct salca_acc *a = &x->acc;
    uint32_t head[7] = {0}, want[7] = {SALCA_CKPT_VERSION, c->L,           c->H,        c->N,
                                       slot_mask(&x->p),   c->layer_major, c->n_needles};
    uint64_t counts[4] = {0};
    long off = ftell(f);
    if (!get(f, head, 4, 7) || memcmp(head, want, sizeof head) != 0)
        return errmsg_set(e, ERR_DATA,
                          "checkpoint '%s': the salca state at offset %ld is of another version, "
                          "shape, method set or memory plan",
                          path, off);
    off = ftell(f);
    uint64_t units = (uint64_t)c->N * (c->layer_major ? c->L : 1);
    if (!get(f, counts, 8, 4) || counts[0] != unit || unit > units || counts[1] != jobs_at(c, unit))
        return errmsg_set(e, ERR_DATA,
                          "checkpoint '%s': unit or job count at offset %ld does not fit this run",
                          path, off);
    a->jobs_done = counts[1];
    x->res.selects = counts[2];
    x->res.sel_bytes = counts[3];
    bool ok = get(f, &x->resume_token, 4, 1);
    for (int m = 0; m < SALCA_NSLOT && ok; m++) {
        if (!slot_on(&x->p, m))
            continue;
        ok = get(f, &a->ldiff[m], 8, 1) && get(f, &a->agree[m], 8, 1) &&
             get(f, a->cov_min[m], 4, MAX_NEEDLES) && get(f, a->cov_sum[m], 8, MAX_NEEDLES) &&
             get(f, a->recall[m], 8, a->jobs_done) && get(f, a->cos[m], 8, a->jobs_done) &&
             get(f, a->ret[m], 8, a->jobs_done) && get(f, a->over[m], 8, a->jobs_done) &&
             get(f, a->runlen[m], 8, a->jobs_done);
    }
    off = ftell(f);
    if (!ok || !get(f, a->cov_n, 8, MAX_NEEDLES) || fgetc(f) != EOF)
        return errmsg_set(e, ERR_DATA,
                          "checkpoint '%s': salca state truncated or too long at "
                          "offset %ld",
                          path, off);
    x->resumed = true;
    return 0;
}
