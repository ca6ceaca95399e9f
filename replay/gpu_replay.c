/*
 * gpu_replay: the replay-engine model "gpu" (replay/model.h) and the config form of a GPU.
 *
 * A config of model "gpu" names a preset (replay/gpu_presets.c) and may override any of
 * its values; -1 keeps the preset's. On a disc trace the model prices the captured
 * network's dense denoising steps on that GPU (the DiSC baseline alone; the disc model
 * carries the same baseline beside its own rows). Nothing depends on the records.
 */
#include <stdio.h>
#include <string.h>

#include "common/mem.h"
#include "replay/disc_model.h"
#include "replay/gpu_model.h"
#include "replay/gpu_replay.h"
#include "replay/model.h"

#define GPU_KEEP(k, u, docs) HW_KEY_FLOAT(k, u, -1, 1e9, -1, docs " (-1: the preset's)")

static const struct hw_key gpu_keys[] = {
    HW_KEY_STRING("preset", "a100-pcie-80gb",
                  "a100-pcie-80gb|a100-pcie-40gb|a100-sxm-80gb|h100-pcie|h100-sxm|h200",
                  "GPU preset (docs/models.md#gpu-baselines)"),
    HW_KEY_BOOL("eager", 0, "count the host's dispatch time per op (eager framework)"),
    GPU_KEEP("sms", "", "streaming multiprocessors"),
    GPU_KEEP("peak_tflops", "TFLOP/s", "dense FP16 tensor peak"),
    GPU_KEEP("hbm_gbs", "GB/s", "HBM bandwidth"),
    GPU_KEEP("eff_mem", "", "fraction of HBM bandwidth of streaming kernels"),
    GPU_KEEP("launch_us", "us", "GPU-side time per kernel"),
    GPU_KEEP("host_us", "us", "host dispatch per op (eager)"),
    GPU_KEEP("gemm_eff_max", "", "fraction of an SM's peak per GEMM tile"),
    GPU_KEEP("gemm_k_fill", "", "per-tile fixed cost, K steps"),
    GPU_KEEP("attn_eff_max", "", "fraction of an SM's peak per attention CTA"),
    GPU_KEEP("attn_k_fill", "", "per-CTA fixed cost, key positions"),
    GPU_KEEP("decode_eff", "", "fraction of HBM bandwidth of decode attention"),
    GPU_KEEP("decode_fill_us", "us", "fixed time of a decode-attention call"),
    GPU_KEEP("idle_w", "W", "idle board power"),
    GPU_KEEP("tdp_w", "W", "board power limit"),
    GPU_KEEP("elem_bytes", "B", "bytes per operand"),
};

#define N_GPU_KEYS (sizeof gpu_keys / sizeof gpu_keys[0])

static const struct hw_schema gpu_schema = {
    .model = "gpu",
    .keys = gpu_keys,
    .n_keys = N_GPU_KEYS,
    .check = NULL,
};

const struct hw_schema *gpu_hw_schema(void)
{
    return &gpu_schema;
}

int gpu_hw_from_config(const struct hw_config *cfg, struct gpu_hw *hw, bool *eager)
{
    if (gpu_preset_get(hw_config_str(cfg, "preset"), hw))
        return ERR_CONFIG;
    for (size_t i = 2; i < N_GPU_KEYS; i++) {
        double v = hw_config_float(cfg, gpu_keys[i].key);
        if (v >= 0)
            gpu_hw_set(hw, gpu_keys[i].key, v);
    }
    if (eager)
        *eager = hw_config_bool(cfg, "eager");
    return 0;
}

