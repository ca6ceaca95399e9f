/*
 * The .atr reader (docs/trace-format.md). This file opens, streams, finds and seeks;
 * trace_reader_frame.c decodes one frame and trace_reader_index.c loads the index
 * (trace_reader_impl.h).
 *
 * With one thread, frames are read, checked, decompressed and unpacked one at a time.
 * With opts.threads > 1 the reader keeps a ring of up to `batch` frames read ahead:
 * trace_reader_next reads frames in order into free slots (the caller's thread does all
 * reading), opts.threads - 1 worker threads check and decompress them while the caller
 * unpacks and returns earlier ones, and the caller decompresses too when the next frame in
 * order has not been taken by a worker. Records are unpacked and returned in file order on
 * the caller's thread; an error is reported when its frame comes up in order. Every length from the
 * file is bounded before it is used: the payload by 1 GiB and by the bytes left in the file, the
 * decompressed size by the zstd frame's declared content size and opts.max_record_bytes, and the
 * unpacked protobuf by an allocation budget of the same cap.
 */
#include "traces/trace_reader.h"
#include "traces/trace_salca.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "common/buf.h"
#include "common/crc32c.h"
#include "common/mem.h"
#include "traces/trace_hash.h"
#include "traces/trace_internal.h"
#include "traces/trace_reader_impl.h"

/* ---- options, errors ---- */

bool trace_reader_global_allow_partial;

void trace_reader_opts_default(struct trace_reader_opts *o)
{
    memset(o, 0, sizeof *o);
    o->max_record_bytes = TRACE_MAX_PAYLOAD;
    o->threads = 1;
    o->ignore_index = false;
    /* XXH3 runs at many GB/s against decoding's few hundred MB/s, so every streaming
     * reader checks the content hash (measured: docs/trace-format.md "Damaged traces") */
    o->compute_hash = true;
    o->allow_partial = trace_reader_global_allow_partial;
    o->warn_damage = true;
}

/* ---- damage: the warning hook, once per distinct message ---- */

#define WARNED_MAX 64

static void (*warn_hook)(const char *msg);
static pthread_mutex_t warn_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t warned[WARNED_MAX]; /* FNV-1a of the messages handed to the hook */
static size_t n_warned;

void trace_reader_set_warn_hook(void (*hook)(const char *msg))
{
    pthread_mutex_lock(&warn_mu);
    warn_hook = hook;
    n_warned = 0;
    pthread_mutex_unlock(&warn_mu);
}

/* Hands msg to the hook unless it already had it (a replay reopens its trace every pass). */
static void warn_once(const char *msg)
{
    uint64_t h = UINT64_C(14695981039346656037);
    for (const char *p = msg; *p; p++)
        h = (h ^ (unsigned char)*p) * UINT64_C(1099511628211);
    pthread_mutex_lock(&warn_mu);
    bool seen = false;
    for (size_t i = 0; i < n_warned && !seen; i++)
        seen = warned[i] == h;
    if (!seen && warn_hook) {
        warned[n_warned++ % WARNED_MAX] = h;
        if (n_warned > WARNED_MAX)
            n_warned = WARNED_MAX;
        warn_hook(msg);
    }
    pthread_mutex_unlock(&warn_mu);
}

/* Records damage accepted under allow_partial (the first one is kept) and warns. */
void tr_accept_damage(struct trace_reader *r, const char *msg)
{
    if (!r->damage.code)
        errmsg_set(&r->damage, ERR_DATA, "%s", msg);
    if (r->opts.warn_damage)
        warn_once(msg);
}

/*
 * Whether frame fi, whose decoded record has keys rk, agrees with index entry en (offset,
 * type, sizes, keys); when not, *what says which field differs and how.
 */
int trace_entry_check(const Acceltrace__IndexEntry *en, const struct trace_frame_info *fi,
                      const struct trace_key *rk, char *what, size_t what_len)
{
    /* the offset as a signed number only for this comparison: the mapping is one to one */
    const struct {
        const char *field;
        long long in_index, in_frame;
    } f[] = {
        {"offset", (long long)en->offset, (long long)fi->offset},
        {"type", en->record_type, fi->type},
        {"stored bytes", en->stored_bytes, fi->stored_bytes},
        {"raw bytes", (long long)en->raw_bytes, (long long)fi->raw_bytes},
        {"step", en->step, rk->step},
        {"layer", en->layer, rk->layer},
        {"head", en->head, rk->head},
    };
    for (size_t i = 0; i < sizeof f / sizeof *f; i++)
        if (f[i].in_index != f[i].in_frame) {
            snprintf(what, what_len,
                     "index entry disagrees with the frame: %s %lld in the index, %lld in the "
                     "frame",
                     f[i].field, f[i].in_index, f[i].in_frame);
            return ERR_DATA;
        }
    return 0;
}

