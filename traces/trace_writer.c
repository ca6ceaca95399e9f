/*
 * The .atr writer (docs/design.md#the-trace-container, docs/trace-format.md). Frames are packed,
 * compressed and queued in `out`; `out` goes to the file when it passes flush_bytes, so
 * every byte that reaches the file is a whole frame and a killed writer leaves a prefix
 * of complete frames (plus at most one partly written one) that recover can use.
 *
 * The content hash (XXH3-128 over every raw payload, traces/trace_hash.h) is updated as
 * each frame is queued. XXH3 runs at memory speed, a few percent of the zstd level-3 time,
 * so it needs no helper thread (SHA-256 did, and the hand-off cost more than XXH3 does).
 */
#include "traces/trace_writer.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#include "common/buf.h"
#include "common/crc32c.h"
#include "common/err.h"
#include "common/io.h"
#include "common/mem.h"
#include "traces/trace_hash.h"
#include "traces/trace_internal.h"
#include "traces/trace_reader.h"

struct trace_writer {
    struct trace_writer_opts opts;
    struct sink sink;
    char *final_path;
    char *tmp_path;
    ZSTD_CCtx *cctx;
    struct buf raw;  /* the packed record (raw payload) */
    struct buf comp; /* its zstd frame */
    struct buf out;  /* whole frames not yet written to the file */
    struct trace_entry *entries;
    size_t n_entries, cap_entries;
    struct trace_hash hash; /* over every raw payload, in order (the content hash) */
    struct errmsg err;
    uint64_t frames;
    dev_t tmp_dev; /* identity of the temporary this writer created (O_EXCL) */
    ino_t tmp_ino;
    bool created; /* tmp_path is ours and still on disk */
    bool failed;
    bool finished;
    bool sealed;       /* index and trailer written (trace_writer_seal): no more appends */
    int32_t last_step; /* step key of the last indexed frame, INT32_MIN before the first */
    double t_write_s;  /* monotonic time of the last write(2) of `out` */
};

