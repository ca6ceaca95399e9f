/*
 * gpu_model: per-operator GPU model (docs/models.md#gpu-baselines). Kernel classes, the
 * diffusion-transformer step and the LLM decode step; presets are in gpu_presets.c.
 */
#include "replay/gpu_model.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/err.h"

const char *gpu_op_class_name(enum gpu_op_class c)
{
    static const char *const names[GPU_OP_N] = {"gemm", "attention", "decode_attention",
                                                "elementwise", "launch"};
    return c < GPU_OP_N ? names[c] : "?";
}

double gpu_acc_seconds(const struct gpu_acc *acc)
{
    double t = 0;
    for (int c = 0; c < GPU_OP_N; c++)
        t += acc->s[c];
    return t;
}

double gpu_acc_power_w(const struct gpu_hw *hw, const struct gpu_acc *acc)
{
    double t = gpu_acc_seconds(acc);
    double a = t > 0 ? acc->act_s / t : 0;
    if (a > 1)
        a = 1;
    return hw->idle_w + (hw->tdp_w - hw->idle_w) * a;
}

void gpu_acc_add(struct gpu_acc *a, const struct gpu_acc *b, double k)
{
    for (int c = 0; c < GPU_OP_N; c++)
        a->s[c] += k * b->s[c];
    a->act_s += k * b->act_s;
    a->flop += k * b->flop;
    a->bytes += k * b->bytes;
    a->kernels += (uint64_t)llround(k * (double)b->kernels);
}

/* FLOP/s of one SM at the dense tensor peak. */
static double sm_flops(const struct gpu_hw *hw)
{
    return hw->peak_tflops * 1e12 / hw->sms;
}

/*
 * Books one kernel: t_work its execution time (class cls), the launch rule of the header
 * (max(t + launch_us, host_us)), its activity (fraction of the peak it is bound by).
 */
static double book(const struct gpu_hw *hw, enum gpu_op_class cls, double t_work, double flop,
                   double bytes, const char *name, struct gpu_acc *acc)
{
    double t = fmax(t_work + hw->launch_us * 1e-6, hw->host_us * 1e-6);
    if (acc) {
        acc->s[cls] += t_work;
        acc->s[GPU_OP_LAUNCH] += t - t_work;
        double fc = t_work > 0 ? flop / t_work / (hw->peak_tflops * 1e12) : 0;
        double fm = t_work > 0 ? bytes / t_work / (hw->hbm_gbs * 1e9) : 0;
        double util = fmin(1.0, fmax(fc, fm));
        acc->act_s += t_work * util;
        acc->flop += flop;
        acc->bytes += bytes;
        acc->kernels++;
        if (acc->kernel) {
            struct gpu_kernel k = {cls, name, t_work, t - t_work, bytes, util, acc->block};
            acc->kernel(acc->kernel_ctx, &k);
        }
    }
    return t;
}

/* A kernel's name for timelines: its class and shape (buf of n bytes). */
static const char *kname(char *buf, size_t n, const char *cls, uint64_t a, uint64_t b, uint64_t c,
                         const struct gpu_acc *acc)
{
    if (!acc || !acc->kernel)
        return cls;
    snprintf(buf, n, "%s %llux%llux%llu", cls, (unsigned long long)a, (unsigned long long)b,
             (unsigned long long)c);
    return buf;
}

static double mem_s(const struct gpu_hw *hw, double bytes, double eff)
{
    return bytes / (hw->hbm_gbs * 1e9 * eff);
}

static uint64_t ceil_div(uint64_t a, uint64_t b)
{
    return (a + b - 1) / b;
}

/*
 * Compute time of an m x n x k GEMM on tm x tn tiles: waves of tiles over the SMs; when
 * the tiles fill less than one wave, K is split into the largest number of slices that
 * still fits one wave (at least 256 deep each), as split-K kernels do.
 */
