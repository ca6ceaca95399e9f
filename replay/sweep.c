/*
 * sweep: grid files to configs (see sweep.h). Values are kept as JSON text and applied
 * with hw_config_set_json, so a grid value is validated exactly like a config value.
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/io.h"
#include "common/mem.h"
#include "formats/csv.h"
#include "replay/sweep.h"

#define SWEEP_MAX_CONFIGS 10000000u
#define SWEEP_MAX_FILE_BYTES (16u << 20)

struct axis {
    size_t n_keys;
    char **keys;     /* (n_keys) */
    size_t n_vals;
    char **vals;     /* (n_vals, n_keys) JSON text */
    char **origins;  /* (n_vals, n_keys) location for messages */
};

struct sweep {
    struct hw_config *base;
    size_t n_axes;
    struct axis *axes;
    size_t count;
};

void sweep_free(struct sweep *s)
{
    if (!s)
        return;
    for (size_t a = 0; a < s->n_axes; a++) {
        struct axis *x = &s->axes[a];
        for (size_t k = 0; x->keys && k < x->n_keys; k++)
            mem_free(x->keys[k]);
        for (size_t v = 0; x->vals && x->origins && v < x->n_vals * x->n_keys; v++) {
            mem_free(x->vals[v]);
            mem_free(x->origins[v]);
        }
        mem_free(x->keys);
        mem_free(x->vals);
        mem_free(x->origins);
    }
    mem_free(s->axes);
    hw_config_free(s->base);
    mem_free(s);
}

size_t sweep_count(const struct sweep *s)
{
    return s->count;
}

size_t sweep_axes(const struct sweep *s)
{
    return s->n_axes;
}

/* Location text "'grid.json' $.key[2] line L column C" of a grid value. */
static char *origin_text(const char *name, const char *text, const char *const *keys,
                         const size_t *idx, size_t n)
{
    char path[512], where[64] = "";
    size_t k = (size_t)snprintf(path, sizeof path, "$");
    for (size_t i = 0; i < n && k < sizeof path; i++)
        k += keys[i] ? (size_t)snprintf(path + k, sizeof path - k, ".%s", keys[i])
                     : (size_t)snprintf(path + k, sizeof path - k, "[%zu]", idx[i]);
    int line, col;
    if (hw_json_locate(text, keys, idx, n, &line, &col))
        snprintf(where, sizeof where, " line %d column %d", line, col);
    char out[768];
    snprintf(out, sizeof out, "'%s' %s%s", name, path, where);
    return mem_strdup(out);
}

static int grid_err(struct errmsg *e, const char *name, const char *text,
                    const char *const *keys, const size_t *idx, size_t n, const char *what)
{
    char *o = origin_text(name, text, keys, idx, n);
    errmsg_set(e, ERR_CONFIG, "%s (%s)", what, o ? o : name);
    mem_free(o);
    return ERR_CONFIG;
}

/* Adds axis value j for key k: JSON text + origin, validated on a scratch config. */
static int add_value(struct axis *x, size_t j, size_t k, const json_t *v, char *origin,
                     struct hw_config *scratch, struct errmsg *e)
{
    char *t = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT | JSON_REAL_PRECISION(17));
    if (!t || !origin) {
        free(t);
        mem_free(origin);
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    }
    x->vals[j * x->n_keys + k] = mem_strdup(t);
    x->origins[j * x->n_keys + k] = origin;
    free(t);
    if (!x->vals[j * x->n_keys + k])
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    return hw_config_set_json(scratch, x->keys[k], x->vals[j * x->n_keys + k], origin, e);
}

static int axis_alloc(struct axis *x, size_t n_keys, size_t n_vals)
{
    x->n_keys = n_keys;
    x->n_vals = n_vals;
    size_t nv = (n_keys * n_vals) != 0 ? n_keys * n_vals : 1;
    x->keys = mem_calloc(n_keys ? n_keys : 1, sizeof *x->keys);
    x->vals = mem_calloc(nv, sizeof *x->vals);
    x->origins = mem_calloc(nv, sizeof *x->origins);
    return x->keys && x->vals && x->origins ? 0 : ERR_NOMEM;
}

/* A list (or a single value) for one key. */
static int axis_list(struct axis *x, const char *key, const json_t *v, const char *name,
                     const char *text, struct hw_config *scratch, struct errmsg *e)
{
    bool is_list = json_is_array(v);
    size_t n = is_list ? json_array_size(v) : 1;
    if (n == 0) {
        const char *keys[] = {key};
        return grid_err(e, name, text, keys, NULL, 1, "empty list of values");
    }
    if (axis_alloc(x, 1, n) || !(x->keys[0] = mem_strdup(key)))
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    for (size_t j = 0; j < n; j++) {
        const char *keys[] = {key, NULL};
        size_t idx[] = {0, j};
        int rc = add_value(x, j, 0, is_list ? json_array_get(v, j) : v,
                           origin_text(name, text, keys, idx, is_list ? 2 : 1), scratch, e);
        if (rc)
            return rc;
    }
    return 0;
}

