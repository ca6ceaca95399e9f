/*
 * capture: the driver every workload capture runs under (see capture.h). What differed
 * between the workloads before (the producer string, the time rule, the params hash, the
 * writer's error message) is decided here once.
 */
#include "capture/capture.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/crc32c.h"
#include "common/io.h"
#include "common/mem.h"
#include "common/sha256.h"
#include "common/version.h"
#include "traces/trace_writer.h"

int capture_emit(struct capture_sink *s, const Acceltrace__Record *rec, const struct trace_key *key,
                 struct errmsg *e)
{
    int rc = s->append(s->ctx, rec, key, e);
    if (!rc)
        s->records++;
    return rc;
}

void capture_progress_begin(struct capture_sink *s, uint64_t total)
{
    const char *label = s->progress.label ? s->progress.label : "capture";
    progress_init(&s->progress, label, total, s->quiet);
    if (s->resume_unit <= total) /* the rate counts this run's units only */
        s->progress.done0 = s->progress.done = s->resume_unit;
    s->progress_on = true;
}

void capture_progress_update(struct capture_sink *s, uint64_t done)
{
    /* a unit of work is done: its records reach the file before it is reported, so a
     * killed capture keeps every unit its progress line counted (docs/trace-format.md);
     * a failing write shows again at the next append or at finish */
    if (s->flush)
        (void)s->flush(s->ctx);
    if (s->progress_on)
        progress_update(&s->progress, done);
}

void capture_progress_end(struct capture_sink *s)
{
    if (s->progress_on)
        progress_finish(&s->progress);
    s->progress_on = false;
}

void capture_opts_default(struct capture_opts *o)
{
    memset(o, 0, sizeof *o);
    o->zstd_level = 3;
    o->mem_limit_bytes = (uint64_t)8 << 30;
    o->checkpoint_interval_s = 60;
    const char *ci = getenv("ACCELTRACE_CHECKPOINT_INTERVAL");
    char *end;
    double v = ci ? strtod(ci, &end) : -1;
    if (ci && end != ci && !*end && v >= 0)
        o->checkpoint_interval_s = v;
}

int capture_checkpoint(struct capture_sink *s, uint64_t unit, struct errmsg *e)
{
    return s->checkpoint ? s->checkpoint(s->checkpoint_ctx, unit, e) : 0;
}

int capture_checkpoint_now(struct capture_sink *s, uint64_t unit, struct errmsg *e)
{
    s->checkpoint_force = true;
    int rc = capture_checkpoint(s, unit, e);
    s->checkpoint_force = false;
    return rc;
}

/* ISO 8601 of t (UTC). */
static void format_utc(time_t t, char out[32])
{
    struct tm tmv;
    gmtime_r(&t, &tmv);
    strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tmv);
}

/* The header time: SOURCE_DATE_EPOCH (the reproducible-builds convention) wins over the
 * clock; a reproducible run without it takes the epoch [decision]. */
static void header_time(const struct capture_opts *o, char out[32])
{
    const char *sde = getenv("SOURCE_DATE_EPOCH");
    time_t t = sde ? (time_t)strtoll(sde, NULL, 10) : o->reproducible ? 0 : time(NULL);
    format_utc(t, out);
}

/* sha256 hex of params_json + model_json (the header's params hash). */
static void params_hash(const Acceltrace__TraceHeader *hdr, char out[65])
{
    const char *pj = hdr->params_json ? hdr->params_json : "";
    const char *mj = hdr->model_json ? hdr->model_json : "";
    struct sha256 s;
    uint8_t dg[32];
    sha256_init(&s);
    sha256_update(&s, pj, strlen(pj));
    sha256_update(&s, mj, strlen(mj));
    sha256_final(&s, dg);
    sha256_to_hex(dg, out);
}

