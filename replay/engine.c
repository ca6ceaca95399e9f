/*
 * engine: one-pass replay (see engine.h). The reading thread decodes a group of records,
 * runs the model's prepare() on each, then pool_for splits the instances over the
 * threads; each thread feeds the whole group to its instances. Synchronising once per
 * group (not per record) keeps the thread overhead small against decoding.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/mem.h"
#include "common/progress.h"
#include "common/sha256.h"
#include "common/threads.h"
#include "replay/engine.h"
#include "traces/trace_hash.h"
#include "traces/trace_reader.h"

/* ---- trace file source ---- */

struct trace_src {
    char *path;
    int threads;
    struct trace_reader *r;
    uint64_t bytes_before; /* bytes read by readers closed by rewind */
    uint64_t n_next;       /* next() calls since the reader was opened */
    char hash[80];
    char err[512];
};

static const Acceltrace__TraceHeader *ts_header(void *ctx)
{
    struct trace_src *t = ctx;
    return trace_reader_header(t->r);
}

static const char *ts_hash(void *ctx)
{
    return ((struct trace_src *)ctx)->hash;
}

static int ts_next(void *ctx, Acceltrace__Record **rec)
{
    struct trace_src *t = ctx;
    t->n_next++;
    int rc = trace_reader_next(t->r, rec, NULL);
    if (rc < 0)
        snprintf(t->err, sizeof t->err, "%s", trace_reader_errmsg(t->r));
    return rc;
}

static void ts_free_rec(void *ctx, Acceltrace__Record *rec)
{
    (void)ctx;
    trace_record_free(rec);
}

static int ts_open_reader(struct trace_src *t)
{
    struct trace_reader_opts o;
    trace_reader_opts_default(&o);
    o.threads = t->threads;
    return trace_reader_open(&t->r, t->path, &o, t->err, sizeof t->err);
}

static int ts_rewind(void *ctx)
{
    struct trace_src *t = ctx;
    if (t->r && t->n_next == 0)
        return 0; /* still at the first record: nothing to redo */
    t->n_next = 0;
    if (t->r)
        t->bytes_before += trace_reader_bytes_read(t->r);
    trace_reader_free(t->r);
    t->r = NULL;
    return ts_open_reader(t);
}

static uint64_t ts_bytes(void *ctx)
{
    struct trace_src *t = ctx;
    return t->bytes_before + (t->r ? trace_reader_bytes_read(t->r) : 0);
}

static uint64_t ts_n_records(void *ctx)
{
    struct trace_src *t = ctx;
    const Acceltrace__TraceIndex *ix = t->r ? trace_reader_index(t->r) : NULL;
    uint64_t n = 0;
    for (size_t i = 0; ix && i < ix->n_entries; i++)
        n += ix->entries[i]->record_type != ACCELTRACE__RECORD__BODY_HEADER;
    return n;
}

static const char *ts_err(void *ctx)
{
    return ((struct trace_src *)ctx)->err;
}

static void ts_close(void *ctx)
{
    struct trace_src *t = ctx;
    if (!t)
        return;
    trace_reader_free(t->r);
    mem_free(t->path);
    mem_free(t);
}

int record_source_trace(struct record_source *s, const char *path, int decode_threads,
                        struct errmsg *e)
{
    memset(s, 0, sizeof *s);
    struct trace_src *t = mem_calloc(1, sizeof *t);
    if (!t || !(t->path = mem_strdup(path))) {
        mem_free(t);
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    }
    t->threads = decode_threads > 0 ? decode_threads : 1;
    int rc = ts_open_reader(t);
    if (rc) {
        errmsg_set(e, rc, "%s", t->err);
        ts_close(t);
        return rc;
    }
    const char *h = trace_reader_content_hash(t->r);
    if (h && *h) {
        snprintf(t->hash, sizeof t->hash, "%s", h);
    } else {
        /* No index: key by the header's parameter hash (documented in README). */
        const Acceltrace__TraceHeader *hd = trace_reader_header(t->r);
        char hex[65];
        const char *ph = hd && hd->params_hash ? hd->params_hash : "";
        sha256_hex(ph, strlen(ph), hex);
        snprintf(t->hash, sizeof t->hash, "%s", *ph ? ph : hex);
    }
    s->ctx = t;
    s->name = t->path;
    s->header = ts_header;
    s->content_hash = ts_hash;
    s->next = ts_next;
    s->record_free = ts_free_rec;
    s->rewind = ts_rewind;
    s->bytes_read = ts_bytes;
    s->errmsg = ts_err;
    s->close = ts_close;
    s->n_records = ts_n_records;
    return 0;
}

/* ---- memory source ---- */

struct mem_src {
    uint8_t **packed;    /* (n) packed records */
    size_t *len;         /* (n) */
    size_t n, pos;
    Acceltrace__TraceHeader *hdr;
    uint64_t bytes;
    char hash[65];
};

static const Acceltrace__TraceHeader *ms_header(void *ctx)
{
    return ((struct mem_src *)ctx)->hdr;
}

