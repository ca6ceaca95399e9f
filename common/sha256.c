#include "common/sha256.h"

#include <errno.h>
#include <stdio.h>

#include "common/err.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define SHA256_HAVE_SHANI_CODE 1
#endif

/* Constants and round function from FIPS 180-4 section 4.2.2 and 6.2. */
static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

#define ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void compress(uint32_t h[8], const uint8_t b[64])
{
    uint32_t w[64];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)b[4 * i] << 24 | (uint32_t)b[4 * i + 1] << 16 |
               (uint32_t)b[4 * i + 2] << 8 | b[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h[0], bb = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
    for (int i = 0; i < 64; i++) {
        uint32_t t1 =
            hh + (ROR(e, 6) ^ ROR(e, 11) ^ ROR(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i];
        uint32_t t2 = (ROR(a, 2) ^ ROR(a, 13) ^ ROR(a, 22)) + ((a & bb) ^ (a & c) ^ (bb & c));
        hh = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = bb;
        bb = a;
        a = t1 + t2;
    }
    h[0] += a;
    h[1] += bb;
    h[2] += c;
    h[3] += d;
    h[4] += e;
    h[5] += f;
    h[6] += g;
    h[7] += hh;
}

#ifdef SHA256_HAVE_SHANI_CODE
/*
 * The same compression with the x86 SHA extensions (Intel SHA-NI): four rounds per pair
 * of sha256rnds2, the message schedule by sha256msg1/msg2 (FIPS 180-4 section 6.2.2 step 1).
 * State is kept as ABEF / CDGH as the instructions expect.
 */
__attribute__((target("sha,sse4.1,ssse3"))) static void
compress_shani(uint32_t h[8], const uint8_t *p, size_t blocks)
{
    const __m128i mask = _mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL);
    __m128i tmp = _mm_loadu_si128((const __m128i *)&h[0]);
    __m128i st1 = _mm_loadu_si128((const __m128i *)&h[4]);
    tmp = _mm_shuffle_epi32(tmp, 0xB1);         /* CDAB */
    st1 = _mm_shuffle_epi32(st1, 0x1B);         /* EFGH */
    __m128i st0 = _mm_alignr_epi8(tmp, st1, 8); /* ABEF */
    st1 = _mm_blend_epi16(st1, tmp, 0xF0);      /* CDGH */
    while (blocks--) {
        __m128i save0 = st0, save1 = st1, w[4];
        for (int g = 0; g < 16; g++) {
            __m128i m;
            if (g < 4) {
                m = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16 * g)), mask);
            } else {
                __m128i x = _mm_sha256msg1_epu32(w[g & 3], w[(g + 1) & 3]);
                x = _mm_add_epi32(x, _mm_alignr_epi8(w[(g + 3) & 3], w[(g + 2) & 3], 4));
                m = _mm_sha256msg2_epu32(x, w[(g + 3) & 3]);
            }
            w[g & 3] = m;
            __m128i k = _mm_add_epi32(m, _mm_loadu_si128((const __m128i *)&K[4 * g]));
            st1 = _mm_sha256rnds2_epu32(st1, st0, k);
            k = _mm_shuffle_epi32(k, 0x0E);
            st0 = _mm_sha256rnds2_epu32(st0, st1, k);
        }
        st0 = _mm_add_epi32(st0, save0);
        st1 = _mm_add_epi32(st1, save1);
        p += 64;
    }
    tmp = _mm_shuffle_epi32(st0, 0x1B);    /* FEBA */
    st1 = _mm_shuffle_epi32(st1, 0xB1);    /* DCHG */
    st0 = _mm_blend_epi16(tmp, st1, 0xF0); /* DCBA */
    st1 = _mm_alignr_epi8(st1, tmp, 8);    /* ABEF */
    _mm_storeu_si128((__m128i *)&h[0], st0);
    _mm_storeu_si128((__m128i *)&h[4], st1);
}

static int have_shani;
static pthread_once_t shani_once = PTHREAD_ONCE_INIT;

