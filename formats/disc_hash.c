/*
 * disc_hash: DiSC hashes and one-pass load-balance statistics (docs/disc.md#load-balance-analyzer).
 */
#include "formats/disc_hash.h"

#include <math.h>
#include <string.h>

#include "common/err.h"
#include "common/mem.h"
#include "common/threads.h"

struct disc_lb {
    uint64_t n_cols;
    size_t words_per_row;
    uint32_t k_odd;
    int n_units;
    unsigned bits[DISC_LB_MAX_UNITS];
    int unit_of_bits[DISC_LB_MAX_BITS + 1]; /* position in the list, or -1 */
    unsigned b_max, b_min;
    uint64_t *range_lo;   /* [2^b_max + 1] first column of each range bucket at U = 2^b_max */
    uint64_t spread[256]; /* byte x -> 8 byte lanes holding its bits (positional counts) */
};

/* mod counts use positional (per-bit-position) SWAR counting up to this U; above it the
 * per-bit loop counts them */
#define SWAR_MAX_BITS 8
#define SWAR_SETS_MAX (1u << (SWAR_MAX_BITS - 6))

uint32_t disc_hash_mod(uint64_t j, unsigned b)
{
    /* docs/disc.md#load-balance-analyzer: mod = j & (U - 1) */
    return (uint32_t)(j & ((b >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << b)) - 1));
}

uint32_t disc_hash_mul(uint64_t j, unsigned b, uint32_t k_odd)
{
    /* docs/disc.md#load-balance-analyzer: ((uint32)(j k_odd)) >> (32 - b) (Knuth multiplicative
     * hashing) */
    uint32_t x = (uint32_t)(j * (uint64_t)k_odd);
    return b >= 32 ? x : x >> (32 - b);
}

uint32_t disc_hash_range(uint64_t j, unsigned b, uint64_t n_cols)
{
    /* docs/disc.md#load-balance-analyzer: floor(j U / n_cols) in 64-bit arithmetic */
    if (n_cols == 0)
        return 0;
    return (uint32_t)((j << b) / n_cols);
}

uint32_t disc_hash_apply(int kind, uint64_t j, unsigned b, uint64_t n_cols, uint32_t k_odd)
{
    switch (kind) {
    case DISC_HASH_MOD:
        return disc_hash_mod(j, b);
    case DISC_HASH_MUL:
        return disc_hash_mul(j, b, k_odd);
    default:
        return disc_hash_range(j, b, n_cols);
    }
}

static const char *const hash_names[DISC_HASH_KINDS] = {"mod", "mul", "range"};

const char *disc_hash_name(int kind)
{
    return kind >= 0 && kind < DISC_HASH_KINDS ? hash_names[kind] : "?";
}

int disc_hash_from_name(const char *name)
{
    for (int h = 0; h < DISC_HASH_KINDS; h++)
        if (name && strcmp(name, hash_names[h]) == 0)
            return h;
    return -1;
}

int disc_lb_bin(uint64_t zeros, uint64_t total)
{
    /* docs/disc.md#load-balance-analyzer: min(19, floor(20 zeros / total)) in integers, not
     * floor(20 s) in double. 20 * zeros cannot overflow for any mask that fits in memory. */
    if (total == 0)
        return -1;
    uint64_t b = (20 * zeros) / total;
    return b > DISC_LB_BINS - 1 ? DISC_LB_BINS - 1 : (int)b;
}

