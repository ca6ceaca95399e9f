/*
 * energy: energy tables (see energy.h and docs/models.md "Energy tables").
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/io.h"
#include "common/mem.h"
#include "formats/csv.h"
#include "replay/energy.h"

void energy_table_release(struct energy_table *t)
{
    if (!t)
        return;
    for (size_t i = 0; t->events && i < t->n_events; i++) {
        mem_free(t->events[i].count);
        mem_free(t->events[i].component);
    }
    mem_free(t->events);
    for (size_t i = 0; t->components && i < t->n_components; i++)
        mem_free(t->components[i]);
    mem_free(t->components);
    mem_free(t->path);
    memset(t, 0, sizeof *t);
}

static int add_component(struct energy_table *t, const char *c)
{
    for (size_t i = 0; i < t->n_components; i++)
        if (!strcmp(t->components[i], c))
            return 0;
    char **n = mem_realloc(t->components, (t->n_components + 1) * sizeof *n);
    if (!n)
        return ERR_NOMEM;
    t->components = n;
    if (!(n[t->n_components] = mem_strdup(c)))
        return ERR_NOMEM;
    t->n_components++;
    return 0;
}

static bool name_ok(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_'))
            return false;
    return true;
}

/* Reads list `which` ("events" or "static") of the table. */
static int load_list(struct energy_table *t, json_t *root, const char *which, int is_static,
                     const char *path, const char *text, struct errmsg *e)
{
    json_t *list = json_object_get(root, which);
    if (!list)
        return 0;
    const char *cname = is_static ? "time" : "count";
    const char *vname = is_static ? "watts" : "pj";
    if (!json_is_array(list))
        return errmsg_set(e, ERR_CONFIG, "'%s' must be a list at $.%s ('%s')", which, which, path);
    for (size_t i = 0; i < json_array_size(list); i++) {
        json_t *ev = json_array_get(list, i);
        json_t *c = json_object_get(ev, cname), *v = json_object_get(ev, vname);
        json_t *comp = json_object_get(ev, "component");
        const char *bad = !json_is_object(ev)             ? ""
                          : !json_is_string(c)            ? cname
                          : !json_is_number(v)            ? vname
                          : comp && !json_is_string(comp) ? "component"
                                                          : NULL;
        if (!bad && json_object_size(ev) != (comp ? 3u : 2u))
            bad = "(unknown key)";
        if (!bad && (!name_ok(json_string_value(c)) || (comp && !name_ok(json_string_value(comp)))))
            bad = "(name must be [a-z0-9_]+)";
        if (bad) {
            const char *keys[] = {which, NULL};
            (void)keys;
            (void)text;
            return errmsg_set(e, ERR_CONFIG, "bad energy entry %s at $.%s[%zu] ('%s')", bad, which,
                              i, path);
        }
        double x = json_number_value(v);
        if (!(x >= 0))
            return errmsg_set(e, ERR_CONFIG, "negative %s at $.%s[%zu].%s ('%s')", vname, which, i,
                              vname, path);
        struct energy_event *n = mem_realloc(t->events, (t->n_events + 1) * sizeof *n);
        if (!n)
            return errmsg_set(e, ERR_NOMEM, "out of memory");
        t->events = n;
        struct energy_event *d = &n[t->n_events];
        memset(d, 0, sizeof *d);
        t->n_events++;
        d->count = mem_strdup(json_string_value(c));
        d->component = mem_strdup(comp ? json_string_value(comp)
                                       : (is_static ? "static" : json_string_value(c)));
        d->pj = x;
        d->is_static = is_static;
        if (!d->count || !d->component || add_component(t, d->component))
            return errmsg_set(e, ERR_NOMEM, "out of memory");
    }
    return 0;
}

int energy_table_load(struct energy_table *t, const char *path, struct errmsg *e)
{
    memset(t, 0, sizeof *t);
    json_error_t je;
    int fd = io_open_input(path, NULL, e); /* regular files only: a FIFO would block */
    if (fd == ERR_NOINPUT)
        return errmsg_set(e, ERR_NOINPUT, "cannot read energy table '%s': %s", path,
                          strerror(errno));
    if (fd < 0)
        return fd;
    json_t *root = json_loadfd(fd, JSON_REJECT_DUPLICATES, &je);
    close(fd);
    if (!root && je.line < 1)
        return errmsg_set(e, ERR_NOINPUT, "cannot read energy table '%s': %s", path, je.text);
    if (!root)
        return errmsg_set(e, ERR_CONFIG, "bad energy table: %s ('%s' line %d column %d)", je.text,
                          path, je.line, je.column);
    int rc = 0;
    if (!json_is_object(root)) {
        rc = errmsg_set(e, ERR_CONFIG, "energy table must be a JSON object ('%s')", path);
        goto fail;
    }
    const char *k;
    json_t *v;
    json_object_foreach(root, k, v)
    {
        if (strcmp(k, "doc") && strcmp(k, "events") && strcmp(k, "static") && strcmp(k, "model")) {
            rc = errmsg_set(e, ERR_CONFIG, "unknown key '%s' at $.%s ('%s')", k, k, path);
            goto fail;
        }
    }
    if (!(t->path = mem_strdup(path))) {
        rc = errmsg_set(e, ERR_NOMEM, "out of memory");
        goto fail;
    }
    if ((rc = load_list(t, root, "events", 0, path, NULL, e)) ||
        (rc = load_list(t, root, "static", 1, path, NULL, e)))
        goto fail;
    t->static_listed = json_object_get(root, "static") != NULL;
    if (t->n_events == 0) {
        rc = errmsg_set(e, ERR_CONFIG, "energy table has no events ('%s')", path);
        goto fail;
    }
    json_decref(root);
    return 0;
fail:
    json_decref(root);
    energy_table_release(t);
    return rc;
}