static const char *ms_hash(void *ctx)
{
    return ((struct mem_src *)ctx)->hash;
}

static int ms_next(void *ctx, Acceltrace__Record **rec)
{
    struct mem_src *m = ctx;
    if (m->pos >= m->n)
        return 0;
    size_t i = m->pos++;
    m->bytes += m->len[i];
    *rec = acceltrace__record__unpack(NULL, m->len[i], m->packed[i]);
    return *rec ? 1 : ERR_DATA;
}

static void ms_free_rec(void *ctx, Acceltrace__Record *rec)
{
    (void)ctx;
    if (rec)
        acceltrace__record__free_unpacked(rec, NULL);
}

static int ms_rewind(void *ctx)
{
    ((struct mem_src *)ctx)->pos = 0;
    return 0;
}

static uint64_t ms_bytes(void *ctx)
{
    return ((struct mem_src *)ctx)->bytes;
}

static uint64_t ms_n_records(void *ctx)
{
    return ((struct mem_src *)ctx)->n;
}

static const char *ms_err(void *ctx)
{
    (void)ctx;
    return "cannot decode record";
}

static void ms_close(void *ctx)
{
    struct mem_src *m = ctx;
    if (!m)
        return;
    for (size_t i = 0; m->packed && i < m->n; i++)
        mem_free(m->packed[i]);
    mem_free(m->packed);
    mem_free(m->len);
    if (m->hdr)
        acceltrace__trace_header__free_unpacked(m->hdr, NULL);
    mem_free(m);
}

int record_source_mem(struct record_source *s, const Acceltrace__TraceHeader *hdr,
                      Acceltrace__Record *const *recs, size_t n_recs)
{
    memset(s, 0, sizeof *s);
    struct mem_src *m = mem_calloc(1, sizeof *m);
    if (!m)
        return ERR_NOMEM;
    m->packed = mem_calloc(n_recs + 1, sizeof *m->packed);
    m->len = mem_calloc(n_recs + 1, sizeof *m->len);
    if (!m->packed || !m->len)
        goto fail;
    m->n = n_recs;
    /* the content hash of traces (traces/trace_hash.h), here over header + records */
    struct trace_hash th;
    if (trace_hash_init(&th, TRACE_HASH_XXH3_128))
        goto fail;
    size_t hl = acceltrace__trace_header__get_packed_size(hdr);
    uint8_t *hb = mem_alloc(hl + 1);
    if (!hb)
        goto fail_hash;
    acceltrace__trace_header__pack(hdr, hb);
    m->hdr = acceltrace__trace_header__unpack(NULL, hl, hb);
    trace_hash_update(&th, hb, hl);
    mem_free(hb);
    if (!m->hdr)
        goto fail_hash;
    for (size_t i = 0; i < n_recs; i++) {
        m->len[i] = acceltrace__record__get_packed_size(recs[i]);
        if (!(m->packed[i] = mem_alloc(m->len[i] + 1)))
            goto fail_hash;
        acceltrace__record__pack(recs[i], m->packed[i]);
        trace_hash_update(&th, m->packed[i], m->len[i]);
    }
    trace_hash_hex(&th, m->hash);
    trace_hash_release(&th);
    s->ctx = m;
    s->name = "(memory)";
    s->header = ms_header;
    s->content_hash = ms_hash;
    s->next = ms_next;
    s->record_free = ms_free_rec;
    s->rewind = ms_rewind;
    s->bytes_read = ms_bytes;
    s->errmsg = ms_err;
    s->close = ms_close;
    s->n_records = ms_n_records;
    return 0;
fail_hash:
    trace_hash_release(&th);
fail:
    ms_close(m);
    return ERR_NOMEM;
}

void record_source_close(struct record_source *s)
{
    if (s && s->close)
        s->close(s->ctx);
    if (s)
        memset(s, 0, sizeof *s);
}

/* ---- engine ---- */

void engine_opts_default(struct engine_opts *o)
{
    memset(o, 0, sizeof *o);
    o->threads = 1;
    o->group_records = 64;
    o->group_bytes = 64u << 20;
}

struct instance {
    size_t config_index;
    struct hw_config *cfg;
    void *state;
    int rc;
    struct errmsg err;
    struct model_result *res;
};

struct pass_ctx {
    const struct model_ops *m;
    struct instance *inst;
    struct model_record *group;
    size_t n_group;
    const struct model_env *env;
    int phase; /* 0 new, 1 consume, 2 finish */
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
            in->rc = p->m->new(&in->state, in->cfg, p->env, &in->err);
            break;
        case 1:
            for (size_t k = 0; k < p->n_group && !in->rc; k++)
                in->rc = p->m->consume(in->state, &p->group[k], &in->err);
            break;
        case 2:
            if (!(in->res = model_result_new())) {
                in->rc = errmsg_set(&in->err, ERR_NOMEM, "out of memory");
                break;
            }
            in->rc = p->m->finish(in->state, in->res, &in->err);
            break;
        }
        if (in->rc && !in->err.code)
            errmsg_set(&in->err, in->rc, "%s", err_str(in->rc));
    }
}

