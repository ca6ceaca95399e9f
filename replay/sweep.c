/*
 * sweep: grid files to configs (see sweep.h). List values are kept as JSON text and
 * applied with hw_config_set_json, so a grid value is validated exactly like a config
 * value; range values are computed as text from first, step and index when applied.
 */
#include <errno.h>
#include <inttypes.h>
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
#define SWEEP_NAME_MEMBER "name"

/*
 * One axis of the product. List and zip axes hold their values as JSON text; a range axis
 * holds only first, step and count, and sweep_config computes value j, so a grid's memory
 * does not grow with the length of its ranges.
 */
struct axis {
    size_t n_keys;
    char **keys; /* (n_keys) */
    size_t n_vals;
    char **vals;  /* (n_vals, n_keys) JSON text; NULL for a range */
    char **names; /* (n_vals) a zip's "name" list, or NULL when its rows are not named */
    bool is_range, range_int;
    int64_t i_first; /* integer range: value j = i_first + j * i_step */
    uint64_t i_step;
    double f_first, f_step; /* float range: value j = f_first + j * f_step */
};

struct sweep {
    char *name; /* the grid's file name, for messages (NULL: no grid) */
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
        for (size_t v = 0; x->vals && v < x->n_vals * x->n_keys; v++)
            mem_free(x->vals[v]);
        for (size_t v = 0; x->names && v < x->n_vals; v++)
            mem_free(x->names[v]);
        mem_free(x->keys);
        mem_free(x->vals);
        mem_free(x->names);
    }
    mem_free(s->axes);
    hw_config_free(s->base);
    mem_free(s->name);
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

bool sweep_has_names(const struct sweep *s)
{
    for (size_t a = 0; a < s->n_axes; a++)
        if (s->axes[a].names)
            return true;
    return false;
}

int sweep_name(const struct sweep *s, size_t i, char *buf, size_t n)
{
    size_t len = 0;
    if (n)
        buf[0] = 0;
    if (i >= s->count)
        return ERR_USAGE;
    /* the digit of i on axis a in the mixed radix of sweep_config (last axis fastest) */
    size_t stride = s->count;
    for (size_t a = 0; a < s->n_axes; a++) {
        const struct axis *x = &s->axes[a];
        stride /= x->n_vals;
        if (!x->names)
            continue;
        int k = snprintf(buf + len, n > len ? n - len : 0, "%s%s", len ? SWEEP_NAME_SEP : "",
                         x->names[(i / stride) % x->n_vals]);
        if (k < 0 || len + (size_t)k >= n)
            return ERR_LIMIT;
        len += (size_t)k;
    }
    return 0;
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

static int grid_err(struct errmsg *e, const char *name, const char *text, const char *const *keys,
                    const size_t *idx, size_t n, const char *what)
{
    char *o = origin_text(name, text, keys, idx, n);
    errmsg_set(e, ERR_CONFIG, "%s (%s)", what, o ? o : name);
    mem_free(o);
    return ERR_CONFIG;
}

/*
 * Validates value text t for key on the scratch config. The origin text (a scan of the
 * grid) is only built when the value is bad: building it for every value made long lists
 * quadratic in the file size.
 */
static int check_value(struct hw_config *scratch, const char *key, const char *t, const char *name,
                       const char *text, const char *const *keys, const size_t *idx, size_t n,
                       const char *suffix, struct errmsg *e)
{
    if (hw_config_set_json(scratch, key, t, NULL, NULL) == 0)
        return 0;
    char *o = origin_text(name, text, keys, idx, n);
    char full[800];
    snprintf(full, sizeof full, "%s%s", o ? o : name, suffix ? suffix : "");
    mem_free(o);
    return hw_config_set_json(scratch, key, t, full, e);
}

/* Stores value j of key k as JSON text and validates it. */
static int add_value(struct axis *x, size_t j, size_t k, const json_t *v, struct hw_config *scratch,
                     const char *name, const char *text, const char *const *keys, const size_t *idx,
                     size_t n, struct errmsg *e)
{
    char *t = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT | JSON_REAL_PRECISION(17));
    if (!t)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    x->vals[j * x->n_keys + k] = mem_strdup(t);
    free(t);
    if (!x->vals[j * x->n_keys + k])
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    return check_value(scratch, x->keys[k], x->vals[j * x->n_keys + k], name, text, keys, idx, n,
                       NULL, e);
}

