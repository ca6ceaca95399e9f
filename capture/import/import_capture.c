/*
 * import_capture: masks and selections from numpy .npz files as traces. See
 * import_capture.h; the formats are in docs/interop.md#import.
 */
#include "capture/import/import_capture.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/disc/dit.h"
#include "common/buf.h"
#include "common/mem.h"
#include "common/sha256.h"
#include "formats/bitset.h"
#include "formats/npz.h"
#include "formats/varint.h"
#include "traces/trace_salca.h"

void import_params_default(struct import_params *p)
{
    memset(p, 0, sizeof *p);
    p->refresh = 1;
    p->context = -1;
    p->head_dim = 128;
}

struct imp {
    struct import_params p;
    bool masks;
    struct import_result res;
    char detail[1400];
    struct dit_config cfg;
    struct npz_array *a, *counts, *nctx;
    uint32_t steps, L, H, N, K; /* K: padded width of `selected` (0: ragged) */
    uint32_t *ctx;              /* [steps] keys per step (selections) */
    char *params_json, *model_json;
    Acceltrace__DiscHeader dh;
    Acceltrace__SalcaHeader sh;
    Acceltrace__SalcaMethodInfo mi, *mip;
};

static void imp_close(void *inst)
{
    struct imp *m = inst;
    if (!m)
        return;
    npz_array_close(m->a);
    npz_array_close(m->counts);
    npz_array_close(m->nctx);
    mem_free(m->ctx);
    free(m->params_json);
    free(m->model_json);
    mem_free(m);
}

const struct import_result *import_capture_result(const void *inst)
{
    return &((const struct imp *)inst)->res;
}

/* ERR_DATA naming the array's shape and the one expected. */
static int shape_err(struct imp *m, const char *name, const char *want, struct errmsg *e)
{
    return errmsg_set(e, ERR_DATA, "'%s' of '%s' has shape %s; %s", name, m->p.path, m->res.shape,
                      want);
}

/* Common part of both opens: the instance, the file's sha256 and the main array. */
static int imp_begin(struct imp **out, const void *params, bool masks, const char *array,
                     struct errmsg *e)
{
    struct imp *m = mem_calloc(1, sizeof *m);
    *out = m;
    if (!m)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    m->p = *(const struct import_params *)params;
    m->masks = masks;
    if (!m->p.path)
        return errmsg_set(e, ERR_USAGE, "no input file");
    int rc = sha256_file(m->p.path, m->res.sha256, e);
    if (rc)
        return rc == ERR_IO ? errmsg_set(e, ERR_NOINPUT, "%s", errmsg_text(e)) : rc;
    snprintf(m->detail, sizeof m->detail, "imported %s sha256 %s", m->p.path, m->res.sha256);
    if ((rc = npz_array_open(&m->a, m->p.path, array, e)))
        return rc;
    npz_shape_text(npz_array_shape(m->a), npz_array_ndim(m->a), m->res.shape, sizeof m->res.shape);
    return 0;
}

static int masks_open(void **inst, const void *params, struct errmsg *e)
{
    struct imp *m = NULL;
    int rc = imp_begin(&m, params, true, "masks", e);
    *inst = NULL;
    if (rc)
        goto fail;
    if (!m->p.model || (rc = dit_config_get(&m->cfg, m->p.model, m->p.image_size, e)))
        goto fail;
    if (m->p.refresh < 1) {
        rc = errmsg_set(e, ERR_USAGE, "--refresh must be >= 1");
        goto fail;
    }
    const uint64_t *s = npz_array_shape(m->a);
    char want[200];
    snprintf(want, sizeof want,
             "model '%s' at %d px wants (steps, %d, %d, %d, %d) (steps, blocks, heads, tokens, "
             "tokens)",
             m->cfg.name, m->cfg.image, m->cfg.depth, m->cfg.heads, m->cfg.tokens, m->cfg.tokens);
    if (npz_array_ndim(m->a) != 5 || s[0] < 1 || s[0] > 1000 || s[1] != (uint64_t)m->cfg.depth ||
        s[2] != (uint64_t)m->cfg.heads || s[3] != (uint64_t)m->cfg.tokens ||
        s[4] != (uint64_t)m->cfg.tokens) {
        rc = shape_err(m, "masks", want, e);
        goto fail;
    }
    if (!npz_array_is_bool(m->a)) {
        rc = errmsg_set(e, ERR_FORMAT, "'masks' of '%s' has dtype '%s' (bool wanted)", m->p.path,
                        npz_array_dtype(m->a));
        goto fail;
    }
    m->steps = (uint32_t)s[0];
    m->L = (uint32_t)m->cfg.depth, m->H = (uint32_t)m->cfg.heads, m->N = (uint32_t)m->cfg.tokens;
    *inst = m;
    return 0;
fail:
    imp_close(m);
    return rc;
}

