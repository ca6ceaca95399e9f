/*
 * a100_model: A100 roofline baseline (specs/disc.md section 7.4; docs/models.md#disc).
 */
#include "replay/a100_model.h"

#include <jansson.h>
#include <math.h>
#include <string.h>

#include "common/mem.h"
#include "replay/model.h"

void a100_hw_default(struct a100_hw *hw)
{
    hw->peak_tflops = 312; /* A100 FP16 dense [paper] */
    hw->hbm_gbs = 1935;    /* A100 80 GB PCIe [paper] */
    hw->eff_linear = 0.60; /* [decision] */
    hw->eff_attn = 0.39;   /* [cited-derived: FlashAttention-2 at seq 1k, head dim 72 on 96] */
    hw->eff_mem = 0.85;    /* [cited: STREAM scale, A100-SXM4-80GB, 1737 of 2039 GB/s] */
    hw->launch_us = 2.56;  /* [cited: back-to-back kernel fit, A100-SXM4-80GB, 2555 ns] */
    hw->power_w = 250;     /* [decision] */
    hw->elem_bytes = 2;    /* FP16 [decision] */
}

/* Kernel classes of the split (struct a100_split). */
enum { K_LINEAR, K_ATTN, K_ELEM };

/*
 * spec 7.4: t = max(FLOP/(peak eff), bytes/(hbm eff_mem)) + launch. When sp is set, the
 * kernel's time is also added to its class's compute- or memory-bound term and the launch.
 */
static double roofline_acc(const struct a100_hw *hw, double flop, double eff, double bytes, int cls,
                           struct a100_split *sp)
{
    double tc = eff > 0 ? flop / (hw->peak_tflops * 1e12 * eff) : 0;
    double tm = bytes / (hw->hbm_gbs * 1e9 * hw->eff_mem);
    double t = fmax(tc, tm) + hw->launch_us * 1e-6;
    if (sp) {
        double r = fmax(tc, tm);
        sp->launch_s += hw->launch_us * 1e-6;
        sp->total_s += t;
        sp->kernels++;
        if (cls == K_ELEM)
            sp->elementwise_s += r;
        else if (cls == K_LINEAR)
            *(tc >= tm ? &sp->linear_compute_s : &sp->linear_memory_s) += r;
        else
            *(tc >= tm ? &sp->attn_compute_s : &sp->attn_memory_s) += r;
    }
    return t;
}

/* The three kernel kinds of spec 7.4, with the optional split (roofline_acc). */
static double lin_acc(const struct a100_hw *hw, uint64_t m, uint64_t ni, uint64_t no,
                      struct a100_split *sp)
{
    double flop = 2.0 * (double)m * (double)ni * (double)no;
    /* spec 7.4: bytes E_b (M N_i + N_i N_o + N_o + M N_o) */
    double bytes =
        (double)hw->elem_bytes * ((double)m * ni + (double)ni * no + (double)no + (double)m * no);
    return roofline_acc(hw, flop, hw->eff_linear, bytes, K_LINEAR, sp);
}

static double att_acc(const struct a100_hw *hw, uint64_t mac, uint64_t elems, struct a100_split *sp)
{
    return roofline_acc(hw, 2.0 * (double)mac, hw->eff_attn, (double)hw->elem_bytes * (double)elems,
                        K_ATTN, sp);
}

static double ew_acc(const struct a100_hw *hw, uint64_t e, int n_in, struct a100_split *sp)
{
    /* spec 7.4: memory only, E_b E (n_in + 1) */
    return roofline_acc(hw, 0, 0, (double)hw->elem_bytes * (double)e * (n_in + 1), K_ELEM, sp);
}

double a100_linear_s(const struct a100_hw *hw, uint64_t m, uint64_t ni, uint64_t no)
{
    return lin_acc(hw, m, ni, no, NULL);
}

double a100_attention_s(const struct a100_hw *hw, uint64_t mac, uint64_t elems)
{
    return att_acc(hw, mac, elems, NULL);
}

double a100_elementwise_s(const struct a100_hw *hw, uint64_t e, int n_in)
{
    return ew_acc(hw, e, n_in, NULL);
}