static int axis_alloc(struct axis *x, size_t n_keys, size_t n_vals, bool with_vals)
{
    x->n_keys = n_keys;
    x->n_vals = n_vals;
    size_t nv;
    if (!mem_mul(n_keys, n_vals, &nv))
        return ERR_NOMEM;
    x->keys = mem_calloc(n_keys ? n_keys : 1, sizeof *x->keys);
    if (with_vals)
        x->vals = mem_calloc(nv ? nv : 1, sizeof *x->vals);
    return x->keys && (!with_vals || x->vals) ? 0 : ERR_NOMEM;
}

/* A parsed {"range": [first, last, step]}: count and values, nothing expanded. */
struct range {
    bool is_int;
    int64_t i_first; /* integer keys: exact */
    uint64_t i_step;
    double first, step; /* float keys */
    size_t n;           /* values, <= SWEEP_MAX_CONFIGS */
};

/* first + off, where the true sum is known to lie in [first, last] of a range. */
static int64_t add_offset(int64_t first, uint64_t off)
{
    if (first >= 0)
        return first + (int64_t)off;             /* off <= last - first <= INT64_MAX - first */
    uint64_t neg = (uint64_t)(-(first + 1)) + 1; /* -first, exact */
    return off >= neg ? (int64_t)(off - neg) : first + (int64_t)off;
}

/*
 * Checks a range and counts its values arithmetically: integer ranges in exact 64-bit
 * arithmetic ((last - first) / step + 1, the difference taken unsigned so no bound can
 * overflow), float ranges as floor((last - first)/step + 1e-9) + 1 (sweep.h). Nothing is
 * allocated, so a range of 10^18 values is refused at once.
 */
static int range_parse(struct range *g, const char *key, const json_t *r, const char *name,
                       const char *text, const struct hw_config *scratch, struct errmsg *e)
{
    const char *keys[] = {key, "range", NULL};
    size_t idx[] = {0, 0, 0};
    memset(g, 0, sizeof *g);
    if (!json_is_array(r) || json_array_size(r) != 3)
        return grid_err(e, name, text, keys, idx, 2, "range must be [first, last, step]");
    for (size_t i = 0; i < 3; i++)
        if (!json_is_number(json_array_get(r, i))) {
            idx[2] = i;
            return grid_err(e, name, text, keys, idx, 3, "range bound is not a number");
        }
    const struct hw_key *k = hw_schema_find(hw_config_schema(scratch), key);
    if (!k) {
        grid_err(e, name, text, keys, idx, 1, "unknown key in grid");
        return hw_schema_hint(e, hw_config_schema(scratch), key);
    }
    g->is_int = k->type == HW_INT;
    if (k->type != HW_INT && k->type != HW_FLOAT)
        return grid_err(e, name, text, keys, idx, 2, "range on a key that is not a number");
    if (g->is_int) {
        for (size_t i = 0; i < 3; i++)
            if (!json_is_integer(json_array_get(r, i))) {
                idx[2] = i;
                return grid_err(e, name, text, keys, idx, 3,
                                "range of an integer key needs integer bounds and step");
            }
        int64_t a = json_integer_value(json_array_get(r, 0));
        int64_t b = json_integer_value(json_array_get(r, 1));
        int64_t st = json_integer_value(json_array_get(r, 2));
        if (st <= 0 || b < a) {
            idx[2] = st <= 0 ? 2 : 1;
            return grid_err(e, name, text, keys, idx, 3, "range needs step > 0 and last >= first");
        }
        uint64_t diff = (uint64_t)b - (uint64_t)a; /* exact: 0 <= b - a < 2^64 */
        uint64_t q = diff / (uint64_t)st;
        if (q >= SWEEP_MAX_CONFIGS)
            return grid_err(e, name, text, keys, idx, 2, "range has too many values");
        g->i_first = a;
        g->i_step = (uint64_t)st;
        g->n = (size_t)q + 1; /* the last value, a + q step <= b, is add_offset's to compute */
        return 0;
    }
    double a = json_number_value(json_array_get(r, 0));
    double b = json_number_value(json_array_get(r, 1));
    double st = json_number_value(json_array_get(r, 2));
    if (!(st > 0) || !(b >= a)) {
        idx[2] = !(st > 0) ? 2 : 1;
        return grid_err(e, name, text, keys, idx, 3, "range needs step > 0 and last >= first");
    }
    double q = (b - a) / st; /* inf when b - a overflows: refused below */
    if (!(q + 1e-9 < SWEEP_MAX_CONFIGS))
        return grid_err(e, name, text, keys, idx, 2, "range has too many values");
    g->first = a;
    g->step = st;
    g->n = (size_t)floor(q + 1e-9) + 1;
    return 0;
}

