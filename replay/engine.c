/*
 * engine: one-pass replay (see engine.h). The reading thread decodes a group of records,
 * runs the model's prepare() on each, then pool_for splits the instances over the
 * threads; each thread feeds the whole group to its instances. Synchronising once per
 * group (not per record) keeps the thread overhead small against decoding.
 *
 * Between groups, when a checkpoint is due, the reading thread saves every instance into
 * DIR/replay.ckpt (layout in engine.h): all workers are idle then, so the states are
 * consistent with the records handed out so far and the position the source reports.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/crc32c.h"
#include "common/grow.h"
#include "common/io.h"
#include "common/mem.h"
#include "common/progress.h"
#include "common/sha256.h"
#include "common/threads.h"
#include "replay/engine.h"
#include "traces/trace_hash.h"
#include "traces/trace_reader.h"

/* ---- checkpoint bytes (model.h) ---- */

int model_ckpt_get(struct model_ckpt_in *in, void *dst, size_t n)
{
    if (in->pos > in->len || in->len - in->pos < n)
        return ERR_DATA;
    if (n)
        memcpy(dst, in->data + in->pos, n);
    in->pos += n;
    return 0;
}

int model_ckpt_get_alloc(struct model_ckpt_in *in, void **dst, size_t n)
{
    *dst = NULL;
    if (in->pos > in->len || in->len - in->pos < n)
        return ERR_DATA;
    void *p = mem_alloc(n ? n : 1);
    if (!p)
        return ERR_NOMEM;
    int rc = model_ckpt_get(in, p, n);
    if (rc) {
        mem_free(p);
        return rc;
    }
    *dst = p;
    return 0;
}

int model_ckpt_get_bools(struct model_ckpt_in *in, bool *dst, size_t n)
{
    if (in->pos > in->len || in->len - in->pos < n)
        return ERR_DATA;
    const uint8_t *p = in->data + in->pos;
    for (size_t i = 0; i < n; i++)
        if (p[i] > 1)
            return ERR_DATA;
    for (size_t i = 0; i < n; i++)
        dst[i] = p[i] == 1;
    in->pos += n;
    return 0;
}

bool model_ckpt_in_range(double x, double lo, double hi)
{
    return isfinite(x) && x >= lo && x <= hi;
}

/* ---- engine ---- */

void engine_opts_default(struct engine_opts *o)
{
    memset(o, 0, sizeof *o);
    o->threads = 1;
    o->group_records = 64;
    o->group_bytes = 64u << 20;
    o->checkpoint_s = 0.25;
    o->stop_after_s = -1;
}

struct instance {
    size_t config_index;
    struct hw_config *cfg;
    void *state;
    int rc;
    struct errmsg err;
    struct model_result *res;
    uint64_t fail_index; /* the record consume() failed on (0-based after the header) */
};

/* One instance of a checkpoint: its config and saved state (in struct ckpt.bytes). */
struct ckpt_entry {
    size_t config_index;
    char hash[64];
    const uint8_t *state;
    uint64_t state_len;
};

/* A checkpoint read back: where to continue and the saved state of each instance. */
struct ckpt {
    uint8_t *bytes; /* the whole file */
    size_t len;
    uint64_t records, position;
    const uint8_t *shared; /* shared state (shared_save) */
    uint64_t shared_len;
    size_t n;                   /* instances of configs not yet done */
    struct ckpt_entry *entries; /* (n) */
};

/* Frees what ckpt_read allocated; the struct is zeroed (safe to call twice). */
static void ckpt_release(struct ckpt *c)
{
    mem_free(c->bytes);
    mem_free(c->entries);
    memset(c, 0, sizeof *c);
}

/* What checkpointing a pass needs besides the instances. */
struct ckpt_ctx {
    bool on;
    char path[4096], tmp[4096];
    double next_s;             /* time the next checkpoint is due */
    uint64_t next_records;     /* record count it is due at (0: by time only) */
    struct buf state;          /* one instance's bytes while writing */
    const struct ckpt *resume; /* for the first pass, or NULL */
    double t0;                 /* start of the run (stop_after_s) */
    const char *build_id;      /* engine_build_id */
};

