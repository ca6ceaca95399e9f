/*
 * fuzz_safetensors: libFuzzer target for the safetensors loader (capture/nn/safetensors).
 * The input is a whole .safetensors file. The loader maps a path, so the input is written
 * to a scratch file once per input (tests/fuzz/fuzz_tmp.h) and opened; every tensor is
 * looked up by name and converted to FP32 (checked against its own shape, and against a
 * wrong one), and, when the file holds at most 4096 elements, the converted tensors are
 * written back as F32, F16 and BF16 and read again: the F32 copy must give the same bits.
 * Under gcc, tests/fuzz/corpus_driver.c replays the corpus in `make test`.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "capture/nn/safetensors.h"
#include "common/mem.h"
#include "tests/fuzz/fuzz_tmp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define ROUND_TRIP_MAX 4096 /* elements */

/* Writes the n converted tensors of f as dtype and checks what reads back. */
static void round_trip(const struct st_file *f, float *const *vals, size_t n, enum st_dtype dt)
{
    struct st_write_item *items = mem_calloc(n ? n : 1, sizeof *items);
    if (!items)
        return;
    for (size_t i = 0; i < n; i++) {
        const struct st_tensor_info *t = st_at(f, i);
        items[i].name = t->name;
        items[i].data = vals[i];
        items[i].ndim = t->ndim;
        memcpy(items[i].shape, t->shape, sizeof t->shape);
    }
    char path[512];
    struct errmsg e = {0, ""};
    struct st_file *g = NULL;
    if (fuzz_tmp_name("copy.safetensors", path, sizeof path) == 0 &&
        st_write(path, items, n, dt, &e) == 0 && st_open(&g, path, &e) == 0) {
        if (st_count(g) != n)
            abort(); /* a tensor lost or added on the way */
        for (size_t i = 0; i < n; i++) {
            const struct st_tensor_info *t = st_find(g, items[i].name);
            if (!t || t->numel != st_at(f, i)->numel)
                abort();
            float *back = mem_alloc(t->numel ? t->numel * sizeof(float) : 1);
            if (back && st_tensor_to_f32(t, path, items[i].shape, items[i].ndim, back, &e) == 0 &&
                dt == ST_F32 && t->numel && memcmp(back, vals[i], t->numel * sizeof(float)))
                abort(); /* F32 is lossless */
            mem_free(back);
        }
    }
    st_close(g);
    mem_free(items);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[512];
    if (fuzz_tmp_write("in.safetensors", data, size, path, sizeof path))
        return 0;
    struct st_file *f = NULL;
    struct errmsg e = {0, ""};
    if (st_open(&f, path, &e) != 0)
        return 0;
    size_t n = st_count(f);
    float **vals = mem_calloc(n ? n : 1, sizeof *vals);
    uint64_t total = 0;
    bool all_ok = vals != NULL;
    for (size_t i = 0; vals && i < n; i++) {
        const struct st_tensor_info *t = st_at(f, i);
        if (st_find(f, t->name) == NULL)
            abort();              /* every listed tensor can be found by its name */
        if (t->numel > t->nbytes) /* each element takes at least one byte in the file */
            abort();
        total += t->numel;
        vals[i] = mem_alloc(t->numel ? t->numel * sizeof(float) : 1);
        if (!vals[i] || st_tensor_to_f32(t, path, t->shape, t->ndim, vals[i], &e) != 0) {
            all_ok = false;
            continue;
        }
        int64_t wrong[ST_MAX_DIMS];
        memcpy(wrong, t->shape, sizeof wrong);
        wrong[0] += 1;
        if (t->ndim > 0 && st_tensor_to_f32(t, path, wrong, t->ndim, vals[i], &e) == 0)
            abort(); /* a shape that is not the tensor's must be refused */
    }
    (void)st_find(f, "__metadata__");
    (void)st_path(f);
    if (all_ok && total <= ROUND_TRIP_MAX) {
        round_trip(f, vals, n, ST_F32);
        round_trip(f, vals, n, ST_F16);
        round_trip(f, vals, n, ST_BF16);
    }
    for (size_t i = 0; vals && i < n; i++)
        mem_free(vals[i]);
    mem_free(vals);
    st_close(f);
    return 0;
}
