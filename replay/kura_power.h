/*
 * kura_power: power, area and energy of the SA-Kura array (docs/kura.md#power-area-and-energy,
 * paper eq. 10-13) and the coefficient tables they use (configs/kura_energy.json).
 *
 * Coefficients are bilinear in the array shape: X = c_hw·N_h·N_w + c_w·N_w + c_h·N_h +
 * c_fixed, with power in mW and area in µm². The energy table also carries the DMA
 * parameters of section 8.4 and the paper's baselines, so one file fixes every constant
 * the SA-Kura replay uses. Everything here is pure arithmetic on caller-owned structs;
 * only kura_energy_load reads a file. No function prints.
 */
#ifndef ACCELTRACE_KURA_POWER_H
#define ACCELTRACE_KURA_POWER_H

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

/* Window side M = 5 and the per-tile sweep overhead M² + 1 = 26 (paper eq. 9). */
#define KURA_M 5
#define KURA_SWEEP_CYCLES 26

/* One bilinear coefficient set of paper eq. 10/13 (mW or µm²). */
struct kura_coeffs {
    double hw;    /* per PE */
    double w;     /* per column */
    double h;     /* per row */
    double fixed; /* shape-independent */
};

/* The whole coefficient table (configs/kura_energy.json). */
struct kura_energy {
    double f_hz; /* clock, 100e6 [paper] */
    /* compute-only power, mW (docs/kura.md#power-area-and-energy fit4) */
    struct kura_coeffs power_fit4;
    /* system-level power, mW (docs/kura.md#power-area-and-energy table1) */
    struct kura_coeffs power_table1;
    /* area incl. SoC shell, µm² (docs/kura.md#power-area-and-energy table1) */
    struct kura_coeffs area_table1;
    /* DMA cycles per transaction (docs/kura.md#dma-and-system-level) */
    double t_txn;
    double t_step; /* DMA cycles per step (docs/kura.md#dma-and-system-level) */
    /* marshalling cycles per pixel (docs/kura.md#dma-and-system-level) */
    double t_marsh;
    int bus_bits;                /* interconnect width, 128 [paper] */
    int word_bits;               /* bank word, 32 [paper] */
    double rocket_ms;            /* Rocket-only drift latency, 123.8 ms [paper] */
    double rocket_mw;            /* Rocket-only power, 30.38 mW [paper] */
    double jetson_nj_px;         /* Jetson CUDA energy, 270.57 nJ/px [paper] */
    double jetson_latency_ratio; /* Jetson step / H20W5 step, 6.57 [paper] */
};

/* Fills e with the shipped values (identical to configs/kura_energy.json). */
void kura_energy_default(struct kura_energy *e);

/*
 * Loads a coefficient table from JSON (layout: docs/models.md, SA-Kura replay). Keys not
 * present keep the default; unknown keys, wrong types and out-of-range values are
 * ERR_CONFIG with the key path in *em. 0 or a negative enum err.
 */
int kura_energy_load(struct kura_energy *e, const char *path, struct errmsg *em);

/* Bilinear evaluation of eq. 10 / eq. 13: c.hw·N_h·N_w + c.w·N_w + c.h·N_h + c.fixed. */
double kura_bilinear(const struct kura_coeffs *c, int n_h, int n_w);

/* Paper eq. 9: C_tile = N_w + M² + 1. */
int64_t kura_c_tile(int n_w);

/* Paper eq. 11: E_px = P·C_tile/(N_h·N_w·f), in pJ per pixel (P from eq. 10, mW). */
double kura_epx_pj(const struct kura_coeffs *p, int n_h, int n_w, double f_hz);

/* Paper eq. 12: N_w*(N_h) = sqrt(26·(p_h + p_fixed/N_h)/(p_hw + p_w/N_h)). */
double kura_nw_opt(const struct kura_coeffs *p, int n_h);

/* What a fit point measures (docs/kura.md#power-area-and-energy --fit columns). */
enum kura_fit_kind { KURA_FIT_EPX_PJ = 0, KURA_FIT_P_MW = 1, KURA_FIT_AREA_UM2 = 2 };

struct kura_fit_point {
    int n_h, n_w;
    double y; /* pJ/px, mW or µm² by kind */
};

struct kura_fit_result {
    struct kura_coeffs c; /* mW or µm² */
    double r2;            /* 1 - SS_res/SS_tot (SS_tot about the mean) */
    double ss_res;
};

/*
 * Least squares for the four coefficients by Householder QR (docs/kura.md#power-area-and-energy
 * --fit). Rows are 1e9·(C_tile/f)·[1, 1/N_h, 1/N_w, 1/(N_h·N_w)] for E_px in pJ, and [N_h·N_w, N_w,
 * N_h, 1] for power and area. residuals (n values, may be NULL) receives y - fitted. Fewer than 4
 * points or rank < 4 is ERR_DATA. 0 or a negative enum err.
 */
int kura_fit(const struct kura_fit_point *pts, size_t n, enum kura_fit_kind kind, double f_hz,
             struct kura_fit_result *out, double *residuals, struct errmsg *em);

/* Fitted value of a point under kind (the same model the fit uses). */
double kura_fit_predict(const struct kura_coeffs *c, enum kura_fit_kind kind, int n_h, int n_w,
                        double f_hz);

/* Result of an area-budget search (docs/kura.md#power-area-and-energy --budget). found = 0 when
 * nothing fits. */
struct kura_budget_result {
    int found;
    int n_h, n_w;
    double e_px_pj;  /* eq. 11 with the power set used */
    double area_um2; /* eq. 13 with the area set used */
    /* the shape of least area among hs x ws and its area (um^2): what a budget must at
     * least allow, for the message when nothing fits */
    int min_n_h, min_n_w;
    double min_area_um2;
};

/*
 * Lowest eq.-11 E_px over the shapes hs x ws with A <= budget_um2; ties go to the smaller
 * area, then to the earlier shape. Always succeeds (found = 0 when nothing fits).
 */
void kura_budget(const struct kura_coeffs *power, const struct kura_coeffs *area, double f_hz,
                 double budget_um2, const int *hs, size_t n_hs, const int *ws, size_t n_ws,
                 struct kura_budget_result *out);

#endif
