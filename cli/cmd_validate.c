/*
 * cmd_validate: `acceltrace validate KIND -o DIR`: a model against published measurements.
 * `validate gpu` predicts every point of the GPU model's validation set
 * (configs/gpu/validation.csv, replay/gpu_validate.h) and writes DIR/validation.csv,
 * DIR/validation.md and the parity plot DIR/validation_parity.png.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "analysis/plot.h"
#include "analysis/reproduce.h"
#include "cli/cli.h"
#include "cli/cli_opt.h"
#include "cli/subverb.h"
#include "common/buf.h"
#include "common/io.h"
#include "common/mem.h"
#include "formats/csv.h"
#include "replay/gpu_validate.h"

#define VERB "validate gpu"

enum { OPT_SET = 1 };

/* clang-format off */
static const struct cli_opt opts[] = {
    {OPT_SET, "set", 0, CLI_ARG_STRING, "FILE",
     "the validation set (configs/gpu/validation.csv)", 0},
    CLI_OPT_OUTPUT("DIR", "write validation.csv, validation.md and the parity plot here"),
    CLI_OPT_QUIET,
    {CLI_ID_JSON, "json", 0, CLI_ARG_NONE, NULL,
     "one JSON object on stdout: the points, median and max |error|", 0},
    CLI_OPT_END,
};
/* clang-format on */

const struct cli_spec cmd_validate_gpu_spec = {
    .verb = VERB,
    .usage = "usage: acceltrace validate gpu [--set FILE] -o DIR\n"
             "\n"
             "Predicts every published, measured end-to-end GPU time of the validation set\n"
             "with the per-operator GPU model (docs/models.md#gpu-baselines) and reports the\n"
             "error of each: DIR/validation.csv (id, workload, gpu, condition, measured,\n"
             "predicted, unit, error, source), DIR/validation.md and the log-log parity plot\n"
             "DIR/validation_parity.png with the +-20% band. The validation set never sets a\n"
             "parameter (the calibration set is configs/gpu/calibration.csv).\n",
    .opts = opts,
    .positional = NULL,
};

/* DIR/validation.csv and DIR/validation.md. */
static int write_tables(const struct gpu_validation *v, const char *set, const char *dir,
                        struct errmsg *e)
{
    struct buf csv, md;
    buf_init(&csv);
    buf_init(&md);
    int bad = buf_printf(&csv, "id,workload,gpu,condition,measured,predicted,unit,error,source\n");
    bad |= buf_printf(&md,
                      "# GPU model against measured end-to-end times\n\n"
                      "Validation set: `%s` (published measurements; none sets a parameter). "
                      "Command: `acceltrace validate gpu -o DIR`. Status of every prediction: "
                      "predicted.\n\n"
                      "%zu points; median |error| %.1f%%, max |error| %.1f%%.\n\n"
                      "| id | workload | gpu | condition | measured | predicted | unit | error |\n"
                      "|---|---|---|---|---|---|---|---|\n",
                      set, v->n, 100 * v->median_abs, 100 * v->max_abs);
    for (size_t i = 0; i < v->n; i++) {
        const struct gpu_vpoint *q = &v->p[i];
        const char *f[] = {q->id, q->workload, q->gpu, q->condition};
        for (int k = 0; k < 4; k++)
            bad |= csv_append_field(&csv, f[k]) | buf_printf(&csv, ",");
        bad |= buf_printf(&csv, "%.6g,%.6g,", q->measured, q->predicted);
        bad |= csv_append_field(&csv, q->unit);
        bad |= buf_printf(&csv, ",%.4f,", q->error);
        bad |= csv_append_field(&csv, q->source) | buf_printf(&csv, "\n");
        bad |= buf_printf(&md, "| %s | %s | %s | %s | %.4g | %.4g | %s | %+.1f%% |\n", q->id,
                          q->workload, q->gpu, q->condition, q->measured, q->predicted, q->unit,
                          100 * q->error);
    }
    bad |= buf_printf(&md, "\nSources: the `source` column of validation.csv; "
                           "docs/models.md#gpu-baselines.\n\n"
                           "![parity](validation_parity.png)\n");
    int rc = bad ? errmsg_set(e, ERR_NOMEM, "out of memory") : 0;
    rc = rc ? rc : repro_write_file(dir, "validation.csv", &csv, e);
    rc = rc ? rc : repro_write_file(dir, "validation.md", &md, e);
    buf_release(&csv);
    buf_release(&md);
    return rc;
}

