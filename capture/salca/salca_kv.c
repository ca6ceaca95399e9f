/*
 * salca_kv: per-(layer, KV head) cache with every compressed copy, and the job driver that
 * runs Salca and its baselines on one query (docs/salca.md).
 */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#else
#pragma GCC optimize("fp-contract=off")
#endif

#include "capture/salca/salca_kv.h"

#include <math.h>
#include <string.h>

#include "capture/salca/salca_quant.h"
#include "common/err.h"
#include "common/mem.h"

/* The names are the trace's (traces/trace_salca), so a capture and its readers cannot differ. */
const char *salca_method_name(int m)
{
    return m >= 0 ? trace_salca_method_name((uint32_t)m) : NULL;
}

int salca_method_id(const char *name)
{
    return trace_salca_method_id(name);
}

static uint32_t n_pages(uint32_t cap, uint32_t page)
{
    return cap / page + 1;
}

uint64_t salca_kv_bytes(uint32_t d, uint32_t r, uint32_t cap, uint32_t page)
{
    uint64_t per_tok = 2ull * d * 4 + 2ull * d + 4 * 4 + salca_key_record_bytes(r);
    return per_tok * cap + 2ull * n_pages(cap, page) * d * 4 + d * 8ull;
}

int salca_kv_init(struct salca_kv *kv, uint32_t d, uint32_t r, uint32_t cap, uint32_t page)
{
    memset(kv, 0, sizeof *kv);
    if (d == 0 || d > 256 || r == 0 || r > d || page == 0 || cap == 0)
        return ERR_USAGE;
    kv->d = d;
    kv->r = r;
    kv->cap = cap;
    kv->page = page;
    kv->rb = salca_key_record_bytes(r);
    size_t cd;
    if (!mem_mul(cap, d, &cd))
        return ERR_LIMIT;
    size_t np = (size_t)n_pages(cap, page) * d;
    kv->k = mem_alloc(cd * sizeof(float));
    kv->v = mem_alloc(cd * sizeof(float));
    kv->k8 = mem_alloc(cd);
    kv->v8 = mem_alloc(cd);
    kv->sk = mem_alloc((size_t)cap * sizeof(float));
    kv->sv = mem_alloc((size_t)cap * sizeof(float));
    kv->pmin = mem_alloc(np * sizeof(float));
    kv->pmax = mem_alloc(np * sizeof(float));
    kv->chan_sum = mem_calloc(d, sizeof(double));
    kv->krec = mem_calloc(cap, kv->rb);
    kv->ks = mem_calloc(cap, sizeof(float));
    kv->kz = mem_calloc(cap, sizeof(float));
    if (!kv->k || !kv->v || !kv->k8 || !kv->v8 || !kv->sk || !kv->sv || !kv->pmin || !kv->pmax ||
        !kv->chan_sum || !kv->krec || !kv->ks || !kv->kz) {
        salca_kv_release(kv);
        return ERR_NOMEM;
    }
    return 0;
}

void salca_kv_release(struct salca_kv *kv)
{
    mem_free(kv->k);
    mem_free(kv->v);
    mem_free(kv->k8);
    mem_free(kv->v8);
    mem_free(kv->sk);
    mem_free(kv->sv);
    mem_free(kv->pmin);
    mem_free(kv->pmax);
    mem_free(kv->chan_sum);
    mem_free(kv->krec);
    mem_free(kv->ks);
    mem_free(kv->kz);
    memset(kv, 0, sizeof *kv);
}

