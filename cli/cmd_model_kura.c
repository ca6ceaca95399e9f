/*
 * cmd_model_kura: `acceltrace model kura`: the SA-Kura analytic, power/area/energy and
 * DMA/system models (docs/models.md#sa-kura-replay) evaluated without a trace.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/analyzer.h"
#include "analysis/kura_pick.h"
#include "analysis/kura_plots.h"
#include "cli/cli.h"
#include "cli/cli_opt.h"
#include "common/err.h"
#include "common/grow.h"
#include "common/io.h"
#include "common/mem.h"
#include "replay/kura_dma.h"
#include "replay/kura_model.h"
#include "replay/kura_power.h"
#include "replay/kura_tiles.h"

#define VERB "model kura"
/* The modes of one run, as usage errors list them. */
#define MODES "--grid, --fit, --optimal-width, --budget, --calibrate-activity, --plots"
#define MAX_SHAPES 64

enum {
    OPT_GRID = 1,
    OPT_FIT,
    OPT_OPTIMAL_WIDTH,
    OPT_BUDGET,
    OPT_CALIBRATE_ACTIVITY,
    OPT_PLOTS,
    OPT_SIZE,
    OPT_SHAPES,
    OPT_COEFFS,
    OPT_POWER,
    OPT_T_TXN,
    OPT_CALIBRATE_DMA,
    OPT_TRACE,
    OPT_PLOT_SHAPES,
    OPT_EVERY,
    OPT_TILES,
    OPT_TILE_SHAPE,
    OPT_SHAPE,
};

static const struct cli_opt opts[] = {
    {OPT_GRID, "grid", 0, CLI_ARG_NONE, NULL,
     "mode: per shape: tiles, cycles/step, T_px, c_px, E_px (eq. 11,\nfit4), E_px,eff, area (eq. "
     "13), system-level time and energy;\nCSV on stdout, best system-level shape on the last line",
     0},
    {OPT_FIT, "fit", 0, CLI_ARG_STRING, "POINTS.csv",
     "mode: least squares for eq. 10/11/13 coefficients; columns\nn_h, n_w and one of e_px_pj, "
     "p_mw, area_um2",
     0},
    {OPT_OPTIMAL_WIDTH, "optimal-width", 0, CLI_ARG_NONE, NULL,
     "mode: N_w*(N_h) by eq. 12 for each N_h of --shapes", 0},
    {OPT_BUDGET, "budget", 0, CLI_ARG_STRING, "MM2",
     "mode: lowest-E_px shape with area <= MM2 (SoC shell included)", 0},
    {OPT_CALIBRATE_ACTIVITY, "calibrate-activity", 0, CLI_ARG_STRING, "FILE.atr",
     "mode: alpha_cal = toggles/bits over every reverse step at\nH20W5 (another shape with "
     "--shape NhxNw)",
     0},
    {OPT_PLOTS, "plots", 0, CLI_ARG_STRING, "DIR",
     "mode: the figures (PNG via gnuplot, CSV beside each): E_px\nheatmap + N_w*, area vs E_px, "
     "cycles vs shape, c_px,eff;\nwith --trace also drift error, activity and phase maps",
     0},
    {OPT_SIZE, "size", 0, CLI_ARG_STRING, "HxW", "image size (default 96x96)", 0},
    {OPT_SHAPES, "shapes", 0, CLI_ARG_STRING, "LO:HI:STEP",
     "shape values for N_h and N_w, or a list 5,10,20 (default\n5:25:5)", 0},
    {OPT_COEFFS, "coeffs", 0, CLI_ARG_STRING, "FILE.json",
     "coefficient table (default: the shipped values of\nconfigs/kura_energy.json)", 0},
    {OPT_POWER, "power", 0, CLI_ARG_STRING, "fit4|table1",
     "power set for E_px in --grid/--budget/--optimal-width (fit4)", 0},
    {OPT_T_TXN, "t-txn", 0, CLI_ARG_STRING, "N",
     "DMA cycles per transaction (default from the table, 16)", 0},
    {OPT_CALIBRATE_DMA, "calibrate-dma", 0, CLI_ARG_NONE, NULL,
     "re-solve t_marsh so H20W5 at 96x96 takes 64,130 cycles", 0},
    {OPT_TRACE, "trace", 0, CLI_ARG_STRING, "FILE.atr",
     "kura trace for --plots (its size replaces --size)", 0},
    {OPT_PLOT_SHAPES, "plot-shapes", 0, CLI_ARG_STRING, "LIST",
     "shapes of the activity plot (default 20x5,10x10,25x20)", 0},
    {OPT_EVERY, "every", 0, CLI_ARG_STRING, "K",
     "phase map of every K-th reverse step (default 10)", 0},
    {OPT_SHAPE, "shape", 0, CLI_ARG_STRING, "NhxNw", "shape of --calibrate-activity (default 20x5)",
     0},
    {OPT_TILES, "tiles", 0, CLI_ARG_STRING, "DIR",
     "with --plots and --trace: also what `export tiles` writes\nfor the reverse step T-1, from "
     "the "
     "same read of the trace",
     0},
    {OPT_TILE_SHAPE, "tile-shape", 0, CLI_ARG_STRING, "NhxNw",
     "array shape of --tiles (required with it), e.g. 20x5", 0},
    {CLI_ID_PLOT_FORMAT, "format", 0, CLI_ARG_STRING, "png|pdf|svg|eps|epslatex",
     "figure format of --plots (png)", 0},
    {CLI_ID_JSON, "json", 0, CLI_ARG_NONE, NULL,
     "the mode's results as one JSON document on stdout", 0},
    CLI_OPT_QUIET,
    CLI_OPT_ALLOW_PARTIAL,
    CLI_OPT_END,
};

