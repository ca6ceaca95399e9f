/*
 * Tests of the .atr container (traces/trace_writer, trace_reader): seeded random round
 * trip of every record type, random access touching only the frame asked for, limits.
 * Seed: ACCELTRACE_SEED (default 20261130), printed.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <zstd.h>

#include "common/buf.h"
#include "common/crc32c.h"
#include "common/io.h"
#include "common/mem.h"
#include "common/rng.h"
#include "formats/varint.h"
#include "tests/helpers/test_helpers.h"
#include "traces/trace_reader.h"
#include "traces/trace_recover.h"
#include "traces/trace_verify.h"
#include "traces/trace_writer.h"

static uint64_t seed = 20261130;

/* ---- a descriptor-driven random message builder (malloc-owned, freed by protobuf-c) ---- */

static void *xmalloc(size_t n)
{
    void *p = calloc(1, n ? n : 1);
    assert_non_null(p);
    return p;
}

static void fill_message(ProtobufCMessage *m, const ProtobufCMessageDescriptor *d, struct rng *r,
                         int depth);

static size_t value_size(const ProtobufCFieldDescriptor *f)
{
    switch (f->type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32:
    case PROTOBUF_C_TYPE_ENUM:
        return 4;
    case PROTOBUF_C_TYPE_FLOAT:
        return 4;
    case PROTOBUF_C_TYPE_BOOL:
        return sizeof(protobuf_c_boolean);
    case PROTOBUF_C_TYPE_STRING:
    case PROTOBUF_C_TYPE_MESSAGE:
        return sizeof(void *);
    case PROTOBUF_C_TYPE_BYTES:
        return sizeof(ProtobufCBinaryData);
    default:
        return 8;
    }
}

static void random_value(void *p, const ProtobufCFieldDescriptor *f, struct rng *r, int depth)
{
    uint64_t x = rng_u64(r);
    switch (f->type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32: {
        uint32_t v = (uint32_t)(x % 4 == 0 ? x >> 32 : (x >> 40) % 1000);
        memcpy(p, &v, 4);
        break;
    }
    case PROTOBUF_C_TYPE_ENUM: {
        const ProtobufCEnumDescriptor *e = f->descriptor;
        int v = e->n_values ? e->values[(x >> 8) % e->n_values].value : 0;
        memcpy(p, &v, 4);
        break;
    }
    case PROTOBUF_C_TYPE_FLOAT: {
        float v = (float)rng_normal(r) * 100.0f;
        memcpy(p, &v, 4);
        break;
    }
    case PROTOBUF_C_TYPE_DOUBLE: {
        double v = rng_normal(r) * 1e3;
        memcpy(p, &v, 8);
        break;
    }
    case PROTOBUF_C_TYPE_BOOL: {
        protobuf_c_boolean v = (protobuf_c_boolean)(x & 1);
        memcpy(p, &v, sizeof v);
        break;
    }
    case PROTOBUF_C_TYPE_STRING: {
        size_t n = (size_t)(x % 24);
        char *s = xmalloc(n + 1);
        for (size_t i = 0; i < n; i++)
            s[i] = (char)('a' + rng_below(r, 26));
        memcpy(p, &s, sizeof s);
        break;
    }
    case PROTOBUF_C_TYPE_BYTES: {
        ProtobufCBinaryData b;
        b.len = (size_t)(x % 300);
        b.data = xmalloc(b.len);
        for (size_t i = 0; i < b.len; i++)
            b.data[i] = (uint8_t)(rng_u64(r) & (i % 7 ? 0xff : 0x0f));
        memcpy(p, &b, sizeof b);
        break;
    }
    case PROTOBUF_C_TYPE_MESSAGE: {
        const ProtobufCMessageDescriptor *sd = f->descriptor;
        ProtobufCMessage *sm = NULL;
        if (depth < 3) {
            sm = xmalloc(sd->sizeof_message);
            sd->message_init(sm);
            fill_message(sm, sd, r, depth + 1);
        }
        memcpy(p, &sm, sizeof sm);
        break;
    }
    default: {
        uint64_t v = x % 3 == 0 ? x : x % 100000;
        memcpy(p, &v, 8);
        break;
    }
    }
}

static void fill_message(ProtobufCMessage *m, const ProtobufCMessageDescriptor *d, struct rng *r,
                         int depth)
{
    char *base = (char *)m;
    for (unsigned i = 0; i < d->n_fields; i++) {
        const ProtobufCFieldDescriptor *f = &d->fields[i];
        if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF)
            continue; /* oneofs are set by the caller */
        if (f->label == PROTOBUF_C_LABEL_REPEATED) {
            size_t n = depth > 1 ? rng_below(r, 3) : rng_below(r, 20);
            char *arr = n ? xmalloc(n * value_size(f)) : NULL;
            for (size_t k = 0; k < n; k++) {
                random_value(arr + k * value_size(f), f, r, depth + 1);
                if (f->type == PROTOBUF_C_TYPE_MESSAGE) {
                    void *sm;
                    memcpy(&sm, arr + k * value_size(f), sizeof sm);
                    if (!sm) { /* repeated messages may not be NULL */
                        const ProtobufCMessageDescriptor *sd = f->descriptor;
                        sm = xmalloc(sd->sizeof_message);
                        sd->message_init(sm);
                        memcpy(arr + k * value_size(f), &sm, sizeof sm);
                    }
                }
            }
            memcpy(base + f->quantifier_offset, &n, sizeof n);
            memcpy(base + f->offset, &arr, sizeof arr);
        } else {
            if (f->type == PROTOBUF_C_TYPE_STRING) {
                char *old;
                memcpy(&old, base + f->offset, sizeof old);
                (void)old; /* default is a static "" owned by protobuf-c; replaced */
            }
            random_value(base + f->offset, f, r, depth);
            if (f->label == PROTOBUF_C_LABEL_OPTIONAL && f->quantifier_offset &&
                f->type != PROTOBUF_C_TYPE_MESSAGE && f->type != PROTOBUF_C_TYPE_STRING) {
                protobuf_c_boolean has = 1;
                memcpy(base + f->quantifier_offset, &has, sizeof has);
            }
        }
    }
}

