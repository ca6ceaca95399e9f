/* safetensors: reader (mmap + jansson) and writer; format in safetensors.h. */
#include "capture/nn/safetensors.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/io.h"
#include "common/mem.h"

struct st_file {
    char *path;
    void *map;
    size_t map_len;
    struct st_tensor_info *t;
    size_t n;
};

float st_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h >> 15) << 31;
    uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    uint32_t bits;
    if (exp == 0) {
        if (man == 0) {
            bits = sign;
        } else { /* subnormal: normalise */
            int e = -1;
            do {
                e++;
                man <<= 1;
            } while (!(man & 0x400));
            bits = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3ff) << 13);
        }
    } else if (exp == 31) {
        bits = sign | 0x7f800000u | (man << 13);
    } else {
        bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

uint16_t st_f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    uint32_t ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) /* inf or nan */
        return (uint16_t)(sign | 0x7c00 | (ax > 0x7f800000u ? 0x200 : 0));
    if (ax >= 0x477ff000u) /* rounds to >= 65520: overflow to inf */
        return (uint16_t)(sign | 0x7c00);
    if (ax < 0x38800000u) { /* below the smallest normal half: subnormal or zero */
        if (ax < 0x33000000u)
            return sign;
        uint32_t man = (ax & 0x7fffff) | 0x800000;
        int shift = 126 - (int)(ax >> 23); /* 14 .. 24 */
        /* value = man * 2^(E-150) and the half subnormal unit is 2^-24 */
        uint32_t v, rem = man & ((1u << shift) - 1), halfway = 1u << (shift - 1);
        v = man >> shift;
        if (rem > halfway || (rem == halfway && (v & 1)))
            v++;
        return (uint16_t)(sign | v);
    }
    uint32_t e = (ax >> 23) - 127 + 15;
    uint32_t man = ax & 0x7fffff;
    uint32_t v = (e << 10) | (man >> 13);
    uint32_t rem = man & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (v & 1)))
        v++;
    return (uint16_t)(sign | v);
}

float st_bf16_to_f32(uint16_t h)
{
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

uint16_t st_f32_to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((x >> 16) | 0x40);
    uint32_t lsb = (x >> 16) & 1;
    x += 0x7fff + lsb;
    return (uint16_t)(x >> 16);
}

static int dtype_size(enum st_dtype d)
{
    return d == ST_F32 ? 4 : (d == ST_F16 || d == ST_BF16) ? 2 : 0;
}