/* Monotonic seconds (the flush interval's clock). */
static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int set_err(struct trace_writer *w, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int set_err(struct trace_writer *w, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    errmsg_vset(&w->err, code, fmt, ap);
    va_end(ap);
    w->failed = true;
    return code;
}

void trace_writer_opts_default(struct trace_writer_opts *o)
{
    memset(o, 0, sizeof *o);
    o->zstd_level = 3;
    o->zstd_workers = 0;
    o->fsync_each = false;
    o->flush_bytes = 1u << 20;
    o->flush_interval_s = 0.5;
}

const char *trace_writer_errmsg(const struct trace_writer *w)
{
    return w ? errmsg_text(&w->err) : "no writer";
}

uint64_t trace_writer_frames(const struct trace_writer *w)
{
    return w ? w->frames : 0;
}

/* The message of a failed open for the caller's e (may be NULL). */
static void copy_err(struct errmsg *e, int code, const char *msg)
{
    if (e)
        errmsg_set(e, code, "%s", msg);
}

/* True while tmp_path still names the file this writer created (nobody replaced it). */
static bool tmp_is_ours(const struct trace_writer *w)
{
    struct stat st;
    return w->created && stat(w->tmp_path, &st) == 0 && st.st_dev == w->tmp_dev &&
           st.st_ino == w->tmp_ino;
}

/* Closes and unlinks the temporary this writer created; never a file someone else made. */
static void remove_tmp(struct trace_writer *w)
{
    sink_close(&w->sink);
    if (tmp_is_ours(w))
        unlink(w->tmp_path);
    w->created = false;
}

/*
 * A write, fsync or close of the temporary failed. The temporary goes at once: a trace that
 * cannot finish must not keep a full disk full, and a rerun then starts clean instead of
 * being refused by the leftover. ENOSPC (and EDQUOT) say "disk full" in plain words.
 */
static int set_io_err(struct trace_writer *w, const char *what)
{
    int en = errno;
    remove_tmp(w);
#ifdef EDQUOT
    if (en == EDQUOT)
        en = ENOSPC;
#endif
    if (en == ENOSPC)
        return set_err(w, ERR_IO, "disk full writing '%s' (removed it)", w->tmp_path);
    return set_err(w, ERR_IO, "cannot %s '%s': %s (removed it)", what, w->tmp_path, strerror(en));
}

static int write_out(struct trace_writer *w)
{
    if (w->out.len == 0)
        return 0;
    if (sink_write(&w->sink, w->out.data, w->out.len))
        return set_io_err(w, "write");
    buf_clear(&w->out);
    w->t_write_s = mono_s();
    return 0;
}

int trace_writer_flush(struct trace_writer *w)
{
    if (w->failed)
        return w->err.code ? w->err.code : ERR_INTERNAL;
    return write_out(w);
}

/* Records the index row of a frame at `offset` and hashes its raw payload. */
static int index_row(struct trace_writer *w, uint64_t offset, uint32_t type,
                     const struct trace_key *key, size_t stored_len, const uint8_t *raw,
                     size_t raw_len)
{
    if (w->n_entries == w->cap_entries) {
        size_t nc = w->cap_entries ? w->cap_entries * 2 : 256, bytes;
        if (!mem_mul(nc, sizeof *w->entries, &bytes))
            return set_err(w, ERR_NOMEM, "out of memory for the index of '%s'", w->final_path);
        struct trace_entry *e = mem_realloc(w->entries, bytes);
        if (!e)
            return set_err(w, ERR_NOMEM, "out of memory for the index of '%s'", w->final_path);
        w->entries = e;
        w->cap_entries = nc;
    }
    struct trace_entry *e = &w->entries[w->n_entries++];
    e->offset = offset;
    e->type = type;
    e->key = *key;
    e->stored_bytes = (uint32_t)stored_len;
    e->raw_bytes = raw_len;
    w->frames++;
    trace_hash_update(&w->hash, raw, raw_len);
    return 0;
}

/* Queues one frame (header + stored payload) and records its index row. */
static int queue_frame(struct trace_writer *w, uint32_t type, uint8_t codec, const uint8_t *stored,
                       size_t stored_len, const uint8_t *raw, size_t raw_len,
                       const struct trace_key *key, bool indexed)
{
    if (stored_len > TRACE_MAX_PAYLOAD)
        return set_err(w, ERR_LIMIT, "record of %zu bytes exceeds the 1 GiB frame limit ('%s')",
                       stored_len, w->final_path);
    uint8_t hdr[TRACE_FRAME_HEADER_BYTES];
    trace_put_u32(hdr, (uint32_t)stored_len);
    hdr[4] = codec;
    hdr[5] = (uint8_t)type;
    trace_put_u16(hdr + 6, 0);
    trace_put_u32(hdr + 8, crc32c_update(0, stored, stored_len));
    if (indexed && key->step >= 0 && key->step != w->last_step && w->last_step != INT32_MIN) {
        /* a new step begins: the frames of the steps before it reach the file first, so a
         * killed capture loses at most the step it was in (docs/trace-format.md) */
        int rc = write_out(w);
        if (rc)
            return rc;
    }
    if (indexed && key->step >= 0)
        w->last_step = key->step;
    uint64_t offset = w->sink.offset + w->out.len;
    if (stored_len >= (1u << 20)) {
        /* a large frame goes straight to the file instead of through a copy in `out` */
        int rc = write_out(w);
        if (rc)
            return rc;
        if (sink_write(&w->sink, hdr, sizeof hdr) || sink_write(&w->sink, stored, stored_len))
            return set_io_err(w, "write");
    } else if (buf_append(&w->out, hdr, sizeof hdr) || buf_append(&w->out, stored, stored_len)) {
        return set_err(w, ERR_NOMEM, "out of memory writing '%s'", w->final_path);
    }
    if (indexed) {
        int rc = index_row(w, offset, type, key, stored_len, raw, raw_len);
        if (rc)
            return rc;
    }
    if (w->out.len >= w->opts.flush_bytes || w->opts.fsync_each ||
        (w->opts.flush_interval_s > 0 && mono_s() - w->t_write_s >= w->opts.flush_interval_s)) {
        int rc = write_out(w);
        if (rc)
            return rc;
        if (w->opts.fsync_each && sink_sync(&w->sink))
            return set_io_err(w, "fsync");
    }
    return 0;
}

/*
 * Packs and compresses rec, then queues it. The raw payload of an indexed frame goes to
 * the content hash; the index frame itself (indexed = false) is not hashed.
 */
static int encode_record(struct trace_writer *w, const Acceltrace__Record *rec,
                         const struct trace_key *key, bool indexed)
{
    uint32_t type = (uint32_t)rec->body_case;
    if (!trace_type_known(type))
        return set_err(w, ERR_USAGE, "record without a known body (type %u) for '%s'", type,
                       w->final_path);
    size_t n = protobuf_c_message_get_packed_size(&rec->base);
    if (n > TRACE_MAX_PAYLOAD)
        return set_err(w, ERR_LIMIT, "record of %zu bytes exceeds the 1 GiB frame limit ('%s')", n,
                       w->final_path);
    struct buf *raw = &w->raw;
    buf_clear(raw);
    if (buf_reserve(raw, n))
        return set_err(w, ERR_NOMEM, "out of memory packing a record for '%s'", w->final_path);
    raw->len = protobuf_c_message_pack(&rec->base, raw->data);
    if (raw->len != n)
        return set_err(w, ERR_INTERNAL, "packed size mismatch for '%s'", w->final_path);
    int rc;
    if (w->opts.zstd_level <= 0) {
        rc = queue_frame(w, type, TRACE_CODEC_RAW, raw->data, n, raw->data, n, key, indexed);
    } else {
        size_t bound = ZSTD_compressBound(n);
        buf_clear(&w->comp);
        if (buf_reserve(&w->comp, bound))
            return set_err(w, ERR_NOMEM, "out of memory compressing a record for '%s'",
                           w->final_path);
        size_t c = ZSTD_compress2(w->cctx, w->comp.data, bound, raw->data, n);
        if (ZSTD_isError(c))
            return set_err(w, ERR_EXTERNAL, "zstd failed for '%s': %s", w->final_path,
                           ZSTD_getErrorName(c));
        /* A frame that does not shrink is stored raw (codec 0): cheaper to read, never larger. */
        if (c >= n)
            rc = queue_frame(w, type, TRACE_CODEC_RAW, raw->data, n, raw->data, n, key, indexed);
        else
            rc =
                queue_frame(w, type, TRACE_CODEC_ZSTD, w->comp.data, c, raw->data, n, key, indexed);
    }
    return rc;
}

/* A folder where the trace should go is refused at once (ERR_USAGE), not after a whole
 * capture when the final rename fails. */
static int check_not_folder(const char *path, struct errmsg *e)
{
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return errmsg_set(e, ERR_USAGE, "output '%s' is a folder: name the trace file (FILE.atr)",
                          path);
    return 0;
}

/* A writer with its buffers, hash and zstd context but no file yet; ERR_NOMEM with the
 * message in e. */
static int writer_alloc(struct trace_writer **out, const char *final_path, const char *tmp_path,
                        const struct trace_writer_opts *opts, struct errmsg *e)
{
    *out = NULL;
    struct trace_writer *w = mem_calloc(1, sizeof *w);
    if (!w) {
        copy_err(e, ERR_NOMEM, "out of memory");
        return ERR_NOMEM;
    }
    w->sink.fd = -1;
    w->last_step = INT32_MIN;
    w->t_write_s = mono_s();
    if (opts)
        w->opts = *opts;
    else
        trace_writer_opts_default(&w->opts);
    buf_init(&w->raw);
    buf_init(&w->comp);
    buf_init(&w->out);
    int rc;
    w->final_path = mem_strdup(final_path);
    w->tmp_path = mem_strdup(tmp_path);
    if (!w->final_path || !w->tmp_path) {
        rc = errmsg_set(&w->err, ERR_NOMEM, "out of memory");
        goto fail;
    }
    rc = trace_hash_init(&w->hash, TRACE_HASH_XXH3_128);
    if (rc) {
        errmsg_set(&w->err, rc, "out of memory (content hash)");
        goto fail;
    }
    if (w->opts.zstd_level > 0) {
        w->cctx = ZSTD_createCCtx();
        if (!w->cctx) {
            rc = errmsg_set(&w->err, ERR_NOMEM, "out of memory (zstd context)");
            goto fail;
        }
        int lvl = w->opts.zstd_level;
        if (lvl > ZSTD_maxCLevel())
            lvl = ZSTD_maxCLevel();
        ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_compressionLevel, lvl);
        ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_checksumFlag, 0);
        ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_contentSizeFlag, 1);
        if (w->opts.zstd_workers > 0)
            ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_nbWorkers, w->opts.zstd_workers);
    }
    *out = w;
    return 0;
