/*
 * results_energy: `results energy` rewrites a folder's energy columns from an energy
 * table (see results.h), table by table into temporaries renamed over the tables.
 */

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/io.h"
#include "common/mem.h"
#include "formats/csv.h"
#include "replay/results.h"
#include "replay/results_impl.h"

/* ---- energy ---- */

/* A CSV row's cells by column, for energy_compute: the last column of that name wins (the
 * model's columns come after the config keys). */
struct erow {
    char **names;  /* header names without units (n) */
    bool *drop;    /* energy columns being replaced (n) */
    char **fields; /* (n) */
    size_t n;
};

static int erow_lookup(void *ctx, const char *name, double *v)
{
    const struct erow *w = ctx;
    for (size_t i = w->n; i-- > 4;) {
        if (w->drop[i] || strcmp(w->names[i], name))
            continue;
        char *end;
        if (!w->fields[i][0])
            return ERR_NOTFOUND;
        *v = strtod(w->fields[i], &end);
        return *end ? ERR_NOTFOUND : 0;
    }
    return ERR_NOTFOUND;
}

/* Drops the energy keys (units "J") from a JSON line's metrics and units. */
static void json_drop_energy(json_t *o)
{
    json_t *jm = json_object_get(o, "metrics"), *ju = json_object_get(o, "units");
    const char *k;
    json_t *v;
    void *tmp;
    json_object_foreach_safe(jm, tmp, k, v)
    {
        if (energy_is_column(k, json_string_value(json_object_get(ju, k)))) {
            json_object_del(ju, k);
            json_object_del(jm, k);
        }
    }
}

/* One table being rewritten by energy_table_rewrite: its files, header and buffers. */
struct erewrite {
    const char *csv_tmp, *jsonl_tmp;
    char *cp, *jp;           /* DIR/TABLE.csv, .jsonl */
    FILE *fc, *fj, *oc, *oj; /* the table; the temporaries */
    char *cl, *jl;           /* current lines, with their newline */
    size_t ccap, jcap, line; /* line: JSON line number */
    char **hdr;              /* CSV header cells (n_cols) */
    size_t n_cols;
    struct erow w;  /* the row being rewritten */
    double *comp;   /* energy per component, then unused (n_components+1) */
    bool cols;      /* the table gets energy columns */
    struct buf out; /* the CSV line being built */
};

static void erewrite_release(struct erewrite *x)
{
    if (x->fc)
        fclose(x->fc);
    if (x->fj)
        fclose(x->fj);
    free(x->cl);
    free(x->jl);
    csv_fields_free(x->hdr, x->n_cols);
    for (size_t i = 0; x->w.names && i < x->w.n; i++)
        mem_free(x->w.names[i]);
    mem_free(x->w.names);
    mem_free(x->w.drop);
    mem_free(x->comp);
    buf_release(&x->out);
    mem_free(x->cp);
    mem_free(x->jp);
}

/* Reads the CSV header (which columns are energy to drop), opens the temporaries and
 * writes the new header: the kept cells, then the energy table's columns. */
static int erewrite_header(struct erewrite *x, const struct energy_table *t, struct errmsg *e)
{
    ssize_t n = getline(&x->cl, &x->ccap, x->fc);
    if (n <= 0 || x->cl[n - 1] != '\n' || csv_split_record(x->cl, (size_t)n, &x->hdr, &x->n_cols) ||
        x->n_cols < 4)
        return errmsg_set(e, ERR_DATA, "bad header line ('%s' line 1)", x->cp);
    size_t n_cols = x->n_cols;
    x->w.n = n_cols;
    x->w.names = mem_calloc(n_cols, sizeof *x->w.names);
    x->w.drop = mem_calloc(n_cols, sizeof *x->w.drop);
    if (!x->w.names || !x->w.drop)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < n_cols; i++) {
        char name[256], unit[64];
        csv_split_unit(x->hdr[i], name, sizeof name, unit, sizeof unit);
        if (!(x->w.names[i] = mem_strdup(name)))
            return errmsg_set(e, ERR_NOMEM, "out of memory");
        x->w.drop[i] = i >= 4 && energy_is_column(name, unit);
    }
    x->oc = fopen(x->csv_tmp, "wb");
    x->oj = fopen(x->jsonl_tmp, "wb");
    if (!x->oc || !x->oj)
        return errmsg_set(e, ERR_IO, "cannot write '%s': %s", x->oc ? x->jsonl_tmp : x->csv_tmp,
                          strerror(errno));
    /* A table whose header lacks a count the energy table names gets no energy columns,
     * as replay --energy leaves such rows (results.c apply_energy). */
    x->cols = true;
    for (size_t k = 0; k < t->n_events && x->cols; k++) {
        bool found = false;
        for (size_t i = 4; i < n_cols && !found; i++)
            found = !x->w.drop[i] && !strcmp(x->w.names[i], t->events[k].count);
        x->cols = found;
    }
    char cell[300];
    int rc = 0;
    for (size_t i = 0, k = 0; i < n_cols && !rc; i++)
        if (!x->w.drop[i] && !(rc = buf_append(&x->out, ",", k++ ? 1 : 0)))
            rc = csv_append_field(&x->out, x->hdr[i]);
    for (size_t c = 0; x->cols && c <= t->n_components && !rc; c++) {
        if (c < t->n_components)
            snprintf(cell, sizeof cell, "energy_%s_j [J]", t->components[c]);
        else
            snprintf(cell, sizeof cell, "energy_j [J]");
        if (!(rc = buf_append(&x->out, ",", 1)))
            rc = csv_append_field(&x->out, cell);
    }
    if (rc || (rc = buf_append(&x->out, "\n", 1)) ||
        fwrite(x->out.data, 1, x->out.len, x->oc) != x->out.len)
        return errmsg_set(e, rc ? rc : ERR_IO, "cannot write '%s'", x->csv_tmp);
    return 0;
}

