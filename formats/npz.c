/*
 * npz: streaming reader of numpy .npz entries. See npz.h.
 */
#include "formats/npz.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "common/mem.h"

#define WIN (1u << 16)
/* The zip directory of an .npz of a few arrays; bigger is not numpy's [decision]. */
#define MAX_CD_BYTES (64u << 20)

struct npz_array {
    FILE *f;
    char path[1024], name[128];
    int method; /* 0 stored, 8 deflate */
    uint64_t csize, usize, data_off, cread, uread;
    uint32_t crc_want, crc;
    z_stream z;
    bool z_on;
    uint8_t in[WIN];
    /* .npy */
    char dtype[8];
    int itemsize;
    char kind; /* 'b', 'i', 'u' */
    bool big;
    int ndim;
    uint64_t shape[NPZ_MAX_DIMS], count, left;
    uint8_t buf[WIN];
};

static uint32_t le16(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8;
}

static uint32_t le32(const uint8_t *p)
{
    return le16(p) | (uint32_t)le16(p + 2) << 16;
}

static uint64_t le64(const uint8_t *p)
{
    return le32(p) | (uint64_t)le32(p + 4) << 32;
}

static int bad(struct npz_array *a, struct errmsg *e, int code, const char *what)
{
    return errmsg_set(e, code, "%s in '%s' of '%s'", what, a->name, a->path);
}

/* n bytes at offset off of the file. */
static int read_at(struct npz_array *a, uint64_t off, void *p, size_t n)
{
    if (fseeko(a->f, (off_t)off, SEEK_SET) || fread(p, 1, n, a->f) != n)
        return ERR_DATA;
    return 0;
}

/* The zip64 extra field of a central entry: sizes and offset that were 0xFFFFFFFF. */
static void zip64_extra(const uint8_t *x, size_t n, uint64_t *usize, uint64_t *csize, uint64_t *lho)
{
    for (size_t i = 0; i + 4 <= n;) {
        uint32_t id = le16(x + i), len = le16(x + i + 2);
        if (i + 4 + len > n)
            return;
        if (id == 1) {
            const uint8_t *q = x + i + 4, *end = q + len;
            uint64_t *v[3] = {usize, csize, lho};
            for (int k = 0; k < 3; k++)
                if (*v[k] == 0xFFFFFFFFu && q + 8 <= end) {
                    *v[k] = le64(q);
                    q += 8;
                }
            return;
        }
        i += 4 + len;
    }
}

/* Finds the entry NAME.npy in the central directory: method, sizes, CRC, data offset. */
static int find_entry(struct npz_array *a, struct errmsg *e)
{
    if (fseeko(a->f, 0, SEEK_END))
        return errmsg_set(e, ERR_IO, "cannot read '%s': %s", a->path, strerror(errno));
    uint64_t size = (uint64_t)ftello(a->f);
    size_t tail = size < 65557 ? (size_t)size : 65557;
    uint8_t *t = mem_alloc(tail ? tail : 1), *cd = NULL;
    int rc = 0;
    if (!t)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    if (tail < 22 || read_at(a, size - tail, t, tail)) {
        rc = errmsg_set(e, ERR_DATA, "'%s' is not a zip archive (.npz)", a->path);
        goto done;
    }
    size_t eo = tail - 22 + 1;
    while (eo-- > 0 && le32(t + eo) != 0x06054b50u) {
    }
    if (eo == (size_t)-1) {
        rc = errmsg_set(e, ERR_DATA, "'%s' is not a zip archive (.npz): no end record", a->path);
        goto done;
    }
    uint64_t cd_size = le32(t + eo + 12), cd_off = le32(t + eo + 16);
    if ((cd_off == 0xFFFFFFFFu || cd_size == 0xFFFFFFFFu) && eo >= 20 &&
        le32(t + eo - 20) == 0x07064b50u) {
        uint8_t z64[56];
        if (read_at(a, le64(t + eo - 20 + 8), z64, sizeof z64) || le32(z64) != 0x06064b50u) {
            rc = errmsg_set(e, ERR_DATA, "bad zip64 end record in '%s'", a->path);
            goto done;
        }
        cd_size = le64(z64 + 40);
        cd_off = le64(z64 + 48);
    }
    if (cd_size > MAX_CD_BYTES || cd_off + cd_size > size ||
        !(cd = mem_alloc(cd_size ? (size_t)cd_size : 1)) ||
        read_at(a, cd_off, cd, (size_t)cd_size)) {
        rc = errmsg_set(e, cd || cd_size > MAX_CD_BYTES ? ERR_DATA : ERR_NOMEM,
                        "bad zip directory in '%s'", a->path);
        goto done;
    }
    char want[140];
    snprintf(want, sizeof want, "%s.npy", a->name);
    rc = errmsg_set(e, ERR_NOTFOUND, "'%s' has no array '%s'", a->path, a->name);
    for (size_t i = 0; i + 46 <= cd_size && le32(cd + i) == 0x02014b50u;) {
        uint32_t nl = le16(cd + i + 28), xl = le16(cd + i + 30), cl = le16(cd + i + 32);
        if (i + 46 + nl + xl + cl > cd_size)
            break;
        if (nl == strlen(want) && !memcmp(cd + i + 46, want, nl)) {
            a->method = (int)le16(cd + i + 10);
            a->crc_want = le32(cd + i + 16);
            a->csize = le32(cd + i + 20);
            a->usize = le32(cd + i + 24);
            uint64_t lho = le32(cd + i + 42);
            zip64_extra(cd + i + 46 + nl, xl, &a->usize, &a->csize, &lho);
            uint8_t lh[30];
            if (read_at(a, lho, lh, sizeof lh) || le32(lh) != 0x04034b50u) {
                rc = errmsg_set(e, ERR_DATA, "bad local header of '%s' in '%s'", want, a->path);
                break;
            }
            a->data_off = lho + 30 + le16(lh + 26) + le16(lh + 28);
            if (a->data_off + a->csize > size)
                rc = errmsg_set(e, ERR_DATA, "entry '%s' of '%s' is truncated", want, a->path);
            else if (a->method != 0 && a->method != 8)
                rc = errmsg_set(e, ERR_FORMAT,
                                "entry '%s' of '%s' uses zip method %d (numpy writes 0 or 8)", want,
                                a->path, a->method);
            else
                rc = 0;
            break;
        }
        i += 46 + nl + xl + cl;
    }
done:
    mem_free(t);
    mem_free(cd);
    return rc;
}