/* a += k b, term by term. */
static void split_add_scaled(struct a100_split *a, const struct a100_split *b, uint32_t k)
{
    a->linear_compute_s += k * b->linear_compute_s;
    a->linear_memory_s += k * b->linear_memory_s;
    a->attn_compute_s += k * b->attn_compute_s;
    a->attn_memory_s += k * b->attn_memory_s;
    a->elementwise_s += k * b->elementwise_s;
    a->launch_s += k * b->launch_s;
    a->total_s += k * b->total_s;
    a->kernels += (uint64_t)k * b->kernels;
}

/*
 * One dense DiT step (docs/models.md#dit-xl2): timestep MLP once, the class embedding added
 * per batch element, patch embedding; per block the adaLN-Zero modulation (B x d -> 6d),
 * self-attention and FFN with their norms and gated residuals, no cross-attention; the final
 * modulation (d -> 2d), norm, linear and the sampler.
 */
static double step_dit(const struct a100_hw *hw, const struct a100_dims *dm, uint64_t *kernels,
                       struct a100_split *sp)
{
    const uint64_t d = dm->d, b = dm->batch, n = dm->n, bn = b * n, h = dm->h, dh = dm->dh;
    const uint64_t lat = (uint64_t)dm->cin * dm->lat_h * dm->lat_w;
    double s = lin_acc(hw, 1, 256, d, sp) + lin_acc(hw, 1, d, d, sp) + ew_acc(hw, b * d, 2, sp);
    s += lin_acc(hw, bn, (uint64_t)dm->cin * dm->patch * dm->patch, d, sp) +
         ew_acc(hw, bn * d, 2, sp);
    struct a100_split bsp = {0}, *bp = sp ? &bsp : NULL;
    double blk = lin_acc(hw, b, d, 6 * d, bp);                        /* adaLN-Zero */
    blk += ew_acc(hw, bn * d, 1, bp);                                 /* sa_norm */
    blk += lin_acc(hw, bn, d, d, bp) + lin_acc(hw, bn, d, 2 * d, bp); /* sa_q, sa_kv */
    blk += att_acc(hw, 2 * b * h * n * dh * n, b * 4 * n * d, bp);    /* self-attention */
    blk += lin_acc(hw, bn, d, d, bp) + ew_acc(hw, bn * d, 2, bp);     /* sa_o, sa_res */
    blk += ew_acc(hw, bn * d, 1, bp);                                 /* ff_norm */
    blk += lin_acc(hw, bn, d, 4 * d, bp) + ew_acc(hw, 4 * bn * d, 1, bp);
    blk += lin_acc(hw, bn, 4 * d, d, bp) + ew_acc(hw, bn * d, 2, bp);
    s += blk * dm->depth;
    if (sp)
        split_add_scaled(sp, &bsp, dm->depth);
    s += lin_acc(hw, b, d, 2 * d, sp) + ew_acc(hw, bn * d, 1, sp) +
         lin_acc(hw, bn, d, (uint64_t)dm->patch * dm->patch * dm->cout, sp) +
         ew_acc(hw, lat, 1, sp);
    if (kernels)
        *kernels = 5 + 12ull * dm->depth + 4;
    return s;
}