/* The optional arrays of a selections file and the keys of each step. */
static int sel_context(struct imp *m, struct errmsg *e)
{
    int rc = npz_array_open(&m->nctx, m->p.path, "n_ctx", e);
    if (rc && rc != ERR_NOTFOUND)
        return rc;
    if (!(m->ctx = mem_calloc(m->steps, sizeof *m->ctx)))
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    if (m->nctx) {
        if (npz_array_ndim(m->nctx) != 1 || npz_array_shape(m->nctx)[0] != m->steps)
            return errmsg_set(e, ERR_DATA, "'n_ctx' of '%s' must have shape (%u,)", m->p.path,
                              m->steps);
        for (uint32_t t = 0; t < m->steps; t++) {
            int64_t v;
            if ((rc = npz_array_read(m->nctx, &v, 1, e)))
                return rc;
            if (v < 1 || v > TRACE_SALCA_MAX_CTX)
                return errmsg_set(e, ERR_DATA, "n_ctx[%u] = %lld of '%s' out of 1..%u", t,
                                  (long long)v, m->p.path, (unsigned)TRACE_SALCA_MAX_CTX);
            m->ctx[t] = (uint32_t)v;
        }
        return 0;
    }
    if (m->p.context < 0)
        return errmsg_set(e, ERR_USAGE, "'%s' has no n_ctx array: give --context N", m->p.path);
    for (uint32_t t = 0; t < m->steps; t++) {
        uint64_t v = (uint64_t)m->p.context + t + 1; /* n = n0 + t + 1 keys */
        if (v > TRACE_SALCA_MAX_CTX)
            return errmsg_set(e, ERR_USAGE, "--context %lld too large", (long long)m->p.context);
        m->ctx[t] = (uint32_t)v;
    }
    return 0;
}

static int sel_open(void **inst, const void *params, struct errmsg *e)
{
    struct imp *m = NULL;
    int rc = imp_begin(&m, params, false, "selected", e);
    *inst = NULL;
    if (rc)
        goto fail;
    rc = npz_array_open(&m->counts, m->p.path, "counts", e);
    if (rc && rc != ERR_NOTFOUND)
        goto fail;
    const uint64_t *s = npz_array_shape(m->counts ? m->counts : m->a);
    int nd = npz_array_ndim(m->counts ? m->counts : m->a);
    if (m->counts) {
        npz_shape_text(s, nd, m->res.shape, sizeof m->res.shape);
        if (nd != 3 || npz_array_ndim(m->a) != 1) {
            rc = shape_err(m, "counts",
                           "ragged selections want counts (steps, layers, heads) "
                           "and a flat selected",
                           e);
            goto fail;
        }
    } else if (nd != 4) {
        rc = shape_err(m, "selected", "want (steps, layers, heads, k) padded with -1", e);
        goto fail;
    }
    char want[160];
    snprintf(want, sizeof want, "--layers %u --heads %u want (steps, %u, %u%s)", m->p.layers,
             m->p.heads, m->p.layers, m->p.heads, m->counts ? "" : ", k");
    if (s[0] < 1 || s[0] > 100000 || s[1] < 1 || s[1] > 4096 || s[2] < 1 || s[2] > 4096 ||
        (m->p.layers && s[1] != m->p.layers) || (m->p.heads && s[2] != m->p.heads)) {
        rc = shape_err(m, m->counts ? "counts" : "selected", want, e);
        goto fail;
    }
    m->steps = (uint32_t)s[0], m->L = (uint32_t)s[1], m->H = (uint32_t)s[2];
    m->K = m->counts ? 0 : (uint32_t)(s[3] < UINT32_MAX ? s[3] : UINT32_MAX);
    if (m->p.kv_heads && (m->p.kv_heads > m->H || m->H % m->p.kv_heads)) {
        rc =
            errmsg_set(e, ERR_USAGE, "--kv-heads %u must divide the %u heads", m->p.kv_heads, m->H);
        goto fail;
    }
    if ((rc = sel_context(m, e)))
        goto fail;
    *inst = m;
    return 0;
fail:
    imp_close(m);
    return rc;
}

