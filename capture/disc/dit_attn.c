/*
 * dit_attn: the self-attention kernels of the DiT (docs/disc.md#forward-pass,
 * docs/disc.md#st-masks): dense attention by BLAS in row chunks, ST mask generation and the masked
 * reuse path (see dit.h).
 */
#include <math.h>
#include <string.h>

#include "capture/disc/dit.h"
#include "capture/disc/dit_impl.h"
#include "capture/nn/nn.h"
#include "capture/nn/vec8.h"
#include "common/hot.h"
#include "common/mem.h"
#include "common/threads.h"

struct gen_ctx {
    struct dit_model *m;
    const float *s; /* chunk rows of scaled scores, N each */
    int row0;       /* first row of the chunk (index into kept) */
    const int32_t *kept;
    uint64_t *mask;
    size_t words;
    float theta;
    const float *v; /* (N, dh) packed */
    float *o;       /* (n_kept, d) at head offset */
    int d, dh, N;
};

size_t dit_st_generate_row(const float *s, int n, float theta, uint64_t *mask_row, float *p)
{
    size_t words = ((size_t)n + 63) / 64, nnz = 0;
    memcpy(p, s, (size_t)n * sizeof(float));
    nn_softmax_rows(p, 1, n, n);
    memset(mask_row, 0, words * sizeof(uint64_t));
    int am = 0;
    for (int j = 0; j < n; j++) {
        if (p[j] >= theta) {
            mask_row[j >> 6] |= 1ull << (j & 63);
            nnz++;
        }
        if (p[j] > p[am])
            am = j; /* strict: the lowest j wins ties */
    }
    if (!nnz) {
        mask_row[am >> 6] |= 1ull << (am & 63);
        nnz = 1;
    }
    return nnz;
}

/*
 * The row-compressed masked kernels. A mask row is turned into its ascending list of set
 * columns once, and the SDDMM, the softmax and the SpMM walk that list, touching only the
 * kept K and V rows. The arithmetic is that of nn_sddmm_row and nn_attention_row_sparse
 * entry for entry (the dot product's eight partial sums combined in the same order, the
 * softmax weights by nn_softmax_list, each output column summed in ascending column order,
 * the multiply-adds fused on a CPU with FMA in both), so both kernels give the same bits
 * (tests/test_disc_dit.c). Speed comes from the order of work: the list built sixteen
 * columns a step (AVX-512 compress where the CPU has it) with each tile's start on the way,
 * eight dot products at a time (eight independent add chains, the eight scores combined
 * by a transpose of adds instead of a horizontal sum per key), 32 query rows sharing each
 * K and V tile, each row's largest score found by the SDDMM (so the softmax
 * skips that pass), the query row and the output row held in vector registers for the head
 * dimensions of the shipped configs (16, 64, 72), and the vectorised exp on the list. A
 * blocked (tile) layout was not taken: at the measured densities (40% kept at sparsity 0.6)
 * 97.8% of the 8 x 8 tiles hold a set entry, so skipping empty tiles would skip almost
 * nothing (docs/performance.md). Compiled again for x86-64-v3 and v4 (common/hot.h).
 * The SDDMM and SpMM loops (DIT_HOT_FUSED) contract a * b + c into one fused multiply-add
 * in the clones for CPUs with FMA (v3, v4) and not in the default clone, as nn.c's
 * NN_HOT_FUSED reference rows do, so kernel and reference pick the same arithmetic on every
 * CPU; everything else keeps -std=c11's -ffp-contract=off. [decision: speed: 5-6% of the
 * masked kernel at 512 px on a Zen 3 core, docs/performance.md]
 */
#define DIT_HOT HOT_CLONES
#define DIT_HOT_FUSED HOT_CLONES_FUSED

/* Per-worker column indices of the row kernels: DIT_REUSE_ROWS lists of N, slack for the
 * 16-wide stores of row_list, and DIT_REUSE_ROWS arrays of tile starts. */
static size_t tpos_len(size_t N)
{
    return N / 64 + 2;
}

static size_t widx_len(size_t N)
{
    return DIT_REUSE_ROWS * (N + tpos_len(N)) + 16;
}

/* The word w of a mask row with the columns at or past n cleared. */
static inline uint64_t mask_word(const uint64_t *mask_row, size_t w, int n)
{
    uint64_t bits = mask_row[w];
    size_t hi = (w + 1) * 64;
    if (hi > (size_t)n)
        bits &= ~0ull >> (hi - (size_t)n);
    return bits;
}

/* The set bits of each byte value, ascending, as bit offsets (the unused ones 0), built at
 * compile time: offset k of byte b is the bit i that is set with k set bits below it. */
#define BC_POP(x)                                                                                  \
    (((x)&1) + ((x) >> 1 & 1) + ((x) >> 2 & 1) + ((x) >> 3 & 1) + ((x) >> 4 & 1) +                 \
     ((x) >> 5 & 1) + ((x) >> 6 & 1) + ((x) >> 7 & 1))