const struct cli_spec cmd_model_kura_spec = {
    .verb = VERB,
    .usage = "usage: acceltrace model kura MODE [options]\n"
             "\n"
             "SA-Kura drift coprocessor models (docs/models.md#sa-kura-replay): one mode per run, "
             "one of\n" MODES ".\n",
    .opts = opts,
    .positional = "FILE",
};

/* Parses "lo:hi:step" or "a,b,c" into at most MAX_SHAPES positive values. */
static bool parse_values(const char *s, int *v, size_t *n)
{
    *n = 0;
    int lo, hi, step;
    char tail;
    if (sscanf(s, "%d:%d:%d%c", &lo, &hi, &step, &tail) == 3) {
        if (lo < 1 || hi < lo || step < 1 || hi > 4096)
            return false;
        for (int x = lo; x <= hi; x += step) {
            if (*n >= MAX_SHAPES)
                return false;
            v[(*n)++] = x;
        }
        return *n > 0;
    }
    const char *p = s;
    while (*p) {
        char *end;
        errno = 0;
        long x = strtol(p, &end, 10);
        if (errno || end == p || x < 1 || x > 4096 || *n >= MAX_SHAPES)
            return false;
        v[(*n)++] = (int)x;
        if (*end == ',')
            end++;
        else if (*end)
            return false;
        p = end;
    }
    return *n > 0;
}