/* The built-in tables (energy.h): configs/disc-energy.json, docs/disc.md#replay-configuration
 * [decision; placeholders], and configs/salca-energy.json, docs/salca.md#pipeline-model [decision]:
 * HBM 3.9 pJ/bit, 3b x 2b MAC 0.03 pJ, 8-bit compare and histogram update 0.03 pJ, INT8 MAC 0.23
 * pJ, exp 2 pJ. */
static char *builtin_components[] = {"model"};
/* count, component, pJ (W for static terms), is_static */
static struct energy_event disc_events[] = {
    {"mac", "model", 0.6, 0},           {"vpu_op", "model", 1.0, 0},
    {"sram_rd_bytes", "model", 0.6, 0}, {"sram_wr_bytes", "model", 0.75, 0},
    {"gspm_bytes", "model", 2.0, 0},    {"hbm_bytes", "model", 31.2, 0},
    {"bus_elems", "model", 0.5, 0},     {"seconds", "model", 8.0, 1},
};
static struct energy_event salca_events[] = {
    {"hbm_bytes", "model", 31.2, 0}, {"mac_3x2", "model", 0.03, 0},
    {"cmp8_ops", "model", 0.03, 0},  {"hist_updates", "model", 0.03, 0},
    {"mac_int8", "model", 0.23, 0},  {"exp_ops", "model", 2.0, 0},
};
static const struct energy_table builtin_tables[] = {
    {.path = "builtin:disc",
     .n_events = sizeof disc_events / sizeof disc_events[0],
     .events = disc_events,
     .n_components = 1,
     .components = builtin_components,
     .static_listed = true},
    {.path = "builtin:salca",
     .n_events = sizeof salca_events / sizeof salca_events[0],
     .events = salca_events,
     .n_components = 1,
     .components = builtin_components,
     .static_listed = false},
};

const struct energy_table *energy_table_builtin(const char *name)
{
    for (size_t i = 0; i < sizeof builtin_tables / sizeof builtin_tables[0]; i++)
        if (!strcmp(builtin_tables[i].path + strlen("builtin:"), name))
            return &builtin_tables[i];
    return NULL;
}

int energy_compute(const struct energy_table *t,
                   int (*lookup)(void *ctx, const char *name, double *v), void *ctx, double *comp_j,
                   double *total_j)
{
    for (size_t c = 0; c < t->n_components; c++)
        comp_j[c] = 0;
    /* Per component: picojoules of the events, then joules of static power (decision). */
    double *pj = comp_j; /* accumulate pJ first, convert, then add static J */
    for (size_t i = 0; i < t->n_events; i++) {
        double v;
        if (lookup(ctx, t->events[i].count, &v))
            return ERR_NOTFOUND;
        if (t->events[i].is_static)
            continue;
        for (size_t c = 0; c < t->n_components; c++)
            if (!strcmp(t->components[c], t->events[i].component))
                pj[c] += v * t->events[i].pj;
    }
    for (size_t c = 0; c < t->n_components; c++)
        comp_j[c] = pj[c] * 1e-12;
    for (size_t i = 0; i < t->n_events; i++) {
        if (!t->events[i].is_static)
            continue;
        double s = 0;
        if (lookup(ctx, t->events[i].count, &s))
            return ERR_NOTFOUND; /* checked above; kept for the compiler */
        for (size_t c = 0; c < t->n_components; c++)
            if (!strcmp(t->components[c], t->events[i].component))
                comp_j[c] += t->events[i].pj * s;
    }
    double tot = 0;
    for (size_t c = 0; c < t->n_components; c++)
        tot += comp_j[c];
    *total_j = tot;
    return 0;
}

struct csv_row_ctx {
    const struct csv_table *tab;
    char **row;
};

