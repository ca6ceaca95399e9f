/*
 * results_merge: merges the folders of one sweep's shards into one folder (see results.h),
 * table by table, in config_index order.
 */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
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

/* ---- merge ---- */

/* One input folder's read position in one table. */
struct mcur {
    FILE *fc, *fj;
    char *cl, *jl; /* current lines, with their newline */
    size_t ccap, jcap;
    ssize_t clen, jlen;
    size_t line;            /* JSON line number of jl */
    json_int_t ci, last_ci; /* config_index of jl; of the line before (-1 at start) */
    bool eof;
    char *cp, *jp;
};

static void mcur_release(struct mcur *c)
{
    if (c->fc)
        fclose(c->fc);
    if (c->fj)
        fclose(c->fj);
    free(c->cl);
    free(c->jl);
    mem_free(c->cp);
    mem_free(c->jp);
}

/* Reads the next row of c (both files); checks it against trace/model seen so far. */
static int mcur_next(struct mcur *c, const char *dir, char *trace_hash, size_t th_n, char *model,
                     size_t md_n, struct errmsg *e)
{
    c->jlen = getline(&c->jl, &c->jcap, c->fj);
    c->clen = getline(&c->cl, &c->ccap, c->fc);
    if (c->jlen <= 0 && c->clen <= 0) {
        c->eof = true;
        return 0;
    }
    c->line++;
    if ((c->jlen > 0 && c->jl[c->jlen - 1] != '\n') || (c->clen > 0 && c->cl[c->clen - 1] != '\n'))
        return errmsg_set(e, ERR_DATA, "torn last line in '%s' (rerun that shard)",
                          c->jlen > 0 && c->jl[c->jlen - 1] != '\n' ? c->jp : c->cp);
    if (c->jlen <= 0 || c->clen <= 0)
        return errmsg_set(e, ERR_DATA, "'%s' and '%s' differ in rows (line %zu)", c->cp, c->jp,
                          c->line);
    json_error_t je;
    json_t *o = json_loadb(c->jl, (size_t)c->jlen, 0, &je);
    const char *th = json_string_value(json_object_get(o, "trace_hash"));
    const char *ch = json_string_value(json_object_get(o, "config_hash"));
    const char *md = json_string_value(json_object_get(o, "model"));
    json_t *ci = json_object_get(o, "config_index");
    int rc = 0;
    char want[300];
    if (!th || !ch || !md || !json_is_integer(ci) || json_integer_value(ci) < 0) {
        rc = errmsg_set(e, ERR_DATA, "bad row ('%s' line %zu)", c->jp, c->line);
        goto done;
    }
    if (!trace_hash[0]) {
        snprintf(trace_hash, th_n, "%s", th);
        snprintf(model, md_n, "%s", md);
    } else if (strcmp(trace_hash, th) || strcmp(model, md)) {
        rc = errmsg_set(e, ERR_DATA,
                        "refusing to merge rows of different traces or models: '%s' has "
                        "trace %.16s model '%s', others trace %.16s model '%s'",
                        dir, th, md, trace_hash, model);
        goto done;
    }
    res_key_prefix(want, sizeof want, th, ch, json_integer_value(ci), md);
    if (strncmp(c->cl, want, strlen(want))) {
        rc = errmsg_set(e, ERR_DATA, "row of '%s' line %zu differs from '%s' line %zu", c->cp,
                        c->line + 1, c->jp, c->line);
        goto done;
    }
    c->last_ci = c->ci;
    c->ci = json_integer_value(ci);
    if (c->ci < c->last_ci)
        rc = errmsg_set(e, ERR_DATA, "rows of '%s' are not in config order (line %zu)", c->jp,
                        c->line);
done:
    json_decref(o);
    return rc;
}