int disc_lb_new(struct disc_lb **out, uint64_t n_cols, uint32_t k_odd, const unsigned *bits,
                int n_units)
{
    *out = NULL;
    if (n_cols == 0 || n_units < 1 || n_units > DISC_LB_MAX_UNITS || (k_odd & 1u) == 0)
        return ERR_USAGE;
    if (n_cols > DISC_LB_MAX_COLS)
        return ERR_LIMIT;
    struct disc_lb *lb = mem_calloc(1, sizeof *lb);
    if (!lb)
        return ERR_NOMEM;
    lb->n_cols = n_cols;
    lb->words_per_row = (size_t)((n_cols + 63) / 64);
    lb->k_odd = k_odd;
    lb->n_units = n_units;
    for (int b = 0; b <= DISC_LB_MAX_BITS; b++)
        lb->unit_of_bits[b] = -1;
    lb->b_min = DISC_LB_MAX_BITS;
    for (int i = 0; i < n_units; i++) {
        unsigned b = bits[i];
        if (b < 1 || b > DISC_LB_MAX_BITS || lb->unit_of_bits[b] >= 0) {
            mem_free(lb);
            return ERR_USAGE;
        }
        lb->bits[i] = b;
        lb->unit_of_bits[b] = i;
        if (b > lb->b_max)
            lb->b_max = b;
        if (b < lb->b_min)
            lb->b_min = b;
    }
    /* range buckets are contiguous column intervals: bucket v = [lo[v], lo[v + 1]), with
     * lo[v] the smallest j whose floor(j U / n_cols) >= v, so one popcount per interval
     * replaces a per-bit lookup */
    const size_t ub = (size_t)1 << lb->b_max;
    lb->range_lo = mem_alloc((ub + 1) * sizeof *lb->range_lo);
    if (!lb->range_lo) {
        mem_free(lb);
        return ERR_NOMEM;
    }
    for (unsigned x = 0; x < 256; x++) {
        uint64_t y = 0;
        for (unsigned i = 0; i < 8; i++)
            y |= (uint64_t)((x >> i) & 1u) << (8 * i);
        lb->spread[x] = y;
    }
    for (size_t v = 0; v <= ub; v++) {
        /* ceil(v n_cols / U) */
        uint64_t lo = ((uint64_t)v * n_cols + ub - 1) >> lb->b_max;
        lb->range_lo[v] = lo > n_cols ? n_cols : lo;
    }
    *out = lb;
    return 0;
}

int disc_lb_new_std(struct disc_lb **out, uint64_t n_cols, uint32_t k_odd)
{
    unsigned bits[DISC_LB_STD_UNITS];
    for (int i = 0; i < DISC_LB_STD_UNITS; i++)
        bits[i] = DISC_LB_STD_BMIN + (unsigned)i;
    return disc_lb_new(out, n_cols, k_odd, bits, DISC_LB_STD_UNITS);
}

void disc_lb_free(struct disc_lb *lb)
{
    if (!lb)
        return;
    mem_free(lb->range_lo);
    mem_free(lb);
}

uint64_t disc_lb_n_cols(const struct disc_lb *lb)
{
    return lb->n_cols;
}
int disc_lb_n_units(const struct disc_lb *lb)
{
    return lb->n_units;
}
unsigned disc_lb_unit_bits(const struct disc_lb *lb, int i)
{
    return lb->bits[i];
}
unsigned disc_lb_bmax(const struct disc_lb *lb)
{
    return lb->b_max;
}

size_t disc_lb_scratch_len(const struct disc_lb *lb)
{
    return (size_t)DISC_HASH_KINDS << lb->b_max;
}

/* Set bits of row in columns [lo, hi). */
static uint32_t popcount_range(const uint64_t *row, uint64_t lo, uint64_t hi)
{
    if (lo >= hi)
        return 0;
    size_t wl = (size_t)(lo >> 6), wh = (size_t)((hi - 1) >> 6);
    uint64_t ml = ~(uint64_t)0 << (lo & 63);
    uint64_t mh = ~(uint64_t)0 >> (63 - ((hi - 1) & 63));
    if (wl == wh)
        return (uint32_t)__builtin_popcountll(row[wl] & ml & mh);
    uint32_t c = (uint32_t)__builtin_popcountll(row[wl] & ml);
    for (size_t w = wl + 1; w < wh; w++)
        c += (uint32_t)__builtin_popcountll(row[w]);
    return c + (uint32_t)__builtin_popcountll(row[wh] & mh);
}

/*
 * mod counts at U <= 256 without touching single bits: j & (U - 1) depends only on the bit
 * position t within its word and on w mod (U / 64), so per word "set" the 64 positions are
 * counted in byte lanes (8 lanes of 8 bits per accumulator, flushed before they can
 * overflow at 255) and folded to U at the end. Same counts as the per-bit loop.
 */
