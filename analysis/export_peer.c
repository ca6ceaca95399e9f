/* export_peer: the one pass over a disc trace that the peer-format exports share. */
#include "analysis/export_peer.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "analysis/analyzer.h"
#include "common/io.h"
#include "common/mem.h"
#include "traces/trace_reader.h"

/* Bounds beyond the header checks of disc_dims_from_header: the per-head arrays. */
#define PEER_MAX_CELLS ((size_t)1 << 26)

static bool mode_on(const char *m)
{
    return m && m[0] && strcmp(m, "off") != 0;
}

static int peer_begin(void *self, const struct trace_scan_pos *pos, struct errmsg *e)
{
    struct peer_dit *d = self;
    const Acceltrace__TraceHeader *hdr = trace_reader_header(pos->r);
    if (!hdr || !hdr->workload || strcmp(hdr->workload, "disc") || !hdr->disc)
        return errmsg_set(e, ERR_DATA, "not a disc trace ('%s' has workload '%s')", pos->path,
                          hdr && hdr->workload ? hdr->workload : "");
    int rc = disc_dims_from_header(hdr, pos->path, &d->dm, &d->steps, e);
    if (rc < 0)
        return rc;
    const Acceltrace__DiscHeader *dh = hdr->disc;
    snprintf(d->model, sizeof d->model, "%s", dh->model ? dh->model : "");
    d->ctr_on = mode_on(dh->ctr_mode);
    d->st_on = mode_on(dh->st_mode);
    size_t per_step, n;
    if (!mem_mul(d->dm.depth, d->dm.h, &per_step) || !mem_mul(per_step, d->steps, &n) ||
        n > PEER_MAX_CELLS)
        return errmsg_set(e, ERR_DATA,
                          "disc header of '%s' has too many masks (%u steps, %u "
                          "blocks, %u heads)",
                          pos->path, d->steps, d->dm.depth, d->dm.h);
    d->n_kept = mem_calloc(d->steps, sizeof *d->n_kept);
    d->step_seen = mem_calloc(d->steps, sizeof *d->step_seen);
    d->generated = mem_calloc(d->steps, sizeof *d->generated);
    d->nnz = mem_calloc(n, sizeof *d->nnz);
    d->cells = mem_calloc(n, sizeof *d->cells);
    if (!d->n_kept || !d->step_seen || !d->generated || !d->nnz || !d->cells)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    for (uint32_t k = 0; k < d->steps; k++)
        d->n_kept[k] = d->dm.n;
    return 0;
}

static int peer_step(struct peer_dit *d, const struct trace_scan_pos *pos,
                     const Acceltrace__DiscStep *s, struct errmsg *e)
{
    if (s->k >= d->steps || s->n_kept > d->dm.n)
        return errmsg_set(e, ERR_DATA,
                          "disc step %u keeps %u tokens; the header has %u steps of %u tokens "
                          "(record %llu of '%s')",
                          s->k, s->n_kept, d->steps, d->dm.n, (unsigned long long)pos->record,
                          pos->path);
    d->n_kept[s->k] = s->n_kept;
    d->step_seen[s->k] = true;
    d->generated[s->k] = s->st_generated;
    return 0;
}

static int peer_mask(struct peer_dit *d, const struct trace_scan_pos *pos,
                     const Acceltrace__DiscMask *m, struct errmsg *e)
{
    const uint64_t cells = (uint64_t)m->rows * m->n_cols;
    if (m->step >= d->steps || m->block >= d->dm.depth || m->head >= d->dm.h || m->rows > d->dm.n ||
        m->n_cols > d->dm.n || m->nnz > cells)
        return errmsg_set(e, ERR_DATA,
                          "disc mask (step %u, block %u, head %u) of %u x %u with %llu "
                          "nonzeros does not fit the header's %u steps, %u blocks, %u heads, "
                          "%u tokens (record %llu of '%s')",
                          m->step, m->block, m->head, m->rows, m->n_cols,
                          (unsigned long long)m->nnz, d->steps, d->dm.depth, d->dm.h, d->dm.n,
                          (unsigned long long)pos->record, pos->path);
    size_t i = ((size_t)m->step * d->dm.depth + m->block) * d->dm.h + m->head;
    d->nnz[i] += m->nnz;
    d->cells[i] += cells;
    d->masks++;
    return 0;
}