int gpu_hw_resolve(const char *spec, struct gpu_hw *hw, bool *eager, struct errmsg *e)
{
    if (eager)
        *eager = false;
    if (gpu_preset_get(spec, hw) == 0)
        return 0;
    if (!strchr(spec, '/') && !strstr(spec, ".json"))
        return errmsg_set(e, ERR_USAGE, "unknown GPU preset '%s' (presets: %s; or a config file)",
                          spec, gpu_preset_choices());
    struct hw_config *cfg = NULL;
    int rc = hw_config_load(&cfg, spec, &gpu_schema, e);
    if (rc)
        return rc;
    rc = gpu_hw_from_config(cfg, hw, eager);
    hw_config_free(cfg);
    return rc ? errmsg_set(e, rc, "'%s': bad preset", spec) : 0;
}

/* ---- the replay model ---------------------------------------------------------------- */

struct gpu_state {
    struct gpu_hw hw;
    struct gpu_dit_dims dm;
    uint32_t steps;
};

static int gpu_new(void **state, const struct hw_config *cfg, const struct model_env *env,
                   struct errmsg *e)
{
    *state = NULL;
    struct disc_dims dd;
    uint32_t steps = 0;
    int rc = disc_dims_from_header(env->hdr, env->trace_path, &dd, &steps, e);
    if (rc)
        return rc;
    struct gpu_state *s = mem_calloc(1, sizeof *s);
    if (!s)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    bool eager = false;
    if (gpu_hw_from_config(cfg, &s->hw, &eager)) {
        mem_free(s);
        return errmsg_set(e, ERR_CONFIG, "unknown GPU preset '%s'", hw_config_str(cfg, "preset"));
    }
    if (!eager)
        s->hw.host_us = 0;
    disc_dims_gpu(&dd, &s->dm);
    s->steps = steps;
    *state = s;
    return 0;
}

static int gpu_consume(void *state, const struct model_record *r, struct errmsg *e)
{
    (void)state, (void)r, (void)e;
    return 0; /* always dense: the header fixes everything */
}

static int gpu_finish(void *state, struct model_result *res, struct errmsg *e)
{
    struct gpu_state *s = state;
    struct gpu_acc step = {0}, all = {0};
    gpu_dit_step(&s->hw, &s->dm, &step);
    gpu_acc_add(&all, &step, s->steps);
    double t = gpu_acc_seconds(&all);
    result_row_begin(res, NULL);
    result_count(res, "kernels", "", all.kernels);
    result_metric(res, "seconds", "s", t);
    result_metric(res, "gpu_j", "J", t * gpu_acc_power_w(&s->hw, &all));
    for (int c = 0; c < GPU_OP_N; c++) {
        char name[64];
        snprintf(name, sizeof name, "%s_s", gpu_op_class_name((enum gpu_op_class)c));
        result_metric(res, name, "s", all.s[c]);
    }
    result_metric_i64(res, "steps", "", s->steps);
    return result_err(res, e);
}

static void gpu_free(void *state)
{
    mem_free(state);
}

/* Checkpoint hooks (model.h): consume changes nothing, so the state is empty. */
static int gpu_save(const void *state, struct sink *k, struct errmsg *e)
{
    (void)state, (void)k, (void)e;
    return 0;
}

static int gpu_load(void *state, struct model_ckpt_in *in, struct errmsg *e)
{
    (void)state, (void)in, (void)e;
    return 0;
}

/* Memory estimate (docs/models.md#memory-estimates-replay-engine-convention): the state and one row
 * of 10 columns. */
static uint64_t gpu_estimate(const struct hw_config *cfg, const Acceltrace__TraceHeader *hdr)
{
    (void)cfg;
    (void)hdr;
    return sizeof(struct gpu_state) + MODEL_RESULT_ROW_BYTES(10);
}

const struct model_ops model_gpu_ops = {
    .name = "gpu",
    .workload = "disc",
    .summary = "per-operator GPU baseline of the DiSC comparison (dense; docs/models.md)",
    .schema = &gpu_schema,
    .default_config = "configs/a100.json",
    .default_energy_table = NULL,
    .new = gpu_new,
    .consume = gpu_consume,
    .finish = gpu_finish,
    .free = gpu_free,
    .estimate_bytes = gpu_estimate,
    .save = gpu_save,
    .load = gpu_load,
};
