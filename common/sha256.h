/*
 * sha256: FIPS 180-4 SHA-256, streaming. Used for weight-file digests and params_hash in
 * trace headers, config hashes, and to verify the content hash of traces written before it
 * became XXH3-128 (traces/trace_hash.h).
 */
#ifndef ACCELTRACE_SHA256_H
#define ACCELTRACE_SHA256_H

#include <stddef.h>
#include <stdint.h>

struct sha256 {
    uint32_t h[8];
    uint64_t n_bytes;
    uint8_t block[64];
    size_t fill;
};

void sha256_init(struct sha256 *s);
void sha256_update(struct sha256 *s, const void *data, size_t n);
void sha256_final(struct sha256 *s, uint8_t out[32]);
/* Hex digest (64 chars + NUL) of one buffer. */
void sha256_hex(const void *data, size_t n, char out[65]);
/* 32-byte digest to lowercase hex (65 bytes with NUL). */
void sha256_to_hex(const uint8_t d[32], char out[65]);

struct errmsg;
/* Hex digest of a whole file, streamed. 0, or ERR_IO with the path in e. */
int sha256_file(const char *path, char hex[65], struct errmsg *e);

#endif