/* Text of range value j (an integer, or a float that reads back exactly). */
static void range_text(const struct axis *x, size_t j, char *buf, size_t n)
{
    if (x->range_int) {
        snprintf(buf, n, "%" PRId64, add_offset(x->i_first, (uint64_t)j * x->i_step));
        return;
    }
    snprintf(buf, n, "%.17g", x->f_first + (double)j * x->f_step);
    if (!strpbrk(buf, ".eEn") && strlen(buf) + 3 <= n)
        strcat(buf, ".0");
}

/* A list (or a single value) for one key. */
static int axis_list(struct axis *x, const char *key, const json_t *v, const char *name,
                     const char *text, struct hw_config *scratch, struct errmsg *e)
{
    bool is_list = json_is_array(v);
    size_t n = is_list ? json_array_size(v) : 1;
    if (axis_alloc(x, 1, n, true) || !(x->keys[0] = mem_strdup(key)))
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    for (size_t j = 0; j < n; j++) {
        const char *keys[] = {key, NULL};
        size_t idx[] = {0, j};
        int rc = add_value(x, j, 0, is_list ? json_array_get(v, j) : v, scratch, name, text, keys,
                           idx, is_list ? 2 : 1, e);
        if (rc)
            return rc;
    }
    return 0;
}

/* {"range": [a, b, step]} for one key: first and last are validated (the schema's checks
 * are type and an interval, so the values between pass when both ends do). */
static int axis_range(struct axis *x, const char *key, const json_t *r, const char *name,
                      const char *text, struct hw_config *scratch, struct errmsg *e)
{
    struct range g;
    int rc = range_parse(&g, key, r, name, text, scratch, e);
    if (rc)
        return rc;
    if (axis_alloc(x, 1, g.n, false) || !(x->keys[0] = mem_strdup(key)))
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    x->is_range = true;
    x->range_int = g.is_int;
    x->i_first = g.i_first;
    x->i_step = g.i_step;
    x->f_first = g.first;
    x->f_step = g.step;
    const char *keys[] = {key, "range"};
    size_t idx[] = {0, 0};
    size_t ends[2] = {0, g.n - 1};
    for (int i = 0; i < (g.n > 1 ? 2 : 1); i++) {
        char t[64], where[48];
        range_text(x, ends[i], t, sizeof t);
        snprintf(where, sizeof where, " value %zu", ends[i]);
        if ((rc = check_value(scratch, key, t, name, text, keys, idx, 2, where, e)))
            return rc;
    }
    return 0;
}

/* A row name and its row, for finding equal names. */
struct name_at {
    const char *s;
    size_t i;
};

static int name_at_cmp(const void *a, const void *b)
{
    const struct name_at *x = a, *y = b;
    int c = strcmp(x->s, y->s);
    return c ? c : (x->i > y->i) - (x->i < y->i);
}

/*
 * The "name" list of a zip: one name per row, each a string of 1 to SWEEP_NAME_MAX bytes
 * without control characters (names go into CSV cells, plot legends and report lines), no
 * two equal.
 */