static double gemm_tiles_s(const struct gpu_hw *hw, uint64_t m, uint64_t n, uint64_t k, uint64_t tm,
                           uint64_t tn)
{
    const double sms = hw->sms >= 1 ? floor(hw->sms) : 1;
    uint64_t tiles = ceil_div(m, tm) * ceil_div(n, tn);
    uint64_t split = 1;
    if ((double)tiles < sms) {
        split = (uint64_t)(sms / (double)tiles);
        uint64_t max_split = k / 256 > 0 ? k / 256 : 1;
        if (split > max_split)
            split = max_split;
    }
    double waves = ceil((double)(tiles * split) / sms);
    double k_slice = (double)ceil_div(k, split);
    double per_tile = 2.0 * (double)tm * (double)tn * (k_slice + hw->gemm_k_fill) /
                      (sm_flops(hw) * hw->gemm_eff_max);
    return waves * per_tile;
}

double gpu_gemm(const struct gpu_hw *hw, uint64_t m, uint64_t n, uint64_t k, struct gpu_acc *acc)
{
    double flop = 2.0 * (double)m * (double)n * (double)k;
    double bytes = hw->elem_bytes * ((double)m * k + (double)k * n + (double)m * n);
    /* tiles no taller than the matrix: below 128 rows the tile is m rounded up to the
     * tensor cores' 16-row MMA shape (skinny GEMMs, decode), 256 wide */
    double tc = m >= 128
                    ? fmin(gemm_tiles_s(hw, m, n, k, 128, 256), gemm_tiles_s(hw, m, n, k, 256, 128))
                    : gemm_tiles_s(hw, m, n, k, ceil_div(m, 16) * 16, 256);
    double t = fmax(tc, mem_s(hw, bytes, hw->eff_mem));
    char nm[64];
    return book(hw, GPU_OP_GEMM, t, flop, bytes, kname(nm, sizeof nm, "gemm", m, n, k, acc), acc);
}

double gpu_attention(const struct gpu_hw *hw, uint64_t b, uint64_t h, uint64_t n_q, uint64_t n_k,
                     uint64_t dh, bool causal, struct gpu_acc *acc)
{
    /* FLOPs counted at the model's head dim; the kernel runs at dh rounded up to 32 */
    double flop = 4.0 * (double)b * h * (double)n_q * (double)n_k * (double)dh;
    uint64_t dh_pad = ceil_div(dh, 32) * 32;
    double sms = hw->sms >= 1 ? floor(hw->sms) : 1;
    double ctas = (double)(b * h * ceil_div(n_q, 128));
    double waves = ceil(ctas / sms);
    double keys = causal ? 0.5 * (double)n_k : (double)n_k;
    double per_cta =
        4.0 * 128.0 * (double)dh_pad * (keys + hw->attn_k_fill) / (sm_flops(hw) * hw->attn_eff_max);
    if (causal)
        flop *= 0.5;
    double bytes = hw->elem_bytes * (double)b * h * (double)dh * (2.0 * n_q + 2.0 * n_k);
    double t = fmax(waves * per_cta, mem_s(hw, bytes, hw->eff_mem));
    char nm[64];
    return book(hw, GPU_OP_ATTENTION, t, flop, bytes,
                kname(nm, sizeof nm, "attention", b * h, n_q, n_k, acc), acc);
}

double gpu_decode_attention(const struct gpu_hw *hw, uint64_t b, uint64_t h, uint64_t kv_h,
                            uint64_t ctx, uint64_t dh, struct gpu_acc *acc)
{
    double kv_bytes = hw->elem_bytes * 2.0 * (double)b * kv_h * (double)ctx * (double)dh;
    double q_bytes = hw->elem_bytes * 2.0 * (double)b * h * (double)dh;
    double flop = 4.0 * (double)b * h * (double)ctx * (double)dh;
    /* a fixed time per call (split-KV setup, the pipeline's fill and drain) plus the cache
     * streamed at decode_eff: both fitted to per-operator decode rows, docs/models.md#gpu-baselines
     */
    double t = hw->decode_fill_us * 1e-6 + mem_s(hw, kv_bytes + q_bytes, hw->decode_eff);
    char nm[64];
    double s = book(hw, GPU_OP_DECODE_ATTN, t, flop, kv_bytes + q_bytes,
                    kname(nm, sizeof nm, "decode attention", b * h, kv_h, ctx, acc), acc);
    /* the reduce kernel of the split-KV partial results: one (b, h, dh) pass per split */
    double red = hw->elem_bytes * 2.0 * (double)b * h * (double)dh;
    return s + book(hw, GPU_OP_DECODE_ATTN, mem_s(hw, red, hw->eff_mem), 0, red,
                    "decode attention reduce", acc);
}

