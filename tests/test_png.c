/*
 * Tests of formats/png: grey and RGB images round-trip through libpng's reader, memory and
 * file output agree, bad arguments and unwritable paths are errors (no longjmp escapes),
 * the viridis map hits its end points.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <math.h>
#include <png.h>

#include "common/mem.h"
#include "formats/png.h"

/* Decodes a PNG in memory with libpng's simplified API into 8-bit pixels of `format`. */
static uint8_t *decode(const struct buf *b, uint32_t *w, uint32_t *h, int format)
{
    png_image img;
    memset(&img, 0, sizeof img);
    img.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_memory(&img, b->data, b->len))
        return NULL;
    img.format = (png_uint_32)format;
    uint8_t *px = malloc(PNG_IMAGE_SIZE(img));
    if (!png_image_finish_read(&img, NULL, px, 0, NULL)) {
        free(px);
        return NULL;
    }
    *w = img.width;
    *h = img.height;
    return px;
}

static void test_grey_roundtrip(void **state)
{
    (void)state;
    uint32_t W = 37, H = 11;
    size_t stride = 40; /* padded rows */
    uint8_t *px = calloc(stride * H, 1);
    for (uint32_t y = 0; y < H; y++)
        for (uint32_t x = 0; x < W; x++)
            px[y * stride + x] = (uint8_t)(x * 7 + y * 13);
    struct buf b;
    buf_init(&b);
    struct errmsg e = {0};
    assert_int_equal(png_write_mem(&b, W, H, PNG_GREY8, px, stride, &e), 0);
    assert_memory_equal(b.data, "\x89PNG\r\n\x1a\n", 8);
    uint32_t w, h;
    uint8_t *d = decode(&b, &w, &h, PNG_FORMAT_GRAY);
    assert_non_null(d);
    assert_int_equal(w, W);
    assert_int_equal(h, H);
    for (uint32_t y = 0; y < H; y++)
        assert_memory_equal(d + y * W, px + y * stride, W);
    free(d);
    buf_release(&b);
    free(px);
}

static void test_rgb_file_equals_mem(void **state)
{
    (void)state;
    uint32_t W = 16, H = 9;
    uint8_t px[16 * 9 * 3];
    for (size_t i = 0; i < sizeof px; i++)
        px[i] = (uint8_t)(i * 31);
    char path[128];
    snprintf(path, sizeof path, "/tmp/acceltrace-test-png-%ld.png", (long)getpid());
    struct errmsg e = {0};
    assert_int_equal(png_write_file(path, W, H, PNG_RGB8, px, W * 3, &e), 0);
    struct buf b;
    buf_init(&b);
    assert_int_equal(png_write_mem(&b, W, H, PNG_RGB8, px, W * 3, &e), 0);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    uint8_t *fd = malloc(b.len + 16);
    size_t n = fread(fd, 1, b.len + 16, f);
    fclose(f);
    assert_int_equal(n, b.len);
    assert_memory_equal(fd, b.data, n);
    uint32_t w, h;
    uint8_t *d = decode(&b, &w, &h, PNG_FORMAT_RGB);
    assert_non_null(d);
    assert_memory_equal(d, px, sizeof px);
    free(d);
    free(fd);
    buf_release(&b);
    remove(path);
}

static void test_errors(void **state)
{
    (void)state;
    uint8_t px[12] = {0};
    struct buf b;
    buf_init(&b);
    struct errmsg e = {0};
    assert_int_equal(png_write_mem(&b, 0, 1, PNG_GREY8, px, 1, &e), ERR_USAGE);
    assert_int_equal(png_write_mem(&b, 4, 1, PNG_RGB8, px, 4, &e), ERR_USAGE);
    assert_int_equal(png_write_mem(&b, PNG_MAX_DIM + 1, 1, PNG_GREY8, px, 1 << 20, &e), ERR_USAGE);
    assert_int_equal(png_write_file("/nonexistent-dir/x.png", 2, 2, PNG_GREY8, px, 2, &e), ERR_IO);
    assert_non_null(strstr(e.text, "/nonexistent-dir/x.png"));
    /* allocation failure inside libpng's callbacks comes back as an error */
    for (long k = 1; k < 6; k++) {
        mem_fail_after(k);
        int rc = png_write_mem(&b, 4, 1, PNG_RGB8, px, 12, &e);
        mem_fail_after(0);
        assert_true(rc == 0 || rc == ERR_NOMEM || rc == ERR_USAGE);
        buf_clear(&b);
    }
    buf_release(&b);
}

static void test_viridis(void **state)
{
    (void)state;
    uint8_t c[3];
    png_viridis(0, c);
    assert_int_equal(c[0], 68);
    assert_int_equal(c[2], 84);
    png_viridis(1, c);
    assert_int_equal(c[0], 253);
    assert_int_equal(c[1], 231);
    png_viridis(2, c); /* clamped */
    assert_int_equal(c[0], 253);
    png_viridis(NAN, c);
    assert_int_equal(c[0], 128);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_grey_roundtrip),
        cmocka_unit_test(test_rgb_file_equals_mem),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_viridis),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