/* {"range": [a, b, step]} for one key. */
static int axis_range(struct axis *x, const char *key, const json_t *r, const char *name,
                      const char *text, struct hw_config *scratch, struct errmsg *e)
{
    const char *keys[] = {key, "range", NULL};
    size_t idx[] = {0, 0, 0};
    if (!json_is_array(r) || json_array_size(r) != 3)
        return grid_err(e, name, text, keys, idx, 2, "range must be [first, last, step]");
    for (size_t i = 0; i < 3; i++)
        if (!json_is_number(json_array_get(r, i))) {
            idx[2] = i;
            return grid_err(e, name, text, keys, idx, 3, "range bound is not a number");
        }
    const struct hw_key *k = hw_schema_find(hw_config_schema(scratch), key);
    if (!k)
        return grid_err(e, name, text, keys, idx, 1, "unknown key in grid");
    bool is_int = k->type == HW_INT;
    if (k->type != HW_INT && k->type != HW_FLOAT)
        return grid_err(e, name, text, keys, idx, 2, "range on a key that is not a number");
    if (is_int)
        for (size_t i = 0; i < 3; i++)
            if (!json_is_integer(json_array_get(r, i))) {
                idx[2] = i;
                return grid_err(e, name, text, keys, idx, 3,
                                "range of an integer key needs integer bounds and step");
            }
    double a = json_number_value(json_array_get(r, 0));
    double b = json_number_value(json_array_get(r, 1));
    double st = json_number_value(json_array_get(r, 2));
    if (!(st > 0) || b < a) {
        idx[2] = !(st > 0) ? 2 : 1;
        return grid_err(e, name, text, keys, idx, 3, "range needs step > 0 and last >= first");
    }
    double cnt = floor((b - a) / st + 1e-9) + 1;
    if (cnt > SWEEP_MAX_CONFIGS)
        return grid_err(e, name, text, keys, idx, 2, "range has too many values");
    size_t n = (size_t)cnt;
    if (axis_alloc(x, 1, n) || !(x->keys[0] = mem_strdup(key)))
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    for (size_t j = 0; j < n; j++) {
        json_t *v = is_int ? json_integer(json_integer_value(json_array_get(r, 0)) +
                                          (json_int_t)j * json_integer_value(json_array_get(r, 2)))
                           : json_real(a + (double)j * st);
        char where[64];
        snprintf(where, sizeof where, "value %zu", j);
        char *o = origin_text(name, text, keys, idx, 2);
        char *full = NULL;
        if (o) {
            size_t len = strlen(o) + strlen(where) + 4;
            full = mem_alloc(len);
            if (full)
                snprintf(full, len, "%s %s", o, where);
            mem_free(o);
        }
        int rc = v ? add_value(x, j, 0, v, full, scratch, e)
                   : errmsg_set(e, ERR_NOMEM, "out of memory");
        json_decref(v);
        if (rc)
            return rc;
    }
    return 0;
}

/* {"zip": {"k1": [...], "k2": [...]}}: keys that vary together. */
static int axis_zip(struct axis *x, const char *member, const json_t *z, const char *name,
                    const char *text, struct hw_config *scratch, struct errmsg *e)
{
    const char *keys[] = {member, "zip", NULL, NULL};
    size_t idx[4] = {0};
    if (!json_is_object(z) || json_object_size(z) == 0)
        return grid_err(e, name, text, keys, idx, 2, "zip must be an object of lists");
    size_t n = 0, nk = json_object_size(z);
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)z, k, v) {
        keys[2] = k;
        if (!json_is_array(v) || json_array_size(v) == 0)
            return grid_err(e, name, text, keys, idx, 3, "zip member must be a non-empty list");
        if (n && json_array_size(v) != n)
            return grid_err(e, name, text, keys, idx, 3, "zip lists differ in length");
        n = json_array_size(v);
    }
    if (axis_alloc(x, nk, n))
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    size_t ki = 0;
    json_object_foreach((json_t *)z, k, v) {
        if (!(x->keys[ki] = mem_strdup(k)))
            return errmsg_set(e, ERR_NOMEM, "out of memory");
        keys[2] = k;
        for (size_t j = 0; j < n; j++) {
            idx[3] = j;
            int rc = add_value(x, j, ki, json_array_get(v, j),
                               origin_text(name, text, keys, idx, 4), scratch, e);
            if (rc)
                return rc;
        }
        ki++;
    }
    return 0;
}

