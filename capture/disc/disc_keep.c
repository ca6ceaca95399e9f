/* disc_keep: --keep-masks parser (docs/disc.md#st-masks). */
#include "capture/disc/disc_keep.h"

#include <stdlib.h>
#include <string.h>

#include "common/mem.h"

static const char *keys[DISC_KEEP_KEYS] = {"blocks", "heads", "steps", "batch"};

void disc_keep_release(struct disc_keep *k)
{
    for (int i = 0; i < DISC_KEEP_KEYS; i++) {
        mem_free(k->sel[i]);
        k->sel[i] = NULL;
    }
}

static bool parse_int(const char *s, size_t len, long *out)
{
    if (len == 0 || len > 9)
        return false;
    long v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return true;
}

static int parse_value(struct disc_keep *k, int key, const char *v, size_t len, struct errmsg *e)
{
    bool *sel = k->sel[key];
    int n = k->n[key];
    if (len == 3 && !strncmp(v, "all", 3)) {
        for (int i = 0; i < n; i++)
            sel[i] = true;
        return 0;
    }
    if (len == 4 && !strncmp(v, "none", 4))
        return 0;
    size_t pos = 0;
    while (pos <= len) {
        size_t end = pos;
        while (end < len && v[end] != ',')
            end++;
        const char *r = v + pos;
        size_t rl = end - pos;
        const char *dash = memchr(r, '-', rl);
        long a, b;
        bool ok = dash ? parse_int(r, (size_t)(dash - r), &a) &&
                             parse_int(dash + 1, rl - (size_t)(dash - r) - 1, &b)
                       : parse_int(r, rl, &a);
        if (!dash)
            b = a;
        if (!ok)
            return errmsg_set(e, ERR_USAGE, "bad range '%.*s' in --keep-masks %s", (int)rl, r,
                              keys[key]);
        if (a > b)
            return errmsg_set(e, ERR_USAGE, "empty range '%.*s' in --keep-masks %s", (int)rl, r,
                              keys[key]);
        if (b >= n)
            return errmsg_set(e, ERR_USAGE, "index %ld out of range in --keep-masks %s (0..%d)", b,
                              keys[key], n - 1);
        for (long i = a; i <= b; i++)
            sel[i] = true;
        pos = end + 1;
    }
    return 0;
}

int disc_keep_parse(struct disc_keep *k, const char *sel, int L, int h, int K, int B,
                    struct errmsg *e)
{
    memset(k, 0, sizeof *k);
    k->n[0] = L, k->n[1] = h, k->n[2] = K, k->n[3] = B;
    bool seen[DISC_KEEP_KEYS] = {false};
    for (int i = 0; i < DISC_KEEP_KEYS; i++) {
        k->sel[i] = mem_calloc((size_t)(k->n[i] > 0 ? k->n[i] : 1), sizeof(bool));
        if (!k->sel[i])
            return errmsg_set(e, ERR_NOMEM, "out of memory");
    }
    if (!strcmp(sel, "none")) {
        k->none = true;
        return 0;
    }
    const char *p = sel;
    for (;;) {
        const char *end = strchr(p, ';');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        if (len == 0 || !eq)
            return errmsg_set(e, ERR_USAGE, "empty or bad item '%.*s' in --keep-masks", (int)len,
                              p);
        int key = -1;
        for (int i = 0; i < DISC_KEEP_KEYS; i++)
            if ((size_t)(eq - p) == strlen(keys[i]) && !strncmp(p, keys[i], strlen(keys[i])))
                key = i;
        if (key < 0)
            return errmsg_set(e, ERR_USAGE, "unknown key '%.*s' in --keep-masks", (int)(eq - p), p);
        if (seen[key])
            return errmsg_set(e, ERR_USAGE, "repeated key '%s' in --keep-masks", keys[key]);
        seen[key] = true;
        int rc = parse_value(k, key, eq + 1, len - (size_t)(eq - p) - 1, e);
        if (rc)
            return rc;
        if (!end)
            break;
        p = end + 1;
    }
    for (int i = 0; i < DISC_KEEP_KEYS; i++)
        if (!seen[i])
            for (int j = 0; j < k->n[i]; j++)
                k->sel[i][j] = true;
    return 0;
}

bool disc_keep_has(const struct disc_keep *k, int step, int batch, int block, int head)
{
    if (k->none || !k->sel[0])
        return false;
    return block < k->n[0] && head < k->n[1] && step < k->n[2] && batch < k->n[3] &&
           k->sel[0][block] && k->sel[1][head] && k->sel[2][step] && k->sel[3][batch];
}

uint64_t disc_keep_count(const struct disc_keep *k)
{
    if (k->none)
        return 0;
    uint64_t c = 1;
    for (int i = 0; i < DISC_KEEP_KEYS; i++) {
        uint64_t n = 0;
        for (int j = 0; j < k->n[i]; j++)
            n += k->sel[i][j];
        c *= n;
    }
    return c;
}
