#include "traces/trace_recover.h"

#include <stdio.h>
#include <string.h>

#include "common/io.h"
#include "common/mem.h"
#include "traces/trace_internal.h"
#include "traces/trace_reader.h"
#include "traces/trace_writer.h"

int trace_recover(const char *in_path, const char *out_path, struct trace_recover_result *res,
                  struct errmsg *e)
{
    struct trace_recover_result tmp;
    if (!res)
        res = &tmp;
    memset(res, 0, sizeof *res);
    if (strcmp(in_path, out_path) == 0 || io_same_file(in_path, out_path))
        return errmsg_set(e, ERR_USAGE,
                          "recover would overwrite its input: '%s' and '%s' are "
                          "the same file",
                          in_path, out_path);
    struct trace_reader_opts ro;
    trace_reader_opts_default(&ro);
    ro.ignore_index = true;
    struct trace_reader *r = NULL;
    struct trace_writer *w = NULL;
    struct errmsg oe = {0};
    char *tmp_path = NULL;
    int rc = trace_reader_open(&r, in_path, &ro, &oe);
    if (rc) {
        errmsg_set(e, rc, "nothing to recover: %s", oe.text);
        goto out;
    }
    size_t n = strlen(out_path);
    tmp_path = mem_alloc(n + sizeof ".recovering");
    if (!tmp_path) {
        rc = errmsg_set(e, ERR_NOMEM, "out of memory");
        goto out;
    }
    memcpy(tmp_path, out_path, n);
    memcpy(tmp_path + n, ".recovering", sizeof ".recovering");
    /* `recover X.recovering -o X`: the temporary would be the input itself */
    if (strcmp(in_path, tmp_path) == 0 || io_same_file(in_path, tmp_path)) {
        rc = errmsg_set(e, ERR_USAGE,
                        "recover would overwrite its input: '%s' is the temporary '%s' of "
                        "output '%s'; give another -o",
                        in_path, tmp_path, out_path);
        goto out;
    }
    rc = trace_writer_open_raw(&w, out_path, tmp_path, e);
    if (rc)
        goto out;
    snprintf(res->stop, sizeof res->stop, "end of file");
    for (bool first = true;; first = false) {
        if (!first) {
            Acceltrace__Record *rec;
            int nr = trace_reader_next(r, &rec, NULL);
            trace_record_free(rec);
            if (nr < 0) {
                snprintf(res->stop, sizeof res->stop, "%s", trace_reader_errmsg(r));
                break;
            }
            if (nr == 0)
                break;
        }
        const struct trace_frame_info *fi = trace_reader_last_frame(r);
        const uint8_t *stored, *raw;
        size_t stored_len, raw_len;
        trace_reader_last_payload(r, &stored, &stored_len, &raw, &raw_len);
        rc = trace_writer_append_frame(w, fi->type, fi->codec, stored, stored_len, raw, raw_len,
                                       &fi->key);
        if (rc) {
            errmsg_set(e, rc, "%s", trace_writer_errmsg(w));
            goto out;
        }
        res->frames++;
    }
    res->kept_bytes = trace_reader_offset(r);
    {
        struct src s;
        if (src_open_file(&s, in_path, NULL) == 0) {
            res->dropped_bytes = s.size > res->kept_bytes ? s.size - res->kept_bytes : 0;
            src_close(&s);
        }
    }
    rc = trace_writer_finish(w);
    if (rc)
        errmsg_set(e, rc, "%s", trace_writer_errmsg(w));
out:
    /* a failed writer removed its own temporary; one that exists but is not ours stays */
    trace_writer_free(w);
    trace_reader_free(r);
    mem_free(tmp_path);
    return rc;
}