fail:
    copy_err(e, rc, errmsg_text(&w->err));
    trace_writer_free(w);
    return rc;
}

/* Takes the advisory lock that tells a resumed capture the .partial is in use (flock: it
 * belongs to this open file, so a reader of the same file elsewhere does not drop it). */
static int lock_tmp(struct trace_writer *w)
{
    if (flock(w->sink.fd, LOCK_EX | LOCK_NB) == 0 || errno != EWOULDBLOCK)
        return 0; /* a file system without locks: nothing to refuse */
    return errmsg_set(&w->err, ERR_USAGE, "'%s' is in use: another capture is writing '%s'",
                      w->tmp_path, w->final_path);
}

static int writer_create(struct trace_writer **out, const char *final_path, const char *tmp_path,
                         const struct trace_writer_opts *opts, struct errmsg *e)
{
    struct trace_writer *w;
    int rc = writer_alloc(&w, final_path, tmp_path, opts, e);
    if (rc)
        return rc;
    if ((rc = check_not_folder(final_path, &w->err)))
        goto fail;
    /* O_EXCL: the temporary is this writer's alone. Another writer of the same target (or
     * the leftover of a killed one, which recover can still use) makes this one refuse
     * instead of truncating it (docs/trace-format.md, "Concurrent writers"). */
    rc = sink_create_excl(&w->sink, w->tmp_path, &w->err);
    if (rc == ERR_USAGE) {
        size_t tn = strlen(w->tmp_path);
        size_t sn = strlen(TRACE_WRITER_TMP_SUFFIX);
        if (tn > sn && !strcmp(w->tmp_path + tn - sn, TRACE_WRITER_TMP_SUFFIX))
            errmsg_set(&w->err, rc,
                       "'%s' exists: another capture is writing '%s', or one was killed; run "
                       "`acceltrace recover %s` or remove it",
                       w->tmp_path, w->final_path, w->tmp_path);
        else
            errmsg_set(&w->err, rc,
                       "'%s' exists: another writer of '%s' is running, or one was killed; "
                       "remove it",
                       w->tmp_path, w->final_path);
    }
    if (rc)
        goto fail;
    struct stat st;
    if (fstat(w->sink.fd, &st) != 0) {
        rc = errmsg_set(&w->err, ERR_IO, "cannot stat '%s': %s", w->tmp_path, strerror(errno));
        goto fail;
    }
    w->tmp_dev = st.st_dev;
    w->tmp_ino = st.st_ino;
    w->created = true;
    if ((rc = lock_tmp(w)))
        goto fail;
    uint8_t pre[TRACE_PREAMBLE_BYTES];
    memcpy(pre, TRACE_MAGIC, 8);
    trace_put_u16(pre + 8, TRACE_MAJOR);
    trace_put_u16(pre + 10, TRACE_MINOR);
    trace_put_u32(pre + 12, 0);
    if (buf_append(&w->out, pre, sizeof pre)) {
        rc = errmsg_set(&w->err, ERR_NOMEM, "out of memory");
        goto fail;
    }
    *out = w;
    return 0;
fail:
    copy_err(e, rc, errmsg_text(&w->err));
    trace_writer_free(w);
    return rc;
}

