/*
 * hw_config: JSON hardware configs validated against a schema written in C (see
 * hw_config.h). jansson parses; a small scanner over the original text finds the line and
 * column of a JSON path, because jansson keeps positions only for syntax errors.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/io.h"
#include "common/mem.h"
#include "common/sha256.h"
#include "common/suggest.h"
#include "formats/csv.h"
#include "replay/hw_config.h"
#include "replay/model_schema.h"

#define HW_MAX_FILE_BYTES (16u << 20) /* a config is small; bound what we read */
#define HW_MAX_EXTENDS 16

struct hw_value {
    int64_t i;
    double f;
    bool b;
    char *s;
};

struct hw_config {
    const struct hw_schema *schema;
    struct hw_value *vals; /* (schema->n_keys) */
    char *path;
    char *canonical; /* cached; NULL when stale */
    char hash[17];
};

/* ---- locating a JSON path in the source text ---- */

struct path_comp {
    const char *key; /* object member, or NULL for an array index */
    size_t idx;
};

struct scan {
    const char *s;
    size_t n, i;
    int line, col;
};

static void sc_adv(struct scan *sc)
{
    if (sc->i < sc->n) {
        if (sc->s[sc->i] == '\n') {
            sc->line++;
            sc->col = 1;
        } else {
            sc->col++;
        }
        sc->i++;
    }
}

static void sc_ws(struct scan *sc)
{
    while (sc->i < sc->n && strchr(" \t\r\n", sc->s[sc->i]))
        sc_adv(sc);
}

/* Reads a string token into out (escapes other than \" and \\ kept raw). */
static bool sc_string(struct scan *sc, char *out, size_t n)
{
    size_t k = 0;
    if (sc->i >= sc->n || sc->s[sc->i] != '"')
        return false;
    sc_adv(sc);
    while (sc->i < sc->n && sc->s[sc->i] != '"') {
        char ch = sc->s[sc->i];
        if (ch == '\\' && sc->i + 1 < sc->n) {
            sc_adv(sc);
            ch = sc->s[sc->i];
            if (ch != '"' && ch != '\\' && k + 1 < n)
                out[k++] = '\\';
        }
        if (k + 1 < n)
            out[k++] = ch;
        sc_adv(sc);
    }
    if (n)
        out[k] = 0;
    if (sc->i >= sc->n)
        return false;
    sc_adv(sc);
    return true;
}

/* A member's "key" and its ':' (the key into out); false when they are not there. */
static bool sc_key(struct scan *sc, char *out, size_t n)
{
    if (!sc_string(sc, out, n))
        return false;
    sc_ws(sc);
    if (sc->i >= sc->n || sc->s[sc->i] != ':')
        return false;
    sc_adv(sc);
    return true;
}

static bool sc_skip(struct scan *sc, int depth);

/* Passes over a member's value or an element that is not the one looked for, and the ','
 * after it; false at the end of the object or array, or on bad text. */
static bool sc_skip_item(struct scan *sc)
{
    if (!sc_skip(sc, 0))
        return false;
    sc_ws(sc);
    if (sc->i >= sc->n || sc->s[sc->i] != ',')
        return false;
    sc_adv(sc);
    return true;
}

static bool sc_skip(struct scan *sc, int depth)
{
    char tmp[2];
    if (depth > 64)
        return false;
    sc_ws(sc);
    if (sc->i >= sc->n)
        return false;
    char ch = sc->s[sc->i];
    if (ch == '"')
        return sc_string(sc, tmp, sizeof tmp);
    if (ch == '{' || ch == '[') {
        char close = ch == '{' ? '}' : ']';
        sc_adv(sc);
        sc_ws(sc);
        if (sc->i < sc->n && sc->s[sc->i] == close) {
            sc_adv(sc);
            return true;
        }
        for (;;) {
            if (ch == '{') {
                sc_ws(sc);
                if (!sc_key(sc, tmp, sizeof tmp))
                    return false;
            }
            if (!sc_skip(sc, depth + 1))
                return false;
            sc_ws(sc);
            if (sc->i >= sc->n)
                return false;
            if (sc->s[sc->i] == ',') {
                sc_adv(sc);
                continue;
            }
            if (sc->s[sc->i] == close) {
                sc_adv(sc);
                return true;
            }
            return false;
        }
    }
    while (sc->i < sc->n && !strchr(",}] \t\r\n", sc->s[sc->i]))
        sc_adv(sc);
    return true;
}