#define BC_AT(b, i, k) ((i) * ((b) >> (i)&1 && BC_POP((b) & ((1 << (i)) - 1)) == (k)))
#define BC_POS(b, k)                                                                               \
    (BC_AT(b, 1, k) + BC_AT(b, 2, k) + BC_AT(b, 3, k) + BC_AT(b, 4, k) + BC_AT(b, 5, k) +          \
     BC_AT(b, 6, k) + BC_AT(b, 7, k))
#define BC_ROW(b)                                                                                  \
    {                                                                                              \
        BC_POS(b, 0), BC_POS(b, 1), BC_POS(b, 2), BC_POS(b, 3), BC_POS(b, 4), BC_POS(b, 5),        \
            BC_POS(b, 6), BC_POS(b, 7)                                                             \
    }
#define BC_ROW4(b) BC_ROW(b), BC_ROW((b) + 1), BC_ROW((b) + 2), BC_ROW((b) + 3)
#define BC_ROW16(b) BC_ROW4(b), BC_ROW4((b) + 4), BC_ROW4((b) + 8), BC_ROW4((b) + 12)
#define BC_ROW64(b) BC_ROW16(b), BC_ROW16((b) + 16), BC_ROW16((b) + 32), BC_ROW16((b) + 48)
static const uint8_t byte_cols[256][8] = {BC_ROW64(0), BC_ROW64(64), BC_ROW64(128), BC_ROW64(192)};
#undef BC_ROW64
#undef BC_ROW16
#undef BC_ROW4
#undef BC_ROW
#undef BC_POS
#undef BC_AT
#undef BC_POP

/* The column list of a mask row, a word at a time: put(bits, w, out) stores the columns of
 * word w's set bits (bits) ascending at out, in whole groups of eight or sixteen, and returns
 * their count; tpos gets each tile's start. Inlined into each CPU path with its own put. */
static inline __attribute__((always_inline)) size_t
list_words(const uint64_t *mask_row, int n, int32_t *idx, size_t wpt, uint32_t *tpos,
           size_t (*put)(uint64_t bits, size_t w, int32_t *out))
{
    size_t words = ((size_t)n + 63) / 64, cnt = 0;
    for (size_t w = 0; w < words; w++) {
        if (w % wpt == 0)
            tpos[w / wpt] = (uint32_t)cnt;
        cnt += put(mask_word(mask_row, w, n), w, idx + cnt);
    }
    tpos[(words + wpt - 1) / wpt] = (uint32_t)cnt;
    return cnt;
}

/* A word's columns in plain C from the byte table: eight stores a byte, no branch per entry. */
static inline __attribute__((always_inline)) size_t put_bytes(uint64_t bits, size_t w, int32_t *out)
{
    size_t c = 0;
    for (int part = 0; part < 8; part++) {
        unsigned b = (unsigned)(bits >> (8 * part)) & 0xffu;
        int32_t base = (int32_t)(w * 64 + 8 * (size_t)part);
        for (int k = 0; k < 8; k++)
            out[c + (size_t)k] = base + byte_cols[b][k];
        c += (size_t)__builtin_popcount(b);
    }
    return c;
}

#if defined(__GNUC__) && defined(__x86_64__) && defined(__linux__)
#include <immintrin.h>
#define DIT_LIST_X86 1
/* A word's columns with AVX-512 compress: sixteen a step. */
__attribute__((target("avx512f"), always_inline)) static inline size_t
put_avx512(uint64_t bits, size_t w, int32_t *out)
{
    __m512i col =
        _mm512_add_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                         _mm512_set1_epi32((int)(w * 64)));
    size_t c = 0;
    for (int part = 0; part < 4; part++) {
        __mmask16 m = (__mmask16)(bits >> (16 * part));
        _mm512_storeu_si512((void *)(out + c), _mm512_maskz_compress_epi32(m, col));
        c += (size_t)__builtin_popcount((unsigned)m);
        col = _mm512_add_epi32(col, _mm512_set1_epi32(16));
    }
    return c;
}

/* A word's columns with AVX2 from the byte table: eight a step. */
__attribute__((target("avx2"), always_inline)) static inline size_t put_avx2(uint64_t bits,
                                                                             size_t w, int32_t *out)
{
    __m256i base = _mm256_set1_epi32((int)(w * 64));
    size_t c = 0;
    for (int part = 0; part < 8; part++) {
        unsigned b = (unsigned)(bits >> (8 * part)) & 0xffu;
        __m128i off = _mm_loadl_epi64((const __m128i *)byte_cols[b]);
        _mm256_storeu_si256((__m256i *)(out + c),
                            _mm256_add_epi32(base, _mm256_cvtepu8_epi32(off)));
        c += (size_t)__builtin_popcount(b);
        base = _mm256_add_epi32(base, _mm256_set1_epi32(8));
    }
    return c;
}

__attribute__((target("avx512f"))) static size_t
row_list_avx512(const uint64_t *mask_row, int n, int32_t *idx, size_t wpt, uint32_t *tpos)
{
    return list_words(mask_row, n, idx, wpt, tpos, put_avx512);
}