double gpu_stream(const struct gpu_hw *hw, double bytes, struct gpu_acc *acc)
{
    return book(hw, GPU_OP_ELEMENTWISE, mem_s(hw, bytes, hw->eff_mem), 0, bytes, "stream", acc);
}

double gpu_elementwise(const struct gpu_hw *hw, uint64_t e, int n_in, struct gpu_acc *acc)
{
    double bytes = hw->elem_bytes * (double)e * (n_in + 1);
    char nm[64];
    if (acc && acc->kernel)
        snprintf(nm, sizeof nm, "elementwise %llu x %d", (unsigned long long)e, n_in + 1);
    return book(hw, GPU_OP_ELEMENTWISE, mem_s(hw, bytes, hw->eff_mem), 0, bytes,
                acc && acc->kernel ? nm : "elementwise", acc);
}

/* ---- the diffusion-transformer step ------------------------------------------------- */

/*
 * The element-wise kernels of an eager block, as the reference implementations launch
 * them: LayerNorm, then x (1 + scale) + shift as a multiply and an add (adaLN modulation),
 * gate x out and + residual as two kernels each.
 */
static void norm_modulate(const struct gpu_hw *hw, uint64_t e, struct gpu_acc *a)
{
    gpu_elementwise(hw, e, 1, a); /* LayerNorm */
    gpu_elementwise(hw, e, 2, a); /* x (1 + scale) */
    gpu_elementwise(hw, e, 2, a); /* + shift */
}

static void gated_residual(const struct gpu_hw *hw, uint64_t e, struct gpu_acc *a)
{
    gpu_elementwise(hw, e, 2, a); /* gate x out */
    gpu_elementwise(hw, e, 2, a); /* + residual */
}

/*
 * One block of the DiT family as the DiT reference code runs it: adaLN-Zero modulation
 * (SiLU, one B x d -> 6d linear), fused qkv, fused attention, FFN with GELU.
 */
static void dit_block(const struct gpu_hw *hw, const struct gpu_dit_dims *dm, struct gpu_acc *a)
{
    const uint64_t d = dm->d, b = dm->batch, n = dm->n, bn = b * n;
    gpu_elementwise(hw, b * d, 1, a); /* SiLU of the conditioning */
    gpu_gemm(hw, b, 6 * d, d, a);     /* adaLN-Zero modulation */
    norm_modulate(hw, bn * d, a);
    gpu_gemm(hw, bn, 3 * d, d, a); /* qkv */
    gpu_attention(hw, b, dm->h, n, n, dm->dh, false, a);
    gpu_elementwise(hw, bn * d, 1, a); /* heads back to rows */
    gpu_gemm(hw, bn, d, d, a);         /* out projection */
    gated_residual(hw, bn * d, a);
    norm_modulate(hw, bn * d, a);
    gpu_gemm(hw, bn, 4 * d, d, a);         /* fc1 */
    gpu_elementwise(hw, 4 * bn * d, 1, a); /* GELU */
    gpu_gemm(hw, bn, d, 4 * d, a);         /* fc2 */
    gated_residual(hw, bn * d, a);
}

/*
 * One block of the PixArt family as the diffusers implementation runs it: adaLN-single
 * modulation (a table added to the shared t_block output), separate q, k, v linears,
 * self-attention, cross-attention to the text, FFN with GELU.
 */
