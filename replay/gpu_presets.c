/*
 * gpu_presets: the GPUs of the per-operator model, one table per GPU, every value with its
 * status and source (docs/models.md#gpu-baselines lists the same numbers; a test checks
 * that they agree). Statuses: input (a datasheet value), cited (a published measurement of
 * that quantity), cited-derived (a published measurement carried over by a stated rule),
 * calibrated (fitted to the per-operator calibration set configs/gpu/calibration.csv by
 * `acceltrace model gpu --calibrate`), decision.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "common/err.h"
#include "replay/gpu_model.h"

#define V(k, v, st, src)                                                                           \
    {                                                                                              \
        k, v, st, src                                                                              \
    }

/* Values shared by the Ampere presets (A100, 108 SMs, 312 TFLOP/s dense FP16). */
#define AMPERE_COMMON                                                                              \
    V("sms", 108, "input", "A100 datasheet/whitepaper: 108 SMs [gpu-a]"),                          \
        V("peak_tflops", 312, "input", "A100 datasheet: FP16 tensor 312 TFLOP/s dense [gpu-a]"),   \
        V("launch_us", 2.555, "cited",                                                             \
          "back-to-back kernel fit, A100-SXM4-80GB, a = 2555 ns [gpu-bench]"),                     \
        V("host_us", 4.0, "decision", "eager PyTorch dispatch per op, about 4 us [gpu-host]"),     \
        V("gemm_eff_max", 0.81, "cited",                                                           \
          "best-shape A100 PCIe BF16 GEMM 252.9 of 312 TFLOP/s [gpu-mamf]"),                       \
        V("gemm_k_fill", 640, "calibrated", "fit to calibration.csv A100 GEMM rows [gpu-cal]"),    \
        V("attn_eff_max", 0.61, "calibrated",                                                      \
          "fit to calibration.csv FlashAttention-2 A100 rows, forward + backward [gpu-cal]"),      \
        V("attn_k_fill", 256, "calibrated",                                                        \
          "fit to calibration.csv FlashAttention-2 A100 rows, forward + backward [gpu-cal]"),      \
        V("decode_eff", 0.80, "cited-derived",                                                     \
          "the Hopper fit, carried over: no Ampere decode-attention rows [gpu-cal] [gpu-decode]"), \
        V("decode_fill_us", 10.9, "cited-derived",                                                 \
          "the Hopper fit, carried over: no Ampere decode-attention rows [gpu-cal] [gpu-decode]"), \
        V("elem_bytes", 2, "decision", "FP16/BF16 operands")

/* Values shared by the Hopper presets (H100, H200: FP16 989 TFLOP/s dense on SXM). */
#define HOPPER_COMMON                                                                              \
    V("launch_us", 2.433, "cited",                                                                 \
      "back-to-back kernel fit, H200 (same Hopper SM and driver path), a = 2433 ns [gpu-bench]"),  \
        V("host_us", 4.0, "decision", "eager PyTorch dispatch per op, about 4 us [gpu-host]"),     \
        V("gemm_eff_max", 0.80, "cited",                                                           \
          "best-shape H100 SXM BF16 GEMM 794.5 of 989 TFLOP/s [gpu-mamf]"),                        \
        V("gemm_k_fill", 368, "calibrated", "fit to calibration.csv H100 GEMM rows [gpu-cal]"),    \
        V("attn_eff_max", 0.36, "calibrated",                                                      \
          "fit to calibration.csv FlashAttention-2 H100 forward rows [gpu-cal]"),                  \
        V("attn_k_fill", 176, "calibrated",                                                        \
          "fit to calibration.csv FlashAttention-2 H100 forward rows [gpu-cal]"),                  \
        V("decode_eff", 0.80, "calibrated",                                                        \
          "fit to calibration.csv H100 SXM FlashAttention-2 paged decode rows [gpu-decode]"),      \
        V("decode_fill_us", 10.9, "calibrated",                                                    \
          "fit to calibration.csv H100 SXM FlashAttention-2 paged decode rows [gpu-decode]"),      \
        V("elem_bytes", 2, "decision", "FP16/BF16 operands")