/* Appends the new cells of one row (CSV fields, JSON object o) to x->out and o: the energy
 * per component and in total, recomputed from the row's counts (none when they lack). */
static int erewrite_cells(struct erewrite *x, const struct energy_table *t, char **fields,
                          json_t *o)
{
    x->w.fields = fields;
    double total = 0;
    bool have = energy_compute(t, erow_lookup, &x->w, x->comp, &total) == 0;
    buf_clear(&x->out);
    int rc = 0;
    for (size_t i = 0, k = 0; i < x->n_cols && !rc; i++)
        if (!x->w.drop[i] && !(rc = buf_append(&x->out, ",", k++ ? 1 : 0)))
            rc = csv_append_field(&x->out, fields[i]);
    json_drop_energy(o);
    json_t *jm = json_object_get(o, "metrics"), *ju = json_object_get(o, "units");
    for (size_t c = 0; x->cols && c <= t->n_components && !rc; c++) {
        double v = c < t->n_components ? x->comp[c] : total;
        char cell[300];
        if (c < t->n_components)
            snprintf(cell, sizeof cell, "energy_%s_j", t->components[c]);
        else
            snprintf(cell, sizeof cell, "energy_j");
        rc = buf_append(&x->out, ",", 1);
        if (!rc && have) {
            char num[40];
            csv_format_f64(v, num, sizeof num);
            rc = csv_append_field(&x->out, num);
            json_object_set_new(jm, cell, isfinite(v) ? json_real(v) : json_null());
            json_object_set_new(ju, cell, json_string("J"));
        }
    }
    return rc;
}

/* Rewrites the row of JSON line x->jl (jn bytes) and CSV line x->cl (n bytes). */
static int erewrite_row(struct erewrite *x, const struct energy_table *t, ssize_t jn, ssize_t n,
                        struct errmsg *e)
{
    if (x->jl[jn - 1] != '\n' || n <= 0 || x->cl[n - 1] != '\n')
        return errmsg_set(e, ERR_DATA,
                          "torn or missing row ('%s' line %zu, '%s' line %zu): resume the "
                          "replay first",
                          x->jp, x->line, x->cp, x->line + 1);
    char **fields = NULL;
    size_t nf = 0;
    char *js = NULL;
    int rc = 0;
    json_error_t je;
    json_t *o = json_loadb(x->jl, (size_t)jn, 0, &je);
    const char *th = json_string_value(json_object_get(o, "trace_hash"));
    const char *ch = json_string_value(json_object_get(o, "config_hash"));
    const char *md = json_string_value(json_object_get(o, "model"));
    json_t *jc = json_object_get(o, "config_index");
    if (!th || !ch || !md || !json_is_integer(jc) ||
        !json_is_object(json_object_get(o, "metrics")) ||
        !json_is_object(json_object_get(o, "units"))) {
        rc = errmsg_set(e, ERR_DATA, "corrupt row ('%s' line %zu)", x->jp, x->line);
        goto fail;
    }
    char want[300];
    res_key_prefix(want, sizeof want, th, ch, json_integer_value(jc), md);
    if (strncmp(x->cl, want, strlen(want)) || csv_split_record(x->cl, (size_t)n, &fields, &nf) ||
        nf != x->n_cols) {
        rc = errmsg_set(e, ERR_DATA, "row of '%s' line %zu differs from '%s' line %zu", x->cp,
                        x->line + 1, x->jp, x->line);
        goto fail;
    }
    rc = erewrite_cells(x, t, fields, o);
    if (!rc && !(js = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17))))
        rc = ERR_NOMEM;
    if (!rc)
        rc = buf_append(&x->out, "\n", 1);
    if (rc || fwrite(x->out.data, 1, x->out.len, x->oc) != x->out.len || fputs(js, x->oj) < 0 ||
        fputc('\n', x->oj) < 0)
        rc = errmsg_set(e, rc ? rc : ERR_IO, "cannot write '%s' or '%s'", x->csv_tmp, x->jsonl_tmp);
