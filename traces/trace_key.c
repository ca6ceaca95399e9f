#include "traces/trace_key.h"

static int32_t k32(uint64_t v)
{
    return v > INT32_MAX ? -1 : (int32_t)v;
}

static int32_t ks32(int64_t v)
{
    return (v > INT32_MAX || v < INT32_MIN) ? -1 : (int32_t)v;
}

void trace_record_key(const Acceltrace__Record *rec, struct trace_key *key)
{
    key->step = key->layer = key->head = -1;
    if (!rec)
        return;
    switch (rec->body_case) {
    case ACCELTRACE__RECORD__BODY_DISC_STEP:
        if (rec->disc_step)
            key->step = k32(rec->disc_step->k);
        break;
    case ACCELTRACE__RECORD__BODY_DISC_MASK:
        if (rec->disc_mask) {
            key->step = k32(rec->disc_mask->step);
            key->layer = k32(rec->disc_mask->block);
            key->head = k32(rec->disc_mask->head);
        }
        break;
    case ACCELTRACE__RECORD__BODY_SALCA_PREFILL:
        if (rec->salca_prefill) {
            key->layer = k32(rec->salca_prefill->l);
            key->head = k32(rec->salca_prefill->g);
        }
        break;
    case ACCELTRACE__RECORD__BODY_SALCA_SELECT:
        if (rec->salca_select) {
            key->step = k32(rec->salca_select->t);
            key->layer = k32(rec->salca_select->l);
            key->head = k32(rec->salca_select->h);
        }
        break;
    case ACCELTRACE__RECORD__BODY_SALCA_TOKEN:
        if (rec->salca_token)
            key->step = k32(rec->salca_token->t);
        break;
    case ACCELTRACE__RECORD__BODY_KURA_STEP:
        if (rec->kura_step)
            key->step = ks32(rec->kura_step->step);
        break;
    case ACCELTRACE__RECORD__BODY_KURA_TILES:
        if (rec->kura_tiles)
            key->step = ks32(rec->kura_tiles->step);
        break;
    case ACCELTRACE__RECORD__BODY_TEST:
        if (rec->test) {
            key->step = k32(rec->test->step);
            key->layer = ks32(rec->test->layer);
            key->head = ks32(rec->test->head);
        }
        break;
    default:
        break;
    }
}