void capture_header_common(const struct capture_ops *ops, const struct capture_opts *o,
                           Acceltrace__TraceHeader *hdr, struct capture_header_store *st)
{
    memset(st, 0, sizeof *st);
    hdr->producer = (char *)(ops->producer ? ops->producer : ACCELTRACE_PRODUCER);
    hdr->workload = (char *)ops->name;
    /* the hash is computed for every capture (a checkpoint is checked against it) but
     * only a header that may vary with the environment carries it */
    params_hash(hdr, st->params_hash);
    if (ops->fixed_header) { /* equal parameters, equal files, in any environment */
        hdr->command_line = "";
        hdr->utc_time = "1970-01-01T00:00:00Z";
        return;
    }
    hdr->command_line = (char *)(o->reproducible || !o->command_line ? "" : o->command_line);
    if (o->utc_time && !o->reproducible) {
        hdr->utc_time = (char *)o->utc_time;
    } else {
        header_time(o, st->utc);
        hdr->utc_time = st->utc;
    }
    hdr->params_hash = st->params_hash;
}

/* The driver's sink: one record into the trace writer. */
static int writer_append(void *ctx, const Acceltrace__Record *rec, const struct trace_key *key,
                         struct errmsg *e)
{
    struct trace_writer *w = ctx;
    int rc = trace_writer_append(w, rec, key);
    if (rc)
        errmsg_set(e, rc, "%s", trace_writer_errmsg(w));
    return rc;
}

static int writer_flush(void *ctx)
{
    return trace_writer_flush(ctx);
}

/* The memory check, before anything large is allocated. */
static int check_memory(const struct capture_ops *ops, const void *inst,
                        const struct capture_opts *o, struct errmsg *e)
{
    uint64_t need = ops->mem_estimate(inst);
    if (!o->mem_limit_bytes || need <= o->mem_limit_bytes)
        return 0;
    char what[160];
    snprintf(what, sizeof what, "capture %s", ops->name);
    if (ops->mem_what)
        ops->mem_what(inst, what, sizeof what);
    return mem_budget_refuse(e, what, need, o->mem_limit_bytes,
                             ops->mem_hint ? ops->mem_hint : "raise --mem-limit");
}

/* ---- checkpoints (docs/trace-format.md#checkpoints) ---- */

#define CKPT_MAGIC "ACCTCKPT"
#define CKPT_VERSION 2u
#define CKPT_HEAD_BYTES 120u  /* magic .. workload length; the workload's bytes follow */
#define CKPT_CRC_OFF 12u      /* the CRC-32C field; it covers every other byte */
#define CKPT_CHUNK (1u << 20) /* bytes read at a time for the checksum */

/* What the fixed part of a checkpoint holds. */
struct ckpt_head {
    char params_hash[65];
    uint64_t unit, length, records, frames, n_bytes;
    uint32_t crc;
};

/* The driver's checkpoint state (struct capture_sink.checkpoint_ctx). */
struct ckpt_ctx {
    const struct capture_ops *ops;
    void *inst;
    struct trace_writer *w;
    struct capture_sink *sink;
    char *path; /* PATH.ckpt */
    const char *params_hash;
    double interval_s, t_last_s;
};

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* path + suffix; NULL out of memory (free with mem_free). */
static char *path_plus(const char *path, const char *suffix)
{
    size_t n = strlen(path), m = strlen(suffix);
    char *p = mem_alloc(n + m + 1);
    if (p) {
        memcpy(p, path, n);
        memcpy(p + n, suffix, m + 1);
    }
    return p;
}

/* The CRC-32C of a fixed part: every byte but the CRC field itself. */
static uint32_t head_crc(const uint8_t *head)
{
    uint32_t crc = crc32c_update(0, head, CKPT_CRC_OFF);
    return crc32c_update(crc, head + CKPT_CRC_OFF + 4, CKPT_HEAD_BYTES - CKPT_CRC_OFF - 4);
}

/* Continues crc over the n bytes of fd from offset off, read CKPT_CHUNK at a time into buf.
 * 0, or ERR_IO (errno set) when the file ends early or a read fails. */
static int crc_fd(int fd, uint64_t off, uint64_t n, uint8_t *buf, uint32_t *crc)
{
    while (n > 0) {
        size_t want = n < CKPT_CHUNK ? (size_t)n : CKPT_CHUNK;
        ssize_t k = pread(fd, buf, want, (off_t)off);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            if (k == 0)
                errno = EIO;
            return ERR_IO;
        }
        *crc = crc32c_update(*crc, buf, (size_t)k);
        off += (uint64_t)k;
        n -= (uint64_t)k;
    }
    return 0;
}