__attribute__((target("avx2"))) static size_t
row_list_avx2(const uint64_t *mask_row, int n, int32_t *idx, size_t wpt, uint32_t *tpos)
{
    return list_words(mask_row, n, idx, wpt, tpos, put_avx2);
}
#endif

/* The path the kernels take (dit_list_path; tests): the CPU's best, or a slower one forced. */
static enum dit_list_path list_path = DIT_LIST_BEST;

/* The path taken on this CPU for the setting `path`. */
static enum dit_list_path resolve_path(enum dit_list_path path)
{
#ifdef DIT_LIST_X86
    if (path != DIT_LIST_BYTES && path != DIT_LIST_AVX2 && __builtin_cpu_supports("avx512f"))
        return DIT_LIST_AVX512;
    if (path != DIT_LIST_BYTES && __builtin_cpu_supports("avx2"))
        return DIT_LIST_AVX2;
#endif
    (void)path;
    return DIT_LIST_BYTES;
}

enum dit_list_path dit_set_list_path(enum dit_list_path path)
{
    list_path = path;
    return resolve_path(path);
}

/*
 * The set columns of a mask row below n, ascending, into idx; their count, by path (a
 * resolve_path result). tpos[t] is the number of entries before tile t (tiles of wpt words),
 * for t up to the number of tiles, whose entry is the count. Each path stores whole groups of
 * indices (8 or 16) from idx + cnt, so up to fifteen past the list (widx_len's slack).
 */
static size_t row_list(enum dit_list_path path, const uint64_t *mask_row, int n, int32_t *idx,
                       size_t wpt, uint32_t *tpos)
{
#ifdef DIT_LIST_X86
    if (path == DIT_LIST_AVX512)
        return row_list_avx512(mask_row, n, idx, wpt, tpos);
    if (path == DIT_LIST_AVX2)
        return row_list_avx2(mask_row, n, idx, wpt, tpos);
#endif
    (void)path;
    return list_words(mask_row, n, idx, wpt, tpos, put_bytes);
}

/* nn_dot's order: eight partial sums, combined as ((0+4)+(1+5))+((2+6)+(3+7)), then the tail. */
static inline float dot_fixed(const float *a, const float *b, int n)
{
    float p[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++)
            p[j] += a[i + j] * b[i + j];
    float t = ((p[0] + p[4]) + (p[1] + p[5])) + ((p[2] + p[6]) + (p[3] + p[7]));
    for (; i < n; i++)
        t += a[i] * b[i];
    return t;
}

/* Lanes 0-3 of a and of b, then lanes 4-7 of a and of b, pairwise summed:
 * {a0+a4, a1+a5, a2+a6, a3+a7, b0+b4, b1+b5, b2+b6, b3+b7}. */
static inline __attribute__((always_inline)) v8f fold_halves(v8f a, v8f b)
{
    return __builtin_shufflevector(a, b, 0, 1, 2, 3, 8, 9, 10, 11) +
           __builtin_shufflevector(a, b, 4, 5, 6, 7, 12, 13, 14, 15);
}

/* Adjacent lanes summed, a's pairs then b's, per 128-bit half:
 * {a0+a1, a2+a3, b0+b1, b2+b3, a4+a5, a6+a7, b4+b5, b6+b7}. */
static inline __attribute__((always_inline)) v8f pair_sums(v8f a, v8f b)
{
    return __builtin_shufflevector(a, b, 0, 2, 8, 10, 4, 6, 12, 14) +
           __builtin_shufflevector(a, b, 1, 3, 9, 11, 5, 7, 13, 15);
}

/* The eight scores of accumulators a[0..8), each combined as nn_dot does
 * (((p0+p4)+(p1+p5))+((p2+p6)+(p3+p7))), in key order: a transpose of adds, with no
 * horizontal reduction per key. */
static inline __attribute__((always_inline)) v8f combine8x8(const v8f *a)
{
    /* f01 = {x0(a0), x1(a0), x2(a0), x3(a0), x0(a1) ...} with x_l = p_l + p_{l+4} */
    v8f f01 = fold_halves(a[0], a[1]), f23 = fold_halves(a[2], a[3]);
    v8f f45 = fold_halves(a[4], a[5]), f67 = fold_halves(a[6], a[7]);
    /* u0 = {y0(a0), y1(a0), y0(a2), y1(a2), y0(a1), y1(a1), y0(a3), y1(a3)} with
     * y0 = x0 + x1, y1 = x2 + x3 */
    v8f u0 = pair_sums(f01, f23), u1 = pair_sums(f45, f67);
    /* {a0, a2, a4, a6, a1, a3, a5, a7} as y0 + y1 */
    v8f r = pair_sums(u0, u1);
    return __builtin_shufflevector(r, r, 0, 4, 1, 5, 2, 6, 3, 7);
}

/* e[t] = scale * q . k_idx[t] for a head dimension DH that is a multiple of 8 (a constant
 * where inlined): the query in registers, eight keys at a time. *mx is raised to the largest
 * score. */
