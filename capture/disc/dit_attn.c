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
 * softmax weights by nn_softmax_list, each output column summed in ascending column order),
 * so both kernels give the same bits (tests/test_disc_dit.c). Speed comes from the order of
 * work, not from other arithmetic: four dot products at a time (four independent add chains
 * instead of one), the query row and the output row held in vector registers for the head
 * dimensions of the shipped configs (16, 64, 72), and the vectorised exp on the list. A
 * blocked (tile) layout was not taken: at the measured densities (40% kept at sparsity 0.6)
 * 97.8% of the 8 x 8 tiles hold a set entry, so skipping empty tiles would skip almost
 * nothing (docs/performance.md). Compiled again for x86-64-v3 and v4 like nn.c's hot loops;
 * no FMA contraction (-std=c11).
 */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__) &&       \
    !defined(__SANITIZE_ADDRESS__)
#define DIT_HOT                                                                                    \
    __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"), optimize("O3")))
#else
#define DIT_HOT
#endif

/* Eight floats as one value (GCC and Clang vector extension); lanes are the eight partial
 * sums of the dot product, or eight output columns. */
typedef float v8f __attribute__((vector_size(32)));
#if defined(__GNUC__) && !defined(__clang__)
/* the helpers below pass v8f by value only between static inline functions, so the note
 * about the AVX argument ABI does not apply */
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

static inline __attribute__((always_inline)) v8f load8(const float *p)
{
    v8f v;
    memcpy(&v, p, sizeof v);
    return v;
}

typedef float v4f __attribute__((vector_size(16)));

/* {p0+p4, p1+p5, p2+p6, p3+p7} */
static inline __attribute__((always_inline)) v4f half_sum(const v8f *pp)
{
    v8f p = *pp;
    v4f lo = __builtin_shufflevector(p, p, 0, 1, 2, 3),
        hi = __builtin_shufflevector(p, p, 4, 5, 6, 7);
    return lo + hi;
}

/* {a0+a1, a2+a3, b0+b1, b2+b3} (a horizontal add) */
static inline __attribute__((always_inline)) v4f pair_add(v4f a, v4f b)
{
    return __builtin_shufflevector(a, b, 0, 2, 4, 6) + __builtin_shufflevector(a, b, 1, 3, 5, 7);
}

/* The eight partial sums combined as nn_dot does: ((0+4)+(1+5))+((2+6)+(3+7)). */
static inline __attribute__((always_inline)) float combine8(const v8f *v)
{
    return (((*v)[0] + (*v)[4]) + ((*v)[1] + (*v)[5])) +
           (((*v)[2] + (*v)[6]) + ((*v)[3] + (*v)[7]));
}