/* Writes the n bytes at p to fd at offset off. 0 or ERR_IO (errno set). */
static int pwrite_all(int fd, const uint8_t *p, size_t n, uint64_t off)
{
    while (n > 0) {
        ssize_t k = pwrite(fd, p, n, (off_t)off);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return ERR_IO;
        p += k, n -= (size_t)k, off += (uint64_t)k;
    }
    return 0;
}

/* The fixed part of a checkpoint at unit (length and CRC filled in after the workload's
 * part is written). */
static void head_fill(const struct ckpt_ctx *c, uint64_t unit, uint8_t *head)
{
    memset(head, 0, CKPT_HEAD_BYTES);
    memcpy(head, CKPT_MAGIC, 8);
    head[8] = CKPT_VERSION; /* u32 LE */
    memcpy(head + 16, c->params_hash, strlen(c->params_hash));
    put64(head + 80, unit);
    put64(head + 88, trace_writer_offset(c->w));
    put64(head + 96, c->sink->records);
    put64(head + 104, trace_writer_frames(c->w));
}

/*
 * The driver's capture_sink.checkpoint: rate-limited, flushes the trace, then streams the
 * checkpoint into PATH.ckpt.tmp (the fixed part, then the workload's bytes straight from its
 * checkpoint_save), reads the workload's bytes back a chunk at a time for the CRC-32C,
 * patches the length and CRC into the fixed part, fsyncs, renames and fsyncs the folder.
 * Memory stays bounded whatever the checkpoint's size.
 */
static int driver_checkpoint(void *ctx, uint64_t unit, struct errmsg *e)
{
    struct ckpt_ctx *c = ctx;
    double now = progress_now_s();
    if (!c->sink->checkpoint_force && c->interval_s > 0 && now - c->t_last_s < c->interval_s)
        return 0;
    int rc = trace_writer_flush(c->w);
    if (rc)
        return errmsg_set(e, rc, "%s", trace_writer_errmsg(c->w));
    uint8_t head[CKPT_HEAD_BYTES], *buf = NULL;
    char *tmp = path_plus(c->path, ".tmp");
    FILE *f = NULL;
    int fd = -1;
    if (!tmp || !(buf = mem_alloc(CKPT_CHUNK))) {
        rc = errmsg_set(e, ERR_NOMEM, "out of memory for a checkpoint");
        goto fail;
    }
    head_fill(c, unit, head);
    fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0 || !(f = fdopen(fd, "wb")))
        goto io_fail;
    if (fwrite(head, 1, CKPT_HEAD_BYTES, f) != CKPT_HEAD_BYTES)
        goto io_fail;
    rc = c->ops->checkpoint_save(c->inst, unit, f, e);
    off_t end = ftello(f);
    if (fflush(f) != 0 || ferror(f) || end < (off_t)CKPT_HEAD_BYTES)
        goto io_fail; /* the write's error (a full disk) wins over the workload's message */
    if (rc)
        goto fail;
    uint64_t n = (uint64_t)end - CKPT_HEAD_BYTES;
    put64(head + 112, n);
    uint32_t crc = head_crc(head);
    if (crc_fd(fd, CKPT_HEAD_BYTES, n, buf, &crc))
        goto io_fail;
    for (int i = 0; i < 4; i++)
        head[CKPT_CRC_OFF + (unsigned)i] = (uint8_t)(crc >> (8 * i));
    if (pwrite_all(fd, head, CKPT_HEAD_BYTES, 0) || fsync(fd) != 0)
        goto io_fail;
    FILE *ff = f;
    f = NULL, fd = -1;
    if (fclose(ff) != 0)
        goto io_fail;
    if (rename(tmp, c->path) != 0) {
        rc = errmsg_set(e, ERR_IO, "cannot rename '%s' to '%s': %s", tmp, c->path, strerror(errno));
        goto fail;
    }
    io_sync_parent_dir(c->path);
    c->t_last_s = progress_now_s();
    mem_free(buf);
    mem_free(tmp);
    return 0;
io_fail:
    rc = errmsg_set(e, ERR_IO, "cannot write checkpoint '%s': %s", tmp, strerror(errno));
fail:
    if (f)
        fclose(f);
    else if (fd >= 0)
        close(fd);
    if (tmp)
        unlink(tmp);
    mem_free(buf);
    mem_free(tmp);
    return rc;
}