static inline __attribute__((always_inline)) void sddmm_fixed(const float *q, const float *k,
                                                              const int DH, const int32_t *idx,
                                                              size_t cnt, float scale, float *e,
                                                              float *mx)
{
    v8f qv[16];
    for (int i = 0; i < DH / 8; i++)
        qv[i] = load8(q + 8 * i);
    const v8f sc = splat8(scale);
    v8f vmax = splat8(*mx);
    size_t t = 0;
    for (; t + 8 <= cnt; t += 8) {
        const float *kr[8];
        for (int j = 0; j < 8; j++)
            kr[j] = k + (size_t)idx[t + j] * DH;
        v8f a[8] = {{0}, {0}, {0}, {0}, {0}, {0}, {0}, {0}};
        for (int i = 0; i < DH / 8; i++)
            for (int j = 0; j < 8; j++)
                a[j] += qv[i] * load8(kr[j] + 8 * i);
        v8f y = combine8x8(a) * sc;
        memcpy(e + t, &y, sizeof y);
        vmax = select8(y > vmax, y, vmax); /* y > vmax is never true for a NaN */
    }
    if (t < cnt) {
        /* the last 1-7 keys as a group of eight, the missing ones repeating the last key
         * (the same score, so the maximum is unchanged); only the real scores are stored */
        const float *kr[8];
        for (int j = 0; j < 8; j++)
            kr[j] = k + (size_t)idx[t + j < cnt ? t + (size_t)j : cnt - 1] * DH;
        v8f a[8] = {{0}, {0}, {0}, {0}, {0}, {0}, {0}, {0}};
        for (int i = 0; i < DH / 8; i++)
            for (int j = 0; j < 8; j++)
                a[j] += qv[i] * load8(kr[j] + 8 * i);
        v8f y = combine8x8(a) * sc;
        memcpy(e + t, &y, (cnt - t) * sizeof(float));
        vmax = select8(y > vmax, y, vmax);
    }
    float m = *mx;
    for (int j = 0; j < 8; j++)
        m = vmax[j] > m ? vmax[j] : m;
    *mx = m;
}

/* o (DH) += sum_t w[t] v_idx[t], each column in list order, the output row in registers
 * while the list is walked. */
static inline __attribute__((always_inline)) void
spmm_fixed(const float *w, const int32_t *idx, size_t cnt, const float *v, const int DH, float *o)
{
    v8f acc[16];
    for (int c = 0; c < DH / 8; c++)
        acc[c] = load8(o + 8 * c);
    for (size_t t = 0; t < cnt; t++) {
        const float *vr = v + (size_t)idx[t] * DH;
        v8f wt = splat8(w[t]);
        for (int c = 0; c < DH / 8; c++)
            acc[c] += wt * load8(vr + 8 * c);
    }
    for (int c = 0; c < DH / 8; c++)
        memcpy(o + 8 * c, &acc[c], sizeof acc[c]);
}

/* e[t] = scale * q . k_idx[t] for t < cnt (k packed: rows of dh floats); *mx is raised to
 * the largest score. The multiply-adds are fused where the CPU has FMA (DIT_HOT_FUSED), as
 * in nn_sddmm_row. */
DIT_HOT_FUSED static void sddmm_list(const float *q, const float *k, int dh, const int32_t *idx,
                                     size_t cnt, float scale, float *e, float *mx)
{
    switch (dh) {
    case 16:
        sddmm_fixed(q, k, 16, idx, cnt, scale, e, mx);
        return;
    case 64:
        sddmm_fixed(q, k, 64, idx, cnt, scale, e, mx);
        return;
    case 72:
        sddmm_fixed(q, k, 72, idx, cnt, scale, e, mx);
        return;
    default:
        for (size_t t = 0; t < cnt; t++) {
            e[t] = scale * dot_fixed(q, k + (size_t)idx[t] * (size_t)dh, dh);
            *mx = e[t] > *mx ? e[t] : *mx;
        }
    }
}

/* o (dh) += sum_t w[t] v_idx[t] over the cnt listed entries (v packed: rows of dh floats),
 * each column in list order; the multiply-adds fused as in nn_attention_row_sparse. */
DIT_HOT_FUSED static void spmm_list(const float *w, const int32_t *idx, size_t cnt, const float *v,
                                    int dh, float *restrict o)
{
    switch (dh) {
    case 16:
        spmm_fixed(w, idx, cnt, v, 16, o);
        break;
    case 64:
        spmm_fixed(w, idx, cnt, v, 64, o);
        break;
    case 72:
        spmm_fixed(w, idx, cnt, v, 72, o);
        break;
    default:
        for (size_t t = 0; t < cnt; t++) {
            const float *restrict vr = v + (size_t)idx[t] * (size_t)dh;
            for (int c = 0; c < dh; c++)
                o[c] += w[t] * vr[c];
        }
    }
}

/* Columns of one K/V tile, a multiple of 64: its K rows (dh floats each) fill about 32 KiB, a
 * core's L1 data cache, while DIT_REUSE_ROWS query rows use them in the SDDMM, and so do its V
 * rows in the SpMM (16, 64 and 256 KiB measured 10% slower or no faster at 512 px;
 * docs/performance.md). */