int sweep_parse(struct sweep **out, const char *json_text, const char *name,
                const struct hw_config *base, struct errmsg *e)
{
    *out = NULL;
    name = name ? name : "<string>";
    json_error_t je;
    json_t *root = json_loads(json_text, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return errmsg_set(e, ERR_CONFIG, "bad json: %s ('%s' line %d column %d)", je.text, name,
                          je.line, je.column);
    struct hw_config *scratch = NULL;
    struct sweep *s = mem_calloc(1, sizeof *s);
    int rc = 0;
    if (!s || hw_config_clone(&s->base, base) || hw_config_clone(&scratch, base)) {
        rc = errmsg_set(e, ERR_NOMEM, "out of memory");
        goto fail;
    }
    if (!json_is_object(root)) {
        rc = errmsg_set(e, ERR_CONFIG, "grid must be a JSON object ('%s')", name);
        goto fail;
    }
    s->axes = mem_calloc(json_object_size(root) + 1, sizeof *s->axes);
    if (!s->axes) {
        rc = errmsg_set(e, ERR_NOMEM, "out of memory");
        goto fail;
    }
    s->count = 1;
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v) {
        if (!strcmp(key, "doc") || !strcmp(key, "model"))
            continue;
        struct axis *x = &s->axes[s->n_axes++];
        json_t *r = json_is_object(v) ? json_object_get(v, "range") : NULL;
        json_t *z = json_is_object(v) ? json_object_get(v, "zip") : NULL;
        if (json_is_object(v) && json_object_size(v) == 1 && r)
            rc = axis_range(x, key, r, name, json_text, scratch, e);
        else if (json_is_object(v) && json_object_size(v) == 1 && z)
            rc = axis_zip(x, key, z, name, json_text, scratch, e);
        else if (json_is_object(v)) {
            const char *keys[] = {key};
            rc = grid_err(e, name, json_text, keys, NULL, 1,
                          "grid value must be a list, a value, {\"range\": ...} or {\"zip\": ...}");
        } else
            rc = axis_list(x, key, v, name, json_text, scratch, e);
        if (rc)
            goto fail;
        if (s->count > SWEEP_MAX_CONFIGS / x->n_vals) {
            rc = errmsg_set(e, ERR_LIMIT, "grid expands to more than %u configs ('%s')",
                            SWEEP_MAX_CONFIGS, name);
            goto fail;
        }
        s->count *= x->n_vals;
    }
    hw_config_free(scratch);
    json_decref(root);
    *out = s;
    return 0;
fail:
    hw_config_free(scratch);
    json_decref(root);
    sweep_free(s);
    return rc;
}

int sweep_load(struct sweep **out, const char *grid_path, const struct hw_config *base,
               struct errmsg *e)
{
    *out = NULL;
    char *t;
    size_t n;
    int rc = io_read_file(grid_path, SWEEP_MAX_FILE_BYTES, &t, &n, e);
    if (rc == ERR_NOINPUT)
        return errmsg_set(e, ERR_CONFIG, "cannot open grid '%s': %s", grid_path, strerror(errno));
    if (rc == ERR_LIMIT || rc == ERR_IO)
        return errmsg_set(e, ERR_CONFIG, "grid too large or unreadable ('%s')", grid_path);
    if (rc)
        return rc;
    rc = sweep_parse(out, t, grid_path, base, e);
    mem_free(t);
    return rc;
}

int sweep_single(struct sweep **out, const struct hw_config *base)
{
    *out = NULL;
    struct sweep *s = mem_calloc(1, sizeof *s);
    if (!s || hw_config_clone(&s->base, base)) {
        mem_free(s);
        return ERR_NOMEM;
    }
    s->count = 1;
    *out = s;
    return 0;
}

int sweep_config(const struct sweep *s, size_t i, struct hw_config **out, struct errmsg *e)
{
    *out = NULL;
    if (i >= s->count)
        return errmsg_set(e, ERR_USAGE, "config %zu out of %zu", i, s->count);
    struct hw_config *c;
    if (hw_config_clone(&c, s->base))
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    /* Mixed radix, last axis fastest. */
    size_t rem = i;
    for (size_t a = s->n_axes; a-- > 0;) {
        const struct axis *x = &s->axes[a];
        size_t j = rem % x->n_vals;
        rem /= x->n_vals;
        for (size_t k = 0; k < x->n_keys; k++) {
            int rc = hw_config_set_json(c, x->keys[k], x->vals[j * x->n_keys + k],
                                        x->origins[j * x->n_keys + k], e);
            if (rc) {
                hw_config_free(c);
                return rc;
            }
        }
    }
    int rc = hw_config_check(c, e);
    if (rc) {
        char m[sizeof e->text];
        snprintf(m, sizeof m, "%s", errmsg_text(e));
        errmsg_set(e, rc, "sweep config %zu: %s", i, m);
        hw_config_free(c);
        return rc;
    }
    *out = c;
    return 0;
}

void sweep_shard(size_t n, unsigned shard_i, unsigned shard_n, size_t *begin, size_t *end)
{
    if (shard_n == 0 || shard_i == 0 || shard_i > shard_n) {
        *begin = 0;
        *end = n;
        return;
    }
    /* 128-bit free: n <= 10^7 and shard_n <= 2^32 fit in 64 bits. */
    *begin = (size_t)((uint64_t)n * (shard_i - 1) / shard_n);
    *end = (size_t)((uint64_t)n * shard_i / shard_n);
}
