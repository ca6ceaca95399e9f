/*
 * cmd_capture_kura: `acceltrace capture kura [options] -o FILE.atr`: Kuramoto
 * orientation-diffusion sampling with the SA-Kura drift (docs/models.md, 'Kuramoto
 * capture'). Progress goes to stderr; the capture's metrics go to stdout as key=value lines
 * (with --json as one JSON object).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/capture_registry.h"
#include "capture/kura/kura_capture.h"
#include "capture/kura/kura_tilestream.h"
#include "cli/cli.h"
#include "cli/cli_opt.h"
#include "cli/cmd_capture.h"
#include "common/err.h"
#include "common/mem.h"
#include "common/progress.h"
#include "traces/trace_writer.h"

#define VERB "capture kura"

int cmd_capture_kura(int argc, char **argv);

enum {
    OPT_SIZE = 1,
    OPT_PRESET,
    OPT_STEPS,
    OPT_C0,
    OPT_C_END,
    OPT_BETA0,
    OPT_BETA_END,
    OPT_DATA,
    OPT_DATA_PARAM,
    OPT_SEED,
    OPT_SCORE,
    OPT_WEIGHTS,
    OPT_DRIFT,
    OPT_CHECK_DRIFT,
    OPT_NO_CHECK_DRIFT,
    OPT_START,
    OPT_ORACLE_MEM,
    OPT_TILE_STREAMS,
    OPT_PNG,
    OPT_PNG_EVERY,
    OPT_ZSTD_LEVEL,
    OPT_RESUME,
    OPT_REPRODUCIBLE,
};

/* clang-format off */
static const struct cli_opt opts[] = {
    CLI_OPT_OUTPUT("FILE.atr", "output trace (required)"),
    {OPT_SIZE, "size", 0, CLI_ARG_STRING, "HxW", "map size, each side >= 5 (default 96x96)", 0},
    {OPT_PRESET, "preset", 0, CLI_ARG_STRING, "NAME", "schedule t100 (default), t300 or t1000", 0},
    {OPT_STEPS, "steps", 0, CLI_ARG_STRING, "T", "schedule length with the preset's endpoints", 0},
    {OPT_C0, "c0", 0, CLI_ARG_STRING, "X",
     "coupling at the start (0 <= c <= 1.2770806449520862)", 0},
    {OPT_C_END, "c-end", 0, CLI_ARG_STRING, "X", "coupling at the end (same range)", 0},
    {OPT_BETA0, "beta0", 0, CLI_ARG_STRING, "X", "noise variance at the start (> 0)", 0},
    {OPT_BETA_END, "beta-end", 0, CLI_ARG_STRING, "X", "noise variance at the end (> 0)", 0},
    {OPT_DATA, "data", 0, CLI_ARG_STRING, "NAME",
     "fingerprint (default), grating, wood, const, ramp, uniform", 0},
    {OPT_DATA_PARAM, "data-param", 0, CLI_ARG_STRING, "K=V,...",
     "generator parameters (docs/models.md, 'Data generators')", 0},
    {OPT_SEED, "seed", 0, CLI_ARG_STRING, "N", "seed of every random stream (default 1)", 0},
    {OPT_SCORE, "score", 0, CLI_ARG_STRING, "NAME", "oracle (default), prior, net, none", 0},
    {OPT_WEIGHTS, "weights", 0, CLI_ARG_STRING, "FILE",
     "safetensors weights of kura-score-v1 (score net)", 0},
    {OPT_DRIFT, "drift", 0, CLI_ARG_STRING, "fixed|float",
     "drift used by the sampler (default fixed)", 0},
    {OPT_CHECK_DRIFT, "check-drift", 0, CLI_ARG_NONE, NULL,
     "record the per-step fixed-vs-float error (default)", 0},
    {OPT_NO_CHECK_DRIFT, "no-check-drift", 0, CLI_ARG_NONE, NULL, "do not compute it", 0},
    {OPT_START, "start", 0, CLI_ARG_STRING, "vonmises|forward",
     "reverse start (default vonmises)", 0},
    {OPT_ORACLE_MEM, "oracle-mem", 0, CLI_ARG_SIZE, "SIZE",
     "keep the oracle trajectory in memory up to SIZE bytes\n(default 1GiB; plain bytes or "
     "units as --mem-limit);\nbeyond, use checkpoints", 0},
    CLI_OPT_MEM_LIMIT("refuse to start above this memory estimate (default\n8GiB; units B, "
                      "KB..TB, K..T, KiB..TiB)"),
    {OPT_TILE_STREAMS, "tile-streams", 0, CLI_ARG_STRING, "S[,S]",
     "also store SA-Kura tile streams for shapes like 20x5", 0},
    {OPT_PNG, "png", 0, CLI_ARG_STRING, "DIR",
     "write phase maps (HSV), data and reconstruction images", 0},
    {OPT_PNG_EVERY, "png-every", 0, CLI_ARG_STRING, "K", "every K-th reverse step (default 10)", 0},
    CLI_OPT_THREADS("worker threads for large maps (default: all cores)"),
    {OPT_ZSTD_LEVEL, "zstd-level", 0, CLI_ARG_STRING, "N",
     "trace compression level (default 3)", 0},
    {OPT_REPRODUCIBLE, "reproducible", 0, CLI_ARG_NONE, NULL,
     "header time from SOURCE_DATE_EPOCH (else 1970), empty\ncommand line, wall time 0: same "
     "seed, same bytes", 0},
    {CLI_ID_QUIET, "quiet", 'q', CLI_ARG_NONE, NULL, "no progress on stderr", 0},
    CMD_CAPTURE_OPT_RESUME(OPT_RESUME),
    {CLI_ID_JSON, "json", 0, CLI_ARG_NONE, NULL,
     "one JSON object on stdout: the stdout lines as members\n(numbers as numbers) and the "
     "trace (file, bytes, records)", 0},
    CLI_OPT_END,
};
/* clang-format on */

