/*
 * suggest: closest-name search (see suggest.h). The distance is the classic two-row
 * dynamic programme; names typed on a command line or in a config are short.
 */
#include "common/suggest.h"

#include <string.h>

int suggest_distance(const char *a, size_t la, const char *b, size_t lb)
{
    int prev[64], cur[64];
    if (la > 62 || lb > 62)
        return 99;
    for (size_t j = 0; j <= lb; j++)
        prev[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
            int del = prev[j] + 1, ins = cur[j - 1] + 1;
            cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
        }
        memcpy(prev, cur, (lb + 1) * sizeof *cur);
    }
    return prev[lb] > 99 ? 99 : prev[lb];
}

void suggest_init(struct suggest *s, const char *name, size_t len)
{
    s->name = name;
    s->len = len;
    s->best = NULL;
    s->best_d = 99;
}

/* Offers cand of lc bytes. */
static void add_n(struct suggest *s, const char *cand, size_t lc)
{
    int d = suggest_distance(s->name, s->len, cand, lc);
    /* a typed prefix ("thr" for "threads") counts as one edit */
    if (s->len >= 2 && s->len < lc && !strncmp(cand, s->name, s->len) && d > 1)
        d = 1;
    if (d < s->best_d) {
        s->best_d = d;
        s->best = cand;
    }
}

void suggest_add(struct suggest *s, const char *cand)
{
    if (cand)
        add_n(s, cand, strlen(cand));
}

void suggest_add_list(struct suggest *s, const char *list)
{
    for (const char *p = list; p && *p;) {
        size_t n = strcspn(p, "|");
        add_n(s, p, n);
        p += n;
        if (*p == '|')
            p++;
    }
}

const char *suggest_result(const struct suggest *s)
{
    int limit = s->len / 3 > 2 ? (int)(s->len / 3) : 2;
    return s->best && s->best_d <= limit && s->best_d > 0 ? s->best : NULL;
}

size_t suggest_result_len(const struct suggest *s)
{
    const char *r = suggest_result(s);
    return r ? strcspn(r, "|") : 0;
}
