/*
 * png: libpng writer. libpng signals errors by longjmp to the setjmp point of the call
 * that started the write; that jump never leaves this file (write_png is the only setjmp
 * user), and everything it may skip is freed on the error path after the jump.
 */
#include <errno.h>
#include <math.h>
#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>

#include "formats/png.h"

struct png_ctx {
    FILE *f;         /* file target or NULL */
    struct buf *mem; /* memory target or NULL */
    int mem_err;
    char msg[256]; /* libpng's message */
};

static void on_error(png_structp png, png_const_charp msg)
{
    struct png_ctx *c = png_get_error_ptr(png);
    if (c)
        snprintf(c->msg, sizeof c->msg, "%s", msg);
    png_longjmp(png, 1);
}

static void on_warning(png_structp png, png_const_charp msg)
{
    (void)png;
    (void)msg;
}

static void mem_write(png_structp png, png_bytep data, png_size_t n)
{
    struct png_ctx *c = png_get_io_ptr(png);
    if (buf_append(c->mem, data, n)) {
        c->mem_err = 1;
        png_error(png, "out of memory");
    }
}

static void mem_flush(png_structp png)
{
    (void)png;
}

static int check_args(uint32_t w, uint32_t h, enum png_color color, const uint8_t *px,
                      size_t stride, struct errmsg *e)
{
    if (w == 0 || h == 0 || w > PNG_MAX_DIM || h > PNG_MAX_DIM)
        return errmsg_set(e, ERR_USAGE, "bad image size %ux%u", w, h);
    if (color != PNG_GREY8 && color != PNG_RGB8)
        return errmsg_set(e, ERR_USAGE, "bad colour type %d", (int)color);
    if (!px || stride < (size_t)w * (size_t)color)
        return errmsg_set(e, ERR_USAGE, "stride %zu too small for width %u", stride, w);
    return 0;
}

/* The one setjmp of the module; volatile locals survive the longjmp. */
static int write_png(struct png_ctx *c, uint32_t w, uint32_t h, enum png_color color,
                     const uint8_t *px, size_t stride)
{
    png_structp volatile png = NULL;
    png_infop volatile info = NULL;
    png = png_create_write_struct(PNG_LIBPNG_VER_STRING, c, on_error, on_warning);
    if (!png)
        return ERR_NOMEM;
    info = png_create_info_struct(png);
    if (!info) {
        png_structp p = png;
        png_destroy_write_struct(&p, NULL);
        return ERR_NOMEM;
    }
    if (setjmp(png_jmpbuf(png))) {
        png_structp p = png;
        png_infop i = info;
        png_destroy_write_struct(&p, &i);
        return c->mem_err ? ERR_NOMEM : ERR_EXTERNAL;
    }
    if (c->f)
        png_init_io(png, c->f);
    else
        png_set_write_fn(png, c, mem_write, mem_flush);
    png_set_IHDR(png, info, w, h, 8, color == PNG_GREY8 ? PNG_COLOR_TYPE_GRAY : PNG_COLOR_TYPE_RGB,
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    for (uint32_t y = 0; y < h; y++)
        png_write_row(png, (png_const_bytep)(px + (size_t)y * stride));
    png_write_end(png, NULL);
    png_structp p = png;
    png_infop i = info;
    png_destroy_write_struct(&p, &i);
    return 0;
}

int png_write_file(const char *path, uint32_t width, uint32_t height, enum png_color color,
                   const uint8_t *pixels, size_t stride, struct errmsg *e)
{
    int rc = check_args(width, height, color, pixels, stride, e);
    if (rc)
        return rc;
    struct png_ctx c = {0};
    c.f = fopen(path, "wb");
    if (!c.f)
        return errmsg_set(e, ERR_IO, "cannot create '%s': %s", path, strerror(errno));
    rc = write_png(&c, width, height, color, pixels, stride);
    if (fclose(c.f) && !rc)
        rc = ERR_IO;
    if (rc) {
        remove(path);
        return errmsg_set(e, rc, "cannot write png '%s': %s", path, c.msg[0] ? c.msg : err_str(rc));
    }
    return 0;
}

int png_write_mem(struct buf *out, uint32_t width, uint32_t height, enum png_color color,
                  const uint8_t *pixels, size_t stride, struct errmsg *e)
{
    int rc = check_args(width, height, color, pixels, stride, e);
    if (rc)
        return rc;
    struct png_ctx c = {0};
    c.mem = out;
    rc = write_png(&c, width, height, color, pixels, stride);
    if (rc)
        return errmsg_set(e, rc, "cannot encode png: %s", c.msg[0] ? c.msg : err_str(rc));
    return 0;
}

void png_viridis(double t, uint8_t rgb[3])
{
    /* 9 control points sampled from matplotlib's viridis table at t = 0, 1/8, ..., 1. */
    static const uint8_t cp[9][3] = {
        {68, 1, 84},    {71, 44, 122}, {59, 81, 139},  {44, 113, 142}, {33, 144, 141},
        {39, 173, 129}, {92, 200, 99}, {170, 220, 50}, {253, 231, 37},
    };
    if (isnan(t)) {
        rgb[0] = rgb[1] = rgb[2] = 128;
        return;
    }
    if (t < 0)
        t = 0;
    if (t > 1)
        t = 1;
    double s = t * 8.0;
    int i = (int)s;
    if (i >= 8)
        i = 7;
    double f = s - i;
    for (int k = 0; k < 3; k++)
        rgb[k] = (uint8_t)lround(cp[i][k] + f * (cp[i + 1][k] - cp[i][k]));
}
