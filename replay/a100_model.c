/*
 * a100_model: A100 roofline baseline (specs/disc.md section 7.4; docs/models.md#disc).
 */
#include "replay/a100_model.h"

#include <math.h>

void a100_hw_default(struct a100_hw *hw)
{
    hw->peak_tflops = 312;  /* A100 FP16 dense [paper] */
    hw->hbm_gbs = 1935;     /* A100 80 GB PCIe [paper] */
    hw->eff_linear = 0.60;  /* [decision] */
    hw->eff_attn = 0.40;    /* [decision] */
    hw->eff_mem = 0.80;     /* [decision] */
    hw->launch_us = 4.0;    /* [decision] */
    hw->power_w = 250;      /* [decision] */
    hw->elem_bytes = 2;     /* FP16 [decision] */
}

/* spec 7.4: t = max(FLOP/(peak eff), bytes/(hbm eff_mem)) + launch */
static double roofline_s(const struct a100_hw *hw, double flop, double eff, double bytes)
{
    double tc = eff > 0 ? flop / (hw->peak_tflops * 1e12 * eff) : 0;
    double tm = bytes / (hw->hbm_gbs * 1e9 * hw->eff_mem);
    return fmax(tc, tm) + hw->launch_us * 1e-6;
}

double a100_linear_s(const struct a100_hw *hw, uint64_t m, uint64_t ni, uint64_t no)
{
    double flop = 2.0 * (double)m * (double)ni * (double)no;
    /* spec 7.4: bytes E_b (M N_i + N_i N_o + N_o + M N_o) */
    double bytes = (double)hw->elem_bytes *
                   ((double)m * ni + (double)ni * no + (double)no + (double)m * no);
    return roofline_s(hw, flop, hw->eff_linear, bytes);
}

double a100_attention_s(const struct a100_hw *hw, uint64_t mac, uint64_t elems)
{
    return roofline_s(hw, 2.0 * (double)mac, hw->eff_attn,
                      (double)hw->elem_bytes * (double)elems);
}

double a100_elementwise_s(const struct a100_hw *hw, uint64_t e, int n_in)
{
    /* spec 7.4: memory only, E_b E (n_in + 1) */
    return roofline_s(hw, 0, 0, (double)hw->elem_bytes * (double)e * (n_in + 1));
}

double a100_step_s(const struct a100_hw *hw, const struct a100_dims *dm, uint64_t *kernels)
{
    const uint64_t d = dm->d, b = dm->batch, n = dm->n, t = dm->text;
    const uint64_t bn = b * n, bt = b * t, h = dm->h, dh = dm->dh;
    const uint64_t lat = (uint64_t)dm->cin * dm->lat_h * dm->lat_w;
    uint64_t nk = 0;
    double s = 0;
    /* spec 7.2 op list, dense; qk+softmax+pv fused (spec 7.4) */
    s += a100_linear_s(hw, 1, 256, d) + a100_linear_s(hw, 1, d, d) +
         a100_linear_s(hw, 1, d, 6 * d);
    s += a100_linear_s(hw, bt, dm->dc, d) + a100_elementwise_s(hw, bt * d, 1) +
         a100_linear_s(hw, bt, d, d);
    s += a100_linear_s(hw, bn, (uint64_t)dm->cin * dm->patch * dm->patch, d) +
         a100_elementwise_s(hw, bn * d, 2);
    nk += 8;
    double blk = 0;
    blk += a100_elementwise_s(hw, bn * d, 1);                       /* sa_norm */
    blk += a100_linear_s(hw, bn, d, d) + a100_linear_s(hw, bn, d, 2 * d); /* sa_q, sa_kv */
    blk += a100_attention_s(hw, 2 * b * h * n * dh * n, b * 4 * n * d);   /* self-attention */
    blk += a100_linear_s(hw, bn, d, d) + a100_elementwise_s(hw, bn * d, 2); /* sa_o, sa_res */
    blk += a100_linear_s(hw, bn, d, d) + a100_linear_s(hw, bt, d, 2 * d);  /* ca_q, ca_kv */
    blk += a100_attention_s(hw, 2 * b * h * n * dh * t, b * (2 * n + 2 * t) * d);
    blk += a100_linear_s(hw, bn, d, d) + a100_elementwise_s(hw, bn * d, 2); /* ca_o, ca_res */
    blk += a100_elementwise_s(hw, bn * d, 1);                       /* ff_norm */
    blk += a100_linear_s(hw, bn, d, 4 * d) + a100_elementwise_s(hw, 4 * bn * d, 1);
    blk += a100_linear_s(hw, bn, 4 * d, d) + a100_elementwise_s(hw, bn * d, 2);
    s += blk * dm->depth;
    nk += 16ull * dm->depth;
    s += a100_elementwise_s(hw, bn * d, 1) +
         a100_linear_s(hw, bn, d, (uint64_t)dm->patch * dm->patch * dm->cout) +
         a100_elementwise_s(hw, lat, 1);
    nk += 3;
    if (kernels)
        *kernels = nk;
    return s;
}
