/*
 * kura_pick: the analyzer behind `acceltrace export tiles` (analysis/analyzer.h). In one
 * pass over a kura trace it keeps the reverse step asked for (its phase map decoded by
 * replay/kura_tiles kura_step_decode) and the stored KuraTiles record of that step and array
 * shape, if any, and the trace's content hash. A trace of another workload is refused
 * (ERR_DATA, file named); a step that does not decode is a data error naming the file.
 *
 * The caller sets step, nh, nw and zeroes the rest, runs {&kura_pick_ops, &pick}, reads
 * the results, and frees them with kura_pick_release.
 */
#ifndef ACCELTRACE_KURA_PICK_H
#define ACCELTRACE_KURA_PICK_H

#include <stdint.h>

#include "analysis/analyzer.h"
#include "replay/kura_tiles.h"

struct kura_pick {
    int64_t step; /* the reverse step; INT64_MIN: the header's T-1 (set in the pass) */
    int nh, nw;   /* the array shape of the stored tiles looked for */
    int hh, hw;   /* map size of the header (0: unknown) */
    int found;    /* the step was found: info and q are set */
    struct kura_step_info info;
    int16_t *q;                 /* (info.h, info.w) the step's Q1.15 phase map (owned) */
    Acceltrace__Record *stored; /* KuraTiles of the step and shape (owned), or NULL */
    char hash[130];             /* content hash of the trace */
};

extern const struct analyzer_ops kura_pick_ops;

/* Frees the map and the stored record (the struct itself is the caller's). */
void kura_pick_release(struct kura_pick *tp);

#endif