static int tile_cols(int dh)
{
    int w = (32 * 1024 / (4 * dh)) & ~63;
    return w < 64 ? 64 : w;
}

/* The lists of one worker's block of rows: DIT_REUSE_ROWS column lists of N, the tile
 * starts of each row (tpos + i * tpos_len(N)), the scores (e + i * N). */
struct row_lists {
    size_t N;
    enum dit_list_path path; /* resolved once per kernel call */
    int W;                   /* tile width in columns, a multiple of 64 */
    size_t ntile;            /* tiles in a row */
    int32_t *idx;            /* + i * N */
    uint32_t *tpos;          /* + i * tpos_len(N) */
    float *e;                /* + i * N */
    size_t cnt[DIT_REUSE_ROWS];
    float mx[DIT_REUSE_ROWS]; /* row maxima of e, or NAN where not known */
};

static void row_lists_init(struct row_lists *L, const struct dit_model *m, int worker, size_t N,
                           int dh)
{
    L->N = N;
    L->path = resolve_path(list_path);
    L->W = tile_cols(dh);
    L->ntile = (N + (size_t)L->W - 1) / (size_t)L->W;
    L->idx = m->widx + (size_t)worker * widx_len(N);
    L->tpos = (uint32_t *)(L->idx + DIT_REUSE_ROWS * N + 16);
    L->e = m->wscratch + (size_t)worker * (DIT_REUSE_ROWS + 1) * N + N;
}

/* Row i's list from its mask row. */
static void row_lists_set(struct row_lists *L, size_t i, const uint64_t *mask_row)
{
    L->cnt[i] = row_list(L->path, mask_row, (int)L->N, L->idx + i * L->N, (size_t)L->W / 64,
                         L->tpos + i * tpos_len(L->N));
}

/*
 * The softmax and SpMM of nr rows at once: row i has L->cnt[i] list entries (scores
 * overwritten by the weights) and its output at orow[i]. Each row's output is summed from
 * zero in list order and scaled by 1/sum, as nn_attention_row_sparse does, but the lists are
 * walked tile by tile (every row's entries of a V tile before the next tile), so a tile of V
 * is read from memory once for all the rows.
 */
static void softmax_spmm_block(struct row_lists *L, size_t nr, const float *v, int dh,
                               float *const *orow)
{
    size_t N = L->N;
    float sum[DIT_REUSE_ROWS];
    for (size_t i = 0; i < nr; i++) {
        for (int c = 0; c < dh; c++)
            orow[i][c] = 0.0f;
        float *ei = L->e + i * N;
        sum[i] = !L->cnt[i]        ? 0.0f
                 : isnan(L->mx[i]) ? nn_softmax_list(ei, L->cnt[i])
                                   : nn_softmax_list_max(ei, L->cnt[i], L->mx[i]);
    }
    for (size_t t = 0; t < L->ntile; t++)
        for (size_t i = 0; i < nr; i++) {
            const uint32_t *tp = L->tpos + i * tpos_len(N);
            spmm_list(L->e + i * N + tp[t], L->idx + i * N + tp[t], tp[t + 1] - tp[t], v, dh,
                      orow[i]);
        }
    for (size_t i = 0; i < nr; i++) {
        if (!L->cnt[i])
            continue;
        float inv = 1.0f / sum[i];
        for (int c = 0; c < dh; c++)
            orow[i][c] *= inv;
    }
}

/* Generation rows (docs/disc.md#st-masks): the mask row from P, then the renormalised PV over it
 * from the scores, DIT_REUSE_ROWS rows at a time. */
static void gen_rows(void *vctx, size_t begin, size_t end, int worker)
{
    struct gen_ctx *g = vctx;
    size_t N = (size_t)g->N;
    float *p = g->m->wscratch + (size_t)worker * (DIT_REUSE_ROWS + 1) * N;
    float *orow[DIT_REUSE_ROWS];
    struct row_lists L;
    row_lists_init(&L, g->m, worker, N, g->dh);
    for (size_t r0 = begin; r0 < end; r0 += DIT_REUSE_ROWS) {
        size_t nr = end - r0 < DIT_REUSE_ROWS ? end - r0 : DIT_REUSE_ROWS;
        for (size_t i = 0; i < nr; i++) {
            const float *s = g->s + (r0 + i) * N;
            int row = g->row0 + (int)(r0 + i);
            int tok = g->kept ? g->kept[row] : row;
            uint64_t *mr = g->mask + (size_t)tok * g->words;
            dit_st_generate_row(s, g->N, g->theta, mr, p);
            row_lists_set(&L, i, mr);
            const int32_t *idx = L.idx + i * N;
            float *e = L.e + i * N;
            for (size_t t = 0; t < L.cnt[i]; t++)
                e[t] = s[idx[t]];
            L.mx[i] = NAN;
            orow[i] = g->o + (size_t)row * g->d;
        }
        softmax_spmm_block(&L, nr, g->v, g->dh, orow);
    }
}