/* Position of the member key (or array element) named by comps; false if not found. */
static bool sc_find(struct scan *sc, const struct path_comp *c, size_t nc, int *line, int *col)
{
    sc_ws(sc);
    if (nc == 0) {
        *line = sc->line;
        *col = sc->col;
        return true;
    }
    if (sc->i >= sc->n)
        return false;
    char ch = sc->s[sc->i];
    if (ch == '{' && c->key) {
        sc_adv(sc);
        for (;;) {
            sc_ws(sc);
            if (sc->i < sc->n && sc->s[sc->i] == '}')
                return false;
            int kl = sc->line, kc = sc->col;
            char key[256];
            if (!sc_key(sc, key, sizeof key))
                return false;
            if (!strcmp(key, c->key)) {
                if (nc == 1) {
                    *line = kl;
                    *col = kc;
                    return true;
                }
                return sc_find(sc, c + 1, nc - 1, line, col);
            }
            if (!sc_skip_item(sc))
                return false;
        }
    }
    if (ch == '[' && !c->key) {
        sc_adv(sc);
        for (size_t k = 0;; k++) {
            sc_ws(sc);
            if (sc->i < sc->n && sc->s[sc->i] == ']')
                return false;
            if (k == c->idx)
                return sc_find(sc, c + 1, nc - 1, line, col);
            if (!sc_skip_item(sc))
                return false;
        }
    }
    return false;
}

/* Path text "$.a.b[2]" of components. */
static void path_text(const struct path_comp *c, size_t nc, char *out, size_t n)
{
    size_t k = (size_t)snprintf(out, n, "$");
    for (size_t i = 0; i < nc && k < n; i++) {
        if (c[i].key)
            k += (size_t)snprintf(out + k, n - k, ".%s", c[i].key);
        else
            k += (size_t)snprintf(out + k, n - k, "[%zu]", c[i].idx);
    }
}

/* Where a value came from, for messages: file, its text, the path to the value. */
struct origin {
    const char *file;
    const char *text;  /* may be NULL (no line/column then) */
    const char *label; /* used instead of file + path when not NULL (hw_config_set_json) */
    struct path_comp comps[16];
    size_t nc;
};

static int origin_err(const struct origin *o, struct errmsg *e, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int origin_err(const struct origin *o, struct errmsg *e, const char *fmt, ...)
{
    char what[256], path[256], where[128] = "";
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (o->label)
        return errmsg_set(e, ERR_CONFIG, "%s (%s)", what, o->label);
    path_text(o->comps, o->nc, path, sizeof path);
    if (o->text) {
        struct scan sc = {o->text, strlen(o->text), 0, 1, 1};
        int line, col;
        if (sc_find(&sc, o->comps, o->nc, &line, &col))
            snprintf(where, sizeof where, " line %d column %d", line, col);
    }
    return errmsg_set(e, ERR_CONFIG, "%s at %s ('%s'%s)", what, path, o->file, where);
}

int hw_schema_hint(struct errmsg *e, const struct hw_schema *s, const char *key)
{
    if (!e)
        return ERR_CONFIG;
    struct suggest sg;
    suggest_init(&sg, key, strlen(key));
    for (size_t i = 0; i < s->n_keys; i++)
        suggest_add(&sg, s->keys[i].key);
    const char *best = suggest_result(&sg);
    char m[sizeof e->text];
    snprintf(m, sizeof m, "%s", errmsg_text(e));
    if (best)
        return errmsg_set(e, e->code, "%s; did you mean '%s'?", m, best);
    return errmsg_set(e, e->code, "%s; 'acceltrace config show %s' lists the keys", m, s->model);
}

/* ---- values ---- */

static const char *json_type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "object";
    case JSON_ARRAY:
        return "array";
    case JSON_STRING:
        return "string";
    case JSON_INTEGER:
        return "integer";
    case JSON_REAL:
        return "number";
    case JSON_TRUE:
    case JSON_FALSE:
        return "boolean";
    case JSON_NULL:
        return "null";
    }
    return "value";
}