/*
 * Opens ckpt_path and checks its fixed part (magic, version, the length against the file's
 * size) into *h and, when crc is set, the CRC-32C of the whole file, read a chunk at a time.
 * *out is then positioned at the workload's bytes, which end at the file's end (close with
 * fclose). ERR_NOTFOUND when it does not exist; ERR_DATA naming it and the offset.
 */
static int ckpt_open(const char *ckpt_path, bool crc, struct ckpt_head *h, FILE **out,
                     struct errmsg *e)
{
    *out = NULL;
    uint8_t head[CKPT_HEAD_BYTES], *buf = NULL;
    FILE *f = fopen(ckpt_path, "rb");
    struct stat sb;
    int rc = 0;
    if (!f && errno == ENOENT)
        return errmsg_set(e, ERR_NOTFOUND, "no checkpoint '%s'", ckpt_path);
    if (!f || fstat(fileno(f), &sb) != 0) {
        rc = errmsg_set(e, ERR_IO, "cannot read '%s': %s", ckpt_path, strerror(errno));
        goto fail;
    }
    uint64_t size = (uint64_t)sb.st_size;
    if (size < CKPT_HEAD_BYTES || fread(head, 1, CKPT_HEAD_BYTES, f) != CKPT_HEAD_BYTES ||
        memcmp(head, CKPT_MAGIC, 8) != 0) {
        rc = errmsg_set(e, ERR_DATA, "'%s' is not a checkpoint (bad magic or %llu bytes, offset 0)",
                        ckpt_path, (unsigned long long)size);
        goto fail;
    }
    uint32_t ver = get32(head + 8);
    if (ver != CKPT_VERSION) {
        rc = errmsg_set(e, ERR_DATA,
                        "checkpoint '%s' has version %u (this build reads %u) at offset 8",
                        ckpt_path, ver, CKPT_VERSION);
        goto fail;
    }
    h->n_bytes = get64(head + 112);
    if (h->n_bytes != size - CKPT_HEAD_BYTES) {
        rc = errmsg_set(e, ERR_DATA,
                        "checkpoint '%s' is truncated or too long: offset 112 says %llu workload "
                        "bytes, the file holds %llu",
                        ckpt_path, (unsigned long long)h->n_bytes,
                        (unsigned long long)(size - CKPT_HEAD_BYTES));
        goto fail;
    }
    h->crc = get32(head + CKPT_CRC_OFF);
    uint32_t sum = head_crc(head);
    if (crc && !(buf = mem_alloc(CKPT_CHUNK))) {
        rc = errmsg_set(e, ERR_NOMEM, "out of memory reading '%s'", ckpt_path);
        goto fail;
    }
    if (crc && crc_fd(fileno(f), CKPT_HEAD_BYTES, h->n_bytes, buf, &sum)) {
        rc = errmsg_set(e, ERR_IO, "cannot read '%s': %s", ckpt_path, strerror(errno));
        goto fail;
    }
    if (crc && sum != h->crc) {
        rc = errmsg_set(e, ERR_DATA, "bad checksum in checkpoint '%s' (at offset %u)", ckpt_path,
                        CKPT_CRC_OFF);
        goto fail;
    }
    memcpy(h->params_hash, head + 16, 64);
    h->params_hash[64] = 0;
    h->unit = get64(head + 80);
    h->length = get64(head + 88);
    h->records = get64(head + 96);
    h->frames = get64(head + 104);
    mem_free(buf);
    *out = f;
    return 0;
fail:
    mem_free(buf);
    if (f)
        fclose(f);
    return rc;
}

int capture_checkpoint_unit(const char *path, uint64_t *unit, struct errmsg *e)
{
    char *cp = path_plus(path, CAPTURE_CKPT_SUFFIX);
    if (!cp)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    struct ckpt_head h;
    FILE *f = NULL;
    /* the fixed part only: the resume itself reads the whole file for its checksum */
    int rc = ckpt_open(cp, false, &h, &f, e);
    if (!rc)
        *unit = h.unit;
    if (f)
        fclose(f);
    mem_free(cp);
    return rc;
}

