/*
 * timeline: a replay's schedule as a Chrome Trace Event Format file. See timeline.h.
 */
#include "analysis/timeline.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/plot.h"
#include "common/buf.h"
#include "common/io.h"
#include "common/mem.h"
#include "replay/engine.h"
#include "replay/hw_config.h"
#include "replay/model.h"
#include "replay/model_registry.h"

/* A merged slice in the making (levels 1 and 2). */
struct tl_agg {
    bool on;
    int64_t step, block;
    double t0, dur, bytes, util_w; /* util_w: utilization x duration, summed */
    bool util;
    uint64_t n;
    char cls[32];
};

struct tl {
    const struct timeline_opts *o;
    struct timeline_stats *st;
    struct sink k;
    struct buf b; /* events not yet written */
    uint64_t detail, x_events;
    char groups[TIMELINE_MAX_TRACKS][48];
    size_t n_groups;
    unsigned pid[TIMELINE_MAX_TRACKS]; /* per track */
    struct tl_agg agg[TIMELINE_MAX_TRACKS];
    bool any;
    struct plot *gantt;
    bool gantt_on;
    int64_t gantt_step;
};

/* A JSON string of s (the models' names: no control characters, quotes escaped). */
static void jstr(struct buf *b, const char *s)
{
    buf_append(b, "\"", 1);
    for (; s && *s; s++) {
        if (*s == '"' || *s == '\\')
            buf_append(b, "\\", 1);
        if ((unsigned char)*s >= 0x20)
            buf_append(b, s, 1);
    }
    buf_append(b, "\"", 1);
}

/* Starts an event: the separator and the common fields. */
static void ev_begin(struct tl *t, const char *ph, unsigned pid, unsigned tid)
{
    buf_printf(&t->b, "%s\n{\"ph\":\"%s\",\"pid\":%u,\"tid\":%u", t->any ? "," : "", ph, pid, tid);
    t->any = true;
    t->st->events++;
}

/* Hands the buffer to the file when it holds enough. */
static int tl_drain(struct tl *t, bool all, struct errmsg *e)
{
    if (buf_err(&t->b))
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    if (!all && t->b.len < (1u << 16))
        return 0;
    if (sink_write(&t->k, t->b.data, t->b.len))
        return errmsg_set(e, ERR_IO, "cannot write '%s': %s", t->o->out_path, strerror(errno));
    t->st->bytes += t->b.len;
    buf_clear(&t->b);
    return 0;
}

/* Metadata: a name (process_name / thread_name) and a sort index. */
static void ev_meta(struct tl *t, const char *what, unsigned pid, unsigned tid, const char *name,
                    unsigned sort)
{
    ev_begin(t, "M", pid, tid);
    buf_printf(&t->b, ",\"name\":\"%s_name\",\"args\":{\"name\":", what);
    jstr(&t->b, name);
    buf_printf(&t->b, "}}");
    ev_begin(t, "M", pid, tid);
    buf_printf(&t->b, ",\"name\":\"%s_sort_index\",\"args\":{\"sort_index\":%u}}", what, sort);
}

/* The track of (group, track), created with its metadata on first use; -1 when full. */
static int track_of(struct tl *t, const struct model_slice *s)
{
    struct timeline_stats *st = t->st;
    for (size_t i = 0; i < st->n_tracks; i++)
        if (!strcmp(st->tracks[i].group, s->group) && !strcmp(st->tracks[i].track, s->track))
            return (int)i;
    if (st->n_tracks >= TIMELINE_MAX_TRACKS)
        return -1;
    size_t g = 0;
    while (g < t->n_groups && strcmp(t->groups[g], s->group))
        g++;
    if (g == t->n_groups) {
        snprintf(t->groups[g], sizeof t->groups[g], "%s", s->group);
        t->n_groups++;
        ev_meta(t, "process", (unsigned)g + 1, 0, s->group, (unsigned)g);
    }
    size_t i = st->n_tracks++;
    struct timeline_track *tr = &st->tracks[i];
    snprintf(tr->group, sizeof tr->group, "%s", s->group);
    snprintf(tr->track, sizeof tr->track, "%s", s->track);
    snprintf(tr->busy, sizeof tr->busy, "%s", s->busy ? s->busy : "");
    t->pid[i] = (unsigned)g + 1;
    ev_meta(t, "thread", t->pid[i], (unsigned)i + 1, s->track, (unsigned)i);
    return (int)i;
}