const struct cli_spec cmd_capture_kura_spec = {
    .verb = VERB,
    .usage = "usage: acceltrace capture kura [options] -o FILE.atr\n"
             "\n"
             "Reverse-time Kuramoto orientation-diffusion sampling with the locally coupled 5x5\n"
             "drift of SA-Kura eq. 3 on a procedural image; records the Q1.15 phase map of every\n"
             "reverse step (docs/models.md, 'Kuramoto capture').\n",
    .opts = opts,
    .epilog = "stdout: recon_mae, recon_max, recon_bound (rad), drift_err_max, drift_err_mean,\n"
              "drift_bound (rad), forward_end_r, wall_s, trace\n",
};

static bool parse_size(const char *s, size_t *h, size_t *w)
{
    uint32_t a, b;
    char *end;
    errno = 0;
    unsigned long x = strtoul(s, &end, 10);
    if (errno || end == s || (*end != 'x' && *end != 'X'))
        return false;
    const char *t = end + 1;
    unsigned long y = strtoul(t, &end, 10);
    if (errno || end == t || *end || x > 1000000 || y > 1000000)
        return false;
    a = (uint32_t)x;
    b = (uint32_t)y;
    *h = a;
    *w = b;
    return true;
}

/* The schedule options as given, applied after the loop: the preset first. */
struct sched_opts {
    const char *preset;
    int64_t steps;
    bool have_c0, have_cend, have_b0, have_bend;
    double c0, cend, b0, bend;
};

/* The preset, then --steps and the endpoint overrides ("custom"); 0 or ERR_USAGE in e. */
static int apply_schedule(struct kura_params *p, const struct sched_opts *so, struct errmsg *e)
{
    int rc = kura_params_preset(p, so->preset, e);
    if (rc)
        return rc;
    if (so->steps && so->steps != p->t) { /* the preset's endpoints over T steps */
        p->t = (int)so->steps;
        snprintf(p->preset, sizeof p->preset, "custom");
    }
    if (so->have_c0 || so->have_cend || so->have_b0 || so->have_bend) {
        snprintf(p->preset, sizeof p->preset, "custom");
        if (so->have_c0)
            p->c0 = so->c0;
        if (so->have_cend)
            p->c_end = so->cend;
        if (so->have_b0)
            p->beta0 = so->b0;
        if (so->have_bend)
            p->beta_end = so->bend;
    }
    return 0;
}

