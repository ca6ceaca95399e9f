#include "traces/trace_verify.h"

#include <stdio.h>
#include <string.h>

#include "traces/trace_internal.h"

static int verify_reader(struct trace_reader *r, struct trace_verify_result *res, struct errmsg *e)
{
    const Acceltrace__TraceIndex *ix = trace_reader_index(r);
    const char *name = trace_reader_name(r);
    const struct trace_frame_info *fi = trace_reader_last_frame(r);
    int rc = 0;
    /* the header frame was read by open */
    res->frames = 1;
    res->raw_bytes = fi->raw_bytes;
    res->stored_bytes = fi->stored_bytes;
    res->intact_bytes = trace_reader_offset(r);
    uint64_t hdr_raw = fi->raw_bytes, hdr_stored = fi->stored_bytes;
    for (;;) {
        Acceltrace__Record *rec;
        rc = trace_reader_next(r, &rec, NULL);
        if (rc < 0) {
            errmsg_set(e, rc, "%s", trace_reader_errmsg(r));
            break;
        }
        if (rc == 0)
            break;
        /* every entry against its frame, keys recomputed from the decoded record: an
         * index saying layer 12345 would send find() and --layer filters astray */
        struct trace_key rk;
        trace_record_key(rec, &rk);
        trace_record_free(rec);
        fi = trace_reader_last_frame(r);
        char what[384];
        if (ix && (fi->number >= ix->n_entries ||
                   trace_entry_check(ix->entries[fi->number], fi, &rk, what, sizeof what))) {
            if (fi->number >= ix->n_entries)
                snprintf(what, sizeof what, "frame beyond the %zu frames of the index",
                         ix->n_entries);
            rc = errmsg_set(e, ERR_DATA, "%s ('%s' frame %llu at offset %llu)", what, name,
                            (unsigned long long)fi->number, (unsigned long long)fi->offset);
            break;
        }
        res->frames++;
        res->raw_bytes += fi->raw_bytes;
        res->stored_bytes += fi->stored_bytes;
        res->intact_bytes = trace_reader_offset(r);
    }
    snprintf(res->content_hash, sizeof res->content_hash, "%s", trace_reader_computed_hash(r));
    snprintf(res->hash_name, sizeof res->hash_name, "%s", trace_reader_hash_name(r));
    if (rc < 0)
        return rc;
    const char *what;
    uint64_t off;
    int ic = trace_reader_index_problem(r, &what, &off);
    if (ic) {
        if (ic == ERR_NOTFOUND)
            ic = ERR_DATA;
        return errmsg_set(e, ic, "%s ('%s' frame %llu at offset %llu)", what, name,
                          (unsigned long long)res->frames, (unsigned long long)off);
    }
    uint64_t io = trace_reader_stream_end(r);
    if (hdr_raw != ix->entries[0]->raw_bytes || hdr_stored != ix->entries[0]->stored_bytes)
        return errmsg_set(e, ERR_DATA,
                          "index entry disagrees with the frame ('%s' frame 0 at "
                          "offset 16)",
                          name);
    if (res->frames != ix->n_entries)
        return errmsg_set(e, ERR_DATA,
                          "index lists %zu frames, the file has %llu ('%s' frame "
                          "%llu at offset %llu)",
                          ix->n_entries, (unsigned long long)res->frames, name,
                          (unsigned long long)res->frames, (unsigned long long)io);
    if (strcmp(ix->content_hash, res->content_hash) != 0)
        return errmsg_set(e, ERR_DATA,
                          "content hash mismatch: index %s, frames %s ('%s' frame "
                          "%llu at offset %llu)",
                          ix->content_hash, res->content_hash, name,
                          (unsigned long long)res->frames, (unsigned long long)io);
    res->index_ok = true;
    return 0;
}

/* The caller's options (or the defaults) with content hashing on. */
static void hashing_opts(struct trace_reader_opts *o, const struct trace_reader_opts *in)
{
    if (in)
        *o = *in;
    else
        trace_reader_opts_default(o);
    o->compute_hash = true;
    /* verify reads damaged traces to report what is wrong with them */
    o->allow_partial = true;
    o->warn_damage = false;
}

/* Verifies the reader an open returned (rc: the open's code, its message already in e). */
static int verify_open(struct trace_reader *r, int rc, struct trace_verify_result *res,
                       struct errmsg *e)
{
    if (rc)
        return rc;
    rc = verify_reader(r, res, e);
    trace_reader_free(r);
    return rc;
}

int trace_verify(const char *path, const struct trace_reader_opts *opts,
                 struct trace_verify_result *res, struct errmsg *e)
{
    struct trace_verify_result tmp;
    if (!res)
        res = &tmp;
    memset(res, 0, sizeof *res);
    struct trace_reader_opts o;
    hashing_opts(&o, opts);
    struct trace_reader *r;
    int rc = trace_reader_open(&r, path, &o, e);
    return verify_open(r, rc, res, e);
}

int trace_verify_src(struct src *s, const char *name, const struct trace_reader_opts *opts,
                     struct trace_verify_result *res, struct errmsg *e)
{
    struct trace_verify_result tmp;
    if (!res)
        res = &tmp;
    memset(res, 0, sizeof *res);
    struct trace_reader_opts o;
    hashing_opts(&o, opts);
    struct trace_reader *r;
    int rc = trace_reader_open_src(&r, s, name, &o, e);
    return verify_open(r, rc, res, e);
}