/* A random SalcaSelect's list, made to hold `count` ascending indices below n_ctx: the
 * reader refuses any other (traces/trace_salca.h trace_salca_select_validate). */
static void fix_salca_select(Acceltrace__SalcaSelect *s, struct rng *r)
{
    uint32_t idx[64], n = (uint32_t)rng_below(r, 64);
    s->n_ctx = 64 + (uint32_t)rng_below(r, 1u << 20);
    for (uint32_t i = 0, at = 0; i < n; i++)
        idx[i] = at += (uint32_t)rng_below(r, s->n_ctx / 64) + (i > 0);
    struct buf b;
    buf_init(&b);
    assert_int_equal(varint_encode_indices(&b, idx, n), 0);
    free(s->sel.data);
    s->sel.data = xmalloc(b.len + 1);
    memcpy(s->sel.data, b.data, b.len);
    s->sel.len = b.len;
    s->count = n;
    buf_release(&b);
}

/* A random Record with body `type` (every field of the body message filled). */
static Acceltrace__Record *random_record(uint32_t type, struct rng *r)
{
    Acceltrace__Record *rec = xmalloc(sizeof *rec);
    acceltrace__record__init(rec);
    const ProtobufCFieldDescriptor *f =
        protobuf_c_message_descriptor_get_field(&acceltrace__record__descriptor, (int)type);
    assert_non_null(f);
    rec->body_case = (Acceltrace__Record__BodyCase)type;
    random_value((char *)rec + f->offset, f, r, 0);
    void *sm;
    memcpy(&sm, (char *)rec + f->offset, sizeof sm);
    assert_non_null(sm);
    if (type == ACCELTRACE__RECORD__BODY_SALCA_SELECT)
        fix_salca_select(sm, r);
    return rec;
}

static void free_built(Acceltrace__Record *rec)
{
    protobuf_c_message_free_unpacked(&rec->base, NULL);
}

static uint8_t *pack(const Acceltrace__Record *rec, size_t *n)
{
    *n = protobuf_c_message_get_packed_size(&rec->base);
    uint8_t *p = xmalloc(*n);
    protobuf_c_message_pack(&rec->base, p);
    return p;
}

static void assert_same_record(const Acceltrace__Record *a, const Acceltrace__Record *b)
{
    size_t na, nb;
    uint8_t *pa = pack(a, &na), *pb = pack(b, &nb);
    assert_int_equal(na, nb);
    assert_memory_equal(pa, pb, na);
    free(pa);
    free(pb);
}

static Acceltrace__TraceHeader *test_header(void)
{
    static Acceltrace__TraceHeader h = ACCELTRACE__TRACE_HEADER__INIT;
    h.producer = "acceltrace test";
    h.workload = "test";
    h.seed = seed;
    return &h;
}

/* Every non-header, non-index record type, random contents, levels 0 and 3, 1 and 2 threads. */
static void test_round_trip_every_type(void **state)
{
    (void)state;
    static const uint32_t types[] = {2, 3, 4, 5, 6, 7, 8, 9, 15};
    const size_t nt = sizeof types / sizeof types[0];
    for (int level = 0; level <= 3; level += 3) {
        for (int threads = 1; threads <= 2; threads++) {
            struct rng r;
            rng_seed(&r, seed + (uint64_t)level);
            char path[512];
            th_path(path, sizeof path, "rt.atr");
            struct trace_writer_opts o;
            trace_writer_opts_default(&o);
            o.zstd_level = level;
            o.flush_bytes = 4096;
            struct trace_writer *w;
            struct errmsg err = {0};
            assert_int_equal(trace_writer_open(&w, path, &o, test_header(), &err), 0);
            enum { N = 60 };
            Acceltrace__Record *recs[N];
            for (int i = 0; i < N; i++) {
                recs[i] = random_record(types[(size_t)i % nt], &r);
                assert_int_equal(trace_writer_append(w, recs[i], NULL), 0);
            }
            assert_int_equal(trace_writer_frames(w), N + 1);
            assert_int_equal(trace_writer_finish(w), 0);
            trace_writer_free(w);
            char partial[600];
            snprintf(partial, sizeof partial, "%s.partial", path);
            assert_int_not_equal(access(partial, F_OK), 0);

            struct trace_reader_opts ro;
            trace_reader_opts_default(&ro);
            ro.threads = threads;
            ro.compute_hash = true;
            struct trace_reader *rd;
            assert_int_equal(trace_reader_open(&rd, path, &ro, &err), 0);
            assert_string_equal(trace_reader_header(rd)->workload, "test");
            assert_int_equal(trace_reader_header(rd)->seed, seed);
            assert_non_null(trace_reader_index(rd));
            assert_int_equal(trace_reader_index_status(rd, NULL), 0);
            for (int i = 0; i < N; i++) {
                Acceltrace__Record *got;
                struct trace_key k;
                assert_int_equal(trace_reader_next(rd, &got, &k), 1);
                assert_same_record(recs[i], got);
                struct trace_key want;
                trace_record_key(recs[i], &want);
                assert_int_equal(k.step, want.step);
                assert_int_equal(k.layer, want.layer);
                assert_int_equal(k.head, want.head);
                trace_record_free(got);
            }
            Acceltrace__Record *got;
            assert_int_equal(trace_reader_next(rd, &got, NULL), 0);
            assert_null(got);
            /* the computed content hash equals the one the writer put in the index */
            char hash[65];
            snprintf(hash, sizeof hash, "%s", trace_reader_computed_hash(rd));
            assert_string_equal(hash, trace_reader_content_hash(rd));
            trace_reader_free(rd);
            for (int i = 0; i < N; i++)
                free_built(recs[i]);
            /* ACCELTRACE_WRITE_INTEROP=FILE keeps this trace (tests/interop/every_type.atr) */
            const char *keep = getenv("ACCELTRACE_WRITE_INTEROP");
            if (keep && level == 3 && threads == 1) {
                char cmd[1200];
                snprintf(cmd, sizeof cmd, "cp '%s' '%s'", path, keep);
                assert_int_equal(system(cmd), 0);
            }
        }
    }
}