const char *trace_reader_errmsg(const struct trace_reader *r)
{
    return r ? errmsg_text(&r->err) : "no reader";
}

/* ---- worker threads (threads > 1) ---- */

/* The first frame of the ring, in file order, that no thread has taken. Under r->mu. */
static struct job *first_ready(struct trace_reader *r)
{
    for (size_t i = 0; i < r->n_jobs; i++) {
        struct job *j = &r->jobs[(r->job_next + i) % r->batch];
        if (j->state == JOB_READ)
            return j;
    }
    return NULL;
}

/* Decompresses ring frames as they are read, until stop. */
static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct trace_reader *r = w->r;
    pthread_mutex_lock(&r->mu);
    while (!r->stop) {
        struct job *j = first_ready(r);
        if (!j) {
            pthread_cond_wait(&r->work_cv, &r->mu);
            continue;
        }
        j->state = JOB_BUSY;
        pthread_mutex_unlock(&r->mu);
        tr_decompress_job(j, r->dctx[w->idx], r->opts.max_record_bytes, r->name);
        pthread_mutex_lock(&r->mu);
        j->state = JOB_DONE;
        if (r->caller_waiting)
            pthread_cond_signal(&r->done_cv);
    }
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

/* Starts opts.threads - 1 workers (zstd contexts 1..). 0 or ERR_NOMEM. */
static int start_workers(struct trace_reader *r)
{
    if (pthread_mutex_init(&r->mu, NULL))
        return ERR_NOMEM;
    if (pthread_cond_init(&r->work_cv, NULL)) {
        pthread_mutex_destroy(&r->mu);
        return ERR_NOMEM;
    }
    if (pthread_cond_init(&r->done_cv, NULL)) {
        pthread_cond_destroy(&r->work_cv);
        pthread_mutex_destroy(&r->mu);
        return ERR_NOMEM;
    }
    r->sync_ready = true;
    int n = r->opts.threads - 1;
    r->workers = mem_calloc((size_t)n, sizeof *r->workers);
    if (!r->workers)
        return ERR_NOMEM;
    for (int i = 0; i < n; i++) {
        r->workers[i].r = r;
        r->workers[i].idx = i + 1;
        if (pthread_create(&r->workers[i].thread, NULL, worker_main, &r->workers[i]))
            return ERR_NOMEM;
        r->n_workers++;
    }
    return 0;
}

/* Stops and joins the workers (each finishes the frame it is decompressing). */
static void stop_workers(struct trace_reader *r)
{
    if (!r->sync_ready)
        return;
    pthread_mutex_lock(&r->mu);
    r->stop = true;
    pthread_cond_broadcast(&r->work_cv);
    pthread_mutex_unlock(&r->mu);
    for (int i = 0; i < r->n_workers; i++)
        pthread_join(r->workers[i].thread, NULL);
    mem_free(r->workers);
    r->workers = NULL;
    r->n_workers = 0;
    pthread_cond_destroy(&r->done_cv);
    pthread_cond_destroy(&r->work_cv);
    pthread_mutex_destroy(&r->mu);
    r->sync_ready = false;
}

/* ---- open / free ---- */

/* The message of a failed open for the caller's e (may be NULL). */
static void open_err(struct errmsg *e, int code, const char *s)
{
    if (e)
        errmsg_set(e, code, "%s", s);
}