int salca_kv_copy(struct salca_kv *dst, const struct salca_kv *src)
{
    int rc = salca_kv_init(dst, src->d, src->r, src->cap, src->page);
    if (rc)
        return rc;
    size_t cd = (size_t)src->cap * src->d;
    size_t np = (size_t)n_pages(src->cap, src->page) * src->d;
    memcpy(dst->k, src->k, cd * sizeof(float));
    memcpy(dst->v, src->v, cd * sizeof(float));
    memcpy(dst->k8, src->k8, cd);
    memcpy(dst->v8, src->v8, cd);
    memcpy(dst->sk, src->sk, src->cap * sizeof(float));
    memcpy(dst->sv, src->sv, src->cap * sizeof(float));
    memcpy(dst->pmin, src->pmin, np * sizeof(float));
    memcpy(dst->pmax, src->pmax, np * sizeof(float));
    memcpy(dst->chan_sum, src->chan_sum, src->d * sizeof(double));
    memcpy(dst->krec, src->krec, src->cap * src->rb);
    memcpy(dst->ks, src->ks, src->cap * sizeof(float));
    memcpy(dst->kz, src->kz, src->cap * sizeof(float));
    memcpy(dst->heavy, src->heavy, sizeof src->heavy);
    dst->n_prefix = src->n_prefix;
    memcpy(dst->prefix_len, src->prefix_len, sizeof src->prefix_len);
    memcpy(dst->prefix_heavy, src->prefix_heavy, sizeof src->prefix_heavy);
    dst->heavy_ready = src->heavy_ready;
    dst->n = src->n;
    dst->n0 = src->n0;
    return 0;
}

int salca_kv_append(struct salca_kv *kv, const float *k, const float *v)
{
    if (kv->n >= kv->cap)
        return ERR_LIMIT;
    uint32_t i = kv->n++, d = kv->d;
    memcpy(kv->k + (size_t)i * d, k, d * sizeof(float));
    memcpy(kv->v + (size_t)i * d, v, d * sizeof(float));
    kv->sk[i] = salca_int8_quant(k, d, kv->k8 + (size_t)i * d);
    kv->sv[i] = salca_int8_quant(v, d, kv->v8 + (size_t)i * d);
    /* Quest page metadata, updated on append (docs/salca.md#baselines) */
    uint32_t p = i / kv->page;
    float *mn = kv->pmin + (size_t)p * d, *mx = kv->pmax + (size_t)p * d;
    if (i % kv->page == 0) {
        memcpy(mn, k, d * sizeof(float));
        memcpy(mx, k, d * sizeof(float));
    } else {
        for (uint32_t j = 0; j < d; j++) {
            if (k[j] < mn[j])
                mn[j] = k[j];
            if (k[j] > mx[j])
                mx[j] = k[j];
        }
    }
    if (kv->heavy_ready)
        salca_key_record_encode(k, kv->heavy, kv->r, kv->krec + (size_t)i * kv->rb, &kv->ks[i],
                                &kv->kz[i]);
    return 0;
}

void salca_heavy_select(const double *sum, uint32_t d, uint32_t r, uint8_t *heavy)
{
    bool taken[256] = {false};
    for (uint32_t m = 0; m < r; m++) {
        int best = -1;
        for (uint32_t j = 0; j < d; j++)
            if (!taken[j] && (best < 0 || sum[j] > sum[best]))
                best = (int)j; /* strict >: ties keep the lower j (docs/salca.md#heavy-channels) */
        taken[best] = true;
    }
    uint32_t m = 0;
    for (uint32_t j = 0; j < d; j++)
        if (taken[j])
            heavy[m++] = (uint8_t)j;
}

uint32_t salca_prefix_ladder(uint32_t n0, uint32_t lens[SALCA_PREFIX_MAX])
{
    uint32_t k = 0;
    for (uint64_t m = SALCA_PREFIX_MIN; m < n0; m *= 2)
        lens[k++] = (uint32_t)m;
    if (n0)
        lens[k++] = n0;
    return k;
}

