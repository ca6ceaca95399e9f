/* disc_inputs: raw f32 and .npy loaders (docs/disc.md#inputs; NumPy NEP 1 .npy format). */
#include "capture/disc/disc_inputs.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/nn/safetensors.h"
#include "common/io.h"
#include "common/mem.h"

/* Parses the shape tuple "(a, b)" or "(1, a, b)" after 'shape': in the header dict. */
static bool npy_shape(const char *h, long *dims, int *nd)
{
    const char *s = strstr(h, "'shape':");
    if (!s || !(s = strchr(s, '(')))
        return false;
    s++;
    *nd = 0;
    while (*s && *s != ')') {
        while (*s == ' ' || *s == ',')
            s++;
        if (*s == ')')
            break;
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || *nd >= 4 || v < 0)
            return false;
        dims[(*nd)++] = v;
        s = end;
    }
    return *s == ')';
}

/* Index of the first NaN or Inf of x[0..n), or n: such a text embedding would make the
 * whole capture NaN. */
static size_t first_nonfinite(const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i]))
            return i;
    return n;
}

int disc_text_load(const char *path, int T, int Dc, float *out, struct errmsg *e)
{
    char *text;
    size_t n = 0;
    int rc = io_read_file(path, (uint64_t)1 << 31, &text, &n, e);
    if (rc)
        return rc;
    const unsigned char *d = (const unsigned char *)text;
    size_t want = (size_t)T * (size_t)Dc;
    if (n >= 10 && !memcmp(d, "\x93NUMPY", 6)) {
        int major = d[6];
        size_t hl, off;
        if (major == 1) {
            hl = (size_t)d[8] | (size_t)d[9] << 8;
            off = 10;
        } else if (major == 2 || major == 3) {
            if (n < 12)
                goto bad;
            hl = (size_t)d[8] | (size_t)d[9] << 8 | (size_t)d[10] << 16 | (size_t)d[11] << 24;
            off = 12;
        } else {
            rc = errmsg_set(e, ERR_DATA, "unsupported .npy version %d in '%s'", major, path);
            goto done;
        }
        if (hl > n - off)
            goto bad;
        char *hdr = text + off;
        char save = hdr[hl];
        hdr[hl] = 0;
        bool f4 = strstr(hdr, "'<f4'") != NULL, f2 = strstr(hdr, "'<f2'") != NULL;
        bool fortran = strstr(hdr, "'fortran_order': True") != NULL;
        long dims[4];
        int nd = 0;
        bool shape_ok = npy_shape(hdr, dims, &nd);
        hdr[hl] = save;
        if (!(f4 || f2) || fortran) {
            rc = errmsg_set(e, ERR_DATA, "'%s' must hold '<f4' or '<f2' in C order", path);
            goto done;
        }
        bool dims_ok = shape_ok && ((nd == 2 && dims[0] == T && dims[1] == Dc) ||
                                    (nd == 3 && dims[0] == 1 && dims[1] == T && dims[2] == Dc));
        if (!dims_ok) {
            rc = errmsg_set(e, ERR_DATA, "text embedding '%s' has the wrong shape (need (%d, %d))",
                            path, T, Dc);
            goto done;
        }
        size_t esz = f4 ? 4 : 2, data_off = off + hl;
        if (n - data_off != want * esz) {
            rc = errmsg_set(e, ERR_DATA, "text embedding '%s' has %zu data bytes, need %zu", path,
                            n - data_off, want * esz);
            goto done;
        }
        const unsigned char *p = d + data_off;
        for (size_t i = 0; i < want; i++) {
            if (f4) {
                uint32_t b = (uint32_t)p[4 * i] | (uint32_t)p[4 * i + 1] << 8 |
                             (uint32_t)p[4 * i + 2] << 16 | (uint32_t)p[4 * i + 3] << 24;
                memcpy(&out[i], &b, 4);
            } else {
                out[i] = st_f16_to_f32((uint16_t)(p[2 * i] | p[2 * i + 1] << 8));
            }
        }
        goto done;
    }
    if (n != want * 4) {
        rc =
            errmsg_set(e, ERR_DATA, "text embedding '%s' has %zu bytes, need %zu (%d x %d float32)",
                       path, n, want * 4, T, Dc);
        goto done;
    }
    for (size_t i = 0; i < want; i++) {
        uint32_t b = (uint32_t)d[4 * i] | (uint32_t)d[4 * i + 1] << 8 |
                     (uint32_t)d[4 * i + 2] << 16 | (uint32_t)d[4 * i + 3] << 24;
        memcpy(&out[i], &b, 4);
    }
    goto done;
bad:
    rc = errmsg_set(e, ERR_DATA, "truncated .npy header in '%s'", path);
done:
    if (rc == 0) {
        size_t at = first_nonfinite(out, want);
        if (at < want)
            rc = errmsg_set(e, ERR_DATA,
                            "text embedding '%s' has a non-finite value at "
                            "element %zu",
                            path, at);
    }
    mem_free(text);
    return rc;
}