/* The --tile-streams shapes S[,S] into p; 0, or the exit status of a usage error. */
static int parse_tile_streams(struct kura_params *p, const char *v)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s", v);
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (p->n_tile_shapes >= KURA_MAX_TILE_SHAPES)
            return cli_usage_error(VERB, "too many tile-stream shapes (at most %d)",
                                   KURA_MAX_TILE_SHAPES);
        if (kura_tilestream_parse_shape(t, &p->tile_nh[p->n_tile_shapes],
                                        &p->tile_nw[p->n_tile_shapes]))
            return cli_usage_error(VERB, "bad array shape '%s' (NhxNw, 1..1024)", t);
        p->n_tile_shapes++;
    }
    return 0;
}

/* The data generator and the checks across options; 0, or the exit status of a usage
 * error. */
static int check_args(struct kura_params *p, const char *out, const char *data,
                      const char *data_param)
{
    struct errmsg e = {0};
    if (kura_data_parse(data, data_param, &p->data, &e))
        return cli_usage_error(VERB, "%s", errmsg_text(&e));
    if (p->score == KURA_SCORE_NET && !p->weights_path)
        return cli_usage_error(VERB, "score 'net' needs --weights FILE.safetensors");
    if (p->weights_path && p->score != KURA_SCORE_NET)
        return cli_usage_error(VERB, "--weights is only used with --score net");
    if (p->h < 5 || p->w < 5)
        return cli_usage_error(VERB, "map size %zux%zu too small (each side >= 5)", p->h, p->w);
    p->quiet = p->quiet || progress_global_quiet;
    { /* the weights may not be the trace or its .partial (exit 2) */
        const char *ins[1] = {p->weights_path};
        if (trace_writer_check_inputs(out, ins, 1, NULL, 0, &e))
            return cli_usage_error(VERB, "%s", errmsg_text(&e));
    }
    return 0;
}

/* The parse state: what parse_args fills besides the workload's parameters. */
struct kura_args {
    struct kura_params p;
    const char *out, *data, *data_param;
    struct sched_opts so;
    int64_t zlevel;
    bool json;
    bool resume;
};

/* The schedule and image options; 0, the exit status of a usage error, or -1 when id is
 * none of them. */
static int parse_sched_value(struct kura_args *a, const struct cli_parser *ps)
{
    const char *v = ps->arg;
    struct sched_opts *so = &a->so;
    double x;
    switch (ps->opt->id) {
    case OPT_SIZE:
        if (!parse_size(v, &a->p.h, &a->p.w))
            return cli_usage_error(VERB, "bad size '%s' (HxW)", v);
        return 0;
    case OPT_PRESET:
        so->preset = v;
        return 0;
    case OPT_STEPS:
        if (!cli_parse_i64(v, &so->steps) || so->steps < 3 || so->steps > 1000000)
            return cli_usage_error(VERB, "bad step count '%s' (3..1000000)", v);
        return 0;
    case OPT_C0:
    case OPT_C_END:
    case OPT_BETA0:
    case OPT_BETA_END:
        if (!cli_parse_f64(v, &x))
            return cli_usage_error(VERB, "bad number '%s' for '--%s'", v, ps->opt->name);
        if (ps->opt->id == OPT_C0)
            so->c0 = x, so->have_c0 = true;
        else if (ps->opt->id == OPT_C_END)
            so->cend = x, so->have_cend = true;
        else if (ps->opt->id == OPT_BETA0)
            so->b0 = x, so->have_b0 = true;
        else
            so->bend = x, so->have_bend = true;
        return 0;
    case OPT_DATA:
        a->data = v;
        return 0;
    case OPT_DATA_PARAM:
        a->data_param = v;
        return 0;
    default:
        return -1;
    }
}