static int zip_names(struct axis *x, const char *member, const json_t *l, const char *name,
                     const char *text, struct errmsg *e)
{
    const char *keys[] = {member, "zip", SWEEP_NAME_MEMBER, NULL};
    size_t idx[4] = {0};
    if (!(x->names = mem_calloc(x->n_vals + 1, sizeof *x->names)))
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    for (size_t j = 0; j < x->n_vals; j++) {
        const char *t = json_string_value(json_array_get(l, j));
        idx[3] = j;
        bool ok = t && *t && strlen(t) <= SWEEP_NAME_MAX;
        for (const char *c = t; ok && *c; c++)
            ok = (unsigned char)*c >= 0x20 && *c != 0x7f;
        if (!ok)
            return grid_err(e, name, text, keys, idx, 4,
                            "a row name must be a string of 1 to 64 bytes without control "
                            "characters");
        if (!(x->names[j] = mem_strdup(t)))
            return errmsg_set(e, ERR_NOMEM, "out of memory");
    }
    /* no two equal: sorted (name, row) pairs, so a long list is n log n, not n^2 */
    struct name_at *by = mem_calloc(x->n_vals + 1, sizeof *by);
    if (!by)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    for (size_t j = 0; j < x->n_vals; j++)
        by[j] = (struct name_at){x->names[j], j};
    qsort(by, x->n_vals, sizeof *by, name_at_cmp);
    for (size_t j = 1; j < x->n_vals; j++)
        if (!strcmp(by[j - 1].s, by[j].s)) {
            idx[3] = by[j].i; /* the later of the two rows */
            mem_free(by);
            return grid_err(e, name, text, keys, idx, 4, "row name given twice in one zip");
        }
    mem_free(by);
    return 0;
}

/* {"zip": {"k1": [...], "k2": [...]}}: keys that vary together (shape checked already); a
 * member "name" names the rows instead of setting a key. */
static int axis_zip(struct axis *x, const char *member, const json_t *z, size_t n, const char *name,
                    const char *text, struct hw_config *scratch, struct errmsg *e)
{
    const char *keys[] = {member, "zip", NULL, NULL};
    size_t idx[4] = {0};
    const json_t *nl = json_object_get(z, SWEEP_NAME_MEMBER);
    if (axis_alloc(x, json_object_size(z) - (nl ? 1 : 0), n, true))
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    if (nl) {
        if (!x->n_keys)
            return grid_err(e, name, text, keys, idx, 2,
                            "zip of row names sets no key: put \"name\" beside the keys it "
                            "names");
        int rc = zip_names(x, member, nl, name, text, e);
        if (rc)
            return rc;
    }
    size_t ki = 0;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)z, k, v)
    {
        if (!strcmp(k, SWEEP_NAME_MEMBER))
            continue;
        if (!(x->keys[ki] = mem_strdup(k)))
            return errmsg_set(e, ERR_NOMEM, "out of memory");
        keys[2] = k;
        for (size_t j = 0; j < n; j++) {
            idx[3] = j;
            int rc =
                add_value(x, j, ki, json_array_get(v, j), scratch, name, text, keys, idx, 4, e);
            if (rc)
                return rc;
        }
        ki++;
    }
    return 0;
}

/*
 * Number of values of grid member key = v, from its shape alone (array lengths, range
 * arithmetic): nothing is expanded or validated beyond the shape. 0 or ERR_CONFIG.
 */