/* One head of the reuse path: its query and output rows, mask rows and packed K and V. */
struct reuse_head {
    const float *q;       /* row stride d */
    float *o;             /* row stride d */
    const uint64_t *mask; /* (N, words) */
    const float *k, *v;   /* (N, dh) packed */
};

/*
 * Reuse rows (docs/disc.md#st-masks): s_ij only where M_ij = 1 (SDDMM), sparse softmax, SpMM,
 * for up to DIT_REUSE_ROWS query rows at once. Each row's mask becomes its column list; the
 * SDDMM and the SpMM then walk the columns tile by tile (every row's entries of a tile
 * before the next tile), so a tile of K or V is read from memory once for all the rows. Per
 * row the order of work is that of the single-row kernel (ascending columns), so the bits
 * are too. The SDDMM also finds each row's largest score, which the softmax then skips.
 */
static void reuse_block(const struct dit_reuse_ctx *g, const struct reuse_head *hd,
                        struct row_lists *L, size_t r0, size_t nr)
{
    size_t N = L->N;
    float *orow[DIT_REUSE_ROWS];
    for (size_t i = 0; i < nr; i++) {
        size_t r = r0 + i;
        int tok = g->kept ? g->kept[r] : (int)r;
        row_lists_set(L, i, hd->mask + (size_t)tok * g->words);
        L->mx[i] = -INFINITY;
        orow[i] = hd->o + r * (size_t)g->d;
    }
    /* a row's entries of tile t from where the row stopped, rounded up to whole groups of
     * eight keys (running a few keys into the next tile), so only a row's last group is a
     * partial one */
    size_t pos[DIT_REUSE_ROWS] = {0};
    for (size_t t = 0; t < L->ntile; t++)
        for (size_t i = 0; i < nr; i++) {
            const uint32_t *tp = L->tpos + i * tpos_len(N);
            size_t a = pos[i], end = tp[t + 1];
            if (end <= a)
                continue;
            size_t n = (end - a + 7) & ~(size_t)7;
            n = a + n > L->cnt[i] ? L->cnt[i] - a : n;
            sddmm_list(hd->q + (r0 + i) * (size_t)g->d, hd->k, g->dh, L->idx + i * N + a, n,
                       g->scale, L->e + i * N + a, &L->mx[i]);
            pos[i] = a + n;
        }
    softmax_spmm_block(L, nr, hd->v, g->dh, orow);
}

/* K and V rows [begin, end) of one head (dh floats each, at row stride ld) into kp and vp. */
static void pack_kv_rows(const float *k, const float *v, size_t ld, size_t dh, float *kp, float *vp,
                         size_t begin, size_t end)
{
    for (size_t j = begin; j < end; j++) {
        memcpy(kp + j * dh, k + j * ld, dh * sizeof(float));
        memcpy(vp + j * dh, v + j * ld, dh * sizeof(float));
    }
}

struct reuse_run {
    const struct dit_reuse_ctx *g;
    size_t rows, blocks; /* query rows, and blocks of DIT_REUSE_ROWS of them */
    unsigned workers;
    struct pool_barrier bar;
    atomic_size_t next; /* blocks claimed, over all heads */
};

/*
 * One worker's part of every head, in phases: pack its share of the head's K and V rows;
 * wait for the others; take blocks of query rows from the shared counter until the head has
 * none left; wait again (the next head's packing overwrites K and V). A head takes exactly
 * blocks + workers claims (each worker's last one finds it empty), so head h's claims start
 * at h * (blocks + workers). Each row's result depends on its row alone, so the bits do not
 * depend on which worker takes it.
 */
static void reuse_worker(void *vctx, size_t begin, size_t end, int worker)
{
    struct reuse_run *run = vctx;
    const struct dit_reuse_ctx *g = run->g;
    (void)begin, (void)end;
    size_t N = (size_t)g->N, dh = (size_t)g->dh, w = (size_t)worker;
    struct row_lists L;
    row_lists_init(&L, g->m, worker, N, g->dh);
    for (int h = 0; h < g->heads; h++) {
        size_t off = (size_t)h * dh;
        pack_kv_rows(g->k + off, g->v + off, (size_t)g->d, dh, g->kp, g->vp, N * w / run->workers,
                     N * (w + 1) / run->workers);
        pool_barrier_wait(&run->bar);
        struct reuse_head hd = {g->q + off, g->o + off, g->mask + (size_t)h * N * g->words, g->kp,
                                g->vp};
        size_t base = (size_t)h * (run->blocks + run->workers);
        for (;;) {
            size_t b = atomic_fetch_add_explicit(&run->next, 1, memory_order_relaxed) - base;
            if (b >= run->blocks)
                break;
            size_t r0 = b * DIT_REUSE_ROWS;
            reuse_block(g, &hd, &L, r0,
                        run->rows - r0 < DIT_REUSE_ROWS ? run->rows - r0 : DIT_REUSE_ROWS);
        }
        pool_barrier_wait(&run->bar);
    }
}