static void pixart_block(const struct gpu_hw *hw, const struct gpu_dit_dims *dm, struct gpu_acc *a)
{
    const uint64_t d = dm->d, b = dm->batch, n = dm->n, t = dm->text, bn = b * n;
    gpu_elementwise(hw, b * 6 * d, 2, a); /* scale_shift_table + t_block */
    norm_modulate(hw, bn * d, a);
    for (int i = 0; i < 3; i++)
        gpu_gemm(hw, bn, d, d, a); /* q, k, v */
    gpu_attention(hw, b, dm->h, n, n, dm->dh, false, a);
    gpu_elementwise(hw, bn * d, 1, a); /* heads back to rows */
    gpu_gemm(hw, bn, d, d, a);         /* out projection */
    gated_residual(hw, bn * d, a);
    gpu_gemm(hw, bn, d, d, a);    /* cross q */
    gpu_gemm(hw, b * t, d, d, a); /* cross k of the text */
    gpu_gemm(hw, b * t, d, d, a); /* cross v of the text */
    gpu_attention(hw, b, dm->h, n, t, dm->dh, false, a);
    gpu_elementwise(hw, bn * d, 1, a); /* heads back to rows */
    gpu_gemm(hw, bn, d, d, a);         /* cross out projection */
    gpu_elementwise(hw, bn * d, 2, a); /* + residual */
    norm_modulate(hw, bn * d, a);
    gpu_gemm(hw, bn, 4 * d, d, a);         /* fc1 */
    gpu_elementwise(hw, 4 * bn * d, 1, a); /* GELU */
    gpu_gemm(hw, bn, d, 4 * d, a);         /* fc2 */
    gated_residual(hw, bn * d, a);
}

void gpu_dit_step(const struct gpu_hw *hw, const struct gpu_dit_dims *dm, struct gpu_acc *acc)
{
    struct gpu_acc a = {0}, blk = {0};
    a.kernel = blk.kernel = acc->kernel; /* a timeline: every block in launch order */
    a.kernel_ctx = blk.kernel_ctx = acc->kernel_ctx;
    a.block = -1;
    const uint64_t d = dm->d, b = dm->batch, n = dm->n, bn = b * n;
    const uint64_t lat = (uint64_t)b * dm->cin * dm->lat_h * dm->lat_w;
    const uint64_t pp = (uint64_t)dm->patch * dm->patch;
    gpu_gemm(hw, b, d, 256, &a); /* timestep MLP */
    gpu_gemm(hw, b, d, d, &a);
    if (dm->class_cond) {
        gpu_elementwise(hw, b * d, 2, &a); /* + class embedding */
    } else {
        gpu_gemm(hw, b, 6 * d, d, &a);                       /* adaLN-single t_block */
        gpu_gemm(hw, (uint64_t)b * dm->text, d, dm->dc, &a); /* caption MLP */
        gpu_elementwise(hw, (uint64_t)b * dm->text * d, 1, &a);
        gpu_gemm(hw, (uint64_t)b * dm->text, d, d, &a);
    }
    gpu_gemm(hw, bn, d, (uint64_t)dm->cin * pp, &a); /* patch embedding */
    gpu_elementwise(hw, bn * d, 2, &a);              /* + position embedding */
    for (uint32_t i = 0; i < (acc->kernel ? dm->depth : 1); i++) {
        blk.block = i;
        if (dm->class_cond)
            dit_block(hw, dm, &blk);
        else
            pixart_block(hw, dm, &blk);
    }
    gpu_acc_add(&a, &blk, acc->kernel ? 1 : dm->depth);
    a.block = -1;
    if (dm->class_cond)
        gpu_gemm(hw, b, 2 * d, d, &a);      /* final modulation */
    gpu_elementwise(hw, bn * d, 1, &a);     /* final norm */
    gpu_gemm(hw, bn, pp * dm->cout, d, &a); /* final linear */
    gpu_elementwise(hw, lat, 2, &a);        /* sampler update (CFG mix included) */
    gpu_acc_add(acc, &a, 1);
}

/* ---- the LLM decode step ------------------------------------------------------------ */

