/*
 * hash_lb: DiSC hash load-balance analyzer (docs/disc.md, paper Fig. 15).
 */
#include "analysis/hash_lb.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analyzer.h"
#include "analysis/plot.h"
#include "common/grow.h"
#include "common/mem.h"
#include "common/threads.h"
#include "formats/bitset.h"
#include "formats/csv.h"
#include "traces/trace_disc.h"
#include "traces/trace_reader.h"

#define MAX_STEPS 100000u

enum entry_state { E_READY, E_WAIT, E_SKIP };

struct entry {
    uint32_t step, batch, block, head;
    bool generated;
    uint32_t rows;
    uint64_t nnz;
    enum entry_state state;
    bool recounted;
    struct disc_lb_acc *acc;
    uint8_t *bits;
    size_t bits_len;
};

struct hash_lb {
    struct hash_lb_opts o;
    uint32_t n_cols; /* N */
    uint32_t steps;
    struct disc_lb *lb; /* recount context */
    struct thread_pool *pool;
    /* recorded sets of the header */
    int rec_hash[DISC_HASH_KINDS];   /* our hash -> recorded index, -1 */
    int rec_unit[DISC_LB_MAX_UNITS]; /* our unit -> recorded index, -1 */
    int rec_nh, rec_nu, rec_bins;
    bool rec_usable;
    char rec_text[160];   /* the recorded set, for messages: "U = 8,16 and k-odd 0x.." */
    uint8_t **token_mask; /* [steps] */
    struct entry *q;      /* pending masks in record order */
    size_t nq, capq;
    struct hash_lb_pool mat[DISC_LB_BINS], row[DISC_LB_BINS];
    uint64_t seen, recounted, skipped;
    struct csv_writer *masks_csv;
    char masks_path[4096]; /* its path, for messages */
};

void hash_lb_opts_default(struct hash_lb_opts *o)
{
    memset(o, 0, sizeof *o);
    /* U = 8, 16, 32, 64 (docs/disc.md#load-balance-analyzer default) */
    const unsigned b[4] = {3, 4, 5, 6};
    memcpy(o->bits, b, sizeof b);
    o->n_units = 4;
    o->k_odd = DISC_HASH_K_ODD;
    o->threads = 1;
}

int hash_lb_parse_units(struct hash_lb_opts *o, const char *list, struct errmsg *e)
{
    int n = 0;
    const char *p = list;
    while (p && *p) {
        char *end;
        unsigned long long u = strtoull(p, &end, 10);
        if (end == p || (*end && *end != ','))
            return errmsg_set(e, ERR_USAGE, "bad unit list '%s'", list);
        if (u < 2 || (u & (u - 1)) || u > (1ull << DISC_LB_MAX_BITS))
            return errmsg_set(e, ERR_USAGE, "unit count %llu is not a power of two in 2..%llu", u,
                              1ull << DISC_LB_MAX_BITS);
        if (n == DISC_LB_MAX_UNITS)
            return errmsg_set(e, ERR_USAGE, "more than %d unit counts", DISC_LB_MAX_UNITS);
        unsigned b = 0;
        while ((1ull << b) < u)
            b++;
        for (int i = 0; i < n; i++)
            if (o->bits[i] == b)
                return errmsg_set(e, ERR_USAGE, "unit count %llu given twice", u);
        o->bits[n++] = b;
        p = *end ? end + 1 : end;
    }
    if (n == 0)
        return errmsg_set(e, ERR_USAGE, "empty unit list");
    o->n_units = n;
    return 0;
}

void hash_lb_free(struct hash_lb *a)
{
    if (!a)
        return;
    for (size_t i = 0; i < a->nq; i++) {
        mem_free(a->q[i].acc);
        mem_free(a->q[i].bits);
    }
    mem_free(a->q);
    if (a->token_mask)
        for (uint32_t k = 0; k < a->steps; k++)
            mem_free(a->token_mask[k]);
    mem_free(a->token_mask);
    disc_lb_free(a->lb);
    if (a->pool)
        pool_free(a->pool);
    csv_writer_close(a->masks_csv);
    mem_free(a);
}

