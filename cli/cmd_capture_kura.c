/*
 * cmd_capture_kura: `acceltrace capture kura [options] -o FILE.atr`: Kuramoto
 * orientation-diffusion sampling with the SA-Kura drift (specs/kura.md sections 1-7).
 * Progress goes to stderr; the capture's metrics go to stdout as key=value lines.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/capture_registry.h"
#include "capture/kura/kura_capture.h"
#include "capture/kura/kura_tilestream.h"
#include "cli/cli.h"
#include "common/err.h"
#include "common/mem.h"
#include "common/progress.h"
#include "traces/trace_writer.h"

#define VERB "capture kura"

int cmd_capture_kura(int argc, char **argv);

static void usage(FILE *f)
{
    fputs("usage: acceltrace capture kura [options] -o FILE.atr\n"
          "\n"
          "Reverse-time Kuramoto orientation-diffusion sampling with the locally coupled 5x5\n"
          "drift of SA-Kura eq. 3 on a procedural image; records the Q1.15 phase map of every\n"
          "reverse step (specs/kura.md; docs/models.md#kuramoto-capture).\n"
          "\n"
          "options:\n"
          "  -o FILE.atr            output trace (required)\n"
          "  --size HxW             map size, each side >= 5 (default 96x96)\n"
          "  --preset NAME          schedule t100 (default), t300 or t1000\n"
          "  --steps T              schedule length with the preset's endpoints\n"
          "  --c0 X, --c-end X      coupling endpoints (0 <= c <= 1.2770806449520862)\n"
          "  --beta0 X, --beta-end X  noise variance endpoints (> 0)\n"
          "  --data NAME            fingerprint (default), grating, wood, const, ramp, uniform\n"
          "  --data-param K=V,...   generator parameters (see docs/models.md)\n"
          "  --seed N               seed of every random stream (default 1)\n"
          "  --score NAME           oracle (default), prior, net, none\n"
          "  --weights FILE         safetensors weights of kura-score-v1 (score net)\n"
          "  --drift fixed|float    drift used by the sampler (default fixed)\n"
          "  --check-drift          record the per-step fixed-vs-float error (default)\n"
          "  --no-check-drift       do not compute it\n"
          "  --start vonmises|forward  reverse start (default vonmises)\n"
          "  --oracle-mem BYTES     keep the oracle trajectory in memory up to BYTES (default\n"
          "                         1073741824; suffix K, M, G); beyond, use checkpoints\n"
          "  --mem-limit SIZE       refuse to start above this memory estimate (default 8GiB;\n"
          "                         units B, KB..TB, K..T, KiB..TiB)\n"
          "  --tile-streams S[,S]   also store SA-Kura tile streams for shapes like 20x5\n"
          "  --png DIR              write phase maps (HSV), data and reconstruction images\n"
          "  --png-every K          every K-th reverse step (default 10)\n"
          "  --threads N            worker threads for large maps (default: all cores)\n"
          "  --zstd-level N         trace compression level (default 3)\n"
          "  --reproducible         header time from SOURCE_DATE_EPOCH (else 1970), empty\n"
          "                         command line, wall time 0: same seed, same bytes\n"
          "  -q, --quiet            no progress on stderr\n"
          "  -h, --help             this help\n"
          "\n"
          "stdout: recon_mae, recon_max, recon_bound (rad), drift_err_max, drift_err_mean,\n"
          "drift_bound (rad), forward_end_r, wall_s, trace\n",
          f);
}

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

/* The options into p, *out and *zlevel; 0, or the exit status of a usage error (or of -h)
 * with *done set. */