static const struct gpu_preset_value a100_pcie_80[] = {
    AMPERE_COMMON,
    V("hbm_gbs", 1935, "input", "A100 80GB PCIe datasheet: 1,935 GB/s [gpu-a]"),
    V("eff_mem", 0.852, "cited-derived",
      "STREAM scale, A100-SXM4-80GB 1737 of 2039 GB/s, carried over [gpu-bench]"),
    V("idle_w", 60.9, "cited-derived",
      "NVML idle of an A100-SXM4-80GB, mean of 62.12, 61.57, 58.99 W, carried over [gpu-power]"),
    V("tdp_w", 300, "input", "A100 80GB PCIe datasheet: 300 W [gpu-a]"),
};

static const struct gpu_preset_value a100_pcie_40[] = {
    AMPERE_COMMON,
    V("hbm_gbs", 1555, "input", "A100 40GB PCIe datasheet: 1,555 GB/s [gpu-a]"),
    V("eff_mem", 0.889, "cited-derived",
      "STREAM scale, A100-SXM4-40GB 1382 of 1555 GB/s, same memory [gpu-bench]"),
    V("idle_w", 60.9, "cited-derived",
      "NVML idle of an A100-SXM4-80GB, mean of 62.12, 61.57, 58.99 W, carried over [gpu-power]"),
    V("tdp_w", 250, "input", "A100 40GB PCIe datasheet: 250 W [gpu-a]"),
};

static const struct gpu_preset_value a100_sxm_80[] = {
    AMPERE_COMMON,
    V("hbm_gbs", 2039, "input", "A100 80GB SXM datasheet: 2,039 GB/s [gpu-a]"),
    V("eff_mem", 0.852, "cited", "STREAM scale, A100-SXM4-80GB 1737 of 2039 GB/s [gpu-bench]"),
    V("idle_w", 60.9, "cited",
      "NVML idle of an A100-SXM4-80GB, mean of 62.12, 61.57, 58.99 W [gpu-power]"),
    V("tdp_w", 400, "input", "A100 80GB SXM datasheet: 400 W [gpu-a]"),
};

static const struct gpu_preset_value h100_pcie[] = {
    HOPPER_COMMON,
    V("sms", 114, "input", "H100 PCIe: 114 SMs [gpu-h]"),
    V("peak_tflops", 756, "input",
      "H100 PCIe datasheet: FP16 tensor 1,513 sparse, 756 dense [gpu-h]"),
    V("hbm_gbs", 2000, "input", "H100 PCIe datasheet: HBM2e 2 TB/s [gpu-h]"),
    V("eff_mem", 0.836, "cited", "STREAM scale, H100 PCIe 1704 of 2039 GB/s [gpu-bench]"),
    V("idle_w", 79.7, "cited", "nvidia-smi idle of an H100 PCIe, 79.7 W [gpu-power]"),
    V("tdp_w", 350, "input", "H100 PCIe datasheet: 300-350 W, the upper end [gpu-h]"),
};

static const struct gpu_preset_value h100_sxm[] = {
    HOPPER_COMMON,
    V("sms", 132, "input", "H100 SXM5: 132 SMs [gpu-h]"),
    V("peak_tflops", 989, "input",
      "H100 SXM datasheet: FP16 tensor 1,979 sparse, 989 dense [gpu-h]"),
    V("hbm_gbs", 3350, "input", "H100 SXM datasheet: HBM3 3.35 TB/s [gpu-h]"),
    V("eff_mem", 0.836, "cited-derived",
      "STREAM scale, H100 PCIe 1704 of 2039 GB/s, carried over [gpu-bench]"),
    V("idle_w", 69, "cited", "nvidia-smi idle of an H100 80GB HBM3 (SXM5), 69 W [gpu-power]"),
    V("tdp_w", 700, "input", "H100 SXM datasheet: up to 700 W [gpu-h]"),
};

static const struct gpu_preset_value h200[] = {
    HOPPER_COMMON,
    V("sms", 132, "input", "H200 SXM: 132 SMs, the H100 SXM die [gpu-h200]"),
    V("peak_tflops", 989, "input",
      "H200 datasheet: FP16 tensor 1,979 sparse, 989 dense [gpu-h200]"),
    V("hbm_gbs", 4800, "input", "H200 datasheet: HBM3e 4.8 TB/s [gpu-h200]"),
    V("eff_mem", 0.836, "cited-derived",
      "STREAM scale, H100 PCIe 1704 of 2039 GB/s, carried over [gpu-bench]"),
    V("idle_w", 69, "cited-derived",
      "nvidia-smi idle of an H100 80GB HBM3 (SXM5), 69 W, the same board design [gpu-power]"),
    V("tdp_w", 700, "input", "H200 SXM datasheet: up to 700 W [gpu-h200]"),
};

