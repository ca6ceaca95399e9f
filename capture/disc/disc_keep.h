/*
 * disc_keep: the --keep-masks selection (docs/disc.md#st-masks):
 *   SEL = "none" | item (";" item)*,  item = key "=" ("all" | "none" | range ("," range)*),
 *   key in {blocks, heads, steps, batch}, range = int | int "-" int.
 * A missing key means all; "none" keeps nothing; repeated indices merge. Errors (index out
 * of range, a > b, empty item, repeated key, unknown key) are ERR_USAGE with a message
 * naming the offending text.
 */
#ifndef ACCELTRACE_DISC_KEEP_H
#define ACCELTRACE_DISC_KEEP_H

#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"

#define DISC_KEEP_KEYS 4 /* blocks, heads, steps, batch */

struct disc_keep {
    int n[DISC_KEEP_KEYS];     /* L, h, K, B */
    bool *sel[DISC_KEEP_KEYS]; /* sel[key][i]: index i selected */
    bool none;                 /* nothing is kept */
};

/* Parses sel for L blocks, h heads, K steps and B batch elements. Free with
 * disc_keep_release (also after a failure). */
int disc_keep_parse(struct disc_keep *k, const char *sel, int L, int h, int K, int B,
                    struct errmsg *e);
void disc_keep_release(struct disc_keep *k);

/* True when the mask (step, batch, block, head) is kept. */
bool disc_keep_has(const struct disc_keep *k, int step, int batch, int block, int head);

/* Number of kept masks. */
uint64_t disc_keep_count(const struct disc_keep *k);

#endif
