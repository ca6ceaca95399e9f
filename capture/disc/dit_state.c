/*
 * dit_state: what persists between the steps of one sampler run: CTR block outputs and ST
 * masks, held or in the spill file (see dit.h, docs/models.md#disc-memory-plan).
 */
#include <stdio.h>
#include <string.h>

#include "capture/disc/disc_spill.h"
#include "capture/disc/dit.h"
#include "capture/disc/dit_impl.h"
#include "common/mem.h"

size_t dit_mask_words(const struct dit_config *cfg)
{
    return ((size_t)cfg->tokens + 63) / 64;
}

/* Sets n_rows mask rows to all ones (a row never generated, docs/disc.md#st-masks); padding bits
 * zero. */
static void mask_fill_ones(uint64_t *rows, size_t n_rows, size_t words, size_t N)
{
    uint64_t last = N % 64 ? (1ull << (N % 64)) - 1 : ~0ull;
    for (size_t r = 0; r < n_rows; r++) {
        for (size_t w = 0; w + 1 < words; w++)
            rows[r * words + w] = ~0ull;
        rows[r * words + words - 1] = last;
    }
}

static size_t mask_group_words(const struct dit_state *s)
{
    return (size_t)s->cfg->heads * s->cfg->tokens * s->words;
}

int dit_state_open(struct dit_state **out, const struct dit_model *m, int n_batch,
                   const struct dit_state_opts *o, struct errmsg *e)
{
    const struct dit_config *c = &m->cfg;
    struct dit_state *s = mem_calloc(1, sizeof *s);
    int rc = ERR_NOMEM;
    *out = NULL;
    if (!s)
        return errmsg_set(e, ERR_NOMEM, "out of memory for the sampler state");
    s->cfg = &m->cfg;
    s->n_batch = n_batch;
    s->ctr = o->ctr;
    s->st = o->st;
    s->ff_spill = o->ctr && o->spill_ctr;
    s->mask_spill = o->st && o->spill_masks;
    s->mres = -1;
    s->words = dit_mask_words(c);
    size_t N = (size_t)c->tokens, d = (size_t)c->hidden, L = (size_t)c->depth;
    size_t nblk = o->ctr && !s->ff_spill ? L : 2;
    s->cache_ff = mem_calloc(nblk * (size_t)n_batch * N * d, sizeof(float));
    if (!s->cache_ff)
        goto fail;
    if (o->st) {
        size_t groups = s->mask_spill ? 1 : (size_t)n_batch * L;
        s->masks = mem_alloc(groups * mask_group_words(s) * sizeof(uint64_t));
        if (!s->masks)
            goto fail;
        mask_fill_ones(s->masks, groups * c->heads * N, s->words, N);
    }
    if (s->mask_spill || s->ff_spill) {
        s->m_written = mem_calloc(L * (size_t)n_batch, 1);
        s->ff_written = mem_calloc(L * (size_t)n_batch, 1);
        if (!s->m_written || !s->ff_written)
            goto fail;
        if ((rc = disc_spill_open(&s->spill, o->spill_dir, e)) != 0)
            goto fail;
        s->ff_base =
            s->mask_spill ? (uint64_t)n_batch * L * mask_group_words(s) * sizeof(uint64_t) : 0;
    }
    *out = s;
    return 0;
fail:
    dit_state_free(s);
    if (rc == ERR_NOMEM)
        errmsg_set(e, ERR_NOMEM, "out of memory for the sampler state");
    return rc;
}

int dit_state_new(struct dit_state **out, const struct dit_model *m, int n_batch, bool ctr, bool st)
{
    struct dit_state_opts o = {.ctr = ctr, .st = st};
    return dit_state_open(out, m, n_batch, &o, NULL);
}

void dit_state_free(struct dit_state *s)
{
    if (!s)
        return;
    mem_free(s->cache_ff);
    mem_free(s->masks);
    mem_free(s->m_written);
    mem_free(s->ff_written);
    disc_spill_close(s->spill);
    mem_free(s);
}

const char *dit_state_errmsg(const struct dit_state *s)
{
    return errmsg_text(&s->err);
}

uint64_t dit_state_spill_bytes(const struct dit_state *s)
{
    return disc_spill_bytes(s->spill);
}

/* Makes the masks of (batch, block) resident: the held group is written back when it
 * changed, the wanted one read (or all ones when never written). 0 or ERR_IO. */
int dit_state_mask_group(struct dit_state *s, int batch, int block, uint64_t **out)
{
    int g = batch * s->cfg->depth + block;
    size_t gw = mask_group_words(s);
    if (!s->mask_spill) {
        *out = s->masks + (size_t)g * gw;
        return 0;
    }
    if (s->mres != g) {
        size_t gb = gw * sizeof(uint64_t);
        int rc;
        if (s->mres >= 0 && s->mdirty) {
            rc = disc_spill_write(s->spill, (uint64_t)s->mres * gb, s->masks, gb, &s->err);
            if (rc)
                return rc;
            s->m_written[s->mres] = 1;
        }
        s->mdirty = false;
        s->mres = -1;
        if (s->m_written[g]) {
            if ((rc = disc_spill_read(s->spill, (uint64_t)g * gb, s->masks, gb, &s->err)) != 0)
                return rc;
        } else {
            mask_fill_ones(s->masks, (size_t)s->cfg->heads * s->cfg->tokens, s->words,
                           (size_t)s->cfg->tokens);
        }
        s->mres = g;
    }
    *out = s->masks;
    return 0;
}