/* The sampler options; 0, the exit status of a usage error, or -1 when id is none. */
static int parse_sampler_value(struct kura_params *p, int id, const char *v)
{
    switch (id) {
    case OPT_SEED:
        if (!cli_parse_u64(v, &p->seed))
            return cli_usage_error(VERB, "bad seed '%s'", v);
        return 0;
    case OPT_SCORE:
        if (!strcmp(v, "oracle"))
            p->score = KURA_SCORE_ORACLE;
        else if (!strcmp(v, "prior"))
            p->score = KURA_SCORE_PRIOR;
        else if (!strcmp(v, "net"))
            p->score = KURA_SCORE_NET;
        else if (!strcmp(v, "none"))
            p->score = KURA_SCORE_NONE;
        else
            return cli_usage_error(VERB, "unknown score '%s' (oracle, prior, net, none)", v);
        return 0;
    case OPT_WEIGHTS:
        p->weights_path = v;
        return 0;
    case OPT_DRIFT:
        if (!strcmp(v, "fixed"))
            p->drift = KURA_DRIFT_FIXED;
        else if (!strcmp(v, "float"))
            p->drift = KURA_DRIFT_FLOAT;
        else
            return cli_usage_error(VERB, "unknown drift '%s' (fixed, float)", v);
        return 0;
    case OPT_START:
        if (!strcmp(v, "vonmises"))
            p->start = KURA_START_VONMISES;
        else if (!strcmp(v, "forward"))
            p->start = KURA_START_FORWARD;
        else
            return cli_usage_error(VERB, "unknown start '%s' (vonmises, forward)", v);
        return 0;
    case OPT_TILE_STREAMS:
        return parse_tile_streams(p, v);
    default:
        return -1;
    }
}

/* The output and run options; 0, the exit status of a usage error, or -1 when id is none
 * of them. */
static int parse_run_option(struct kura_args *a, const struct cli_parser *ps)
{
    struct kura_params *p = &a->p;
    const char *v = ps->arg;
    int64_t k;
    switch (ps->opt->id) {
    case CLI_ID_OUTPUT:
        a->out = v;
        return 0;
    case CLI_ID_QUIET:
        p->quiet = true;
        return 0;
    case OPT_RESUME:
        a->resume = true;
        return 0;
    case CLI_ID_JSON:
        a->json = true;
        return 0;
    case OPT_CHECK_DRIFT:
    case OPT_NO_CHECK_DRIFT:
        p->check_drift = ps->opt->id == OPT_CHECK_DRIFT;
        return 0;
    case OPT_REPRODUCIBLE:
        p->reproducible = true;
        return 0;
    case OPT_ORACLE_MEM:
        p->oracle_mem_bytes = ps->u64;
        return 0;
    case CLI_ID_MEM_LIMIT:
        if (ps->u64 == 0)
            return cli_usage_error(VERB, "bad --mem-limit '%s' (a size like 8GiB)", v);
        p->mem_limit_bytes = ps->u64;
        return 0;
    case OPT_PNG:
        p->png_dir = v;
        return 0;
    case OPT_PNG_EVERY:
        if (!cli_parse_i64(v, &k) || k < 1 || k > 1000000)
            return cli_usage_error(VERB, "bad png interval '%s'", v);
        p->png_every = (int)k;
        return 0;
    case CLI_ID_THREADS:
        if (ps->i64 < 1 || ps->i64 > 256)
            return cli_usage_error(VERB, "bad thread count '%s'", v);
        p->threads = (int)ps->i64;
        return 0;
    case OPT_ZSTD_LEVEL:
        if (!cli_parse_i64(v, &a->zlevel) || a->zlevel < 0 || a->zlevel > 19)
            return cli_usage_error(VERB, "bad zstd level '%s' (0..19)", v);
        return 0;
    default: {
        int st = parse_sched_value(a, ps);
        return st >= 0 ? st : parse_sampler_value(p, ps->opt->id, v);
    }
    }
}