static bool choice_ok(const char *choices, const char *s)
{
    if (!choices)
        return true;
    size_t n = strlen(s);
    const char *p = choices;
    while (*p) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == n && !strncmp(p, s, n))
            return true;
        if (!bar)
            break;
        p = bar + 1;
    }
    return false;
}

/* Validates v for key k and stores it in *out. */
static int set_value(const struct hw_key *k, const json_t *v, struct hw_value *out,
                     const struct origin *o, struct errmsg *e)
{
    char lo[40], hi[40], got[40];
    switch (k->type) {
    case HW_INT: {
        if (!json_is_integer(v))
            return origin_err(o, e, "wrong type for '%s': expected integer, got %s", k->key,
                              json_type_name(v));
        json_int_t x = json_integer_value(v);
        if ((double)x < k->min || (double)x > k->max) {
            csv_format_f64(k->min, lo, sizeof lo);
            csv_format_f64(k->max, hi, sizeof hi);
            return origin_err(o, e, "value %" PRId64 " of '%s' out of range [%s, %s]", (int64_t)x,
                              k->key, lo, hi);
        }
        out->i = (int64_t)x;
        out->f = (double)x;
        return 0;
    }
    case HW_FLOAT: {
        if (!json_is_number(v))
            return origin_err(o, e, "wrong type for '%s': expected number, got %s", k->key,
                              json_type_name(v));
        double x = json_number_value(v);
        if (!(x >= k->min && x <= k->max)) {
            csv_format_f64(k->min, lo, sizeof lo);
            csv_format_f64(k->max, hi, sizeof hi);
            csv_format_f64(x, got, sizeof got);
            return origin_err(o, e, "value %s of '%s' out of range [%s, %s]", got, k->key, lo, hi);
        }
        out->f = x;
        return 0;
    }
    case HW_BOOL:
        if (!json_is_boolean(v))
            return origin_err(o, e, "wrong type for '%s': expected boolean, got %s", k->key,
                              json_type_name(v));
        out->b = json_is_true(v);
        return 0;
    case HW_STRING: {
        if (!json_is_string(v))
            return origin_err(o, e, "wrong type for '%s': expected string, got %s", k->key,
                              json_type_name(v));
        const char *s = json_string_value(v);
        if (!choice_ok(k->choices, s))
            return origin_err(o, e, "value '%s' of '%s' is not one of %s", s, k->key, k->choices);
        char *d = mem_strdup(s);
        if (!d)
            return errmsg_set(e, ERR_NOMEM, "out of memory");
        mem_free(out->s);
        out->s = d;
        return 0;
    }
    }
    return errmsg_set(e, ERR_INTERNAL, "bad schema type for '%s'", k->key);
}

const struct hw_key *hw_schema_find(const struct hw_schema *s, const char *key)
{
    for (size_t i = 0; i < s->n_keys; i++)
        if (!strcmp(s->keys[i].key, key))
            return &s->keys[i];
    return NULL;
}

static bool schema_has_prefix(const struct hw_schema *s, const char *prefix)
{
    size_t n = strlen(prefix);
    for (size_t i = 0; i < s->n_keys; i++)
        if (!strncmp(s->keys[i].key, prefix, n) && s->keys[i].key[n] == '.')
            return true;
    return false;
}

static void invalidate(struct hw_config *c)
{
    mem_free(c->canonical);
    c->canonical = NULL;
    c->hash[0] = 0;
}

int hw_config_defaults(struct hw_config **out, const struct hw_schema *schema)
{
    *out = NULL;
    struct hw_config *c = mem_calloc(1, sizeof *c);
    if (!c)
        return ERR_NOMEM;
    c->schema = schema;
    c->path = mem_strdup("");
    c->vals = mem_calloc(schema->n_keys ? schema->n_keys : 1, sizeof *c->vals);
    if (!c->vals || !c->path)
        goto fail;
    for (size_t i = 0; i < schema->n_keys; i++) {
        const struct hw_key *k = &schema->keys[i];
        struct hw_value *v = &c->vals[i];
        v->i = (int64_t)k->def;
        v->f = k->def;
        v->b = k->def != 0;
        if (k->type == HW_STRING && !(v->s = mem_strdup(k->def_str ? k->def_str : "")))
            goto fail;
    }
    *out = c;
    return 0;
fail:
    hw_config_free(c);
    return ERR_NOMEM;
}