/* A counter of track i set to v at ts_us. */
static void ev_counter(struct tl *t, int i, const char *what, const char *key, double ts_us,
                       double v)
{
    ev_begin(t, "C", t->pid[i], 0);
    buf_printf(&t->b, ",\"name\":");
    char name[96];
    snprintf(name, sizeof name, "%s %s", t->st->tracks[i].track, what);
    jstr(&t->b, name);
    buf_printf(&t->b, ",\"ts\":%.6f,\"args\":{\"%s\":%.6g}}", ts_us, key, v);
}

/* One complete event on track i with its counters; util < 0: none. */
static void ev_slice(struct tl *t, int i, const char *name, const char *cls, double t_s,
                     double dur_s, int64_t step, int64_t block, int64_t index, uint64_t n,
                     double bytes, double util)
{
    const double ts = t_s * 1e6, dur = dur_s * 1e6;
    ev_begin(t, "X", t->pid[i], (unsigned)i + 1);
    buf_printf(&t->b, ",\"name\":");
    jstr(&t->b, name);
    buf_printf(&t->b, ",\"cat\":");
    jstr(&t->b, cls ? cls : "");
    buf_printf(&t->b, ",\"ts\":%.6f,\"dur\":%.6f,\"args\":{\"step\":%lld,\"block\":%lld", ts, dur,
               (long long)step, (long long)block);
    if (index >= 0)
        buf_printf(&t->b, ",\"index\":%lld", (long long)index);
    if (n > 1)
        buf_printf(&t->b, ",\"slices\":%llu", (unsigned long long)n);
    if (bytes > 0)
        buf_printf(&t->b, ",\"bytes\":%.17g", bytes);
    if (util >= 0)
        buf_printf(&t->b, ",\"util\":%.6g", util);
    buf_printf(&t->b, "}}");
    t->x_events++;
    if (bytes > 0 && dur_s > 0) {
        ev_counter(t, i, "bandwidth", "GB/s", ts, bytes / dur_s * 1e-9);
        ev_counter(t, i, "bandwidth", "GB/s", ts + dur, 0);
    }
    if (util >= 0 && dur_s > 0) {
        ev_counter(t, i, "utilization", "util", ts, util);
        ev_counter(t, i, "utilization", "util", ts + dur, 0);
    }
}

/* Writes the merged slice of track i, if any. */
static void agg_flush(struct tl *t, int i)
{
    struct tl_agg *a = &t->agg[i];
    if (!a->on)
        return;
    char name[64];
    if (a->block >= 0)
        snprintf(name, sizeof name, "step %lld block %lld", (long long)a->step,
                 (long long)a->block);
    else
        snprintf(name, sizeof name, "step %lld", (long long)a->step);
    ev_slice(t, i, name, a->cls, a->t0, a->dur, a->step, a->block, -1, a->n, a->bytes,
             a->util && a->dur > 0 ? a->util_w / a->dur : -1);
    a->on = false;
}