void salca_kv_finish_prefill(struct salca_kv *kv)
{
    uint32_t d = kv->d;
    kv->n_prefix = salca_prefix_ladder(kv->n, kv->prefix_len);
    uint32_t a = 0;
    for (uint32_t j = 0; j < d; j++)
        kv->chan_sum[j] = 0.0;
    for (uint32_t i = 0; i < kv->n; i++) {
        const float *k = kv->k + (size_t)i * d;
        for (uint32_t j = 0; j < d; j++)
            kv->chan_sum[j] += fabs((double)k[j]); /* docs/salca.md#heavy-channels, in double */
        /* the running sums over the first i + 1 keys: a stability snapshot (docs/salca.md#figures)
         */
        if (a < kv->n_prefix && i + 1 == kv->prefix_len[a])
            salca_heavy_select(kv->chan_sum, d, kv->r, kv->prefix_heavy[a++]);
    }
    salca_heavy_select(kv->chan_sum, d, kv->r, kv->heavy);
    kv->heavy_ready = true;
    kv->n0 = kv->n;
    for (uint32_t i = 0; i < kv->n; i++)
        salca_key_record_encode(kv->k + (size_t)i * d, kv->heavy, kv->r,
                                kv->krec + (size_t)i * kv->rb, &kv->ks[i], &kv->kz[i]);
}

int salca_scratch_init(struct salca_scratch *sc, uint32_t n_max, uint32_t d, uint32_t r,
                       uint32_t page)
{
    memset(sc, 0, sizeof *sc);
    sc->n_max = n_max;
    sc->d = d;
    sc->r = r;
    size_t n = n_max;
    size_t pages = n_max / page + 1;
    sc->a = mem_alloc(n * sizeof(float));
    sc->s = mem_alloc(n * sizeof(float));
    sc->sp = mem_alloc(n * sizeof(float));
    sc->P = mem_alloc(n * sizeof(float));
    sc->tmp = mem_alloc(n * sizeof(float));
    sc->u = mem_alloc(pages * sizeof(float));
    sc->a8 = mem_alloc(n);
    sc->p8 = mem_alloc(n);
    sc->work = mem_alloc((n + 2 * pages) * sizeof(uint32_t));
    sc->mark = mem_alloc(n * sizeof(uint32_t));
    sc->lut = mem_alloc((size_t)((r + 3) / 4) * 256 * sizeof(int32_t));
    sc->qc = mem_alloc(r);
    sc->q8 = mem_alloc(d);
    sc->vidx = mem_alloc(n * sizeof(uint32_t));
    sc->vo = mem_alloc(d * sizeof(float));
    bool ok = sc->vidx && sc->vo && sc->a && sc->s && sc->sp && sc->P && sc->tmp && sc->u &&
              sc->a8 && sc->p8 && sc->work && sc->mark && sc->lut && sc->qc && sc->q8;
    for (int m = 0; m < SALCA_M_COUNT && ok; m++) {
        sc->idx[m] = mem_alloc(n * sizeof(uint32_t));
        sc->o[m] = mem_alloc(d * sizeof(float));
        ok = sc->idx[m] && sc->o[m];
    }
    if (!ok) {
        salca_scratch_release(sc);
        return ERR_NOMEM;
    }
    return 0;
}

void salca_scratch_release(struct salca_scratch *sc)
{
    mem_free(sc->a);
    mem_free(sc->s);
    mem_free(sc->sp);
    mem_free(sc->P);
    mem_free(sc->tmp);
    mem_free(sc->u);
    mem_free(sc->a8);
    mem_free(sc->p8);
    mem_free(sc->work);
    mem_free(sc->mark);
    mem_free(sc->lut);
    mem_free(sc->qc);
    mem_free(sc->q8);
    mem_free(sc->vidx);
    mem_free(sc->vo);
    for (int m = 0; m < SALCA_M_COUNT; m++) {
        mem_free(sc->idx[m]);
        mem_free(sc->o[m]);
    }
    memset(sc, 0, sizeof *sc);
}

/* Attention on S in the configured precision (docs/salca.md#int8-attention; fp32 for the end-to-end
 * model check). */
