/*
 * trace_reader_index: the trailer and index of a .atr file (see trace_reader.c): read and
 * checked on open; any problem leaves the reader streaming without an index and says why.
 */
#include "traces/trace_reader.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "common/buf.h"
#include "common/crc32c.h"
#include "common/mem.h"
#include "traces/trace_hash.h"
#include "traces/trace_internal.h"
#include "traces/trace_reader_impl.h"

/* ---- index ---- */

int tr_cmp_sort_key(const void *a, const void *b)
{
    const struct sort_key *x = a, *y = b;
    if (x->type != y->type)
        return x->type < y->type ? -1 : 1;
    if (x->step != y->step)
        return x->step < y->step ? -1 : 1;
    if (x->layer != y->layer)
        return x->layer < y->layer ? -1 : 1;
    if (x->head != y->head)
        return x->head < y->head ? -1 : 1;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* Records why the index is unusable: `what` and the byte offset it concerns. */
void tr_index_problem(struct trace_reader *r, int code, uint64_t off, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    errmsg_vset(&r->index_what, code, fmt, ap);
    va_end(ap);
    r->index_problem_offset = off;
    errmsg_set(&r->index_err, code, "%s ('%s' index at offset %llu)", r->index_what.text, r->name,
               (unsigned long long)off);
}

/* The "what" part of a tr_frame_err message (the text before " ('"). */
static void strip_position(char *text)
{
    char *p = strstr(text, " ('");
    if (p)
        *p = 0;
}

/* Reads and checks trailer and index; on any problem leaves r->index NULL with index_err. */
void tr_load_index(struct trace_reader *r, uint64_t header_end)
{
    uint64_t size = r->src->size;
    if (size < header_end + TRACE_FRAME_HEADER_BYTES + TRACE_TRAILER_BYTES) {
        tr_index_problem(r, ERR_NOTFOUND, size, "no index (no trailer)");
        return;
    }
    uint8_t t[TRACE_TRAILER_BYTES];
    size_t got;
    uint64_t iend = size - TRACE_TRAILER_BYTES;
    if (src_read_at(r->src, iend, t, sizeof t, &got) || got != sizeof t) {
        tr_index_problem(r, ERR_IO, iend, "cannot read the trailer");
        return;
    }
    if (memcmp(t + 8, TRACE_TRAILER_MAGIC, 8) != 0) {
        tr_index_problem(r, ERR_NOTFOUND, size, "no index (no trailer)");
        return;
    }
    uint64_t io = trace_get_u64(t);
    if (io < header_end || io > iend) {
        tr_index_problem(r, ERR_DATA, iend, "bad index offset %llu in the trailer",
                         (unsigned long long)io);
        return;
    }
    struct job j;
    struct errmsg tmp;
    memset(&j, 0, sizeof j);
    if (tr_read_frame(r, io, iend, 0, &j, &tmp)) {
        strip_position(tmp.text);
        tr_index_problem(r, tmp.code, io, "bad index frame: %s", tmp.text);
        goto out;
    }
    if (j.fi.type != TRACE_TYPE_INDEX) {
        tr_index_problem(r, ERR_DATA, io, "trailer points at a %s frame, not the index",
                         trace_record_type_name(j.fi.type));
        goto out;
    }
    if (io + TRACE_FRAME_HEADER_BYTES + j.fi.stored_bytes != iend) {
        tr_index_problem(
            r, ERR_DATA, io, "%llu bytes between the index frame and the trailer",
            (unsigned long long)(iend - io - TRACE_FRAME_HEADER_BYTES - j.fi.stored_bytes));
        goto out;
    }
    if (tr_decode_job(&j, r->dctx[0], r->opts.max_record_bytes, r->name)) {
        strip_position(j.err.text);
        tr_index_problem(r, j.err.code, io, "bad index frame: %s", j.err.text);
        goto out;
    }
    const Acceltrace__TraceIndex *ix = j.rec->index;
    if (!ix) {
        tr_index_problem(r, ERR_DATA, io, "empty index record");
        goto out;
    }
    enum trace_hash_alg alg;
    if (ix->frame_count != ix->n_entries || ix->n_entries == 0 || ix->n_entries > UINT32_MAX ||
        !trace_hash_alg_of(ix->content_hash, &alg)) {
        tr_index_problem(r, ERR_DATA, io, "inconsistent index (frame count, entries or hash)");
        goto out;
    }
    uint64_t expect = TRACE_PREAMBLE_BYTES;
    for (size_t i = 0; i < ix->n_entries; i++) {
        const Acceltrace__IndexEntry *en = ix->entries[i];
        if (en->offset != expect || !trace_type_known(en->record_type) ||
            en->record_type == TRACE_TYPE_INDEX ||
            (i == 0) != (en->record_type == TRACE_TYPE_HEADER) ||
            en->stored_bytes > TRACE_MAX_PAYLOAD) {
            tr_index_problem(r, ERR_DATA, io, "bad index entry %zu", i);
            goto out;
        }
        expect = en->offset + TRACE_FRAME_HEADER_BYTES + en->stored_bytes;
    }
    if (expect != io) {
        tr_index_problem(r, ERR_DATA, io, "index entries end at offset %llu, not at the index",
                         (unsigned long long)expect);
        goto out;
    }
    size_t bytes;
    if (!mem_mul(ix->n_entries, sizeof *r->order, &bytes) || !(r->order = mem_alloc(bytes))) {
        tr_index_problem(r, ERR_NOMEM, io, "out of memory for the index");
        goto out;
    }
    for (size_t i = 0; i < ix->n_entries; i++) {
        const Acceltrace__IndexEntry *en = ix->entries[i];
        r->order[i] =
            (struct sort_key){en->record_type, en->step, en->layer, en->head, (uint32_t)i};
    }
    qsort(r->order, ix->n_entries, sizeof *r->order, tr_cmp_sort_key);
    r->index_rec = j.rec;
    j.rec = NULL;
    r->index = r->index_rec->index;
    r->index_offset = io;
    r->end = io;
out:
    tr_job_release(&j);
}