static int reader_open(struct trace_reader **out, struct src *s, bool own, const char *name,
                       const struct trace_reader_opts *opts, struct errmsg *e)
{
    *out = NULL;
    struct trace_reader *r = mem_calloc(1, sizeof *r);
    if (!r) {
        if (own)
            src_close(s);
        open_err(e, ERR_NOMEM, "out of memory");
        return ERR_NOMEM;
    }
    int rc;
    if (own) {
        r->own = *s;
        r->src = &r->own;
    } else {
        r->src = s;
    }
    if (opts)
        r->opts = *opts;
    else
        trace_reader_opts_default(&r->opts);
    if (r->opts.max_record_bytes == 0 || r->opts.max_record_bytes > TRACE_MAX_PAYLOAD * 4)
        r->opts.max_record_bytes = TRACE_MAX_PAYLOAD;
    if (r->opts.threads < 1)
        r->opts.threads = 1;
    if (r->opts.threads > 64)
        r->opts.threads = 64;
    r->name = mem_strdup(name ? name : "(memory)");
    if (!r->name) {
        rc = errmsg_set(&r->err, ERR_NOMEM, "out of memory");
        goto fail;
    }
    r->n_dctx = r->opts.threads;
    /* Read-ahead ring of 8 frames per thread: enough that the workers rarely run dry (32
     * per thread was no faster in bench_trace), small enough that 128 KiB frames are
     * still in a 1 MiB L2 cache when they are unpacked (decision) */
    r->batch = r->opts.threads > 1 ? (size_t)r->opts.threads * 8 : 1;
    r->dctx = mem_calloc((size_t)r->n_dctx, sizeof *r->dctx);
    r->jobs = mem_calloc(r->batch, sizeof *r->jobs);
    if (!r->dctx || !r->jobs) {
        rc = errmsg_set(&r->err, ERR_NOMEM, "out of memory");
        goto fail;
    }
    for (int i = 0; i < r->n_dctx; i++)
        if (!(r->dctx[i] = ZSTD_createDCtx())) {
            rc = errmsg_set(&r->err, ERR_NOMEM, "out of memory (zstd context)");
            goto fail;
        }
    if (r->opts.threads > 1 && start_workers(r)) {
        rc = errmsg_set(&r->err, ERR_NOMEM, "cannot start %d threads", r->opts.threads);
        goto fail;
    }
    uint8_t pre[TRACE_PREAMBLE_BYTES];
    size_t got;
    if (src_read_at(r->src, 0, pre, sizeof pre, &got)) {
        rc = errmsg_set(&r->err, ERR_IO, "cannot read '%s'", r->name);
        goto fail;
    }
    if (got < 8 || memcmp(pre, TRACE_MAGIC, 8) != 0) {
        rc = errmsg_set(&r->err, ERR_FORMAT, "not an acceltrace trace (bad magic) ('%s' offset 0)",
                        r->name);
        goto fail;
    }
    if (got < sizeof pre) {
        rc = errmsg_set(&r->err, ERR_DATA, "truncated preamble ('%s' offset %zu)", r->name, got);
        goto fail;
    }
    uint16_t major = trace_get_u16(pre + 8), minor = trace_get_u16(pre + 10);
    uint32_t flags = trace_get_u32(pre + 12);
    if (major != TRACE_MAJOR) {
        rc = errmsg_set(&r->err, ERR_FORMAT,
                        "unsupported trace format %u.%u (this reader reads %u.x) ('%s' offset 8)",
                        major, minor, TRACE_MAJOR, r->name);
        goto fail;
    }
    r->major = major;
    r->minor = minor;
    if (flags != 0) {
        rc = errmsg_set(&r->err, ERR_FORMAT, "unknown preamble flags 0x%x ('%s' offset 12)", flags,
                        r->name);
        goto fail;
    }
    struct job *j = &r->jobs[0];
    uint64_t size = r->src->size;
    rc = tr_read_frame(r, TRACE_PREAMBLE_BYTES, size, 0, j, &r->err);
    if (!rc && j->fi.type != TRACE_TYPE_HEADER)
        rc = tr_frame_err(&r->err, ERR_DATA, r->name, 0, TRACE_PREAMBLE_BYTES,
                          "first frame is a %s record, not the header",
                          trace_record_type_name(j->fi.type));
    if (!rc && tr_decode_job(j, r->dctx[0], r->opts.max_record_bytes, r->name))
        rc = errmsg_set(&r->err, j->err.code, "%s", j->err.text);
    if (rc)
        goto fail;
    r->header_rec = j->rec;
    j->rec = NULL;
    r->last = j->fi;
    r->last_job = j;
    r->frames_read = 1;
    r->next_number = 1;
    r->pos = TRACE_PREAMBLE_BYTES + TRACE_FRAME_HEADER_BYTES + (uint64_t)j->fi.stored_bytes;
    r->end = size;
    if (r->opts.ignore_index) {
        tr_index_problem(r, ERR_NOTFOUND, r->pos, "index not read");
    } else {
        tr_load_index(r, r->pos);
        /* one policy for every opener: a trace without a usable index (a killed capture,
         * a cut or damaged file) is refused unless the caller accepts partial traces */
        int ic = r->index_err.code;
        if (ic && !r->opts.allow_partial) {
            rc =
                errmsg_set(&r->err, ic == ERR_NOMEM || ic == ERR_IO ? ic : ERR_DATA,
                           "damaged trace: %s; --allow-partial reads it anyway", r->index_err.text);
            goto fail;
        }
        if (ic)
            tr_accept_damage(r, r->index_err.text);
    }
    r->hashing = r->opts.compute_hash || !r->index;
    if (r->hashing) {
        /* an older trace's index holds a SHA-256: recompute that to compare (trace_hash.h) */
        enum trace_hash_alg alg = TRACE_HASH_XXH3_128;
        if (r->index)
            trace_hash_alg_of(r->index->content_hash, &alg);
        rc = trace_hash_init(&r->hash, alg);
        if (rc) {
            errmsg_set(&r->err, rc, "out of memory (content hash of '%s')", r->name);
            goto fail;
        }
        /* the header frame's payload is still in jobs[0] (tr_load_index uses its own job) */
        trace_hash_update(&r->hash, j->raw, j->raw_len);
    }
    *out = r;
    return 0;
fail:
    open_err(e, rc, errmsg_text(&r->err));
    trace_reader_free(r);
    return rc;
}