static int do_grid(const struct kura_energy *e, const struct kura_coeffs *p, int h, int w,
                   const int *vals, size_t nv, bool json)
{
    struct kura_sys best = {0};
    int have_best = 0;
    json_t *rows = json ? json_array() : NULL;
    if (!json)
        printf("shape,n_h,n_w,tiles,c_tile,cycles_step,step_us,t_px_mpx_s,c_px,c_px_eff,"
               "utilization,p_mw,e_px_pj,e_px_eff_pj,area_mm2,sys_cycles,sys_us,sys_p_mw,"
               "sys_e_px_nj\n");
    for (size_t i = 0; i < nv; i++)
        for (size_t j = 0; j < nv; j++) {
            struct kura_analytic an;
            struct kura_sys sy;
            int nh = vals[i], nw = vals[j];
            kura_analytic_eval(h, w, nh, nw, e->f_hz, &an);
            kura_sys_eval(e, h, w, nh, nw, &sy);
            double pm = kura_bilinear(p, nh, nw);
            double epx = kura_epx_pj(p, nh, nw, e->f_hz);
            /* E_px,eff = P·cycles_step/(f·H·W) (docs/kura.md#power-area-and-energy) */
            double eff = 1e9 * pm * (double)an.cycles_step / (e->f_hz * (double)h * w);
            if (json)
                json_array_append_new(
                    rows,
                    json_pack("{s:i,s:i,s:I,s:I,s:I,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,"
                              "s:f,s:f}",
                              "n_h", nh, "n_w", nw, "tiles", (json_int_t)an.n_tiles, "c_tile",
                              (json_int_t)an.c_tile, "cycles_step", (json_int_t)an.cycles_step,
                              "step_us", an.step_us, "t_px_mpx_s", an.t_px / 1e6, "c_px", an.c_px,
                              "c_px_eff", an.c_px_eff, "utilization", an.utilization, "p_mw", pm,
                              "e_px_pj", epx, "e_px_eff_pj", eff, "area_mm2", sy.area_um2 / 1e6,
                              "sys_cycles", sy.cycles_sys, "sys_us", sy.t_us, "sys_p_mw", sy.p_mw,
                              "sys_e_px_nj", sy.e_px_nj));
            else
                printf("H%dW%d,%d,%d,%lld,%lld,%lld,%.3f,%.4f,%.6f,%.6f,%.6f,%.4f,%.3f,%.3f,%.6f,"
                       "%.1f,%.3f,%.4f,%.4f\n",
                       nh, nw, nh, nw, (long long)an.n_tiles, (long long)an.c_tile,
                       (long long)an.cycles_step, an.step_us, an.t_px / 1e6, an.c_px, an.c_px_eff,
                       an.utilization, pm, epx, eff, sy.area_um2 / 1e6, sy.cycles_sys, sy.t_us,
                       sy.p_mw, sy.e_px_nj);
            if (!have_best || sy.e_px_nj < best.e_px_nj) {
                best = sy;
                have_best = 1;
            }
        }
    if (json) {
        json_t *j = json_pack("{s:s,s:o}", "mode", "grid", "rows", rows);
        if (have_best)
            json_object_set_new(j, "best",
                                json_pack("{s:i,s:i,s:f,s:f}", "n_h", best.n_h, "n_w", best.n_w,
                                          "sys_us", best.t_us, "sys_e_px_nj", best.e_px_nj));
        return cli_print_json(j);
    }
    if (have_best) {
        printf("# best system-level: H%dW%d %.3f us %.4f nJ/px", best.n_h, best.n_w, best.t_us,
               best.e_px_nj);
        if (h == 96 && w == 96 && e->rocket_ms > 0)
        /* paper section 4.3 baselines: Rocket-only latency and energy */
        {
            /* paper section 4.3 baselines. Rocket-only: 123.8 ms at 30.38 mW. Jetson:
             * 270.57 nJ/px, a step 6.57x the measured H20W5 641.3 us */
            printf("; vs rocket %.2fx latency, %.2fx energy", e->rocket_ms * 1e3 / best.t_us,
                   e->rocket_ms * 1e3 * e->rocket_mw / (best.t_us * best.p_mw));
            printf("; vs jetson %.2fx latency, %.2fx energy",
                   e->jetson_latency_ratio * 641.3 / best.t_us, e->jetson_nj_px / best.e_px_nj);
        }
        printf("\n");
    }
    return 0;
}