void hw_config_free(struct hw_config *c)
{
    if (!c)
        return;
    if (c->vals)
        for (size_t i = 0; i < c->schema->n_keys; i++)
            mem_free(c->vals[i].s);
    mem_free(c->vals);
    mem_free(c->path);
    mem_free(c->canonical);
    mem_free(c);
}

int hw_config_clone(struct hw_config **out, const struct hw_config *c)
{
    struct hw_config *d;
    int rc = hw_config_defaults(&d, c->schema);
    if (rc)
        return rc;
    for (size_t i = 0; i < c->schema->n_keys; i++) {
        char *s = d->vals[i].s;
        d->vals[i] = c->vals[i];
        d->vals[i].s = NULL;
        mem_free(s);
        if (c->vals[i].s && !(d->vals[i].s = mem_strdup(c->vals[i].s))) {
            hw_config_free(d);
            return ERR_NOMEM;
        }
    }
    mem_free(d->path);
    if (!(d->path = mem_strdup(c->path))) {
        hw_config_free(d);
        return ERR_NOMEM;
    }
    *out = d;
    return 0;
}

/* Applies the members of object obj (at path o) to c; prefix is the dotted key so far. */
static int apply_object(struct hw_config *c, const json_t *obj, const char *prefix,
                        struct origin *o, struct errmsg *e)
{
    const char *name;
    json_t *v;
    json_object_foreach((json_t *)obj, name, v)
    {
        if (!prefix && (!strcmp(name, "model") || !strcmp(name, "extends") || !strcmp(name, "doc")))
            continue;
        if (o->nc >= sizeof o->comps / sizeof o->comps[0])
            return origin_err(o, e, "config nested too deeply");
        char key[256];
        snprintf(key, sizeof key, "%s%s%s", prefix ? prefix : "", prefix ? "." : "", name);
        o->comps[o->nc++] = (struct path_comp){name, 0};
        int rc = 0;
        const struct hw_key *k = hw_schema_find(c->schema, key);
        if (k) {
            rc = set_value(k, v, &c->vals[k - c->schema->keys], o, e);
        } else if (json_is_object(v) && schema_has_prefix(c->schema, key)) {
            rc = apply_object(c, v, key, o, e);
        } else {
            origin_err(o, e, "unknown key '%s' for model '%s'", key, c->schema->model);
            rc = hw_schema_hint(e, c->schema, key);
        }
        o->nc--;
        if (rc)
            return rc;
    }
    return 0;
}

static int read_text(const char *path, char **out, struct errmsg *e)
{
    *out = NULL;
    char *t;
    size_t n;
    int rc = io_read_file(path, HW_MAX_FILE_BYTES, &t, &n, e);
    if (rc == ERR_NOINPUT)
        return errmsg_set(e, ERR_CONFIG, "cannot open config '%s': %s", path, strerror(errno));
    if (rc == ERR_LIMIT || rc == ERR_IO)
        return errmsg_set(e, ERR_CONFIG, "config too large or unreadable ('%s')", path);
    if (rc)
        return rc;
    *out = t;
    return 0;
}

/* Joins the folder of `from` with rel (unless rel is absolute). */
static void resolve_rel(const char *from, const char *rel, char *out, size_t n)
{
    const char *slash = from ? strrchr(from, '/') : NULL;
    if (rel[0] == '/' || !slash)
        snprintf(out, n, "%s", rel);
    else
        snprintf(out, n, "%.*s/%s", (int)(slash - from), from, rel);
}

/* The member key of root into *out (NULL when absent), o's path set to it when present;
 * 0, or ERR_CONFIG "wrong type for 'KEY'" when it is not a string. */
static int string_member(json_t *root, const char *key, struct origin *o, struct errmsg *e,
                         json_t **out)
{
    *out = json_object_get(root, key);
    if (!*out)
        return 0;
    o->comps[0] = (struct path_comp){key, 0};
    o->nc = 1;
    if (!json_is_string(*out))
        return origin_err(o, e, "wrong type for '%s': expected string, got %s", key,
                          json_type_name(*out));
    return 0;
}

/*
 * Loads text (named name, a file path when is_file) into *cfg, creating it from the schema
 * found by "model" when *cfg is NULL. chain holds the files being loaded (cycle check).
 */