static int tl_slice(void *ctx, const struct model_slice *s, struct errmsg *e)
{
    struct tl *t = ctx;
    const struct timeline_opts *o = t->o;
    if (o->steps && s->step >= 0 && (s->step < o->step_lo || s->step > o->step_hi))
        return 0;
    int i = track_of(t, s);
    if (i < 0)
        return errmsg_set(e, ERR_LIMIT, "more than %d timeline tracks", TIMELINE_MAX_TRACKS);
    struct timeline_track *tr = &t->st->tracks[i];
    tr->slices++;
    tr->sum_s += s->dur_s;
    t->st->slices++;
    if (t->gantt_on) {
        if (t->gantt_step == INT64_MIN)
            t->gantt_step = s->step;
        if (s->step == t->gantt_step) {
            char row[100];
            snprintf(row, sizeof row, "%s: %s", s->group, s->track);
            if (plot_gantt_span(t->gantt, row, s->cls ? s->cls : s->name, s->t_s * 1e6,
                                (s->t_s + s->dur_s) * 1e6))
                t->gantt_on = false; /* too many rows: the figure stops, the export goes on */
        }
    }
    int level = t->x_events < t->detail ? 0 : t->x_events < 4 * t->detail ? 1 : 2;
    if (level > t->st->level)
        t->st->level = level;
    if (level == 0) {
        ev_slice(t, i, s->name, s->cls, s->t_s, s->dur_s, s->step, s->block, s->index, 1, s->bytes,
                 s->util);
        return tl_drain(t, false, e);
    }
    int64_t block = level == 1 ? s->block : -1;
    struct tl_agg *a = &t->agg[i];
    if (a->on && (a->step != s->step || a->block != block))
        agg_flush(t, i);
    if (!a->on) {
        memset(a, 0, sizeof *a);
        a->on = true;
        a->step = s->step;
        a->block = block;
        a->t0 = s->t_s;
        snprintf(a->cls, sizeof a->cls, "%s", s->cls ? s->cls : "");
    }
    a->dur += s->dur_s;
    a->bytes += s->bytes;
    if (s->util >= 0) {
        a->util = true;
        a->util_w += s->util * s->dur_s;
    }
    a->n++;
    return tl_drain(t, false, e);
}

/* The run a results folder describes: model, trace and the config of one row. */
struct tl_run {
    const struct model_ops *m;
    char trace_hash[80];
    struct hw_config *cfg;
};

/* The manifest's model, trace hash and (when o has none) trace path. */
static int read_manifest(const struct timeline_opts *o, struct tl_run *r, char *trace, size_t n,
                         struct errmsg *e)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/manifest.json", o->results_dir);
    char *text = NULL;
    size_t len = 0;
    int rc = io_read_file(path, 1u << 20, &text, &len, e);
    if (rc)
        return rc;
    json_error_t je;
    json_t *m = json_loads(text, 0, &je);
    mem_free(text);
    if (!m || !json_is_object(m)) {
        json_decref(m);
        return errmsg_set(e, ERR_DATA, "bad manifest '%s' at line %d: %s", path, je.line, je.text);
    }
    const char *model = json_string_value(json_object_get(m, "model"));
    const char *th = json_string_value(json_object_get(m, "trace_hash"));
    const char *tp = json_string_value(json_object_get(m, "trace_path"));
    if (!model || !th) {
        rc = errmsg_set(e, ERR_DATA, "manifest '%s' names no model or trace_hash", path);
    } else if (!(r->m = model_registry_find(model))) {
        rc = errmsg_set(e, ERR_DATA, "manifest '%s' names an unknown model '%s'", path, model);
    } else if (!o->trace_path && !tp) {
        rc = errmsg_set(e, ERR_USAGE,
                        "manifest '%s' does not record the trace (a replay before trace_path "
                        "was recorded): give it with --trace",
                        path);
    } else {
        snprintf(r->trace_hash, sizeof r->trace_hash, "%s", th);
        snprintf(trace, n, "%s", o->trace_path ? o->trace_path : tp);
    }
    json_decref(m);
    return rc;
}

/* Rebuilds the config of row `row` (its "config" object) and checks its hash. */
static int rebuild_config(const struct timeline_opts *o, struct tl_run *r, json_t *row,
                          const char *path, size_t line, struct errmsg *e)
{
    json_t *c = json_object_get(row, "config");
    const char *hash = json_string_value(json_object_get(row, "config_hash"));
    if (!json_is_object(c) || !hash)
        return errmsg_set(e, ERR_DATA, "row of config %zu in '%s' line %zu has no config",
                          o->config_index, path, line);
    int rc = hw_config_defaults(&r->cfg, r->m->schema);
    if (rc)
        return errmsg_set(e, rc, "out of memory");
    const char *key;
    json_t *v;
    char origin[4200];
    snprintf(origin, sizeof origin, "'%s' line %zu", path, line);
    json_object_foreach(c, key, v)
    {
        char *txt = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
        if (!txt)
            return errmsg_set(e, ERR_NOMEM, "out of memory");
        rc = hw_config_set_json(r->cfg, key, txt, origin, e);
        free(txt);
        if (rc)
            return rc;
    }
    if ((rc = hw_config_check(r->cfg, e)))
        return rc;
    if (strcmp(hw_config_hash(r->cfg), hash))
        return errmsg_set(e, ERR_DATA,
                          "config %zu of '%s' does not rebuild to its hash (%s, rebuilt %s)",
                          o->config_index, path, hash, hw_config_hash(r->cfg));
    return 0;
}