/* Reads the --fit CSV: a header naming n_h, n_w and one value column. */
static int read_points(const char *path, struct kura_fit_point **out, size_t *n,
                       enum kura_fit_kind *kind)
{
    struct errmsg oe = {0};
    int fd = io_open_input(path, NULL, &oe); /* regular files only: a FIFO would block */
    FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
    char line[1024];
    int col_h = -1, col_w = -1, col_y = -1, rc = 0;
    size_t cap = 0, lineno = 0;
    struct kura_fit_point *pts = NULL;
    *n = 0;
    if (!f) {
        if (fd >= 0)
            close(fd);
        return cli_fail(fd < 0 ? fd : ERR_NOMEM, errmsg_text(&oe));
    }
    while (fgets(line, sizeof line, f)) {
        lineno++;
        if (!strchr(line, '\n') && !feof(f)) {
            cli_error("line too long ('%s' line %zu)", path, lineno);
            rc = 3;
            goto done;
        }
        line[strcspn(line, "\r\n")] = 0;
        if (line[0] == '#' || line[0] == 0)
            continue;
        char *save = NULL;
        int col = 0;
        if (col_h < 0) {
            for (char *t = strtok_r(line, ",", &save); t; t = strtok_r(NULL, ",", &save), col++) {
                while (*t == ' ')
                    t++;
                if (!strcmp(t, "n_h"))
                    col_h = col;
                else if (!strcmp(t, "n_w"))
                    col_w = col;
                else if (!strcmp(t, "e_px_pj") || !strcmp(t, "p_mw") || !strcmp(t, "area_um2")) {
                    if (col_y >= 0) {
                        cli_error("more than one value column ('%s' line %zu)", path, lineno);
                        rc = 3;
                        goto done;
                    }
                    col_y = col;
                    *kind = !strcmp(t, "e_px_pj") ? KURA_FIT_EPX_PJ
                            : !strcmp(t, "p_mw")  ? KURA_FIT_P_MW
                                                  : KURA_FIT_AREA_UM2;
                }
            }
            if (col_h < 0 || col_w < 0 || col_y < 0) {
                cli_error("header needs n_h, n_w and one of e_px_pj, p_mw, area_um2 ('%s' line "
                          "%zu)",
                          path, lineno);
                rc = 3;
                goto done;
            }
            continue;
        }
        double v[3] = {0, 0, 0};
        int got = 0;
        for (char *t = strtok_r(line, ",", &save); t; t = strtok_r(NULL, ",", &save), col++) {
            int which = col == col_h ? 0 : col == col_w ? 1 : col == col_y ? 2 : -1;
            if (which < 0)
                continue;
            while (*t == ' ')
                t++;
            if (!cli_parse_f64(t, &v[which])) {
                cli_error("bad number '%s' ('%s' line %zu)", t, path, lineno);
                rc = 3;
                goto done;
            }
            got++;
        }
        if (got != 3 || v[0] < 1 || v[1] < 1 || v[0] > 4096 || v[1] > 4096 || v[0] != (int)v[0] ||
            v[1] != (int)v[1]) {
            cli_error("bad point ('%s' line %zu)", path, lineno);
            rc = 3;
            goto done;
        }
        if (*n == cap) {
            if (cap >= 100000) {
                cli_error("too many points ('%s')", path);
                rc = 3;
                goto done;
            }
            if (grow((void **)&pts, &cap, *n + 1, sizeof *pts)) {
                cli_error("out of memory");
                rc = 1;
                goto done;
            }
        }
        pts[(*n)++] = (struct kura_fit_point){(int)v[0], (int)v[1], v[2]};
    }
    if (col_h < 0) {
        cli_error("no header line ('%s')", path);
        rc = 3;
    }
done:
    fclose(f);
    if (rc) {
        mem_free(pts);
        pts = NULL;
        *n = 0;
    }
    *out = pts;
    return rc;
}