static int parse_args(int argc, char **argv, struct kura_params *pp, const char **outp,
                      int64_t *zlevelp, bool *done)
{
    struct kura_params p = *pp;
    const char *out = NULL, *data = "fingerprint", *data_param = NULL;
    struct sched_opts so = {.preset = "t100"};
    int64_t zlevel = 3;
    struct errmsg e = {0};
    *done = true;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define NEED()                                                                                     \
    do {                                                                                           \
        if (!v)                                                                                    \
            return cli_usage_error(VERB, "option '%s' needs a value", a);                          \
        i++;                                                                                       \
    } while (0)
        if (cli_is_help(a)) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "-o")) {
            NEED();
            out = v;
        } else if (!strcmp(a, "--size")) {
            NEED();
            if (!parse_size(v, &p.h, &p.w))
                return cli_usage_error(VERB, "bad size '%s' (HxW)", v);
        } else if (!strcmp(a, "--preset")) {
            NEED();
            so.preset = v;
        } else if (!strcmp(a, "--steps")) {
            NEED();
            if (!cli_parse_i64(v, &so.steps) || so.steps < 3 || so.steps > 1000000)
                return cli_usage_error(VERB, "bad step count '%s' (3..1000000)", v);
        } else if (!strcmp(a, "--c0") || !strcmp(a, "--c-end") || !strcmp(a, "--beta0") ||
                   !strcmp(a, "--beta-end")) {
            NEED();
            double x;
            if (!cli_parse_f64(v, &x))
                return cli_usage_error(VERB, "bad number '%s' for '%s'", v, a);
            if (!strcmp(a, "--c0"))
                so.c0 = x, so.have_c0 = true;
            else if (!strcmp(a, "--c-end"))
                so.cend = x, so.have_cend = true;
            else if (!strcmp(a, "--beta0"))
                so.b0 = x, so.have_b0 = true;
            else
                so.bend = x, so.have_bend = true;
        } else if (!strcmp(a, "--data")) {
            NEED();
            data = v;
        } else if (!strcmp(a, "--data-param")) {
            NEED();
            data_param = v;
        } else if (!strcmp(a, "--seed")) {
            NEED();
            if (!cli_parse_u64(v, &p.seed))
                return cli_usage_error(VERB, "bad seed '%s'", v);
        } else if (!strcmp(a, "--score")) {
            NEED();
            if (!strcmp(v, "oracle"))
                p.score = KURA_SCORE_ORACLE;
            else if (!strcmp(v, "prior"))
                p.score = KURA_SCORE_PRIOR;
            else if (!strcmp(v, "net"))
                p.score = KURA_SCORE_NET;
            else if (!strcmp(v, "none"))
                p.score = KURA_SCORE_NONE;
            else
                return cli_usage_error(VERB, "unknown score '%s' (oracle, prior, net, none)", v);
        } else if (!strcmp(a, "--weights")) {
            NEED();
            p.weights_path = v;
        } else if (!strcmp(a, "--drift")) {
            NEED();
            if (!strcmp(v, "fixed"))
                p.drift = KURA_DRIFT_FIXED;
            else if (!strcmp(v, "float"))
                p.drift = KURA_DRIFT_FLOAT;
            else
                return cli_usage_error(VERB, "unknown drift '%s' (fixed, float)", v);
        } else if (!strcmp(a, "--check-drift")) {
            p.check_drift = true;
        } else if (!strcmp(a, "--no-check-drift")) {
            p.check_drift = false;
        } else if (!strcmp(a, "--start")) {
            NEED();
            if (!strcmp(v, "vonmises"))
                p.start = KURA_START_VONMISES;
            else if (!strcmp(v, "forward"))
                p.start = KURA_START_FORWARD;
            else
                return cli_usage_error(VERB, "unknown start '%s' (vonmises, forward)", v);
        } else if (!strcmp(a, "--oracle-mem")) {
            NEED();
            if (mem_parse_size(v, &p.oracle_mem_bytes))
                return cli_usage_error(VERB, "bad byte count '%s'", v);
        } else if (!strcmp(a, "--mem-limit")) {
            NEED();
            if (mem_parse_size(v, &p.mem_limit_bytes) || p.mem_limit_bytes == 0)
                return cli_usage_error(VERB, "bad --mem-limit '%s' (a size like 8GiB)", v);
        } else if (!strcmp(a, "--tile-streams")) {
            NEED();
            int st = parse_tile_streams(&p, v);
            if (st)
                return st;
        } else if (!strcmp(a, "--png")) {
            NEED();
            p.png_dir = v;
        } else if (!strcmp(a, "--png-every")) {
            NEED();
            int64_t k;
            if (!cli_parse_i64(v, &k) || k < 1 || k > 1000000)
                return cli_usage_error(VERB, "bad png interval '%s'", v);
            p.png_every = (int)k;
        } else if (!strcmp(a, "--threads") || !strcmp(a, "-j")) {
            NEED();
            int64_t k;
            if (!cli_parse_i64(v, &k) || k < 1 || k > 256)
                return cli_usage_error(VERB, "bad thread count '%s'", v);
            p.threads = (int)k;
        } else if (!strcmp(a, "--zstd-level")) {
            NEED();
            if (!cli_parse_i64(v, &zlevel) || zlevel < 0 || zlevel > 19)
                return cli_usage_error(VERB, "bad zstd level '%s' (0..19)", v);
        } else if (!strcmp(a, "--reproducible")) {
            p.reproducible = true;
        } else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
            p.quiet = true;
        } else {
            return cli_usage_error(VERB, "unknown option '%s'", a);
        }
#undef NEED
    }
    if (!out)
        return cli_usage_error(VERB, "missing -o FILE.atr");
    if (apply_schedule(&p, &so, &e))
        return cli_usage_error(VERB, "%s", errmsg_text(&e));
    int st = check_args(&p, out, data, data_param);
    if (st)
        return st;
    *pp = p;
    *outp = out;
    *zlevelp = zlevel;
    *done = false;
    return 0;
}

int cmd_capture_kura(int argc, char **argv)
{
    struct kura_params p;
    kura_params_default(&p);
    const char *out = NULL;
    int64_t zlevel = 3;
    bool done = false;
    int st = parse_args(argc, argv, &p, &out, &zlevel, &done);
    if (done)
        return st;

    const struct capture_ops *ops = capture_registry_find("kura");
    struct capture_opts o;
    capture_opts_default(&o);
    o.zstd_level = (int)zlevel;
    o.mem_limit_bytes = p.mem_limit_bytes;
    o.quiet = p.quiet;
    o.reproducible = p.reproducible;
    o.command_line = cli_command_line();
    struct errmsg e = {0};
    void *inst = NULL;
    int rc = ops->open(&inst, &p, &e);
    if (!rc)
        rc = capture_run(ops, inst, out, &o, &e);
    if (rc) {
        ops->close(inst);
        return rc == ERR_USAGE ? cli_usage_error(VERB, "%s", errmsg_text(&e))
                               : cli_fail(rc, errmsg_text(&e));
    }
    const struct kura_result *r = kura_capture_result(inst);
    struct kura_result res = *r;
    printf("recon_mae=%.9g\n", res.recon_mae);
    printf("recon_max=%.9g\n", res.recon_max);
    printf("recon_bound=%.9g\n", res.recon_bound);
    if (res.drift_checked) {
        printf("drift_err_max=%.9g\n", res.drift_err_max);
        printf("drift_err_mean=%.9g\n", res.drift_err_mean);
    }
    printf("drift_bound=%.9g\n", res.drift_bound_max);
    printf("forward_end_r=%.9g\n", res.forward_end_r);
    printf("reverse_steps=%d\n", res.reverse_steps);
    printf("oracle_checkpoints=%d\n", res.checkpointed ? 1 : 0);
    printf("wall_s=%.3f\n", res.wall_s);
    printf("trace=%s\n", out);
    ops->close(inst);
    return 0;
}