static int write_masks_header(struct hash_lb *a)
{
    struct csv_writer *w = a->masks_csv;
    const char *cols[] = {"step", "batch", "block",    "head",  "generated",
                          "rows", "nnz",   "sparsity", "source"};
    int rc = 0;
    for (size_t i = 0; i < sizeof cols / sizeof cols[0]; i++)
        rc |= csv_str(w, cols[i]);
    for (int h = 0; h < DISC_HASH_KINDS; h++)
        for (int i = 0; i < a->o.n_units; i++) {
            char name[64];
            unsigned u = 1u << a->o.bits[i];
            snprintf(name, sizeof name, "mean_std_%s_%u", disc_hash_name(h), u);
            rc |= csv_str(w, name);
            snprintf(name, sizeof name, "imbalance_%s_%u", disc_hash_name(h), u);
            rc |= csv_str(w, name);
        }
    rc |= csv_end_row(w);
    return rc ? ERR_IO : 0;
}

int hash_lb_new(struct hash_lb **out, const struct hash_lb_opts *o,
                const Acceltrace__TraceHeader *hdr, const char *out_dir, struct errmsg *e)
{
    *out = NULL;
    const Acceltrace__DiscHeader *dh = hdr ? hdr->disc : NULL;
    if (!dh)
        return errmsg_set(e, ERR_DATA, "trace has no disc header");
    if (dh->tokens == 0 || dh->tokens > DISC_LB_MAX_COLS || dh->steps > MAX_STEPS)
        return errmsg_set(e, ERR_DATA, "disc header has impossible sizes (N = %u, K = %u)",
                          dh->tokens, dh->steps);
    struct hash_lb *a = mem_calloc(1, sizeof *a);
    if (!a)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    int rc;
    a->o = *o;
    a->n_cols = dh->tokens;
    a->steps = dh->steps;
    a->token_mask = mem_calloc(a->steps ? a->steps : 1, sizeof *a->token_mask);
    if (!a->token_mask) {
        rc = errmsg_set(e, ERR_NOMEM, "out of memory");
        goto fail;
    }
    rc = disc_lb_new(&a->lb, a->n_cols, o->k_odd, o->bits, o->n_units);
    if (rc < 0) {
        rc = errmsg_set(e, rc, "bad unit list or multiplicative constant");
        goto fail;
    }
    if (o->threads > 1 && !(a->pool = pool_new(o->threads))) {
        rc = errmsg_set(e, ERR_NOMEM, "cannot start %d threads", o->threads);
        goto fail;
    }
    /* docs/disc.md#load-balance-analyzer: the recorded sets serve the request only if they cover it
     * entirely */
    a->rec_nh = (int)dh->n_lb_hashes;
    a->rec_nu = (int)dh->n_lb_units;
    a->rec_bins = (int)dh->lb_bins;
    a->rec_usable = dh->lb_k_odd == o->k_odd && a->rec_bins == DISC_LB_BINS;
    for (int h = 0; h < DISC_HASH_KINDS; h++) {
        a->rec_hash[h] = -1;
        for (size_t i = 0; i < dh->n_lb_hashes; i++)
            if (disc_hash_from_name(dh->lb_hashes[i]) == h)
                a->rec_hash[h] = (int)i;
        if (a->rec_hash[h] < 0)
            a->rec_usable = false;
    }
    size_t tl = (size_t)snprintf(a->rec_text, sizeof a->rec_text, "U =");
    for (size_t j = 0; j < dh->n_lb_units && tl < sizeof a->rec_text; j++)
        tl += (size_t)snprintf(a->rec_text + tl, sizeof a->rec_text - tl, "%s%u", j ? "," : " ",
                               dh->lb_units[j]);
    if (tl < sizeof a->rec_text)
        snprintf(a->rec_text + tl, sizeof a->rec_text - tl, "%s and k-odd 0x%08X",
                 dh->n_lb_units ? "" : " none", dh->lb_k_odd);
    for (int i = 0; i < o->n_units; i++) {
        a->rec_unit[i] = -1;
        for (size_t j = 0; j < dh->n_lb_units; j++)
            if (dh->lb_units[j] == (1u << o->bits[i]))
                a->rec_unit[i] = (int)j;
        if (a->rec_unit[i] < 0)
            a->rec_usable = false;
    }
    if (out_dir) {
        snprintf(a->masks_path, sizeof a->masks_path, "%s/hash_masks.csv", out_dir);
        if ((rc = csv_writer_open(&a->masks_csv, a->masks_path, false, e)) < 0)
            goto fail;
        if ((rc = write_masks_header(a)) < 0) {
            rc = errmsg_set(e, rc, "cannot write '%s': %s", a->masks_path,
                            strerror(csv_writer_errno(a->masks_csv)));
            goto fail;
        }
    }
    *out = a;
    return 0;
fail:
    hash_lb_free(a);
    return rc;
}

