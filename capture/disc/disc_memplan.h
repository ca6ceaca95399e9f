/*
 * disc_memplan: the memory plan of a DiSC capture (docs/models.md#disc-memory-plan): what
 * the sampler runs hold, in which precision, what moves to the spill file, and whether the
 * resident part fits a limit.
 *
 * The plan is arithmetic on the model shape only (nothing is allocated). Items are listed
 * largest-first in a fixed order; the spill choice is: nothing when everything fits, else
 * the ST masks (the largest item at the paper's shapes, one (batch, block) group held),
 * then the CTR block outputs (two blocks held). The weights, activations, ST-target
 * probability store and trajectories are always held. The runs of one capture (dense,
 * CTR-only, main) are sequential, so the plan is that of the largest run.
 */
#ifndef ACCELTRACE_DISC_MEMPLAN_H
#define ACCELTRACE_DISC_MEMPLAN_H

#include <stdbool.h>

#include "capture/disc/dit.h"

enum disc_mem_place { DISC_MEM_HELD = 0, DISC_MEM_SPILLED = 1 };

struct disc_mem_item {
    const char *name;      /* "weights", "st masks", ... */
    const char *precision; /* "f32", "1 bit" */
    double total_bytes;    /* the whole item */
    double held_bytes;     /* resident: total_bytes when held, the held window when spilled */
    enum disc_mem_place place;
};

#define DISC_MEM_ITEMS 8

struct disc_mem_plan {
    struct disc_mem_item item[DISC_MEM_ITEMS];
    int n_items;
    bool spill_masks, spill_ctr;
    double held_bytes;  /* resident estimate: the sum of held_bytes */
    double all_bytes;   /* everything held, no spill file */
    double spill_bytes; /* size of the spill file */
    double limit_bytes; /* 0 = no limit */
    bool fits;          /* held_bytes <= limit_bytes (always with no limit) */
};

/* What the plan depends on besides the model shape. */
struct disc_mem_shape {
    int n_batch;    /* 1, or 2 with CFG */
    int steps;      /* K */
    int threads;    /* workers of the row kernels */
    bool ctr, st;   /* CTR caches, ST masks of the main run */
    bool st_target; /* --st-target: the (B, h, N, N) probability store */
    bool compare;   /* dense (and CTR-only) reference runs: their trajectories */
    bool keep_any;  /* some mask bits are kept: one mask's record buffers */
};

/* Fills plan for cfg and sh under limit_bytes (0 = no limit). */
void disc_mem_plan_make(struct disc_mem_plan *plan, const struct dit_config *cfg,
                        const struct disc_mem_shape *sh, double limit_bytes);

#endif