static int do_fit(const struct kura_energy *e, const char *path, bool json)
{
    struct kura_fit_point *pts = NULL;
    size_t n = 0;
    enum kura_fit_kind kind = KURA_FIT_EPX_PJ;
    struct kura_fit_result fr;
    struct errmsg em = {0};
    double *res = NULL;
    int rc = read_points(path, &pts, &n, &kind);
    if (rc)
        return rc;
    res = mem_calloc(n ? n : 1, sizeof *res);
    if (!res) {
        mem_free(pts);
        return cli_fail(ERR_NOMEM, "out of memory");
    }
    rc = kura_fit(pts, n, kind, e->f_hz, &fr, res, &em);
    if (rc) {
        char msg[700];
        snprintf(msg, sizeof msg, "%s ('%s')", errmsg_text(&em), path);
        rc = cli_fail(rc, msg);
        goto done;
    }
    if (json) {
        json_t *r = json_object();
        for (size_t i = 0; i < n; i++) {
            char k[32];
            snprintf(k, sizeof k, "H%dW%d", pts[i].n_h, pts[i].n_w);
            json_object_set_new(r, k, json_real(res[i]));
        }
        rc = cli_print_json(json_pack("{s:s,s:f,s:f,s:f,s:f,s:f,s:o}", "mode", "fit", "hw", fr.c.hw,
                                      "w", fr.c.w, "h", fr.c.h, "fixed", fr.c.fixed, "r2", fr.r2,
                                      "residuals", r));
        goto done;
    }
    printf("hw=%.6f\nw=%.6f\nh=%.6f\nfixed=%.6f\nr2=%.9f\n", fr.c.hw, fr.c.w, fr.c.h, fr.c.fixed,
           fr.r2);
    for (size_t i = 0; i < n; i++)
        printf("residual.H%dW%d=%.6f\n", pts[i].n_h, pts[i].n_w, res[i]);
done:
    mem_free(res);
    mem_free(pts);
    return rc;
}

/* --tiles: the folder and array shape of the tiles exported from the plots' pass. */
struct tiles_out {
    const char *dir; /* NULL: none */
    int nh, nw;
};

/* The trace figures, and with t->dir the tiles of `export tiles`, from one pass over the
 * trace (analysis/analyzer.h). 0 or an exit status after the message. */
static int trace_plots(const char *dir, const char *trace, const int *hs, const int *ws, int n,
                       int every, const struct tiles_out *t, bool *rendered)
{
    struct errmsg em = {0};
    struct kura_plots_pass *kp = NULL;
    int rc = kura_plots_pass_new(&kp, dir, hs, ws, n, every, rendered, &em);
    if (rc)
        return cli_fail(rc, errmsg_text(&em));
    struct kura_pick tp = {.step = INT64_MIN, .nh = t->nh, .nw = t->nw};
    struct analyzer an[2] = {{0}, {&kura_pick_ops, &tp}};
    kura_plots_pass_analyzer(kp, &an[0]);
    int status = 0;
    if ((rc = analyzer_run(trace, an, t->dir ? 2 : 1, NULL, &em)) < 0 ||
        (rc = analyzer_finish(an, 1, &em)) < 0)
        status = cli_fail(rc, errmsg_text(&em));
    if (status == 0 && t->dir)
        status = cli_export_tiles_write(&tp, trace, t->dir, t->nh, t->nw, false);
    kura_pick_release(&tp);
    kura_plots_pass_free(kp);
    return status;
}

static int do_plots(const struct kura_energy *e, const char *dir, const char *trace,
                    const char *shapes, int every, int h, int w, const struct tiles_out *tiles,
                    bool json)
{
    int hs[16], ws[16], n = 0;
    char buf[256];
    struct errmsg em = {0};
    bool rendered = true, r2 = true;
    snprintf(buf, sizeof buf, "%s", shapes);
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (n >= 16 || !cli_parse_shape(t, 4096, &hs[n], &ws[n]))
            return cli_usage_error(VERB, "bad --plot-shapes '%s' (want NhxNw,...)", shapes);
        n++;
    }
    if (tiles->dir) {
        int crc = cli_export_tiles_check(VERB, trace, tiles->dir);
        if (crc)
            return crc;
    }
    int rc = kura_plots_design(dir, e, h, w, &rendered, &em);
    if (rc)
        return cli_fail(rc, errmsg_text(&em));
    if (trace) {
        int status = trace_plots(dir, trace, hs, ws, n, every, tiles, &r2);
        if (status)
            return status;
    }
    if ((!rendered || !r2) && em.code)
        cli_warn("some plots were not rendered: %s", errmsg_text(&em));
    else if (!rendered || !r2)
        cli_warn("gnuplot not found: run 'gnuplot NAME.gp' in %s to render", dir);
    if (json)
        return cli_print_json(
            json_pack("{s:s,s:s,s:b}", "mode", "plots", "output", dir, "rendered", rendered && r2));
    printf("wrote %s\n", dir);
    return 0;
}