/* The options into a (a->p holds the defaults); 0 to run, -1 when the help was printed
 * (exit 0), else the exit status of a usage error. */
static int parse_args(int argc, char **argv, struct kura_args *a)
{
    a->data = "fingerprint";
    a->so.preset = "t100";
    a->zlevel = 3;
    struct errmsg e = {0};
    struct cli_parser ps;
    cli_parser_init(&ps, &cmd_capture_kura_spec, argc, argv);
    for (int id; (id = cli_next(&ps)) != CLI_END;) {
        if (id == CLI_HELP || id == CLI_BAD)
            return id == CLI_HELP ? -1 : cli_next_exit(id);
        if (id == CLI_POSITIONAL)
            return cli_usage_error(VERB, "unknown option '%s'", ps.arg);
        int st = parse_run_option(a, &ps);
        if (st)
            return st;
    }
    if (!a->out)
        return cli_usage_error(VERB, "missing -o FILE.atr");
    if (apply_schedule(&a->p, &a->so, &e))
        return cli_usage_error(VERB, "%s", errmsg_text(&e));
    return check_args(&a->p, a->out, a->data, a->data_param);
}

/* Runs the capture of the parsed command line ctx and prints its metrics on f. */
static int run_capture(void *ctx, FILE *f)
{
    struct kura_args *a = ctx;
    const struct kura_params *p = &a->p;
    const struct capture_ops *ops = capture_registry_find("kura");
    struct capture_opts o;
    capture_opts_default(&o);
    o.zstd_level = (int)a->zlevel;
    o.mem_limit_bytes = p->mem_limit_bytes;
    o.quiet = p->quiet;
    o.reproducible = p->reproducible;
    o.command_line = cli_command_line();
    o.resume = a->resume;
    int rc = cmd_capture_resume_check(ops, o.resume);
    if (rc)
        return rc;
    struct errmsg e = {0};
    void *inst = NULL;
    rc = ops->open(&inst, &a->p, &e);
    if (!rc)
        rc = cmd_capture_run(ops, inst, a->out, &o, &e);
    if (rc) {
        ops->close(inst);
        return rc == ERR_USAGE ? cli_usage_error(VERB, "%s", errmsg_text(&e))
                               : cli_fail(rc, errmsg_text(&e));
    }
    const struct kura_result res = *kura_capture_result(inst);
    fprintf(f, "recon_mae=%.9g\n", res.recon_mae);
    fprintf(f, "recon_max=%.9g\n", res.recon_max);
    fprintf(f, "recon_bound=%.9g\n", res.recon_bound);
    if (res.drift_checked) {
        fprintf(f, "drift_err_max=%.9g\n", res.drift_err_max);
        fprintf(f, "drift_err_mean=%.9g\n", res.drift_err_mean);
    }
    fprintf(f, "drift_bound=%.9g\n", res.drift_bound_max);
    fprintf(f, "forward_end_r=%.9g\n", res.forward_end_r);
    fprintf(f, "reverse_steps=%d\n", res.reverse_steps);
    fprintf(f, "oracle_checkpoints=%d\n", res.checkpointed ? 1 : 0);
    fprintf(f, "wall_s=%.3f\n", res.wall_s);
    fprintf(f, "trace=%s\n", a->out);
    ops->close(inst);
    return 0;
}

/* The --json members besides the lines: the trace written. */
static json_t *trace_json(void *ctx)
{
    const struct kura_args *a = ctx;
    return json_pack("{s:s,s:o}", "workload", "kura", "trace", cli_json_trace_file(a->out));
}

int cmd_capture_kura(int argc, char **argv)
{
    struct kura_args a = {0};
    kura_params_default(&a.p);
    int st = parse_args(argc, argv, &a);
    if (st)
        return st < 0 ? 0 : st; /* -1: the help */
    return a.json ? cli_kv_run_json(run_capture, &a, trace_json) : run_capture(&a, stdout);
}