static void shani_detect(void)
{
    unsigned eax, ebx, ecx, edx;
    __builtin_cpu_init();
    have_shani = 0;
    if (!__builtin_cpu_supports("sse4.1") || !__builtin_cpu_supports("ssse3"))
        return;
    /* CPUID leaf 7, subleaf 0: EBX bit 29 = SHA extensions */
    __asm__("cpuid" : "=a"(eax), "=b"(ebx), "=c"(ecx), "=d"(edx) : "a"(0), "c"(0));
    if (eax < 7)
        return;
    __asm__("cpuid" : "=a"(eax), "=b"(ebx), "=c"(ecx), "=d"(edx) : "a"(7), "c"(0));
    have_shani = (ebx >> 29) & 1;
}
#endif

/* Compresses n whole 64-byte blocks, with SHA-NI when the CPU has it. */
static void compress_blocks(uint32_t h[8], const uint8_t *p, size_t n)
{
#ifdef SHA256_HAVE_SHANI_CODE
    pthread_once(&shani_once, shani_detect);
    if (have_shani && !getenv("ACCELTRACE_NO_SHANI")) {
        compress_shani(h, p, n);
        return;
    }
#endif
    for (size_t i = 0; i < n; i++)
        compress(h, p + 64 * i);
}

void sha256_init(struct sha256 *s)
{
    static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(s->h, iv, sizeof iv);
    s->n_bytes = 0;
    s->fill = 0;
}

void sha256_update(struct sha256 *s, const void *data, size_t n)
{
    const uint8_t *p = data;
    s->n_bytes += n;
    if (s->fill == 0 && n >= 64) {
        size_t blocks = n / 64;
        compress_blocks(s->h, p, blocks);
        p += blocks * 64;
        n -= blocks * 64;
    }
    while (n) {
        size_t take = 64 - s->fill < n ? 64 - s->fill : n;
        memcpy(s->block + s->fill, p, take);
        s->fill += take;
        p += take;
        n -= take;
        if (s->fill == 64) {
            compress_blocks(s->h, s->block, 1);
            s->fill = 0;
            if (n >= 64) {
                size_t blocks = n / 64;
                compress_blocks(s->h, p, blocks);
                p += blocks * 64;
                n -= blocks * 64;
            }
        }
    }
}

void sha256_final(struct sha256 *s, uint8_t out[32])
{
    uint64_t bits = s->n_bytes * 8;
    uint8_t pad = 0x80, zero = 0;
    sha256_update(s, &pad, 1);
    while (s->fill != 56)
        sha256_update(s, &zero, 1);
    uint8_t len[8];
    for (int i = 0; i < 8; i++)
        len[i] = (uint8_t)(bits >> (56 - 8 * i));
    sha256_update(s, len, 8);
    for (int i = 0; i < 8; i++) {
        out[4 * i] = (uint8_t)(s->h[i] >> 24);
        out[4 * i + 1] = (uint8_t)(s->h[i] >> 16);
        out[4 * i + 2] = (uint8_t)(s->h[i] >> 8);
        out[4 * i + 3] = (uint8_t)s->h[i];
    }
}

void sha256_to_hex(const uint8_t d[32], char out[65])
{
    static const char hx[] = "0123456789abcdef";
    for (int i = 0; i < 32; i++) {
        out[2 * i] = hx[d[i] >> 4];
        out[2 * i + 1] = hx[d[i] & 15];
    }
    out[64] = 0;
}

void sha256_hex(const void *data, size_t n, char out[65])
{
    struct sha256 s;
    uint8_t d[32];
    sha256_init(&s);
    sha256_update(&s, data, n);
    sha256_final(&s, d);
    sha256_to_hex(d, out);
}

int sha256_file(const char *path, char hex[65], struct errmsg *e)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return errmsg_set(e, ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    struct sha256 s;
    sha256_init(&s);
    unsigned char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        sha256_update(&s, buf, n);
    int bad = ferror(f);
    fclose(f);
    if (bad)
        return errmsg_set(e, ERR_IO, "cannot read '%s'", path);
    uint8_t d[32];
    sha256_final(&s, d);
    sha256_to_hex(d, hex);
    return 0;
}