/* True when w is one of the space-separated words of list. */
static bool word_in(const char *list, const char *w)
{
    size_t n = strlen(w);
    for (const char *p = list; (p = strstr(p, w)); p += n)
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == 0))
            return true;
    return false;
}

/* What the command line of model kura asks for. */
struct kura_args {
    int h, w; /* image size */
    int vals[MAX_SHAPES];
    size_t nv;
    const char *mode, *fit_path, *coeffs, *power, *plot_dir, *trace, *plot_shapes;
    int64_t every;
    int cal_h, cal_w;
    struct tiles_out tiles;
    double budget, t_txn;
    bool calibrate, quiet, json;
    /* options given, so the ones the mode would ignore can be refused */
    bool g_format, g_size, g_shapes, g_power, g_trace, g_pshapes, g_every, g_shape;
    char mode_buf[32];
};

/* Parses and cross-checks the options into a; -1 to go on, else the exit status. */
static int kura_parse(struct kura_args *a, int argc, char **argv)
{
    *a = (struct kura_args){.h = 96,
                            .w = 96,
                            .power = "fit4",
                            .plot_shapes = "20x5,10x10,25x20",
                            .every = 10,
                            .cal_h = 20,
                            .cal_w = 5,
                            .t_txn = -1};
    parse_values("5:25:5", a->vals, &a->nv);
    struct cli_parser p;
    cli_parser_init(&p, &cmd_model_kura_spec, argc, argv);
    for (int id; (id = cli_next(&p)) != CLI_END;) {
        const char *next = p.arg;
        switch (id) {
        case CLI_HELP:
        case CLI_BAD:
            return cli_next_exit(id);
        case OPT_GRID:
        case OPT_OPTIMAL_WIDTH:
        case OPT_FIT:
        case OPT_BUDGET:
        case OPT_PLOTS:
        case OPT_CALIBRATE_ACTIVITY:
            if (a->mode)
                return cli_usage_error(VERB, "only one of " MODES);
            snprintf(a->mode_buf, sizeof a->mode_buf, "--%s", p.opt->name);
            a->mode = a->mode_buf;
            if (id == OPT_FIT)
                a->fit_path = next;
            else if (id == OPT_PLOTS)
                a->plot_dir = next;
            else if (id == OPT_CALIBRATE_ACTIVITY)
                a->trace = next;
            else if (id == OPT_BUDGET &&
                     (!cli_parse_f64(next, &a->budget) || !(a->budget >= 0) || a->budget > 1e6))
                return cli_usage_error(VERB, "bad --budget '%s' (mm^2)", next);
            break;
        case OPT_SHAPE:
            if (!cli_parse_shape(next, 4096, &a->cal_h, &a->cal_w))
                return cli_usage_error(VERB, "bad --shape (want NhxNw)");
            a->g_shape = true;
            break;
        case OPT_TRACE:
            a->trace = next;
            a->g_trace = true;
            break;
        case OPT_PLOT_SHAPES:
            a->plot_shapes = next;
            a->g_pshapes = true;
            break;
        case OPT_EVERY:
            if (!cli_parse_i64(next, &a->every) || a->every < 1 || a->every > 1000000)
                return cli_usage_error(VERB, "bad --every");
            a->g_every = true;
            break;
        case OPT_TILES:
            a->tiles.dir = next;
            break;
        case OPT_TILE_SHAPE:
            if (!cli_parse_shape(next, 4096, &a->tiles.nh, &a->tiles.nw))
                return cli_usage_error(VERB, "bad --tile-shape (want NhxNw, e.g. 20x5)");
            break;
        case OPT_SIZE:
            if (!cli_parse_shape(next, 1000000, &a->h, &a->w))
                return cli_usage_error(VERB, "bad --size (want HxW, e.g. 96x96)");
            a->g_size = true;
            break;
        case OPT_SHAPES:
            if (!parse_values(next, a->vals, &a->nv))
                return cli_usage_error(VERB, "bad --shapes (want LO:HI:STEP or a,b,c)");
            a->g_shapes = true;
            break;
        case OPT_COEFFS:
            a->coeffs = next;
            break;
        case OPT_POWER:
            if (strcmp(next, "fit4") && strcmp(next, "table1"))
                return cli_usage_error(VERB, "--power must be fit4 or table1");
            a->power = next;
            a->g_power = true;
            break;
        case OPT_T_TXN:
            if (!cli_parse_f64(next, &a->t_txn) || a->t_txn < 0 || a->t_txn > 1e6)
                return cli_usage_error(VERB, "bad --t-txn");
            break;
        case OPT_CALIBRATE_DMA:
            a->calibrate = true;
            break;
        case CLI_ID_PLOT_FORMAT:
            cli_plot_output_opt(VERB, id, p.arg);
            a->g_format = true;
            break;
        case CLI_POSITIONAL:
            return cli_usage_error(VERB, "unexpected argument '%s'", next);
        default:
            break;
        }
    }
    a->json = p.common.json;
    a->quiet = p.common.quiet;
    if (!a->mode)
        return cli_usage_error(VERB, "give one of " MODES);
    /* an option the a->mode never reads would be silently ignored: refuse it */
    const struct {
        bool given;
        const char *opt, *modes;
    } only[] = {
        {a->g_size, "--size", "--grid --plots"},
        {a->g_format, "--format", "--plots"},
        {a->g_shapes, "--shapes", "--grid --optimal-width --budget"},
        {a->g_power, "--power", "--grid --optimal-width --budget"},
        {a->g_trace, "--trace", "--plots"},
        {a->g_pshapes, "--plot-shapes", "--plots"},
        {a->g_every, "--every", "--plots"},
        {a->g_shape, "--shape", "--calibrate-activity"},
    };
    for (size_t k = 0; k < sizeof only / sizeof only[0]; k++)
        if (only[k].given && !word_in(only[k].modes, a->mode))
            return cli_usage_error(VERB, "%s does not apply to %s (only to %s)", only[k].opt,
                                   a->mode, only[k].modes);
    int frc = cli_plot_output_opt(VERB, 0, NULL);
    if (frc)
        return frc;
    if ((a->coeffs || a->t_txn >= 0 || a->calibrate) && !strcmp(a->mode, "--calibrate-activity"))
        return cli_usage_error(VERB,
                               "%s does not apply to --calibrate-activity (it reads "
                               "toggles from the trace, no energy table)",
                               a->coeffs       ? "--coeffs"
                               : a->t_txn >= 0 ? "--t-txn"
                                               : "--calibrate-dma");
    if ((a->tiles.dir || a->tiles.nh) && (!a->trace || strcmp(a->mode, "--plots")))
        return cli_usage_error(VERB,
                               "--%s exports from the trace of --plots: it needs --plots "
                               "and --trace",
                               a->tiles.dir ? "tiles" : "tile-shape");
    if (a->tiles.dir && !a->tiles.nh)
        return cli_usage_error(VERB, "--tiles needs --tile-shape NhxNw");
    if (a->tiles.nh && !a->tiles.dir)
        return cli_usage_error(VERB, "--tile-shape applies to --tiles only");
    if (a->tiles.dir && a->json)
        return cli_usage_error(VERB, "--tiles prints its own line: not with --json");
    if ((a->g_pshapes || a->g_every) && !a->trace)
        return cli_usage_error(VERB, "%s draws the trace views: it needs --trace",
                               a->g_pshapes ? "--plot-shapes" : "--every");
    return -1;
}

