/*
 * trace_reader_frame: one frame of a .atr file (see trace_reader.c): read and checked
 * against its header, decompressed within its declared size and the caller's cap, and
 * unpacked under the protobuf allocation budget defined here. Positions in messages are
 * "('<file>' frame N at offset O)" (tr_frame_err).
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

/* ---- allocation budget for protobuf-c ---- */

struct budget_hdr {
    size_t size; /* bytes asked for */
    void *base;  /* what mem_alloc returned (keeps 16-byte alignment) */
};

/*
 * Placement of large blocks [measured, docs/performance.md "Trace container"]: glibc's
 * rep-movsb memcpy on AMD Zen runs at 3.5 instead of 52 GB/s when the destination's page
 * offset lies a few bytes above the source's. protobuf-c copies each bytes field out of
 * the decompressed frame, which malloc places at page offset 16 like any large block, so
 * a field a few bytes into the frame lands just below a fresh block's data (offset 32).
 * Blocks of at least BUDGET_SHIFT_MIN bytes therefore start at page offset 2048, far
 * from both; they cost one extra page.
 */
#define BUDGET_SHIFT_MIN ((size_t)16384)
#define BUDGET_PAGE ((size_t)4096)
#define BUDGET_OFFSET ((size_t)2048)

static void *budget_alloc(void *data, size_t size)
{
    struct trace_budget *b = data;
    bool shift = size >= BUDGET_SHIFT_MIN;
    size_t total;
    if (!mem_add(size, sizeof(struct budget_hdr) + (shift ? BUDGET_PAGE : 0), &total))
        return NULL;
    if (b) {
        if (total > b->limit || b->used > b->limit - total) {
            b->exceeded = true;
            return NULL;
        }
        b->used += total;
    }
    unsigned char *base = mem_alloc(total);
    if (!base)
        return NULL;
    struct budget_hdr *h = (struct budget_hdr *)base;
    if (shift) {
        uintptr_t data_at = (uintptr_t)(base + sizeof *h);
        uintptr_t want = (data_at & ~(uintptr_t)(BUDGET_PAGE - 1)) + BUDGET_OFFSET;
        if (want < data_at)
            want += BUDGET_PAGE;
        h = (struct budget_hdr *)(base + (want - data_at));
    }
    h->size = size;
    h->base = base;
    return h + 1;
}

static void budget_free(void *data, void *p)
{
    struct trace_budget *b = data;
    if (!p)
        return;
    struct budget_hdr *h = (struct budget_hdr *)p - 1;
    if (b) {
        size_t total = h->size + sizeof *h + (h->size >= BUDGET_SHIFT_MIN ? BUDGET_PAGE : 0);
        b->used = b->used > total ? b->used - total : 0;
    }
    mem_free(h->base);
}

void trace_budget_allocator(ProtobufCAllocator *a, struct trace_budget *b)
{
    a->alloc = budget_alloc;
    a->free = budget_free;
    a->allocator_data = b;
}

void trace_record_free(Acceltrace__Record *rec)
{
    if (!rec)
        return;
    ProtobufCAllocator a;
    trace_budget_allocator(&a, NULL);
    protobuf_c_message_free_unpacked(&rec->base, &a);
}

bool trace_type_known(uint32_t type)
{
    return type != 0 && type <= TRACE_MAX_TYPE &&
           protobuf_c_message_descriptor_get_field(&acceltrace__record__descriptor, (int)type) !=
               NULL;
}

const char *trace_record_type_name(uint32_t type)
{
    if (!trace_type_known(type))
        return "unknown";
    return protobuf_c_message_descriptor_get_field(&acceltrace__record__descriptor, (int)type)
        ->name;
}