static void mod_counts_swar(const struct disc_lb *lb, const uint64_t *row, uint32_t *cmod)
{
    const size_t ub = (size_t)1 << lb->b_max;
    const size_t sets = ub > 64 ? ub / 64 : 1;
    uint64_t acc[SWAR_SETS_MAX][8];
    uint32_t pos[SWAR_SETS_MAX][64];
    unsigned filled[SWAR_SETS_MAX];
    memset(acc, 0, sizeof acc);
    memset(pos, 0, sizeof pos);
    memset(filled, 0, sizeof filled);
    for (size_t w = 0; w < lb->words_per_row; w++) {
        const size_t st = w & (sets - 1);
        const uint64_t x = row[w];
        for (unsigned p = 0; p < 8; p++)
            acc[st][p] += lb->spread[(x >> (8 * p)) & 255];
        if (++filled[st] == 255) {
            for (unsigned p = 0; p < 8; p++) {
                for (unsigned i = 0; i < 8; i++)
                    pos[st][8 * p + i] += (uint32_t)((acc[st][p] >> (8 * i)) & 255);
                acc[st][p] = 0;
            }
            filled[st] = 0;
        }
    }
    for (size_t st = 0; st < sets; st++)
        for (unsigned p = 0; p < 8; p++)
            for (unsigned i = 0; i < 8; i++)
                pos[st][8 * p + i] += (uint32_t)((acc[st][p] >> (8 * i)) & 255);
    for (size_t st = 0; st < sets; st++)
        for (unsigned t = 0; t < 64; t++)
            cmod[(64 * st + t) & (ub - 1)] += pos[st][t];
}

uint64_t disc_lb_count_row(const struct disc_lb *lb, const uint64_t *row, uint32_t *counts)
{
    const size_t ub = (size_t)1 << lb->b_max;
    uint32_t *cmod = counts, *cmul = counts + ub, *crng = counts + 2 * ub;
    const uint64_t mask = ub - 1;
    const unsigned shift = 32 - lb->b_max;
    const uint32_t k = lb->k_odd;
    uint64_t nnz = 0;
    memset(counts, 0, 2 * ub * sizeof *counts);
    if (lb->b_max <= SWAR_MAX_BITS) {
        mod_counts_swar(lb, row, cmod);
        for (size_t w = 0; w < lb->words_per_row; w++) {
            uint64_t x = row[w];
            const uint64_t base = (uint64_t)w * 64;
            nnz += (uint64_t)__builtin_popcountll(x);
            while (x) {
                /* docs/disc.md#load-balance-analyzer: one pass, count-trailing-zeros per set bit */
                uint64_t j = base + (uint64_t)__builtin_ctzll(x);
                x &= x - 1;
                cmul[(uint32_t)(j * k) >> shift]++;
            }
        }
    } else {
        for (size_t w = 0; w < lb->words_per_row; w++) {
            uint64_t x = row[w];
            const uint64_t base = (uint64_t)w * 64;
            nnz += (uint64_t)__builtin_popcountll(x);
            while (x) {
                uint64_t j = base + (uint64_t)__builtin_ctzll(x);
                x &= x - 1;
                cmod[j & mask]++;
                cmul[(uint32_t)(j * k) >> shift]++;
            }
        }
    }
    /* range: the same counts as floor(j U / n_cols) per bit, by interval popcounts */
    for (size_t v = 0; v < ub; v++)
        crng[v] = popcount_range(row, lb->range_lo[v], lb->range_lo[v + 1]);
    return nnz;
}

/* sigma and max of one level of counts (U buckets), population std-dev in double. */
static void level_stats(const uint32_t *c, size_t u, uint64_t nnz, double *sigma, uint32_t *mx)
{
    const double mu = (double)nnz / (double)u;
    double ss = 0;
    uint32_t m = 0;
    for (size_t v = 0; v < u; v++) {
        double dv = (double)c[v] - mu;
        ss += dv * dv;
        if (c[v] > m)
            m = c[v];
    }
    *sigma = sqrt(ss / (double)u);
    *mx = m;
}

void disc_lb_row(const struct disc_lb *lb, const uint64_t *row, uint32_t *scratch,
                 struct disc_lb_rowstat *out)
{
    const size_t ub = (size_t)1 << lb->b_max;
    uint64_t nnz = disc_lb_count_row(lb, row, scratch);
    out->nnz = nnz;
    out->bin = disc_lb_bin(lb->n_cols - nnz, lb->n_cols);
    for (int h = 0; h < DISC_HASH_KINDS; h++) {
        uint32_t *c = scratch + (size_t)h * ub;
        for (unsigned b = lb->b_max;; b--) {
            size_t u = (size_t)1 << b;
            int i = lb->unit_of_bits[b];
            if (i >= 0)
                level_stats(c, u, nnz, &out->sigma[h][i], &out->max[h][i]);
            if (b == lb->b_min)
                break;
            /* docs/disc.md#load-balance-analyzer [derived]: fold U -> U/2 */
            size_t half = u / 2;
            if (h == DISC_HASH_MOD) {
                for (size_t v = 0; v < half; v++)
                    c[v] += c[v + half];
            } else {
                for (size_t v = 0; v < half; v++)
                    c[v] = c[2 * v] + c[2 * v + 1];
            }
        }
    }
}