/* The set columns of a mask row below n, ascending, into idx; their count. */
static size_t row_index(const uint64_t *mask_row, int n, int32_t *idx)
{
    size_t words = ((size_t)n + 63) / 64, cnt = 0;
    for (size_t w = 0; w < words; w++) {
        uint64_t bits = mask_row[w];
        while (bits) {
            int j = (int)(w * 64 + (size_t)__builtin_ctzll(bits));
            bits &= bits - 1;
            if (j >= n)
                break;
            idx[cnt++] = j;
        }
    }
    return cnt;
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

/* The rows of list entries this far ahead are prefetched: their addresses are known from the
 * list, which the hardware prefetcher cannot follow. */
#define DIT_PREFETCH_AHEAD 8

static inline __attribute__((always_inline)) void prefetch_row(const float *r, int n)
{
    for (int i = 0; i < n; i += 16)
        __builtin_prefetch(r + i);
}

/* e[t] = scale * q . k_idx[t] for a head dimension DH that is a multiple of 8 (a constant
 * where inlined): the query in registers, four keys at a time. */
static inline __attribute__((always_inline)) void sddmm_fixed(const float *q, const float *k,
                                                              const int DH, const int32_t *idx,
                                                              size_t cnt, float scale, float *e)
{
    v8f qv[16];
    for (int i = 0; i < DH / 8; i++)
        qv[i] = load8(q + 8 * i);
    size_t t = 0;
    for (; t + 4 <= cnt; t += 4) {
        if (t + DIT_PREFETCH_AHEAD + 4 <= cnt)
            for (int j = 0; j < 4; j++)
                prefetch_row(k + (size_t)idx[t + DIT_PREFETCH_AHEAD + j] * DH, DH);
        const float *k0 = k + (size_t)idx[t] * DH, *k1 = k + (size_t)idx[t + 1] * DH;
        const float *k2 = k + (size_t)idx[t + 2] * DH, *k3 = k + (size_t)idx[t + 3] * DH;
        v8f a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
        for (int i = 0; i < DH / 8; i++) {
            a0 += qv[i] * load8(k0 + 8 * i);
            a1 += qv[i] * load8(k1 + 8 * i);
            a2 += qv[i] * load8(k2 + 8 * i);
            a3 += qv[i] * load8(k3 + 8 * i);
        }
        /* lo + hi halves, then three pairwise adds: each score is
         * ((p0+p4)+(p1+p5))+((p2+p6)+(p3+p7)), four scores in one vector */
        v4f y0 = half_sum(&a0), y1 = half_sum(&a1), y2 = half_sum(&a2), y3 = half_sum(&a3);
        v4f h01 = pair_add(y0, y1), h23 = pair_add(y2, y3);
        v4f sc = pair_add(h01, h23) * (v4f){scale, scale, scale, scale};
        memcpy(e + t, &sc, sizeof sc);
    }
    for (; t < cnt; t++) {
        const float *kr = k + (size_t)idx[t] * DH;
        v8f a = {0};
        for (int i = 0; i < DH / 8; i++)
            a += qv[i] * load8(kr + 8 * i);
        e[t] = scale * combine8(&a);
    }
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
        if (t + DIT_PREFETCH_AHEAD < cnt)
            prefetch_row(v + (size_t)idx[t + DIT_PREFETCH_AHEAD] * DH, DH);
        const float *vr = v + (size_t)idx[t] * DH;
        v8f wt = {w[t], w[t], w[t], w[t], w[t], w[t], w[t], w[t]};
        for (int c = 0; c < DH / 8; c++)
            acc[c] += wt * load8(vr + 8 * c);
    }
    for (int c = 0; c < DH / 8; c++)
        memcpy(o + 8 * c, &acc[c], sizeof acc[c]);
}

/* e[t] = scale * q . k_idx[t] for t < cnt (k rows packed, stride dh). */
DIT_HOT static void sddmm_list(const float *q, const float *k, int dh, const int32_t *idx,
                               size_t cnt, float scale, float *e)
{
    switch (dh) {
    case 16:
        sddmm_fixed(q, k, 16, idx, cnt, scale, e);
        return;
    case 64:
        sddmm_fixed(q, k, 64, idx, cnt, scale, e);
        return;
    case 72:
        sddmm_fixed(q, k, 72, idx, cnt, scale, e);
        return;
    default:
        for (size_t t = 0; t < cnt; t++)
            e[t] = scale * dot_fixed(q, k + (size_t)idx[t] * dh, dh);
    }
}

/* o (dh) += sum_t w[t] v_idx[t] over the cnt listed entries, each column in list order. */
DIT_HOT static void spmm_list(const float *w, const int32_t *idx, size_t cnt, const float *v,
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
            const float *restrict vr = v + (size_t)idx[t] * dh;
            for (int c = 0; c < dh; c++)
                o[c] += w[t] * vr[c];
        }
    }
}

/* Columns of one K/V tile: its K and V rows (dh floats each) fill about 256 KiB, so the
 * tile stays in the core's cache while DIT_REUSE_ROWS query rows use it. */
static int tile_cols(int dh)
{
    int w = (256 * 1024 / (8 * dh)) & ~63;
    return w < 64 ? 64 : w;
}