/* Random access: >= 10,000 frames; find reads exactly one frame header + payload. */
static void test_random_access_touches_one_frame(void **state)
{
    (void)state;
    char path[512];
    struct errmsg err = {0};
    th_path(path, sizeof path, "ra.atr");
    struct trace_writer *w;
    assert_int_equal(trace_writer_open(&w, path, NULL, test_header(), &err), 0);
    enum { STEPS = 50, LAYERS = 20, HEADS = 12 }; /* 12,000 frames */
    for (int s = 0; s < STEPS; s++)
        for (int l = 0; l < LAYERS; l++)
            for (int h = 0; h < HEADS; h++) {
                Acceltrace__TestRecord t = ACCELTRACE__TEST_RECORD__INIT;
                t.step = (uint32_t)s;
                t.layer = l;
                t.head = h;
                t.value = (int64_t)s * 1000000 + l * 1000 + h;
                Acceltrace__Record rec = ACCELTRACE__RECORD__INIT;
                rec.body_case = ACCELTRACE__RECORD__BODY_TEST;
                rec.test = &t;
                assert_int_equal(trace_writer_append(w, &rec, NULL), 0);
            }
    assert_int_equal(trace_writer_finish(w), 0);
    trace_writer_free(w);

    struct trace_reader *rd;
    assert_int_equal(trace_reader_open(&rd, path, NULL, &err), 0);
    const Acceltrace__TraceIndex *ix = trace_reader_index(rd);
    assert_non_null(ix);
    assert_int_equal(ix->n_entries, 1 + STEPS * LAYERS * HEADS);
    struct rng r;
    rng_seed(&r, seed);
    for (int q = 0; q < 200; q++) {
        int s = (int)rng_below(&r, STEPS), l = (int)rng_below(&r, LAYERS),
            h = (int)rng_below(&r, HEADS);
        size_t pos = 1 + ((size_t)s * LAYERS + (size_t)l) * HEADS + (size_t)h;
        uint64_t before = trace_reader_bytes_read(rd);
        Acceltrace__Record *rec;
        assert_int_equal(trace_reader_find(rd, ACCELTRACE__RECORD__BODY_TEST, s, l, h, &rec), 1);
        uint64_t touched = trace_reader_bytes_read(rd) - before;
        assert_int_equal(touched, 12 + ix->entries[pos]->stored_bytes);
        assert_int_equal(rec->test->value, (int64_t)s * 1000000 + l * 1000 + h);
        trace_record_free(rec);
    }
    Acceltrace__Record *rec;
    assert_int_equal(trace_reader_find(rd, ACCELTRACE__RECORD__BODY_TEST, STEPS, 0, 0, &rec), 0);
    assert_int_equal(trace_reader_find(rd, ACCELTRACE__RECORD__BODY_DISC_MASK, 0, 0, 0, &rec), 0);
    trace_reader_free(rd);
    unlink(path);
}

/* Builds a trace in memory: preamble, a valid header frame, then `extra` as the next frame. */
static void frame_bytes(uint8_t *out, uint32_t len, uint8_t codec, uint8_t type,
                        const uint8_t *payload)
{
    out[0] = (uint8_t)len;
    out[1] = (uint8_t)(len >> 8);
    out[2] = (uint8_t)(len >> 16);
    out[3] = (uint8_t)(len >> 24);
    out[4] = codec;
    out[5] = type;
    out[6] = out[7] = 0;
    uint32_t c = crc32c_update(0, payload, payload ? len : 0);
    out[8] = (uint8_t)c;
    out[9] = (uint8_t)(c >> 8);
    out[10] = (uint8_t)(c >> 16);
    out[11] = (uint8_t)(c >> 24);
}

static size_t mem_trace(uint8_t *out, size_t cap, const uint8_t *hdr12, const uint8_t *payload,
                        size_t plen)
{
    static const uint8_t pre[16] = {'A', 'C', 'C', 'T', 'R', 'A', 'C', 'E', 1, 0, 0, 0, 0, 0, 0, 0};
    /* header record: Record{header{workload:"t"}} = 0a 03 12 01 74 */
    static const uint8_t hrec[5] = {0x0a, 0x03, 0x12, 0x01, 0x74};
    size_t n = 0;
    assert_true(cap >= 16 + 12 + 5 + 12 + plen);
    memcpy(out, pre, 16);
    n = 16;
    frame_bytes(out + n, 5, 0, 1, hrec);
    n += 12;
    memcpy(out + n, hrec, 5);
    n += 5;
    memcpy(out + n, hdr12, 12);
    n += 12;
    if (plen)
        memcpy(out + n, payload, plen);
    return n + plen;
}

static int read_all(const uint8_t *data, size_t n, uint64_t cap, struct errmsg *err)
{
    struct src s;
    src_init_mem(&s, data, n);
    struct trace_reader_opts o;
    trace_reader_opts_default(&o);
    if (cap)
        o.max_record_bytes = cap;
    /* these hand-made traces have no index: read their frames as verify would */
    o.allow_partial = true;
    o.warn_damage = false;
    struct trace_reader *rd;
    int rc = trace_reader_open_src(&rd, &s, "mem.atr", &o, err);
    if (rc)
        return rc;
    Acceltrace__Record *rec;
    while ((rc = trace_reader_next(rd, &rec, NULL)) == 1)
        trace_record_free(rec);
    errmsg_set(err, rc, "%s", trace_reader_errmsg(rd));
    trace_reader_free(rd);
    return rc;
}

