/*
 * kura_capture_impl: private to the kura capture (kura_capture.c, kura_header.c): the
 * workload part of a kura trace's header: params_json (only the parameters that change the
 * records), model_json, the provenance and the KuraHeader (docs/models.md#kuramoto-capture). The
 * strings live in a struct kura_header_store the caller owns.
 */
#ifndef ACCELTRACE_KURA_CAPTURE_IMPL_H
#define ACCELTRACE_KURA_CAPTURE_IMPL_H

#include "capture/kura/kura_capture.h"
#include "common/err.h"
#include "formats/trace.pb-c.h"

/* Storage behind the strings of a header made by kura_header_build. */
struct kura_header_store {
    char *params_json, *model_json, *gen_params, *weights_meta;
    char weights_sha[65], weights_name[256];
    char src_detail[1536];
    char *tile_shape_buf;
    char **tile_shapes;
};

/* Frees what kura_header_build allocated; safe on a zeroed store. */
void kura_header_store_release(struct kura_header_store *s);

/*
 * Fills the workload part of hdr (params_json, model_json, seed, provenance, the KuraHeader
 * kh) for p, whose parameters the caller validated; the common fields come from
 * capture_header_common. Strings point into st (release with kura_header_store_release
 * after the header is written). 0, ERR_NOMEM, or ERR_DATA/ERR_IO for bad weights.
 */
int kura_header_build(const struct kura_params *p, Acceltrace__TraceHeader *hdr,
                      Acceltrace__KuraHeader *kh, struct kura_header_store *st, struct errmsg *e);

/* "oracle", "prior", "net", "none". */
const char *kura_score_name(enum kura_score s);

#endif