/* One Llama decoder layer for one new token per sequence. */
static void llm_layer(const struct gpu_hw *hw, const struct gpu_llm_dims *dm, uint64_t ctx,
                      uint64_t b, struct gpu_acc *a)
{
    const uint64_t d = dm->d, qkv = (uint64_t)(dm->heads + 2 * dm->kv_heads) * dm->head_dim;
    gpu_elementwise(hw, b * d, 1, a);   /* RMSNorm */
    gpu_gemm(hw, b, qkv, d, a);         /* q, k, v */
    gpu_elementwise(hw, b * qkv, 1, a); /* RoPE, cache append */
    gpu_decode_attention(hw, b, dm->heads, dm->kv_heads, ctx, dm->head_dim, a);
    gpu_gemm(hw, b, d, (uint64_t)dm->heads * dm->head_dim, a); /* o */
    gpu_elementwise(hw, b * d, 2, a);                          /* residual */
    gpu_elementwise(hw, b * d, 1, a);                          /* RMSNorm */
    gpu_gemm(hw, b, 2 * (uint64_t)dm->ffn, d, a);              /* gate, up */
    gpu_elementwise(hw, b * dm->ffn, 2, a);                    /* SiLU x up */
    gpu_gemm(hw, b, d, dm->ffn, a);                            /* down */
    gpu_elementwise(hw, b * d, 2, a);                          /* residual */
}

void gpu_llm_decode(const struct gpu_hw *hw, const struct gpu_llm_dims *dm, uint64_t ctx,
                    uint64_t b, enum gpu_llm_part part, struct gpu_acc *acc)
{
    if (part == GPU_PART_ATTENTION) {
        gpu_decode_attention(hw, b, dm->heads, dm->kv_heads, ctx, dm->head_dim, acc);
        return;
    }
    struct gpu_acc layer = {0};
    llm_layer(hw, dm, ctx, b, &layer);
    if (part == GPU_PART_LAYER) {
        gpu_acc_add(acc, &layer, 1);
        return;
    }
    gpu_elementwise(hw, b * dm->d, 1, acc); /* embedding gather */
    gpu_acc_add(acc, &layer, dm->layers);
    gpu_elementwise(hw, b * dm->d, 1, acc); /* final RMSNorm */
    gpu_gemm(hw, b, dm->vocab, dm->d, acc); /* LM head */
}

/* ---- named workloads ---------------------------------------------------------------- */

/* Shapes: docs/models.md#gpu-baselines (the models' published configurations). */
static const struct gpu_workload workloads[] = {
    {"dit-xl-2",
     GPU_WL_DIT,
     {28, 1152, 16, 72, 0, 0, 0, 1, 4, 8, 2, 0, 0, true},
     {0},
     0,
     250,
     256,
     "DiT-XL/2, class-conditional (Peebles & Xie 2023)"},
    {"pixart-alpha-xl",
     GPU_WL_DIT,
     {28, 1152, 16, 72, 0, 4096, 0, 1, 4, 8, 2, 0, 0, false},
     {0},
     120,
     20,
     1024,
     "PixArt-alpha XL/2, T5 text (Chen et al. 2024)"},
    {"pixart-sigma-xl",
     GPU_WL_DIT,
     {28, 1152, 16, 72, 0, 4096, 0, 1, 4, 8, 2, 0, 0, false},
     {0},
     300,
     20,
     1024,
     "PixArt-Sigma XL/2, T5 text (Chen et al. 2024)"},
    {"llama-2-7b",
     GPU_WL_LLM,
     {0},
     {32, 4096, 32, 32, 128, 11008, 32000},
     0,
     1,
     0,
     "Llama 2 7B (Touvron et al. 2023)"},
    {"llama-3-8b",
     GPU_WL_LLM,
     {0},
     {32, 4096, 32, 8, 128, 14336, 128256},
     0,
     1,
     0,
     "Llama 3 8B (Meta 2024)"},
    {"llama-3.1-8b",
     GPU_WL_LLM,
     {0},
     {32, 4096, 32, 8, 128, 14336, 128256},
     0,
     1,
     0,
     "Llama 3.1 8B (Meta 2024)"},
    {"decode-attention",
     GPU_WL_DECODE_ATTN,
     {0},
     {0},
     0,
     1,
     0,
     "one layer's decode attention of the shape given by --heads/--kv-heads/--head-dim"},
};

size_t gpu_workload_count(void)
{
    return sizeof workloads / sizeof workloads[0];
}

