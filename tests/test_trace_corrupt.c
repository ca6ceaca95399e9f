/*
 * Corruption sweep of the container: the golden trace
 * tests/golden/ok/small.atr truncated at every byte offset, and with every single bit
 * flipped in turn, is opened, streamed, searched through the index and verified from
 * memory. Nothing may crash, hang or leak (run under ASan by `make asan`); verify must
 * reject every damaged copy with a message naming the file, a frame number and an offset
 * (except flips of the minor version, which give valid traces of another minor), and no
 * damaged copy may stream to a clean end under the default options (a flipped
 * type byte or a missing index used to end the trace early, silently).
 *
 * Then the damaged-trace policy of the reader: an index frame
 * in the middle, a missing or damaged index (refused unless allow_partial, then warned
 * once), a payload changed with a recomputed crc (content hash), index keys that disagree
 * with the records (tests/golden/bad/index_key.atr).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/crc32c.h"
#include "common/io.h"
#include "traces/trace_reader.h"
#include "traces/trace_verify.h"

#define GOLDEN "tests/golden/ok/small.atr"
#define GOLDEN_RAW "tests/golden/ok/raw.atr"
#define BAD_KEY "tests/golden/bad/index_key.atr"

static uint8_t *golden;
static size_t golden_len;

static uint8_t *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *p = malloc(*len ? *len : 1);
    if (!p || fread(p, 1, *len, f) != *len) {
        free(p);
        p = NULL;
    }
    fclose(f);
    return p;
}

static int load(void **state)
{
    (void)state;
    golden = slurp(GOLDEN, &golden_len);
    return golden ? 0 : -1;
}

static int unload(void **state)
{
    (void)state;
    free(golden);
    return 0;
}

/*
 * Reads everything the API offers; returns the number of records streamed, -1 when open
 * failed. *end (may be NULL) gets the stream's last code (0 clean end, <0 error; 1 when
 * open failed).
 */
static int exercise_opts(const uint8_t *data, size_t n, int threads, bool allow_partial, int *end)
{
    struct src s;
    src_init_mem(&s, data, n);
    struct trace_reader_opts o;
    trace_reader_opts_default(&o);
    o.threads = threads;
    o.allow_partial = allow_partial;
    o.warn_damage = false;
    struct trace_reader *r;
    struct errmsg err = {0};
    int count = 0;
    if (end)
        *end = 1;
    if (trace_reader_open_src(&r, &s, "golden", &o, &err) != 0)
        return -1;
    Acceltrace__Record *rec;
    int rc;
    while ((rc = trace_reader_next(r, &rec, NULL)) == 1) {
        count++;
        trace_record_free(rec);
    }
    assert_true(rc <= 0);
    if (end)
        *end = rc;
    for (int step = 0; step < 4; step++) {
        if (trace_reader_find(r, ACCELTRACE__RECORD__BODY_TEST, step, 0, 1, &rec) == 1)
            trace_record_free(rec);
    }
    (void)trace_reader_content_hash(r);
    trace_reader_free(r);
    return count;
}

/*
 * The sweeps: with allow_partial (what verify, dump and info read) at most the 12
 * records; with the defaults no damaged copy ends cleanly: it is refused at open or its
 * stream ends in an error. Returns the allow_partial count.
 */
static int exercise(const uint8_t *data, size_t n, int threads)
{
    int end;
    int count = exercise_opts(data, n, threads, true, NULL);
    exercise_opts(data, n, threads, false, &end);
    assert_true(end != 0);
    return count;
}

static void expect_verify_error(const uint8_t *data, size_t n, const char *what, size_t pos)
{
    struct src s;
    src_init_mem(&s, data, n);
    struct errmsg e = {0, ""};
    int rc = trace_verify_src(&s, "golden", NULL, NULL, &e);
    if (rc == 0)
        fail_msg("verify accepted the trace with %s at %zu", what, pos);
    /* the message names the file and an offset; frame errors also the frame number */
    if (!strstr(e.text, "'golden'") || !strstr(e.text, "offset"))
        fail_msg("message without file/offset for %s at %zu: %s", what, pos, e.text);
    bool preamble = strstr(e.text, "magic") || strstr(e.text, "preamble") ||
                    strstr(e.text, "format") || strstr(e.text, "flags");
    if (!preamble && !strstr(e.text, " frame "))
        fail_msg("message without frame number for %s at %zu: %s", what, pos, e.text);
}

static void test_golden_is_intact(void **state)
{
    (void)state;
    struct src s;
    src_init_mem(&s, golden, golden_len);
    struct errmsg e = {0, ""};
    assert_int_equal(trace_verify_src(&s, "golden", NULL, NULL, &e), 0);
    int end;
    assert_int_equal(exercise_opts(golden, golden_len, 1, false, &end), 12);
    assert_int_equal(end, 0);
    printf("golden trace: %zu bytes\n", golden_len);
}

