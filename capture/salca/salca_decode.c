/*
 * salca_decode: the records of a salca capture after its header (see salca_capture_impl.h):
 * prefill, the decode steps' selection jobs on the thread pool and their records, the
 * substituted runs, in one of two memory plans (docs/models.md#salca-memory-plan).
 */
#include <math.h>
#include <string.h>

#include "capture/salca/salca_capture_impl.h"
#include "common/mem.h"
#include "formats/varint.h"

/* Lower bound of x in the ascending idx[0..m). */
static uint32_t lower_bound(const uint32_t *idx, uint32_t m, uint32_t x)
{
    uint32_t lo = 0, hi = m;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (idx[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void job_worker(void *ctx, size_t begin, size_t end, int worker)
{
    struct cap *c = ctx;
    struct salca_method_res res[SALCA_M_COUNT], vres;
    for (size_t j = begin; j < end; j++) {
        uint32_t l = c->l_lo + (uint32_t)(j / c->H), h = (uint32_t)(j % c->H);
        const struct salca_kv *kv = &c->kv[(l - c->l_lo) * c->G + h * c->G / c->H];
        const float *q = c->q + j * c->d;
        struct salca_sel_params sp = c->p->sel;
        sp.quest_all = l < c->p->quest_dense_layers;
        salca_job(kv, q, &sp, c->p->methods, true, &c->sc[worker], res);
        for (int m = 0; m < SALCA_NSLOT; m++) {
            if (!slot_on(c->p, m))
                continue;
            struct job_res *x = &c->jr[j * SALCA_NSLOT + m];
            const struct salca_method_res *y = &res[m < SALCA_M_COUNT ? m : 0];
            if (m >= SALCA_M_COUNT) {
                uint32_t vi = (uint32_t)(m - SALCA_M_COUNT), gi = l * c->G + h * c->G / c->H;
                salca_variant_job(kv, c->vheavy + ((size_t)vi * c->L * c->G + gi) * 256, q,
                                  &c->var[vi], &c->p->sel, true, &c->sc[worker],
                                  &res[SALCA_M_DENSE], &vres);
                y = &vres;
            }
            x->K = y->K;
            x->T = y->T;
            x->count = y->count;
            x->runs = y->runs;
            x->recall = y->recall;
            x->cosine = y->cosine;
            x->overlap = y->overlap;
            x->has_hist = y->has_hist && !c->p->no_hist;
            if (x->has_hist)
                memcpy(x->hist, y->hist, sizeof x->hist);
            buf_clear(&x->sel);
            int rc = varint_encode_indices(&x->sel, y->idx, y->count);
            if (rc)
                c->enc_err = rc;
            /* needle recall: the share of the span's dense attention mass that S keeps */
            const float *P = c->sc[worker].P;
            for (uint32_t a = 0; a < c->n_needles; a++) {
                const struct salca_span *s = c->needles[a];
                uint32_t b0 = lower_bound(y->idx, y->count, s->start);
                uint32_t b1 = lower_bound(y->idx, y->count, s->start + s->len);
                double in = 0, all = 0;
                for (uint32_t b = b0; b < b1; b++)
                    in += P[y->idx[b]];
                for (uint32_t i = s->start; i < s->start + s->len; i++)
                    all += P[i];
                x->cov[a] = all > 0 ? (float)(in / all) : 1.0f;
            }
        }
    }
}

static void subst_hook(void *ctx, uint32_t l, const float *q, const float *k, const float *v,
                       float *out)
{
    struct subst *s = ctx;
    struct cap *c = s->c;
    struct salca_method_res res[SALCA_M_COUNT];
    for (uint32_t g = 0; g < c->G; g++)
        (void)salca_kv_append(&s->kv[l * c->G + g], k + (size_t)g * c->d, v + (size_t)g * c->d);
    for (uint32_t h = 0; h < c->H; h++) {
        uint32_t gi = l * c->G + h * c->G / c->H;
        const struct salca_kv *kv = &s->kv[gi];
        const float *qh = q + (size_t)h * c->d;
        if (s->method < SALCA_M_COUNT) {
            struct salca_sel_params sp = c->p->sel;
            sp.quest_all = l < c->p->quest_dense_layers;
            salca_job(kv, qh, &sp, 1u << s->method, false, &c->sc[0], res);
            memcpy(out + (size_t)h * c->d, res[s->method].o, c->d * sizeof(float));
        } else {
            struct salca_method_res vres;
            uint32_t vi = (uint32_t)(s->method - SALCA_M_COUNT);
            salca_variant_job(kv, c->vheavy + ((size_t)vi * c->L * c->G + gi) * 256, qh,
                              &c->var[vi], &c->p->sel, false, &c->sc[0], NULL, &vres);
            memcpy(out + (size_t)h * c->d, vres.o, c->d * sizeof(float));
        }
    }
}

/* ---- the capture: state and phases ---- */

/* Phase 4a, the SalcaPrefill records, one per (l, g). */
static int emit_prefill(struct salca_capture *x, struct capture_sink *sink, struct errmsg *e)
{
    const struct cap *c = &x->c;
    int rc = 0;
    for (uint32_t l = c->l_lo; l < c->l_lo + c->n_l && !rc; l++)
        for (uint32_t g = 0; g < c->G && !rc; g++) {
            const struct salca_kv *kv = &c->kv[(l - c->l_lo) * c->G + g];
            float cs[256];
            for (uint32_t j = 0; j < c->d; j++)
                cs[j] = (float)kv->chan_sum[j];
            Acceltrace__SalcaPrefill pf = ACCELTRACE__SALCA_PREFILL__INIT;
            pf.l = l;
            pf.g = g;
            pf.n0 = c->n0;
            pf.heavy.data = (uint8_t *)kv->heavy;
            pf.heavy.len = c->r;
            pf.n_chan_sum = c->d;
            pf.chan_sum = cs;
            /* heavy-set stability snapshots (docs/salca.md#figures plot 7), r bytes per ladder
             * entry */
            uint8_t ph[SALCA_PREFIX_MAX * 256];
            for (uint32_t a = 0; a < kv->n_prefix; a++)
                memcpy(ph + (size_t)a * c->r, kv->prefix_heavy[a], c->r);
            pf.n_prefix_len = kv->n_prefix;
            pf.prefix_len = (uint32_t *)kv->prefix_len;
            pf.prefix_heavy.data = ph;
            pf.prefix_heavy.len = (size_t)kv->n_prefix * c->r;
            Acceltrace__Record rec = ACCELTRACE__RECORD__INIT;
            rec.body_case = ACCELTRACE__RECORD__BODY_SALCA_PREFILL;
            rec.salca_prefill = &pf;
            rc = capture_emit(sink, &rec, NULL, e);
        }
    return rc;
}

/* Phase 4b, the substituted runs start from the dense prefill (docs/salca.md#metrics). */
static int subst_setup(struct salca_capture *x, struct errmsg *e)
{
    struct cap *c = &x->c;
    for (int m = 0; m < SALCA_NSLOT; m++) {
        if (!slot_on(&x->p, m))
            continue;
        x->sub[m].c = c;
        x->sub[m].method = m;
        x->sub[m].kv = mem_calloc((size_t)c->L * c->G, sizeof *x->sub[m].kv);
        if (!x->sub[m].kv)
            return errmsg_set(e, ERR_NOMEM, "out of memory");
        for (uint32_t i = 0; i < c->L * c->G; i++) {
            int rc = salca_kv_copy(&x->sub[m].kv[i], &c->kv[i]);
            if (rc)
                return errmsg_set(e, rc, "out of memory for the substituted runs");
        }
    }
    return 0;
}

/* Adds job result r of slot m (layer l, context n) to the aggregates at job index j. */
static void acc_add(struct salca_capture *x, int m, uint32_t l, uint32_t n, uint64_t j,
                    const struct job_res *r)
{
    struct salca_acc *a = &x->acc;
    a->recall[m][j] = r->recall;
    a->cos[m][j] = r->cosine;
    a->ret[m][j] = (double)r->count / n;
    a->runlen[m][j] = r->runs ? (double)r->count / r->runs : 0.0;
    a->over[m][j] = ((double)r->count - r->K) / n;
    bool counted = x->mdl || l >= x->p.synth.early_layers;
    for (uint32_t i = 0; i < x->c.n_needles && counted; i++) {
        if (r->cov[i] < a->cov_min[m][i])
            a->cov_min[m][i] = r->cov[i];
        a->cov_sum[m][i] += r->cov[i];
    }
}

/* Phase 4c, the SalcaSelect records of decode step t, per (l, h, method) in that order. */
static int emit_selects(struct salca_capture *x, uint32_t t, struct capture_sink *sink,
                        struct errmsg *e)
{
    const struct cap *c = &x->c;
    uint32_t n = c->n0 + t + 1;
    int rc = 0;
    for (uint32_t l = c->l_lo; l < c->l_lo + c->n_l && !rc; l++)
        for (uint32_t h = 0; h < c->H && !rc; h++) {
            size_t j = (size_t)(l - c->l_lo) * c->H + h;
            for (int m = 0; m < SALCA_NSLOT && !rc; m++) {
                if (!slot_on(&x->p, m))
                    continue;
                struct job_res *r = &c->jr[j * SALCA_NSLOT + m];
                Acceltrace__SalcaSelect s = ACCELTRACE__SALCA_SELECT__INIT;
                s.t = t;
                s.l = l;
                s.h = h;
                s.g = h * c->G / c->H;
                s.method = slot_id(m);
                s.n_ctx = n;
                s.k = r->K;
                s.threshold = r->T;
                s.count = r->count;
                s.sel.data = r->sel.data;
                s.sel.len = r->sel.len;
                s.recall = r->recall;
                s.cosine = r->cosine;
                s.overshoot = (int64_t)r->count - (int64_t)r->K;
                s.runs = r->runs;
                s.overlap = r->overlap;
                if (r->has_hist) {
                    s.n_hist = 256;
                    s.hist = r->hist;
                }
                Acceltrace__Record rec = ACCELTRACE__RECORD__INIT;
                rec.body_case = ACCELTRACE__RECORD__BODY_SALCA_SELECT;
                rec.salca_select = &s;
                if ((rc = capture_emit(sink, &rec, NULL, e)))
                    break;
                x->res.selects++;
                x->res.sel_bytes += r->sel.len;
                acc_add(x, m, l, n, x->acc.jobs_done, r);
            }
            if (x->mdl || l >= x->p.synth.early_layers)
                for (uint32_t a = 0; a < c->n_needles; a++)
                    x->acc.cov_n[a]++;
            x->acc.jobs_done++;
        }
    return rc;
}

/* Phase 4d, the substituted runs of step t (teacher-forced: the dense input token, each
 * method's own cache) and their SalcaToken record; next is the dense run's token. */
static int emit_token(struct salca_capture *x, uint32_t t, uint32_t next, float *logits,
                      struct capture_sink *sink, struct errmsg *e)
{
    const struct nn_llama *mdl = x->mdl;
    Acceltrace__SalcaToken tk = ACCELTRACE__SALCA_TOKEN__INIT;
    uint32_t ids[SALCA_NSLOT], toks[SALCA_NSLOT];
    size_t k = 0;
    int rc = 0;
    for (int m = 0; m < SALCA_NSLOT && !rc; m++) {
        if (!slot_on(&x->p, m))
            continue;
        rc = nn_llama_decode(mdl, NULL, x->c.n0 + t, x->token, subst_hook, &x->sub[m], logits, e);
        ids[k] = slot_id(m);
        toks[k] = rc ? 0 : nn_llama_argmax(logits, mdl->cfg.V);
        const float *dl = salca_source_logits(x->src);
        double md = 0, mx = 0;
        for (uint32_t i = 0; i < mdl->cfg.V && !rc; i++) {
            md = fmax(md, fabs((double)logits[i] - dl[i]));
            mx = fmax(mx, fabs((double)dl[i]));
        }
        if (mx > 0 && md / mx > x->acc.ldiff[m])
            x->acc.ldiff[m] = md / mx;
        x->acc.agree[m] += toks[k] == next;
        k++;
    }
    if (rc)
        return rc;
    tk.t = t;
    tk.dense_token = next;
    tk.n_methods = k;
    tk.methods = ids;
    tk.n_tokens = k;
    tk.tokens = toks;
    Acceltrace__Record rec = ACCELTRACE__RECORD__INIT;
    rec.body_case = ACCELTRACE__RECORD__BODY_SALCA_TOKEN;
    rec.salca_token = &tk;
    return capture_emit(sink, &rec, NULL, e);
}

/* The source's decode step t for the layers the stores hold; *next: the dense greedy token
 * (model source). */
static int source_step(struct salca_capture *x, uint32_t t, uint32_t *next, struct errmsg *e)
{
    struct cap *c = &x->c;
    *next = 0;
    if (!c->layer_major)
        return salca_source_step(x->src, t, x->token, c->kv, c->q, next, e);
    return salca_source_step_layers(x->src, t, c->l_lo, c->l_lo + c->n_l, c->kv, c->q, e);
}

/* Phase 4, decode step t over the layers held: source step, the selection jobs on the pool,
 * their records and the substituted runs. */
static int decode_step(struct salca_capture *x, uint32_t t, float *logits,
                       struct capture_sink *sink, struct errmsg *e)
{
    struct cap *c = &x->c;
    uint32_t next = 0;
    int rc = source_step(x, t, &next, e);
    if (rc)
        return rc;
    c->enc_err = 0;
    pool_for(c->pool, (size_t)c->n_l * c->H, job_worker, c);
    if (c->enc_err)
        return errmsg_set(e, c->enc_err, "cannot encode a selection");
    if ((rc = emit_selects(x, t, sink, e)))
        return rc;
    if (x->subst_on && (rc = emit_token(x, t, next, logits, sink, e)))
        return rc;
    x->token = next;
    return 0;
}

/*
 * A resumed run: steps [0, t_end) of the source again, without jobs or records, so the
 * stores (and the substituted runs' own caches) hold what they held when the checkpoint
 * was written. The sources are deterministic; the model source's greedy tokens must come
 * out as the checkpoint recorded them (checked by salca_ckpt.c).
 */
static int replay_steps(struct salca_capture *x, uint32_t t_end, float *logits, struct errmsg *e)
{
    int rc = 0;
    for (uint32_t t = 0; t < t_end && !rc; t++) {
        uint32_t next = 0;
        if ((rc = source_step(x, t, &next, e)))
            break;
        for (int m = 0; x->subst_on && m < SALCA_NSLOT && !rc; m++)
            if (slot_on(&x->p, m))
                rc = nn_llama_decode(x->mdl, NULL, x->c.n0 + t, x->token, subst_hook, &x->sub[m],
                                     logits, e);
        x->token = next;
    }
    return rc;
}

/* Step-major plan: every layer's stores resident (filled by prepare's prefill); the
 * prefill records, then per step its selections. Units: decode steps. */
static int run_resident(struct salca_capture *x, struct capture_sink *sink, float *logits,
                        struct errmsg *e)
{
    struct cap *c = &x->c;
    uint64_t u0 = sink->resume_unit;
    int rc = u0 ? 0 : emit_prefill(x, sink, e);
    if (!rc && x->subst_on)
        rc = subst_setup(x, e);
    capture_progress_begin(sink, c->N);
    if (!rc)
        rc = replay_steps(x, (uint32_t)u0, logits, e);
    if (!rc && u0 && x->token != x->resume_token)
        rc = errmsg_set(e, ERR_DATA,
                        "resumed source gives token %u before step %llu, the checkpoint %u",
                        x->token, (unsigned long long)u0, x->resume_token);
    for (uint32_t t = (uint32_t)u0; t < c->N && !rc; t++) {
        if ((rc = decode_step(x, t, logits, sink, e)))
            break;
        capture_progress_update(sink, t + 1);
        rc = capture_checkpoint(sink, t + 1, e);
    }
    return rc;
}

/* Generates layer l alone into the stores (released and made again: one layer's worth)
 * and the ablation variants' heavy channels of its groups. */
static int layer_prefill(struct salca_capture *x, uint32_t l, struct errmsg *e)
{
    struct cap *c = &x->c;
    int rc;
    c->l_lo = l;
    for (uint32_t g = 0; g < c->G; g++) {
        salca_kv_release(&c->kv[g]);
        if ((rc = salca_kv_init(&c->kv[g], c->d, c->r, c->cap_tokens, x->p.quest_page)))
            return errmsg_set(e, rc, "cannot allocate the KV stores");
    }
    if ((rc = salca_source_prefill_layers(x->src, l, l + 1, c->kv, e)))
        return rc;
    for (uint32_t v = 0; v < x->p.n_variants; v++)
        for (uint32_t g = 0; g < c->G; g++)
            salca_heavy_select(c->kv[g].chan_sum, c->d, c->var[v].r,
                               c->vheavy + ((size_t)v * c->L * c->G + l * c->G + g) * 256);
    return 0;
}

/* Layer-major plan: one layer's K/V at a time, generated, run through every decode step,
 * and dropped; records per layer: its prefill records, then per step its selections.
 * Units: (layer, step) pairs, l N + t + 1 after step t of layer l. */
static int run_layer_major(struct salca_capture *x, struct capture_sink *sink, float *logits,
                           struct errmsg *e)
{
    struct cap *c = &x->c;
    uint64_t u0 = sink->resume_unit, N = c->N;
    uint32_t l0 = N ? (uint32_t)(u0 / N) : 0, t0 = N ? (uint32_t)(u0 % N) : 0;
    int rc = 0;
    capture_progress_begin(sink, N * c->L);
    for (uint32_t l = l0; l < c->L && !rc; l++) {
        uint32_t ts = l == l0 ? t0 : 0;
        if ((rc = layer_prefill(x, l, e)))
            break;
        if (ts == 0 && (rc = emit_prefill(x, sink, e)))
            break;
        if ((rc = replay_steps(x, ts, logits, e)))
            break;
        for (uint32_t t = ts; t < N && !rc; t++) {
            if ((rc = decode_step(x, t, logits, sink, e)))
                break;
            uint64_t u = (uint64_t)l * N + t + 1;
            capture_progress_update(sink, u);
            /* the last unit always: a run killed in the rewrite after it redoes nothing */
            rc =
                u == N * c->L ? capture_checkpoint_now(sink, u, e) : capture_checkpoint(sink, u, e);
        }
    }
    return rc;
}

/* Place of a record in the step-major plan's order: prefill records by (l, g), then per
 * step t the selections by (l, h) and the token record, then the rest (the summary) as
 * written. Selections of one (t, l, h) differ in method only and keep their file order. */
static void step_major_rank(const struct trace_reorder_entry *x, int64_t r[5])
{
    const struct trace_key *k = &x->key;
    r[0] = 2, r[1] = r[2] = r[3] = r[4] = 0;
    if (x->type == ACCELTRACE__RECORD__BODY_SALCA_PREFILL)
        r[0] = 0, r[3] = k->layer, r[4] = k->head;
    else if (x->type == ACCELTRACE__RECORD__BODY_SALCA_SELECT)
        r[0] = 1, r[1] = k->step, r[3] = k->layer, r[4] = k->head;
    else if (x->type == ACCELTRACE__RECORD__BODY_SALCA_TOKEN)
        r[0] = 1, r[1] = k->step, r[2] = 1;
}

static int step_major_cmp(const struct trace_reorder_entry *a, const struct trace_reorder_entry *b,
                          void *ctx)
{
    (void)ctx;
    int64_t ra[5], rb[5];
    step_major_rank(a, ra);
    step_major_rank(b, rb);
    for (int i = 0; i < 5; i++)
        if (ra[i] != rb[i])
            return ra[i] < rb[i] ? -1 : 1;
    return 0;
}

bool salca_final_order(void *inst, struct capture_order *o)
{
    struct salca_capture *x = inst;
    if (!x->c.layer_major)
        return false;
    o->cmp = step_major_cmp;
    o->ctx = x;
    o->params_json = x->pj_final;
    return true;
}

/* The records after the header: prefill, per step selects and token, then the summary. */
int salca_run(void *inst, struct capture_sink *sink, struct errmsg *e)
{
    struct salca_capture *x = inst;
    float *logits = x->mdl ? mem_alloc(x->mdl->cfg.V * sizeof(float)) : NULL;
    if (x->mdl && !logits)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    int rc =
        x->c.layer_major ? run_layer_major(x, sink, logits, e) : run_resident(x, sink, logits, e);
    mem_free(logits);
    capture_progress_end(sink);
    if (!rc)
        rc = salca_emit_summary(x, sink, e);
    return rc;
}