static double step_acc(const struct a100_hw *hw, const struct a100_dims *dm, uint64_t *kernels,
                       struct a100_split *sp)
{
    if (dm->class_cond)
        return step_dit(hw, dm, kernels, sp);
    const uint64_t d = dm->d, b = dm->batch, n = dm->n, t = dm->text;
    const uint64_t bn = b * n, bt = b * t, h = dm->h, dh = dm->dh;
    const uint64_t lat = (uint64_t)dm->cin * dm->lat_h * dm->lat_w;
    uint64_t nk = 0;
    double s = 0;
    /* spec 7.2 op list, dense; qk+softmax+pv fused (spec 7.4) */
    s += lin_acc(hw, 1, 256, d, sp) + lin_acc(hw, 1, d, d, sp) + lin_acc(hw, 1, d, 6 * d, sp);
    s += lin_acc(hw, bt, dm->dc, d, sp) + ew_acc(hw, bt * d, 1, sp) + lin_acc(hw, bt, d, d, sp);
    s += lin_acc(hw, bn, (uint64_t)dm->cin * dm->patch * dm->patch, d, sp) +
         ew_acc(hw, bn * d, 2, sp);
    nk += 8;
    /* one block, counted depth times (into bsp for the split) */
    struct a100_split bsp = {0}, *bp = sp ? &bsp : NULL;
    double blk = 0;
    blk += ew_acc(hw, bn * d, 1, bp);                                 /* sa_norm */
    blk += lin_acc(hw, bn, d, d, bp) + lin_acc(hw, bn, d, 2 * d, bp); /* sa_q, sa_kv */
    blk += att_acc(hw, 2 * b * h * n * dh * n, b * 4 * n * d, bp);    /* self-attention */
    blk += lin_acc(hw, bn, d, d, bp) + ew_acc(hw, bn * d, 2, bp);     /* sa_o, sa_res */
    blk += lin_acc(hw, bn, d, d, bp) + lin_acc(hw, bt, d, 2 * d, bp); /* ca_q, ca_kv */
    blk += att_acc(hw, 2 * b * h * n * dh * t, b * (2 * n + 2 * t) * d, bp);
    blk += lin_acc(hw, bn, d, d, bp) + ew_acc(hw, bn * d, 2, bp); /* ca_o, ca_res */
    blk += ew_acc(hw, bn * d, 1, bp);                             /* ff_norm */
    blk += lin_acc(hw, bn, d, 4 * d, bp) + ew_acc(hw, 4 * bn * d, 1, bp);
    blk += lin_acc(hw, bn, 4 * d, d, bp) + ew_acc(hw, bn * d, 2, bp);
    s += blk * dm->depth;
    if (sp)
        split_add_scaled(sp, &bsp, dm->depth);
    nk += 16ull * dm->depth;
    s += ew_acc(hw, bn * d, 1, sp) +
         lin_acc(hw, bn, d, (uint64_t)dm->patch * dm->patch * dm->cout, sp) +
         ew_acc(hw, lat, 1, sp);
    nk += 3;
    if (kernels)
        *kernels = nk;
    return s;
}

bool a100_header_class_cond(const Acceltrace__TraceHeader *hdr)
{
    const Acceltrace__DiscHeader *dh = hdr ? hdr->disc : NULL;
    if (!dh)
        return false;
    bool dit = dh->caption_width == 0 && dh->text_tokens == 0; /* no family: no text */
    json_t *mj = hdr->model_json && *hdr->model_json ? json_loads(hdr->model_json, 0, NULL) : NULL;
    const char *fam = json_string_value(json_object_get(mj, "family"));
    if (fam)
        dit = !strcmp(fam, "dit"); /* capture/disc writes "dit" or "pixart" */
    json_decref(mj);
    return dit;
}

double a100_step_s(const struct a100_hw *hw, const struct a100_dims *dm, uint64_t *kernels)
{
    return step_acc(hw, dm, kernels, NULL);
}

void a100_step_split(const struct a100_hw *hw, const struct a100_dims *dm, struct a100_split *out)
{
    memset(out, 0, sizeof *out);
    step_acc(hw, dm, NULL, out);
}

/* ---------------------------------------------------------------------------------------
 * The replay-engine model "a100": the baseline alone, for `acceltrace replay --hw
 * configs/a100.json` on a disc trace (it reads only the header: the A100 runs dense).
 */
static const struct hw_key a100_keys[] = {
    HW_KEY_FLOAT("peak_tflops", "TFLOP/s", 1, 1e6, 312, "FP16 dense peak [paper]"),
    HW_KEY_FLOAT("hbm_gbs", "GB/s", 1, 1e6, 1935, "HBM bandwidth, A100 80 GB PCIe [paper]"),
    HW_KEY_FLOAT("eff_linear", "", 0.001, 1, 0.60, "GEMM efficiency [decision]"),
    HW_KEY_FLOAT("eff_attn", "", 0.001, 1, 0.39, "fused attention efficiency [cited-derived]"),
    HW_KEY_FLOAT("eff_mem", "", 0.001, 1, 0.85, "HBM efficiency [cited]"),
    HW_KEY_FLOAT("launch_us", "us", 0, 1e6, 2.56, "per-kernel launch overhead [cited]"),
    HW_KEY_FLOAT("power_w", "W", 0, 1e5, 250, "board power while busy [decision]"),
    HW_KEY_INT("elem_bytes", "B", 1, 8, 2, "bytes per operand, FP16 [decision]"),
};