/* Merges one table across dirs into the temporaries csv_tmp and jsonl_tmp. */
static int merge_table(const char *const *dirs, size_t n_dirs, const char *table,
                       const char *csv_tmp, const char *jsonl_tmp, char *trace_hash, size_t th_n,
                       char *model, size_t md_n, bool *wrote, struct errmsg *e)
{
    *wrote = false;
    struct mcur *cur = mem_calloc(n_dirs, sizeof *cur);
    char *header = NULL;
    size_t first = 0;
    FILE *oc = NULL, *oj = NULL;
    int rc = 0;
    if (!cur)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    for (size_t d = 0; d < n_dirs; d++) {
        struct mcur *c = &cur[d];
        c->ci = c->last_ci = -1;
        c->cp = res_path_join(dirs[d], table, ".csv");
        c->jp = res_path_join(dirs[d], table, ".jsonl");
        if (!c->cp || !c->jp) {
            rc = errmsg_set(e, ERR_NOMEM, "out of memory");
            goto done;
        }
        if ((rc = res_open_read(c->cp, &c->fc, e)) || (rc = res_open_read(c->jp, &c->fj, e)))
            goto done;
        if (!c->fc && !c->fj) {
            c->eof = true;
            if (!strcmp(table, "results")) {
                rc = errmsg_set(e, ERR_DATA, "no results in '%s'", dirs[d]);
                goto done;
            }
            continue;
        }
        if (!c->fc || !c->fj) {
            rc = errmsg_set(e, ERR_DATA, "'%s' lacks %s.csv or %s.jsonl", dirs[d], table, table);
            goto done;
        }
        c->clen = getline(&c->cl, &c->ccap, c->fc);
        if (c->clen <= 0 || c->cl[c->clen - 1] != '\n') {
            rc = errmsg_set(e, ERR_DATA, "no header line in '%s'", c->cp);
            goto done;
        }
        if (!header) {
            if (!(header = mem_strdup(c->cl))) {
                rc = errmsg_set(e, ERR_NOMEM, "out of memory");
                goto done;
            }
            first = d;
        } else if (strcmp(header, c->cl)) {
            rc = errmsg_set(e, ERR_DATA, "'%s' has other columns than '%s'", c->cp, cur[first].cp);
            goto done;
        }
        if ((rc = mcur_next(c, dirs[d], trace_hash, th_n, model, md_n, e)))
            goto done;
    }
    if (!header)
        goto done;
    oc = fopen(csv_tmp, "wb");
    oj = fopen(jsonl_tmp, "wb");
    if (!oc || !oj || fputs(header, oc) < 0) {
        rc = errmsg_set(e, ERR_IO, "cannot write '%s': %s", oc ? jsonl_tmp : csv_tmp,
                        strerror(errno));
        goto done;
    }
    for (;;) {
        /* the folder whose next config is the lowest; the same config twice is refused */
        size_t best = n_dirs;
        for (size_t d = 0; d < n_dirs; d++) {
            if (cur[d].eof)
                continue;
            if (best < n_dirs && cur[d].ci == cur[best].ci) {
                rc = errmsg_set(e, ERR_DATA,
                                "config %" JSON_INTEGER_FORMAT " appears in both '%s' and '%s'",
                                cur[d].ci, dirs[best], dirs[d]);
                goto done;
            }
            if (best == n_dirs || cur[d].ci < cur[best].ci)
                best = d;
        }
        if (best == n_dirs)
            break;
        struct mcur *c = &cur[best];
        json_int_t ci = c->ci;
        while (!c->eof && c->ci == ci) {
            if (fwrite(c->cl, 1, (size_t)c->clen, oc) != (size_t)c->clen ||
                fwrite(c->jl, 1, (size_t)c->jlen, oj) != (size_t)c->jlen) {
                rc = errmsg_set(e, ERR_IO, "cannot write '%s': %s", csv_tmp, strerror(errno));
                goto done;
            }
            if ((rc = mcur_next(c, dirs[best], trace_hash, th_n, model, md_n, e)))
                goto done;
        }
    }
    if ((rc = res_tmp_pair_sync(oc, oj, csv_tmp, jsonl_tmp, e)))
        goto done;
    *wrote = true;
done:
    rc = res_tmp_pair_close(oc, oj, csv_tmp, jsonl_tmp, rc, e);
    if (rc)
        *wrote = false;
    for (size_t d = 0; d < n_dirs; d++)
        mcur_release(&cur[d]);
    mem_free(cur);
    mem_free(header);
    return rc;
}

