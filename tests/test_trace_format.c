/*
 * Tests of formats/trace_format.h, the header generated from formats/trace_format.tab:
 * the values other modules keep as their own macros equal the table's (varint length, Salca
 * context, the CRC-32C check value), a trace the writer
 * makes starts and ends with the table's magic, version and trailer, and the varint rule of
 * docs/trace-format.md#varints holds (redundant continuation bytes accepted up to
 * TRACE_FORMAT_VARINT_MAX_BYTES, one more refused).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/crc32c.h"
#include "common/err.h"
#include "formats/trace_format.h"
#include "formats/varint.h"
#include "traces/trace_salca.h"
#include "traces/trace_writer.h"

static void test_macros_agree(void **state)
{
    (void)state;
    assert_int_equal(VARINT_MAX_BYTES, TRACE_FORMAT_VARINT_MAX_BYTES);
    assert_int_equal(TRACE_SALCA_MAX_CTX, TRACE_FORMAT_SALCA_MAX_CTX);
    assert_int_equal(strlen(TRACE_FORMAT_MAGIC), 8);
    assert_int_equal(strlen(TRACE_FORMAT_TRAILER_MAGIC), 8);
    /* preamble = magic, u16 major, u16 minor, u32 flags; trailer = u64 offset, magic */
    assert_int_equal(TRACE_FORMAT_PREAMBLE_BYTES, 8 + 2 + 2 + 4);
    assert_int_equal(TRACE_FORMAT_TRAILER_BYTES, 8 + 8);
    /* common/crc32c (both paths) computes the table's checksum */
    assert_int_equal(crc32c_update(0, "123456789", 9), TRACE_FORMAT_CRC32C_CHECK);
    assert_int_equal(crc32c_update_sw(0, "123456789", 9), TRACE_FORMAT_CRC32C_CHECK);
}

static void test_written_trace(void **state)
{
    (void)state;
    char path[] = "/tmp/test_trace_format_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    unlink(path);
    Acceltrace__TraceHeader h = ACCELTRACE__TRACE_HEADER__INIT;
    h.producer = "test_trace_format";
    h.workload = "test";
    struct trace_writer *w = NULL;
    struct errmsg e = {0, ""};
    assert_int_equal(trace_writer_open(&w, path, NULL, &h, &e), 0);
    assert_int_equal(trace_writer_finish(w), 0);
    trace_writer_free(w);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    unsigned char b[4096];
    size_t n = fread(b, 1, sizeof b, f);
    fclose(f);
    unlink(path);
    assert_true(n > TRACE_FORMAT_PREAMBLE_BYTES + TRACE_FORMAT_TRAILER_BYTES);
    assert_memory_equal(b, TRACE_FORMAT_MAGIC, 8);
    assert_int_equal(b[8] | b[9] << 8, TRACE_FORMAT_MAJOR);
    assert_int_equal(b[10] | b[11] << 8, TRACE_FORMAT_MINOR);
    assert_memory_equal(b + n - 8, TRACE_FORMAT_TRAILER_MAGIC, 8);
    /* the header frame's record type, byte 5 of the first frame header */
    assert_int_equal(b[TRACE_FORMAT_PREAMBLE_BYTES + 5], TRACE_FORMAT_TYPE_HEADER);
}

static void test_varint_length(void **state)
{
    (void)state;
    uint8_t b[TRACE_FORMAT_VARINT_MAX_BYTES + 1];
    uint64_t v = 99;
    size_t used = 0;
    for (size_t len = 1; len <= TRACE_FORMAT_VARINT_MAX_BYTES + 1; len++) {
        /* 0 written in len bytes: len - 1 continuation bytes carrying no bits */
        memset(b, 0x80, len - 1);
        b[len - 1] = 0;
        int rc = varint_get_u64(b, len, &v, &used);
        if (len <= TRACE_FORMAT_VARINT_MAX_BYTES) {
            assert_int_equal(rc, 0);
            assert_int_equal(v, 0);
            assert_int_equal(used, len);
        } else {
            assert_int_equal(rc, ERR_DATA);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_macros_agree),
        cmocka_unit_test(test_written_trace),
        cmocka_unit_test(test_varint_length),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