static int member_size(const char *key, const json_t *v, const char *name, const char *text,
                       const struct hw_config *scratch, size_t *n, struct errmsg *e)
{
    const char *keys[] = {key, "zip", NULL};
    size_t idx[3] = {0};
    json_t *r = json_is_object(v) ? json_object_get(v, "range") : NULL;
    json_t *z = json_is_object(v) ? json_object_get(v, "zip") : NULL;
    if (json_is_object(v) && json_object_size(v) == 1 && r) {
        struct range g;
        int rc = range_parse(&g, key, r, name, text, scratch, e);
        *n = g.n;
        return rc;
    }
    if (json_is_object(v) && json_object_size(v) == 1 && z) {
        if (!json_is_object(z) || json_object_size(z) == 0)
            return grid_err(e, name, text, keys, idx, 2, "zip must be an object of lists");
        *n = 0;
        const char *k;
        json_t *l;
        json_object_foreach(z, k, l)
        {
            keys[2] = k;
            if (!json_is_array(l) || json_array_size(l) == 0)
                return grid_err(e, name, text, keys, idx, 3, "zip member must be a non-empty list");
            if (*n && json_array_size(l) != *n)
                return grid_err(e, name, text, keys, idx, 3, "zip lists differ in length");
            *n = json_array_size(l);
        }
        return 0;
    }
    if (json_is_object(v))
        return grid_err(e, name, text, keys, idx, 1,
                        "grid value must be a list, a value, {\"range\": ...} or {\"zip\": ...}");
    if (!strcmp(key, SWEEP_NAME_MEMBER) && !hw_schema_find(hw_config_schema(scratch), key))
        return grid_err(e, name, text, keys, idx, 1,
                        "row names go in a zip beside the keys they name: "
                        "{\"zip\": {\"name\": [...], \"KEY\": [...]}}");
    *n = json_is_array(v) ? json_array_size(v) : 1;
    if (*n == 0)
        return grid_err(e, name, text, keys, idx, 1, "empty list of values");
    return 0;
}