static void attend(const struct salca_kv *kv, const float *q, float sq8,
                   const struct salca_sel_params *p, struct salca_scratch *sc, const uint32_t *S,
                   uint32_t m, float *o)
{
    if (p->attn_fp32)
        salca_attend_f32(q, kv->k, kv->v, kv->d, S, m, o, sc->tmp);
    else
        salca_attend_int8(sc->q8, sq8, kv->k8, kv->sk, kv->v8, kv->sv, kv->d, S, m, o, sc->tmp);
}

/* Threshold + filter on pooled INT8 values, shared by Salca and Full_Hist (5.7-5.10). */
static void hist_select(const uint8_t *p8, uint32_t n, uint32_t K, enum salca_cmp cmp,
                        struct salca_method_res *res)
{
    salca_histogram(p8, n, res->hist);
    res->has_hist = true;
    res->K = K;
    res->T = salca_threshold(res->hist, n, K, cmp);
    res->count = salca_filter(p8, n, res->T, res->idx);
}

void salca_job(const struct salca_kv *kv, const float *q, const struct salca_sel_params *p,
               uint32_t mask, bool metrics, struct salca_scratch *sc,
               struct salca_method_res res[SALCA_M_COUNT])
{
    uint32_t n = kv->n, d = kv->d, r = kv->r;
    float rs = sqrtf((float)d);
    for (int m = 0; m < SALCA_M_COUNT; m++) {
        memset(&res[m], 0, sizeof res[m]);
        res[m].idx = sc->idx[m];
        res[m].o = sc->o[m];
    }
    float sq8 = salca_int8_quant(q, d, sc->q8);

    /* Salca (docs/salca.md#selection); always run, its K is every method's K
     * (docs/salca.md#baselines) */
    struct salca_method_res *rsal = &res[SALCA_M_SALCA];
    float sq = salca_query_quant(q, kv->heavy, r, sc->qc);
    int32_t Q = salca_relevance_lut(sc->qc, r, sc->lut);
    salca_relevance(sc->lut, Q, kv->krec, kv->rb, kv->ks, kv->kz, r, n, sc->a);
    float lo, hi;
    salca_int8_scores(sc->a, n, sc->a8, &lo, &hi);
    salca_maxpool_u8(sc->a8, n, p->pool, sc->p8);
    salca_histogram(sc->p8, n, rsal->hist);
    uint32_t K;
    if (p->k_mode == SALCA_K_DYNAMIC) {
        /* docs/salca.md#k-rule: kappa = (hi - lo) s_q / (255 sqrt(d)) */
        double kappa = ((double)hi - (double)lo) * (double)sq / (255.0 * sqrt((double)d));
        K = salca_k_dynamic(rsal->hist, n, kappa, p->p_mass, p->k_min);
    } else {
        K = salca_k_fixed(n, p->rho, p->k_min);
    }
    hist_select(sc->p8, n, K, p->cmp, rsal);
    if (mask & (1u << SALCA_M_SALCA))
        attend(kv, q, sq8, p, sc, rsal->idx, rsal->count, rsal->o);

    /* FP32 full-feature scores for the exact baselines and Dense */
    bool need_s =
        metrics ||
        (mask & ((1u << SALCA_M_STD_TOPK) | (1u << SALCA_M_PL_TOPK) | (1u << SALCA_M_FULL_FEAT)));
    if (need_s)
        for (uint32_t i = 0; i < n; i++)
            sc->s[i] = salca_dot(q, kv->k + (size_t)i * d, d);