/* Exactly n uncompressed bytes of the entry into p. */
static int raw_read(struct npz_array *a, uint8_t *p, size_t n, struct errmsg *e)
{
    size_t got = 0;
    while (got < n) {
        if (a->uread >= a->usize)
            return bad(a, e, ERR_DATA, "truncated data");
        if (a->method == 0) {
            size_t k = n - got;
            if (k > a->usize - a->uread)
                k = (size_t)(a->usize - a->uread);
            if (read_at(a, a->data_off + a->uread, p + got, k))
                return bad(a, e, ERR_DATA, "truncated data");
            got += k;
            a->uread += k;
            continue;
        }
        if (a->z.avail_in == 0 && a->cread < a->csize) {
            size_t k = a->csize - a->cread < WIN ? (size_t)(a->csize - a->cread) : WIN;
            if (read_at(a, a->data_off + a->cread, a->in, k))
                return bad(a, e, ERR_DATA, "truncated compressed data");
            a->cread += k;
            a->z.next_in = a->in;
            a->z.avail_in = (uInt)k;
        }
        a->z.next_out = p + got;
        a->z.avail_out = (uInt)(n - got);
        int zr = inflate(&a->z, Z_NO_FLUSH);
        size_t made = (n - got) - a->z.avail_out;
        if ((zr != Z_OK && zr != Z_STREAM_END) ||
            (made == 0 && a->z.avail_in == 0 && a->cread >= a->csize))
            return bad(a, e, ERR_DATA, "corrupt compressed data");
        if (zr == Z_STREAM_END && made < n - got)
            return bad(a, e, ERR_DATA, "compressed data shorter than its size");
        got += made;
        a->uread += made;
    }
    a->crc = (uint32_t)crc32(a->crc, p, (uInt)n);
    if (a->uread == a->usize && a->crc != a->crc_want)
        return bad(a, e, ERR_DATA, "CRC mismatch");
    return 0;
}

/* Parses the .npy header dict (descr, fortran_order, shape). */
static int parse_header(struct npz_array *a, const char *h, struct errmsg *e)
{
    const char *d = strstr(h, "'descr'"), *f = strstr(h, "'fortran_order'"),
               *s = strstr(h, "'shape'");
    if (!d || !f || !s)
        return bad(a, e, ERR_DATA, "bad .npy header");
    d = strchr(d + 7, '\'');
    if (!d || sscanf(d + 1, "%7[^']", a->dtype) != 1)
        return bad(a, e, ERR_DATA, "bad .npy descr");
    char order = a->dtype[0], kind = a->dtype[1];
    int size = a->dtype[2] - '0';
    if (!strcmp(a->dtype, "|b1")) {
        a->kind = 'b', a->itemsize = 1;
    } else if ((order == '<' || order == '>' || order == '|') && (kind == 'i' || kind == 'u') &&
               (size == 1 || size == 2 || size == 4 || size == 8) && !a->dtype[3]) {
        a->kind = kind, a->itemsize = size, a->big = order == '>';
    } else {
        return errmsg_set(e, ERR_FORMAT, "dtype '%s' of '%s' in '%s' (bool or integers only)",
                          a->dtype, a->name, a->path);
    }
    for (f += 15; *f == ' ' || *f == ':';)
        f++;
    if (!strncmp(f, "True", 4))
        return errmsg_set(e, ERR_FORMAT, "'%s' of '%s' is in Fortran order (save C order)", a->name,
                          a->path);
    s = strchr(s, '(');
    if (!s)
        return bad(a, e, ERR_DATA, "bad .npy shape");
    a->count = 1;
    for (s++; *s && *s != ')';) {
        while (*s == ' ' || *s == ',')
            s++;
        if (*s == ')')
            break;
        char *end;
        unsigned long long v = strtoull(s, &end, 10);
        if (end == s || a->ndim >= NPZ_MAX_DIMS)
            return bad(a, e, ERR_DATA, "bad .npy shape");
        a->shape[a->ndim++] = v;
        if (v && a->count > UINT64_MAX / v)
            return bad(a, e, ERR_LIMIT, "shape too large");
        a->count *= v;
        s = end;
    }
    a->left = a->count;
    if (a->count > (a->usize - a->uread) / (uint64_t)a->itemsize)
        return bad(a, e, ERR_DATA, "data shorter than its shape");
    return 0;
}

