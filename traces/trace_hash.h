/*
 * trace_hash: the content hash of a .atr trace (TraceIndex.content_hash, docs/design.md
 * section 3, docs/trace-format.md "Content hash"), streamed over the decompressed payloads
 * of every frame before the index, header included.
 *
 * Traces are written with XXH3-128 (seed 0, libxxhash), printed as the 32 lowercase hex
 * digits of its canonical big-endian form (what `xxh128sum` prints). The hash keys replay
 * results and detects changes; it need not be cryptographic, and XXH3 runs at memory
 * speed where SHA-256 cost 60-70% of the zstd level-3 time. Traces written before the
 * switch carry a 64-digit SHA-256 of the same bytes; the reader recognises them by the
 * length of the index's hash and recomputes that algorithm, so they still verify.
 *
 * A struct trace_hash is caller's storage: trace_hash_init, any number of updates,
 * trace_hash_hex (any time, the stream goes on), trace_hash_release.
 */
#ifndef ACCELTRACE_TRACE_HASH_H
#define ACCELTRACE_TRACE_HASH_H

#include <stdbool.h>
#include <stddef.h>

#include "common/sha256.h"

enum trace_hash_alg {
    TRACE_HASH_XXH3_128 = 0, /* what writers write: 32 hex digits */
    TRACE_HASH_SHA256 = 1,   /* older traces: 64 hex digits */
};

/* Hex digest buffer size of the longest algorithm (64 digits + NUL). */
#define TRACE_HASH_HEX_MAX 65

struct trace_hash {
    enum trace_hash_alg alg;
    void *xxh;         /* XXH3_state_t (libxxhash's allocation) for TRACE_HASH_XXH3_128 */
    struct sha256 sha; /* for TRACE_HASH_SHA256 */
};

/*
 * Starts an empty stream of algorithm alg. 0, or ERR_NOMEM (h is then released and
 * trace_hash_release stays safe). A zeroed struct is safe to release.
 */
int trace_hash_init(struct trace_hash *h, enum trace_hash_alg alg);

/* Adds n bytes to the stream. */
void trace_hash_update(struct trace_hash *h, const void *data, size_t n);

/*
 * Lowercase hex digest of the bytes added so far (32 digits for XXH3-128, 64 for SHA-256)
 * into out; the stream can go on afterwards.
 */
void trace_hash_hex(const struct trace_hash *h, char out[TRACE_HASH_HEX_MAX]);

/* Frees what init allocated; the struct may be initialized again. */
void trace_hash_release(struct trace_hash *h);

/* "xxh3-128" or "sha256": the name printed beside a content hash. */
const char *trace_hash_name(enum trace_hash_alg alg);

/*
 * The algorithm a stored hex content hash was made with, by its length: 32 lowercase hex
 * digits XXH3-128, 64 SHA-256. false (alg untouched) for anything else.
 */
bool trace_hash_alg_of(const char *hex, enum trace_hash_alg *alg);

#endif