int trace_reader_open_src(struct trace_reader **out, struct src *s, const char *name,
                          const struct trace_reader_opts *opts, struct errmsg *e)
{
    return reader_open(out, s, false, name, opts, e);
}

int trace_reader_open(struct trace_reader **out, const char *path,
                      const struct trace_reader_opts *opts, struct errmsg *e)
{
    struct src s;
    struct errmsg se = {0, ""};
    *out = NULL;
    int rc = src_open_file(&s, path, &se);
    if (rc) {
        open_err(e, rc, errmsg_text(&se));
        return rc;
    }
    return reader_open(out, &s, true, path, opts, e);
}

void trace_reader_free(struct trace_reader *r)
{
    if (!r)
        return;
    stop_workers(r);
    if (r->src == &r->own)
        src_close(&r->own);
    trace_record_free(r->header_rec);
    trace_record_free(r->index_rec);
    if (r->jobs)
        for (size_t i = 0; i < r->batch; i++)
            tr_job_release(&r->jobs[i]);
    mem_free(r->jobs);
    tr_job_release(&r->find_job);
    if (r->dctx)
        for (int i = 0; i < r->n_dctx; i++)
            ZSTD_freeDCtx(r->dctx[i]);
    mem_free(r->dctx);
    mem_free(r->order);
    mem_free(r->name);
    trace_hash_release(&r->hash);
    mem_free(r);
}

/* ---- streaming ---- */

/*
 * Reads the frame at r->pos into j for streaming: 1 read (r->pos advanced, *declared set
 * to what decompressing it may allocate), 0 at the end of the stream (r->at_end), <0 error
 * (r->pending_rc/pending_err, reported once every earlier frame was returned).
 */