/* n-byte little-endian integers of the checkpoint layout. */
static void put_le(uint8_t *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

/* Writes to the checkpoint file and its running crc. */
struct ckpt_out {
    struct sink k;
    uint32_t crc;
    int rc;
};

/* Appends to the file and the crc; the first error sticks in o->rc, later calls do nothing. */
static void out_bytes(struct ckpt_out *o, const void *p, size_t n)
{
    if (o->rc)
        return;
    o->crc = crc32c_update(o->crc, p, n);
    o->rc = sink_write(&o->k, p, n);
}

/* An n-byte little-endian integer. */
static void out_u(struct ckpt_out *o, uint64_t v, int n)
{
    uint8_t b[8];
    put_le(b, v, n);
    out_bytes(o, b, (size_t)n);
}

/* u32 length + bytes (no NUL). */
static void out_str(struct ckpt_out *o, const char *s)
{
    out_u(o, strlen(s), 4);
    out_bytes(o, s, strlen(s));
}

#define CKPT_MAGIC "ATCKPT02"

/*
 * The identity of this program for checkpoints: XXH3-128 of /proc/self/exe, so a state
 * saved by one build is never loaded into another whose model layouts may differ (a
 * checkpoint of another build is ignored and the pass starts over). "unknown" when the
 * executable cannot be read; opts.build_id overrides it (tests). Computed once.
 */
static const char *engine_build_id(const struct engine_opts *o)
{
    static char id[TRACE_HASH_HEX_MAX];
    if (o->build_id)
        return o->build_id;
    if (id[0])
        return id;
    snprintf(id, sizeof id, "unknown");
    struct src s;
    struct errmsg e = {0};
    if (src_open_file(&s, "/proc/self/exe", &e))
        return id;
    struct trace_hash h;
    if (trace_hash_init(&h, TRACE_HASH_XXH3_128) == 0) {
        uint8_t b[1 << 16];
        size_t got;
        uint64_t off = 0;
        bool ok = true;
        while (ok && (ok = src_read_at(&s, off, b, sizeof b, &got) == 0) && got > 0) {
            trace_hash_update(&h, b, got);
            off += got;
        }
        if (ok)
            trace_hash_hex(&h, id);
        trace_hash_release(&h);
    }
    src_close(&s);
    return id;
}

/*
 * Writes the checkpoint of inst[0..n) after `records` records (source at `position`):
 * temporary, fsync, rename, fsync of the folder, so the file is always a whole checkpoint.
 */
static int ckpt_write(struct ckpt_ctx *cc, const struct model_ops *m, struct record_source *src,
                      const void *shared, const struct instance *inst, size_t n, uint64_t records,
                      struct engine_stats *st, struct errmsg *e)
{
    struct ckpt_out o = {.crc = 0, .rc = 0};
    struct errmsg fe = {0};
    int rc = sink_open_file(&o.k, cc->tmp, &fe);
    if (rc)
        return errmsg_set(e, rc, "cannot write a checkpoint: %s", errmsg_text(&fe));
    out_bytes(&o, CKPT_MAGIC, 8);
    out_str(&o, cc->build_id);
    out_str(&o, src->content_hash(src->ctx));
    out_str(&o, m->name);
    out_u(&o, records, 8);
    out_u(&o, src->position(src->ctx), 8);
    out_u(&o, n, 8);
    struct sink mk;
    buf_clear(&cc->state);
    sink_init_mem(&mk, &cc->state);
    if (m->shared_save && (rc = m->shared_save(shared, &mk, e)))
        goto fail;
    out_u(&o, cc->state.len, 8);
    out_bytes(&o, cc->state.data, cc->state.len);
    for (size_t i = 0; i < n && !o.rc; i++) {
        buf_clear(&cc->state);
        sink_init_mem(&mk, &cc->state);
        if ((rc = m->save(inst[i].state, &mk, e))) {
            errmsg_set(e, rc, "model '%s' cannot save config %zu: %s", m->name,
                       inst[i].config_index, errmsg_text(e));
            goto fail;
        }
        out_u(&o, inst[i].config_index, 8);
        out_str(&o, hw_config_hash(inst[i].cfg));
        out_u(&o, cc->state.len, 8);
        out_bytes(&o, cc->state.data, cc->state.len);
    }
    uint8_t c[4];
    put_le(c, o.crc, 4);
    if (!o.rc)
        o.rc = sink_write(&o.k, c, 4);
    if (!o.rc)
        o.rc = sink_sync(&o.k);
    uint64_t bytes = o.k.offset;
    int crc = sink_close(&o.k);
    if (o.rc || crc) {
        rc = errmsg_set(e, ERR_IO, "cannot write checkpoint '%s'", cc->tmp);
        goto fail_closed;
    }
    if (rename(cc->tmp, cc->path) != 0 || io_sync_parent_dir(cc->path) != 0) {
        rc = errmsg_set(e, ERR_IO, "cannot rename checkpoint '%s' to '%s'", cc->tmp, cc->path);
        goto fail_closed;
    }
    st->checkpoints++;
    st->checkpoint_bytes = bytes;
    return 0;
fail:
    sink_close(&o.k);
fail_closed:
    remove(cc->tmp);
    return rc;
}

/* Why a checkpoint is not used (stats.note); returns 1 so callers can `return note(...)`. */
static int ckpt_note(struct engine_stats *st, const char *path, const char *why)
{
    snprintf(st->note, sizeof st->note, "ignoring checkpoint '%.280s': %.90s", path, why);
    return 1;
}
/* ---- configs and sinks ---- */

static bool sink_done(const struct engine_sink *sink, const char *config_hash)
{
    return sink->done && sink->done(sink->ctx, config_hash);
}

static size_t configs_count(const struct engine_configs *c)
{
    return c->sweep ? sweep_count(c->sweep) : c->n_list;
}

/* Config i of the run (caller frees): the sweep's, or a copy of the list's. */
static int configs_get(const struct engine_configs *c, size_t i, struct hw_config **out,
                       struct errmsg *e)
{
    if (c->sweep)
        return sweep_config(c->sweep, i, out, e);
    int rc = hw_config_clone(out, c->list[i]);
    return rc < 0 ? errmsg_set(e, rc, "out of memory") : 0;
}

static bool results_sink_done(void *ctx, const char *config_hash)
{
    return results_done(ctx, config_hash);
}

static int results_sink_rows(void *ctx, const struct hw_config *cfg, size_t config_index,
                             struct model_result **res, const struct energy_table *energy,
                             struct errmsg *e)
{
    return results_append(ctx, cfg, config_index, *res, energy, e);
}

void engine_sink_results(struct engine_sink *s, struct results *res)
{
    s->ctx = res;
    s->done = results_sink_done;
    s->rows = results_sink_rows;
}

int engine_run(const struct model_ops *m, struct record_source *source, const struct sweep *sweep,
               struct results *res, const struct engine_opts *opts, struct engine_stats *stats,
               struct errmsg *e)
{
    struct engine_sink sink;
    engine_sink_results(&sink, res);
    const struct engine_configs configs = {sweep, NULL, 0};
    return engine_run_to(m, source, &configs, &sink, opts, stats, e);
}

/*
 * Reads the checkpoint at path: 0 with *c filled when it is of this trace and model and
 * holds configs not yet done (entries of done configs are dropped: written after it,
 * before the kill), 1 when there is none or it does not fit (stats.note says why, except
 * when there is none), <0 on ERR_NOMEM.
 */
static int ckpt_read(const char *path, const char *build_id, const struct model_ops *m,
                     struct record_source *src, const struct engine_sink *sink, struct ckpt *c,
                     struct engine_stats *st)
{
    memset(c, 0, sizeof *c);
    char *text = NULL;
    size_t len = 0;
    struct errmsg fe = {0};
    int rc = io_read_file(path, (uint64_t)1 << 40, &text, &len, &fe);
    if (rc == ERR_NOINPUT)
        return 1;
    if (rc == ERR_NOMEM)
        return rc;
    if (rc)
        return ckpt_note(st, path, errmsg_text(&fe));
    c->bytes = (uint8_t *)text;
    c->len = len;
    const uint8_t *p = c->bytes;
    const char *why = "truncated";
    if (len < 12 || memcmp(p, CKPT_MAGIC, 8) != 0) {
        why = "not a checkpoint of this version";
        goto bad;
    }
    if ((uint32_t)get_le(p + len - 4, 4) != crc32c_update(0, p, len - 4)) {
        why = "bad checksum";
        goto bad;
    }
    size_t pos = 8, end = len - 4;
    uint64_t v[3];
    const char *strs[3];
    size_t slen[3];
    for (int k = 0; k < 3; k++) {
        if (end - pos < 4 || end - pos - 4 < get_le(p + pos, 4))
            goto bad;
        slen[k] = (size_t)get_le(p + pos, 4);
        strs[k] = (const char *)p + pos + 4;
        pos += 4 + slen[k];
    }
    if (slen[0] != strlen(build_id) || memcmp(strs[0], build_id, slen[0])) {
        why = "it was written by another build of acceltrace";
        goto bad;
    }
    const char *hash = src->content_hash(src->ctx);
    if (slen[1] != strlen(hash) || memcmp(strs[1], hash, slen[1])) {
        why = "it is of another trace";
        goto bad;
    }
    if (slen[2] != strlen(m->name) || memcmp(strs[2], m->name, slen[2])) {
        why = "it is of another model";
        goto bad;
    }
    if (end - pos < 32)
        goto bad;
    for (int k = 0; k < 3; k++, pos += 8)
        v[k] = get_le(p + pos, 8);
    c->records = v[0], c->position = v[1];
    uint64_t n_saved = v[2];
    c->shared_len = get_le(p + pos, 8);
    pos += 8;
    if (c->shared_len > end - pos)
        goto bad;
    c->shared = p + pos;
    pos += (size_t)c->shared_len;
    if (n_saved > len / 20) /* an entry takes at least 20 bytes */
        goto bad;
    c->entries = mem_calloc((size_t)n_saved + 1, sizeof *c->entries);
    if (!c->entries) {
        ckpt_release(c);
        return ERR_NOMEM;
    }
    for (uint64_t i = 0; i < n_saved; i++) {
        if (end - pos < 12 || end - pos - 12 < get_le(p + pos + 8, 4))
            goto bad;
        struct ckpt_entry *en = &c->entries[c->n];
        en->config_index = (size_t)get_le(p + pos, 8);
        size_t hl = (size_t)get_le(p + pos + 8, 4);
        if (hl >= sizeof en->hash)
            goto bad;
        memcpy(en->hash, p + pos + 12, hl);
        en->hash[hl] = 0;
        pos += 12 + hl;
        if (end - pos < 8 || end - pos - 8 < get_le(p + pos, 8))
            goto bad;
        en->state_len = get_le(p + pos, 8);
        pos += 8;
        en->state = p + pos;
        pos += (size_t)en->state_len;
        if (!sink_done(sink, en->hash))
            c->n++;
    }
    if (pos != end)
        goto bad;
    if (c->n == 0) {
        ckpt_release(c);
        return 1; /* every config it held is done */
    }
    return 0;
bad:
    ckpt_release(c);
    return ckpt_note(st, path, why);
}

/* Does the checkpoint hold exactly the configs of inst[0..n), in order? */
static bool ckpt_matches(const struct ckpt *c, const struct instance *inst, size_t n)
{
    if (c->n != n)
        return false;
    for (size_t i = 0; i < n; i++)
        if (c->entries[i].config_index != inst[i].config_index ||
            strcmp(c->entries[i].hash, hw_config_hash(inst[i].cfg)))
            return false;
    return true;
}

struct pass_ctx {
    const struct model_ops *m;
    struct instance *inst;
    struct model_record *group;
    size_t n_group;
    const struct model_env *env;
    int phase; /* 0 new, 1 consume, 2 finish, 3 load */
    const struct ckpt *resume;
};

static void pass_fn(void *ctx, size_t begin, size_t end, int worker)
{
    (void)worker;
    struct pass_ctx *p = ctx;
    for (size_t i = begin; i < end; i++) {
        struct instance *in = &p->inst[i];
        if (in->rc)
            continue;
        switch (p->phase) {
        case 0:
            in->rc = p->m->new (&in->state, in->cfg, p->env, &in->err);
            break;
        case 1:
            for (size_t k = 0; k < p->n_group && !in->rc; k++) {
                in->rc = p->m->consume(in->state, &p->group[k], &in->err);
                in->fail_index = p->group[k].index;
            }
            break;
        case 2:
            if (!(in->res = model_result_new())) {
                in->rc = errmsg_set(&in->err, ERR_NOMEM, "out of memory");
                break;
            }
            in->rc = p->m->finish(in->state, in->res, &in->err);
            /* the rows' sticky error (model.h), in case finish did not return it */
            if (!in->err.code && result_err(in->res, &in->err))
                in->rc = in->rc ? in->rc : in->err.code;
            break;
        case 3: {
            const struct ckpt_entry *en = &p->resume->entries[i];
            struct model_ckpt_in ci = {en->state, (size_t)en->state_len, 0};
            in->rc = p->m->load(in->state, &ci, &in->err);
            if (!in->rc && ci.pos != ci.len)
                in->rc = errmsg_set(&in->err, ERR_DATA, "%zu bytes of its state left over",
                                    ci.len - ci.pos);
            break;
        }
        }
        if (in->rc && !in->err.code)
            errmsg_set(&in->err, in->rc, "%s", err_str(in->rc));
    }
}

/* Is a checkpoint due after `records` records? */
static bool ckpt_due(const struct ckpt_ctx *cc, uint64_t records)
{
    if (!cc->on)
        return false;
    if (cc->next_records && records >= cc->next_records)
        return true;
    return cc->next_s > 0 && progress_now_s() >= cc->next_s;
}

/* Schedules the next checkpoint after one that took cost_s (at least 20 times its cost). */
static void ckpt_schedule(struct ckpt_ctx *cc, const struct engine_opts *o, uint64_t records,
                          double cost_s)
{
    double gap = o->checkpoint_s;
    if (gap > 0 && gap < 20 * cost_s)
        gap = 20 * cost_s;
    cc->next_s = gap > 0 ? progress_now_s() + gap : 0;
    cc->next_records = o->checkpoint_records ? records + o->checkpoint_records : 0;
}

/*
 * The error of a model that failed while replaying trace `name`: on config in (NULL for the
 * shared prepare step), at record `index` (0-based after the header, so frame index + 1;
 * UINT64_MAX: at the end of the trace, in finish), with the model's message why. The one
 * place a model error gets the file and position, so no model has to name them.
 */
static int model_err(struct errmsg *e, int rc, const struct model_ops *m, const struct instance *in,
                     const char *name, uint64_t index, const struct errmsg *why)
{
    char msg[sizeof e->text], where[96];
    snprintf(msg, sizeof msg, "%s", errmsg_text(why));
    if (index == UINT64_MAX)
        snprintf(where, sizeof where, "at the end");
    else
        snprintf(where, sizeof where, "at record %llu (frame %llu)", (unsigned long long)index,
                 (unsigned long long)index + 1);
    if (in)
        return errmsg_set(e, rc, "model '%s' fails on config %zu %s of '%s': %s", m->name,
                          in->config_index, where, name ? name : "?", msg);
    return errmsg_set(e, rc, "model '%s' fails %s of '%s': %s", m->name, where, name ? name : "?",
                      msg);
}

/*
 * Continues a pass from the checkpoint cc->resume: the shared state and every instance's
 * state back into the fresh instances, the source on to the checkpoint's record; *index
 * set to the records already replayed.
 */
static int pass_resume(const struct model_ops *m, struct record_source *src, struct instance *inst,
                       size_t n, struct thread_pool *pool, struct pass_ctx *pc, void *shared,
                       struct ckpt_ctx *cc, struct engine_stats *st, uint64_t *index,
                       struct errmsg *e)
{
    const struct ckpt *ck = cc->resume;
    int rc = 0;
    if (m->shared_load) {
        struct model_ckpt_in si = {ck->shared, (size_t)ck->shared_len, 0};
        struct errmsg se = {0, ""}; /* not e: its text goes into e's message */
        if ((rc = m->shared_load(shared, &si, &se)) || si.pos != si.len) {
            rc = errmsg_set(e, rc ? rc : ERR_DATA, "checkpoint '%s': bad shared state: %s",
                            cc->path, rc ? errmsg_text(&se) : "bytes left over");
            return rc;
        }
    }
    pc->phase = 3;
    pool_for(pool, n, pass_fn, pc);
    for (size_t i = 0; i < n; i++)
        if (inst[i].rc) {
            rc = errmsg_set(e, inst[i].rc,
                            "checkpoint '%s': model '%s' cannot load config "
                            "%zu: %s",
                            cc->path, m->name, inst[i].config_index, errmsg_text(&inst[i].err));
            return rc;
        }
    if ((rc = src->seek(src->ctx, ck->records, ck->position))) {
        rc = errmsg_set(e, rc, "checkpoint '%s': cannot continue at record %llu: %s", cc->path,
                        (unsigned long long)ck->records, src->errmsg(src->ctx));
        return rc;
    }
    *index = ck->records;
    st->resumed_records += ck->records;
    cc->resume = NULL;
    return 0;
}

/* One pass over the source for instances inst[0..n). */
static int run_pass(const struct model_ops *m, struct record_source *src, struct instance *inst,
                    size_t n, struct thread_pool *pool, const struct engine_opts *o,
                    const struct engine_sink *sink, struct ckpt_ctx *cc, struct engine_stats *st,
                    struct errmsg *e)
{
    struct model_env env = {
        .hdr = src->header(src->ctx), .trace_path = src->name, .sched = o->sched};
    void *shared = NULL;
    size_t cap = o->group_records ? o->group_records : 64;
    Acceltrace__Record **recs = mem_calloc(cap, sizeof *recs);
    struct model_record *group = mem_calloc(cap, sizeof *group);
    void **aux = mem_calloc(cap, sizeof *aux);
    int rc = 0;
    size_t n_group = 0;
    if (!recs || !group || !aux) {
        rc = errmsg_set(e, ERR_NOMEM, "out of memory");
        goto done;
    }
    if (m->shared_new && (rc = m->shared_new(&shared, &env, e)))
        goto done;
    env.shared = shared;
    struct pass_ctx pc = {m, inst, group, 0, &env, 0, cc->resume};
    pool_for(pool, n, pass_fn, &pc);
    for (size_t i = 0; i < n; i++)
        if (inst[i].rc) {
            rc = errmsg_set(e, inst[i].rc, "model '%s' rejects config %zu ('%s'): %s", m->name,
                            inst[i].config_index, hw_config_path(inst[i].cfg),
                            errmsg_text(&inst[i].err));
            goto done;
        }
    uint64_t index = 0;
    if (cc->resume && (rc = pass_resume(m, src, inst, n, pool, &pc, shared, cc, st, &index, e)))
        goto done;
    ckpt_schedule(cc, o, index, 0);
    struct progress prog;
    const uint64_t total = src->n_records ? src->n_records(src->ctx) : 0;
    progress_init(&prog, "replay", total, o->quiet);
    for (bool end = false; !end;) {
        n_group = 0;
        uint64_t b0 = src->bytes_read(src->ctx);
        while (n_group < cap && src->bytes_read(src->ctx) - b0 < o->group_bytes) {
            int k = src->next(src->ctx, &recs[n_group]);
            if (k < 0) {
                rc = errmsg_set(e, k, "%s", src->errmsg(src->ctx));
                goto done;
            }
            if (k == 0) {
                end = true;
                break;
            }
            group[n_group] = (struct model_record){recs[n_group], NULL, index++};
            n_group++;
            if (m->prepare) {
                if ((rc = m->prepare(shared, &group[n_group - 1], &aux[n_group - 1], e))) {
                    rc = model_err(e, rc, m, NULL, src->name, group[n_group - 1].index, e);
                    goto done;
                }
                group[n_group - 1].aux = aux[n_group - 1];
            }
        }
        st->records += n_group;
        if (n_group) {
            pc.phase = 1;
            pc.n_group = n_group;
            pool_for(pool, n, pass_fn, &pc);
            for (size_t i = 0; i < n; i++)
                if (inst[i].rc) {
                    rc = model_err(e, inst[i].rc, m, &inst[i], src->name, inst[i].fail_index,
                                   &inst[i].err);
                    goto done;
                }
        }
        for (size_t k = 0; k < n_group; k++) {
            if (aux[k] && m->aux_free)
                m->aux_free(shared, aux[k]);
            aux[k] = NULL;
            src->record_free(src->ctx, recs[k]);
            recs[k] = NULL;
        }
        n_group = 0;
        progress_update(&prog, index);
        /* (none after the last record: the rows follow at once) */
        if (!end && (!total || index < total) && ckpt_due(cc, index)) {
            double t0 = progress_now_s();
            if ((rc = ckpt_write(cc, m, src, shared, inst, n, index, st, e)))
                goto done;
            ckpt_schedule(cc, o, index, progress_now_s() - t0);
            if (o->stop_after_s >= 0 && progress_now_s() - cc->t0 >= o->stop_after_s) {
                st->stopped = true; /* rows of this pass wait for the rerun */
                progress_finish(&prog);
                goto done;
            }
        }
    }
    progress_finish(&prog);
    pc.phase = 2;
    pool_for(pool, n, pass_fn, &pc);
    for (size_t i = 0; i < n; i++) {
        if (inst[i].rc) {
            rc = model_err(e, inst[i].rc, m, &inst[i], src->name, UINT64_MAX, &inst[i].err);
            goto done;
        }
        struct errmsg we = {0};
        if ((rc = sink->rows(sink->ctx, inst[i].cfg, inst[i].config_index, &inst[i].res, o->energy,
                             &we))) {
            rc = errmsg_set(e, rc, "%s", errmsg_text(&we));
            goto done;
        }
        st->configs_run++;
    }
    /* every row of this pass is written: its checkpoint is spent */
    if (cc->on && remove(cc->path) != 0 && errno != ENOENT) {
        rc = errmsg_set(e, ERR_IO, "cannot remove checkpoint '%s': %s", cc->path, strerror(errno));
        goto done;
    }
done:
    for (size_t k = 0; k < n_group; k++) {
        if (aux && aux[k] && m->aux_free)
            m->aux_free(shared, aux[k]);
        if (recs && recs[k])
            src->record_free(src->ctx, recs[k]);
    }
    if (shared && m->shared_free)
        m->shared_free(shared);
    mem_free(recs);
    mem_free(group);
    mem_free(aux);
    return rc;
}

/* Frees the instances inst[0..n) (states, rows, configs) and zeroes them for reuse. */
static void free_instances(const struct model_ops *m, struct instance *inst, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (inst[i].state)
            m->free(inst[i].state);
        model_result_free(inst[i].res);
        hw_config_free(inst[i].cfg);
        memset(&inst[i], 0, sizeof inst[i]);
    }
}

