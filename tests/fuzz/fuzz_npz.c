/*
 * fuzz_npz: libFuzzer target for the .npz reader (formats/npz), the parser `acceltrace
 * import` runs on files from other tools. The input is a whole .npz, written to a scratch
 * file (tests/fuzz/fuzz_tmp.h, the reader takes a path). The arrays `masks`, `selected`,
 * `counts` and `n_ctx` are opened and read to their end in uneven pieces; the reader must
 * never hand out more elements than the shape holds, and a bool array only 0 and 1. Under
 * gcc, tests/fuzz/corpus_driver.c replays the corpus (numpy-made files and damaged copies)
 * in `make test`.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "formats/npz.h"
#include "tests/fuzz/fuzz_tmp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[512];
    if (fuzz_tmp_write("in.npz", data, size, path, sizeof path))
        return 0;
    static const char *const names[] = {"masks", "selected", "counts", "n_ctx", "a", "c"};
    for (size_t k = 0; k < sizeof names / sizeof *names; k++) {
        struct errmsg e = {0, ""};
        struct npz_array *a = NULL;
        if (npz_array_open(&a, path, names[k], &e))
            continue;
        uint64_t n = 1;
        for (int d = 0; d < npz_array_ndim(a); d++)
            n *= npz_array_shape(a)[d];
        if (n != npz_array_count(a))
            abort(); /* the count is the product of the shape */
        int64_t v[97];
        uint64_t left = n, step = 1;
        while (left && left <= (1u << 20)) { /* read it all, in pieces of 1, 2, 3, ... 97 */
            size_t m = (size_t)(left < step ? left : step);
            if (npz_array_read(a, v, m, &e))
                break;
            for (size_t i = 0; i < m && npz_array_is_bool(a); i++)
                if (v[i] != 0 && v[i] != 1)
                    abort();
            left -= m;
            step = step % 97 + 1;
        }
        if (!left && npz_array_read(a, v, 1, &e) == 0)
            abort(); /* nothing past the end */
        npz_array_close(a);
    }
    return 0;
}