static int read_stream_frame(struct trace_reader *r, struct job *j, uint64_t *declared)
{
    if (r->pos == r->end) {
        r->at_end = true;
        return 0;
    }
    int rc = tr_read_frame(r, r->pos, r->end, r->next_number, j, &r->pending_err);
    if (rc)
        return r->pending_rc = rc;
    if (j->fi.type == TRACE_TYPE_INDEX) {
        /* Without a valid index the stream ends at an index frame followed by no more than
         * a trailer (whole or cut). Anywhere else, and always with a valid index (the
         * stream ends before it), it is damage: taking it as the end would silently drop
         * the rest of the trace (a single flipped bit makes a disc_step frame one). */
        uint64_t after = r->pos + TRACE_FRAME_HEADER_BYTES + (uint64_t)j->fi.stored_bytes;
        uint64_t rest = r->src->size > after ? r->src->size - after : 0;
        if (!r->index && rest <= TRACE_TRAILER_BYTES) {
            /* the last frame, before at most a trailer: the end when it indexes the frames
             * before it, or is damaged itself (the index problem already says so); a
             * record whose type byte was damaged, last before a cut, is intact but indexes
             * nothing */
            bool damaged = crc32c_update(0, j->stored.data, j->stored.len) != j->crc;
            int dc = damaged ? 0 : tr_decode_job(j, r->dctx[0], r->opts.max_record_bytes, r->name);
            bool indexes =
                damaged || (dc == 0 && j->rec->index && j->rec->index->n_entries == j->fi.number);
            if (dc == ERR_NOMEM)
                r->pending_err = j->err;
            tr_job_reset(j);
            if (dc == ERR_NOMEM)
                return r->pending_rc = dc;
            if (indexes) {
                r->at_end = true;
                return 0;
            }
            return r->pending_rc =
                       tr_frame_err(&r->pending_err, ERR_DATA, r->name, j->fi.number, j->fi.offset,
                                    "index frame that does not index the %llu frames before it",
                                    (unsigned long long)j->fi.number);
        }
        return r->pending_rc =
                   tr_frame_err(&r->pending_err, ERR_DATA, r->name, j->fi.number, j->fi.offset,
                                "index frame before the end of the trace (%llu bytes "
                                "follow)",
                                (unsigned long long)rest);
    }
    if (j->fi.type == TRACE_TYPE_HEADER)
        return r->pending_rc = tr_frame_err(&r->pending_err, ERR_DATA, r->name, j->fi.number,
                                            j->fi.offset, "second header record");
    r->pos += TRACE_FRAME_HEADER_BYTES + (uint64_t)j->fi.stored_bytes;
    r->next_number++;
    /* what decoding this frame may allocate: bounded before it is decoded */
    unsigned long long fcs = j->fi.codec == TRACE_CODEC_RAW
                                 ? j->fi.stored_bytes
                                 : ZSTD_getFrameContentSize(j->stored.data, j->stored.len);
    if (fcs == ZSTD_CONTENTSIZE_UNKNOWN || fcs == ZSTD_CONTENTSIZE_ERROR ||
        fcs > r->opts.max_record_bytes)
        fcs = r->opts.max_record_bytes;
    *declared = fcs;
    return 1;
}

/* One thread: reads the next batch of frames and decodes them. */
static void fill_batch(struct trace_reader *r)
{
    r->n_jobs = r->job_next = 0;
    uint64_t stored = 0, declared = 0;
    while (r->n_jobs < r->batch && stored < BATCH_STORED_BYTES && declared < BATCH_RAW_BYTES) {
        struct job *j = &r->jobs[r->n_jobs];
        uint64_t d;
        if (read_stream_frame(r, j, &d) <= 0)
            break;
        stored += j->fi.stored_bytes;
        declared += d;
        r->n_jobs++;
    }
    for (size_t i = 0; i < r->n_jobs; i++)
        tr_decompress_job(&r->jobs[i], r->dctx[0], r->opts.max_record_bytes, r->name);
}

/*
 * Threads > 1: reads frames into free ring slots for the workers while the ring holds
 * fewer than `batch` frames and less than the read-ahead caps (the same bounds as one
 * batch of the one-thread path: the frames read and not yet returned).
 */
static void refill_ring(struct trace_reader *r)
{
    while (!r->at_end && !r->pending_rc && r->n_jobs < r->batch &&
           r->ahead_stored < BATCH_STORED_BYTES && r->ahead_declared < BATCH_RAW_BYTES) {
        /* slots outside [job_next, job_next + n_jobs) belong to this thread only */
        struct job *j = &r->jobs[(r->job_next + r->n_jobs) % r->batch];
        uint64_t d;
        if (read_stream_frame(r, j, &d) <= 0)
            break;
        j->declared = d;
        r->ahead_stored += j->fi.stored_bytes;
        r->ahead_declared += d;
        pthread_mutex_lock(&r->mu);
        j->state = JOB_READ;
        r->n_jobs++;
        pthread_cond_signal(&r->work_cv);
        pthread_mutex_unlock(&r->mu);
    }
}

/*
 * Threads > 1: the next frame in order, decompressed, taken out of the ring (NULL when
 * the ring is empty). While a worker decompresses it, this thread decompresses later
 * frames no worker has taken, then waits.
 */