/* Fills acc from the recorded lb_* and bin_* fields (docs/disc.md#trace-records layout). false if
 * malformed. */
static bool from_record(const struct hash_lb *a, const Acceltrace__DiscMask *m,
                        struct disc_lb_acc *acc)
{
    const size_t nh = (size_t)a->rec_nh, nu = (size_t)a->rec_nu, hu = nh * nu;
    if (m->n_lb_max != hu || m->n_lb_std != hu || m->n_bin_rows != DISC_LB_BINS ||
        m->n_bin_nnz != DISC_LB_BINS || m->n_bin_max != DISC_LB_BINS * hu ||
        m->n_bin_std != DISC_LB_BINS * hu)
        return false;
    disc_lb_acc_init(acc, a->lb);
    acc->rows = m->rows;
    acc->nnz = m->nnz;
    for (int bin = 0; bin < DISC_LB_BINS; bin++) {
        acc->bin_rows[bin] = m->bin_rows[bin];
        acc->bin_nnz[bin] = m->bin_nnz[bin];
    }
    for (int h = 0; h < DISC_HASH_KINDS; h++)
        for (int i = 0; i < a->o.n_units; i++) {
            size_t idx = (size_t)a->rec_hash[h] * nu + (size_t)a->rec_unit[i];
            acc->std_sum[h][i] = m->lb_std[idx];
            acc->max_sum[h][i] = m->lb_max[idx];
            for (int bin = 0; bin < DISC_LB_BINS; bin++) {
                acc->bin_std[bin][h][i] = m->bin_std[(size_t)bin * hu + idx];
                acc->bin_max[bin][h][i] = m->bin_max[(size_t)bin * hu + idx];
            }
        }
    return true;
}

/* Recounts a kept mask over its computed rows (token mask of its step, or all rows). */
static int recount(struct hash_lb *a, struct entry *en, const uint8_t *bits, size_t len,
                   struct errmsg *e)
{
    const uint32_t n = a->n_cols;
    if (!en->acc && !(en->acc = mem_alloc(sizeof *en->acc)))
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    /* fewer rows than columns: only the rows of the step's token mask were computed */
    const uint8_t *tm = en->rows < n ? a->token_mask[en->step] : NULL;
    enum trace_disc_fault fault = TRACE_DISC_OK;
    int rc = 0;
    if (en->rows < n && !tm)
        fault = TRACE_DISC_BAD_TOKEN_MASK;
    else
        rc = trace_disc_recount_mask(a->lb, n, bits, len, tm, a->pool, en->acc, &fault);
    if (fault == TRACE_DISC_BAD_BITS)
        return errmsg_set(e, ERR_DATA,
                          "mask bits of (step %u, block %u, head %u) are not an %u x %u bitset",
                          en->step, en->block, en->head, n, n);
    if (fault == TRACE_DISC_BAD_TOKEN_MASK)
        return errmsg_set(e, ERR_DATA, "bad token mask of step %u", en->step);
    if (rc < 0)
        return errmsg_set(e, rc, "out of memory");
    if (en->acc->rows != en->rows)
        return errmsg_set(
            e, ERR_DATA, "mask (step %u, block %u, head %u) has %u rows but its step keeps %llu",
            en->step, en->block, en->head, en->rows, (unsigned long long)en->acc->rows);
    en->recounted = true;
    en->state = E_READY;
    return 0;
}