/* Element sizes of the other safetensors dtypes, so their entries can be validated too. */
static int other_size(const char *s)
{
    static const struct {
        const char *n;
        int sz;
    } t[] = {{"F64", 8}, {"I64", 8}, {"U64", 8}, {"I32", 4},  {"U32", 4},     {"I16", 2},
             {"U16", 2}, {"I8", 1},  {"U8", 1},  {"BOOL", 1}, {"F8_E4M3", 1}, {"F8_E5M2", 1}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (!strcmp(s, t[i].n))
            return t[i].sz;
    return 0;
}

const char *st_path(const struct st_file *f)
{
    return f->path;
}

size_t st_count(const struct st_file *f)
{
    return f->n;
}

const struct st_tensor_info *st_at(const struct st_file *f, size_t i)
{
    return i < f->n ? &f->t[i] : NULL;
}

const struct st_tensor_info *st_find(const struct st_file *f, const char *name)
{
    for (size_t i = 0; i < f->n; i++)
        if (!strcmp(f->t[i].name, name))
            return &f->t[i];
    return NULL;
}

void st_close(struct st_file *f)
{
    if (!f)
        return;
    if (f->map)
        munmap(f->map, f->map_len);
    for (size_t i = 0; i < f->n; i++)
        mem_free(f->t[i].name);
    mem_free(f->t);
    mem_free(f->path);
    mem_free(f);
}

static int parse_entry(struct st_file *f, struct st_tensor_info *ti, const char *name, json_t *v,
                       uint64_t data_len, struct errmsg *e)
{
    json_t *dt = json_object_get(v, "dtype"), *sh = json_object_get(v, "shape"),
           *off = json_object_get(v, "data_offsets");
    if (!json_is_object(v) || !json_is_string(dt) || !json_is_array(sh) || !json_is_array(off) ||
        json_array_size(off) != 2)
        return errmsg_set(e, ERR_DATA, "bad header entry for tensor '%s' in '%s'", name, f->path);
    const char *ds = json_string_value(dt);
    snprintf(ti->dtype_name, sizeof ti->dtype_name, "%s", ds);
    int esz;
    if (!strcmp(ds, "F32"))
        ti->dtype = ST_F32;
    else if (!strcmp(ds, "F16"))
        ti->dtype = ST_F16;
    else if (!strcmp(ds, "BF16"))
        ti->dtype = ST_BF16;
    else
        ti->dtype = ST_OTHER;
    esz = ti->dtype == ST_OTHER ? other_size(ds) : dtype_size(ti->dtype);
    if (esz == 0)
        return errmsg_set(e, ERR_DATA, "unknown dtype '%s' of tensor '%s' in '%s'", ds, name,
                          f->path);
    size_t nd = json_array_size(sh);
    if (nd > ST_MAX_DIMS)
        return errmsg_set(e, ERR_DATA, "tensor '%s' in '%s' has %zu dims (max %d)", name, f->path,
                          nd, ST_MAX_DIMS);
    ti->ndim = (int)nd;
    uint64_t numel = 1;
    for (size_t i = 0; i < nd; i++) {
        json_t *x = json_array_get(sh, i);
        if (!json_is_integer(x) || json_integer_value(x) < 0 ||
            json_integer_value(x) > ((json_int_t)1 << 40))
            return errmsg_set(e, ERR_DATA, "bad shape of tensor '%s' in '%s'", name, f->path);
        ti->shape[i] = json_integer_value(x);
        if (ti->shape[i] != 0 && numel > (UINT64_MAX >> 8) / (uint64_t)ti->shape[i])
            return errmsg_set(e, ERR_DATA, "shape of tensor '%s' in '%s' overflows", name, f->path);
        numel *= (uint64_t)ti->shape[i];
    }
    ti->numel = numel;
    json_t *b = json_array_get(off, 0), *en = json_array_get(off, 1);
    if (!json_is_integer(b) || !json_is_integer(en) || json_integer_value(b) < 0 ||
        json_integer_value(en) < json_integer_value(b))
        return errmsg_set(e, ERR_DATA, "bad data_offsets of tensor '%s' in '%s'", name, f->path);
    uint64_t ub = (uint64_t)json_integer_value(b), ue = (uint64_t)json_integer_value(en);
    if (ue - ub != numel * (uint64_t)esz)
        return errmsg_set(
            e, ERR_DATA, "tensor '%s' in '%s' has %llu data bytes, its shape needs %llu", name,
            f->path, (unsigned long long)(ue - ub), (unsigned long long)(numel * (uint64_t)esz));
    if (ue > data_len)
        return errmsg_set(e, ERR_DATA,
                          "tensor '%s' ends at data offset %llu beyond the end of '%s' "
                          "(%llu data bytes; truncated file?)",
                          name, (unsigned long long)ue, f->path, (unsigned long long)data_len);
    ti->nbytes = ue - ub;
    ti->name = mem_strdup(name);
    if (!ti->name)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    ti->data = (const void *)(uintptr_t)ub; /* offset; rebased by st_open */
    return 0;
}

int st_open(struct st_file **out, const char *path, struct errmsg *e)
{
    int rc = 0, fd = -1;
    json_t *root = NULL;
    struct st_file *f = mem_calloc(1, sizeof *f);
    *out = NULL;
    if (!f || !(f->path = mem_strdup(path))) {
        rc = errmsg_set(e, ERR_NOMEM, "out of memory");
        goto fail;
    }
    uint64_t size;
    fd = io_open_input(path, &size, e); /* regular files only: a FIFO would block */
    if (fd < 0) {
        rc = fd;
        goto fail;
    }
    if (size < 8) {
        rc = errmsg_set(e, ERR_DATA, "'%s' is too short for a safetensors file (%llu bytes)", path,
                        (unsigned long long)size);
        goto fail;
    }
    f->map_len = (size_t)size;
    f->map = mmap(NULL, f->map_len, PROT_READ, MAP_PRIVATE, fd, 0);
    if (f->map == MAP_FAILED) {
        f->map = NULL;
        rc = errmsg_set(e, ERR_IO, "cannot map '%s': %s", path, strerror(errno));
        goto fail;
    }
    const unsigned char *p = f->map;
    uint64_t hl = 0;
    for (int i = 7; i >= 0; i--)
        hl = (hl << 8) | p[i];
    if (hl > ST_MAX_HEADER || hl > f->map_len - 8) {
        rc = errmsg_set(e, ERR_DATA,
                        "safetensors header of '%s' claims %llu bytes, file has %zu (truncated "
                        "or not safetensors)",
                        path, (unsigned long long)hl, f->map_len);
        goto fail;
    }
    json_error_t jerr;
    root = json_loadb((const char *)p + 8, (size_t)hl, 0, &jerr);
    if (!root || !json_is_object(root)) {
        rc = errmsg_set(e, ERR_DATA, "bad safetensors header JSON in '%s' at offset %d: %s", path,
                        root ? 8 : 8 + jerr.position, root ? "not an object" : jerr.text);
        goto fail;
    }
    size_t cnt = json_object_size(root);
    f->t = mem_calloc(cnt ? cnt : 1, sizeof *f->t);
    if (!f->t) {
        rc = errmsg_set(e, ERR_NOMEM, "out of memory");
        goto fail;
    }
    uint64_t data_len = f->map_len - 8 - hl;
    const char *key;
    json_t *val;
    json_object_foreach(root, key, val)
    {
        if (!strcmp(key, "__metadata__"))
            continue;
        rc = parse_entry(f, &f->t[f->n], key, val, data_len, e);
        if (rc)
            goto fail;
        f->t[f->n].data = p + 8 + hl + (uintptr_t)f->t[f->n].data;
        f->n++;
    }
    json_decref(root);
    close(fd);
    *out = f;
    return 0;
fail:
    json_decref(root);
    if (fd >= 0)
        close(fd);
    st_close(f);
    return rc;
}

int st_tensor_to_f32(const struct st_tensor_info *t, const char *file, const int64_t *shape,
                     int ndim, float *out, struct errmsg *e)
{
    if (t->dtype == ST_OTHER)
        return errmsg_set(e, ERR_DATA,
                          "tensor '%s' in '%s' has dtype %s (expected F32, F16 or BF16)", t->name,
                          file, t->dtype_name);
    if (shape) {
        bool ok = t->ndim == ndim;
        for (int i = 0; ok && i < ndim; i++)
            ok = t->shape[i] == shape[i];
        if (!ok) {
            char got[160], want[160];
            size_t g = 0, w = 0;
            got[0] = want[0] = 0;
            for (int i = 0; i < t->ndim && g < sizeof got - 24; i++)
                g += (size_t)snprintf(got + g, sizeof got - g, "%s%lld", i ? "," : "",
                                      (long long)t->shape[i]);
            for (int i = 0; i < ndim && w < sizeof want - 24; i++)
                w += (size_t)snprintf(want + w, sizeof want - w, "%s%lld", i ? "," : "",
                                      (long long)shape[i]);
            return errmsg_set(e, ERR_DATA, "tensor '%s' in '%s' has shape [%s], expected [%s]",
                              t->name, file, got, want);
        }
    }
    const unsigned char *p = t->data;
    uint64_t bad = UINT64_MAX; /* first non-finite element: all-ones exponent in any dtype */
    for (uint64_t i = 0; i < t->numel; i++) {
        if (t->dtype == ST_F32) {
            uint32_t b = (uint32_t)p[4 * i] | (uint32_t)p[4 * i + 1] << 8 |
                         (uint32_t)p[4 * i + 2] << 16 | (uint32_t)p[4 * i + 3] << 24;
            if ((b & 0x7F800000u) == 0x7F800000u && bad == UINT64_MAX)
                bad = i;
            memcpy(&out[i], &b, 4);
        } else {
            uint16_t h = (uint16_t)(p[2 * i] | p[2 * i + 1] << 8);
            uint16_t em = t->dtype == ST_F16 ? 0x7C00u : 0x7F80u;
            if ((h & em) == em && bad == UINT64_MAX)
                bad = i;
            out[i] = t->dtype == ST_F16 ? st_f16_to_f32(h) : st_bf16_to_f32(h);
        }
    }
    /* a NaN or Inf weight spreads through every later activation: refuse it */
    if (bad != UINT64_MAX)
        return errmsg_set(e, ERR_DATA,
                          "tensor '%s' in '%s' has a non-finite value (%s) at "
                          "element %llu",
                          t->name, file, isnan(out[bad]) ? "nan" : "inf", (unsigned long long)bad);
    return 0;
}

int st_write(const char *path, const struct st_write_item *items, size_t n, enum st_dtype dtype,
             struct errmsg *e)
{
    int rc = 0;
    FILE *fp = NULL;
    char *hdr = NULL;
    json_t *root = json_object();
    int esz = dtype_size(dtype);
    if (!root || esz == 0)
        return errmsg_set(e, root ? ERR_USAGE : ERR_NOMEM, "cannot write safetensors dtype");
    uint64_t off = 0;
    static const char *names[] = {"F32", "F16", "BF16"};
    for (size_t i = 0; i < n; i++) {
        json_t *shape = json_array();
        uint64_t numel = 1;
        for (int d = 0; d < items[i].ndim; d++) {
            json_array_append_new(shape, json_integer(items[i].shape[d]));
            numel *= (uint64_t)items[i].shape[d];
        }
        uint64_t end = off + numel * (uint64_t)esz;
        json_object_set_new(root, items[i].name,
                            json_pack("{s:s, s:o, s:[I,I]}", "dtype", names[dtype], "shape", shape,
                                      "data_offsets", (json_int_t)off, (json_int_t)end));
        off = end;
    }
    hdr = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (!hdr) {
        rc = errmsg_set(e, ERR_NOMEM, "out of memory");
        goto fail;
    }
    size_t hl = strlen(hdr), pad = (8 - hl % 8) % 8;
    fp = fopen(path, "wb");
    if (!fp) {
        rc = errmsg_set(e, ERR_IO, "cannot create '%s': %s", path, strerror(errno));
        goto fail;
    }
    unsigned char lenb[8];
    uint64_t hl8 = hl + pad;
    for (int i = 0; i < 8; i++)
        lenb[i] = (unsigned char)(hl8 >> (8 * i));
    int bad = fwrite(lenb, 1, 8, fp) != 8 || fwrite(hdr, 1, hl, fp) != hl;
    for (size_t i = 0; i < pad && !bad; i++)
        bad = fputc(' ', fp) == EOF;
    for (size_t i = 0; i < n && !bad; i++) {
        uint64_t numel = 1;
        for (int d = 0; d < items[i].ndim; d++)
            numel *= (uint64_t)items[i].shape[d];
        for (uint64_t j = 0; j < numel && !bad; j++) {
            unsigned char b[4];
            float v = items[i].data[j];
            if (dtype == ST_F32) {
                uint32_t u;
                memcpy(&u, &v, 4);
                for (int k = 0; k < 4; k++)
                    b[k] = (unsigned char)(u >> (8 * k));
            } else {
                uint16_t h = dtype == ST_F16 ? st_f32_to_f16(v) : st_f32_to_bf16(v);
                b[0] = (unsigned char)h;
                b[1] = (unsigned char)(h >> 8);
            }
            bad = fwrite(b, 1, (size_t)esz, fp) != (size_t)esz;
        }
    }
    if (bad || fclose(fp) != 0) {
        if (bad)
            fclose(fp);
        fp = NULL;
        rc = errmsg_set(e, ERR_IO, "cannot write '%s': %s", path, strerror(errno));
        goto fail;
    }
    fp = NULL;
fail:
    if (fp)
        fclose(fp);
    free(hdr); /* allocated by jansson with malloc */
    json_decref(root);
    return rc;
}