static struct job *ring_pop(struct trace_reader *r)
{
    refill_ring(r);
    if (r->n_jobs == 0)
        return NULL;
    struct job *h = &r->jobs[r->job_next];
    pthread_mutex_lock(&r->mu);
    while (h->state != JOB_DONE) {
        struct job *j = h->state == JOB_READ ? h : first_ready(r);
        if (j) {
            j->state = JOB_BUSY;
            pthread_mutex_unlock(&r->mu);
            tr_decompress_job(j, r->dctx[0], r->opts.max_record_bytes, r->name);
            pthread_mutex_lock(&r->mu);
            j->state = JOB_DONE;
            continue;
        }
        r->caller_waiting = true;
        pthread_cond_wait(&r->done_cv, &r->mu);
        r->caller_waiting = false;
    }
    h->state = JOB_FREE;
    r->job_next = (r->job_next + 1) % r->batch;
    r->n_jobs--;
    pthread_mutex_unlock(&r->mu);
    r->ahead_stored -= h->fi.stored_bytes;
    r->ahead_declared -= h->declared;
    return h;
}

/* trace_reader_next without the end-of-stream check. */
static int next_frame(struct trace_reader *r, Acceltrace__Record **rec, struct trace_key *key)
{
    *rec = NULL;
    if (r->sticky)
        return r->sticky;
    struct job *j;
    if (r->n_workers > 0) {
        j = ring_pop(r);
        if (!j) {
            if (r->pending_rc) {
                r->err = r->pending_err;
                return r->sticky = r->pending_rc;
            }
            return 0;
        }
    } else {
        if (r->job_next == r->n_jobs) {
            if (r->pending_rc) {
                r->err = r->pending_err;
                return r->sticky = r->pending_rc;
            }
            if (r->at_end)
                return 0;
            fill_batch(r);
            if (r->n_jobs == 0) {
                if (r->pending_rc) {
                    r->err = r->pending_err;
                    return r->sticky = r->pending_rc;
                }
                return 0;
            }
        }
        j = &r->jobs[r->job_next++];
    }
    if (!j->rc)
        tr_unpack_job(j, r->opts.max_record_bytes, r->name);
    if (j->rc) {
        r->err = j->err;
        /* the intact prefix ends before this frame */
        r->last_job = NULL;
        return r->sticky = j->rc;
    }
    if (r->hashing)
        trace_hash_update(&r->hash, j->raw, j->raw_len);
    /* the keys come from the record; a valid index must agree with them (and with the
     * frame), or find() and --step/--layer filters would follow a damaged index */
    trace_record_key(j->rec, &j->fi.key);
    if (r->index && !r->index_mismatch) {
        char what[384];
        int mc = 0;
        if (j->fi.number >= r->index->n_entries) {
            mc = ERR_DATA;
            snprintf(what, sizeof what, "frame beyond the %zu frames of the index",
                     r->index->n_entries);
        } else {
            mc = trace_entry_check(r->index->entries[j->fi.number], &j->fi, &j->fi.key, what,
                                   sizeof what);
        }
        if (mc) {
            struct errmsg m;
            tr_frame_err(&m, ERR_DATA, r->name, j->fi.number, j->fi.offset, "%s", what);
            if (!r->opts.allow_partial) {
                errmsg_set(&r->err, ERR_DATA, "%s; --allow-partial reads it anyway", m.text);
                r->last_job = NULL;
                return r->sticky = ERR_DATA;
            }
            r->index_mismatch = true;
            tr_accept_damage(r, m.text);
        }
    }
    r->last = j->fi;
    r->last_job = j;
    r->frames_read++;
    if (key)
        *key = j->fi.key;
    *rec = j->rec;
    j->rec = NULL;
    return 1;
}

int trace_reader_next(struct trace_reader *r, Acceltrace__Record **rec, struct trace_key *key)
{
    int rc = next_frame(r, rec, key);
    if (rc != 0 || r->end_checked)
        return rc;
    r->end_checked = true;
    /* the payloads streamed must be those the index was written for (a payload changed
     * with a recomputed crc passes every frame check) */
    if (r->index && r->hashing) {
        char hex[TRACE_HASH_HEX_MAX];
        trace_hash_hex(&r->hash, hex);
        if (strcmp(hex, r->index->content_hash) != 0)
            return r->sticky = tr_frame_err(&r->err, ERR_DATA, r->name, r->next_number, r->pos,
                                            "content hash mismatch: index %s, frames %s",
                                            r->index->content_hash, hex);
    }
    return 0;
}