static int load_text(struct hw_config **cfg, const char *text, const char *name, bool is_file,
                     const struct hw_schema *schema, const char **chain, int depth,
                     struct errmsg *e)
{
    json_error_t je;
    json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, &je);
    int rc = 0;
    if (!root)
        return errmsg_set(e, ERR_CONFIG, "bad json: %s ('%s' line %d column %d)", je.text, name,
                          je.line, je.column);
    struct origin o = {.file = name, .text = text};
    if (!json_is_object(root)) {
        rc = origin_err(&o, e, "config must be a JSON object");
        goto done;
    }
    json_t *jm, *jx;
    if ((rc = string_member(root, "model", &o, e, &jm)) != 0)
        goto done;
    if (jm) {
        const char *mn = json_string_value(jm);
        const struct hw_schema *ms = model_registry_schema(mn);
        if (schema && strcmp(schema->model, mn)) {
            rc = origin_err(&o, e, "config is for model '%s', not '%s'", mn, schema->model);
            goto done;
        }
        if (!schema && !ms) {
            const char *near = model_registry_closest(mn);
            rc = near ? origin_err(&o, e, "unknown model '%s'; did you mean '%s'?", mn, near)
                      : origin_err(&o, e, "unknown model '%s' (see 'acceltrace config list')", mn);
            goto done;
        }
        if (*cfg && strcmp((*cfg)->schema->model, mn)) {
            rc = origin_err(&o, e, "extends a config of model '%s' from model '%s'",
                            (*cfg)->schema->model, mn);
            goto done;
        }
        if (!schema)
            schema = ms;
        o.nc = 0;
    }
    if ((rc = string_member(root, "extends", &o, e, &jx)) != 0)
        goto done;
    if (jx) {
        if (depth >= HW_MAX_EXTENDS) {
            rc = origin_err(&o, e, "extends chain longer than %d", HW_MAX_EXTENDS);
            goto done;
        }
        char base[4096];
        resolve_rel(is_file ? name : NULL, json_string_value(jx), base, sizeof base);
        char real[PATH_MAX];
        if (!realpath(base, real)) {
            rc = origin_err(&o, e, "missing extends target '%s'", base);
            goto done;
        }
        for (int i = 0; i < depth; i++)
            if (chain[i] && !strcmp(chain[i], real)) {
                rc = origin_err(&o, e, "extends cycle through '%s'", base);
                goto done;
            }
        char *btext;
        struct errmsg be = {0};
        if (read_text(base, &btext, &be)) {
            rc = be.code == ERR_USAGE /* a FIFO or device: io_open_input refused it */
                     ? origin_err(&o, e, "extends target '%s' is not a regular file", base)
                     : origin_err(&o, e, "missing extends target '%s'", base);
            goto done;
        }
        chain[depth] = real;
        /* The base decides the model when this file has none. */
        rc = load_text(cfg, btext, base, true, schema, chain, depth + 1, e);
        mem_free(btext);
        if (rc)
            goto done;
        if (!schema)
            schema = (*cfg)->schema;
        o.nc = 0;
    }
    if (!schema) {
        rc = origin_err(&o, e, "config names no model (add \"model\": NAME)");
        goto done;
    }
    if (!*cfg && (rc = hw_config_defaults(cfg, schema))) {
        rc = errmsg_set(e, rc, "out of memory");
        goto done;
    }
    rc = apply_object(*cfg, root, NULL, &o, e);
done:
    json_decref(root);
    return rc;
}

const struct hw_key *hw_schema_message_key(const struct hw_schema *s, const char *msg)
{
    const struct hw_key *best = NULL;
    size_t best_n = 0;
    for (size_t i = 0; i < s->n_keys; i++) {
        size_t n = strlen(s->keys[i].key);
        if (n <= best_n || strncmp(msg, s->keys[i].key, n))
            continue;
        char next = msg[n];
        if (!(next == '_' || next == '.' || (next >= 'a' && next <= 'z') ||
              (next >= 'A' && next <= 'Z') || (next >= '0' && next <= '9'))) {
            best = &s->keys[i];
            best_n = n;
        }
    }
    return best;
}

/*
 * Where the value of dotted key was set: in text (named name; a file when is_file), else in
 * the file it extends, and so on. Writes "at $.a.b ('file' line L column C)" to out; false
 * when no file of the chain sets the key (its default then holds).
 */