/* The temporary path of a trace path (path + TRACE_WRITER_TMP_SUFFIX); NULL out of memory.
 * Free with mem_free. */
static char *tmp_name(const char *path)
{
    size_t n = strlen(path);
    char *tmp = mem_alloc(n + sizeof TRACE_WRITER_TMP_SUFFIX);
    if (tmp) {
        memcpy(tmp, path, n);
        memcpy(tmp + n, TRACE_WRITER_TMP_SUFFIX, sizeof TRACE_WRITER_TMP_SUFFIX);
    }
    return tmp;
}

int trace_writer_open_tmp(struct trace_writer **out, const char *final_path, const char *tmp_path,
                          const struct trace_writer_opts *opts, const Acceltrace__TraceHeader *hdr,
                          struct errmsg *e)
{
    *out = NULL;
    struct trace_writer *w;
    int rc = writer_create(&w, final_path, tmp_path, opts, e);
    if (rc)
        return rc;
    Acceltrace__Record rec = ACCELTRACE__RECORD__INIT;
    Acceltrace__TraceHeader empty = ACCELTRACE__TRACE_HEADER__INIT;
    rec.body_case = ACCELTRACE__RECORD__BODY_HEADER;
    rec.header = hdr ? (Acceltrace__TraceHeader *)hdr : &empty;
    struct trace_key none = {-1, -1, -1};
    rc = encode_record(w, &rec, &none, true);
    if (!rc)
        rc = write_out(w);
    if (rc) {
        copy_err(e, rc, errmsg_text(&w->err));
        trace_writer_free(w);
        return rc;
    }
    *out = w;
    return 0;
}