static void pool_add(struct hash_lb_pool *p, const struct disc_lb_acc *acc, int n_units,
                     uint64_t rows, uint64_t nnz, int bin, bool row_bin)
{
    p->rows += rows;
    p->nnz += nnz;
    if (!row_bin)
        p->masks++;
    for (int h = 0; h < DISC_HASH_KINDS; h++)
        for (int i = 0; i < n_units; i++) {
            p->std_sum[h][i] += row_bin ? acc->bin_std[bin][h][i] : acc->std_sum[h][i];
            p->max_sum[h][i] += row_bin ? acc->bin_max[bin][h][i] : acc->max_sum[h][i];
        }
}

static int emit(struct hash_lb *a, struct entry *en)
{
    const double total = (double)en->rows * a->n_cols;
    if (en->state == E_READY && en->rows > 0) {
        const struct disc_lb_acc *acc = en->acc;
        /* docs/disc.md#load-balance-analyzer: matrix bin in integers, pooled in record order; rows
         * = 0 skipped */
        int mb =
            disc_lb_bin((uint64_t)en->rows * a->n_cols - en->nnz, (uint64_t)en->rows * a->n_cols);
        pool_add(&a->mat[mb], acc, a->o.n_units, acc->rows, acc->nnz, mb, false);
        for (int b = 0; b < DISC_LB_BINS; b++)
            if (acc->bin_rows[b])
                pool_add(&a->row[b], acc, a->o.n_units, acc->bin_rows[b], acc->bin_nnz[b], b, true);
    }
    if (en->state == E_SKIP)
        a->skipped++;
    if (en->recounted)
        a->recounted++;
    if (!a->masks_csv)
        return 0;
    struct csv_writer *w = a->masks_csv;
    int rc = 0;
    rc |= csv_u64(w, en->step);
    rc |= csv_u64(w, en->batch);
    rc |= csv_u64(w, en->block);
    rc |= csv_u64(w, en->head);
    rc |= csv_u64(w, en->generated);
    rc |= csv_u64(w, en->rows);
    rc |= csv_u64(w, en->nnz);
    rc |= csv_f64(w, en->rows ? 1.0 - (double)en->nnz / total : NAN);
    rc |= csv_str(w, en->state == E_SKIP ? "none" : en->recounted ? "bits" : "record");
    for (int h = 0; h < DISC_HASH_KINDS; h++)
        for (int i = 0; i < a->o.n_units; i++) {
            double ms = NAN, im = NAN;
            if (en->state == E_READY) {
                ms = disc_lb_acc_mean_std(en->acc, h, i);
                im = disc_lb_acc_imbalance(en->acc, a->lb, h, i);
            }
            rc |= csv_f64(w, ms);
            rc |= csv_f64(w, im);
        }
    rc |= csv_end_row(w);
    return rc ? ERR_IO : 0;
}

/* Emits the ready prefix of the queue, in record order. */
static int flush(struct hash_lb *a, struct errmsg *e)
{
    size_t i = 0;
    while (i < a->nq && a->q[i].state != E_WAIT) {
        if (emit(a, &a->q[i]) < 0)
            return errmsg_set(e, ERR_IO, "cannot write '%s': %s", a->masks_path,
                              strerror(csv_writer_errno(a->masks_csv)));
        mem_free(a->q[i].acc);
        mem_free(a->q[i].bits);
        a->q[i].acc = NULL; /* a later error leaves the queue to hash_lb_free */
        a->q[i].bits = NULL;
        i++;
    }
    if (i > 0 && i < a->nq)
        memmove(a->q, a->q + i, (a->nq - i) * sizeof *a->q);
    a->nq -= i;
    return 0;
}

static int on_step(struct hash_lb *a, const Acceltrace__DiscStep *st, struct errmsg *e)
{
    if (st->k >= a->steps)
        return errmsg_set(e, ERR_DATA, "disc step %u beyond the header's %u steps", st->k,
                          a->steps);
    size_t want = (size_t)bitset_words_per_row(a->n_cols) * 8;
    if (st->token_mask.len == want && !a->token_mask[st->k]) {
        if (!(a->token_mask[st->k] = mem_alloc(want)))
            return errmsg_set(e, ERR_NOMEM, "out of memory");
        memcpy(a->token_mask[st->k], st->token_mask.data, want);
    }
    for (size_t i = 0; i < a->nq; i++) {
        struct entry *en = &a->q[i];
        if (en->state != E_WAIT || en->step != st->k)
            continue;
        if (!a->token_mask[st->k])
            return errmsg_set(e, ERR_DATA, "step %u has no token mask of %u bits", st->k,
                              a->n_cols);
        int rc = recount(a, en, en->bits, en->bits_len, e);
        if (rc < 0)
            return rc;
    }
    return flush(a, e);
}