static uint64_t imp_estimate(const void *inst)
{
    const struct imp *m = inst;
    uint64_t n = m->masks ? m->N : 0;
    if (!m->masks)
        for (uint32_t t = 0; t < m->steps; t++)
            n = m->ctx[t] > n ? m->ctx[t] : n;
    /* a row (or a job) as int64, the packed mask (or index list) and its record, the npz
     * window and zlib state (2 x 64 KiB + 256 KiB), the trace writer's frames (8 MiB) */
    double b = 8.0 * n + (m->masks ? 2.0 * n * ((n + 63) / 64) * 8.0 + 8.0 * n : 12.0 * n) +
               (double)(9u << 20) + 4.0 * m->steps;
    return b < 1.8e19 ? (uint64_t)b : UINT64_MAX;
}

static void imp_what(const void *inst, char *what, size_t n)
{
    const struct imp *m = inst;
    snprintf(what, n, "import %s of '%s' %s", m->masks ? "masks" : "selections", m->p.path,
             m->res.shape);
}

static int masks_header(void *inst, Acceltrace__TraceHeader *hdr, struct errmsg *e)
{
    struct imp *m = inst;
    const struct dit_config *g = &m->cfg;
    json_t *pj = json_pack("{s:s,s:s,s:s,s:i,s:i,s:i}", "import", "masks", "file", m->p.path,
                           "sha256", m->res.sha256, "image_size", g->image, "steps", m->steps,
                           "refresh", m->p.refresh);
    json_t *mj = json_pack(
        "{s:s,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:s}", "name", g->name, "depth", g->depth,
        "hidden", g->hidden, "heads", g->heads, "patch", g->patch, "in_channels", g->c_in,
        "out_channels", g->c_out, "caption_width", g->caption, "text_tokens", g->text_tokens,
        "image_size", g->image, "tokens", g->tokens, "family", g->class_cond ? "dit" : "pixart");
    m->params_json = pj ? json_dumps(pj, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    m->model_json = mj ? json_dumps(mj, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(pj);
    json_decref(mj);
    if (!m->params_json || !m->model_json)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    Acceltrace__DiscHeader *dh = &m->dh;
    acceltrace__disc_header__init(dh);
    dh->model = m->cfg.name;
    dh->depth = (uint32_t)g->depth, dh->hidden = (uint32_t)g->hidden;
    dh->heads = (uint32_t)g->heads, dh->head_dim = (uint32_t)g->head_dim;
    dh->ffn_hidden = (uint32_t)g->ffn, dh->patch = (uint32_t)g->patch;
    dh->in_channels = (uint32_t)g->c_in, dh->out_channels = (uint32_t)g->c_out;
    dh->caption_width = (uint32_t)g->caption, dh->text_tokens = (uint32_t)g->text_tokens;
    dh->image_size = (uint32_t)g->image;
    dh->latent_h = dh->latent_w = (uint32_t)g->lat;
    dh->grid_w = (uint32_t)g->grid, dh->tokens = (uint32_t)g->tokens;
    dh->parameters = dit_param_count(g);
    dh->weights_source = "imported";
    dh->text_source = "imported";
    dh->steps = m->steps;
    dh->batch = 1;
    dh->ctr_mode = "off";
    dh->st_mode = "imported";
    dh->st_refresh = (uint32_t)m->p.refresh;
    dh->keep_masks = "all";
    hdr->params_json = m->params_json;
    hdr->model_json = m->model_json;
    hdr->disc = dh;
    hdr->source = "imported";
    hdr->source_detail = m->detail;
    return 0;
}

static int sel_header(void *inst, Acceltrace__TraceHeader *hdr, struct errmsg *e)
{
    struct imp *m = inst;
    json_t *pj =
        json_pack("{s:s,s:s,s:s,s:I,s:i}", "import", "selections", "file", m->p.path, "sha256",
                  m->res.sha256, "context", (json_int_t)m->p.context, "method", (int)m->p.method);
    m->params_json = pj ? json_dumps(pj, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(pj);
    if (!m->params_json)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    Acceltrace__SalcaHeader *sh = &m->sh;
    acceltrace__salca_header__init(sh);
    acceltrace__salca_method_info__init(&m->mi);
    m->mi.id = m->p.method;
    const char *name = trace_salca_method_name(m->p.method);
    m->mi.name = (char *)(name ? name : "imported");
    m->mi.params = "imported";
    m->mip = &m->mi;
    sh->source = "imported";
    sh->n_layers = m->L, sh->n_heads = m->H;
    sh->n_kv_heads = m->p.kv_heads ? m->p.kv_heads : m->H;
    sh->head_dim = m->p.head_dim ? m->p.head_dim : 128;
    sh->n0 = m->p.context >= 0 ? (uint32_t)m->p.context : m->ctx[0] - 1;
    sh->n_steps = m->steps;
    sh->k_mode = "fixed";
    sh->n_methods = 1;
    sh->methods = &m->mip;
    hdr->params_json = m->params_json;
    hdr->model_json = "";
    hdr->salca = sh;
    hdr->source = "imported";
    hdr->source_detail = m->detail;
    return 0;
}

/* One step record: every token computed. */
static int emit_step(struct imp *m, struct capture_sink *sink, uint32_t k, uint8_t *tok,
                     size_t tok_len, struct errmsg *e)
{
    Acceltrace__Record rec = ACCELTRACE__RECORD__INIT;
    Acceltrace__DiscStep st = ACCELTRACE__DISC_STEP__INIT;
    st.k = k;
    st.tau = NAN;
    st.n_kept = m->N;
    st.token_mask.data = tok, st.token_mask.len = tok_len;
    st.diff_mean = st.diff_rms = st.diff_max = NAN;
    st.d_p50 = st.d_p90 = st.d_p99 = st.d_max = NAN;
    st.rel_err = NAN;
    st.st_generated = k % (uint32_t)m->p.refresh == 0;
    rec.body_case = ACCELTRACE__RECORD__BODY_DISC_STEP;
    rec.disc_step = &st;
    return capture_emit(sink, &rec, NULL, e);
}

static int masks_run(void *inst, struct capture_sink *sink, struct errmsg *e)
{
    struct imp *m = inst;
    const uint32_t N = m->N, wpr = bitset_words_per_row(N);
    const size_t row_bytes = (size_t)wpr * 8;
    int64_t *row = mem_alloc((size_t)N * sizeof *row);
    uint8_t *bits = mem_alloc((size_t)N * row_bytes), *tok = mem_calloc(row_bytes, 1);
    uint32_t *row_nnz = mem_alloc((size_t)N * sizeof *row_nnz);
    int rc = 0;
    if (!row || !bits || !tok || !row_nnz) {
        rc = errmsg_set(e, ERR_NOMEM, "out of memory");
        goto done;
    }
    for (uint32_t c = 0; c < N; c++)
        tok[c / 8] |= (uint8_t)(1u << (c % 8));
    capture_progress_begin(sink, (uint64_t)m->steps * m->L * m->H);
    for (uint32_t k = 0; k < m->steps && !rc; k++) {
        if ((rc = emit_step(m, sink, k, tok, row_bytes, e)))
            break;
        for (uint32_t b = 0; b < m->L && !rc; b++)
            for (uint32_t h = 0; h < m->H && !rc; h++) {
                memset(bits, 0, (size_t)N * row_bytes);
                uint64_t nnz = 0;
                for (uint32_t r = 0; r < N && !rc; r++) {
                    if ((rc = npz_array_read(m->a, row, N, e)))
                        break;
                    row_nnz[r] = 0;
                    for (uint32_t c = 0; c < N; c++)
                        if (row[c]) {
                            bits[(size_t)r * row_bytes + c / 8] |= (uint8_t)(1u << (c % 8));
                            row_nnz[r]++;
                        }
                    nnz += row_nnz[r];
                }
                if (rc)
                    break;
                Acceltrace__Record rec = ACCELTRACE__RECORD__INIT;
                Acceltrace__DiscMask dm = ACCELTRACE__DISC_MASK__INIT;
                dm.step = k, dm.block = b, dm.head = h;
                dm.generated = k % (uint32_t)m->p.refresh == 0;
                dm.rows = N;
                dm.nnz = nnz;
                dm.sparsity = 1.0 - (double)nnz / ((double)N * N);
                dm.theta = NAN;
                dm.n_row_nnz = N;
                dm.row_nnz = row_nnz;
                dm.bits.data = bits, dm.bits.len = (size_t)N * row_bytes;
                dm.n_cols = N;
                dm.kept = true;
                rec.body_case = ACCELTRACE__RECORD__BODY_DISC_MASK;
                rec.disc_mask = &dm;
                rc = capture_emit(sink, &rec, NULL, e);
                m->res.jobs++;
                m->res.ones += nnz;
                capture_progress_update(sink, m->res.jobs);
            }
        m->res.steps++;
    }
done:
    mem_free(row);
    mem_free(bits);
    mem_free(tok);
    mem_free(row_nnz);
    return rc;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The indices of job (t, l, h) in v[0..n): drops -1 padding, sorts, checks the range. */
static int sel_job(struct imp *m, uint32_t t, uint32_t l, uint32_t h, int64_t *v, size_t n,
                   uint32_t *idx, size_t *count, struct errmsg *e)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++) {
        if (v[i] == -1 && !m->counts)
            continue;
        if (v[i] < 0 || v[i] >= m->ctx[t])
            return errmsg_set(e, ERR_DATA,
                              "selection (step %u, layer %u, head %u) of '%s' holds index %lld "
                              "outside 0..%u (n_ctx %u)",
                              t, l, h, m->p.path, (long long)v[i], m->ctx[t] - 1, m->ctx[t]);
        v[c++] = v[i];
    }
    qsort(v, c, sizeof *v, cmp_i64);
    for (size_t i = 0; i < c; i++) {
        if (i && v[i] == v[i - 1])
            return errmsg_set(e, ERR_DATA,
                              "selection (step %u, layer %u, head %u) of '%s' holds index %lld "
                              "twice",
                              t, l, h, m->p.path, (long long)v[i]);
        idx[i] = (uint32_t)v[i];
    }
    *count = c;
    return 0;
}

/* Emits one SalcaSelect of count indices. */
static int emit_select(struct imp *m, struct capture_sink *sink, uint32_t t, uint32_t l, uint32_t h,
                       const uint32_t *idx, size_t count, struct buf *b, struct errmsg *e)
{
    buf_clear(b);
    if (varint_encode_indices(b, idx, count))
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    uint32_t runs = 0;
    for (size_t i = 0; i < count; i++)
        runs += i == 0 || idx[i] != idx[i - 1] + 1;
    Acceltrace__Record rec = ACCELTRACE__RECORD__INIT;
    Acceltrace__SalcaSelect s = ACCELTRACE__SALCA_SELECT__INIT;
    uint32_t g = m->p.kv_heads ? m->p.kv_heads : m->H;
    s.t = t, s.l = l, s.h = h;
    s.g = (uint32_t)((uint64_t)h * g / m->H); /* query head h reads g = floor(h G / H) */
    s.method = m->p.method;
    s.n_ctx = m->ctx[t];
    s.k = (uint32_t)count;
    s.count = (uint32_t)count;
    s.sel.data = b->data, s.sel.len = b->len;
    s.recall = s.cosine = s.overlap = NAN;
    s.runs = runs;
    rec.body_case = ACCELTRACE__RECORD__BODY_SALCA_SELECT;
    rec.salca_select = &s;
    m->res.jobs++;
    m->res.ones += count;
    return capture_emit(sink, &rec, NULL, e);
}

static int sel_run(void *inst, struct capture_sink *sink, struct errmsg *e)
{
    struct imp *m = inst;
    uint32_t cap = 0;
    for (uint32_t t = 0; t < m->steps; t++)
        cap = m->ctx[t] > cap ? m->ctx[t] : cap;
    if (m->K > cap)
        cap = m->K;
    int64_t *v = mem_alloc((size_t)cap * sizeof *v);
    uint32_t *idx = mem_alloc((size_t)cap * sizeof *idx);
    struct buf b;
    buf_init(&b);
    int rc = 0;
    if (!v || !idx) {
        rc = errmsg_set(e, ERR_NOMEM, "out of memory");
        goto done;
    }
    uint64_t left = npz_array_count(m->a);
    capture_progress_begin(sink, (uint64_t)m->steps * m->L * m->H);
    for (uint32_t t = 0; t < m->steps && !rc; t++) {
        for (uint32_t l = 0; l < m->L && !rc; l++)
            for (uint32_t h = 0; h < m->H && !rc; h++) {
                int64_t n = m->K;
                if (m->counts && (rc = npz_array_read(m->counts, &n, 1, e)))
                    break;
                if (n < 0 || (m->counts && n > m->ctx[t]) || (uint64_t)n > left) {
                    rc = errmsg_set(e, ERR_DATA,
                                    "counts (step %u, layer %u, head %u) of '%s' is %lld: "
                                    "outside 0..%u or past the end of 'selected'",
                                    t, l, h, m->p.path, (long long)n, m->ctx[t]);
                    break;
                }
                size_t count = 0;
                left -= (uint64_t)n;
                if (!(rc = npz_array_read(m->a, v, (size_t)n, e)) &&
                    !(rc = sel_job(m, t, l, h, v, (size_t)n, idx, &count, e)))
                    rc = emit_select(m, sink, t, l, h, idx, count, &b, e);
                capture_progress_update(sink, m->res.jobs);
            }
        m->res.steps++;
    }
    if (!rc && left)
        rc = errmsg_set(e, ERR_DATA, "'selected' of '%s' has %llu entries past the counts",
                        m->p.path, (unsigned long long)left);
done:
    buf_release(&b);
    mem_free(v);
    mem_free(idx);
    return rc;
}

const struct capture_ops capture_import_masks_ops = {
    .name = "disc",
    .summary = "dense boolean attention masks from an .npz (import masks)",
    .mem_hint = "raise --mem-limit",
    .open = masks_open,
    .mem_estimate = imp_estimate,
    .mem_what = imp_what,
    .header = masks_header,
    .run = masks_run,
    .close = imp_close,
};

const struct capture_ops capture_import_selections_ops = {
    .name = "salca",
    .summary = "selected KV token indices from an .npz (import selections)",
    .mem_hint = "raise --mem-limit",
    .open = sel_open,
    .mem_estimate = imp_estimate,
    .mem_what = imp_what,
    .header = sel_header,
    .run = sel_run,
    .close = imp_close,
};