const struct gpu_workload *gpu_workload_get(size_t i)
{
    return i < gpu_workload_count() ? &workloads[i] : NULL;
}

const struct gpu_workload *gpu_workload_find(const char *name)
{
    for (size_t i = 0; name && i < gpu_workload_count(); i++)
        if (!strcmp(workloads[i].name, name))
            return &workloads[i];
    return NULL;
}

#define GPU_MAX_PX 16384u
#define GPU_MAX_CONTEXT (1ull << 24)
#define GPU_MAX_BATCH 4096u

static int dit_request(const struct gpu_hw *hw, const struct gpu_request *r, struct gpu_estimate *o,
                       char *msg, size_t n)
{
    const struct gpu_workload *w = r->wl;
    uint32_t px = r->image_px ? r->image_px : w->default_image_px;
    if (px % 16 || px > GPU_MAX_PX) {
        snprintf(msg, n, "image size %u px is not a multiple of 16 in 16..%u", px, GPU_MAX_PX);
        return ERR_USAGE;
    }
    struct gpu_dit_dims dm = w->dit;
    dm.lat_h = dm.lat_w = px / 8;
    dm.n = (dm.lat_h / dm.patch) * (dm.lat_w / dm.patch);
    dm.batch = (r->batch ? r->batch : 1) * (r->cfg ? 2 : 1);
    dm.text = dm.class_cond ? 0 : (r->text_tokens ? r->text_tokens : w->default_text);
    o->steps = r->steps ? r->steps : w->default_steps;
    o->batch = dm.batch;
    o->tokens = dm.n;
    struct gpu_acc step = {0};
    gpu_dit_step(hw, &dm, &step);
    gpu_acc_add(&o->acc, &step, o->steps);
    o->per_unit_s = gpu_acc_seconds(&step);
    return 0;
}

int gpu_request_run(const struct gpu_hw *hw_in, const struct gpu_request *r, struct gpu_estimate *o,
                    char *msg, size_t n)
{
    memset(o, 0, sizeof *o);
    snprintf(msg, n, "%s", "");
    struct gpu_hw hw = *hw_in;
    if (!r->eager)
        hw.host_us = 0;
    const struct gpu_workload *w = r->wl;
    if (!w) {
        snprintf(msg, n, "no workload");
        return ERR_USAGE;
    }
    if (r->batch > GPU_MAX_BATCH) {
        snprintf(msg, n, "batch %u is over %u", r->batch, GPU_MAX_BATCH);
        return ERR_USAGE;
    }
    uint64_t b = r->batch ? r->batch : 1;
    int rc = 0;
    o->steps = 1;
    o->batch = (uint32_t)b;
    if (w->kind == GPU_WL_DIT) {
        rc = dit_request(&hw, r, o, msg, n);
        if (rc)
            return rc;
    } else {
        if (r->context < 1 || r->context > GPU_MAX_CONTEXT) {
            snprintf(msg, n, "context %llu is not in 1..%llu", (unsigned long long)r->context,
                     (unsigned long long)GPU_MAX_CONTEXT);
            return ERR_USAGE;
        }
        if (w->kind == GPU_WL_LLM) {
            gpu_llm_decode(&hw, &w->llm, r->context, b, r->part, &o->acc);
        } else {
            uint32_t h = r->heads, g = r->kv_heads ? r->kv_heads : r->heads, dh = r->head_dim;
            if (!h || !dh || h > 4096 || dh > 1024 || h % g) {
                snprintf(msg, n,
                         "decode-attention needs --heads H, --head-dim D (and --kv-heads "
                         "G dividing H); got H %u, G %u, D %u",
                         h, g, dh);
                return ERR_USAGE;
            }
            gpu_decode_attention(&hw, b, h, g, r->context, dh, &o->acc);
        }
        o->per_unit_s = gpu_acc_seconds(&o->acc);
    }
    o->seconds = gpu_acc_seconds(&o->acc);
    o->power_w = gpu_acc_power_w(&hw, &o->acc);
    o->energy_j = o->power_w * o->seconds;
    return rc;
}