int trace_writer_open(struct trace_writer **out, const char *path,
                      const struct trace_writer_opts *opts, const Acceltrace__TraceHeader *hdr,
                      struct errmsg *e)
{
    *out = NULL;
    char *tmp = tmp_name(path);
    if (!tmp) {
        copy_err(e, ERR_NOMEM, "out of memory");
        return ERR_NOMEM;
    }
    int rc = trace_writer_open_tmp(out, path, tmp, opts, hdr, e);
    mem_free(tmp);
    return rc;
}

/*
 * Rebuilds the index rows, the content hash, the frame count and the step of the last
 * frame from the frames of w->tmp_path (already cut to its checkpointed length), as
 * trace_recover reads them: keys from trace_record_key. The scan must end exactly at
 * `length` with `frames` frames, else the file is not the one the checkpoint describes.
 */
static int rebuild_index(struct trace_writer *w, uint64_t length, uint64_t frames)
{
    struct trace_reader_opts ro;
    trace_reader_opts_default(&ro);
    ro.ignore_index = true;
    ro.allow_partial = false;
    struct trace_reader *r = NULL;
    struct errmsg oe = {0};
    int rc = trace_reader_open(&r, w->tmp_path, &ro, &oe);
    if (rc) {
        set_err(w, ERR_DATA, "cannot resume '%s': %s", w->tmp_path, errmsg_text(&oe));
        goto out;
    }
    for (bool first = true;; first = false) {
        if (!first) {
            Acceltrace__Record *rec;
            int nr = trace_reader_next(r, &rec, NULL);
            trace_record_free(rec);
            if (nr < 0) {
                rc = set_err(w, ERR_DATA, "cannot resume '%s': %s", w->tmp_path,
                             trace_reader_errmsg(r));
                goto out;
            }
            if (nr == 0)
                break;
        }
        const struct trace_frame_info *fi = trace_reader_last_frame(r);
        const uint8_t *stored, *raw;
        size_t stored_len, raw_len;
        trace_reader_last_payload(r, &stored, &stored_len, &raw, &raw_len);
        if ((rc = index_row(w, fi->offset, fi->type, &fi->key, stored_len, raw, raw_len)))
            goto out;
        if (fi->key.step >= 0)
            w->last_step = fi->key.step;
    }
    if (w->frames != frames) {
        rc = set_err(w, ERR_DATA,
                     "cannot resume '%s': its first %llu bytes hold %llu frames, the checkpoint "
                     "says %llu",
                     w->tmp_path, (unsigned long long)length, (unsigned long long)w->frames,
                     (unsigned long long)frames);
        goto out;
    }
out:
    trace_reader_free(r);
    return rc;
}