struct preset {
    const char *name, *title;
    const struct gpu_preset_value *v;
    size_t n;
};

#define P(name, title, arr)                                                                        \
    {                                                                                              \
        name, title, arr, sizeof arr / sizeof arr[0]                                               \
    }

static const struct preset presets[] = {
    P("a100-pcie-80gb", "NVIDIA A100 80 GB PCIe", a100_pcie_80),
    P("a100-pcie-40gb", "NVIDIA A100 40 GB PCIe", a100_pcie_40),
    P("a100-sxm-80gb", "NVIDIA A100 SXM4 80 GB", a100_sxm_80),
    P("h100-pcie", "NVIDIA H100 PCIe 80 GB", h100_pcie),
    P("h100-sxm", "NVIDIA H100 SXM5 80 GB", h100_sxm),
    P("h200", "NVIDIA H200 SXM 141 GB", h200),
};

size_t gpu_preset_count(void)
{
    return sizeof presets / sizeof presets[0];
}

const char *gpu_preset_name(size_t i)
{
    return i < gpu_preset_count() ? presets[i].name : NULL;
}

static const struct preset *find(const char *name)
{
    for (size_t i = 0; name && i < gpu_preset_count(); i++)
        if (!strcmp(presets[i].name, name))
            return &presets[i];
    return NULL;
}

const char *gpu_preset_title(const char *name)
{
    const struct preset *p = find(name);
    return p ? p->title : NULL;
}

const char *gpu_preset_choices(void)
{
    return "a100-pcie-80gb|a100-pcie-40gb|a100-sxm-80gb|h100-pcie|h100-sxm|h200";
}

/* The struct gpu_hw fields by name. */
static double *field(struct gpu_hw *hw, const char *key)
{
    static const struct {
        const char *key;
        size_t off;
    } f[] = {
        {"sms", offsetof(struct gpu_hw, sms)},
        {"peak_tflops", offsetof(struct gpu_hw, peak_tflops)},
        {"hbm_gbs", offsetof(struct gpu_hw, hbm_gbs)},
        {"eff_mem", offsetof(struct gpu_hw, eff_mem)},
        {"launch_us", offsetof(struct gpu_hw, launch_us)},
        {"host_us", offsetof(struct gpu_hw, host_us)},
        {"gemm_eff_max", offsetof(struct gpu_hw, gemm_eff_max)},
        {"gemm_k_fill", offsetof(struct gpu_hw, gemm_k_fill)},
        {"attn_eff_max", offsetof(struct gpu_hw, attn_eff_max)},
        {"attn_k_fill", offsetof(struct gpu_hw, attn_k_fill)},
        {"decode_eff", offsetof(struct gpu_hw, decode_eff)},
        {"decode_fill_us", offsetof(struct gpu_hw, decode_fill_us)},
        {"idle_w", offsetof(struct gpu_hw, idle_w)},
        {"tdp_w", offsetof(struct gpu_hw, tdp_w)},
        {"elem_bytes", offsetof(struct gpu_hw, elem_bytes)},
    };
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        if (!strcmp(f[i].key, key))
            return (double *)((char *)hw + f[i].off);
    return NULL;
}

bool gpu_hw_set(struct gpu_hw *hw, const char *key, double v)
{
    double *p = field(hw, key);
    if (p)
        *p = v;
    return p != NULL;
}

int gpu_preset_get(const char *name, struct gpu_hw *hw)
{
    const struct preset *p = find(name);
    if (!p)
        return ERR_USAGE;
    memset(hw, 0, sizeof *hw);
    hw->name = p->name;
    for (size_t i = 0; i < p->n; i++)
        gpu_hw_set(hw, p->v[i].key, p->v[i].value);
    return 0;
}

const struct gpu_preset_value *gpu_preset_values(const char *name, size_t *n)
{
    const struct preset *p = find(name);
    *n = p ? p->n : 0;
    return p ? p->v : NULL;
}