    if (metrics || (mask & (1u << SALCA_M_STD_TOPK))) {
        struct salca_method_res *x = &res[SALCA_M_STD_TOPK];
        x->K = K;
        x->count = salca_topk(sc->s, n, K, x->idx, sc->work);
        if (mask & (1u << SALCA_M_STD_TOPK))
            attend(kv, q, sq8, p, sc, x->idx, x->count, x->o);
    }
    if (mask & (1u << SALCA_M_PL_TOPK)) {
        struct salca_method_res *x = &res[SALCA_M_PL_TOPK];
        salca_maxpool_f32(sc->s, n, p->pool, sc->sp);
        x->K = K;
        x->count = salca_topk(sc->sp, n, K, x->idx, sc->work);
        attend(kv, q, sq8, p, sc, x->idx, x->count, x->o);
    }
    if (mask & (1u << SALCA_M_FULL_FEAT)) {
        struct salca_method_res *x = &res[SALCA_M_FULL_FEAT];
        salca_int8_scores(sc->s, n, sc->a8, NULL, NULL);
        salca_maxpool_u8(sc->a8, n, p->pool, sc->p8);
        hist_select(sc->p8, n, K, p->cmp, x);
        attend(kv, q, sq8, p, sc, x->idx, x->count, x->o);
    }
    if (mask & (1u << SALCA_M_QUEST)) {
        struct salca_method_res *x = &res[SALCA_M_QUEST];
        uint32_t pages = (n + kv->page - 1) / kv->page;
        salca_quest_bounds(q, kv->pmin, kv->pmax, pages, d, sc->u);
        x->K = K;
        /* docs/salca.md#baselines options: quest_dense_layers (all pages), quest_min_pages */
        uint32_t kq = p->quest_all ? n : K;
        if ((uint64_t)p->quest_min_pages * kv->page > kq)
            kq = (uint32_t)((uint64_t)p->quest_min_pages * kv->page > n
                                ? (uint64_t)pages * kv->page
                                : (uint64_t)p->quest_min_pages * kv->page);
        x->count = salca_quest_select(sc->u, pages, kv->page, n, kq, x->idx, sc->work);
        attend(kv, q, sq8, p, sc, x->idx, x->count, x->o);
    }
    if (!metrics)
        return;

    /* Dense reference (docs/salca.md#baselines, docs/salca.md#metrics): FP32 softmax over all n,
     * o_dense in FP32 */
    struct salca_method_res *dn = &res[SALCA_M_DENSE];
    for (uint32_t i = 0; i < n; i++)
        sc->P[i] = sc->s[i] / rs;
    salca_softmax(sc->P, n);
    memset(dn->o, 0, d * sizeof(float));
    for (uint32_t i = 0; i < n; i++) {
        const float *vr = kv->v + (size_t)i * d;
        float w = sc->P[i];
        for (uint32_t j = 0; j < d; j++)
            dn->o[j] += w * vr[j];
        dn->idx[i] = i;
    }
    dn->K = n;
    dn->count = n;
    dn->recall = 1.0;
    dn->cosine = 1.0;
    dn->overlap = 1.0;
    dn->runs = 1;

    /* Metrics (docs/salca.md#metrics); overlap against Std_TopK's set */
    uint32_t *mark = sc->mark;
    memset(mark, 0, n * sizeof *mark);
    const struct salca_method_res *st = &res[SALCA_M_STD_TOPK];
    for (uint32_t a = 0; a < st->count; a++)
        mark[st->idx[a]] = 1;
    for (int m = 0; m < SALCA_M_DENSE; m++) {
        if (!(mask & (1u << m)))
            continue;
        struct salca_method_res *x = &res[m];
        x->recall = salca_recall(sc->P, x->idx, x->count);
        x->cosine = salca_cosine(x->o, dn->o, d);
        x->runs = salca_runs(x->idx, x->count);
        uint32_t both = 0;
        for (uint32_t a = 0; a < x->count; a++)
            both += mark[x->idx[a]];
        x->overlap = x->K ? (double)both / x->K : 0.0;
    }
}