/* Finds the first row of config o->config_index in results.jsonl and rebuilds its config. */
static int read_config(const struct timeline_opts *o, struct tl_run *r, struct errmsg *e)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/results.jsonl", o->results_dir);
    FILE *f = fopen(path, "r");
    if (!f)
        return errmsg_set(e, ERR_NOINPUT, "cannot open '%s': %s", path, strerror(errno));
    char *line = NULL, want[48];
    size_t cap = 0, no = 0;
    snprintf(want, sizeof want, "\"config_index\":%zu,", o->config_index);
    int rc = 1;
    while (rc == 1 && getline(&line, &cap, f) > 0) {
        no++;
        if (!strstr(line, want))
            continue;
        json_error_t je;
        json_t *row = json_loads(line, 0, &je);
        json_t *ci = json_object_get(row, "config_index");
        if (row && json_is_integer(ci) && (size_t)json_integer_value(ci) == o->config_index)
            rc = rebuild_config(o, r, row, path, no, e);
        else if (!row)
            rc = errmsg_set(e, ERR_DATA, "bad JSON in '%s' line %zu: %s", path, no, je.text);
        json_decref(row);
    }
    free(line);
    fclose(f);
    if (rc == 1)
        rc = errmsg_set(e, ERR_USAGE, "'%s' has no row of config %zu", path, o->config_index);
    return rc;
}

/* The engine's rows: the export writes none. */
static int rows_drop(void *ctx, const struct hw_config *cfg, size_t config_index,
                     struct model_result **res, const struct energy_table *energy, struct errmsg *e)
{
    (void)ctx, (void)cfg, (void)config_index, (void)res, (void)energy, (void)e;
    return 0;
}