static const struct hw_schema a100_schema = {
    .model = "a100",
    .keys = a100_keys,
    .n_keys = sizeof a100_keys / sizeof a100_keys[0],
    .check = NULL,
};

struct a100_state {
    struct a100_hw hw;
    struct a100_dims dm;
    uint32_t steps;
};

static int a100_new(void **state, const struct hw_config *cfg, const struct model_env *env,
                    struct errmsg *e)
{
    *state = NULL;
    const Acceltrace__DiscHeader *dh = env->hdr ? env->hdr->disc : NULL;
    if (!dh || dh->depth == 0 || dh->tokens == 0 || dh->steps == 0 || dh->depth > 1024 ||
        dh->hidden > 65536 || dh->heads > 4096)
        return errmsg_set(e, ERR_DATA, "trace has no usable disc header ('%s')", env->trace_path);
    struct a100_state *s = mem_calloc(1, sizeof *s);
    if (!s)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    s->hw.peak_tflops = hw_config_float(cfg, "peak_tflops");
    s->hw.hbm_gbs = hw_config_float(cfg, "hbm_gbs");
    s->hw.eff_linear = hw_config_float(cfg, "eff_linear");
    s->hw.eff_attn = hw_config_float(cfg, "eff_attn");
    s->hw.eff_mem = hw_config_float(cfg, "eff_mem");
    s->hw.launch_us = hw_config_float(cfg, "launch_us");
    s->hw.power_w = hw_config_float(cfg, "power_w");
    s->hw.elem_bytes = (int)hw_config_int(cfg, "elem_bytes");
    struct a100_dims d = {dh->depth,       dh->hidden,
                          dh->heads,       dh->head_dim,
                          dh->text_tokens, dh->caption_width,
                          dh->tokens,      dh->batch ? dh->batch : 1,
                          dh->in_channels, dh->out_channels,
                          dh->patch,       dh->latent_h,
                          dh->latent_w,    a100_header_class_cond(env->hdr)};
    s->dm = d;
    s->steps = dh->steps;
    *state = s;
    return 0;
}

static int a100_consume(void *state, const struct model_record *r, struct errmsg *e)
{
    (void)state, (void)r, (void)e;
    return 0; /* always dense: the header fixes everything */
}

static int a100_finish(void *state, struct model_result *res, struct errmsg *e)
{
    struct a100_state *s = state;
    uint64_t kernels = 0;
    double t = a100_step_s(&s->hw, &s->dm, &kernels) * s->steps;
    result_row_begin(res, NULL);
    result_count(res, "kernels", "", kernels * s->steps);
    result_metric(res, "seconds", "s", t);
    result_metric(res, "a100_j", "J", t * s->hw.power_w);
    result_metric_i64(res, "steps", "", s->steps);
    return result_err(res, e);
}

static void a100_free(void *state)
{
    mem_free(state);
}

/* Checkpoint hooks (model.h): consume changes nothing, so the state is empty. */
static int a100_save(const void *state, struct sink *k, struct errmsg *e)
{
    (void)state, (void)k, (void)e;
    return 0;
}

static int a100_load(void *state, struct model_ckpt_in *in, struct errmsg *e)
{
    (void)state, (void)in, (void)e;
    return 0;
}

/*
 * Memory estimate (model.h; docs/models.md#memory-estimates): the state and one row of 5
 * columns; nothing grows with the trace.
 */
static uint64_t a100_estimate(const struct hw_config *cfg, const Acceltrace__TraceHeader *hdr)
{
    (void)cfg;
    (void)hdr;
    return sizeof(struct a100_state) + MODEL_RESULT_ROW_BYTES(5);
}

const struct model_ops model_a100_ops = {
    .name = "a100",
    .workload = "disc",
    .summary = "A100 roofline baseline of the DiSC comparison (dense, per-op-class efficiency)",
    .schema = &a100_schema,
    .default_config = "configs/a100.json",
    .default_energy_table = NULL,
    .new = a100_new,
    .consume = a100_consume,
    .finish = a100_finish,
    .free = a100_free,
    .estimate_bytes = a100_estimate,
    .save = a100_save,
    .load = a100_load,
};