/* ---- random access ---- */

/* Reads, checks and decodes the frame of index entry pos into r->find_job (its record in
 * find_job.rec): the frame must agree with its entry, keys of the decoded record included. */
static int read_entry(struct trace_reader *r, uint64_t pos)
{
    const Acceltrace__IndexEntry *en = r->index->entries[pos];
    struct job *j = &r->find_job;
    int rc = tr_read_frame(r, en->offset, r->end, pos, j, &r->err);
    if (rc)
        return rc;
    if (j->fi.type != en->record_type || j->fi.stored_bytes != en->stored_bytes)
        return tr_frame_err(&r->err, ERR_DATA, r->name, pos, en->offset,
                            "frame does not match its index entry");
    if (tr_decode_job(j, r->dctx[0], r->opts.max_record_bytes, r->name)) {
        r->err = j->err;
        return j->rc;
    }
    struct trace_key rk;
    char what[384];
    trace_record_key(j->rec, &rk);
    if (trace_entry_check(en, &j->fi, &rk, what, sizeof what))
        return tr_frame_err(&r->err, ERR_DATA, r->name, pos, en->offset, "%s", what);
    j->fi.key = rk;
    return 0;
}

int trace_reader_find(struct trace_reader *r, uint32_t type, int32_t step, int32_t layer,
                      int32_t head, Acceltrace__Record **rec)
{
    *rec = NULL;
    if (!r->index)
        return errmsg_set(&r->err, ERR_NOTFOUND, "no valid index in '%s': %s", r->name,
                          errmsg_text(&r->index_err));
    struct sort_key want = {type, step, layer, head, 0};
    size_t lo = 0, hi = r->index->n_entries;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (tr_cmp_sort_key(&r->order[mid], &want) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == r->index->n_entries)
        return 0;
    const struct sort_key *k = &r->order[lo];
    if (k->type != type || k->step != step || k->layer != layer || k->head != head)
        return 0;
    int rc = read_entry(r, k->pos);
    if (rc)
        return rc;
    *rec = r->find_job.rec;
    r->find_job.rec = NULL;
    return 1;
}

int trace_reader_entry_frame(struct trace_reader *r, uint64_t pos,
                             const struct trace_frame_info **fi, const uint8_t **stored,
                             size_t *stored_len, const uint8_t **raw, size_t *raw_len)
{
    if (!r->index)
        return errmsg_set(&r->err, ERR_NOTFOUND, "no valid index in '%s': %s", r->name,
                          errmsg_text(&r->index_err));
    if (pos >= r->index->n_entries)
        return errmsg_set(&r->err, ERR_USAGE, "no index entry %llu in '%s' (%zu entries)",
                          (unsigned long long)pos, r->name, r->index->n_entries);
    int rc = read_entry(r, pos);
    if (rc)
        return rc;
    const struct job *j = &r->find_job;
    trace_record_free(r->find_job.rec);
    r->find_job.rec = NULL;
    *fi = &j->fi;
    *stored = j->stored.data;
    *stored_len = j->stored.len;
    *raw = j->raw;
    *raw_len = j->raw_len;
    return 0;
}

/* ---- seek (resumed replays) ---- */