int results_merge(const char *const *dirs, size_t n_dirs, const char *out_dir, struct errmsg *e)
{
    if (!n_dirs)
        return errmsg_set(e, ERR_USAGE, "no folders to merge");
    int out_fd = -1;
    int *in_fd = mem_calloc(n_dirs, sizeof *in_fd);
    json_t **man = mem_calloc(n_dirs, sizeof *man);
    char *names[RES_MAX_TABLES] = {0}, *tmps[2 * RES_MAX_TABLES] = {0};
    bool wrote[RES_MAX_TABLES] = {0};
    size_t n_names = 0;
    int rc = 0;
    if (!in_fd || !man) {
        rc = errmsg_set(e, ERR_NOMEM, "out of memory");
        goto done;
    }
    for (size_t d = 0; d < n_dirs; d++)
        in_fd[d] = -1;
    /* inputs first: a missing folder is not created by its lock */
    for (size_t d = 0; d < n_dirs; d++) {
        size_t k = 0;
        char *dn[RES_MAX_TABLES] = {0};
        rc = res_folder_tables(dirs[d], dn, &k, e);
        for (size_t i = 0; i < k; i++) {
            bool seen = false;
            for (size_t j = 0; j < n_names && !seen; j++)
                seen = !strcmp(names[j], dn[i]);
            if (!seen && n_names < RES_MAX_TABLES && !rc) {
                names[n_names++] = dn[i];
                dn[i] = NULL;
            }
            mem_free(dn[i]);
        }
        if (rc || (rc = results_lock(dirs[d], false, "merge", &in_fd[d], e)) ||
            (rc = res_manifest_read(dirs[d], &man[d], e)))
            goto done;
    }
    if ((rc = results_lock(out_dir, true, "merge", &out_fd, e)))
        goto done;
    /* manifests: every folder from the same run (shards aside) */
    bool all_man = true;
    for (size_t d = 0; d < n_dirs; d++)
        all_man = all_man && man[d];
    char diff[400];
    for (size_t d = 1; all_man && d < n_dirs; d++)
        if (res_manifest_diff(man[d], man[0], true, " vs ", diff, sizeof diff)) {
            rc = errmsg_set(e, ERR_DATA,
                            "refusing to merge folders of different traces or runs: '%s' "
                            "differs from '%s' in %s",
                            dirs[d], dirs[0], diff);
            goto done;
        }
    char trace_hash[128] = "", model[128] = "";
    for (size_t i = 0; i < n_names; i++) {
        if ((rc = res_tmp_names(out_dir, names[i], &tmps[2 * i], e)))
            goto done;
        if ((rc = merge_table(dirs, n_dirs, names[i], tmps[2 * i], tmps[2 * i + 1], trace_hash,
                              sizeof trace_hash, model, sizeof model, &wrote[i], e)))
            goto done;
    }
    /* an output folder with rows of another run is not overwritten: tables would mix */
    char *op = res_path_join(out_dir, "results", ".jsonl");
    struct stat ost;
    if (!op) {
        rc = errmsg_set(e, ERR_NOMEM, "out of memory");
        goto done;
    }
    bool has_rows = !stat(op, &ost) && S_ISREG(ost.st_mode) && ost.st_size > 0;
    mem_free(op);
    if (has_rows) {
        json_t *om = NULL;
        if ((rc = res_manifest_read(out_dir, &om, e)))
            goto done;
        bool other =
            !om || !all_man || res_manifest_diff(om, man[0], true, ", now ", diff, sizeof diff);
        if (other && om && all_man)
            rc = errmsg_set(e, ERR_USAGE,
                            "merge output '%s' holds rows of another run: %s; use another -o "
                            "folder",
                            out_dir, diff);
        else if (other)
            rc = errmsg_set(e, ERR_USAGE,
                            "merge output '%s' holds rows without a manifest to compare: use "
                            "another -o folder",
                            out_dir);
        json_decref(om);
        if (rc)
            goto done;
    }
    /* every table merged: put them in place (a failure above left the old files) */
    if ((rc = res_tmp_rename(out_dir, names, n_names, tmps, wrote, e)))
        goto done;
    if (all_man) {
        json_object_set_new(man[0], "shard", json_null());
        json_object_set_new(man[0], "command", json_string("acceltrace merge"));
        rc = res_manifest_write(out_dir, man[0], e);
    }
done:
    res_tmp_free(tmps, 2 * RES_MAX_TABLES);
    for (size_t i = 0; i < n_names; i++)
        mem_free(names[i]);
    for (size_t d = 0; in_fd && d < n_dirs; d++)
        results_unlock(in_fd[d]);
    for (size_t d = 0; man && d < n_dirs; d++)
        json_decref(man[d]);
    mem_free(in_fd);
    mem_free(man);
    results_unlock(out_fd);
    return rc;
}
