/*
 * disc_memplan: the memory plan arithmetic (see disc_memplan.h). The byte counts mirror the
 * allocations of dit.c (model scratch, dit_state_open) and disc_capture.c (per-run buffers).
 */
#include "capture/disc/disc_memplan.h"
#include "capture/disc/dit_impl.h"

#include <math.h>
#include <string.h>

static void add(struct disc_mem_plan *p, const char *name, const char *prec, double bytes,
                double spilled_held)
{
    struct disc_mem_item *it = &p->item[p->n_items++];
    it->name = name;
    it->precision = prec;
    it->total_bytes = bytes;
    it->held_bytes = spilled_held; /* < 0: cannot spill */
    it->place = DISC_MEM_HELD;
}

static double sum_held(struct disc_mem_plan *p)
{
    double s = 0.0;
    for (int i = 0; i < p->n_items; i++) {
        const struct disc_mem_item *it = &p->item[i];
        s += it->place == DISC_MEM_SPILLED ? it->held_bytes : it->total_bytes;
    }
    return s;
}

void disc_mem_plan_make(struct disc_mem_plan *plan, const struct dit_config *c,
                        const struct disc_mem_shape *sh, double limit_bytes)
{
    double N = c->tokens, d = c->hidden, L = c->depth, H = c->heads, B = sh->n_batch;
    double T = c->text_tokens, p2 = (double)c->patch * c->patch, f = 4.0;
    double words = ceil(N / 64.0);
    double chunk = floor((double)(1u << 22) / N);
    struct disc_mem_plan *p = plan;
    *p = (struct disc_mem_plan){0};
    p->limit_bytes = limit_bytes;
    /* F32 weights (the model converts F16/BF16 files on load). */
    add(p, "weights", "f32", f * (double)dit_param_count(c), -1.0);
    /* One forward's scratch (dit.c alloc_scratch): pe, x0, hs, tmp (N, d); a, kk, vv, q, o
     * (2, N, d); ff (N, 4d); patches; final rows; score chunk; packed K/V; the row kernels'
     * per-worker scratch (dit_wscratch_elems); text K/V and caption projection (L, B, T, d)
     * + (B, T, d). */
    double act =
        f * (N * d * 4.0 + 2.0 * N * d * 5.0 + N * 4.0 * d + N * c->c_in * p2 + N * p2 * c->c_out +
             chunk * (N > T ? N : T) + 2.0 * N * c->head_dim +
             (double)(sh->threads > 0 ? sh->threads : 1) * (double)dit_wscratch_elems((size_t)N) +
             (L + 1.0) * B * T * d * 2.0);
    add(p, "activations", "f32", act, -1.0);
    /* Block outputs (dit_state_open): one per block with CTR, a ring of two without. */
    double ff_one = f * B * N * d;
    if (sh->ctr)
        add(p, "ctr block outputs", "f32", L * ff_one, 2.0 * ff_one);
    else
        add(p, "block outputs", "f32", 2.0 * ff_one, -1.0);
    double group = H * N * words * 8.0;
    if (sh->st)
        add(p, "st masks", "1 bit", B * L * group, group);
    if (sh->st_target)
        add(p, "st-target store", "f32", f * B * H * N * N, -1.0);
    /* Trajectories of the runs (K, C_in H W) and the per-run token buffers. */
    double lat = (double)c->c_in * c->lat * c->lat;
    double runs = sh->compare ? 3.0 : 1.0;
    double traj = f * (runs * sh->steps * lat + (B + 4.0) * lat) + N * 16.0;
    if (sh->keep_any)
        traj += N * words * 8.0 + N * 4.0;
    add(p, "trajectories and records", "f32", traj, -1.0);
    p->all_bytes = sum_held(p);
    /* Spill the ST masks first, then the CTR block outputs, until the held part fits. */
    for (int pass = 0; pass < 2 && limit_bytes > 0 && sum_held(p) > limit_bytes; pass++) {
        const char *want = pass == 0 ? "st masks" : "ctr block outputs";
        for (int i = 0; i < p->n_items; i++) {
            struct disc_mem_item *it = &p->item[i];
            if (it->held_bytes >= 0.0 && !strcmp(it->name, want)) {
                it->place = DISC_MEM_SPILLED;
                p->spill_bytes += it->total_bytes;
                if (pass == 0)
                    p->spill_masks = true;
                else
                    p->spill_ctr = true;
            }
        }
    }
    for (int i = 0; i < p->n_items; i++)
        if (p->item[i].place == DISC_MEM_HELD)
            p->item[i].held_bytes = p->item[i].total_bytes;
    p->held_bytes = sum_held(p);
    p->fits = limit_bytes <= 0 || p->held_bytes <= limit_bytes;
}