void dit_attn_reuse(struct thread_pool *pool, const struct dit_reuse_ctx *g, size_t rows)
{
    struct reuse_run run = {.g = g,
                            .rows = rows,
                            .blocks = (rows + DIT_REUSE_ROWS - 1) / DIT_REUSE_ROWS,
                            .workers = (unsigned)pool_size(pool)};
    pool_barrier_init(&run.bar, pool);
    atomic_init(&run.next, 0);
    if (run.workers > 1)
        pool_for(pool, run.workers, reuse_worker, &run);
    else
        reuse_worker(&run, 0, 1, 0);
}

struct pack_ctx {
    const float *v;
    float *vp;
    size_t dh, ld;
};

static void pack_v_rows(void *vctx, size_t begin, size_t end, int worker)
{
    const struct pack_ctx *c = vctx;
    (void)worker;
    for (size_t j = begin; j < end; j++)
        memcpy(c->vp + j * c->dh, c->v + j * c->ld, c->dh * sizeof(float));
}

/* One head's V rows (dh floats each, at row stride ld) packed into vp, the rows split over the
 * pool: the generation path's SpMM reads them by column list (its scores come from BLAS). */
static void pack_v(struct thread_pool *pool, int N, int dh, const float *v, int ld, float *vp)
{
    struct pack_ctx c = {v, vp, (size_t)dh, (size_t)ld};
    dit_run_rows(pool, (size_t)N, pack_v_rows, &c);
}

void dit_run_rows(struct thread_pool *pool, size_t n, pool_fn fn, void *ctx)
{
    if (pool && pool_size(pool) > 1 && n > 1)
        pool_for(pool, n, fn, ctx);
    else
        fn(ctx, 0, n, 0);
}

static void softmax_task(void *vctx, size_t begin, size_t end, int worker)
{
    struct dit_rows_ctx *c = vctx;
    (void)worker;
    nn_softmax_rows(c->x + begin * (size_t)c->ld, (int)(end - begin), c->cols, c->ld);
}

/*
 * Dense attention of one head for `rows` queries against n_k keys, as nn_attention (same
 * kernels and order) but with the softmax rows split over the pool: S = scale Q K^T by
 * BLAS, softmax per row, O = P V by BLAS. scratch holds rows * n_k floats.
 */
void dit_attn_dense(struct thread_pool *pool, int rows, int n_k, int dh, const float *q, int ldq,
                    const float *k, int ldk, const float *v, int ldv, float *o, int ldo,
                    float scale, float *scratch)
{
    nn_sgemm(true, rows, n_k, dh, scale, q, ldq, k, ldk, 0.0f, scratch, n_k);
    struct dit_rows_ctx c = {scratch, n_k, n_k};
    dit_run_rows(pool, (size_t)rows, softmax_task, &c);
    nn_sgemm(false, rows, dh, n_k, 1.0f, scratch, n_k, v, ldv, 0.0f, o, ldo);
}

size_t dit_wscratch_elems(size_t N)
{
    return (DIT_REUSE_ROWS + 1) * N + widx_len(N);
}

int dit_ensure_wscratch(struct dit_model *m, struct thread_pool *pool)
{
    int w = pool ? pool_size(pool) : 1;
    if (m->wscratch && m->wscratch_workers >= w)
        return 0;
    mem_free(m->wscratch);
    mem_free(m->widx);
    m->wscratch =
        mem_alloc((size_t)w * (DIT_REUSE_ROWS + 1) * (size_t)m->cfg.tokens * sizeof(float));
    m->widx = mem_alloc((size_t)w * widx_len((size_t)m->cfg.tokens) * sizeof(int32_t));
    m->wscratch_workers = m->wscratch && m->widx ? w : 0;
    return m->wscratch && m->widx ? 0 : ERR_NOMEM;
}

/* Pooled nnz over rows of the probability store for theta = alpha/N, after the argmax
 * rule (docs/disc.md#st-masks, --st-target). */
static uint64_t store_nnz(const float *store, size_t rows, int N, float theta)
{
    uint64_t nnz = 0;
    for (size_t r = 0; r < rows; r++) {
        const float *p = store + r * (size_t)N;
        uint64_t c = 0;
        for (int j = 0; j < N; j++)
            c += p[j] >= theta;
        nnz += c ? c : 1;
    }
    return nnz;
}

static float bits_to_float(uint32_t b)
{
    float f;
    memcpy(&f, &b, 4);
    return f;
}

static uint32_t float_to_bits(float f)
{
    uint32_t b;
    memcpy(&b, &f, 4);
    return b;
}

/* Self-attention core of one block for every batch element and head (docs/disc.md#forward-pass,
 * docs/disc.md#st-masks): Q (B, nk, d) in m->q, K and V (B, N, d) in m->kk / m->vv; output (B, nk,
 * d) in m->o. */