/* A frame header declaring 4 GiB - 1: a limit error, nothing allocated for it. */
static void test_limit_frame_4gib(void **state)
{
    (void)state;
    uint8_t h[12], buf[256];
    frame_bytes(h, 0xffffffffu, 0, 15, NULL);
    size_t n = mem_trace(buf, sizeof buf, h, (const uint8_t *)"xx", 2);
    struct errmsg err = {0};
    int rc = read_all(buf, n, 0, &err);
    printf("4 GiB frame: %s\n", err.text);
    assert_int_equal(rc, ERR_LIMIT);
    assert_non_null(strstr(err.text, "exceeds the 1 GiB limit"));
    assert_non_null(strstr(err.text, "frame 1 at offset 33"));
    /* 1 GiB exactly passes the limit but is truncated */
    frame_bytes(h, 1u << 30, 0, 15, NULL);
    n = mem_trace(buf, sizeof buf, h, (const uint8_t *)"xx", 2);
    assert_int_equal(read_all(buf, n, 0, &err), ERR_DATA);
    assert_non_null(strstr(err.text, "truncated frame payload"));
}

/* A zstd frame that expands past the cap: declared size and unknown size (streaming). */
static void test_limit_zstd_bomb(void **state)
{
    (void)state;
    size_t big = 8u << 20; /* 8 MiB of one byte value: TestRecord.blob */
    uint8_t *raw = xmalloc(big + 16);
    /* Record{test{blob: big bytes}} : 7a <len> 2a <len> ... */
    size_t p = 0;
    raw[p++] = 0x7a;
    size_t inner = 1 + 4 + big;
    uint64_t v = inner;
    while (v >= 0x80) {
        raw[p++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    raw[p++] = (uint8_t)v;
    raw[p++] = 0x2a;
    v = big;
    while (v >= 0x80) {
        raw[p++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    raw[p++] = (uint8_t)v;
    memset(raw + p, 'z', big);
    size_t rawn = p + big;
    size_t bound = ZSTD_compressBound(rawn);
    uint8_t *comp = xmalloc(bound);
    size_t cn = ZSTD_compress(comp, bound, raw, rawn, 19);
    assert_false(ZSTD_isError(cn));
    printf("bomb: %zu bytes expand to %zu\n", cn, rawn);
    uint8_t h[12];
    frame_bytes(h, (uint32_t)cn, 1, 15, comp);
    uint8_t *buf = xmalloc(bound + 256);
    size_t n = mem_trace(buf, bound + 256, h, comp, cn);
    struct errmsg err = {0};
    /* under a 1 MiB cap: refused before decompressing */
    assert_int_equal(read_all(buf, n, 1u << 20, &err), ERR_LIMIT);
    printf("declared size: %s\n", err.text);
    assert_non_null(strstr(err.text, "above the cap"));
    /* with the default cap it decodes */
    assert_int_equal(read_all(buf, n, 0, &err), 0);

    /* unknown content size: streaming decompression stops at the cap */
    ZSTD_CStream *cs = ZSTD_createCStream();
    ZSTD_initCStream(cs, 19);
    ZSTD_outBuffer ob = {comp, bound, 0};
    ZSTD_inBuffer ib = {raw, rawn, 0};
    while (ib.pos < ib.size)
        assert_false(ZSTD_isError(ZSTD_compressStream(cs, &ob, &ib)));
    assert_int_equal(ZSTD_endStream(cs, &ob), 0);
    ZSTD_freeCStream(cs);
    assert_int_equal(ZSTD_getFrameContentSize(comp, ob.pos), ZSTD_CONTENTSIZE_UNKNOWN);
    frame_bytes(h, (uint32_t)ob.pos, 1, 15, comp);
    n = mem_trace(buf, bound + 256, h, comp, ob.pos);
    assert_int_equal(read_all(buf, n, 1u << 20, &err), ERR_LIMIT);
    printf("streaming: %s\n", err.text);
    assert_non_null(strstr(err.text, "exceeds the cap")); /* the window or the output */
    assert_int_equal(read_all(buf, n, 0, &err), 0);

    /* a small window (1 KiB) passes the window check: the output cap stops it */
    ZSTD_CCtx *cc = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel, 3);
    ZSTD_CCtx_setParameter(cc, ZSTD_c_windowLog, 10);
    ZSTD_CCtx_setParameter(cc, ZSTD_c_contentSizeFlag, 0);
    ob = (ZSTD_outBuffer){comp, bound, 0};
    ib = (ZSTD_inBuffer){raw, rawn, 0};
    size_t left;
    do {
        left = ZSTD_compressStream2(cc, &ob, &ib, ZSTD_e_end);
        assert_false(ZSTD_isError(left));
    } while (left);
    ZSTD_freeCCtx(cc);
    assert_int_equal(ZSTD_getFrameContentSize(comp, ob.pos), ZSTD_CONTENTSIZE_UNKNOWN);
    frame_bytes(h, (uint32_t)ob.pos, 1, 15, comp);
    n = mem_trace(buf, bound + 256, h, comp, ob.pos);
    assert_int_equal(read_all(buf, n, 1u << 20, &err), ERR_LIMIT);
    printf("streaming, small window: %s\n", err.text);
    assert_non_null(strstr(err.text, "decompressed record exceeds the cap"));
    assert_int_equal(read_all(buf, n, 0, &err), 0);
    free(raw);
    free(comp);
    free(buf);
}

/* Absurd repeated counts: a packed field declaring 2^40 bytes, and a real count that needs
 * more memory than the cap allows. */
static void test_limit_repeated_count(void **state)
{
    (void)state;
    /* Record{test{numbers: packed, length 2^40}} with only a few bytes present */
    uint8_t raw[32];
    size_t p = 0;
    raw[p++] = 0x7a;
    raw[p++] = 10;
    raw[p++] = 0x32; /* field 6, wire type 2 */
    uint64_t v = (uint64_t)1 << 40;
    while (v >= 0x80) {
        raw[p++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    raw[p++] = (uint8_t)v;
    raw[p++] = 1;
    raw[p++] = 2;
    raw[p++] = 3;
    raw[1] = (uint8_t)(p - 2);
    uint8_t h[12], buf[256];
    frame_bytes(h, (uint32_t)p, 0, 15, raw);
    size_t n = mem_trace(buf, sizeof buf, h, raw, p);
    struct errmsg err = {0};
    assert_int_equal(read_all(buf, n, 0, &err), ERR_DATA);
    printf("packed 2^40: %s\n", err.text);
    assert_non_null(strstr(err.text, "cannot parse"));

    /* 400,000 unpacked one-byte numbers: 800 KB of input, 1.6 MB of uint32 at unpack */
    size_t cnt = 400000;
    size_t inner = cnt * 2;
    uint8_t *big = xmalloc(inner + 16);
    p = 0;
    big[p++] = 0x7a;
    v = inner;
    while (v >= 0x80) {
        big[p++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    big[p++] = (uint8_t)v;
    for (size_t i = 0; i < cnt; i++) {
        big[p++] = 0x30; /* field 6, varint */
        big[p++] = 7;
    }
    uint8_t *tb = xmalloc(p + 256);
    frame_bytes(h, (uint32_t)p, 0, 15, big);
    n = mem_trace(tb, p + 256, h, big, p);
    assert_int_equal(read_all(tb, n, 1u << 20, &err), ERR_LIMIT);
    printf("count: %s\n", err.text);
    assert_non_null(strstr(err.text, "more than 1048576 bytes of memory"));
    assert_int_equal(read_all(tb, n, 0, &err), 0);
    free(big);
    free(tb);
}

/* Out-of-memory injection: every allocation failure during write and read is an error, no
 * crash or leak (leaks show under ASan). */
static void test_alloc_failures(void **state)
{
    (void)state;
    char path[512];
    struct errmsg err = {0};
    th_path(path, sizeof path, "oom.atr");
    struct rng r;
    rng_seed(&r, seed);
    Acceltrace__Record *rec = random_record(15, &r);
    for (long k = 1; k < 60; k++) {
        struct trace_writer *w = NULL;
        mem_fail_after(k);
        int rc = trace_writer_open(&w, path, NULL, test_header(), &err);
        if (!rc) {
            rc = trace_writer_append(w, rec, NULL);
            if (!rc)
                rc = trace_writer_finish(w);
            trace_writer_free(w);
        }
        mem_fail_after(0);
        if (rc == 0)
            break;
        assert_true(rc < 0);
    }
    assert_int_equal(access(path, F_OK), 0);
    for (long k = 1; k < 200; k++) {
        struct trace_reader *rd = NULL;
        mem_fail_after(k);
        int rc = trace_reader_open(&rd, path, NULL, &err);
        if (!rc) {
            Acceltrace__Record *got;
            while ((rc = trace_reader_next(rd, &got, NULL)) == 1)
                trace_record_free(got);
            trace_reader_free(rd);
        }
        mem_fail_after(0);
        if (rc == 0)
            break;
        assert_true(rc < 0);
    }
    free_built(rec);
    unlink(path);
}

/* Frames of several MiB (written around the queue) between small ones read back equal. */
static void test_large_frames(void **state)
{
    (void)state;
    char path[512];
    struct errmsg err = {0};
    th_path(path, sizeof path, "large.atr");
    struct rng r;
    rng_seed(&r, seed);
    size_t big = 3u << 20;
    uint8_t *blob = xmalloc(big);
    for (size_t i = 0; i < big; i++)
        blob[i] = (uint8_t)rng_u64(&r); /* incompressible: stored raw even at level 3 */
    struct trace_writer *w;
    assert_int_equal(trace_writer_open(&w, path, NULL, test_header(), &err), 0);
    for (uint32_t i = 0; i < 6; i++) {
        Acceltrace__TestRecord t = ACCELTRACE__TEST_RECORD__INIT;
        t.step = i;
        t.blob.data = blob;
        t.blob.len = i % 2 ? big - i : 10 + i;
        Acceltrace__Record rec = ACCELTRACE__RECORD__INIT;
        rec.body_case = ACCELTRACE__RECORD__BODY_TEST;
        rec.test = &t;
        assert_int_equal(trace_writer_append(w, &rec, NULL), 0);
    }
    assert_int_equal(trace_writer_finish(w), 0);
    trace_writer_free(w);
    struct errmsg e = {0, ""};
    assert_int_equal(trace_verify(path, NULL, NULL, &e), 0);
    struct trace_reader *rd;
    assert_int_equal(trace_reader_open(&rd, path, NULL, &err), 0);
    Acceltrace__Record *got;
    for (uint32_t i = 0; i < 6; i++) {
        assert_int_equal(trace_reader_next(rd, &got, NULL), 1);
        assert_int_equal(got->test->step, i);
        assert_int_equal(got->test->blob.len, i % 2 ? big - i : 10 + i);
        assert_memory_equal(got->test->blob.data, blob, got->test->blob.len);
        trace_record_free(got);
    }
    assert_int_equal(trace_reader_find(rd, ACCELTRACE__RECORD__BODY_TEST, 3, 0, 0, &got), 1);
    assert_int_equal(got->test->blob.len, big - 3);
    trace_record_free(got);
    trace_reader_free(rd);
    free(blob);
    unlink(path);
}

/* Writer misuse and I/O errors give codes and messages, not crashes. */
static void test_writer_errors(void **state)
{
    (void)state;
    struct trace_writer *w;
    struct errmsg err = {0};
    assert_int_equal(trace_writer_open(&w, "/nonexistent-dir/x.atr", NULL, test_header(), &err),
                     ERR_IO);
    assert_null(w);
    assert_non_null(strstr(err.text, "cannot create '/nonexistent-dir/x.atr.partial'"));
    char path[512];
    th_path(path, sizeof path, "misuse.atr");
    assert_int_equal(trace_writer_open(&w, path, NULL, test_header(), &err), 0);
    Acceltrace__Record rec = ACCELTRACE__RECORD__INIT;
    assert_int_equal(trace_writer_append(w, &rec, NULL), ERR_USAGE); /* no body */
    trace_writer_free(w); /* a failed writer removed its .partial: the path opens again */
    assert_int_equal(trace_writer_open(&w, path, NULL, test_header(), &err), 0);
    rec.body_case = ACCELTRACE__RECORD__BODY_HEADER;
    rec.header = test_header();
    assert_int_equal(trace_writer_append(w, &rec, NULL), ERR_USAGE);
    assert_non_null(strstr(trace_writer_errmsg(w), "written by the writer"));
    /* after an error the writer refuses to go on and removes its .partial file */
    assert_true(trace_writer_finish(w) < 0);
    trace_writer_free(w);
    char partial[600];
    snprintf(partial, sizeof partial, "%s.partial", path);
    assert_int_not_equal(access(partial, F_OK), 0);
    assert_int_not_equal(access(path, F_OK), 0);
    /* a reader on a missing file or a non-trace */
    struct trace_reader *rd;
    assert_int_equal(trace_reader_open(&rd, "/nonexistent-dir/x.atr", NULL, &err), ERR_NOINPUT);
    assert_null(rd);
    assert_int_equal(trace_reader_open(&rd, "tests/golden/ok/small.jsonl", NULL, &err), ERR_FORMAT);
    assert_non_null(strstr(err.text, "not an acceltrace trace"));
}

/* Appends records of ~2 KiB until one fails; the number that succeeded. */
static int append_until_error(struct trace_writer *w, int max, int *rc_out)
{
    struct rng r;
    rng_seed(&r, seed);
    int i = 0, rc = 0;
    for (; i < max && rc == 0; i++) {
        Acceltrace__Record *rec = random_record(15, &r);
        rc = trace_writer_append(w, rec, NULL);
        free_built(rec);
    }
    *rc_out = rc;
    return i;
}

/*
 * The .partial file is the writer's lock (docs/trace-format.md, "Concurrent writers"): a
 * second writer of the same path is refused with ERR_USAGE while the first one writes, the
 * first one's file is untouched and finishes into a trace that verifies. A writer freed
 * unfinished removes its .partial; one whose process died leaves it, and it refuses the
 * next writer, untouched, until recovered or removed.
 */
static void test_writer_exclusive(void **state)
{
    (void)state;
    char path[512], partial[600];
    struct errmsg err = {0};
    th_path(path, sizeof path, "excl.atr");
    snprintf(partial, sizeof partial, "%s.partial", path);
    struct trace_writer_opts o;
    trace_writer_opts_default(&o);
    o.flush_bytes = 1024;
    struct trace_writer *w1, *w2 = NULL;
    assert_int_equal(trace_writer_open(&w1, path, &o, test_header(), &err), 0);
    int rc;
    assert_int_equal(append_until_error(w1, 20, &rc), 20);
    assert_int_equal(rc, 0);
    assert_int_equal(trace_writer_flush(w1), 0);
    struct stat before, after;
    assert_int_equal(stat(partial, &before), 0);
    assert_int_equal(trace_writer_open(&w2, path, &o, test_header(), &err), ERR_USAGE);
    assert_null(w2);
    printf("second writer: %s\n", err.text);
    assert_non_null(strstr(err.text, "excl.atr.partial' exists: another capture is writing"));
    assert_non_null(strstr(err.text, "acceltrace recover"));
    assert_int_equal(stat(partial, &after), 0);
    assert_int_equal(after.st_size, before.st_size); /* not truncated */
    assert_int_equal(after.st_ino, before.st_ino);
    assert_int_equal(trace_writer_finish(w1), 0);
    trace_writer_free(w1);
    struct trace_verify_result vr;
    struct errmsg e = {0, ""};
    assert_int_equal(trace_verify(path, NULL, &vr, &e), 0);
    assert_int_not_equal(access(partial, F_OK), 0);
    /* a writer freed unfinished removes its .partial */
    assert_int_equal(trace_writer_open(&w1, path, &o, test_header(), &err), 0);
    assert_int_equal(append_until_error(w1, 3, &rc), 3);
    trace_writer_free(w1);
    assert_int_not_equal(access(partial, F_OK), 0);
    /* a process that dies mid-write leaves its frames for recover, and the lock */
    fflush(stdout);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (trace_writer_open(&w1, path, &o, test_header(), &err) ||
            append_until_error(w1, 3, &rc) != 3 || trace_writer_flush(w1))
            _exit(1);
        _exit(0); /* no finish, no free: as if killed */
    }
    int wst;
    assert_int_equal(waitpid(pid, &wst, 0), pid);
    assert_true(WIFEXITED(wst) && WEXITSTATUS(wst) == 0);
    assert_int_equal(stat(partial, &before), 0);
    assert_true(before.st_size > 100);
    assert_int_equal(trace_writer_open(&w2, path, &o, test_header(), &err), ERR_USAGE);
    assert_int_equal(stat(partial, &after), 0);
    assert_int_equal(after.st_size, before.st_size);
    struct trace_recover_result res;
    assert_int_equal(trace_recover(partial, path, &res, &e), 0);
    assert_int_equal(res.frames, 4); /* header + 3 */
    unlink(partial);
    unlink(path);
}

/*
 * A full disk (ENOSPC injected by io_fail_writes_after) in an append, in finish and in the
 * header write of open: ERR_IO, "disk full writing 'NAME.partial'", and the temporary is
 * gone at once (before free), so the disk is not left full and a rerun is not refused.
 */
static void test_writer_disk_full(void **state)
{
    (void)state;
    char path[512], partial[600];
    struct errmsg err = {0};
    th_path(path, sizeof path, "full.atr");
    snprintf(partial, sizeof partial, "%s.partial", path);
    struct trace_writer_opts o;
    trace_writer_opts_default(&o);
    o.flush_bytes = 4096;
    o.zstd_level = 0;
    struct trace_writer *w;
    /* in an append: 64 KiB fit, the frames go on past that */
    assert_int_equal(trace_writer_open(&w, path, &o, test_header(), &err), 0);
    io_fail_writes_after(65536, ENOSPC);
    int rc;
    int n = append_until_error(w, 1000, &rc);
    io_fail_writes_after(0, 0);
    printf("disk full after %d appends: %s\n", n, trace_writer_errmsg(w));
    assert_int_equal(rc, ERR_IO);
    assert_true(n > 10 && n < 1000);
    assert_non_null(strstr(trace_writer_errmsg(w), "disk full writing '"));
    assert_non_null(strstr(trace_writer_errmsg(w), "full.atr.partial'"));
    assert_int_not_equal(access(partial, F_OK), 0); /* removed before free */
    assert_true(trace_writer_finish(w) < 0);
    trace_writer_free(w);
    assert_int_not_equal(access(path, F_OK), 0);
    /* in finish (the index and trailer do not fit) */
    assert_int_equal(trace_writer_open(&w, path, &o, test_header(), &err), 0);
    assert_int_equal(append_until_error(w, 5, &rc), 5);
    io_fail_writes_after(0, ENOSPC);
    assert_int_equal(trace_writer_finish(w), ERR_IO);
    io_fail_writes_after(0, 0);
    assert_non_null(strstr(trace_writer_errmsg(w), "disk full writing"));
    assert_int_not_equal(access(partial, F_OK), 0);
    trace_writer_free(w);
    assert_int_not_equal(access(path, F_OK), 0);
    /* in open: the preamble and header frame do not fit; nothing is left */
    io_fail_writes_after(10, ENOSPC);
    assert_int_equal(trace_writer_open(&w, path, &o, test_header(), &err), ERR_IO);
    io_fail_writes_after(0, 0);
    assert_null(w);
    assert_non_null(strstr(err.text, "disk full writing"));
    assert_int_not_equal(access(partial, F_OK), 0);
    /* another error (EIO) says so and removes the temporary too */
    assert_int_equal(trace_writer_open(&w, path, &o, test_header(), &err), 0);
    io_fail_writes_after(0, EIO);
    assert_int_equal(append_until_error(w, 1000, &rc) < 1000, 1);
    io_fail_writes_after(0, 0);
    assert_int_equal(rc, ERR_IO);
    assert_non_null(strstr(trace_writer_errmsg(w), "cannot write '"));
    assert_int_not_equal(access(partial, F_OK), 0);
    trace_writer_free(w);
    /* after all that, the same path writes a valid trace */
    assert_int_equal(trace_writer_open(&w, path, &o, test_header(), &err), 0);
    assert_int_equal(append_until_error(w, 5, &rc), 5);
    assert_int_equal(trace_writer_finish(w), 0);
    trace_writer_free(w);
    struct trace_verify_result vr;
    struct errmsg e = {0, ""};
    assert_int_equal(trace_verify(path, NULL, &vr, &e), 0);
    unlink(path);
}

/*
 * recover never writes over its input: not as the output (same path, or another name of
 * the same file), not as the output's temporary (`recover X.recovering -o X`), and a
 * temporary that exists already is refused and kept; a full disk leaves no .recovering.
 */
static void test_recover_never_its_input(void **state)
{
    (void)state;
    char in[512], out[512], tmpf[600], alias[600];
    th_path(in, sizeof in, "rin.atr.recovering");
    th_path(out, sizeof out, "rin.atr");
    char *text;
    size_t len;
    assert_int_equal(io_read_file("tests/golden/ok/small.atr", 1 << 20, &text, &len, NULL), 0);
    FILE *f = fopen(in, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, len, f), len);
    fclose(f);
    struct trace_recover_result res;
    struct errmsg e = {0, ""};
    assert_int_equal(trace_recover(in, out, &res, &e), ERR_USAGE);
    printf("recover X.recovering -o X: %s\n", e.text);
    assert_non_null(strstr(e.text, "is the temporary"));
    struct stat st;
    assert_int_equal(stat(in, &st), 0);
    assert_int_equal((size_t)st.st_size, len); /* the input is intact */
    snprintf(alias, sizeof alias, "%s/./rin.atr.recovering", th_tmpdir());
    assert_int_equal(trace_recover(in, alias, &res, &e), ERR_USAGE);
    assert_non_null(strstr(e.text, "same file"));
    /* a .recovering that is not ours: refused, kept */
    th_path(out, sizeof out, "rout.atr");
    snprintf(tmpf, sizeof tmpf, "%s.recovering", out);
    f = fopen(tmpf, "wb");
    assert_non_null(f);
    fclose(f);
    assert_int_equal(trace_recover(in, out, &res, &e), ERR_USAGE);
    assert_non_null(strstr(e.text, "exists"));
    assert_int_equal(access(tmpf, F_OK), 0);
    unlink(tmpf);
    /* a full disk: ERR_IO, no temporary, no output */
    io_fail_writes_after(100, ENOSPC);
    assert_int_equal(trace_recover(in, out, &res, &e), ERR_IO);
    io_fail_writes_after(0, 0);
    assert_non_null(strstr(e.text, "disk full writing"));
    assert_int_not_equal(access(tmpf, F_OK), 0);
    assert_int_not_equal(access(out, F_OK), 0);
    /* and then it works */
    assert_int_equal(trace_recover(in, out, &res, &e), 0);
    assert_int_equal(res.frames, 13);
    mem_free(text);
    unlink(in);
    unlink(out);
}

/*
 * Streaming with 2 threads (frames read ahead and decompressed by a worker while earlier
 * ones are returned): a corrupt frame in the middle of the stream is reported only after
 * every earlier record was returned, in order, with its frame number and offset; a later
 * corruption never wins over an earlier one; find() between next() calls is unaffected.
 */
static void test_threads_error_in_order(void **state)
{
    (void)state;
    struct rng r;
    rng_seed(&r, seed + 7);
    char path[512];
    struct errmsg err = {0};
    th_path(path, sizeof path, "order.atr");
    struct trace_writer_opts o;
    trace_writer_opts_default(&o);
    o.zstd_level = 3;
    struct trace_writer *w;
    assert_int_equal(trace_writer_open(&w, path, &o, test_header(), &err), 0);
    enum { N = 200 };
    Acceltrace__Record *recs[N];
    for (int i = 0; i < N; i++) {
        recs[i] = random_record(ACCELTRACE__RECORD__BODY_TEST, &r);
        assert_int_equal(trace_writer_append(w, recs[i], NULL), 0);
    }
    assert_int_equal(trace_writer_finish(w), 0);
    trace_writer_free(w);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    size_t n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *orig = xmalloc(n), *data = xmalloc(n);
    assert_int_equal(fread(orig, 1, n, f), n);
    fclose(f);
    /* frame offsets (frame 0 is the header) from the intact trace */
    uint64_t off[N + 1];
    struct src s;
    src_init_mem(&s, orig, n);
    struct trace_reader *rd;
    assert_int_equal(trace_reader_open_src(&rd, &s, "mem.atr", NULL, &err), 0);
    off[0] = trace_reader_last_frame(rd)->offset;
    for (int i = 1; i <= N; i++) {
        Acceltrace__Record *rec;
        assert_int_equal(trace_reader_next(rd, &rec, NULL), 1);
        off[i] = trace_reader_last_frame(rd)->offset;
        trace_record_free(rec);
    }
    trace_reader_free(rd);

    /* {frame, how}: 0 flips a payload byte (bad checksum, found while decompressing),
     * 1 sets the reserved header field (found while reading ahead) */
    static const int cases[][4] = {
        {100, 0, -1, 0}, {100, 0, 150, 1}, {120, 1, -1, 0}, {120, 1, 121, 0},
        {1, 0, 2, 1},    {N, 0, -1, 0},    {17, 1, 40, 0},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        memcpy(data, orig, n);
        for (int k = 0; k < 2; k++) {
            int fr = cases[c][2 * k], how = cases[c][2 * k + 1];
            if (fr < 0)
                continue;
            if (how == 0)
                data[off[fr] + 12 + 1] ^= 0x40;
            else
                data[off[fr] + 6] = 1;
        }
        int bad = cases[c][0];
        src_init_mem(&s, data, n);
        struct trace_reader_opts ro;
        trace_reader_opts_default(&ro);
        ro.threads = 2;
        assert_int_equal(trace_reader_open_src(&rd, &s, "mem.atr", &ro, &err), 0);
        for (int i = 1; i < bad; i++) {
            Acceltrace__Record *rec;
            assert_int_equal(trace_reader_next(rd, &rec, NULL), 1);
            assert_same_record(recs[i - 1], rec);
            trace_record_free(rec);
            assert_int_equal(trace_reader_last_frame(rd)->number, (uint64_t)i);
            assert_int_equal(trace_reader_offset(rd), off[i + 1]);
            const uint8_t *st, *raw;
            size_t st_len, raw_len;
            trace_reader_last_payload(rd, &st, &st_len, &raw, &raw_len);
            assert_int_equal(st_len, trace_reader_last_frame(rd)->stored_bytes);
            assert_int_equal(raw_len, trace_reader_last_frame(rd)->raw_bytes);
            if (i % 37 == 0) {
                /* random access in the middle of the stream: frame 1's record */
                Acceltrace__Record *one;
                struct trace_key k;
                trace_record_key(recs[0], &k);
                assert_int_equal(trace_reader_find(rd, ACCELTRACE__RECORD__BODY_TEST, k.step,
                                                   k.layer, k.head, &one),
                                 1);
                assert_int_equal(one->body_case, ACCELTRACE__RECORD__BODY_TEST);
                trace_record_free(one);
            }
        }
        Acceltrace__Record *rec;
        int rc = trace_reader_next(rd, &rec, NULL);
        assert_null(rec);
        assert_true(rc == ERR_DATA);
        char want[128];
        snprintf(want, sizeof want, "('mem.atr' frame %d at offset %llu)", bad,
                 (unsigned long long)off[bad]);
        const char *msg = trace_reader_errmsg(rd);
        printf("case %zu: %s\n", c, msg);
        assert_non_null(strstr(msg, want));
        assert_non_null(strstr(msg, cases[c][1] == 0 ? "bad checksum" : "reserved field"));
        assert_int_equal(trace_reader_offset(rd), off[bad]);
        /* the error repeats */
        assert_int_equal(trace_reader_next(rd, &rec, NULL), rc);
        trace_reader_free(rd);
    }
    free(orig);
    free(data);
    for (int i = 0; i < N; i++)
        free_built(recs[i]);
    unlink(path);
}

int main(void)
{
    seed = th_seed(seed);
    if (!th_tmpdir_make("trace"))
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_every_type),
        cmocka_unit_test(test_random_access_touches_one_frame),
        cmocka_unit_test(test_limit_frame_4gib),
        cmocka_unit_test(test_limit_zstd_bomb),
        cmocka_unit_test(test_limit_repeated_count),
        cmocka_unit_test(test_alloc_failures),
        cmocka_unit_test(test_writer_errors),
        cmocka_unit_test(test_writer_exclusive),
        cmocka_unit_test(test_writer_disk_full),
        cmocka_unit_test(test_recover_never_its_input),
        cmocka_unit_test(test_large_frames),
        cmocka_unit_test(test_threads_error_in_order),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    if (th_tmpdir_remove() != 0)
        fprintf(stderr, "cannot remove the temporary folder\n");
    return rc;
}