/* Removes path.partial for a fresh start of --resume, unless a writer holds it. */
static int drop_partial(const char *path, struct errmsg *e)
{
    char *tp = path_plus(path, TRACE_WRITER_TMP_SUFFIX);
    if (!tp)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    int rc = 0;
    int fd = open(tp, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd >= 0) {
        if (flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK)
            rc = errmsg_set(e, ERR_USAGE, "'%s' is in use: another capture is writing '%s'", tp,
                            path);
        else
            unlink(tp);
        close(fd);
    }
    mem_free(tp);
    return rc;
}

/*
 * The writer of a resumed run: reads path.ckpt, checks its params hash against this run's,
 * reopens path.partial at the recorded length and loads the workload's state into inst.
 * *w NULL with 0 returned: no checkpoint (or no .partial for it), start fresh.
 */
static int resume_open(const struct capture_ops *ops, void *inst, const char *path,
                       const char *ckpt_path, const struct trace_writer_opts *wo,
                       const char *params_hash, struct capture_sink *sink, struct trace_writer **w,
                       struct errmsg *e)
{
    *w = NULL;
    struct ckpt_head h;
    char *tp = NULL;
    FILE *f = NULL;
    int rc = ckpt_open(ckpt_path, true, &h, &f, e);
    if (rc == ERR_NOTFOUND)
        return drop_partial(path, e);
    if (rc)
        return rc;
    if (strcmp(h.params_hash, params_hash) != 0) {
        rc = errmsg_set(e, ERR_USAGE,
                        "checkpoint '%s' is of other parameters (params hash %s, this run %s): "
                        "rerun with the parameters of the killed run, or remove it",
                        ckpt_path, h.params_hash, params_hash);
        goto out;
    }
    if (!(tp = path_plus(path, TRACE_WRITER_TMP_SUFFIX))) {
        rc = errmsg_set(e, ERR_NOMEM, "out of memory");
        goto out;
    }
    if (access(tp, F_OK) != 0 && errno == ENOENT) {
        /* a finished or removed trace's leftover: start fresh */
        unlink(ckpt_path);
        goto out;
    }
    /* the workload's state first (f is at its bytes, which end at the file's end): a bad
     * one leaves the .partial as it was */
    if ((rc = ops->checkpoint_load(inst, h.unit, f, ckpt_path, e)))
        goto out;
    if ((rc = trace_writer_reopen(w, path, wo, h.length, h.frames, e)))
        goto out;
    sink->resume_unit = h.unit;
    sink->records = h.records;
out:
    if (f)
        fclose(f);
    mem_free(tp);
    return rc;
}

/* The writer of the run: a fresh one, or the reopened .partial of a resumed run. */
static int open_writer(const struct capture_ops *ops, void *inst, const char *path,
                       const struct capture_opts *o, const Acceltrace__TraceHeader *hdr,
                       struct ckpt_ctx *ck, struct capture_sink *sink, struct trace_writer **w,
                       struct errmsg *e)
{
    struct trace_writer_opts wo;
    trace_writer_opts_default(&wo);
    wo.zstd_level = o->zstd_level;
    *w = NULL;
    int rc = 0;
    if (o->resume)
        rc = resume_open(ops, inst, path, ck->path, &wo, ck->params_hash, sink, w, e);
    if (!rc && !*w) {
        rc = trace_writer_open(w, path, &wo, hdr, e);
        if (!rc && ck->path)
            unlink(ck->path); /* a stale checkpoint must not meet this new .partial */
    }
    return rc;
}

/* The rewritten trace's header: the order's params_json and, where the header carries
 * one, its params hash. */
struct reorder_ctx {
    struct capture_order order;
    char hash[65];
};

static int reorder_cmp(const struct trace_reorder_entry *a, const struct trace_reorder_entry *b,
                       void *ctx)
{
    const struct reorder_ctx *r = ctx;
    return r->order.cmp(a, b, r->order.ctx);
}

static int reorder_header(Acceltrace__TraceHeader *hdr, void *ctx, struct errmsg *e)
{
    struct reorder_ctx *r = ctx;
    (void)e;
    if (r->order.params_json)
        hdr->params_json = (char *)r->order.params_json;
    if (hdr->params_hash && *hdr->params_hash) {
        params_hash(hdr, r->hash);
        hdr->params_hash = r->hash;
    }
    return 0;
}