static int on_mask(struct hash_lb *a, const Acceltrace__DiscMask *m, struct errmsg *e)
{
    if (m->step >= a->steps || m->rows > a->n_cols)
        return errmsg_set(e, ERR_DATA, "disc mask (step %u, block %u, head %u) out of range",
                          m->step, m->block, m->head);
    if (grow((void **)&a->q, &a->capq, a->nq + 1, sizeof *a->q))
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    struct entry *en = &a->q[a->nq++];
    memset(en, 0, sizeof *en);
    en->step = m->step, en->batch = m->batch, en->block = m->block, en->head = m->head;
    en->generated = m->generated;
    en->rows = m->rows;
    en->nnz = m->nnz;
    a->seen++;
    if (a->rec_usable) {
        if (!(en->acc = mem_alloc(sizeof *en->acc)))
            return errmsg_set(e, ERR_NOMEM, "out of memory");
        if (from_record(a, m, en->acc)) {
            en->state = E_READY;
            return flush(a, e);
        }
    }
    if (m->bits.len == 0) {
        en->state = E_SKIP;
        return flush(a, e);
    }
    if (m->rows == a->n_cols || a->token_mask[m->step]) {
        int rc = recount(a, en, m->bits.data, m->bits.len, e);
        return rc < 0 ? rc : flush(a, e);
    }
    /* the step's token mask comes later: keep the bits until then */
    if (!(en->bits = mem_alloc(m->bits.len)))
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    memcpy(en->bits, m->bits.data, m->bits.len);
    en->bits_len = m->bits.len;
    en->state = E_WAIT;
    return 0;
}

int hash_lb_record(struct hash_lb *a, const Acceltrace__Record *rec, struct errmsg *e)
{
    switch (rec->body_case) {
    case ACCELTRACE__RECORD__BODY_DISC_STEP:
        return on_step(a, rec->disc_step, e);
    case ACCELTRACE__RECORD__BODY_DISC_MASK:
        return on_mask(a, rec->disc_mask, e);
    default:
        return 0;
    }
}

int hash_lb_finish(struct hash_lb *a, struct errmsg *e)
{
    for (size_t i = 0; i < a->nq; i++)
        if (a->q[i].state == E_WAIT)
            return errmsg_set(e, ERR_DATA, "kept mask of step %u has no DiscStep record",
                              a->q[i].step);
    int rc = flush(a, e);
    if (rc < 0)
        return rc;
    rc = csv_writer_close(a->masks_csv);
    a->masks_csv = NULL;
    if (rc < 0)
        return errmsg_set(e, rc, "cannot write '%s': %s", a->masks_path, strerror(errno));
    /* nothing to pool would write tables of zeros and exit 0 */
    if (a->seen == 0)
        return errmsg_set(e, ERR_DATA, "no disc masks in the trace (captured with ST off?)");
    if (a->skipped == a->seen)
        return errmsg_set(e, ERR_DATA,
                          "none of the %llu masks has recorded statistics for the requested "
                          "unit counts and k-odd (the trace records %s) or kept bits to recount: "
                          "ask for recorded values or capture with --keep-masks",
                          (unsigned long long)a->seen, a->rec_text);
    return 0;
}

static double pool_mean_std(const struct hash_lb_pool *p, int h, int i)
{
    return p->rows ? p->std_sum[h][i] / (double)p->rows : NAN;
}

static double pool_imbalance(const struct hash_lb_pool *p, unsigned bits, int h, int i)
{
    return p->nnz ? (double)(1u << bits) * (double)p->max_sum[h][i] / (double)p->nnz : NAN;
}

