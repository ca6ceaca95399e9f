/*
 * safetensors: reads and writes the safetensors checkpoint format (Hugging Face).
 *
 * File layout, byte by byte:
 *   u64 LE  header_len            (bounded here by ST_MAX_HEADER and the file size)
 *   header_len bytes of UTF-8 JSON: { "<name>": {"dtype": "F32"|"F16"|"BF16"|...,
 *            "shape": [d0, d1, ...], "data_offsets": [begin, end]}, ...,
 *            "__metadata__": {string: string} (optional) }
 *   data    (offsets are relative to the first byte after the header; end - begin must be
 *            the element count times the dtype size; tensors are little-endian)
 * The reader mmaps the file, parses the header with jansson and validates every entry
 * (offsets inside the file, sizes consistent, shapes non-negative, <= ST_MAX_DIMS dims).
 * Loading converts F32, F16 and BF16 to FP32 and checks the caller's expected shape.
 * Errors are data errors (ERR_DATA) with a message naming the file and the tensor.
 * A struct st_file owns its mapping and names; tensor data pointers live until st_close.
 */
#ifndef ACCELTRACE_SAFETENSORS_H
#define ACCELTRACE_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

#define ST_MAX_DIMS 8
#define ST_MAX_HEADER (100u << 20) /* 100 MiB of JSON header at most */

enum st_dtype { ST_F32 = 0, ST_F16 = 1, ST_BF16 = 2, ST_OTHER = 3 };

struct st_tensor_info {
    char *name;
    char dtype_name[16]; /* as written in the file ("F32", "I64", ...) */
    enum st_dtype dtype;
    int ndim;
    int64_t shape[ST_MAX_DIMS];
    uint64_t numel;
    const void *data; /* into the mapping; little-endian elements */
    uint64_t nbytes;
};

struct st_file;

/* Opens and validates path. On failure *out is NULL and e (may be NULL) holds the message. */
int st_open(struct st_file **out, const char *path, struct errmsg *e);

/* Unmaps and frees; NULL is a no-op. */
void st_close(struct st_file *f);

/* The file name given to st_open. */
const char *st_path(const struct st_file *f);

/* Number of tensors (the __metadata__ entry excluded) and the i-th in header order. */
size_t st_count(const struct st_file *f);
const struct st_tensor_info *st_at(const struct st_file *f, size_t i);

/* The tensor called name, or NULL. */
const struct st_tensor_info *st_find(const struct st_file *f, const char *name);

/*
 * Converts tensor t to FP32 into out (t->numel floats). Fails with ERR_DATA naming the
 * tensor when its dtype is not F32/F16/BF16 or, when shape is not NULL, when its shape is
 * not (shape[0], ..., shape[ndim-1]).
 */
int st_tensor_to_f32(const struct st_tensor_info *t, const char *file, const int64_t *shape,
                     int ndim, float *out, struct errmsg *e);

/* One tensor to write: FP32 data of the given shape, row-major. */
struct st_write_item {
    const char *name;
    const float *data;
    int ndim;
    int64_t shape[ST_MAX_DIMS];
};

/*
 * Writes the items to path as dtype (F32, F16 or BF16; conversion rounds to nearest even),
 * in the given order with 8-byte aligned header. 0 or a negative err (ERR_IO, ERR_NOMEM).
 */
int st_write(const char *path, const struct st_write_item *items, size_t n, enum st_dtype dtype,
             struct errmsg *e);

/* IEEE half and bfloat16 conversions (round to nearest even on the way down). */
float st_f16_to_f32(uint16_t h);
uint16_t st_f32_to_f16(float f);
float st_bf16_to_f32(uint16_t h);
uint16_t st_f32_to_bf16(float f);

#endif
