/*
 * suggest: "did you mean" for names typed by a user (verbs, options, config and grid keys,
 * record types, metrics). A struct suggest collects candidate names and keeps the one
 * closest to the typed name by edit distance (Levenshtein), a typed name of two or more
 * characters that starts a candidate counting as one edit ("--thr" -> "--threads").
 * A candidate is only suggested when it is within max(2, len/3) edits of what was typed,
 * so unrelated names get no hint. No allocation; names are borrowed, not copied.
 */
#ifndef ACCELTRACE_SUGGEST_H
#define ACCELTRACE_SUGGEST_H

#include <stddef.h>

/* The search state: the typed name and the best candidate so far. */
struct suggest {
    const char *name; /* what was typed (not NUL-terminated at len) */
    size_t len;
    const char *best; /* closest candidate so far, or NULL */
    int best_d;       /* its distance */
};

/* Starts a search for name (len bytes). */
void suggest_init(struct suggest *s, const char *name, size_t len);

/* Offers one candidate (NUL-terminated, must outlive s); NULL is ignored. Ties keep the
 * first candidate offered. */
void suggest_add(struct suggest *s, const char *cand);

/* Offers every candidate of a '|'-separated list ("a|b|c"); the suggestion then points into
 * list and ends at the next '|': print it with "%.*s" and suggest_result_len. */
void suggest_add_list(struct suggest *s, const char *list);

/* The closest candidate within the limit above, or NULL. */
const char *suggest_result(const struct suggest *s);
/* Length of the suggestion (for one from suggest_add_list); 0 when there is none. */
size_t suggest_result_len(const struct suggest *s);

/* The number of single-character edits between a and b (Levenshtein), capped at 99;
 * names longer than 62 bytes count as 99. */
int suggest_distance(const char *a, size_t la, const char *b, size_t lb);

#endif