/* "<what> ('<file>' frame N at offset O)": the position every frame error names. */
int tr_frame_err(struct errmsg *e, int code, const char *name, uint64_t number, uint64_t offset,
                 const char *fmt, ...)
{
    char what[384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return errmsg_set(e, code, "%s ('%s' frame %llu at offset %llu)", what, name,
                      (unsigned long long)number, (unsigned long long)offset);
}

/* ---- one frame ---- */

/* See trace_reader_impl.h. */

void tr_job_reset(struct job *j)
{
    trace_record_free(j->rec);
    j->rec = NULL;
    j->raw = NULL;
    j->raw_len = 0;
    j->rc = 0;
    j->err.code = 0;
    j->err.text[0] = 0;
}

void tr_job_release(struct job *j)
{
    tr_job_reset(j);
    buf_release(&j->stored);
    buf_release(&j->rawbuf);
}

/*
 * Reads the frame header at off and its payload into j->stored, checking every field
 * against the bytes left before `end`. Errors go to e.
 */
int tr_read_frame(struct trace_reader *r, uint64_t off, uint64_t end, uint64_t number,
                  struct job *j, struct errmsg *e)
{
    tr_job_reset(j);
    memset(&j->fi, 0, sizeof j->fi);
    j->fi.number = number;
    j->fi.offset = off;
    j->fi.key.step = j->fi.key.layer = j->fi.key.head = -1;
    if (off > end || end - off < TRACE_FRAME_HEADER_BYTES)
        return tr_frame_err(e, ERR_DATA, r->name, number, off,
                            "truncated frame header (%llu of 12 bytes)",
                            (unsigned long long)(off > end ? 0 : end - off));
    uint8_t h[TRACE_FRAME_HEADER_BYTES];
    size_t got;
    if (src_read_at(r->src, off, h, sizeof h, &got))
        return tr_frame_err(e, ERR_IO, r->name, number, off, "read error");
    if (got != sizeof h)
        return tr_frame_err(e, ERR_DATA, r->name, number, off, "truncated frame header");
    uint32_t len = trace_get_u32(h);
    j->fi.codec = h[4];
    j->fi.type = h[5];
    j->fi.stored_bytes = len;
    j->crc = trace_get_u32(h + 8);
    if (trace_get_u16(h + 6) != 0)
        return tr_frame_err(e, ERR_DATA, r->name, number, off,
                            "nonzero reserved field in frame header");
    if (j->fi.codec > TRACE_CODEC_ZSTD)
        return tr_frame_err(e, ERR_FORMAT, r->name, number, off, "unknown codec %u", j->fi.codec);
    if (!trace_type_known(j->fi.type))
        return tr_frame_err(e, ERR_FORMAT, r->name, number, off, "unknown record type %u",
                            j->fi.type);
    if (len > TRACE_MAX_PAYLOAD)
        return tr_frame_err(e, ERR_LIMIT, r->name, number, off,
                            "frame payload of %u bytes exceeds the 1 GiB limit", len);
    uint64_t avail = end - off - TRACE_FRAME_HEADER_BYTES;
    if (len > avail)
        return tr_frame_err(e, ERR_DATA, r->name, number, off,
                            "truncated frame payload (%u bytes declared, %llu present)", len,
                            (unsigned long long)avail);
    if (j->fi.codec == TRACE_CODEC_RAW && len > r->opts.max_record_bytes)
        return tr_frame_err(e, ERR_LIMIT, r->name, number, off,
                            "record of %u bytes exceeds the cap of %llu bytes", len,
                            (unsigned long long)r->opts.max_record_bytes);
    buf_clear(&j->stored);
    if (buf_reserve(&j->stored, len))
        return tr_frame_err(e, ERR_NOMEM, r->name, number, off, "out of memory for %u bytes", len);
    if (src_read_at(r->src, off + TRACE_FRAME_HEADER_BYTES, j->stored.data, len, &got))
        return tr_frame_err(e, ERR_IO, r->name, number, off, "read error");
    if (got != len)
        return tr_frame_err(e, ERR_DATA, r->name, number, off, "truncated frame payload");
    j->stored.len = len;
    return 0;
}

/* Streaming decompression for frames without a declared content size, bounded by cap. */
static int decompress_stream(ZSTD_DCtx *d, struct job *j, uint64_t cap, const char *name)
{
    ZSTD_DCtx_reset(d, ZSTD_reset_session_only);
    /* the window zstd allocates for streaming stays within the cap (and zstd's default
     * limit of 2^27) */
    int wlog = 10;
    while (wlog < 27 && ((uint64_t)1 << wlog) < cap)
        wlog++;
    ZSTD_DCtx_setParameter(d, ZSTD_d_windowLogMax, wlog);
    ZSTD_inBuffer in = {j->stored.data, j->stored.len, 0};
    buf_clear(&j->rawbuf);
    for (;;) {
        if (j->rawbuf.cap - j->rawbuf.len < 65536 || j->rawbuf.cap == 0) {
            if (j->rawbuf.len >= cap)
                return tr_frame_err(&j->err, ERR_LIMIT, name, j->fi.number, j->fi.offset,
                                    "decompressed record exceeds the cap of %llu bytes",
                                    (unsigned long long)cap);
            size_t grow = j->rawbuf.len ? j->rawbuf.len : 65536;
            if (grow > cap - j->rawbuf.len)
                grow = (size_t)(cap - j->rawbuf.len);
            if (grow < 1)
                grow = 1;
            if (buf_reserve(&j->rawbuf, grow))
                return tr_frame_err(&j->err, ERR_NOMEM, name, j->fi.number, j->fi.offset,
                                    "out of memory decompressing");
        }
        size_t room = j->rawbuf.cap - 1 - j->rawbuf.len; /* buf keeps one byte for a NUL */
        if (room > cap - j->rawbuf.len)
            room = (size_t)(cap - j->rawbuf.len);
        ZSTD_outBuffer out = {j->rawbuf.data + j->rawbuf.len, room, 0};
        size_t rc = ZSTD_decompressStream(d, &out, &in);
        if (ZSTD_isError(rc) && ZSTD_getErrorCode(rc) == ZSTD_error_frameParameter_windowTooLarge)
            return tr_frame_err(&j->err, ERR_LIMIT, name, j->fi.number, j->fi.offset,
                                "zstd window exceeds the cap of %llu bytes",
                                (unsigned long long)cap);
        if (ZSTD_isError(rc))
            return tr_frame_err(&j->err, ERR_DATA, name, j->fi.number, j->fi.offset,
                                "bad zstd data: %s", ZSTD_getErrorName(rc));
        j->rawbuf.len += out.pos;
        if (rc == 0)
            break;
        if (in.pos == in.size && out.pos < room)
            return tr_frame_err(&j->err, ERR_DATA, name, j->fi.number, j->fi.offset,
                                "truncated zstd data");
        if (j->rawbuf.len >= cap && out.pos == room)
            return tr_frame_err(&j->err, ERR_LIMIT, name, j->fi.number, j->fi.offset,
                                "decompressed record exceeds the cap of %llu bytes",
                                (unsigned long long)cap);
    }
    j->raw = j->rawbuf.data;
    j->raw_len = j->rawbuf.len;
    return 0;
}

/*
 * Checks the crc and decompresses j (thread-safe given its own dctx). Unpacking is left
 * to tr_unpack_job on the consumer's thread, so records are allocated and freed by the same
 * thread (malloc arenas of worker threads otherwise trim and fault on every frame).
 */
int tr_decompress_job(struct job *j, ZSTD_DCtx *d, uint64_t cap, const char *name)
{
    const struct trace_frame_info *fi = &j->fi;
    if (crc32c_update(0, j->stored.data, j->stored.len) != j->crc)
        return j->rc =
                   tr_frame_err(&j->err, ERR_DATA, name, fi->number, fi->offset, "bad checksum");
    if (fi->codec == TRACE_CODEC_RAW) {
        j->raw = j->stored.data;
        j->raw_len = j->stored.len;
    } else {
        unsigned long long fcs = ZSTD_getFrameContentSize(j->stored.data, j->stored.len);
        if (fcs == ZSTD_CONTENTSIZE_ERROR)
            return j->rc = tr_frame_err(&j->err, ERR_DATA, name, fi->number, fi->offset,
                                        "payload is not a zstd frame");
        size_t csize = ZSTD_findFrameCompressedSize(j->stored.data, j->stored.len);
        if (ZSTD_isError(csize) || csize != j->stored.len)
            return j->rc = tr_frame_err(&j->err, ERR_DATA, name, fi->number, fi->offset,
                                        "payload is not exactly one zstd frame");
        if (fcs == ZSTD_CONTENTSIZE_UNKNOWN) {
            if (decompress_stream(d, j, cap, name))
                return j->rc = j->err.code;
        } else {
            if (fcs > cap)
                return j->rc = tr_frame_err(&j->err, ERR_LIMIT, name, fi->number, fi->offset,
                                            "zstd frame declares %llu bytes, above the cap of "
                                            "%llu bytes",
                                            fcs, (unsigned long long)cap);
            buf_clear(&j->rawbuf);
            if (buf_reserve(&j->rawbuf, (size_t)fcs))
                return j->rc = tr_frame_err(&j->err, ERR_NOMEM, name, fi->number, fi->offset,
                                            "out of memory for %llu bytes", fcs);
            /* The destination is exactly the declared size: zstd refuses to write more. */
            size_t n =
                ZSTD_decompressDCtx(d, j->rawbuf.data, (size_t)fcs, j->stored.data, j->stored.len);
            if (ZSTD_isError(n))
                return j->rc = tr_frame_err(&j->err, ERR_DATA, name, fi->number, fi->offset,
                                            "bad zstd data: %s", ZSTD_getErrorName(n));
            if (n != fcs)
                return j->rc = tr_frame_err(&j->err, ERR_DATA, name, fi->number, fi->offset,
                                            "zstd frame size mismatch");
            j->rawbuf.len = n;
            j->raw = j->rawbuf.data;
            j->raw_len = n;
        }
    }
    j->fi.raw_bytes = j->raw_len;
    return j->rc = 0;
}

/* Unpacks the decompressed payload of j into j->rec under the allocation budget. */
int tr_unpack_job(struct job *j, uint64_t cap, const char *name)
{
    const struct trace_frame_info *fi = &j->fi;
    /* protobuf-c needs a few times the wire bytes while unpacking: 4-byte ints from
     * 1-byte varints, a 32-byte scan entry per occurrence of a field (2 bytes on the wire
     * for a small unpacked repeated value) in slabs that double. The budget on live bytes
     * is 64x + 1 MiB, never more than the cap (decision) */
    uint64_t limit = (uint64_t)j->raw_len * 64 + (1u << 20);
    struct trace_budget b = {limit < cap ? limit : cap, 0, false};
    ProtobufCAllocator a;
    trace_budget_allocator(&a, &b);
    j->rec = (Acceltrace__Record *)protobuf_c_message_unpack(&acceltrace__record__descriptor, &a,
                                                             j->raw_len, j->raw);
    if (!j->rec) {
        if (b.exceeded)
            return j->rc = tr_frame_err(&j->err, ERR_LIMIT, name, fi->number, fi->offset,
                                        "record needs more than %llu bytes of memory",
                                        (unsigned long long)b.limit);
        return j->rc = tr_frame_err(&j->err, ERR_DATA, name, fi->number, fi->offset,
                                    "cannot parse the %s record", trace_record_type_name(fi->type));
    }
    if ((uint32_t)j->rec->body_case != fi->type)
        return j->rc = tr_frame_err(&j->err, ERR_DATA, name, fi->number, fi->offset,
                                    "record type mismatch (frame header %u, record %u)", fi->type,
                                    (unsigned)j->rec->body_case);
    /* what a record's fields must agree on, checked once here for every reader of it */
    struct errmsg ve = {0, ""};
    if (j->rec->body_case == ACCELTRACE__RECORD__BODY_SALCA_SELECT &&
        trace_salca_select_validate(j->rec->salca_select, &ve))
        return j->rc = tr_frame_err(&j->err, ve.code, name, fi->number, fi->offset, "%s", ve.text);
    return j->rc = 0;
}

/* tr_decompress_job + tr_unpack_job. */
int tr_decode_job(struct job *j, ZSTD_DCtx *d, uint64_t cap, const char *name)
{
    if (tr_decompress_job(j, d, cap, name))
        return j->rc;
    return tr_unpack_job(j, cap, name);
}