void disc_lb_acc_init(struct disc_lb_acc *acc, const struct disc_lb *lb)
{
    memset(acc, 0, sizeof *acc);
    acc->n_units = lb->n_units;
}

void disc_lb_acc_add(struct disc_lb_acc *acc, const struct disc_lb_rowstat *r)
{
    const int bin = r->bin;
    acc->rows++;
    acc->nnz += r->nnz;
    acc->bin_rows[bin]++;
    acc->bin_nnz[bin] += r->nnz;
    for (int h = 0; h < DISC_HASH_KINDS; h++)
        for (int i = 0; i < acc->n_units; i++) {
            acc->std_sum[h][i] += r->sigma[h][i];
            acc->max_sum[h][i] += r->max[h][i];
            acc->bin_std[bin][h][i] += r->sigma[h][i];
            acc->bin_max[bin][h][i] += r->max[h][i];
        }
}

/* rows counted between two synchronisations of the pool: few barriers (each can wait a
 * scheduler quantum on a busy machine) against a 2.3 MB per-block statistics buffer */
#define LB_BLOCK_ROWS 4096

struct mask_job {
    const struct disc_lb *lb;
    const uint64_t *bits;
    size_t words_per_row;
    const uint32_t *rows; /* row numbers of this block */
    struct disc_lb_rowstat *out;
    uint32_t *scratch; /* per worker */
    size_t scratch_len;
};

static void mask_chunk(void *ctx, size_t begin, size_t end, int worker)
{
    struct mask_job *j = ctx;
    uint32_t *s = j->scratch + (size_t)worker * j->scratch_len;
    for (size_t i = begin; i < end; i++)
        disc_lb_row(j->lb, j->bits + (size_t)j->rows[i] * j->words_per_row, s, &j->out[i]);
}

int disc_lb_mask(const struct disc_lb *lb, const uint64_t *bits, uint32_t n_rows,
                 size_t words_per_row, const uint64_t *row_filter, struct thread_pool *pool,
                 struct disc_lb_acc *acc)
{
    const int nt = pool ? pool_size(pool) : 1;
    const size_t sl = disc_lb_scratch_len(lb);
    int rc = ERR_NOMEM;
    const size_t block = n_rows < LB_BLOCK_ROWS ? (n_rows ? n_rows : 1) : LB_BLOCK_ROWS;
    uint32_t *rows = mem_alloc(block * sizeof *rows);
    struct disc_lb_rowstat *out = mem_alloc(block * sizeof *out);
    uint32_t *scratch = mem_alloc((size_t)nt * sl * sizeof *scratch);
    if (!rows || !out || !scratch)
        goto fail;
    struct mask_job job = {lb, bits, words_per_row, rows, out, scratch, sl};
    uint32_t r = 0;
    while (r < n_rows) {
        size_t n = 0;
        for (; r < n_rows && n < block; r++)
            if (!row_filter || ((row_filter[r >> 6] >> (r & 63)) & 1u))
                rows[n++] = r;
        if (n == 0)
            continue;
        if (pool && nt > 1 && n > 1)
            pool_for(pool, n, mask_chunk, &job);
        else
            mask_chunk(&job, 0, n, 0);
        for (size_t i = 0; i < n; i++)
            disc_lb_acc_add(acc, &out[i]);
    }
    rc = 0;
fail:
    mem_free(rows);
    mem_free(out);
    mem_free(scratch);
    return rc;
}

double disc_lb_acc_mean_std(const struct disc_lb_acc *acc, int h, int i)
{
    return acc->rows ? acc->std_sum[h][i] / (double)acc->rows : NAN;
}

double disc_lb_acc_imbalance(const struct disc_lb_acc *acc, const struct disc_lb *lb, int h, int i)
{
    /* docs/disc.md#load-balance-analyzer: imbalance = sum max / sum mu = U sum max / nnz */
    if (acc->nnz == 0)
        return NAN;
    return (double)((uint64_t)1 << lb->bits[i]) * (double)acc->max_sum[h][i] / (double)acc->nnz;
}
