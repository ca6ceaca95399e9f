/*
 * trace_verify: checks a whole .atr trace (docs/design.md#the-trace-container): preamble, every
 * frame (header fields, crc32c, zstd, protobuf, record type), the trailer and the index (every
 * entry against the frame it describes, frame count, content hash: XXH3-128, or SHA-256 in
 * traces written before it, traces/trace_hash.h).
 */
#ifndef ACCELTRACE_TRACE_VERIFY_H
#define ACCELTRACE_TRACE_VERIFY_H

#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"
#include "common/io.h"
#include "traces/trace_reader.h"

struct trace_verify_result {
    uint64_t frames;       /* intact frames before the index (header included) */
    uint64_t intact_bytes; /* offset just past the last intact frame */
    uint64_t raw_bytes;    /* decompressed payload bytes of the intact frames */
    uint64_t stored_bytes; /* payload bytes as stored of the intact frames */
    bool index_ok;         /* trailer and index present and consistent */
    char content_hash[65]; /* computed over the intact frames (hex) */
    char hash_name[16];    /* its algorithm: "xxh3-128" ("sha256" for older traces) */
};

/*
 * Verifies the trace at path (or source s named name). 0 when everything is consistent;
 * otherwise the first problem's code (ERR_DATA, ERR_LIMIT, ERR_FORMAT, ERR_IO, ...) with
 * e's message naming the file, the frame number and the byte offset. res (may be NULL)
 * describes the intact part in both cases. opts may be NULL (defaults).
 */
int trace_verify(const char *path, const struct trace_reader_opts *opts,
                 struct trace_verify_result *res, struct errmsg *e);
int trace_verify_src(struct src *s, const char *name, const struct trace_reader_opts *opts,
                     struct trace_verify_result *res, struct errmsg *e);

#endif