static int peer_record(void *self, const struct trace_scan_pos *pos, Acceltrace__Record **rec,
                       struct errmsg *e)
{
    struct peer_dit *d = self;
    const Acceltrace__Record *r = *rec;
    if (r->body_case == ACCELTRACE__RECORD__BODY_DISC_STEP && r->disc_step)
        return peer_step(d, pos, r->disc_step, e);
    if (r->body_case == ACCELTRACE__RECORD__BODY_DISC_MASK && r->disc_mask)
        return peer_mask(d, pos, r->disc_mask, e);
    return 0;
}

static int peer_end(void *self, const struct trace_scan_pos *pos, struct errmsg *e)
{
    (void)e;
    struct peer_dit *d = self;
    snprintf(d->trace_hash, sizeof d->trace_hash, "%s", trace_reader_content_hash(pos->r));
    return 0;
}

static const struct analyzer_ops peer_ops = {
    .name = "export_peer",
    .begin = peer_begin,
    .record = peer_record,
    .end = peer_end,
};

int peer_dit_read(const char *path, struct peer_dit *d, struct errmsg *e)
{
    memset(d, 0, sizeof *d);
    const struct analyzer an = {&peer_ops, d};
    struct analyzer_opts o;
    analyzer_opts_default(&o);
    o.scan.quiet = true;
    int rc = analyzer_run(path, &an, 1, &o, e);
    if (rc < 0)
        peer_dit_release(d);
    return rc;
}

void peer_dit_release(struct peer_dit *d)
{
    if (!d)
        return;
    mem_free(d->n_kept);
    mem_free(d->step_seen);
    mem_free(d->generated);
    mem_free(d->nnz);
    mem_free(d->cells);
    memset(d, 0, sizeof *d);
}

double peer_dit_density(const struct peer_dit *d, uint32_t k, uint32_t b, uint32_t h)
{
    if (!d->cells || k >= d->steps || b >= d->dm.depth || h >= d->dm.h)
        return NAN;
    size_t i = ((size_t)k * d->dm.depth + b) * d->dm.h + h;
    return d->cells[i] ? (double)d->nnz[i] / (double)d->cells[i] : NAN;
}

int peer_write_file(const char *path, const struct buf *b, struct errmsg *e)
{
    if (buf_err(b))
        return errmsg_set(e, ERR_NOMEM, "out of memory writing '%s'", path);
    char tmp[4200], parent[4200];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp)
        return errmsg_set(e, ERR_USAGE, "output name too long ('%s')", path);
    snprintf(parent, sizeof parent, "%s", path);
    char *slash = strrchr(parent, '/');
    int rc;
    if (slash && slash != parent) {
        *slash = 0;
        if ((rc = io_mkdir_p(parent, 0755, e)))
            return rc;
    }
    struct sink k = {.fd = -1};
    if ((rc = sink_open_file(&k, tmp, e)))
        return rc;
    if (sink_write(&k, b->data, b->len) || sink_sync(&k)) {
        rc = errmsg_set(e, ERR_IO, "cannot write '%s': %s", tmp, strerror(errno));
        goto fail;
    }
    if (sink_close(&k)) {
        k.fd = -1;
        rc = errmsg_set(e, ERR_IO, "cannot write '%s': %s", tmp, strerror(errno));
        goto fail;
    }
    k.fd = -1;
    if (rename(tmp, path)) {
        rc = errmsg_set(e, ERR_IO, "cannot rename '%s' to '%s': %s", tmp, path, strerror(errno));
        goto fail;
    }
    io_sync_parent_dir(path);
    return 0;
fail:
    if (k.fd >= 0)
        sink_close(&k);
    unlink(tmp);
    return rc;
}