static int write_pools(const struct hash_lb *a, const char *path, const struct hash_lb_pool *pools,
                       bool matrix, struct errmsg *e)
{
    struct csv_writer *w;
    int rc = csv_writer_open(&w, path, false, e);
    if (rc < 0)
        return rc;
    const char *hdr[] = {"hash",  "U",    "bin", "sparsity_lo", "sparsity_hi",
                         "masks", "rows", "nnz", "mean_std",    "imbalance"};
    for (size_t i = 0; i < sizeof hdr / sizeof hdr[0]; i++)
        if (matrix || strcmp(hdr[i], "masks"))
            rc |= csv_str(w, hdr[i]);
    rc |= csv_end_row(w);
    for (int h = 0; h < DISC_HASH_KINDS; h++)
        for (int i = 0; i < a->o.n_units; i++)
            for (int b = 0; b < DISC_LB_BINS; b++) {
                const struct hash_lb_pool *p = &pools[b];
                if (p->rows == 0)
                    continue;
                rc |= csv_str(w, disc_hash_name(h));
                rc |= csv_u64(w, 1u << a->o.bits[i]);
                rc |= csv_u64(w, (uint64_t)b);
                rc |= csv_f64(w, b / 20.0);
                rc |= csv_f64(w, (b + 1) / 20.0);
                if (matrix)
                    rc |= csv_u64(w, p->masks);
                rc |= csv_u64(w, p->rows);
                rc |= csv_u64(w, p->nnz);
                rc |= csv_f64(w, pool_mean_std(p, h, i));
                rc |= csv_f64(w, pool_imbalance(p, a->o.bits[i], h, i));
                rc |= csv_end_row(w);
            }
    int rc2 = csv_writer_close(w);
    if (rc || rc2)
        return errmsg_set(e, ERR_IO, "cannot write '%s': %s", path, strerror(errno));
    return 0;
}

/* One panel per U, one line per hash, x = bin centre (docs/disc.md#figures items 7-8). */
static int plot_pools(const struct hash_lb *a, const char *dir, const char *name, const char *title,
                      const char *xlabel, const struct hash_lb_pool *pools, bool imbalance,
                      bool *rendered, struct errmsg *e)
{
    struct plot *p = plot_new(name, PLOT_LINE);
    if (!p)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    int rc = 0;
    const int nu = a->o.n_units;
    const int cols = nu >= 2 ? 2 : 1, rows = (nu + cols - 1) / cols;
    plot_title(p, title);
    plot_size(p, 500 * cols, 380 * rows);
    if (nu > 1)
        rc = plot_panels(p, rows, cols);
    for (int i = 0; i < nu && rc == 0; i++) {
        char pt[64];
        snprintf(pt, sizeof pt, "U = %u", 1u << a->o.bits[i]);
        if (nu > 1)
            rc = plot_panel(p, i, pt, xlabel, "",
                            imbalance ? "imbalance (sum max / sum mean)"
                                      : "mean std-dev of nnz per unit",
                            imbalance ? "" : "nonzeros");
        else {
            plot_xlabel(p, xlabel, "");
            plot_ylabel(p, imbalance ? "imbalance" : "mean std-dev", imbalance ? "" : "nonzeros");
        }
        for (int h = 0; h < DISC_HASH_KINDS && rc == 0; h++) {
            double x[DISC_LB_BINS], y[DISC_LB_BINS];
            size_t n = 0;
            for (int b = 0; b < DISC_LB_BINS; b++) {
                if (pools[b].rows == 0)
                    continue;
                x[n] = (b + 0.5) / 20.0;
                y[n++] = imbalance ? pool_imbalance(&pools[b], a->o.bits[i], h, i)
                                   : pool_mean_std(&pools[b], h, i);
            }
            rc = plot_series(p, nu > 1 ? i : 0, disc_hash_name(h), x, y, n);
        }
    }
    bool r = true;
    if (rc == 0)
        rc = plot_write(p, dir, &r);
    if (rc < 0)
        rc = errmsg_set(e, rc, "plot %s: %s", name, plot_errmsg(p));
    if (rendered && !r)
        *rendered = false;
    plot_free(p);
    return rc;
}