/* DIR/validation_parity.png: measured against predicted, log-log, y = x and +-20%. */
static int parity_plot(const struct gpu_validation *v, const char *dir, bool *rendered,
                       struct errmsg *e)
{
    double *x = mem_calloc(2 * v->n + 1, sizeof *x), *y = x ? x + v->n : NULL;
    struct plot *p = plot_new("validation_parity", PLOT_LINE);
    if (!x || !p) {
        mem_free(x);
        plot_free(p);
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    }
    plot_title(p, "GPU model: predicted against measured end-to-end time");
    plot_xlabel(p, "measured", "s");
    plot_ylabel(p, "predicted", "s");
    plot_logscale(p, true, true);
    plot_extra(p, "set key top left");
    plot_extra(p, "set format x '10^{%L}'");
    plot_extra(p, "set format y '10^{%L}'");
    double lo = INFINITY, hi = 0;
    int rc = 0;
    for (int kind = 1; kind >= 0 && !rc; kind--) {
        size_t n = 0;
        for (size_t i = 0; i < v->n; i++) {
            const struct gpu_vpoint *q = &v->p[i];
            double u = !strcmp(q->unit, "ms") ? 1e-3 : !strcmp(q->unit, "us") ? 1e-6 : 1;
            bool rate = strstr(q->unit, "/s") != NULL; /* it/s, tok/s: seconds per unit */
            if (q->diffusion != kind)
                continue;
            x[n] = rate ? 1 / q->measured : q->measured * u;
            y[n] = rate ? 1 / q->predicted : q->predicted * u;
            lo = fmin(lo, fmin(x[n], y[n])), hi = fmax(hi, fmax(x[n], y[n]));
            n++;
        }
        if (n) {
            rc = plot_series(p, 0,
                             kind ? "diffusion transformer (whole run or step)"
                                  : "LLM decode (per token), decode attention",
                             x, y, n);
            rc = rc ? rc : plot_series_marker(p, kind ? PLOT_MARK_FILLED : PLOT_MARK_OPEN);
        }
    }
    if (!rc && hi > 0) {
        const double ex[2] = {lo / 1.5, hi * 1.5};
        const double e1[2] = {ex[0], ex[1]}, ep[2] = {1.2 * ex[0], 1.2 * ex[1]},
                     em[2] = {0.8 * ex[0], 0.8 * ex[1]};
        rc = plot_series(p, 0, "predicted = measured", ex, e1, 2);
        rc = rc ? rc : plot_series(p, 0, "+20%", ex, ep, 2);
        rc = rc ? rc : plot_series(p, 0, "-20%", ex, em, 2);
    }
    rc = rc ? rc : plot_write(p, dir, rendered);
    if (rc)
        rc = errmsg_set(e, rc, "parity plot: %s", plot_errmsg(p));
    plot_free(p);
    mem_free(x);
    return rc;
}

static int cmd_validate_gpu(int argc, char **argv)
{
    const char *set = "configs/gpu/validation.csv", *dir = NULL;
    bool json = false, quiet = false;
    struct cli_parser p;
    cli_parser_init(&p, &cmd_validate_gpu_spec, argc, argv);
    for (int id; (id = cli_next(&p)) != CLI_END;) {
        if (id == CLI_HELP || id == CLI_BAD)
            return id == CLI_HELP ? 0 : cli_next_exit(id);
        if (id == CLI_POSITIONAL)
            return cli_usage_error(VERB, "unexpected argument '%s'", p.arg);
        if (id == OPT_SET)
            set = p.arg;
    }
    dir = p.common.output;
    json = p.common.json;
    quiet = p.common.quiet;
    if (!dir)
        return cli_usage_error(VERB, "-o DIR is required");
    struct errmsg e = {0};
    struct gpu_validation v;
    int rc = gpu_validation_run(set, &v, &e);
    if (rc)
        return cli_fail(rc, errmsg_text(&e));
    bool rendered = false;
    if ((rc = cli_output_dir(dir))) {
        gpu_validation_release(&v);
        return rc;
    }
    rc = write_tables(&v, set, dir, &e);
    rc = rc ? rc : parity_plot(&v, dir, &rendered, &e);
    if (rc) {
        gpu_validation_release(&v);
        return cli_fail(rc, errmsg_text(&e));
    }
    if (!rendered)
        cli_warn("gnuplot not found: run 'gnuplot validation_parity.gp' in %s to render", dir);
    if (json) {
        json_t *pts = json_array();
        for (size_t i = 0; i < v.n; i++)
            json_array_append_new(pts, json_pack("{s:s,s:s,s:s,s:f,s:f,s:s,s:f}", "id", v.p[i].id,
                                                 "workload", v.p[i].workload, "gpu", v.p[i].gpu,
                                                 "measured", v.p[i].measured, "predicted",
                                                 v.p[i].predicted, "unit", v.p[i].unit, "error",
                                                 v.p[i].error));
        json_t *j = json_pack("{s:o,s:I,s:f,s:f,s:s}", "points", pts, "n", (json_int_t)v.n,
                              "median_abs_error", v.median_abs, "max_abs_error", v.max_abs,
                              "status", "predicted");
        gpu_validation_release(&v);
        return cli_print_json(j);
    }
    if (!quiet)
        printf("points=%zu\nmedian_abs_error=%.4f\nmax_abs_error=%.4f\nwrote=%s/validation.csv\n",
               v.n, v.median_abs, v.max_abs, dir);
    gpu_validation_release(&v);
    return 0;
}

static const struct subverb table[] = {
    {"gpu", cmd_validate_gpu, "the GPU model against published end-to-end GPU times"},
    {NULL, NULL, NULL},
};

int cmd_validate(int argc, char **argv)
{
    return subverb_dispatch("validate", "kind", table, argc, argv, true);
}
