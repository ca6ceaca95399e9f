/*
 * fuzz_trace_reader: libFuzzer target for the .atr reader. The input is a trace held in
 * memory: open it, stream every record (1 or 2 decoding threads, chosen by the input
 * length) and print it as JSON, look a few keys up through the index, ask for the content
 * hash, verify it.
 * The decompression cap is 8 MiB so inputs cannot make the fuzzer allocate much.
 * Under gcc, tests/fuzz/corpus_driver.c replays the corpus in `make test`.
 */
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/io.h"
#include "traces/trace_json.h"
#include "traces/trace_reader.h"
#include "traces/trace_verify.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct src s;
    src_init_mem(&s, data, size);
    struct trace_reader_opts o;
    trace_reader_opts_default(&o);
    o.max_record_bytes = 8u << 20;
    o.threads = size % 7 == 0 ? 2 : 1;
    /* stream damaged inputs too, as dump and verify do (the default refuses them at open) */
    o.allow_partial = size % 5 != 0;
    o.warn_damage = false;
    struct trace_reader *r;
    struct errmsg err = {0};
    if (trace_reader_open_src(&r, &s, "fuzz", &o, &err) == 0) {
        Acceltrace__Record *rec;
        struct trace_key k;
        struct buf b;
        buf_init(&b);
        while (trace_reader_next(r, &rec, &k) == 1) {
            buf_clear(&b);
            (void)trace_json_append(&b, &rec->base, size % 2 ? TRACE_JSON_HEX : TRACE_JSON_BASE64);
            trace_record_free(rec);
        }
        buf_release(&b);
        for (int32_t step = -1; step < 3; step++)
            if (trace_reader_find(r, 15, step, step % 2, 0, &rec) == 1)
                trace_record_free(rec);
        (void)trace_reader_content_hash(r);
        trace_reader_free(r);
    }
    src_init_mem(&s, data, size);
    o.threads = 1;
    struct errmsg e = {0, ""};
    (void)trace_verify_src(&s, "fuzz", &o, NULL, &e);
    return 0;
}
