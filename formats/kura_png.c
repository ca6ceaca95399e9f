/*
 * kura_png: HSV phase maps and grey maps (docs/kura.md#figures).
 */
#include "formats/kura_png.h"

#include <math.h>

#include "common/mem.h"
#include "formats/kura_fixed.h"
#include "formats/png.h"

void kura_png_hue(double theta, uint8_t rgb[3])
{
    /* docs/kura.md#figures: hue = (theta + pi)/(2 pi), S = V = 1; standard HSV sectors. */
    double hue = (kura_wrap(theta) + M_PI) / (2.0 * M_PI);
    double h6 = hue * 6.0;
    int sec = (int)floor(h6);
    double f = h6 - sec;
    if (sec >= 6)
        sec = 0;
    double r, g, b;
    switch (sec) {
    case 0:
        r = 1;
        g = f;
        b = 0;
        break;
    case 1:
        r = 1 - f;
        g = 1;
        b = 0;
        break;
    case 2:
        r = 0;
        g = 1;
        b = f;
        break;
    case 3:
        r = 0;
        g = 1 - f;
        b = 1;
        break;
    case 4:
        r = f;
        g = 0;
        b = 1;
        break;
    default:
        r = 1;
        g = 0;
        b = 1 - f;
        break;
    }
    rgb[0] = (uint8_t)floor(255.0 * r + 0.5);
    rgb[1] = (uint8_t)floor(255.0 * g + 0.5);
    rgb[2] = (uint8_t)floor(255.0 * b + 0.5);
}

int kura_png_phase(const char *path, const double *theta, size_t h, size_t w, struct errmsg *e)
{
    if (h > PNG_MAX_DIM || w > PNG_MAX_DIM || h == 0 || w == 0)
        return errmsg_set(e, ERR_USAGE, "image size %zux%zu not writable as png ('%s')", h, w,
                          path);
    uint8_t *px = mem_alloc(h * w * 3);
    if (!px)
        return errmsg_set(e, ERR_NOMEM, "out of memory for '%s'", path);
    for (size_t i = 0; i < h * w; i++)
        kura_png_hue(theta[i], px + 3 * i);
    int rc = png_write_file(path, (uint32_t)w, (uint32_t)h, PNG_RGB8, px, w * 3, e);
    mem_free(px);
    return rc;
}

int kura_png_grey(const char *path, const double *v, size_t h, size_t w, double lo, double hi,
                  struct errmsg *e)
{
    if (h > PNG_MAX_DIM || w > PNG_MAX_DIM || h == 0 || w == 0 || !(hi > lo))
        return errmsg_set(e, ERR_USAGE, "bad grey image %zux%zu ('%s')", h, w, path);
    uint8_t *px = mem_alloc(h * w);
    if (!px)
        return errmsg_set(e, ERR_NOMEM, "out of memory for '%s'", path);
    for (size_t i = 0; i < h * w; i++) {
        double t = (v[i] - lo) / (hi - lo);
        t = t < 0 ? 0 : t > 1 ? 1 : t;
        px[i] = (uint8_t)floor(255.0 * t + 0.5);
    }
    int rc = png_write_file(path, (uint32_t)w, (uint32_t)h, PNG_GREY8, px, w, e);
    mem_free(px);
    return rc;
}