/* The list entries of one row below column c1, from *pos on; advances *pos to the end. */
static size_t tile_end(const int32_t *idx, size_t cnt, size_t pos, int c1)
{
    while (pos < cnt && idx[pos] < c1)
        pos++;
    return pos;
}

/*
 * The softmax and SpMM of nr rows at once: row i has cnt[i] list entries (columns idx + i N,
 * scores e + i N, overwritten by the weights) and its output at orow[i]. Each row's output is
 * summed from zero in list order and scaled by 1/sum, as nn_attention_row_sparse does, but the
 * lists are walked tile by tile (every row's entries of a V tile before the next tile), so a
 * tile of V is read from memory once for all the rows.
 */
static void softmax_spmm_block(size_t nr, const size_t *cnt, float *e, const int32_t *idx, size_t N,
                               const float *v, int dh, float *const *orow)
{
    size_t pos[DIT_REUSE_ROWS];
    float sum[DIT_REUSE_ROWS];
    int W = tile_cols(dh);
    for (size_t i = 0; i < nr; i++) {
        for (int c = 0; c < dh; c++)
            orow[i][c] = 0.0f;
        sum[i] = cnt[i] ? nn_softmax_list(e + i * N, cnt[i]) : 0.0f;
        pos[i] = 0;
    }
    for (size_t c0 = 0; c0 < N; c0 += (size_t)W)
        for (size_t i = 0; i < nr; i++) {
            size_t a = pos[i], b = tile_end(idx + i * N, cnt[i], a, (int)(c0 + (size_t)W));
            spmm_list(e + i * N + a, idx + i * N + a, b - a, v, dh, orow[i]);
            pos[i] = b;
        }
    for (size_t i = 0; i < nr; i++) {
        if (!cnt[i])
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
    size_t N = (size_t)g->N, cnt[DIT_REUSE_ROWS];
    float *p = g->m->wscratch + (size_t)worker * (DIT_REUSE_ROWS + 1) * N;
    float *e = p + N, *orow[DIT_REUSE_ROWS];
    int32_t *idx = g->m->widx + (size_t)worker * DIT_REUSE_ROWS * N;
    for (size_t r0 = begin; r0 < end; r0 += DIT_REUSE_ROWS) {
        size_t nr = end - r0 < DIT_REUSE_ROWS ? end - r0 : DIT_REUSE_ROWS;
        for (size_t i = 0; i < nr; i++) {
            const float *s = g->s + (r0 + i) * N;
            int row = g->row0 + (int)(r0 + i);
            int tok = g->kept ? g->kept[row] : row;
            uint64_t *mr = g->mask + (size_t)tok * g->words;
            dit_st_generate_row(s, g->N, g->theta, mr, p);
            cnt[i] = row_index(mr, g->N, idx + i * N);
            for (size_t t = 0; t < cnt[i]; t++)
                e[i * N + t] = s[idx[i * N + t]];
            orow[i] = g->o + (size_t)row * g->d;
        }
        softmax_spmm_block(nr, cnt, e, idx, N, g->v, g->dh, orow);
    }
}

/*
 * Reuse rows (docs/disc.md#st-masks): s_ij only where M_ij = 1 (SDDMM), sparse softmax, SpMM,
 * for up to DIT_REUSE_ROWS query rows at once. Each row's mask becomes its column list; the
 * SDDMM and the SpMM then walk the columns tile by tile (every row's entries of a tile
 * before the next tile), so a tile of K or V is read from memory once for all the rows. Per
 * row the order of work is that of the single-row kernel (ascending columns), so the bits
 * are too.
 */
static void reuse_block(const struct dit_reuse_ctx *g, size_t r0, size_t nr, float *e, int32_t *idx)
{
    size_t N = (size_t)g->N, cnt[DIT_REUSE_ROWS], pos[DIT_REUSE_ROWS];
    float *orow[DIT_REUSE_ROWS];
    int W = tile_cols(g->dh);
    for (size_t i = 0; i < nr; i++) {
        size_t r = r0 + i;
        int tok = g->kept ? g->kept[r] : (int)r;
        cnt[i] = row_index(g->mask + (size_t)tok * g->words, g->N, idx + i * N);
        pos[i] = 0;
        orow[i] = g->o + r * (size_t)g->d;
    }
    for (int c0 = 0; c0 < g->N; c0 += W)
        for (size_t i = 0; i < nr; i++) {
            size_t a = pos[i], b = tile_end(idx + i * N, cnt[i], a, c0 + W);
            sddmm_list(g->q + (r0 + i) * (size_t)g->d, g->k, g->dh, idx + i * N + a, b - a,
                       g->scale, e + i * N + a);
            pos[i] = b;
        }
    softmax_spmm_block(nr, cnt, e, idx, N, g->v, g->dh, orow);
}

static void reuse_rows(void *vctx, size_t begin, size_t end, int worker)
{
    struct dit_reuse_ctx *g = vctx;
    size_t N = (size_t)g->N;
    float *e = g->m->wscratch + (size_t)worker * (DIT_REUSE_ROWS + 1) * N;
    int32_t *idx = g->m->widx + (size_t)worker * DIT_REUSE_ROWS * N;
    for (size_t r = begin; r < end; r += DIT_REUSE_ROWS)
        reuse_block(g, r, end - r < DIT_REUSE_ROWS ? end - r : DIT_REUSE_ROWS, e, idx);
}

void dit_attn_reuse(struct thread_pool *pool, struct dit_reuse_ctx *g, size_t rows)
{
    dit_run_rows(pool, rows, reuse_rows, g);
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

int dit_ensure_wscratch(struct dit_model *m, struct thread_pool *pool)
{
    int w = pool ? pool_size(pool) : 1;
    if (m->wscratch && m->wscratch_workers >= w)
        return 0;
    mem_free(m->wscratch);
    mem_free(m->widx);
    m->wscratch =
        mem_alloc((size_t)w * (DIT_REUSE_ROWS + 1) * (size_t)m->cfg.tokens * sizeof(float));
    m->widx = mem_alloc((size_t)w * DIT_REUSE_ROWS * (size_t)m->cfg.tokens * sizeof(int32_t));
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
            /* Pack this head's K and V rows (dh floats each) so the per-entry SDDMM/SpMM
             * reads stay in cache; values and order are unchanged. */
            float *kp = m->kvpack, *vp = m->kvpack + (size_t)N * dh;
            for (int j = 0; j < N; j++) {
                memcpy(kp + (size_t)j * dh, kh + (size_t)j * d, (size_t)dh * sizeof(float));
                memcpy(vp + (size_t)j * dh, vh + (size_t)j * d, (size_t)dh * sizeof(float));
            }
            uint64_t *grp;
            int rc = dit_state_mask_group(s, b, blk, &grp);
            if (rc)
                return errmsg_set(&m->err, rc, "%s", errmsg_text(&s->err));
            uint64_t *mask = grp + (size_t)h * N * s->words;
            if (f->st == DIT_ST_GENERATE) {
                s->mdirty = true;
                for (size_t r0 = 0; r0 < (size_t)nk; r0 += chunk) {
                    int rows = (int)((size_t)nk - r0 < chunk ? (size_t)nk - r0 : chunk);
                    nn_sgemm(true, rows, N, dh, scale, qh + r0 * d, d, kh, d, 0.0f, m->scores, N);
                    struct gen_ctx g = {m,     m->scores, (int)r0, f->kept, mask, s->words,
                                        theta, vp,        oh,      d,       dh,   N};
                    dit_run_rows(f->pool, (size_t)rows, gen_rows, &g);
                }
            } else {
                struct dit_reuse_ctx g = {m,  f->kept, mask, s->words, qh, kp,
                                          vp, oh,      d,    dh,       N,  scale};
                dit_attn_reuse(f->pool, &g, (size_t)nk);
            }
        }
    }
    return 0;
}