int npz_array_open(struct npz_array **out, const char *path, const char *name, struct errmsg *e)
{
    *out = NULL;
    struct npz_array *a = mem_calloc(1, sizeof *a);
    if (!a)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    snprintf(a->path, sizeof a->path, "%s", path);
    snprintf(a->name, sizeof a->name, "%s", name);
    int rc;
    if (!(a->f = fopen(path, "rb"))) {
        rc = errmsg_set(e, ERR_NOINPUT, "cannot open '%s': %s", path, strerror(errno));
        goto fail;
    }
    if ((rc = find_entry(a, e)))
        goto fail;
    if (a->method == 8) {
        if (inflateInit2(&a->z, -MAX_WBITS) != Z_OK) {
            rc = errmsg_set(e, ERR_NOMEM, "out of memory");
            goto fail;
        }
        a->z_on = true;
    }
    uint8_t m[12];
    if ((rc = raw_read(a, m, 10, e)))
        goto fail;
    if (memcmp(m, "\x93NUMPY", 6) || m[6] < 1 || m[6] > 3) {
        rc = bad(a, e, ERR_DATA, "not a .npy entry");
        goto fail;
    }
    uint32_t hl = le16(m + 8);
    if (m[6] >= 2) {
        if ((rc = raw_read(a, m + 10, 2, e)))
            goto fail;
        hl = le32(m + 8);
    }
    if (hl > 65536) {
        rc = bad(a, e, ERR_DATA, "bad .npy header length");
        goto fail;
    }
    char *h = (char *)a->buf;
    if ((rc = raw_read(a, a->buf, hl, e)))
        goto fail;
    h[hl < WIN ? hl : WIN - 1] = 0;
    if ((rc = parse_header(a, h, e)))
        goto fail;
    *out = a;
    return 0;
fail:
    npz_array_close(a);
    return rc;
}

int npz_array_ndim(const struct npz_array *a)
{
    return a->ndim;
}

const uint64_t *npz_array_shape(const struct npz_array *a)
{
    return a->shape;
}

uint64_t npz_array_count(const struct npz_array *a)
{
    return a->count;
}

const char *npz_array_dtype(const struct npz_array *a)
{
    return a->dtype;
}

bool npz_array_is_bool(const struct npz_array *a)
{
    return a->kind == 'b';
}

int npz_array_read(struct npz_array *a, int64_t *v, size_t n, struct errmsg *e)
{
    if (n > a->left)
        return bad(a, e, ERR_DATA, "read past the end of the array");
    const size_t per = WIN / (size_t)a->itemsize;
    while (n) {
        size_t k = n < per ? n : per;
        int rc = raw_read(a, a->buf, k * (size_t)a->itemsize, e);
        if (rc)
            return rc;
        for (size_t i = 0; i < k; i++) {
            const uint8_t *p = a->buf + i * (size_t)a->itemsize;
            uint64_t u = 0;
            for (int b = 0; b < a->itemsize; b++)
                u |= (uint64_t)p[a->big ? a->itemsize - 1 - b : b] << (8 * b);
            int64_t x;
            if (a->kind == 'i' && a->itemsize < 8 && (u >> (8 * a->itemsize - 1)) & 1)
                x = (int64_t)(u | ~((UINT64_C(1) << (8 * a->itemsize)) - 1)); /* sign-extend */
            else if (a->kind == 'u' && u > INT64_MAX)
                return bad(a, e, ERR_DATA, "unsigned value above 2^63");
            else
                x = (int64_t)u;
            if (a->kind == 'b' && u > 1)
                return bad(a, e, ERR_DATA, "bool value other than 0 or 1");
            *v++ = x;
        }
        n -= k;
        a->left -= k;
    }
    return 0;
}

void npz_array_close(struct npz_array *a)
{
    if (!a)
        return;
    if (a->z_on)
        inflateEnd(&a->z);
    if (a->f)
        fclose(a->f);
    mem_free(a);
}

void npz_shape_text(const uint64_t *shape, int ndim, char *buf, size_t n)
{
    size_t o = (size_t)snprintf(buf, n, "(");
    for (int i = 0; i < ndim && o < n; i++)
        o +=
            (size_t)snprintf(buf + o, n - o, "%s%llu", i ? ", " : "", (unsigned long long)shape[i]);
    if (o < n)
        snprintf(buf + o, n - o, "%s)", ndim == 1 ? "," : "");
}