static bool is_comment(const char *key)
{
    return !strcmp(key, "doc") || !strcmp(key, "model");
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
    if (!s || hw_config_clone(&s->base, base) || hw_config_clone(&scratch, base) ||
        !(s->name = mem_strdup(name))) {
        rc = errmsg_set(e, ERR_NOMEM, "out of memory");
        goto fail;
    }
    if (!json_is_object(root)) {
        rc = errmsg_set(e, ERR_CONFIG, "grid must be a JSON object ('%s')", name);
        goto fail;
    }
    /* The size first, from the shape of every axis: a grid above the limit is refused
     * before any value is expanded (the product is overflow-checked; the message gives it
     * as a float when it does not fit 64 bits). */
    const char *key;
    json_t *v;
    size_t count = 1;
    double approx = 1;
    bool over = false;
    json_object_foreach(root, key, v)
    {
        if (is_comment(key))
            continue;
        size_t n;
        if ((rc = member_size(key, v, name, json_text, scratch, &n, e)))
            goto fail;
        approx *= (double)n;
        if (over || !mem_mul(count, n, &count) || count > SWEEP_MAX_CONFIGS)
            over = true;
    }
    if (over) {
        if (approx < 1.8e19)
            rc = errmsg_set(e, ERR_LIMIT, "grid expands to %.0f configs, more than %u ('%s')",
                            approx, SWEEP_MAX_CONFIGS, name);
        else
            rc = errmsg_set(e, ERR_LIMIT, "grid expands to %.3g configs, more than %u ('%s')",
                            approx, SWEEP_MAX_CONFIGS, name);
        goto fail;
    }
    s->axes = mem_calloc(json_object_size(root) + 1, sizeof *s->axes);
    if (!s->axes) {
        rc = errmsg_set(e, ERR_NOMEM, "out of memory");
        goto fail;
    }
    json_object_foreach(root, key, v)
    {
        if (is_comment(key))
            continue;
        struct axis *x = &s->axes[s->n_axes++];
        json_t *r = json_is_object(v) ? json_object_get(v, "range") : NULL;
        json_t *z = json_is_object(v) ? json_object_get(v, "zip") : NULL;
        size_t n;
        if ((rc = member_size(key, v, name, json_text, scratch, &n, e)))
            goto fail;
        if (r)
            rc = axis_range(x, key, r, name, json_text, scratch, e);
        else if (z)
            rc = axis_zip(x, key, z, n, name, json_text, scratch, e);
        else
            rc = axis_list(x, key, v, name, json_text, scratch, e);
        if (rc)
            goto fail;
    }
    /* the longest name a config can get fits every caller's buffer */
    size_t longest = 0;
    for (size_t a = 0; a < s->n_axes; a++) {
        size_t m = 0;
        for (size_t j = 0; s->axes[a].names && j < s->axes[a].n_vals; j++)
            m = strlen(s->axes[a].names[j]) > m ? strlen(s->axes[a].names[j]) : m;
        longest += m ? m + (longest ? strlen(SWEEP_NAME_SEP) : 0) : 0;
    }
    if (longest > SWEEP_NAME_TOTAL_MAX) {
        rc = errmsg_set(e, ERR_CONFIG,
                        "row names of the grid's zips join to up to %zu bytes, more than %d "
                        "('%s')",
                        longest, SWEEP_NAME_TOTAL_MAX, name);
        goto fail;
    }
    s->count = count;
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

/*
 * A cross-key check failed on config i (message in e): when the key it is about is on an
 * axis, say which value of the grid made it, and where ("dpu_count = 48, value 1 of its
 * axis ('g.json' $.dpu_count[1] line 1 column 22)"); else the base config's file. j[a] is
 * the config's value index on axis a.
 */
static int check_err(const struct sweep *s, const struct hw_config *c, size_t i, const size_t *j,
                     int rc, struct errmsg *e)
{
    char m[sizeof e->text];
    snprintf(m, sizeof m, "%s", errmsg_text(e));
    const struct hw_key *k = hw_schema_message_key(hw_config_schema(c), m);
    for (size_t a = 0; k && s->name && a < s->n_axes; a++)
        for (size_t kk = 0; kk < s->axes[a].n_keys; kk++) {
            const struct axis *x = &s->axes[a];
            if (strcmp(x->keys[kk], k->key))
                continue;
            char val[64], where[400] = "";
            if (x->is_range)
                range_text(x, j[a], val, sizeof val);
            else
                snprintf(val, sizeof val, "%s", x->vals[j[a] * x->n_keys + kk]);
            char *text = NULL;
            size_t len;
            const char *keys[2] = {k->key, NULL};
            size_t idx[2] = {0, j[a]};
            int line, col;
            if (!x->is_range && x->n_keys == 1 &&
                !io_read_file(s->name, SWEEP_MAX_FILE_BYTES, &text, &len, NULL)) {
                if (hw_json_locate(text, keys, idx, 2, &line, &col))
                    snprintf(where, sizeof where, " $.%s[%zu] line %d column %d", k->key, j[a],
                             line, col);
                else if (hw_json_locate(text, keys, idx, 1, &line, &col))
                    snprintf(where, sizeof where, " $.%s line %d column %d", k->key, line, col);
            }
            mem_free(text);
            return errmsg_set(e, rc,
                              "sweep config %zu: %s (%s = %s, value %zu of its axis in '%s'%s)", i,
                              m, k->key, val, j[a], s->name, where);
        }
    const char *path = hw_config_path(c);
    return errmsg_set(e, rc, "sweep config %zu: %s%s%s%s", i, m, *path ? " ('" : "", path,
                      *path ? "')" : "");
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
    /* each axis's value index, for a message; on the stack for the usual few axes */
    size_t js_small[32];
    size_t *js = s->n_axes <= 32 ? js_small : mem_calloc(s->n_axes, sizeof *js);
    if (!js) {
        hw_config_free(c);
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    }
    for (size_t a = s->n_axes; a-- > 0;) {
        const struct axis *x = &s->axes[a];
        size_t j = rem % x->n_vals;
        js[a] = j;
        rem /= x->n_vals;
        char t[64];
        if (x->is_range)
            range_text(x, j, t, sizeof t);
        for (size_t k = 0; k < x->n_keys; k++) {
            /* values were validated at load; the key names the value in a message */
            int rc = hw_config_set_json(c, x->keys[k], x->is_range ? t : x->vals[j * x->n_keys + k],
                                        NULL, e);
            if (rc) {
                if (js != js_small)
                    mem_free(js);
                hw_config_free(c);
                return rc;
            }
        }
    }
    const struct hw_schema *schema = hw_config_schema(c);
    int rc = schema->check ? schema->check(c, e) : 0;
    if (rc) {
        check_err(s, c, i, js, rc, e);
        if (js != js_small)
            mem_free(js);
        hw_config_free(c);
        return rc;
    }
    if (js != js_small)
        mem_free(js);
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
