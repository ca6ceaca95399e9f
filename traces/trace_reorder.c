/*
 * trace_reorder: a finished trace rewritten in a comparator's order (see the header).
 */
#include "traces/trace_reorder.h"

#include <string.h>

#include "common/io.h"
#include "common/mem.h"
#include "traces/trace_internal.h"
#include "traces/trace_reader.h"
#include "traces/trace_writer.h"

/* Stable merge sort of a[0..n) by o->cmp, through tmp (n entries). */
static void sort_entries(struct trace_reorder_entry *a, struct trace_reorder_entry *tmp, size_t n,
                         const struct trace_reorder_opts *o)
{
    for (size_t w = 1; w < n; w *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * w) {
            size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            size_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                tmp[k++] = o->cmp(&a[j], &a[i], o->ctx) < 0 ? a[j++] : a[i++];
            while (i < mid)
                tmp[k++] = a[i++];
            while (j < hi)
                tmp[k++] = a[j++];
        }
        memcpy(a, tmp, n * sizeof *a);
    }
}

/* The input's records (index entries 1..n-1) sorted by o->cmp into *out (mem_free). */
static int sorted_entries(const Acceltrace__TraceIndex *ix, const struct trace_reorder_opts *o,
                          struct trace_reorder_entry **out, size_t *n_out, const char *in_path,
                          struct errmsg *e)
{
    size_t n = ix->n_entries ? ix->n_entries - 1 : 0, bytes;
    struct trace_reorder_entry *a = NULL, *tmp = NULL;
    if (!mem_mul(n ? n : 1, sizeof *a, &bytes) || !(a = mem_alloc(bytes)) ||
        !(tmp = mem_alloc(bytes))) {
        mem_free(a);
        return errmsg_set(e, ERR_NOMEM, "out of memory for the %zu index entries of '%s'", n,
                          in_path);
    }
    for (size_t i = 0; i < n; i++) {
        const Acceltrace__IndexEntry *en = ix->entries[i + 1];
        a[i] = (struct trace_reorder_entry){
            en->record_type, {en->step, en->layer, en->head}, (uint64_t)i + 1};
    }
    sort_entries(a, tmp, n, o);
    mem_free(tmp);
    *out = a;
    *n_out = n;
    return 0;
}

int trace_reorder(const char *in_path, const char *out_path, const struct trace_reorder_opts *o,
                  struct errmsg *e)
{
    struct trace_reader *r = NULL;
    struct trace_writer *w = NULL;
    struct trace_reorder_entry *ents = NULL;
    char *tmp = NULL;
    size_t n = 0;
    int rc = 0;
    if (!o || !o->cmp)
        return errmsg_set(e, ERR_INTERNAL, "trace_reorder needs a comparator");
    size_t pl = strlen(out_path);
    if (!(tmp = o->tmp_path ? mem_strdup(o->tmp_path) : mem_alloc(pl + sizeof ".partial"))) {
        rc = errmsg_set(e, ERR_NOMEM, "out of memory");
        goto out;
    }
    if (!o->tmp_path) {
        memcpy(tmp, out_path, pl);
        memcpy(tmp + pl, ".partial", sizeof ".partial");
    }
    if (!strcmp(in_path, out_path) || !strcmp(in_path, tmp) || io_same_file(in_path, out_path) ||
        io_same_file(in_path, tmp)) {
        rc = errmsg_set(e, ERR_USAGE, "reorder would overwrite its input '%s'", in_path);
        goto out;
    }
    struct trace_reader_opts ro;
    trace_reader_opts_default(&ro);
    ro.allow_partial = false;
    ro.compute_hash = false;
    if ((rc = trace_reader_open(&r, in_path, &ro, e)))
        goto out;
    const Acceltrace__TraceIndex *ix = trace_reader_index(r);
    if (!ix) {
        rc = errmsg_set(e, ERR_NOTFOUND, "cannot reorder '%s': it has no valid index", in_path);
        goto out;
    }
    if ((rc = sorted_entries(ix, o, &ents, &n, in_path, e)))
        goto out;
    Acceltrace__TraceHeader hdr = *trace_reader_header(r);
    if (o->edit_header && (rc = o->edit_header(&hdr, o->ctx, e)))
        goto out;
    struct trace_writer_opts wo;
    trace_writer_opts_default(&wo);
    wo.zstd_level = o->zstd_level;
    if ((rc = trace_writer_open_tmp(&w, out_path, tmp, &wo, &hdr, e)))
        goto out;
    for (size_t i = 0; i < n; i++) {
        const struct trace_frame_info *fi;
        const uint8_t *stored, *raw;
        size_t stored_len, raw_len;
        if ((rc = trace_reader_entry_frame(r, ents[i].pos, &fi, &stored, &stored_len, &raw,
                                           &raw_len))) {
            errmsg_set(e, rc, "%s", trace_reader_errmsg(r));
            goto out;
        }
        if ((rc = trace_writer_append_frame(w, fi->type, fi->codec, stored, stored_len, raw,
                                            raw_len, &fi->key)))
            goto werr;
    }
    if ((rc = trace_writer_finish(w)))
        goto werr;
    goto out;
werr:
    errmsg_set(e, rc, "%s", trace_writer_errmsg(w));
out:
    trace_writer_free(w); /* removes the temporary unless finished */
    trace_reader_free(r);
    mem_free(ents);
    mem_free(tmp);
    return rc;
}