/*
 * The end of a run whose records go in another order (capture_ops.final_order): seals
 * path.partial, rewrites it through path.reordering (a killed rewrite's leftover removed
 * first: the .partial's lock says no other capture of path runs) into path.
 */
static int reorder_finish(struct trace_writer *w, const char *path, const struct capture_order *co,
                          const struct capture_opts *o, struct errmsg *e)
{
    struct reorder_ctx rc_ctx = {.order = *co};
    char *in = path_plus(path, TRACE_WRITER_TMP_SUFFIX), *tmp = path_plus(path, ".reordering");
    int rc = 0;
    if (!in || !tmp) {
        rc = errmsg_set(e, ERR_NOMEM, "out of memory");
        goto out;
    }
    if ((rc = trace_writer_seal(w))) {
        errmsg_set(e, rc, "%s", trace_writer_errmsg(w));
        goto out;
    }
    unlink(tmp);
    struct trace_reorder_opts ro = {.cmp = reorder_cmp,
                                    .ctx = &rc_ctx,
                                    .edit_header = reorder_header,
                                    .tmp_path = tmp,
                                    .zstd_level = o->zstd_level};
    rc = trace_reorder(in, path, &ro, e);
out:
    mem_free(in);
    mem_free(tmp);
    return rc;
}

int capture_run(const struct capture_ops *ops, void *inst, const char *path,
                const struct capture_opts *o, struct errmsg *e)
{
    struct capture_opts def;
    if (!o) {
        capture_opts_default(&def);
        o = &def;
    }
    bool resumable = ops->checkpoint_save && ops->checkpoint_load;
    if (o->resume && !resumable)
        return errmsg_set(e, ERR_USAGE, "capture %s cannot resume", ops->name);
    int rc = check_memory(ops, inst, o, e);
    if (!rc && ops->prepare)
        rc = ops->prepare(inst, e);
    if (rc)
        return rc;
    Acceltrace__TraceHeader hdr = ACCELTRACE__TRACE_HEADER__INIT;
    struct capture_header_store st;
    if ((rc = ops->header(inst, &hdr, e)))
        return rc;
    if (!hdr.source || !*hdr.source)
        return errmsg_set(e, ERR_INTERNAL, "capture %s: its header names no source", ops->name);
    capture_header_common(ops, o, &hdr, &st);

    char label[64];
    snprintf(label, sizeof label, "%s capture", ops->name);
    struct capture_sink sink = {.append = writer_append, .flush = writer_flush, .quiet = o->quiet};
    sink.progress.label = label;
    struct ckpt_ctx ck = {.ops = ops,
                          .inst = inst,
                          .sink = &sink,
                          .params_hash = st.params_hash,
                          .interval_s = o->checkpoint_interval_s,
                          .t_last_s = progress_now_s()};
    if (resumable && !(ck.path = path_plus(path, CAPTURE_CKPT_SUFFIX)))
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    struct trace_writer *w = NULL;
    if ((rc = open_writer(ops, inst, path, o, &hdr, &ck, &sink, &w, e)))
        goto out;
    sink.ctx = w;
    ck.w = w;
    if (resumable) {
        sink.checkpoint = driver_checkpoint;
        sink.checkpoint_ctx = &ck;
        sink.checkpoint_path = ck.path;
    }
    rc = ops->run(inst, &sink, e);
    capture_progress_end(&sink);
    struct capture_order order = {0};
    if (!rc && ops->final_order && ops->final_order(inst, &order))
        rc = reorder_finish(w, path, &order, o, e);
    else if (!rc && (rc = trace_writer_finish(w)))
        errmsg_set(e, rc, "%s", trace_writer_errmsg(w));
    trace_writer_free(w); /* removes the .partial unless finished (a reordered run's too) */
    /* finished, or failed (its .partial removed): the checkpoint has nothing to resume */
    if (ck.path && w) {
        char *tmp = path_plus(ck.path, ".tmp"); /* a killed checkpoint write's leftover */
        unlink(ck.path);
        if (tmp)
            unlink(tmp);
        mem_free(tmp);
    }
out:
    mem_free(ck.path);
    return rc;
}