/* "otherData": what made the file and the per-track sums. */
static void other_data(struct tl *t, const struct tl_run *r)
{
    struct timeline_stats *st = t->st;
    buf_printf(&t->b, "\n],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":{\"model\":");
    jstr(&t->b, st->model);
    buf_printf(&t->b, ",\"trace\":");
    jstr(&t->b, st->trace);
    buf_printf(&t->b, ",\"trace_hash\":");
    jstr(&t->b, r->trace_hash);
    buf_printf(&t->b, ",\"config_index\":%zu,\"config_hash\":", t->o->config_index);
    jstr(&t->b, hw_config_hash(r->cfg));
    buf_printf(&t->b, ",\"merge_level\":%d,\"tracks\":[", st->level);
    for (size_t i = 0; i < st->n_tracks; i++) {
        const struct timeline_track *tr = &st->tracks[i];
        buf_printf(&t->b, "%s\n{\"pid\":%u,\"tid\":%zu,\"group\":", i ? "," : "", t->pid[i], i + 1);
        jstr(&t->b, tr->group);
        buf_printf(&t->b, ",\"track\":");
        jstr(&t->b, tr->track);
        buf_printf(&t->b, ",\"busy\":");
        jstr(&t->b, tr->busy);
        buf_printf(&t->b, ",\"sum_s\":%.17g,\"slices\":%llu}", tr->sum_s,
                   (unsigned long long)tr->slices);
    }
    buf_printf(&t->b, "]}}\n");
}

/* The Gantt figure of the first step kept (errors go to st->plot_err, never fail). */
static void write_gantt(struct tl *t)
{
    struct timeline_stats *st = t->st;
    if (!t->gantt)
        return;
    char title[160];
    snprintf(title, sizeof title, "%s schedule, step %lld (config %zu)", st->model,
             (long long)t->gantt_step, t->o->config_index);
    plot_title(t->gantt, title);
    plot_xlabel(t->gantt, "modelled time", "us");
    plot_size(t->gantt, 1100, 180 + 34 * (int)st->n_tracks);
    if (plot_write(t->gantt, t->o->plot_dir, &st->rendered))
        snprintf(st->plot_err, sizeof st->plot_err, "%s", plot_errmsg(t->gantt));
    else
        st->plotted = true;
}

int timeline_export(const struct timeline_opts *o, struct timeline_stats *st, struct errmsg *e)
{
    memset(st, 0, sizeof *st);
    struct tl_run r = {0};
    struct record_source src = {0};
    struct tl t = {.o = o, .st = st, .k = {.fd = -1}, .gantt_step = INT64_MIN};
    buf_init(&t.b);
    t.detail = o->detail_events ? o->detail_events : TIMELINE_DETAIL_EVENTS;
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", o->out_path);
    bool tmp_made = false;
    int rc = read_manifest(o, &r, st->trace, sizeof st->trace, e);
    if (!rc)
        rc = read_config(o, &r, e);
    if (rc)
        goto fail;
    snprintf(st->model, sizeof st->model, "%s", r.m->name);
    if ((rc = record_source_trace(&src, st->trace, 1, e)))
        goto fail;
    if (strcmp(src.content_hash(src.ctx), r.trace_hash)) {
        rc = errmsg_set(e, ERR_DATA,
                        "trace '%s' is not the one of '%s' (content hash %s, the "
                        "results' %s)",
                        st->trace, o->results_dir, src.content_hash(src.ctx), r.trace_hash);
        goto fail;
    }
    if (o->plot_dir) {
        if (!(t.gantt = plot_new("timeline", PLOT_GANTT))) {
            rc = errmsg_set(e, ERR_NOMEM, "out of memory");
            goto fail;
        }
        t.gantt_on = true;
    }
    char parent[4200];
    snprintf(parent, sizeof parent, "%s", o->out_path);
    char *slash = strrchr(parent, '/');
    if (slash && slash != parent) {
        *slash = 0;
        if ((rc = io_mkdir_p(parent, 0755, e)))
            goto fail;
    }
    if ((rc = sink_open_file(&t.k, tmp, e)))
        goto fail;
    tmp_made = true;
    buf_printf(&t.b, "{\"traceEvents\":[");
    struct model_sched_sink sched = {&t, tl_slice};
    struct engine_opts eo;
    engine_opts_default(&eo);
    eo.quiet = true;
    eo.checkpoint_s = 0;
    eo.sched = &sched;
    struct engine_configs cf = {.list = &r.cfg, .n_list = 1};
    struct engine_sink es = {.rows = rows_drop};
    if ((rc = engine_run_to(r.m, &src, &cf, &es, &eo, NULL, e)))
        goto fail;
    if (!st->slices) { /* an empty timeline would look like an idle machine */
        rc = o->steps ? errmsg_set(e, ERR_USAGE, "no slices in steps %lld-%lld of '%s'",
                                   (long long)o->step_lo, (long long)o->step_hi, o->results_dir)
                      : errmsg_set(e, ERR_USAGE,
                                   "model '%s' reported no schedule (the disc, salca and kura "
                                   "models have the schedule hook)",
                                   r.m->name);
        goto fail;
    }
    for (size_t i = 0; i < st->n_tracks; i++)
        agg_flush(&t, (int)i);
    other_data(&t, &r);
    if ((rc = tl_drain(&t, true, e)))
        goto fail;
    if (sink_sync(&t.k) || sink_close(&t.k)) {
        rc = errmsg_set(e, ERR_IO, "cannot write '%s': %s", tmp, strerror(errno));
        goto fail;
    }
    if (rename(tmp, o->out_path)) {
        rc = errmsg_set(e, ERR_IO, "cannot rename '%s' to '%s': %s", tmp, o->out_path,
                        strerror(errno));
        goto fail;
    }
    tmp_made = false;
    io_sync_parent_dir(o->out_path);
    write_gantt(&t);
    goto done;
fail:
    if (t.k.fd >= 0)
        sink_close(&t.k);
    if (tmp_made)
        unlink(tmp);
done:
    plot_free(t.gantt);
    buf_release(&t.b);
    record_source_close(&src);
    hw_config_free(r.cfg);
    return rc;
}