int dit_self_attention(struct dit_model *m, struct dit_state *s, int blk, const struct dit_fwd *f)
{
    const struct dit_config *c = &m->cfg;
    int N = c->tokens, d = c->hidden, H = c->heads, dh = c->head_dim, nk = f->n_kept;
    int B = s->n_batch;
    size_t bstride = (size_t)N * d;
    float scale = (float)(1.0 / sqrt((double)dh));
    size_t chunk = DIT_SCORE_CHUNK_FLOATS / (size_t)N;
    if (chunk < 1)
        chunk = 1;
    if (nk == 0)
        return 0;
    bool st = s->st && f->st != DIT_ST_OFF;
    float theta = st && f->theta ? f->theta[blk] : 0.0f;
    if (st && f->st == DIT_ST_GENERATE && f->st_target >= 0.0) {
        /* Pass 1: P of every computed row of every (batch, head) of this block. */
        size_t rows = (size_t)B * H * nk;
        if (!m->store) {
            m->store = mem_alloc((size_t)B * H * (size_t)N * N * sizeof(float));
            if (!m->store)
                return errmsg_set(&m->err, ERR_NOMEM, "out of memory for the st-target store");
        }
        for (int b = 0; b < B; b++)
            for (int h = 0; h < H; h++) {
                float *p = m->store + ((size_t)b * H + h) * (size_t)nk * N;
                nn_sgemm(true, nk, N, dh, scale, m->q + b * bstride + (size_t)h * dh, d,
                         m->kk + b * bstride + (size_t)h * dh, d, 0.0f, p, N);
                nn_softmax_rows(p, nk, N, N);
            }
        /* The smallest FP32 alpha in [0, N] whose pooled sparsity reaches the target, by
         * bisection on the bit pattern (docs/disc.md#st-masks); sparsity in double. */
        float fN = (float)N;
        double total = (double)rows * N;
        uint32_t lo = 0, hi = float_to_bits(fN);
        if (1.0 - (double)store_nnz(m->store, rows, N, fN / fN) / total < f->st_target) {
            lo = hi;
            if (f->short_out)
                f->short_out[blk] = true;
        } else {
            while (lo < hi) {
                uint32_t mid = lo + (hi - lo) / 2;
                uint64_t nnz = store_nnz(m->store, rows, N, bits_to_float(mid) / fN);
                if (1.0 - (double)nnz / total >= f->st_target)
                    hi = mid;
                else
                    lo = mid + 1;
            }
        }
        float alpha = bits_to_float(lo);
        theta = alpha / fN;
        if (f->alpha_out)
            f->alpha_out[blk] = alpha;
        if (f->theta_out)
            f->theta_out[blk] = theta;
    }
    for (int b = 0; b < B; b++) {
        uint64_t *grp = NULL;
        if (st) {
            int rc = dit_state_mask_group(s, b, blk, &grp);
            if (rc)
                return errmsg_set(&m->err, rc, "%s", errmsg_text(&s->err));
        }
        /* K and V rows are packed per head (dh floats each) for the row kernels: the
         * per-entry SDDMM and SpMM read them by column list, and rows at the activations'
         * stride (d floats) cost about a third more time in cache misses
         * (docs/performance.md); values and order are unchanged. */
        float *kp = m->kvpack, *vp = m->kvpack + (size_t)N * dh;
        if (st && f->st != DIT_ST_GENERATE) {
            struct dit_reuse_ctx g = {.m = m,
                                      .kept = f->kept,
                                      .mask = grp,
                                      .words = s->words,
                                      .q = m->q + b * bstride,
                                      .k = m->kk + b * bstride,
                                      .v = m->vv + b * bstride,
                                      .o = m->o + b * bstride,
                                      .d = d,
                                      .dh = dh,
                                      .N = N,
                                      .heads = H,
                                      .scale = scale,
                                      .kp = kp,
                                      .vp = vp};
            dit_attn_reuse(f->pool, &g, (size_t)nk);
            continue;
        }
        for (int h = 0; h < H; h++) {
            const float *qh = m->q + b * bstride + (size_t)h * dh;
            const float *kh = m->kk + b * bstride + (size_t)h * dh;
            const float *vh = m->vv + b * bstride + (size_t)h * dh;
            float *oh = m->o + b * bstride + (size_t)h * dh;
            if (!st) {
                for (size_t r0 = 0; r0 < (size_t)nk; r0 += chunk) {
                    int rows = (int)((size_t)nk - r0 < chunk ? (size_t)nk - r0 : chunk);
                    dit_attn_dense(f->pool, rows, N, dh, qh + r0 * d, d, kh, d, vh, d, oh + r0 * d,
                                   d, scale, m->scores);
                }
                continue;
            }
            pack_v(f->pool, N, dh, vh, d, vp);
            uint64_t *mask = grp + (size_t)h * N * s->words;
            s->mdirty = true;
            for (size_t r0 = 0; r0 < (size_t)nk; r0 += chunk) {
                int rows = (int)((size_t)nk - r0 < chunk ? (size_t)nk - r0 : chunk);
                nn_sgemm(true, rows, N, dh, scale, qh + r0 * d, d, kh, d, 0.0f, m->scores, N);
                struct gen_ctx g = {m,     m->scores, (int)r0, f->kept, mask, s->words,
                                    theta, vp,        oh,      d,       dh,   N};
                dit_run_rows(f->pool, (size_t)rows, gen_rows, &g);
            }
        }
    }
    return 0;
}