fail:
    free(js);
    json_decref(o);
    csv_fields_free(fields, nf);
    return rc;
}

/* Rewrites one table of dir into temporaries csv_tmp/jsonl_tmp. */
static int energy_table_rewrite(const char *dir, const char *table, const struct energy_table *t,
                                const char *csv_tmp, const char *jsonl_tmp, size_t *n_rows,
                                struct errmsg *e)
{
    struct erewrite x = {.csv_tmp = csv_tmp, .jsonl_tmp = jsonl_tmp};
    buf_init(&x.out);
    x.cp = res_path_join(dir, table, ".csv");
    x.jp = res_path_join(dir, table, ".jsonl");
    x.comp = mem_calloc(t->n_components + 1, sizeof *x.comp);
    int rc = 0;
    if (!x.cp || !x.jp || !x.comp) {
        rc = errmsg_set(e, ERR_NOMEM, "out of memory");
        goto done;
    }
    if ((rc = res_open_read(x.cp, &x.fc, e)) || (rc = res_open_read(x.jp, &x.fj, e)))
        goto done;
    if (!x.fc || !x.fj) {
        rc = errmsg_set(e, ERR_DATA, "'%s' lacks %s.csv or %s.jsonl", dir, table, table);
        goto done;
    }
    if ((rc = erewrite_header(&x, t, e)))
        goto done;
    ssize_t jn;
    while ((jn = getline(&x.jl, &x.jcap, x.fj)) > 0) {
        x.line++;
        ssize_t n = getline(&x.cl, &x.ccap, x.fc);
        if ((rc = erewrite_row(&x, t, jn, n, e)))
            goto done;
    }
    if (getline(&x.cl, &x.ccap, x.fc) > 0) {
        rc = errmsg_set(e, ERR_DATA,
                        "'%s' has rows past '%s' (line %zu on): resume the replay "
                        "first",
                        x.cp, x.jp, x.line + 2);
        goto done;
    }
    if ((rc = res_tmp_pair_sync(x.oc, x.oj, csv_tmp, jsonl_tmp, e)))
        goto done;
    *n_rows += x.line;
done:
    rc = res_tmp_pair_close(x.oc, x.oj, csv_tmp, jsonl_tmp, rc, e);
    erewrite_release(&x);
    return rc;
}

int results_energy(const char *dir, const struct energy_table *t, const char *energy_hash,
                   size_t *n_rows, struct errmsg *e)
{
    size_t rows = 0, n_names = 0;
    char *names[RES_MAX_TABLES] = {0};
    char *tmps[2 * RES_MAX_TABLES] = {0};
    json_t *man = NULL;
    int fd = -1;
    int rc = results_lock(dir, true, "energy", &fd, e);
    if (rc)
        return rc;
    if ((rc = res_manifest_read(dir, &man, e)) || (rc = res_folder_tables(dir, names, &n_names, e)))
        goto done;
    for (size_t i = 0; i < n_names; i++)
        if ((rc = res_tmp_names(dir, names[i], &tmps[2 * i], e)) ||
            (rc = energy_table_rewrite(dir, names[i], t, tmps[2 * i], tmps[2 * i + 1], &rows, e)))
            goto done;
    /* every table rewritten: put them in place */
    if ((rc = res_tmp_rename(dir, names, n_names, tmps, NULL, e)))
        goto done;
    if (man) {
        json_object_set_new(man, "energy_hash", json_string(energy_hash));
        json_object_set_new(man, "energy_table", json_string(t->path ? t->path : ""));
        if ((rc = res_manifest_write(dir, man, e)))
            goto done;
    }
    if (n_rows)
        *n_rows = rows;
done:
    res_tmp_free(tmps, 2 * RES_MAX_TABLES);
    for (size_t i = 0; i < n_names; i++)
        mem_free(names[i]);
    json_decref(man);
    results_unlock(fd);
    return rc;
}