int trace_reader_seek(struct trace_reader *r, uint64_t offset, uint64_t frame)
{
    if (r->sticky)
        return r->sticky;
    if (r->frames_read != 1 || r->n_jobs != 0 || r->next_number != 1)
        return errmsg_set(&r->err, ERR_USAGE, "seek in '%s' after records were read", r->name);
    if (!r->hashing) {
        /* jump: the index says where every frame starts */
        const Acceltrace__TraceIndex *ix = r->index;
        bool at_end = frame == ix->n_entries && offset == r->end;
        if (frame == 0 || frame > ix->n_entries ||
            (!at_end && (frame == ix->n_entries || ix->entries[frame]->offset != offset)))
            return tr_frame_err(&r->err, ERR_DATA, r->name, frame, offset,
                                "seek target is not the start of frame %llu",
                                (unsigned long long)frame);
        const Acceltrace__IndexEntry *prev = ix->entries[frame - 1];
        memset(&r->last, 0, sizeof r->last);
        r->last.number = frame - 1;
        r->last.offset = prev->offset;
        r->last.type = prev->record_type;
        r->last.stored_bytes = (uint32_t)prev->stored_bytes;
        r->last_job = NULL;
        r->pos = offset;
        r->next_number = frame;
        return 0;
    }
    /* walk: check and hash the frames before the target, as next() would */
    struct job *j = &r->find_job;
    while (r->pos < offset && r->pos < r->end) {
        int rc = tr_read_frame(r, r->pos, r->end, r->next_number, j, &r->err);
        if (rc)
            return rc;
        if (j->fi.type == TRACE_TYPE_INDEX || j->fi.type == TRACE_TYPE_HEADER)
            return tr_frame_err(&r->err, ERR_DATA, r->name, j->fi.number, j->fi.offset,
                                "%s frame before the seek target at offset %llu",
                                trace_record_type_name(j->fi.type), (unsigned long long)offset);
        if (tr_decompress_job(j, r->dctx[0], r->opts.max_record_bytes, r->name)) {
            r->err = j->err;
            return j->rc;
        }
        trace_hash_update(&r->hash, j->raw, j->raw_len);
        r->last = j->fi;
        r->last_job = NULL;
        r->frames_read++;
        r->pos += TRACE_FRAME_HEADER_BYTES + (uint64_t)j->fi.stored_bytes;
        r->next_number++;
    }
    if (r->pos != offset || r->next_number != frame)
        return tr_frame_err(&r->err, ERR_DATA, r->name, r->next_number, r->pos,
                            "seek target (frame %llu at offset %llu) is not a frame start",
                            (unsigned long long)frame, (unsigned long long)offset);
    return 0;
}

/* ---- accessors ---- */

const Acceltrace__TraceHeader *trace_reader_header(const struct trace_reader *r)
{
    return r->header_rec ? r->header_rec->header : NULL;
}

const Acceltrace__TraceIndex *trace_reader_index(const struct trace_reader *r)
{
    return r->index;
}

const char *trace_reader_damage(const struct trace_reader *r)
{
    return r->damage.code ? r->damage.text : NULL;
}

int trace_reader_index_status(const struct trace_reader *r, const char **msg)
{
    if (msg)
        *msg = r->index_err.code ? r->index_err.text : "";
    return r->index_err.code;
}

const char *trace_reader_computed_hash(struct trace_reader *r)
{
    if (!r->hashing)
        return NULL;
    trace_hash_hex(&r->hash, r->hash_hex);
    return r->hash_hex;
}

const char *trace_reader_content_hash(const struct trace_reader *r)
{
    if (r->index)
        return r->index->content_hash;
    return trace_reader_computed_hash((struct trace_reader *)r);
}

const char *trace_reader_hash_name(const struct trace_reader *r)
{
    enum trace_hash_alg alg = r->hash.alg;
    if (!r->hashing && r->index)
        trace_hash_alg_of(r->index->content_hash, &alg);
    return trace_hash_name(alg);
}

uint64_t trace_reader_frames_read(const struct trace_reader *r)
{
    return r->frames_read;
}

uint64_t trace_reader_bytes_read(const struct trace_reader *r)
{
    return r->src->bytes_read;
}

uint64_t trace_reader_offset(const struct trace_reader *r)
{
    return r->last.offset + TRACE_FRAME_HEADER_BYTES + r->last.stored_bytes;
}

const struct trace_frame_info *trace_reader_last_frame(const struct trace_reader *r)
{
    return &r->last;
}

void trace_reader_last_payload(const struct trace_reader *r, const uint8_t **stored,
                               size_t *stored_len, const uint8_t **raw, size_t *raw_len)
{
    const struct job *j = r->last_job;
    *stored = j ? j->stored.data : NULL;
    *stored_len = j ? j->stored.len : 0;
    *raw = j ? j->raw : NULL;
    *raw_len = j ? j->raw_len : 0;
}

int trace_reader_index_problem(const struct trace_reader *r, const char **what, uint64_t *offset)
{
    *what = r->index_what.text;
    *offset = r->index_problem_offset;
    return r->index_err.code;
}

uint64_t trace_reader_stream_end(const struct trace_reader *r)
{
    return r->pos;
}

const char *trace_reader_name(const struct trace_reader *r)
{
    return r->name;
}

void trace_reader_version(const struct trace_reader *r, unsigned *major, unsigned *minor)
{
    *major = r->major;
    *minor = r->minor;
}