static int csv_lookup(void *ctx, const char *name, double *v)
{
    struct csv_row_ctx *c = ctx;
    long i = csv_table_col(c->tab, name);
    if (i < 0 || !c->row[i][0])
        return ERR_NOTFOUND;
    char *end;
    *v = strtod(c->row[i], &end);
    return *end ? ERR_NOTFOUND : 0;
}

bool energy_is_column(const char *name, const char *unit)
{
    size_t n = strlen(name);
    return unit && !strcmp(unit, "J") && n >= 8 && !strncmp(name, "energy_", 7) &&
           !strcmp(name + n - 2, "_j");
}

static bool is_energy_col(const char *cell)
{
    char name[256], unit[64];
    csv_split_unit(cell, name, sizeof name, unit, sizeof unit);
    return energy_is_column(name, unit);
}

/* 0 when tab has no row or a row with every column t names; else ERR_DATA naming the first
 * column the first row lacks (a table of another model's counts). */
static int check_fits(const struct energy_table *t, const struct csv_table *tab, const char *path,
                      struct errmsg *e)
{
    if (!tab->n_rows)
        return 0;
    double total, v;
    double *comp = mem_calloc(t->n_components + 1, sizeof *comp);
    if (!comp)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    bool fits = false;
    for (size_t r = 0; r < tab->n_rows && !fits; r++) {
        struct csv_row_ctx ctx = {tab, tab->rows[r]};
        fits = energy_compute(t, csv_lookup, &ctx, comp, &total) == 0;
    }
    mem_free(comp);
    if (fits)
        return 0;
    struct csv_row_ctx ctx = {tab, tab->rows[0]};
    for (size_t i = 0; i < t->n_events; i++)
        if (csv_lookup(&ctx, t->events[i].count, &v))
            return errmsg_set(e, ERR_DATA,
                              "energy table '%s' names %s '%s', which no row of '%s' has (a "
                              "table of another model?)",
                              t->path ? t->path : "", t->events[i].is_static ? "time" : "count",
                              t->events[i].count, path);
    return errmsg_set(e, ERR_DATA, "energy table '%s' fits no row of '%s'", t->path ? t->path : "",
                      path);
}

int energy_check_csv(const struct energy_table *t, const char *path, struct errmsg *e)
{
    struct csv_table tab;
    int rc = csv_table_load(&tab, path, true, e);
    if (rc)
        return rc;
    rc = check_fits(t, &tab, path, e);
    csv_table_release(&tab);
    return rc;
}

int energy_recompute_csv(const char *in_path, const struct energy_table *t, const char *out_path,
                         struct errmsg *e)
{
    struct csv_table tab;
    int rc = csv_table_load(&tab, in_path, true, e);
    if (rc)
        return rc;
    if ((rc = check_fits(t, &tab, in_path, e))) {
        csv_table_release(&tab);
        return rc;
    }
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp%ld", out_path, (long)getpid());
    struct csv_writer *w = NULL;
    double *comp = mem_calloc(t->n_components + 1, sizeof *comp);
    if (!comp) {
        rc = errmsg_set(e, ERR_NOMEM, "out of memory");
        goto done;
    }
    if ((rc = csv_writer_open(&w, tmp, false, e)))
        goto done;
    for (size_t c = 0; c < tab.n_cols; c++)
        if (!is_energy_col(tab.header[c]))
            csv_str(w, tab.header[c]);
    char cell[300];
    for (size_t c = 0; c < t->n_components; c++) {
        snprintf(cell, sizeof cell, "energy_%s_j [J]", t->components[c]);
        csv_str(w, cell);
    }
    csv_str(w, "energy_j [J]");
    csv_end_row(w);
    for (size_t r = 0; r < tab.n_rows; r++) {
        for (size_t c = 0; c < tab.n_cols; c++)
            if (!is_energy_col(tab.header[c]))
                csv_str(w, tab.rows[r][c]);
        struct csv_row_ctx ctx = {&tab, tab.rows[r]};
        double total;
        if (energy_compute(t, csv_lookup, &ctx, comp, &total) == 0) {
            for (size_t c = 0; c < t->n_components; c++)
                csv_f64(w, comp[c]);
            csv_f64(w, total);
        } else {
            for (size_t c = 0; c <= t->n_components; c++)
                csv_str(w, "");
        }
        if ((rc = csv_end_row(w)))
            break;
    }
    rc = csv_writer_close(w);
    w = NULL;
    if (rc) {
        rc = errmsg_set(e, rc, "cannot write '%s'", tmp);
        goto done;
    }
    if (rename(tmp, out_path)) {
        rc =
            errmsg_set(e, ERR_IO, "cannot rename '%s' to '%s': %s", tmp, out_path, strerror(errno));
        goto done;
    }
done:
    if (w) {
        csv_writer_close(w);
        remove(tmp);
    }
    mem_free(comp);
    csv_table_release(&tab);
    return rc;
}
