#include "traces/trace_hash.h"

#include <string.h>

#include <xxhash.h>
#if defined(__x86_64__) || defined(__i386__)
/* libxxhash's runtime CPU dispatch (AVX2/AVX-512 where present); same digests */
#include <xxh_x86dispatch.h>
#endif

#include "common/err.h"

int trace_hash_init(struct trace_hash *h, enum trace_hash_alg alg)
{
    memset(h, 0, sizeof *h);
    h->alg = alg;
    if (alg == TRACE_HASH_SHA256) {
        sha256_init(&h->sha);
        return 0;
    }
    /*
     * The state is libxxhash's own allocation: its layout is not part of the library's
     * stable ABI, so it cannot live in our structs or come from mem_alloc.
     */
    XXH3_state_t *s = XXH3_createState();
    if (!s)
        return ERR_NOMEM;
    if (XXH3_128bits_reset(s) != XXH_OK) {
        XXH3_freeState(s);
        return ERR_INTERNAL;
    }
    h->xxh = s;
    return 0;
}

void trace_hash_update(struct trace_hash *h, const void *data, size_t n)
{
    if (h->alg == TRACE_HASH_SHA256)
        sha256_update(&h->sha, data, n);
    else if (h->xxh && n)
        XXH3_128bits_update(h->xxh, data, n);
}

void trace_hash_hex(const struct trace_hash *h, char out[TRACE_HASH_HEX_MAX])
{
    static const char digits[] = "0123456789abcdef";
    if (h->alg == TRACE_HASH_SHA256) {
        struct sha256 s = h->sha; /* final pads its copy; the stream goes on */
        uint8_t d[32];
        sha256_final(&s, d);
        sha256_to_hex(d, out);
        return;
    }
    if (!h->xxh) {
        out[0] = 0;
        return;
    }
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, XXH3_128bits_digest(h->xxh));
    for (size_t i = 0; i < sizeof c.digest; i++) {
        out[2 * i] = digits[c.digest[i] >> 4];
        out[2 * i + 1] = digits[c.digest[i] & 15];
    }
    out[2 * sizeof c.digest] = 0;
}

void trace_hash_release(struct trace_hash *h)
{
    if (h->xxh)
        XXH3_freeState(h->xxh);
    h->xxh = NULL;
}

const char *trace_hash_name(enum trace_hash_alg alg)
{
    return alg == TRACE_HASH_SHA256 ? "sha256" : "xxh3-128";
}

bool trace_hash_alg_of(const char *hex, enum trace_hash_alg *alg)
{
    if (!hex)
        return false;
    size_t n = strlen(hex);
    if (n != 32 && n != 64)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((hex[i] >= '0' && hex[i] <= '9') || (hex[i] >= 'a' && hex[i] <= 'f')))
            return false;
    *alg = n == 64 ? TRACE_HASH_SHA256 : TRACE_HASH_XXH3_128;
    return true;
}
