/* disc_png: capture images (docs/disc.md#trace-records, --png). */
#include "capture/disc/disc_png.h"

#include <math.h>
#include <stdio.h>

#include "common/mem.h"
#include "formats/png.h"

#define DISC_PNG_MAX 2048

int disc_png_token_mask(const char *dir, int k, const uint64_t *mask, int grid, struct errmsg *e)
{
    char path[4096];
    uint8_t *px = mem_alloc((size_t)grid * grid);
    if (!px)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    for (int i = 0; i < grid * grid; i++)
        px[i] = (mask[i >> 6] >> (i & 63)) & 1 ? 255 : 0;
    snprintf(path, sizeof path, "%s/token_mask_k%03d.png", dir, k);
    int rc = png_write_file(path, (uint32_t)grid, (uint32_t)grid, PNG_GREY8, px, (size_t)grid, e);
    mem_free(px);
    return rc;
}

int disc_png_attn_mask(const char *dir, int k, int batch, int block, int head, const uint64_t *bits,
                       int n, struct errmsg *e)
{
    char path[4096];
    int f = (n + DISC_PNG_MAX - 1) / DISC_PNG_MAX; /* OR-downsampling factor */
    int side = (n + f - 1) / f;
    size_t words = ((size_t)n + 63) / 64;
    uint8_t *px = mem_calloc((size_t)side * side, 1);
    if (!px)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            if ((bits[(size_t)i * words + (size_t)(j >> 6)] >> (j & 63)) & 1)
                px[(size_t)(i / f) * side + j / f] = 255;
    snprintf(path, sizeof path, "%s/attn_k%03d_b%d_l%02d_h%02d.png", dir, k, batch, block, head);
    int rc = png_write_file(path, (uint32_t)side, (uint32_t)side, PNG_GREY8, px, (size_t)side, e);
    mem_free(px);
    return rc;
}

static void minmax(const float *x, size_t n, float *mn, float *mx)
{
    *mn = INFINITY, *mx = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        *mn = x[i] < *mn ? x[i] : *mn;
        *mx = x[i] > *mx ? x[i] : *mx;
    }
}

static uint8_t scale8(float v, float mn, float mx)
{
    if (!(mx > mn))
        return 128;
    double t = ((double)v - mn) / ((double)mx - mn);
    return (uint8_t)lround(t * 255.0);
}

int disc_png_latent(const char *dir, const char *name, const float *x, int c_in, int lat,
                    struct errmsg *e)
{
    char path[4096];
    size_t plane = (size_t)lat * lat;
    uint8_t *px = mem_alloc(plane * 3);
    int rc = 0;
    if (!px)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    for (int c = 0; c < c_in && !rc; c++) {
        float mn, mx;
        minmax(x + c * plane, plane, &mn, &mx);
        for (size_t i = 0; i < plane; i++)
            px[i] = scale8(x[c * plane + i], mn, mx);
        snprintf(path, sizeof path, "%s/%s_c%d.png", dir, name, c);
        rc = png_write_file(path, (uint32_t)lat, (uint32_t)lat, PNG_GREY8, px, (size_t)lat, e);
    }
    if (!rc && c_in >= 3) {
        for (int c = 0; c < 3; c++) {
            float mn, mx;
            minmax(x + c * plane, plane, &mn, &mx);
            for (size_t i = 0; i < plane; i++)
                px[i * 3 + (size_t)c] = scale8(x[c * plane + i], mn, mx);
        }
        snprintf(path, sizeof path, "%s/%s_rgb.png", dir, name);
        rc = png_write_file(path, (uint32_t)lat, (uint32_t)lat, PNG_RGB8, px, (size_t)lat * 3, e);
    }
    mem_free(px);
    return rc;
}