int hash_lb_write(const struct hash_lb *a, const char *dir, bool plots, bool *rendered,
                  struct errmsg *e)
{
    char path[4096];
    int rc;
    if (rendered)
        *rendered = true;
    snprintf(path, sizeof path, "%s/hash_matrix.csv", dir);
    if ((rc = write_pools(a, path, a->mat, true, e)) < 0)
        return rc;
    snprintf(path, sizeof path, "%s/hash_row.csv", dir);
    if ((rc = write_pools(a, path, a->row, false, e)) < 0)
        return rc;
    if (!plots)
        return 0;
    if ((rc = plot_pools(a, dir, "hash_std_vs_sparsity",
                         "Std-dev of nonzeros per unit vs matrix sparsity (Fig. 15)",
                         "matrix sparsity", a->mat, false, rendered, e)) < 0)
        return rc;
    if ((rc = plot_pools(a, dir, "hash_std_vs_row_sparsity",
                         "Std-dev of nonzeros per unit vs row sparsity", "row sparsity", a->row,
                         false, rendered, e)) < 0)
        return rc;
    return plot_pools(a, dir, "hash_imbalance", "Load imbalance vs matrix sparsity",
                      "matrix sparsity", a->mat, true, rendered, e);
}

/* ---- the analyzer of one trace file (analysis/analyzer.h) ---- */

/* A hook's message with the trace named after it. */
static int name_trace(int rc, const struct trace_scan_pos *pos, struct errmsg *e)
{
    char why[sizeof e->text];
    snprintf(why, sizeof why, "%s", e->text);
    return errmsg_set(e, rc, "%s ('%s')", why, pos->path);
}

static int hash_run_begin(void *self, const struct trace_scan_pos *pos, struct errmsg *e)
{
    struct hash_lb_pass *h = self;
    int rc = hash_lb_new(&h->a, h->o, trace_reader_header(pos->r), h->dir, e);
    return rc < 0 ? name_trace(rc, pos, e) : 0;
}

static int hash_run_record(void *self, const struct trace_scan_pos *pos, Acceltrace__Record **rec,
                           struct errmsg *e)
{
    struct hash_lb_pass *h = self;
    int rc = hash_lb_record(h->a, *rec, e);
    return rc < 0 ? name_trace(rc, pos, e) : 0;
}

static int hash_run_end(void *self, const struct trace_scan_pos *pos, struct errmsg *e)
{
    struct hash_lb_pass *h = self;
    int rc = hash_lb_finish(h->a, e);
    return rc < 0 ? name_trace(rc, pos, e) : 0;
}

static int hash_run_finish(void *self, struct errmsg *e)
{
    struct hash_lb_pass *h = self;
    return h->dir ? hash_lb_write(h->a, h->dir, h->plots, h->rendered, e) : 0;
}

const struct analyzer_ops hash_lb_pass_ops = {
    .name = "hash_lb",
    .begin = hash_run_begin,
    .record = hash_run_record,
    .end = hash_run_end,
    .finish = hash_run_finish,
};

int hash_lb_run_file(const char *trace_path, const struct hash_lb_opts *o, const char *dir,
                     bool plots, bool *rendered, struct hash_lb **out, struct errmsg *e)
{
    if (out)
        *out = NULL;
    struct hash_lb_pass h = {o, dir, plots, rendered, NULL};
    const struct analyzer an = {&hash_lb_pass_ops, &h};
    int rc = analyzer_run(trace_path, &an, 1, NULL, e);
    if (rc == 0)
        rc = analyzer_finish(&an, 1, e);
    if (rc == 0 && out) {
        *out = h.a;
        h.a = NULL;
    }
    hash_lb_free(h.a);
    return rc;
}

const struct hash_lb_pool *hash_lb_matrix_bin(const struct hash_lb *a, int bin)
{
    return &a->mat[bin];
}
const struct hash_lb_pool *hash_lb_row_bin(const struct hash_lb *a, int bin)
{
    return &a->row[bin];
}
uint64_t hash_lb_masks_seen(const struct hash_lb *a)
{
    return a->seen;
}
uint64_t hash_lb_masks_recounted(const struct hash_lb *a)
{
    return a->recounted;
}
uint64_t hash_lb_masks_skipped(const struct hash_lb *a)
{
    return a->skipped;
}
const struct hash_lb_opts *hash_lb_options(const struct hash_lb *a)
{
    return &a->o;
}