/* One pass over the source for instances inst[0..n). */
static int run_pass(const struct model_ops *m, struct record_source *src, struct instance *inst,
                    size_t n, struct thread_pool *pool, const struct engine_opts *o,
                    struct results *res, struct engine_stats *st, struct errmsg *e)
{
    struct model_env env = {.hdr = src->header(src->ctx), .trace_path = src->name};
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
    struct pass_ctx pc = {m, inst, group, 0, &env, 0};
    pool_for(pool, n, pass_fn, &pc);
    for (size_t i = 0; i < n; i++)
        if (inst[i].rc) {
            rc = errmsg_set(e, inst[i].rc, "model '%s' rejects config %zu ('%s'): %s", m->name,
                            inst[i].config_index, hw_config_path(inst[i].cfg),
                            errmsg_text(&inst[i].err));
            goto done;
        }
    struct progress prog;
    progress_init(&prog, "replay", src->n_records ? src->n_records(src->ctx) : 0, o->quiet);
    uint64_t index = 0;
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
                if ((rc = m->prepare(shared, &group[n_group - 1], &aux[n_group - 1], e)))
                    goto done;
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
                    rc = errmsg_set(e, inst[i].rc, "model '%s' fails on config %zu: %s", m->name,
                                    inst[i].config_index, errmsg_text(&inst[i].err));
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
    }
    progress_finish(&prog);
    pc.phase = 2;
    pool_for(pool, n, pass_fn, &pc);
    for (size_t i = 0; i < n; i++) {
        if (inst[i].rc) {
            rc = errmsg_set(e, inst[i].rc, "model '%s' fails on config %zu: %s", m->name,
                            inst[i].config_index, errmsg_text(&inst[i].err));
            goto done;
        }
        struct errmsg we = {0};
        if ((rc = results_append(res, inst[i].cfg, inst[i].config_index, inst[i].res, o->energy,
                                 &we))) {
            rc = errmsg_set(e, rc, "%s", errmsg_text(&we));
            goto done;
        }
        st->configs_run++;
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

int engine_run(const struct model_ops *m, struct record_source *source,
               const struct sweep *sweep, struct results *res, const struct engine_opts *opts,
               struct engine_stats *stats, struct errmsg *e)
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
    struct engine_stats st = {0};
    double t0 = progress_now_s();
    const Acceltrace__TraceHeader *hdr = source->header(source->ctx);
    if (m->workload && hdr && hdr->workload && strcmp(m->workload, hdr->workload))
        return errmsg_set(e, ERR_DATA, "model '%s' replays '%s' traces, '%s' is a '%s' trace",
                          m->name, m->workload, source->name, hdr->workload);
    size_t begin, end;
    sweep_shard(sweep_count(sweep), o.shard_i, o.shard_n, &begin, &end);
    st.configs_total = end - begin;
    struct instance *inst = mem_calloc(end - begin + 1, sizeof *inst);
    struct thread_pool *pool = NULL;
    size_t n_todo = 0;
    int rc = 0;
    if (!inst) {
        rc = errmsg_set(e, ERR_NOMEM, "out of memory");
        goto done;
    }
    for (size_t i = begin; i < end; i++) {
        struct hw_config *c;
        if ((rc = sweep_config(sweep, i, &c, e)))
            goto done;
        if (results_done(res, hw_config_hash(c))) {
            hw_config_free(c);
            st.configs_skipped++;
            continue;
        }
        inst[n_todo].config_index = i;
        inst[n_todo].cfg = c;
        n_todo++;
    }
    if (n_todo && !(pool = pool_new(o.threads))) {
        rc = errmsg_set(e, ERR_NOMEM, "cannot start %d threads", o.threads);
        goto done;
    }
    size_t batch = o.batch_configs ? o.batch_configs : n_todo;
    for (size_t b = 0; b < n_todo; b += batch) {
        size_t nb = n_todo - b < batch ? n_todo - b : batch;
        if ((rc = source->rewind(source->ctx))) {
            rc = errmsg_set(e, rc, "%s", source->errmsg(source->ctx));
            goto done;
        }
        st.passes++;
        rc = run_pass(m, source, inst + b, nb, pool, &o, res, &st, e);
        for (size_t i = b; i < b + nb; i++) {
            if (inst[i].state)
                m->free(inst[i].state);
            inst[i].state = NULL;
            model_result_free(inst[i].res);
            inst[i].res = NULL;
        }
        if (rc)
            goto done;
    }
done:
    for (size_t i = 0; inst && i < n_todo; i++) {
        if (inst[i].state)
            m->free(inst[i].state);
        model_result_free(inst[i].res);
        hw_config_free(inst[i].cfg);
    }
    mem_free(inst);
    pool_free(pool);
    st.bytes_read = source->bytes_read(source->ctx);
    st.seconds = progress_now_s() - t0;
    if (stats)
        *stats = st;
    return rc;
}