static void test_truncate_every_offset(void **state)
{
    (void)state;
    for (size_t cut = 0; cut < golden_len; cut++) {
        uint8_t *copy = malloc(cut ? cut : 1); /* exact size, so ASan sees overreads */
        assert_non_null(copy);
        memcpy(copy, golden, cut);
        int n = exercise(copy, cut, cut % 2 ? 2 : 1);
        assert_true(n <= 12);
        expect_verify_error(copy, cut, "truncation", cut);
        free(copy);
    }
}

static void test_flip_every_bit(void **state)
{
    (void)state;
    uint8_t *copy = malloc(golden_len);
    assert_non_null(copy);
    for (size_t bit = 0; bit < golden_len * 8; bit++) {
        memcpy(copy, golden, golden_len);
        copy[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        bool minor = bit / 8 == 10 || bit / 8 == 11;
        int n =
            minor ? exercise_opts(copy, golden_len, 1, false, NULL) : exercise(copy, golden_len, 1);
        if (minor) {
            /* the minor version: docs/design.md#the-trace-container, "a reader accepts any minor of
             * its major", so these copies are valid traces of another minor version */
            struct src s;
            src_init_mem(&s, copy, golden_len);
            assert_int_equal(trace_verify_src(&s, "golden", NULL, NULL, NULL), 0);
            assert_int_equal(n, 12);
            continue;
        }
        assert_true(n <= 12);
        expect_verify_error(copy, golden_len, "a flipped bit", bit);
    }
    free(copy);
}

/* Offset of frame i of a trace (frame 0 is the header, at 16). */
static size_t frame_offset(const uint8_t *data, int i)
{
    size_t off = 16;
    for (int k = 0; k < i; k++)
        off += 12 + ((uint32_t)data[off] | (uint32_t)data[off + 1] << 8 |
                     (uint32_t)data[off + 2] << 16 | (uint32_t)data[off + 3] << 24);
    return off;
}

/* Streams data; returns the records before the end, *rc the end code, msg its message. */
static int stream(const uint8_t *data, size_t n, const struct trace_reader_opts *o, int *rc,
                  char *msg, size_t msg_len)
{
    struct src s;
    src_init_mem(&s, data, n);
    struct trace_reader *r;
    struct errmsg err = {0};
    int orc = trace_reader_open_src(&r, &s, "golden", o, &err);
    if (orc) {
        *rc = orc;
        snprintf(msg, msg_len, "%s", err.text);
        return -1;
    }
    int count = 0;
    Acceltrace__Record *rec;
    while ((*rc = trace_reader_next(r, &rec, NULL)) == 1) {
        count++;
        trace_record_free(rec);
    }
    snprintf(msg, msg_len, "%s", *rc ? trace_reader_errmsg(r) : "");
    trace_reader_free(r);
    return count;
}

/*
 * Each of frames 1..12 typed as the index (record_type 10; the crc covers the payload
 * only, so it stays valid): a data error at that frame, not the end, with or without the
 * index, with allow_partial and with 2 threads. Before this check the stream ended there.
 */
static void test_index_frame_in_middle(void **state)
{
    (void)state;
    uint8_t *copy = malloc(golden_len);
    assert_non_null(copy);
    size_t io = frame_offset(golden, 13); /* the index frame */
    for (int i = 1; i <= 12; i++) {
        for (int variant = 0; variant < 4; variant++) {
            memcpy(copy, golden, golden_len);
            size_t off = frame_offset(golden, i);
            copy[off + 5] = 10;
            /* variants 2, 3: cut before the index, as a killed capture leaves it */
            size_t n = variant < 2 ? golden_len : io;
            struct trace_reader_opts o;
            trace_reader_opts_default(&o);
            o.allow_partial = variant != 0;
            o.warn_damage = false;
            o.threads = variant == 3 ? 2 : 1;
            int rc;
            char msg[512], want[128];
            int count = stream(copy, n, &o, &rc, msg, sizeof msg);
            assert_int_equal(count, i - 1);
            assert_int_equal(rc, ERR_DATA);
            snprintf(want, sizeof want, "('golden' frame %d at offset %zu)", i, off);
            /* frame 12 of a copy cut before the index is last in the file, where an index
             * may end a trace without its trailer: it is refused because it indexes nothing */
            const char *what = variant >= 2 && i == 12
                                   ? "index frame that does not index the 12 frames before it"
                                   : "index frame before the end of the trace";
            if (!strstr(msg, what) || !strstr(msg, want))
                fail_msg("frame %d variant %d: %s", i, variant, msg);
        }
    }
    /* the index frame itself, complete, with half a trailer: the clean end of what is there */
    struct trace_reader_opts o;
    trace_reader_opts_default(&o);
    o.allow_partial = true;
    o.warn_damage = false;
    int rc;
    char msg[512];
    assert_int_equal(stream(golden, golden_len - 8, &o, &rc, msg, sizeof msg), 12);
    assert_int_equal(rc, 0);
    free(copy);
}

static int hook_calls;
static char hook_last[512];

static void count_hook(const char *msg)
{
    hook_calls++;
    snprintf(hook_last, sizeof hook_last, "%s", msg);
}

/*
 * A trace without a usable index (cut at the index frame, trailer cut, index payload with a
 * bad crc, trailer magic damaged) is refused by default (ERR_DATA, the message names the
 * file and what is wrong); with allow_partial it opens, says what is damaged, streams all
 * 12 records and warns through the hook once per distinct message.
 */
static void test_missing_index_policy(void **state)
{
    (void)state;
    size_t io = frame_offset(golden, 13);
    uint8_t *copy = malloc(golden_len);
    assert_non_null(copy);
    trace_reader_set_warn_hook(count_hook);
    hook_calls = 0;
    for (int kind = 0; kind < 4; kind++) {
        memcpy(copy, golden, golden_len);
        size_t n = golden_len;
        const char *what = "no index (no trailer)";
        if (kind == 0) {
            n = io;
        } else if (kind == 1) {
            n = golden_len - 8;
        } else if (kind == 2) {
            copy[io + 12 + 3] ^= 0x20;
            what = "bad index frame: bad checksum";
        } else {
            copy[golden_len - 1] ^= 0x01;
        }
        struct src s;
        src_init_mem(&s, copy, n);
        struct trace_reader *r;
        struct errmsg err = {0};
        /* the defaults refuse it */
        assert_int_equal(trace_reader_open_src(&r, &s, "golden", NULL, &err), ERR_DATA);
        assert_null(r);
        if (!strstr(err.text, "damaged trace") || !strstr(err.text, what) ||
            !strstr(err.text, "'golden'"))
            fail_msg("kind %d: refusal '%s'", kind, err);
        /* allow_partial (here through the process-wide switch) reads it with one warning */
        trace_reader_global_allow_partial = true;
        int before = hook_calls;
        for (int again = 0; again < 2; again++) {
            assert_int_equal(trace_reader_open_src(&r, &s, "golden", NULL, &err), 0);
            assert_non_null(trace_reader_damage(r));
            assert_non_null(strstr(trace_reader_damage(r), what));
            assert_non_null(strstr(trace_reader_damage(r), "'golden'"));
            Acceltrace__Record *rec;
            int count = 0, rc;
            while ((rc = trace_reader_next(r, &rec, NULL)) == 1) {
                count++;
                trace_record_free(rec);
            }
            assert_int_equal(rc, 0);
            assert_int_equal(count, 12);
            trace_reader_free(r);
        }
        trace_reader_global_allow_partial = false;
        /* kinds 0, 1 and 3 differ in the offset the message names */
        assert_int_equal(hook_calls, before + 1);
        assert_non_null(strstr(hook_last, what));
    }
    /* warn_damage off: accepted without the hook */
    struct trace_reader_opts o;
    trace_reader_opts_default(&o);
    o.allow_partial = true;
    o.warn_damage = false;
    struct src s;
    src_init_mem(&s, golden, io - 1);
    struct trace_reader *r;
    struct errmsg err = {0};
    int before = hook_calls;
    assert_int_equal(trace_reader_open_src(&r, &s, "golden", &o, &err), 0);
    assert_non_null(trace_reader_damage(r));
    trace_reader_free(r);
    assert_int_equal(hook_calls, before);
    /* an intact trace: no damage */
    src_init_mem(&s, golden, golden_len);
    assert_int_equal(trace_reader_open_src(&r, &s, "golden", NULL, &err), 0);
    assert_null(trace_reader_damage(r));
    trace_reader_free(r);
    trace_reader_set_warn_hook(NULL);
    free(copy);
}

/*
 * A payload changed with its crc recomputed (raw.atr: raw frames, 3 records): every record
 * streams, then the end is a content hash mismatch instead of 0 (with 1 and 2 threads,
 * allow_partial or not); compute_hash off gives the old end.
 */
static void test_content_hash_checked(void **state)
{
    (void)state;
    size_t n;
    uint8_t *raw = slurp(GOLDEN_RAW, &n);
    assert_non_null(raw);
    size_t off = frame_offset(raw, 1);
    uint32_t len = (uint32_t)raw[off] | (uint32_t)raw[off + 1] << 8;
    assert_int_equal(raw[off + 4], 0); /* raw codec */
    uint8_t *p = raw + off + 12;
    uint8_t *at = NULL; /* TestRecord.blob: "abcd..." */
    for (uint32_t i = 0; i + 4 <= len && !at; i++)
        if (!memcmp(p + i, "abcd", 4))
            at = p + i;
    assert_non_null(at);
    at[1] ^= 0x01;
    uint32_t c = crc32c_update(0, p, len);
    for (int i = 0; i < 4; i++)
        raw[off + 8 + (size_t)i] = (uint8_t)(c >> (8 * i));
    for (int variant = 0; variant < 4; variant++) {
        struct trace_reader_opts o;
        trace_reader_opts_default(&o);
        o.threads = variant & 1 ? 2 : 1;
        o.allow_partial = variant == 2;
        o.compute_hash = variant != 3;
        int rc;
        char msg[512];
        assert_int_equal(stream(raw, n, &o, &rc, msg, sizeof msg), 3);
        if (variant == 3) {
            assert_int_equal(rc, 0);
            continue;
        }
        assert_int_equal(rc, ERR_DATA);
        if (!strstr(msg, "content hash mismatch") || !strstr(msg, "('golden' frame 4 at offset"))
            fail_msg("variant %d: %s", variant, msg);
    }
    struct src s;
    src_init_mem(&s, raw, n);
    struct errmsg e = {0, ""};
    assert_int_equal(trace_verify_src(&s, "golden", NULL, NULL, &e), ERR_DATA);
    assert_non_null(strstr(e.text, "content hash mismatch"));
    free(raw);
}

/*
 * tests/golden/bad/index_key.atr: small.atr whose index says layer 12345 for frame 5 (a
 * test record of step 1, layer 0, head 0). verify fails naming the field and the frame;
 * the stream fails at frame 5 by default, and with allow_partial gives all 12 records with
 * the records' own keys; find() through the entry fails instead of returning the frame.
 */
static void test_index_keys_checked(void **state)
{
    (void)state;
    struct errmsg e = {0, ""};
    assert_int_equal(trace_verify(BAD_KEY, NULL, NULL, &e), ERR_DATA);
    assert_non_null(strstr(e.text, "layer 12345 in the index, 0 in the frame"));
    assert_non_null(strstr(e.text, "frame 5 at offset"));

    size_t n;
    uint8_t *data = slurp(BAD_KEY, &n);
    assert_non_null(data);
    int rc;
    char msg[512];
    struct trace_reader_opts o;
    trace_reader_opts_default(&o);
    assert_int_equal(stream(data, n, &o, &rc, msg, sizeof msg), 4);
    assert_int_equal(rc, ERR_DATA);
    assert_non_null(strstr(msg, "layer 12345 in the index, 0 in the frame ('golden' frame 5"));

    o.allow_partial = true;
    o.warn_damage = false;
    struct src s;
    src_init_mem(&s, data, n);
    struct trace_reader *r;
    struct errmsg err = {0};
    assert_int_equal(trace_reader_open_src(&r, &s, "golden", &o, &err), 0);
    assert_null(trace_reader_damage(r));
    Acceltrace__Record *rec;
    struct trace_key key;
    int count = 0;
    while ((rc = trace_reader_next(r, &rec, &key)) == 1) {
        count++;
        if (count == 5) {
            assert_int_equal(key.step, 1);
            assert_int_equal(key.layer, 0); /* the record's, not the index's 12345 */
            assert_int_equal(key.head, 0);
        }
        trace_record_free(rec);
    }
    assert_int_equal(rc, 0);
    assert_int_equal(count, 12);
    assert_non_null(trace_reader_damage(r));
    assert_non_null(strstr(trace_reader_damage(r), "frame 5"));
    assert_int_equal(trace_reader_find(r, ACCELTRACE__RECORD__BODY_TEST, 1, 12345, 0, &rec),
                     ERR_DATA);
    assert_null(rec);
    assert_non_null(strstr(trace_reader_errmsg(r), "layer 12345 in the index"));
    /* an intact entry is still found */
    assert_int_equal(trace_reader_find(r, ACCELTRACE__RECORD__BODY_TEST, 0, 0, 0, &rec), 1);
    trace_record_free(rec);
    trace_reader_free(r);
    free(data);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden_is_intact),     cmocka_unit_test(test_truncate_every_offset),
        cmocka_unit_test(test_flip_every_bit),       cmocka_unit_test(test_index_frame_in_middle),
        cmocka_unit_test(test_missing_index_policy), cmocka_unit_test(test_content_hash_checked),
        cmocka_unit_test(test_index_keys_checked),
    };
    return cmocka_run_group_tests(tests, load, unload);
}