void salca_variant_job(const struct salca_kv *kv, const uint8_t *heavy, const float *q,
                       const struct salca_variant *v, const struct salca_sel_params *p,
                       bool metrics, struct salca_scratch *sc, const struct salca_method_res *dense,
                       struct salca_method_res *out)
{
    uint32_t n = kv->n, d = kv->d, r = v->r;
    memset(out, 0, sizeof *out);
    out->idx = sc->vidx;
    out->o = sc->vo;
    /* query codes (docs/salca.md#query-codes generalized to w_q bits; FP32 keeps q) */
    float qf[256];
    int32_t qi[256];
    float sq = 1.0f;
    int32_t Q = 0;
    float Qf = 0.0f;
    if (v->w_q) {
        float lq = (float)((1u << (v->w_q - 1)) - 1), amax = 0.0f;
        for (uint32_t m = 0; m < r; m++)
            if (fabsf(q[heavy[m]]) > amax)
                amax = fabsf(q[heavy[m]]);
        sq = amax / lq;
        for (uint32_t m = 0; m < r; m++) {
            float c = sq == 0.0f ? 0.0f : floorf(q[heavy[m]] / sq + 0.5f);
            qi[m] = c <= -lq ? -(int32_t)lq : c >= lq ? (int32_t)lq : (int32_t)c;
            Q += qi[m];
        }
    } else {
        for (uint32_t m = 0; m < r; m++) {
            qf[m] = q[heavy[m]];
            Qf += qf[m];
        }
    }
    /* keys re-encoded with w_k bits (docs/salca.md#key-records generalized), relevance
     * (docs/salca.md#relevance) */
    float lk = (float)((1u << v->w_k) - 1);
    for (uint32_t i = 0; i < n; i++) {
        const float *k = kv->k + (size_t)i * d;
        float mn = k[heavy[0]], mx = mn;
        for (uint32_t m = 1; m < r; m++) {
            float x = k[heavy[m]];
            if (x < mn)
                mn = x;
            if (x > mx)
                mx = x;
        }
        float z = salca_fp16_round(mn), s = salca_fp16_round((mx - mn) / lk);
        int32_t D = 0;
        float Df = 0.0f;
        for (uint32_t m = 0; m < r && s != 0.0f; m++) {
            float c = floorf((k[heavy[m]] - z) / s + 0.5f);
            int32_t ci = c <= 0.0f ? 0 : c >= lk ? (int32_t)lk : (int32_t)c;
            if (v->w_q)
                D += qi[m] * ci;
            else
                Df += qf[m] * (float)ci;
        }
        float a = v->w_q ? s * (float)D + z * (float)Q : s * Df + z * Qf;
        sc->a[i] = salca_fp16_round(a);
    }
    float lo, hi;
    salca_int8_scores(sc->a, n, sc->a8, &lo, &hi);
    salca_maxpool_u8(sc->a8, n, v->pool ? v->pool : p->pool, sc->p8);
    salca_histogram(sc->p8, n, out->hist);
    out->has_hist = true;
    struct salca_ratio rho = v->rho.num ? v->rho : p->rho;
    uint32_t K;
    if (p->k_mode == SALCA_K_DYNAMIC) {
        double kappa = ((double)hi - (double)lo) * (double)sq / (255.0 * sqrt((double)d));
        K = salca_k_dynamic(out->hist, n, kappa, p->p_mass, p->k_min);
    } else {
        K = salca_k_fixed(n, rho, p->k_min);
    }
    out->K = K;
    out->T = salca_threshold(out->hist, n, K, p->cmp);
    out->count = salca_filter(sc->p8, n, out->T, out->idx);
    float sq8 = salca_int8_quant(q, d, sc->q8);
    attend(kv, q, sq8, p, sc, out->idx, out->count, out->o);
    if (!metrics)
        return;
    out->recall = salca_recall(sc->P, out->idx, out->count);
    out->cosine = salca_cosine(out->o, dense->o, d);
    out->runs = salca_runs(out->idx, out->count);
    uint32_t both = 0;
    for (uint32_t a = 0; a < out->count; a++)
        both += sc->mark[out->idx[a]];
    out->overlap = K ? (double)both / K : 0.0;
}