int cmd_model_kura(int argc, char **argv)
{
    struct kura_energy e;
    struct errmsg em = {0};
    struct kura_args args;
    int prc = kura_parse(&args, argc, argv);
    if (prc >= 0)
        return prc;
    kura_energy_default(&e);
    if (args.coeffs) {
        int rc = kura_energy_load(&e, args.coeffs, &em);
        if (rc)
            return cli_fail(rc, errmsg_text(&em));
    }
    if (args.t_txn >= 0)
        e.t_txn = args.t_txn;
    if (args.calibrate) {
        int rc = kura_dma_calibrate(&e, &em);
        if (rc)
            return cli_fail(rc, errmsg_text(&em));
        if (!args.quiet)
            fprintf(stderr, "acceltrace: t_marsh = %.10g cycles/px for t_txn = %g\n", e.t_marsh,
                    e.t_txn);
    }
    const struct kura_coeffs *pw = !strcmp(args.power, "fit4") ? &e.power_fit4 : &e.power_table1;
    if (!strcmp(args.mode, "--grid"))
        return do_grid(&e, pw, args.h, args.w, args.vals, args.nv, args.json);
    if (!strcmp(args.mode, "--fit"))
        return do_fit(&e, args.fit_path, args.json);
    if (!strcmp(args.mode, "--calibrate-activity")) {
        double alpha;
        uint64_t steps;
        int rc = kura_activity_calibrate(args.trace, args.cal_h, args.cal_w, &alpha, &steps, &em);
        if (rc)
            return cli_fail(rc, errmsg_text(&em));
        if (args.json)
            return cli_print_json(json_pack("{s:s,s:i,s:i,s:I,s:f}", "mode", "calibrate-activity",
                                            "n_h", args.cal_h, "n_w", args.cal_w, "steps",
                                            (json_int_t)steps, "alpha_cal", alpha));
        printf("shape=H%dW%d\nsteps=%llu\nalpha_cal=%.9f\n", args.cal_h, args.cal_w,
               (unsigned long long)steps, alpha);
        return 0;
    }
    if (!strcmp(args.mode, "--plots"))
        return do_plots(&e, args.plot_dir, args.trace, args.plot_shapes, (int)args.every, args.h,
                        args.w, &args.tiles, args.json);
    if (!strcmp(args.mode, "--optimal-width")) {
        json_t *o = args.json ? json_object() : NULL;
        for (size_t i = 0; i < args.nv; i++) {
            char k[32];
            snprintf(k, sizeof k, "H%d", args.vals[i]);
            if (args.json)
                json_object_set_new(o, k, json_real(kura_nw_opt(pw, args.vals[i])));
            else
                printf("nw_opt.%s=%.2f\n", k, kura_nw_opt(pw, args.vals[i])); /* eq. 12 */
        }
        return args.json
                   ? cli_print_json(json_pack("{s:s,s:o}", "mode", "optimal-width", "nw_opt", o))
                   : 0;
    }
    struct kura_budget_result br;
    kura_budget(pw, &e.area_table1, e.f_hz, args.budget * 1e6, args.vals, args.nv, args.vals,
                args.nv, &br);
    if (!br.found) /* an impossible parameter: a usage error, as model salca's infeasible design */
        return cli_usage_error(VERB,
                               "no shape fits --budget %g mm^2: the smallest of --shapes, H%dW%d, "
                               "takes %.3f mm^2 (eq. 13, SoC shell included)",
                               args.budget, br.min_n_h, br.min_n_w, br.min_area_um2 / 1e6);
    if (args.json)
        return cli_print_json(json_pack("{s:s,s:{s:i,s:i,s:f,s:f}}", "mode", "budget", "best",
                                        "n_h", br.n_h, "n_w", br.n_w, "e_px_pj", br.e_px_pj,
                                        "area_mm2", br.area_um2 / 1e6));
    printf("best=H%dW%d\ne_px_pj=%.1f\narea_mm2=%.3f\n", br.n_h, br.n_w, br.e_px_pj,
           br.area_um2 / 1e6);
    return 0;
}