uint64_t *dit_state_mask(struct dit_state *s, int batch, int block, int head)
{
    uint64_t *grp;
    if (dit_state_mask_group(s, batch, block, &grp))
        return NULL;
    return grp + (size_t)head * s->cfg->tokens * s->words;
}

float *dit_state_ff(struct dit_state *s, int blk, int b)
{
    const struct dit_config *c = s->cfg;
    size_t i = s->ctr && !s->ff_spill ? (size_t)blk : (size_t)(blk % 2);
    return s->cache_ff + (i * s->n_batch + b) * (size_t)c->tokens * c->hidden;
}

/* Spilled block outputs: the previous step's outputs of (blk, b), needed for the rows this
 * step prunes, into the held slot (zeros when never written, as a fresh cache). */
int dit_state_ff_load(struct dit_state *s, int blk, int b, bool all_kept)
{
    size_t n = (size_t)s->cfg->tokens * s->cfg->hidden;
    size_t i = (size_t)blk * s->n_batch + b;
    float *slot = dit_state_ff(s, blk, b);
    if (all_kept)
        return 0; /* every row is recomputed */
    if (!s->ff_written[i]) {
        memset(slot, 0, n * sizeof(float));
        return 0;
    }
    return disc_spill_read(s->spill, s->ff_base + i * n * sizeof(float), slot, n * sizeof(float),
                           &s->err);
}

int dit_state_ff_store(struct dit_state *s, int blk, int b)
{
    size_t n = (size_t)s->cfg->tokens * s->cfg->hidden;
    size_t i = (size_t)blk * s->n_batch + b;
    int rc = disc_spill_write(s->spill, s->ff_base + i * n * sizeof(float), dit_state_ff(s, blk, b),
                              n * sizeof(float), &s->err);
    if (!rc)
        s->ff_written[i] = 1;
    return rc;
}

/* ---- checkpoints of a sampler run (dit.h dit_state_save) ---- */

uint64_t dit_state_save_bytes(const struct dit_config *cfg, int n_batch, bool ctr, bool st)
{
    uint64_t N = (uint64_t)cfg->tokens, L = (uint64_t)cfg->depth, B = (uint64_t)n_batch;
    uint64_t b = 0;
    if (ctr)
        b += L * B * N * (uint64_t)cfg->hidden * sizeof(float);
    if (st)
        b += B * L * (uint64_t)cfg->heads * N * dit_mask_words(cfg) * sizeof(uint64_t);
    return b;
}

int dit_state_save(struct dit_state *s, FILE *f, struct errmsg *e)
{
    const struct dit_config *c = s->cfg;
    int L = c->depth, B = s->n_batch;
    size_t n = (size_t)c->tokens * c->hidden;
    for (int blk = 0; blk < L && s->ctr; blk++)
        for (int b = 0; b < B; b++) {
            const float *p = dit_state_ff(s, blk, b);
            if (s->ff_spill) {
                /* the held ring slot is scratch between steps: the spill copy is the state */
                int rc = dit_state_ff_load(s, blk, b, false);
                if (rc)
                    return errmsg_set(e, rc, "%s", errmsg_text(&s->err));
            }
            if (fwrite(p, sizeof(float), n, f) != n)
                return errmsg_set(e, ERR_IO, "cannot write the checkpoint's CTR block outputs");
        }
    size_t gw = mask_group_words(s);
    for (int b = 0; b < B && s->st; b++)
        for (int blk = 0; blk < L; blk++) {
            uint64_t *grp;
            int rc = dit_state_mask_group(s, b, blk, &grp);
            if (rc)
                return errmsg_set(e, rc, "%s", errmsg_text(&s->err));
            if (fwrite(grp, sizeof(uint64_t), gw, f) != gw)
                return errmsg_set(e, ERR_IO, "cannot write the checkpoint's ST masks");
        }
    return 0;
}

int dit_state_load(struct dit_state *s, FILE *f, struct errmsg *e)
{
    const struct dit_config *c = s->cfg;
    int L = c->depth, B = s->n_batch;
    size_t n = (size_t)c->tokens * c->hidden;
    for (int blk = 0; blk < L && s->ctr; blk++)
        for (int b = 0; b < B; b++) {
            if (fread(dit_state_ff(s, blk, b), sizeof(float), n, f) != n)
                return ERR_DATA;
            int rc = s->ff_spill ? dit_state_ff_store(s, blk, b) : 0;
            if (rc)
                return errmsg_set(e, rc, "%s", errmsg_text(&s->err));
        }
    size_t gw = mask_group_words(s);
    for (int b = 0; b < B && s->st; b++)
        for (int blk = 0; blk < L; blk++) {
            uint64_t *grp;
            int rc = dit_state_mask_group(s, b, blk, &grp);
            if (rc)
                return errmsg_set(e, rc, "%s", errmsg_text(&s->err));
            if (fread(grp, sizeof(uint64_t), gw, f) != gw)
                return ERR_DATA;
            s->mdirty = true; /* a spilled group goes back to the file when it leaves */
        }
    return 0;
}
