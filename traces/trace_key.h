/*
 * trace_key: the index keys of a frame, (step, layer, head), and the per-record-type rule
 * that derives them from a record's fields (docs/design.md#the-trace-container,
 * docs/trace-format.md).
 *
 * The writer indexes a frame under the key its caller passes, or under trace_record_key()
 * when the caller passes NULL; `acceltrace recover` rebuilds the index of a .partial file
 * with trace_record_key(), so captures should pass NULL or the same keys.
 */
#ifndef ACCELTRACE_TRACE_KEY_H
#define ACCELTRACE_TRACE_KEY_H

#include <stdint.h>

#include "formats/trace.pb-c.h"

/* Index keys of one frame; -1 where a key does not apply. */
struct trace_key {
    int32_t step;
    int32_t layer;
    int32_t head;
};

/*
 * Keys of a record, by type (decision, one row per type):
 *   disc_step: step = k;   disc_mask: step, layer = block, head;
 *   salca_prefill: layer = l, head = g (KV head);   salca_select: step = t, layer = l, head = h;
 *   salca_token: step = t;   kura_step, kura_tiles: step;   test: step, layer, head;
 *   others (header, summary, index): all -1.
 * Values above INT32_MAX are stored as -1.
 */
void trace_record_key(const Acceltrace__Record *rec, struct trace_key *key);

#endif
