/*
 * engine_source: the record sources of engine.h that the engine replays from: a trace
 * file (read with trace_reader, rewound and positioned for checkpoints) and an in-memory
 * array of records (tests and captures that replay what they made).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/mem.h"
#include "replay/engine.h"
#include "traces/trace_hash.h"
#include "traces/trace_reader.h"

/* ---- trace file source ---- */

struct trace_src {
    char *path;
    int threads;
    struct trace_reader *r;
    /* A copy of the header, owned by the source: rewind replaces the reader (and the header
     * it owns), while the engine and the models keep this one across passes. */
    Acceltrace__TraceHeader *hdr;
    uint64_t bytes_before; /* bytes read by readers closed by rewind */
    uint64_t n_next;       /* next() calls since the reader was opened */
    char hash[80];
    struct errmsg err; /* the last error of the source */
};

static const Acceltrace__TraceHeader *ts_header(void *ctx)
{
    return ((struct trace_src *)ctx)->hdr;
}

/* Copies the reader's header into t->hdr (packed and unpacked again). 0 or ERR_NOMEM. */
static int ts_copy_header(struct trace_src *t)
{
    const Acceltrace__TraceHeader *h = trace_reader_header(t->r);
    if (!h)
        return 0;
    size_t n = acceltrace__trace_header__get_packed_size(h);
    uint8_t *b = mem_alloc(n ? n : 1);
    if (!b)
        return ERR_NOMEM;
    acceltrace__trace_header__pack(h, b);
    t->hdr = acceltrace__trace_header__unpack(NULL, n, b);
    mem_free(b);
    return t->hdr ? 0 : ERR_NOMEM;
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
        errmsg_set(&t->err, rc, "%s", trace_reader_errmsg(t->r));
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
    return trace_reader_open(&t->r, t->path, &o, &t->err);
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
    int rc = ts_open_reader(t);
    if (rc)
        return rc;
    /* every pass must read the same trace: the rows of one run come from one content */
    const char *h = trace_reader_content_hash(t->r);
    if (h && *h && strcmp(h, t->hash))
        return errmsg_set(&t->err, ERR_DATA, "trace '%s' changed between passes of the replay",
                          t->path);
    return 0;
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
    return ((struct trace_src *)ctx)->err.text;
}

/* Byte offset past the last frame returned: where the next record's frame starts. */
static uint64_t ts_position(void *ctx)
{
    struct trace_src *t = ctx;
    return t->r ? trace_reader_offset(t->r) : 0;
}

/* The frame after `records` records is frame records + 1 (the header is frame 0). */
static int ts_seek(void *ctx, uint64_t records, uint64_t position)
{
    struct trace_src *t = ctx;
    if (!t->r)
        return ERR_INTERNAL;
    int rc = trace_reader_seek(t->r, position, records + 1);
    if (rc)
        errmsg_set(&t->err, rc, "%s", trace_reader_errmsg(t->r));
    t->n_next = records + 1; /* a later rewind reopens */
    return rc;
}

static void ts_close(void *ctx)
{
    struct trace_src *t = ctx;
    if (!t)
        return;
    trace_reader_free(t->r);
    if (t->hdr)
        acceltrace__trace_header__free_unpacked(t->hdr, NULL);
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
        errmsg_set(e, rc, "%s", t->err.text);
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
    if (ts_copy_header(t)) {
        ts_close(t);
        return errmsg_set(e, ERR_NOMEM, "out of memory");
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
    s->position = ts_position;
    s->seek = ts_seek;
    return 0;
}

/* ---- memory source ---- */

struct mem_src {
    uint8_t **packed; /* (n) packed records */
    size_t *len;      /* (n) */
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

/* The memory source's position is the number of the next record. */
static uint64_t ms_position(void *ctx)
{
    return ((struct mem_src *)ctx)->pos;
}

/* Continues at record `records` (position must say the same). */
static int ms_seek(void *ctx, uint64_t records, uint64_t position)
{
    struct mem_src *m = ctx;
    if (records != position || records > m->n)
        return ERR_DATA;
    m->pos = (size_t)records;
    return 0;
}

static const char *ms_err(void *ctx)
{
    (void)ctx;
    return "cannot decode record, or bad position";
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
    s->position = ms_position;
    s->seek = ms_seek;
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