int trace_writer_reopen(struct trace_writer **out, const char *path,
                        const struct trace_writer_opts *opts, uint64_t length, uint64_t frames,
                        struct errmsg *e)
{
    *out = NULL;
    char *tmp = tmp_name(path);
    if (!tmp) {
        copy_err(e, ERR_NOMEM, "out of memory");
        return ERR_NOMEM;
    }
    struct trace_writer *w;
    int rc = writer_alloc(&w, path, tmp, opts, e);
    mem_free(tmp);
    if (rc)
        return rc;
    struct stat st;
    w->sink.fd = open(w->tmp_path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (w->sink.fd < 0 || fstat(w->sink.fd, &st) != 0) {
        rc = errmsg_set(&w->err, errno == ENOENT ? ERR_NOTFOUND : ERR_IO, "cannot resume '%s': %s",
                        w->tmp_path, strerror(errno));
        goto fail;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = errmsg_set(&w->err, ERR_USAGE, "cannot resume '%s': not a regular file", w->tmp_path);
        goto fail;
    }
    w->tmp_dev = st.st_dev;
    w->tmp_ino = st.st_ino;
    if ((rc = lock_tmp(w)))
        goto fail;
    if ((uint64_t)st.st_size < length || length < TRACE_PREAMBLE_BYTES) {
        rc = errmsg_set(&w->err, ERR_DATA,
                        "cannot resume '%s': it holds %llu bytes, the checkpoint needs %llu",
                        w->tmp_path, (unsigned long long)st.st_size, (unsigned long long)length);
        goto fail;
    }
    /* the frames after the checkpoint go: the run emits them again */
    if (ftruncate(w->sink.fd, (off_t)length) != 0 || lseek(w->sink.fd, 0, SEEK_END) < 0) {
        rc = errmsg_set(&w->err, ERR_IO, "cannot cut '%s' to %llu bytes: %s", w->tmp_path,
                        (unsigned long long)length, strerror(errno));
        goto fail;
    }
    w->sink.offset = length;
    w->created = true; /* from here on it is this writer's: a failed run removes it */
    if ((rc = rebuild_index(w, length, frames)))
        goto fail;
    *out = w;
    return 0;
fail:
    copy_err(e, rc, errmsg_text(&w->err));
    w->created = false; /* a refused resume leaves the file as it found it */
    trace_writer_free(w);
    return rc;
}

int trace_writer_open_raw(struct trace_writer **out, const char *final_path, const char *tmp_path,
                          struct errmsg *e)
{
    struct trace_writer_opts o;
    trace_writer_opts_default(&o);
    o.zstd_level = 0;
    return writer_create(out, final_path, tmp_path, &o, e);
}

int trace_writer_append_frame(struct trace_writer *w, uint32_t type, uint8_t codec,
                              const uint8_t *stored, size_t stored_len, const uint8_t *raw,
                              size_t raw_len, const struct trace_key *key)
{
    if (w->failed)
        return w->err.code ? w->err.code : ERR_INTERNAL;
    if (w->finished || w->sealed)
        return set_err(w, ERR_USAGE, "append after finish ('%s')", w->final_path);
    return queue_frame(w, type, codec, stored, stored_len, raw, raw_len, key, true);
}

int trace_writer_append(struct trace_writer *w, const Acceltrace__Record *rec,
                        const struct trace_key *key)
{
    if (w->failed)
        return w->err.code ? w->err.code : ERR_INTERNAL;
    if (w->finished || w->sealed)
        return set_err(w, ERR_USAGE, "append after finish ('%s')", w->final_path);
    if (rec->body_case == ACCELTRACE__RECORD__BODY_HEADER ||
        rec->body_case == ACCELTRACE__RECORD__BODY_INDEX)
        return set_err(w, ERR_USAGE, "header and index records are written by the writer ('%s')",
                       w->final_path);
    struct trace_key k;
    if (key)
        k = *key;
    else
        trace_record_key(rec, &k);
    return encode_record(w, rec, &k, true);
}

int trace_writer_seal(struct trace_writer *w)
{
    if (w->failed)
        return w->err.code ? w->err.code : ERR_INTERNAL;
    if (w->finished || w->sealed)
        return 0;
    int rc = 0;
    size_t n = w->n_entries, bytes;
    Acceltrace__IndexEntry *ents = NULL;
    Acceltrace__IndexEntry **ptrs = NULL;
    if (!mem_mul(n ? n : 1, sizeof *ents, &bytes) || !(ents = mem_alloc(bytes)) ||
        !mem_mul(n ? n : 1, sizeof *ptrs, &bytes) || !(ptrs = mem_alloc(bytes))) {
        rc = set_err(w, ERR_NOMEM, "out of memory for the index of '%s'", w->final_path);
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        const struct trace_entry *e = &w->entries[i];
        acceltrace__index_entry__init(&ents[i]);
        ents[i].offset = e->offset;
        ents[i].record_type = e->type;
        ents[i].step = e->key.step;
        ents[i].layer = e->key.layer;
        ents[i].head = e->key.head;
        ents[i].stored_bytes = e->stored_bytes;
        ents[i].raw_bytes = e->raw_bytes;
        ptrs[i] = &ents[i];
    }
    char hex[TRACE_HASH_HEX_MAX];
    trace_hash_hex(&w->hash, hex);
    Acceltrace__TraceIndex idx = ACCELTRACE__TRACE_INDEX__INIT;
    idx.n_entries = n;
    idx.entries = ptrs;
    idx.content_hash = hex;
    idx.frame_count = w->frames;
    Acceltrace__Record rec = ACCELTRACE__RECORD__INIT;
    rec.body_case = ACCELTRACE__RECORD__BODY_INDEX;
    rec.index = &idx;
    uint64_t index_offset = w->sink.offset + w->out.len;
    struct trace_key none = {-1, -1, -1};
    rc = encode_record(w, &rec, &none, false);
    if (rc)
        goto out;
    uint8_t trailer[TRACE_TRAILER_BYTES];
    trace_put_u64(trailer, index_offset);
    memcpy(trailer + 8, TRACE_TRAILER_MAGIC, 8);
    if (buf_append(&w->out, trailer, sizeof trailer)) {
        rc = set_err(w, ERR_NOMEM, "out of memory writing '%s'", w->final_path);
        goto out;
    }
    rc = write_out(w);
    if (rc)
        goto out;
    if (sink_sync(&w->sink)) {
        rc = set_io_err(w, "fsync");
        goto out;
    }
    w->sealed = true;
out:
    mem_free(ents);
    mem_free(ptrs);
    return rc;
}

int trace_writer_finish(struct trace_writer *w)
{
    if (w->failed)
        return w->err.code ? w->err.code : ERR_INTERNAL;
    if (w->finished)
        return 0;
    int rc = trace_writer_seal(w);
    if (rc)
        return rc;
    if (sink_close(&w->sink)) {
        rc = set_io_err(w, "close");
        return rc;
    }
    if (!tmp_is_ours(w)) { /* removed or replaced by hand while we wrote: not ours to move */
        w->created = false;
        rc = set_err(w, ERR_IO, "'%s' was removed or replaced while writing '%s'", w->tmp_path,
                     w->final_path);
        return rc;
    }
    /* rename replaces a trace already at final_path: the last writer to finish wins, whole
     * (two writers cannot overlap: the second one's O_EXCL open refused it). */
    if (rename(w->tmp_path, w->final_path) != 0) {
        rc = set_err(w, ERR_IO, "cannot rename '%s' to '%s': %s", w->tmp_path, w->final_path,
                     strerror(errno));
        return rc;
    }
    w->created = false;
    io_sync_parent_dir(w->final_path);
    w->finished = true;
    return 0;
}

int trace_writer_check_inputs(const char *path, const char *const *inputs, size_t n_inputs,
                              const char *const *side_outputs, size_t n_side, struct errmsg *e)
{
    enum { MAX_OUT = 16 };
    const char *outs[MAX_OUT];
    if (n_side > MAX_OUT - 2)
        return errmsg_set(e, ERR_INTERNAL, "too many outputs to check (%zu)", n_side);
    int frc = check_not_folder(path, e);
    if (frc)
        return frc;
    size_t n = strlen(path);
    char *tmp = mem_alloc(n + sizeof TRACE_WRITER_TMP_SUFFIX);
    if (!tmp)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    memcpy(tmp, path, n);
    memcpy(tmp + n, TRACE_WRITER_TMP_SUFFIX, sizeof TRACE_WRITER_TMP_SUFFIX);
    outs[0] = path;
    outs[1] = tmp;
    for (size_t i = 0; i < n_side; i++)
        outs[2 + i] = side_outputs[i];
    int rc = io_check_distinct(inputs, n_inputs, outs, n_side + 2, e);
    mem_free(tmp);
    return rc;
}

void trace_writer_free(struct trace_writer *w)
{
    if (!w)
        return;
    /* Unfinished: the temporary goes. A caller that frees without finish gave up (its own
     * error, or ours), and a leftover would refuse every rerun; only a killed process, which
     * never gets here, leaves a .partial for recover. */
    if (!w->finished && w->created)
        remove_tmp(w);
    sink_close(&w->sink);
    ZSTD_freeCCtx(w->cctx);
    trace_hash_release(&w->hash);
    buf_release(&w->raw);
    buf_release(&w->comp);
    buf_release(&w->out);
    mem_free(w->entries);
    mem_free(w->final_path);
    mem_free(w->tmp_path);
    mem_free(w);
}

uint64_t trace_writer_offset(const struct trace_writer *w)
{
    return w ? w->sink.offset + w->out.len : 0;
}