static bool key_origin(const char *text, const char *name, bool is_file, const char *key, int depth,
                       char *out, size_t n)
{
    struct path_comp comps[16];
    char dotted[256];
    size_t nc = 0;
    snprintf(dotted, sizeof dotted, "%s", key);
    for (char *p = dotted; p && nc < 16; nc++) {
        char *dot = strchr(p, '.');
        if (dot)
            *dot = 0;
        comps[nc] = (struct path_comp){p, 0};
        p = dot ? dot + 1 : NULL;
    }
    struct scan sc = {text, strlen(text), 0, 1, 1};
    int line, col;
    if (sc_find(&sc, comps, nc, &line, &col)) {
        char path[300];
        path_text(comps, nc, path, sizeof path);
        snprintf(out, n, "at %s ('%s' line %d column %d)", path, name, line, col);
        return true;
    }
    if (depth >= HW_MAX_EXTENDS)
        return false;
    json_t *root = json_loads(text, 0, NULL);
    const char *ext = json_string_value(json_object_get(root, "extends"));
    bool found = false;
    if (ext) {
        char base[4096];
        char *btext = NULL;
        struct errmsg be = {0};
        resolve_rel(is_file ? name : NULL, ext, base, sizeof base);
        if (!read_text(base, &btext, &be))
            found = key_origin(btext, base, true, key, depth + 1, out, n);
        mem_free(btext);
    }
    json_decref(root);
    return found;
}

/*
 * Runs the schema's cross-key check on c, loaded from text (named name). A failure's
 * message gets the position of the key it names (message_key) where a file of the chain
 * sets it, else the file's name (hw_schema_message_key finds the key). 0 or ERR_CONFIG.
 */
static int check_loaded(const struct hw_config *c, const char *text, const char *name, bool is_file,
                        struct errmsg *e)
{
    if (!c->schema->check)
        return 0;
    int rc = c->schema->check(c, e);
    if (!rc)
        return 0;
    char m[sizeof e->text], where[400];
    snprintf(m, sizeof m, "%s", errmsg_text(e));
    const struct hw_key *k = hw_schema_message_key(c->schema, m);
    if (k && key_origin(text, name, is_file, k->key, 0, where, sizeof where))
        return errmsg_set(e, rc, "%s %s", m, where);
    return errmsg_set(e, rc, "%s ('%s')", m, name);
}

int hw_config_parse(struct hw_config **out, const char *json_text, const char *name,
                    const struct hw_schema *schema, struct errmsg *e)
{
    *out = NULL;
    const char *chain[HW_MAX_EXTENDS + 1] = {NULL};
    struct hw_config *c = NULL;
    name = name ? name : "<string>";
    int rc = load_text(&c, json_text, name, false, schema, chain + 1, 0, e);
    if (!rc)
        rc = check_loaded(c, json_text, name, false, e);
    if (rc) {
        hw_config_free(c);
        return rc;
    }
    *out = c;
    return 0;
}

int hw_config_load(struct hw_config **out, const char *path, const struct hw_schema *schema,
                   struct errmsg *e)
{
    *out = NULL;
    char *text;
    int rc = read_text(path, &text, e);
    if (rc)
        return rc;
    char real[PATH_MAX];
    const char *chain[HW_MAX_EXTENDS + 1] = {realpath(path, real) ? real : path};
    struct hw_config *c = NULL;
    rc = load_text(&c, text, path, true, schema, chain, 1, e);
    if (!rc)
        rc = check_loaded(c, text, path, true, e);
    mem_free(text);
    if (!rc) {
        mem_free(c->path);
        if (!(c->path = mem_strdup(path)))
            rc = errmsg_set(e, ERR_NOMEM, "out of memory");
    }
    if (rc) {
        hw_config_free(c);
        return rc;
    }
    *out = c;
    return 0;
}

int hw_config_set_json(struct hw_config *c, const char *key, const char *json_value,
                       const char *origin, struct errmsg *e)
{
    struct origin o = {.label = origin ? origin : key};
    const struct hw_key *k = hw_schema_find(c->schema, key);
    if (!k) {
        origin_err(&o, e, "unknown key '%s' for model '%s'", key, c->schema->model);
        return hw_schema_hint(e, c->schema, key);
    }
    json_error_t je;
    json_t *v = json_loads(json_value, JSON_DECODE_ANY, &je);
    if (!v)
        return origin_err(&o, e, "bad json value for '%s': %s", key, je.text);
    int rc = set_value(k, v, &c->vals[k - c->schema->keys], &o, e);
    json_decref(v);
    invalidate(c);
    return rc;
}

