/*
 * kura_pick: one reverse step of a kura trace and its stored tiles (see the header).
 */
#include "analysis/kura_pick.h"

#include <stdio.h>
#include <string.h>

#include "common/mem.h"
#include "traces/trace_reader.h"

static int pick_begin(void *self, const struct trace_scan_pos *pos, struct errmsg *e)
{
    struct kura_pick *tp = self;
    const Acceltrace__TraceHeader *hdr = trace_reader_header(pos->r);
    if (!hdr || strcmp(hdr->workload, "kura") || !hdr->kura)
        return errmsg_set(e, ERR_DATA, "not a kura trace ('%s' has workload '%s')", pos->path,
                          hdr && hdr->workload ? hdr->workload : "");
    tp->hh = (int)(hdr->kura->h > 16384 ? 0 : hdr->kura->h);
    tp->hw = (int)(hdr->kura->w > 16384 ? 0 : hdr->kura->w);
    if (tp->step == INT64_MIN && hdr->kura->t >= 2)
        tp->step = (int64_t)hdr->kura->t - 1; /* the first drift evaluation */
    return 0;
}

static int pick_record(void *self, const struct trace_scan_pos *pos, Acceltrace__Record **rec,
                       struct errmsg *e)
{
    struct kura_pick *tp = self;
    const Acceltrace__Record *r = *rec;
    if (r->body_case == ACCELTRACE__RECORD__BODY_KURA_STEP && !tp->found) {
        const Acceltrace__KuraStep *ks = r->kura_step;
        if (ks->role == ACCELTRACE__KURA_ROLE__KURA_ROLE_REVERSE &&
            (tp->step == INT64_MIN || ks->step == tp->step)) {
            int rc = kura_step_decode(ks, tp->hh, tp->hw, &tp->info, &tp->q, e);
            if (rc) {
                char why[sizeof e->text];
                snprintf(why, sizeof why, "%s", e->text);
                return errmsg_set(e, rc, "%s ('%s')", why, pos->path);
            }
            tp->found = 1;
        }
    } else if (r->body_case == ACCELTRACE__RECORD__BODY_KURA_TILES && !tp->stored) {
        const Acceltrace__KuraTiles *kt = r->kura_tiles;
        if ((tp->step == INT64_MIN || kt->step == tp->step) && (int)kt->n_h == tp->nh &&
            (int)kt->n_w == tp->nw) {
            tp->stored = *rec;
            *rec = NULL;
        }
    }
    return 0;
}

static int pick_end(void *self, const struct trace_scan_pos *pos, struct errmsg *e)
{
    (void)e;
    struct kura_pick *tp = self;
    snprintf(tp->hash, sizeof tp->hash, "%s", trace_reader_content_hash(pos->r));
    return 0;
}

const struct analyzer_ops kura_pick_ops = {
    .name = "kura_pick",
    .begin = pick_begin,
    .record = pick_record,
    .end = pick_end,
};

void kura_pick_release(struct kura_pick *tp)
{
    if (!tp)
        return;
    trace_record_free(tp->stored);
    mem_free(tp->q);
    tp->stored = NULL;
    tp->q = NULL;
}