/* Appends config c (index ci) to the batch, growing it. 0 or ERR_NOMEM (c not taken). */
static int batch_push(struct instance **inst, size_t *n, size_t *cap, struct hw_config *c,
                      size_t ci)
{
    size_t old = *cap;
    if (grow((void **)inst, cap, *n + 1, sizeof **inst))
        return ERR_NOMEM;
    memset(*inst + old, 0, (*cap - old) * sizeof **inst);
    (*inst)[*n].config_index = ci;
    (*inst)[*n].cfg = c;
    (*n)++;
    return 0;
}

/*
 * Configs are built batch by batch, never all at once (a grid of 10^6 configs holds one
 * batch of them): each batch takes the next configs not yet done, up to opts.batch_configs
 * or, by default, while the per-instance estimates (model_estimate_bytes, model.h) sum to
 * at most the memory limit (at least one instance) and at most ENGINE_MAX_BATCH_CONFIGS. A resumed
 * first batch is exactly the configs of its checkpoint; models without checkpoint hooks take at
 * most a quarter of the slice per batch when checkpoints are asked for (engine.h).
 */
int engine_run_to(const struct model_ops *m, struct record_source *source,
                  const struct engine_configs *configs, const struct engine_sink *sink,
                  const struct engine_opts *opts, struct engine_stats *stats, struct errmsg *e)
{
    struct engine_opts o;
    if (opts)
        o = *opts;
    else
        engine_opts_default(&o);
    if (o.threads < 1)
        o.threads = 1;
    if (!o.group_bytes)
        o.group_bytes = 64u << 20;
    struct engine_stats st;
    memset(&st, 0, sizeof st);
    if (stats)
        *stats = st; /* also when refused below */
    double t0 = progress_now_s();
    const Acceltrace__TraceHeader *hdr = source->header(source->ctx);
    if (m->workload && hdr && hdr->workload && strcmp(m->workload, hdr->workload))
        return errmsg_set(e, ERR_DATA, "model '%s' replays '%s' traces, '%s' is a '%s' trace",
                          m->name, m->workload, source->name, hdr->workload);
    size_t begin, end;
    sweep_shard(configs_count(configs), o.shard_i, o.shard_n, &begin, &end);
    st.configs_total = end - begin;
    struct instance *inst = NULL;
    size_t n = 0, cap = 0;
    struct hw_config *carry = NULL; /* taken from the sweep, left for the next batch */
    size_t carry_index = 0;
    struct thread_pool *pool = NULL;
    struct ckpt ck;
    struct ckpt_ctx cc;
    memset(&ck, 0, sizeof ck);
    memset(&cc, 0, sizeof cc);
    cc.t0 = t0;
    bool have_ck = false;
    int rc = 0;
    bool want_ckpt = o.checkpoint_dir && (o.checkpoint_s > 0 || o.checkpoint_records > 0);
    bool can_ckpt = m->save && m->load && source->position && source->seek;
    if (want_ckpt) {
        int n1 = snprintf(cc.path, sizeof cc.path, "%s/replay.ckpt", o.checkpoint_dir);
        int n2 = snprintf(cc.tmp, sizeof cc.tmp, "%s/replay.ckpt.tmp", o.checkpoint_dir);
        if (n1 < 0 || n2 < 0 || (size_t)n2 >= sizeof cc.tmp) {
            rc = errmsg_set(e, ERR_USAGE, "results folder name too long");
            goto done;
        }
        cc.on = can_ckpt;
        cc.build_id = engine_build_id(&o);
        if (can_ckpt) {
            int k = ckpt_read(cc.path, cc.build_id, m, source, sink, &ck, &st);
            if (k < 0) {
                rc = errmsg_set(e, k, "out of memory reading checkpoint '%s'", cc.path);
                goto done;
            }
            have_ck = k == 0;
        }
    }
    const uint64_t limit = o.mem_limit_bytes ? o.mem_limit_bytes : ENGINE_DEFAULT_MEM_LIMIT;
    size_t max_batch = o.batch_configs ? o.batch_configs : ENGINE_MAX_BATCH_CONFIGS;
    if (!o.batch_configs && want_ckpt && !can_ckpt && end - begin > 1) {
        size_t quarter = (end - begin + ENGINE_FALLBACK_PASSES - 1) / ENGINE_FALLBACK_PASSES;
        max_batch = quarter < max_batch ? quarter : max_batch;
    }
    size_t next = begin;
    for (;;) {
        /* the next batch: a resumed one holds the checkpoint's configs, whatever they cost */
        const bool resuming = have_ck && st.passes == 0;
        const size_t want = resuming ? ck.n : max_batch;
        const bool by_memory = !o.batch_configs && !resuming;
        uint64_t sum = 0;
        while (n < want) {
            struct hw_config *c;
            size_t ci;
            if (carry) {
                c = carry, ci = carry_index, carry = NULL;
            } else {
                if (next >= end)
                    break;
                ci = next++;
                if ((rc = configs_get(configs, ci, &c, e)))
                    goto done;
                if (sink_done(sink, hw_config_hash(c))) {
                    hw_config_free(c);
                    st.configs_skipped++;
                    continue;
                }
            }
            if (by_memory) {
                uint64_t b = model_estimate_bytes(m, c, hdr);
                if (n > 0 && b > limit - sum) {
                    carry = c, carry_index = ci;
                    break;
                }
                sum = b > limit - sum ? limit : sum + b;
            }
            if (batch_push(&inst, &n, &cap, c, ci)) {
                hw_config_free(c);
                rc = errmsg_set(e, ERR_NOMEM, "out of memory");
                goto done;
            }
        }
        if (n == 0)
            break;
        cc.resume = NULL;
        if (resuming && ckpt_matches(&ck, inst, n))
            cc.resume = &ck;
        else if (resuming)
            ckpt_note(&st, cc.path, "its configs are not the ones left to replay");
        if (!pool && !(pool = pool_new(o.threads))) {
            rc = errmsg_set(e, ERR_NOMEM, "cannot start %d threads", o.threads);
            goto done;
        }
        if ((rc = source->rewind(source->ctx))) {
            rc = errmsg_set(e, rc, "%s", source->errmsg(source->ctx));
            goto done;
        }
        st.passes++;
        if (n > st.batch_configs)
            st.batch_configs = n;
        rc = run_pass(m, source, inst, n, pool, &o, sink, &cc, &st, e);
        free_instances(m, inst, n);
        n = 0;
        if (rc || st.stopped)
            goto done;
    }
    /* a checkpoint left by a kill after its last rows were written, or one ignored, and a
     * temporary a kill cut short */
    if (want_ckpt && remove(cc.tmp) != 0 && errno != ENOENT) {
        rc = errmsg_set(e, ERR_IO, "cannot remove '%s': %s", cc.tmp, strerror(errno));
        goto done;
    }
    if (want_ckpt && remove(cc.path) != 0 && errno != ENOENT) {
        rc = errmsg_set(e, ERR_IO, "cannot remove checkpoint '%s': %s", cc.path, strerror(errno));
        goto done;
    }
done:
    if (inst)
        free_instances(m, inst, n);
    mem_free(inst);
    hw_config_free(carry);
    pool_free(pool);
    ckpt_release(&ck);
    buf_release(&cc.state);
    st.bytes_read = source->bytes_read(source->ctx);
    st.seconds = progress_now_s() - t0;
    if (stats)
        *stats = st;
    return rc;
}