int hw_config_check(const struct hw_config *c, struct errmsg *e)
{
    if (!c->schema->check)
        return 0;
    int rc = c->schema->check(c, e);
    if (rc && c->path && c->path[0]) {
        char m[sizeof e->text];
        snprintf(m, sizeof m, "%s", errmsg_text(e));
        errmsg_set(e, rc, "%s ('%s')", m, c->path);
    }
    return rc;
}

const struct hw_schema *hw_config_schema(const struct hw_config *c)
{
    return c->schema;
}

const char *hw_config_path(const struct hw_config *c)
{
    return c->path ? c->path : "";
}

static const struct hw_value *get(const struct hw_config *c, const char *key, enum hw_type t)
{
    const struct hw_key *k = hw_schema_find(c->schema, key);
    /* A model asking for a key its own schema lacks (or with another type) is a bug. */
    bool ok = k && (k->type == t || (t == HW_FLOAT && k->type == HW_INT));
    assert(ok && "hw_config getter: key not in the model's schema with this type");
    if (!ok)
        abort();
    return &c->vals[k - c->schema->keys];
}

int64_t hw_config_int(const struct hw_config *c, const char *key)
{
    return get(c, key, HW_INT)->i;
}

double hw_config_float(const struct hw_config *c, const char *key)
{
    return get(c, key, HW_FLOAT)->f;
}

bool hw_config_bool(const struct hw_config *c, const char *key)
{
    return get(c, key, HW_BOOL)->b;
}

const char *hw_config_str(const struct hw_config *c, const char *key)
{
    return get(c, key, HW_STRING)->s;
}

void hw_config_value_text(const struct hw_config *c, size_t i, char *buf, size_t n)
{
    const struct hw_key *k = &c->schema->keys[i];
    const struct hw_value *v = &c->vals[i];
    switch (k->type) {
    case HW_INT:
        snprintf(buf, n, "%" PRId64, v->i);
        break;
    case HW_FLOAT:
        csv_format_f64(v->f, buf, n);
        break;
    case HW_BOOL:
        snprintf(buf, n, "%s", v->b ? "true" : "false");
        break;
    case HW_STRING:
        snprintf(buf, n, "%s", v->s ? v->s : "");
        break;
    }
}

const char *hw_config_canonical(const struct hw_config *c)
{
    struct hw_config *m = (struct hw_config *)c; /* cache only */
    if (m->canonical)
        return m->canonical;
    json_t *o = json_object();
    if (!o)
        return NULL;
    json_object_set_new(o, "model", json_string(c->schema->model));
    for (size_t i = 0; i < c->schema->n_keys; i++) {
        const struct hw_key *k = &c->schema->keys[i];
        const struct hw_value *v = &c->vals[i];
        json_t *j = k->type == HW_INT     ? json_integer((json_int_t)v->i)
                    : k->type == HW_FLOAT ? json_real(v->f)
                    : k->type == HW_BOOL  ? json_boolean(v->b)
                                          : json_string(v->s ? v->s : "");
        json_object_set_new(o, k->key, j);
    }
    char *s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(17));
    json_decref(o);
    if (!s)
        return NULL;
    m->canonical = mem_strdup(s);
    free(s);
    if (m->canonical) {
        char hex[65];
        sha256_hex(m->canonical, strlen(m->canonical), hex);
        memcpy(m->hash, hex, 16);
        m->hash[16] = 0;
    }
    return m->canonical;
}

const char *hw_config_hash(const struct hw_config *c)
{
    if (!c->hash[0])
        hw_config_canonical(c);
    return c->hash;
}

bool hw_json_locate(const char *text, const char *const *keys, const size_t *idx, size_t n,
                    int *line, int *col)
{
    struct path_comp c[16];
    if (n > 16 || !text)
        return false;
    for (size_t i = 0; i < n; i++)
        c[i] = (struct path_comp){keys[i], keys[i] ? 0 : idx[i]};
    struct scan sc = {text, strlen(text), 0, 1, 1};
    return sc_find(&sc, c, n, line, col);
}
